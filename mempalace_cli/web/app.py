"""The pages of `mempalace ui`: one Starlette route per view, each rendering a Jinja2 template
from what the service returns.

Every call into the palace goes through one `Desk`, which holds the `Palace` and a lock: one
call at a time, as the CLI makes them (the palace's own write lock still guards every write
against the other processes on the same palace: a watcher, an MCP server). Each view reads a
page of what it shows (lists are paged; the map comes from the catalogue's counts), so its
server time does not grow with the palace; each response says that time in `Server-Timing`.
"""

from __future__ import annotations

import datetime as dt
import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlencode

from mempalace_cli.common.errors import InvalidInputError, MemPalaceError, NotFoundError
from mempalace_cli.common.lazy import lazy
from mempalace_cli.memory.kg import FactInput
from mempalace_cli.search.passages import best_passage, query_terms, term_spans
from mempalace_cli.service.audit import activity_folder, read_activity
from mempalace_cli.serving.access import HostOriginGuard, HttpAccess
from mempalace_cli.web import i18n
from mempalace_cli.web.guard import (
    CSRF_COOKIE,
    CSRF_FIELD,
    SESSION_COOKIE,
    Sessions,
    TokenGate,
    cookie_header,
    csrf_refusal,
    csrf_token,
)

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.types import ASGIApp, Receive, Scope, Send

    from mempalace_cli.service import Palace

anyio_to_thread = lazy("anyio.to_thread")
jinja2 = lazy("jinja2")
np = lazy("numpy")
starlette_applications = lazy("starlette.applications")
starlette_responses = lazy("starlette.responses")
starlette_routing = lazy("starlette.routing")
starlette_staticfiles = lazy("starlette.staticfiles")

HERE = Path(__file__).resolve().parent
TEMPLATES = HERE / "templates"
STATIC = HERE / "static"
PAGE = 20  # items per page of every list
MAX_FORM_BYTES = 1024 * 1024  # a drawer holds at most 100,000 characters
LANG_COOKIE = "mp_lang"
WARM_AFTER = 2.0  # seconds after the start the model loads, if no page was asked for before
STATUS = {"not_found": 404, "no_palace": 404, "invalid_input": 400, "locked": 503}


class Desk:
    """The palace behind the pages: the service, one call at a time, and how it is served."""

    def __init__(self, palace: Palace, access: HttpAccess, read_only: bool = False) -> None:
        self.palace = palace
        self.access = access
        self.read_only = read_only
        self.lock = threading.RLock()
        self.overview = palace.overview  # the palace's parts (service/overview.py, duplicates.py)
        self.duplicates = palace.duplicate_groups
        self.sessions = Sessions(access.token) if access.token else None
        self.warm = threading.Event()  # set once the model is loaded (or could not be)
        self.served = threading.Event()  # set once a first page was answered
        self.started = time.monotonic()
        self.templates = jinja2.Environment(
            loader=jinja2.FileSystemLoader(str(TEMPLATES)),
            autoescape=jinja2.select_autoescape(["html"]),
            trim_blocks=True,
            lstrip_blocks=True,
        )

    def call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        with self.lock:
            return fn(*args, **kwargs)

    def warm_up(self) -> threading.Thread:
        """Load the palace's model in the background, so the first search is quick; pages
        that don't search never wait for it. It starts once the first page is answered (or
        after WARM_AFTER seconds): the page a browser opens first never competes with it."""

        def load() -> None:
            self.served.wait(timeout=WARM_AFTER)
            try:
                with self.lock:
                    np.ndarray  # noqa: B018  (numpy imported here, before another thread does)
                    model = self.palace.binding().model if self.palace.exists() else None
                    if model is not None:
                        self.palace.stay_warm()
                if model is not None:
                    embedder = self.palace.core.embedder_for(model)
                    embedder.ensure_loaded()
            except Exception:  # the first search tries again, and says what went wrong
                pass
            finally:
                self.warm.set()

        thread = threading.Thread(target=load, name="mempalace-ui-warm-up", daemon=True)
        thread.start()
        return thread


