"""BIO tags: their ids, and the two conversions every layer shares.

* :func:`chunk_bounds`: tag sequences -> chunks (spans), seqeval's reading in
  its default and strict IOB2 modes (metrics, the MultiSpanQA reader);
* :func:`spans_to_tags`: character spans -> tags of tokens (training targets,
  gold and predicted tags in the tag-level report).

Tag ids are the order of the BIO head's output units.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

TAG_B, TAG_I, TAG_O = 0, 1, 2

PREFIX_IDS = {"B": TAG_B, "I": TAG_I, "O": TAG_O}


def chunk_bounds(
    tags: np.ndarray,
    lengths: np.ndarray | Sequence[int] | None = None,
    types: np.ndarray | None = None,
    strict: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Chunks of flat tag ids (TAG_B/TAG_I/TAG_O) as ``(starts, ends)``, ends exclusive.

    ``lengths`` splits ``tags`` into consecutive sequences (default: one);
    chunks never cross a sequence boundary. ``types`` gives each token's
    entity type id (``None``: untyped). Positions index the flat array, so a
    start identifies its sequence too. Starts come out sorted.
    """
    tags = np.asarray(tags)
    n = tags.size
    prev = np.empty_like(tags)
    if n:
        prev[0] = TAG_O
        prev[1:] = tags[:-1]
    if lengths is not None:
        lengths = np.asarray(lengths, dtype=np.int64)
        firsts = (np.cumsum(lengths) - lengths)[lengths > 0]
        prev[firsts] = TAG_O  # a sequence starts as if after an O
    # The default reading makes every maximal run "non-O head + continuations" a chunk;
    # strict IOB2 keeps only the runs whose head is a B (an orphan I run is no chunk).
    continues = (tags == TAG_I) & (prev != TAG_O)
    if types is not None:
        continues[1:] &= types[1:] == types[:-1]
    inside = tags != TAG_O
    starts = np.flatnonzero(inside & ~continues)
    last = inside.copy()
    last[:-1] &= ~continues[1:]  # the next token does not continue this run
    ends = np.flatnonzero(last) + 1
    if strict:
        keep = tags[starts] == TAG_B
        starts, ends = starts[keep], ends[keep]
    return starts.astype(np.int64), ends.astype(np.int64)


def spans_to_tags(offsets: np.ndarray, mask: np.ndarray, spans: Sequence[tuple[int, int]]) -> np.ndarray:
    """Integer B/I/O tags of tokens with character ``offsets`` (L, 2) for character ``spans``
    (end exclusive); only tokens in ``mask`` (L,) are tagged, the others are O.

    Every token overlapping a span is I. The first of them is B when the tokens
    hold the span's start (the first masked token starts at or before it), and
    so is every token with the same offsets (byte-level BPE splits one character
    into several tokens; windows merge them into one, which must be B whichever
    is kept). A span that began before the first token (in an earlier window)
    therefore shows as I's without a B: the truth about these tokens.

    Spans whose tokens overlap (one nested in another, two that share tokens)
    are one span of their union: a tagging holds no span inside another, so
    the tags always read back (:func:`chunk_bounds`) as spans of the text
    they cover. Spans that only touch (no token in common) stay two, B…B.
    """
    offsets, mask = np.asarray(offsets), np.asarray(mask, dtype=bool)
    tags = np.full(len(offsets), TAG_O, dtype=np.int64)
    if not mask.any():
        return tags
    first_start = offsets[np.argmax(mask), 0]
    near = _TokensNear(offsets, mask)
    for start, end in sorted(spans):
        part = near.around(start, end)  # the tokens near the span, not every token for every span
        held, own, found = offsets[part], mask[part], tags[part]  # views: tags are set through ``found``
        inside = own & (held[:, 0] < end) & (held[:, 1] > start)
        if not inside.any():
            continue
        head = inside & (held == held[np.argmax(inside)]).all(axis=1)
        if (found[head] != TAG_O).any():  # begins inside a span before it: extends that span
            found[inside & (found == TAG_O)] = TAG_I
            continue
        found[inside] = TAG_I
        if first_start <= start:
            found[head] = TAG_B
    return tags


class _TokensNear:
    """The run of tokens outside which no masked token overlaps a character span, found by binary search: before it
    every masked token ends by the span's start, after it every one starts at or past its end (whatever the order of
    the offsets), so each span looks at the tokens near it, not at all of them."""

    def __init__(self, offsets: np.ndarray, mask: np.ndarray) -> None:
        offsets = offsets.astype(np.float64 if offsets.dtype.kind == "f" else np.int64)
        least, most = (-np.inf, np.inf) if offsets.dtype.kind == "f" else (np.iinfo(np.int64).min, np.iinfo(np.int64).max)
        starts = np.where(mask, offsets[:, 0], most)
        self.reach = np.maximum.accumulate(np.where(mask, offsets[:, 1], least))
        self.later_start = np.minimum.accumulate(starts[::-1])[::-1]  # the least start from each token on

    def around(self, start: int, end: int) -> slice:
        first = int(np.searchsorted(self.reach, start, side="right"))
        return slice(first, max(first, int(np.searchsorted(self.later_start, end, side="left"))))
