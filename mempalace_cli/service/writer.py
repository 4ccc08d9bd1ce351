"""The two write primitives every drawer write goes through: `file` (store drawers in Chroma,
then the catalogue, with their mining manifest) and `remove`, so the lexical index and the
manifest can never fall out of step with the drawer store. A part the `Palace` facade owns;
every other part that writes drawers (mining, conversations, curation, the diary, drawers
filed by hand) is given this one. Callers hold the palace lock around read-then-write; both
take it again (it is re-entrant)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from mempalace_cli.common.errors import IncompatiblePalaceError
from mempalace_cli.miners.secrets import redact
from mempalace_cli.service.core import Part, crashpoint
from mempalace_cli.service.models import dimension_of
from mempalace_cli.storage.catalog import DrawerRow, FileRecord
from mempalace_cli.storage.consistency import meta_from, now_iso
from mempalace_cli.storage.drawer_rules import prepare_rows
from mempalace_cli.storage.passage_vectors import embed_passages


class DrawerWriter(Part):
    """Files and removes drawers for every part (see the module docstring)."""

    def file(
        self,
        rows: Sequence[DrawerRow],
        embeddings: Any,
        replace_ids: Sequence[str] = (),
        files: Sequence[FileRecord] = (),
        forget_files: Sequence[str] = (),
        keep_secrets: bool = False,
    ) -> None:
        """Store drawers in Chroma, then the catalogue; `replace_ids` are removed first, and
        `files` (the mining manifest; `forget_files` leave it) commit in the same catalogue
        transaction as their drawers.

        Chroma is written first, under a write-in-progress mark: a crash in between leaves the
        mark and an old manifest, so the next reader rebuilds the catalogue from Chroma and the
        next mine redoes the files; never a catalogue row or a manifest entry without drawers.
        Every row is checked before the mark is set: a value Chroma would refuse is an
        InvalidInputError with nothing written, never a half-done write.

        Secrets never enter the palace through a drawer's other fields either: every text
        value of its metadata (topic, speakers, added_by...) and its source are redacted here
        (the text was redacted before it was embedded), unless the mining run was started
        with --keep-secrets.
        """
        rows = prepare_rows(rows)
        if not keep_secrets:
            rows = _redact_fields(rows)
        new_ids = {r.id for r in rows}
        stale = [i for i in dict.fromkeys(replace_ids) if i not in new_ids]
        # A long drawer's passages get vectors of their own (catalogue only, never drawers).
        passages = embed_passages([(r.id, r.text) for r in rows], self.embedder.embed)
        with self.lock.hold():  # re-entrant: callers already hold it around read-then-write
            self._file_drawers_locked(rows, embeddings, stale, files, forget_files, passages)

    def _file_drawers_locked(
        self,
        rows: Sequence[DrawerRow],
        embeddings: Any,
        stale: list[str],
        files: Sequence[FileRecord],
        forget_files: Sequence[str],
        passages: dict[str, Any] | None = None,
    ) -> None:
        self._check_vector_size(embeddings, len(rows))
        self.consistency.begin_write()
        crashpoint("before_store_write")
        # A store may want a rewritten drawer filed as delete + add (backend.py).
        stale = stale + self.backend.ids_to_refile(self.catalog, [r.id for r in rows])
        self.store.delete(stale)
        if rows:
            self.store.upsert(
                [r.id for r in rows],
                embeddings,
                [r.text for r in rows],
                [meta_from(r) for r in rows],
            )
        crashpoint("after_store_write")
        with self.catalog.transaction() as conn:
            self.core.record_binding(conn)
            self.catalog.delete_drawers(conn, stale)
            self.catalog.upsert_drawers(conn, rows, embeddings, passages)
            stamp = now_iso()
            for source_file in forget_files:
                self.catalog.delete_file(conn, source_file)
            for rec in files:
                self.catalog.put_file(conn, rec, stamp)
            self.consistency.end_write(conn, [*stale, *(r.id for r in rows)])
            self.catalog.bump_generation(conn)
        self.core.wrote()
        crashpoint("after_catalog_write")

    def _check_vector_size(self, embeddings: Any, n: int) -> None:
        """Refuse vectors of another model (embedded before a `reembed` elsewhere switched the
        palace while this process was working): they would corrupt the ranking silently."""
        expected = dimension_of(self.binding().model)
        got = len(embeddings[0]) if n else 0
        if n and expected and got != expected:
            raise IncompatiblePalaceError(
                f"The palace now embeds with {self.binding().model} ({expected}-d), but these "
                f"drawers were embedded with {got}-d vectors (the model changed while this "
                "command ran). Nothing was filed.",
                hint="Run the command again.",
            )

    def remove(self, ids: Sequence[str], forget_files: Sequence[str] = ()) -> None:
        with self.lock.hold():
            self.consistency.begin_write()
            self.store.delete(list(ids))
            crashpoint("after_store_delete")
            with self.catalog.transaction() as conn:
                self.catalog.delete_drawers(conn, list(ids))
                for source_file in forget_files:
                    self.catalog.delete_file(conn, source_file)
                self.consistency.end_write(conn, ids)
                self.catalog.bump_generation(conn)
            self.core.wrote()


def _redact_fields(rows: Sequence[DrawerRow]) -> list[DrawerRow]:
    """`rows` with each secret value in their metadata text and source replaced by
    `[REDACTED:kind]` (miners/secrets.py; its prefilter makes a value with no trigger literal
    cost one regex pass). The secret rules load with the first write, not with the part
    (`status` builds this part too)."""

    def clean(value: Any) -> Any:
        return redact(value).text if isinstance(value, str) and value else value

    out: list[DrawerRow] = []
    for row in rows:
        metadata = {k: clean(v) for k, v in row.metadata.items()}
        source_file = clean(row.source_file)
        if metadata != row.metadata or source_file != row.source_file:
            row = replace(row, metadata=metadata, source_file=source_file)
        out.append(row)
    return out
