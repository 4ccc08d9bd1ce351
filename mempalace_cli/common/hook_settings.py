"""How the client hooks behave (`mempalace hook`), kept in `$MEMPALACE_HOME/hooks.toml`:

- `silent_save` (default true): when a session stops, the hook files its transcript itself and
  lets the agent stop; false: the hook asks the agent to save first (it blocks the stop once
  with a reason naming `mempalace_checkpoint`).
- `desktop_toast` (default false): also show a desktop notification when a session was filed.

Set with the `mempalace_hook_settings` MCP tool (or by editing the file); read by the hook on
every run, so a change applies to the next one. A missing file means the defaults; a file
that can't be read is a ConfigError naming it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from mempalace_cli.common.config import read_toml, write_toml
from mempalace_cli.common.errors import ConfigError

HOOKS_FILE = "hooks.toml"


@dataclass(frozen=True)
class HookSettings:
    silent_save: bool = True
    desktop_toast: bool = False

    def to_dict(self) -> dict[str, bool]:
        return asdict(self)


def hook_settings_path(home: Path) -> Path:
    return home / HOOKS_FILE


def read_hook_settings(home: Path) -> HookSettings:
    path = hook_settings_path(home)
    try:
        data = read_toml(path)
    except FileNotFoundError:
        return HookSettings()
    values: dict[str, Any] = {}
    for name, default in HookSettings().to_dict().items():
        value = data.get(name, default)
        if not isinstance(value, bool):
            raise ConfigError(
                f"{name} in {path} must be true or false, not {value!r}.",
                hint=f"Write it as `{name} = {str(default).lower()}`, or remove the line for "
                "the default.",
            )
        values[name] = value
    return HookSettings(**values)


def write_hook_settings(home: Path, **changes: bool | None) -> tuple[HookSettings, list[str]]:
    """Apply the changes that are not None; returns the settings now in force and the names
    that changed."""
    current = read_hook_settings(home)
    values = current.to_dict()
    changed = [k for k, v in changes.items() if v is not None and values.get(k) != v]
    if not changed:
        return current, []
    values.update({k: changes[k] for k in changed})
    path = hook_settings_path(home)
    try:
        data = read_toml(path)
    except FileNotFoundError:
        data = {}
    data.update(values)  # other keys someone wrote there are kept
    write_toml(path, data)
    return HookSettings(**values), changed
