"""End to end on the tiny encoder: train -> predict (each decoding) -> official evaluation, via the CLI."""

import json
import shutil

import pytest

from bio_mrc.cli import main
from bio_mrc.data.squad import load_squad

from .conftest import SAMPLE_V1, WINDOW_ARGS, forget_training_questions


@pytest.mark.parametrize("decoding", ["span", "bio", "joint"])
def test_predict_and_evaluate_every_decoding(trained_dir, tmp_path, capsys, decoding):
    predictions = tmp_path / "preds.json"
    assert main(["predict", "--model", str(trained_dir), "--data", str(SAMPLE_V1), "--decoding", decoding,
                 "--output", str(predictions)]) == 0
    answers = json.loads(predictions.read_text())
    data = load_squad(SAMPLE_V1)
    assert set(answers) == {ex.id for ex in data.examples}

    # Every span in the n-best file maps back to the exact substring of its context.
    nbest = json.loads(predictions.with_suffix(".nbest.json").read_text())
    contexts = {ex.id: ex.context for ex in data.examples}
    for qid, entry in nbest.items():
        assert entry["spans"], qid
        for span in entry["spans"]:
            assert contexts[qid][span["start"]: span["end"]] == span["text"]
        assert entry["answer"] == entry["spans"][0]["text"] == answers[qid]

    capsys.readouterr()
    assert main(["evaluate", "--data", str(SAMPLE_V1), "--predictions", str(predictions)]) == 0
    scores = json.loads(capsys.readouterr().out)
    assert set(scores) == {"exact_match", "f1"}
    # Overfitted on these very questions: a pipeline that mislabels or mis-decodes cannot get here.
    assert scores["f1"] >= 75.0, scores


def test_predict_and_extract_refuse_a_decoding_the_model_cannot_do(span_model, tmp_path, capsys):
    out = span_model  # its run record forgets its training questions: tuned on them below, the decoding is what is refused
    capsys.readouterr()
    assert main(["predict", "--model", str(out), "--data", str(SAMPLE_V1), "--decoding", "bio", "--output", str(tmp_path / "p.json")]) == 2
    # before the weights load: no loading bar above the line
    assert capsys.readouterr().err == "error: decoding \"bio\" needs the bio head, which this model lacks; it offers ['span']\n"
    # tune too, where it ended in a ValueError traceback once every question was answered
    assert main(["tune", "--model", str(out), "--data", str(SAMPLE_V1), "--decoding", "bio", "--no-calibration",
                 "--output-dir", str(tmp_path / "tuned")]) == 2
    assert capsys.readouterr().err == "error: decoding \"bio\" needs the bio head, which this model lacks; it offers ['span']\n"
    assert not (tmp_path / "tuned").exists()
    # extract says the same, in one line, before any work
    assert main(["extract", "--model", str(out), "--question", "Who?", "--context", "Ada wrote it.", "--decoding", "bio"]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == "error: decoding \"bio\" needs the bio head, which this model lacks; it offers ['span']"
    # auto, the default, is the span decoding here
    assert main(["predict", "--model", str(out), "--data", str(SAMPLE_V1), "--output", str(tmp_path / "p.json")]) == 0
    assert (tmp_path / "p.json").exists()


def test_bad_data_file_is_a_clear_error(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"data": [{"title": "t", "paragraphs": [{"context": "abc", "qas": [{"id": "q1", "question": "?", '
                   '"answers": [{"text": "zzz", "answer_start": 0}]}]}]}]}')
    assert main(["evaluate", "--data", str(bad), "--predictions", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "q1" in err and "not in the context" in err


def test_windows_longer_than_the_encoder_are_refused(tiny_encoder_dir, tmp_path, capsys):
    code = main(["train", "--train", str(SAMPLE_V1), "--output-dir", str(tmp_path), "--encoder", str(tiny_encoder_dir),
                 "--max-seq-length", "256", "--doc-stride", "64"])
    assert code == 2 and "exceeds the 128 positions" in capsys.readouterr().err


def test_machine_readable_commands_print_only_json_on_stdout(trained_dir, tmp_path, capfd):
    """predict, evaluate, tune and extract: stdout parses as one JSON value (progress bars and notes go to stderr)."""
    model = tmp_path / "model"
    shutil.copytree(trained_dir, model)  # tune writes its settings into the model folder
    predictions = tmp_path / "preds.json"
    commands = {
        "predict": ["predict", "--model", str(model), "--data", str(SAMPLE_V1), "--decoding", "span", "bio", "--output", str(predictions)],
        "evaluate": ["evaluate", "--data", str(SAMPLE_V1), "--predictions", str(predictions.with_suffix(".span.json"))],
        "tune": ["tune", "--model", str(model), "--data", str(SAMPLE_V1), "--min-calibration-questions", "8"],
        "extract": ["extract", "--model", str(model), "--question", "Who wrote it?", "--context", "Ada wrote it in 1843."],
    }
    for name, argv in commands.items():
        capfd.readouterr()
        assert main(argv) == 0, name
        printed = capfd.readouterr().out
        assert isinstance(json.loads(printed), dict), f"{name} printed more than JSON: {printed[:200]!r}"
