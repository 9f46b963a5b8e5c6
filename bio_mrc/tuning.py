"""No-answer thresholds, tuned on a dev split with the official ``best_f1`` logic."""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np

from .metrics.squad import find_best_threshold
from .predict import no_answer_probability
from .types import Prediction


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
