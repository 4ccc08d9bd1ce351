"""Where things live: MEMPALACE_HOME, config.toml, and the palace directory.

`MEMPALACE_HOME` (default `~/.mempalace`) holds `config.toml` and `identity.txt`.
Everything a palace owns lives inside the palace directory, so `--palace` selects all of it.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomli_w

from mempalace_cli.common.errors import ConfigError, NotADirectoryPathError

HOME_ENV = "MEMPALACE_HOME"
PALACE_ENV = "MEMPALACE_PALACE"
CHROMA_URL_ENV = "MEMPALACE_CHROMA_URL"
CHROMA_TOKEN_ENV = "MEMPALACE_CHROMA_TOKEN"
CHROMA_CA_ENV = "MEMPALACE_CHROMA_CA_FILE"
CHROMA_DATABASE_ENV = "MEMPALACE_CHROMA_DATABASE"
DEFAULT_CHROMA_TIMEOUT = 15.0
CONFIG_FILE = "config.toml"
IDENTITY_FILE = "identity.txt"
PROJECT_FILE = "mempalace.toml"
# Folders an MCP client may mine under (serve-mcp also takes --mine-root DIR).
MCP_MINE_ROOTS_KEY = "mcp_mine_roots"

# The name MemPalace uses, so palaces it made open here.
COLLECTION_NAME = "mempalace_drawers"


def mempalace_home() -> Path:
    raw = os.environ.get(HOME_ENV)
    return Path(raw).expanduser() if raw else Path.home() / ".mempalace"


def read_toml(path: Path) -> dict[str, Any]:
    """Read a TOML file, turning every way it can fail into a ConfigError that names the file."""
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        raise
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(
            f"{path} is not valid TOML: {exc}.",
            hint=f"Fix the file or move it aside (mv {path} {path}.bak) and run the command again.",
        ) from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(
            f"Could not read {path}: {exc}.", hint="Check the file's permissions."
        ) from exc


def write_toml(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_bytes(tomli_w.dumps(data).encode("utf-8"))
    tmp.replace(path)


@dataclass(frozen=True)
class Settings:
    """The resolved settings of one invocation."""

    home: Path
    palace_path: Path
    chroma_url: str | None = None
    embedding_model_dir: Path | None = None
    lock_timeout: float = 60.0
    raw: dict[str, Any] = field(default_factory=dict)
    # A Chroma server not ours to trust: a bearer token, a CA bundle for https, how long one
    # request may take, and the database on the server that holds this palace.
    chroma_token: str | None = field(default=None, repr=False)
    chroma_ca_file: Path | None = None
    chroma_timeout: float = DEFAULT_CHROMA_TIMEOUT
    chroma_database: str | None = None

    @property
    def identity_path(self) -> Path:
        return self.home / IDENTITY_FILE

    @property
    def config_path(self) -> Path:
        return self.home / CONFIG_FILE


def _require_folder(path: Path, what: str) -> None:
    """A path we will create folders under must not be a file (or sit below one)."""
    for p in (path, *path.parents):
        if p.exists() or p.is_symlink():
            if not p.is_dir():
                raise NotADirectoryPathError(
                    f"{what} {path} is not a folder: {p} is a file.",
                    hint="Point it at a folder, or at a path that does not exist yet (it is "
                    "created), or move the file out of the way.",
                )
            return


def mcp_mine_roots(settings: Settings) -> tuple[Path, ...]:
    """The folders `mempalace_mine` may mine under when this palace is served over MCP: config
    key `mcp_mine_roots` (a list of absolute folders; `~` is expanded), symlinks resolved.
    None by default. Read only by `serve-mcp`, so a bad value never stops other commands."""
    raw = settings.raw.get(MCP_MINE_ROOTS_KEY)
    if raw is None:
        return ()
    example = f'{MCP_MINE_ROOTS_KEY} = ["/home/me/notes"]'
    if not isinstance(raw, list) or not all(isinstance(r, str) and r.strip() for r in raw):
        raise ConfigError(
            f"{MCP_MINE_ROOTS_KEY} in {settings.config_path} must be a list of folders, "
            f"not {raw!r}.",
            hint=f"Write it as {example} (or remove it: then MCP clients may mine nothing).",
        )
    roots: list[Path] = []
    for item in raw:
        path = Path(item).expanduser()
        if not path.is_absolute():
            raise ConfigError(
                f"{MCP_MINE_ROOTS_KEY} in {settings.config_path} holds {item!r}, which is not "
                "an absolute path.",
                hint=f"Write every folder in full, e.g. {example}.",
            )
        roots.append(Path(os.path.realpath(path)))
    return tuple(dict.fromkeys(roots))


def load_global_config(home: Path) -> dict[str, Any]:
    path = home / CONFIG_FILE
    if not path.exists():
        return {}
    return read_toml(path)


def resolve_settings(
    palace: str | os.PathLike[str] | None = None,
    chroma_url: str | None = None,
    home: Path | None = None,
    chroma_token: str | None = None,
    chroma_ca_file: str | None = None,
    chroma_database: str | None = None,
) -> Settings:
    """Resolve the palace path: --palace > $MEMPALACE_PALACE > config.toml palace_path > default."""
    home = home or mempalace_home()
    _require_folder(home, HOME_ENV)
    cfg = load_global_config(home)
    if palace:
        palace_path = Path(palace)
    elif os.environ.get(PALACE_ENV):
        palace_path = Path(os.environ[PALACE_ENV])
    elif cfg.get("palace_path"):
        palace_path = Path(str(cfg["palace_path"]))
    else:
        palace_path = home / "palace"
    url = chroma_url or os.environ.get(CHROMA_URL_ENV) or cfg.get("chroma_url") or None
    model_dir = cfg.get("embedding_model_dir")
    lock_timeout = cfg.get("lock_timeout_seconds", 60.0)
    if not isinstance(lock_timeout, int | float) or lock_timeout <= 0:
        raise ConfigError(
            f"lock_timeout_seconds in {home / CONFIG_FILE} must be a positive number, "
            f"not {lock_timeout!r}."
        )
    timeout = cfg.get("chroma_timeout_seconds", DEFAULT_CHROMA_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
        raise ConfigError(
            f"chroma_timeout_seconds in {home / CONFIG_FILE} must be a positive number, "
            f"not {timeout!r}."
        )
    token = chroma_token or os.environ.get(CHROMA_TOKEN_ENV) or cfg.get("chroma_token") or None
    ca_file = chroma_ca_file or os.environ.get(CHROMA_CA_ENV) or cfg.get("chroma_ca_file")
    database = chroma_database or os.environ.get(CHROMA_DATABASE_ENV) or cfg.get("chroma_database")
    _require_folder(palace_path.expanduser(), "The palace path")
    return Settings(
        home=home,
        palace_path=palace_path.expanduser().absolute(),
        chroma_url=str(url) if url else None,
        embedding_model_dir=Path(str(model_dir)).expanduser() if model_dir else None,
        lock_timeout=float(lock_timeout),
        raw=cfg,
        chroma_token=str(token) if token else None,
        chroma_ca_file=Path(str(ca_file)).expanduser() if ca_file else None,
        chroma_timeout=float(timeout),
        chroma_database=str(database) if database else None,
    )
