"""Ranking: how keyword and vector candidates become one ordered list of hits.

Lives here: `fusion` (the weights per model and the fused score), `rules` (after-fusion rules:
duplicates, a diary below its source, names), `passages` (the best passage of a hit),
`crosslingual` (the Chinese-English bridge), `sameness`, `dates` (dates and relative dates in
questions and `--since`/`--before`).

May import: `mempalace_cli.common`, `mempalace_cli.memory` (dates only),
`mempalace_cli.storage` and `mempalace_cli.embedders` (a model's fusion settings). Never the
service or a front end.
"""
