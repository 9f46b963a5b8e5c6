"""Question and context pairs cut into stride windows by the fast tokenizer's backend, each window's columns numpy
arrays as soon as it is read.

The tokenizer's own call (``tokenizer(questions, contexts, return_overflowing_tokens=True)``) turns every window of
the call into Python lists at once, beside the backend's encodings: one context of 500,000 characters, a token a
character, held about 450 MB before a window was built. Here the backend encodes with the settings that call gives it,
and each window becomes arrays of a few bytes a token, the backend's copy of it let go as it is read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import chain
from typing import Any, Iterator, Sequence

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
                 max_length: int, stride: int, alone: ContextsAlone | None = None) -> PairWindows:
    """The windows ``tokenizer(questions, contexts, truncation="only_second", max_length=max_length, stride=stride,
    return_overflowing_tokens=True, padding=False, split_special_tokens=True)`` cuts, read one at a time; a tokenizer
    whose class encodes its own way (:func:`encodes_its_own_way`) cuts them with that call. ``alone``: the contexts
    tokenized alone, where the caller holds them (None: tokenized here)."""
    if encodes_its_own_way(tokenizer):
        return _windows_of_its_call(tokenizer, questions, contexts, max_length, stride)
    names = [name for name in ("input_ids", "token_type_ids", "attention_mask")
             if name == "input_ids" or name in tokenizer.model_input_names]
    sliced = _sliced_windows(tokenizer, questions, contexts, max_length, stride, names, alone)
    if sliced is not None:
        return sliced
    return _backend_windows(tokenizer, questions, contexts, max_length, stride, names)


def _backend_windows(tokenizer: PreTrainedTokenizerBase, questions: Sequence[str], contexts: Sequence[str],
                     max_length: int, stride: int, names: list[str]) -> PairWindows:
    """The windows the backend cuts with overflowing tokens, each read into arrays as it is handed out."""
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


# A context of one token: the frame of a question's windows (its special tokens and question) is read from the
# backend's own encoding of the question with it.
_PROBE = "a"
# A pair whose context's tokens, most after a space, each begin a window of two and end one: where the backend cuts
# its windows otherwise than as slices in one frame (a byte-level post-processor that trims a token's leading space
# unless it is the first of its encoding; a template whose context type id the windows after the first lack), it
# cuts every pair's windows itself.
_PROBE_PAIR = ("a", "a a  a\ta, a.")


@dataclass
class _Frame:
    """What a question's windows hold around their slice of the context: the tokens before it and after it (ids, type
    ids) and the type id of the context's tokens, as the backend's post-processor puts them."""

    before: tuple[np.ndarray, np.ndarray]
    after: tuple[np.ndarray, np.ndarray]
    context_type: int

    @classmethod
    def of(cls, encoding) -> "_Frame | None":
        """The frame of a pair's encoding; None where its context's tokens are not one run of one type id."""
        places = np.flatnonzero(np.array([sid == 1 for sid in encoding.sequence_ids], dtype=bool))
        types = np.array(encoding.type_ids, dtype=np.int64)
        if not len(places) or places[-1] - places[0] + 1 != len(places) or len(set(types[places].tolist())) != 1:
            return None
        ids = np.array(encoding.ids, dtype=np.int64)
        first, end = int(places[0]), int(places[-1]) + 1
        return cls((ids[:first], types[:first]), (ids[end:], types[end:]), int(types[first]))


def _sliced_windows(tokenizer: PreTrainedTokenizerBase, questions: Sequence[str], contexts: Sequence[str],
                    max_length: int, stride: int, names: list[str], alone: ContextsAlone | None) -> PairWindows | None:
    """The windows the backend cuts with overflowing tokens, cut from each context tokenized alone (as the backend
    tokenizes each text of a pair on its own) and each question's frame, as the backend's truncation steps: slices of
    the room the frame leaves, each ``stride`` tokens into the one before. The backend holds every window of a pair
    at once, and its Python binding copies them all again to hand them out: a long context's windows, a token of the
    context held many times over. None (the backend's own windows) where the backend cuts a probe pair's windows
    otherwise (:func:`_slices_as_the_backend`), a frame is not one run of context tokens, or the room is no more
    than the stride (the backend refuses such windows its own way)."""
    if getattr(tokenizer, "truncation_side", "right") != "right" or not _slices_as_the_backend(tokenizer, names):
        return None
    frames = [_Frame.of(encoding) for encoding in backend_encodings(tokenizer, [(q, _PROBE) for q in questions], True)]
    rooms = [None if frame is None else max_length - len(frame.before[0]) - len(frame.after[0]) for frame in frames]
    if any(room is None or room <= stride for room in rooms):
        return None
    tokens = (ContextsAlone() if alone is None else alone)(tokenizer, contexts)
    return _windows_of_slices(contexts, frames, rooms, stride, tokens, names)


def _windows_of_slices(contexts: Sequence[str], frames: list[_Frame], rooms: list[int], stride: int,
                       alone: dict[str, ContextTokens], names: list[str]) -> PairWindows:
    """Each pair's windows: slices of its context's ``alone`` tokens in its question's frame (a context of no token:
    the frame alone, as the backend puts it)."""
    windows = PairWindows({name: [] for name in names})
    for sample, (frame, room, context) in enumerate(zip(frames, rooms, contexts)):
        ids, offsets = alone[context].ids, alone[context].offsets
        for begin, end in _slices(len(ids), room, stride):
            _add_slice(windows, sample, frame, ids[begin:end], offsets[begin:end])
    return windows


def _slices_as_the_backend(tokenizer: PreTrainedTokenizerBase, names: list[str]) -> bool:
    """Whether the windows the backend cuts of ``_PROBE_PAIR``, every token of its context the first of one and the
    last of one, are the slices of its context in its frame, to the last offset and type id."""
    question, context = _PROBE_PAIR
    (frame,) = [_Frame.of(encoding) for encoding in backend_encodings(tokenizer, [(question, _PROBE)], True)]
    if frame is None:
        return False
    max_length = len(frame.before[0]) + len(frame.after[0]) + 2
    sliced = _windows_of_slices([context], [frame], [2], 1, ContextsAlone()(tokenizer, [context]), names)
    cut = _backend_windows(tokenizer, [question], [context], max_length, 1, names)
    return cut.example_index == sliced.example_index and all(
        len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b))
        for a, b in [*((cut.inputs[name], sliced.inputs[name]) for name in names), (cut.offsets, sliced.offsets),
                     (cut.in_context, sliced.in_context)])


@dataclass(frozen=True)
class ContextTokens:
    """One context tokenized alone: its token ``ids``, (T, 2) character ``offsets`` and ``word_ids`` (-1: none)."""

    ids: np.ndarray
    offsets: np.ndarray
    word_ids: np.ndarray


class ContextsAlone:
    """Each distinct context tokenized alone once, for its words and its windows' slices both, and kept for the next
    batch of questions: a long context fills a batch of its own, so each question over it tokenized it again. Holds the
    contexts of the last call alone (24 to 40 bytes a token)."""

    def __init__(self) -> None:
        self._held: dict[str, ContextTokens] = {}

    def __call__(self, tokenizer: PreTrainedTokenizerBase, contexts: Sequence[str]) -> dict[str, ContextTokens]:
        distinct = list(dict.fromkeys(contexts))
        missing = [context for context in distinct if context not in self._held]
        new = dict(zip(missing, _tokens_of(tokenizer, missing)))
        self._held = {context: self._held[context] if context in self._held else new[context] for context in distinct}
        return self._held


def _tokens_of(tokenizer: PreTrainedTokenizerBase, texts: list[str]) -> Iterator[ContextTokens]:
    """Each text's tokens as arrays, one text at a time: the tokenizer's call holds every token of every text as Python
    objects at once (its offsets as tuples, its ids, type ids and mask as lists), about 0.2 KB a token. No window: no
    length warning; special tokens' texts read as written, as the windows read them."""
    if encodes_its_own_way(tokenizer):  # its call's own columns
        with tokenizer_lock(tokenizer):
            enc = tokenizer(texts, add_special_tokens=False, return_offsets_mapping=True, verbose=False, split_special_tokens=True)
        for k in range(len(texts)):
            yield _as_arrays(enc["input_ids"][k], enc["offset_mapping"][k], enc.word_ids(k))
        return
    encodings = backend_encodings(tokenizer, texts, False)
    for k in range(len(encodings)):
        encoding, encodings[k] = encodings[k], None  # the backend's copy let go as it is read
        yield _as_arrays(encoding.ids, encoding.offsets, encoding.word_ids)


