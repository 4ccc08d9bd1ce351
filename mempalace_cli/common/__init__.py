"""The foundation every layer stands on: settings, the error types, "today", text hygiene.

Lives here: `config` (settings and the palace path), `errors` (the one error table),
`clock` (the local date, MEMPALACE_NOW), `textsafe`, `naming`, `cjk` and `wordlists`
(tokenising Chinese and English).

May import: the standard library and third-party packages only; nothing else of ours.
"""