# -- request helpers ---------------------------------------------------------------------------
class Page:
    """One request's view of the page: language, CSRF value, query helpers, rendering."""

    def __init__(self, desk: Desk, request: Request, form: dict[str, str]) -> None:
        self.desk = desk
        self.request = request
        self.form = form
        self.cookies = dict(request.cookies)
        self.lang, self.lang_chosen = i18n.choose(
            request.query_params.get("lang"),
            self.cookies.get(LANG_COOKIE),
            request.headers.get("accept-language"),
        )
        self.t = i18n.Translator(self.lang)
        self.csrf, self.csrf_new = csrf_token(self.cookies)

    def arg(self, name: str, default: str = "") -> str:
        value = self.form.get(name) if name in self.form else self.request.query_params.get(name)
        return (value if value is not None else default).strip()

    def int_arg(self, name: str, default: int = 0, low: int = 0, high: int = 10**9) -> int:
        text = self.arg(name)
        try:
            value = int(text) if text else default
        except ValueError:
            value = default
        return max(low, min(high, value))

    def url(self, path: str | None = None, **changes: Any) -> str:
        """This page's address (or `path`) with query values changed (None drops one)."""
        query = dict(self.request.query_params) if path is None else {}
        query.pop("lang", None)
        for key, value in changes.items():
            if value is None or value == "":
                query.pop(key, None)
            else:
                query[key] = str(value)
        base = self.request.url.path if path is None else path
        return base + ("?" + urlencode(query) if query else "")

    def render(self, template: str, status: int = 200, **context: Any) -> Response:
        tmpl = self.desk.templates.get_template(template)
        html = tmpl.render(
            t=self.t,
            lang=self.lang,
            page=self,
            read_only=self.desk.read_only,
            csrf_field=CSRF_FIELD,
            csrf=self.csrf,
            palace_path=str(self.desk.palace.path),
            fmt_time=lambda v: fmt_time(v, self.lang),
            fmt_bytes=fmt_bytes,
            fmt_int=lambda n: f"{int(n or 0):,}",
            **context,
        )
        response = starlette_responses.HTMLResponse(html, status_code=status)
        self.finish(response)
        return response

    def finish(self, response: Response) -> None:
        if self.csrf_new:
            name, value = cookie_header(CSRF_COOKIE, self.csrf)
            response.raw_headers.append((name, value))
        if self.lang_chosen:
            name, value = cookie_header(LANG_COOKIE, self.lang, 365 * 86400)
            response.raw_headers.append((name, value))
        response.headers["cache-control"] = "no-store"

    def redirect(self, location: str) -> Response:
        response = starlette_responses.RedirectResponse(location, status_code=303)
        self.finish(response)
        return response

    def error(self, exc: MemPalaceError) -> Response:
        return self.render(
            "error.html",
            status=STATUS.get(exc.kind, 500),
            message=exc.message,
            hint=exc.hint,
            kind=exc.kind,
        )

    def refused(self, reason: str) -> Response:
        return self.render("refused.html", status=403, reason=reason)


def fmt_time(value: str | None, lang: str = "en") -> str:
    """An ISO time as the user's local time (minutes), a date as it is."""
    if not value:
        return ""
    text = str(value)
    if len(text) <= 10:
        return text
    try:
        when = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return text
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return when.astimezone().strftime("%Y-%m-%d %H:%M")


def fmt_bytes(n: int | float) -> str:
    n = float(n or 0)
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1024
    return f"{n:,.1f} GB"


def passage_segments(text: str, query: str, start: int = 1) -> dict[str, Any]:
    """A hit's best passage (search/passages.py) as lines of (text, is_match) segments, each
    numbered as in its file (the drawer's first line is `start`), for the template to mark."""
    terms = query_terms(query) if query else set()
    passage = best_passage(text, query)
    lines, first = passage.lines, passage.first
    before, after = passage.cut_before, passage.cut_after
    out = []
    for n, line in enumerate(lines):
        segments, at = [], 0
        for begin, end in term_spans(line, terms):
            if begin > at:
                segments.append((line[at:begin], False))
            segments.append((line[begin:end], True))
            at = end
        if at < len(line) or not segments:
            segments.append((line[at:], False))
        out.append({"number": start + first + n, "segments": segments})
    return {"lines": out, "cut_before": before, "cut_after": after}


