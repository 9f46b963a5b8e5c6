"""Training targets of tokenized windows: each head's labels, made by its registry entry's ``build_targets`` from
a :class:`Window`; the package's own: the span head's gold start/end (one-hot or soft over annotators) and the BIO
head's tags (soft, one-hot or every annotator's for the marginal likelihood), of the spans as annotated or of
every mention of their texts."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Iterable, NamedTuple, Sequence

import numpy as np

from .. import registry
from ..answer_text import with_every_mention, without_blank_edges
from ..tags import TAG_B, TAG_I, TAG_O, spans_to_tags
from ..types import Alternative, CharSpan, Example
from .config import BIO_TARGETS

MISSING_ANNOTATOR = -1  # fills the annotator axis of marginal targets for examples with fewer annotators

__all__ = ["GoldByPlace", "MISSING_ANNOTATOR", "SpansByPlace", "TAGGER_GOLD", "TaggerGold", "Window", "add_targets", "answers_no_window_holds", "bio_targets",
           "bio_window_targets", "span_targets"]


def bio_targets(
    words: np.ndarray, tagged: np.ndarray, alternatives: tuple[Alternative, ...], kind: str, unscored: tuple[CharSpan, ...] = ()
) -> np.ndarray:
    """BIO targets of one window over its tagged tokens (``words``: their character spans).

    ``soft``: (L, 3) the annotators' mean tag distribution; ``one-hot``: the
    same for the first annotator; ``marginal``: (L, K) every annotator's
    integer tags. An unanswerable question is one all-O annotator. Untagged
    tokens, and the distributions' tokens that overlap an ``unscored`` span, get
    zero distributions (no loss) or O.
    """
    target = BIO_TARGETS[kind]
    chosen = alternatives[:1] if target.first_annotator_only else alternatives
    tags = np.stack([spans_to_tags(words, tagged, alt) for alt in chosen]) if chosen else np.full((1, len(words)), TAG_O)
    if not target.tag_distribution:
        return np.ascontiguousarray(tags.T)
    dist = np.stack([(tags == t).mean(0) for t in (TAG_B, TAG_I, TAG_O)], axis=-1)
    dist[~tagged] = 0.0  # never scored; zeros keep the soft loss exactly 0 there
    for start, end in unscored:
        dist[(words[:, 0] < end) & (words[:, 1] > start)] = 0.0
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


def _first_held_span(offsets: np.ndarray, para: np.ndarray, alternative: Alternative) -> tuple[int, int]:
    """The tokens of ``alternative``'s first span (in context order) that the window holds whole, ``(0, 0)`` where none."""
    held = (_span_positions(offsets, para, start, end) for start, end in alternative)
    return next((position for position in held if position != (0, 0)), (0, 0))


@dataclass(frozen=True)
class Window:
    """One tokenized training window, what a head's ``build_targets`` reads: ``offsets`` (L, 2) character spans
    of the paragraph tokens (-1 elsewhere), ``paragraph`` (L,) the paragraph tokens, ``words`` (L, 2) each token's
    word, ``tagged`` (L,) the tokens that carry a tag, ``answers``: the question's alternatives of character
    spans (empty: unanswerable); ``tag_answers``: the same alternatives as the tagger learns them, and
    ``unscored``: spans whose tokens the tagger is not scored on (``FeatureConfig.tag_mentions``; None: ``answers``)."""

    offsets: np.ndarray
    paragraph: np.ndarray
    words: np.ndarray
    tagged: np.ndarray
    answers: tuple[Alternative, ...]
    tag_answers: tuple[Alternative, ...] | None = None
    unscored: tuple[CharSpan, ...] = ()

    def span_positions(self) -> list[tuple[int, int]]:
        """Each alternative's first span that this window holds whole, as (start, end) tokens, ``(0, 0)`` where it
        holds none; ``[(0, 0)]`` for an unanswerable question. A multi-span answer's parts may lie in different
        windows: each window that holds one teaches it, as the tagger learns it there, rather than "no answer"."""
        return [_first_held_span(self.offsets, self.paragraph, alt) for alt in self.answers] or [(0, 0)]

    def holds_an_answer(self) -> bool:
        return any(position != (0, 0) for position in self.span_positions())

    def held_span_lengths(self) -> dict[CharSpan, int]:
        """Each span of every alternative that this window holds whole, with its length in tokens."""
        held = {}
        for span in (span for alternative in self.answers for span in alternative):
            start, end = _span_positions(self.offsets, self.paragraph, *span)
            if (start, end) != (0, 0):
                held[span] = end - start + 1
        return held


def span_targets(window: Window, config: Any) -> dict[str, Any]:
    """The span head's ``start_positions``/``end_positions``: the first annotator's tokens (``one-hot``), or
    (``soft``) distributions over positions, averaged over the annotators. Multi-span alternatives train it on
    the first span the window holds (a start/end head can only name one); unanswerable: ``[CLS]``."""
    positions = window.span_positions()
    if config.span_targets == "one-hot":
        return {"start_positions": positions[0][0], "end_positions": positions[0][1]}
    starts, ends = np.zeros(len(window.offsets), np.float32), np.zeros(len(window.offsets), np.float32)
    np.add.at(starts, [p[0] for p in positions], 1.0 / len(positions))
    np.add.at(ends, [p[1] for p in positions], 1.0 / len(positions))
    return {"start_positions": starts, "end_positions": ends}


def bio_window_targets(window: Window, config: Any) -> dict[str, Any]:
    """The BIO head's ``bio_targets`` of ``config.bio_targets``' kind (:func:`bio_targets`): every span of
    every alternative as the tagger learns it; unanswerable: all O."""
    answers = window.answers if window.tag_answers is None else window.tag_answers
    return {"bio_targets": bio_targets(window.words, window.tagged, answers, config.bio_targets, window.unscored)}


