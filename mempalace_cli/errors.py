"""Typed errors raised by the core.

The core never prints or exits: it raises one of these, and the adapters (the CLI, the
MCP server) turn it into a message, a hint and an exit status in one place each.
"""

from __future__ import annotations

INIT_HINT = "Run: mempalace init <dir> && mempalace mine <dir>"


class MemPalaceError(Exception):
    """Base class for every error a user can cause or fix."""

    kind = "error"

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def to_dict(self) -> dict[str, str | None]:
        return {"message": self.message, "hint": self.hint, "kind": self.kind}


class NoPalaceError(MemPalaceError):
    """There is no palace at the selected path yet."""

    kind = "no_palace"

    def __init__(self, palace_path: str, hint: str = INIT_HINT) -> None:
        super().__init__(f"No palace found at {palace_path}.", hint)
        self.palace_path = palace_path


class ConfigError(MemPalaceError):
    """A config file is unreadable or holds a value we can't use."""

    kind = "config"


class InvalidInputError(MemPalaceError):
    """An argument is malformed: a bad date, an empty query, an inverted interval..."""

    kind = "invalid_input"


class NotFoundError(MemPalaceError):
    """Something named by the caller does not exist (a directory, a drawer id...)."""

    kind = "not_found"


class PalaceLockedError(MemPalaceError):
    """Another process held the palace's write lock for longer than we were willing to wait."""

    kind = "locked"


class PalaceCorruptError(MemPalaceError):
    """The palace's files exist but can't be read. Never recreated silently."""

    kind = "corrupt"


class IncompatiblePalaceError(MemPalaceError):
    """The drawer collection was embedded with a model other than ours."""

    kind = "incompatible"


class ModelUnavailableError(MemPalaceError):
    """The offline embedding model files can't be found or loaded."""

    kind = "model"


class ServerError(MemPalaceError):
    """The Chroma server answered with an error we can't read as anything more specific."""

    kind = "server"


class ServerUnavailableError(ServerError):
    """The Chroma server can't be reached (refused, no such host, TLS handshake failed)."""

    kind = "server_unavailable"


class ServerTimeoutError(ServerError):
    """The Chroma server took longer than chroma_timeout_seconds to answer."""

    kind = "server_timeout"


class ServerAuthError(ServerError):
    """The Chroma server refused our token (401/403), or wants one and we sent none."""

    kind = "server_auth"


class MigrationMismatchError(MemPalaceError):
    """After `migrate`, the target's records do not match the source's."""

    kind = "migration_mismatch"
