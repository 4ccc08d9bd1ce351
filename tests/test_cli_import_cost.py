"""Importing the CLI stays cheap: rich (~70 ms), chromadb and onnxruntime load only when a
command needs them, so `--json` and `--help` never pay for rich's import."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import json, sys
import mempalace_cli.cli
print(json.dumps(sorted(sys.modules)))
"""


def _modules_after_import() -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _loaded(modules: list[str], package: str) -> list[str]:
    return [m for m in modules if m == package or m.startswith(package + ".")]


def test_cli_import_loads_no_rich_chromadb_or_onnxruntime() -> None:
    modules = _modules_after_import()
    assert "mempalace_cli.cli" in modules
    for package in ("rich", "chromadb", "onnxruntime"):
        assert _loaded(modules, package) == [], f"importing the CLI imported {package}"
