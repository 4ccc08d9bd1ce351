"""Connecting and installing: `mempalace mcp-config` prints snippets that a real MCP client can
start the server from (parsed from what it prints), and the package installed from this
checkout into a fresh virtualenv runs by name from a fresh shell, as `pipx install .` or
`uv tool install .` leave it."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from anyio.from_thread import start_blocking_portal
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.conftest import REPO
from tests.terminal import mempalace_exe

CLIENTS = ("claude-code", "claude-desktop", "cursor", "vscode")


def _run(
    args: list[str], env: dict[str, str], exe: str | None = None
) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [exe or mempalace_exe(), *args], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return done


def _server_from(client: str, stdout: str) -> tuple[str, list[str]]:
    """(command, args) as each client would read them from the printed snippet."""
    if client == "claude-code":
        words = shlex.split(stdout.strip())
        assert words[:6] == ["claude", "mcp", "add", "--scope", "user", "mempalace"]
        assert words[6] == "--"
        return words[7], words[8:]
    doc = json.loads(stdout)
    entry = doc["servers" if client == "vscode" else "mcpServers"]["mempalace"]
    if client == "vscode":
        assert entry["type"] == "stdio"
    return entry["command"], entry["args"]


def _list_tools(command: str, args: list[str], env: dict[str, str]) -> list[str]:
    params = StdioServerParameters(command=command, args=args, env=env)
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(Client(stdio_client(params), mode="legacy")) as client,
    ):
        return [t.name for t in portal.call(client.list_tools).tools]


@pytest.mark.parametrize("client", CLIENTS)
def test_mcp_config_names_this_executable_and_the_palace(client, tmp_path):
    env = {**os.environ, "MEMPALACE_HOME": str(tmp_path / "home")}
    palace = tmp_path / "my palace"  # a space: quoting must hold
    done = _run(["mcp-config", "--client", client, "--palace", str(palace)], env)
    command, args = _server_from(client, done.stdout)
    assert command == os.path.abspath(mempalace_exe()) and Path(command).is_absolute()
    assert args == ["--palace", str(palace.resolve()), "serve-mcp"]
    assert done.stderr.strip()  # where to put it, on stderr
    as_json = json.loads(_run(["mcp-config", "--json", "--palace", str(palace)], env).stdout)
    assert as_json["command"] == command and as_json["args"] == args
    assert set(as_json["clients"]) == set(CLIENTS)


def test_the_printed_snippet_starts_a_working_server(tmp_path, mined_notes):
    """Parse the Claude Desktop snippet and start the server exactly as it says."""
    env = {"MEMPALACE_HOME": str(tmp_path / "home")}
    full_env = {**os.environ, **env}
    done = _run(
        ["mcp-config", "--client", "claude-desktop", "--palace", str(mined_notes["palace"])],
        full_env,
    )
    command, args = _server_from("claude-desktop", done.stdout)
    tools = _list_tools(command, args, env)
    assert "mempalace_search" in tools and "mempalace_status" in tools


def test_installed_as_a_tool_it_runs_by_name_from_a_fresh_shell(tmp_path):
    """What `pipx install .` / `uv tool install .` do: a virtualenv of its own with this
    checkout installed (not editable), its `mempalace` on PATH. The dependencies are borrowed
    from the test environment through a .pth line (no download of chromadb and friends);
    the package itself must come from the new environment."""
    venv = tmp_path / "tool-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    install = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install",
         "--quiet", "--no-deps", str(REPO)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert install.returncode == 0, install.stderr
    purelib = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    site = subprocess.run(
        [str(venv / "bin" / "python"), "-c", purelib], capture_output=True, text=True, check=True
    ).stdout.strip()
    deps = sysconfig.get_paths()["purelib"]
    (Path(site) / "borrowed-deps.pth").write_text(deps + "\n")
    home = tmp_path / "home"
    home.mkdir()
    fresh = {"HOME": str(home), "PATH": f"{venv / 'bin'}:/usr/bin:/bin", "LANG": "C.UTF-8"}
    shell = (
        "cd / && command -v mempalace && mempalace --version && "
        "mempalace mcp-config --client cursor && "
        "python -c 'import mempalace_cli; print(mempalace_cli.__file__)'"
    )
    done = subprocess.run(
        ["/bin/sh", "-c", shell], env=fresh, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    where, version, *rest = done.stdout.splitlines()
    assert where == str(venv / "bin" / "mempalace")
    assert version.startswith("mempalace-cli ")
    snippet = json.loads("\n".join(rest[:-1]))
    assert snippet["mcpServers"]["mempalace"]["command"] == str(venv / "bin" / "mempalace")
    assert rest[-1].startswith(site) and not rest[-1].startswith(str(REPO))
