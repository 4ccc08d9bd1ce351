"""Fusing the two sides of a hybrid search by how sure each side is.

Rank fusion (RRF) gives the first place of each side the same pull whether that side is sure
or guessing: a doubled keyword weight then overrides a clear semantic match on a paraphrased
question, and a note in the wrong language that shares one product name with the question
outranks the right note. Here each side's scores are instead read as a distribution over its
candidates:

- each score becomes a z-score against that side's own candidates, so a top hit far above the
  rest (a confident side) pulls hard, and a flat list (a guessing side) barely moves anything;
- a keyword match on a drawer written in another script than the query (an English question
  against a Chinese note) can only come from a shared Latin name, so it counts for less
  (`cross_script_lexical`), and a vector match across scripts, which multilingual models score
  lower than the same meaning in the same language, can get a lift (`cross_script_vector`);
- a Chinese query can also be translated word by word (crosslingual.py): the share of the
  question's words a drawer holds in English is a third side, counted only for drawers in
  another script than the query (`translated_weight`);
- a drawer both sides found gets the sum of both pulls (agreement); one side's silence costs a
  drawer that side's floor, not a penalty beyond it.

The weights were chosen by K-fold cross-validation on the dev splits (LongMemEval, LoCoMo, the
bilingual dev set): MiniLM's in benchmarks/tune_fusion.py, USE's by the worst fold in
benchmarks/fusion_cv.py; the numbers are in benchmarks/README.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from operator import itemgetter

from mempalace_cli.common.cjk import cjk_share, has_cjk
from mempalace_cli.common.errors import ConfigError
from mempalace_cli.embedders import fusion_settings

LATIN, CJK = "latin", "cjk"
# A text counts as CJK when at least this share of its letters are CJK characters.
CJK_SCRIPT_SHARE = 0.3


@dataclass(frozen=True)
class FusionParams:
    """One fusion: 'zscore' (confidence-aware, the default) or 'rrf' (ranks only, kept for
    comparison)."""

    method: str = "zscore"
    vector_weight: float = 1.0
    lexical_weight: float = 3.0
    # Multiplies the keyword pull on a drawer whose script differs from the query's.
    cross_script_lexical: float = 0.25
    # Added to the vector z-score of a drawer whose script differs from the query's.
    cross_script_vector: float = 0.0
    # Weight of the translated keyword side (a Chinese query's English words from the
    # dictionary, crosslingual.py) on drawers written in another script than the query.
    # 0 turns the bridge off (and the service then never loads the dictionary).
    translated_weight: float = 0.0
    # Highest z-score one side can contribute: one runaway keyword score can't bury the rest.
    z_cap: float = 4.0
    # The least spread the vector side's scores are read against (a standard deviation of
    # cosine similarities): a side whose scores barely differ for a query has no signal, and
    # its z-scores stay small instead of being stretched to the same size as a confident
    # side's. 0 = always the side's own spread.
    vector_sd_floor: float = 0.0
    # Highest keyword evidence (BM25 / query weight): tf saturation lets it pass 1 a little.
    coverage_cap: float = 1.5
    rrf_k: float = 60.0
    depth: int = 50
    # When the query and every candidate share one script (an English palace), fuse by
    # weighted RRF instead: 5-fold CV on LongMemEval + LoCoMo dev chose RRF k=60, keywords x2
    # in every fold (LoCoMo R@10 0.933 against 0.76 for the z-score fusion with MiniLM).
    one_script_rrf: bool = True
    rrf_lexical_weight: float = 2.0
    # A drawer gains this share of the best fused score (above the lowest candidate's) of
    # another candidate from the same source file: a note whose other parts also answer is
    # about the question, one passing mention is not (`with_siblings`). 0 = off.
    sibling_weight: float = 0.0
    # A drawer that is part of a longer source (a chat turn, an exchange, a file's chunk) is
    # read with the drawers beside it (`neighbour_reach` either way, by chunk number): each
    # side's score of it gains this share of its best neighbour's score on that side, and the
    # neighbours of each side's first NEIGHBOUR_SEEDS join the candidates
    # (`with_neighbours`). An answer turn that says "yes, last May" is found through the
    # question its neighbour asked. 0 = off.
    neighbour_weight: float = 0.0
    neighbour_reach: int = 2

    @property
    def reads_scripts(self) -> bool:
        """False for plain rank fusion, which never looks at a candidate's script: the caller
        can skip reading candidate texts to tell their scripts."""
        return self.method != "rrf" or self.translated_weight > 0

    def with_(self, **changes: float | int | str) -> FusionParams:
        return replace(self, **changes)  # type: ignore[arg-type]


DEFAULT = FusionParams()

# The fusion that suits a model depends on how good its vector side is: chosen per model by
# 5-fold cross-validation on the dev data (benchmarks/tune_fusion.py; numbers in
# benchmarks/README.md). Models not listed (e5, an API model) use DEFAULT.
MINILM, USE = "all-MiniLM-L6-v2", "use-multilingual-v3"
BY_MODEL: dict[str, FusionParams] = {
    # English-only vectors, weak on LoCoMo (vector R@10 0.65): rank fusion with keywords x2
    # when the query and every candidate share a script (every English search, unchanged);
    # across scripts the confidence fusion with the dictionary bridge x16, keywords x2 at full
    # weight, z capped at 4 and a +1 vector lift (all dev; 3 of 5 folds): zh->en R@3 0.06 -> 0.89.
    MINILM: FusionParams(
        lexical_weight=2.0,
        cross_script_lexical=1.0,
        cross_script_vector=1.0,
        z_cap=4.0,
        rrf_lexical_weight=2.0,
        translated_weight=16.0,
    ),
    # Stronger vectors (LongMemEval R@5 0.98 alone; LoCoMo session R@10 0.88 with a long
    # document scored by its best passage, storage/passage_vectors.py): the confidence fusion
    # for every query, keywords x4, the vector side read against a spread of at least 0.1
    # (USE's cosines spread 0.03-0.06 over a conversation's sessions: a flat vector side does
    # not outweigh the keywords), z capped at 3, a drawer lifted by a quarter of its best
    # same-file candidate (with_siblings); across scripts a +0.5 vector lift and the dictionary
    # bridge x16. Chosen by the worst fold (benchmarks/fusion_cv.py, 5 of 7 folds and all dev;
    # numbers in benchmarks/README.md): LoCoMo dev session R@5 / R@10, 7-fold CV, 0.836 /
    # 0.923 -> 0.864 / 0.931. The bridge weight was checked by the same CV (x2-x16): x16
    # stays (x8 drops zh->en R@3). A chat turn or chunk is read with the two drawers either
    # side of it in its source, at 0.75 of their scores (with_neighbours; the same CV, 5 of 7
    # folds and all dev): LoCoMo dev dialog R@10, 7-fold CV, 0.677 -> 0.746 with turns filed
    # as chunks of their session (0.633 as sources of their own).
    USE: FusionParams(
        lexical_weight=4.0,
        vector_sd_floor=0.1,
        z_cap=3.0,
        one_script_rrf=False,
        cross_script_vector=0.5,
        translated_weight=16.0,
        sibling_weight=0.25,
        neighbour_weight=0.75,
        neighbour_reach=2,
    ),
}


def for_model(model: str) -> FusionParams:
    """The fusion a palace embedded with `model` searches with: the settings its module in the
    model registry carries (embedders.ModelSpec.fusion) over DEFAULT, or BY_MODEL's entry."""
    settings = fusion_settings(model)
    if settings:
        unknown = sorted(set(settings) - set(FusionParams.__dataclass_fields__))
        if unknown:
            raise ConfigError(
                f"The embedding model {model!r} carries fusion settings this version does not "
                f"know: {', '.join(unknown)}.",
                hint="Update the package that provides the model, or mempalace-cli.",
            )
        return DEFAULT.with_(**settings)
    return BY_MODEL.get(model, DEFAULT)


