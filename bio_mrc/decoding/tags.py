"""BIO tag probabilities of a batch of token sequences -> spans. Pure numpy.

Inputs are padded batches: ``probs`` (N, L, 3) over tags B, I, O and ``mask``
(N, L) marking real paragraph tokens; masked-out positions count as O and
break spans. Spans are token index pairs with an *inclusive* end.

Schemes:

* ``lenient``: seqeval's default reading. B starts a span, I continues one,
  and an I after O (or at the start) also starts a span.
* ``strict``: IOB2. An I that does not continue a B…I run is dropped, with the
  I's that follow it.
* ``viterbi``: the most probable tag sequence in which no span starts with I
  (O→I and start→I are forbidden), scored by the tag log-probabilities alone.

Span scores: ``mean`` (default) is the mean probability of the tags the span
was given (B on its first token, I on the rest), length-neutral and in [0, 1];
``product`` multiplies them; ``logsum`` adds their logs (the path score).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..types import TAG_B, TAG_I, TAG_O

SCHEMES = ("lenient", "strict", "viterbi")
SCORES = ("mean", "product", "logsum")
_EPS = 1e-12


@dataclass(frozen=True)
class TagSpans:
    """K spans as flat arrays, sorted by (row, start); ``end`` inclusive."""

    row: np.ndarray
    start: np.ndarray
    end: np.ndarray
    score: np.ndarray

    def __len__(self) -> int:
        return len(self.row)

    def take(self, index: np.ndarray) -> "TagSpans":
        return TagSpans(self.row[index], self.start[index], self.end[index], self.score[index])

    def for_row(self, row: int) -> list[tuple[int, int, float]]:
        pick = self.row == row
        return list(zip(self.start[pick].tolist(), self.end[pick].tolist(), self.score[pick].tolist()))


def tags_to_spans(tags: np.ndarray, mask: np.ndarray, scheme: str = "lenient") -> TagSpans:
    """Integer tags (N, L) -> spans under ``lenient`` or ``strict`` reading (scores are nan)."""
    if scheme not in ("lenient", "strict"):
        raise ValueError(f"scheme must be 'lenient' or 'strict', got {scheme!r}")
    t = np.where(mask, tags, TAG_O)
    previous = np.concatenate([np.full((t.shape[0], 1), TAG_O), t[:, :-1]], axis=1)
    following = np.concatenate([t[:, 1:], np.full((t.shape[0], 1), TAG_O)], axis=1)
    # A run of non-O tokens is broken by each B; it ends where the next tag is not I.
    run_start = (t == TAG_B) | ((t == TAG_I) & (previous == TAG_O))
    run_end = (t != TAG_O) & (following != TAG_I)
    rows, starts = np.nonzero(run_start)
    ends = np.nonzero(run_end)[1]  # row-major order pairs each run's start with its end
    if scheme == "strict":
        keep = t[rows, starts] == TAG_B
        rows, starts, ends = rows[keep], starts[keep], ends[keep]
    return TagSpans(rows, starts, ends, np.full(len(rows), np.nan))


def viterbi_tags(log_probs: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Best tag sequence (N, L) with no span starting in I; masked positions are O."""
    n, length, _ = log_probs.shape
    emit = np.where(mask[..., None], log_probs, np.array([-np.inf, -np.inf, 0.0]))
    back = np.zeros((n, length, 3), dtype=np.int8)
    score = emit[:, 0] + np.array([0.0, -np.inf, 0.0])  # nothing to continue before the first token
    for t in range(1, length):
        best_any = score.argmax(axis=1)                           # B and O may follow anything
        best_inside = np.where(score[:, TAG_B] >= score[:, TAG_I], TAG_B, TAG_I)  # I only after B or I
        back[:, t, TAG_B] = back[:, t, TAG_O] = best_any
        back[:, t, TAG_I] = best_inside
        rows = np.arange(n)
        score = np.stack([score[rows, best_any], score[rows, best_inside], score[rows, best_any]], axis=1) + emit[:, t]
    tags = np.empty((n, length), dtype=np.int64)
    tags[:, -1] = score.argmax(axis=1)
    for t in range(length - 1, 0, -1):
        tags[:, t - 1] = back[np.arange(n), t, tags[:, t]]
    return np.where(mask, tags, TAG_O)


