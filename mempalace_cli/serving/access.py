"""Who may reach a palace served over HTTP: one rule for every server the project starts (the
MCP server today, a web UI later).

`plan_http_access(host, port, token)` decides, before anything listens:

- the address to bind: `--host` is parsed (an IP literal, `[::1]` and surrounding spaces
  allowed) or resolved once (`localhost`, `127.1`, a host name); what cannot be parsed or
  resolved is refused with a message, and the socket is bound to the resolved address, so the
  decision below is about the address actually served;
- whether a bearer token is needed: no token only when that address is loopback (127.0.0.0/8,
  ::1; an IPv4-mapped ::ffff:127.x is taken as its IPv4 address);
- the Host and Origin values a request may carry (`HostOriginGuard`): on a loopback address only
  the address itself and `localhost`, with the served port (so a web page reaching the server
  through DNS rebinding, whose Host is its own name, gets 421 and touches nothing); on any other
  address, which needs the token, any Host, and an Origin only when it is the Host's own
  (http or https, for a TLS proxy in front).

The MCP SDK's own Host/Origin check turns itself on for three exact spellings only; it is turned
off and this guard is set for every server instead, whatever spelling the user typed.
"""

from __future__ import annotations

import errno
import hmac
import ipaddress
import json
import os
import socket
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from mempalace_cli.common.errors import InvalidInputError

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

DEFAULT_HOST = "127.0.0.1"
LOOPBACK_HINT = "--host 127.0.0.1 (or localhost, or ::1)"

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True)
class HttpAccess:
    """The outcome of the serving rule for one server."""

    host: str  # as the user typed it (for messages)
    address: str  # the IP address bound, e.g. "127.0.0.1", "::1", "0.0.0.0"
    family: socket.AddressFamily
    port: int
    loopback: bool
    token: str | None

    @property
    def url_host(self) -> str:
        """The address as it is written in a URL: IPv6 in brackets."""
        return f"[{self.address}]" if self.family == socket.AF_INET6 else self.address

    def url(self, path: str = "") -> str:
        return f"http://{self.url_host}:{self.port}{path}"

    @property
    def allowed_hosts(self) -> frozenset[str] | None:
        """Host header values accepted (lower case, with the port); None: any (off loopback,
        where the bearer token guards the server)."""
        if not self.loopback:
            return None
        names = {self.url_host, "localhost"}
        hosts = {f"{name}:{self.port}" for name in names}
        if self.port == 80:  # a client may leave the default port out
            hosts |= names
        return frozenset(hosts)

    @property
    def allowed_origins(self) -> frozenset[str] | None:
        """Origin header values accepted (a request without Origin, i.e. not from a browser
        page, is accepted); None: only an Origin naming the request's own Host."""
        hosts = self.allowed_hosts
        return None if hosts is None else frozenset(f"http://{h}" for h in hosts)

    def bound_to(self, port: int) -> HttpAccess:
        """The same rule once the socket is bound (port 0 becomes the port the OS picked)."""
        return replace(self, port=port)


def _shown(host: str) -> str:
    return repr(host if len(host) <= 80 else host[:80] + "...")


def _refuse_host(host: str, why: str) -> InvalidInputError:
    return InvalidInputError(
        f"Cannot serve on --host {_shown(host)}: {why}. The server did not start.",
        hint=f"Give an IP address of this machine or a host name it resolves, e.g. "
        f"{LOOPBACK_HINT}.",
    )


def resolve_host(host: str, port: int = 0) -> IPAddress:
    """The one IP address `host` means: parsed when it is an IP literal (`[::1]` and spaces
    around it allowed), else resolved once (IPv4 first, as `localhost` always was). Raises
    InvalidInputError for what is neither."""
    text = host.strip() if isinstance(host, str) else ""
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1].strip()
    if not text:
        raise _refuse_host(host, "the address is empty")
    name, colon, tail = text.rpartition(":")
    if colon and tail.isdigit() and ":" not in name:
        raise InvalidInputError(
            f"Cannot serve on --host {_shown(host)}: the port goes in --port, not in --host. The "
            "server did not start.",
            hint=f"Use --host {name or DEFAULT_HOST} --port {tail}.",
        )
    try:
        ip: IPAddress = ipaddress.ip_address(text)
    except ValueError:
        try:
            infos = socket.getaddrinfo(text, port, type=socket.SOCK_STREAM)
        except (socket.gaierror, UnicodeError, ValueError) as exc:
            reason = exc.strerror if isinstance(exc, socket.gaierror) else str(exc)
            raise _refuse_host(
                host, f"it is not an IP address and does not resolve ({reason})"
            ) from None
        infos.sort(key=lambda info: info[0] != socket.AF_INET)
        try:
            ip = ipaddress.ip_address(str(infos[0][4][0]).split("%")[0])
        except (IndexError, ValueError):
            raise _refuse_host(host, "it resolves to no usable address") from None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip


