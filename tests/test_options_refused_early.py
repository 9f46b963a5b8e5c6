"""Training options that do not fit together (or their encoder, or their output folder) are refused before any work:
before the data is read where they need none, and always before the precision is measured, the model loads or the
windows are built."""

import json
import shutil

import pytest

from bio_mrc.cli import main
from bio_mrc.errors import ConfigError
from bio_mrc.harness import compare as compare_module
from bio_mrc.training.config import TrainConfig

from .conftest import SAMPLE_V1, WINDOW_ARGS, untrained_model_folder

BEST_EVERY_4 = '{"load_best_model_at_end": true, "eval_strategy": "steps", "eval_steps": 4, "metric_for_best_model": "span_f1"}'


class WorkBegan(AssertionError):
    """Raised where a run's work begins: reading data, measuring the precision, loading the model, building windows."""


@pytest.fixture
def no_work(monkeypatch):
    from bio_mrc.cli import train_command
    from bio_mrc.training import train, trainer

    def fail(*args, **kwargs):
        raise WorkBegan

    monkeypatch.setattr(TrainConfig, "precision_choices", fail)
    monkeypatch.setattr(train, "fresh_model_and_tokenizer", fail)
    monkeypatch.setattr(trainer, "build_features", fail)
    return lambda: monkeypatch.setattr(train_command, "load_task_data", fail)  # for options that need no data


def _train(encoder, output, *options):
    return main(["train", "--train", str(SAMPLE_V1), "--output-dir", str(output), "--encoder", str(encoder), *WINDOW_ARGS,
                 *options])


@pytest.mark.parametrize("options, expected", [
    (["--eval", str(SAMPLE_V1)], "questions to evaluate on during training (--eval) need evaluations: add "
                                 "'{\"eval_strategy\": \"steps\", \"eval_steps\": N}' (or \"epoch\") to the training args"),
    (["--training-args", '{"eval_strategy": "epoch"}'],
     "training_args eval_strategy \"epoch\" needs questions to evaluate on (--eval)"),
    (["--eval", str(SAMPLE_V1), "--checkpoint-steps", "10", "--training-args", BEST_EVERY_4],
     "training_args {\"eval_steps\": 4, \"eval_strategy\": \"steps\", \"load_best_model_at_end\": true, \"metric_for_best_model\": "
     "\"span_f1\"} with the package's own arguments: --load_best_model_at_end requires the saving steps to be a round "
     "multiple of the evaluation steps, but found 10, which is not a round multiple of 4."),
    (["--max-seq-length", "512"], "max_seq_length 512 exceeds the 128 positions a window of encoder {encoder} may fill: "
                                  "train with windows that fit, e.g. max_seq_length 128, doc_stride 46, max_query_length 32"),
])
def test_train_refuses_options_before_reading_data(tiny_encoder_dir, tmp_path, no_work, capsys, options, expected):
    no_work()
    assert _train(tiny_encoder_dir, tmp_path / "model", *options) == 2
    assert capsys.readouterr().err == f"error: {expected.replace('{encoder}', str(tiny_encoder_dir))}\n"
    assert not (tmp_path / "model").exists()


def test_train_refuses_its_output_folder_before_reading_data(tiny_encoder_dir, tmp_path, no_work, capsys):
    no_work()
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "notes.txt").write_text("mine")
    assert _train(tiny_encoder_dir, tmp_path / "taken") == 2
    assert capsys.readouterr().err == (f"error: {tmp_path / 'taken'} is not empty (notes.txt) and holds no bio_mrc model; "
                                       "choose another output folder or pass --overwrite to replace its files\n")
    encoder = shutil.copytree(tiny_encoder_dir, tmp_path / "encoder")
    assert _train(encoder, encoder / "model") == 2
    assert capsys.readouterr().err == (f"error: this output lies in the model folder {encoder}, which is being read; choose "
                                       f"an output outside it (in {encoder / 'model'})\n")
    assert sorted(p.name for p in encoder.iterdir()) == sorted(p.name for p in tiny_encoder_dir.iterdir())


def test_train_refuses_windows_the_continued_model_cannot_fill_before_reading_data(tiny_encoder_dir, tmp_path, no_work, capsys):
    no_work()
    model = untrained_model_folder(tiny_encoder_dir, tmp_path / "model")
    capsys.readouterr()
    code = main(["train", "--train", str(SAMPLE_V1), "--output-dir", str(tmp_path / "more"), "--init-from", str(model),
                 "--max-seq-length", "256", "--doc-stride", "16", "--max-query-length", "12"])
    assert code == 2
    assert capsys.readouterr().err == (f"error: max_seq_length 256 exceeds the 128 positions a window of encoder {model} may "
                                       "fill: train with windows that fit, e.g. max_seq_length 128, doc_stride 46, max_query_length 32\n")


