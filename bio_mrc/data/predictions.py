"""Prediction and no-answer-probability files checked against the questions they answer.

A file that names a question the data does not have is an error: it was made
for other data, and scoring it would be silently wrong. A file that lacks some
questions is scored with those questions wrong (see :func:`check_question_ids`).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Collection, Mapping

from .errors import DataFormatError, read_json


def _shown(ids: list[str]) -> str:
    return ", ".join(repr(qid) for qid in ids[:5]) + (", ..." if len(ids) > 5 else "")


def check_question_ids(found: Mapping[str, Any], question_ids: Collection[str], source: str, strict: bool = False) -> list[str]:
    """The ids of ``question_ids`` that ``found`` lacks, in data order.

    Raises :class:`DataFormatError` for an id that is not a question of the data,
    and, under ``strict``, for a missing one.
    """
    known = set(question_ids)
    unknown = [qid for qid in found if qid not in known]
    if unknown:
        raise DataFormatError(f"{len(unknown)} id(s) are not questions of the data: {_shown(unknown)}", unknown[0], source)
    missing = [qid for qid in question_ids if qid not in found]
    if missing and strict:
        raise DataFormatError(f"{len(missing)} of {len(known)} questions have no entry: {_shown(missing)}", missing[0], source)
    return missing


def load_predictions(
    path: str | Path, question_ids: Collection[str], multi_span: bool = False, strict: bool = False
) -> tuple[dict[str, Any], list[str]]:
    """``({id: answer}, missing ids)`` of an official predictions file.

    SQuAD files map ids to answer strings; with ``multi_span`` (MultiSpanQA) to
    lists of span strings. Every value is checked and a bad one names its id.
    """
    source = str(path)
    predictions = read_json(path)
    if not isinstance(predictions, dict):
        raise DataFormatError(f"expected an object {{question id: answer}}, got a JSON {type(predictions).__name__}", source=source)
    for qid, answer in predictions.items():
        if multi_span:
            if not isinstance(answer, list) or not all(isinstance(span, str) for span in answer):
                raise DataFormatError(f"a multi-span prediction must be a list of strings, got {answer!r}", qid, source)
        elif not isinstance(answer, str):
            raise DataFormatError(f"a prediction must be a string, got {answer!r}", qid, source)
    return predictions, check_question_ids(predictions, question_ids, source, strict)


def load_na_probs(path: str | Path, question_ids: Collection[str], strict: bool = False) -> tuple[dict[str, float], list[str]]:
    """``({id: no-answer probability}, missing ids)``; every value must be a number in [0, 1]."""
    source = str(path)
    probs = read_json(path)
    if not isinstance(probs, dict):
        raise DataFormatError(f"expected an object {{question id: probability}}, got a JSON {type(probs).__name__}", source=source)
    for qid, prob in probs.items():
        if isinstance(prob, bool) or not isinstance(prob, (int, float)) or not (0.0 <= prob <= 1.0) or math.isnan(prob):
            raise DataFormatError(f"a no-answer probability must be a number in [0, 1], got {prob!r}", qid, source)
    return {qid: float(p) for qid, p in probs.items()}, check_question_ids(probs, question_ids, source, strict)
