"""What a command does, a Python user does with one public call, with the same result: ``evaluate`` is
``evaluate_predictions``, ``predict`` is ``predict_to_files``, ``export`` and ``convert`` are ``export_onnx``,
``export_qa_checkpoint`` and ``convert_qa_checkpoint``, ``tune`` is ``tune_model``, each exported by
``bio_mrc.inference``; ``train`` is ``bio_mrc.training.train.train_model``."""

import json
import shutil

import pytest

from bio_mrc.cli import main
from bio_mrc.data.squad import load_squad
from bio_mrc.decoding.postprocess import DecodeConfig
from bio_mrc.errors import BioMrcError

from .conftest import SAMPLE_V1


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
    printed = cli_metrics(capsys, "evaluate", "--data", str(SAMPLE_V1), "--predictions", str(predictions), "--limit", "4",
                          "--only-predicted")
    said = result.metrics["scored"]["subset"]  # the subset with the arguments that chose it, in each door's form
    assert said.endswith(" answers (limit=4, only_predicted=True)")
    flagged = said.replace("(limit=4, only_predicted=True)", "(--limit 4 --only-predicted)")
    assert printed == {**result.metrics, "scored": {"questions": 3, "subset": flagged}}


def test_evaluate_predictions_refuses_what_evaluate_refuses(three_answers, tmp_path):
    from bio_mrc.inference import evaluate_predictions

    stream = tmp_path / "preds.answers.jsonl"
    stream.write_text("")
    with pytest.raises(BioMrcError, match="answers stream"):
        evaluate_predictions(SAMPLE_V1, stream)
    elsewhere = tmp_path / "other.json"
    elsewhere.write_text(json.dumps({"nope": "x"}))
    with pytest.raises(BioMrcError, match="only_predicted=True: no question"):
        evaluate_predictions(SAMPLE_V1, elsewhere, only_predicted=True)


def test_export_qa_checkpoint_writes_what_export_writes(trained_dir, tmp_path, capsys):
    from bio_mrc.inference import export_qa_checkpoint

    printed = cli_metrics(capsys, "export", "--model", str(trained_dir), "--output", str(tmp_path / "cli"), "--format", "transformers")
    record = export_qa_checkpoint(trained_dir, tmp_path / "python")
    assert printed == {"output": str(tmp_path / "cli"), **record.to_dict()}
    assert record.left_out == ("bio",)
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


def model_files(folder):
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir()) if path.is_file()}


def cli_tune(capsys, *argv):
    """``bio-mrc tune``'s JSON report and its lines on standard error (the progress bars' aside)."""
    capsys.readouterr()
    assert main(["tune", *argv]) == 0
    printed = capsys.readouterr()
    return json.loads(printed.out), [line for line in printed.err.split("\n") if line and "\r" not in line]


def test_tune_model_saves_and_says_what_tune_does(trained_dir, tmp_path, capsys):
    from bio_mrc.cli.console import json_numbers
    from bio_mrc.inference import tune_model

    before = model_files(trained_dir)
    report, err = cli_tune(capsys, "--model", str(trained_dir), "--data", str(SAMPLE_V1), "--output-dir",
                           str(tmp_path / "cli"), "--min-calibration-questions", "8")
    result = tune_model(trained_dir, SAMPLE_V1, output_dir=tmp_path / "python", min_calibration_questions=8)
    assert model_files(trained_dir) == before and not capsys.readouterr().err  # the model untouched, the call quiet
    assert result.folder == tmp_path / "python" and result.config.tuned_on["questions"] == 8
    cli_config, python_config = (json.loads((tmp_path / out / "config.json").read_text()) for out in ("cli", "python"))
    assert python_config == cli_config and python_config["bio_length_prior"] == result.config.bio_length_prior
    assert json.loads(json.dumps(json_numbers(result.report))) == report
    assert result.lines[-1] == f"saved in {tmp_path / 'python' / 'config.json'} (a tuned copy of {trained_dir})"
    assert result.lines[:-1] == err[-len(result.lines):-1] and "fitted on 8 answerable questions" in result.lines[0]
    assert err[-1] == f"saved in {tmp_path / 'cli' / 'config.json'} (a tuned copy of {trained_dir})"


