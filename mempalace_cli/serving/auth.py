"""Who may talk to the MCP server over HTTP: the serving rule of `http_access` (bind address,
token needed off loopback, the Host/Origin allow-list) with the MCP server's flag and variable
names, and the bearer token check."""

from __future__ import annotations

from mempalace_cli.common.errors import MemPalaceError
from mempalace_cli.serving.access import (
    DEFAULT_HOST,
    BearerTokenGuard,
    HostOriginGuard,
    HttpAccess,
    plan_http_access,
    resolve_host,
)

TOKEN_ENV = "MEMPALACE_MCP_TOKEN"

__all__ = [
    "DEFAULT_HOST",
    "TOKEN_ENV",
    "BearerTokenGuard",
    "HostOriginGuard",
    "HttpAccess",
    "check_http_options",
    "is_loopback",
]


def check_http_options(host: str, token: str | None, port: int = 0) -> HttpAccess:
    """The serving rule for `serve-mcp --transport http`: where it binds and what it accepts.
    Raises InvalidInputError (nothing started) for a host it can't serve, or can't serve
    without a token."""
    return plan_http_access(host, port, token, token_env=TOKEN_ENV)


def is_loopback(host: str) -> bool:
    """True when `host` parses or resolves to a loopback address (served without a token)."""
    try:
        return resolve_host(host).is_loopback
    except MemPalaceError:
        return False
