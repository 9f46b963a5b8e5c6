"""MRQA 2019 shared-task files as rows in the Hugging Face SQuAD columns.

A JSON Lines file (``.jsonl``, or ``.jsonl.gz`` as the task ships them): a first line ``{"header": {...}}``
(which the task's sample files leave out), then one context per line, ``{"context", "qas": [{"qid", "question",
"detected_answers": [{"text", "char_spans": [[start, end], ...]}]}]}``, ``end`` inclusive. Each detected answer
becomes one alternative at its first occurrence (the task's suggested training target); its text is the context's
characters there, since the task normalises ``text`` in some datasets, once ``text`` and they agree when normalised as
the metrics normalise answers (spacing aside): a ``text`` that does not is checked as a SQuAD answer at that ``answer_start``. Every
occurrence's span is checked to lie in the context. A question whose ``detected_answers`` list is empty is
unanswerable; one without the key is a question to predict.
"""

from __future__ import annotations

import itertools
import unicodedata
from pathlib import Path
from typing import Any, Iterator

from ..answer_text import normalize_answer
from ..json_syntax import json_value
from .json_reader import DataFormatError
from .sources import Records, jsonl_rows


def is_mrqa_header(record: Any) -> bool:
    return isinstance(record, dict) and set(record) == {"header"}


def is_mrqa_start(record: Any) -> bool:
    """A first line of an MRQA file: the header, or (the header left out, as the task's own sample files and scorer
    allow) a context line: a 'context' and a 'qas' list whose first question has the task's 'qid' (a SQuAD paragraph
    on a line of its own, with 'id's, is not one)."""
    if is_mrqa_header(record):
        return True
    qas = record.get("qas") if isinstance(record, dict) else None
    return isinstance(qas, list) and bool(qas) and isinstance(record.get("context"), str) and isinstance(qas[0], dict) and "qid" in qas[0]


def mrqa_records(path: Path) -> Records:
    return Records(str(path), rows=_mrqa_rows(path))


