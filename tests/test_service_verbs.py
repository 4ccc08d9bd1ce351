"""The service verbs the CLI and the MCP server share: get_drawers, list_drawers, update_drawer,
forget, search filters and hints, kg_supersede, the one name rule and private diaries. Real
Chroma in a temp dir, the real embedder."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mempalace_cli.common.errors import InvalidInputError, NotFoundError
from mempalace_cli.embedders.base import Embedder
from mempalace_cli.memory.kg import FactInput
from mempalace_cli.service import Palace, open_palace

NOTES = Path(__file__).resolve().parent.parent / "examples" / "notes"
STAGING = "The staging cluster is rebuilt every Sunday night at 02:00 UTC by the infra cron job."
BILLING = "Invoices are generated on the first business day of each month by the billing worker."
COFFEE = "The office espresso machine needs descaling every second Friday; Lena owns it."


@pytest.fixture
def palace(home: Path, embedder: Embedder) -> Palace:
    p = open_palace(str(home / "palace"))
    yield p
    p.close()


def _ids(result: dict) -> list[str]:
    return [r["drawer_id"] for r in result["results"]]


def test_get_drawers_keeps_order_and_lists_missing(palace: Palace) -> None:
    a = palace.add_drawer("ops", "infra", STAGING)["drawer_id"]
    b = palace.add_drawer("ops", "billing", BILLING)["drawer_id"]
    got = palace.get_drawers([b, "drawer_nope", a])
    assert [d["drawer_id"] for d in got["drawers"]] == [b, a]
    assert got["drawers"][0]["text"] == BILLING and got["drawers"][1]["room"] == "infra"
    assert got["missing"] == ["drawer_nope"]
    with pytest.raises(InvalidInputError, match="list of drawer ids"):
        palace.get_drawers(a)  # type: ignore[arg-type]


def test_one_name_rule_on_write_and_read(palace: Palace) -> None:
    added = palace.add_drawer("Team Notes", "Ops Log", STAGING)
    assert (added["wing"], added["room"]) == ("team_notes", "ops_log")
    found = palace.search("staging cluster rebuild", wing="Team Notes", room="Ops Log")
    assert _ids(found) == [added["drawer_id"]]
    assert found["filters"]["wing"] == "team_notes"
    assert palace.list_rooms("Team Notes")["rooms"] == {"ops_log": 1}
    listed = palace.list_drawers(wing="Team Notes")
    assert [d["drawer_id"] for d in listed["drawers"]] == [added["drawer_id"]]
    for blank in ("   ", "\t"):
        with pytest.raises(InvalidInputError, match="wing is empty"):
            palace.add_drawer(blank, "ops", BILLING)
    with pytest.raises(InvalidInputError, match="no letters or digits"):
        palace.add_drawer("ops", "🎉🎉", BILLING)


def test_filter_that_matches_nothing_names_the_closest_places(palace: Palace) -> None:
    palace.add_drawer("notes", "infra", STAGING)
    palace.add_drawer("payments", "billing", BILLING)
    missed = palace.search("staging", wing="Notez")
    assert missed["results"] == []
    assert "notes" in missed["hint"] and "Notez" in missed["hint"]
    room = palace.search("staging", wing="notes", room="infrastructure")
    assert room["results"] == [] and "infra" in room["hint"]
    listed = palace.list_drawers(wing="paymnts")
    assert listed["drawers"] == [] and listed["total"] == 0 and "payments" in listed["hint"]
    rooms = palace.list_rooms("paymnts")
    assert rooms["rooms"] == {} and "payments" in rooms["hint"]
    assert "hint" not in palace.search("staging", wing="notes")


def test_search_filters_since_before_source_and_distance(palace: Palace) -> None:
    old = palace.add_drawer("ops", "infra", STAGING, source_file="/srv/notes/infra/staging.md")
    new = palace.add_drawer("ops", "billing", BILLING, source_file="/srv/notes/billing.md")
    filed = palace.get_drawer(old["drawer_id"])["filed_at"][:10]

    everything = palace.search("cluster invoices", limit=10)
    assert set(_ids(everything)) == {old["drawer_id"], new["drawer_id"]}
    assert palace.search("cluster invoices", since=filed)["results"]
    before = palace.search("cluster invoices", before=filed)
    assert before["results"] == [] and "other filters" in before["hint"]

    by_file = palace.search("cluster invoices", source_file="/srv/notes/billing.md")
    assert _ids(by_file) == [new["drawer_id"]]
    by_end = palace.search("cluster invoices", source_file="staging.md")
    assert _ids(by_end) == [old["drawer_id"]]
    by_folder = palace.search("cluster invoices", source_file="/srv/notes/infra")
    assert _ids(by_folder) == [old["drawer_id"]]

    close = palace.search("staging cluster rebuilt on Sunday night", max_distance=0.6)
    assert _ids(close) == [old["drawer_id"]]
    assert all(1 - r["similarity"] <= 0.6 + 1e-3 for r in close["results"])
    assert palace.search("staging cluster", max_distance=0.0)["results"] == []
    with pytest.raises(InvalidInputError, match="max_distance"):
        palace.search("x", max_distance=3)
    with pytest.raises(InvalidInputError, match="not a date"):
        palace.search("x", since="the other day")


def test_oversized_query_is_refused_before_any_work(palace: Palace) -> None:
    with pytest.raises(InvalidInputError, match="15,000,000 characters"):
        palace.search("q" * 15_000_000)
    assert not (Path(palace.path) / "mempalace_index.sqlite3").exists()  # nothing was opened


def test_list_drawers_pages_newest_first(palace: Palace) -> None:
    ids = [palace.add_drawer("ops", "log", t)["drawer_id"] for t in (STAGING, BILLING, COFFEE)]
    first = palace.list_drawers(wing="ops", limit=2)
    assert first["total"] == 3 and first["has_more"] is True and len(first["drawers"]) == 2
    second = palace.list_drawers(wing="ops", limit=2, offset=2)
    assert second["has_more"] is False
    listed = [d["drawer_id"] for d in first["drawers"] + second["drawers"]]
    assert sorted(listed) == sorted(ids)
    assert first["drawers"][0]["preview"] and first["drawers"][0]["chars"] > 0
    with pytest.raises(InvalidInputError, match="limit must be 1 to 100"):
        palace.list_drawers(limit=0)


def test_update_drawer_reembeds_reindexes_and_checks_duplicates(palace: Palace) -> None:
    drawer = palace.add_drawer("ops", "infra", STAGING)["drawer_id"]
    other = palace.add_drawer("ops", "billing", BILLING)["drawer_id"]
    assert drawer in _ids(palace.search("staging cluster", mode="lexical"))

    done = palace.update_drawer(drawer, content=COFFEE)
    assert done["success"] is True and done["content_changed"] is True
    assert palace.get_drawer(drawer)["text"] == COFFEE
    assert drawer not in _ids(palace.search("staging cluster", mode="lexical"))
    assert _ids(palace.search("espresso descaling", mode="lexical"))[0] == drawer
    assert _ids(palace.search("coffee machine maintenance", mode="vector"))[0] == drawer

    dup = palace.update_drawer(drawer, content=BILLING)
    assert dup["success"] is False and dup["reason"] == "duplicate"
    assert dup["matches"][0]["drawer_id"] == other
    assert palace.get_drawer(drawer)["text"] == COFFEE  # unchanged

    moved = palace.update_drawer(drawer, wing="Facilities", room="Kitchen")
    assert moved["moved"] is True and moved["content_changed"] is False
    assert _ids(palace.search("espresso", wing="facilities", room="kitchen")) == [drawer]
    assert palace.search("espresso", wing="ops", mode="lexical")["results"] == []
    with pytest.raises(InvalidInputError, match="Nothing to change"):
        palace.update_drawer(drawer)
    with pytest.raises(NotFoundError):
        palace.update_drawer("drawer_nope", content="x")


def test_forget_by_ids_source_and_place_with_dry_run(palace: Palace, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    shutil.copytree(NOTES / "decisions", notes / "decisions")
    shutil.copytree(NOTES / "people", notes / "people")
    palace.mine(notes, wing="notes")
    hand = palace.add_drawer("scratch", "misc", COFFEE)["drawer_id"]
    total = palace.status()["total_drawers"]

    dry = palace.forget(source=str(notes / "people"), dry_run=True)
    assert dry["dry_run"] is True and dry["removed"] == 0 and dry["matched"] > 0
    assert {d["source_file"].split("/")[-2] for d in dry["drawers"]} == {"people"}
    assert set(dry["drawers"][0]) == {"id", "wing", "room", "source_file"}
    assert palace.status()["total_drawers"] == total

    with pytest.raises(NotFoundError):  # a bare file name could match same-named files anywhere
        palace.forget(source=Path(dry["drawers"][0]["source_file"]).name)
    gone = palace.forget(source=str(notes / "people"))
    assert gone["removed"] == dry["matched"]
    assert palace.get_drawers([d["id"] for d in dry["drawers"]])["drawers"] == []
    assert all(f.startswith(str(notes / "people")) for f in gone["files_forgotten"])
    # The manifest forgot those files: mining again files them again.
    again = palace.mine(notes, wing="notes")
    assert again["drawers"]["added"] == dry["matched"]

    by_id = palace.forget(drawer_ids=[hand, "drawer_nope"])
    assert by_id["removed"] == 1 and by_id["missing"] == ["drawer_nope"]
    with pytest.raises(NotFoundError):
        palace.forget(drawer_ids=["drawer_nope"])

    wing = palace.forget(wing="Notes", room="decisions")
    assert wing["removed"] > 0 and {d["room"] for d in wing["drawers"]} == {"decisions"}
    assert palace.list_drawers(wing="notes", room="decisions")["total"] == 0
    with pytest.raises(NotFoundError) as err:
        palace.forget(wing="notez")
    assert "notes" in (err.value.hint or "")
    with pytest.raises(InvalidInputError, match="one of them"):
        palace.forget(drawer_ids=[hand], wing="notes")


def test_kg_supersede_ends_old_and_starts_new_in_one_step(palace: Palace) -> None:
    palace.kg_add(FactInput("MyProject", "uses", "Auth0", valid_from="2025-06-01"))
    switched = palace.kg_supersede("MyProject", "uses", "Auth0", "Clerk", at="2026-03-12")
    assert switched["at"] == "2026-03-12"
    assert [f["object"] for f in switched["ended"]] == ["Auth0"]
    assert switched["started"]["object"] == "Clerk"
    facts = palace.kg_query("MyProject")["facts"]
    assert [f["object"] for f in facts if f["current"]] == ["Clerk"]
    # as_of is inclusive at both ends: on the switch-over day both facts hold.
    day = palace.kg_query("MyProject", as_of="2026-03-12")
    assert {f["object"] for f in day["facts"]} == {"Auth0", "Clerk"}
    assert {f["object"] for f in palace.kg_query("MyProject", as_of="2026-03-11")["facts"]} == {
        "Auth0"
    }
    assert {f["object"] for f in palace.kg_query("MyProject", as_of="2026-03-13")["facts"]} == {
        "Clerk"
    }
    with pytest.raises(NotFoundError, match="nothing was changed"):
        palace.kg_supersede("MyProject", "uses", "Auth0", "Okta", at="2026-04-01")


def test_kg_source_closet_and_timeline_paging(palace: Palace) -> None:
    added = palace.kg_add(FactInput("Maya", "works_on", "Atlas", source_closet="closet_atlas_01"))
    assert added["source_closet"] == "closet_atlas_01"
    fact = palace.kg_query("Maya")["facts"][0]
    assert fact["source"] == "closet_atlas_01" and fact["source_closet"] == "closet_atlas_01"
    for year in (2021, 2022, 2023):
        palace.kg_add(FactInput("Maya", "visited", f"City{year}", valid_from=f"{year}-01-01"))
    everything = [f["triple_id"] for f in palace.kg_timeline("Maya")["facts"]]
    page = palace.kg_timeline("Maya", limit=2, offset=1)
    assert [f["triple_id"] for f in page["facts"]] == everything[1:3]


def test_diaries_stay_private(palace: Palace) -> None:
    palace.diary_write("claude", "Reviewed the storage decision.")
    palace.diary_write("gemini", "Wrote the billing summary.")
    palace.add_drawer("wing_claude", "decisions", STAGING)
    palace.add_drawer("wing_gemini", "decisions", BILLING)
    tunnels = palace.find_tunnels()["tunnels"]
    assert [t["room"] for t in tunnels] == ["decisions"]
    assert "diary" not in str(palace.graph_stats()["top_tunnels"])
    for nameless in ("🎉🎉", "!!!", "   "):
        with pytest.raises(InvalidInputError):
            palace.diary_write(nameless, "secret")
        with pytest.raises(InvalidInputError):
            palace.diary_read(nameless)
    assert palace.diary_read("gemini")["total"] == 1
