"""The README's quotes of the code, regenerated from the code so they cannot drift.

Each quote sits between `<!-- gen:NAME -->` and `<!-- /gen:NAME -->`; NAME picks the function
below that writes it, from a real run where the quote is output (a palace mined from
`examples/notes` in a temporary folder, the real CLI, the real MCP server):

- `wakeup-example`: `mempalace wake-up --budget 1000` with the README's identity file;
- `wakeup-budgets`: the wake-up token use at three budgets;
- `protocol-size`: the memory protocol's size and its cap;
- `mcp-client-output`: what the README's `ask.py` client prints.

`python -m mempalace_cli.cli.readme_blocks --write README.md` rewrites every block;
tests/test_readme_blocks.py fails when the README holds a stale one.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
NOTES = REPO / "examples" / "notes"
# The names the README's commands use; the real run happens in a temporary folder.
SHOWN_PALACE = "/tmp/wk_pal"
SHOWN_HOME = "/tmp/wk_home"
IDENTITY = (
    "I am Atlas, the assistant of the Driftwood team (Harbor, a self-hosted photo library).\n"
    "I answer from the team notes and say when I am not sure.\n"
)
FIXED_MTIME = 1_780_000_000  # 2026-05-28
_BLOCK = re.compile(r"(<!-- gen:([a-z0-9-]+) -->\n)(.*?)(<!-- /gen:\2 -->)", re.DOTALL)


class Sandbox:
    """A palace mined from examples/notes, with its own MEMPALACE_HOME."""

    def __init__(self, base: Path) -> None:
        self.palace = base / "palace"
        self.home = base / "home"
        self.home.mkdir()
        (self.home / "identity.txt").write_text(IDENTITY, encoding="utf-8")
        # A copy, so mining never writes mempalace.toml into the checkout. Drawer ids hash the
        # source path, and undated notes fall back to their files' times: both are fixed here,
        # so every checkout regenerates the same text.
        notes = Path(tempfile.gettempdir()) / "mempalace-readme" / "notes"
        shutil.rmtree(notes.parent, ignore_errors=True)
        shutil.copytree(NOTES, notes)
        for path in notes.rglob("*"):
            os.utime(path, (FIXED_MTIME, FIXED_MTIME))
        self.run("init", str(notes), "--yes")
        self.run("mine", str(notes))

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMPALACE_")}
        env["MEMPALACE_HOME"] = str(self.home)
        env["COLUMNS"] = "200"
        return env

    def run(self, *args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "mempalace_cli", "--palace", str(self.palace), *args],
            env=self.env(),
            capture_output=True,
            text=True,
            check=True,
        )
        return self.shown(done.stdout)

    def shown(self, text: str) -> str:
        return text.replace(str(self.palace), SHOWN_PALACE).replace(str(self.home), SHOWN_HOME)


@contextmanager
def sandbox() -> Iterator[Sandbox]:
    from filelock import FileLock

    # One fixed folder (drawer ids hash the path): two runs at once take turns.
    lock = FileLock(Path(tempfile.gettempdir()) / "mempalace-readme.lock")
    with lock, tempfile.TemporaryDirectory() as tmp:
        try:
            yield Sandbox(Path(tmp))
        finally:
            shutil.rmtree(Path(tempfile.gettempdir()) / "mempalace-readme", ignore_errors=True)


def wakeup_example(box: Sandbox) -> str:
    out = box.run("wake-up", "--budget", "1000")
    return f"```console\n$ mempalace --palace {SHOWN_PALACE} wake-up --budget 1000\n{out}```\n"


def wakeup_budgets(box: Sandbox) -> str:
    lines = []
    for budget in (200, 800, 2000):
        data = json.loads(box.run("wake-up", "--budget", str(budget), "--json"))
        layers = {layer["name"]: layer["tokens"] for layer in data["layers"]}
        shown = {"budget": data["budget"], "total_tokens": data["total_tokens"], "layers": layers}
        lines.append(json.dumps(shown, ensure_ascii=False, separators=(",", ":")))
    command = (
        f"$ for b in 200 800 2000; do mempalace --palace {SHOWN_PALACE} wake-up --budget $b "
        "--json | jq -c '{budget, total_tokens, layers: [.layers[] | {(.name): .tokens}] | "
        "add}'; done"
    )
    return "```console\n" + command + "\n" + "\n".join(lines) + "\n```\n"


def protocol_size(box: Sandbox | None = None) -> str:
    from mempalace_cli.embedders.base import get_token_counter
    from mempalace_cli.memory.protocol import PROTOCOL, PROTOCOL_TOKEN_BUDGET

    tokens = get_token_counter().count(PROTOCOL)
    return (
        "Tests fail if it names an MCP tool that is not in `mempalace_cli/mcp/tools.py` or a CLI "
        f"command that doesn't exist, or if it grows past {PROTOCOL_TOKEN_BUDGET} tokens (it is "
        f"{tokens} today, counted with the same tokenizer).\n"
    )


def mcp_client_output(box: Sandbox) -> str:
    """What ask.py prints: the same calls, through the SDK's client and the real server."""
    import anyio
    from mcp import Client

    from mempalace_cli.mcp.server import build_server
    from mempalace_cli.service import open_palace

    old = os.environ.get("MEMPALACE_HOME")
    os.environ["MEMPALACE_HOME"] = str(box.home)
    palace = open_palace(str(box.palace))
    try:
        server = build_server(palace)
        lines: list[str] = []

        async def ask() -> None:
            async with Client(server) as client:
                lines.append(client.instructions.splitlines()[0])
                tools = await client.list_tools()
                lines.append(f"{len(tools.tools)} tools")
                found = await client.call_tool(
                    "mempalace_search", {"query": "why did we move off Auth0?", "limit": 1}
                )
                hit = found.structured_content["results"][0]
                lines.append(f"{hit['drawer_id']} {hit['wing']} {hit['room']} {hit['similarity']}")
                bad = await client.call_tool("mempalace_search", {"query": "   "})
                lines.append(f"{bad.is_error} {bad.content[0].text}")

        anyio.run(ask)
    finally:
        palace.close()
        if old is None:
            os.environ.pop("MEMPALACE_HOME", None)
        else:
            os.environ["MEMPALACE_HOME"] = old
    return "```console\n$ python ask.py 2>/dev/null\n" + "\n".join(lines) + "\n```\n"


