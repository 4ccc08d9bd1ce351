"""The package's layers (docs/architecture.md): each subpackage says what it may import, and
the import rules in pyproject.toml hold for the code as it is."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import mempalace_cli

PACKAGE = Path(mempalace_cli.__file__).parent
REPO = PACKAGE.parent


def test_every_layer_hold_its_import_rules() -> None:
    """`lint-imports` reads the layers contract in pyproject.toml; an import from a lower layer
    into a higher one (storage importing the service, say) breaks it."""
    run = subprocess.run(
        [sys.executable, "-c", "from importlinter.cli import lint_imports_command; "
         "lint_imports_command()"],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 kept, 0 broken" in run.stdout


def test_every_subpackage_says_what_lives_there_and_what_it_may_import() -> None:
    packages = sorted(p.parent for p in PACKAGE.glob("*/__init__.py"))
    assert len(packages) >= 9
    for init in packages:
        doc = (init / "__init__.py").read_text(encoding="utf-8")
        assert doc.lstrip().startswith('"""'), f"{init.name}/__init__.py has no docstring"
        head = doc.split('"""')[1]
        assert "May import" in head, f"{init.name}/__init__.py does not say what it may import"


def test_the_top_level_holds_only_the_entry_points() -> None:
    """Everything else lives in a layer; a new module at the top is a question of where."""
    assert sorted(p.name for p in PACKAGE.glob("*.py")) == ["__init__.py", "__main__.py"]
