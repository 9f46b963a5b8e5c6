"""What training leaves besides the weights: the log history, TensorBoard's event files, scores on held-out
questions during training; and what it prints: nothing from the library, only JSON on the command's stdout."""

from __future__ import annotations

import json

import pytest

from bio_mrc.cli import main
from bio_mrc.decoding.postprocess import available_decodings
from bio_mrc.errors import ConfigError
from bio_mrc.inference.during_training import TrainingEvaluator
from bio_mrc.model import BioMrcForQuestionAnswering
from bio_mrc.training.config import TrainConfig
from bio_mrc.training.run_start import SharedHeldOutWarning
from bio_mrc.training.run_records import load_training_log
from bio_mrc.training.saving import LOG_DIR
from bio_mrc.training.train import train_model

from .conftest import SAMPLE_V1, write_browser_eval_file

WINDOWS = {"max_seq_length": 48, "doc_stride": 16, "max_query_length": 12}


def _config(tiny_encoder_dir, **training_args) -> TrainConfig:
    return TrainConfig(encoder=str(tiny_encoder_dir), batch_size=4, seed=1, training_args=training_args, **WINDOWS)


def test_the_model_folder_keeps_the_loss_and_learning_rate_of_every_logged_step(tiny_encoder_dir, sample_v1, tmp_path):
    result = train_model(sample_v1.examples, _config(tiny_encoder_dir, logging_steps=1, max_steps=4), tmp_path / "model")
    history = load_training_log(result.model_dir)
    logged = [entry for entry in history if "loss" in entry]
    assert [entry["step"] for entry in logged] == [1, 2, 3, 4]
    assert all(entry["loss"] > 0 and entry["learning_rate"] >= 0 for entry in logged)
    assert logged[-1]["learning_rate"] < max(entry["learning_rate"] for entry in logged)  # linear decay after warmup
    assert history[-1]["train_loss"] == pytest.approx(result.final_loss)  # the run's summary closes the history


