"""Option metavars that read as words in `--help`.

Typer's rich help prints a type column for every parameter: `<bool>` beside each flag, `<str>`
or `<path>` beside values, which reads as noise. Here, the one place that changes it: flags
and arguments show nothing there (an argument's name already says what it is), and an option
that takes a value shows its metavar, or else its name in capitals (--wing WING).
"""

from __future__ import annotations

from typing import Any

from typer.core import TyperArgument, TyperOption


def _option_metavar(self: TyperOption, ctx: Any) -> str | None:
    if self.metavar is not None:
        return self.metavar
    if self.is_flag or self.count:
        return None
    return (self.name or "value").upper().replace("_", "-")


def _argument_metavar(self: TyperArgument, ctx: Any) -> str | None:
    return None


def install() -> None:
    TyperOption.display_type_rich = _option_metavar  # type: ignore[method-assign]
    TyperArgument.display_type_rich = _argument_metavar  # type: ignore[method-assign]
