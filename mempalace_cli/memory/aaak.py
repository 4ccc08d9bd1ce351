"""AAAK: a compact one-line notation for summarising a drawer.

A line reads `LOCATION|ENTITIES|TOPICS|"KEY"|EMOTIONS|FLAGS|STARS`. It is a lossy summary
that an agent can scan quickly and then fetch the verbatim drawer for; it is not compression
and the original text cannot be rebuilt from it.

Everything the notation uses (separators, the entity coding rule, the emotion and flag tables,
halls, stars) is a constant below, and `spec()` writes the documentation from these constants
and from live calls of the encoder, so the spec cannot drift from the code. Encoding is
deterministic: the same text and metadata always give the same line.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from itertools import combinations
from pathlib import PurePath
from typing import Any

from mempalace_cli.common import cjk
from mempalace_cli.common.errors import InvalidInputError
from mempalace_cli.common.wordlists import STOPWORDS

VERSION = 1

# -- separators -------------------------------------------------------------------------------
FIELD_SEP = "|"
LIST_SEP = ","
LOCATION_SEP = "/"
ENTITY_ASSIGN = "="
EMPTY = "-"
KEY_QUOTE = '"'
EMOTION_MARK = "*"
STAR = "★"
FIELDS = ("location", "entities", "topics", "key", "emotions", "flags", "stars")

# -- limits -----------------------------------------------------------------------------------
MAX_ENTITIES = 4
MAX_TOPICS = 3
MAX_EMOTIONS = 2
KEY_MAX_CHARS = 140
MIN_STARS, MAX_STARS = 1, 5
MIN_TOPIC_LEN = 4

# -- entity coding rule -----------------------------------------------------------------------
ENTITY_CODE_LEN = 3
VOWELS = "AEIOU"
ENTITY_EXAMPLES = ("Alice", "Tomás", "Harbor")

# -- emotions: code -> (meaning, trigger words) -------------------------------------------------
EMOTIONS: dict[str, tuple[str, tuple[str, ...]]] = {
    "warm": (
        "joy, gratitude",
        (
            "happy",
            "glad",
            "thank",
            "thanks",
            "grateful",
            "love",
            "delighted",
            "wonderful",
            "enjoyed",
        ),
    ),
    "proud": (
        "pride, achievement",
        ("proud", "accomplished", "nailed", "celebrate", "congrats", "congratulations"),
    ),
    "anx": (
        "worry, risk",
        (
            "worried",
            "worry",
            "concern",
            "concerned",
            "risk",
            "risky",
            "afraid",
            "nervous",
            "uncertain",
            "fear",
        ),
    ),
    "frust": (
        "frustration",
        (
            "frustrated",
            "frustrating",
            "annoying",
            "annoyed",
            "angry",
            "blocked",
            "painful",
            "fed up",
        ),
    ),
    "relief": ("relief", ("relieved", "relief", "finally", "phew")),
    "sad": (
        "sadness, disappointment",
        ("sad", "sorry", "unfortunately", "disappointed", "disappointing", "regret", "miss"),
    ),
    "curious": ("curiosity", ("curious", "wonder", "wondering", "intrigued", "explore")),
    "resolve": ("determination", ("determined", "committed", "commit", "insist")),
}

# -- flags: name -> (meaning, trigger words, importance weight) ---------------------------------
FLAGS: dict[str, tuple[str, tuple[str, ...], int]] = {
    "DECISION": (
        "a choice was made, with its reasons",
        (
            "decided",
            "decision",
            "we chose",
            "agreed",
            "accepted",
            "adopt",
            "go with",
            "rationale",
            "approved",
            "status: accepted",
        ),
        3,
    ),
    "PREFERENCE": (
        "how someone likes things done",
        (
            "prefer",
            "prefers",
            "preference",
            "favourite",
            "favorite",
            "always use",
            "never use",
            "likes",
            "dislikes",
            "rather than",
        ),
        2,
    ),
    "MILESTONE": (
        "something shipped, started or finished",
        (
            "shipped",
            "released",
            "launched",
            "milestone",
            "went live",
            "completed",
            "deadline",
            "cutover",
            "go-live",
            "release",
        ),
        1,
    ),
    "PERSON": (
        "about a person: role, hire, relationship",
        (
            "hired",
            "joined",
            "joins",
            "left the",
            "role",
            "manager",
            "owner",
            "responsible",
            "birthday",
            "works with",
            "reports to",
        ),
        1,
    ),
    "INCIDENT": (
        "something broke and what was learned",
        (
            "incident",
            "outage",
            "postmortem",
            "post-mortem",
            "root cause",
            "rollback",
            "downtime",
            "regression",
        ),
        1,
    ),
    "TODO": (
        "an open action item",
        ("todo", "action item", "follow up", "follow-up", "next step", "owner:"),
        0,
    ),
    "CODE": ("source code or configuration", (), -2),
    "BOILERPLATE": (
        "license text, generated or template content",
        (
            "all rights reserved",
            "permission is hereby granted",
            "license",
            "auto-generated",
            "do not edit",
            "lorem ipsum",
        ),
        -2,
    ),
}

# Chinese trigger words for the same emotions and flags (matched anywhere: Chinese has no
# spaces, so a word boundary can't be asked for).
CJK_EMOTIONS: dict[str, tuple[str, ...]] = {
    "warm": ("高兴", "开心", "感谢", "谢谢", "喜欢"),
    "proud": ("自豪", "骄傲", "庆祝", "恭喜"),
    "anx": ("担心", "担忧", "风险", "害怕", "紧张", "不确定"),
    "frust": ("沮丧", "烦", "生气", "卡住", "受不了"),
    "relief": ("松了一口气", "终于"),
    "sad": ("遗憾", "可惜", "失望", "难过", "抱歉"),
    "curious": ("好奇", "想知道", "探索"),
    "resolve": ("坚持", "一定要", "决心"),
}
CJK_FLAGS: dict[str, tuple[str, ...]] = {
    "DECISION": ("决定", "决策", "选定", "拍板", "同意", "批准", "改用", "改为", "换成", "选型"),
    "PREFERENCE": ("喜欢", "偏好", "更倾向", "习惯用", "不要用", "总是用", "宁愿"),
    "MILESTONE": ("上线", "发布", "完成", "里程碑", "截止", "交付", "切换"),
    "PERSON": ("负责", "组长", "经理", "导师", "实习生", "入职", "离职", "新来的", "汇报给"),
    "INCIDENT": ("事故", "故障", "复盘", "宕机", "回滚", "根因", "中断"),
    "TODO": ("待办", "跟进", "下一步", "行动项"),
    "CODE": (),
    "BOILERPLATE": ("版权所有", "自动生成", "请勿修改"),
}

# -- halls: the kind of memory, from the first matching flag -------------------------------------
HALLS: dict[str, str] = {
    "DECISION": "decisions",
    "PREFERENCE": "preferences",
    "MILESTONE": "events",
    "INCIDENT": "events",
    "PERSON": "people",
    "TODO": "tasks",
    "CODE": "code",
    "BOILERPLATE": "code",
}
DEFAULT_HALL = "facts"

_CODE_SUFFIXES = (
    ".py .js .jsx .ts .tsx .go .rs .java .kt .c .h .cc .cpp .hpp .cs .rb .php .swift .scala "
    ".sh .bash .sql .json .yaml .yml .toml .ini .cfg .xml .css .scss .lock .gradle "
)
CODE_EXTENSIONS = frozenset(_CODE_SUFFIXES.split())
_CODE_LINE = re.compile(
    r"^\s*(def |class |import |from \S+ import|func |fn |let |const |var |public |private |"
    r"return\b|#include|package |if \(|for \(|\}|\{|</?\w+[ >])|[;{}]\s*$"
)
_GENERIC_WORDS = (
    "also would could should like make made using used need needs will shall must every each "
    "many much more most less than then into onto upon about after before over under just "
    "only even still well really thing things something have been being were "
)
_EXTRA_STOPWORDS = frozenset(_GENERIC_WORDS.split())
_WORD = re.compile(r"[^\W\d_][\w'’-]*", re.UNICODE)
_TOKEN = re.compile(r"\w+", re.UNICODE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？；])\s*")
_BLOCK_START = re.compile(r"^(?:#|[-*+]\s|\d+[.)]\s|\|)")
_MARKDOWN = re.compile(r"[*`#>]+|^\s*(?:[-+]|\d+\.)\s+")


@dataclass
class AAAKRecord:
    """The fields of one AAAK line."""

    wing: str = ""
    room: str = ""
    hall: str = DEFAULT_HALL
    entities: dict[str, str] = field(default_factory=dict)  # code -> name
    topics: list[str] = field(default_factory=list)
    key: str = ""
    emotions: list[str] = field(default_factory=list)  # emotion codes, without markers
    flags: list[str] = field(default_factory=list)
    importance: int = MIN_STARS

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# -- entities -----------------------------------------------------------------------------------
def _ascii_letters(word: str) -> str:
    folded = unicodedata.normalize("NFKD", word)
    return "".join(c for c in folded if c.isascii() and c.isalpha()).upper()


def entity_code(name: str, taken: frozenset[str] | set[str] = frozenset()) -> str:
    """The code of a name: its first letter, then its consonants in order, then its remaining
    letters, in ASCII upper case, cut to ENTITY_CODE_LEN (padded with X). If that code is taken,
    the next pick of later letters in order is used; if all are taken, a digit ends the code.
    A CJK name (already short) is its own code."""
    if cjk.has_cjk(name):
        own = name.replace(" ", "")[:ENTITY_CODE_LEN]
        for code in (own, *(own[: ENTITY_CODE_LEN - 1] + str(d) for d in range(2, 10))):
            if code not in taken:
                return code
    letters = _ascii_letters(name.split()[0] if name.split() else name) or "X"
    first, rest = letters[0], letters[1:]
    consonants = [c for c in rest if c not in VOWELS]
    others = [c for c in rest if c in VOWELS]
    base = (first + "".join(consonants + others) + "X" * ENTITY_CODE_LEN)[:ENTITY_CODE_LEN]
    if base not in taken:
        return base
    for picks in combinations(rest, ENTITY_CODE_LEN - 1):
        code = first + "".join(picks)
        if code not in taken:
            return code
    for digit in range(2, 10):
        code = base[: ENTITY_CODE_LEN - 1] + str(digit)
        if code not in taken:
            return code
    return base


def _is_name_word(word: str) -> bool:
    return (
        len(word) > 1
        and word[0].isupper()
        and not word.isupper()
        and word.lower() not in STOPWORDS
        and word.lower() not in _EXTRA_STOPWORDS
    )


def find_entities(text: str) -> list[str]:
    """Proper names, most mentioned first: runs of capitalised words that appear at least once
    away from the start of a line or sentence, or at least twice."""
    counts: Counter[str] = Counter()
    first_pos: dict[str, int] = {}
    mid_sentence: set[str] = set()
    for line in text.splitlines():
        clean = _MARKDOWN.sub(" ", line)
        words = list(_WORD.finditer(clean))
        run: list[str] = []
        run_start_ok = False
        prev_end = 0
        starts_sentence = True
        for m in words:
            gap = clean[prev_end : m.start()]
            if run and (gap != " " or not _is_name_word(m.group())):
                _add_name(run, run_start_ok, counts, first_pos, mid_sentence)
                run = []
            if _is_name_word(m.group()):
                if not run:
                    run_start_ok = not (starts_sentence or re.search(r"[.!?]\s*$", gap))
                run.append(m.group().strip("'’-"))
            starts_sentence = False
            prev_end = m.end()
        if run:
            _add_name(run, run_start_ok, counts, first_pos, mid_sentence)
    # A first name alone counts for the full name it starts.
    for name in list(counts):
        if " " in name:
            continue
        longer = [n for n in counts if n.startswith(name + " ")]
        if longer:
            full = min(longer, key=lambda n: first_pos[n])
            counts[full] += counts.pop(name)
            if name in mid_sentence:
                mid_sentence.add(full)
    kept = [n for n in counts if n in mid_sentence or counts[n] >= 2]
    # Chinese names have no capitals: found by surname and context (cjk.chinese_names).
    for name in cjk.chinese_names(text):
        counts[name] = text.count(name)
        first_pos.setdefault(name, len(first_pos))
        kept.append(name)
    return sorted(kept, key=lambda n: (-counts[n], first_pos[n]))


def _add_name(
    run: list[str],
    mid: bool,
    counts: Counter[str],
    first_pos: dict[str, int],
    mid_sentence: set[str],
) -> None:
    name = " ".join(run[:3])
    counts[name] += 1
    first_pos.setdefault(name, len(first_pos))
    if mid:
        mid_sentence.add(name)


# -- topics, emotions, flags, key sentence ----------------------------------------------------
def find_topics(text: str, exclude: frozenset[str] | set[str] = frozenset()) -> list[str]:
    counts: Counter[str] = Counter()
    order: dict[str, int] = {}
    for gram, n in cjk.topic_bigrams(text):  # Chinese: repeated bigrams, not whole clauses
        if gram not in exclude and not any(gram in e for e in exclude):
            counts[gram] = n
            order.setdefault(gram, text.find(gram))
    for raw in _TOKEN.findall(text.lower()):
        word = raw.strip("_")
        if (
            cjk.has_cjk(word)
            or len(word) < MIN_TOPIC_LEN
            or word.isdigit()
            or word in STOPWORDS
            or word in _EXTRA_STOPWORDS
            or word in exclude
        ):
            continue
        counts[word] += 1
        order.setdefault(word, len(order))
    return sorted(counts, key=lambda w: (-counts[w], order[w]))[:MAX_TOPICS]


def _trigger_pattern(
    triggers: tuple[str, ...], cjk: tuple[str, ...] = ()
) -> re.Pattern[str] | None:
    # One alternation per table entry: a drawer is scanned once per flag, not once per word.
    # English triggers start at a word boundary; Chinese ones match anywhere.
    alternatives = [r"(?<!\w)" + re.escape(t) for t in triggers] + [re.escape(t) for t in cjk]
    if not alternatives:
        return None
    return re.compile("|".join(alternatives))


_EMOTION_RE = {
    code: _trigger_pattern(words, CJK_EMOTIONS.get(code, ()))
    for code, (_m, words) in EMOTIONS.items()
}
_FLAG_RE = {
    name: _trigger_pattern(trig, CJK_FLAGS.get(name, ())) for name, (_m, trig, _w) in FLAGS.items()
}


def _hits(lower: str, pattern: re.Pattern[str] | None) -> int:
    return len(pattern.findall(lower)) if pattern is not None else 0


def find_emotions(text: str) -> list[str]:
    lower = text.lower()
    scored = [(code, _hits(lower, _EMOTION_RE[code])) for code in EMOTIONS]
    ranked = sorted((s for s in scored if s[1]), key=lambda s: -s[1])  # stable: table order
    return [code for code, _ in ranked[:MAX_EMOTIONS]]


def looks_like_code(text: str, source_file: str = "") -> bool:
    if source_file and PurePath(source_file).suffix.lower() in CODE_EXTENSIONS:
        return True
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        return False
    code_lines = sum(1 for ln in lines if _CODE_LINE.search(ln))
    return code_lines / len(lines) >= 0.4


def find_flags(text: str, source_file: str = "") -> list[str]:
    lower = text.lower()
    flags = []
    for name in FLAGS:
        if name == "CODE":
            hit = looks_like_code(text, source_file)
        else:
            hit = _hits(lower, _FLAG_RE[name]) > 0
        if hit:
            flags.append(name)
    return flags


def signal(text: str) -> int:
    """How many decision, preference, milestone, people... trigger words the text holds."""
    lower = text.lower()
    return sum(_hits(lower, p) for n, p in _FLAG_RE.items() if FLAGS[n][2] > 0)


def flag_weight(flags: list[str]) -> int:
    return sum(FLAGS[f][2] for f in flags if f in FLAGS)


def _clean_sentence(sentence: str) -> str:
    flat = " ".join(_MARKDOWN.sub("", sentence).split())
    return flat.replace(FIELD_SEP, LOCATION_SEP).replace(KEY_QUOTE, "'")


def sentences(text: str) -> list[str]:
    """Sentences of prose or markdown: hard-wrapped lines are joined within a paragraph, and
    headings, list items and table rows stand alone."""
    blocks: list[list[str]] = [[]]
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or _BLOCK_START.match(stripped):
            blocks.append([])
        if stripped:
            blocks[-1].append(stripped)
    out = []
    for block in blocks:
        if block:
            out.extend(p for p in _SENTENCE_END.split(" ".join(block)) if p.strip())
    return out


def key_sentence(text: str, topics: list[str], entities: list[str]) -> str:
    """The sentence carrying most of the summary: topic words, flag triggers and names, the
    earliest on a tie; cut at a word boundary to KEY_MAX_CHARS."""
    best, best_score = "", -1.0
    for part in sentences(text):
        sentence = _clean_sentence(part)
        if cjk.word_count(sentence) < 4:
            continue
        lower = sentence.lower()
        tokens = _TOKEN.findall(lower)
        if sum(1 for t in tokens if t.isalpha()) * 2 < len(tokens):
            continue  # table rows, numbers, paths: not a sentence
        words = set(tokens)
        score = 2.0 * sum(1 for t in topics if t in words or (cjk.has_cjk(t) and t in lower))
        score += 0.5 * min(2, sum(1 for e in entities if e.lower() in lower))
        score += 3.0 * sum(
            1 for name, pattern in _FLAG_RE.items() if FLAGS[name][2] > 0 and _hits(lower, pattern)
        )
        if score > best_score:
            best, best_score = sentence, score
    if not best:
        best = _clean_sentence(text)
    if len(best) > KEY_MAX_CHARS:
        cut = best[: KEY_MAX_CHARS - 1]
        if not cjk.has_cjk(cut[-20:]):  # Chinese can be cut anywhere; English at a space
            cut = cut.rsplit(" ", 1)[0]
        best = cut.rstrip(" ,;:") + "…"
    return best


def importance(meta: Mapping[str, Any], flags: list[str]) -> int:
    """Stars for a drawer: its `importance` metadata (1-5) if set, else from its flags."""
    value = meta.get("importance")
    if isinstance(value, int | float) and not isinstance(value, bool):
        raw = float(value)
    else:
        # The strongest flag sets the level and a second kind of signal adds one; the top
        # star is left to explicit importance metadata.
        weights = sorted((FLAGS[f][2] for f in flags if FLAGS[f][2] > 0), reverse=True)
        raw = min(MAX_STARS - 1, MIN_STARS + (weights[0] + (len(weights) > 1) if weights else 0))
        if flag_weight(flags) < 0 and "CODE" in flags:
            raw = MIN_STARS
    return int(max(MIN_STARS, min(MAX_STARS, round(raw))))


def _hall(flags: list[str]) -> str:
    for flag in flags:
        if flag in HALLS:
            return HALLS[flag]
    return DEFAULT_HALL


# -- encoding ---------------------------------------------------------------------------------
def analyze(text: str, meta: Mapping[str, Any] | None = None) -> AAAKRecord:
    """The AAAK fields of a drawer's text. `meta` may carry wing, room, source_file and
    importance (1-5); other keys are ignored."""
    meta = meta or {}
    names = find_entities(text)[:MAX_ENTITIES]
    entities: dict[str, str] = {}
    for name in names:
        entities[entity_code(name, set(entities))] = name
    name_words = {w.lower() for n in names for w in n.split()} | {
        n for n in names if cjk.has_cjk(n)
    }
    topics = find_topics(text, name_words)
    flags = find_flags(text, str(meta.get("source_file") or ""))
    return AAAKRecord(
        wing=str(meta.get("wing") or ""),
        room=str(meta.get("room") or ""),
        hall=_hall(flags),
        entities=entities,
        topics=topics,
        key=key_sentence(text, topics, names),
        emotions=find_emotions(text),
        flags=flags,
        importance=importance(meta, flags),
    )


def _part(value: str) -> str:
    return value.replace(LOCATION_SEP, "_").replace(FIELD_SEP, "_") or EMPTY


def format_record(rec: AAAKRecord) -> str:
    location = LOCATION_SEP.join((_part(rec.wing), _part(rec.room), _part(rec.hall)))
    entities = LIST_SEP.join(f"{c}{ENTITY_ASSIGN}{n}" for c, n in rec.entities.items())
    emotions = LIST_SEP.join(f"{EMOTION_MARK}{e}{EMOTION_MARK}" for e in rec.emotions)
    fields = (
        location,
        entities or EMPTY,
        LIST_SEP.join(rec.topics) or EMPTY,
        f"{KEY_QUOTE}{rec.key}{KEY_QUOTE}",
        emotions or EMPTY,
        LIST_SEP.join(rec.flags) or EMPTY,
        STAR * rec.importance,
    )
    return FIELD_SEP.join(fields)


def encode(text: str, meta: Mapping[str, Any] | None = None) -> str:
    """One AAAK line for a drawer's text (deterministic)."""
    return format_record(analyze(text, meta))


