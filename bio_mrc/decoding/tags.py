"""BIO tag probabilities of a batch of token sequences -> spans. Pure numpy.

Inputs are padded batches: ``probs`` (N, L, 3) over tags B, I, O (ids
``TAG_B``, ``TAG_I``, ``TAG_O``) and ``mask`` (N, L) marking real paragraph
tokens. Masked-out positions are read as O: they never belong to a span and
they break spans. Spans are token index pairs with an *inclusive* end.

Schemes:

* ``lenient``: seqeval's default reading (``get_entities``). B starts a span, I
  continues one, and an I after O (or at the start, or after a masked
  position) also starts a span.
* ``strict``: IOB2 (``seqeval.scheme.IOB2``). A span is B followed by I's; an I
  that does not continue a B…I run is dropped, with the I's that follow it.
* ``viterbi``: the most probable tag sequence in which no span starts with I
  (O→I and start→I are forbidden; masked positions are O), scored by the tag
  log-probabilities alone (no learned transitions).

Span scores use the probabilities of the tags the span *as a chunk* carries:
B on its first token and I on the others, even when a lenient span was tagged
I on its first token. ``mean`` (default) is their mean, length-neutral and in
[0, 1]; ``product`` multiplies them; ``logsum`` adds their logs (the path
score). Probabilities are clipped at 1e-12 before a log.
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
    """K spans as flat arrays, sorted by (row, start); ``end`` is inclusive."""

    row: np.ndarray
    start: np.ndarray
    end: np.ndarray
    score: np.ndarray

    def __len__(self) -> int:
        return len(self.row)

    def take(self, index: np.ndarray) -> "TagSpans":
        """The spans at ``index`` (an integer index array or a boolean mask)."""
        return TagSpans(self.row[index], self.start[index], self.end[index], self.score[index])

    def for_row(self, row: int) -> list[tuple[int, int, float]]:
        """``(start, end, score)`` of the spans of one row, by start."""
        pick = self.row == row
        return list(zip(self.start[pick].tolist(), self.end[pick].tolist(), self.score[pick].tolist()))


def group_by_row(spans: TagSpans, n_rows: int) -> list[list[tuple[int, int, float]]]:
    """``(start, end, score)`` of every span, one list per row (empty for rows without spans)."""
    order = np.lexsort((spans.start, spans.row))
    triples = list(zip(spans.start[order].tolist(), spans.end[order].tolist(), spans.score[order].tolist()))
    bounds = np.concatenate([[0], np.cumsum(np.bincount(spans.row, minlength=n_rows))]).tolist()
    return [triples[bounds[i] : bounds[i + 1]] for i in range(n_rows)]


def _shift(values: np.ndarray, step: int, fill: int) -> np.ndarray:
    """``values`` moved ``step`` positions right (+1) or left (-1) along axis 1, filled with ``fill``."""
    pad = np.full((values.shape[0], 1), fill, dtype=values.dtype)
    return np.concatenate([pad, values[:, :-1]] if step > 0 else [values[:, 1:], pad], axis=1)


def tags_to_spans(tags: np.ndarray, mask: np.ndarray, scheme: str = "lenient") -> TagSpans:
    """Integer tags (N, L) -> spans under the ``lenient`` or ``strict`` reading (scores are nan).

    Masked positions are read as O. A run starts at every B and, in either
    scheme, at an I whose previous tag is O; it ends at a non-O tag whose next
    tag is not I. ``strict`` then drops the runs that start with I.
    """
    if scheme not in ("lenient", "strict"):
        raise ValueError(f"scheme must be 'lenient' or 'strict', got {scheme!r}")
    t = np.where(np.asarray(mask, dtype=bool), tags, TAG_O).astype(np.int64)
    run_start = (t == TAG_B) | ((t == TAG_I) & (_shift(t, 1, TAG_O) == TAG_O))
    run_end = (t != TAG_O) & (_shift(t, -1, TAG_O) != TAG_I)
    rows, starts = np.nonzero(run_start)
    ends = np.nonzero(run_end)[1]  # one end per run, in the same row-major order as the starts
    if scheme == "strict":
        keep = t[rows, starts] == TAG_B
        rows, starts, ends = rows[keep], starts[keep], ends[keep]
    return TagSpans(rows.astype(np.int64), starts.astype(np.int64), ends.astype(np.int64), np.full(len(rows), np.nan))


def viterbi_tags(log_probs: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Most probable tags (N, L) with no span starting in I; masked positions are forced O.

    The path score is the sum of the tags' log-probabilities. I may only follow
    B or I, so I is forbidden at the first position and after O or a masked
    position. Ties go to the lower tag id (B, then I, then O).
    """
    n, length, _ = log_probs.shape
    mask = np.asarray(mask, dtype=bool)
    if length == 0:
        return np.zeros((n, 0), dtype=np.int64)
    emit = np.where(mask[..., None], log_probs, np.array([-np.inf, -np.inf, 0.0]))
    back = np.zeros((n, length, 3), dtype=np.int8)
    rows = np.arange(n)
    score = emit[:, 0] + np.array([0.0, -np.inf, 0.0])  # no span to continue before the first token
    for t in range(1, length):
        best_any = score.argmax(axis=1)  # B and O may follow anything
        best_inside = np.where(score[:, TAG_B] >= score[:, TAG_I], TAG_B, TAG_I)  # I only after B or I
        back[:, t, TAG_B] = back[:, t, TAG_O] = best_any
        back[:, t, TAG_I] = best_inside
        score = np.stack([score[rows, best_any], score[rows, best_inside], score[rows, best_any]], axis=1) + emit[:, t]
    tags = np.empty((n, length), dtype=np.int64)
    tags[:, -1] = score.argmax(axis=1)
    for t in range(length - 1, 0, -1):
        tags[:, t - 1] = back[rows, t, tags[:, t]]
    return np.where(mask, tags, TAG_O)


