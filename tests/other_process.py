"""A helper for tests about writes made elsewhere (no tests here): run a short Python script
against a palace in a separate process, as another terminal or agent would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def run_in_another_process(palace: Path, home: Path, script: str, *args: str) -> str:
    """Run `script` (`python -c`, the palace path as sys.argv[1], then `args`) with
    MEMPALACE_HOME=`home`; its stdout, stripped. Fails the test if the process fails."""
    proc = subprocess.run(
        [sys.executable, "-c", script, str(palace), *args],
        capture_output=True,
        text=True,
        env={**os.environ, "MEMPALACE_HOME": str(home)},
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout.strip()