def _mrqa_rows(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    source = str(path)
    lines = jsonl_rows(path)
    where, header = next(lines, ("line 1", None))
    if not is_mrqa_start(header):
        raise DataFormatError(f"{where} is neither the header line {{\"header\": {{...}}}} nor a context line with "
                              "'context' and 'qas'", source=source)
    if not is_mrqa_header(header):  # no header: the first line is a context line, and the questions have no title
        lines, header = itertools.chain([(where, header)], lines), {"header": None}
    title = header["header"].get("dataset", "") if isinstance(header["header"], dict) else ""
    for where, context_line in lines:
        context, qas = context_line.get("context"), context_line.get("qas")
        if not isinstance(context, str) or not isinstance(qas, list):
            raise DataFormatError(f"{where} needs a 'context' string and a 'qas' list", source=source)
        for number, qa in enumerate(qas, 1):
            yield where, _row_or_problem(qa, context, title if isinstance(title, str) else "", f"{source}, {where}", number)


def _row_or_problem(qa: Any, context: str, title: str, source: str, number: int = 1) -> dict[str, Any] | DataFormatError:
    """The question's row (the line's ``number``-th), or its own problem (not an object, a malformed or misplaced span, a
    text that is no string) in its place: raised where every question's checks are made, so ``skip_invalid`` skips and
    counts it as any other."""
    if not isinstance(qa, dict):
        return DataFormatError(f"'qas' entry {number} is {_JSON_KINDS.get(type(qa), type(qa).__name__)}, not a question object "
                               "{qid, question, detected_answers}", None, source)
    try:
        return _row(qa, context, title, source)
    except DataFormatError as problem:
        return problem


_JSON_KINDS = {list: "a list", str: "a string", int: "a number", float: "a number", bool: "a boolean", type(None): "null"}


def _row(qa: dict[str, Any], context: str, title: str, source: str) -> dict[str, Any]:
    """One question in the Hugging Face columns; ``load_squad`` checks id, question and answers as for any row. Without
    ``detected_answers`` (or with null) it is a question to predict, unlabelled, as a row without ``answers`` is:
    ``is_impossible: false`` says no more, ``true`` makes it unanswerable."""
    row = {"id": qa.get("qid"), "title": title, "context": context, "question": qa.get("question")}
    detected, impossible = qa.get("detected_answers"), qa.get("is_impossible")
    if detected is None and (impossible is None or impossible is False):
        return row
    qid = qa.get("qid") if isinstance(qa.get("qid"), str) else None
    starts, texts = [], []
    detected = [] if detected is None else detected
    if not isinstance(detected, list):
        raise DataFormatError("'detected_answers' must be a list", qid, source)
    misplaced = []
    for answer in detected:
        start, end = _first_span(answer, len(context), qid, source)
        starts.append(start)
        texts.append(_answer_text(answer, context[start : end + 1], qid, source))
        misplaced += _misplaced_spans(answer, context)
    row["answers"] = {"text": texts, "answer_start": starts}
    if misplaced:  # refused, or passed over under --fix-offsets, where the question's other checks are made
        row[MISPLACED_SPANS] = misplaced
    return row if "is_impossible" not in qa else {**row, "is_impossible": impossible}


def _answer_text(answer: dict[str, Any], there: str, qid: Any, source: str) -> str:
    """The context's characters at the first span (``there``) when the detected answer's ``text`` is them once both are
    normalised as the metrics are (the task lower-cases some datasets' texts); else ``text`` itself, which the SQuAD
    checks then refuse as an answer not at its ``answer_start`` (or relocate with ``--fix-offsets``): a misaligned
    record would train on other characters."""
    text = answer.get("text")
    if not isinstance(text, str):
        raise DataFormatError(f"a detected answer needs a 'text' string, got {json_value(text)}", qid, source)
    return there if _normalised(text) == _normalised(there) else text


def _misplaced_spans(answer: dict[str, Any], context: str) -> list[str]:
    """Each later span of a detected answer (``char_spans`` after the first, which :func:`_answer_text` reads) whose
    characters are not its ``text`` once both are normalised, described in a line: a misaligned occurrence. Each span
    is read once and compared with the text normalised once, and a span far longer than the text is no spacing of it
    (it is not normalised), so the check costs about the characters of the text and its spans."""
    text, spans = answer["text"], answer["char_spans"]
    wanted, seen, found = _normalised(text), set(), []
    for number, (start, end) in enumerate(spans[1:], 2):
        if (start, end) in seen:
            continue
        seen.add((start, end))
        there = context[start : end + 1] if end - start < 4 * len(text) + 64 else None
        if there is None or there != text and _normalised(there) != wanted:
            shown = json_value(there if there is not None else context[start : start + 40])
            found.append(f"char span #{number} [{start}, {end}] holds {shown}, not the detected answer's text {json_value(text)}")
    return found


# The row key of a question's misplaced spans (:func:`_misplaced_spans`): no name a file's column could take.
MISPLACED_SPANS = ("mrqa", "misplaced char spans")


def _normalised(text: str) -> str:
    """As the metrics normalise an answer, its spaces dropped too: the task found spans by matching tokens, so a
    ``text`` may be spaced as its tokenizer split it (``1 , 000`` for ``1,000``)."""
    return normalize_answer(unicodedata.normalize("NFKC", text)).replace(" ", "")


def _first_span(answer: Any, length: int, qid: Any, source: str) -> tuple[int, int]:
    """The first of a detected answer's spans; every span is checked, so a malformed later one (each occurrence of
    the answer is listed) is refused too, not passed over."""
    spans = answer.get("char_spans") if isinstance(answer, dict) else None
    if not isinstance(spans, list) or not spans:
        raise DataFormatError("a detected answer needs 'char_spans': [[start, end], ...] of integers", qid, source)
    for number, span in enumerate(spans, 1):
        if not (isinstance(span, list) and len(span) == 2 and all(isinstance(i, int) and not isinstance(i, bool) for i in span)):
            raise DataFormatError(f"char span #{number} {json_value(span)} of a detected answer is not [start, end] of integers", qid, source)
        start, end = span
        if not 0 <= start <= end < length:
            raise DataFormatError(f"char span [{start}, {end}] is not inside the context ({length} characters; ends are inclusive)",
                                  qid, source)
    return spans[0][0], spans[0][1]
