"""`mempalace ui` in a real headless Chromium (Debian's chromium and chromedriver, driven by
Selenium), on a copy of the palace mined from examples/notes: every view opens; a search opens
a drawer; a tunnel is followed on the map, a room shared by two wings and an explicit tunnel
made through the service alike; a drawer is forgotten after its confirmation; "as of" changes
an entity's facts; the language switches; `--read-only` shows no write action and refuses
writes. One browser and one palace for the module.

With MEMPALACE_WRITE_SCREENSHOTS=1 the views are saved to docs/screenshots/ (the README's
pictures): `MEMPALACE_WRITE_SCREENSHOTS=1 pytest tests/test_ui_browser.py`.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

from tests.ui_support import csrf_of, enrich, palace_copy, request, ui_server

# Read before the test isolation clears every MEMPALACE_* variable.
WRITE_SHOTS = os.environ.get("MEMPALACE_WRITE_SCREENSHOTS") == "1"
SHOTS = Path(__file__).resolve().parents[1] / "docs" / "screenshots"
WAIT = 60


@pytest.fixture(scope="module")
def palace(mined_notes: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Any:
    base = tmp_path_factory.mktemp("ui-browser")
    path = palace_copy(mined_notes, base / "palace")
    ids = enrich(path)
    _record_an_mcp_search(path)
    tunnel = _make_a_tunnel(path)
    home = base / "home"
    home.mkdir()
    return {"path": path, "home": home, "base": base, "tunnel": tunnel, **ids}


TUNNEL_NOTE = "Dropped for the same reason as Auth0: cost & <lock-in>"


def _make_a_tunnel(path: Path) -> dict[str, Any]:
    """An explicit tunnel, as `mempalace tunnels create` makes one: from the meetings of the
    notes to the archived Electron plan (a wing that stood alone), with a note."""
    from mempalace_cli.common.config import resolve_settings
    from mempalace_cli.service import Palace

    p = Palace(resolve_settings(str(path)))
    try:
        return p.tunnels.create("notes", "meetings", "archive", "old_plans", label=TUNNEL_NOTE)[
            "tunnel"
        ]
    finally:
        p.close()


def _record_an_mcp_search(path: Path) -> None:
    """One search in the activity log, as `serve-mcp` records it (the HTTP tests make a real
    client's call; this gives the Activity picture something to show)."""
    from mempalace_cli.common.config import resolve_settings
    from mempalace_cli.service import Palace
    from mempalace_cli.service.audit import ActivityLog, Caller, activity_folder

    p = Palace(resolve_settings(str(path)))
    try:
        args = {"query": "why did we leave Auth0?", "limit": 3}
        found = p.search(**args)
        log = ActivityLog(activity_folder(p))
        log.record(Caller("claude-code", "2.1.0", "stdio"), "mempalace_search", args, found, 41.0)
        log.close()
    finally:
        p.close()


@pytest.fixture(scope="module")
def rw(palace: Any) -> Iterator[Any]:
    with ui_server(palace["path"], palace["home"], palace["base"] / "rw.log") as server:
        yield server


@pytest.fixture(scope="module")
def ro(palace: Any) -> Iterator[Any]:
    log = palace["base"] / "ro.log"
    with ui_server(palace["path"], palace["home"], log, "--read-only") as server:
        yield server


@pytest.fixture(scope="module")
def browser() -> Iterator[webdriver.Chrome]:
    options = Options()
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=1400,1000",
        "--lang=en-US",
    ):
        options.add_argument(arg)
    options.add_experimental_option("prefs", {"intl.accept_languages": "en-US,en"})
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_path = shutil.which("chromedriver")
    assert chromium and driver_path, "install Debian's chromium and chromium-driver (.ci/run does)"
    options.binary_location = chromium
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    driver.set_page_load_timeout(WAIT)
    try:
        yield driver
    finally:
        driver.quit()


def _wait(driver: webdriver.Chrome, condition: Any) -> Any:
    return WebDriverWait(driver, WAIT).until(condition)


def _text(driver: webdriver.Chrome, css: str) -> str:
    return _wait(driver, ec.visibility_of_element_located((By.CSS_SELECTOR, css))).text


def _shows(driver: webdriver.Chrome, css: str, expected: str) -> None:
    """Wait until the element shows `expected` (after a click, the old page may still be
    there for a moment)."""
    _wait(driver, ec.text_to_be_present_in_element((By.CSS_SELECTOR, css), expected))


def _shot(driver: webdriver.Chrome, name: str) -> None:
    if WRITE_SHOTS:
        SHOTS.mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(SHOTS / f"{name}.png"))


