"""The question browser's data as ``report.html`` embeds it: one JSON object, small and quick to read.

How it stays small and quick on the full SQuAD dev set (10,570 questions, 2,067 paragraphs):

* each context is stored once per paragraph; a question points at its paragraph;
* answers are character offsets into the context, never copies of its text, in UTF-16 code units
  (how JavaScript indexes strings: a character beyond the BMP counts two);
* numbers are typed arrays (``{"type", "base64"}`` of little-endian bytes), unsigned ones in the smallest
  type that holds them; confidences and probabilities are bytes, ``round(255 p)``;
* the words of a context and their offsets are stored once per paragraph and tokenization (a word table,
  as gaps and lengths); the BIO head's per-word P(B), P(I) are bytes, run-length coded (most words are
  O: both round to 0), with each question's start in the code, so the page decodes only the question shown.
"""

from __future__ import annotations

import base64
import json
import zlib
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from ..io import json_with_controls_escaped
from ..metrics.squad_official import normalize_answer
from ..types import Example
from .browser_data import NO_ANSWER, ModelBrowserData, quantise
from .groups import group_order

MAX_ZERO_RUN = 255  # a zero run is coded as (0, length), its length in one byte


@dataclass
class BrowserCell:
    """One decoding of one model as the browser lists it, every array one value per question.

    ``offsets`` (E, 2) are the answers' character offsets (``NO_ANSWER`` for none), or None where only
    the texts ``answers`` are known; ``model`` indexes the payload's models (None without model data);
    ``f1``/``em`` are official scores 0..100 (None without gold answers); ``probability`` is None when
    the decoding was not calibrated.
    """

    run: str
    seed: int | None
    decoding: str
    answers: Sequence[str]
    offsets: np.ndarray | None = None
    model: int | None = None
    f1: np.ndarray | None = None
    em: np.ndarray | None = None
    confidence: np.ndarray | None = None
    probability: np.ndarray | None = None


def typed(values: Any, dtype: str) -> dict[str, str]:
    """A typed array for the page: ``{"type": dtype, "base64": its little-endian bytes}``."""
    array = np.ascontiguousarray(np.asarray(values), dtype=np.dtype(dtype).newbyteorder("<"))
    return {"type": dtype, "base64": base64.b64encode(array.tobytes()).decode("ascii")}


def unsigned(values: Any) -> dict[str, str]:
    """Non-negative integers in the smallest of uint8, uint16, uint32 that holds them all."""
    array = np.asarray(values, dtype=np.int64)
    if array.size and array.min() < 0:
        raise ValueError("unsigned() takes non-negative integers")
    top = int(array.max(initial=0))
    return typed(array, "uint8" if top < 2**8 else "uint16" if top < 2**16 else "uint32")


def utf16_positions(text: str) -> np.ndarray | None:
    """Code point index -> UTF-16 code unit index (``len(text) + 1`` entries), or None when they are
    the same (no character beyond the BMP)."""
    if len(text.encode("utf-16-le")) == 2 * len(text):
        return None
    wide = np.fromiter((ord(ch) > 0xFFFF for ch in text), dtype=np.int64, count=len(text))
    return np.concatenate([[0], np.cumsum(1 + wide)])


def to_utf16(offsets: np.ndarray, positions: np.ndarray | None) -> np.ndarray:
    """Code point offsets as UTF-16 offsets; ``NO_ANSWER`` stays."""
    offsets = np.asarray(offsets, dtype=np.int64)
    if positions is None:
        return offsets
    return np.where(offsets >= 0, positions[np.maximum(offsets, 0)], offsets)


