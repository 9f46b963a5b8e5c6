"""MultiSpanQA's official metrics (Li et al., NAACL 2022), as one pure function.

Same arithmetic as ``multi_span_evaluate`` in the official ``src/eval_script.py``
of github.com/haonan-li/MultiSpanQA; only the key names differ (the script says
``exact_match_*``/``em_*`` and ``overlap_*``, here ``em_*`` and ``pm_*``).
"""

from __future__ import annotations

import difflib
from typing import Mapping, Sequence

import numpy as np

from .shared_scores import kept_score
from .squad_official import normalize_answer


def _normalized_set(texts: Sequence[str], qid: str, side: str) -> set[str]:
    if isinstance(texts, str):  # a bare string would be read as a list of characters
        raise ValueError(f"{side} for question {qid!r} must be a list of span texts, got a string")
    return {normalize_answer(t) for t in texts}


def _longest_common_substring(gold: str, pred: str) -> int:
    # kept while a block shares scores (shared_question_scores): the answers a tuning's grid gives share most spans
    return kept_score(("multispan-lcs", gold, pred), lambda: _matched_characters(gold, pred))


def _matched_characters(gold: str, pred: str) -> int:
    # The official script's exact call (autojunk included), so long spans score as there.
    return difflib.SequenceMatcher(None, gold, pred).find_longest_match(0, len(gold), 0, len(pred)).size


def partial_match(gold: set[str], pred: set[str]) -> tuple[float, float]:
    """One question's partial-match credit ``(precision credit, recall credit)``.

    Each predicted span earns the best ``LCS / len(prediction)`` over the gold
    spans and each gold span the best ``LCS / len(gold)`` over the predictions,
    LCS being the longest common substring in characters of the normalised texts.
    """
    no_prediction = not pred or pred == {""}
    if not gold:
        return (1.0, 1.0) if no_prediction else (0.0, 0.0)
    if no_prediction:
        return 0.0, 0.0
    golds, preds = sorted(gold), sorted(pred)
    common = [[_longest_common_substring(g, p) for p in preds] for g in golds]
    p_credit = sum(max(row[j] / len(p) if row[j] else 0.0 for row in common) for j, p in enumerate(preds))
    r_credit = sum(max(c / len(g) if c else 0.0 for c in row) for g, row in zip(golds, common))
    return p_credit, r_credit


#: Columns of :func:`question_counts`: what one question adds to the micro-averaged sums.
COUNT_COLUMNS = ("em_correct", "pm_precision_credit", "pm_recall_credit", "n_pred", "n_gold")
METRIC_NAMES = ("em_precision", "em_recall", "em_f1", "pm_precision", "pm_recall", "pm_f1")


def question_counts(gold_texts: Sequence[str], predicted_texts: Sequence[str], qid: str = "") -> tuple[float, ...]:
    """One question's share of the micro-averaged sums, in the order of ``COUNT_COLUMNS``."""
    g = _normalized_set(gold_texts, qid, "gold")
    p = _normalized_set(predicted_texts, qid, "prediction")
    credit_p, credit_r = partial_match(g, p)
    return float(1 if not g and not p else len(g & p)), credit_p, credit_r, float(max(len(p), 1)), float(max(len(g), 1))


def kept_question_counts(gold_texts: Sequence[str], predicted_texts: Sequence[str], qid: str = "") -> tuple[float, ...]:
    """:func:`question_counts`, computed once for each question, gold and answer while a block shares scores
    (:func:`~.shared_scores.shared_question_scores`): a file's official metrics and its per-question columns alike."""
    key = ("multispan", qid, _frozen(gold_texts), _frozen(predicted_texts))
    return kept_score(key, lambda: question_counts(gold_texts, predicted_texts, qid))


def _frozen(texts: Sequence[str]) -> str | tuple[str, ...]:
    # a bare string stays one (question_counts refuses it), never the tuple of its characters
    return texts if isinstance(texts, str) else tuple(texts)