def script_of(text: str) -> str:
    """LATIN or CJK, judged on the start of `text` (enough to tell a note's language)."""
    head = text[:400]
    if not has_cjk(head):
        return LATIN
    return CJK if cjk_share(head) >= CJK_SCRIPT_SHARE else LATIN


def fuse(
    vector: Sequence[tuple[str, float]],
    lexical: Sequence[tuple[str, float]],
    query_script: str = LATIN,
    scripts: Mapping[str, str] | None = None,
    params: FusionParams = DEFAULT,
    query_weight: float = 0.0,
    translated: Mapping[str, float] | None = None,
) -> list[str]:
    """Drawer ids, best first (see `fuse_scores` and `order`)."""
    score = fuse_scores(vector, lexical, query_script, scripts, params, query_weight, translated)
    return order(score, vector, lexical)


def order(
    score: Mapping[str, float],
    vector: Sequence[tuple[str, float]],
    lexical: Sequence[tuple[str, float]],
) -> list[str]:
    """Drawer ids best first by fused score. Capped z-scores and equal rank sums tie (two
    vector hits both far above the rest): ties go to the higher cosine similarity, then the
    higher BM25 score, then the id, so the order is deterministic and never arbitrary."""
    similarity, bm25 = dict(vector), dict(lexical)
    return sorted(score, key=lambda i: (-score[i], -similarity.get(i, -2.0), -bm25.get(i, 0.0), i))


