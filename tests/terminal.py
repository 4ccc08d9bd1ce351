"""Run the real `mempalace` executable in a pseudo-terminal (stdlib pty), as a person would:
stdout and stderr are a terminal, so colours and progress are on. Used by the CLI tests."""

from __future__ import annotations

import os
import pty
import re
import select
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


def mempalace_exe() -> str:
    return shutil.which("mempalace") or str(Path(sys.executable).parent / "mempalace")


@dataclass
class TerminalRun:
    raw: str  # everything the terminal received, escape codes included
    exit_code: int

    @property
    def text(self) -> str:
        return ANSI.sub("", self.raw).replace("\r\n", "\n")


def run_in_terminal(
    args: list[str],
    env: dict[str, str],
    columns: int = 120,
    on_output: Callable[[str, subprocess.Popen], None] | None = None,
    timeout: float = 300,
) -> TerminalRun:
    """Run `mempalace ARGS` with stdin/stdout/stderr on a new pseudo-terminal of `columns`
    columns; `on_output(all output so far, process)` is called as output arrives (a test sends
    signals from there). Returns all output and the exit status."""
    master, slave = pty.openpty()
    os.set_blocking(master, True)
    import fcntl
    import struct
    import termios

    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    full_env = {**env, "COLUMNS": str(columns), "TERM": "xterm-256color"}
    full_env.pop("NO_COLOR", None)
    proc = subprocess.Popen(
        [mempalace_exe(), *args],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=full_env,
        start_new_session=True,
    )
    os.close(slave)
    chunks: list[bytes] = []
    try:
        while True:
            ready, _, _ = select.select([master], [], [], timeout)
            if not ready:
                proc.kill()
                raise TimeoutError(f"no output for {timeout} s: {b''.join(chunks)[-2000:]!r}")
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
            if on_output is not None:
                on_output(b"".join(chunks).decode("utf-8", "replace"), proc)
    finally:
        os.close(master)
    code = proc.wait(timeout=timeout)
    return TerminalRun(b"".join(chunks).decode("utf-8", "replace"), code)


def interrupt(proc: subprocess.Popen) -> None:
    """What Ctrl-C does to the foreground command: SIGINT."""
    proc.send_signal(signal.SIGINT)
