"""The pages' quotes of the code (the quick start's output, every command's help, wake-up, AAAK,
the MCP client's output and the tools' result fields) are regenerated from real runs in one
sandbox; a stale quote in README.md or any docs/*.md page fails here with the command that
refreshes it."""

from __future__ import annotations

from mempalace_cli.cli.readme_blocks import (
    GENERATORS,
    blocks,
    fresh_blocks,
    pages,
    rewrite,
    same,
    stale_blocks,
)

WRITE = "python -m mempalace_cli.cli.readme_blocks --write-all"


def test_every_generated_block_in_the_readme_and_docs_is_current() -> None:
    found = {p: blocks(p.read_text(encoding="utf-8")) for p in pages()}
    names = {name for page in found.values() for name in page}
    assert not names - set(GENERATORS), f"blocks with no generator: {names - set(GENERATORS)}"
    assert not set(GENERATORS) - names, (
        f"generators with no block in README.md or docs/: {set(GENERATORS) - names}"
    )
    stale = stale_blocks(pages(), fresh_blocks(names))
    assert not stale, f"Blocks out of date: {', '.join(stale)}. Run: {WRITE}"


def test_a_block_that_differs_only_in_timings_is_left_as_it_stands() -> None:
    """Elapsed times and timestamps change every run (and move the columns): regenerating
    keeps the page's text then, and replaces it when anything else changed."""
    page = (
        "before\n<!-- gen:quickstart-mine -->\n```console\n"
        "files mined     34\nelapsed     4.9 s\nfiled at 2026-12-03T11:01:09+00:00\n```\n"
        "<!-- /gen:quickstart-mine -->\nafter\n"
    )
    timings_only = (
        "```console\nfiles mined      34\nelapsed     12.3 s\n"
        "filed at 2026-12-04T08:00:00+00:00\n```\n"
    )
    assert rewrite(page, {"quickstart-mine": timings_only}) == page
    assert same(blocks(page)["quickstart-mine"], timings_only)
    changed = timings_only.replace("34", "35")
    rewritten = rewrite(page, {"quickstart-mine": changed})
    assert "files mined      35" in rewritten and rewritten.startswith("before\n")
    assert rewritten.endswith("<!-- /gen:quickstart-mine -->\nafter\n")
