"""Quotes of the code in README.md and docs/*.md, regenerated from real runs so they cannot drift.

Each quote sits between `<!-- gen:NAME -->` and `<!-- /gen:NAME -->` in any page; NAME picks the
function in GENERATORS that writes it (the same NAME may stand in several pages). The runs
happen in a sandbox that looks like a fresh clone on a fresh machine: a copy of `examples/notes`
in a checkout folder, an empty HOME (so the palace is `~/.mempalace/palace`), no `MEMPALACE_*`
variable, and the real `mempalace` executable run by `bash` exactly as the page shows the
command line. Paths are then shown as those of a user `you` with the clone in
`~/mempalace-cli`. The generators run in the order of GENERATORS, the ones that change the
palace or the notes last.

What differs from run to run (elapsed times, timestamps, and the column widths they move) is
masked when a page is compared with a fresh run (`same`), and a block that is current apart from
those is left as it stands, so regenerating does not churn the pages.

    python -m mempalace_cli.cli.readme_blocks --write-all      # README, docs/*.md, MCP tools
    python -m mempalace_cli.cli.readme_blocks --write README.md docs/protocol.md
    python -m mempalace_cli.cli.readme_blocks --check          # names the stale blocks; exit 1

`--write-all` also rewrites the MCP tool reference in docs/mcp-tools.md (`mempalace_cli.mcp.doc`).
tests/test_readme_blocks.py fails when a page holds a stale block; tests/test_docs.py runs the
README's quick start verbatim.
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

from filelock import FileLock

from mempalace_cli.cli import command_tree
from mempalace_cli.common.lazy import lazy
from mempalace_cli.embedders.base import get_token_counter
from mempalace_cli.mcp.doc import listed_tools, replace_block, tools_block
from mempalace_cli.mcp.server import build_server
from mempalace_cli.memory.protocol import PROTOCOL, PROTOCOL_TOKEN_BUDGET
from mempalace_cli.service import open_palace

anyio = lazy("anyio")
mcp = lazy("mcp")

REPO = Path(__file__).resolve().parents[2]
NOTES = REPO / "examples" / "notes"
DOCS = REPO / "docs"
MCP_TOOLS_PAGE = DOCS / "mcp-tools.md"

# How the pages show the sandbox's paths: a user `you`, the clone in ~/mempalace-cli.
SHOWN_HOME = "/home/you"
SHOWN_CHECKOUT = "/home/you/mempalace-cli"
SHOWN_EXE = "/home/you/mempalace-cli/.venv/bin/mempalace"
IDENTITY = (
    "I am Atlas, the assistant of the Driftwood team (Harbor, a self-hosted photo library).\n"
    "I answer from the team notes and say when I am not sure.\n"
)
FIXED_MTIME = 1_780_000_000  # 2026-05-28
QUICK_QUESTION = "why did we move off Auth0?"
_BLOCK = re.compile(r"(<!-- gen:([a-z0-9-]+) -->\n)(.*?)(<!-- /gen:\2 -->)", re.DOTALL)
_MARK = "@@mempalace-readme-status"

# What changes from one run to the next, masked before two versions of a block are compared.
_VOLATILE = (
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)?"), "<time>"),
    (re.compile(r"(elapsed\s+)\d+(?:\.\d+)? s\b"), r"\1<seconds> s"),
)


def pages() -> list[Path]:
    """Every page that may quote the code: the README and each docs/*.md."""
    return [REPO / "README.md", *sorted(DOCS.glob("*.md"))]


def mempalace_exe() -> Path:
    """The `mempalace` executable beside this interpreter (the one a reader's PATH finds)."""
    bindir = Path(sys.executable).parent
    for name in ("mempalace", "mempalace.exe"):
        if (bindir / name).exists():
            return bindir / name
    found = shutil.which("mempalace")
    if not found:
        raise RuntimeError("No `mempalace` executable: install the package (pip install -e .).")
    return Path(found)


class Sandbox:
    """A fresh clone's examples/notes, mined into a fresh HOME's palace, as the quick start does."""

    def __init__(self, base: Path, checkout: Path) -> None:
        self.checkout = checkout
        self.home = base / "home"
        self.mempalace_home = self.home / ".mempalace"
        self.palace = self.mempalace_home / "palace"
        self.exe = mempalace_exe()
        self.home.mkdir()
        # A copy, so mining never writes mempalace.toml into the real checkout. Drawer ids hash
        # the source path, and undated notes fall back to their files' times: both are fixed
        # here, so every checkout regenerates the same text.
        notes = checkout / "examples" / "notes"
        shutil.copytree(NOTES, notes, ignore=shutil.ignore_patterns("mempalace.toml"))
        for path in [notes, *notes.rglob("*")]:
            os.utime(path, (FIXED_MTIME, FIXED_MTIME))
        self.init = self.console("mempalace init examples/notes")
        self.mine = self.console("mempalace mine examples/notes")
        (self.mempalace_home / "identity.txt").write_text(IDENTITY, encoding="utf-8")

    def env(self) -> dict[str, str]:
        # The model cache is keyed by content and never shows in output: kept when set (the
        # test session shares one), so a fresh HOME does not write 80 MB again.
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("MEMPALACE_") or k == "MEMPALACE_CACHE_DIR"
        }
        env.update(
            HOME=str(self.home),
            COLUMNS="200",
            PYTHONUNBUFFERED="1",  # stdout and stderr in the order a terminal shows them
            PATH=str(self.exe.parent) + os.pathsep + env.get("PATH", ""),
        )
        return env

    def script(
        self, lines: list[str], merge: bool = False, expect: tuple[int, ...] = (0,)
    ) -> list[str]:
        """Run `lines` in one bash, in the checkout, and return each line's output (stdout, and
        stderr too when `merge`). A line whose exit status is not in `expect` is an error."""
        body = ["exec 2>&1"] if merge else []
        for line in lines:
            body += [line, f'__s=$?; printf "\\n{_MARK} %s@@\\n" "$__s"; (exit "$__s")']
        done = subprocess.run(
            ["bash", "-c", "\n".join(body)],
            cwd=self.checkout,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=600,
        )
        parts = re.split(rf"\n?{_MARK} (\d+)@@\n", done.stdout)
        outputs, statuses = parts[0:-1:2], [int(s) for s in parts[1::2]]
        if len(statuses) != len(lines):  # bash itself stopped early
            raise RuntimeError(f"bash stopped after {len(statuses)} of {lines}:\n{done.stderr}")
        for line, status, out in zip(lines, statuses, outputs, strict=True):
            if status not in expect:
                raise RuntimeError(f"`{line}` exited {status}:\n{out}\n{done.stderr}".rstrip())
        return [self.shown(out) for out in outputs]

    def run(self, line: str, merge: bool = False, expect: tuple[int, ...] = (0,)) -> str:
        return self.script([line], merge, expect)[0]

    def console(self, *lines: str, merge: bool = False, expect: tuple[int, ...] = (0,)) -> str:
        """The lines as a reader types them, each followed by what it prints."""
        shown = []
        for line, out in zip(lines, self.script(list(lines), merge, expect), strict=True):
            shown.append(f"$ {line}\n{out}" + ("" if out.endswith("\n") or not out else "\n"))
        return "".join(shown)

    def shown(self, text: str) -> str:
        for real, shown in (
            (str(self.exe), SHOWN_EXE),
            (str(self.checkout), SHOWN_CHECKOUT),
            (str(self.home), SHOWN_HOME),
        ):
            text = text.replace(real, shown)
        return text


@contextmanager
def sandbox() -> Iterator[Sandbox]:
    # One fixed checkout folder (drawer ids hash the path): two runs at once take turns.
    root = Path(tempfile.gettempdir()) / "mempalace-readme"
    lock = FileLock(Path(tempfile.gettempdir()) / "mempalace-readme.lock")
    with lock, tempfile.TemporaryDirectory() as tmp:
        shutil.rmtree(root, ignore_errors=True)
        try:
            yield Sandbox(Path(tmp), root / "mempalace-cli")
        finally:
            shutil.rmtree(root, ignore_errors=True)


def fenced(text: str, lang: str = "console") -> str:
    return f"```{lang}\n{text.rstrip(chr(10))}\n```\n"


# -- README.md: the quick start --------------------------------------------------------------
def quickstart_init(box: Sandbox) -> str:
    return fenced(box.init)


def quickstart_mine(box: Sandbox) -> str:
    return fenced(box.mine)


def quickstart_search(box: Sandbox) -> str:
    # With stderr, as a terminal shows it: the two-line legend follows the hits.
    return fenced(box.console(f'mempalace search "{QUICK_QUESTION}" -n 2', merge=True))


def quickstart_status(box: Sandbox) -> str:
    return fenced(box.console("mempalace status"))


def quickstart_connect(box: Sandbox) -> str:
    return fenced(box.console("mempalace mcp-config --client claude-code"))


# -- docs/commands.md ---------------------------------------------------------------------------
def commands_index(box: Sandbox | None = None) -> str:
    """Every command, its usage line, what it does and its options, as `--help` says them."""

    root = command_tree()
    context = root.context_class  # typer's own click: build contexts with its class
    root_ctx = context(root, info_name="mempalace")
    rows = ["| command | what it does | options |", "| --- | --- | --- |"]

    def add(cmd: Any, ctx: Any) -> None:
        usage = " ".join([ctx.command_path, *cmd.collect_usage_pieces(ctx)])
        options = []
        for param in cmd.params:
            if param.param_type_name != "option" or param.hidden or "--help" in param.opts:
                continue
            names = "/".join(sorted(param.opts, key=lambda o: (not o.startswith("--"), o)))
            metavar = param.display_type_rich(ctx)  # as --help shows it (help_format.py)
            shown = f"{names} {metavar}" if metavar else names
            options.append("`" + shown.replace("|", "\\|") + "`")
        text = cmd.get_short_help_str(limit=400).replace("|", "\\|")
        rows.append(f"| `{usage}` | {text} | {', '.join(options) or '-'} |")

    for name in root.list_commands(root_ctx):
        cmd = root.get_command(root_ctx, name)
        if cmd is None or cmd.hidden:
            continue
        ctx = context(cmd, info_name=name, parent=root_ctx)
        if hasattr(cmd, "list_commands"):  # kg, diary: one row per sub-command
            for sub_name in cmd.list_commands(ctx):
                sub = cmd.get_command(ctx, sub_name)
                if sub is not None and not sub.hidden:
                    add(sub, context(sub, info_name=sub_name, parent=ctx))
        else:
            add(cmd, ctx)
    return "\n".join(rows) + "\n"


def search_json(box: Sandbox) -> str:
    return fenced(box.console('mempalace search "restore failures" --room project -n 1 --json'))


def search_not_found(box: Sandbox) -> str:
    return fenced(box.console('mempalace search "auth" --wing note', merge=True, expect=(4,)))


def show_example(box: Sandbox) -> str:
    found = json.loads(box.run(f'mempalace search "{QUICK_QUESTION}" -n 1 --json'))
    drawer = found["results"][0]["drawer_id"]
    return fenced(box.console(f"mempalace show {drawer}"))


def mcp_config_desktop(box: Sandbox) -> str:
    return fenced(box.console("mempalace mcp-config --client claude-desktop"))


def no_palace(box: Sandbox) -> str:
    lines = ["mempalace --palace /tmp/nothing status", "echo $?"]
    return fenced(box.console(*lines, merge=True, expect=(0, 3)))


# -- docs/security.md ------------------------------------------------------------------------------
def serve_refusal(box: Sandbox) -> str:
    line = "mempalace serve-mcp --transport http --host 0.0.0.0"
    return fenced(box.console(line, merge=True, expect=(2,)))


# -- docs/protocol.md: wake-up, the protocol, AAAK ----------------------------------------------
def wakeup_example(box: Sandbox) -> str:
    return fenced(box.console("mempalace wake-up --budget 1000"))


def wakeup_budgets(box: Sandbox) -> str:
    lines = []
    for budget in (200, 1200, 2400):
        data = json.loads(box.run(f"mempalace wake-up --budget {budget} --json"))
        layers = {layer["name"]: layer["tokens"] for layer in data["layers"]}
        shown = {"budget": data["budget"], "total_tokens": data["total_tokens"], "layers": layers}
        lines.append(json.dumps(shown, ensure_ascii=False, separators=(",", ":")))
    command = (
        "$ for b in 200 1200 2400; do mempalace wake-up --budget $b --json | jq -c "
        "'{budget, total_tokens, layers: [.layers[] | {(.name): .tokens}] | add}'; done"
    )
    return fenced(command + "\n" + "\n".join(lines))


def wakeup_no_identity(box: Sandbox) -> str:
    identity = box.mempalace_home / "identity.txt"
    aside = identity.with_name("identity.txt.aside")
    identity.rename(aside)
    try:
        return fenced(box.console("mempalace wake-up | head -2"))
    finally:
        aside.rename(identity)


def protocol_size(box: Sandbox | None = None) -> str:
    tokens = get_token_counter().count(PROTOCOL)
    return (
        "Tests fail if it names an MCP tool that is not in `mempalace_cli/mcp/tools.py` or a CLI "
        f"command that doesn't exist, or if it grows past {PROTOCOL_TOKEN_BUDGET} tokens (it is "
        f"{tokens} today, counted with the same tokenizer).\n"
    )


def aaak_spec(box: Sandbox) -> str:
    return fenced(box.console("mempalace wake-up --aaak-spec"))


def search_aaak(box: Sandbox) -> str:
    return fenced(box.console('mempalace search "why did we move off Auth0" -n 2 --aaak'))


MEASURE_PY = """\
from pathlib import Path

from mempalace_cli.embedders.base import get_token_counter
from mempalace_cli.memory import aaak
from mempalace_cli.storage.catalog import Catalog

count = get_token_counter().count
text = Path("examples/notes/decisions/0006-auth0-to-clerk.md").read_text()
line = aaak.encode(text, {"wing": "notes", "room": "decisions"})
key = aaak.analyze(text).key
print(line)
print(f"original {count(text)} tokens, AAAK line {count(line)}, key sentence alone {count(key)}")

rows = list(Catalog(Path.home() / ".mempalace" / "palace").iter_drawers())
orig = sum(count(r.text) for r in rows)
summ = sum(
    count(aaak.encode(r.text, {"wing": r.wing, "room": r.room, "source_file": r.source_file}))
    for r in rows
)
print(
    f"{len(rows)} drawers: {orig} tokens verbatim, {summ} tokens as AAAK "
    f"({orig / summ:.1f}x fewer, lossy)"
)
"""


def aaak_measure(box: Sandbox) -> str:
    script = box.checkout / "measure.py"
    script.write_text(MEASURE_PY, encoding="utf-8")
    try:
        out = box.run("python measure.py")
    finally:
        script.unlink()
    return (
        fenced("# measure.py, in the clone's folder\n" + MEASURE_PY, "python")
        + "\n"
        + fenced("$ python measure.py\n" + out)
    )


# -- docs/mcp.md and docs/mcp-tools.md ----------------------------------------------------------
def mcp_client_output(box: Sandbox) -> str:
    """What ask.py prints: the same calls, through the SDK's client and the real server."""

    old = os.environ.get("MEMPALACE_HOME")
    os.environ["MEMPALACE_HOME"] = str(box.mempalace_home)
    palace = open_palace(str(box.palace))
    try:
        server = build_server(palace)
        lines: list[str] = []

        async def ask() -> None:
            async with mcp.Client(server) as client:
                lines.append(client.instructions.splitlines()[0])
                tools = await client.list_tools()
                lines.append(f"{len(tools.tools)} tools")
                found = await client.call_tool(
                    "mempalace_search", {"query": QUICK_QUESTION, "limit": 1}
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
    return fenced("$ python ask.py 2>/dev/null\n" + "\n".join(lines))


def _field(name: str, spec: dict[str, Any], required: bool) -> str:
    kind = spec.get("type", "any")
    kind = "/".join(k for k in kind if k != "null") if isinstance(kind, list) else kind
    text = f"`{name}`{'*' if required else ''} {kind}"
    items = spec.get("items") or {}
    inner = items.get("properties") if isinstance(items, dict) else None
    if inner:
        needed = set(items.get("required", []))
        text += " of {" + ", ".join(_field(k, v, k in needed) for k, v in inner.items()) + "}"
    return text


def mcp_output_fields(box: Sandbox | None = None) -> str:
    """Each tool's result fields, from the output schema the real server lists."""

    rows = ["| tool | result fields (`*` always present) |", "| --- | --- |"]
    for tool in listed_tools():
        schema = tool.output_schema or {}
        needed = set(schema.get("required", []))
        fields = ", ".join(
            _field(k, v, k in needed) for k, v in schema.get("properties", {}).items()
        )
        rows.append(f"| `{tool.name}` | {fields or '-'} |")
    return "\n".join(rows) + "\n"


# -- changing the palace: last --------------------------------------------------------------------
def convos_mine(box: Sandbox) -> str:
    chats = box.checkout / "chats"
    if not chats.exists():
        shutil.copytree(REPO / "examples" / "convos", chats)
        for path in [chats, *chats.rglob("*")]:
            os.utime(path, (FIXED_MTIME, FIXED_MTIME))
    line = "mempalace mine chats --mode convos"
    return fenced(box.console(line, line))


def convos_search(box: Sandbox) -> str:
    return fenced(box.console('mempalace search "who lowered max.poll.records" --wing chats -n 1'))


def mine_changes(box: Sandbox) -> str:
    return fenced(
        box.console(
            'echo "- Tomás now owns the release checklist." '
            ">> examples/notes/project/release-checklist.md",
            "rm examples/notes/inbox.md",
            "mempalace mine examples/notes --dry-run",
            "mempalace mine examples/notes",
        )
    )


def forget_example(box: Sandbox) -> str:
    source = "examples/notes/meetings/2026-03-02-hiring-debrief.md"
    return fenced(
        box.console(
            f"mempalace forget --source {source}",
            f"mempalace forget --source {source} --yes",
            merge=True,
            expect=(0, 2),
        )
    )


# In the order they run: reads first, then the ones that change the palace or the notes.
GENERATORS: dict[str, Callable[[Any], str]] = {
    "quickstart-init": quickstart_init,
    "quickstart-mine": quickstart_mine,
    "quickstart-search": quickstart_search,
    "quickstart-status": quickstart_status,
    "quickstart-connect": quickstart_connect,
    "commands-index": commands_index,
    "search-json": search_json,
    "search-not-found": search_not_found,
    "show-example": show_example,
    "mcp-config-desktop": mcp_config_desktop,
    "no-palace": no_palace,
    "serve-refusal": serve_refusal,
    "wakeup-example": wakeup_example,
    "wakeup-budgets": wakeup_budgets,
    "wakeup-no-identity": wakeup_no_identity,
    "protocol-size": protocol_size,
    "aaak-spec": aaak_spec,
    "search-aaak": search_aaak,
    "aaak-measure": aaak_measure,
    "mcp-client-output": mcp_client_output,
    "mcp-output-fields": mcp_output_fields,
    "convos-mine": convos_mine,
    "convos-search": convos_search,
    "mine-changes": mine_changes,
    "forget-example": forget_example,
}


def blocks(page: str) -> dict[str, str]:
    """A page's generated blocks as they stand, by name."""
    return {m.group(2): m.group(3) for m in _BLOCK.finditer(page)}


def masked(text: str) -> str:
    """`text` with what changes between runs masked and runs of spaces made one."""
    for pattern, replacement in _VOLATILE:
        text = pattern.sub(replacement, text)
    return "\n".join(re.sub(r"[ \t]+", " ", line).rstrip() for line in text.splitlines())


def same(a: str, b: str) -> bool:
    return masked(a) == masked(b)


def fresh_blocks(names: list[str] | set[str]) -> dict[str, str]:
    """Fresh text for each named block, from one sandbox, generators in their own order."""
    wanted = [n for n in GENERATORS if n in set(names)]
    with sandbox() as box:
        return {name: GENERATORS[name](box) for name in wanted}


def rewrite(page: str, fresh: dict[str, str]) -> str:
    """`page` with each stale block replaced (a block current but for masked parts stays)."""

    def one(m: re.Match[str]) -> str:
        new = fresh.get(m.group(2), m.group(3))
        return m.group(1) + (m.group(3) if same(m.group(3), new) else new) + m.group(4)

    return _BLOCK.sub(one, page)


def stale_blocks(paths: list[Path], fresh: dict[str, str] | None = None) -> list[str]:
    """`page: block` for each block of `paths` that differs from a fresh run."""
    current = {p: blocks(p.read_text(encoding="utf-8")) for p in paths}
    if fresh is None:
        fresh = fresh_blocks({n for found in current.values() for n in found})
    return [
        f"{p.relative_to(REPO).as_posix()}: {name}"
        for p, found in current.items()
        for name, text in found.items()
        if name in fresh and not same(text, fresh[name])
    ]


def write(paths: list[Path]) -> list[str]:
    """Regenerate every block of `paths`; returns the pages that changed."""
    texts = {p: p.read_text(encoding="utf-8") for p in paths}
    names = {n for text in texts.values() for n in blocks(text)}
    unknown = sorted(n for n in names if n not in GENERATORS)
    if unknown:
        raise SystemExit(f"Unknown generated blocks: {', '.join(unknown)}")
    fresh = fresh_blocks(names)
    changed = []
    for path, text in texts.items():
        updated = rewrite(text, fresh)
        if updated != text:
            path.write_text(updated, encoding="utf-8")
            changed.append(path.relative_to(REPO).as_posix())
    return changed


def write_mcp_tools() -> bool:
    text = MCP_TOOLS_PAGE.read_text(encoding="utf-8")
    updated = replace_block(text, tools_block())
    if updated != text:
        MCP_TOOLS_PAGE.write_text(updated, encoding="utf-8")
    return updated != text


USAGE = (
    "Usage: python -m mempalace_cli.cli.readme_blocks --write-all\n"
    "       python -m mempalace_cli.cli.readme_blocks --write PAGE [PAGE...]\n"
    "       python -m mempalace_cli.cli.readme_blocks --check [PAGE...]"
)


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in {"--write-all", "--write", "--check"}:
        print(USAGE, file=sys.stderr)
        return 2
    given = [Path(a).resolve() for a in argv[1:]]
    missing = [str(p) for p in given if not p.is_file()]
    if missing:
        sys.stderr.write(f"No such page: {', '.join(missing)}\n{USAGE}\n")
        return 2
    if argv[0] == "--check":
        stale = stale_blocks(given or pages())
        for line in stale:
            sys.stdout.write(f"stale: {line}\n")
        if stale:
            print("Run: python -m mempalace_cli.cli.readme_blocks --write-all", file=sys.stderr)
        return 1 if stale else 0
    if argv[0] == "--write" and not given:
        print(USAGE, file=sys.stderr)
        return 2
    changed = write(given or pages())
    if argv[0] == "--write-all" and write_mcp_tools():
        changed = list(dict.fromkeys([*changed, MCP_TOOLS_PAGE.relative_to(REPO).as_posix()]))
    print("Rewrote: " + ", ".join(changed) if changed else "Every block is current.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
