"""Window outputs -> one :class:`Prediction` per example, for each decoding.

Framework-agnostic: numpy arrays in, data-model objects out, no I/O.

* ``span``: the n-best ``s_i + e_j`` over all windows of a question, each
  span read only in the window where its start has the most context among
  the windows holding the whole span (BERT's rule; the registry entry's
  ``span_starts`` marks those starts and their first ends), with the
  ``[CLS]`` null score (minimum over windows).
* ``bio``: the tagged tokens (first word pieces for a word-level tagger) of all
  windows merged token by token (maximum-context rule), then decoded by the
  tag log-likelihood ratio ``r`` against all-O (see :mod:`bio_mrc.decoding.bio_spans`):
  the n-best single spans, or with ``multi_span`` the non-overlapping spans of
  highest posterior that maximise the expected exact-match F1 (the spans of one
  normalised text one answer, of their summed posterior); the no-answer
  score is ``-max r``. A question none of whose n-best spans keeps text once
  trimmed (sub-word tags on runs of newline or zero-width tokens) searches
  its spans that begin and end on readable tokens, as span and joint do.
* ``joint``: the span head and the BIO head as a product of experts. A span
  ``(i, j)`` scores ``log P_start(i) + log P_end(j)`` plus the BIO head's
  log-likelihood ratio of tagging exactly that span (``B I … I``) against
  tagging those tokens ``O``:
  ``log p_B(i) - log p_O(i) + Σ_{t=i+1..j} (log p_I(t) - log p_O(t))``. That is
  the log-probability of the whole tag sequence with only this span, up to a
  constant, so the two heads are combined on one probabilistic scale. The null
  score is ``log P_start(0) + log P_end(0)`` (all tokens O adds 0). The BIO
  expert's span-length prior (``bio_length_prior``) applies here too. With a
  word-level tagger, spans start on a word's first piece and end on a word's
  last piece; a span is read only in the window where its start has the most
  context, as for ``span``; where no window holds a whole word (every word longer than a
  window), the question's windows are merged into one row of words and
  searched there. With ``multi_span`` each prediction also carries the BIO
  decoding's multi-span answer with the spans' posteriors (``tag_spans``),
  from which its multi-span answers take several spans.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Iterator, Sequence

import numpy as np

from .. import registry
from ..answer_text import normalize_answer, trimmed_spans
from ..model_defaults import MAX_ANSWER_LENGTH
from ..tags import TAG_B, TAG_I, TAG_O
from ..types import AnswerSpan, Example, Prediction
from .config import DecodeConfig
from .shares import CONFIDENCE_SPANS
from . import spans as span_search
from .spans import SpanCandidates, best_spans, null_scores
from .bio_spans import AnswerKeys, TagSpans, best_tag_spans, expected_f1_answer, likeliest_tag_spans
from .window_outputs import MergedTokens, WindowOutputs, log_softmax, merge_windows


def with_saved_settings(config: DecodeConfig, bio_length_prior: float | None, max_answer_length: int | None) -> DecodeConfig:
    """``config`` with a model's saved settings where it leaves them open (None): its tuned BIO length prior (0
    without one) and its answer-length limit (:data:`MAX_ANSWER_LENGTH` without one); a given value wins."""
    prior = (bio_length_prior or 0.0) if config.bio_length_prior is None else config.bio_length_prior
    limit = (max_answer_length or MAX_ANSWER_LENGTH) if config.max_answer_length is None else config.max_answer_length
    return replace(config, bio_length_prior=prior, max_answer_length=limit)


def _limited(config: DecodeConfig) -> DecodeConfig:
    """``config`` with an open answer-length limit at the default: decoding called with no model's settings."""
    return config if config.max_answer_length is not None else replace(config, max_answer_length=MAX_ANSWER_LENGTH)


