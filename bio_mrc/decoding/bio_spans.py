"""BIO tag log-probabilities -> spans, by one decision rule. Pure numpy.

Inputs are padded batches: ``log_probs`` (N, L, 3) over tags B, I, O (ids
``TAG_B``, ``TAG_I``, ``TAG_O``) and ``mask`` (N, L) marking the tokens that
carry a tag. Masked-out positions are O: they never belong to a span. Spans
are token index pairs with an *inclusive* end.

Against tagging every token O, tagging tokens ``i..j`` as one span ``B I … I``
gains the log-likelihood ratio

    r(i, j) = log p_B(i) - log p_O(i) + Σ_{t=i+1..j} (log p_I(t) - log p_O(t)),

so ``r`` is the log-probability of the whole tag sequence holding exactly that
span, up to the constant ``log P(all O)``. Every BIO decision reads ``r``:

* the single answer is ``argmax r`` over spans of at most ``max_span_length``
  tokens: the most probable tag sequence with exactly one span
  (:func:`best_tag_spans`, an n-best list by ``r``);
* the most probable tag sequence in which no span is longer than ``max_span_length``
  (:func:`likeliest_tag_spans`) has the non-overlapping spans with the largest total
  ``r``; each has ``r >= 0`` (else tagging it O would be more probable);
* a span's confidence is its posterior (:func:`span_posteriors`): the probability
  that the tag sequence holds exactly that span, against every valid sequence (any
  number of spans; ``I`` never follows ``O``), by forward–backward over the tag lattice;
* several answers are the non-overlapping spans of highest posterior, as many as
  maximise the answer's expected exact-match F1 under the tag distribution
  (:func:`expected_f1_tag_spans`; spans of one text are one answer of their summed
  posterior). Where the tagger is sure this is the most probable sequence's spans;
  where it is unsure, "all O" can be the most probable sequence while several spans
  each hold a fair share of the probability;
* the no-answer score is ``-max r = log P(all O) - log P(best single span)``.

An over-long span is never cut to its first tokens by rule: the length limit is
a constraint of the search (the best span within it by ``r``; the posterior of
a piece of a run that goes on past it stays near 0).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..tags import TAG_B, TAG_I, TAG_O
from .shares import CONFIDENCE_SPANS
from .spans import SpanCandidates, best_spans
from .tag_recurrences import forward_backward, path_spans, viterbi_totals
from .ties import near_tie_order


@dataclass(frozen=True)
class TagSpans:
    """K spans as flat arrays, sorted by (row, start); ``end`` is inclusive; ``score`` is ``r``."""

    row: np.ndarray
    start: np.ndarray
    end: np.ndarray
    score: np.ndarray

    def __len__(self) -> int:
        return len(self.row)


def tag_gains(log_probs: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-token ``log p_B - log p_O`` and ``log p_I - log p_O``, ``-inf`` where masked out."""
    log_probs = np.asarray(log_probs, dtype=np.float64)
    mask = np.asarray(mask, dtype=bool)
    begin = np.where(mask, log_probs[..., TAG_B] - log_probs[..., TAG_O], -np.inf)
    inside = np.where(mask, log_probs[..., TAG_I] - log_probs[..., TAG_O], -np.inf)
    return begin, inside


def best_tag_spans(
    log_probs: np.ndarray, mask: np.ndarray, max_span_length: int, n_best: int = 1, ends: np.ndarray | None = None
) -> SpanCandidates:
    """The ``n_best`` single spans of every row by ``r``, best first (the span search of
    :mod:`bio_mrc.decoding.spans` with the inside gains as per-token scores); with ``ends`` (N, L), only the
    tokens it marks begin or end a span, while every tagged token inside one still adds its gain.

    Each row's tagged tokens must be one contiguous run, as in merged rows.
    """
    _check_length(max_span_length)
    mask = np.asarray(mask, dtype=bool)
    runs = (np.diff(mask.astype(np.int8), axis=1) == 1).sum(axis=1) + mask[:, :1].sum(axis=1)
    if (runs > 1).any():
        raise ValueError("best_tag_spans needs each row's tagged tokens to be one contiguous run")
    begin, inside = tag_gains(log_probs, mask)
    first_token = np.where(mask, begin - np.where(mask, inside, 0.0), -np.inf)  # the first token is B, not I
    last_token = np.zeros_like(first_token)
    if ends is not None:
        first_token, last_token = np.where(ends, first_token, -np.inf), np.where(ends, last_token, -np.inf)
    return best_spans(first_token, last_token, mask, max_span_length, n_best, extra_token_scores=inside)


