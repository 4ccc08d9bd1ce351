"""A collection of a team palace's Chroma server beside the drawers' (the knowledge graph's, the
coordination log's, the explicit tunnels'), opened on its first use.

Reading never creates it: a palace that never wrote there has none, and a read finds nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mempalace_cli.storage import chroma_server
from mempalace_cli.storage.chroma_server import ServerOptions


class SideCollection:
    """One named collection, opened once (by a read that finds it or the first write) and
    kept until `forget`."""

    def __init__(self, client_of: Callable[[], Any], opts: ServerOptions, name: str) -> None:
        self._client_of = client_of  # a callable: the (lazily connected) chromadb client
        self._opts = opts
        self.name = name
        self._collection: Any = None

    def open(self, create: bool) -> Any | None:
        """The collection; None when it does not exist and `create` is false."""
        if self._collection is None:
            client = self._client_of()

            def open_it() -> Any | None:
                if create:
                    return client.get_or_create_collection(self.name, embedding_function=None)
                names = [getattr(c, "name", c) for c in client.list_collections()]
                if self.name not in names:
                    return None
                return client.get_collection(self.name, embedding_function=None)

            self._collection = chroma_server.read(self._opts, open_it)
        return self._collection

    def forget(self) -> None:
        """Open it again on next use (after the palace closed, or its collection was dropped)."""
        self._collection = None
