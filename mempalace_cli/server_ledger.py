"""The palace's own records on a Chroma server, in a small collection beside the drawers.

- `change_token`: a random value every writer replaces before and after each drawer write.
  A reader that remembers the token it last mirrored knows, with one get by id, whether any
  writer of this tool has touched the drawers since (a version, not a count: two writes that
  cancel out in number still change it). Writing it before the drawers too means a writer that
  dies half-way still leaves a changed token behind.
- `identity`: the palace's identity text (wake-up's L0), shared by every machine.

Chroma wants a vector with every record; these records carry a constant 1-d one.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from mempalace_cli import chroma_server
from mempalace_cli.chroma_server import ServerOptions

PALACE_COLLECTION = "mempalace_palace"
TOKEN_ID = "change_token"
IDENTITY_ID = "identity"
_VECTOR = [1.0]


@dataclass(frozen=True)
class TokenStep:
    """One write as the ledger saw it: the token before we replaced it, whether nobody else
    replaced it while we wrote, and the token we left."""

    before: str | None
    undisturbed: bool
    after: str


class ServerLedger:
    def __init__(self, client: Any, opts: ServerOptions) -> None:
        self._client = client
        self._opts = opts
        self._collection: Any = None
        self._begun: tuple[str | None, str] | None = None
        self.steps: list[TokenStep] = []  # drained by the catalogue mirror after each write

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
            lambda: self._col().upsert(ids=[record_id], embeddings=[_VECTOR], documents=[text]),
        )

    # -- the change token ---------------------------------------------------------------------
    def token(self) -> str | None:
        return self._get(TOKEN_ID)

    def begin_write(self) -> None:
        before = self.token()
        mark = uuid.uuid4().hex
        self._put(TOKEN_ID, mark)
        self._begun = (before, mark)

    def end_write(self) -> None:
        if self._begun is None:
            return
        before, mark = self._begun
        self._begun = None
        current = self.token()
        after = uuid.uuid4().hex
        self._put(TOKEN_ID, after)
        self.steps.append(TokenStep(before, current == mark, after))

    # -- identity -------------------------------------------------------------------------------
    def identity(self) -> str | None:
        text = self._get(IDENTITY_ID)
        return text if text and text.strip() else None

    def set_identity(self, text: str) -> None:
        self._put(IDENTITY_ID, text)
