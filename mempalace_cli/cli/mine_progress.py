"""What `mine` tells a person while it works: files looked at from the first second, then
drawers embedded and the file being filed, with a rate and an ETA (rich, on a terminal only),
and, if Ctrl-C stops it, what was kept and how to resume."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

SCAN, FILE = "scan", "file"


class Only(ProgressColumn):
    """Shows `column` for the tasks of one phase (scanning or filing), nothing for others."""

    def __init__(self, phase: str, column: ProgressColumn) -> None:
        super().__init__()
        self.phase, self.column = phase, column

    def render(self, task: Task) -> Any:
        return self.column.render(task) if task.fields.get("phase") == self.phase else Text("")


class RateColumn(ProgressColumn):
    """Drawers per second, once rich has measured it."""

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text("" if speed is None else f"{speed:,.1f} drawers/s", style="progress.data.speed")


@dataclass
class MineTally:
    """Counts from the service's progress events: what a stopped run has kept."""

    looked_at: int = 0
    files_total: int = 0
    drawers_total: int = 0
    files_filed: int = 0
    drawers_filed: int = 0
    drawers_embedded: int = 0
    files_reached: int = 0  # files whose drawers are being or have been embedded

    def update(self, event: str, data: dict[str, Any]) -> None:
        if event == "scan":
            self.looked_at = data.get("files", self.looked_at + 1)
        elif event == "plan":
            self.files_total, self.drawers_total = data["files"], data["chunks"]
        elif event == "embedded":
            self.drawers_embedded += data["chunks"]
            # "files" counts within the write group; earlier groups are filed already.
            self.files_reached = self.files_filed + data.get("files", 0)
        elif event == "file":
            self.files_filed += 1
            self.drawers_filed += data["drawers"]


class MineProgress:
    """Feeds a MineTally and, when given a terminal console, draws the progress on it."""

    def __init__(self, console: Console | None) -> None:
        self.tally = MineTally()
        self.progress: Progress | None = None
        self.scan_task: Any = None
        self.task: Any = None
        if console is not None:
            self.progress = Progress(
                SpinnerColumn(),
                TextColumn("[bold]{task.description}[/]"),
                Only(FILE, BarColumn()),
                Only(FILE, MofNCompleteColumn()),
                TextColumn("{task.fields[count]}"),
                Only(FILE, RateColumn()),
                Only(FILE, TextColumn("ETA")),
                Only(FILE, TimeRemainingColumn()),
                TimeElapsedColumn(),
                TextColumn("[dim]{task.fields[current]}[/]"),
                console=console,
                transient=True,
            )

    def __call__(self, event: str, data: dict[str, Any]) -> None:
        self.tally.update(event, data)
        if self.progress is not None:
            self._draw(event, data)

    def _draw(self, event: str, data: dict[str, Any]) -> None:
        assert self.progress is not None
        tally = self.tally
        if event == "scan":
            if self.scan_task is None:
                self.progress.start()
                self.scan_task = self.progress.add_task(
                    "looking at files", total=None, phase=SCAN, count="", current=""
                )
            self.progress.update(
                self.scan_task,
                count=f"{tally.looked_at} files",
                current=_tail(data.get("path", "")),
            )
        elif event == "plan":
            if self.scan_task is not None:
                self.progress.remove_task(self.scan_task)
                self.scan_task = None
            if not data["chunks"]:
                return
            self.progress.start()
            self.task = self.progress.add_task(
                "filing",
                total=data["chunks"],
                phase=FILE,
                count=f"drawers  file 0/{data['files']}",
                current="",
            )
        elif self.task is None:
            return
        elif event == "load":
            self.progress.update(self.task, description="loading the model")
        elif event == "embedded":
            self.progress.update(
                self.task,
                description="embedding",
                advance=data["chunks"],
                count=f"drawers  file {tally.files_reached}/{tally.files_total}",
                current=_tail(data.get("path", "")),
            )
            # Drawn now, not at the next tick: every slice of drawers shows (a few a second).
            self.progress.refresh()
        elif event == "file":
            self.progress.update(self.task, description="filing", current=_tail(data["path"]))

    def stop(self) -> None:
        if self.progress is not None:
            self.progress.stop()

    def interrupted_message(self, directory: str) -> str:
        """Ctrl-C: what the palace kept, and the command that carries on."""
        tally = self.tally
        if tally.files_filed:
            kept = (
                f"Kept {tally.files_filed} of {tally.files_total} new or changed files "
                f"({tally.drawers_filed} drawers), filed before the interruption."
            )
        else:
            kept = "Nothing was filed by this run; the palace is as it was."
        return (
            f"Interrupted. {kept}\n"
            f"Resume with: mempalace mine {directory}  (files already filed are skipped)"
        )


def _tail(path: str, width: int = 40) -> str:
    return path if len(path) <= width else "…" + path[-(width - 1) :]
