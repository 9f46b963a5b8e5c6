"""Entity-level precision, recall and F1 over BIO tag sequences, equal to seqeval's.

``tag_scores(gold, pred)`` gives seqeval's micro-averaged
``precision_score/recall_score/f1_score`` in its default (conlleval) mode, and
``tag_scores(gold, pred, strict=True)`` the same with ``mode="strict",
scheme=IOB2``. All sequences are flattened into one integer array, so chunking
is a handful of array operations however many sequences there are.

A chunk is a start token followed by its continuations, where a continuation
is an I whose previous token is a B or I of the same type. The modes differ in
which tokens start a chunk:

* default: every tag that is not O and not a continuation (so an I after O, or
  after a chunk of another type, starts one, as in conlleval);
* strict IOB2: only B. An I that continues nothing belongs to no chunk.

Types are parsed as seqeval parses them in each mode ("B-PER" -> "PER", a bare
"B" -> "_"). Only the B/I/O prefixes are accepted (no IOBES).
"""

from __future__ import annotations

from collections import defaultdict
from itertools import chain, islice
from typing import Sequence

import numpy as np

from ..tags import PREFIX_IDS, chunk_bounds

def _parse(tag: str, strict: bool) -> tuple[int, str]:
    """(prefix id, type name) exactly as seqeval reads a tag in that mode."""
    if not isinstance(tag, str) or not tag or tag[0] not in PREFIX_IDS:
        raise ValueError(f"tag {tag!r} is not a B/I/O tag (e.g. 'B', 'I-PER', 'O')")
    if strict:  # seqeval.scheme.Token
        name = tag[1:].strip("-") or "_"
    else:  # seqeval.metrics.sequence_labeling.get_entities
        name = tag[1:].split("-", maxsplit=1)[-1] or "_"
    return PREFIX_IDS[tag[0]], name


def _single_char_prefixes(sequences: Sequence[Sequence[str]], total: int) -> np.ndarray | None:
    """Prefix ids when every tag is one ASCII character (bare B/I/O), else None.

    Joining the tags into one string and reading its bytes is about twice as
    fast as a dict lookup per token; typed tags take the general path.
    """
    sample = list(islice(chain.from_iterable(sequences), 10_000))
    if total == 0 or not all(isinstance(tag, str) and len(tag) == 1 for tag in sample):
        return None
    try:
        joined = "\n".join(chain.from_iterable(sequences))
    except TypeError:  # a tag that is no string: the general path reports it
        return None
    if len(joined) != 2 * total - 1 or not joined.isascii():
        return None
    chars = np.frombuffer(joined.encode("ascii"), dtype=np.uint8)
    tags = chars[0::2]
    # Separators exactly at the odd positions and nowhere else <=> every tag is one character.
    if np.any(chars[1::2] != ord("\n")) or np.any(tags == ord("\n")):
        return None
    table = np.full(128, -1, dtype=np.int8)
    for code in np.flatnonzero(np.bincount(tags, minlength=128)):  # the distinct tags, not the tokens
        table[code] = _parse(chr(code), strict=False)[0]
    return table[tags]


def _encode(
    gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]], strict: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None, np.ndarray]:
    """Flat prefix ids of gold and pred, their type ids (None when untyped) and the lengths."""
    if len(gold) != len(pred):
        raise ValueError(f"gold has {len(gold)} sequences but pred has {len(pred)}")
    lengths = np.fromiter(map(len, gold), dtype=np.int64, count=len(gold))
    pred_lengths = np.fromiter(map(len, pred), dtype=np.int64, count=len(pred))
    bad = np.flatnonzero(lengths != pred_lengths)
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"sequence {i}: gold has {lengths[i]} tags but pred has {pred_lengths[i]}")
    total = int(lengths.sum())
    fast = _single_char_prefixes(gold, total), _single_char_prefixes(pred, total)
    if fast[0] is not None and fast[1] is not None:
        return fast[0], fast[1], None, None, lengths
    # One C-level pass per side (map over a dict lookup, no Python loop per token); the
    # defaultdict numbers each distinct tag string on first sight.
    coder: defaultdict[str, int] = defaultdict()
    coder.default_factory = coder.__len__
    try:
        gold_codes = np.fromiter(map(coder.__getitem__, chain.from_iterable(gold)), dtype=np.int32, count=total)
        pred_codes = np.fromiter(map(coder.__getitem__, chain.from_iterable(pred)), dtype=np.int32, count=total)
    except TypeError:  # an unhashable "tag", e.g. a nested list
        raise ValueError("tags must be strings like 'B', 'I-PER', 'O'") from None
    parsed = [_parse(tag, strict) for tag in coder]  # a loop over distinct tags, not tokens
    prefix_of = np.array([p for p, _ in parsed], dtype=np.int8).reshape(-1)
    names = {name: number for number, name in enumerate(sorted({name for _, name in parsed}))}  # looked up, not searched
    type_of = np.array([names[name] for _, name in parsed], dtype=np.int32).reshape(-1)
    if len(names) <= 1:  # untyped (or a single type): type changes cannot happen
        return prefix_of[gold_codes], prefix_of[pred_codes], None, None, lengths
    return prefix_of[gold_codes], prefix_of[pred_codes], type_of[gold_codes], type_of[pred_codes], lengths


def chunk_counts(
    gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]], strict: bool = False
) -> tuple[int, int, int]:
    """``(true positives, predicted chunks, gold chunks)`` over all sequences and types."""
    gold_tags, pred_tags, gold_types, pred_types, lengths = _encode(gold, pred, strict)
    gold_starts, gold_ends = chunk_bounds(gold_tags, lengths, gold_types, strict)
    pred_starts, pred_ends = chunk_bounds(pred_tags, lengths, pred_types, strict)
    # A flat position starts at most one chunk per side, so matching (sequence, start, end, type)
    # keys is matching starts, then checking end and type of the pairs.
    _, gi, pi = np.intersect1d(gold_starts, pred_starts, assume_unique=True, return_indices=True)
    same = gold_ends[gi] == pred_ends[pi]
    if gold_types is not None:
        same &= gold_types[gold_starts[gi]] == pred_types[pred_starts[pi]]
    return int(same.sum()), int(pred_starts.size), int(gold_starts.size)


def tag_scores(
    gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]], strict: bool = False
) -> dict[str, float]:
    """Micro-averaged entity ``{"precision", "recall", "f1"}`` in [0, 1] of the tag sequences ``pred`` against
    ``gold`` (each a sequence of tag strings, such as ``["B", "I", "O"]``), equal to seqeval's.

    ``strict=False``: seqeval's default mode; ``strict=True``: ``mode="strict",
    scheme=IOB2``. A zero denominator gives 0.0 (seqeval also warns; this is
    silent), also for no sequences at all (where seqeval raises). Sequences
    of different lengths raise ``ValueError`` naming the index.
    """
    tp, n_pred, n_gold = chunk_counts(gold, pred, strict)
    precision = tp / n_pred if n_pred else 0.0
    recall = tp / n_gold if n_gold else 0.0
    # Same operation order as seqeval, so the floats agree bit for bit.
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1}