GENERATORS: dict[str, Callable[[Any], str]] = {
    "wakeup-example": wakeup_example,
    "wakeup-budgets": wakeup_budgets,
    "protocol-size": protocol_size,
    "mcp-client-output": mcp_client_output,
}


def blocks(readme: str) -> dict[str, str]:
    """The README's generated blocks as they stand, by name."""
    return {m.group(2): m.group(3) for m in _BLOCK.finditer(readme)}


def fresh_blocks(names: list[str]) -> dict[str, str]:
    with sandbox() as box:
        return {name: GENERATORS[name](box) for name in names}


def rewrite(readme: str, fresh: dict[str, str]) -> str:
    return _BLOCK.sub(lambda m: m.group(1) + fresh.get(m.group(2), m.group(3)) + m.group(4), readme)


def main(argv: list[str]) -> int:
    path = Path(argv[1]) if len(argv) == 2 and argv[0] == "--write" else REPO / "README.md"
    readme = path.read_text(encoding="utf-8")
    names = list(blocks(readme))
    unknown = [n for n in names if n not in GENERATORS]
    if unknown:
        print(f"Unknown generated blocks: {', '.join(unknown)}", file=sys.stderr)
        return 1
    updated = rewrite(readme, fresh_blocks(names))
    if argv[:1] == ["--write"]:
        path.write_text(updated, encoding="utf-8")
    else:
        print(updated)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
