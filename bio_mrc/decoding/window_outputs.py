"""Per-window model outputs, and merging windows back into one token sequence per example.

This is the single place of the maximum-context rule and of tokens -> characters.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .. import registry
from ..errors import DataFormatError, ModelOutputError, argument
from ..types import Example


@dataclass(init=False)
class WindowOutputs:
    """Model outputs of all windows, padded to one length ``L``.

    ``offsets`` (F, L, 2) are character offsets of paragraph tokens and -1
    elsewhere; ``mask`` (F, L) marks paragraph tokens; ``example_index`` (F,)
    says which example each window belongs to. ``logits`` holds each head's
    logits by the names its registry entry gives them (``start_logits``,
    ``end_logits``, ``bio_logits``, ...), passed as keywords, read and set as
    attributes; a registered head's name the model lacks reads None.
    ``word_offsets`` (F, L, 2) give the character span of each paragraph token's
    word and ``tag_mask`` (F, L) the tokens that carry a BIO tag (the first piece
    of each word for a word-level tagger); without them every paragraph token is
    its own word and carries a tag. ``start_mask`` (F, L) marks the paragraph tokens a
    span may start on (:func:`max_context_starts`); without it every one may. ``first_end`` (F, L), with it, is the
    first position a span starting at each token may end on (a later window reads only the spans no earlier one holds).
    """

    example_index: np.ndarray
    offsets: np.ndarray
    mask: np.ndarray
    word_offsets: np.ndarray | None
    tag_mask: np.ndarray | None
    start_mask: np.ndarray | None
    first_end: np.ndarray | None
    logits: dict[str, np.ndarray]

    def __init__(self, example_index: np.ndarray, offsets: np.ndarray, mask: np.ndarray, *,
                 word_offsets: np.ndarray | None = None, tag_mask: np.ndarray | None = None,
                 start_mask: np.ndarray | None = None, first_end: np.ndarray | None = None,
                 **logits: np.ndarray | None) -> None:
        if unknown := sorted(set(logits) - set(registry.head_outputs())):
            raise TypeError(f"WindowOutputs got {unknown}, which no registered head outputs ({registry.head_outputs()})")
        self.example_index, self.offsets, self.mask = example_index, offsets, mask
        self.word_offsets, self.tag_mask, self.start_mask = word_offsets, tag_mask, start_mask
        self.first_end = first_end
        self.logits = {name: array for name, array in logits.items() if array is not None}

    def __getattr__(self, name: str) -> np.ndarray | None:
        if name != "logits" and name in registry.head_outputs():
            return self.__dict__.get("logits", {}).get(name)
        raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")

    def __setattr__(self, name: str, value) -> None:
        if name != "logits" and name in registry.head_outputs():  # one place for a head's output: what take() copies
            logits = self.__dict__.setdefault("logits", {})
            logits.pop(name, None) if value is None else logits.__setitem__(name, value)
        else:
            super().__setattr__(name, value)

    def per_window(self) -> dict[str, np.ndarray | None]:
        """Every per-window array but ``example_index``, by the keyword that rebuilds it."""
        return {"offsets": self.offsets, "mask": self.mask, "word_offsets": self.word_offsets, "tag_mask": self.tag_mask,
                "start_mask": self.start_mask, "first_end": self.first_end, **self.logits}

    def take(self, rows: np.ndarray, example_index: np.ndarray) -> "WindowOutputs":
        """The windows at ``rows``, their examples renumbered as ``example_index`` says."""
        return WindowOutputs(example_index, **{name: None if array is None else array[rows] for name, array in self.per_window().items()})

    @classmethod
    def concatenate(cls, parts: "list[WindowOutputs]", example_index: np.ndarray) -> "WindowOutputs":
        """The windows of ``parts`` (padded to one length) one after another, their examples numbered as ``example_index`` says."""
        arrays = [part.per_window() for part in parts]
        return cls(example_index, **{name: None if first is None else np.concatenate([a[name] for a in arrays])
                                     for name, first in arrays[0].items()})

    @property
    def words(self) -> np.ndarray:
        """(F, L, 2): each paragraph token's word span, or its own offsets where the words are the tokens."""
        return self.offsets if self.word_offsets is None else self.word_offsets

    @property
    def tagged(self) -> np.ndarray:
        """(F, L): the tokens that carry a BIO tag, every paragraph token without a ``tag_mask``."""
        return self.mask if self.tag_mask is None else self.tag_mask

    @property
    def starts(self) -> np.ndarray:
        """(F, L): the paragraph tokens a span may start on."""
        return self.mask if self.start_mask is None else self.mask & self.start_mask

    @property
    def word_end(self) -> np.ndarray:
        """(F, L): the paragraph tokens that end a word (every token at sub-word level): a token whose offsets reach
        past its word's end holds the spaces after it (an added token that strips them, ``rstrip=True``); a token of
        no word (its word span -1) ends none."""
        return self.mask & (self.offsets[..., 1] >= self.words[..., 1]) & (self.words[..., 0] >= 0)

    def tag_view(self) -> "WindowOutputs":
        """The tagged tokens only, each standing for its whole word: what the BIO decoding reads."""
        return WindowOutputs(self.example_index, self.words, self.tagged, **self.logits)


