"""Where the palace graph's hand-made links live: explicit tunnels between two rooms (or two
drawers) and the hallways a user hid.

- An embedded palace keeps them in `mempalace_links.sqlite3` beside its catalogue (the palace
  folder, or our cache folder for a palace another tool owns: `PalaceCore.index_dir`).
- A team palace on a Chroma server keeps them in a small collection of that server
  (`mempalace_links`), so every machine of the team walks the same tunnels and sees the same
  hallways hidden. Chroma wants a vector with every record; these carry a constant 1-d one.

A tunnel's id is derived from its two ends, whichever way round they are given, so creating the
same tunnel twice (on one machine or two) gives one tunnel whose label the later call sets.
Reading never creates anything: no file, no collection. Callers hold the palace's write lock
around every write. Also here: the catalogue queries that find which rooms mention an entity
and which rooms a source file or a drawer is filed in (hallways, service/tunnels.py).
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from mempalace_cli.common.wordlists import STOPWORDS
from mempalace_cli.storage import chroma_server
from mempalace_cli.storage.catalog import Catalog, fts_terms
from mempalace_cli.storage.chroma_server import ServerOptions
from mempalace_cli.storage.side_collection import SideCollection
from mempalace_cli.storage.sqlite_db import open_palace_db

LINKS_FILE = "mempalace_links.sqlite3"
LINKS_COLLECTION = "mempalace_links"
_VECTOR = [1.0]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS tunnels (
    id TEXT PRIMARY KEY,
    source_wing TEXT NOT NULL,
    source_room TEXT NOT NULL,
    source_drawer_id TEXT,
    target_wing TEXT NOT NULL,
    target_room TEXT NOT NULL,
    target_drawer_id TEXT,
    label TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS hidden_hallways (
    id TEXT PRIMARY KEY,
    wing_a TEXT NOT NULL,
    room_a TEXT NOT NULL,
    wing_b TEXT NOT NULL,
    room_b TEXT NOT NULL,
    hidden_at TEXT NOT NULL
);
"""
_TUNNEL_COLUMNS = (
    "id, source_wing, source_room, source_drawer_id, target_wing, target_room, "
    "target_drawer_id, label, created_at, updated_at"
)


def now_stamp() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass(frozen=True)
class Tunnel:
    id: str
    source_wing: str
    source_room: str
    source_drawer_id: str | None
    target_wing: str
    target_room: str
    target_drawer_id: str | None
    label: str | None
    created_at: str
    updated_at: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def ends(self) -> tuple[tuple[str, str, str | None], tuple[str, str, str | None]]:
        return (
            (self.source_wing, self.source_room, self.source_drawer_id),
            (self.target_wing, self.target_room, self.target_drawer_id),
        )


@dataclass(frozen=True)
class HiddenHallway:
    id: str
    wing_a: str
    room_a: str
    wing_b: str
    room_b: str
    hidden_at: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def tunnel_id(a: tuple[str, str, str | None], b: tuple[str, str, str | None]) -> str:
    """The id of the tunnel between ends `a` and `b` (wing, room, drawer id or None), the same
    whichever end comes first."""
    keys = sorted("\x1f".join((w, r, d or "")) for w, r, d in (a, b))
    return "tunnel_" + hashlib.sha256("\x1e".join(keys).encode("utf-8")).hexdigest()[:16]


def hallway_id(a: tuple[str, str], b: tuple[str, str]) -> str:
    """The id of the hallway between rooms `a` and `b` (wing, room), either way round."""
    keys = sorted("\x1f".join(end) for end in (a, b))
    return "hallway_" + hashlib.sha256("\x1e".join(keys).encode("utf-8")).hexdigest()[:16]


class LinkStore(Protocol):
    def tunnels(self) -> list[Tunnel]: ...

    def get_tunnel(self, tid: str) -> Tunnel | None: ...

    def put_tunnel(self, tunnel: Tunnel) -> None: ...

    def delete_tunnels(self, ids: Sequence[str]) -> int: ...

    def hidden(self) -> dict[str, HiddenHallway]: ...

    def hide(self, hallway: HiddenHallway) -> None: ...

    def unhide(self, hid: str) -> bool: ...

    def close(self) -> None: ...


