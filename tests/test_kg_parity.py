"""The two fact stores must agree: the same facts, invalidations and queries give the same
answers from the palace folder (SQLite) and from a Chroma server (kg_store_chroma.py), at
every boundary of every interval."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mempalace_cli.common.config import resolve_settings
from mempalace_cli.common.errors import MemPalaceError
from mempalace_cli.memory.kg import FactInput
from mempalace_cli.service import Palace
from tests.team_support import shared_server, unique_database

FACTS = [
    ("Harbor", "uses", "NFS", "2025-01-01", "2026-01-15"),
    ("Harbor", "uses", "MinIO", "2026-01-15", None),
    ("Harbor", "hosted_on", "Hetzner", None, None),
    ("Maya", "leads", "Harbor", "2025-06-01T09:30:00", None),
    ("Maya", "works_at", "Driftwood", "2024-03-01", "2025-12-31T18:00:00+01:00"),
    ("Tomás Reyes", "reviews", "Harbor", "2026-02-01", None),
]
DATES = [
    None,
    "2024-02-29",
    "2024-03-01",
    "2025-01-01",
    "2025-06-01",
    "2025-06-01T09:29:59",
    "2025-06-01T09:30:00",
    "2025-12-31",
    "2025-12-31T17:00:00",
    "2025-12-31T17:00:01",
    "2026-01-14",
    "2026-01-15",
    "2026-01-15T00:00:00",
    "2026-01-16",
    "2026-03-01",
    "2026-05-31",
    "2026-06-01",
]


@pytest.fixture(scope="module")
def server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with shared_server(tmp_path_factory.mktemp("parity-chroma")) as url:
        yield url


def _view(result: dict[str, Any]) -> list[tuple]:
    return [
        (f["subject"], f["predicate"], f["object"], f["valid_from"], f["valid_to"], f["current"])
        + ((f["direction"],) if "direction" in f else ())
        for f in result["facts"]
    ]


def _script(p: Palace) -> dict[str, Any]:
    """Everything a user can observe of the graph, after the same writes."""
    out: dict[str, Any] = {}
    for s, pred, o, start, end in FACTS:
        out[f"add {s} {pred} {o}"] = p.kg_add(FactInput(s, pred, o, start, end))["created"]
    out["restate"] = p.kg_add(FactInput("harbor", "hosted on", "hetzner"))["created"]
    out["invalidate"] = p.kg_invalidate("Harbor", "hosted_on", "Hetzner", "2026-06-01")["ended"]
    out["restated after end"] = p.kg_add(FactInput("Harbor", "hosted_on", "Hetzner"))["created"]
    for bad in [("Harbor", "uses", "S3", "2026-01-02", "2026-01-01")]:
        try:
            p.kg_add(FactInput(*bad))
            out["bad"] = "accepted"
        except MemPalaceError as exc:
            out["bad"] = exc.kind
    try:
        p.kg_invalidate("Harbor", "uses", "NFS", "2026-02-01")
    except MemPalaceError as exc:
        out["invalidate ended"] = (exc.kind, exc.message)
    for entity in ("Harbor", "maya", "Tomás Reyes", "Nobody"):
        for direction in ("both", "outgoing", "incoming"):
            for when in DATES:
                out[f"query {entity} {direction} {when}"] = _view(
                    p.kg_query(entity, as_of=when, direction=direction)
                )
    out["timeline"] = _view(p.kg_timeline())
    out["timeline harbor 3"] = _view(p.kg_timeline("Harbor", limit=3))
    stats = p.kg_stats()
    stats.pop("path")
    out["stats"] = stats
    return out


def test_sqlite_and_chroma_fact_stores_answer_alike(
    tmp_path: Path, server_url: str, home: Path
) -> None:
    local = Palace(resolve_settings(str(tmp_path / "local")))
    remote = Palace(
        resolve_settings(str(tmp_path / "remote"), server_url, chroma_database=unique_database())
    )
    try:
        expected, got = _script(local), _script(remote)
    finally:
        local.close()
        remote.close()
    # The script exercises something: answers change with the date, errors are typed.
    harbor = {str(v) for k, v in expected.items() if k.startswith("query Harbor both")}
    assert len(harbor) >= 4 and expected["bad"] == "invalid_input"
    assert expected["invalidate ended"][0] == "not_found" and expected["restate"] is False
    # A fact restated after its end, within the same second, is listed after the one it follows.
    hetzner = [f for f in expected["timeline"] if f[2] == "Hetzner"]
    assert [f[4] for f in hetzner] == ["2026-06-01", None]
    assert got.keys() == expected.keys()
    differ = {k: (expected[k], got[k]) for k in expected if expected[k] != got[k]}
    assert not differ


def test_supersede_and_paged_timeline_on_the_server(tmp_path: Path, server_url: str, home: Path):
    remote = Palace(
        resolve_settings(str(tmp_path / "remote"), server_url, chroma_database=unique_database())
    )
    try:
        remote.kg_add(FactInput("Harbor", "uses", "NFS", "2025-01-01"))
        ended, new, when = remote.kg.supersede("Harbor", "uses", "NFS", "MinIO", "2026-01-15")
        assert [(f.object, f.valid_to) for f in ended] == [("NFS", "2026-01-15")]
        assert (new.object, new.valid_from, new.valid_to, when) == (
            "MinIO",
            "2026-01-15",
            None,
            "2026-01-15",
        )
        page = remote.kg.timeline("Harbor", limit=1, offset=1)
        assert [f.object for f in page] == ["MinIO"]
        with pytest.raises(MemPalaceError):
            remote.kg.supersede("Harbor", "uses", "NFS", "S3", "2026-03-01")  # already ended
    finally:
        remote.close()