def likeliest_tag_spans(log_probs: np.ndarray, mask: np.ndarray, max_span_length: int) -> TagSpans:
    """Spans of the most probable tag sequence of every row with no span over ``max_span_length`` tokens.

    A semi-Markov Viterbi pass over boundaries ``p = 0..L``: ``V[p]`` is the best
    total ``r`` of tokens before ``p``, ``V[p] = max(V[p-1], max_k V[p-k] + r(p-k, p-1))``
    (:func:`~bio_mrc.decoding.tag_recurrences.viterbi_totals`); ties go to O (fewer spans),
    then to the shorter span.
    """
    _check_length(max_span_length)
    mask = np.asarray(mask, dtype=bool)
    length = mask.shape[1]
    begin, inside = tag_gains(log_probs, mask)
    cumulative = np.cumsum(np.where(mask, inside, 0.0), axis=1)
    open_at = begin - cumulative  # r(i, j) = open_at[i] + cumulative[j]
    positions = np.arange(length)
    run_start = np.maximum.accumulate(np.where(mask & ~np.pad(mask, ((0, 0), (1, 0)))[:, :-1], positions, 0), axis=1)
    width = max(1, min(max_span_length, length))
    best = viterbi_totals(open_at, cumulative, mask, run_start, width)
    rows, starts, ends = path_spans(best, open_at, cumulative, width)
    order = np.lexsort((starts, rows))
    rows, starts, ends = rows[order], starts[order], ends[order]
    return TagSpans(rows, starts, ends, open_at[rows, starts] + cumulative[rows, ends])


def span_posteriors(
    log_probs: np.ndarray, mask: np.ndarray, rows: np.ndarray, starts: np.ndarray, ends: np.ndarray
) -> np.ndarray:
    """P(tokens ``start..end`` are tagged ``B I … I`` and the next token is not ``I``) for each
    (row, start, end), under the tags' distribution restricted to valid sequences (no ``I`` first
    or after ``O``; masked-out tokens are ``O``): the answer's probability against all alternatives,
    other spans beside it included. Forward–backward in log space, rows together."""
    return _TagLattice(log_probs, mask).span_posteriors(rows, starts, ends)


#: ``(rows, starts, ends) -> keys``: spans of one row with equal keys are one answer.
AnswerKeys = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]


def expected_f1_tag_spans(
    log_probs: np.ndarray, mask: np.ndarray, max_span_length: int, n_candidates: int, answer_keys: AnswerKeys | None = None
) -> tuple[TagSpans, np.ndarray]:
    """Several answers of every row by the tag distribution (minimum Bayes risk): the candidates are the
    ``n_candidates`` best single spans by ``r`` and the most probable sequence's spans. Spans of one row that
    ``answer_keys`` gives one key are one answer (the same text: a name tagged at several of its mentions), of
    their summed posterior (at most 1) over its mentions among the best :data:`~bio_mrc.decoding.shares.CONFIDENCE_SPANS`
    and the most probable sequence's (an answer first met past them: its first mention's alone, the later ones no
    candidates), standing as its likeliest span, an answer when one of its mentions is a candidate; without
    ``answer_keys`` each span is an answer. So however many candidates are asked for, an answer's posterior and the
    expected number of answers stay what they are: a longer list adds answers, never probability to one.
    Taken by posterior, best first, each not overlapping one taken before, the answer is the first ``k`` that maximise
    ``2 Σ_{i<=k} p_i / (k + max(1, E[answers]))``, the expected exact-match F1 of an answer whose parts are right with
    their posteriors ``p_i`` against a gold answer of the expected number of answers (``Σ_t P(tag_t = B)``, the expected
    number of spans, with the mentions of each candidate answer counted once, at its posterior: the gold lists a text
    once; MultiSpanQA counts an empty gold answer as one span). A part of posterior 0.5 or more is always taken, and so
    is every other span of a taken answer that is more likely than not, so a sure tagger gives its most probable
    sequence's spans (every mention of a text it tagged); an unsure one still answers with its likeliest spans. Returns
    the spans (``score`` is ``r``; rows with no tagged token have none) and their posteriors (an answer's for the span
    standing for it, their own for its other mentions)."""
    single = best_tag_spans(log_probs, mask, max_span_length, max(n_candidates, CONFIDENCE_SPANS))
    likeliest = likeliest_tag_spans(log_probs, mask, max_span_length)
    return expected_f1_answer(log_probs, mask, single, likeliest, answer_keys, n_candidates)


