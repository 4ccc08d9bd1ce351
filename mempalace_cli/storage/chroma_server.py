"""Talking to a Chroma server that is not ours to trust: connect with a token and TLS, bound
every request by a timeout, turn every way a request can fail into a typed error, and retry
reads (only reads: a write is never repeated behind the caller's back).

chromadb and httpx are imported at their first use (`common.lazy`).
"""

from __future__ import annotations

import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from mempalace_cli.common.config import DEFAULT_CHROMA_TIMEOUT, Settings
from mempalace_cli.common.errors import (
    ConfigError,
    MemPalaceError,
    ServerAuthError,
    ServerError,
    ServerTimeoutError,
    ServerUnavailableError,
)
from mempalace_cli.common.lazy import lazy
from mempalace_cli.storage import chroma_internals

chromadb = lazy("chromadb")
chromadb_config = lazy("chromadb.config")
httpx = lazy("httpx")

T = TypeVar("T")
DEFAULT_TENANT = "default_tenant"
DEFAULT_DATABASE = "default_database"
# Waits between attempts of a read that failed for a reason that may pass (down, slow).
READ_RETRY_DELAYS = (0.2, 0.6)


@dataclass(frozen=True)
class ServerOptions:
    url: str
    token: str | None = None
    ca_file: Path | None = None
    timeout: float = DEFAULT_CHROMA_TIMEOUT
    database: str | None = None

    @classmethod
    def from_settings(cls, settings: Settings) -> ServerOptions | None:
        if not settings.chroma_url:
            return None
        return cls(
            url=settings.chroma_url.rstrip("/"),
            token=settings.chroma_token,
            ca_file=settings.chroma_ca_file,
            timeout=settings.chroma_timeout,
            database=settings.chroma_database,
        )

    @property
    def where(self) -> str:
        """The server (and database) in messages."""
        return self.url + (f" (database {self.database})" if self.database else "")


def _endpoint(opts: ServerOptions) -> tuple[str, int, bool]:
    url = urllib.parse.urlparse(opts.url)
    if url.scheme not in ("http", "https") or not url.hostname:
        raise ConfigError(
            f"chroma_url {opts.url!r} is not a URL.",
            hint="Use the form http://host:port (or https://host:port for TLS).",
        )
    try:
        port = url.port or (443 if url.scheme == "https" else 8000)
    except ValueError:
        raise ConfigError(f"chroma_url {opts.url!r} has an invalid port.") from None
    return url.hostname, port, url.scheme == "https"


def _headers(opts: ServerOptions) -> dict[str, str]:
    if not opts.token:
        return {}
    # Chroma's token auth reads either header; proxies in front of it usually read the first.
    return {"Authorization": f"Bearer {opts.token}", "X-Chroma-Token": opts.token}


def _verify(opts: ServerOptions) -> str | bool:
    if opts.ca_file is None:
        return True
    if not opts.ca_file.is_file():
        raise ConfigError(
            f"The CA file {opts.ca_file} for the Chroma server does not exist.",
            hint="Point chroma_ca_file (or MEMPALACE_CHROMA_CA_FILE, --chroma-ca-file) at the "
            "PEM file of the authority that signed the server's certificate.",
        )
    return str(opts.ca_file)


def check_reachable(opts: ServerOptions) -> None:
    """One heartbeat with the timeout, token and TLS settings, so that a server that is down,
    hangs or refuses us fails here with a clear error instead of inside chromadb (whose own
    client waits forever)."""
    host, port, tls = _endpoint(opts)
    url = f"{'https' if tls else 'http'}://{host}:{port}/api/v2/heartbeat"
    try:
        with httpx.Client(timeout=opts.timeout, verify=_verify(opts)) as session:
            resp = session.get(url, headers=_headers(opts))
    except Exception as exc:
        raise classify(exc, opts) from exc
    if resp.status_code in (401, 403):
        raise _auth_error(opts, resp.status_code)
    if resp.status_code >= 400:
        raise ServerError(
            f"The Chroma server at {opts.url} answered its heartbeat with HTTP "
            f"{resp.status_code}. Nothing was changed.",
            hint="Check that chroma_url points at a Chroma server (chroma run), not another "
            "service.",
        )


