"""The official SQuAD v1.1 and v2.0 evaluation, as pure functions.

Same arithmetic, in the same order, as ``evaluate-v1.1.py`` and
``evaluate-v2.0.py``, so the numbers agree to the last digit. Gold is
``{question id: [answer texts]}`` (one text per annotator; an empty list for an
unanswerable question) and predictions are ``{question id: answer text}``.
Sums run in the iteration order of ``gold`` (the dataset order, as in the
official scripts).
"""

from __future__ import annotations

import collections
import math
from typing import Mapping, Sequence

import numpy as np

from ..answer_text import normalize_answer
from ..plurals import counted, number_form
from ..registry import NO_ANSWER_SUBSETS, TaskEntry
from .shared_scores import kept_score


def _token_f1(pred_tokens: list[str], gold_tokens: list[str]) -> float:
    """Token-overlap F1 as both official scripts compute it (0 when nothing is shared)."""
    common = collections.Counter(pred_tokens) & collections.Counter(gold_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0.0
    precision = num_same / len(pred_tokens)
    recall = num_same / len(gold_tokens)
    return (2 * precision * recall) / (precision + recall)


def exact_match_score(prediction: str, ground_truth: str) -> bool:
    """v1.1 exact match of the normalised texts."""
    return normalize_answer(prediction) == normalize_answer(ground_truth)


def f1_score(prediction: str, ground_truth: str) -> float:
    """v1.1 token F1: 0 when no token is shared, hence also when either side is empty."""
    return _token_f1(normalize_answer(prediction).split(), normalize_answer(ground_truth).split())


def compute_exact_v2(gold: str, prediction: str) -> int:
    """v2.0 exact match, 0 or 1 (argument order of the official script: gold first)."""
    return int(normalize_answer(gold) == normalize_answer(prediction))


def compute_f1_v2(gold: str, prediction: str) -> float:
    """v2.0 token F1: when either side has no tokens, 1.0 if both have none, else 0.0."""
    gold_tokens = normalize_answer(gold).split()
    pred_tokens = normalize_answer(prediction).split()
    if not gold_tokens or not pred_tokens:
        return float(gold_tokens == pred_tokens)
    return _token_f1(pred_tokens, gold_tokens)


def squad_version(version: str) -> str:
    """``version`` as the official scripts are named, "1.1" or "2.0" (a leading "v" dropped); else ValueError, rather
    than scoring by the other script's rules."""
    plain = version.removeprefix("v")
    if plain not in ("1.1", "2.0"):
        raise ValueError(f"unknown SQuAD version {version!r}; expected '1.1' or '2.0'")
    return plain


def question_scores(truths: Sequence[str], prediction: str, version: str) -> tuple[float, float]:
    """Exact match (0 or 1) and F1 (0..1) of one question: the best over its gold ``truths``.

    v1.1 scores against every listed text; v2.0 only against texts that normalise
    to something, and against ``""`` when none does (only abstaining is right).
    ``version`` is spelt as :func:`squad_metrics` takes it ("1.1", "v2.0", ...); any other is a ValueError.
    """
    if squad_version(version) == "2.0":
        answers = [t for t in truths if normalize_answer(t)] or [""]
        return float(max(compute_exact_v2(a, prediction) for a in answers)), max(compute_f1_v2(a, prediction) for a in answers)
    return float(max(exact_match_score(prediction, t) for t in truths)), max(f1_score(prediction, t) for t in truths)


def _kept_question_scores(truths: Sequence[str], prediction: str | None, version: str) -> tuple[float, float]:
    """:func:`question_scores`, computed once for each gold and answer while a block shares scores
    (:func:`~.shared_scores.shared_question_scores`): a file's official metrics and its per-question columns alike."""
    return kept_score(("squad", version, tuple(truths), prediction), lambda: question_scores(truths, prediction, version))


# The official v2.0 script's default --na-prob-thresh: a question abstains where its no-answer probability is above it.
NO_ANSWER_THRESHOLD = 1.0


def per_question_scores(
    gold: Mapping[str, Sequence[str]], predictions: Mapping[str, str], ids: Sequence[str], version: str,
    na_probs: Mapping[str, float] | None = None, na_prob_thresh: float = NO_ANSWER_THRESHOLD,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact match and F1 (0..100) of every question in ``ids``, for paired comparisons.

    Their means are the official ``exact_match``/``f1`` (v1.1) or ``exact``/``f1``
    (v2.0, before any threshold) over these questions: exact match to the last digit, F1 to about 1e-12
    (scaled per question and summed in another order than the scripts' ``100 * sum / total``).
    With ``na_probs`` (v2.0), a question whose no-answer probability is above ``na_prob_thresh`` abstains, as in
    :func:`squad_v2_metrics`: 100 if it is unanswerable, else 0 (an id ``na_probs`` lacks answers).
    """
    version = squad_version(version)
    scores = np.array([_kept_question_scores(gold[qid], predictions[qid], version) for qid in ids], dtype=np.float64).reshape(-1, 2)
    if na_probs is not None:
        abstains = np.array([na_probs.get(qid, -math.inf) > na_prob_thresh for qid in ids], dtype=bool)
        scores[abstains] = np.array([float(not gold[qid]) for qid in ids])[abstains, None]
    return 100.0 * scores[:, 0], 100.0 * scores[:, 1]


def _require_questions(gold: Mapping[str, Sequence[str]]) -> None:
    if not gold:
        raise ValueError("no gold questions to score")


def squad_v1_metrics(gold: Mapping[str, Sequence[str]], predictions: Mapping[str, str]) -> dict[str, float]:
    """``{"exact_match", "f1"}`` in percent, as ``evaluate-v1.1.py``.

    Each question scores its best match over the gold alternatives; a question
    with no prediction scores 0 and still counts in the total.
    """
    _require_questions(gold)
    exact = f1 = 0.0
    for qid, truths in gold.items():
        if not truths:
            raise ValueError(f"question {qid!r} has no gold answer; SQuAD v1.1 needs at least one")
        if qid not in predictions:
            continue
        question_exact, question_f1 = _kept_question_scores(truths, predictions[qid], "1.1")
        exact += question_exact
        f1 += question_f1
    total = len(gold)
    return {"exact_match": 100.0 * exact / total, "f1": 100.0 * f1 / total}


def _v2_raw_scores(
    gold: Mapping[str, Sequence[str]], predictions: Mapping[str, str]
) -> tuple[dict[str, int], dict[str, float]]:
    """Per-question exact and F1 before any threshold (official ``get_raw_scores``)."""
    exact: dict[str, int] = {}
    f1: dict[str, float] = {}
    for qid, truths in gold.items():
        if predictions[qid] is None:  # a missing prediction (missing_as_wrong) is wrong, whatever the gold
            exact[qid], f1[qid] = 0, 0.0
            continue
        exact[qid], f1[qid] = _kept_question_scores(truths, predictions[qid], "2.0")
    return exact, f1


def _missing(ids: Sequence[str], mapping: Mapping[str, object], what: str) -> None:
    missing = [qid for qid in ids if qid not in mapping]
    if missing:
        shown = ", ".join(repr(qid) for qid in missing[:5])
        more = ", ..." if len(missing) > 5 else ""
        raise ValueError(f"{len(missing)} of {counted(len(ids), 'question')} {number_form(len(missing), 'has', 'have')} no {what}: "
                         f"{shown}{more}")


def _apply_no_answer_threshold(
    scores: Mapping[str, float], na_probs: Mapping[str, float], has_answer: Mapping[str, bool], threshold: float,
    predictions: Mapping[str, str | None],
) -> dict[str, float]:
    """Where ``na_prob > threshold`` the model abstains: 1 for an unanswerable question, else 0. A missing
    prediction (``None``, missing_as_wrong) never abstains: it keeps its raw 0."""
    return {qid: (float(not has_answer[qid]) if na_probs[qid] > threshold and predictions[qid] is not None else s)
            for qid, s in scores.items()}


def _eval_dict(exact: Mapping[str, float], f1: Mapping[str, float], ids: Sequence[str]) -> dict[str, float]:
    total = len(ids)
    return {
        "exact": 100.0 * sum(exact[k] for k in ids) / total,
        "f1": 100.0 * sum(f1[k] for k in ids) / total,
        "total": total,
    }


def find_best_threshold(
    predictions: Mapping[str, str],
    raw_scores: Mapping[str, float],
    na_probs: Mapping[str, float],
    has_answer: Mapping[str, bool],
) -> tuple[float, float]:
    """The official ``find_best_thresh``; returns ``(best score in percent, threshold)``.

    Starts from "abstain everywhere" (score = the number of unanswerable
    questions in ``has_answer``), walks the questions by increasing ``na_prob``
    (a stable sort, so ties keep ``na_probs`` order; ids not in ``raw_scores``
    are skipped) answering one more each step, and keeps the first strictly
    best score. Answering an unanswerable question costs 1 whenever its raw
    prediction text is non-empty, even if it normalises to nothing.

    A question that cannot abstain, a missing prediction (``None``, missing_as_wrong,
    scored 0) or an ``na_prob`` of minus infinity, is answered from the start, whose
    threshold is then minus infinity (the official 0.0 otherwise).
    """
    never = [qid for qid in raw_scores if predictions[qid] is None or na_probs.get(qid, 0.0) == -math.inf]
    score = float(sum(1 for k in has_answer if not has_answer[k])) + sum(
        _answering_gain(qid, predictions, raw_scores, has_answer) for qid in never)
    best, threshold = score, (-math.inf if never else 0.0)
    skipped = set(never)
    for qid in sorted(na_probs, key=lambda k: na_probs[k]):
        if qid not in raw_scores or qid in skipped:
            continue
        score += _answering_gain(qid, predictions, raw_scores, has_answer)
        if score > best:
            best, threshold = score, na_probs[qid]
    return 100.0 * best / len(raw_scores), threshold


def _answering_gain(
    qid: str, predictions: Mapping[str, str | None], raw_scores: Mapping[str, float], has_answer: Mapping[str, bool]
) -> float:
    """What answering ``qid`` instead of abstaining adds: its raw score if answerable; on an unanswerable one,
    -1 for a non-empty (or missing) prediction, 0 for ``""``."""
    if has_answer[qid]:
        return raw_scores[qid]
    return -1.0 if predictions[qid] is None or predictions[qid] else 0.0


def _with_missing_probs(na_probs: Mapping[str, float], ids: Sequence[str]) -> dict[str, float]:
    """``na_probs`` in its own order (the order ``find_best_threshold`` breaks ties in, as the official
    script), then minus infinity for each id of ``ids`` it lacks: such a question answers at every threshold,
    whatever the scores' scale."""
    return {**na_probs, **{qid: -math.inf for qid in ids if qid not in na_probs}}


def squad_v2_metrics(
    gold: Mapping[str, Sequence[str]],
    predictions: Mapping[str, str],
    na_probs: Mapping[str, float] | None = None,
    na_prob_thresh: float = NO_ANSWER_THRESHOLD,
    missing_as_wrong: bool = False,
) -> dict[str, float]:
    """The ``evaluate-v2.0.py`` numbers, keys in its order.

    ``exact, f1, total``; ``HasAns_*`` / ``NoAns_*`` where that subset is
    non-empty; with ``na_probs`` also ``best_exact(_thresh), best_f1(_thresh)``.
    A question counts as answerable when its gold list is non-empty (as the
    official ``make_qid_to_has_ans``), though it is scored against ``""`` when
    every listed text normalises to nothing. Every gold id needs a prediction
    (and a no-answer probability, when ``na_probs`` is given): else ValueError.
    With ``missing_as_wrong`` a question without a prediction is scored as a wrong
    answer instead (0, and never abstaining, whatever its no-answer probability, in ``exact``/``f1`` and
    ``best_exact``/``best_f1`` alike; the official script stops with a KeyError on a partial
    predictions file, having left the missing questions out of its ``exact``/``f1`` total).
    """
    _require_questions(gold)
    ids = list(gold)
    if missing_as_wrong:
        predictions = {qid: predictions.get(qid) for qid in ids}
        na_probs = None if na_probs is None else _with_missing_probs(na_probs, ids)
    _missing(ids, predictions, "prediction")
    probs = {qid: 0.0 for qid in predictions} if na_probs is None else na_probs
    _missing(ids, probs, "no-answer probability")
    has_answer = {qid: bool(truths) for qid, truths in gold.items()}
    exact_raw, f1_raw = _v2_raw_scores(gold, predictions)
    exact = _apply_no_answer_threshold(exact_raw, probs, has_answer, na_prob_thresh, predictions)
    f1 = _apply_no_answer_threshold(f1_raw, probs, has_answer, na_prob_thresh, predictions)
    result = _eval_dict(exact, f1, ids)
    for prefix, wanted in NO_ANSWER_SUBSETS.items():  # the official script's subsets, as summaries name them too
        subset = [qid for qid in ids if has_answer[qid] == wanted]
        if subset:
            result.update({TaskEntry.subset_metric(prefix, k): v for k, v in _eval_dict(exact, f1, subset).items()})
    if na_probs is not None:
        best_exact, exact_thresh = find_best_threshold(predictions, exact_raw, na_probs, has_answer)
        best_f1, f1_thresh = find_best_threshold(predictions, f1_raw, na_probs, has_answer)
        result.update(
            {"best_exact": best_exact, "best_exact_thresh": exact_thresh, "best_f1": best_f1, "best_f1_thresh": f1_thresh}
        )
    return result


def squad_metrics(
    gold: Mapping[str, Sequence[str]],
    predictions: Mapping[str, str],
    version: str,
    na_probs: Mapping[str, float] | None = None,
    missing_as_wrong: bool = False,
) -> dict[str, float]:
    """Dispatch on ``version``: "1.1" (``na_probs`` must be None; a missing prediction
    scores 0, as in the official script) or "2.0" (see ``missing_as_wrong`` there)."""
    if squad_version(version) == "1.1":
        if na_probs is not None:
            raise ValueError("no-answer probabilities need SQuAD 2.0 scoring")
        return squad_v1_metrics(gold, predictions)
    return squad_v2_metrics(gold, predictions, na_probs, missing_as_wrong=missing_as_wrong)


def no_answer_threshold_curve(
    no_answer_scores: np.ndarray, answer_f1: np.ndarray, abstain_f1: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Mean F1 at every no-answer threshold ``t`` (abstain where ``no_answer_score > t``).

    ``answer_f1``/``abstain_f1``: each question's F1 when answering and when
    abstaining. The thresholds are ``-inf`` (abstain on all; left out when a score
    is ``-inf``) and each distinct score (answer every question up to it), so
    every point is a threshold the rule can really apply. Cumulative sums, no loop.
    """
    scores = np.asarray(no_answer_scores, dtype=np.float64)
    if not scores.size:
        raise ValueError("no questions to tune a no-answer threshold on")
    order = np.argsort(scores, kind="stable")
    ranked = scores[order]
    gain = (np.asarray(answer_f1, dtype=np.float64) - abstain_f1)[order]
    totals = float(np.sum(abstain_f1)) + np.concatenate([[0.0], np.cumsum(gain)])
    valid = np.concatenate([[ranked[0] > -np.inf], np.append(ranked[1:] != ranked[:-1], True)])
    return np.concatenate([[-np.inf], ranked])[valid], totals[valid] / len(scores)


def best_no_answer_threshold(
    no_answer_scores: np.ndarray, answer_f1: np.ndarray, abstain_f1: np.ndarray
) -> tuple[float, float]:
    """``(threshold, mean F1)`` at the best point of :func:`no_answer_threshold_curve`;
    ties go to the lowest threshold (abstain more), as the official ``find_best_thresh``."""
    thresholds, f1 = no_answer_threshold_curve(no_answer_scores, answer_f1, abstain_f1)
    best = int(np.argmax(f1))
    return float(thresholds[best]), float(f1[best])
