"""Rules a search's ranking keeps after fusion (fusion.py scores, this module re-orders).

The fusion scores each candidate on its own; three things only show between candidates:

- **A question's own language first.** A Chinese question's dictionary bridge (crosslingual.py)
  lifts English notes holding the question's translated words, and holding common words
  (用 "use", 原因 "reason") is enough for a large share. When the question names something in
  Latin letters (Clerk), a note in the question's script that holds the name and that the
  vector side found on topic is not outranked by an English note the bridge alone reached:
  one that does not hold the name (the keyword side did not find it) and that the vector side
  finds less close (`own_script_first`). When both sides are sure of that note (the keyword
  side found it, its similarity 2+ standard deviations above the candidates'), neither is an
  English note that holds the name but that the vector side puts below the candidates' mean.
  An English note the keyword side found, or that the vector side prefers, keeps its place.
  Without a Latin name in the question the fusion's order stands: on the bilingual dev set the
  Chinese notes the vector side puts first are often neighbours of the English answer (zh->en
  R@3 0.94 -> 0.78 when the rule applied to every Chinese question).
- **Copies count once.** Exact or near-exact copies (the same words in the same order, case,
  spacing and punctuation set aside: sameness.py, the rule `add_drawer` refuses duplicates by)
  collapse into the best-ranked one, which lists the others (`collapse_copies`).
- **A diary entry comes after what it talks about.** An agent's diary entry ("Reviewed
  ADR-0006 with Tomás: we moved to Clerk because ...") restates a drawer in fewer words and
  so often scores above it. The drawer it shares most words with (rare words counting more) is
  moved up to just above the entry (`sources_before_diaries`).

Each rule only moves candidates the fusion already ranked; none adds or drops one (a folded
copy is listed on the hit that stands for it). `rank_score` stays the fusion's score.
"""

from __future__ import annotations

import math
import re
import string
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mempalace_cli.common.cjk import CJK_CLASS, CJK_RUN
from mempalace_cli.search.fusion import script_of
from mempalace_cli.search.sameness import words

# An own-script hit holding the question's names is on topic when the vector side is sure of
# it alone (its similarity this many standard deviations above the vector side's candidates)
# ...
ON_TOPIC_Z = 1.5
# ... or when the keyword side found it too and the vector side puts it above its mean;
AGREED_Z = 0.0
# both sides are sure of it when the keyword side found it and the vector side puts it this
# far above the rest.
SURE_Z = 2.0
# A diary entry's source holds at least this share of the entry's words, and this many.
SOURCE_SHARE = 0.3
SOURCE_WORDS = 3
# Near-exact copies are compared word by word only when their lengths are this close.
COPY_LENGTH_SLACK = 0.15
# ... and they start alike: the same first bytes (UTF-8) of their first 64 characters, case,
# spacing and punctuation aside.
_HEAD_CHARS = 32
# ASCII punctuation and spacing, dropped from UTF-8 bytes (never part of a longer character).
_NOT_WORDS = (string.punctuation + string.whitespace).encode()

# A word, or a name joined by hyphens or dots (ADR-0006, v1.2): letters and digits.
_LETTERS = f"(?:(?![{CJK_CLASS}])[^\\W_])+"
_LATIN_WORD = re.compile(f"{_LETTERS}(?:[-.]{_LETTERS})*")
# Words a diary entry shares with any note: they say nothing about which note it is about.
_COMMON = frozenset(
    "the and for with from that this was were are has have had not but our you your they "
    "their them its into onto out over then than when what which who why how all any can "
    "will would should could about after before also just only still very more most some "
    "such each other there here been being did does done got get one two too because "
    "now new today".split()
)
# A word is compared by its first letters: "switched" and "switch", "migration" and
# "migrate" agree (a stemmer's job, done crudely; enough to find a source, not to rank).
_STEM = 6


@dataclass
class Arranged:
    """The candidates in their final order, and the copies folded into each kept one."""

    ranked: list[str]
    copies: dict[str, list[str]] = field(default_factory=dict)


@dataclass
class Candidates:
    """What the ranking reads of each candidate, from one catalogue read (`read_candidates`):
    its text, whether it is a diary entry, its source file where it has one (id -> source,
    for fusion.with_siblings) and, for a part of a conversation, where in it
    (id -> (source file, chunk number), for fusion.with_neighbours)."""

    texts: dict[str, str]
    diaries: set[str]
    sources: dict[str, str]
    parts: dict[str, tuple[str, int]]


