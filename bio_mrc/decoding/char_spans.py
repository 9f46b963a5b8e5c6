"""The heads' outputs of any model as character spans: start/end logits, or B/I/O tags, with the tokenizer's
offsets. For a model of one's own around ``BIOHead`` and ``SpanHead``; the package's models answer through
:mod:`bio_mrc.decoding.postprocess`, which also merges a question's windows.

Pure numpy: tensors are read as arrays (detached, on the CPU, floats as float64).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..tags import TAG_O, chunk_bounds
from .spans import best_spans


def best_char_spans(
    start_logits: Any,
    end_logits: Any,
    offsets: Any,
    mask: Any = None,
    max_answer_length: int = 30,
    n_best: int = 1,
) -> list[list[tuple[int, int, float]]]:
    """Each row's ``n_best`` spans by ``max_{j≥i} s_i + e_j`` with ``j - i < max_answer_length``, best first, as
    ``(char_start, char_end, s_i + e_j)``: from the start of token ``i``'s offsets to the end of token ``j``'s.
    ``start_logits``, ``end_logits``: (batch, seq); ``offsets``: (batch, seq, 2), the tokenizer's
    ``offset_mapping``; ``mask`` (batch, seq): the tokens an answer may start and end on (the context's; None:
    every token). A row with no such token has no span."""
    start = _as_array(start_logits)
    if start.ndim != 2:
        raise ValueError(f"start_logits must have shape (batch, seq), got {start.shape}")
    end = _as_array(end_logits)
    if end.shape != start.shape:
        raise ValueError(f"end_logits must have the shape of start_logits {start.shape}, got {end.shape}")
    offsets, mask = _offsets_and_mask(offsets, mask, start.shape)
    found = best_spans(start, end, mask, _positive("max_answer_length", max_answer_length), _positive("n_best", n_best))
    return [
        [(int(offsets[row, i, 0]), int(offsets[row, j, 1]), float(score))
         for score, i, j in zip(found.score[row], found.start[row], found.end[row]) if i >= 0]
        for row in range(len(start))
    ]


def tag_char_spans(tags: Any, offsets: Any, mask: Any = None) -> list[list[tuple[int, int]]]:
    """Each row's spans of integer B/I/O ``tags`` (batch, seq), such as the BIO head's logits' argmax, as
    ``(char_start, char_end)``, read as seqeval reads tags (an I after an O opens a span too). ``offsets`` and
    ``mask`` as in :func:`best_char_spans`: a token outside ``mask`` is read as O. The inverse of
    :func:`bio_mrc.tags.spans_to_tags` wherever the spans begin and end on token bounds."""
    tags = _as_array(tags)
    if tags.ndim != 2 or tags.dtype.kind not in "iu":
        raise ValueError(f"tags must have shape (batch, seq) of integer tags (the BIO logits' argmax), got "
                         f"{tags.shape} {tags.dtype}")
    offsets, mask = _offsets_and_mask(offsets, mask, tags.shape)
    if (bad := mask & ((tags < 0) | (tags > TAG_O))).any():
        at = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(f"tags{list(at)} is {int(tags[at])}, not a tag (B = 0, I = 1, O = 2)")
    starts, ends = chunk_bounds(np.where(mask, tags, TAG_O).ravel(), [tags.shape[1]] * len(tags))
    length = tags.shape[1]
    spans: list[list[tuple[int, int]]] = [[] for _ in range(len(tags))]
    for first, last in zip(starts, ends - 1):
        row = int(first // length)
        spans[row].append((int(offsets[row, first % length, 0]), int(offsets[row, last % length, 1])))
    return spans


def _as_array(value: Any) -> np.ndarray:
    """A tensor (any device, dtype, with gradients) or array-like as a numpy array, floats as float64."""
    if hasattr(value, "detach"):  # a torch tensor, read without importing torch
        value = value.detach().cpu()
        value = value.double() if value.is_floating_point() else value
        value = value.numpy()
    array = np.asarray(value)
    return array.astype(np.float64) if array.dtype.kind == "f" else array


def _offsets_and_mask(offsets: Any, mask: Any, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """``offsets`` (batch, seq, 2) and ``mask`` (batch, seq) as arrays of ``shape``, else a ValueError naming them."""
    offsets = _as_array(offsets)
    if offsets.shape != (*shape, 2):
        raise ValueError(f"offsets must have shape (batch, seq, 2) = {(*shape, 2)}, got {offsets.shape}")
    mask = np.ones(shape, dtype=bool) if mask is None else _as_array(mask)
    if mask.shape != shape:
        raise ValueError(f"mask must have shape (batch, seq) = {shape}, got {mask.shape}")
    return offsets, mask.astype(bool)


def _positive(name: str, value: Any) -> int:
    """A positive integer setting, else a ValueError naming it."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)