def test_tune_model_tunes_in_place_as_tune_does(trained_dir, tmp_path, capsys):
    import shutil

    from bio_mrc.inference import tune_model

    for copy in ("cli", "python"):
        shutil.copytree(trained_dir, tmp_path / copy)
    report, err = cli_tune(capsys, "--model", str(tmp_path / "cli"), "--data", str(SAMPLE_V1), "--limit", "6",
                           "--decoding", "span", "--no-calibration", "--metric", "squad")
    result = tune_model(str(tmp_path / "python"), load_squad(SAMPLE_V1), limit=6, decodings=["span"], calibrate=False,
                        task="squad", name=str(SAMPLE_V1))
    cli_config, python_config = (json.loads((tmp_path / copy / "config.json").read_text()) for copy in ("cli", "python"))
    assert python_config == cli_config and cli_config["tuned_on"]["description"] == f"{SAMPLE_V1} (first 6 questions)"
    assert result.report == report and result.lines[-1] == f"saved in {tmp_path / 'python' / 'config.json'} (in place)"
    assert result.lines[:-1] == err[-len(result.lines):-1]
    assert result.lines[-2] == "calibrators: none fitted; kept as saved (none)"


def test_tune_model_refuses_what_tune_refuses_before_the_model_loads(trained_dir, tmp_path, monkeypatch):
    import dataclasses

    from bio_mrc.inference import TrainedModel, tune_model

    monkeypatch.setattr(TrainedModel, "load", classmethod(lambda cls, *args, **kwargs: pytest.fail("the model loaded")))
    before = model_files(trained_dir)
    with pytest.raises(BioMrcError, match=r"8 questions are too few to fit a calibrator \(at least 100\)"):
        tune_model(trained_dir, SAMPLE_V1)
    unanswered = load_squad(SAMPLE_V1)
    unanswered.examples = [dataclasses.replace(example, answers=()) for example in unanswered.examples]
    with pytest.raises(BioMrcError, match="none of its 8 questions has an answer"):
        tune_model(trained_dir, unanswered, calibrate=False)
    with pytest.raises(BioMrcError, match="min_span_probability sets the span-count rule"):
        tune_model(trained_dir, SAMPLE_V1, options=DecodeConfig(require_answer=False, min_span_probability=0.5))
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "mine.txt").write_text("mine")
    with pytest.raises(BioMrcError, match="is not empty; give a new folder"):
        tune_model(trained_dir, SAMPLE_V1, output_dir=taken)
    assert model_files(trained_dir) == before and model_files(taken) == {"mine.txt": b"mine"}


def test_train_model_fits_the_default_windows_to_a_smaller_encoder_as_train_does(tiny_encoder_dir, tmp_path, capsys):
    """The tiny encoder holds 128 positions, fewer than the default window of 384: ``train`` fitted its windows, while
    ``train_model`` refused the same defaults; both now train with 128, stride (128 - 32 - 3) // 2 = 46, question 32."""
    from bio_mrc.training.train import TrainConfig, WindowsFittedWarning, load_run_record, train_model

    printed = cli_metrics(capsys, "train", "--train", str(SAMPLE_V1), "--output-dir", str(tmp_path / "cli"),
                          "--encoder", str(tiny_encoder_dir), "--epochs", "1", "--limit", "2")
    with pytest.warns(WindowsFittedWarning, match="max_seq_length=128, doc_stride=46, max_query_length=32"):
        result = train_model(load_squad(SAMPLE_V1).examples[:2], TrainConfig(encoder=str(tiny_encoder_dir), epochs=1),
                             tmp_path / "python")
    windows = {"max_seq_length": 128, "doc_stride": 46, "max_query_length": 32}
    for folder in ("cli", "python"):
        assert {name: load_run_record(tmp_path / folder)["train"][name] for name in windows} == windows
    assert printed["questions"] == result.n_examples == 2 and printed["windows"] == result.n_windows


def _stopped_while_saving(trained_dir, folder):
    """A copy of a finished model whose run was stopped after its run record: no card yet, its checkpoints left."""
    shutil.copytree(trained_dir, folder)
    (folder / "README.md").unlink()
    step = json.loads((folder / "training_log.json").read_text(encoding="utf-8"))[-1]["step"]
    (folder / "checkpoints" / f"checkpoint-{step}").mkdir(parents=True)
    shutil.copy(folder / "model.safetensors", folder / "checkpoints" / f"checkpoint-{step}")  # the last checkpoint's weights are the model's
    (folder / "checkpoints" / "bio_mrc_train_config.json").write_text("{}")
    return folder


