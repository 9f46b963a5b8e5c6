"""A value that a pattern checks is refused with a final newline: Python's ``$`` (so jsonschema's, and ``re.match``'s
with ``^...$``) matches before one, which passed ``"x\\n"`` wherever ``"x"`` passes."""

from __future__ import annotations

import pytest

from bio_mrc.data.sources import is_hub_id, split_spec
from bio_mrc.model_records import EVAL_FILE, RUN_FILE, record_problem

FINGERPRINT = {"scheme": "blake2b-64", "version": 1, "questions": 0, "hashes": ""}


@pytest.mark.parametrize("name, record, problem", [
    (RUN_FILE, lambda v: {"finished": v}, 'finished: "2026-01-31 12:00:00\\n" is not a date and time as bio_mrc writes it'),
    (EVAL_FILE, lambda v: {"evaluations": [{"evaluated_on": {}, "results": {}, "date": v}]}, "evaluations.0.date: "),
    (RUN_FILE, lambda v: {"precision_choice": {"train": {"measured": v}}}, "precision_choice.train.measured: "),
])
def test_a_record_date_ending_in_a_newline_is_refused(name, record, problem):
    assert record_problem(name, record("2026-01-31 12:00:00")) is None
    assert record_problem(name, record("2026-01-31 12:00:00\n")).startswith(problem)


@pytest.mark.parametrize("name, record, field", [
    (RUN_FILE, lambda v: {"converted_from": {"architecture": v}}, "converted_from.architecture"),
    (RUN_FILE, lambda v: {"precision_choice": {"train": {"precision": v}}}, "precision_choice.train.precision"),
    (EVAL_FILE, lambda v: {"evaluations": [{"evaluated_on": {}, "results": {}, "package_version": v}]},
     "evaluations.0.package_version"),
    (EVAL_FILE, lambda v: {"trained_on": {"version": v}}, "trained_on.version"),
])
def test_record_words_ending_in_a_newline_are_refused(name, record, field):
    assert record_problem(name, record("BertForQuestionAnswering")) is None
    assert record_problem(name, record("BertForQuestionAnswering\n")) == (
        f'{field}: "BertForQuestionAnswering\\n" is not letters, digits, spaces and , . ( ) _ + - alone')


def test_a_training_option_named_with_a_newline_is_refused():
    assert record_problem(RUN_FILE, {"train": {"heads": "span"}}) is None
    assert record_problem(RUN_FILE, {"train": {"heads\n": "span"}}).startswith('train: "heads\\n" does not match')


def test_fingerprint_hashes_ending_in_a_newline_are_refused():
    assert record_problem(RUN_FILE, {"training_questions": FINGERPRINT}) is None
    assert record_problem(RUN_FILE, {"training_questions": FINGERPRINT | {"hashes": "\n"}}) == (
        'training_questions.hashes: "\\n" is not base64 text of at most 10,666,668 characters')


def test_a_hub_id_or_split_ending_in_a_newline_is_neither():
    assert is_hub_id("rajpurkar/squad") and is_hub_id("squad")
    assert not is_hub_id("rajpurkar/squad\n") and not is_hub_id("squad\n")
    assert split_spec("rajpurkar/squad:train[:100]") == ("rajpurkar/squad", "train[:100]")
    # the split was read without its newline ("train"), and the hub id asked for it
    assert split_spec("rajpurkar/squad:train\n") == ("rajpurkar/squad:train\n", None)
