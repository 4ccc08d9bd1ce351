"""The palace's own records on a Chroma server, in a small collection beside the drawers.

- `change_token`: a random value every writer replaces before and after each drawer write.
  A reader that remembers the token it last mirrored knows, with one get by id, whether any
  writer of this tool has touched the drawers since (a version, not a count: two writes that
  cancel out in number still change it). Writing it before the drawers too means a writer that
  dies half-way still leaves a changed token behind.
- `change:<token>`: one record per token value, written together with the token (one request)
  before and again after each drawer write, listing the drawer ids the write touches. A reader
  that is behind re-reads only those drawers, so catching up costs what changed, not the
  palace's size. `at_us` is the writer's clock; readers look back CHANGE_MARGIN_US before
  their last record to tolerate clocks that disagree by less than that. Records older than
  RETENTION_US are pruned by writers now and then; a reader further behind than that mirrors
  the whole palace again.
- `identity`: the palace's identity text (wake-up's L0), shared by every machine.

Each change record also names its writer (`peer`: user@host), so the machines that wrote to a
team palace in the last RETENTION_US can be listed (`mempalace_mesh_peers`).

Chroma wants a vector with every record; these records carry a constant 1-d one.
"""

from __future__ import annotations

import getpass
import json
import socket
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mempalace_cli.storage import chroma_server
from mempalace_cli.storage.chroma_server import ServerOptions

PALACE_COLLECTION = "mempalace_palace"
TOKEN_ID = "change_token"
IDENTITY_ID = "identity"
_VECTOR = [1.0]
CHANGE_PREFIX = "change:"
CHANGE_MARGIN_US = 10 * 60 * 1_000_000  # clocks of a team's machines agree within 10 minutes
RETENTION_US = 24 * 3600 * 1_000_000
PRUNE_EVERY = 50  # writes between two prunes by one process
ALL = "*"  # in a change record: "every drawer may have changed" (a delete by filter)


def now_us() -> int:
    return time.time_ns() // 1000


def peer_name() -> str:
    """This writer as its teammates see it: user@host."""
    try:
        user = getpass.getuser()
    except Exception:  # no user name in this environment (a container without one)
        user = "unknown"
    return f"{user}@{socket.gethostname() or 'unknown-host'}"


@dataclass(frozen=True)
class Change:
    id: str
    at_us: int
    ids: tuple[str, ...]  # ("*",) when the write was not by id


@dataclass(frozen=True)
class TokenStep:
    """One write as the ledger saw it: the token before we replaced it, whether nobody else
    replaced it while we wrote, the token we left, and the change records we wrote."""

    before: str | None
    undisturbed: bool
    after: str
    changes: tuple[Change, ...]


class ServerLedger:
    def __init__(self, client: Any, opts: ServerOptions) -> None:
        self._client = client
        self._opts = opts
        self._collection: Any = None
        self._begun: tuple[str | None, str, Change] | None = None
        self.steps: list[TokenStep] = []  # drained by the catalogue mirror after each write
        self._writes = 0

    def _col(self, create: bool = True) -> Any | None:
        """The collection; None when it does not exist and `create` is false (reading a
        palace never creates anything on the server)."""
        if self._collection is None:

            def open_it() -> Any | None:
                if create:
                    return self._client.get_or_create_collection(
                        PALACE_COLLECTION, embedding_function=None
                    )
                names = [getattr(c, "name", c) for c in self._client.list_collections()]
                if PALACE_COLLECTION not in names:
                    return None
                return self._client.get_collection(PALACE_COLLECTION, embedding_function=None)

            self._collection = chroma_server.read(self._opts, open_it)
        return self._collection

    def _get(self, record_id: str) -> str | None:
        col = self._col(create=False)
        if col is None:
            return None
        got = chroma_server.read(
            self._opts, lambda: col.get(ids=[record_id], include=["documents"])
        )
        return got["documents"][0] if got["ids"] else None

    def _put(self, record_id: str, text: str) -> None:
        chroma_server.write(
            self._opts,
            lambda: self._col().upsert(
                ids=[record_id],
                embeddings=[_VECTOR],
                documents=[text],
                metadatas=[{"kind": record_id}],
            ),
        )

    # -- the change token and the change log ------------------------------------------------------
    def token(self) -> str | None:
        return self._get(TOKEN_ID)

    def _stamp(self, token: str, ids: Sequence[str]) -> Change:
        """Write the change record of `token` and the token itself, in one request."""
        change = Change(CHANGE_PREFIX + token, now_us(), tuple(ids))
        chroma_server.write(
            self._opts,
            lambda: self._col().upsert(
                ids=[change.id, TOKEN_ID],
                embeddings=[_VECTOR, _VECTOR],
                documents=[json.dumps(list(change.ids)), token],
                metadatas=[
                    {"kind": "change", "at_us": change.at_us, "peer": peer_name()},
                    {"kind": "token"},
                ],
            ),
        )
        return change

    def begin_write(self, ids: Sequence[str] | None) -> None:
        """Before a drawer write: `ids` it touches (None: any drawer may change)."""
        before = self.token()
        mark = uuid.uuid4().hex
        change = self._stamp(mark, list(ids) if ids is not None else [ALL])
        self._begun = (before, mark, change)

    def end_write(self) -> None:
        if self._begun is None:
            return
        before, mark, begun = self._begun
        self._begun = None
        current = self.token()
        after = uuid.uuid4().hex
        done = self._stamp(after, begun.ids)
        self.steps.append(TokenStep(before, current == mark, after, (begun, done)))
        self._writes += 1
        if self._writes % PRUNE_EVERY == 0:
            self.prune()

    def changes_since(self, at_us: int) -> list[Change]:
        col = self._col(create=False)
        if col is None:
            return []
        got = chroma_server.read(
            self._opts,
            lambda: col.get(
                where={"$and": [{"kind": "change"}, {"at_us": {"$gte": at_us}}]},
                include=["documents", "metadatas"],
            ),
        )
        return [
            Change(i, int(m["at_us"]), tuple(json.loads(d or "[]")))
            for i, d, m in zip(got["ids"], got["documents"], got["metadatas"], strict=True)
        ]

    def peers_since(self, at_us: int) -> dict[str, tuple[int, int]]:
        """peer -> (its latest change record's time, how many records) since `at_us`; records
        written before writers named themselves count under "unknown"."""
        col = self._col(create=False)
        if col is None:
            return {}
        got = chroma_server.read(
            self._opts,
            lambda: col.get(
                where={"$and": [{"kind": "change"}, {"at_us": {"$gte": at_us}}]},
                include=["metadatas"],
            ),
        )
        found: dict[str, tuple[int, int]] = {}
        for meta in got["metadatas"]:
            who = str(meta.get("peer") or "unknown")
            last, n = found.get(who, (0, 0))
            found[who] = (max(last, int(meta["at_us"])), n + 1)
        return found

    def prune(self) -> None:
        cutoff = now_us() - RETENTION_US
        col = self._col()
        chroma_server.write(
            self._opts,
            lambda: col.delete(where={"$and": [{"kind": "change"}, {"at_us": {"$lt": cutoff}}]}),
        )

    # -- identity -------------------------------------------------------------------------------
    def identity(self) -> str | None:
        text = self._get(IDENTITY_ID)
        return text if text and text.strip() else None

    def set_identity(self, text: str) -> None:
        self._put(IDENTITY_ID, text)
