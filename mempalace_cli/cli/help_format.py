"""Option metavars that read as words in `--help`.

Typer's rich help prints a type column for every parameter: `<bool>` beside each flag, `<str>`
or `<path>` beside values, which reads as noise. Here, the one place that changes it: flags
and arguments show nothing there (an argument's name already says what it is), and an option
that takes a value shows its metavar, or else its name in capitals (--wing WING). The usage
line names a required argument as the README does (`mempalace search [OPTIONS] QUERY`, not
`{QUERY}`), an optional one in brackets.
"""

from __future__ import annotations

from typing import Any

from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

from mempalace_cli.common.lazy import lazy

rich_utils = lazy("typer.rich_utils")  # imports rich: only when help is printed


def _option_metavar(self: TyperOption, ctx: Any) -> str | None:
    if self.metavar is not None:
        return self.metavar
    if self.is_flag or self.count:
        return None
    return (self.name or "value").upper().replace("_", "-")


def _argument_metavar(self: TyperArgument, ctx: Any) -> str | None:
    return None


def _usage_name(self: TyperArgument) -> str:
    name = self.display_name_raw if self.required else f"[{self.display_name_raw}]"
    return name + ("..." if self.nargs != 1 else "")


def _reflowed(paragraphs: list[str], markup_mode: Any) -> str:
    """A command's help after its first paragraph, each paragraph as one line for rich to wrap
    at the terminal's width (the docstring's own line breaks would otherwise stay, and cut every
    line twice on a narrow terminal). A paragraph that starts with \\b keeps its lines."""
    return "\n\n".join(
        p if p.startswith("\b") else " ".join(line.strip() for line in p.splitlines())
        for p in paragraphs
    )


def _reflowing(format_help: Any) -> Any:
    """`format_help` that first teaches typer's rich help to reflow paragraphs: patched when
    help is printed (rich is loaded then anyway), so importing the CLI stays free of rich."""

    def wrapped(self: Any, ctx: Any, formatter: Any) -> Any:
        rich_utils._fix_linebreaks = _reflowed  # type: ignore[attr-defined]
        return format_help(self, ctx, formatter)

    return wrapped


def install() -> None:
    for cls in (TyperCommand, TyperGroup):
        cls.format_help = _reflowing(cls.format_help)  # type: ignore[method-assign]
    TyperOption.display_type_rich = _option_metavar  # type: ignore[method-assign]
    TyperArgument.display_type_rich = _argument_metavar  # type: ignore[method-assign]
    TyperArgument._usage_display_name = _usage_name  # type: ignore[method-assign]
