"""What `mine` tells a person while it works: files looked at from the first second, then
drawers embedded and the file being filed, with a rate and an ETA (rich, on a terminal only),
and, if Ctrl-C stops it, what was kept and how to resume.

The progress is one line per phase, cut to the terminal's width: what matters most (the
phase, drawers and files done, the ETA) always shows; the bar, the rate, the elapsed time and
the file being filed take the room that is left, in that order.

Ctrl-C is a request (`stop_on_ctrl_c`): the run stops at the edge of its next step, never in
the middle of one, so what was filed is exactly what the message says."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

# rich, directly: MineLine subclasses its Progress. Only `mine` and `init` import this module,
# and they load the model anyway.
from rich.cells import cell_len  # lazy: only mine/init import this module
from rich.console import Console, Group, RenderableType  # lazy: only mine/init import this
from rich.progress import Progress, Task  # lazy: only mine/init import this module
from rich.spinner import Spinner  # lazy: only mine/init import this module
from rich.text import Text  # lazy: only mine/init import this module

SCAN, FILE = "scan", "file"
GAP = "  "
BAR_MIN, BAR_MAX = 10, 40
PATH_MIN = 12  # narrower than this, the file being filed is left out
STOPPING = "stopping (Ctrl-C again: now)"


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


def clock(seconds: float | None) -> str:
    """h:mm:ss, or -:--:-- when not known yet."""
    if seconds is None:
        return "-:--:--"
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours:d}:{minutes:02d}:{secs:02d}"


def tail(path: str, cells: int) -> str:
    """The end of `path` in at most `cells` terminal cells, "…" marking a cut."""
    if cell_len(path) <= cells:
        return path
    kept: list[str] = []
    used = 1  # the ellipsis
    for ch in reversed(path):
        width = cell_len(ch)
        if used + width > cells:
            break
        kept.append(ch)
        used += width
    return "…" + "".join(reversed(kept))


class MineLine(Progress):
    """rich's Progress drawn as one line per task, fitted to the console's width."""

    def __init__(self, console: Console, stopping: Callable[[], bool] = lambda: False) -> None:
        self.spinner = Spinner("dots")
        self.screen = console  # rich asks for the lines before `self.console` is set up
        self.stopping = stopping  # drawn by rich's refresh thread: Ctrl-C shows at once
        super().__init__(console=console, transient=True)

    def get_renderables(self) -> Iterable[RenderableType]:
        width = max(self.screen.width - 1, 20)  # the last column would wrap on some terminals
        yield Group(*(self.line(task, width) for task in self.tasks if task.visible))

    def line(self, task: Task, width: int) -> Text:
        fields = task.fields
        what = STOPPING if self.stopping() else task.description
        line = Text.assemble(self.spinner.render(task.get_time()), " ", (what, "bold"))
        filing = fields.get("phase") == FILE
        # Always shown: what was done so far (and, when filing, the ETA).
        parts = [(fields.get("count", ""), "")]
        optional = []  # shown while there is room, in this order
        if filing:
            speed = task.finished_speed or task.speed
            parts = [
                (f"{int(task.completed)}/{int(task.total or 0)} drawers", "progress.download"),
                (fields.get("files", ""), ""),
                (f"ETA {clock(task.time_remaining)}", "progress.remaining"),
            ]
            if speed is not None:
                rate = f"{speed:,.{1 if speed < 100 else 0}f} drawers/s"
                optional.append((rate, "progress.data.speed"))
        optional.append((clock(task.elapsed), "progress.elapsed"))
        parts = [p for p in parts if p[0]]
        used = line.cell_len + sum(len(GAP) + cell_len(text) for text, _ in parts)
        bar = BAR_MIN if filing and used + 1 + BAR_MIN <= width else 0
        used += bar and 1 + bar
        for piece in optional:
            if used + len(GAP) + cell_len(piece[0]) <= width:
                parts.append(piece)
                used += len(GAP) + cell_len(piece[0])
        room = min(width - used - len(GAP), 48)
        current = fields.get("current", "")
        if current and room >= PATH_MIN:
            parts.append((tail(current, room), "dim"))
            used += len(GAP) + cell_len(parts[-1][0])
        if bar:
            line.append(" ")
            line.append_text(_bar(task, min(BAR_MAX, bar + width - used)))
        for text, style in parts:
            line.append(GAP)
            line.append(text, style=style)
        line.no_wrap, line.overflow = True, "ellipsis"
        line.truncate(width)
        return line


def _bar(task: Task, width: int) -> Text:
    total = task.total or 0
    filled = width if total and task.completed >= total else 0
    if total and not filled:
        filled = int(width * task.completed / total)
    return Text.assemble(("━" * filled, "bar.complete"), ("━" * (width - filled), "bar.back"))


class MineProgress:
    """Feeds a MineTally and, when given a terminal console, draws the progress on it.

    It is also where a stop request takes effect: once `stop_requested` is set (Ctrl-C, see
    `stop_on_ctrl_c`), the next event raises KeyboardInterrupt, except "file", which reports a
    group already written (its other files follow at once)."""

    def __init__(self, console: Console | None) -> None:
        self.tally = MineTally()
        self.progress: MineLine | None = None
        self.scan_task: Any = None
        self.task: Any = None
        self.stop_requested = False
        if console is not None:
            self.progress = MineLine(console, lambda: self.stop_requested)

    def __call__(self, event: str, data: dict[str, Any]) -> None:
        self.tally.update(event, data)
        if self.progress is not None:
            self._draw(event, data)
        if self.stop_requested and event != "file":
            raise KeyboardInterrupt

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
                current=data.get("path", ""),
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
                files=f"file 0/{data['files']}",
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
                files=f"file {tally.files_reached}/{tally.files_total}",
                current=data.get("path", ""),
            )
            # Drawn now, not at the next tick: every slice of drawers shows (a few a second).
            self.progress.refresh()
        elif event == "file":
            self.progress.update(self.task, description="filing", current=data["path"])

    def stop(self) -> None:
        if self.progress is not None:
            self.progress.stop()

    def interrupted_message(self, resume: str) -> str:
        """Ctrl-C: what the palace kept, and the command (`resume`, ready to paste) that
        carries on."""
        tally = self.tally
        if tally.files_filed:
            kept = (
                f"Kept {tally.files_filed} of {tally.files_total} new or changed files "
                f"({tally.drawers_filed} drawers), filed before the interruption."
            )
        else:
            kept = "Nothing was filed by this run; the palace is as it was."
        return f"Interrupted. {kept}\nResume with: {resume}  (files already filed are skipped)"


@contextmanager
def stop_on_ctrl_c(progress: MineProgress) -> Iterator[None]:
    """While mining: Ctrl-C (SIGINT) asks `progress` to stop the run at the edge of its next
    step; a second Ctrl-C raises at once.

    Python's own handler raises KeyboardInterrupt wherever the main thread happens to be, and
    some places swallow it: inside SQLite's call of a Python function (the keyword index runs
    one for every drawer written) it becomes a failed statement, and in a finaliser it is
    printed and dropped. Under load, when a Ctrl-C landed in the catalogue write, mining went
    on as if it had never been pressed. A flag can't be lost; the progress callback turns it
    into a KeyboardInterrupt at a point the miner is ready for. A SIGINT that was ignored when
    the command started (a background job) stays ignored."""
    previous = signal.getsignal(signal.SIGINT)
    usable = threading.current_thread() is threading.main_thread() and callable(previous)
    if not usable:
        yield
        return

    def request_stop(signum: int, frame: Any) -> None:
        if progress.stop_requested:
            raise KeyboardInterrupt  # asked twice: stop now
        progress.stop_requested = True

    signal.signal(signal.SIGINT, request_stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