def _first_line(hit: dict[str, Any]) -> int:
    start = hit.get("line_start")
    return start if isinstance(start, int) and start > 0 else 1


# -- the views ----------------------------------------------------------------------------------
def map_data(desk: Desk) -> dict[str, Any]:
    """The map: the catalogue's counts and the explicit tunnels, each read once (never a read
    per room), from the service."""
    desk.overview.require()  # no palace: say so (and create nothing) before reading tunnels
    made = desk.palace.tunnels.list_tunnels()["tunnels"]
    return desk.overview.palace_map(links=made)


def view_map(page: Page) -> Response:
    desk = page.desk
    data = desk.call(map_data, desk)
    graph = json.dumps(
        {"wings": data["wings"], "rooms": data["rooms"], "links": data["links"]},
        ensure_ascii=False,
    ).replace("<", "\\u003c")
    return page.render("map.html", nav="map", data=data, graph=graph)


def view_room(page: Page) -> Response:
    """The drawers of one room in one wing: the map's side panel (or a page of its own)."""
    desk = page.desk
    wing, room = page.arg("wing"), page.arg("room")
    offset = page.int_arg("offset")
    listing = desk.call(
        desk.palace.list_drawers, wing=wing or None, room=room or None, limit=PAGE, offset=offset
    )
    template = "room_panel.html" if page.arg("panel") else "room.html"
    return page.render(template, nav="map", listing=listing, wing=wing, room=room)


def view_search(page: Page) -> Response:
    desk = page.desk
    query = page.arg("q")
    form = {k: page.arg(k) for k in ("q", "wing", "room", "since", "before")}
    mode = page.arg("mode", "hybrid")
    found = None
    if query:
        desk.warm.wait(timeout=120)
        found = desk.call(
            desk.palace.search,
            query,
            wing=form["wing"] or None,
            room=form["room"] or None,
            since=form["since"] or None,
            before=form["before"] or None,
            mode=mode if mode in ("hybrid", "vector", "lexical") else "hybrid",
            limit=page.int_arg("limit", PAGE, 1, 100),
        )
        for hit in found["results"]:
            hit["passage"] = passage_segments(hit["text"], query, _first_line(hit))
    return page.render("search.html", nav="search", form=form, mode=mode, found=found)


def view_drawer(page: Page) -> Response:
    desk = page.desk
    drawer_id = page.request.path_params["drawer_id"]
    got = desk.call(desk.palace.get_drawers, [drawer_id])
    if not got["drawers"]:
        raise NotFoundError(
            f"No drawer with id {drawer_id!r}: it may have been forgotten.",
            hint="Find drawers with Search or on the Map.",
        )
    drawer = got["drawers"][0]
    meta = drawer.get("metadata") or {}
    start = meta.get("line_start") if isinstance(meta.get("line_start"), int) else 1
    lines = [
        {"number": start + n, "text": line}
        for n, line in enumerate(drawer["text"].splitlines() or [""])
    ]
    around = desk.call(desk.palace.drawer_neighbours, drawer_id, 3)
    facts = desk.call(desk.overview.facts_citing, drawer_id)
    return page.render(
        "drawer.html",
        nav="search",
        drawer=drawer,
        lines=lines,
        meta=sorted(meta.items()),
        around=around,
        facts=facts,
    )


def view_kg(page: Page) -> Response:
    desk = page.desk
    entity, as_of, find = page.arg("entity"), page.arg("as_of"), page.arg("find")
    names = desk.call(desk.overview.entities, find or None)
    history = None
    if entity:
        history = desk.call(desk.overview.entity_history, entity, as_of or None)
    return page.render(
        "kg.html",
        nav="kg",
        names=names,
        entity=entity,
        as_of=as_of,
        find=find,
        history=history,
        today=dt.date.today().isoformat(),
    )


def view_diaries(page: Page) -> Response:
    desk = page.desk
    diaries = desk.call(desk.overview.diaries)
    wing = page.arg("wing") or (diaries[0]["wing"] if diaries else "")
    query = page.arg("q")
    entries = found = None
    if wing and query:
        desk.warm.wait(timeout=120)
        found = desk.call(
            desk.palace.search, query, wing=wing, room="diary", limit=PAGE, time_in_query=False
        )
        for hit in found["results"]:
            hit["passage"] = passage_segments(hit["text"], query, _first_line(hit))
    elif wing:
        entries = desk.call(desk.overview.diary_entries, wing, page.int_arg("offset"), PAGE)
    return page.render(
        "diaries.html",
        nav="diaries",
        diaries=diaries,
        wing=wing,
        query=query,
        entries=entries,
        found=found,
    )


