"""``evaluate`` on what was predicted: ``--limit`` as ``predict`` has it, ``--only-predicted`` for the ids of the
predictions file; the subset is stated in the output. Scores computed by hand on the sample's 8 questions."""

import json

import pytest

from bio_mrc.cli import main
from bio_mrc.data.squad import load_squad

from .conftest import SAMPLE_V1


@pytest.fixture
def three_answers(tmp_path):
    """Right, right, wrong: the first two questions answered with their gold text, the third with nonsense."""
    examples = load_squad(SAMPLE_V1).examples
    answers = {ex.id: ex.answer_texts()[0][0] for ex in examples[:2]}
    answers[examples[2].id] = "zzz qqq"
    path = tmp_path / "preds.json"
    path.write_text(json.dumps(answers))
    return path, examples


def evaluate(capsys, predictions, *options):
    assert main(["evaluate", "--data", str(SAMPLE_V1), "--predictions", str(predictions), *options]) == 0
    captured = capsys.readouterr()
    return json.loads(captured.out), captured.err


def test_the_whole_file_scores_the_unanswered_as_wrong(capsys, three_answers):
    metrics, err = evaluate(capsys, three_answers[0])
    assert metrics["exact_match"] == pytest.approx(100 * 2 / 8) and "scored" not in metrics
    assert "5 of 8 questions have no prediction" in err


def test_only_predicted_scores_the_ids_of_the_predictions_file(capsys, three_answers):
    metrics, err = evaluate(capsys, three_answers[0], "--only-predicted")
    assert metrics["exact_match"] == pytest.approx(100 * 2 / 3) and metrics["f1"] == pytest.approx(100 * 2 / 3)
    assert metrics["scored"]["questions"] == 3 and "the 3 of 8 questions" in metrics["scored"]["subset"]
    assert "no prediction" not in err and "note: scoring the 3 of 8 questions" in err


def test_limit_scores_the_first_questions_as_predict_limit_answers_them(capsys, three_answers):
    metrics, err = evaluate(capsys, three_answers[0], "--limit", "2")
    assert metrics["exact_match"] == 100.0 and metrics["scored"] == {
        "questions": 2, "subset": f"the first 2 questions of {SAMPLE_V1} (--limit 2)"}
    assert "no prediction" not in err  # the third answer is of a question past the limit: ignored, with a warning
    metrics, _ = evaluate(capsys, three_answers[0], "--limit", "4", "--only-predicted")
    assert metrics["exact_match"] == pytest.approx(100 * 2 / 3) and metrics["scored"]["questions"] == 3


def test_only_predicted_with_no_common_id_is_one_line(capsys, tmp_path):
    (tmp_path / "other.json").write_text(json.dumps({"nope": "x"}))
    assert main(["evaluate", "--data", str(SAMPLE_V1), "--predictions", str(tmp_path / "other.json"), "--only-predicted"]) == 2
    error = capsys.readouterr().err.strip()
    assert "\n" not in error and "--only-predicted: no question of" in error and "has an answer in" in error