def first_non_finite(outputs: WindowOutputs) -> tuple[int, str] | None:
    """The first question (its example index) whose windows' scores a decoding reads hold NaN or infinity, with the
    head output that holds them; None where all are finite. A decoding reads the paragraph's tokens and a window's
    first token, whose span scores are the null score; the rest (-inf past a window's end) it never reads."""
    read = outputs.mask.copy()
    read[:, 0] = True
    found: tuple[int, str] | None = None
    for name, logits in outputs.logits.items():
        finite = np.isfinite(logits)
        broken = read & ~(finite.all(axis=-1) if finite.ndim == 3 else finite)
        if broken.any():
            question = int(outputs.example_index[broken.any(axis=1)].min())
            if found is None or question < found[0]:
                found = (question, name)
    return found


def check_examples_of(outputs: WindowOutputs, examples: Sequence[Example]) -> None:
    """Refuse ``examples`` that are not those ``outputs`` were cut from, in one line: a window of no example given, an
    example without a window, or a window whose tokens end past its example's context. Decoded with other examples,
    a question got no answer (a no-answer score of infinity) or a span of another context's characters."""
    index, count = np.asarray(outputs.example_index, dtype=np.int64), len(examples)
    if (outside := index[(index < 0) | (index >= count)]).size:
        raise DataFormatError(f"the window outputs hold windows of question {int(outside[0])} (numbered from 0), but {count} "
                              f"{'example was' if count == 1 else 'examples were'} given: decode them with the examples "
                              "they were cut from")
    ends = np.full(count, -1, dtype=np.int64)
    np.maximum.at(ends, index, outputs.offsets[..., 1].max(axis=1, initial=-1))
    windowless = np.bincount(index, minlength=count) == 0
    past = ends > np.array([len(example.context) for example in examples], dtype=np.int64)
    if (bad := windowless | past).any():
        first = int(np.argmax(bad))
        problem = "has no window in the outputs" if windowless[first] else (
            f"has windows ending at character {int(ends[first])}, past its context's {len(examples[first].context)}")
        raise DataFormatError(f"this question {problem}: decode the window outputs with the examples they were cut "
                              "from", examples[first].id)


def check_finite_scores(outputs: WindowOutputs, examples: Sequence[Example], model: str | None = None) -> None:
    """Refuse scores no decoding can read, naming the first question that got them (:func:`first_non_finite`): a
    NaN or infinite score would leave its question without an answer, or with any, without a word."""
    found = first_non_finite(outputs)
    if found is not None:
        question, name = found
        raise ModelOutputError(f"the model's {name} for this question hold NaN or infinity, from which no answer can "
                               "be decoded: a damaged model, or a forward pass that overflowed (in bf16: answer with "
                               f"{argument('precision', 'fp32')})", examples[question].id, model)


