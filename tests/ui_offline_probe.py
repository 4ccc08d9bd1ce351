"""Run by tests/test_ui_offline.py inside a network namespace that has only loopback (`unshare
-n`): bring `lo` up (a new namespace has it down: binding 127.0.0.1 works, connecting to it does
not), start `mempalace ui` on the palace given, fetch every view and, from each page, every link
to another page of the server and every asset it references (then the assets those reference),
and print what it found as one JSON document. Standard library only: the project's venv python
runs it as a script (no pytest here).

    python tests/ui_offline_probe.py LOG -- mempalace --palace PALACE ui --port 0
"""

from __future__ import annotations

import errno
import fcntl
import http.client
import json
import re
import socket
import struct
import subprocess
import sys
import time
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import quote, urljoin, urlsplit

SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
START_TIMEOUT = 60.0
MAX_FETCHES = 200
PER_SHAPE = 2  # links followed per kind of page (/drawer/..., /kg?entity=..., ?lang=...)
# Where each page links to other resources (a URL in one of these is a reference).
URL_ATTRS = {"href", "src", "action", "formaction", "poster", "data", "srcset", "background",
             "cite", "manifest", "icon", "longdesc", "usemap", "ping"}  # fmt: skip
ABSOLUTE = re.compile(r"""(?:https?:)?//[^\s"'<>()]+""", re.I)
CSS_URL = re.compile(r"""url\(\s*["']?([^"')]+)["']?\s*\)|@import\s+["']([^"']+)["']""", re.I)
HTTP_IN_JS = re.compile(r"https?://[^\s\"'<>()]+", re.I)


def loopback_up() -> bool:
    """Bring `lo` up; True if it was down (as in a new network namespace)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sH14s", b"lo", 0, b"")
        flags = struct.unpack("16sH14s", fcntl.ioctl(sock, SIOCGIFFLAGS, request))[1]
        if flags & IFF_UP:
            return False
        fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack("16sH14s", b"lo", flags | IFF_UP, b""))
        return True


def outside_answer() -> str:
    """What connecting to an address on the internet says here (no network: ENETUNREACH)."""
    try:
        socket.create_connection(("1.1.1.1", 443), timeout=3).close()
    except OSError as exc:
        return errno.errorcode.get(exc.errno or 0, str(exc))
    return "connected"


class Refs(HTMLParser):
    """The URLs a page references (attributes, inline styles) and its inline scripts."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.refs: list[tuple[str, str, str]] = []  # (tag, attribute, value)
        self.inline: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        seen = dict(attrs)
        for name, value in attrs:
            if value is None:
                continue
            if name in URL_ATTRS:
                self.refs.append((tag, name, value.strip()))
            elif name == "style":
                self.inline.append(value)
        self._in_script = tag in ("script", "style") and "src" not in seen

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.inline.append(data)


def in_block_comment(text: str, at: int) -> bool:
    """Whether position `at` of a script lies inside a /* ... */ comment (a licence notice)."""
    opened = text.rfind("/*", 0, at)
    return opened >= 0 and text.rfind("*/", 0, at) < opened


def main(argv: list[str]) -> int:
    log_path = Path(argv[0])
    command = argv[argv.index("--") + 1 :]
    report: dict[str, Any] = {"lo_was_down": loopback_up()}
    report["interfaces"] = sorted(name for _, name in socket.if_nameindex())
    report["outside"] = outside_answer()
    started = time.monotonic()
    with log_path.open("wb") as out:
        proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out, stderr=out)
    try:
        while not (found := re.search(r" at (http://\S+/)", log_path.read_text(errors="replace"))):
            if proc.poll() is not None or time.monotonic() - started > START_TIMEOUT:
                report["error"] = "mempalace ui did not start"
                return finish(report, log_path)
            time.sleep(0.05)
        base = found.group(1)
        report["url"] = base
        crawl(base, report)
        report["seconds"] = round(time.monotonic() - started, 1)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        report["exit_status"] = proc.returncode
    return finish(report, log_path)


def finish(report: dict[str, Any], log_path: Path) -> int:
    report["log"] = log_path.read_text(errors="replace")[-4000:]
    print(json.dumps(report))
    return 0


