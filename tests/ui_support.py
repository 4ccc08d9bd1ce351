"""Helpers for the `mempalace ui` tests (no tests here): a palace mined from examples/notes with
what the views show added through the service (a second wing sharing a room name: a tunnel; a
wing standing alone; an agent's diary; facts with a history and a source drawer; a drawer
filed twice), and a real `mempalace ui` subprocess on a free port."""

from __future__ import annotations

import http.client
import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

from tests.test_mcp_support import START_TIMEOUT, mempalace_command

AUTH_NOTE = "0006-auth0-to-clerk.md"


def palace_copy(mined: dict[str, Path], dest: Path) -> Path:
    """A private, writable copy of the session's mined notes palace, without the activity log
    other tests' MCP servers may have written into it (the activity view starts empty)."""
    shutil.copytree(mined["palace"], dest, ignore=shutil.ignore_patterns("mcp_activity.sqlite3*"))
    return dest


def enrich(palace_dir: Path) -> dict[str, Any]:
    """Add, through the service, what every view needs to show something; returns the ids."""
    from mempalace_cli.common.config import resolve_settings
    from mempalace_cli.memory.kg import FactInput
    from mempalace_cli.service import Palace

    palace = Palace(resolve_settings(str(palace_dir)))
    try:
        auth = palace.list_drawers(source=AUTH_NOTE, limit=5)["drawers"]
        assert auth, "examples/notes has the Auth0 -> Clerk decision"
        auth_id = auth[0]["drawer_id"]
        copied = palace.get_drawers([auth_id])["drawers"][0]["text"]
        added = palace.add_drawers(
            [
                {
                    "wing": "harbor_ops",
                    "room": "decisions",
                    "content": "Ops decision: on-call engineers page through PagerDuty, "
                    "never through the team chat.",
                },
                {
                    "wing": "harbor_ops",
                    "room": "oncall",
                    "content": "On-call handover happens every Monday at 09:00 UTC.",
                },
                {
                    "wing": "archive",
                    "room": "old_plans",
                    "content": "The 2024 plan to build a desktop app in Electron was dropped.",
                },
                # The Auth0 note filed a second time, elsewhere: a duplicate to clean up.
                {"wing": "harbor_ops", "room": "oncall", "content": copied},
            ],
            added_by="ui-test",
        )
        for text in (
            "Read the Auth0 to Clerk decision; the migration finished in March.",
            "Answered a question about the thumbnail pipeline from project notes.",
        ):
            palace.diary_write("atlas", text, topic="work")
        palace.kg_add(
            FactInput("Harbor", "uses_auth", "Auth0", valid_from="2025-06-01",
                      source_drawer_id=auth_id)
        )  # fmt: skip
        palace.kg_supersede("Harbor", "uses_auth", "Auth0", "Clerk", at="2026-03-01")
        palace.kg_add(FactInput("Maya Okafor", "leads", "Harbor", valid_from="2025-01-01"))
        return {"auth_id": auth_id, "duplicate_id": added["drawer_ids"][3]}
    finally:
        palace.close()


@dataclass
class UiServer:
    proc: subprocess.Popen[bytes]
    log: Path
    url: str = ""

    @property
    def port(self) -> int:
        return int(urlsplit(self.url).port or 0)

    def text(self) -> str:
        return self.log.read_text(errors="replace")


@contextmanager
def ui_server(palace: Path, home: Path, log: Path, *extra: str, env: dict[str, str] | None = None
              ) -> Iterator[UiServer]:  # fmt: skip
    """`mempalace --palace PALACE ui --port 0 [EXTRA...]` until it says where it serves."""
    environ = {**os.environ, "MEMPALACE_HOME": str(home)}
    environ.pop("MEMPALACE_UI_TOKEN", None)
    environ.update(env or {})
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [*mempalace_command(), "--palace", str(palace), "ui", "--port", "0", *extra],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=environ,
        )
    server = UiServer(proc, log)
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            found = re.search(r" at (http://\S+/)", server.text())
            if found:
                server.url = found.group(1)
                break
            assert proc.poll() is None, f"mempalace ui exited:\n{server.text()}"
            assert time.monotonic() < deadline, f"mempalace ui did not start:\n{server.text()}"
            time.sleep(0.05)
        yield server
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: str


def request(
    url: str,
    path: str,
    method: str = "GET",
    form: dict[str, str] | None = None,
    headers: dict[str, str] | None = None,
) -> Answer:
    """One HTTP request, redirects not followed, to the server at `url` (any Host header
    given in `headers` is sent as is)."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=120)
    body = urlencode(form).encode() if form is not None else None
    sent = dict(headers or {})
    if body is not None:
        sent.setdefault("Content-Type", "application/x-www-form-urlencoded")
    try:
        conn.request(method, path, body=body, headers=sent)
        response = conn.getresponse()
        text = response.read().decode("utf-8", "replace")
        got: dict[str, str] = {}
        for key, value in response.getheaders():
            key = key.lower()
            got[key] = f"{got[key]}, {value}" if key in got else value
        return Answer(response.status, got, text)
    finally:
        conn.close()


def csrf_of(answer: Answer) -> tuple[str, str]:
    """(the CSRF cookie a page set, the value its forms carry)."""
    cookie = re.search(r"mp_csrf=([^;]+)", answer.headers.get("set-cookie", ""))
    field = re.search(r'name="csrf" value="([^"]+)"', answer.body)
    return (cookie.group(1) if cookie else ""), (field.group(1) if field else "")