def expected_f1_answer(
    log_probs: np.ndarray, mask: np.ndarray, single: SpanCandidates, likeliest: TagSpans, answer_keys: AnswerKeys | None = None,
    n_candidates: int | None = None,
) -> tuple[TagSpans, np.ndarray]:
    """:func:`expected_f1_tag_spans` from its two searches, already made: ``single`` (:func:`best_tag_spans`, best
    first, at least :data:`~bio_mrc.decoding.shares.CONFIDENCE_SPANS` where a row has them) and ``likeliest``
    (:func:`likeliest_tag_spans`); the first ``n_candidates`` spans of ``single`` are candidates (all with None), a slot
    left empty (-1: a span of blank text the caller took out) taking no candidate's place."""
    mask = np.asarray(mask, dtype=bool)
    rows, starts, ends, rank, place = _candidate_spans(_near_ties_by_position(single), likeliest)
    keys = np.arange(len(rows)) if answer_keys is None else np.asarray(answer_keys(rows, starts, ends), dtype=np.int64)
    counted = _counted_mentions(rows, keys, rank)
    rows, starts, ends, rank, place, keys = (column[counted] for column in (rows, starts, ends, rank, place, keys))
    lattice = _TagLattice(log_probs, mask)
    own = lattice.span_posteriors(rows, starts, ends)
    answer, standing, answer_posterior = _answers_of_spans(rows, keys, own, starts, ends)
    expected = _expected_answers(lattice.expected_spans(), rows, own, rows[standing], answer_posterior)
    limit = single.start.shape[1] if n_candidates is None else n_candidates
    offered = np.isin(np.arange(len(standing)), answer[place < limit])  # an answer with a mention among the candidates
    picked = np.flatnonzero(offered)[_expected_f1_choice(
        rows[standing[offered]], starts[standing[offered]], ends[standing[offered]], answer_posterior[offered], expected)]
    kept = _with_likely_mentions(standing[picked], np.isin(answer, picked) & (own >= 0.5), rows, starts, ends)
    posterior = own.copy()
    posterior[standing] = answer_posterior  # an answer's span stands for it; its other likely mentions keep their own
    kept = kept[np.lexsort((starts[kept], rows[kept]))]
    rows, starts, ends = rows[kept], starts[kept], ends[kept]
    return TagSpans(rows, starts, ends, lattice.ratios(rows, starts, ends)), posterior[kept]


def _candidate_spans(single: SpanCandidates, likeliest: TagSpans) -> tuple[np.ndarray, ...]:
    """(row, start, end, rank, place) of every distinct span of ``single`` and ``likeliest``, sorted by (row, start,
    end): ``rank`` its best slot in its row's ``single`` list and ``place`` its best place among the row's spans there
    (empty slots skipped), both -1 for a span of the most probable sequence."""
    found = single.start >= 0
    slots = np.broadcast_to(np.arange(single.start.shape[1]), single.start.shape)
    places = np.cumsum(found, axis=1) - 1
    likely = np.full(len(likeliest), -1)
    spans = np.concatenate([
        np.stack([likeliest.row, likeliest.start, likeliest.end, likely, likely], axis=1),
        np.stack([np.nonzero(found)[0], single.start[found], single.end[found], slots[found], places[found]], axis=1),
    ]).astype(np.int64)
    _, first = np.unique(spans[:, :3], axis=0, return_index=True)  # first: the best place, rows listed best first
    return tuple(spans[first].T)


