"""The package's layers (docs/architecture.md): each subpackage says what it may import, and
the import rules in pyproject.toml hold for the code as it is."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import mempalace_cli
from mempalace_cli.common.lazy import HEAVY

PACKAGE = Path(mempalace_cli.__file__).parent
REPO = PACKAGE.parent


def test_every_layer_hold_its_import_rules() -> None:
    """`lint-imports` reads the layers contract in pyproject.toml; an import from a lower layer
    into a higher one (storage importing the service, say) breaks it."""
    run = subprocess.run(
        [
            sys.executable,
            "-c",
            "from importlinter.cli import lint_imports_command; lint_imports_command()",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
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


def _imports(tree: ast.AST) -> list[tuple[ast.AST, str]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.append((node, node.module))
    return found


def test_imports_sit_at_the_top_and_heavy_packages_load_on_first_use() -> None:
    """Every import is at the top of its module (where a reader looks), and the packages too
    slow for start-up (`common.lazy.HEAVY`: chromadb, numpy, rich, the MCP SDK...) are
    reached through `lazy(...)`, never imported directly outside `if TYPE_CHECKING:`. An
    exception says why on its line with `# lazy: <reason>`."""
    in_functions, direct_heavy = [], []
    for path in sorted(PACKAGE.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        lines = source.splitlines()
        tree = ast.parse(source)
        where = path.relative_to(REPO)
        type_only = {
            id(inner)
            for node in tree.body
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
            for inner in ast.walk(node)
        }
        nested = {
            id(inner)
            for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            for inner in ast.walk(node)
        }
        for node, name in _imports(tree):
            line = lines[node.lineno - 1]
            if id(node) in nested and "# lazy:" not in line:
                in_functions.append(f"{where}:{node.lineno}: {line.strip()}")
            heavy = name.split(".")[0] in HEAVY
            if heavy and id(node) not in nested | type_only and "# lazy:" not in line:
                direct_heavy.append(f"{where}:{node.lineno}: {line.strip()}")
    assert not in_functions, "imports inside functions:\n" + "\n".join(in_functions)
    assert not direct_heavy, "heavy packages imported directly:\n" + "\n".join(direct_heavy)


def test_a_lazy_module_imports_on_first_use_and_reports_a_missing_package_there() -> None:
    probe = (
        "import sys\n"
        "from mempalace_cli.common.lazy import lazy\n"
        "np = lazy('numpy')\n"
        "assert 'numpy' not in sys.modules\n"
        "assert np.asarray([1, 2]).sum() == 3 and 'numpy' in sys.modules\n"
        "missing = lazy('no_such_package_here')\n"
        "try:\n"
        "    missing.anything\n"
        "except ImportError as exc:\n"
        "    print('ImportError', exc.name)\n"
    )
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "ImportError no_such_package_here"
