"""One cell of a comparison: one model decoded one way on the evaluation questions, and scored
with the official metric of its data (per question, so that cells can be compared question by question)."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from .. import registry
from ..answer_text import without_blank_edges
from ..decoding.postprocess import DecodeConfig, GroupedTags, decode_tag_groups, merged_tag_groups
from ..decoding.window_outputs import WindowOutputs
from ..features.config import FeatureConfig
from ..features.targets import TAGGER_GOLD, TaggerGold
from ..inference.answers import apply_no_answer_threshold, decode_answers, multi_span_answers, span_count_threshold, threshold_key
from ..inference.calibrators import calibrated_probability, raw_confidence
from ..metrics.calibration_error import expected_calibration_error, reliability_bins
from ..metrics.entity_scores import tag_scores
from ..tags import TAG_B, TAG_I, TAG_O, spans_to_tags
from ..types import Example, Prediction
from .results import PER_QUESTION

if TYPE_CHECKING:  # a type only: the splits' loading does not change how a cell scores
    from .comparison_splits import Split

TAG_LETTERS = np.array(["B", "I", "O"])
DEFAULT_FEATURES = FeatureConfig()  # a model trained with the default windows and targets


@dataclass
class DecodedCell:
    """A decoding's predictions on some questions, its time, (a tag-sequence decoding) the gold and predicted tag
    sequences, and (span-list answers) the span-count rule's threshold."""

    predictions: list[Prediction]
    seconds: float
    gold_tags: list[list[str]] | None = None
    predicted_tags: list[list[str]] | None = None
    min_span_probability: float | None = None  # span-list answers: the span-count rule's threshold they were kept by


def decode_cell(
    outputs: WindowOutputs, split: Split, decoding: str, config: DecodeConfig, threshold: float | None,
    span_count_rules: dict[str, float] | None = None, features: FeatureConfig = DEFAULT_FEATURES,
) -> DecodedCell:
    """Decode one model one way, as the split's task decodes (:meth:`~bio_mrc.registry.TaskEntry.decode_config`):
    single answers (an answer required unless questions may have none), or every answer span kept by the
    decoding's span-count rule (``config.min_span_probability``, else the tuned ``span_count_rules``, else the
    decoding's default). A tag-sequence decoding merges windows once, for its answers and its tag scores, whose
    gold is what the model's tagger learned (``features``: the run's windows and targets, its ``tag_mentions``)."""
    config = split.kind.decode_config(config)
    min_probability = span_count_threshold(decoding, config.min_span_probability, span_count_rules)
    rule = min_probability if config.multi_span else None
    started = time.perf_counter()
    merged = merged_tag_groups(decoding, outputs, len(split.examples))
    if merged is None:  # a decoding without a tag sequence
        thresholds = {} if threshold is None else {threshold_key(decoding): threshold}
        predictions = decode_answers(outputs, split.examples, decoding, config, thresholds, multi_span=config.multi_span,
                                     min_span_probability=min_probability)
        return DecodedCell(predictions, time.perf_counter() - started, min_span_probability=rule)
    predictions = decode_tag_groups(decoding, merged, split.examples, config)
    if config.multi_span:
        predictions = multi_span_answers(predictions, decoding, min_probability)
    predictions = apply_no_answer_threshold(predictions, threshold)
    seconds = time.perf_counter() - started
    tagged = predictions if config.multi_span else apply_no_answer_threshold(
        decode_tag_groups(decoding, merged, split.examples, replace(config, multi_span=True)), threshold
    )
    gold, predicted = tag_sequences(merged, split.examples, tagged, TAGGER_GOLD[features.tag_mentions])
    return DecodedCell(predictions, seconds, gold, predicted, rule)


