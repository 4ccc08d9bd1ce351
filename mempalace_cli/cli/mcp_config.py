"""`mempalace mcp-config`: the exact snippet or command that registers this palace's MCP server
with a client, using the absolute path of the running executable and the current palace, so
nobody has to read the README to connect an agent."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from enum import StrEnum
from pathlib import Path
from typing import Any

import typer

from mempalace_cli.cli import hooks as hooks_module  # each other's: import the module
from mempalace_cli.cli.env import get_env, print_json
from mempalace_cli.cli.options import flag, json_option, option
from mempalace_cli.common.config import resolve_settings

SERVER_NAME = "mempalace"


class Client(StrEnum):
    claude_code = "claude-code"
    claude_desktop = "claude-desktop"
    cursor = "cursor"
    vscode = "vscode"


# Where each client reads the snippet (said on stderr, so stdout stays the bare snippet).
WHERE = {
    Client.claude_code: "Run this command once (--scope user: every project sees the palace).",
    Client.claude_desktop: "Merge into claude_desktop_config.json (Settings > Developer > Edit "
    "Config; macOS: ~/Library/Application Support/Claude/, Windows: %APPDATA%\\Claude\\), "
    "then restart Claude Desktop.",
    Client.cursor: "Merge into ~/.cursor/mcp.json (all projects) or .cursor/mcp.json (one "
    "project).",
    Client.vscode: "Merge into .vscode/mcp.json in your workspace (or run 'MCP: Open User "
    "Configuration' for every workspace).",
}


def server_command() -> list[str]:
    """How to start this very program: the `mempalace` executable that is running, by its
    absolute path, or this Python with -m when run as a module."""
    argv0 = sys.argv[0] if sys.argv else ""
    path = argv0 if os.sep in argv0 else (shutil.which(argv0) or "") if argv0 else ""
    script = Path(path) if path else None
    if (
        script
        and script.is_file()
        and script.name.startswith("mempalace")
        and script.suffix != ".py"
    ):
        return [os.path.abspath(path)]
    return [os.path.abspath(sys.executable), "-m", "mempalace_cli"]


def server_args(palace: str, chroma_url: str | None) -> list[str]:
    args = ["--palace", palace]
    if chroma_url:
        args += ["--chroma-url", chroma_url]
    return [*args, "serve-mcp"]


def snippet(client: Client, command: list[str], args: list[str]) -> dict[str, Any] | str:
    """The command line (claude-code) or the JSON document (the others) for `client`."""
    exe, rest = command[0], [*command[1:], *args]
    if client is Client.claude_code:
        return shlex.join(
            ["claude", "mcp", "add", "--scope", "user", SERVER_NAME, "--", exe, *rest]
        )
    entry: dict[str, Any] = {"command": exe, "args": rest}
    if client is Client.vscode:
        return {"servers": {SERVER_NAME: {"type": "stdio", **entry}}}
    return {"mcpServers": {SERVER_NAME: entry}}


def _text(value: dict[str, Any] | str) -> str:
    return value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False)


def mcp_config(
    ctx: typer.Context,
    client: Client = option(
        "--client",
        "claude-code|claude-desktop|cursor|vscode",
        "Print only this client's snippet (default: all four, each under a heading).",
    ),
    hooks: str = option(
        "--hooks",
        "claude-code|codex",
        "Instead: the client's hooks that file each session into the palace (Stop, "
        "PreCompact, SessionEnd), as its settings JSON.",
    ),
    write: bool = flag(
        "--write",
        "With --hooks: merge them into the client's settings file, showing the change "
        "(an existing file is changed only with --yes; the old one is kept as .bak).",
    ),
    settings_file: Path = option(
        "--file",
        "PATH",
        "With --hooks --write: the settings file (default: ~/.claude/settings.json, or "
        "~/.codex/hooks.json).",
    ),
    yes: bool = flag("--yes", "With --hooks --write: change the file.", "-y"),
    json_output: bool = json_option(),
) -> None:
    """Print the exact command or config snippet that connects an MCP client to this palace.

    It names the absolute path of this mempalace executable and of the palace in use (set
    --palace to pick another). With --client, stdout is only the snippet (a command for
    claude-code, JSON for the others) and where to put it goes to stderr.

    Example: mempalace mcp-config --client claude-desktop --palace ~/.mempalace/palace
    """
    if hooks is not None or write or settings_file is not None:
        hooks_module.hook_config(ctx, hooks, write, settings_file, yes, json_output)
        return
    env = get_env(ctx)
    settings = resolve_settings(env.palace_option, env.chroma_url)
    palace = str(Path(settings.palace_path).expanduser().resolve())
    command, args = server_command(), server_args(palace, settings.chroma_url)
    chosen = [client] if client is not None else list(Client)
    if json_output:
        print_json(
            {
                "command": command[0],
                "args": [*command[1:], *args],
                "palace": palace,
                "clients": {
                    c.value: {"snippet": snippet(c, command, args), "where": WHERE[c]}
                    for c in chosen
                },
            }
        )
        return
    if client is not None:
        typer.echo(_text(snippet(client, command, args)))
        env.err.print(WHERE[client], highlight=False, soft_wrap=True)
        return
    for n, c in enumerate(chosen):
        if n:
            typer.echo("")
        typer.echo(f"# {c.value}: {WHERE[c]}")
        typer.echo(_text(snippet(c, command, args)))


def register(app: typer.Typer) -> None:
    app.command("mcp-config")(mcp_config)
