"""MRQA 2019 shared-task files as rows in the Hugging Face SQuAD columns.

A JSON Lines file (``.jsonl``, or ``.jsonl.gz`` as the task ships them): a first line ``{"header": {...}}``, then
one context per line, ``{"context", "qas": [{"qid", "question", "detected_answers": [{"text", "char_spans":
[[start, end], ...]}]}]}``, ``end`` inclusive. Each detected answer becomes one alternative at its first
occurrence (the task's suggested training target); its text is the context's characters there, since the task
normalises ``text`` in some datasets. A question without detected answers is unanswerable.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from .json_reader import DataFormatError
from .sources import Records, jsonl_rows


def is_mrqa_header(record: Any) -> bool:
    return isinstance(record, dict) and set(record) == {"header"}


def mrqa_records(path: Path) -> Records:
    return Records(str(path), rows=_mrqa_rows(path))


def _mrqa_rows(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    source = str(path)
    lines = jsonl_rows(path)
    where, header = next(lines, ("line 1", None))
    if not is_mrqa_header(header):
        raise DataFormatError(f"{where} is not the header line {{\"header\": {{...}}}}", source=source)
    title = header["header"].get("dataset", "") if isinstance(header["header"], dict) else ""
    for where, context_line in lines:
        context, qas = context_line.get("context"), context_line.get("qas")
        if not isinstance(context, str) or not isinstance(qas, list):
            raise DataFormatError(f"{where} needs a 'context' string and a 'qas' list", source=source)
        for qa in qas:
            yield where, _row(qa, context, title if isinstance(title, str) else "", f"{source}, {where}")


def _row(qa: Any, context: str, title: str, source: str) -> dict[str, Any]:
    """One question in the Hugging Face columns; ``load_squad`` checks id, question and answers as for any row."""
    qa = qa if isinstance(qa, dict) else {}
    qid = qa.get("qid") if isinstance(qa.get("qid"), str) else None
    starts, texts = [], []
    detected = qa.get("detected_answers", [])
    if not isinstance(detected, list):
        raise DataFormatError("'detected_answers' must be a list", qid, source)
    for answer in detected:
        start, end = _first_span(answer, len(context), qid, source)
        starts.append(start)
        texts.append(context[start : end + 1])
    row = {"id": qa.get("qid"), "title": title, "context": context, "question": qa.get("question"),
           "answers": {"text": texts, "answer_start": starts}}
    return row if "is_impossible" not in qa else {**row, "is_impossible": qa["is_impossible"]}


def _first_span(answer: Any, length: int, qid: Any, source: str) -> tuple[int, int]:
    spans = answer.get("char_spans") if isinstance(answer, dict) else None
    first = spans[0] if isinstance(spans, list) and spans else None
    if not (isinstance(first, list) and len(first) == 2 and all(isinstance(i, int) and not isinstance(i, bool) for i in first)):
        raise DataFormatError("a detected answer needs 'char_spans': [[start, end], ...] of integers", qid, source)
    start, end = first
    if not 0 <= start <= end < length:
        raise DataFormatError(f"char span [{start}, {end}] is not inside the context ({length} characters; ends are inclusive)",
                              qid, source)
    return start, end
