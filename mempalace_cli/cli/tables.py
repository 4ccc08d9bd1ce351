"""The tables commands print: no box and no padding at the edges, so they read as aligned
columns on a terminal and in a pipe alike, with any title on the left. rich is imported on
first use (see env.make_console)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mempalace_cli.cli.env import Env, markup
from mempalace_cli.common.lazy import lazy

if TYPE_CHECKING:
    from rich.table import Table

rich_table = lazy("rich.table")


def make_table(*columns: str, title: str | None = None) -> Table:
    return rich_table.Table(*columns, title=title, title_justify="left", box=None, pad_edge=False)


def print_counts(env: Env, name: str, count: str, counts: dict[str, Any]) -> None:
    """A two-column table: each name with its count (a stats command's breakdown)."""
    table = make_table(name, count)
    for key, n in counts.items():
        table.add_row(markup("{}", key), markup("{}", n))
    env.out.print(table, highlight=False)