def _errors(driver: webdriver.Chrome) -> list[Any]:
    return [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]


def test_every_view_opens(browser: webdriver.Chrome, rw: Any, palace: Any) -> None:
    views = [
        ("map", "/", "Map of the palace"),
        ("search", "/search?q=why+did+we+switch+from+Auth0", "Results for"),
        ("drawer", f"/drawer/{palace['auth_id']}", "Drawer"),
        ("kg", "/kg?entity=Harbor", "Knowledge graph"),
        ("diaries", "/diaries", "Diaries"),
        ("health", "/health", "Health of the palace"),
        ("activity", "/activity", "What agents did"),
    ]
    for name, path, heading in views:
        browser.get(rw.url.rstrip("/") + path)
        assert heading in _text(browser, "main"), (name, browser.page_source[:1500])
        assert browser.find_element(By.ID, f"nav-{'search' if name == 'drawer' else name}")
        if name == "map":
            _wait(browser, lambda d: d.execute_script("return document.body.dataset.mapReady"))
        if name != "map":  # the map's picture is taken with a tunnel open
            _shot(browser, name)
        assert not _errors(browser), (name, _errors(browser))
    body = browser.find_element(By.TAG_NAME, "body").text
    assert "why did we leave Auth0?" in body and "claude-code" in body  # the activity row


def test_search_and_open_a_drawer(browser: webdriver.Chrome, rw: Any) -> None:
    browser.get(rw.url + "search")
    box = _wait(browser, ec.element_to_be_clickable((By.ID, "q")))
    box.send_keys("Rust thumbnail worker")
    browser.find_element(By.ID, "search-go").click()
    _wait(browser, ec.presence_of_element_located((By.CSS_SELECTOR, "#hits .hit")))
    first = browser.find_elements(By.CSS_SELECTOR, "#hits .hit")[0]
    assert first.find_elements(By.TAG_NAME, "mark"), "the best passage marks the query's words"
    assert "similarity" in first.text and "found by" in first.text
    first.find_element(By.CSS_SELECTOR, "a.hit-open").click()
    text = _text(browser, "#drawer-text")
    assert "thumbnail" in text.lower()
    assert browser.find_element(By.ID, "drawer-meta").text
    assert "/drawer/" in browser.current_url


def test_follow_a_tunnel_on_the_map(browser: webdriver.Chrome, rw: Any) -> None:
    browser.get(rw.url)
    _wait(browser, lambda d: d.execute_script("return document.body.dataset.mapReady"))
    node = "room:decisions@harbor_ops|notes"
    at = browser.execute_script(
        "return window.mempalaceMap.getElementById(arguments[0]).renderedPosition()", node
    )
    canvas = browser.find_element(By.ID, "map")
    size = canvas.size
    ActionChains(browser).move_to_element_with_offset(
        canvas, int(at["x"] - size["width"] / 2), int(at["y"] - size["height"] / 2)
    ).click().perform()
    _shows(browser, "#map-panel .hint", "harbor_ops, notes")
    follow = _wait(
        browser,
        ec.element_to_be_clickable(
            (By.CSS_SELECTOR, '#map-panel a.follow-link[data-wing="harbor_ops"]')
        ),
    )
    follow.click()
    listed = _text(browser, '#panel-drawers .room-panel[data-wing="harbor_ops"]')
    assert "PagerDuty" in listed, listed
    selected = browser.execute_script("return window.mempalaceMap.$(':selected').map(n => n.id())")
    assert selected == ["wing:harbor_ops"], selected
    _shot(browser, "map")
    browser.find_element(By.CSS_SELECTOR, "#panel-drawers a.drawer-link").click()
    assert "PagerDuty" in _text(browser, "#drawer-text")


# Where on the map an edge can be clicked: the first point along it, from the source's end,
# that no node (or its label) covers.
EDGE_POINT = """
var cy = window.mempalaceMap, edge = cy.getElementById(arguments[0]);
var a = edge.renderedSourceEndpoint(), b = edge.renderedTargetEndpoint();
var boxes = cy.nodes().map(function (n) { return n.renderedBoundingBox({includeLabels: true}); });
for (var i = 10; i < 90; i++) {
  var p = {x: a.x + (b.x - a.x) * i / 100, y: a.y + (b.y - a.y) * i / 100};
  var covered = boxes.some(function (bb) {
    return p.x > bb.x1 - 4 && p.x < bb.x2 + 4 && p.y > bb.y1 - 4 && p.y < bb.y2 + 4;
  });
  if (!covered) return p;
}
return null;
"""