@pytest.mark.slow
def test_tensorboard_writes_its_event_files_into_the_model_folder(tiny_encoder_dir, sample_v1, tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    out = tmp_path / "model"
    train_model(sample_v1.examples, _config(tiny_encoder_dir, report_to=["tensorboard"], logging_steps=1, max_steps=3), out)
    events = sorted((out / LOG_DIR).rglob("events.out.tfevents.*"))
    assert events, f"no event files under {out / LOG_DIR}"
    accumulator = EventAccumulator(str(events[0].parent))
    accumulator.Reload()
    assert [event.step for event in accumulator.Scalars("train/loss")] == [1, 2, 3]
    assert not (out / "checkpoints").exists()


@pytest.mark.parametrize("option, expected", [
    (["--report-to", "tensorboard"], 'report_to "tensorboard" cannot run here, its package is not installed'),
    (["--training-args", '{"report_to": "tensorboard"}'], "pip install 'bio_mrc[tensorboard]'"),
    (["--report-to", "no-such-tracker"], 'report_to "no-such-tracker" is no tracker transformers knows'),
])
def test_a_tracker_that_cannot_run_is_one_line_before_any_work(tiny_encoder_dir, tmp_path, capsys, monkeypatch, option, expected):
    from transformers.integrations import integration_utils

    monkeypatch.setattr(integration_utils, "is_tensorboard_available", lambda: False)  # as without the tensorboard extra
    out = tmp_path / "model"
    code = main(["train", "--train", str(SAMPLE_V1), "--output-dir", str(out), "--encoder", str(tiny_encoder_dir),
                 "--max-seq-length", "48", "--doc-stride", "16", "--max-query-length", "12", *option])
    err = capsys.readouterr().err
    assert code == 2 and expected in err and "Traceback" not in err
    assert "training on" not in err  # before the training questions are read
    assert not out.exists()  # refused before the output folder is made


@pytest.mark.slow
def test_evaluation_during_training_scores_every_decoding_as_the_saved_model_scores(tiny_encoder_dir, sample_v1, tmp_path):
    held_out = TrainingEvaluator(sample_v1.examples[:6], sample_v1.version)
    config = _config(tiny_encoder_dir, eval_strategy="steps", eval_steps=2, max_steps=4)
    with pytest.warns(SharedHeldOutWarning, match="share 6 questions and 3 contexts"):  # scored as the saved model, not held out
        result = train_model(sample_v1.examples, config, tmp_path / "model", evaluator=held_out)
    evaluations = [entry for entry in load_training_log(result.model_dir) if "eval_span_f1" in entry]
    assert [entry["step"] for entry in evaluations] == [2, 4]
    decodings = available_decodings(config.heads)
    assert decodings == ["span", "bio", "joint"]
    assert all(0 <= entry[f"eval_{d}_{score}"] <= 100 for entry in evaluations for d in decodings for score in ("f1", "exact"))
    # the last evaluation saw the final weights: the saved model scores the same
    saved = BioMrcForQuestionAnswering.from_pretrained(str(result.model_dir))
    from transformers import AutoTokenizer
    again = TrainingEvaluator(sample_v1.examples[:6], sample_v1.version)(saved, AutoTokenizer.from_pretrained(str(result.model_dir)))
    logged = {k: v for k, v in evaluations[-1].items() if k.startswith("eval_") and k != "eval_runtime"}
    assert {f"eval_{name}": value for name, value in again.items()} == logged


def test_evaluation_during_training_without_questions_is_refused_before_any_work(tiny_encoder_dir, sample_v1, tmp_path):
    with pytest.raises(ConfigError, match='eval_strategy "steps" needs questions to evaluate on'):
        train_model(sample_v1.examples, _config(tiny_encoder_dir, eval_strategy="steps"), tmp_path / "model")
    assert not (tmp_path / "model").exists()


@pytest.mark.slow
def test_a_library_call_prints_nothing(tiny_encoder_dir, sample_v1, tmp_path, capfd):
    train_model(sample_v1.examples, _config(tiny_encoder_dir, logging_steps=1, max_steps=3), tmp_path / "model", progress=False)
    printed = capfd.readouterr()
    assert printed.out == "" and printed.err == ""


@pytest.mark.slow
def test_the_train_command_prints_only_json_on_stdout(tiny_encoder_dir, tmp_path, capfd):
    code = main(["train", "--train", str(SAMPLE_V1), "--output-dir", str(tmp_path / "model"), "--encoder", str(tiny_encoder_dir),
                 "--max-seq-length", "48", "--doc-stride", "16", "--max-query-length", "12", "--batch-size", "4",
                 "--training-args", '{"logging_steps": 1, "max_steps": 3}'])
    printed = capfd.readouterr()
    assert code == 0
    assert json.loads(printed.out)["model_dir"] == str(tmp_path / "model")
    assert "'loss'" in printed.err  # Trainer's log lines went to stderr


def _model_folder(tmp_path, name: str, losses: list[float]) -> str:
    folder = tmp_path / name
    folder.mkdir()
    history = [{"loss": loss, "learning_rate": 1e-4, "step": 25 * (i + 1), "epoch": i / 10} for i, loss in enumerate(losses)]
    (folder / "training_log.json").write_text(json.dumps([*history, {"train_loss": 1.0, "step": 25 * len(losses)}]))
    return str(folder)


def test_the_report_reads_every_model_folders_loss_curve(tmp_path):
    from bio_mrc.harness.results import Cell
    from bio_mrc.harness.training_loss import loss_curves

    a42, a43, b42 = (_model_folder(tmp_path, name, [3.0, 2.0, 1.5]) for name in ("a42", "a43", "b42"))
    cell = lambda run, seed, decoding, folder, **more: Cell(run, decoding, seed, folder, [], 0.0, **more)  # noqa: E731
    cells = [cell("a", 42, d, a42) for d in ("span", "bio")] + [
        cell("a", 43, "span", a43), cell("b", 42, "span", b42), cell("c", 42, "span", str(tmp_path / "gone"))]
    curves = loss_curves(cells)
    assert list(curves) == ["a", "b"]  # c's folder keeps no history
    assert [line["seed"] for line in curves["a"]] == [42, 43]  # one line per model, not per decoding
    assert curves["b"][0]["steps"] == [25, 50, 75] and curves["b"][0]["loss"] == [3.0, 2.0, 1.5]
    assert loss_curves(cells[-1:]) is None
    folds = loss_curves([cell("cv", 42, "span", a42, fold_model_dirs=[a42, a43])])  # cross-validation: a model per fold
    assert [(line["seed"], line["fold"]) for line in folds["cv"]] == [(42, 0), (42, 1)]


def test_many_runs_are_laid_out_as_a_grid_of_panels(tmp_path):
    from PIL import Image

    from bio_mrc.harness.plots import plot_training_loss

    line = {"seed": 42, "steps": [25, 50, 75], "loss": [3.0, 2.0, 1.5]}
    with Image.open(plot_training_loss({f"run-{i}": [line] for i in range(3)}, tmp_path / "three.png")) as image:
        three = image.size
    with Image.open(plot_training_loss({f"run-{i}": [line] for i in range(7)}, tmp_path / "seven.png")) as image:
        seven = image.size
    assert abs(seven[0] - three[0]) < 0.1 * three[0]  # three panels across either way: the grid grows downwards
    assert seven[1] > 2.5 * three[1]


def test_questions_to_evaluate_on_without_evaluations_are_refused(tiny_encoder_dir, sample_v1, tmp_path):
    with pytest.raises(ConfigError, match="need evaluations: add .*eval_strategy"):
        train_model(sample_v1.examples, _config(tiny_encoder_dir), tmp_path / "model", evaluator=TrainingEvaluator(sample_v1.examples))
    assert not (tmp_path / "model").exists()


def test_a_comparison_run_evaluates_on_the_tune_questions_during_training(tiny_encoder_dir, tmp_path, monkeypatch):
    from bio_mrc.harness import models
    from bio_mrc.harness.compare import resolve_splits, train_models
    from bio_mrc.harness.config import parse_config

    scored = []

    class Recording(TrainingEvaluator):
        def __init__(self, examples, *args, **options):
            scored.extend(example.id for example in examples)
            super().__init__(examples, *args, **options)

    monkeypatch.setattr(models, "TrainingEvaluator", Recording)

    part = lambda i: {"path": str(SAMPLE_V1), "split": {"fractions": [0.5, 0.5], "part": i}}  # noqa: E731 (by article)
    config = parse_config({
        "train": part(0), "tune": part(1), "eval": {"path": str(write_browser_eval_file(tmp_path / "eval.json"))},
        "defaults": {"encoder": str(tiny_encoder_dir), **WINDOWS, "batch_size": 4,
                     "training_args": {"eval_strategy": "steps", "eval_steps": 2, "max_steps": 4}},
        "runs": [{"name": "span", "heads": "span"}], "seeds": [1]})
    (model_dir,) = train_models(config, SAMPLE_V1.parent, tmp_path / "out")
    assert scored == [example.id for example in resolve_splits(config, SAMPLE_V1.parent).tune.examples]
    evaluations = [entry for entry in load_training_log(model_dir) if "eval_span_f1" in entry]
    assert [entry["step"] for entry in evaluations] == [2, 4]
    assert not any("eval_bio_f1" in entry for entry in evaluations)  # a span-only model has the span decoding alone


@pytest.mark.slow
def test_multi_span_questions_are_scored_during_training_as_evaluate_scores_them(trained_dir, tmp_path):
    """Held-out questions whose answers are span lists (``train --eval FILE --format answer-parts``, MultiSpanQA's layout)
    are answered with span lists and scored with MultiSpanQA's metrics, as ``predict`` and ``evaluate`` do. They were
    scored with SQuAD's F1 of the best span against the parts joined into one text ("Dave Stewart Barbara Gaskin"), so
    the decodings' scores and the best checkpoint followed another measure than the one the reader is judged by."""
    from transformers import AutoTokenizer

    from bio_mrc.data.answer_parts import load_answer_parts
    from bio_mrc.metrics.multispan_official import multispan_metrics

    parts = tmp_path / "parts.jsonl"
    parts.write_text(json.dumps({"id": "p1", "question": "Who sang in 1981?", "context": "Dave Stewart and Barbara Gaskin sang in 1981.",
                                 "answers": {"text": ["Barbara Gaskin", "Dave Stewart"], "answer_start": [17, 0]}}) + "\n")
    evaluator = TrainingEvaluator(load_answer_parts(parts), None, task="answer-parts")
    model = BioMrcForQuestionAnswering.from_pretrained(str(trained_dir))
    scores = evaluator(model, AutoTokenizer.from_pretrained(str(trained_dir)))
    names = [f"{decoding}_{score}" for decoding in ("span", "bio", "joint") for score in ("em_f1", "pm_f1")]
    assert list(scores) == evaluator.metric_names(model.config.heads) == names
    for decoding in ("span", "bio", "joint"):
        predictions = tmp_path / f"{decoding}.json"
        assert main(["predict", "--model", str(trained_dir), "--data", str(parts), "--format", "answer-parts",
                     "--decoding", decoding, "--output", str(predictions)]) == 0
        answers = json.loads(predictions.read_text())
        assert isinstance(answers["p1"], list)
        official = multispan_metrics({"p1": ["Dave Stewart", "Barbara Gaskin"]}, answers)
        assert (scores[f"{decoding}_em_f1"], scores[f"{decoding}_pm_f1"]) == (official["em_f1"], official["pm_f1"])