def view_health(page: Page) -> Response:
    desk = page.desk
    ov = desk.overview
    duplicates = desk.call(desk.duplicates.groups, page.int_arg("dup"), 10)
    stale = desk.call(ov.stale_drawers, page.int_arg("stale"), 10)
    missing = desk.call(ov.missing_sources, page.int_arg("missing"), 10)
    agreement = desk.call(ov.store_agreement)
    model = desk.call(ov.model)
    disk = desk.call(ov.disk_use)
    return page.render(
        "health.html",
        nav="health",
        duplicates=duplicates,
        stale=stale,
        missing=missing,
        agreement=agreement,
        model=model,
        disk=disk,
    )


def view_activity(page: Page) -> Response:
    desk = page.desk
    tool, client = page.arg("tool"), page.arg("client")
    errors_only = page.arg("errors") == "1"
    limit = page.int_arg("limit", 50, 1, 1000)
    if tool and not tool.startswith("mempalace_"):
        tool = f"mempalace_{tool}"
    folder = activity_folder(desk.palace)
    rows = read_activity(folder, limit=limit + 1, tool=tool or None, client=client or None,
                         errors_only=errors_only)  # fmt: skip
    return page.render(
        "activity.html",
        nav="activity",
        rows=[r.to_dict() for r in rows[:limit]],
        more=len(rows) > limit,
        limit=limit,
        tool=page.arg("tool"),
        client=client,
        errors_only=errors_only,
    )


# -- writes: each reviewed on a confirmation page, then done -------------------------------------
def _confirmed(page: Page) -> bool:
    return page.form.get("confirmed") == "1"


def do_forget(page: Page) -> Response:
    desk = page.desk
    drawer_id = page.request.path_params["drawer_id"]
    got = desk.call(desk.palace.get_drawers, [drawer_id])
    if not got["drawers"]:
        raise NotFoundError(f"No drawer with id {drawer_id!r}; nothing was removed.")
    drawer = got["drawers"][0]
    if not _confirmed(page):
        return page.render(
            "confirm.html",
            action=f"/drawer/{drawer_id}/forget",
            question=page.t("confirm.forget", id=drawer_id),
            drawers=[drawer],
            fields={},
            danger=True,
        )
    desk.warm.wait(timeout=120)
    done = desk.call(desk.palace.forget, drawer_ids=[drawer_id])
    return page.render(
        "done.html",
        message=page.t("done.forgot", n=done["removed"]),
        links=[("/", page.t("nav.map")), ("/search", page.t("nav.search"))],
    )


def do_move(page: Page) -> Response:
    desk = page.desk
    drawer_id = page.request.path_params["drawer_id"]
    wing, room = page.arg("wing"), page.arg("room")
    if not wing and not room:
        raise InvalidInputError(
            "Give the wing or the room to move the drawer to.",
            hint="Type a wing name, a room name, or both.",
        )
    drawer = desk.call(desk.palace.get_drawers, [drawer_id])["drawers"]
    if not drawer:
        raise NotFoundError(f"No drawer with id {drawer_id!r}; nothing was moved.")
    if not _confirmed(page):
        return page.render(
            "confirm.html",
            action=f"/drawer/{drawer_id}/move",
            question=page.t(
                "confirm.move",
                id=drawer_id,
                place=f"{drawer[0]['wing']} / {drawer[0]['room']}",
                to=f"{wing or drawer[0]['wing']} / {room or drawer[0]['room']}",
            ),
            drawers=drawer,
            fields={"wing": wing, "room": room},
            danger=False,
        )
    desk.warm.wait(timeout=120)
    done = desk.call(desk.palace.update_drawer, drawer_id, None, wing or None, room or None)
    return page.render(
        "done.html",
        message=page.t("done.moved", wing=done["wing"], room=done["room"]),
        links=[(f"/drawer/{drawer_id}", page.t("done.back_to_drawer"))],
    )