def test_follow_an_explicit_tunnel_on_the_map(
    browser: webdriver.Chrome, rw: Any, palace: Any
) -> None:
    browser.get(rw.url)
    _wait(browser, lambda d: d.execute_script("return document.body.dataset.mapReady"))
    edge_id = "link:" + palace["tunnel"]["id"]
    drawn = browser.execute_script(
        "var e = window.mempalaceMap.getElementById(arguments[0]);"
        "return e.empty() ? null : {source: e.source().id(), target: e.target().id(),"
        " label: e.data('label'), line: e.style('line-style')}",
        edge_id,
    )
    # Its own kind of edge (dashed), between its two rooms, labelled with its note.
    assert drawn == {
        "source": "room:meetings@notes",
        "target": "room:old_plans@archive",
        "label": TUNNEL_NOTE[:39] + "…",
        "line": "dashed",
    }, drawn
    # The archive stood alone; the tunnel leads to it now.
    alone = '#isolated-list a[data-wing="archive"], #isolated-list a[data-wings="archive"]'
    assert not browser.find_elements(By.CSS_SELECTOR, alone)
    at = browser.execute_script(EDGE_POINT, edge_id)
    assert at, "every point of the tunnel's edge is under a node"
    _click_map_at(browser, at)
    _shows(browser, "#link-label", TUNNEL_NOTE)
    assert _selected(browser) == [edge_id]
    # Follow it to the far end: the room is selected, its drawers listed.
    _wait(browser, ec.element_to_be_clickable((By.CSS_SELECTOR, 'a.link-end[data-end="target"]')))
    browser.find_element(By.CSS_SELECTOR, '#map-panel a.link-end[data-end="target"]').click()
    listed = _text(browser, '#panel-drawers .room-panel[data-wing="archive"]')
    assert "Electron" in listed, listed
    assert _selected(browser) == ["room:old_plans@archive"]
    # The room at the far end names the tunnel and leads back through it.
    _click_map_at(browser, _node_at(browser, "room:old_plans@archive"))
    back = _wait(
        browser,
        ec.element_to_be_clickable(
            (By.CSS_SELECTOR, '#panel-links a.link-follow[data-room="meetings"]')
        ),
    )
    assert "cost & <lock-in>" in browser.find_element(By.ID, "panel-links").text
    back.click()
    _shows(browser, '#panel-drawers .room-panel[data-wing="notes"]', "notes / meetings")
    assert _selected(browser) == ["room:meetings@notes"]
    # The list under the map opens it too; a drawer at its far end opens.
    tunnel_id = palace["tunnel"]["id"]
    browser.find_element(By.CSS_SELECTOR, f'#link-list a[data-link="{tunnel_id}"]').click()
    _shows(browser, "#link-label", TUNNEL_NOTE)
    browser.find_element(By.CSS_SELECTOR, '#map-panel a.link-end[data-end="target"]').click()
    _wait(browser, ec.element_to_be_clickable((By.CSS_SELECTOR, "#panel-drawers a.drawer-link")))
    browser.find_element(By.CSS_SELECTOR, "#panel-drawers a.drawer-link").click()
    assert "Electron" in _text(browser, "#drawer-text")
    assert not _errors(browser), _errors(browser)


def _node_at(browser: webdriver.Chrome, node: str) -> dict[str, float]:
    """Where a node is drawn, once the map has stopped moving (it centres what was chosen)."""
    _wait(browser, lambda d: not d.execute_script("return window.mempalaceMap.animated()"))
    return browser.execute_script(
        "return window.mempalaceMap.getElementById(arguments[0]).renderedPosition()", node
    )


def _click_map_at(browser: webdriver.Chrome, at: dict[str, float]) -> None:
    """Click the map's canvas at a rendered position (what cytoscape says it drew there)."""
    canvas = browser.find_element(By.ID, "map")
    size = canvas.size
    ActionChains(browser).move_to_element_with_offset(
        canvas, int(at["x"] - size["width"] / 2), int(at["y"] - size["height"] / 2)
    ).click().perform()


def _selected(browser: webdriver.Chrome) -> list[str]:
    return browser.execute_script("return window.mempalaceMap.$(':selected').map(e => e.id())")


