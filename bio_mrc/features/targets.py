"""Training targets of tokenized windows: the span head's gold start/end (one-hot or soft over annotators)
and the BIO head's tags (soft, one-hot or every annotator's for the marginal likelihood)."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..tags import TAG_B, TAG_I, TAG_O, spans_to_tags
from ..types import Alternative, Example

MISSING_ANNOTATOR = -1  # fills the annotator axis of marginal targets for examples with fewer annotators

__all__ = ["MISSING_ANNOTATOR", "add_targets", "answers_no_window_holds", "bio_targets"]


def bio_targets(words: np.ndarray, tagged: np.ndarray, alternatives: tuple[Alternative, ...], kind: str) -> np.ndarray:
    """BIO targets of one window over its tagged tokens (``words``: their character spans).

    ``soft``: (L, 3) the annotators' mean tag distribution; ``one-hot``: the
    same for the first annotator; ``marginal``: (L, K) every annotator's
    integer tags. An unanswerable question is one all-O annotator. Untagged
    tokens get zero distributions (no loss) or O.
    """
    chosen = alternatives[:1] if kind == "one-hot" else alternatives
    tags = np.stack([spans_to_tags(words, tagged, alt) for alt in chosen]) if chosen else np.full((1, len(words)), TAG_O)
    if kind == "marginal":
        return np.ascontiguousarray(tags.T)
    dist = np.stack([(tags == t).mean(0) for t in (TAG_B, TAG_I, TAG_O)], axis=-1)
    dist[~tagged] = 0.0  # never scored; zeros keep the soft loss exactly 0 there
    return dist.astype(np.float32)


def _span_positions(offsets: np.ndarray, para: np.ndarray, start: int, end: int) -> tuple[int, int]:
    """Gold start/end token of a character span, or ``(0, 0)`` ([CLS]) when the window lacks part of it."""
    positions = np.flatnonzero(para)
    window_start, window_end = offsets[positions[0], 0], offsets[positions[-1], 1]
    if start < window_start or end > window_end:
        return 0, 0
    inside = np.flatnonzero(para & (offsets[:, 0] < end) & (offsets[:, 1] > start))
    if not len(inside):  # the span is pure whitespace between tokens
        return 0, 0
    return int(inside[0]), int(inside[-1])


def add_targets(
    features: dict[str, list[Any]], examples: Sequence[Example], bio_kind: str, span_kind: str
) -> dict[str, list[Any]]:
    """Add ``start_positions``/``end_positions`` and ``bio_targets`` to tokenized windows, BIO targets of
    ``bio_kind`` and span targets of ``span_kind`` (see :class:`~bio_mrc.features.windows.FeatureConfig`).

    Unanswerable examples get ``[CLS]`` span targets and all-O tags. Multi-span
    alternatives train the span head on their first span (a start/end head can
    only name one); the BIO head sees all of them.
    """
    starts, ends, bio, covered = [], [], [], []
    windows = zip(features["offset_mapping"], features["paragraph_mask"], features["word_offsets"], features["tag_mask"], features["example_index"])
    for offsets, para, words, tagged, ex_index in windows:
        offsets, para = np.asarray(offsets), np.asarray(para, dtype=bool)
        alternatives = examples[ex_index].answers
        bio.append(bio_targets(np.asarray(words), np.asarray(tagged, dtype=bool), alternatives, bio_kind))

        positions = [_span_positions(offsets, para, *alt[0]) for alt in alternatives] or [(0, 0)]
        covered.append(any(position != (0, 0) for position in positions))
        if span_kind == "one-hot":
            starts.append(positions[0][0])
            ends.append(positions[0][1])
        else:
            s_dist, e_dist = np.zeros(len(offsets), np.float32), np.zeros(len(offsets), np.float32)
            np.add.at(s_dist, [p[0] for p in positions], 1.0 / len(positions))
            np.add.at(e_dist, [p[1] for p in positions], 1.0 / len(positions))
            starts.append(s_dist)
            ends.append(e_dist)
    return {**features, "start_positions": starts, "end_positions": ends, "bio_targets": bio, "answer_in_window": covered}


def answers_no_window_holds(features: Any, examples: Sequence[Example]) -> list[str]:
    """The ids of answerable questions whose every answer misses every window's tokens: pure whitespace,
    characters the tokenizer drops (zero-width, control), or longer than a window. They would train as
    unanswerable, so the official scripts' tolerance of such answers should not pass without a word."""
    held = np.zeros(len(examples), dtype=bool)
    index, in_window = np.asarray(features["example_index"]), np.asarray(features["answer_in_window"], dtype=bool)
    held[index[in_window]] = True
    return [example.id for example, found in zip(examples, held) if example.is_answerable and not found]
