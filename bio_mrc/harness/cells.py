"""One cell of a comparison: one model decoded one way on the evaluation questions, and scored
with the official metric of its data (per question, so that cells can be compared question by question)."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from .. import registry
from ..decoding.postprocess import DecodeConfig, decode_merged_tags, merge_tag_log_probs
from ..decoding.window_outputs import MergedTokens, WindowOutputs
from ..inference.answers import apply_no_answer_threshold, decode_answers, multi_span_answers, span_count_threshold, threshold_key
from ..inference.calibrators import answer_is_right, calibrated_probability, raw_confidence
from ..metrics.calibration_error import expected_calibration_error, reliability_bins
from ..metrics.multispan_official import question_counts
from ..metrics.squad_official import per_question_scores
from ..metrics.entity_scores import tag_scores
from ..tags import spans_to_tags
from ..types import Example, Prediction

if TYPE_CHECKING:  # a type only: the splits' loading does not change how a cell scores
    from .comparison_splits import Split

TAG_LETTERS = np.array(["B", "I", "O"])


@dataclass
class DecodedCell:
    """A decoding's predictions on some questions, its time, and (BIO) the gold and predicted tag sequences."""

    predictions: list[Prediction]
    seconds: float
    gold_tags: list[list[str]] | None = None
    predicted_tags: list[list[str]] | None = None


def decode_cell(
    outputs: WindowOutputs, split: Split, decoding: str, config: DecodeConfig, threshold: float | None,
    span_count_rules: dict[str, float] | None = None,
) -> DecodedCell:
    """Decode one model one way: single answers for SQuAD (``require_answer`` on v1.1), every answer
    span for MultiSpanQA, kept by the decoding's span-count rule (``config.min_span_probability``, else the
    tuned ``span_count_rules``, else the decoding's default). The BIO decoding merges windows once, for its
    answers and its tag scores."""
    multi_span = split.kind.multi_span_gold
    config = replace(config, require_answer=not split.kind.no_answer)
    min_probability = span_count_threshold(decoding, config.min_span_probability, span_count_rules)
    started = time.perf_counter()
    if not registry.decoding(decoding).decodes_tags:
        thresholds = {} if threshold is None else {threshold_key(decoding): threshold}
        predictions = decode_answers(outputs, split.examples, decoding, config, thresholds, multi_span=multi_span,
                                     min_span_probability=min_probability)
        return DecodedCell(predictions, time.perf_counter() - started)
    merged = merge_tag_log_probs(outputs, len(split.examples))
    predictions = decode_merged_tags(merged, split.examples, replace(config, multi_span=multi_span))
    if multi_span:
        predictions = multi_span_answers(predictions, decoding, min_probability)
    predictions = apply_no_answer_threshold(predictions, threshold)
    seconds = time.perf_counter() - started
    tagged = predictions if multi_span else apply_no_answer_threshold(
        decode_merged_tags(merged, split.examples, replace(config, multi_span=True)), threshold
    )
    gold, predicted = tag_sequences(merged, split.examples, tagged)
    return DecodedCell(predictions, seconds, gold, predicted)


def tag_sequences(merged: MergedTokens, examples: Sequence[Example], predictions: Sequence[Prediction]) -> tuple[list[list[str]], list[list[str]]]:
    """Gold (first annotator) and predicted (every predicted span) tags over each example's tagged tokens."""
    gold, pred = [], []
    for row, (example, prediction) in enumerate(zip(examples, predictions)):
        n_tokens = int(merged.mask[row].sum())
        offsets, mask = merged.offsets[row, :n_tokens], merged.mask[row, :n_tokens]
        gold.append(TAG_LETTERS[spans_to_tags(offsets, mask, example.answers[0] if example.answers else ())].tolist())
        predicted = [] if prediction.abstain else [(s.start, s.end) for s in prediction.spans]
        pred.append(TAG_LETTERS[spans_to_tags(offsets, mask, predicted)].tolist())
    return gold, pred


def score_cell(split: Split, decoded: DecodedCell) -> dict[str, Any]:
    """Per-question scores: official EM and F1 (0..100) for SQuAD; for MultiSpanQA each question's
    share of the micro-averaged sums (``counts``, columns of :data:`bio_mrc.metrics.multispan_official.COUNT_COLUMNS`)."""
    by_id = {p.id: p for p in decoded.predictions}
    ids, gold = split.ids, split.gold
    cell: dict[str, Any] = {"decode_seconds": decoded.seconds}
    if split.kind.multi_span_gold:
        texts = {qid: by_id[qid].answers for qid in ids}
        cell["counts"] = [list(question_counts(gold[qid], texts[qid], qid)) for qid in ids]
        cell["answers"] = ["\n".join(sorted(texts[qid])) for qid in ids]
    else:
        answers = {qid: by_id[qid].answer for qid in ids}
        em, f1 = per_question_scores(gold, answers, ids, split.version)
        cell.update(em=em.tolist(), f1=f1.tolist(), answers=[answers[qid] for qid in ids])
    if decoded.gold_tags is not None:  # tag-level scores of the most probable tag sequence
        cell["tag_scores"] = tag_scores(decoded.gold_tags, decoded.predicted_tags, strict=True)
    return cell


def pool(parts: Sequence[DecodedCell], order: Sequence[str]) -> DecodedCell:
    """The cells of several folds as one, predictions in the order of the question ids ``order``."""
    by_id = {p.id: p for part in parts for p in part.predictions}
    tagged = all(part.gold_tags is not None for part in parts)
    return DecodedCell(
        [by_id[qid] for qid in order], sum(part.seconds for part in parts),
        [t for part in parts for t in part.gold_tags] if tagged else None,
        [t for part in parts for t in part.predicted_tags] if tagged else None,
    )


def calibration_cell(decoded: DecodedCell, split: Split, decoding: str, calibrator: dict | None, threshold: float | None = None) -> dict[str, Any]:
    """How well the decoding's confidence in its answer matches how often that answer is right
    (official F1 > 0.5; on SQuAD 2.0 an abstention is an answer, scored with the no-answer
    ``threshold``), before and after the calibrator fitted on the tuning questions: ECE and the
    reliability bins of each, and (``selective``) each question's confidences and rightness, from
    which the report draws risk–coverage curves and bootstraps AURC. Empty for MultiSpanQA (no single
    answer to be right)."""
    if split.kind.multi_span_gold:
        return {}
    raw = raw_confidence(decoded.predictions, threshold)
    right = answer_is_right(decoded.predictions, split.gold, split.version)
    measured = {"raw": raw} | ({"calibrated": calibrated_probability(decoded.predictions, decoding, calibrator)} if calibrator else {})
    return {"calibration": {
        name: {"ece": expected_calibration_error(confidence, right), **_bins(confidence, right)}
        for name, confidence in measured.items()
    }, "selective": {"right": right.astype(int).tolist(), "confidence": {name: c.tolist() for name, c in measured.items()}}}


def _bins(confidence: np.ndarray, right: np.ndarray) -> dict[str, list]:
    bins = reliability_bins(confidence, right)
    as_json = lambda values: [None if np.isnan(v) else float(v) for v in values]  # noqa: E731 (empty bins: null)
    return {"bin_count": bins.count.tolist(), "bin_confidence": as_json(bins.confidence), "bin_accuracy": as_json(bins.accuracy)}