def score_spans(probs: np.ndarray, spans: TagSpans, method: str = "mean") -> TagSpans:
    """Score every span from P(B) of its first token and P(I) of the others.

    ``mean``: their mean; ``product``: their product; ``logsum``: the sum of
    their logs. The tokens of all spans are gathered into one flat array and
    summed per span with ``np.add.reduceat``; positions outside spans
    (padding included) are never read.
    """
    if method not in SCORES:
        raise ValueError(f"score must be one of {SCORES}, got {method!r}")
    if len(spans) == 0:
        return TagSpans(spans.row, spans.start, spans.end, np.zeros(0))
    lengths = spans.end - spans.start + 1
    first = np.concatenate([[0], np.cumsum(lengths)[:-1]])  # offset of each span in the flat array
    position = np.repeat(spans.start - first, lengths) + np.arange(lengths.sum())
    rows = np.repeat(spans.row, lengths)
    tag = np.full(len(position), TAG_I)
    tag[first] = TAG_B
    values = probs[rows, position, tag].astype(np.float64)
    if method != "mean":
        values = np.log(np.maximum(values, _EPS))
    total = np.add.reduceat(values, first)
    score = total / lengths if method == "mean" else np.exp(total) if method == "product" else total
    return TagSpans(spans.row, spans.start, spans.end, score)


def _fallback_spans(probs: np.ndarray, mask: np.ndarray, rows: np.ndarray, max_span_length: int) -> TagSpans:
    """For ``rows`` (each with a real token): the most probable tag sequence holding exactly one span.

    Against all-O, tagging ``i..j`` as ``B I … I`` gains
    ``log p_B(i) - log p_O(i) + Σ_{t=i+1..j} (log p_I(t) - log p_O(t))``; the best
    ``(i, j)`` with ``j - i < max_span_length`` is found with the span decoder's banded search.
    """
    from .spans import best_spans

    log_p = np.log(np.maximum(probs[rows], _EPS))
    inside_gain = log_p[..., TAG_I] - log_p[..., TAG_O]
    begin_gain = log_p[..., TAG_B] - log_p[..., TAG_O] - inside_gain  # the first token is B, not I
    best = best_spans(begin_gain, np.zeros_like(begin_gain), mask[rows], max_span_length, 1, extra_token_scores=inside_gain)
    return TagSpans(rows, best.start[:, 0], best.end[:, 0], np.full(len(rows), np.nan))


def decode_bio(
    probs: np.ndarray,
    mask: np.ndarray,
    scheme: str = "lenient",
    score: str = "mean",
    min_score: float = 0.0,
    require_span: bool = False,
    max_span_length: int | None = None,
) -> TagSpans:
    """Tag probabilities (N, L, 3) -> scored spans, sorted by (row, start).

    1. Tags are the argmax per token (``lenient``/``strict``) or the Viterbi
       path (``viterbi``), read as spans (see the module docstring).
    2. A span longer than ``max_span_length`` is *truncated* to its first
       ``max_span_length`` tokens (its B is kept), then scored.
    3. Spans whose score is under ``min_score`` are dropped. ``min_score`` is
       a probability for every method: with ``logsum`` a span is kept when
       ``exp(score) >= min_score``, so the default 0 keeps every span.
    4. With ``require_span``, every row left without a span that has at least
       one real token gets the fallback span: the most probable tag sequence
       with exactly one span (up to ``max_span_length`` tokens), scored the
       same way and kept whatever its score. Rows without real tokens never
       get a span.
    """
    if scheme not in SCHEMES:
        raise ValueError(f"scheme must be one of {SCHEMES}, got {scheme!r}")
    if max_span_length is not None and max_span_length < 1:
        raise ValueError(f"max_span_length must be at least 1, got {max_span_length}")
    probs = np.asarray(probs, dtype=np.float64)
    mask = np.asarray(mask, dtype=bool)
    if scheme == "viterbi":
        spans = tags_to_spans(viterbi_tags(np.log(np.maximum(probs, _EPS)), mask), mask, "strict")
    else:
        spans = tags_to_spans(probs.argmax(axis=-1), mask, scheme)
    if max_span_length is not None:
        spans = TagSpans(spans.row, spans.start, np.minimum(spans.end, spans.start + max_span_length - 1), spans.score)
    spans = score_spans(probs, spans, score)
    threshold = min_score
    if score == "logsum":
        threshold = np.log(min_score) if min_score > 0 else -np.inf
    spans = spans.take(np.flatnonzero(spans.score >= threshold))
    if require_span:
        missing = np.flatnonzero(mask.any(axis=1) & (np.bincount(spans.row, minlength=len(mask)) == 0))
        if len(missing):
            extra = score_spans(probs, _fallback_spans(probs, mask, missing, max_span_length or mask.shape[1]), score)
            fields = zip((spans.row, spans.start, spans.end, spans.score), (extra.row, extra.start, extra.end, extra.score))
            merged = TagSpans(*(np.concatenate([a, b]) for a, b in fields))
            spans = merged.take(np.lexsort((merged.start, merged.row)))
    return spans


def best_span_per_row(spans: TagSpans, n_rows: int) -> np.ndarray:
    """Index into ``spans`` of each row's highest-scoring span, or -1 for a row without spans.

    Ties go to the span listed first (the earliest start); nan scores lose to any number.
    """
    best = np.full(n_rows, -1, dtype=np.int64)
    order = np.lexsort((np.arange(len(spans)), -spans.score, spans.row))
    rows = spans.row[order]
    first = np.ones(len(order), dtype=bool)
    first[1:] = rows[1:] != rows[:-1]
    best[rows[first]] = order[first]
    return best
