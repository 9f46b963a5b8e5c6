"""A refusal names the arguments of the call that reached it: a Python caller reads the call's keyword
(``overwrite=True``, ``na_probs``, ``output_dir=...``), the command line the command's flag (``--overwrite``,
``--na-probs``, ``--output-dir ...``), from one message (:func:`bio_mrc.errors.argument`)."""

import ast
import json
import re
from pathlib import Path

import pytest

import bio_mrc
from bio_mrc.cli import main
from bio_mrc.cli.parser import build_parser
from bio_mrc.data.squad import load_squad
from bio_mrc.decoding.postprocess import DecodeConfig
from bio_mrc.errors import BioMrcError

from .conftest import SAMPLE_V1

FLAG = re.compile(r"(?<![\w-])--[a-z]")  # a command-line flag, not a number's minus nor a word's hyphen
WINDOWS = {"max_seq_length": 48, "doc_stride": 16, "max_query_length": 12}
WINDOW_FLAGS = ("--max-seq-length", "48", "--doc-stride", "16", "--max-query-length", "12")


def python_refusal(call, *args, **kwargs) -> str:
    """The refusal of ``call(*args, **kwargs)``, which names no flag of the command line."""
    with pytest.raises(BioMrcError) as caught:
        call(*args, **kwargs)
    said = str(caught.value)
    assert not FLAG.search(said), said
    return said


def cli_refusal(capsys, *argv: str) -> str:
    """The one error line of ``bio-mrc *argv``, its last on standard error (after any progress bar)."""
    assert main(list(argv)) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[-1].startswith("error: ") and sum(line.startswith("error: ") for line in lines) == 1, lines
    return lines[-1]


def named_arguments() -> set[str]:
    """Every name the package's messages give ``argument``."""
    names = set()
    for path in Path(bio_mrc.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "argument" and node.args:
                names |= {node.args[0].value} if isinstance(node.args[0], ast.Constant) else set()
    return names


def test_every_argument_a_message_names_is_a_flag_of_the_command_line():
    from bio_mrc.cli.options import argument_flags

    names = named_arguments()
    flags = argument_flags(build_parser(), None)
    assert {"overwrite", "na_probs", "output_dir", "resume", "calibrate", "push_to_hub"} <= names
    assert sorted(name for name in names if name not in flags and f"{name}=False" not in flags) == []
    assert flags["na_probs"] == "--na-probs" and flags["data_format"] == "--format" and flags["calibrate=False"] == "--no-calibration"


@pytest.fixture
def hf_records(tmp_path):
    ids = [example.id for example in load_squad(SAMPLE_V1).examples]
    records = tmp_path / "hf.json"
    records.write_text(json.dumps([{"id": qid, "prediction_text": "x", "no_answer_probability": 0.5} for qid in ids]))
    probabilities = tmp_path / "na.json"
    probabilities.write_text(json.dumps({qid: 0.5 for qid in ids}))
    return records, probabilities


def test_evaluate_predictions_names_its_keywords(hf_records, tmp_path):
    from bio_mrc.inference import evaluate_predictions

    records, probabilities = hf_records
    said = python_refusal(evaluate_predictions, SAMPLE_V1, records, na_probs=probabilities)
    assert said.startswith(f"na_probs: {records} gives a no_answer_probability") and f"drop na_probs='{probabilities}'," in said
    elsewhere = tmp_path / "other.json"
    elsewhere.write_text(json.dumps({"nope": "x"}))
    said = python_refusal(evaluate_predictions, SAMPLE_V1, elsewhere, only_predicted=True)
    assert said.startswith(f"only_predicted=True: no question of {SAMPLE_V1}")


def test_evaluate_names_its_flags(hf_records, tmp_path, capsys):
    records, probabilities = hf_records
    said = cli_refusal(capsys, "evaluate", "--data", str(SAMPLE_V1), "--predictions", str(records), "--na-probs", str(probabilities))
    assert said.startswith(f"error: --na-probs: {records} gives") and f"drop --na-probs {probabilities}," in said
    elsewhere = tmp_path / "other.json"
    elsewhere.write_text(json.dumps({"nope": "x"}))
    said = cli_refusal(capsys, "evaluate", "--data", str(SAMPLE_V1), "--predictions", str(elsewhere), "--only-predicted")
    assert said.startswith(f"error: --only-predicted: no question of {SAMPLE_V1}")


def test_tune_model_names_its_keywords(trained_dir, tmp_path):
    from bio_mrc.inference import tune_model

    said = python_refusal(tune_model, trained_dir, SAMPLE_V1)
    assert said.endswith("(at least 100); calibrate=False tunes the rest, min_calibration_questions=8 fits one anyway")
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "notes.txt").write_text("mine")
    said = python_refusal(tune_model, trained_dir, SAMPLE_V1, output_dir=taken, calibrate=False)
    assert said.startswith(f"output_dir='{taken}' is not empty; give a new folder")
    prior = DecodeConfig(require_answer=False, bio_length_prior=0.5)
    said = python_refusal(tune_model, trained_dir, SAMPLE_V1, decodings=["span"], options=prior, calibrate=False)
    assert said.startswith("bio_length_prior sets the length prior of the BIO head's spans, which the span decoding never reads")