def encode_zero_runs(values: np.ndarray, segment_starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bytes with their zero runs coded: a non-zero byte stands for itself, ``0, k`` for k zeros
    (1..255); no run crosses the start of a segment, so each segment decodes alone. Returns the code
    and where each segment starts in it (one more entry than ``segment_starts``: the code's length)."""
    values = np.asarray(values, dtype=np.uint8)
    n = len(values)
    zero = values == 0
    segment_start = np.zeros(n, dtype=bool)
    segment_start[np.asarray(segment_starts, dtype=np.int64)[np.asarray(segment_starts) < n]] = True
    run_start = zero & (segment_start | ~np.concatenate([[False], zero[:-1]]))
    run_id = np.cumsum(run_start) - 1
    first = np.flatnonzero(run_start)
    run_length = np.bincount(run_id[zero], minlength=len(first))
    run_first = first[np.maximum(run_id, 0)] if len(first) else np.zeros(n, dtype=np.int64)
    within = np.arange(n) - run_first  # the position inside its run (meaningful on zeros only)
    chunk = zero & (within % MAX_ZERO_RUN == 0)
    emitted = np.where(zero, np.where(chunk, 2, 0), 1)
    position = np.cumsum(emitted) - emitted
    code = np.zeros(int(emitted.sum()), dtype=np.uint8)
    code[position[~zero]] = values[~zero]
    code[position[chunk] + 1] = np.minimum(MAX_ZERO_RUN, run_length[run_id[chunk]] - within[chunk])
    ends = np.append(position, len(code))
    return code, ends[np.append(np.asarray(segment_starts, dtype=np.int64), n)]


def answer_key(text: str) -> int:
    """A 32-bit fingerprint of the normalised answer (official SQuAD normalisation): two decodings
    agree on a question where their keys are equal, as the report's agreement counts them."""
    return zlib.crc32(normalize_answer(text).encode("utf-8"))


class WordTables:
    """The distinct word tables (the words of one paragraph under one tokenization), each stored once."""

    def __init__(self) -> None:
        self.index: dict[tuple[int, bytes], int] = {}
        self.tables: list[np.ndarray] = []

    def add(self, paragraph: int, offsets: np.ndarray) -> int:
        key = (paragraph, np.ascontiguousarray(offsets, dtype=np.int64).tobytes())
        if key not in self.index:
            self.index[key] = len(self.tables)
            self.tables.append(np.asarray(offsets, dtype=np.int64).reshape(-1, 2))
        return self.index[key]

    def payload(self) -> dict[str, Any]:
        """Per table its word count; per word its gap from the previous word's end (the first: from 0) and length."""
        offsets = np.concatenate(self.tables) if self.tables else np.zeros((0, 2), dtype=np.int64)
        previous_end = np.concatenate([[0], offsets[:-1, 1]]) if len(offsets) else np.zeros(0, dtype=np.int64)
        counts = np.array([len(t) for t in self.tables], dtype=np.int64)
        table_first = np.cumsum(counts) - counts
        previous_end[table_first[counts > 0]] = 0
        return {"counts": unsigned(counts), "gaps": unsigned(offsets[:, 0] - previous_end),
                "lengths": unsigned(offsets[:, 1] - offsets[:, 0])}


def paragraphs(examples: Sequence[Example]) -> tuple[list[str], np.ndarray]:
    """The distinct contexts, in order of first use, and each question's index into them."""
    index: dict[str, int] = {}
    paragraph_of = np.array([index.setdefault(ex.context, len(index)) for ex in examples], dtype=np.int64)
    return list(index), paragraph_of


def _gold(examples: Sequence[Example], positions: list[np.ndarray | None], paragraph_of: np.ndarray) -> dict[str, Any]:
    """Each question's gold spans (every span of every alternative), as counts and flat offsets."""
    counts, flat = [], []
    for ex, paragraph in zip(examples, paragraph_of):
        spans = [span for alternative in ex.answers or () for span in alternative]  # none for a question without gold
        counts.append(len(spans))
        flat.append(to_utf16(np.array(spans, dtype=np.int64).reshape(-1, 2), positions[paragraph]))
    offsets = np.concatenate(flat) if flat else np.zeros((0, 2), dtype=np.int64)
    return {"counts": unsigned(counts), "offsets": unsigned(offsets.ravel())}


def _cell(cell: BrowserCell, positions: list[np.ndarray | None], paragraph_of: np.ndarray) -> dict[str, Any]:
    entry: dict[str, Any] = {"run": cell.run, "seed": cell.seed, "decoding": cell.decoding, "model": cell.model,
                             "keys": typed([answer_key(a) for a in cell.answers], "uint32"), "texts": None}
    if cell.offsets is None:
        entry["texts"] = list(cell.answers)
        start = end = np.full(len(cell.answers), NO_ANSWER)
    else:
        converted = np.array(cell.offsets, dtype=np.int64).reshape(-1, 2)
        for q in np.flatnonzero([positions[p] is not None for p in paragraph_of]):  # contexts beyond the BMP only
            converted[q] = to_utf16(converted[q], positions[paragraph_of[q]])
        start, end = converted[:, 0], converted[:, 1]
    entry.update(start=typed(start, "int32"), end=typed(end, "int32"))
    entry["f1"] = None if cell.f1 is None else typed(cell.f1, "float32")
    entry["em"] = None if cell.em is None else unsigned(np.asarray(cell.em) > 0)
    for name in ("confidence", "probability"):
        values = getattr(cell, name)
        entry[name] = None if values is None else typed(quantise(np.asarray(values, dtype=np.float64)), "uint8")
    return entry


def _model(run: str, seed: int | None, data: ModelBrowserData, positions: list[np.ndarray | None], paragraph_of: np.ndarray,
           tables: WordTables) -> dict[str, Any]:
    """One model's word tables (per question) and run-length coded P(B), P(I) bytes."""
    entry: dict[str, Any] = {"run": run, "seed": seed, "tables": None, "tags": None, "tagStarts": None}
    if not data.has_tags:
        return entry
    first_word = np.concatenate([[0], np.cumsum(data.word_counts)])
    table_of = [tables.add(p, to_utf16(data.word_offsets[first_word[q]:first_word[q + 1]], positions[p]))
                for q, p in enumerate(paragraph_of)]
    code, starts = encode_zero_runs(data.tag_bytes.ravel(), 2 * first_word[:-1])
    entry.update(tables=unsigned(table_of), tags=typed(code, "uint8"), tagStarts=unsigned(starts))
    return entry


def _groups(groups: Mapping[str, Sequence[str]]) -> list[dict[str, Any]]:
    """Each grouping of the questions (question word, answer length, ...): its labels in report order, each question's label."""
    found = []
    for name, labels in groups.items():
        labels = [str(x) for x in labels]
        order = group_order(labels)
        code = {label: k for k, label in enumerate(order)}
        found.append({"name": name, "labels": order, "codes": unsigned([code[x] for x in labels])})
    return found


def browser_payload(
    examples: Sequence[Example], cells: Sequence[BrowserCell], models: Sequence[tuple[str, int | None, ModelBrowserData]],
    groups: Mapping[str, Sequence[str]], default_pair: tuple[int, int] = (0, 0), title: str = "",
) -> dict[str, Any]:
    """Everything the question browser shows, as one JSON-ready object (see the module docstring)."""
    ids = [ex.id for ex in examples]
    for _, _, data in models:
        if data.ids != ids:
            raise ValueError("a model's browser data is for other questions than the page's")
    contexts, paragraph_of = paragraphs(examples)
    positions = [utf16_positions(context) for context in contexts]
    tables = WordTables()
    model_entries = [_model(run, seed, data, positions, paragraph_of, tables) for run, seed, data in models]
    return {
        "title": title, "ids": ids, "questions": [ex.question for ex in examples], "contexts": contexts,
        "paragraph": unsigned(paragraph_of), "gold": _gold(examples, positions, paragraph_of) if any(c.f1 is not None for c in cells) else None,
        "cells": [_cell(cell, positions, paragraph_of) for cell in cells], "models": model_entries, "wordTables": tables.payload(),
        "groups": _groups(groups), "defaultPair": list(default_pair),
    }


def payload_json(payload: Mapping[str, Any]) -> str:
    """The payload as JSON that is safe inside a ``<script>`` element: ``<``, ``>`` and ``&`` are
    escaped (``\\u003c`` ...), so no text of a context or question can close the element, and U+2028 and U+2029 too
    (:func:`json_with_controls_escaped`), which end a line in JavaScript before ES2019."""
    text = json_with_controls_escaped(json.dumps(payload, ensure_ascii=False, separators=(",", ":")))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
