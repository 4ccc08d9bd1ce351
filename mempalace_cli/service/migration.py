"""Moving a palace between its folder and a Chroma server, in either direction.

`migrate_palace(settings, to_url=...)` copies the embedded palace at settings.palace_path to the
server; `from_url=...` copies a server palace into that folder. What moves: every drawer with
its stored vector (never re-embedded), text and metadata (diaries are drawers), every fact of
the knowledge graph with its id, and the identity text. The source is only read.

Resumable: drawers move page by page and a page whose drawers the target already holds
unchanged is skipped, so running the same command again after an interruption (Ctrl-C, kill -9,
a dropped connection) continues where it stopped. Facts keep their ids; ids the target has are
left alone.

Verified at the end, per collection: the number of records, a SHA-256 over the sorted ids, and
a SHA-256 over every record's content (text and metadata for drawers, every field for facts),
read back from the target and compared with the source; every vector is compared too, within
VECTOR_TOLERANCE (Chroma re-normalises cosine vectors, so bits can differ in the last place).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mempalace_cli.common.config import Settings
from mempalace_cli.common.errors import InvalidInputError, MigrationMismatchError, NotFoundError
from mempalace_cli.common.lazy import lazy
from mempalace_cli.memory.kg import KG_FILE, Fact, FactRecord, parse_date
from mempalace_cli.memory.kg_store_chroma import ChromaFactStore
from mempalace_cli.memory.layers import read_identity
from mempalace_cli.service.core import PalaceCore, crashpoint
from mempalace_cli.service.knowledge import Knowledge
from mempalace_cli.service.models import Binding
from mempalace_cli.service.results import DigestSummary, MigrateCheck, MigrateResult
from mempalace_cli.storage.chroma_server import ServerOptions
from mempalace_cli.storage.sqlite_db import connect_read_only
from mempalace_cli.storage.store import DrawerStore

np = lazy("numpy")

DEFAULT_BATCH = 500
Progress = Callable[[str, int, int], None]  # (stage, done, total)


def _noop(stage: str, done: int, total: int) -> None:
    pass


# -- digests ---------------------------------------------------------------------------------
def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


class Digest:
    """Count, id digest and content digest of one collection's records (for drawers the
    content is text and metadata; vectors are compared on their own, see _compare_drawers)."""

    def __init__(self) -> None:
        self.records: dict[str, str] = {}  # id -> content hash

    def add(self, record_id: str, *parts: bytes | str) -> None:
        h = hashlib.sha256()
        for part in parts:
            data = part.encode("utf-8") if isinstance(part, str) else part
            h.update(len(data).to_bytes(8, "big") + data)
        self.records[record_id] = h.hexdigest()

    def summary(self) -> DigestSummary:
        ids = sorted(self.records)
        return {
            "count": len(ids),
            "id_digest": hashlib.sha256("\n".join(ids).encode("utf-8")).hexdigest(),
            "content_digest": hashlib.sha256(
                "\n".join(self.records[i] for i in ids).encode("utf-8")
            ).hexdigest(),
        }


# Chroma keeps cosine-space vectors normalised in its index and may hand back the normalised
# copy: a vector read back can differ from the one written in the last bit of some components
# (measured: up to 7.5e-9). Vectors are therefore compared within this bound, not bit for bit.
VECTOR_TOLERANCE = 1e-6


def _compare_drawers(source: DrawerStore, target: DrawerStore, batch: int) -> dict[str, Any]:
    """Page through the source; read the same ids from the target; digest both sides' ids
    and content (text and metadata) and compare every vector within VECTOR_TOLERANCE."""
    src, dst = Digest(), Digest()
    worst = 0.0
    bad_vectors: list[str] = []
    include = ["documents", "metadatas", "embeddings"]
    for page in source.iter_all(include, page_size=batch):
        got = target.get(page["ids"], include)
        there = {
            i: (d, m, v)
            for i, d, m, v in zip(
                got["ids"], got["documents"], got["metadatas"], got["embeddings"], strict=True
            )
        }
        for i, doc, meta, vec in zip(
            page["ids"], page["documents"], page["metadatas"], page["embeddings"], strict=True
        ):
            src.add(i, doc or "", _canonical(meta or {}))
            if i not in there:
                continue
            tdoc, tmeta, tvec = there[i]
            dst.add(i, tdoc or "", _canonical(tmeta or {}))
            a, b = np.asarray(vec, dtype=np.float64), np.asarray(tvec, dtype=np.float64)
            gap = float(np.max(np.abs(a - b))) if a.shape == b.shape else float("inf")
            worst = max(worst, gap)
            if gap > VECTOR_TOLERANCE:
                bad_vectors.append(i)
    return {"source": src, "target": dst, "max_vector_gap": worst, "bad_vectors": bad_vectors}


def _fact_digest(records: list[FactRecord], only: set[str] | None = None) -> Digest:
    digest = Digest()
    for rec in records:
        f = rec.fact
        if only is not None and f.id not in only:
            continue
        fields = [f.subject, f.predicate, f.object, f.valid_from, f.valid_to, f.confidence]
        fields += [f.source_drawer_id, f.source_file, f.recorded_at]
        digest.add(f.id, _canonical(fields))
    return digest


# -- reading a knowledge graph file without touching it -------------------------------------
def _open_kg(path: Path) -> sqlite3.Connection:
    """The knowledge graph file, read-only (never created or changed), checked to be one: a
    file without a facts table is an error naming it, never "0 facts"."""
    try:
        conn = connect_read_only(path)
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    except sqlite3.DatabaseError as exc:
        raise InvalidInputError(
            f"The knowledge graph file {path} can't be read: {exc}. Nothing was copied.",
            hint="Pass the right file with --kg, or restore it from a backup.",
        ) from exc
    if "triples" not in tables:
        conn.close()
        raise InvalidInputError(
            f"The knowledge graph file {path} has no facts table (triples): it is not a "
            "knowledge graph. Nothing was copied.",
            hint="Pass MemPalace's or this palace's knowledge_graph.sqlite3 with --kg.",
        )
    return conn


def count_sqlite_facts(path: Path) -> int:
    """How many facts the knowledge graph file holds, counted by SQLite: migrate's check that
    every fact was read (0 when there is no file)."""
    if not path.is_file():
        return 0
    conn = _open_kg(path)
    try:
        return int(conn.execute("SELECT count(*) FROM triples").fetchone()[0])
    finally:
        conn.close()


def read_sqlite_facts(path: Path) -> list[FactRecord]:
    """Every fact of a SQLite knowledge graph, ours or MemPalace 3.x's (which names the source
    column `source_closet` and the learning time `extracted_at`), opened read-only."""
    conn = _open_kg(path)
    try:
        tcols = {r[1] for r in conn.execute("PRAGMA table_info(triples)")}
        src = "source_drawer_id" if "source_drawer_id" in tcols else "source_closet"
        rec = "recorded_at" if "recorded_at" in tcols else "extracted_at"
        pick = [
            c if c in tcols else f"NULL AS {c}"
            for c in ("valid_from", "valid_to", "confidence", src, "source_file", rec)
        ]
        rows = conn.execute(
            "SELECT t.id, t.subject, t.predicate, t.object, "
            + ", ".join(f"t.{c}" if not c.startswith("NULL") else c for c in pick)
            + ", s.name, o.name, s.type, o.type FROM triples t "
            "LEFT JOIN entities s ON s.id = t.subject LEFT JOIN entities o ON o.id = t.object "
            "ORDER BY t.id"
        ).fetchall()
    finally:
        conn.close()
    out = []
    for row in rows:
        tid, sid, pred, oid, vfrom, vto, conf, source, sfile, learned = row[:10]
        sname, oname, stype, otype = row[10:]
        try:
            start, end = parse_date(vfrom, "valid_from"), parse_date(vto, "valid_to")
        except InvalidInputError:
            start, end = None, None  # a date we can't read: keep the fact, undated
        fact = Fact(
            id=str(tid),
            subject_id=str(sid),
            predicate=str(pred),
            object_id=str(oid),
            valid_from=start,
            valid_to=end,
            confidence=float(conf if conf is not None else 1.0),
            source_drawer_id=source,
            source_file=sfile,
            recorded_at=str(learned or ""),
            subject=str(sname or sid),
            object=str(oname or oid),
        )
        unknown = ("unknown", "")
        out.append(
            FactRecord(
                fact, None if stype in unknown else stype, None if otype in unknown else otype
            )
        )
    return out


# -- the two ends ----------------------------------------------------------------------------
@dataclasses.dataclass
class _End:
    label: str
    store: DrawerStore
    read_facts: Callable[[], list[FactRecord]]
    count_facts: Callable[[], int]  # counted by the store itself, not by reading every fact
    import_facts: Callable[[list[FactRecord]], int]
    read_identity: Callable[[], str | None]
    write_identity: Callable[[str], None]
    has_drawers: Callable[[], bool]  # without creating anything when there are none


def migrate_palace(
    settings: Settings,
    to_url: str | None = None,
    from_url: str | None = None,
    batch: int = DEFAULT_BATCH,
    kg_file: Path | None = None,
    progress: Progress = _noop,
) -> MigrateResult:
    """Copy the palace between settings.palace_path and a Chroma server, then verify."""
    if (to_url is None) == (from_url is None):
        raise InvalidInputError(
            "Say which way to migrate: --to URL (this palace to a server) or --from URL "
            "(a server palace into this folder).",
        )
    if not isinstance(batch, int) or not 1 <= batch <= 5000:
        raise InvalidInputError(f"batch must be 1 to 5000, not {batch!r}.")
    url = (to_url or from_url or "").rstrip("/")
    server_settings = dataclasses.replace(settings, chroma_url=url)
    local_settings = dataclasses.replace(settings, chroma_url=None)
    opts = ServerOptions.from_settings(server_settings)
    assert opts is not None
    local = PalaceCore(local_settings)
    remote = PalaceCore(server_settings)
    local_facts = Knowledge(local)
    try:
        _adopt_source_model(*((local, remote) if to_url else (remote, local)))
        local_end = _local_end(local, local_facts, kg_file)
        remote_end = _server_end(remote, opts)
        source, target = (local_end, remote_end) if to_url else (remote_end, local_end)
        if to_url:
            return _copy(source, target, batch, progress, into_local=None)
        return _copy(source, target, batch, progress, into_local=local)
    finally:
        local_facts.close()
        local.close()
        remote.close()


def _adopt_source_model(source: PalaceCore, target: PalaceCore) -> None:
    """A target with nothing filed yet takes the source's model and collection: the copied
    vectors are the source's, so its own default model (perhaps another size) would refuse
    them, and search there would embed queries with the wrong model."""
    here = target.binding()
    if here.origin != "new":
        return  # it already holds drawers of a model; the store refuses a mismatch
    there = source.binding()
    target.adopt_binding(Binding(there.model, there.collection, "new", here.generation))


def _local_end(palace: PalaceCore, knowledge: Knowledge, kg_file: Path | None) -> _End:
    kg_path = kg_file or palace.path / KG_FILE
    if kg_file is not None and not kg_file.is_file():
        raise NotFoundError(f"No knowledge graph file at {kg_file}.")
    identity_path = palace.settings.identity_path

    def facts() -> list[FactRecord]:
        return read_sqlite_facts(kg_path) if kg_path.is_file() else []

    def write_identity(text: str) -> None:
        if read_identity(identity_path) is None:
            identity_path.parent.mkdir(parents=True, exist_ok=True)
            identity_path.write_text(text, encoding="utf-8")

    def import_facts(records: list[FactRecord]) -> int:
        with palace.lock.hold():
            return knowledge.kg.import_facts(records)

    def identity() -> str | None:
        # The file as written (read_identity checks it is readable and not blank).
        if read_identity(identity_path) is None:
            return None
        return identity_path.read_text(encoding="utf-8")

    return _End(
        label=str(palace.path),
        store=palace.store,
        read_facts=facts,
        count_facts=lambda: count_sqlite_facts(kg_path),
        import_facts=import_facts,
        read_identity=identity,
        write_identity=write_identity,
        # Opening an embedded store that isn't there would create one in the source folder.
        has_drawers=lambda: palace.backend.store_exists() and palace.store.collection() is not None,
    )


def _server_end(palace: PalaceCore, opts: ServerOptions) -> _End:
    store, backend = palace.store, palace.backend
    kg = ChromaFactStore(lambda: store.client, opts)

    def write_identity(text: str) -> None:
        if backend.shared_identity() is None:
            backend.keep_identity(text)

    return _End(
        label=opts.where,
        store=store,
        read_facts=lambda: list(kg.export_facts()) if kg.exists() else [],
        count_facts=lambda: int(kg.stats()["triples"]) if kg.exists() else 0,
        import_facts=kg.import_facts,
        read_identity=backend.shared_identity,
        write_identity=write_identity,
        has_drawers=lambda: store.collection() is not None,
    )


def _copy(
    source: _End, target: _End, batch: int, progress: Progress, into_local: PalaceCore | None
) -> MigrateResult:
    has_drawers = source.has_drawers()
    facts = source.read_facts()
    if not has_drawers and not facts:
        raise NotFoundError(
            f"There is no palace to migrate at {source.label}: no drawers and no facts.",
            hint="Check --palace (or chroma_url and chroma_database for --from).",
        )
    total = source.store.count() if has_drawers else 0
    copied = skipped = 0
    with contextlib.ExitStack() as stack:
        if into_local is not None:
            into_local.create()
            stack.enter_context(into_local.lock.hold())
            # The folder's catalogue is rebuilt from its drawer store at the end; marking it
            # now means that after an interruption every reader rebuilds it too.
            into_local.consistency.begin_write()
        include = ["documents", "metadatas", "embeddings"]
        pages = source.store.iter_all(include, page_size=batch) if has_drawers else iter(())
        for page in pages:
            have = target.store.get(page["ids"], include=["documents", "metadatas"])
            held = {
                i: (d or "", m or {})
                for i, d, m in zip(have["ids"], have["documents"], have["metadatas"], strict=True)
            }
            todo = [
                n
                for n, i in enumerate(page["ids"])
                if held.get(i) != (page["documents"][n] or "", page["metadatas"][n] or {})
            ]
            if todo:
                # As float32, so their text form is the float32's own: parsed back on the
                # other side, every vector is bit for bit the source's.
                vectors = np.asarray([page["embeddings"][n] for n in todo], dtype=np.float32)
                target.store.upsert(
                    [page["ids"][n] for n in todo],
                    vectors,
                    [page["documents"][n] or "" for n in todo],
                    [page["metadatas"][n] or {} for n in todo],
                )
            copied += len(todo)
            skipped += len(page["ids"]) - len(todo)
            progress("drawers", copied + skipped, total)
            crashpoint("migrate_page")
        added_facts = target.import_facts(facts) if facts else 0
        progress("facts", len(facts), len(facts))
        identity = source.read_identity()
        if identity is not None:
            target.write_identity(identity)
        if into_local is not None:
            into_local.consistency.reconcile("migrated")
            into_local.keep_vector_index()  # searches read it as it is: bring it along
    verify = _verify(source, target, facts, batch, has_drawers)
    return {
        "from": source.label,
        "to": target.label,
        "drawers": {"total": total, "copied": copied, "already_there": skipped},
        "facts": {"total": len(facts), "copied": added_facts},
        "identity": identity is not None,
        "verified": verify,
    }


def _verify(
    source: _End, target: _End, facts: list[FactRecord], batch: int, has_drawers: bool
) -> MigrateCheck:
    if has_drawers:
        drawers = _compare_drawers(source.store, target.store, batch)
    else:
        drawers = {"source": Digest(), "target": Digest(), "max_vector_gap": 0.0, "bad_vectors": []}
    src_facts = _fact_digest(facts)
    dst_facts = _fact_digest(target.read_facts(), set(src_facts.records))
    pairs = {"drawers": (drawers["source"], drawers["target"]), "facts": (src_facts, dst_facts)}
    report: dict[str, Any] = {
        name: {"source": a.summary(), "target": b.summary()} for name, (a, b) in pairs.items()
    }
    report["drawers"]["max_vector_gap"] = drawers["max_vector_gap"]
    # Facts counted at both ends by the stores themselves: a source read as "no facts" (a
    # file that could not be found or read as it is) fails here instead of passing as 0 = 0.
    counted = {"source": source.count_facts(), "target": target.count_facts()}
    report["facts"]["counted"] = counted
    if counted["source"] != len(facts) or counted["target"] < len(facts):
        raise MigrationMismatchError(
            f"The knowledge graph at {source.label} holds {counted['source']} facts; "
            f"{len(facts)} were read and {target.label} holds {counted['target']}. "
            "The source is untouched.",
            hint="Run the same migrate command again; if it keeps failing, another writer "
            "is changing the knowledge graph while you migrate.",
        )
    for name, (a, b) in pairs.items():
        differ = sorted(i for i, h in a.records.items() if b.records.get(i) != h)
        if name == "drawers":
            differ = sorted(set(differ) | set(drawers["bad_vectors"]))
        if differ:
            raise MigrationMismatchError(
                f"The {name} at {target.label} do not match {source.label} after the copy: "
                f"{len(differ)} of {len(a.records)} differ or are missing "
                f"(first: {', '.join(differ[:3])}). The source is untouched.",
                hint="Run the same migrate command again; if it keeps failing, another writer "
                "is changing the target while you migrate.",
            )
    return report