def read_candidates(
    catalog: Any,
    vector_hits: Sequence[tuple[str, float, str, dict[str, Any]]],
    lexical_hits: Sequence[tuple[str, float]],
) -> Candidates:
    """The candidates as the ranking reads them: from the catalogue, else as the store
    returned them with the vector hit."""
    ids = list(dict.fromkeys([h[0] for h in vector_hits] + [i for i, _ in lexical_hits]))
    rows = catalog.candidates(ids)
    found = Candidates(
        texts={i: r.text for i, r in rows.items()},
        diaries={
            i
            for i, r in rows.items()
            if is_diary(r.room, {"type": r.kind, "ingest_mode": r.ingest_mode})
        },
        sources={i: r.source_file for i, r in rows.items() if r.source_file},
        parts={
            i: (r.source_file, r.chunk_index)
            for i, r in rows.items()
            if r.chunk_index is not None and r.source_file and is_conversation_part(r.ingest_mode)
        },
    )
    for drawer_id, _distance, text, meta in vector_hits:
        if drawer_id not in found.texts:
            found.texts[drawer_id] = text
            if is_diary(meta.get("room", ""), meta):
                found.diaries.add(drawer_id)
            if meta.get("source_file"):
                found.sources[drawer_id] = str(meta["source_file"])
    return found


def is_conversation_part(ingest_mode: Any) -> bool:
    """A drawer filed with this ingest mode is a part of a conversation (`mine --mode convos`,
    the session hook): read with the parts beside it (fusion.with_neighbours)."""
    return ingest_mode == "convos"


def is_diary(room: str, metadata: Mapping[str, Any]) -> bool:
    """An agent's diary entry (service/diary.py files them; MemPalace's diary too)."""
    return metadata.get("type") == "diary_entry" or (
        room == "diary" and metadata.get("ingest_mode") == "diary"
    )


def mark_copies(results: list[dict[str, Any]], copies: Mapping[str, list[str]]) -> None:
    """Say on each hit that stands for copies how many there are and which (`duplicates`,
    `duplicate_ids`); a hit without copies carries neither."""
    for hit in results:
        folded = copies.get(hit["drawer_id"])
        if folded:
            hit["duplicates"] = len(folded)
            hit["duplicate_ids"] = list(folded)


def arrange(
    ranked: Sequence[str],
    texts: Mapping[str, str],
    *,
    query: str,
    query_script: str,
    similarity: Mapping[str, float],
    lexical: Iterable[str],
    translated: Mapping[str, float],
    diaries: Iterable[str],
    keep: int,
) -> Arranged:
    """All three rules, in order: own script first, sources before diaries, copies folded.
    `similarity`: cosine similarity of the vector side's candidates; `lexical`: the keyword
    side's candidates; `translated`: the dictionary bridge's shares (empty without it);
    `diaries`: the candidates that are diary entries; `keep`: how many distinct hits the
    caller shows (copies are looked for beside those only)."""
    order = list(ranked)
    if translated:
        order = own_script_first(
            order, texts, query, query_script, similarity, set(lexical), translated
        )
    diary_ids = set(diaries)
    if diary_ids:
        order = sources_before_diaries(order, texts, diary_ids, keep)
    return collapse_copies(order, texts, keep)


def own_script_first(
    ranked: list[str],
    texts: Mapping[str, str],
    query: str,
    query_script: str,
    similarity: Mapping[str, float],
    lexical: set[str],
    translated: Mapping[str, float],
) -> list[str]:
    """Move each on-topic hit in the query's script above the bridge-only hits that
    outrank it with a lower similarity (see the module's first rule). On-topic hits keep
    their order among themselves; everything else keeps its order."""
    if len(similarity) < 2:
        return ranked
    values = list(similarity.values())
    mean = sum(values) / len(values)
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
    if sd < 1e-9:
        return ranked
    names = _names(query)
    if not names:
        return ranked
    scripts = {i: script_of(texts.get(i, "")) for i in ranked}

    def z(i: str) -> float:
        return (similarity[i] - mean) / sd if i in similarity else -math.inf

    def tier(i: str) -> int:
        """2: sure (both sides, vector far above the rest); 1: on topic; 0: neither."""
        if scripts[i] != query_script or i not in similarity:
            return 0
        if not _holds(texts.get(i, ""), names):
            return 0
        zi = z(i)
        if i in lexical and zi >= SURE_Z:
            return 2
        return 1 if zi >= ON_TOPIC_Z or (i in lexical and zi >= AGREED_Z) else 0

    def beneath(hit: str, level: int, other: str) -> bool:
        """Whether `other` is a bridge-only hit `hit` (of tier `level`) must precede."""
        if scripts[other] == query_script or translated.get(other, 0.0) <= 0:
            return False
        if similarity.get(other, -2.0) >= similarity[hit]:
            return False
        if other not in lexical:  # the bridge alone reached it
            return True
        return level == 2 and z(other) < 0.0  # it holds the name; the vector side: unrelated

    out = list(ranked)
    floor = 0  # on-topic hits keep their order: each lands after the one before it
    for hit in ranked:
        level = tier(hit)
        if not level:
            continue
        at = out.index(hit)
        lifted = next((k for k in range(floor, at) if beneath(hit, level, out[k])), None)
        if lifted is not None:
            out.pop(at)
            out.insert(lifted, hit)
            at = lifted
        floor = at + 1
    return out


