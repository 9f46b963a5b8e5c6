"""The answer-length limit a model saves at training: the length in tokens that 99% of its training answer spans fit,
at least the decodings' default, so a model trained on long answers (whole sentences) is not cut at the default; a
model continued from another keeps that one's limit where it is longer, so a stage of short answers forgets none."""

from __future__ import annotations

import math
import sys
from typing import Any, Sequence

import numpy as np
import pyarrow.compute as pc

from ..io import printable_line
from ..model_defaults import ANSWER_LENGTH_COVERAGE, MAX_ANSWER_LENGTH
from ..plurals import number_form


def covering_length(lengths: Sequence[int], coverage: float = ANSWER_LENGTH_COVERAGE) -> int | None:
    """The smallest length that at least ``coverage`` of ``lengths`` are no longer than (None: no lengths)."""
    if not len(lengths):
        return None
    ordered = np.sort(np.asarray(lengths, dtype=np.int64))
    return int(ordered[math.ceil(round(coverage * len(ordered), 9)) - 1])


def answer_length_limit(lengths: Sequence[int]) -> int:
    """The answer-length limit of a model trained on answer spans of these ``lengths`` in tokens: the length 99% of
    them fit, never below :data:`~bio_mrc.model_defaults.MAX_ANSWER_LENGTH` (no spans: that default)."""
    return max(MAX_ANSWER_LENGTH, covering_length(lengths) or 0)


def window_answer_lengths(windows: Any) -> np.ndarray:
    """The length in tokens of every training answer span, from training windows' ``answer_lengths`` column
    (:func:`bio_mrc.features.targets.add_targets`: each span once, from the first window that holds it whole)."""
    column = windows.data.column("answer_lengths")
    return pc.list_flatten(column).to_numpy(zero_copy_only=False).astype(np.int64)


def set_answer_length_limit(model: Any, windows: Any, say: bool, parent_limit: int | None = None) -> None:
    """Save the limit of ``windows``' answer spans in ``model``'s config (``max_answer_length``), or ``parent_limit``
    (the saved limit of the model this one continues; None: none) where that is longer; ``say``: one line on standard
    error when the limit is above the default, which the decodings would otherwise read."""
    lengths = window_answer_lengths(windows)
    limit = answer_length_limit(lengths)
    kept = parent_limit is not None and parent_limit > limit
    model.config.max_answer_length = parent_limit if kept else limit
    if not say or model.config.max_answer_length <= MAX_ANSWER_LENGTH:
        return
    spans = f"{len(lengths):,} training answer {number_form(len(lengths), 'span', 'spans')}"
    if kept:
        line = f"{parent_limit} tokens, kept from the model this one continues ({ANSWER_LENGTH_COVERAGE:.0%} of the {spans} fit {limit})"
    else:
        line = f"{limit} tokens ({ANSWER_LENGTH_COVERAGE:.0%} of the {spans} fit; the default is {MAX_ANSWER_LENGTH})"
    print(printable_line(f"answer-length limit: {line}"), file=sys.stderr)
