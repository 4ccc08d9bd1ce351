"""Chinese, Japanese and Korean text: the pieces every text reader here shares.

FTS5's unicode61 tokenizer keeps a run of CJK characters (no spaces between words) as ONE
token, so a two-character word inside a sentence can never match. The keyword index therefore
stores every CJK run as overlapping character bigrams ("向量检索" -> "向量 量检 检索"), and a
query is split the same way. Latin words keep going through `porter unicode61` untouched.
Bigrams won against a segmenter and the trigram tokenizer on the bilingual dev set
(benchmarks/cjk_tokenizers.py): no dictionary to load, no product name split apart, and
two-character words (most Chinese words) match, which trigrams can't do.
"""

from __future__ import annotations

import re

# Han (incl. extension A, compatibility, extension B+), Hiragana, Katakana (incl. phonetic
# extensions and the prolonged sound mark), Hangul syllables and jamo. CJK punctuation
# (U+3000-303F) and full-width forms are separators, not part of a run.
CJK_CLASS = (
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
    "\u3040-\u309f\u30a0-\u30ff\u31f0-\u31ff\uff66-\uff9f"
    "\u1100-\u11ff\u3130-\u318f\uac00-\ud7af"
    "\U00020000-\U0002fa1f"
)
CJK_RUN = re.compile(f"[{CJK_CLASS}]+")
CJK_CHAR = re.compile(f"[{CJK_CLASS}]")
# Question and function characters: a query bigram made of them ("什么", "为什", "怎么") says
# nothing about which note answers it.
_QUERY_NOISE = frozenset("的了吗呢吧么什怎哪谁啊呀嗎麼誰為为是有在和与及或也都就还要把被个这那些")


def has_cjk(text: str) -> bool:
    # An ASCII-only text (most English drawers) is known so at once: CPython keeps that flag
    # on the string, while the search reads every character (1.7 us for 400 of them).
    return not text.isascii() and CJK_CHAR.search(text) is not None


def cjk_share(text: str) -> float:
    """The share of letters in `text` that are CJK characters (0.0 for no letters)."""
    letters = sum(1 for c in text if c.isalpha())
    if not letters:
        return 0.0
    return len(CJK_CHAR.findall(text)) / letters


def bigrams(run: str) -> list[str]:
    """Overlapping bigrams of one CJK run; a single character stands alone."""
    if len(run) < 2:
        return [run] if run else []
    return [run[i : i + 2] for i in range(len(run) - 1)]


def index_text(text: str) -> str:
    """The text the keyword index reads: each CJK run replaced by its bigrams, set off by
    spaces (so a Latin word glued to Chinese, as in "用Redis的", becomes its own token)."""
    if not has_cjk(text):
        return text
    return CJK_RUN.sub(lambda m: " " + " ".join(bigrams(m.group())) + " ", text)


def is_question_gram(gram: str) -> bool:
    """A query bigram made only of question and function characters ("什么", "为什")."""
    return all(c in _QUERY_NOISE for c in gram)


def estimate_tokens(text: str) -> int:
    """Roughly how many model tokens `text` costs: about one per CJK character, about one per
    four characters of everything else (English prose)."""
    cjk = len(CJK_CHAR.findall(text))
    return cjk + (len(text) - cjk + 3) // 4


def word_count(text: str) -> int:
    """Words in mixed text: whitespace-separated words outside CJK runs, plus one word per
    two CJK characters (a typical Chinese word length)."""
    cjk = len(CJK_CHAR.findall(text))
    latin = len(CJK_RUN.sub(" ", text).split())
    return latin + (cjk + 1) // 2


# The most common Chinese surnames (single character), which start most personal names.
_SURNAMES = (
    "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶程"
    "苏魏吕丁任沈姚卢姜崔钟谭陆汪范金石廖贾夏韦付方白邹孟熊秦邱江尹薛闫段雷侯龙史陶黎贺顾毛郝龚"
    "邵万钱严覃武戴莫孔向汤"
)
# What follows a name in a sentence: a verb of saying, doing or being, a title, a particle.
_AFTER_NAME = (
    "是|负责|说|认为|提出|提到|建议|决定|同意|跟进|来|去|在|和|与|的|也|都|会|要|已|将|把|给|做|"
    "写|问|找|让|带|主导|牵头|发现|觉得|表示|希望|下周|上周|今天|明天|经理|老师|总|组长|同学|"
    "[，。、；：！？\\s]"
)
# Before a name: anything but a Han character, or a preposition/verb that takes a person.
_BEFORE_NAME = "(?:(?<![\u4e00-\u9fff])|(?<=[由和与是找问给让跟被把请向对叫]))"
_CHINESE_NAME = re.compile(f"{_BEFORE_NAME}([{_SURNAMES}][\u4e00-\u9fff]{{1,2}}?)(?={_AFTER_NAME})")
# Common words that start with a surname character.
_NOT_NAMES = frozenset(
    "周末 周期 周报 周会 方案 方式 方法 方面 方向 任务 任何 马上 高级 高效 程序 金额 余额 向量 "
    "白天 段落 万一 钱包 常用 于是 宋体 黄色 江湖 石头 毛病 龙头 史上 陆续 许多 许可 韩文 安全 "
    "何时 何况 孙子 夏天 秦朝 邱园 付款 付费 温度 汪汪 戴上 严格 严重 武器 莫非 孔子 汤圆 冯氏 "
    "苏州 江苏 金融 林业 罗列 郑重 谢谢 唐朝 叶子 程度 魏国 丁香 沈阳 姚明 于此 白色 雷达".split()
)
# Characters that make a "name" more likely a word: 人们, 王国, 高度 ...
_NOT_IN_NAME = frozenset("的了是在和们个这那有不也就都要会说做来去上下中大多少家国度级端性")


def chinese_names(text: str) -> list[str]:
    """Likely Chinese personal names (surname + one or two characters, followed by a verb, a
    title or punctuation), in order of first mention. A heuristic: no dictionary is shipped."""
    found: list[str] = []
    for m in _CHINESE_NAME.finditer(text):
        name = m.group(1)
        if any(c in _NOT_IN_NAME for c in name[1:]) or name in found or name in _NOT_NAMES:
            continue
        found.append(name)
    return found


def topic_bigrams(text: str) -> list[tuple[str, int]]:
    """Bigrams of the CJK runs in `text` that repeat, with their counts, most frequent
    first: the Chinese counterpart of frequent content words (a one-off bigram is noise)."""
    counts: dict[str, int] = {}
    for m in CJK_RUN.finditer(text):
        for gram in bigrams(m.group()):
            if len(gram) == 2 and not any(c in _QUERY_NOISE for c in gram):
                counts[gram] = counts.get(gram, 0) + 1
    return sorted(((g, n) for g, n in counts.items() if n >= 2), key=lambda x: -x[1])