def _names(query: str) -> list[str]:
    """The Latin words of a query in another script (Clerk, v1, Postgres): names, mostly.
    Numbers (a year, an amount) are left out."""
    found = _LATIN_WORD.findall(query.casefold())
    return [w for w in dict.fromkeys(found) if len(w) > 1 and not w.isdigit()]


def _holds(text: str, names: list[str]) -> bool:
    folded = text.casefold()
    return all(re.search(f"(?<![a-z0-9]){re.escape(name)}(?![a-z0-9])", folded) for name in names)


def _content_words(text: str) -> set[str]:
    """The words a text is about: Latin words of 3+ letters but common ones, by their first
    letters; names with digits whole (ADR-0006, auth0); and each CJK run's character pairs."""
    folded = text.casefold()
    found = set()
    for w in _LATIN_WORD.findall(folded):
        if len(w) >= 3 and w not in _COMMON:
            found.add(w if any(c.isdigit() for c in w) else w[:_STEM])
    for run in CJK_RUN.findall(folded):
        found.update(run[k : k + 2] for k in range(len(run) - 1))
    return found


def sources_before_diaries(
    ranked: list[str], texts: Mapping[str, str], diaries: set[str], keep: int
) -> list[str]:
    """For each diary entry among the first `keep` hits, the non-diary candidate holding most
    of its words (at least SOURCE_SHARE of them, and SOURCE_WORDS) moves up to just above
    the entry when it ranks below it."""
    shown = [i for i in ranked[: max(keep, 1) + len(diaries)] if i in diaries]
    if not shown:
        return ranked
    others = [i for i in ranked if i not in diaries]
    their_words = {i: _content_words(texts.get(i, "")) for i in others}
    # A word most candidates hold (the project's name) says little about which one is meant.
    held: dict[str, int] = {}
    for found in their_words.values():
        for w in found:
            held[w] = held.get(w, 0) + 1
    out = list(ranked)
    for entry in shown:
        said = _content_words(texts.get(entry, ""))
        if len(said) < SOURCE_WORDS:
            continue
        best, best_weight = None, 0.0
        for i in others:  # best first: a tie goes to the higher-ranked drawer
            shared = said & their_words[i]
            if len(shared) < max(SOURCE_WORDS, SOURCE_SHARE * len(said)):
                continue
            weight = sum(math.log((len(others) + 1) / held[w]) for w in shared)
            if weight > best_weight:
                best, best_weight = i, weight
        if best is None:
            continue
        at_entry, at_source = out.index(entry), out.index(best)
        if at_source > at_entry:
            out.pop(at_source)
            out.insert(at_entry, best)
    return out


def collapse_copies(ranked: list[str], texts: Mapping[str, str], keep: int) -> Arranged:
    """Fold copies into the best-ranked of them, for the first `keep` distinct hits (the rest
    stay as ranked). Candidates are grouped by the start of their text, case, spacing and
    punctuation aside (cheap: one pass over a few dozen characters each); within a group, a
    copy has the same text, or a close length and the same words (sameness.words). The
    vector side can't pre-sort them: the model reads case and punctuation (cosine 0.81
    between a sentence and its lower-cased, re-punctuated copy)."""
    groups: dict[bytes, list[str]] = {}
    for i in ranked:
        text = texts.get(i)
        if text:
            groups.setdefault(_head(text), []).append(i)
    if all(len(group) == 1 for group in groups.values()):
        return Arranged(list(ranked))
    out: list[str] = []
    copies: dict[str, list[str]] = {}
    folded: set[str] = set()
    keys: dict[str, list[str]] = {}

    def key(i: str) -> list[str]:
        if i not in keys:
            keys[i] = words(texts[i])
        return keys[i]

    for hit in ranked:
        if hit in folded:
            continue
        out.append(hit)
        text = texts.get(hit)
        if len(out) > keep or not text:
            continue  # beyond what is shown: kept as ranked, not compared
        group = groups[_head(text)]
        for other in group[group.index(hit) + 1 :]:
            if other in folded:
                continue
            other_text = texts[other]
            if other_text != text:
                if abs(len(other_text) - len(text)) > COPY_LENGTH_SLACK * len(text) + 8:
                    continue
                if key(other) != key(hit):
                    continue
            folded.add(other)
            copies.setdefault(hit, []).append(other)
    return Arranged(out, copies)


def _head(text: str) -> bytes:
    """The start of a text with case, spacing and (ASCII) punctuation set aside."""
    return text[: _HEAD_CHARS * 2].casefold().encode().translate(None, _NOT_WORDS)[:_HEAD_CHARS]