def _near_ties_by_position(single: SpanCandidates) -> SpanCandidates:
    """``single`` with each row's spans ranked by :func:`~bio_mrc.decoding.ties.near_tie_order` (near-tied scores
    earliest first), its empty slots where they were: which of a repeated text's mentions are among the candidates and
    counted follows no round-off."""
    found = single.start >= 0
    rows = np.nonzero(found)[0]
    order = near_tie_order(single.score[found], single.start[found], single.end[found], rows)
    columns = []
    for column in (single.score, single.start, single.end):
        ranked = column.copy()
        ranked[found] = column[found][order]
        columns.append(ranked)
    return SpanCandidates(*columns)


def _counted_mentions(rows: np.ndarray, keys: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """Which candidate spans count: those of the most probable sequence and among the best
    :data:`~bio_mrc.decoding.shares.CONFIDENCE_SPANS`, and past them the first mention of an answer not met before
    (a later one would add to an answer what a shorter list leaves out)."""
    order = np.lexsort((rank, keys, rows))
    earlier = np.r_[False, (rows[order][1:] == rows[order][:-1]) & (keys[order][1:] == keys[order][:-1])]
    counted = np.empty(len(rows), dtype=bool)
    counted[order] = (rank[order] < CONFIDENCE_SPANS) | ~earlier
    return counted


def _answers_of_spans(
    rows: np.ndarray, keys: np.ndarray, posterior: np.ndarray, starts: np.ndarray, ends: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The answers of spans keyed by (row, key): each span's answer, and by answer its likeliest span (an index; of
    mentions near-tied, :func:`~bio_mrc.decoding.ties.near_tie_order`, the earliest) and its posterior, the sum of its
    spans' (at most 1: spans of one answer that could be tagged together are not exclusive events)."""
    if not len(rows):
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
    _, answer = np.unique(np.stack([rows, keys], axis=1), axis=0, return_inverse=True)
    answer = answer.ravel()
    summed = np.minimum(np.bincount(answer, weights=posterior), 1.0)
    order = near_tie_order(posterior, starts, ends, answer)
    first = order[np.r_[True, answer[order][1:] != answer[order][:-1]]]
    return answer, first, summed


def _expected_answers(
    expected_spans: np.ndarray, rows: np.ndarray, own: np.ndarray, answer_rows: np.ndarray, answer_posterior: np.ndarray
) -> np.ndarray:
    """The expected number of answers of every row: its expected number of spans with each candidate answer's
    mentions counted once, at the answer's posterior (a text tagged at three mentions is one answer, as the
    metrics count it, and the gold it is scored against lists it once)."""
    n_rows = len(expected_spans)
    mentions = np.bincount(rows, weights=own, minlength=n_rows)
    answers = np.bincount(answer_rows, weights=answer_posterior, minlength=n_rows)
    return np.maximum(expected_spans - mentions + answers, 0.0)


def _with_likely_mentions(chosen: np.ndarray, likely: np.ndarray, rows: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """The ``chosen`` spans and the ``likely`` ones (more likely than not, of a chosen answer) that overlap none of
    them, earliest first (the spans are sorted by row and position): the answer is decided text by text, and a sure
    tagger's mentions of one text all stay."""
    kept = chosen.tolist()
    taken = _DisjointSpans(rows, starts, ends)
    for i in kept:
        taken.add(i)
    chosen_set = set(kept)
    for i in np.flatnonzero(likely).tolist():
        if i not in chosen_set and not taken.overlaps(i):
            taken.add(i)
            kept.append(i)
    return np.array(kept, dtype=np.int64)


def _expected_f1_choice(rows: np.ndarray, starts: np.ndarray, ends: np.ndarray, posterior: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """Indices of the spans :func:`expected_f1_tag_spans` keeps, row by row (sorted by row, then posterior; near-tied
    posteriors earliest first, :func:`~bio_mrc.decoding.ties.near_tie_order`)."""
    order = near_tie_order(posterior, starts, ends, rows)
    kept: list[int] = []
    for row_spans in np.split(order, np.flatnonzero(np.diff(rows[order])) + 1):
        taken: list[int] = []
        disjoint = _DisjointSpans(rows, starts, ends)
        for i in row_spans.tolist():
            if not disjoint.overlaps(i):
                disjoint.add(i)
                taken.append(i)
        if taken:
            hits = np.cumsum(posterior[taken])
            f1 = 2 * hits / (np.arange(1, len(taken) + 1) + max(1.0, float(expected[rows[taken[0]]])))
            kept.extend(taken[: int(f1.argmax()) + 1])
    return np.array(kept, dtype=np.int64)


class _DisjointSpans:
    """Spans (indices into ``rows``, ``starts``, ``ends``; inclusive ends) no two of which overlap, and whether another
    overlaps one of them, in time proportional to its length: each token covered is kept in a set by row, so
    taking spans one by one against all taken before is linear in their tokens, not quadratic in their number."""

    def __init__(self, rows: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> None:
        self.rows, self.starts, self.ends = rows, starts, ends
        self.covered: set[tuple[int, int]] = set()

    def overlaps(self, i: int) -> bool:
        row = int(self.rows[i])
        return any((row, token) in self.covered for token in range(int(self.starts[i]), int(self.ends[i]) + 1))

    def add(self, i: int) -> None:
        row = int(self.rows[i])
        self.covered.update((row, token) for token in range(int(self.starts[i]), int(self.ends[i]) + 1))


class _TagLattice:
    """The valid tag sequences of every row (no ``I`` first or after ``O``; masked-out tokens ``O``) under the
    tags' distribution, by forward–backward in log space, rows together."""

    def __init__(self, log_probs: np.ndarray, mask: np.ndarray) -> None:
        self.mask = np.asarray(mask, dtype=bool)
        self.log_u = _masked_tag_log_probs(np.asarray(log_probs, dtype=np.float64), self.mask)
        self.forward, self.backward, self.log_z = forward_backward(self.log_u)

    def expected_spans(self) -> np.ndarray:
        """The expected number of spans of every row: ``Σ_t P(tag_t = B)``."""
        begin = self.forward[..., TAG_B] + self.backward[..., TAG_B] - self.log_z[:, None]
        return np.exp(begin).sum(axis=1)

    def ratios(self, rows: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
        """``r`` of each span (its log-likelihood ratio against tagging it O)."""
        begin, inside = tag_gains(self.log_u, self.mask)
        cumulative = np.cumsum(np.where(self.mask, inside, 0.0), axis=1)
        return begin[rows, starts] + cumulative[rows, ends] - cumulative[rows, starts]

    def span_posteriors(self, rows: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
        mask, log_u, forward, backward, log_z = self.mask, self.log_u, self.forward, self.backward, self.log_z
        rows, starts, ends = (np.asarray(a, dtype=np.int64) for a in (rows, starts, ends))
        inside = np.cumsum(np.where(mask, log_u[..., TAG_I], 0.0), axis=1)
        holes = np.cumsum(~mask, axis=1)  # a span over a masked-out token has probability 0
        untagged = ~mask[rows, starts] | (holes[rows, ends] > holes[rows, starts])
        before = np.where(starts > 0, np.logaddexp.reduce(forward[rows, np.maximum(starts - 1, 0)], axis=-1), 0.0)
        span = log_u[rows, starts, TAG_B] + inside[rows, ends] - inside[rows, starts]
        length = log_u.shape[1]
        after_token = np.minimum(ends + 1, length - 1)
        closed = log_u[rows, after_token][:, [TAG_B, TAG_O]] + backward[rows, after_token][:, [TAG_B, TAG_O]]
        after = np.where(ends + 1 < length, np.logaddexp.reduce(closed, axis=-1), 0.0)
        return np.where(untagged, 0.0, np.minimum(np.exp(before + span + after - log_z[rows]), 1.0))  # rounding: never past 1


def _masked_tag_log_probs(log_probs: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Tag log-probabilities with masked-out tokens forced to ``O``."""
    forced_o = np.where(np.arange(3) == TAG_O, 0.0, -np.inf)
    return np.where(mask[..., None], log_probs, forced_o)


def _check_length(max_span_length: int) -> None:
    if max_span_length < 1:
        raise ValueError(f"max_span_length must be at least 1, got {max_span_length}")
