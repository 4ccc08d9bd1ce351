"""The README is the front page and docs/ the reference: every docs page is linked from the
README, every relative link and #anchor resolves, the README stays short, its two commands are
the ones CI runs, and its quick start works verbatim on a fresh machine (a fresh HOME, a copy of
the clone's examples, no network), printing what the README shows."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import unicodedata
from pathlib import Path

from mempalace_cli.cli.readme_blocks import (
    SHOWN_CHECKOUT,
    SHOWN_EXE,
    SHOWN_HOME,
    blocks,
    masked,
    mempalace_exe,
)

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
DOCS = REPO / "docs"
PAGES = [README, *sorted(DOCS.glob("*.md"))]
MAX_README_LINES = 400
# The README's two commands, exactly: .ci/run runs the second one verbatim.
INSTALL = (
    "python3 -m venv .venv && . .venv/bin/activate && pip install -e . && mempalace init "
    'examples/notes && mempalace mine examples/notes && mempalace search "why did we move off '
    'Auth0?"'
)
TEST = "python3 -m venv .venv && . .venv/bin/activate && pip install -e '.[dev]' && pytest -q"

_FENCE = re.compile(r"^ *(```|~~~)")
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
_CODE_SPAN = re.compile(r"`+[^`\n]*`+")
_DRAWER_ID = re.compile(r"drawer_[a-z0-9_]+_[0-9a-f]{16}")


def prose_lines(text: str) -> list[str]:
    """The page's lines outside fenced code blocks (blank where a fence is)."""
    lines, fenced = [], False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            lines.append("")
        else:
            lines.append("" if fenced else line)
    return lines


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case; letters, marks, numbers, `_`, `-` and spaces
    kept, everything else dropped; spaces become hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())
    text = re.sub(r"<[^>]+>", "", text)
    kept = "".join(
        ch
        for ch in text
        if ch in " -" or unicodedata.category(ch)[0] in "LMN" or unicodedata.category(ch) == "Pc"
    )
    return kept.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    found: set[str] = set()
    seen: dict[str, int] = {}
    for line in prose_lines(page.read_text(encoding="utf-8")):
        m = re.match(r"#{1,6} +(.*?) *#*$", line)
        if not m:
            continue
        base = slug(m.group(1))
        n = seen.get(base, 0)
        seen[base] = n + 1
        found.add(base if n == 0 else f"{base}-{n}")
    return found


def links(page: Path) -> list[str]:
    found = []
    for line in prose_lines(page.read_text(encoding="utf-8")):
        line = _CODE_SPAN.sub("code", line)
        found += _LINK.findall(line)
    return found


def test_every_docs_page_is_linked_from_the_readme() -> None:
    linked = {
        (README.parent / target.split("#")[0]).resolve()
        for target in links(README)
        if not re.match(r"[a-z]+:", target)
    }
    unlinked = [p.name for p in DOCS.glob("*.md") if p.resolve() not in linked]
    assert not unlinked, f"docs pages the README does not link to: {unlinked}"


def test_every_relative_link_and_anchor_resolves() -> None:
    broken = []
    for page in PAGES:
        for target in links(page):
            if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
                continue
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            where = f"{page.relative_to(REPO)}: ({target})"
            if not dest.exists():
                broken.append(f"{where}: no such file")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                broken.append(f"{where}: no heading with that anchor in {dest.name}")
    assert not broken, "\n".join(broken)


# A path the pages name in prose (`mempalace_cli/search/fusion.py`, `tests/test_crash.py`...);
# files a command in the pages creates are not in a checkout.
_REPO_PATH = re.compile(
    r"(?<![\w/.-])((?:mempalace_cli|tests|benchmarks|examples|docs|\.ci)/[\w./-]*\w)"
)
CREATED_BY_THE_PAGES = {"examples/notes/mempalace.toml"}


def test_every_file_the_pages_name_exists() -> None:
    """Code moves: a page that names a module, a test or a benchmark by its path must follow."""
    gone = [
        f"{page.relative_to(REPO)}: {path}"
        for page in PAGES
        for path in sorted(set(_REPO_PATH.findall(page.read_text(encoding="utf-8"))))
        if path not in CREATED_BY_THE_PAGES and not (REPO / path).exists()
    ]
    assert not gone, "pages name files that do not exist:\n" + "\n".join(gone)


def test_the_readme_is_a_front_page() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_README_LINES, (
        f"README.md has {len(lines)} lines; the front page holds at most {MAX_README_LINES}: "
        "move reference material to a docs/ page and link it"
    )
    for page in PAGES:
        titles = [
            line for line in prose_lines(page.read_text(encoding="utf-8")) if line.startswith("# ")
        ]
        assert len(titles) == 1, f"{page.relative_to(REPO)} has {len(titles)} '# ' titles"