def tag_sequences(
    grouped: GroupedTags, examples: Sequence[Example], predictions: Sequence[Prediction], tagger_gold: Callable[[Example], TaggerGold],
) -> tuple[list[list[str]], list[list[str]]]:
    """Gold and predicted (every predicted span) tags over each example's tagged tokens. The gold is the first
    annotator's spans (:func:`~bio_mrc.answer_text.without_blank_edges`) as the tagger learns them
    (``tagger_gold``, an entry of :data:`~bio_mrc.features.targets.TAGGER_GOLD`); the tokens of the spans it is
    not scored on in training are in neither sequence, so a tag there is neither right nor wrong."""
    gold, pred = [], []
    for (merged, row), example, prediction in zip(grouped.rows(), examples, predictions):
        n_tokens = int(merged.mask[row].sum())
        offsets, mask = merged.offsets[row, :n_tokens], merged.mask[row, :n_tokens]
        learned = tagger_gold(replace(example, answers=without_blank_edges(example.context, example.answers[:1] if example.answers else ())))
        kept = spans_to_tags(offsets, mask, learned.unscored) == TAG_O
        gold.append(TAG_LETTERS[_kept_tags(spans_to_tags(offsets, mask, learned.answers[0] if learned.answers else ()), kept)].tolist())
        predicted = [] if prediction.abstain else [(s.start, s.end) for s in prediction.spans]
        pred.append(TAG_LETTERS[_kept_tags(spans_to_tags(offsets, mask, predicted), kept)].tolist())
    return gold, pred


def _kept_tags(tags: np.ndarray, kept: np.ndarray) -> np.ndarray:
    """The ``kept`` tokens' ``tags``; a span whose B is left out begins at its first kept token, so that the rest of
    a span reaching past an unscored mention is scored as a span of its own."""
    positions = np.arange(len(tags))
    last_b = np.maximum.accumulate(np.where(tags == TAG_B, positions, -1))
    previous_kept = np.concatenate(([-1], np.maximum.accumulate(np.where(kept, positions, -1))))[:-1]
    begins = kept & (tags == TAG_I) & (last_b >= 0) & ~kept[np.maximum(last_b, 0)] & (previous_kept < last_b)
    return np.where(begins, TAG_B, tags)[kept]


def score_cell(split: Split, decoded: DecodedCell) -> dict[str, Any]:
    """Per-question scores, the columns of the split's task (:meth:`~bio_mrc.registry.TaskEntry.scores`: SQuAD's
    official EM and F1 (0..100), MultiSpanQA's each question's share of the micro-averaged sums, ``counts``, ...)
    and each question's answer as text."""
    task, ids = split.kind, split.ids
    by_id = {p.id: p for p in decoded.predictions}
    cell: dict[str, Any] = {"decode_seconds": decoded.seconds}
    columns = {name: np.asarray(values).tolist() for name, values in task.scores(split.gold, decoded.predictions, ids).items()}
    own = {name: values for name, values in columns.items() if name not in PER_QUESTION}
    cell.update({name: values for name, values in columns.items() if name in PER_QUESTION}, **({"scores": own} if own else {}))
    cell["answers"] = [task.answer_text(by_id[qid]) for qid in ids]
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
        parts[0].min_span_probability if parts else None,
    )


def calibration_cell(decoded: DecodedCell, split: Split, decoding: str, calibrator: dict | None, threshold: float | None = None) -> dict[str, Any]:
    """How well the decoding's confidence in its answer matches how often that answer is right
    (the task's ``right``: SQuAD's official F1 > 0.5, an abstention scored with the no-answer ``threshold``),
    before and after the calibrator fitted on the tuning questions: ECE and the
    reliability bins of each, and (``selective``) each question's confidences and rightness, from
    which the report draws risk–coverage curves and bootstraps AURC. Empty for a task without a single answer to be
    right (MultiSpanQA)."""
    if split.kind.right is None:
        return {}
    raw = raw_confidence(decoded.predictions, threshold)
    right = registry.resolve(split.kind.right)(split.kind, decoded.predictions, split.gold)
    measured = {"raw": raw} | ({"calibrated": calibrated_probability(decoded.predictions, decoding, calibrator)} if calibrator else {})
    return {"calibration": {
        name: {"ece": expected_calibration_error(confidence, right), **_bins(confidence, right)}
        for name, confidence in measured.items()
    }, "selective": {"right": right.astype(int).tolist(), "confidence": {name: c.tolist() for name, c in measured.items()}}}


def _bins(confidence: np.ndarray, right: np.ndarray) -> dict[str, list]:
    bins = reliability_bins(confidence, right)
    as_json = lambda values: [None if np.isnan(v) else float(v) for v in values]  # noqa: E731 (empty bins: null)
    return {"bin_count": bins.count.tolist(), "bin_confidence": as_json(bins.confidence), "bin_accuracy": as_json(bins.accuracy)}
