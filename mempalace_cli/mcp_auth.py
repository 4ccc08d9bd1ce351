"""Who may talk to the MCP server over HTTP: the bind rule and the bearer token.

Without a token the server only listens on the exact loopback names that the MCP SDK's
DNS-rebinding check (Host and Origin headers) covers: 127.0.0.1, localhost and ::1. Any other
address, other loopback addresses such as 127.0.0.2 or Debian's 127.0.1.1 included, would
accept a request forged by a web page through DNS rebinding, so it needs a token.
"""

from __future__ import annotations

import hmac
import json
from typing import TYPE_CHECKING

from mempalace_cli.errors import InvalidInputError

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

TOKEN_ENV = "MEMPALACE_MCP_TOKEN"
DEFAULT_HOST = "127.0.0.1"
# Exactly the names for which the SDK turns its Host/Origin (DNS-rebinding) check on.
GUARDED_LOOPBACK = ("127.0.0.1", "localhost", "::1")


def is_loopback(host: str) -> bool:
    """True for the loopback names the SDK's Host/Origin check protects (nothing else)."""
    return host.strip().lower().strip("[]") in GUARDED_LOOPBACK


def check_http_options(host: str, token: str | None) -> None:
    """Refuse to serve without a token anywhere the Host/Origin check does not cover."""
    if token is not None and not token.strip():
        raise InvalidInputError(
            "The bearer token is empty.", hint=f"Pass a real secret with --token or {TOKEN_ENV}."
        )
    if not is_loopback(host) and not token:
        raise InvalidInputError(
            f"Serving on {host} needs a bearer token: without one, other machines (or a web "
            "page, through DNS rebinding) could read and change the palace. The server did not "
            "start.",
            hint=f"Pass --token SECRET (or set {TOKEN_ENV}), or use --host "
            f"{' / '.join(GUARDED_LOOPBACK)} (the only addresses served without a token).",
        )


class BearerTokenGuard:
    """ASGI middleware: every HTTP request must carry `Authorization: Bearer <token>`.

    Checked before the MCP app sees the request, so a refused request touches nothing.
    """

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._token = token.strip().encode("utf-8")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not self._authorized(scope):
            body = json.dumps(
                {
                    "error": "unauthorized",
                    "message": "Missing or wrong bearer token.",
                    "hint": "Send the header 'Authorization: Bearer <token>' with the token "
                    "the server was started with.",
                }
            ).encode("utf-8")
            await send(
                {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"content-length", str(len(body)).encode()),
                        (b"www-authenticate", b'Bearer realm="mempalace"'),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)

    def _authorized(self, scope: Scope) -> bool:
        header = b""
        for name, value in scope.get("headers", []):
            if name.lower() == b"authorization":
                header = value
                break
        scheme, _, presented = header.partition(b" ")
        if scheme.lower() != b"bearer":
            presented = b""
        # Constant-time: the compare takes as long whatever prefix of the token matches.
        return hmac.compare_digest(presented.strip(), self._token)