def metrics_from_counts(sums: Sequence[float]) -> dict[str, float]:
    """The six metrics (percent) from the column sums of :func:`question_counts`."""
    em_correct, credit_p, credit_r, n_pred, n_gold = sums
    em = _prf(em_correct, em_correct, n_pred, n_gold)
    pm = _prf(credit_p, credit_r, n_pred, n_gold)
    return dict(zip(METRIC_NAMES, (*em, *pm)))


def f1_from_count_sums(sums: np.ndarray, column: str = "em") -> np.ndarray:
    """EM-F1 (``column="em"``) or PM-F1 (``"pm"``) in percent of every row of ``(..., 5)`` count sums."""
    sums = np.asarray(sums, dtype=np.float64)
    correct_p, correct_r = (sums[..., 0], sums[..., 0]) if column == "em" else (sums[..., 1], sums[..., 2])
    p = np.divide(correct_p, sums[..., 3], out=np.zeros_like(correct_p), where=sums[..., 3] > 0)
    r = np.divide(correct_r, sums[..., 4], out=np.zeros_like(correct_r), where=sums[..., 4] > 0)
    return 100 * np.divide(2 * p * r, p + r, out=np.zeros_like(p), where=p + r > 0)


def _prf(correct_p: float, correct_r: float, n_pred: int, n_gold: int) -> tuple[float, float, float]:
    p = correct_p / n_pred if n_pred > 0 else 0.0
    r = correct_r / n_gold if n_gold > 0 else 0.0
    f = 2 * p * r / (p + r) if p + r > 0 else 0.0
    return 100 * p, 100 * r, 100 * f


def multispan_metrics(gold: Mapping[str, Sequence[str]], predictions: Mapping[str, Sequence[str]]) -> dict[str, float]:
    """``em_precision, em_recall, em_f1, pm_precision, pm_recall, pm_f1`` in percent (0..100).

    ``gold`` and ``predictions`` map every question id to a list of span
    texts; both must hold exactly the same ids (the official script asserts
    this), otherwise ``ValueError`` lists the missing and extra ids.

    Each list is normalised with :func:`normalize_answer` and made a *set*, so
    duplicates (also texts equal only after normalisation) count once, and
    a prediction ``""`` stays in the set as a span of its own. Over all
    questions, micro-averaged:

    * ``n_gold = sum(max(|gold set|, 1))``, ``n_pred = sum(max(|pred set|, 1))``:
      an empty list still counts as one span in the denominator.
    * EM: ``correct = sum(|gold set & pred set|)``, plus 1 for a question whose
      gold and prediction are both empty lists. ``precision = correct / n_pred``,
      ``recall = correct / n_gold``.
    * PM: per question, each predicted span earns ``max over gold spans of
      LCS / len(pred)`` and each gold span ``max over predicted spans of LCS /
      len(gold)``, LCS being the length in characters of the longest common
      substring (``difflib.SequenceMatcher.find_longest_match`` as in the official
      script, whose autojunk heuristic ignores very frequent characters of a
      prediction of 200+ characters). ``precision = sum of prediction credits /
      n_pred``, ``recall = sum of gold credits / n_gold``. A question with no
      gold spans scores (1, 1) when the prediction is empty or ``{""}`` and
      (0, 0) otherwise; an empty or ``{""}`` prediction for a question with
      gold spans scores (0, 0).
    * ``f1 = 2 p r / (p + r)``, 0 when ``p + r == 0``; any zero denominator gives 0.
    """
    missing = sorted(set(gold) - set(predictions))
    extra = sorted(set(predictions) - set(gold))
    if missing or extra:
        raise ValueError(
            f"predictions must cover exactly the gold question ids: {len(missing)} missing "
            f"(e.g. {missing[:5]}), {len(extra)} not in gold (e.g. {extra[:5]})"
        )
    totals = [0.0] * len(COUNT_COLUMNS)
    for qid, gold_texts in gold.items():  # summed in question order, as the official script
        totals = [t + c for t, c in zip(totals, kept_question_counts(gold_texts, predictions[qid], qid))]
    return metrics_from_counts(totals)
