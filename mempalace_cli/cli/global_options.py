"""Global options (--palace, --chroma-url, --quiet) are accepted before or after the
sub-command: people type `mempalace status --palace X` as often as `mempalace --palace X status`.

Click only knows a group's options before the sub-command, so the root group moves any global
option found later to the front before parsing. Everything after `--` is left alone. `--json`
stays where it is: every command has its own, and the root one (before the command) is ORed in
(`env.json_option`).
"""

from __future__ import annotations

WITH_VALUE = ("--palace", "--chroma-url", "--chroma-token", "--chroma-ca-file", "--chroma-database")
FLAGS = ("--quiet", "-q")


def hoist_global_options(args: list[str]) -> list[str]:
    """`args` with every global option (and its value) moved to the front, in order."""
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
    return front + rest
