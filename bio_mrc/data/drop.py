"""DROP's own JSON (``drop_dataset_train.json``, ``drop_dataset_dev.json``) as rows in the Hugging Face SQuAD columns.

The file maps each passage id to ``{"passage", "qa_pairs": [{"query_id", "question", "answer": {"spans", "number",
"date"}, "validated_answers"}]}``. An answer that lists spans is extractive: its spans, given as texts, are the parts
of one answer, each at its first whole-word mention in the passage (else its first occurrence; the metrics compare
texts, so the mention marked does not change a score). A span the passage lacks (DROP takes some from the question)
is the question's error, refused or skipped as any bad question is. An answer that is a number or a date is not
extractive: such questions are left out and counted in one warning. ``validated_answers`` are alternatives to the
whole answer, which one answer of parts cannot hold: ``answer`` is read. The passage id is the question's title,
so cross-validation holds a passage's questions out together.
"""

from __future__ import annotations

import re
import warnings
from typing import Any

from ..answer_text import mentions
from ..errors import InputWarning
from ..json_syntax import json_value
from ..plurals import counted
from .json_reader import DataFormatError
from .sources import Records
from .text import carries_text

# A JSON object whose first value is an object starting with one of a DROP passage's keys.
_DROP_START = re.compile(rb'\A\s*\{\s*"(?:[^"\\]|\\.)*"\s*:\s*\{\s*"(?:passage|qa_pairs|wiki_url)"\s*:')
SNIFF_BYTES = 4096


class NumericAnswersWarning(InputWarning):
    """DROP questions answered by a number or a date, which no span extracts, were left out (their count and the file)."""


def is_drop_start(start: bytes) -> bool:
    """Whether a file's first bytes (a byte-order mark left out) open DROP's layout."""
    return _DROP_START.match(start.removeprefix(b"\xef\xbb\xbf")) is not None


def drop_records(raw: Any, source: str) -> Records:
    """The extractive questions of a parsed DROP file as rows, each one's spans the parts of one answer."""
    if not isinstance(raw, dict):
        raise DataFormatError("expected DROP's object of passages {passage_id: {passage, qa_pairs}}", source=source)
    rows, numeric = [], 0
    for passage_id, item in raw.items():
        where = f"passage {passage_id}"
        if not isinstance(item, dict) or not isinstance(item.get("qa_pairs"), list):
            raise DataFormatError(f"{where} needs a 'passage' string and a 'qa_pairs' list", source=source)
        for number, qa in enumerate(item["qa_pairs"], 1):
            row = _row_or_problem(qa, item.get("passage"), passage_id, f"{source}, {where}", number)
            if row is None:
                numeric += 1
                continue
            rows.append((where, row))
    if numeric:  # a warning, not a log line: a Python caller sees it too, and its filters decide
        warnings.warn(NumericAnswersWarning(f"left out {counted(numeric, 'question')} of {numeric + len(rows)} in {source}: "
                                            "their answers are numbers or dates, not spans of the passage"), stacklevel=2)
    return Records(source, rows=iter(rows), parts=True)


def _row_or_problem(qa: Any, passage: Any, passage_id: str, source: str, number: int) -> dict[str, Any] | DataFormatError | None:
    """The question's row, its error in its place, or None for a question answered by a number or a date."""
    if not isinstance(qa, dict):
        return DataFormatError(f"'qa_pairs' entry {number} is not a question object {{query_id, question, answer}}", None, source)
    row = {"id": qa.get("query_id"), "title": passage_id, "context": passage, "question": qa.get("question")}
    answer = qa.get("answer")
    if answer is None:  # a question to predict
        return row
    qid = row["id"] if isinstance(row["id"], str) else None
    try:
        spans = _spans(answer, qid, source)
    except DataFormatError as problem:
        return problem
    if spans is None:
        return None
    if not isinstance(passage, str):
        return row  # the row's checks refuse the missing passage, naming it
    starts = []
    for span in spans:
        whole = mentions(passage, span)
        start = whole[0][0] if whole else passage.find(span)
        if start < 0:
            return DataFormatError(f"answer span {json_value(span)} is not in the passage (DROP takes some spans from the question), "
                                   "so no model can extract it", qid, source)
        starts.append(start)
    return {**row, "answers": {"text": spans, "answer_start": starts}}


def _spans(answer: Any, qid: str | None, source: str) -> list[str] | None:
    """An answer's span texts; None where it is a number or a date."""
    if not isinstance(answer, dict):
        raise DataFormatError("'answer' must be an object {spans, number, date}", qid, source)
    spans = answer.get("spans") or []
    if not isinstance(spans, list) or not all(isinstance(span, str) for span in spans):
        raise DataFormatError("the answer's 'spans' must be a list of strings", qid, source)
    if blank := next((number for number, span in enumerate(spans, 1) if not carries_text(span)), None):
        raise DataFormatError(f"answer span {blank} ({json_value(spans[blank - 1])}) holds no readable text", qid, source)
    if spans:
        return spans
    date, number = answer.get("date"), answer.get("number")
    if str("" if number is None else number).strip() or (isinstance(date, dict) and any(str(v).strip() for v in date.values())):
        return None  # a number 0 is one, as "0" is
    raise DataFormatError("the answer holds no spans, number or date", qid, source)