def plan_http_access(
    host: str,
    port: int,
    token: str | None,
    *,
    token_env: str,
    token_flag: str = "--token",
) -> HttpAccess:
    """The serving rule: where to bind, whether the token is needed, which Host/Origin values
    are accepted. Raises InvalidInputError (nothing started) when the host can't be served."""
    if token is not None and not token.strip():
        raise InvalidInputError(
            "The bearer token is empty.",
            hint=f"Pass a real secret with {token_flag} or {token_env}.",
        )
    ip = resolve_host(host, port)
    shown = host.strip()
    if str(ip) != shown.strip("[]").strip():
        shown = f"{shown} ({ip})"
    if not ip.is_loopback and not token:
        raise InvalidInputError(
            f"Serving on {shown} needs a bearer token: without one, other machines (or a web "
            "page, through DNS rebinding) could read and change the palace. The server did not "
            "start.",
            hint=f"Pass {token_flag} SECRET (or set {token_env}), or use {LOOPBACK_HINT}: "
            "a loopback address is served without a token.",
        )
    family = socket.AF_INET6 if ip.version == 6 else socket.AF_INET
    return HttpAccess(
        host=host,
        address=str(ip),
        family=family,
        port=port,
        loopback=ip.is_loopback,
        token=token.strip() if token else None,
    )


def bind_socket(access: HttpAccess) -> socket.socket:
    """A listening socket on the planned address; a clear error when it can't be had."""
    try:
        return socket.create_server((access.address, access.port), family=access.family)
    except OSError as exc:
        where = f"{access.url_host}:{access.port}"
        reason = os.strerror(exc.errno) if exc.errno else str(exc)
        if exc.errno == errno.EADDRINUSE:
            hint = "Pick another port with --port, or stop whatever is using this one."
        elif exc.errno == errno.EADDRNOTAVAIL:
            hint = f"This machine has no address {access.address}; use {LOOPBACK_HINT}."
        elif exc.errno == errno.EACCES:
            hint = "Ports below 1024 need privileges; pick another port with --port."
        else:
            hint = f"Pick another port with --port, or use {LOOPBACK_HINT}."
        raise InvalidInputError(f"Cannot listen on {where}: {reason}.", hint=hint) from exc


# -- ASGI guards -------------------------------------------------------------------------------
async def send_json(
    send: Send, status: int, body: dict[str, Any], headers: tuple[tuple[bytes, bytes], ...] = ()
) -> None:
    """A complete JSON response."""
    data = json.dumps(body).encode("utf-8")
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(data)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": data})


def _header(scope: Scope, name: bytes) -> bytes | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return bytes(value)
    return None


class HostOriginGuard:
    """ASGI middleware: a request whose Host (or Origin) is not one the rule accepts gets 421
    (or 403) before anything else sees it."""

    def __init__(self, app: ASGIApp, access: HttpAccess, path: str = "") -> None:
        self.app = app
        self.access = access
        self.path = path  # the endpoint named in the hint

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refusal = self.refusal(scope)
            if refusal is not None:
                status, body = refusal
                await send_json(send, status, body)
                return
        await self.app(scope, receive, send)

    def refusal(self, scope: Scope) -> tuple[int, dict[str, str]] | None:
        for name in (b"host", b"origin"):
            if sum(1 for key, _ in scope.get("headers", []) if key.lower() == name) > 1:
                return 400, {
                    "error": "bad_request",
                    "message": f"The request carries more than one {name.decode().title()} "
                    "header, so it can't be told where it is going or where it comes from.",
                    "hint": "Send exactly one Host header (and at most one Origin header).",
                }
        raw_host = _header(scope, b"host")
        host = (raw_host or b"").decode("latin-1").strip().lower()
        allowed = self.access.allowed_hosts
        if not host or (allowed is not None and host not in allowed):
            return 421, {
                "error": "misdirected_request",
                "message": f"This server does not answer for Host {host or '(none)'!r}.",
                "hint": f"Connect to {self.access.url(self.path)}"
                + (
                    f" (or http://localhost:{self.access.port}{self.path})"
                    if f"localhost:{self.access.port}" in (allowed or ())
                    else ""
                )
                + "; other names are refused so that a web page can't reach the palace "
                "through DNS rebinding.",
            }
        raw_origin = _header(scope, b"origin")
        if raw_origin is None:
            return None
        origin = raw_origin.decode("latin-1").strip().lower()
        origins = self.access.allowed_origins
        if (origins is None and origin not in (f"http://{host}", f"https://{host}")) or (
            origins is not None and origin not in origins
        ):
            return 403, {
                "error": "forbidden_origin",
                "message": f"Requests from web pages at {origin!r} are refused.",
                "hint": "Call the server from an MCP client, not from a web page of another site.",
            }
        return None


class BearerTokenGuard:
    """ASGI middleware: every HTTP request must carry `Authorization: Bearer <token>`.

    Checked before the MCP app sees the request, so a refused request touches nothing.
    """

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._token = token.strip().encode("utf-8")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not self._authorized(scope):
            await send_json(
                send,
                401,
                {
                    "error": "unauthorized",
                    "message": "Missing or wrong bearer token.",
                    "hint": "Send the header 'Authorization: Bearer <token>' with the token "
                    "the server was started with.",
                },
                ((b"www-authenticate", b'Bearer realm="mempalace"'),),
            )
            return
        await self.app(scope, receive, send)

    def _authorized(self, scope: Scope) -> bool:
        header = _header(scope, b"authorization") or b""
        scheme, _, presented = header.partition(b" ")
        if scheme.lower() != b"bearer":
            presented = b""
        # Constant-time: the compare takes as long whatever prefix of the token matches.
        return hmac.compare_digest(presented.strip(), self._token)
