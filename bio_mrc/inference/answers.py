"""Decoding with the settings saved with a model: the tuned no-answer thresholds."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Iterator, Mapping, Sequence

from .. import registry
from ..decoding.postprocess import DecodeConfig, decode
from ..decoding.shares import CONFIDENCE_SPANS
from ..decoding.window_outputs import WindowOutputs
from ..answer_text import normalize_answer
from ..types import AnswerSpan, Example, Prediction
from .calibrators import calibrated_probability, raw_confidence


def threshold_key(decoding: str) -> str:
    """Where a decoding's tuned threshold is saved: one per no-answer score, since a
    threshold tuned on one score means nothing for another."""
    return registry.decoding(decoding).threshold_key


def apply_no_answer_threshold(predictions: Sequence[Prediction], threshold: float | None) -> list[Prediction]:
    """Abstain where ``no_answer_score > threshold`` (never, when the threshold is ``None``)."""
    for prediction in predictions:
        prediction.abstain = (
            threshold is not None and prediction.no_answer_score is not None and prediction.no_answer_score > threshold
        )
    return list(predictions)


def decode_with_thresholds(
    outputs: WindowOutputs,
    examples: Sequence[Example],
    decoding: str,
    config: DecodeConfig,
    thresholds: dict[str, float] | None = None,
) -> list[Prediction]:
    """Decode, then apply the no-answer threshold tuned for this decoding, if there is one."""
    predictions = decode(outputs, examples, decoding, config)
    return apply_no_answer_threshold(predictions, (thresholds or {}).get(threshold_key(decoding)))


def decode_answers(
    outputs: WindowOutputs,
    examples: Sequence[Example],
    decoding: str,
    config: DecodeConfig,
    thresholds: dict[str, float] | None = None,
    multi_span: bool = False,
    min_span_probability: float | None = None,
    calibrators: Mapping[str, Mapping] | None = None,
    span_count_rules: Mapping[str, float] | None = None,
) -> list[Prediction]:
    """Answers as a user asks for them, with the saved settings: ``n_best`` single spans, or
    with ``multi_span`` several answers: the spans of highest posterior that maximise the expected exact-match
    F1 for the BIO decoding, the non-overlapping n-best spans (:func:`nbest_multi_span`) for span, those tag spans where
    they are several and else the n-best for joint (the registry's ``multi_span`` of each), each
    further span kept by the decoding's span-count rule (:func:`span_count_threshold`). With the default
    ``require_answer`` no answerable question is left without a span; "no answer" is the saved no-answer
    threshold's decision (``abstain``). Each carries its raw ``confidence`` in its best span (an abstention
    included; a multi-span answer's in its first span, as the single answer would give it:
    :func:`add_first_span_confidence`) and, with a calibrator for the decoding, the ``probability`` that it is right;
    each span of a multi-span answer carries its own ``probability``. The confidence and the n-best shares are of the
    best :data:`CONFIDENCE_SPANS` spans whatever ``n_best`` keeps or asks for (decoded at least that many); the first
    ``n_best`` are the candidates."""
    config = replace(config, multi_span=multi_span)
    pooled = replace(config, multi_span=False, n_best=max(config.n_best, CONFIDENCE_SPANS))
    threshold, calibrator = (thresholds or {}).get(threshold_key(decoding)), (calibrators or {}).get(decoding)
    if not multi_span:
        predictions = decode_with_thresholds(outputs, examples, decoding, pooled, thresholds)
        add_confidence(predictions, decoding, calibrator, threshold)
        return kept_spans(predictions, config.n_best)
    predictions = decode_with_thresholds(outputs, examples, decoding, config, thresholds)
    predictions = with_confidence_spans(predictions, outputs, examples, decoding, config)
    single = registry.decoding(decoding).single_nbest(predictions, lambda: decode(outputs, examples, decoding, pooled))
    chosen = config.min_span_probability if min_span_probability is None else min_span_probability
    answers = multi_span_answers(predictions, decoding, span_count_threshold(decoding, chosen, span_count_rules), config.n_best)
    add_first_span_confidence(answers, single, decoding, calibrator, threshold)
    return answers


def add_first_span_confidence(
    answers: Sequence[Prediction], single: Sequence[Prediction], decoding: str, calibrator: Mapping | None,
    threshold: float | None = None,
) -> None:
    """Set each multi-span answer's ``confidence`` and ``probability`` as the decoding's single answer would give them
    for the answer's first span: its share of ``single``'s n-best spans (the same questions' single answers, of their
    best :data:`CONFIDENCE_SPANS`), read at the best-ranked of them whose text is the first span's once normalised (rightness
    is judged on the text), so the calibrator, fitted on single answers, applies; 0 where none is (a span the single
    decoding does not rank among them). An abstention's stay those of the abstention."""
    led = [replace(answer, spans=led_by(answer.spans[0], one.spans) if answer.spans else [])
           for answer, one in zip(answers, single)]
    add_confidence(led, decoding, calibrator, threshold)
    for answer, probe in zip(answers, led):
        answer.confidence, answer.probability = probe.confidence, probe.probability


