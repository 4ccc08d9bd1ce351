"""Who may use the page, on top of the serving rule (`serving.access`): the bearer token in a
browser, and the CSRF check of every write.

The token. Off loopback the serving rule demands one. A script sends it as `serving.access`
expects (`Authorization: Bearer TOKEN`, checked by the same `BearerTokenGuard`); a browser
can't add that header to a link, so it shows the token once (the sign-in form, or the
`?token=` of the address `mempalace ui --open` opens) and gets a random session cookie
(HttpOnly, SameSite=Strict) that this process remembers. Anything else gets 401 (a page asks
for the token; other requests get the JSON refusal of `BearerTokenGuard`) before any view runs.

CSRF. Every change (forget, move, edit, facts, the duplicate clean-up) is a POST whose form
carries the value of this browser's `mp_csrf` cookie (SameSite=Strict, set by the page that
shows the form), compared in constant time; a request another site's page makes can neither
read that cookie nor send it. `Sec-Fetch-Site`, when the browser sends it, must say the
request comes from this site. The Host/Origin allow-list of `HostOriginGuard` runs before all
of this.
"""

from __future__ import annotations

import hmac
import secrets
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlencode

from mempalace_cli.serving.access import BearerTokenGuard

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

SESSION_COOKIE = "mp_session"
CSRF_COOKIE = "mp_csrf"
CSRF_FIELD = "csrf"
OPEN_PATHS = ("/static/", "/login")  # reachable without the token (the sign-in form, assets)


def _cookies(scope: Scope) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in scope.get("headers", []):
        if key.lower() != b"cookie":
            continue
        for part in value.decode("latin-1").split(";"):
            name, _, val = part.strip().partition("=")
            if name and name not in out:
                out[name] = val
    return out


def cookie_header(name: str, value: str, max_age: int | None = None) -> tuple[bytes, bytes]:
    attrs = f"{name}={value}; Path=/; HttpOnly; SameSite=Strict"
    if max_age is not None:
        attrs += f"; Max-Age={max_age}"
    return b"set-cookie", attrs.encode("latin-1")


class Sessions:
    """The browsers that showed the token, by random session id (this process only)."""

    def __init__(self, token: str) -> None:
        self._token = token.strip().encode("utf-8")
        self._ids: set[str] = set()

    def token_matches(self, presented: str) -> bool:
        return hmac.compare_digest(presented.strip().encode("utf-8"), self._token)

    def open(self) -> str:
        session = secrets.token_urlsafe(32)
        self._ids.add(session)
        return session

    def valid(self, session: str | None) -> bool:
        return bool(session) and any(hmac.compare_digest(session, s) for s in self._ids)


class TokenGate:
    """ASGI middleware: a request passes with the bearer header (BearerTokenGuard's check), a
    session cookie, or `?token=` on a GET (which opens a session and redirects to the same
    address without it); otherwise 401."""

    def __init__(self, app: ASGIApp, sessions: Sessions, token: str) -> None:
        self.app = app
        self.sessions = sessions
        self._bearer = BearerTokenGuard(app, token)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"].startswith(OPEN_PATHS):
            await self.app(scope, receive, send)
            return
        if self._bearer._authorized(scope) or self.sessions.valid(
            _cookies(scope).get(SESSION_COOKIE)
        ):
            await self.app(scope, receive, send)
            return
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        presented = query.pop("token", None)
        if scope["method"] == "GET" and presented and self.sessions.token_matches(presented):
            rest = urlencode(query)
            await _redirect(
                send,
                scope["path"] + (f"?{rest}" if rest else ""),
                cookie_header(SESSION_COOKIE, self.sessions.open()),
            )
            return
        if scope["method"] == "GET" and _wants_html(scope):
            target = scope["path"] + (
                "?" + scope["query_string"].decode("latin-1") if scope.get("query_string") else ""
            )
            await _redirect(send, "/login?" + urlencode({"next": target}))
            return
        await self._bearer(scope, receive, send)  # its 401, exactly as the MCP server says it


def _wants_html(scope: Scope) -> bool:
    for key, value in scope.get("headers", []):
        if key.lower() == b"accept":
            return b"text/html" in value
    return False


async def _redirect(send: Send, location: str, *headers: tuple[bytes, bytes]) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": 303,
            "headers": [
                (b"location", location.encode("latin-1", "replace")),
                (b"content-length", b"0"),
                (b"cache-control", b"no-store"),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": b""})


def csrf_token(cookies: dict[str, str]) -> tuple[str, bool]:
    """This browser's CSRF value, and whether it is new (to be set as a cookie)."""
    value = cookies.get(CSRF_COOKIE, "")
    if len(value) >= 32 and value.replace("-", "").replace("_", "").isalnum():
        return value, False
    return secrets.token_urlsafe(32), True


def csrf_refusal(headers: Any, cookies: dict[str, str], form: dict[str, Any]) -> str | None:
    """Why a write request is refused (None: it comes from one of our pages)."""
    site = headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        return "cross_site"
    sent = str(form.get(CSRF_FIELD) or "")
    kept = cookies.get(CSRF_COOKIE, "")
    if not sent or not kept or not hmac.compare_digest(sent.encode(), kept.encode()):
        return "csrf"
    return None


__all__ = [
    "CSRF_COOKIE",
    "CSRF_FIELD",
    "SESSION_COOKIE",
    "Sessions",
    "TokenGate",
    "cookie_header",
    "csrf_refusal",
    "csrf_token",
]