def _list(value: str) -> list[str]:
    return [] if value == EMPTY else value.split(LIST_SEP)


def parse(line: str) -> AAAKRecord:
    """Read an AAAK line back into its fields."""
    parts = line.strip().split(FIELD_SEP)
    if len(parts) != len(FIELDS):
        raise InvalidInputError(
            f"An AAAK line has {len(FIELDS)} fields separated by {FIELD_SEP!r}; "
            f"this one has {len(parts)}.",
            hint="Print the notation with: mempalace wake-up --aaak-spec",
        )
    location, entities, topics, key, emotions, flags, stars = parts
    loc = location.split(LOCATION_SEP)
    if len(loc) != 3:
        raise InvalidInputError(f"The AAAK location {location!r} is not wing/room/hall.")
    wing, room, hall = ("" if p == EMPTY else p for p in loc)
    ents: dict[str, str] = {}
    for item in _list(entities):
        code, _, name = item.partition(ENTITY_ASSIGN)
        ents[code] = name
    if not (key.startswith(KEY_QUOTE) and key.endswith(KEY_QUOTE) and len(key) >= 2):
        raise InvalidInputError(f"The AAAK key sentence must be quoted: {key!r}.")
    if stars.strip(STAR) or not MIN_STARS <= len(stars) <= MAX_STARS:
        raise InvalidInputError(f"The AAAK importance must be 1 to 5 {STAR}, not {stars!r}.")
    return AAAKRecord(
        wing=wing,
        room=room,
        hall=hall or DEFAULT_HALL,
        entities=ents,
        topics=_list(topics),
        key=key[1:-1],
        emotions=[e.strip(EMOTION_MARK) for e in _list(emotions)],
        flags=_list(flags),
        importance=len(stars),
    )