class SqliteLinks:
    """The links of an embedded palace, in `index_dir / LINKS_FILE`. Each call opens the file
    and closes it again (a few are made per command), so nothing stays open for the palace to
    close."""

    def __init__(self, index_dir: Path) -> None:
        self.path = index_dir / LINKS_FILE

    def _connect(self) -> sqlite3.Connection:
        return open_palace_db(
            self.path,
            _SCHEMA,
            "The palace's tunnel list",
            hint=f"Move it aside (mv {self.path} {self.path}.bad): the palace then has no "
            "explicit tunnels and no hidden hallways, and nothing else is lost.",
        )

    def close(self) -> None:
        pass  # nothing is kept open

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        if not self.path.exists():
            return []  # reading never creates the file
        conn = self._connect()
        try:
            return list(conn.execute(sql, params))
        finally:
            conn.close()

    def _write(self, sql: str, params: Sequence[Any]) -> int:
        conn = self._connect()
        try:
            with conn:
                return conn.execute(sql, params).rowcount
        finally:
            conn.close()

    def tunnels(self) -> list[Tunnel]:
        rows = self._read(f"SELECT {_TUNNEL_COLUMNS} FROM tunnels ORDER BY created_at, id")
        return [Tunnel(*row) for row in rows]

    def get_tunnel(self, tid: str) -> Tunnel | None:
        rows = self._read(f"SELECT {_TUNNEL_COLUMNS} FROM tunnels WHERE id = ?", (tid,))
        return Tunnel(*rows[0]) if rows else None

    def put_tunnel(self, tunnel: Tunnel) -> None:
        marks = ", ".join("?" * 10)
        self._write(
            f"INSERT OR REPLACE INTO tunnels ({_TUNNEL_COLUMNS}) VALUES ({marks})",
            list(asdict(tunnel).values()),
        )

    def delete_tunnels(self, ids: Sequence[str]) -> int:
        if not ids or not self.path.exists():
            return 0
        marks = ", ".join("?" * len(ids))
        return self._write(f"DELETE FROM tunnels WHERE id IN ({marks})", list(ids))

    def hidden(self) -> dict[str, HiddenHallway]:
        rows = self._read(
            "SELECT id, wing_a, room_a, wing_b, room_b, hidden_at FROM hidden_hallways"
        )
        return {row[0]: HiddenHallway(*row) for row in rows}

    def hide(self, hallway: HiddenHallway) -> None:
        self._write(
            "INSERT OR REPLACE INTO hidden_hallways (id, wing_a, room_a, wing_b, room_b, "
            "hidden_at) VALUES (?, ?, ?, ?, ?, ?)",
            list(asdict(hallway).values()),
        )

    def unhide(self, hid: str) -> bool:
        if not self.path.exists():
            return False
        return self._write("DELETE FROM hidden_hallways WHERE id = ?", (hid,)) > 0