def test_train_model_completes_a_run_stopped_while_saving_and_refuses_a_finished_model_as_train_does(trained_dir, tmp_path, capsys):
    from bio_mrc.training.train import FinishedModelError, TrainConfig, train_model

    printed = cli_metrics(capsys, "train", "--train", str(SAMPLE_V1), "--resume",
                          "--output-dir", str(_stopped_while_saving(trained_dir, tmp_path / "cli")))
    folder = _stopped_while_saving(trained_dir, tmp_path / "python")
    weights = (folder / "model.safetensors").read_bytes()
    examples, config = load_squad(SAMPLE_V1).examples, TrainConfig.from_record(json.loads((folder / "bio_mrc_run.json").read_text())["train"])
    result = train_model(examples, config, folder, resume=True)
    assert {**printed, "model_dir": str(folder)} == {"model_dir": str(result.model_dir), "seconds": round(result.seconds, 1),
                                                     "questions": 8, "windows": result.n_windows, "final_loss": result.final_loss}
    assert (folder / "README.md").is_file() and not (folder / "checkpoints").exists()
    assert (folder / "model.safetensors").read_bytes() == weights  # nothing trained again
    with pytest.raises(FinishedModelError, match=f"^{folder} holds a finished model; choose another output folder or pass overwrite=True$"):
        train_model(examples, config, folder)
    assert (folder / "model.safetensors").read_bytes() == weights