def connect(opts: ServerOptions) -> Any:
    """A chromadb HttpClient for the server, every request bounded by `opts.timeout`."""
    host, port, tls = _endpoint(opts)
    read(opts, lambda: check_reachable(opts))
    verify = _verify(opts)
    settings = chromadb_config.Settings(
        anonymized_telemetry=False,
        allow_reset=False,
        chroma_server_ssl_verify=verify if verify is not True else None,
    )
    try:
        if opts.database:
            _ensure_database(host, port, tls, opts, settings)
        client = chromadb.HttpClient(
            host=host,
            port=port,
            ssl=tls,
            headers=_headers(opts),
            settings=settings,
            tenant=DEFAULT_TENANT,
            database=opts.database or DEFAULT_DATABASE,
        )
    except MemPalaceError:
        raise
    except Exception as exc:
        raise classify(exc, opts) from exc
    # chromadb's own client has no timeout: a hung server would hang us.
    chroma_internals.set_http_timeout(client, httpx.Timeout(opts.timeout))
    return client


def _ensure_database(host: str, port: int, tls: bool, opts: ServerOptions, base: Any) -> None:
    """Create the palace's database on the server the first time it is used."""
    settings = chromadb_config.Settings(
        **{
            **base.model_dump(),
            "chroma_api_impl": "chromadb.api.fastapi.FastAPI",
            "chroma_server_host": host,
            "chroma_server_http_port": port,
            "chroma_server_ssl_enabled": tls,
            "chroma_server_headers": _headers(opts),
        }
    )
    admin = chromadb.AdminClient(settings)
    name = opts.database or DEFAULT_DATABASE
    try:
        admin.get_database(name, tenant=DEFAULT_TENANT)
    except Exception as exc:
        if "not found" not in str(exc).lower() and "does not exist" not in str(exc).lower():
            raise
        admin.create_database(name, tenant=DEFAULT_TENANT)


def _auth_error(opts: ServerOptions, status: int | None = None) -> ServerAuthError:
    code = f" (HTTP {status})" if status else ""
    if opts.token:
        return ServerAuthError(
            f"The Chroma server at {opts.url} refused our token{code}. Nothing was changed.",
            hint="Check chroma_token (or MEMPALACE_CHROMA_TOKEN, --chroma-token) against the "
            "server's configured token.",
        )
    return ServerAuthError(
        f"The Chroma server at {opts.url} requires a token{code}. Nothing was changed.",
        hint="Set MEMPALACE_CHROMA_TOKEN (or chroma_token in config.toml, --chroma-token).",
    )


def classify(exc: BaseException, opts: ServerOptions) -> MemPalaceError:
    """The typed error for one failed request."""
    if isinstance(exc, MemPalaceError):
        return exc

    text = str(exc)
    if isinstance(exc, httpx.TimeoutException | TimeoutError):
        return ServerTimeoutError(
            f"The Chroma server at {opts.url} did not answer within {opts.timeout:g} s. "
            "A write that timed out may or may not have been applied.",
            hint="Check the server's load and network, or raise chroma_timeout_seconds in "
            "config.toml; then run the command again (every write is safe to repeat).",
        )
    if isinstance(exc, httpx.HTTPStatusError) and exc.response.status_code in (401, 403):
        return _auth_error(opts, exc.response.status_code)
    name = type(exc).__name__
    lowered = text.lower()
    if name in ("AuthorizationError", "ChromaAuthError") or any(
        marker in lowered for marker in ("unauthorized", "forbidden", "401", "403")
    ):
        return _auth_error(opts)
    if "certificate" in lowered or "ssl" in lowered or "tls" in lowered:
        return ServerUnavailableError(
            f"The TLS connection to the Chroma server at {opts.url} failed: {text}",
            hint="Point chroma_ca_file (or MEMPALACE_CHROMA_CA_FILE, --chroma-ca-file) at the "
            "PEM file of the authority that signed the server's certificate, or check the host "
            "name in chroma_url.",
        )
    if isinstance(exc, httpx.TransportError | ConnectionError | OSError) or (
        "could not connect" in lowered
    ):
        return ServerUnavailableError(
            f"Could not reach the Chroma server at {opts.url}: {text or name}",
            hint="Start it (chroma run --path DIR --host 0.0.0.0 --port PORT) or check "
            "chroma_url; nothing was changed.",
        )
    return ServerError(
        f"The Chroma server at {opts.url} failed a request: {name}: {text}",
        hint="Check the server's log; the command can be run again.",
    )


def read(opts: ServerOptions, op: Callable[[], T]) -> T:
    """Run an idempotent read, retrying when the server was down or slow for a moment."""
    for delay in (*READ_RETRY_DELAYS, None):
        try:
            return op()
        except Exception as exc:
            error = classify(exc, opts)
            if delay is None or not isinstance(error, ServerUnavailableError | ServerTimeoutError):
                raise error from exc
            time.sleep(delay)
    raise AssertionError("unreachable")


def write(opts: ServerOptions, op: Callable[[], T]) -> T:
    """Run a write once: it is reported done only when the server acknowledged it."""
    try:
        return op()
    except Exception as exc:
        raise classify(exc, opts) from exc
