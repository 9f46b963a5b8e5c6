"""The records a model folder keeps beside its weights, the run record (``bio_mrc_run.json``: how it was trained) and
the evaluation record (``bio_mrc_eval.json``: what comparisons measured on it), as JSON Schemas of the fields the
model card reads. A folder from elsewhere (a hub model) is hostile input: a field of another kind would end the
card's writing in a traceback after the work (``tune`` answers every question first), and text that the card shows as
it is (a date, a decoding's name) would put markup of its own into it. :func:`record_problem` says what is wrong,
and the folder check refuses the folder in one line before any work.
"""

from __future__ import annotations

from typing import Any

from .config_schema import schema_message, schema_validator
from .json_syntax import json_value
from .evaluation_record import EVAL_FILE
from .question_fingerprint import MAX_BASE64_CHARS, MAX_QUESTIONS, fingerprint_problem

RUN_FILE = "bio_mrc_run.json"

_TEXT = {"type": ["string", "null"]}
_COUNT = {"type": ["integer", "null"], "minimum": 0}
_NUMBER = {"type": ["number", "null"]}
# "\Z", not "$": jsonschema reads a pattern with Python's re.search, whose "$" matches before a final newline too.
_DATE = {"type": ["string", "null"], "pattern": r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\Z",
         "problem": "a date and time as bio_mrc writes it (2026-01-31 12:00:00)"}
_WORDS = {"type": ["string", "null"], "pattern": r"^[A-Za-z0-9 ,.()_+-]{0,100}\Z",
          "problem": "letters, digits, spaces and , . ( ) _ + - alone"}
_NAMES = {"propertyNames": {"pattern": r"^[A-Za-z0-9_.+-]{1,64}\Z"}}  # shown in the card as they are

_PRECISION_CHOICE = {
    "type": ["object", "string", "null"],  # a phase's choice: the card reads an object and passes over the rest
    "properties": {"precision": _WORDS, "attention": _WORDS, "how": _WORDS, "measured": _DATE,
                   "fp32_tokens_per_s": {"type": "number"}, "bf16_tokens_per_s": {"type": "number"},
                   "bf16_fp32_attention_tokens_per_s": {"type": "number"}},
    "dependentRequired": {"fp32_tokens_per_s": ["bf16_tokens_per_s"]},
}
# The training questions' hashes (bio_mrc.question_fingerprint): bounded before the base64 is read.
_FINGERPRINT = {
    "type": ["object", "null"], "required": ["scheme", "version", "questions", "hashes"],
    "properties": {"scheme": {"type": "string", "maxLength": 100}, "version": {"type": "integer", "minimum": 1},
                   "questions": {"type": "integer", "minimum": 0, "maximum": MAX_QUESTIONS},
                   "hashes": {"type": "string", "maxLength": MAX_BASE64_CHARS, "pattern": r"^[A-Za-z0-9+/]*={0,2}\Z",
                              "problem": f"base64 text of at most {MAX_BASE64_CHARS:,} characters"},
                   "partial": {"type": "boolean"}},  # true: an earlier stage's questions are not in it
}
# What a model learned from, stage by stage, and the held-out scores taken during training.
_STAGES = {"type": ["array", "null"], "items": {"type": "object", "properties": {"data": _TEXT, "questions": _COUNT, "continued_from": _TEXT}}}
_SCORED = {"type": ["object", "null"], "properties": {"data": _TEXT, "questions": _COUNT, "step": _COUNT, "best": {"type": "boolean"},
                                                     "scores": {"type": "object", **_NAMES, "additionalProperties": _NUMBER}}}
RUN_RECORD_SCHEMA = {
    "type": "object",
    "properties": {
        "train": {"type": ["object", "null"], **_NAMES, "properties": {"encoder": _TEXT, "init_from": _TEXT, "revision": _TEXT}},
        "encoder_path": _TEXT, "seconds": {"type": "number", "minimum": 0},
        "earlier_seconds": {"type": ["number", "null"], "minimum": 0}, "n_examples": _COUNT, "n_windows": _COUNT,
        "unanswerable_questions": _COUNT, "training_questions": _FINGERPRINT,
        "final_loss": _NUMBER, "resumed_from": _TEXT, "finished": _DATE,
        "training_data": _STAGES, "steps": _COUNT, "epochs_trained": {"type": ["number", "null"], "minimum": 0},
        "evaluated_during_training": _SCORED, "versions": {"type": ["object", "null"], **_NAMES, "additionalProperties": _WORDS},
        "precision_choice": {"type": ["object", "null"], "additionalProperties": _PRECISION_CHOICE},
        # a model bio-mrc convert made from transformers' extractive QA model
        "converted_from": {"type": ["object", "null"], "properties": {"model": _TEXT, "revision": _TEXT, "snapshot": _TEXT,
                                                                      "architecture": _WORDS}},
    },
}

_QUESTIONS = {"type": ["object", "null"], "properties": {"description": _TEXT, "questions": _COUNT, "question_hash": _TEXT,
                                                         "version": _WORDS}}
_SCORES = {"type": "object", "required": ["exact_match", "f1"],
           "properties": {"exact_match": {"type": "number"}, "f1": {"type": "number"}, "threshold": _NUMBER,
                          "bio_length_prior": _NUMBER, "questions": _COUNT}}
EVAL_RECORD_SCHEMA = {
    "type": "object",
    "properties": {
        "trained_on": _QUESTIONS,
        "evaluations": {"type": ["array", "null"], "items": {
            "type": "object", "required": ["evaluated_on", "results"],
            "properties": {"evaluated_on": {**_QUESTIONS, "type": "object"}, "tuned_on": _QUESTIONS, "date": _DATE,
                           "package_version": _WORDS,
                           # a decoding's registered name, any text: the card shows it as code
                           "results": {"type": "object", "propertyNames": {"minLength": 1}, "additionalProperties": _SCORES}}}},
    },
}
RECORD_SCHEMAS = {RUN_FILE: RUN_RECORD_SCHEMA, EVAL_FILE: EVAL_RECORD_SCHEMA}


def record_problem(name: str, record: Any) -> str | None:
    """What is wrong with the record ``name`` (a key of :data:`RECORD_SCHEMAS`) as the card reads it, in one line
    naming the field (``train.encoder: 5 is not of type "string", "null"``); None when nothing is."""
    errors = sorted(schema_validator(RECORD_SCHEMAS[name]).iter_errors(record), key=lambda error: [str(p) for p in error.absolute_path])
    if not errors:
        fingerprint = record.get("training_questions") if name == RUN_FILE else None
        problem = fingerprint_problem(fingerprint) if fingerprint else None
        return f"training_questions.{problem}" if problem else None
    error = errors[0]
    where = ".".join(str(part) for part in error.absolute_path) or "top level"
    problem = f"{json_value(error.instance)} is not {error.schema['problem']}" if "problem" in error.schema else schema_message(error)
    return f"{where}: {problem if len(problem) <= 200 else problem[:200] + '…'}"


__all__ = ["EVAL_FILE", "EVAL_RECORD_SCHEMA", "RECORD_SCHEMAS", "RUN_FILE", "RUN_RECORD_SCHEMA", "record_problem"]