@pytest.mark.parametrize("written, got", [("1e999", "Infinity"), ("NaN", "NaN")])
def test_resuming_a_run_stopped_while_saving_refuses_a_non_finite_run_record(trained_dir, tmp_path, capsys, written, got):
    """Resume read the record without loading's check: 1e999 was read as infinity (the card written, the checkpoints
    removed, the loss reported as inf), and NaN was refused without naming its field."""
    from bio_mrc.training.train import TrainConfig, train_model

    line = f"bio_mrc_run.json: final_loss must be a finite number, got {got}"
    folders = [_stopped_while_saving(trained_dir, tmp_path / name) for name in ("cli", "python")]
    for folder in folders:
        record = json.loads((folder / "bio_mrc_run.json").read_text())
        text = json.dumps({**record, "final_loss": "FINAL_LOSS"}).replace('"FINAL_LOSS"', written)
        (folder / "bio_mrc_run.json").write_text(text)
    assert main(["train", "--train", str(SAMPLE_V1), "--resume", "--output-dir", str(folders[0])]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {line}") and err.count("\n") == 1
    with pytest.raises(BioMrcError, match=f"^{line}"):
        train_model(load_squad(SAMPLE_V1).examples, TrainConfig.from_record(record["train"]), folders[1], resume=True)
    for folder in folders:  # nothing done: no card, the checkpoints kept
        assert not (folder / "README.md").exists() and (folder / "checkpoints").is_dir()


def test_train_model_warns_of_held_out_questions_that_are_training_ones_as_train_does(tiny_encoder_dir, tmp_path, capsys, monkeypatch):
    from bio_mrc.inference import TrainingEvaluator
    from bio_mrc.training import train
    from bio_mrc.training.train import SharedHeldOutWarning, TrainConfig

    examples = load_squad(SAMPLE_V1).examples
    both = ["--encoder", str(tiny_encoder_dir), "--epochs", "1", "--max-seq-length", "48", "--doc-stride", "16", "--max-query-length", "12"]
    assert main(["train", "--train", str(SAMPLE_V1), "--eval", str(SAMPLE_V1), "--output-dir", str(tmp_path / "cli"),
                 "--training-args", '{"eval_strategy": "epoch"}', *both]) == 0
    said = [line for line in capsys.readouterr().err.splitlines() if "share" in line]
    assert said == ["warning: the --eval questions share 8 questions and 3 contexts (under any id or spacing) with the training "
                    "questions: their scores during training overstate the model (hold out whole articles)"]  # once

    def no_model(*_args, **_kwargs):  # the warning comes before the model is built
        raise SystemExit(0)

    monkeypatch.setattr(train, "fresh_model_and_tokenizer", no_model)
    config = TrainConfig(encoder=str(tiny_encoder_dir), max_seq_length=48, doc_stride=16, max_query_length=12,
                         training_args={"eval_strategy": "epoch"})
    with pytest.warns(SharedHeldOutWarning) as warned, pytest.raises(SystemExit):
        train.train_model(examples, config, tmp_path / "python", evaluator=TrainingEvaluator(examples))
    assert [str(w.message) for w in warned if w.category is SharedHeldOutWarning] == [
        said[0].removeprefix("warning: ").replace("the --eval questions", "the evaluator's questions")]


def _v2_data(tmp_path):
    """The sample as SQuAD 2.0, its first question without an answer."""
    raw = json.loads(SAMPLE_V1.read_text(encoding="utf-8"))
    raw["version"] = "v2.0"
    raw["data"][0]["paragraphs"][0]["qas"][0].update(answers=[], is_impossible=True)
    data = tmp_path / "v2.json"
    data.write_text(json.dumps(raw), encoding="utf-8")
    return data


def test_predict_to_files_writes_what_predict_writes(trained_dir, tmp_path, capsys):
    """``auto`` went into the files as a decoding's name ("decoding": "auto"); it is the model's preferred one, as predict's."""
    from bio_mrc.inference import StreamPlan, TrainedModel, predict_to_files

    assert main(["predict", "--model", str(trained_dir), "--data", str(SAMPLE_V1), "--output", str(tmp_path / "cli" / "p.json"),
                 "--precision", "fp32", "--device", "cpu"]) == 0
    trained = TrainedModel.load(trained_dir, precision="fp32", device="cpu")
    files = predict_to_files(trained, load_squad(SAMPLE_V1).examples, StreamPlan(("auto",)), tmp_path / "python" / "p.json")
    assert list(files.files) == ["joint"]
    cli, python = ({path.name: path.read_bytes() for path in (tmp_path / name).iterdir()} for name in ("cli", "python"))
    assert sorted(cli) == sorted(python) == ["p.answers.files.json", "p.answers.jsonl", "p.answers.run.json", "p.json",
                                             "p.na_probs.json", "p.nbest.json"]
    assert {name: data for name, data in cli.items() if name != "p.answers.run.json"} == {
        name: data for name, data in python.items() if name != "p.answers.run.json"}
    recorded = [json.loads(record[name]) for record in (cli, python) for name in ["p.answers.run.json"]]
    assert recorded[0]["decodings"] == recorded[1]["decodings"] == ["joint"]


def test_predict_to_files_warns_of_untuned_abstention_as_predict_does(trained_dir, tmp_path, capsys):
    """Questions without an answer and no tuned no-answer threshold: predict warned, predict_to_files said nothing."""
    from bio_mrc.inference import StreamPlan, TrainedModel, predict_to_files
    from bio_mrc.inference.abstention import NeverAbstainsWarning

    data = _v2_data(tmp_path)
    assert main(["predict", "--model", str(trained_dir), "--data", str(data), "--output", str(tmp_path / "cli.json"),
                 "--decoding", "span", "--limit", "3", "--precision", "fp32"]) == 0
    (printed,) = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning:")]
    trained = TrainedModel.load(trained_dir, precision="fp32")
    examples = load_squad(data).examples
    with pytest.warns(NeverAbstainsWarning) as caught:
        predict_to_files(trained, examples, StreamPlan(("span",)), tmp_path / "python.json", name=str(data), limit=3)
    assert [f"warning: {warning.message}" for warning in caught] == [printed]
    assert printed.startswith(f"warning: 1 of the first 3 questions of {data} has no answer, and the model has no tuned ")
    with pytest.warns(NeverAbstainsWarning, match=r"^1 of the 8 questions has no answer, and the model has no tuned no-answer "
                      r"threshold for span, so it answers every question \(its no-answer score is untrained"):
        predict_to_files(trained, examples, StreamPlan(("span",)), tmp_path / "all.json")
    assert len(json.loads((tmp_path / "python.json").read_text())) == 3 and len(json.loads((tmp_path / "all.json").read_text())) == 8


def test_predict_to_files_refuses_a_model_that_may_not_abstain_as_predict_does(trained_dir, tmp_path, capsys):
    """A model trained on SQuAD 1.1 holding a no-answer threshold no tune fitted: predict refused it before any work,
    predict_to_files only at its first chunk, its output folder, answers stream and record written by then."""
    import shutil

    from bio_mrc.errors import ModelFormatError
    from bio_mrc.inference import StreamPlan, TrainedModel, predict_to_files

    model = tmp_path / "model"
    shutil.copytree(trained_dir, model)
    config = json.loads((model / "config.json").read_text())
    config["no_answer_thresholds"] = {"span": 0.0}
    (model / "config.json").write_text(json.dumps(config))
    assert main(["predict", "--model", str(model), "--data", str(SAMPLE_V1), "--output", str(tmp_path / "out" / "cli.json"),
                 "--precision", "fp32"]) == 2
    printed = capsys.readouterr().err.strip().splitlines()[-1]
    with pytest.raises(ModelFormatError) as refused:
        predict_to_files(TrainedModel.load(model, precision="fp32"), load_squad(SAMPLE_V1).examples, StreamPlan(("span",)),
                         tmp_path / "out" / "python.json")
    assert printed == f"error: {refused.value}" and "no-answer threshold it holds without a tuning" in printed
    assert not (tmp_path / "out").exists()