def _collect(
    examples: Sequence[Example],
    ex: np.ndarray,
    char_start: np.ndarray,
    char_end: np.ndarray,
    score: np.ndarray,
    n_best: int | None,
    null: np.ndarray | None,
    probability: np.ndarray | None = None,
) -> list[Prediction]:
    """Trim each span (:func:`trimmed_span`; one left empty is dropped), deduplicate (example, char span) keeping the
    best score, rank per example, keep the ``n_best`` best of each (all with ``None``), build predictions (with each
    span's ``probability``, if given). Spans are trimmed before they are ranked: spans of blank tokens alone never take
    the places of spans with text."""
    char_start, char_end = _trimmed_columns(examples, ex, char_start, char_end)
    valid = np.isfinite(score) & (char_start < char_end)
    probability = np.full(len(score), np.nan) if probability is None else np.asarray(probability, dtype=np.float64)
    ex, char_start, char_end, score, probability = ex[valid], char_start[valid], char_end[valid], score[valid], probability[valid]
    best = np.full(len(examples), -np.inf)  # each example's best span shown (best_shown_scores)
    np.maximum.at(best, ex, score)
    order = np.lexsort((-score, char_end, char_start, ex))
    ex, char_start, char_end, score, probability = ex[order], char_start[order], char_end[order], score[order], probability[order]
    first = np.ones(len(ex), dtype=bool)
    first[1:] = (ex[1:] != ex[:-1]) | (char_start[1:] != char_start[:-1]) | (char_end[1:] != char_end[:-1])
    ex, char_start, char_end, score, probability = ex[first], char_start[first], char_end[first], score[first], probability[first]
    order = np.lexsort((-score, ex))  # exact, as the span search cut its n-best: a question's list is one prefix
    ex, char_start, char_end, score, probability = ex[order], char_start[order], char_end[order], score[order], probability[order]
    counts = np.bincount(ex, minlength=len(examples))
    rank = np.arange(len(ex)) - np.concatenate([[0], np.cumsum(counts)[:-1]])[ex]
    keep = rank < n_best if n_best is not None else np.ones(len(ex), dtype=bool)

    predictions = [Prediction(e.id) for e in examples]
    rows = zip(ex[keep].tolist(), char_start[keep].tolist(), char_end[keep].tolist(), score[keep].tolist(), probability[keep].tolist())
    for row, s, e, sc, p in rows:  # math's tests of a Python float: numpy's, called on one, cost twenty times as much
        predictions[row].spans.append(AnswerSpan(examples[row].context[s:e], s, e, sc, None if math.isnan(p) else p))
    if null is not None:
        for prediction, null_score, best_score in zip(predictions, null.tolist(), best.tolist()):
            prediction.no_answer_score = null_score - best_score if math.isfinite(best_score) else np.inf
    return predictions