def crawl(base: str, report: dict[str, Any]) -> None:
    origin = base.rstrip("/")
    parts = urlsplit(base)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=120)
    fetched: dict[str, dict[str, Any]] = {}
    foreign: list[dict[str, str]] = []
    shapes: dict[tuple[str, frozenset[str]], int] = {}

    def new_shape(path: str) -> bool:
        """Whether a link to `path` is among the first PER_SHAPE of its kind of page."""
        parts = urlsplit(path)
        keys = frozenset(k.split("=")[0] for k in parts.query.split("&") if k)
        shape = (parts.path.strip("/").split("/")[0], keys)
        shapes[shape] = shapes.get(shape, 0) + 1
        return shapes[shape] <= PER_SHAPE

    def get(path: str, kind: str) -> tuple[int, str, dict[str, str]]:
        t0 = time.monotonic()
        conn.request("GET", path, headers={"Accept": "text/html,*/*"})
        response = conn.getresponse()
        body = response.read().decode("utf-8", "replace")
        headers = {k.lower(): v for k, v in response.getheaders()}
        fetched[path] = {"kind": kind, "status": response.status,
                         "ms": round((time.monotonic() - t0) * 1000),
                         "csp": headers.get("content-security-policy", "")}  # fmt: skip
        return response.status, body, headers

    def local(ref: str, here: str) -> str | None:
        """The server path a reference leads to; None for an anchor, data: or javascript:.
        A reference to another host is recorded as foreign."""
        if not ref or ref.startswith(("#", "data:", "javascript:", "mailto:")):
            return None
        if ABSOLUTE.match(ref) and not urljoin(base, ref).startswith(origin + "/"):
            foreign.append({"in": here, "url": ref})
            return None
        target = urlsplit(urljoin(base + here.lstrip("/"), ref))
        return target.path + (f"?{target.query}" if target.query else "")

    def asset(path: str, referrer: str) -> None:
        if path in fetched or len(fetched) >= MAX_FETCHES:
            return
        status, body, _ = get(path, "asset")
        if status != 200:
            return
        if path.endswith(".css"):
            for match in CSS_URL.finditer(body):
                ref = match.group(1) or match.group(2)
                nested = local(ref, path)
                if nested:
                    asset(nested, path)
        elif path.endswith(".js"):
            for match in HTTP_IN_JS.finditer(body):
                if not in_block_comment(body, match.start()):
                    foreign.append({"in": path, "url": match.group(0)})

    def page(path: str, follow: bool) -> str:
        status, body, headers = get(path, "page")
        if status != 200 or "text/html" not in headers.get("content-type", ""):
            return body
        refs = Refs()
        refs.feed(body)
        for text in refs.inline:
            for match in CSS_URL.finditer(text):
                ref = match.group(1) or match.group(2)
                if ABSOLUTE.match(ref):
                    local(ref, path)
            for match in HTTP_IN_JS.finditer(text):
                if not match.group(0).startswith(origin + "/"):
                    foreign.append({"in": path, "url": match.group(0)})
        for tag, attr, value in refs.refs:
            for ref in value.split(",") if attr == "srcset" else [value]:
                target = local(ref.strip().split(" ")[0], path)
                if target is None:
                    continue
                if tag in ("script", "img", "source", "video", "audio", "link", "iframe"):
                    asset(target, path)
                elif follow and tag == "a" and target not in fetched and new_shape(target):
                    page(target, follow=False)
        return body

    seeds = ["/", "/search", "/search?q=" + quote("why did we switch from Auth0"),
             "/search?q=Auth0&since=2020-01-01", "/kg", "/diaries", "/health",
             "/activity"]  # fmt: skip
    pages: dict[str, str] = {}
    for seed in seeds:
        pages[seed] = page(seed, follow=True)
    # The rooms the map's script asks for (its side panel), from the map's own data.
    data = re.search(r'<script type="application/json" id="map-data">(.*?)</script>',
                     pages["/"], re.S)  # fmt: skip
    graph = json.loads(data.group(1)) if data else {"rooms": []}
    for room in graph["rooms"][:3]:
        query = f"wing={quote(room['wings'][0])}&room={quote(room['room'])}"
        page(f"/room?panel=1&{query}", follow=True)
        page(f"/room?{query}", follow=True)
    report["fetched"] = fetched
    report["foreign"] = foreign
    report["rooms_on_map"] = len(graph["rooms"])
    report["search_hits"] = pages[seeds[2]].count('class="hit"')
    conn.close()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
