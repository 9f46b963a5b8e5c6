"""What a command does, a Python user does with one public call, with the same result: ``evaluate`` is
``evaluate_predictions``, ``export`` and ``convert`` are ``export_onnx``, ``export_qa_checkpoint`` and
``convert_qa_checkpoint``, each exported by ``bio_mrc.inference``."""

import json

import pytest

from bio_mrc.cli import main
from bio_mrc.data.squad import load_squad
from bio_mrc.errors import BioMrcError

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


def cli_metrics(capsys, *argv):
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def test_evaluate_predictions_scores_as_evaluate_does(capsys, three_answers):
    from bio_mrc.inference import evaluate_predictions

    predictions, examples = three_answers
    result = evaluate_predictions(SAMPLE_V1, predictions)
    assert result.metrics == {"exact_match": pytest.approx(100 * 2 / 8), "f1": pytest.approx(100 * 2 / 8)}
    assert result.questions == 8 and result.missing == [ex.id for ex in examples[3:]]
    assert result.metrics == cli_metrics(capsys, "evaluate", "--data", str(SAMPLE_V1), "--predictions", str(predictions))


def test_evaluate_predictions_takes_evaluates_subsets(capsys, three_answers):
    from bio_mrc.inference import evaluate_predictions

    predictions, _ = three_answers
    result = evaluate_predictions(load_squad(SAMPLE_V1), predictions, limit=4, only_predicted=True, name=str(SAMPLE_V1))
    assert result.metrics["exact_match"] == pytest.approx(100 * 2 / 3) and result.metrics["scored"]["questions"] == 3
    assert result.metrics == cli_metrics(capsys, "evaluate", "--data", str(SAMPLE_V1), "--predictions", str(predictions),
                                         "--limit", "4", "--only-predicted")


def test_evaluate_predictions_refuses_what_evaluate_refuses(three_answers, tmp_path):
    from bio_mrc.inference import evaluate_predictions

    stream = tmp_path / "preds.answers.jsonl"
    stream.write_text("")
    with pytest.raises(BioMrcError, match="answers stream"):
        evaluate_predictions(SAMPLE_V1, stream)
    elsewhere = tmp_path / "other.json"
    elsewhere.write_text(json.dumps({"nope": "x"}))
    with pytest.raises(BioMrcError, match="--only-predicted: no question"):
        evaluate_predictions(SAMPLE_V1, elsewhere, only_predicted=True)


def test_export_qa_checkpoint_writes_what_export_writes(trained_dir, tmp_path, capsys):
    from bio_mrc.inference import export_qa_checkpoint

    printed = cli_metrics(capsys, "export", "--model", str(trained_dir), "--output", str(tmp_path / "cli"), "--format", "transformers")
    record = export_qa_checkpoint(trained_dir, tmp_path / "python")
    assert printed == {"output": str(tmp_path / "cli"), **record}
    assert record["left_out"] == ["bio"]
    assert sorted(p.name for p in (tmp_path / "cli").iterdir()) == sorted(p.name for p in (tmp_path / "python").iterdir())


def test_convert_and_onnx_export_are_public():
    import bio_mrc.inference as inference
    from bio_mrc.inference.conversion import convert_qa_checkpoint
    from bio_mrc.inference.onnx import export_onnx

    assert inference.convert_qa_checkpoint is convert_qa_checkpoint and inference.export_onnx is export_onnx
    assert {"convert_qa_checkpoint", "evaluate_predictions", "export_onnx", "export_qa_checkpoint"} <= set(inference.__all__)


def test_export_onnx_refuses_a_file_where_its_folder_goes(trained_dir, tmp_path):
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    from bio_mrc.inference import export_onnx

    taken = tmp_path / "exported"
    taken.write_text("mine")
    with pytest.raises(BioMrcError, match="a file has this name; give a folder"):
        export_onnx(trained_dir, taken)
    assert taken.read_text() == "mine"
