"""Questions' windows as ragged columns, one set per question: what reading a question makes before any forward
pass. No PyTorch here, so that a process of its own (the server's helper) can read long questions."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..types import Example
from .config import FeatureConfig
from .ragged import RaggedColumn
from .windows import tokenize_windows

ENCODER_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
# What decoding reads of a window besides its logits, and the value past a window's end.
DECODED_COLUMNS = {"offset_mapping": (-1, np.int64), "paragraph_mask": (0, bool), "word_offsets": (-1, np.int64),
                   "tag_mask": (0, bool)}


def window_columns(tokenizer: Any, features: FeatureConfig,
                   questions: Sequence[Sequence[Example]]) -> list[tuple[np.ndarray, dict[str, RaggedColumn]]]:
    """Each question's (its examples') windows, tokenized together in one call: the example of each window (counted
    within its question) and the columns the model and decoding read."""
    examples = [example for question in questions for example in question]
    found = tokenize_windows(examples, tokenizer, features)
    example_index = np.asarray(found["example_index"], dtype=np.int64)
    bounds = np.cumsum([0] + [len(question) for question in questions]).tolist()
    names = [name for name in (*ENCODER_INPUTS, *DECODED_COLUMNS) if name in found]
    columns = []
    for begin, end in zip(bounds, bounds[1:]):
        rows = np.flatnonzero((example_index >= begin) & (example_index < end))
        columns.append((example_index[rows] - begin, {name: RaggedColumn.from_rows([found[name][r] for r in rows])
                                                      for name in names}))
    return columns
