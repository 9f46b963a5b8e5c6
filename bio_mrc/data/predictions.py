"""Prediction and no-answer-probability files checked against the questions they answer.

As the official SQuAD v1.1 and v2.0 scripts, an id that is not a question of the
data is ignored (with an :class:`UnknownIdsWarning`), so that a published file made
for an older copy of the data can still be scored; a question the file lacks is
scored as wrong, as ``evaluate-v1.1.py`` does (see :func:`check_question_ids`).
Under ``strict`` both are errors; MultiSpanQA files are always read strictly, as
its official script asserts that the ids match.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Collection, Mapping

from ..errors import BioMrcWarning, argument, as_flags, as_keywords
from ..io import home_expanded
from ..json_syntax import json_value
from ..types import Example
from ..plurals import counted, number_form
from .json_reader import DataFormatError, read_json
from .prediction_layouts import NO_ANSWER_KEY, PredictionFile, is_record, read_prediction_file


def _shown(ids: list[str]) -> str:
    return ", ".join(repr(qid) for qid in ids[:5]) + (", ..." if len(ids) > 5 else "")


class UnknownIdsWarning(BioMrcWarning):
    """Ids of a predictions (or no-answer probability) file that are not questions of the data were ignored.

    ``ids`` lists them in file order and ``source`` names the file.
    """

    def __init__(self, message: str, ids: list[str], source: str) -> None:
        super().__init__(message)
        self.ids, self.source = ids, source


def check_question_ids(found: Mapping[str, Any], question_ids: Collection[str], source: str, strict: bool = False,
                       unscored: Collection[str] = ()) -> list[str]:
    """The ids of ``question_ids`` that ``found`` lacks, in data order.

    An id of ``found`` that is not a question of the data raises
    :class:`DataFormatError` under ``strict``, else an :class:`UnknownIdsWarning`
    (the caller drops it, see :func:`keep_question_ids`). A missing id raises only under ``strict``.
    ``unscored``: ids of the data's questions left out of this scoring (past ``evaluate --limit``), which
    are neither unknown nor missing, and are dropped too.
    """
    known = set(question_ids)
    skipped = set(unscored)
    unknown = [qid for qid in found if qid not in known and qid not in skipped]
    if unknown:
        message = f"{len(unknown)} id(s) are not questions of the data: {_shown(unknown)}"
        if strict:
            raise DataFormatError(message, unknown[0], source)
        # stacklevel 4: the warning points at whoever called load_predictions / load_na_probs
        warnings.warn(UnknownIdsWarning(f"{message}; ignored, as the official SQuAD scripts do (in {source})", unknown, source),
                      stacklevel=4)
    missing = [qid for qid in question_ids if qid not in found]
    if missing and strict:
        raise DataFormatError(f"{len(missing)} of {counted(len(known), 'question')} {number_form(len(missing), 'has', 'have')} no entry: "
                              f"{_shown(missing)}", missing[0], source)
    return missing


def keep_question_ids(found: Mapping[str, Any], question_ids: Collection[str]) -> dict[str, Any]:
    """``found`` without the ids that are not questions of the data, which are never scored."""
    known = set(question_ids)
    return {qid: value for qid, value in found.items() if qid in known}


def _read_id_map(found: Any, source: str, question_ids: Collection[str], what: str, strict: bool,
                 unscored: Collection[str] = (), data: str | None = None) -> tuple[dict[str, Any], list[str]]:
    """``({question id: value}, missing ids)`` of a file's ``{id: value}`` map, kept to the questions of the data
    (named by ``data``). A file that shares no id with the data is refused: scoring it would give every question as
    wrong."""
    if question_ids and not any(qid in found for qid in (*question_ids, *unscored)):
        kind = "predictions file" if what == "answer" else "no-answer probability file"
        why = f"a {kind} of another data set?" if found else "the file is an empty object"
        if isinstance(found.get("data"), list):  # the questions' own file, given in the answers' place
            why = f"it is a data file (a 'data' list of articles), not a {kind} {{question id: {what}}}"
        raise DataFormatError(f"no question id of {source} is in {data or 'the data'}: {why}")
    missing = check_question_ids(found, question_ids, source, strict, unscored)
    return keep_question_ids(found, question_ids), missing


def _probability_map(path: str | Path) -> dict[str, Any]:
    """A no-answer probability file's ``{id: value}``, read decompressed where it is gzip-compressed, and refused
    past :func:`~bio_mrc.data.limits.max_json_bytes`."""
    found = read_json(home_expanded(path), decompress=True, bounded=True)
    if not isinstance(found, dict):
        records = isinstance(found, list) and any(is_record(entry) for entry in found)
        hint = (f": it is a list of prediction records; give it as {argument('predictions')}, which reads their "
                f"{NO_ANSWER_KEY}") if records else ""
        raise DataFormatError(f"expected an object {{question id: probability}}, got a JSON {type(found).__name__}{hint}",
                              source=str(path))
    return found


def load_predictions(
    path: str | Path | PredictionFile, question_ids: Collection[str], multi_span: bool = False, strict: bool = False,
    unscored: Collection[str] = (), data: str | None = None,
) -> tuple[dict[str, Any], list[str]]:
    """``({id: answer}, missing ids)`` of a predictions file, in any layout of :mod:`~bio_mrc.data.prediction_layouts`
    (``path`` may be one read already).

    SQuAD files map ids to answer strings; with ``multi_span`` (MultiSpanQA) to
    lists of span strings. Every value kept is checked and a bad one names its id.
    Ids that are not questions of the data are left out (see :func:`check_question_ids`), as are ``unscored`` ones; a
    file with no question of the data (``data`` names it) is refused.
    """
    read = path if isinstance(path, PredictionFile) else read_prediction_file(path)
    predictions, missing = _read_id_map(read.answers, read.source, question_ids, "answer", strict, unscored, data)
    numbers = all(map(_finite_number, predictions.values()))  # only then a probability file, not one answer a number
    for qid, answer in predictions.items():
        _check_answer(answer, qid, read.source, multi_span, numbers)
    return predictions, missing


def _check_answer(answer: Any, qid: str, source: str, multi_span: bool, numbers: bool = True) -> None:
    """Refuse a prediction that is not a string (with ``multi_span``, a list of strings), saying what it is; ``numbers``:
    every prediction of the file is a number, so a number says which file it is."""
    if kind := _file_kind(answer, "answer", numbers):  # a file of another kind: named, with the file to give
        raise DataFormatError(f"a prediction must be {'a list of strings' if multi_span else 'a string'}, got "
                              f"{json_value(answer)}: {_other_file(kind, source, 'answer')}", qid, source)
    if answer is None:  # the official v2.0 script stops on null with an AttributeError; "" is its abstention
        empty = "[], the empty list" if multi_span else '"", the empty string, as the official SQuAD v2.0 script reads it'
        raise DataFormatError(f"a prediction must be {'a list of strings' if multi_span else 'a string'}, got null: "
                              f"an abstention is written as {empty}", qid, source)
    if multi_span:
        if not _span_strings(answer):
            raise DataFormatError(f"a multi-span prediction must be a list of strings, got {json_value(answer)}", qid, source)
    elif isinstance(answer, list):  # predict --multi-span's file on questions whose listed answers are alternatives
        raise DataFormatError(f"a prediction must be a string, got the list of spans {json_value(answer)}: a multi-span answer "
                              "is scored with MultiSpanQA's metrics, against questions whose listed answers are its "
                              f"parts ({argument('data_format', 'answer-parts')}); for SQuAD's metrics predict without "
                              f"{argument('multi_span', True)}", qid, source)
    elif not isinstance(answer, str):
        raise DataFormatError(f"a prediction must be a string, got {json_value(answer)}", qid, source)


def _span_strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(span, str) for span in value)


# predict's files beside its official predictions PREDS.json, by the suffix that replaces .json
_SIDE_FILES = {"nbest": ".nbest.json", "probability": ".na_probs.json", "answer": ".json"}
_KINDS = {"nbest": "predict's n-best file {id: {answer, spans, ...}}", "nbest list": "an n-best file {id: [{text, ...}]}",
          "probability": "a no-answer probability file {id: probability}", "answer": "a predictions file {id: answer}"}


def _file_kind(value: Any, expected: str, alike: bool = True) -> str | None:
    """The kind of file a value of the wrong kind comes from (a key of :data:`_KINDS`), where it tells: an n-best
    entry, a probability where an answer is expected, an answer where a probability is; else None. ``alike``: every
    value of the file is of the value's kind (a number among answers, or a string among probabilities, is one value
    wrong, not the file)."""
    if isinstance(value, dict) and {"answer", "spans"} <= value.keys():
        return "nbest"
    if isinstance(value, list) and value and all(isinstance(entry, dict) and "text" in entry for entry in value):
        return "nbest list"
    if expected == "answer" and alike and _finite_number(value):
        return "probability"
    return "answer" if expected == "probability" and alike and isinstance(value, str) else None


def _other_file(kind: str, source: str, expected: str) -> str:
    """Which file to give instead of ``source``, a file of ``kind`` given where one of ``expected`` values is read."""
    wanted = _KINDS[expected].replace("a predictions file", "an official predictions file")
    option = {"answer": (argument("predictions"), "the answers"), "probability": (argument("na_probs"), "the no-answer probabilities")}
    if kind in option:  # the other file of the pair: each goes to its own option
        return f"this is {_KINDS[kind]}, not {wanted}: give it as {option[kind][0]}, and {option[expected][1]} as {option[expected][0]}"
    stem = next((source[: -len(suffix)] for suffix in _SIDE_FILES.values() if source.endswith(suffix)), None)
    beside = f": {stem}{_SIDE_FILES[expected]}" if stem and kind == "nbest" else ""
    return f"this is {_KINDS[kind]}, not {wanted}; give the one written with it{beside}"


def _finite_number(value: Any) -> bool:
    """A JSON number that is a finite float: no bool, and no integer past the float range."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an integer no float holds
        return False


