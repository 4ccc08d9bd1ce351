"""When two texts say the same thing, word for word.

The duplicate check of `add_drawer` and `update_drawer` finds candidates by meaning (cosine
similarity), but similarity alone can't tell a restatement from an update: "The deploy is on
Tuesday" and "... on Thursday" score 0.91 with both of our models, "rate limit 100" and "1000"
0.91 to 0.97 (benchmarks/duplicates.py). Refusing those as duplicates would lose the newer fact.
So a candidate blocks a write only when it also says the same words in the same order, once
case, punctuation, spacing and leading zeros are set aside; a close candidate with other words
is only reported as similar.
"""

from __future__ import annotations

import re
import unicodedata

from mempalace_cli.common.cjk import CJK_CLASS

# One CJK character, a run of other letters, or a run of digits: a token each.
_TOKEN = re.compile(f"[{CJK_CLASS}]|(?:(?![{CJK_CLASS}])[^\\W\\d_])+|\\d+")


def words(text: str) -> list[str]:
    """The text's words, case-folded; numbers without leading zeros (02:00 and 2:00 agree)."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return [t.lstrip("0") or "0" if t.isdigit() else t for t in _TOKEN.findall(folded)]


def says_the_same(a: str, b: str) -> bool:
    return words(a) == words(b)