def fuse_scores(
    vector: Sequence[tuple[str, float]],
    lexical: Sequence[tuple[str, float]],
    query_script: str = LATIN,
    scripts: Mapping[str, str] | None = None,
    params: FusionParams = DEFAULT,
    query_weight: float | Callable[[], float] = 0.0,
    translated: Mapping[str, float] | None = None,
) -> dict[str, float]:
    """Each candidate's rank score (higher ranks first). `vector` holds (id, cosine
    similarity) and `lexical` (id, BM25 score, higher is better), each best first; either
    may be empty. `scripts` maps a candidate's id to its script (LATIN or CJK); a missing id
    counts as the query's script.
    `query_weight` is what a drawer matching every query term scores (Catalog.query_weight);
    without it the keyword scores are read relative to each other only. It may be a function
    returning it: only the confidence fusion reads it (one FTS5 count per query term, which
    grows with the palace), so the rank fusions never compute it.
    `translated` maps a candidate to the share of the query's words its text holds through
    the dictionary (crosslingual.py, catalog.translated_share, 0 to 1): the confidence
    fusion adds it as a third pull, plain rank fusion as a third ranked list."""
    vector, lexical = vector[: params.depth], lexical[: params.depth]
    translated = translated if translated and params.translated_weight else {}
    scripts = scripts or {}
    candidates = [d for d, _ in (*vector, *lexical)] + list(translated)
    one_script = all(scripts.get(d, query_script) == query_script for d in candidates)
    if params.method == "rrf":
        score = _rrf(vector, lexical, params)
        _rrf_bridge(score, translated, query_script, scripts, params)
    elif params.one_script_rrf and one_script:
        score = _rrf(vector, lexical, params.with_(lexical_weight=params.rrf_lexical_weight))
    else:
        weight = query_weight() if callable(query_weight) else query_weight
        score = _confidence(vector, lexical, query_script, scripts, params, weight, translated)
    return score


def with_siblings(
    score: Mapping[str, float], source: Mapping[str, str], weight: float
) -> dict[str, float]:
    """`score` with each drawer raised by `weight` x the best score, above the lowest
    candidate's, among the other candidates from its source file (`source`: id -> source
    file; drawers without one have no siblings). Scores only the candidates both sides found:
    it adds no drawer."""
    if not weight or not score:
        return dict(score)
    low = min(score.values())
    best: dict[str, list[tuple[float, str]]] = {}
    for drawer_id, value in score.items():
        src = source.get(drawer_id)
        if src:
            top = best.setdefault(src, [])
            top.append((value - low, drawer_id))
            top.sort(reverse=True)
            del top[2:]  # the best two: each drawer's best sibling is one of them
    out = dict(score)
    for drawer_id, value in score.items():
        src = source.get(drawer_id)
        if not src:
            continue
        others = [v for v, d in best[src] if d != drawer_id]
        if others:
            out[drawer_id] = value + weight * others[0]
    return out


# How many of each side's first candidates bring their neighbours into the candidates.
NEIGHBOUR_SEEDS = 10


def neighbour_seeds(
    vector: Sequence[tuple[str, float]], lexical: Sequence[tuple[str, float]]
) -> list[str]:
    """The candidates whose neighbours join the candidates (`with_neighbours`): each side's
    first NEIGHBOUR_SEEDS."""
    firsts = [d for d, _ in vector[:NEIGHBOUR_SEEDS]] + [d for d, _ in lexical[:NEIGHBOUR_SEEDS]]
    return list(dict.fromkeys(firsts))


def with_neighbours(
    vector: Sequence[tuple[str, float]],
    lexical: Sequence[tuple[str, float]],
    neighbours: Mapping[str, Sequence[str]],
    similarity: Mapping[str, float],
    weight: float,
) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
    """Both sides' candidates, each scored with the drawers beside it in its source: its
    cosine similarity plus `weight` x the best (non-negative) similarity of its neighbours,
    its BM25 score plus `weight` x the best of its neighbours' among the keyword candidates.
    `neighbours`: id -> the ids beside it (the caller's reach, same source); `similarity`:
    the cosine similarity of every drawer the caller scored (the vector candidates, the
    keyword ones, the neighbours the caller added: `neighbour_seeds`' neighbours). Every
    drawer in `similarity` is a vector candidate afterwards, best first; the keyword side
    keeps the drawers that score above 0. Only the fusion reads these scores: a hit still
    shows its own similarity."""
    if not weight:
        return list(vector), list(lexical)
    cos = dict(vector)
    cos.update(similarity)
    bm25 = dict(lexical)

    def lifted(scores: Mapping[str, float]) -> dict[str, float]:
        """Each drawer's score plus `weight` x its best neighbour's (none below 0), for the
        drawers that have a score or a scored neighbour."""
        out = dict(scores)
        for drawer_id, beside in neighbours.items():
            scored = [scores[n] for n in beside if n in scores]
            if scored and (best := max(scored)) > 0:
                out[drawer_id] = out.get(drawer_id, 0.0) + weight * best
        return out

    lifted_cos = lifted(cos)
    vec = _best_first([(d, lifted_cos[d]) for d in cos])
    lex = _best_first(
        [(d, v) for d, v in lifted(bm25).items() if v > 0 and (d in cos or d in bm25)]
    )
    return vec, lex


