"""How well organised a palace is: a score from 0 to 100, and what to fix, each with the
command that fixes it (`mempalace audit`).

Six checks, each scored 0-1 and weighted; the score is their weighted mean over the checks
that apply (a palace with no facts is not scored on facts):

| check | weight | what lowers it |
|---|---|---|
| rooms | 30 | wings whose drawers nearly all sit in `general`; rooms holding one drawer |
| sources | 25 | drawers whose source file is gone (its folder was moved or the file deleted) |
| duplicates | 20 | drawers that say the same words as another; near-copies in one wing |
| naming | 10 | one wing or room spelled two ways (`acme-app` and `acme_app`) |
| knowledge_graph | 10 | facts whose predicate no other fact uses (no query finds them) |
| diary | 5 | diary entries kept in the agent's own wing, apart from the project they are about |

Read-only: it reads the catalogue (no model; Chroma only when the catalogue must first be
mirrored, as `status` does) and the mining manifest, and writes nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mempalace_cli.common.errors import MemPalaceError
from mempalace_cli.common.lazy import lazy
from mempalace_cli.common.naming import GENERAL
from mempalace_cli.miners.paths import on_disk
from mempalace_cli.search.sameness import words
from mempalace_cli.service.core import PalaceCore, Part
from mempalace_cli.service.results import AuditFinding, AuditResult
from mempalace_cli.storage.catalog import Catalog, FileRecord

if TYPE_CHECKING:
    from mempalace_cli.service.knowledge import Knowledge

np = lazy("numpy")

WEIGHTS = {
    "rooms": 30,
    "sources": 25,
    "duplicates": 20,
    "naming": 10,
    "knowledge_graph": 10,
    "diary": 5,
}
DIARY_ROOM = "diary"
FLAT_SHARE = 0.8  # a wing with this share of its drawers in `general` is flat
FLAT_MIN_DRAWERS = 10  # smaller wings are not judged flat
NEAR_COPY = 0.97  # cosine similarity of two drawers with other words that are near-copies
NEAR_COPY_MAX_WING = 5_000  # wings bigger than this are checked for exact copies only
NEAR_COPY_BLOCK = 512
KG_MIN_FACTS = 5
EXAMPLES = 5
_SPELLING = re.compile(r"[^0-9a-z\u00c0-\uffff]+")


@dataclass
class Finding:
    check: str
    text: str
    fix: str
    count: int
    examples: list[str] = field(default_factory=list)

    def to_dict(self) -> AuditFinding:
        return {
            "check": self.check,
            "text": self.text,
            "fix": self.fix,
            "count": self.count,
            "examples": self.examples,
        }


@dataclass
class Check:
    name: str
    score: float  # 0..1
    summary: str
    findings: list[Finding] = field(default_factory=list)


def _q(value: str) -> str:
    """A value as it goes on a command line."""
    return shlex.quote(value)


def _spelling_key(name: str) -> str:
    key = _SPELLING.sub("", name.lower())
    return key[:-1] if len(key) > 4 and key.endswith("s") else key


class Organisation(Part):
    """The palace's organisation, measured (see the module docstring); its facts are read
    through the `Knowledge` part it is given."""

    def __init__(self, core: PalaceCore, knowledge: Knowledge) -> None:
        super().__init__(core)
        self.knowledge = knowledge

    def _catalog(self) -> Catalog:
        if self.backend.sync_before_reading(self.catalog):
            self.require()
            self.sync()
        return self.catalog

    def audit(self) -> AuditResult:
        """{palace, drawers, wings, rooms, score (0-100, None for an empty palace), checks:
        [{check, score, weight, summary}], findings: [{check, text, fix, count, examples}],
        worst first}."""
        catalog = self._catalog()
        counts = catalog.counts_by_wing_room()
        total = sum(n for _w, _r, n in counts)
        wings = sorted({w for w, _r, _n in counts})
        base = {
            "palace": str(self.path),
            "drawers": total,
            "wings": len(wings),
            "rooms": len({(w, r) for w, r, _n in counts}),
        }
        if not total:
            finding = Finding(
                "rooms",
                "The palace holds no drawers yet: there is nothing to organise.",
                "mempalace mine DIR",
                0,
            )
            return {**base, "score": None, "checks": [], "findings": [finding.to_dict()]}
        files = self._files(catalog)
        checks = [
            self._rooms(counts, files),
            self._sources(catalog, files),
            self._duplicates(catalog, wings, counts),
            self._naming(counts, files),
        ]
        facts = self._facts()
        if facts is not None:
            checks.append(facts)
        diary = self._diary(catalog, counts)
        if diary is not None:
            checks.append(diary)
        checks = [c for c in checks if c is not None]
        weight = sum(WEIGHTS[c.name] for c in checks)
        score = round(100 * sum(WEIGHTS[c.name] * c.score for c in checks) / weight)
        lost = {c.name: WEIGHTS[c.name] * (1 - c.score) for c in checks}
        findings = sorted(
            (f for c in checks for f in c.findings),
            key=lambda f: (-lost[f.check], -f.count, f.text),
        )
        return {
            **base,
            "score": score,
            "checks": [
                {
                    "check": c.name,
                    "score": round(100 * c.score),
                    "weight": WEIGHTS[c.name],
                    "summary": c.summary,
                }
                for c in sorted(checks, key=lambda c: (c.score, c.name))
            ],
            "findings": [f.to_dict() for f in findings],
        }

    # -- what each wing was filed from ------------------------------------------------------
    @staticmethod
    def _files(catalog: Catalog) -> list[FileRecord]:
        rows = catalog.conn.execute(
            "SELECT source_file, source_root, wing, content_hash, size, mtime, drawer_ids, "
            "ingest_mode FROM files"
        )
        return [
            FileRecord(s, root, w, h, size, mtime, json.loads(ids), mode)
            for s, root, w, h, size, mtime, ids, mode in rows
        ]

    @staticmethod
    def _roots(files: list[FileRecord], wing: str) -> list[tuple[str, str]]:
        """(folder, mode) pairs the wing's drawers were mined from, most drawers first."""
        sizes: Counter[tuple[str, str]] = Counter()
        for rec in files:
            if rec.wing == wing:
                sizes[(rec.source_root, rec.ingest_mode)] += len(rec.drawer_ids)
        return [key for key, _n in sizes.most_common()]

    # -- rooms --------------------------------------------------------------------------------
    def _rooms(self, counts: list[tuple[str, str, int]], files: list[FileRecord]) -> Check:
        by_wing: dict[str, dict[str, int]] = defaultdict(dict)
        for wing, room, n in counts:
            by_wing[wing][room] = n
        findings: list[Finding] = []
        flat_drawers = considered = 0
        singles: list[tuple[str, str]] = []
        room_total = 0
        for wing, rooms in sorted(by_wing.items()):
            if set(rooms) == {DIARY_ROOM}:
                continue  # an agent's diary wing
            size = sum(rooms.values())
            considered += size
            room_total += len(rooms)
            general = rooms.get(GENERAL, 0)
            if size >= FLAT_MIN_DRAWERS and general >= FLAT_SHARE * size:
                flat_drawers += size
                findings.append(self._flat(wing, size, general, files))
            if len(rooms) > 1:
                singles += [
                    (wing, r) for r, n in sorted(rooms.items()) if n == 1 and r != DIARY_ROOM
                ]
        if singles:
            examples = [f"{w} / {r}" for w, r in singles[:EXAMPLES]]
            wing0, room0 = singles[0]
            roots = self._roots(files, wing0)
            fix = f"mempalace drawers --wing {_q(wing0)} --room {_q(room0)}"
            text = (
                f"{len(singles)} room{'s hold' if len(singles) != 1 else ' holds'} a single "
                "drawer: a room of one drawer is a folder or topic too small to be worth walking "
                "into."
            )
            if roots and roots[0][1] == "projects":
                text += (
                    f" Merge small folders, or give the rooms of {roots[0][0]}/mempalace.toml "
                    f"broader keywords, then run mempalace mine {_q(roots[0][0])} again."
                )
            findings.append(Finding("rooms", text, fix, len(singles), examples))
        flat_share = flat_drawers / considered if considered else 0.0
        single_share = len(singles) / room_total if room_total else 0.0
        score = max(0.0, 1 - 0.7 * flat_share - 0.3 * single_share)
        summary = (
            f"{round(100 * flat_share)}% of the drawers sit in wings with nearly everything in "
            f"'{GENERAL}'; {len(singles)} of {room_total} rooms hold one drawer"
        )
        return Check("rooms", score, summary, findings)

    def _flat(self, wing: str, size: int, general: int, files: list[FileRecord]) -> Finding:
        share = round(100 * general / size)
        text = f"Wing {wing}: {share}% of its {size} drawers sit in '{GENERAL}', so walking "
        text += "its rooms finds nothing and wake-up sees one undivided heap."
        roots = self._roots(files, wing)
        if roots and roots[0][1] == "projects":
            root = roots[0][0]
            folder = on_disk(root)
            has_rooms = (folder / "mempalace.toml").exists()
            try:
                nested = any(e.is_dir() and not e.name.startswith(".") for e in folder.iterdir())
            except OSError:
                nested = False
            if nested:
                text += (
                    f" Rooms come from {root}'s sub-folders: detect them again, then mine it again."
                )
            else:
                text += (
                    f" Its files sit at the top of {root}, so no folder names a room: list "
                    "rooms with keywords in its mempalace.toml (mempalace init writes one to "
                    "edit), or sort the files into sub-folders, then mine it again."
                )
            fix = f"mempalace init {_q(root)}{' --yes' if has_rooms and nested else ''} && "
            fix += f"mempalace mine {_q(root)}"
        elif roots and roots[0][1] == "convos":
            text += (
                " Chat rooms come from the words of each exchange (decisions, problems, "
                "planning...); review what landed in general."
            )
            fix = f"mempalace drawers --wing {_q(wing)} --room {GENERAL}"
        else:
            text += " Its drawers were filed one by one: move them into rooms as you review."
            fix = f"mempalace drawers --wing {_q(wing)} --room {GENERAL}"
        return Finding("rooms", text, fix, general, [wing])

    # -- sources ------------------------------------------------------------------------------
    def _sources(self, catalog: Catalog, files: list[FileRecord]) -> Check | None:
        if not self.backend.sources_on_this_machine:
            return None  # a team palace's files live on each member's machine
        gone: dict[tuple[str, str], list[FileRecord]] = defaultdict(list)
        with_source = 0
        for rec in files:
            with_source += len(rec.drawer_ids)
            if not os.path.lexists(on_disk(rec.source_file)):
                gone[(rec.source_root, rec.ingest_mode)].append(rec)
        if not with_source:
            return None
        findings: list[Finding] = []
        lost_drawers = 0
        for (root, mode), recs in sorted(gone.items(), key=lambda kv: -len(kv[1])):
            drawers = len({i for r in recs for i in r.drawer_ids})
            lost_drawers += drawers
            n = len(recs)
            head = f"{drawers} drawer{'s' if drawers != 1 else ''} come from {n} "
            head += f"file{'s' if n != 1 else ''} no longer in {root}"
            if os.path.isdir(on_disk(root)):
                convos = " --mode convos" if mode == "convos" else ""
                text = head + ": mining the folder again removes them."
                fix = f"mempalace mine {_q(root)}{convos}"
            else:
                text = head + " (the folder itself is gone): forget them, or mine the folder "
                text += "where it lives now."
                fix = f"mempalace forget --source {_q(root)}"
            examples = [r.source_file for r in recs[:EXAMPLES]]
            findings.append(Finding("sources", text, fix, drawers, examples))
        share = lost_drawers / with_source
        summary = f"{lost_drawers} of {with_source} mined drawers come from files that are gone"
        return Check("sources", max(0.0, 1 - share), summary, findings)

    # -- duplicates ---------------------------------------------------------------------------
    def _duplicates(
        self, catalog: Catalog, wings: list[str], counts: list[tuple[str, str, int]]
    ) -> Check:
        groups: dict[bytes, list[tuple[str, str, str]]] = defaultdict(list)
        total = 0
        for row in catalog.iter_drawers():
            total += 1
            said = "\x00".join(words(row.text))
            if not said:
                continue
            digest = hashlib.blake2b(said.encode("utf-8", "replace"), digest_size=16).digest()
            groups[digest].append((row.filed_at, row.id, row.wing))
        copies = [sorted(g) for g in groups.values() if len(g) > 1]
        extra = sum(len(g) - 1 for g in copies)
        findings: list[Finding] = []
        if copies:
            copies.sort(key=lambda g: (-len(g), g[0][1]))
            forget = [i for g in copies[:EXAMPLES] for _at, i, _w in g[1:]]
            text = (
                f"{extra} drawer{'s' if extra != 1 else ''} say the same words as an older one "
                f"({len(copies)} group{'s' if len(copies) != 1 else ''}): each copy is one more "
                "result that pushes another out of a search. Keep the oldest of each group."
            )
            fix = "mempalace forget " + " ".join(f"--drawer {i}" for i in forget)
            examples = [" = ".join(i for _at, i, _w in g[:3]) for g in copies[:EXAMPLES]]
            findings.append(Finding("duplicates", text, fix, extra, examples))
        sizes = Counter()
        for wing, _room, n in counts:
            sizes[wing] += n
        near = self._near_copies(catalog, [w for w in wings if sizes[w] <= NEAR_COPY_MAX_WING])
        if near:
            text = (
                f"{len(near)} pair{'s' if len(near) != 1 else ''} of drawers in one wing are "
                "near-copies with different words (an edited copy, or an older version of the "
                "same fact): read both and forget the stale one."
            )
            a, b = near[0]
            fix = f"mempalace show {a} && mempalace show {b}"
            examples = [f"{x} ~ {y}" for x, y in near[:EXAMPLES]]
            findings.append(Finding("duplicates", text, fix, len(near), examples))
        share = (extra + 0.5 * len(near)) / total if total else 0.0
        summary = f"{extra} exact copies and {len(near)} near-copy pairs among {total} drawers"
        return Check("duplicates", max(0.0, 1 - 4 * share), summary, findings)

    @staticmethod
    def _near_copies(catalog: Catalog, wings: list[str]) -> list[tuple[str, str]]:
        """Pairs of drawers of one wing at least NEAR_COPY similar, from the vectors the
        catalogue keeps (none when it keeps none), that don't say the same words and are not
        two parts of one exchange."""
        pairs: list[tuple[str, str]] = []
        for wing in wings:
            ids, matrix = catalog.vectors(wing=wing)
            if matrix is None or len(ids) < 2:
                continue
            norms = np.linalg.norm(matrix, axis=1, keepdims=True)
            unit = matrix / np.where(norms == 0, 1, norms)
            close: list[tuple[int, int]] = []
            for start in range(0, len(ids), NEAR_COPY_BLOCK):
                block = unit[start : start + NEAR_COPY_BLOCK] @ unit.T
                rows, cols = np.nonzero(block >= NEAR_COPY)
                close += [
                    (start + int(r), int(c))
                    for r, c in zip(rows, cols, strict=True)
                    if start + r < c
                ]
            if not close:
                continue
            wanted = sorted({ids[i] for pair in close for i in pair})
            stored = catalog.get(wanted)
            for i, j in close:
                a, b = stored.get(ids[i]), stored.get(ids[j])
                if a is None or b is None or words(a.text) == words(b.text):
                    continue  # exact copies are reported above
                same_exchange = (
                    a.source_file == b.source_file
                    and a.metadata.get("exchange_index") is not None
                    and a.metadata.get("exchange_index") == b.metadata.get("exchange_index")
                )
                if not same_exchange:
                    pairs.append((a.id, b.id))
        return pairs

    # -- naming -------------------------------------------------------------------------------
    def _naming(self, counts: list[tuple[str, str, int]], files: list[FileRecord]) -> Check:
        wing_sizes: Counter[str] = Counter()
        room_sizes: dict[str, Counter[str]] = defaultdict(Counter)
        for wing, room, n in counts:
            wing_sizes[wing] += n
            room_sizes[wing][room] += n
        findings: list[Finding] = []
        drifted = 0
        for group in _spelling_groups(wing_sizes):
            keep = group[0]
            others = group[1:]
            moved = sum(wing_sizes[w] for w in others)
            drifted += moved
            roots = [r for w in others for r in self._roots(files, w)]
            text = (
                f"Wings {', '.join(group)} are one name spelled {len(group)} ways: a search or "
                f"wake-up scoped to one misses the others. Keep {keep} (the biggest)."
            )
            if roots:
                root, mode = roots[0]
                convos = " --mode convos" if mode == "convos" else ""
                fix = f"mempalace mine {_q(root)} --wing {_q(keep)}{convos}"
            else:
                fix = f"mempalace drawers --wing {_q(others[0])}"
                text += " Move its drawers with the MCP tool mempalace_update_drawer (wing)."
            findings.append(Finding("naming", text, fix, moved, list(group)))
        for wing, rooms in sorted(room_sizes.items()):
            for group in _spelling_groups(rooms):
                moved = sum(rooms[r] for r in group[1:])
                drifted += moved
                text = (
                    f"In wing {wing}, rooms {', '.join(group)} are one room spelled "
                    f"{len(group)} ways. Keep {group[0]} (the biggest)."
                )
                fix = f"mempalace drawers --wing {_q(wing)} --room {_q(group[1])}"
                text += " Move the drawers with the MCP tool mempalace_update_drawer (room)."
                examples = [f"{wing} / {r}" for r in group]
                findings.append(Finding("naming", text, fix, moved, examples))
        total = sum(wing_sizes.values())
        summary = f"{drifted} drawers sit under a second spelling of a wing or room name"
        return Check("naming", max(0.0, 1 - drifted / total) if total else 1.0, summary, findings)

    # -- facts --------------------------------------------------------------------------------
    def _facts(self) -> Check | None:
        try:
            stats = self.knowledge.kg_stats()
        except MemPalaceError:
            return None
        predicates: dict[str, int] = stats.get("predicates") or {}
        facts = sum(predicates.values())
        if facts < KG_MIN_FACTS:
            return None
        lonely = sorted(p for p, n in predicates.items() if n == 1)
        share = len(lonely) / facts
        findings: list[Finding] = []
        if share > 0.2:
            text = (
                f"{len(lonely)} of {facts} facts use a predicate no other fact uses, so no "
                "query finds them by relation. Name relations with a few shared predicates "
                "(works_on, owns, decided, uses, depends_on): add the fact again with one and "
                "end the old one."
            )
            fix = "mempalace kg add SUBJECT works_on OBJECT && "
            fix += "mempalace kg invalidate SUBJECT OLD_PREDICATE OBJECT"
            findings.append(Finding("knowledge_graph", text, fix, len(lonely), lonely[:EXAMPLES]))
        summary = f"{len(lonely)} of {facts} facts have a predicate of their own"
        return Check("knowledge_graph", max(0.0, 1 - share), summary, findings)

    # -- diary --------------------------------------------------------------------------------
    def _diary(self, catalog: Catalog, counts: list[tuple[str, str, int]]) -> Check | None:
        entries = sum(n for _w, r, n in counts if r == DIARY_ROOM)
        if not entries:
            return None
        apart: Counter[str] = Counter()
        for wing, room, n in counts:
            if room == DIARY_ROOM and wing.startswith("wing_"):
                apart[wing] += n
        alone = sum(apart.values())
        findings: list[Finding] = []
        if alone:
            wing, n = apart.most_common(1)[0]
            agent = wing.removeprefix("wing_")
            text = (
                f"{alone} diary entr{'ies sit' if alone != 1 else 'y sits'} in the agents' own "
                "wings "
                f"({', '.join(sorted(apart))}), apart from the projects they are about: a "
                "search or wake-up of a project wing does not see them. New entries can name "
                "the project: the MCP tool mempalace_diary_write takes a wing."
            )
            fix = f"mempalace diary read {_q(agent)}"
            findings.append(Finding("diary", text, fix, alone, sorted(apart)[:EXAMPLES]))
        summary = f"{alone} of {entries} diary entries are kept apart from any project wing"
        # Half marks even so: a diary in its own wing is still found by search.
        return Check("diary", 1 - 0.5 * alone / entries, summary, findings)


def _spelling_groups(sizes: Counter[str] | dict[str, int]) -> list[list[str]]:
    """Names that are one name spelled differently, biggest first, in groups of two or more."""
    by_key: dict[str, list[str]] = defaultdict(list)
    for name in sizes:
        key = _spelling_key(name)
        if key:
            by_key[key].append(name)
    return [
        sorted(names, key=lambda n: (-sizes[n], n))
        for _key, names in sorted(by_key.items())
        if len(names) > 1
    ]