def _trimmed_columns(examples: Sequence[Example], ex: np.ndarray, char_start: np.ndarray, char_end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each character span of ``examples[ex]``'s contexts trimmed (:func:`trimmed_span`): empty where it keeps no text."""
    return trimmed_spans([example.context for example in examples], ex, char_start, char_end)


def best_shown_scores(
    examples: Sequence[Example], ex: np.ndarray, char_start: np.ndarray, char_end: np.ndarray, score: np.ndarray
) -> np.ndarray:
    """Each example's best score among spans that keep some text once trimmed (-inf: none), the best span an answer
    can show: a span of whitespace alone is dropped, so ``null - best`` is never measured against it (the rule
    :mod:`bio_mrc.inference.documents` reads back, ``span.score - null``)."""
    best = np.full(len(examples), -np.inf)
    shown = keeps_text(examples, ex, char_start, char_end)
    np.maximum.at(best, ex[shown], score[shown])
    return best


def keeps_text(examples: Sequence[Example], rows: np.ndarray, char_start: np.ndarray, char_end: np.ndarray) -> np.ndarray:
    """Whether each character span of ``examples[rows]``'s contexts keeps some text once trimmed (:func:`trimmed_span`)."""
    begin, end = _trimmed_columns(examples, rows, char_start, char_end)
    return begin < end


def _readable_fallback(outputs: WindowOutputs, examples: Sequence[Example], columns: tuple[np.ndarray, ...], search) -> tuple[np.ndarray, ...]:
    """``columns`` (question, character start, character end, score) and, for each question none of whose spans keeps
    text once trimmed (its windows' n-best filled by spans of newline or zero-width tokens alone), the n-best spans
    that start and end on readable tokens: ``search(rows, readable)``, the windows' :class:`SpanCandidates` where only
    ``readable`` tokens may end a span. Other questions' spans and scores are unchanged."""
    ex, char_start, char_end = columns[:3]
    held = np.zeros(len(examples), dtype=bool)
    held[ex[keeps_text(examples, ex, char_start, char_end)]] = True
    rows = np.flatnonzero(~held[outputs.example_index] & outputs.mask.any(axis=1))
    if not len(rows):
        return columns
    found = search(rows, _readable_tokens(examples, outputs.example_index[rows], outputs.offsets[rows], outputs.mask[rows]))
    window, start, end = np.repeat(rows, found.start.shape[1]), found.start.ravel(), found.end.ravel()
    valid = start >= 0
    window, start, end = window[valid], start[valid], end[valid]
    extra = (outputs.example_index[window], outputs.offsets[window, start, 0], outputs.offsets[window, end, 1], found.score.ravel()[valid])
    return tuple(np.concatenate([ours, theirs]) for ours, theirs in zip(columns, extra))


def _readable_tokens(examples: Sequence[Example], questions: np.ndarray, offsets: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """(rows, L): the tokens of ``mask`` that keep some text once trimmed (``offsets`` of row ``k`` are into the context
    of ``examples[questions[k]]``), the tokens a span falling back on readable text begins and ends on."""
    places = np.nonzero(mask)
    tokens = offsets[places]
    readable = np.zeros(mask.shape, dtype=bool)
    readable[places] = keeps_text(examples, questions[places[0]], tokens[:, 0], tokens[:, 1])
    return readable


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
    """n-best spans by ``s_i + e_j`` across windows, each starting where ``outputs.starts`` allows; ``no_answer_score = null - best``.
    ``outputs``: the windows' span logits, offsets and masks (:class:`~bio_mrc.decoding.window_outputs.WindowOutputs`); ``examples``: the
    questions they were cut from, one prediction each, in their order; ``config``: the ``n_best`` spans kept, the
    ``max_answer_length`` (None: the default) and the other decoding options (:class:`DecodeConfig`)."""
    if outputs.start_logits is None:
        raise ValueError("span decoding needs a model with a span head")
    config = _limited(config)
    starts = np.where(outputs.starts, outputs.start_logits, -np.inf)  # the [CLS] null is read from the logits themselves
    candidates = best_spans(starts, outputs.end_logits, outputs.mask, config.max_answer_length, config.n_best,
                            first_end=outputs.first_end)
    null = _window_null(outputs, null_scores(outputs.start_logits, outputs.end_logits), len(examples))
    columns = _readable_fallback(outputs, examples, _span_candidates_to_chars(outputs, candidates), lambda rows, readable: best_spans(
        starts[rows], outputs.end_logits[rows], readable, config.max_answer_length, config.n_best, first_end=_rows(outputs.first_end, rows)))
    return _collect(examples, *columns, config.n_best, null)


def decode_joint(outputs: WindowOutputs, examples: Sequence[Example], config: DecodeConfig = DecodeConfig()) -> list[Prediction]:
    """Product of the span and BIO experts (see the module docstring)."""
    if outputs.start_logits is None or outputs.bio_logits is None:
        raise ValueError("joint decoding needs a model with both heads")
    config = _limited(config)
    candidates, window_null = _whole_word_spans(outputs, config, len(examples))
    null = _window_null(outputs, window_null, len(examples))
    columns = _span_candidates_to_chars(outputs, candidates)
    unheld = np.flatnonzero(~np.isin(np.arange(len(examples)), columns[0]))
    if len(unheld):  # no window holds a whole word of these: every word is longer than a window's context room
        across = _spans_across_windows(outputs, unheld, config)  # merged: its own max context
        columns = tuple(np.concatenate([ours, theirs]) for ours, theirs in zip(columns, across))
    columns = _readable_fallback(outputs, examples, columns, lambda rows, readable: _joint_spans(
        outputs, rows, config, config.max_answer_length, readable)[0])
    predictions = _collect(examples, *columns, config.n_best, null)
    if config.multi_span:  # its multi-span answers take the tagger's spans where it holds several likely ones
        tagged = decode_merged_tags(merge_tag_log_probs(outputs, len(examples)), examples, replace(config, require_answer=True))
        for prediction, tags in zip(predictions, tagged):
            prediction.tag_spans = tags.spans
    return predictions


@dataclass(frozen=True)
class _JointScores:
    """The joint decoding's per-token scores of some windows, (windows, L) each: ``any_start`` ``log P_start`` plus the
    B tag's bonus on every tagged token, ``starts`` the same where a span may start (else -inf), ``ends`` ``log P_end``
    where a word ends, ``inside`` each tagged token's inside gain (``log p_I - log p_O + β``); ``null`` (windows,) each
    window's ``[CLS]`` score."""

    any_start: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    inside: np.ndarray
    null: np.ndarray

    @classmethod
    def of(cls, part: WindowOutputs, prior: float) -> "_JointScores":
        attended = part.mask.copy()
        attended[:, 0] = True  # [CLS] takes part in the start/end softmax: it carries the null score
        log_start, log_end = log_softmax(part.start_logits, attended), log_softmax(part.end_logits, attended)
        log_tags, tagged = log_softmax(part.bio_logits), part.tagged
        inside = np.where(tagged, log_tags[..., TAG_I] - log_tags[..., TAG_O] + prior, 0.0)
        begin_bonus = log_tags[..., TAG_B] - log_tags[..., TAG_I] - prior  # the first tag is B: no I gain, no prior
        any_start = np.where(tagged, log_start + begin_bonus, -np.inf)
        return cls(any_start, np.where(part.starts, any_start, -np.inf), np.where(part.word_end, log_end, -np.inf), inside,
                   log_start[:, 0] + log_end[:, 0])


def _window_blocks(outputs: WindowOutputs, rows: np.ndarray) -> Iterator[tuple[int, WindowOutputs]]:
    """The windows ``rows`` a block of :data:`~bio_mrc.decoding.spans.BLOCK_WINDOWS` at a time: (where the block
    begins in ``rows``, its windows): a long context's per-token scores are held for one block, never for all its
    windows (each window's spans are its own)."""
    for begin in range(0, max(len(rows), 1), span_search.BLOCK_WINDOWS):
        block = rows[begin:begin + span_search.BLOCK_WINDOWS]
        yield begin, outputs.take(block, outputs.example_index[block])


def _joint_spans(
    outputs: WindowOutputs, rows: np.ndarray, config: DecodeConfig, max_length: int, readable: np.ndarray | None = None
) -> tuple[SpanCandidates, np.ndarray]:
    """The joint decoding's n-best spans of each of the windows ``rows`` (whole words of at most ``max_length``
    tokens; with ``readable`` (rows, L), only those beginning and ending on readable tokens) and each one's null
    score, a block of windows at a time (:func:`_window_blocks`)."""
    found, nulls = [], []
    for begin, part in _window_blocks(outputs, rows):
        scores = _JointScores.of(part, config.bio_length_prior or 0.0)
        starts, ends = scores.starts, scores.ends
        if readable is not None:
            held = readable[begin:begin + len(part.mask)]
            starts, ends = np.where(held, starts, -np.inf), np.where(held, ends, -np.inf)
        found.append(best_spans(starts, ends, part.mask, max_length, config.n_best, extra_token_scores=scores.inside,
                                first_end=part.first_end))
        nulls.append(scores.null)
    candidates = SpanCandidates(*(np.concatenate([getattr(f, name) for f in found]) for name in ("score", "start", "end")))
    return candidates, np.concatenate(nulls)


def _whole_word_spans(outputs: WindowOutputs, config: DecodeConfig, n_examples: int) -> tuple[SpanCandidates, np.ndarray]:
    """The joint decoding's n-best spans of every window, whole words of at most ``max_answer_length`` tokens (a
    question none of whose words fits, each longer, gets its windows' whole-word spans of any length instead), and
    every window's null score."""
    candidates, null = _joint_spans(outputs, np.arange(len(outputs.example_index)), config, config.max_answer_length)
    found = np.zeros(n_examples, dtype=bool)
    np.logical_or.at(found, outputs.example_index, np.isfinite(candidates.score).any(axis=1))
    rows = np.flatnonzero(~found[outputs.example_index])
    width = outputs.mask.shape[1]
    if not len(rows) or config.max_answer_length >= width:
        return candidates, null
    return _with_rows(candidates, rows, _joint_spans(outputs, rows, config, width)[0]), null


def _rows(array: np.ndarray | None, rows: np.ndarray) -> np.ndarray | None:
    return None if array is None else array[rows]


def _with_rows(candidates: SpanCandidates, rows: np.ndarray, other: SpanCandidates) -> SpanCandidates:
    """``candidates`` with its ``rows`` those of ``other`` (a band of fewer spans than n_best has fewer columns)."""
    columns = max(candidates.score.shape[1], other.score.shape[1])
    score, start, end = (_padded_columns(array, columns, fill) for array, fill in
                         ((candidates.score, -np.inf), (candidates.start, -1), (candidates.end, -1)))
    score[rows], start[rows], end[rows] = (_padded_columns(array, columns, fill) for array, fill in
                                           ((other.score, -np.inf), (other.start, -1), (other.end, -1)))
    return SpanCandidates(score, start, end)


def _padded_columns(array: np.ndarray, columns: int, fill: float) -> np.ndarray:
    """A copy of the (rows, k) ``array`` with ``columns - k`` columns of ``fill`` after its own."""
    return np.concatenate([array, np.full((len(array), columns - array.shape[1]), fill, dtype=array.dtype)], axis=1)


def _spans_across_windows(outputs: WindowOutputs, questions: np.ndarray, config: DecodeConfig) -> tuple[np.ndarray, ...]:
    """(question, character start, character end, score) of the n-best whole-word spans, of any length, of the
    ``questions`` none of whose words one window holds whole (one run of characters longer than a window: a DNA
    sequence, a base64 blob): their windows merged into one row of words each, as the BIO decoding merges them, a
    word's start and inside scores read at its first piece and its end score at its last piece, each from the window
    where that piece has the most context. The scores stay the joint decoding's (``log P_start + log P_end + r``)."""
    part = question_outputs(outputs, questions)
    scores = [_JointScores.of(block, config.bio_length_prior or 0.0) for _, block in _window_blocks(part, np.arange(len(part.mask)))]
    firsts = merge_windows(WindowOutputs(part.example_index, part.words, part.tagged),
                           np.concatenate([np.stack([s.any_start, s.inside], axis=-1) for s in scores]), len(questions))
    ends = np.concatenate([s.ends for s in scores])
    lasts = merge_windows(WindowOutputs(part.example_index, part.words, part.word_end), ends, len(questions))
    word_ends = np.full(firsts.mask.shape, -np.inf)
    for row in range(len(questions)):  # each word's end score in its start's slot (words do not overlap: keyed by their start)
        held, ending = firsts.offsets[row, firsts.mask[row], 0], lasts.offsets[row, lasts.mask[row], 0]
        slot = np.minimum(np.searchsorted(held, ending), max(len(held) - 1, 0))
        known = (held[slot] == ending) if len(held) else np.zeros(len(ending), dtype=bool)
        word_ends[row, slot[known]] = lasts.values[row, lasts.mask[row]][known]
    width = firsts.mask.shape[1]
    found = best_spans(firsts.values[..., 0], word_ends, firsts.mask, width, config.n_best,
                       extra_token_scores=firsts.values[..., 1])
    rows_of = np.repeat(np.arange(len(questions)), found.start.shape[1])
    start, end, valid = found.start.ravel(), found.end.ravel(), found.start.ravel() >= 0
    rows_of, start, end = rows_of[valid], start[valid], end[valid]
    return questions[rows_of], firsts.offsets[rows_of, start, 0], firsts.offsets[rows_of, end, 1], found.score.ravel()[valid]


def decode_bio_predictions(
    outputs: WindowOutputs, examples: Sequence[Example], config: DecodeConfig = DecodeConfig()
) -> list[Prediction]:
    """Tag log-likelihood ratios of the merged tagged tokens -> spans, best first.

    The SQuAD answer is the best single span; ``no_answer_score`` is
    ``log P(all O) - log P(best single span)`` (higher = more likely unanswerable).
    Ratios include the span-length prior ``config.bio_length_prior``.
    """
    return decode_merged_tags(merge_tag_log_probs(outputs, len(examples)), examples, config)


def merge_tag_log_probs(outputs: WindowOutputs, n_examples: int) -> MergedTokens:
    """The BIO head's log-probabilities of each example's tagged tokens, windows merged (one row per example)."""
    if outputs.bio_logits is None:
        raise ValueError("BIO decoding needs a model with a BIO head")
    view = outputs.tag_view()
    merged = merge_windows(view, view.bio_logits, n_examples)  # log-softmax of the merged tokens alone, not every window's
    values = np.zeros(merged.values.shape, dtype=np.float64)
    values[merged.mask] = log_softmax(merged.values[merged.mask])
    return MergedTokens(values, merged.offsets, merged.mask)


def word_tag_probabilities(merged: MergedTokens) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The BIO head's P(B) and P(I) of every tagged word of every example, from merged tag
    log-probabilities (:func:`merge_tag_log_probs`), the examples one after another, each in
    context order: (words per example (E,), character offsets (W, 2), probabilities (W, 2): B, I)."""
    mask = merged.mask  # each row's words fill its first slots, in context order
    return mask.sum(axis=1), merged.offsets[mask], np.exp(merged.values[mask][:, [TAG_B, TAG_I]])


def grouped_word_tag_probabilities(grouped: GroupedTags) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`word_tag_probabilities` of the merged rows of every group (:class:`GroupedTags`), in question order."""
    empty = MergedTokens(np.zeros((0, 1, 3)), np.zeros((0, 1, 2), dtype=np.int64), np.zeros((0, 1), dtype=bool))
    parts = [word_tag_probabilities(MergedTokens(merged.values[[row]], merged.offsets[[row]], merged.mask[[row]]))
             for merged, row in grouped.rows()] or [word_tag_probabilities(empty)]
    return tuple(np.concatenate([part[k] for part in parts]) for k in range(3))  # type: ignore[return-value]


def decode_merged_tags(
    merged: MergedTokens, examples: Sequence[Example], config: DecodeConfig = DecodeConfig(), kept_spans: int | None = None,
) -> list[Prediction]:
    """:func:`decode_bio_predictions` from already merged tag log-probabilities (merge once, decode many ways).
    ``kept_spans``: the single answers' spans each prediction keeps, best first (None: ``config.n_best``); the search
    still finds ``config.n_best``, so they are the first of those, and the no-answer score is the same (a grid of
    decodings whose scoring reads the best span alone builds no others). Multi-span answers keep every span chosen."""
    config = _limited(config)
    log_probs = merged.values + np.where(np.arange(3) == TAG_I, config.bio_length_prior or 0.0, 0.0)
    single = _shown_tag_spans(log_probs, merged, examples, config.max_answer_length, config.n_best)
    probabilities = None
    if config.multi_span:
        answer_keys = answer_text_keys(examples, merged.offsets)
        shown = shown_text(examples, merged.offsets)
        wider = single if config.n_best >= CONFIDENCE_SPANS else _shown_tag_spans(
            log_probs, merged, examples, config.max_answer_length, CONFIDENCE_SPANS)
        rows, starts, ends, scores, probabilities = _tag_distribution_spans(log_probs, merged.mask, wider, answer_keys, config, shown)
        limit = None  # every span the expected-F1 rule chose
    else:
        valid = single.start >= 0
        rows = np.nonzero(valid)[0]
        starts, ends, scores = single.start[valid], single.end[valid], single.score[valid]
        limit = config.n_best if kept_spans is None else min(kept_spans, config.n_best)
    char_start, char_end = merged.offsets[rows, starts, 0], merged.offsets[rows, ends, 1]
    predictions = _collect(examples, rows, char_start, char_end, scores, n_best=limit, null=None, probability=probabilities)
    found = single.start >= 0
    single_rows = np.nonzero(found)[0]
    best = best_shown_scores(examples, single_rows, merged.offsets[single_rows, single.start[found], 0],
                             merged.offsets[single_rows, single.end[found], 1], single.score[found])
    for prediction, best_score in zip(predictions, best.tolist()):
        prediction.no_answer_score = -best_score  # +inf for an example without tagged tokens
    return predictions


def _shown_tag_spans(log_probs: np.ndarray, merged: MergedTokens, examples: Sequence[Example], max_length: int, n_best: int) -> SpanCandidates:
    """The ``n_best`` single tag spans of every merged row (:func:`best_tag_spans`); a row none of whose spans keeps
    text once trimmed (its n-best filled by spans of newline or zero-width tokens alone, each a tag of its own at
    sub-word level) gets the n-best spans that begin and end on readable tokens instead. Other rows are unchanged."""
    found = best_tag_spans(log_probs, merged.mask, max_length, n_best)
    places = np.nonzero(found.start >= 0)
    held = np.zeros(len(merged.mask), dtype=bool)
    held[places[0][shown_text(examples, merged.offsets)(places[0], found.start[places], found.end[places])]] = True
    rows = np.flatnonzero(~held & merged.mask.any(axis=1))
    if not len(rows):
        return found
    readable = _readable_tokens(examples, rows, merged.offsets[rows], merged.mask[rows])
    return _with_rows(found, rows, best_tag_spans(log_probs[rows], merged.mask[rows], max_length, n_best, ends=readable))


def _tag_distribution_spans(
    log_probs: np.ndarray, mask: np.ndarray, single: SpanCandidates, answer_keys: AnswerKeys, config: DecodeConfig, shown
) -> tuple[np.ndarray, ...]:
    """(row, start, end, r, posterior) of each row's multi-span answer (the expected-F1 answer of
    :func:`~bio_mrc.decoding.bio_spans.expected_f1_tag_spans` over ``answer_keys``' answers, from the ``single``
    n-best already searched, at least :data:`~bio_mrc.decoding.shares.CONFIDENCE_SPANS`, the first ``config.n_best``
    the candidates), its candidates the spans that ``shown`` says keep some text once trimmed (a span of
    whitespace tokens alone would be dropped from the answer, leaving it empty); without ``require_answer``, a row
    whose most probable tag sequence tags no text (all O, or spans of blank characters alone) has none (it abstains)."""
    likeliest = likeliest_tag_spans(log_probs, mask, config.max_answer_length)
    found = np.nonzero(single.start >= 0)
    hidden = tuple(axis[~shown(found[0], single.start[found], single.end[found])] for axis in found)
    start, end, score = single.start.copy(), single.end.copy(), single.score.copy()
    start[hidden], end[hidden], score[hidden] = -1, -1, -np.inf
    kept = shown(likeliest.row, likeliest.start, likeliest.end)
    candidates = TagSpans(likeliest.row[kept], likeliest.start[kept], likeliest.end[kept], likeliest.score[kept])
    spans, posterior = expected_f1_answer(log_probs, mask, SpanCandidates(score, start, end), candidates, answer_keys, config.n_best)
    columns = (spans.row, spans.start, spans.end, spans.score, posterior)
    if config.require_answer:
        return columns
    answered = np.bincount(candidates.row, minlength=len(mask)) > 0  # its blank spans are no answer: trimmed, nothing
    return tuple(column[answered[spans.row]] for column in columns)


def shown_text(examples: Sequence[Example], offsets: np.ndarray):
    """``(rows, starts, ends) -> bool`` for tagged-token spans: whether each keeps some text once trimmed
    (:func:`trimmed_span`). ``offsets``: each row's tokens' character offsets into its question's context."""
    def shown(rows: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
        return keeps_text(examples, rows, offsets[rows, starts, 0], offsets[rows, ends, 1])
    return shown


def answer_text_keys(examples: Sequence[Example], offsets: np.ndarray) -> AnswerKeys:
    """Keys that make the tagged-token spans of one question one answer where their texts are one once normalised
    as the metrics normalise them (a name tagged at several of its mentions); a span whose text normalises to nothing
    (punctuation or an article alone) is no answer, pooled with none: a key of its own. ``offsets``: each row's tokens'
    character offsets into its question's context."""
    def keys(rows: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
        texts = [normalize_answer(examples[row].context[begin:end]) for row, begin, end in
                 zip(rows.tolist(), offsets[rows, starts, 0].tolist(), offsets[rows, ends, 1].tolist())]
        if not texts:
            return np.zeros(0, np.int64)
        keyed = np.unique(np.array(texts, dtype=object), return_inverse=True)[1].ravel()
        textless = np.array([not text for text in texts])
        return np.where(textless, len(texts) + np.arange(len(texts)), keyed)
    return keys


#: Token slots (questions × the longest question's context tokens) one decoding pass pads its merged tag rows to, at
#: most: a tag decoding holds several float64 arrays of that many rows × tags, so one 500,000-character document among
#: 1,000 short questions would otherwise pad every question to its length (gigabytes). A longer question is decoded alone.
DECODE_TOKEN_SLOTS = 1 << 20


def decode(outputs: WindowOutputs, examples: Sequence[Example], decoding: str, config: DecodeConfig = DecodeConfig()) -> list[Prediction]:
    """Decode the way the registered decoding ``decoding`` (``span``, ``bio``, ``joint``, ...) does, questions of
    like lengths together (:func:`length_groups`); each question's answer depends on its own windows alone."""
    entry = registry.decoding(decoding)
    groups = length_groups(outputs, len(examples))
    if len(groups) == 1:
        return entry.decode(outputs, examples, config)
    parts = [entry.decode(question_outputs(outputs, group), [examples[i] for i in group], config) for group in groups]
    return in_question_order(groups, parts, len(examples))


def question_outputs(outputs: WindowOutputs, questions: np.ndarray) -> WindowOutputs:
    """The windows of the questions at indices ``questions`` (in increasing order), renumbered ``0..len(questions)-1``."""
    rows = np.flatnonzero(np.isin(outputs.example_index, questions))
    return outputs.take(rows, np.searchsorted(questions, outputs.example_index[rows]))


def in_question_order(groups: Sequence[np.ndarray], parts: Sequence[Sequence], n_examples: int) -> list:
    """The items of each group's ``parts`` (one per question of ``groups``, in its order) as one list in question order."""
    ordered: list = [None] * n_examples
    for group, part in zip(groups, parts):
        for index, item in zip(group.tolist(), part):
            ordered[index] = item
    return ordered


@dataclass
class GroupedTags:
    """A tag decoding's merged tag rows (``merge_tags`` of its registry entry) of questions of like length, group by
    group (:func:`length_groups`): ``groups`` holds each group's question indices, ``merged`` its merged rows. Merged
    once, decoded many ways (tuning's grids), never padded past :data:`DECODE_TOKEN_SLOTS` but for one long question."""

    groups: list[np.ndarray]
    merged: list[MergedTokens]
    n_examples: int

    @classmethod
    def of(cls, outputs: WindowOutputs, n_examples: int, merge) -> "GroupedTags":
        """The groups of ``outputs`` merged by ``merge(outputs, n_questions)``."""
        groups = length_groups(outputs, n_examples)
        return cls(groups, [merge(question_outputs(outputs, group), len(group)) for group in groups], n_examples)

    def decode(self, decode_tags, examples: Sequence[Example], config: DecodeConfig) -> list[Prediction]:
        """``decode_tags(merged, examples, config)`` of every group, the predictions in question order."""
        parts = [decode_tags(merged, [examples[i] for i in group], config) for group, merged in zip(self.groups, self.merged)]
        return in_question_order(self.groups, parts, self.n_examples)

    def rows(self) -> list[tuple[MergedTokens, int]]:
        """Each question's (merged rows of its group, its row there), in question order."""
        parts = [[(merged, row) for row in range(len(group))] for group, merged in zip(self.groups, self.merged)]
        return in_question_order(self.groups, parts, self.n_examples)


def merged_tag_groups(decoding: str, outputs: WindowOutputs, n_examples: int) -> GroupedTags | None:
    """The registered decoding ``decoding``'s merged tag rows in groups (:class:`GroupedTags`), None for a decoding
    that reads no tag sequence."""
    entry = registry.decoding(decoding)
    return None if entry.merge_tags is None else GroupedTags.of(outputs, n_examples, entry.merged_tags)


def decode_tag_groups(decoding: str, grouped: GroupedTags, examples: Sequence[Example], config: DecodeConfig) -> list[Prediction]:
    """The registered decoding ``decoding``'s predictions from its grouped merged tag rows (:func:`merged_tag_groups`)."""
    return grouped.decode(registry.decoding(decoding).decode_merged, examples, config)


def length_groups(outputs: WindowOutputs, n_examples: int, slots: int | None = None) -> list[np.ndarray]:
    """The questions' indices in groups of like context length (tokens over their windows, an upper bound of the
    merged count), each group's count × its longest at most ``slots`` (:data:`DECODE_TOKEN_SLOTS`; a longer question
    alone), each in question order."""
    slots = DECODE_TOKEN_SLOTS if slots is None else slots
    tokens = np.bincount(outputs.example_index, weights=outputs.mask.sum(axis=1), minlength=n_examples)
    order = np.argsort(tokens, kind="stable")
    groups, current = [], []
    for index in order.tolist():
        if current and (len(current) + 1) * max(tokens[index], 1) > slots:
            groups.append(np.sort(np.array(current, dtype=np.int64)))
            current = []
        current.append(index)
    if current:
        groups.append(np.sort(np.array(current, dtype=np.int64)))
    return groups


available_decodings = registry.decodings_for
