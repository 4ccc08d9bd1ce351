"""The README's quotes of the code (wake-up output, the protocol's size, the MCP client's
output) are regenerated from real runs; a stale quote fails here with the command that
refreshes it."""

from __future__ import annotations

from pathlib import Path

from mempalace_cli.cli.readme_blocks import GENERATORS, blocks, fresh_blocks

README = Path(__file__).resolve().parents[1] / "README.md"


def test_every_generated_block_in_the_readme_is_current() -> None:
    current = blocks(README.read_text(encoding="utf-8"))
    assert set(current) == set(GENERATORS), "each generator has its block in the README"
    fresh = fresh_blocks(sorted(current))
    stale = [name for name in current if current[name] != fresh[name]]
    assert not stale, (
        f"README blocks out of date: {', '.join(stale)}. "
        "Run: python -m mempalace_cli.cli.readme_blocks --write README.md"
    )