def do_edit(page: Page) -> Response:
    desk = page.desk
    drawer_id = page.request.path_params["drawer_id"]
    content = page.form.get("content", "")
    drawer = desk.call(desk.palace.get_drawers, [drawer_id])["drawers"]
    if not drawer:
        raise NotFoundError(f"No drawer with id {drawer_id!r}; nothing was changed.")
    if not _confirmed(page):
        return page.render(
            "confirm.html",
            action=f"/drawer/{drawer_id}/edit",
            question=page.t("confirm.edit", id=drawer_id),
            drawers=[],
            fields={"content": content},
            preview=content,
            danger=False,
        )
    desk.warm.wait(timeout=120)
    done = desk.call(desk.palace.update_drawer, drawer_id, content, None, None)
    if not done.get("success"):
        matches = ", ".join(m["drawer_id"] for m in done.get("matches", []))
        raise InvalidInputError(
            f"Not saved: drawer {matches} already says the same words.",
            hint="Forget one of the two, or change the text so that it says something new.",
        )
    return page.render(
        "done.html",
        message=page.t("done.edited"),
        links=[(f"/drawer/{drawer_id}", page.t("done.back_to_drawer"))],
    )


def do_kg(page: Page) -> Response:
    """Add, invalidate or supersede a fact (`op`), after a review."""
    desk = page.desk
    op = page.request.path_params["op"]
    f = {
        k: page.arg(k)
        for k in ("subject", "predicate", "object", "new_object", "date", "source", "entity")
    }
    back = "/kg?" + urlencode({"entity": f["entity"] or f["subject"]})
    for needed in ("subject", "predicate", "object"):
        if not f[needed]:
            raise InvalidInputError(
                page.t("kg.need", field=page.t(f"kg.{needed}")), hint=page.t("kg.need_hint")
            )
    if op == "supersede" and not f["new_object"]:
        raise InvalidInputError(page.t("kg.need", field=page.t("kg.new_object")))
    if not _confirmed(page):
        return page.render(
            "confirm.html",
            action=f"/kg/{op}",
            question=page.t(f"confirm.kg_{op}", **f),
            drawers=[],
            fields=f,
            danger=op == "invalidate",
        )
    if op == "add":
        fact = FactInput(
            f["subject"],
            f["predicate"],
            f["object"],
            valid_from=f["date"] or None,
            source_drawer_id=f["source"] or None,
        )
        desk.call(desk.palace.kg_add, fact)
    elif op == "invalidate":
        desk.call(desk.palace.kg_invalidate, f["subject"], f["predicate"], f["object"],
                  f["date"] or None)  # fmt: skip
    else:
        desk.call(desk.palace.kg_supersede, f["subject"], f["predicate"], f["object"],
                  f["new_object"], f["date"] or None)  # fmt: skip
    return page.redirect(back)


def do_duplicates(page: Page) -> Response:
    """Keep one drawer of a duplicate group, forget the others (after a review)."""
    desk = page.desk
    keep = page.arg("keep")
    group = [i for i in page.arg("group").split() if i]
    others = [i for i in group if i != keep]
    if not keep or keep not in group or not others:
        raise InvalidInputError(page.t("dup.pick_one"))
    if not _confirmed(page):
        drawers = desk.call(desk.palace.get_drawers, others)["drawers"]
        return page.render(
            "confirm.html",
            action="/health/duplicates",
            question=page.t("confirm.duplicates", n=len(others), keep=keep),
            drawers=drawers,
            fields={"keep": keep, "group": " ".join(group)},
            danger=True,
        )
    desk.warm.wait(timeout=120)
    done = desk.call(desk.palace.forget, drawer_ids=others)
    return page.render(
        "done.html",
        message=page.t("done.forgot", n=done["removed"]),
        links=[("/health", page.t("nav.health")), (f"/drawer/{keep}", page.t("done.kept"))],
    )