# -- the spec, written from the constants above ------------------------------------------------
SPEC_EXAMPLE = (
    "We decided to move sign-in from Auth0 to Clerk because the renewal price tripled. "
    "Alice was worried about the migration, but Tomás ran a three-day spike and was glad "
    "that Clerk import keeps password hashes."
)


def spec() -> str:
    """The AAAK notation, generated from the encoder's constants and a live example."""
    codes = ", ".join(f"{n}={entity_code(n)}" for n in ENTITY_EXAMPLES)
    emotions = "\n".join(
        f"  {EMOTION_MARK}{code}{EMOTION_MARK} = {meaning}"
        for code, (meaning, _w) in EMOTIONS.items()
    )
    flags = "\n".join(
        f"  {name} = {meaning} (hall: {HALLS.get(name, DEFAULT_HALL)})"
        for name, (meaning, _t, _w) in FLAGS.items()
    )
    fields = FIELD_SEP.join(f.upper() for f in FIELDS)
    example = encode(SPEC_EXAMPLE, {"wing": "harbor", "room": "auth"})
    return (
        f"AAAK v{VERSION}: one line per drawer, a lossy summary (fetch the drawer for its "
        f"exact words).\n"
        f"Line: {fields}; fields are separated by {FIELD_SEP!r}, list items by {LIST_SEP!r}; "
        f"{EMPTY!r} marks an empty field.\n"
        f"LOCATION: wing{LOCATION_SEP}room{LOCATION_SEP}hall. Hall is the kind of memory, "
        f"from the first flag below (else {DEFAULT_HALL}).\n"
        f"ENTITIES: CODE{ENTITY_ASSIGN}Name, up to {MAX_ENTITIES}. A code is "
        f"{ENTITY_CODE_LEN} letters: the first letter, then the consonants, then the other "
        f"letters, ASCII upper case ({codes}); on a clash later letters are picked instead.\n"
        f"TOPICS: up to {MAX_TOPICS} most frequent content words.\n"
        f"KEY: the most informative sentence, in {KEY_QUOTE}quotes{KEY_QUOTE}, at most "
        f"{KEY_MAX_CHARS} characters.\n"
        f"EMOTIONS: up to {MAX_EMOTIONS} markers:\n{emotions}\n"
        f"FLAGS:\n{flags}\n"
        f"STARS: importance, {STAR * MIN_STARS} to {STAR * MAX_STARS} (from importance "
        f"metadata, else from the flags).\n"
        f"Example: {example}"
    )