def led_by(first: AnswerSpan, spans: Sequence[AnswerSpan]) -> list[AnswerSpan]:
    """``spans`` (n-best, best first) led by the best-ranked one whose text is ``first``'s once normalised, the others
    after it (a share needs them all, in any order); none where no span has that text."""
    text = normalize_answer(first.text)
    for k, span in enumerate(spans):
        if normalize_answer(span.text) == text:
            return [span, *spans[:k], *spans[k + 1:]]
    return []


def with_confidence_spans(
    predictions: list[Prediction], outputs: WindowOutputs, examples: Sequence[Example], decoding: str, config: DecodeConfig
) -> list[Prediction]:
    """Multi-span ``predictions`` decoded with ``config`` with at least :data:`CONFIDENCE_SPANS` n-best spans where the
    decoding's answers read the n-best spans' shares (its registry entry's ``with_nbest``): the first ``n_best`` stay the
    candidates (:func:`multi_span_answers`), the others take their part in every share, as at the default n-best."""
    if config.n_best >= CONFIDENCE_SPANS:
        return predictions
    wider = replace(config, multi_span=False, n_best=CONFIDENCE_SPANS)  # the same n-best spans, no tag spans
    return registry.decoding(decoding).with_nbest(predictions, lambda: decode(outputs, examples, decoding, wider))


def kept_spans(predictions: list[Prediction], n_best: int) -> list[Prediction]:
    """Each prediction's ``n_best`` best spans: its confidence, a share of the best :data:`CONFIDENCE_SPANS` spans
    (what a calibrator was fitted on), stays what it is whatever ``n_best`` a user asks for."""
    for prediction in predictions:
        prediction.spans = prediction.spans[:n_best]
    return predictions


def span_count_threshold(decoding: str, chosen: float | None, tuned: Mapping[str, float] | None = None) -> float:
    """The probability a span after the first needs to join ``decoding``'s multi-span answer: ``chosen`` when
    given, else the value tuned for the model on multi-span questions, else the decoding's default (registry)."""
    if chosen is not None:
        return chosen
    return float((tuned or {}).get(decoding, registry.decoding(decoding).min_span_probability))


def multi_span_answers(
    predictions: Sequence[Prediction], decoding: str, min_probability: float, n_best: int | None = None
) -> list[Prediction]:
    """Decoded predictions (a tag-sequence decoding's multi-span ones, another's n-best) -> multi-span answers
    under the span-count rule with ``min_probability``, of the first ``n_best`` n-best spans (all with None)."""
    return registry.decoding(decoding).keep_spans(predictions, min_probability, n_best)


def multi_span_answers_at(
    predictions: Sequence[Prediction], decoding: str, thresholds: Sequence[float], n_best: int | None = None
) -> Iterator[list[Prediction]]:
    """:func:`multi_span_answers` at each of ``thresholds`` in turn (:meth:`~bio_mrc.registry.DecodingEntry.keep_spans_at`:
    what the rule reads of a prediction whatever the threshold read once)."""
    return registry.decoding(decoding).keep_spans_at(predictions, thresholds, n_best)


def add_confidence(predictions: Sequence[Prediction], decoding: str, calibrator: Mapping | None, threshold: float | None = None) -> None:
    """Set each prediction's raw ``confidence`` in its answer (with the decoding's no-answer ``threshold``,
    abstentions included) and, given the decoding's calibrator, its ``probability``."""
    raw = raw_confidence(predictions, threshold)
    calibrated = calibrated_probability(predictions, decoding, calibrator) if calibrator else [None] * len(raw)
    for prediction, value, probability in zip(predictions, raw.tolist(), list(calibrated)):
        prediction.confidence = value
        prediction.probability = None if probability is None else float(probability)


def no_answer_probability(score: float | None) -> float:
    """A no-answer score squashed to (0, 1) for the official ``na_prob`` file (monotone, so
    the official ``best_*`` thresholds are thresholds on the score itself)."""
    if score is None:
        raise ValueError("this decoding has no no-answer score")
    if math.isinf(score):
        return 1.0 if score > 0 else 0.0
    return 1.0 / (1.0 + math.exp(-score)) if score > -700 else 0.0
