"""``--limit`` past the questions of the data: ``evaluate`` refuses it (tests/test_evaluate_subset.py), while
``predict``, ``tune`` and ``train`` use every question and say so in one line worded as evaluate's refusal, and
nothing records the questions as "the first N". The sample holds 8 questions."""

import json

import pytest

from bio_mrc.cli import main
from bio_mrc.errors import as_flags, as_keywords

from .conftest import SAMPLE_V1, WINDOW_ARGS, untrained_model_folder

NOTE = f"note: --limit 9: {SAMPLE_V1} has 8 questions; all 8 are used"


@pytest.fixture(scope="module")
def model(tiny_encoder_dir, tmp_path_factory):
    return untrained_model_folder(tiny_encoder_dir, tmp_path_factory.mktemp("limit") / "model", heads="span",
                                  max_seq_length=48, doc_stride=16, max_query_length=12)


def test_the_wording_is_one_for_every_door():
    from bio_mrc.arguments import limit_past_data

    said = limit_past_data(9, 8, "D")
    assert (as_keywords(said), as_flags(said, {"limit": "--limit"})) == ("limit=9: D has 8 questions", "--limit 9: D has 8 questions")
    assert limit_past_data(8, 8, "D") is None and limit_past_data(None, 8, "D") is None


def test_predict_answers_every_question_and_says_so(capsys, model, tmp_path):
    assert main(["predict", "--model", str(model), "--data", str(SAMPLE_V1), "--output", str(tmp_path / "p.json"),
                 "--limit", "9"]) == 0
    captured = capsys.readouterr()
    assert NOTE in captured.err.splitlines() and json.loads(captured.out)["questions"] == 8
    assert main(["predict", "--model", str(model), "--data", str(SAMPLE_V1), "--output", str(tmp_path / "q.json"),
                 "--limit", "8"]) == 0
    assert "note: --limit" not in capsys.readouterr().err  # within the data: nothing to say


def test_tune_says_so_and_records_no_first_nine(capsys, model, tmp_path):
    """The tuned settings said they were tuned on "SAMPLE (first 9 questions)" of a file of 8."""
    out = tmp_path / "tuned"
    assert main(["tune", "--model", str(model), "--data", str(SAMPLE_V1), "--limit", "9", "--no-calibration",
                 "--output-dir", str(out)]) == 0
    assert NOTE in capsys.readouterr().err.splitlines()
    tuned_on = json.loads((out / "config.json").read_text(encoding="utf-8"))["tuned_on"]
    assert (tuned_on["description"], tuned_on["questions"]) == (str(SAMPLE_V1), 8)


def test_train_says_so(capsys, tiny_encoder_dir, tmp_path):
    assert main(["train", "--train", str(SAMPLE_V1), "--output-dir", str(tmp_path / "m"), "--encoder", str(tiny_encoder_dir),
                 "--heads", "span", "--epochs", "1", "--limit", "9", *WINDOW_ARGS]) == 0
    err = capsys.readouterr().err.splitlines()
    assert NOTE in err and f"training on 8 questions of {SAMPLE_V1}" in err