# -- sign-in (a token was required) ---------------------------------------------------------------
def view_login(page: Page) -> Response:
    desk = page.desk
    if desk.sessions is None:
        return page.redirect("/")
    target = page.arg("next") or "/"
    if not target.startswith("/") or target.startswith("//"):
        target = "/"
    if page.request.method == "POST":
        refusal = csrf_refusal(page.request.headers, page.cookies, page.form)
        if refusal is not None:
            return page.refused(refusal)
        if desk.sessions.token_matches(page.form.get("token", "")):
            response = page.redirect(target)
            name, value = cookie_header(SESSION_COOKIE, desk.sessions.open())
            response.raw_headers.append((name, value))
            return response
        return page.render("login.html", status=401, target=target, wrong=True)
    return page.render("login.html", status=401, target=target, wrong=False)


# -- wiring -------------------------------------------------------------------------------------
View = Callable[[Page], "Response"]


def _endpoint(desk: Desk, view: View, writes: bool = False) -> Callable[[Request], Any]:
    async def endpoint(request: Request) -> Response:
        form: dict[str, str] = {}
        if request.method == "POST":
            form = await _read_form(request)

        def run() -> Response:
            page = Page(desk, request, form)
            if writes:
                if desk.read_only:
                    return page.refused("read_only")
                refusal = csrf_refusal(request.headers, page.cookies, form)
                if refusal is not None:
                    return page.refused(refusal)
            try:
                return view(page)
            except MemPalaceError as exc:
                return page.error(exc)
            finally:
                desk.served.set()

        return await anyio_to_thread.run_sync(run)

    return endpoint


async def _read_form(request: Request) -> dict[str, str]:
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            break
    text = body[:MAX_FORM_BYTES].decode("utf-8", "replace")
    return dict(parse_qsl(text, keep_blank_values=True))


class ServerTiming:
    """ASGI middleware: `Server-Timing: app;dur=MS` (the time to the response's start) and the
    page's security headers on every response."""

    HEADERS = [
        (
            b"content-security-policy",
            b"default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
            b"img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; "
            b"form-action 'self'; base-uri 'none'",
        ),
        (b"x-content-type-options", b"nosniff"),
        (b"referrer-policy", b"same-origin"),  # "no-referrer" would send Origin: null
        (b"x-frame-options", b"DENY"),
    ]

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()

        async def timed(message: Any) -> None:
            if message["type"] == "http.response.start":
                ms = (time.perf_counter() - started) * 1000
                headers = list(message.get("headers", []))
                headers.append((b"server-timing", f"app;dur={ms:.1f}".encode()))
                headers.extend(self.HEADERS)
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, timed)


def build_app(desk: Desk) -> ASGIApp:
    """The whole page: routes, then (outermost first) the Host/Origin rule of
    `serving.access`, the token (when one is required), the timing and security headers."""

    def route(path: str, view: View, methods: tuple[str, ...] = ("GET",), writes: bool = False):
        return starlette_routing.Route(path, _endpoint(desk, view, writes), methods=list(methods))

    routes = [
        route("/", view_map),
        route("/room", view_room),
        route("/search", view_search),
        route("/drawer/{drawer_id:path}/forget", do_forget, ("POST",), writes=True),
        route("/drawer/{drawer_id:path}/move", do_move, ("POST",), writes=True),
        route("/drawer/{drawer_id:path}/edit", do_edit, ("POST",), writes=True),
        route("/drawer/{drawer_id:path}", view_drawer),
        route("/kg", view_kg),
        route("/kg/{op:str}", _kg_op, ("POST",), writes=True),
        route("/diaries", view_diaries),
        route("/health", view_health),
        route("/health/duplicates", do_duplicates, ("POST",), writes=True),
        route("/activity", view_activity),
        route("/login", view_login, ("GET", "POST")),
        starlette_routing.Mount(
            "/static", app=starlette_staticfiles.StaticFiles(directory=str(STATIC)), name="static"
        ),
    ]
    app: Any = starlette_applications.Starlette(routes=routes)
    app = ServerTiming(app)
    if desk.sessions is not None and desk.access.token:
        app = TokenGate(app, desk.sessions, desk.access.token)
    return HostOriginGuard(app, desk.access, "/")


def _kg_op(page: Page) -> Response:
    if page.request.path_params["op"] not in ("add", "invalidate", "supersede"):
        raise NotFoundError("There is no such change to the knowledge graph.")
    return do_kg(page)


__all__ = ["Desk", "build_app", "fmt_bytes", "fmt_time", "passage_segments"]
