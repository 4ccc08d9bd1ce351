"""How every HTTP server of the project runs (`serve-mcp --transport http`, `mempalace ui`):
uvicorn on a socket `access.bind_socket` opened, with time limits on the client's side of a
request (`slow_client_protocol`: a client that dribbles its request gets 408 and is cut off),
and a stop that always ends the process, exit 0, within GRACEFUL_SECONDS of the first Ctrl-C
or SIGTERM however many connections are open (`StopDeadline`, `QuietStopServer`).

May import: `mempalace_cli.common` only (and uvicorn, through `common.lazy`).
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import threading
import time
from contextlib import contextmanager, suppress
from typing import Any

from mempalace_cli.common.lazy import lazy

anyio = lazy("anyio")
uvicorn = lazy("uvicorn")
uvicorn_http = lazy("uvicorn.protocols.http.auto")

log = logging.getLogger("mempalace.mcp")  # the servers' log (configured by their front end)

# From a stop signal (Ctrl-C, SIGTERM) to exit, at most (StopDeadline); open HTTP streams and
# running requests get DRAIN_SECONDS of it to finish.
GRACEFUL_SECONDS = 3
DRAIN_SECONDS = 2
# A client's side of an HTTP request (slow_client_protocol).
HEAD_SECONDS = 10.0  # the request line and headers, from connecting or the previous response
BODY_IDLE_SECONDS = 10.0  # the longest pause inside a body
BODY_MIN_RATE = 4096  # bytes a second a body must average, after its first BODY_IDLE_SECONDS


def slow_client_protocol() -> type:
    """uvicorn's HTTP protocol with time limits on the client's side of a request, which
    uvicorn does not have: a connection that sends no complete request line and headers within
    HEAD_SECONDS of opening (or of its previous response), or whose body stalls for
    BODY_IDLE_SECONDS or arrives slower than BODY_MIN_RATE bytes a second (after the first
    BODY_IDLE_SECONDS), gets 408 and is closed. Responses, however long (an SSE stream, a long
    mine), are never timed."""

    class SlowClientGuard(uvicorn_http.AutoHTTPProtocol):  # type: ignore[misc,valid-type]
        _deadline_timer: asyncio.TimerHandle | None = None
        _waiting: tuple[str, int] | None = None  # ("head" | "body", id of the request cycle)
        _since = 0.0  # when the wait began
        _last_read = 0.0
        _got = 0  # body bytes received in this wait

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._watch(0)

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            self._watch(len(data))

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._watch(0)

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _state(self) -> str | None:
            cycle = self.cycle
            if cycle is None or cycle.response_complete:
                return "head"
            return "body" if cycle.more_body else None

        def _watch(self, received: int) -> None:
            transport = self.transport
            if transport is None or transport.is_closing():
                self._disarm()
                return
            state = self._state()
            if state is None:  # the request is in; the app is answering
                self._waiting = None
                self._disarm()
                return
            now = self.loop.time()
            key = (state, id(self.cycle))
            if key != self._waiting:
                self._waiting, self._since, self._got = key, now, 0
            elif state == "body":
                self._got += received
            if received:
                self._last_read = now
            self._arm()

        def _deadline(self) -> float:
            if self._waiting is not None and self._waiting[0] == "body":
                by_rate = self._since + BODY_IDLE_SECONDS + self._got / BODY_MIN_RATE
                return min(by_rate, max(self._last_read, self._since) + BODY_IDLE_SECONDS)
            return self._since + HEAD_SECONDS

        def _arm(self) -> None:
            self._disarm()
            self._deadline_timer = self.loop.call_at(self._deadline(), self._expire)

        def _disarm(self) -> None:
            if self._deadline_timer is not None:
                self._deadline_timer.cancel()
                self._deadline_timer = None

        def _expire(self) -> None:
            self._deadline_timer = None
            if self.transport.is_closing() or self._state() is None:
                return
            if self._state() == "body" and self.flow.read_paused:
                self._last_read = self.loop.time()  # we stopped reading, not the client
                self._arm()
                return
            if self.loop.time() < self._deadline():
                self._arm()
                return
            cycle = self.cycle
            started = self._state() == "body" or self._last_read > self._since
            if started and not (cycle is not None and cycle.response_started):
                message = b"The request did not arrive in time; send it whole, promptly.\n"
                self.transport.write(
                    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain\r\n"
                    b"connection: close\r\ncontent-length: "
                    + str(len(message)).encode()
                    + b"\r\n\r\n"
                    + message
                )
            log.debug("closed a connection from %s: no complete request in time", self.client)
            self.transport.close()

    return SlowClientGuard


class StopDeadline:
    """From the first stop signal, the process is gone within GRACEFUL_SECONDS, however many
    sessions, streams and tool calls are open: what is still running then (a long mine, calls
    queued behind it, thousands of sessions being torn down) is cut off and the process exits
    0. The palace is crash-safe: a cut-off write leaves it consistent, and mining again
    converges."""

    def __init__(self, seconds: float = GRACEFUL_SECONDS) -> None:
        self.seconds = seconds
        self._started = False

    def start(self) -> None:
        if self._started:
            return
        self._started = True
        threading.Thread(target=self._expire, name="mempalace-stop-deadline", daemon=True).start()

    def _expire(self) -> None:
        time.sleep(self.seconds)
        log.warning(
            "still stopping %g s after the stop signal (tool calls or sessions still open): "
            "exiting now",
            self.seconds,
        )
        for handler in logging.getLogger().handlers:
            with suppress(Exception):
                handler.flush()
        os._exit(0)


def _quiet_stop_server_class() -> type:
    class QuietStopServer(uvicorn.Server):
        """uvicorn, minus re-raising the stop signal after its graceful shutdown (a re-raised
        SIGTERM would kill the process instead of letting it exit 0), plus the StopDeadline."""

        def __init__(self, config: Any) -> None:
            super().__init__(config)
            self.stop_deadline = StopDeadline()

        def handle_exit(self, sig: int, frame: Any) -> None:
            super().handle_exit(sig, frame)
            self.stop_deadline.start()

        @contextmanager
        def capture_signals(self) -> Any:
            if threading.current_thread() is not threading.main_thread():
                yield
                return
            previous = {
                s: signal.signal(s, self.handle_exit) for s in (signal.SIGINT, signal.SIGTERM)
            }
            try:
                yield
            finally:
                for signum, handler in previous.items():
                    signal.signal(signum, handler)
                if self._captured_signals:
                    log.info("stop signal received: the HTTP server shut down")

    return QuietStopServer


def _QuietStopServer(config: Any) -> Any:  # noqa: N802  (reads as the class it builds)
    return _quiet_stop_server_class()(config)


def server_config(app: Any, lifespan: str) -> Any:
    """uvicorn's settings for one of our servers: the slow-client limits, no access log (the
    front end logs what it serves), DRAIN_SECONDS for open requests at a stop; `lifespan`
    "on" or "off" as the app needs."""
    return uvicorn.Config(
        app,
        http=slow_client_protocol(),
        log_level="warning",
        access_log=False,
        lifespan=lifespan,
        timeout_graceful_shutdown=DRAIN_SECONDS,
    )


def serve_on_socket(config: Any, sock: Any) -> None:
    """Run uvicorn (`config`) on the bound socket `sock` until a stop signal (exit 0)."""
    anyio.run(_QuietStopServer(config).serve, [sock])


__all__ = [
    "BODY_IDLE_SECONDS",
    "BODY_MIN_RATE",
    "DRAIN_SECONDS",
    "GRACEFUL_SECONDS",
    "HEAD_SECONDS",
    "StopDeadline",
    "server_config",
    "serve_on_socket",
    "slow_client_protocol",
]