def test_tune_names_its_flags(trained_dir, tmp_path, capsys):
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "notes.txt").write_text("mine")
    said = cli_refusal(capsys, "tune", "--model", str(trained_dir), "--data", str(SAMPLE_V1), "--output-dir", str(taken),
                       "--no-calibration")
    assert said.startswith(f"error: --output-dir {taken} is not empty; give a new folder")
    said = cli_refusal(capsys, "tune", "--model", str(trained_dir), "--data", str(SAMPLE_V1), "--decoding", "span",
                       "--bio-length-prior", "0.5", "--no-calibration")
    assert said.startswith("error: --bio-length-prior sets the length prior of the BIO head's spans, which the span decoding")


@pytest.fixture
def foreign_stream(tmp_path):
    """An answers stream whose one line no predict wrote, for a resume."""
    from bio_mrc.inference.streaming import answers_stream_path

    output = tmp_path / "p.json"
    answers_stream_path(output).write_text(json.dumps({"id": "q"}) + "\n")
    return output


def test_predict_to_files_names_its_keywords(trained_dir, foreign_stream):
    from bio_mrc.inference import StreamPlan, TrainedModel, predict_to_files

    said = python_refusal(predict_to_files, TrainedModel.load(trained_dir), load_squad(SAMPLE_V1).examples,
                          StreamPlan(("span",)), foreign_stream, resume=True)
    assert said.startswith("line 1 lacks the field") and "start again without resume=True (in " in said


def test_predict_names_its_flags(trained_dir, foreign_stream, capsys):
    said = cli_refusal(capsys, "predict", "--model", str(trained_dir), "--data", str(SAMPLE_V1), "--decoding", "span",
                       "--output", str(foreign_stream), "--resume")
    assert said.startswith("error: line 1 lacks the field") and "start again without --resume (in " in said


def test_export_qa_checkpoint_names_its_keyword(trained_dir, tmp_path):
    from bio_mrc.inference import export_qa_checkpoint

    (tmp_path / "notes.txt").write_text("mine")
    said = python_refusal(export_qa_checkpoint, trained_dir, tmp_path)
    assert said == f"the folder is not empty (notes.txt); choose another folder or pass overwrite=True (in {tmp_path})"


def test_export_names_its_flag(trained_dir, tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("mine")
    said = cli_refusal(capsys, "export", "--format", "transformers", "--model", str(trained_dir), "--output", str(tmp_path))
    assert said == f"error: the folder is not empty (notes.txt); choose another folder or pass --overwrite (in {tmp_path})"


def test_train_model_names_its_keywords(tiny_encoder_dir, tmp_path):
    from bio_mrc.training.config import TrainConfig
    from bio_mrc.training.train import train_model

    examples = load_squad(SAMPLE_V1).examples
    config = TrainConfig(encoder=str(tiny_encoder_dir), epochs=1, batch_size=4, **WINDOWS)
    said = python_refusal(train_model, examples[:2], config, tmp_path / "hub", network_args={"hub_model_id": "me/m"})
    assert said == "hub_model_id needs push_to_hub=True"
    diverging = TrainConfig(encoder=str(tiny_encoder_dir), epochs=1, batch_size=4, learning_rate=1e308,
                            head_learning_rate=1e308, **WINDOWS)
    said = python_refusal(train_model, examples, diverging, tmp_path / "diverged")
    assert said.endswith("train again with a lower learning rate (learning_rate=1e+308, head_learning_rate=1e+308)")


def test_train_names_its_flags(tiny_encoder_dir, tmp_path, capsys):
    said = cli_refusal(capsys, "train", "--train", str(SAMPLE_V1), "--output-dir", str(tmp_path / "hub"), "--encoder",
                       str(tiny_encoder_dir), "--hub-model-id", "me/m", *WINDOW_FLAGS)
    assert said == "error: --hub-model-id needs --push-to-hub"


def test_a_line_printed_with_an_argument_no_door_rendered_names_the_keyword():
    from bio_mrc.errors import argument
    from bio_mrc.io import printable_line

    line = printable_line(f"pass {argument('overwrite', True)} or {argument('output_dir', 'DIR')}")
    assert line == "pass overwrite=True or output_dir=DIR"
