"""Run the real `mempalace` executable in a pseudo-terminal (stdlib pty), as a person would:
stdout and stderr are a terminal, so colours and progress are on. Used by the CLI tests."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import shutil
import signal
import struct
import subprocess
import sys
import termios
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


@dataclass
class Live:
    """What `on_output` sees: the recent output (escape codes stripped), the process, and a
    way to type into the terminal."""

    text: str
    proc: subprocess.Popen
    master: int

    def type(self, keys: str) -> None:
        os.write(self.master, keys.encode())


def run_in_terminal(
    args: list[str],
    env: dict[str, str],
    columns: int = 120,
    on_output: Callable[[Live], None] | None = None,
    timeout: float = 300,
) -> TerminalRun:
    """Run `mempalace ARGS` with stdin/stdout/stderr on a new pseudo-terminal of `columns`
    columns; `on_output(live)` is called as output arrives (a test sends signals or types
    from there). Returns all output and the exit status."""
    master, slave = pty.openpty()
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
    poller = select.poll()  # not select(): in a long test run descriptors pass 1024
    poller.register(master, select.POLLIN | select.POLLHUP | select.POLLERR)
    try:
        while True:
            ready = poller.poll(timeout * 1000)
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
                # The recent output only: progress redraws add up over a long run.
                text = ANSI.sub("", b"".join(chunks[-50:]).decode("utf-8", "replace"))
                on_output(Live(text, proc, master))
    finally:
        os.close(master)
    code = proc.wait(timeout=timeout)
    return TerminalRun(b"".join(chunks).decode("utf-8", "replace"), code)


def interrupt(proc: subprocess.Popen) -> None:
    """What Ctrl-C does to the foreground command: SIGINT."""
    proc.send_signal(signal.SIGINT)
