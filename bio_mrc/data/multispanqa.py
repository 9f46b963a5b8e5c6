"""MultiSpanQA (original word-token layout) into the package's data model.

A record is ``{"id", "question": [words], "context": [words], "label": [B/I/O
per context word], "num_span"?, "type"?, "structure"?}``; a record without a
``label`` (MultiSpanQA's test file) is a question to predict, unlabelled. The context words are
joined with single spaces (so a span's text is its words joined by spaces,
exactly the gold text of the official evaluation), and every tagged word span
becomes a character span of that string. All spans of a question form ONE
alternative, in context order; a question without spans is unanswerable.

The official data is IOB2. An I that follows O (or starts the context) is read
as starting a span, like seqeval's default and the official evaluation; such
spans are counted in one :class:`IAfterOWarning`, never dropped or fixed silently.
``num_span``, ``type`` and ``structure`` are not used.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from ..errors import InputWarning
from ..io import home_expanded
from ..json_syntax import json_value
from ..plurals import counted, number_form
from ..tags import PREFIX_IDS, TAG_B, chunk_bounds
from ..types import Example
from .json_reader import DataFormatError, read_json
from .text import carries_text, check_context_length, check_text

REQUIRED_KEYS = ("id", "question", "context")


class IAfterOWarning(InputWarning):
    """Spans of a MultiSpanQA file start with an I after an O (or at the context's start), which IOB2 lacks: they are
    read as span starts, as the official evaluation reads them, and counted (the file and the first few questions named)."""


def detokenize(words: Sequence[str]) -> tuple[str, list[tuple[int, int]]]:
    """``(" ".join(words), [(start, end) of each word])``, ends exclusive."""
    offsets, position = [], 0
    for word in words:
        offsets.append((position, position + len(word)))
        position += len(word) + 1
    return " ".join(words), offsets


def label_spans(labels: Sequence[str], record: str = "", source: str = "") -> tuple[list[tuple[int, int]], int]:
    """Word spans ``(first, last + 1)`` of B/I/O labels and how many of them start with an I."""
    ids = np.array([PREFIX_IDS[tag] if tag in ("B", "I", "O") else -1 for tag in labels], dtype=np.int64)
    bad = np.flatnonzero(ids < 0)
    if bad.size:
        i = int(bad[0])
        raise DataFormatError(f"label {json_value(labels[i])} at word {i} is not one of B, I, O", record, source)
    starts, ends = chunk_bounds(ids)  # seqeval's default reading
    orphans = int(np.count_nonzero(ids[starts] != TAG_B))
    return list(zip(starts.tolist(), ends.tolist())), orphans


def _words(record: dict[str, Any], key: str, qid: str, source: str) -> list[str]:
    words = record[key]
    if not isinstance(words, list) or not all(isinstance(w, str) for w in words):
        raise DataFormatError(f"'{key}' must be a list of word strings", qid, source)
    if not words:
        raise DataFormatError(f"'{key}' is empty", qid, source)
    check_text(" ".join(words), key, qid, source)
    return words


def parse_record(record: Any, source: str = "", number: int | None = None) -> tuple[Example, int]:
    """One record -> ``(Example, number of spans that start with I)``; bad input raises DataFormatError.
    ``number`` (1-based position in the file) names a record that has no usable id."""
    position = f"record #{number}" if number is not None else None
    if not isinstance(record, dict):
        raise DataFormatError(f"expected a record object, got {type(record).__name__}", position, source)
    qid = record.get("id")
    missing = [key for key in REQUIRED_KEYS if key not in record]
    if missing:
        raise DataFormatError(f"missing key(s) {missing}", str(qid) if qid is not None else position, source)
    if not isinstance(qid, str) or not qid:
        raise DataFormatError(f"'id' must be a non-empty string, got {json_value(qid)}", position, source)
    check_text(qid, "id", position, source)  # an id of spaces alone is refused here as in every other layout
    question = _words(record, "question", qid, source)
    context = _words(record, "context", qid, source)
    if record.get("label") is None:  # a question to predict (MultiSpanQA's test file has no labels)
        text = check_context_length(detokenize(context)[0], qid, source)
        return Example(qid, " ".join(question), text, None), 0
    labels = record["label"]
    if not isinstance(labels, list) or len(labels) != len(context):
        got = len(labels) if isinstance(labels, list) else type(labels).__name__
        raise DataFormatError(f"'label' must have one tag per context word: {got} tags for {len(context)} words", qid, source)
    spans, orphans = label_spans(labels, qid, source)
    text, offsets = detokenize(context)
    check_context_length(text, qid, source)
    chars = tuple((offsets[first][0], offsets[last - 1][1]) for first, last in spans)
    if empty := next((span for span in chars if not carries_text(text[span[0] : span[1]])), None):
        raise DataFormatError(f"the tagged words at characters {empty[0]}-{empty[1]} hold no readable text "
                              f"({json_value(text[empty[0] : empty[1]])}), so the answer would be empty", qid, source)
    answers = (chars,) if chars else ()
    return Example(qid, " ".join(question), text, answers), orphans


def parse_multispanqa(raw: Any, source: str = "") -> list[Example]:
    """Validate an already-parsed MultiSpanQA object (see :func:`load_multispanqa`); the first bad record raises."""
    questions = multispanqa_questions(raw, source)
    if error := next((question for question in questions if isinstance(question, DataFormatError)), None):
        raise error
    return questions


def multispanqa_questions(raw: Any, source: str = "") -> list[Example | DataFormatError]:
    """Each record's :class:`Example`, in file order, or the :class:`DataFormatError` of a bad record (a repeated id
    included) in its place: a reader raises the first, or skips them as any question under ``skip_invalid``."""
    if not isinstance(raw, dict) or not isinstance(raw.get("data"), list):
        raise DataFormatError("expected an object with a 'data' list (MultiSpanQA layout)", source=source)
    questions: list[Example | DataFormatError] = []
    seen: set[str] = set()
    orphan_ids: list[str] = []
    for number, record in enumerate(raw["data"], 1):
        try:
            example, orphans = parse_record(record, source, number)
            if example.id in seen:
                raise DataFormatError("duplicate question id", example.id, source)
        except DataFormatError as error:
            questions.append(error)
            continue
        seen.add(example.id)
        orphan_ids += [example.id] * orphans
        questions.append(example)
    if orphan_ids:  # a warning, not a log line: a Python caller sees it too, and its filters decide
        warnings.warn(IAfterOWarning(_i_after_o(orphan_ids, source)), stacklevel=2)
    return questions


def _i_after_o(orphan_ids: list[str], source: str) -> str:
    """The warning's line: how many spans start with an I after an O, where, and the first few questions holding one."""
    ids = list(dict.fromkeys(orphan_ids))
    shown = ", ".join(repr(qid) for qid in ids[:5]) + (", ..." if len(ids) > 5 else "")
    starts = number_form(len(orphan_ids), "starts", "start")
    return (f"{counted(len(orphan_ids), 'span')} in {source or 'the input'} {starts} with I after O (not IOB2); "
            f"read as span starts, as the official evaluation reads them, e.g. in {shown}")


