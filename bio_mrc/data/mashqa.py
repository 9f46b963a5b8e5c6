"""MASH-QA's JSON (``train_webmd_squad_v2_full.json`` and the rest) as rows in the Hugging Face SQuAD columns.

The layout is SQuAD 2.0's, and each answer lists the sentences it is made of as ``answer_starts``: ``[[start, length],
...]`` character ranges of the context, often apart. Its ``text`` joins them, so it is no span of the context: the
sentences are the parts of one answer, read at their ranges. An answer without ``answer_starts`` is SQuAD's own.
"""

from __future__ import annotations

from typing import Any, Iterator

from ..json_syntax import json_value
from .json_reader import DataFormatError
from .sources import Records


def is_mashqa_paragraph(paragraph: Any) -> bool:
    """Whether a SQuAD paragraph's first answer lists its sentences as ``answer_starts`` (a question before it without
    answers, SQuAD 2.0's unanswerable one, tells nothing)."""
    qas = paragraph.get("qas") if isinstance(paragraph, dict) else None
    answers = (qa.get("answers") for qa in (qas if isinstance(qas, list) else ()) if isinstance(qa, dict))
    first = next((listed[0] for listed in answers if isinstance(listed, list) and listed), None)
    return isinstance(first, dict) and "answer_starts" in first


def mashqa_records(raw: Any, source: str) -> Records:
    """The questions of a parsed MASH-QA file, each one's sentences the parts of one answer."""
    if not isinstance(raw, dict) or not isinstance(raw.get("data"), list):
        raise DataFormatError("expected an object with a 'data' list (MASH-QA's SQuAD layout)", source=source)
    return Records(source, rows=_rows(raw["data"], source), parts=True)


def _rows(articles: list[Any], source: str) -> Iterator[tuple[str, Any]]:
    for number, article in enumerate(articles, 1):
        paragraphs = article.get("paragraphs") if isinstance(article, dict) else None
        if not isinstance(paragraphs, list):
            raise DataFormatError(f"article #{number} has no 'paragraphs' list", source=source)
        title = article.get("title") or ""
        for index, paragraph in enumerate(paragraphs):
            qas = paragraph.get("qas") if isinstance(paragraph, dict) else None
            if not isinstance(qas, list):
                raise DataFormatError(f"article #{number}, paragraph {index} has no 'qas' list", source=source)
            where = f"article #{number}, paragraph {index}"
            for qa in qas:
                yield where, _row(qa, paragraph.get("context"), title, f"{source}, {where}")


def _row(qa: Any, context: Any, title: str, source: str) -> dict[str, Any] | DataFormatError:
    """One question in the Hugging Face columns, its answers' sentences listed one by one; a bad range its error."""
    if not isinstance(qa, dict):
        return DataFormatError("question is not an object", None, source)
    row = {key: qa[key] for key in ("id", "question", "is_impossible") if key in qa}
    row.update(title=title, context=context)
    if not isinstance(qa.get("answers"), list) or not isinstance(context, str):
        return {**row, "answers": qa.get("answers")}  # the row's checks say what is wrong, or read a question to predict
    texts, starts = [], []
    for answer in qa["answers"]:
        ranges = answer.get("answer_starts") if isinstance(answer, dict) else None
        if ranges is None:  # SQuAD's own answer
            texts.append(answer.get("text") if isinstance(answer, dict) else None)
            starts.append(answer.get("answer_start") if isinstance(answer, dict) else None)
            continue
        try:
            found = _ranges(ranges, len(context), qa.get("id"), source)
        except DataFormatError as problem:  # this question's alone: refused or skipped with its checks
            return problem
        texts += [context[start : start + length] for start, length in found]
        starts += [start for start, _ in found]
    return {**row, "answers": {"text": texts, "answer_start": starts}}


def _ranges(ranges: Any, size: int, qid: Any, source: str) -> list[tuple[int, int]]:
    """An answer's ``answer_starts``, each ``[start, length]`` of a non-empty range inside the context."""
    record = qid if isinstance(qid, str) else None
    if not isinstance(ranges, list) or not ranges:
        raise DataFormatError("'answer_starts' must be a non-empty list of [start, length] sentence ranges", record, source)
    for pair in ranges:
        if not (isinstance(pair, list) and len(pair) == 2 and all(type(i) is int for i in pair)):
            raise DataFormatError(f"'answer_starts' entry {json_value(pair)} is not [start, length] of integers", record, source)
        start, length = pair
        if not (0 <= start and 0 < length and start + length <= size):
            raise DataFormatError(f"'answer_starts' range [{start}, {length}] is not inside the context ({size} characters)",
                                  record, source)
    return [(start, length) for start, length in ranges]