class TaggerGold(NamedTuple):
    """What the tagger learns of one example: its alternatives, and the spans it is not scored on."""

    answers: tuple[Alternative, ...]
    unscored: tuple[CharSpan, ...] = ()


def _every_mention(example: Example) -> TaggerGold:
    return TaggerGold(tuple(with_every_mention(example.context, alternative) for alternative in example.answers or ()))


def _other_mentions_unscored(example: Example) -> TaggerGold:
    answers = example.answers or ()
    others = {span for alternative, every in zip(answers, _every_mention(example).answers) for span in every[len(alternative):]}
    return TaggerGold(answers, tuple(sorted(others)))


# FeatureConfig.tag_mentions -> what the tagger learns of an example
TAGGER_GOLD = {"annotated": lambda example: TaggerGold(example.answers or ()), "every": _every_mention,
               "ignored": _other_mentions_unscored}


class SpansByPlace:
    """Character spans sorted by start, which give the spans that may meet a range of characters in time of
    the spans near it: every mention of "a" in a long context is a span of every window's gold, and a window's
    tags looked at each of them (time of the windows times the mentions)."""

    def __init__(self, spans: Iterable[CharSpan]) -> None:
        self.spans = sorted(spans)
        self.starts = np.array([start for start, _ in self.spans], dtype=np.int64)
        self.reach = np.maximum.accumulate(np.array([end for _, end in self.spans], dtype=np.int64)) if self.spans else self.starts

    def meeting(self, low: int, high: int) -> tuple[CharSpan, ...]:
        """Every span that may overlap a character span within [low, high) (one with ``start < high`` and
        ``end > low``), and any of a negative start (which a token without characters, (-1, -1), overlaps), in order."""
        negative = int(np.searchsorted(self.starts, 0, side="left"))
        first = max(negative, int(np.searchsorted(self.reach, low, side="right")))  # those before it end by low
        last = int(np.searchsorted(self.starts, high, side="left"))
        return (*self.spans[:negative], *(span for span in self.spans[first:last] if span[1] > low))


class GoldByPlace(NamedTuple):
    """An example's :class:`TaggerGold`, each alternative's spans and the unscored ones by place."""

    answers: tuple[SpansByPlace, ...]
    unscored: SpansByPlace

    @classmethod
    def of(cls, gold: TaggerGold) -> GoldByPlace:
        return cls(tuple(SpansByPlace(alternative) for alternative in gold.answers), SpansByPlace(gold.unscored))

    def near(self, words: np.ndarray) -> TaggerGold:
        """The gold a window of these ``words`` (L, 2) tags by: the spans that may overlap one of them (a row
        ending at 0 or before, (-1, -1) outside the context, overlaps only spans of a negative start)."""
        words = words.reshape(-1, 2)
        words = words[words[:, 1] > 0]
        low, high = (int(words[:, 0].min()), int(words[:, 1].max())) if len(words) else (0, 0)
        return TaggerGold(tuple(spans.meeting(low, high) for spans in self.answers), self.unscored.meeting(low, high))


def add_targets(
    features: dict[str, list[Any]], examples: Sequence[Example], config: Any, heads: Iterable[str]
) -> dict[str, list[Any]]:
    """Add each head's labels to tokenized windows, as its registry entry's ``build_targets`` makes them
    (``config``: the :class:`~bio_mrc.features.config.FeatureConfig`), ``answer_in_window``: whether the window
    holds some alternative's first span, and ``answer_lengths``: the length in tokens of each answer span that no
    earlier window of its question held whole (each span counted once, where it is first held)."""
    entries = [registry.head(name) for name in heads]
    columns: dict[str, list[Any]] = {label: [] for entry in entries for label in entry.targets}
    covered, lengths, seen = [], [], set()
    answers = [without_blank_edges(example.context, example.answers) for example in examples]
    gold = [GoldByPlace.of(TAGGER_GOLD[config.tag_mentions](replace(example, answers=trimmed)))
            for example, trimmed in zip(examples, answers)]
    windows = zip(features["offset_mapping"], features["paragraph_mask"], features["word_offsets"], features["tag_mask"], features["example_index"])
    for offsets, para, words, tagged, ex_index in windows:
        words = np.asarray(words)
        window = Window(np.asarray(offsets), np.asarray(para, dtype=bool), words,
                        np.asarray(tagged, dtype=bool), answers[ex_index], *gold[ex_index].near(words))
        for entry in entries:
            for label, value in entry.window_targets(window, config).items():
                columns[label].append(value)
        covered.append(window.holds_an_answer())
        held = {(ex_index, span): length for span, length in window.held_span_lengths().items()}
        lengths.append([length for key, length in held.items() if key not in seen])
        seen.update(held)
    return {**features, **columns, "answer_in_window": covered, "answer_lengths": lengths}


def answers_no_window_holds(features: Any, examples: Sequence[Example]) -> list[str]:
    """The ids of answerable questions whose every answer misses every window's tokens (``features``: the windows'
    ``datasets.Dataset``): pure whitespace, characters the tokenizer drops (zero-width, control), or longer than a
    window. They would train as unanswerable, so the official scripts' tolerance of such answers should not pass
    without a word."""
    held = np.zeros(len(examples), dtype=bool)
    # whole arrow columns: datasets' row iterator takes seconds over a large file's windows
    columns = features.with_format("arrow")
    index, in_window = (columns[name].to_numpy() for name in ("example_index", "answer_in_window"))
    held[index[in_window]] = True
    return [example.id for example, found in zip(examples, held) if example.is_answerable and not found]