def _best_first(scored: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """(id, score) pairs by score, highest first, ties by id (two stable sorts: a third of the
    time of one sort on a (-score, id) key)."""
    return sorted(sorted(scored), key=itemgetter(1), reverse=True)


def _rrf(
    vector: Sequence[tuple[str, float]],
    lexical: Sequence[tuple[str, float]],
    params: FusionParams,
) -> dict[str, float]:
    score: dict[str, float] = {}
    for ranking, weight in ((vector, params.vector_weight), (lexical, params.lexical_weight)):
        for rank, (drawer_id, _) in enumerate(ranking):
            score[drawer_id] = score.get(drawer_id, 0.0) + weight / (params.rrf_k + rank + 1)
    return score


def _rrf_bridge(
    score: dict[str, float],
    translated: Mapping[str, float],
    query_script: str,
    scripts: Mapping[str, str],
    params: FusionParams,
) -> None:
    """Rank fusion's third list: drawers in another script than the query, by the share of
    the question they hold through the dictionary (the drawers holding none are not in it)."""
    across = [
        d for d, s in translated.items() if s > 0 and scripts.get(d, query_script) != query_script
    ]
    across.sort(key=lambda d: (-translated[d], d))
    for rank, drawer_id in enumerate(across):
        bonus = params.translated_weight / (params.rrf_k + rank + 1)
        score[drawer_id] = score.get(drawer_id, 0.0) + bonus


def _confidence(
    vector: Sequence[tuple[str, float]],
    lexical: Sequence[tuple[str, float]],
    query_script: str,
    scripts: Mapping[str, str],
    params: FusionParams,
    query_weight: float,
    translated: Mapping[str, float],
) -> dict[str, float]:
    """Vector side: z-scores against its own candidates (a top far above the rest pulls
    hard, a flat list barely moves anything). Keyword side: the share of the query a drawer
    matched (BM25 / query_weight), an absolute measure, so a weak match on one common word
    stays weak even when it is the only match. Translated side: the share of the
    question's words a drawer holds through the dictionary, also absolute, for drawers in
    another script than the query."""
    z_vec, vec_floor = _standardise([s for _, s in vector], params.z_cap, params.vector_sd_floor)
    vec = {d: z for (d, _), z in zip(vector, z_vec, strict=True)}
    if query_weight > 0:
        lex = {d: min(s / query_weight, params.coverage_cap) for d, s in lexical}
    else:
        z_lex, _ = _standardise([s for _, s in lexical], params.z_cap)
        lex = {d: max(0.0, z) / params.z_cap for (d, _), z in zip(lexical, z_lex, strict=True)}
    across = {d for d in translated if scripts.get(d, query_script) != query_script}
    score: dict[str, float] = {}
    for drawer_id in {*vec, *lex, *across}:
        v = vec.get(drawer_id, vec_floor) if vector else 0.0
        lx = lex.get(drawer_id, 0.0)
        tr = 0.0
        if scripts.get(drawer_id, query_script) != query_script:
            v += params.cross_script_vector
            lx *= params.cross_script_lexical
            tr = translated.get(drawer_id, 0.0)
        score[drawer_id] = (
            params.vector_weight * v + params.lexical_weight * lx + params.translated_weight * tr
        )
    return score


def _standardise(
    scores: list[float], cap: float, sd_floor: float = 0.0
) -> tuple[list[float], float]:
    """z-scores of `scores` against their own distribution (a spread of at least `sd_floor`),
    capped at +-cap; and the floor (the z of the lowest score), which a drawer this side did
    not return gets."""
    if not scores:
        return [], 0.0
    mean = sum(scores) / len(scores)
    sd = max(math.sqrt(sum((x - mean) ** 2 for x in scores) / len(scores)), sd_floor)
    if sd < 1e-9:  # every candidate scored the same: this side can't tell them apart
        return [0.0] * len(scores), 0.0
    zs = [max(-cap, min(cap, (x - mean) / sd)) for x in scores]
    return zs, min(zs)
