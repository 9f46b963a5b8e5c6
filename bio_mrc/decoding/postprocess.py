"""Window outputs -> one :class:`Prediction` per example, for each decoding.

Framework-agnostic: numpy arrays in, data-model objects out, no I/O.

* ``span``: BERT's rule, the n-best ``s_i + e_j`` over all windows of a
  question, with the ``[CLS]`` null score (minimum over windows).
* ``bio``: windows merged token by token (maximum-context rule), tags decoded
  to one or several spans (see :mod:`bio_mrc.decoding.tags`).
* ``joint``: the span head and the BIO head as a product of experts. A span
  ``(i, j)`` scores ``log P_start(i) + log P_end(j)`` plus the BIO head's
  log-likelihood ratio of tagging exactly that span (``B I … I``) against
  tagging those tokens ``O``:
  ``log p_B(i) - log p_O(i) + Σ_{t=i+1..j} (log p_I(t) - log p_O(t))``. That is
  the log-probability of the whole tag sequence with only this span, up to a
  constant, so the two heads are combined on one probabilistic scale. The null
  score is ``log P_start(0) + log P_end(0)`` (all tokens O adds 0).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..types import TAG_B, TAG_I, TAG_O, AnswerSpan, Example, Prediction
from .spans import best_spans, null_scores
from .tags import decode_bio
from .windows import WindowOutputs, merge_windows

DECODINGS = ("span", "bio", "joint")
BIO_NULL_SCORES = ("span", "tags")


@dataclass(frozen=True)
class DecodeConfig:
    """Decoding options shared by the CLI, the harness and :class:`AnswerExtractor`."""

    n_best: int = 20
    max_answer_length: int = 30
    bio_scheme: str = "viterbi"
    bio_score: str = "mean"
    bio_min_score: float = 0.0
    bio_null: str = "span"
    require_answer: bool = True


def _log_softmax(x: np.ndarray, mask: np.ndarray) -> np.ndarray:
    x = np.where(mask, x.astype(np.float64), -np.inf)
    return x - np.logaddexp.reduce(x, axis=-1, keepdims=True)


def _collect(
    examples: Sequence[Example],
    ex: np.ndarray,
    char_start: np.ndarray,
    char_end: np.ndarray,
    score: np.ndarray,
    n_best: int,
    null: np.ndarray | None,
) -> list[Prediction]:
    """Deduplicate (example, char span) keeping the best score, rank per example, build predictions."""
    valid = np.isfinite(score)
    ex, char_start, char_end, score = ex[valid], char_start[valid], char_end[valid], score[valid]
    order = np.lexsort((-score, char_end, char_start, ex))
    ex, char_start, char_end, score = ex[order], char_start[order], char_end[order], score[order]
    first = np.ones(len(ex), dtype=bool)
    first[1:] = (ex[1:] != ex[:-1]) | (char_start[1:] != char_start[:-1]) | (char_end[1:] != char_end[:-1])
    ex, char_start, char_end, score = ex[first], char_start[first], char_end[first], score[first]
    order = np.lexsort((-score, ex))
    ex, char_start, char_end, score = ex[order], char_start[order], char_end[order], score[order]
    counts = np.bincount(ex, minlength=len(examples))
    rank = np.arange(len(ex)) - np.concatenate([[0], np.cumsum(counts)[:-1]])[ex]
    keep = rank < n_best

    predictions = [Prediction(e.id) for e in examples]
    for row, s, e, sc in zip(ex[keep].tolist(), char_start[keep].tolist(), char_end[keep].tolist(), score[keep].tolist()):
        predictions[row].spans.append(AnswerSpan(examples[row].context[s:e], s, e, sc))
    if null is not None:
        best = np.full(len(examples), -np.inf)
        np.maximum.at(best, ex, score)
        for prediction, null_score, best_score in zip(predictions, null.tolist(), best.tolist()):
            prediction.no_answer_score = null_score - best_score if np.isfinite(best_score) else np.inf
    return predictions


def _span_candidates_to_chars(outputs: WindowOutputs, candidates) -> tuple[np.ndarray, ...]:
    rows = np.repeat(np.arange(len(outputs.example_index)), candidates.start.shape[1])
    start, end = candidates.start.ravel(), candidates.end.ravel()
    valid = start >= 0
    rows, start, end, score = rows[valid], start[valid], end[valid], candidates.score.ravel()[valid]
    return outputs.example_index[rows], outputs.offsets[rows, start, 0], outputs.offsets[rows, end, 1], score


def _window_null(outputs: WindowOutputs, values: np.ndarray, n_examples: int) -> np.ndarray:
    """Per-example minimum over windows of a per-window null score (the original BERT rule)."""
    null = np.full(n_examples, np.inf)
    np.minimum.at(null, outputs.example_index, values)
    return null


def decode_span(outputs: WindowOutputs, examples: Sequence[Example], config: DecodeConfig = DecodeConfig()) -> list[Prediction]:
    """n-best spans by ``s_i + e_j`` across windows; ``no_answer_score = null - best``."""
    if outputs.start_logits is None:
        raise ValueError("span decoding needs a model with a span head")
    candidates = best_spans(outputs.start_logits, outputs.end_logits, outputs.mask, config.max_answer_length, config.n_best)
    null = _window_null(outputs, null_scores(outputs.start_logits, outputs.end_logits), len(examples))
    return _collect(examples, *_span_candidates_to_chars(outputs, candidates), config.n_best, null)


def decode_joint(outputs: WindowOutputs, examples: Sequence[Example], config: DecodeConfig = DecodeConfig()) -> list[Prediction]:
    """Product of the span and BIO experts (see the module docstring)."""
    if outputs.start_logits is None or outputs.bio_logits is None:
        raise ValueError("joint decoding needs a model with both heads")
    attended = outputs.mask.copy()
    attended[:, 0] = True  # [CLS] takes part in the start/end softmax: it carries the null score
    log_start = _log_softmax(outputs.start_logits, attended)
    log_end = _log_softmax(outputs.end_logits, attended)
    log_tags = outputs.bio_log_probs
    inside_ratio = log_tags[..., TAG_I] - log_tags[..., TAG_O]
    begin_bonus = log_tags[..., TAG_B] - log_tags[..., TAG_I]
    candidates = best_spans(
        log_start + np.where(outputs.mask, begin_bonus, 0.0), log_end, outputs.mask,
        config.max_answer_length, config.n_best, extra_token_scores=inside_ratio,
    )
    null = _window_null(outputs, log_start[:, 0] + log_end[:, 0], len(examples))
    return _collect(examples, *_span_candidates_to_chars(outputs, candidates), config.n_best, null)


def decode_bio_predictions(
    outputs: WindowOutputs, examples: Sequence[Example], config: DecodeConfig = DecodeConfig()
) -> list[Prediction]:
    """Tags of the merged token sequence -> all spans, best first; the SQuAD answer is the best one.

    ``no_answer_score`` (higher = more likely unanswerable) is chosen by ``config.bio_null``:

    * ``"span"``: ``1 - best span score`` (0 when a span is certain, 1 when no
      span was found); with the default ``mean`` score, one minus the mean tag
      probability of the best span.
    * ``"tags"``: the O-probability mass against the best span, as a
      log-likelihood ratio: ``log P(all O) - max_span log P(only that span)``,
      i.e. ``min`` over decoded spans of ``log p_O(i) - log p_B(i) +
      Σ_{t=i+1..j} (log p_O(t) - log p_I(t))``. Unlike ``"span"`` it weighs a
      span's length and how sure the head is that its tokens are not O.
    """
    if outputs.bio_logits is None:
        raise ValueError("BIO decoding needs a model with a BIO head")
    if config.bio_null not in BIO_NULL_SCORES:
        raise ValueError(f"bio_null must be one of {BIO_NULL_SCORES}, got {config.bio_null!r}")
    probs = np.exp(outputs.bio_log_probs)
    merged = merge_windows(outputs, probs, len(examples))
    spans = decode_bio(
        merged.values, merged.mask, scheme=config.bio_scheme, score=config.bio_score,
        min_score=config.bio_min_score, require_span=config.require_answer,
        max_span_length=config.max_answer_length,
    )
    char_start = merged.offsets[spans.row, spans.start, 0]
    char_end = merged.offsets[spans.row, spans.end, 1]
    predictions = _collect(examples, spans.row, char_start, char_end, spans.score, n_best=10**9, null=None)
    if config.bio_null == "tags":
        null = np.full(len(examples), np.inf)
        np.minimum.at(null, spans.row, _all_o_ratio(merged.values, spans))  # merged rows are examples
        for prediction, value in zip(predictions, null.tolist()):
            prediction.no_answer_score = value
    else:
        for prediction in predictions:
            prediction.no_answer_score = 1.0 - (prediction.spans[0].score if prediction.spans else 0.0)
    return predictions


def _all_o_ratio(probs: np.ndarray, spans) -> np.ndarray:
    """``log P(all O) - log P(only this span)`` of each span, from merged tag probabilities."""
    log_probs = np.log(np.clip(probs, 1e-12, None))
    o_over_i = np.cumsum(log_probs[..., TAG_O] - log_probs[..., TAG_I], axis=-1)
    begin = log_probs[spans.row, spans.start, TAG_O] - log_probs[spans.row, spans.start, TAG_B]
    return begin + o_over_i[spans.row, spans.end] - o_over_i[spans.row, spans.start]


def decode(outputs: WindowOutputs, examples: Sequence[Example], decoding: str, config: DecodeConfig = DecodeConfig()) -> list[Prediction]:
    """Dispatch on the decoding name: ``span``, ``bio`` or ``joint``."""
    functions = {"span": decode_span, "bio": decode_bio_predictions, "joint": decode_joint}
    if decoding not in functions:
        raise ValueError(f"decoding must be one of {DECODINGS}, got {decoding!r}")
    return functions[decoding](outputs, examples, config)


def available_decodings(heads: str) -> list[str]:
    """Every decoding a model with these heads supports."""
    names = heads.split("+")
    return [d for d, need in (("span", {"span"}), ("bio", {"bio"}), ("joint", {"span", "bio"})) if need <= set(names)]
