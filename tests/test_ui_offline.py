"""`mempalace ui` with no network at all: the installed command, run in a network namespace
that has only loopback (`unshare -n` as root, `unshare -rn` as another user), on a palace
mined from examples/notes (mined outside, before), serves every view and every asset its pages
reference, and no page or asset refers to anything but the local server (no CDN, no web
font): a search included, so the model loads offline too.

The namespace is required, not optional: where `unshare` is missing or not permitted the test
fails and says what to install or allow.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.test_mcp_support import mempalace_command
from tests.ui_support import enrich, palace_copy

PROBE = Path(__file__).resolve().parent / "ui_offline_probe.py"
ASSETS = {"/static/ui.css", "/static/ui.js", "/static/vendor/cytoscape/cytoscape.min.js"}
VIEWS = ("/", "/search", "/kg", "/diaries", "/health", "/activity")


def _unshare() -> list[str]:
    """The command that runs a program in a new network namespace here; fails the test, saying
    why, where that is not possible."""
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.fail(
            "`unshare` is not installed, so `mempalace ui` can't be tried without a network. "
            "Install util-linux (apt-get install util-linux) and run the test again."
        )
    command = [unshare, "-n"] if os.geteuid() == 0 else [unshare, "-rn"]
    tried = subprocess.run([*command, "true"], capture_output=True, text=True, timeout=30)
    if tried.returncode != 0:
        pytest.fail(
            f"`unshare {command[1]} true` failed "
            f"({tried.stderr.strip() or f'exit {tried.returncode}'}): this machine does not let "
            "the test make a network namespace. Run the tests as root, or allow unprivileged "
            "user namespaces (sysctl kernel.unprivileged_userns_clone=1 and "
            "user.max_user_namespaces > 0); in a container, start it with --privileged or "
            "--cap-add SYS_ADMIN."
        )
    return command


@pytest.fixture(scope="module")
def offline(mined_notes: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The probe's report: `mempalace ui` run and crawled inside the namespace."""
    command = _unshare()
    base = tmp_path_factory.mktemp("ui-offline")
    palace = palace_copy(mined_notes, base / "palace")
    enrich(palace)  # something in every view: facts, a diary, a second wing
    home = base / "home"
    home.mkdir()
    ui = [*mempalace_command(), "--palace", str(palace), "ui", "--port", "0"]
    env = {**os.environ, "MEMPALACE_HOME": str(home)}
    env.pop("MEMPALACE_UI_TOKEN", None)
    done = subprocess.run(
        [*command, sys.executable, str(PROBE), str(base / "ui.log"), "--", *ui],
        capture_output=True, text=True, timeout=180, env=env,
    )  # fmt: skip
    assert done.returncode == 0 and done.stdout.strip(), done.stdout + done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert "error" not in report, report
    return report


def test_the_namespace_has_no_network(offline: Any) -> None:
    assert offline["interfaces"] == ["lo"], offline["interfaces"]
    assert offline["outside"] == "ENETUNREACH", offline["outside"]
    assert offline["url"].startswith("http://127.0.0.1:"), offline["url"]


def test_every_view_and_asset_is_served_offline_from_the_package(offline: Any) -> None:
    fetched = offline["fetched"]
    failed = {path: f["status"] for path, f in fetched.items() if f["status"] != 200}
    assert not failed, (failed, offline["log"])
    pages = {path for path, f in fetched.items() if f["kind"] == "page"}
    assets = {path for path, f in fetched.items() if f["kind"] == "asset"}
    for view in VIEWS:
        assert view in pages, sorted(pages)
    # Followed from the pages: a room, a drawer, an entity's facts, the other language.
    for kind in ("/room?", "/drawer/", "/kg?entity=", "?lang=zh"):
        assert any(kind in path for path in pages), (kind, sorted(pages))
    assert assets >= ASSETS, sorted(assets)
    # The search ran: the model loaded without a network.
    assert offline["search_hits"] > 0, offline["log"]
    # No page is allowed to load anything from elsewhere, even if one referred to it.
    for path in pages:
        assert "default-src 'self'" in fetched[path]["csp"], path
    assert offline["exit_status"] == 0, offline["log"]


def test_no_page_or_asset_refers_to_another_server(offline: Any) -> None:
    assert offline["foreign"] == [], offline["foreign"]
