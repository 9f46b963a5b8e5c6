"""Question and context pairs cut into stride windows by the fast tokenizer's backend, each window's columns numpy
arrays as soon as it is read.

The tokenizer's own call (``tokenizer(questions, contexts, return_overflowing_tokens=True)``) turns every window of
the call into Python lists at once, beside the backend's encodings: one context of 500,000 characters, a token a
character, held about 450 MB before a window was built. Here the backend encodes with the settings that call gives it,
and each window becomes arrays of a few bytes a token, the backend's copy of it let go as it is read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
from transformers import PreTrainedTokenizerBase, PreTrainedTokenizerFast
from transformers.tokenization_utils_base import TruncationStrategy
from transformers.utils import PaddingStrategy

from .tokenizer_lock import tokenizer_lock


@dataclass
class PairWindows:
    """Every window of the pairs, in order: ``inputs`` the model inputs the tokenizer returns by default (its
    ``model_input_names`` among ``input_ids``, ``token_type_ids`` and ``attention_mask``; every column of its call, as
    it returns them, where it :func:`encodes_its_own_way`), ``example_index`` each
    window's pair, ``offsets`` (n, 2) character offsets of the context's tokens (-1 elsewhere) and ``in_context``
    which tokens are the context's."""

    inputs: dict[str, list[Any]]
    example_index: list[int] = field(default_factory=list)
    offsets: list[np.ndarray] = field(default_factory=list)
    in_context: list[np.ndarray] = field(default_factory=list)


def pair_windows(tokenizer: PreTrainedTokenizerBase, questions: Sequence[str], contexts: Sequence[str],
                 max_length: int, stride: int) -> PairWindows:
    """The windows ``tokenizer(questions, contexts, truncation="only_second", max_length=max_length, stride=stride,
    return_overflowing_tokens=True, padding=False, split_special_tokens=True)`` cuts, read one at a time; a tokenizer
    whose class encodes its own way (:func:`encodes_its_own_way`) cuts them with that call."""
    if encodes_its_own_way(tokenizer):
        return _windows_of_its_call(tokenizer, questions, contexts, max_length, stride)
    names = [name for name in ("input_ids", "token_type_ids", "attention_mask")
             if name == "input_ids" or name in tokenizer.model_input_names]
    encodings = backend_encodings(tokenizer, list(zip(questions, contexts)), True, TruncationStrategy.ONLY_SECOND,
                                  max_length, stride)
    windows = PairWindows({name: [] for name in names})
    for sample in range(len(encodings)):
        later = encodings[sample].overflowing  # a copy of the windows after the first
        later.reverse()
        window, encodings[sample] = encodings[sample], None
        while window is not None:
            _read_window(windows, window, sample)
            window = later.pop() if later else None
    return windows


def backend_encodings(tokenizer: PreTrainedTokenizerBase, texts: list, add_special_tokens: bool,
                      truncation: TruncationStrategy = TruncationStrategy.DO_NOT_TRUNCATE, max_length: int | None = None,
                      stride: int = 0) -> list:
    """The backend's encodings of ``texts`` (texts, or pairs of them) with the settings the tokenizer's own call
    (``split_special_tokens=True``, no padding) gives it, without the call's Python lists of every token."""
    with tokenizer_lock(tokenizer):  # the truncation set for this call stays this call's
        if not getattr(tokenizer, "_in_target_context_manager", False) and hasattr(tokenizer, "_switch_to_input_mode"):
            tokenizer._switch_to_input_mode()  # as the call does: a seq2seq tokenizer's source-language special tokens
        tokenizer.set_truncation_and_padding(padding_strategy=PaddingStrategy.DO_NOT_PAD, truncation_strategy=truncation,
                                             max_length=max_length, stride=stride, pad_to_multiple_of=None, padding_side=None)
        backend = tokenizer.backend_tokenizer
        backend.encode_special_tokens = True  # a text's "[SEP]" is its five characters, never the separator the window holds
        return backend.encode_batch(texts, add_special_tokens=add_special_tokens)


# Where a backend encoding holds each model input.
_ATTRIBUTES = {"input_ids": "ids", "token_type_ids": "type_ids", "attention_mask": "attention_mask"}


def _read_window(windows: PairWindows, window, sample: int) -> None:
    """One backend encoding's columns appended to ``windows``."""
    for name, column in windows.inputs.items():
        column.append(np.array(getattr(window, _ATTRIBUTES[name]), dtype=np.int64))
    _add_offsets(windows, sample, window.offsets, window.sequence_ids)


def _add_offsets(windows: PairWindows, sample: int, offsets: list, sequence_ids: list) -> None:
    """A window's pair, its context's token offsets (-1 elsewhere) and which of its tokens are the context's."""
    in_context = np.array([sid == 1 for sid in sequence_ids], dtype=bool)
    offsets = np.array(offsets, dtype=np.int64).reshape(-1, 2)
    offsets[~in_context] = -1
    windows.example_index.append(sample)
    windows.offsets.append(offsets)
    windows.in_context.append(in_context)


def encodes_its_own_way(tokenizer: PreTrainedTokenizerBase) -> bool:
    """Whether the tokenizer's class encodes otherwise than the fast tokenizer's own call (LUKE's entities, LayoutLM's
    boxes, a class of its own reading the backend's encodings or choosing the truncation its own way): the backend
    alone would cut other windows, or lack a column of them."""
    return any(getattr(type(tokenizer), name) is not getattr(PreTrainedTokenizerFast, name)
               for name in ("__call__", "_encode_plus", "_convert_encoding", "_get_padding_truncation_strategies"))


def _windows_of_its_call(tokenizer: PreTrainedTokenizerBase, questions: Sequence[str], contexts: Sequence[str],
                         max_length: int, stride: int) -> PairWindows:
    """The windows of the tokenizer's own call, every column of it, with its Python lists of every window."""
    with tokenizer_lock(tokenizer):
        enc = tokenizer(list(questions), list(contexts), truncation="only_second", max_length=max_length, stride=stride,
                        return_overflowing_tokens=True, return_offsets_mapping=True, padding=False, split_special_tokens=True)
    windows = PairWindows({key: enc[key] for key in enc.keys() if key not in ("offset_mapping", "overflow_to_sample_mapping")})
    for i, sample in enumerate(enc["overflow_to_sample_mapping"]):
        _add_offsets(windows, int(sample), enc["offset_mapping"][i], enc.sequence_ids(i))
    return windows