def test_the_readme_two_commands_are_the_ones_ci_runs() -> None:
    text = README.read_text(encoding="utf-8")
    assert f"```bash\n{INSTALL}\n```" in text
    assert f"```bash\n{TEST}\n```" in text
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8").rstrip().splitlines()
    assert ci[-1] == TEST, ".ci/run must end with the README's test command, verbatim"


# -- the quick start, verbatim on a fresh machine ------------------------------------------------
def quickstart() -> tuple[str, list[tuple[str, list[str]]]]:
    """The README's quick start section, and its shell commands with the output shown after
    each (none for a `bash` block)."""
    text = README.read_text(encoding="utf-8")
    section = text.split("<!-- section:quickstart -->", 1)[1].split(
        "<!-- /section:quickstart -->", 1
    )[0]
    commands: list[tuple[str, list[str]]] = []
    for lang, body in re.findall(r"```(\w*)\n(.*?)```", section, re.DOTALL):
        if lang == "console":
            for line in body.splitlines():
                if line.startswith("$ "):
                    commands.append((line[2:], []))
                elif commands:
                    commands[-1][1].append(line)
        elif lang in {"bash", "sh", "shell"}:
            commands += [(c, []) for c in body.splitlines() if c.strip() and not c.startswith("#")]
    return section, commands


def test_the_quick_start_shows_real_output() -> None:
    """Every console block of the quick start is a generated block (readme_blocks.py), so what
    it shows is what the code prints; tests/test_readme_blocks.py keeps it current."""
    section, commands = quickstart()
    assert len(commands) >= 4
    outside = re.sub(r"<!-- gen:([a-z0-9-]+) -->\n.*?<!-- /gen:\1 -->", "", section, flags=re.S)
    assert "```console" not in outside, "a console block in the quick start is not generated"
    assert blocks(section), "the quick start has no generated blocks"


def _run_in_one_shell(commands: list[str], cwd: Path, env: dict[str, str]) -> list[tuple[int, str]]:
    mark = "@@quickstart-status"
    script = []
    for command in commands:
        script += [command, f'__s=$?; printf "\\n{mark} %s@@\\n" "$__s"; (exit "$__s")']
    done = subprocess.run(
        ["bash", "-c", "exec 2>&1\n" + "\n".join(script)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    parts = re.split(rf"\n?{mark} (\d+)@@\n", done.stdout)
    return list(zip([int(s) for s in parts[1::2]], parts[0:-1:2], strict=True))


def test_the_quick_start_runs_verbatim_on_a_fresh_machine(tmp_path: Path) -> None:
    """A fresh clone's examples, a fresh HOME with no MEMPALACE_* setting and no model cache,
    and every proxy pointed at a closed port (a download would fail): each command of the quick
    start exits 0 and prints every line the README shows (paths and drawer ids, which hash the
    clone's path, are this machine's own)."""
    section, commands = quickstart()
    clone, home = tmp_path / "clone", tmp_path / "home"
    shutil.copytree(
        REPO / "examples", clone / "examples", ignore=shutil.ignore_patterns("mempalace.toml")
    )
    home.mkdir()
    exe = mempalace_exe()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMPALACE_")}
    offline = "http://127.0.0.1:9"  # discard port: nothing listens
    env.update(
        HOME=str(home),
        COLUMNS="200",
        PYTHONUNBUFFERED="1",
        PATH=str(exe.parent) + os.pathsep + env.get("PATH", ""),
        http_proxy=offline,
        https_proxy=offline,
        HTTP_PROXY=offline,
        HTTPS_PROXY=offline,
        ALL_PROXY=offline,
        all_proxy=offline,
        NO_PROXY="",
        no_proxy="",
        HF_HUB_OFFLINE="1",
    )
    ran = _run_in_one_shell([c for c, _ in commands], clone, env)

    def shown(text: str) -> list[str]:
        for real, as_shown in (
            (str(exe), SHOWN_EXE),
            (str(clone), SHOWN_CHECKOUT),
            (str(home), SHOWN_HOME),
        ):
            text = text.replace(real, as_shown)
        return masked(_DRAWER_ID.sub("drawer_<id>", text)).splitlines()

    for (command, expected), (status, output) in zip(commands, ran, strict=True):
        assert status == 0, f"`{command}` exited {status}:\n{output}"
        assert "Traceback" not in output, f"`{command}`:\n{output}"
        printed = set(shown(output))
        missing = [line for line in shown("\n".join(expected)) if line and line not in printed]
        assert not missing, (
            f"`{command}` on a fresh machine does not print what the README shows:\n"
            + "\n".join(missing)
            + f"\n--- it printed:\n{output}"
        )
    assert (home / ".mempalace" / "palace").is_dir()
    shutil.rmtree(home)  # the model cache a fresh HOME writes is ~80 MB: not kept between runs
