"""The layouts of a predictions file, each told from the file's content, never from its name or an option.

* the official SQuAD object ``{id: answer}`` (MultiSpanQA's ``{id: [spans]}``);
* a JSON list of records, as Hugging Face ``evaluate``'s squad and squad_v2 metrics take their predictions;
* JSON Lines, one record a line (a file of one record, on one line or several, is one too).

A record is ``{"id": ..., KEY: answer}`` with KEY exactly one of ``prediction_text`` (Hugging Face's),
``prediction`` or ``answer``, and an optional ``no_answer_probability`` (squad_v2's); other keys are left alone.
Any of these may be gzip-compressed, told by its first bytes; the file, decompressed, is at most
:func:`~bio_mrc.data.limits.max_json_bytes`. An id given twice is refused, naming both records.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from ..io import home_expanded
from ..json_syntax import json_value, syntax_hint
from .json_reader import DataFormatError, NotPlainJsonError, loads, parse_json_text, read_json_text

ANSWER_KEYS = ("prediction_text", "prediction", "answer")
NO_ANSWER_KEY = "no_answer_probability"
RECORD = '{"id": ..., "prediction_text": ...}'
_JSON_TYPES = {list: "list", str: "string", int: "number", float: "number", bool: "boolean", type(None): "null"}


@dataclass
class PredictionFile:
    """A predictions file's ``answers`` ``{id: answer}`` in file order, unchecked; ``na_probs`` ``{id: value}`` of
    the records that give a ``no_answer_probability`` (None where none does); ``layout`` in words; ``source`` the file."""

    answers: dict[str, Any]
    na_probs: dict[str, Any] | None
    layout: str
    source: str


def read_prediction_file(path: str | Path) -> PredictionFile:
    """The answers of a predictions file in any layout of the module's list; a record that is not one is refused
    naming its line (JSON Lines) or entry (a JSON list)."""
    source, expanded = str(path), home_expanded(path)  # a record's line names the file as the user wrote it
    text = read_json_text(expanded, decompress=True, bounded=True)
    lines = _json_lines(text, source)
    if lines is not None:
        return _from_records(lines, "JSON Lines", source)
    found = parse_json_text(text, str(expanded))
    if is_record(found):
        return _from_records([("line 1", found)], "JSON Lines", source)
    if found == []:  # as an empty object is, but said of a list
        raise DataFormatError(f"the file is an empty list: it holds no prediction record {RECORD}", source=source)
    if isinstance(found, list):
        return _from_records([(f"entry {number}", entry) for number, entry in enumerate(found, 1)],
                             "a JSON list of records", source)
    if not isinstance(found, dict):
        raise DataFormatError(f"expected an object {{question id: answer}}, a JSON list or JSON Lines of records {RECORD}, "
                              f"got a JSON {_JSON_TYPES.get(type(found), type(found).__name__)}", source=source)
    return PredictionFile(found, None, "official", source)


def is_record(value: Any) -> bool:
    """An object that is one record (an ``id`` and an answer key), not an official file: no question is named ``id``."""
    return isinstance(value, dict) and "id" in value and any(key in value for key in ANSWER_KEYS)


def _json_lines(text: str, source: str) -> list[tuple[str, Any]] | None:
    """``("line N", value)`` of each non-blank line where the text is JSON Lines: more than one non-blank line, the
    first of them a JSON object alone; else None (one JSON value, perhaps pretty-printed)."""
    lines = [(number, line) for number, line in enumerate(text.split("\n"), 1) if line.strip()]
    if len(lines) < 2:
        return None
    try:
        if not isinstance(json.loads(lines[0][1]), dict):
            return None
    except (ValueError, RecursionError):
        return None
    return list(_parsed_lines(lines, source))


def _parsed_lines(lines: list[tuple[int, str]], source: str) -> Iterator[tuple[str, Any]]:
    for number, line in lines:
        try:
            yield f"line {number}", loads(line, first_line=number)
        except NotPlainJsonError as err:
            raise DataFormatError(str(err) if err.located else f"{err} (line {number})", source=source) from None
        except json.JSONDecodeError as err:
            raise DataFormatError(f"not valid JSON: {err.msg} (line {number}, column {err.colno}){syntax_hint(line, err.pos)}",
                                  source=source) from None


def _from_records(records: list[tuple[str, Any]], layout: str, source: str) -> PredictionFile:
    """The answers (and no-answer probabilities) of ``(where, record)`` pairs; an id given twice is refused."""
    answers: dict[str, Any] = {}
    na_probs: dict[str, Any] = {}
    seen: dict[str, str] = {}
    for where, record in records:
        qid, key = _record_keys(where, record, source)
        if qid in seen:
            raise DataFormatError(f"the id {json_value(qid)} is given on {seen[qid]} and again on {where}: a question has one "
                                  "prediction", qid, source)
        seen[qid] = where
        answers[qid] = record[key]
        if NO_ANSWER_KEY in record:
            na_probs[qid] = record[NO_ANSWER_KEY]
    return PredictionFile(answers, na_probs or None, layout, source)


def _record_keys(where: str, record: Any, source: str) -> tuple[str, str]:
    """A record's id and the key of its answer; a record that is none, or gives its answer under two keys, raises."""
    if not isinstance(record, dict):
        kind = _JSON_TYPES.get(type(record), type(record).__name__)
        official = "; the official layout is an object {question id: answer}" if where.startswith("entry") else ""
        raise DataFormatError(f"{where} is a JSON {kind}, not a record {RECORD}{official}", source=source)
    if "decoding" in record and "answer" in record:  # predict's answers stream, compressed or renamed
        raise DataFormatError(f"{where} is a line of predict's answers stream (one line per question and decoding), not a "
                              "prediction record; give the official predictions file predict wrote beside it", source=source)
    if "id" not in record:
        raise DataFormatError(f"{where} has no 'id': a record is {RECORD} ('prediction' or 'answer' in place of "
                              "'prediction_text')", source=source)
    keys = [key for key in ANSWER_KEYS if key in record]
    if not keys:
        raise DataFormatError(f"{where} has no answer: a record gives it under one of 'prediction_text', 'prediction' "
                              "or 'answer' (an abstention is \"\")", source=source)
    if not isinstance(record["id"], str):
        raise DataFormatError(f"{where}: the 'id' must be a string, got {json_value(record['id'])}", source=source)
    if len(keys) > 1:
        raise DataFormatError(f"{where} gives an answer under both {keys[0]!r} and {keys[1]!r}, so which one is meant is "
                              "not known; keep one", record["id"], source)
    return record["id"], keys[0]