def load_multispanqa(path: str | Path) -> list[Example]:
    """Read a MultiSpanQA JSON file: one :class:`Example` per question, in file order.

    Raises :class:`DataFormatError` (a ``ValueError``) naming the file and the
    record for a missing key, a label list whose length differs from the
    context's, a tag other than B/I/O, an empty question or context, or a
    repeated id. Spans that start with an I are kept and counted in an :class:`IAfterOWarning`.
    """
    path = home_expanded(path)
    source = str(path)
    raw = read_json(path)
    return parse_multispanqa(raw, source)


def multispan_gold_texts(examples: Iterable[Example]) -> dict[str, list[str]]:
    """``{id: [text of each gold span]}``, the gold of :func:`bio_mrc.metrics.multispan_official.multispan_metrics`.

    An unanswerable example maps to ``[]``. MultiSpanQA has one alternative per
    question; an example with several (e.g. SQuAD's annotators) raises ``ValueError``.
    """
    gold: dict[str, list[str]] = {}
    for example in examples:
        alternatives = example.answer_texts()
        if len(alternatives) > 1:
            raise ValueError(f"example {json_value(example.id)} has {len(alternatives)} alternative answers; MultiSpanQA gold has one")
        gold[example.id] = alternatives[0] if alternatives else []
    return gold
