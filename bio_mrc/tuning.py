"""Settings tuned on held-out questions: no-answer thresholds (the official ``best_f1``
logic) and the BIO decoding's span-length prior."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Mapping, Sequence

import numpy as np

from .data.squad import gold_texts
from .decoding.postprocess import DecodeConfig, decode_merged_tags, merge_tag_log_probs
from .decoding.windows import WindowOutputs
from .metrics.squad import find_best_threshold
from .predict import no_answer_probability
from .types import Example, Prediction

LENGTH_PRIOR_GRID = tuple(np.round(np.arange(0.0, 6.01, 0.25), 2).tolist())


def tune_no_answer_threshold(predictions: Sequence[Prediction], gold: Mapping[str, Sequence[str]]) -> tuple[float, float]:
    """The no-answer threshold that maximises F1 on ``predictions``; returns ``(threshold, best_f1)``.

    The search is the official evaluation's ``find_best_thresh`` over the
    questions sorted by no-answer probability; the probability threshold it
    returns is mapped back to the scale of ``Prediction.no_answer_score``
    (``abstain`` iff ``no_answer_score > threshold``). ``-inf`` means "always abstain".
    """
    from .harness.scoring import per_question_scores

    ids = [p.id for p in predictions]
    answers = {p.id: (p.spans[0].text if p.spans else "") for p in predictions}
    _, f1 = per_question_scores(gold, answers, ids, "2.0")
    has_answer = {qid: bool(gold[qid]) for qid in ids}  # the official rule: any listed answer
    na_probs = {p.id: no_answer_probability(p.no_answer_score) for p in predictions}
    best_f1, prob_threshold = find_best_threshold(answers, dict(zip(ids, (f1 / 100).tolist())), na_probs, has_answer)
    if prob_threshold <= 0.0:
        return -math.inf, best_f1
    if prob_threshold >= 1.0:
        return math.inf, best_f1
    return math.log(prob_threshold / (1.0 - prob_threshold)), best_f1


def threshold_curve(predictions: Sequence[Prediction], gold: Mapping[str, Sequence[str]]) -> tuple[np.ndarray, np.ndarray]:
    """F1 (0..100) when abstaining on every question whose no-answer score exceeds each threshold.

    Thresholds are the sorted no-answer scores themselves (answering the
    questions up to and including that score), preceded by ``-inf`` (abstain
    on all). Vectorised with cumulative sums.
    """
    from .harness.scoring import per_question_scores

    ids = [p.id for p in predictions]
    answers = {p.id: (p.spans[0].text if p.spans else "") for p in predictions}
    _, f1 = per_question_scores(gold, answers, ids, "2.0")
    abstain_score = np.array([0.0 if gold[qid] else 100.0 for qid in ids])
    scores = np.array([p.no_answer_score for p in predictions], dtype=np.float64)
    order = np.argsort(scores, kind="stable")
    gain = (f1 - abstain_score)[order]
    totals = abstain_score.sum() + np.concatenate([[0.0], np.cumsum(gain)])
    return np.concatenate([[-np.inf], scores[order]]), totals / len(ids)


def tune_bio_length_prior(
    outputs: WindowOutputs,
    examples: Sequence[Example],
    config: DecodeConfig = DecodeConfig(),
    grid: Sequence[float] = LENGTH_PRIOR_GRID,
) -> tuple[float, np.ndarray]:
    """The span-length prior β of the BIO decoding with the best official F1 on the answerable
    ``examples`` (held-out questions, never the evaluation ones); returns ``(β, F1 per grid value)``.

    A per-token tagger is unsure of inner tokens, so the most probable single
    span is biased short; β (added to every inside gain) is the one number that
    corrects it, chosen like a no-answer threshold. Ties go to the smaller β.
    """
    from .harness.scoring import per_question_scores

    answerable = [i for i, ex in enumerate(examples) if ex.answers]
    if not answerable:
        raise ValueError("tuning the BIO length prior needs answerable questions")
    windows = np.flatnonzero(np.isin(outputs.example_index, answerable))
    subset = outputs.select(windows)
    subset.example_index = np.searchsorted(answerable, subset.example_index)
    chosen = [examples[i] for i in answerable]
    gold, ids = gold_texts(chosen), [ex.id for ex in chosen]
    merged = merge_tag_log_probs(subset, len(chosen))
    f1 = np.zeros(len(grid))
    for k, prior in enumerate(grid):
        predictions = decode_merged_tags(merged, chosen, replace(config, bio_length_prior=float(prior), multi_span=False))
        f1[k] = per_question_scores(gold, {p.id: p.answer for p in predictions}, ids, "1.1")[1].mean()
    return float(grid[int(np.argmax(f1))]), f1