def log_softmax(logits: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    """Log-softmax along the last axis in float64; positions outside ``mask`` get ``-inf``."""
    x = np.asarray(logits, dtype=np.float64)
    if mask is not None:
        x = np.where(mask, x, -np.inf)
    return x - np.logaddexp.reduce(x, axis=-1, keepdims=True)


def max_context_scores(mask: np.ndarray) -> np.ndarray:
    """How much context each paragraph token has in its window (BERT's rule).

    ``min(left, right) + 0.01 * window_length``, where left/right count the
    window's paragraph tokens on each side; ``-inf`` off the paragraph.
    """
    window, position = np.nonzero(mask)
    score = np.full(mask.shape, -np.inf)
    score[window, position] = token_context(mask, window, position)
    return score


def token_context(mask: np.ndarray, window: np.ndarray, position: np.ndarray) -> np.ndarray:
    """:func:`max_context_scores` of the paragraph tokens at (``window``, ``position``) alone: no (F, L) array."""
    has = mask.any(axis=1)
    first = np.where(has, mask.argmax(axis=1), 0)
    last = np.where(has, mask.shape[1] - 1 - mask[:, ::-1].argmax(axis=1), -1)
    return np.minimum(position - first[window], last[window] - position) + 0.01 * mask.sum(axis=1)[window]


@dataclass
class MergedTokens:
    """One token sequence per example, padded to ``T``: the union of its windows' paragraph tokens.

    Each token's values come from the window where it has the most context.
    ``values`` has shape (E, T, ...); ``offsets`` (E, T, 2); ``mask`` (E, T).
    """

    values: np.ndarray
    offsets: np.ndarray
    mask: np.ndarray


@dataclass
class _SeenTokens:
    """Every paragraph token of every window (its window and position there, its question and characters), sorted by
    question and characters, the window where it has the most context first (the earlier window of equal context);
    ``first`` marks each token's first sighting, so a token seen in several windows is one token."""

    window: np.ndarray
    position: np.ndarray
    question: np.ndarray
    char_start: np.ndarray
    char_end: np.ndarray
    first: np.ndarray

    @classmethod
    def of(cls, outputs: WindowOutputs) -> "_SeenTokens":
        window, position, question, char_start, char_end, context = _paragraph_tokens(outputs)
        order = np.lexsort((-context, char_end, char_start, question))  # stable: equal context keeps the earlier window
        window, position, question = window[order], position[order], question[order]
        char_start, char_end = char_start[order], char_end[order]
        return cls(window, position, question, char_start, char_end, _changes(question, char_start, char_end))


def _paragraph_tokens(outputs: WindowOutputs) -> tuple[np.ndarray, ...]:
    """Every paragraph token of every window: its window, position, question, characters and context there."""
    window, position = np.nonzero(outputs.mask)
    char_start, char_end = outputs.offsets[window, position, 0], outputs.offsets[window, position, 1]
    context = token_context(outputs.mask, window, position)
    return window, position, outputs.example_index[window], char_start, char_end, context


def max_context_tokens(outputs: WindowOutputs) -> np.ndarray:
    """(F, L): the paragraph tokens of each window that have their most context there among their question's windows
    (BERT's ``_check_is_max_context``; equal context: the earlier window), the window :func:`merge_windows` reads them from."""
    seen = _SeenTokens.of(outputs)
    best_window = seen.window[seen.first][np.cumsum(seen.first) - 1]
    out = np.zeros(outputs.mask.shape, dtype=bool)
    out[seen.window, seen.position] = seen.window == best_window
    return out


def max_context_starts(outputs: WindowOutputs) -> WindowOutputs:
    """``outputs`` whose spans are read only in the window where their first token has the most context among the
    windows that hold the whole span (:func:`max_context_spans`), so a window that begins inside an answer cannot
    offer its tail, and an answer crossing a window's edge is read in the next. Windows already marked keep their
    marks: a question's windows decoded one by one still read spans where the whole question would."""
    if outputs.start_mask is not None:
        return outputs
    start_mask, first_end = max_context_spans(outputs)
    return WindowOutputs(outputs.example_index, **{**outputs.per_window(), "start_mask": start_mask, "first_end": first_end})


def max_context_spans(outputs: WindowOutputs) -> tuple[np.ndarray, np.ndarray]:
    """(F, L) each: the tokens a span may start on, and the first position a span starting there may end on.

    A span is read in the window where its start token has the most context among the windows holding both its
    tokens (equal context: the earlier window). A question's windows slide right, so those holding a start and an
    end are the last of the windows holding the start, from the first that holds the end. Window ``f`` reads a start
    unless a later window gives it more context; it reads the ends that the last earlier window giving the start as
    much context lacks (all, if none does). Tokens are known by their characters, as in :func:`max_context_tokens`.
    """
    pairs = _TokenWindows.of(outputs)
    rank, context = pairs.rank, pairs.context
    table = np.full((pairs.n_tokens, int(rank.max(initial=0)) + 1), -np.inf)
    table[pairs.token, rank] = context
    later = np.maximum.accumulate(table[:, ::-1], axis=1)[:, ::-1]  # max context from each rank on
    later = np.concatenate([later[:, 1:], np.full((len(table), 1), -np.inf)], axis=1)[pairs.token, rank]
    earlier = (np.arange(table.shape[1]) < rank[:, None]) & (table[pairs.token] >= context[:, None])
    behind = np.where(earlier.any(axis=1), table.shape[1] - 1 - earlier[:, ::-1].argmax(axis=1), -1)
    first_end = np.zeros(len(rank), dtype=np.int64)
    shadowed = np.flatnonzero(behind >= 0)  # ends the window at ``behind`` holds are read there
    holder = pairs.window[pairs.start[pairs.token[shadowed]] + behind[shadowed]]
    first_end[shadowed] = pairs.position_after(pairs.last_token[holder], pairs.window[shadowed], outputs.mask.shape[1])
    start_mask = np.zeros(outputs.mask.shape, dtype=bool)
    ends = np.zeros(outputs.mask.shape, dtype=np.int64)
    start_mask[pairs.seen_window, pairs.seen_position] = (context >= later)[pairs.seen_pair]
    ends[pairs.seen_window, pairs.seen_position] = first_end[pairs.seen_pair]
    return start_mask, ends


@dataclass
class _TokenWindows:
    """Each (token, window) pair of a question's windows, by token (in character order) then window: the token's
    best context there (``rank``: its place among the token's windows), the last position it takes there, and each
    window's last token; ``seen_*`` map every paragraph token of every window to its pair."""

    token: np.ndarray
    window: np.ndarray
    rank: np.ndarray
    start: np.ndarray
    context: np.ndarray
    last_position: np.ndarray
    last_token: np.ndarray
    n_tokens: int
    seen_window: np.ndarray
    seen_position: np.ndarray
    seen_pair: np.ndarray

    @classmethod
    def of(cls, outputs: WindowOutputs) -> "_TokenWindows":
        window, position, question, char_start, char_end, context = _paragraph_tokens(outputs)
        order = np.lexsort((-context, window, char_end, char_start, question))
        window, position, context = window[order], position[order], context[order]
        new_token = _changes(question[order], char_start[order], char_end[order])
        new_pair = new_token | _changes(window)
        token, pair = np.cumsum(new_token) - 1, np.cumsum(new_pair) - 1
        heads = np.flatnonzero(new_pair)
        pair_token, pair_window = token[heads], window[heads]
        start = np.flatnonzero(_changes(pair_token)) if len(heads) else np.zeros(0, dtype=np.int64)
        last_position = np.maximum.reduceat(position, heads) if len(heads) else np.zeros(0, dtype=np.int64)
        last_token = np.full(len(outputs.mask), -1, dtype=np.int64)
        np.maximum.at(last_token, pair_window, pair_token)
        return cls(pair_token, pair_window, np.arange(len(heads)) - start[pair_token], start, context[heads],
                   last_position, last_token, int(token[-1]) + 1 if len(token) else 0, window, position, pair)

    def position_after(self, tokens: np.ndarray, windows: np.ndarray, beyond: int) -> np.ndarray:
        """The position after the last place of each token in its window; ``beyond`` where the window lacks it."""
        keys = self.token * (len(self.last_token) + 1) + self.window  # sorted: by token, then window
        asked = tokens * (len(self.last_token) + 1) + windows
        at = np.minimum(np.searchsorted(keys, asked), max(len(keys) - 1, 0))
        found = keys[at] == asked if len(keys) else np.zeros(len(asked), dtype=bool)
        return np.where(found, self.last_position[at] + 1, beyond)


def _changes(*columns: np.ndarray) -> np.ndarray:
    """Where a sorted run of ``columns`` begins a new value (the first row always does)."""
    out = np.zeros(len(columns[0]), dtype=bool)
    out[:1] = True
    for column in columns:
        out[1:] |= column[1:] != column[:-1]
    return out


def merge_windows(outputs: WindowOutputs, values: np.ndarray, n_examples: int) -> MergedTokens:
    """Merge per-window, per-token ``values`` (F, L, ...) into per-example token sequences.

    Tokens are identified by their character offsets, so the same token seen in
    two overlapping windows is one token. Examples without windows get an empty row.
    """
    seen = _SeenTokens.of(outputs)
    keep = seen.first
    ex = seen.question[keep]
    counts = np.bincount(ex, minlength=n_examples)
    width = max(int(counts.max(initial=0)), 1)
    group_start = np.concatenate([[0], np.cumsum(counts)[:-1]])
    slot = np.arange(len(ex)) - group_start[ex]

    picked = values[seen.window[keep], seen.position[keep]]
    merged = np.zeros((n_examples, width, *values.shape[2:]), dtype=values.dtype)
    merged[ex, slot] = picked
    offsets = np.full((n_examples, width, 2), -1, dtype=np.int64)
    offsets[ex, slot, 0], offsets[ex, slot, 1] = seen.char_start[keep], seen.char_end[keep]
    mask = np.zeros((n_examples, width), dtype=bool)
    mask[ex, slot] = True
    return MergedTokens(merged, offsets, mask)


def each_window(outputs: WindowOutputs) -> WindowOutputs:
    """``outputs`` with every window a question of its own: question ``i`` is window ``i``."""
    rows = np.arange(len(outputs.example_index))
    return outputs.take(rows, rows)