def score_spans(probs: np.ndarray, spans: TagSpans, method: str = "mean") -> TagSpans:
    """Score every span from the probabilities of its tags (see the module docstring)."""
    if method not in SCORES:
        raise ValueError(f"score must be one of {SCORES}, got {method!r}")
    if method == "mean":
        inside = probs[..., TAG_I]
        first = probs[spans.row, spans.start, TAG_B]
    else:
        inside = np.log(np.maximum(probs[..., TAG_I], _EPS))
        first = np.log(np.maximum(probs[spans.row, spans.start, TAG_B], _EPS))
    cumulative = np.concatenate([np.zeros((inside.shape[0], 1)), np.cumsum(inside, axis=1)], axis=1)
    rest = cumulative[spans.row, spans.end + 1] - cumulative[spans.row, spans.start + 1]
    total = first + rest
    if method == "mean":
        score = total / (spans.end - spans.start + 1)
    elif method == "product":
        score = np.exp(total)
    else:
        score = total
    return TagSpans(spans.row, spans.start, spans.end, score)


def _fallback_spans(probs: np.ndarray, mask: np.ndarray, rows: np.ndarray, max_span_length: int) -> TagSpans:
    """For rows without a span: the most probable B, extended right while P(I) > P(O)."""
    p_b = np.where(mask[rows], probs[rows, :, TAG_B], -1.0)
    start = p_b.argmax(axis=1)
    steps = np.arange(1, max_span_length)
    positions = start[:, None] + steps
    inside = positions < mask.shape[1]
    clipped = np.minimum(positions, mask.shape[1] - 1)
    cont = inside & mask[rows[:, None], clipped] & (probs[rows[:, None], clipped, TAG_I] > probs[rows[:, None], clipped, TAG_O])
    extra = np.cumprod(cont, axis=1).sum(axis=1) if len(steps) else np.zeros(len(rows), dtype=np.int64)
    return TagSpans(rows, start, start + extra, np.full(len(rows), np.nan))


def decode_bio(
    probs: np.ndarray,
    mask: np.ndarray,
    scheme: str = "lenient",
    score: str = "mean",
    min_score: float = 0.0,
    require_span: bool = False,
    max_span_length: int | None = None,
) -> TagSpans:
    """Tag probabilities -> scored spans.

    Argmax tags (or Viterbi) are read as spans, spans longer than
    ``max_span_length`` are truncated to their first ``max_span_length``
    tokens, spans scoring below ``min_score`` are dropped, and with
    ``require_span`` a row left without a span (but with paragraph tokens) gets
    the fallback span: its most probable B, extended while P(I) > P(O).
    """
    if scheme not in SCHEMES:
        raise ValueError(f"scheme must be one of {SCHEMES}, got {scheme!r}")
    mask = mask.astype(bool)
    if scheme == "viterbi":
        spans = tags_to_spans(viterbi_tags(np.log(np.maximum(probs, _EPS)), mask), mask, "strict")
    else:
        spans = tags_to_spans(probs.argmax(axis=-1), mask, scheme)
    if max_span_length is not None:
        spans = TagSpans(spans.row, spans.start, np.minimum(spans.end, spans.start + max_span_length - 1), spans.score)
    spans = score_spans(probs, spans, score)
    spans = spans.take(np.flatnonzero(spans.score >= min_score))
    if require_span:
        missing = np.flatnonzero(mask.any(axis=1) & (np.bincount(spans.row, minlength=len(mask)) == 0))
        if len(missing):
            extra = score_spans(probs, _fallback_spans(probs, mask, missing, max_span_length or mask.shape[1]), score)
            merged = TagSpans(*(np.concatenate([a, b]) for a, b in zip(
                (spans.row, spans.start, spans.end, spans.score), (extra.row, extra.start, extra.end, extra.score))))
            spans = merged.take(np.lexsort((merged.start, merged.row)))
    return spans


def best_span_per_row(spans: TagSpans, n_rows: int) -> np.ndarray:
    """Index into ``spans`` of each row's highest-scoring span, or -1."""
    best = np.full(n_rows, -1)
    order = np.lexsort((-spans.score, spans.row))
    first = np.ones(len(order), dtype=bool)
    first[1:] = spans.row[order][1:] != spans.row[order][:-1]
    best[spans.row[order][first]] = order[first]
    return best
