"""Global options (--palace, --chroma-url, --chroma-token, --chroma-ca-file, --chroma-database,
--json, --quiet/-q) are accepted anywhere on the command line: people type
`mempalace status --palace X`, `mempalace kg --json stats` and `mempalace --json models` as
often as `mempalace --palace X status`.

Click only knows a group's options before its sub-command, so the root group moves every global
option it finds (before the command, between a group and its sub-command, after the command) to
the front before parsing, and the root's callback records it for every command (`Env`).
Everything after `--` is left alone. Each command also declares --json, for its --help; its value
is the root's (`options.json_option`).
"""

from __future__ import annotations

WITH_VALUE = ("--palace", "--chroma-url", "--chroma-token", "--chroma-ca-file", "--chroma-database")
FLAGS = ("--json", "--quiet", "-q")


def split_global_options(args: list[str]) -> tuple[list[str], list[str]]:
    """(the global options with their values, in order; every other argument, in order)."""
    front: list[str] = []
    rest: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            rest += args[i:]
            break
        name = arg.split("=", 1)[0]
        if arg in WITH_VALUE and i + 1 < len(args):
            front += args[i : i + 2]
            i += 2
            continue
        if (name in WITH_VALUE and "=" in arg) or arg in FLAGS:
            front.append(arg)
        else:
            rest.append(arg)
        i += 1
    return front, rest


def hoist_global_options(args: list[str]) -> list[str]:
    """`args` with every global option (and its value) moved to the front, in order."""
    front, rest = split_global_options(args)
    return front + rest


def wants_json(args: list[str]) -> bool:
    """--json anywhere before `--` (not as another option's value): how an error found before
    any command ran is printed."""
    front, _ = split_global_options(args)
    i = 0
    while i < len(front):
        if front[i] == "--json":
            return True
        i += 2 if front[i] in WITH_VALUE else 1
    return False
