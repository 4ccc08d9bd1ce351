"""Importing the service stays cheap: the miners (the chat parsers, pathspec, ~70 ms), chromadb,
onnxruntime and rich load only when an operation needs them, so a fresh `search --json` process
never pays for mining code it does not run. (miners.paths, how a source path is stored, is
plain string code the service uses everywhere; it may load.)"""

from __future__ import annotations

import subprocess
import sys

import pytest

MINERS = ("convos", "files", "project", "rooms", "chunking")
HEAVY = (
    *(f"mempalace_cli.miners.{m}" for m in MINERS),
    "pathspec",
    "chromadb",
    "onnxruntime",
    "rich",
)

PROBE = """
import sys
{statement}
assert "mempalace_cli.service" in sys.modules
heavy = sorted(
    m for m in sys.modules if any(m == p or m.startswith(p + ".") for p in {heavy!r})
)
if heavy:
    sys.exit("importing the service loaded: " + ", ".join(heavy))
"""


@pytest.mark.parametrize(
    "statement",
    ["import mempalace_cli.service", "from mempalace_cli.service import open_palace"],
)
def test_service_import_loads_no_miners_chromadb_onnxruntime_or_rich(statement: str) -> None:
    probe = PROBE.format(statement=statement, heavy=HEAVY)
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