def test_forget_a_drawer_with_confirmation(browser: webdriver.Chrome, rw: Any, palace: Any) -> None:
    duplicate = palace["duplicate_id"]
    browser.get(rw.url + "health")
    assert "Groups of duplicates: 1" in _text(browser, "#health-duplicates")
    browser.get(f"{rw.url}drawer/{duplicate}")
    browser.find_element(By.ID, "forget-button").click()
    assert duplicate in _text(browser, "#confirm-question")
    browser.find_element(By.ID, "confirm-no").click()  # cancelled: back, nothing changed
    assert duplicate in _text(browser, "#drawer-title")
    browser.find_element(By.ID, "forget-button").click()
    # The confirmation page replaces the drawer's when it has loaded (a loaded machine: later).
    _wait(browser, ec.element_to_be_clickable((By.ID, "confirm-yes"))).click()
    assert "Drawers forgotten: 1." in _text(browser, "#done-message")
    browser.get(f"{rw.url}drawer/{duplicate}")
    assert "No drawer with id" in _text(browser, "#error-message")
    browser.get(rw.url + "health")
    assert "No duplicates among" in _text(browser, "#health-duplicates")


def test_change_as_of_on_an_entity(browser: webdriver.Chrome, rw: Any) -> None:
    browser.get(rw.url + "kg?entity=Harbor")
    assert "Facts: 3, current: 2." in _text(browser, "#kg-summary")
    date = browser.find_element(By.ID, "as-of")
    browser.execute_script("arguments[0].value = '2025-12-01'", date)
    browser.find_element(By.ID, "as-of-go").click()
    _shows(browser, "#kg-summary", "2 of 3 facts held on 2025-12-01")
    held = browser.find_elements(By.CSS_SELECTOR, "#timeline li.held")
    gone = browser.find_elements(By.CSS_SELECTOR, "#timeline li.not-held")
    held_text = [li.text for li in held]
    assert any("uses_auth Auth0" in t for t in held_text), held_text
    assert not any("uses_auth Clerk" in t for t in held_text), held_text
    assert any("uses_auth Clerk" in li.text and "replaces Auth0" in li.text for li in gone)
    # Each fact links to its source drawer.
    browser.find_element(By.CSS_SELECTOR, "#timeline li.held a.fact-source").click()
    assert "Clerk" in _text(browser, "#drawer-text")
    assert "uses_auth" in _text(browser, "#drawer-facts")


def test_switch_language(browser: webdriver.Chrome, rw: Any) -> None:
    browser.get(rw.url + "health")
    browser.find_element(By.ID, "lang-zh").click()
    _shows(browser, "h1", "宫殿健康状况")
    browser.find_element(By.ID, "nav-map").click()
    _shows(browser, "h1", "宫殿地图")  # remembered
    _wait(browser, lambda d: d.execute_script("return document.body.dataset.mapReady"))
    _shot(browser, "map-zh")
    browser.find_element(By.ID, "lang-en").click()
    _shows(browser, "h1", "Map of the palace")


def test_read_only_shows_no_write_action_and_refuses_writes(
    browser: webdriver.Chrome, ro: Any, palace: Any
) -> None:
    drawer = palace["auth_id"]
    for path in (f"drawer/{drawer}", "kg?entity=Harbor", "health"):
        browser.get(ro.url + path)
        assert browser.find_element(By.ID, "read-only-badge")
        assert not browser.find_elements(By.CSS_SELECTOR, "[data-write], form[method=post]"), path
    browser.get(f"{ro.url}drawer/{drawer}")
    assert not browser.find_elements(By.ID, "forget-button")
    page = request(ro.url, f"/drawer/{drawer}", headers={"Accept": "text/html"})
    cookie, _ = csrf_of(page)
    jar = {"Cookie": f"mp_csrf={cookie}"}
    for path, form in (
        (f"/drawer/{drawer}/forget", {"confirmed": "1"}),
        (f"/drawer/{drawer}/move", {"wing": "elsewhere", "confirmed": "1"}),
        (f"/drawer/{drawer}/edit", {"content": "changed", "confirmed": "1"}),
        ("/kg/add", {"subject": "a", "predicate": "b", "object": "c", "confirmed": "1"}),
        (
            "/kg/invalidate",
            {"subject": "Harbor", "predicate": "uses_auth", "object": "Clerk", "confirmed": "1"},
        ),  # fmt: skip
        ("/health/duplicates", {"keep": drawer, "group": drawer, "confirmed": "1"}),
    ):
        refused = request(ro.url, path, "POST", {**form, "csrf": cookie}, jar)
        assert refused.status == 403 and "--read-only" in refused.body, (path, refused.body[:300])
    browser.get(f"{ro.url}drawer/{drawer}")
    assert "Clerk" in _text(browser, "#drawer-text")
    browser.get(ro.url + "kg?entity=Harbor")
    assert "Facts: 3, current: 2." in _text(browser, "#kg-summary")