def load_na_probs(path: str | Path | PredictionFile, question_ids: Collection[str], strict: bool = False,
                  unscored: Collection[str] = (), data: str | None = None) -> tuple[dict[str, float], list[str]]:
    """``({id: no-answer score}, missing ids)`` of a no-answer probability file ``{id: value}`` (or of the
    ``no_answer_probability`` of a predictions file's records, ``path`` read already); every value kept must be a
    finite number. As the official v2.0 script, any scale is read: probabilities, or the log-odds that BERT's
    ``null_odds.json`` holds."""
    found, source = ((path.na_probs or {}, path.source) if isinstance(path, PredictionFile)
                     else (_probability_map(path), str(path)))
    probs, missing = _read_id_map(found, source, question_ids, "probability", strict, unscored, data)
    texts = all(isinstance(prob, str) for prob in probs.values())  # only then a predictions file, not one value text
    for qid, prob in probs.items():
        if kind := _file_kind(prob, "probability", texts):
            raise DataFormatError(f"a no-answer probability or score must be a finite number, got {json_value(prob)}: "
                                  f"{_other_file(kind, source, 'probability')}", qid, source)
        if not _finite_number(prob):
            raise DataFormatError(f"a no-answer probability or score must be a finite number, got {json_value(prob)}", qid, source)
    return {qid: float(p) for qid, p in probs.items()}, missing


@dataclass
class ScoredQuestions:
    """The questions an evaluation scores, of ``read`` read from the data; ``subset`` describes them in words when they
    are not the whole file (None: every question), chosen by the call's ``arguments`` (``{"limit": 4}``), and is stated
    where the scores are (:meth:`described`)."""

    examples: list[Example]
    read: int
    subset: str | None = None
    arguments: dict[str, Any] = field(default_factory=dict)

    def described(self, flags: Mapping[str, str] | None = None) -> str | None:
        """The subset with the arguments that chose it: the keywords (``limit=4, only_predicted=True``), or given a
        command's ``flags`` its flags (``--limit 4 --only-predicted``)."""
        if not self.subset:
            return None
        named = [argument(name, value) for name, value in self.arguments.items()]
        said = " ".join(as_flags(name, flags) for name in named) if flags is not None else ", ".join(map(as_keywords, named))
        return f"{self.subset} ({said})" if said else self.subset

    @property
    def record(self) -> dict[str, Any]:
        """The metrics' ``scored`` entry, as a Python caller reads it: present only for a subset."""
        return {"scored": {"questions": len(self.examples), "subset": self.described()}} if self.subset else {}