class ChromaLinks:
    """The links of a team palace, in a collection of its Chroma server."""

    def __init__(self, client_of: Callable[[], Any], opts: ServerOptions) -> None:
        self._opts = opts
        self._collection = SideCollection(client_of, opts, LINKS_COLLECTION)

    def _col(self, create: bool) -> Any | None:
        return self._collection.open(create)

    def close(self) -> None:
        self._collection.forget()

    def _get(self, **kwargs: Any) -> list[tuple[str, dict[str, Any]]]:
        col = self._col(create=False)
        if col is None:
            return []
        got = chroma_server.read(self._opts, lambda: col.get(include=["metadatas"], **kwargs))
        return list(zip(got["ids"], got["metadatas"], strict=True))

    def _upsert(self, record_id: str, document: str, meta: dict[str, Any]) -> None:
        col = self._col(create=True)
        clean = {k: v for k, v in meta.items() if v is not None}  # Chroma holds no nulls
        chroma_server.write(
            self._opts,
            lambda: col.upsert(
                ids=[record_id], embeddings=[_VECTOR], documents=[document], metadatas=[clean]
            ),
        )

    def _delete(self, record_ids: Sequence[str]) -> None:
        col = self._col(create=False)
        if col is not None and record_ids:
            chroma_server.write(self._opts, lambda: col.delete(ids=list(record_ids)))

    @staticmethod
    def _tunnel(meta: dict[str, Any]) -> Tunnel:
        return Tunnel(
            **{name: meta.get(name) for name in Tunnel.__dataclass_fields__}  # type: ignore[arg-type]
        )

    def tunnels(self) -> list[Tunnel]:
        found = [self._tunnel(m) for _i, m in self._get(where={"kind": "tunnel"})]
        return sorted(found, key=lambda t: (t.created_at, t.id))

    def get_tunnel(self, tid: str) -> Tunnel | None:
        got = self._get(ids=[f"tunnel:{tid}"])
        return self._tunnel(got[0][1]) if got else None

    def put_tunnel(self, tunnel: Tunnel) -> None:
        text = f"{tunnel.source_wing}/{tunnel.source_room} <-> {tunnel.target_wing}/"
        text += tunnel.target_room
        self._upsert(f"tunnel:{tunnel.id}", text, {"kind": "tunnel", **asdict(tunnel)})

    def delete_tunnels(self, ids: Sequence[str]) -> int:
        present = [i for i, _m in self._get(ids=[f"tunnel:{t}" for t in ids])]
        self._delete(present)
        return len(present)

    def hidden(self) -> dict[str, HiddenHallway]:
        found: dict[str, HiddenHallway] = {}
        for _i, m in self._get(where={"kind": "hidden_hallway"}):
            h = HiddenHallway(**{n: m.get(n) for n in HiddenHallway.__dataclass_fields__})
            found[h.id] = h
        return found

    def hide(self, hallway: HiddenHallway) -> None:
        text = f"{hallway.wing_a}/{hallway.room_a} <-> {hallway.wing_b}/{hallway.room_b}"
        self._upsert(f"hidden:{hallway.id}", text, {"kind": "hidden_hallway", **asdict(hallway)})

    def unhide(self, hid: str) -> bool:
        present = [i for i, _m in self._get(ids=[f"hidden:{hid}"])]
        self._delete(present)
        return bool(present)


def open_links(
    index_dir: Path, server: ServerOptions | None, client_of: Callable[[], Any]
) -> LinkStore:
    """The link store of a palace: its Chroma server's (`server`; `client_of` gives the
    store's client, connected on first use) or the SQLite file in `index_dir`."""
    if server is not None:
        return ChromaLinks(client_of, server)
    return SqliteLinks(index_dir)


# -- what the catalogue says about entities and sources -------------------------------------------
Place = tuple[str, str]  # (wing, room)


def mention_terms(name: str) -> list[str] | None:
    """The keyword-index terms a drawer must hold (all of them) to mention entity `name`;
    None for a name made of common words only ('the', 'it'), which would link everything."""
    words = [w.lower() for w in name.split()]
    if not any(w.strip(".,;:!?'\"()") not in STOPWORDS for w in words):
        return None
    terms = fts_terms(name)
    return terms or None


def rooms_mentioning(catalog: Catalog, names: Iterable[str]) -> dict[str, dict[Place, int]]:
    """For each entity name: the rooms whose drawers mention it (every word of it, as the
    keyword index reads words: case, accents and word endings aside), with how many drawers."""
    found: dict[str, dict[Place, int]] = {}
    conn = catalog.conn
    for name in names:
        terms = mention_terms(name)
        if terms is None:
            continue
        rows = conn.execute(
            "SELECT d.wing, d.room, COUNT(*) FROM drawer_fts JOIN drawers d "
            "ON d.rowid = drawer_fts.rowid WHERE drawer_fts MATCH ? GROUP BY d.wing, d.room",
            (" AND ".join(terms),),
        )
        places = {(w, r): n for w, r, n in rows if r}
        if places:
            found[name] = places
    return found


def rooms_of_drawers(catalog: Catalog, ids: Sequence[str]) -> dict[str, Place]:
    """drawer id -> (wing, room), for those of `ids` that are filed."""
    return {i: (row.wing, row.room) for i, row in catalog.get(list(ids)).items()}


def rooms_of_sources(catalog: Catalog, sources: Sequence[str]) -> dict[str, set[Place]]:
    """source file -> the rooms its drawers are filed in."""
    found: dict[str, set[Place]] = {}
    conn = catalog.conn
    for start in range(0, len(sources), 500):
        part = list(sources[start : start + 500])
        marks = ",".join("?" * len(part))
        for src, wing, room in conn.execute(
            f"SELECT DISTINCT source_file, wing, room FROM drawers WHERE source_file IN ({marks})",
            part,
        ):
            found.setdefault(src, set()).add((wing, room))
    return found