def test_train_refuses_a_best_model_metric_its_evaluation_lacks_before_training(tiny_encoder_dir, tmp_path, no_work, capsys):
    args = '{"load_best_model_at_end": true, "eval_strategy": "steps", "eval_steps": 5, "metric_for_best_model": "f1"}'
    assert _train(tiny_encoder_dir, tmp_path / "model", "--eval", str(SAMPLE_V1), "--heads", "span", "--training-args", args) == 2
    err = capsys.readouterr().err
    assert "training on" not in err
    assert err.splitlines()[-1] == ("error: training_args metric_for_best_model \"f1\" is no score of the evaluation during "
                                    "training, which gives span_f1, span_exact")


def test_training_args_are_checked_with_the_runs_own_checkpoint_steps():
    """eval_steps 7 is checked against the run's --checkpoint-steps, not the default 500: it fits 14 and not 10."""
    config = TrainConfig(training_args={"load_best_model_at_end": True, "eval_strategy": "steps", "eval_steps": 7})
    from bio_mrc.training.run_checks import check_run_options

    assert check_run_options(config, "model", True, True, 14).save_steps == 14
    with pytest.raises(ConfigError, match="but found 10, which is not a round multiple of 7"):
        check_run_options(config, "model", True, True, 10)


class Trained(Exception):
    """Raised where a comparison's first model would train."""


def _articles(path, first, count):
    articles = [{"title": f"t{n}", "paragraphs": [{"context": f"Story {n} is about Normandy in France.", "qas": [
        {"id": f"q{n}", "question": f"Where is story {n}?", "answers": [{"text": "France", "answer_start": 28 + len(str(n))}]}]}]}
        for n in range(first, first + count)]
    path.write_text(json.dumps({"version": "1.1", "data": articles}))
    return str(path)


@pytest.mark.parametrize("late_run, expected", [
    ({"training_args": {"load_best_model_at_end": True, "eval_strategy": "steps", "eval_steps": 4, "metric_for_best_model": "span_f1"}},
     "runs[1]: training_args {\"eval_steps\": 4, \"eval_strategy\": \"steps\", \"load_best_model_at_end\": true, \"metric_for_best_model\": "
     "\"span_f1\"} with the package's own arguments: --load_best_model_at_end requires the saving steps to be a round multiple "
     "of the evaluation steps, but found 10, which is not a round multiple of 4."),
    ({"heads": "span", "training_args": {"load_best_model_at_end": True, "eval_strategy": "steps", "eval_steps": 5,
                                         "metric_for_best_model": "f1"}},
     "runs[1]: training_args metric_for_best_model \"f1\" is no score of the evaluation during training, which gives span_f1, span_exact"),
    ({"init_from": "{model}", "max_seq_length": 256},
     "runs[1].max_seq_length: max_seq_length 256 exceeds the 128 positions a window of encoder {model} may fill: train with "
     "windows that fit, e.g. max_seq_length 128, doc_stride 46, max_query_length 32"),
])
def test_compare_refuses_a_later_runs_options_before_the_first_trains(tiny_encoder_dir, tmp_path, monkeypatch, capsys, late_run, expected):
    def obtain_model(*args, **kwargs):
        raise Trained

    monkeypatch.setattr(compare_module, "obtain_model", obtain_model)
    model = str(untrained_model_folder(tiny_encoder_dir, tmp_path / "model")) if "init_from" in late_run else ""
    late_run = {key: value.replace("{model}", model) if isinstance(value, str) else value for key, value in late_run.items()}
    capsys.readouterr()
    config = tmp_path / "config.json"
    config.write_text(json.dumps({
        "name": "c", "train": {"path": _articles(tmp_path / "train.json", 0, 4)}, "tune": {"path": _articles(tmp_path / "tune.json", 4, 2)},
        "eval": {"path": _articles(tmp_path / "eval.json", 6, 2)}, "checkpoint_steps": 10,
        "defaults": {"encoder": str(tiny_encoder_dir), "max_seq_length": 48, "doc_stride": 16, "max_query_length": 12},
        "runs": [{"name": "a"}, {"name": "b", **late_run}]}))
    assert main(["compare", "--config", str(config), "--output-dir", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err == f"error: {expected.replace('{model}', model)}\n"
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("command", [["predict", "--output"], ["tune", "--no-calibration", "--output-dir"]])
def test_a_decoding_the_models_heads_lack_is_refused_before_the_data_is_read(tiny_encoder_dir, tmp_path, monkeypatch, capsys, command):
    from bio_mrc.cli import answer_commands, tune_command

    def fail(*args, **kwargs):
        raise WorkBegan

    monkeypatch.setattr(answer_commands, "prediction_questions", fail)
    monkeypatch.setattr(tune_command, "load_task_data", fail)
    model = untrained_model_folder(tiny_encoder_dir, tmp_path / "model", heads="span")
    capsys.readouterr()
    assert main([command[0], "--model", str(model), "--data", str(SAMPLE_V1), "--decoding", "bio", *command[1:],
                 str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err == "error: decoding \"bio\" needs the bio head, which this model lacks; it offers ['span']\n"
    assert not (tmp_path / "out").exists()