def _as_arrays(ids: list, offsets: list, word_ids: list) -> ContextTokens:
    words = np.nan_to_num(np.array(word_ids, dtype=np.float64), nan=-1).astype(np.int64)  # None: nan, then -1
    spans = np.fromiter(chain.from_iterable(offsets), dtype=np.int64, count=2 * len(words)).reshape(-1, 2)
    return ContextTokens(np.array(ids, dtype=np.int64), spans, words)


def _slices(n: int, room: int, stride: int) -> list[tuple[int, int]]:
    """The backend's windows of ``n`` tokens in ``room`` (its ``Encoding.truncate``): from each start ``room - stride``
    after the one before, to the first that reaches the end."""
    if n <= room:
        return [(0, n)]
    ends = np.minimum(np.arange(0, n, room - stride) + room, n)
    last = int(np.argmax(ends == n))
    return [(begin, end) for begin, end in zip(range(0, n, room - stride), ends[: last + 1].tolist())]


def _add_slice(windows: PairWindows, sample: int, frame: _Frame, ids: np.ndarray, offsets: np.ndarray) -> None:
    """One window of ``frame`` around a slice of its context (``ids``, ``offsets``) appended to ``windows``."""
    (before_ids, before_types), (after_ids, after_types) = frame.before, frame.after
    columns = {"input_ids": np.concatenate([before_ids, ids, after_ids]),
               "token_type_ids": np.concatenate([before_types, np.full(len(ids), frame.context_type), after_types])}
    columns["attention_mask"] = np.ones(len(columns["input_ids"]), dtype=np.int64)
    for name, column in windows.inputs.items():
        column.append(columns[name])
    in_context = np.zeros(len(columns["input_ids"]), dtype=bool)
    in_context[len(before_ids) : len(before_ids) + len(ids)] = True
    window_offsets = np.full((len(in_context), 2), -1, dtype=np.int64)
    window_offsets[in_context] = offsets
    windows.example_index.append(sample)
    windows.offsets.append(window_offsets)
    windows.in_context.append(in_context)


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
