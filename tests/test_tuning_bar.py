"""Tuning's decoding shows one bar over the questions its passes decode, however many chunks they run in: on the
command line, not from a library call."""

import json

import pytest

from bio_mrc import registry
from bio_mrc.cli import main
from bio_mrc.decoding.postprocess import DecodeConfig
from bio_mrc.inference import tuning, tuning_chunks
from bio_mrc.inference.tuning import LENGTH_PRIOR_GRID

from .conftest import untrained_model_folder
from .test_tuning_chunks import random_outputs

GRID = len(LENGTH_PRIOR_GRID)  # the prior decodes its questions once per value
# Six questions, four with an answer: SQuAD 2.0 questions tune a no-answer threshold per decoding.
PARAGRAPHS = [("it was written by ada lovelace in 1843.", [("q0", "who wrote it?", "ada lovelace"),
                                                          ("q1", "when was it?", "1843"),
                                                          ("q2", "who read it?", None)]),
              ("the note was read by babbage.", [("q3", "who read the note?", "babbage"),
                                                 ("q4", "what was read?", "the note"),
                                                 ("q5", "who wrote the note?", None)])]


def v2_file(path, answered_only=False):
    """The questions above as SQuAD 2.0 data, or (``answered_only``) the four answered ones as SQuAD v1.1 data."""
    paragraphs = [{"context": context, "qas": [
        {"id": qid, "question": question, "answers": [] if answer is None else [{"text": answer, "answer_start": context.index(answer)}]}
        | ({} if answered_only else {"is_impossible": answer is None})
        for qid, question, answer in questions if answer or not answered_only]} for context, questions in PARAGRAPHS]
    version = "1.1" if answered_only else "v2.0"
    path.write_text(json.dumps({"version": version, "data": [{"title": "t", "paragraphs": paragraphs}]}), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def model_dir(tiny_encoder_dir, tmp_path_factory):
    return untrained_model_folder(tiny_encoder_dir, tmp_path_factory.mktemp("tuning-bar") / "model", heads="span+bio",
                                  max_seq_length=48, doc_stride=16, max_query_length=12)


def decoding_bars(shown_bars):
    return [bar for bar in shown_bars if bar[0] == "decoding"]


def test_tune_shows_one_decoding_bar_over_every_pass(model_dir, tmp_path, monkeypatch, shown_bars, capsys):
    monkeypatch.setattr(tuning_chunks, "TUNING_CHUNK_QUESTIONS", 4)  # six questions: chunks of 4 and 2
    assert main(["tune", "--model", str(model_dir), "--data", str(v2_file(tmp_path / "v2.json")), "--output-dir",
                 str(tmp_path / "tuned"), "--min-calibration-questions", "6", "--precision", "fp32", "--device", "cpu"]) == 0
    # the prior on the 4 answered questions, then for each of span, bio and joint a threshold and a calibrator on all 6
    assert decoding_bars(shown_bars) == [("decoding", 4 * GRID + 3 * 6 + 3 * 6, 4 * GRID + 36, "question")]
    out, err = capsys.readouterr()
    assert "decoding: 100%" in err
    assert "%|" not in out and "\r" not in out  # standard output holds the report alone
    json.loads(out)


@pytest.mark.parametrize("task, planned", [
    (registry.squad_task("2.0"), 9 * GRID + 3 * 11 + 3 * 11),  # prior on 9 answered questions; thresholds; calibrators
    (registry.task_for("multispanqa", False), 9 * GRID + 3 * 11),  # prior; the span-count step's pass per decoding
], ids=lambda value: getattr(value, "name", str(value)))
def test_tuning_in_chunks_counts_each_pass_in_one_bar(monkeypatch, shown_bars, task, planned):
    outputs, examples = random_outputs(11)  # questions 3 and 7 have no answer
    monkeypatch.setattr(tuning_chunks, "TUNING_CHUNK_QUESTIONS", 3)
    tuning.tune_settings(outputs, examples, ["span", "bio", "joint"], DecodeConfig(), tune_prior=True,
                         tune_thresholds=task.no_answer, calibrate=task.right is not None, task=task, progress=True)
    assert shown_bars == [("decoding", planned, planned, "question")]


def test_tuning_from_a_library_call_is_quiet(monkeypatch, shown_bars, capsys):
    outputs, examples = random_outputs(11)
    monkeypatch.setattr(tuning_chunks, "TUNING_CHUNK_QUESTIONS", 3)
    tuning.tune_settings(outputs, examples, ["span", "bio", "joint"], DecodeConfig(), tune_prior=True,
                         tune_thresholds=True, calibrate=True, task=registry.squad_task("2.0"))
    assert shown_bars == []
    assert capsys.readouterr().err == ""


def comparison_config(encoder, folder):
    """A comparison of one tiny model: trained on the sample, tuned on the four answered questions above (a length
    prior, then a calibrator per decoding), scored on five others."""
    from .conftest import SAMPLE_V1, write_browser_eval_file

    config = {"name": "bars", "train": {"path": str(SAMPLE_V1)}, "eval": {"path": str(write_browser_eval_file(folder / "eval.json"))},
              "tune": {"path": str(v2_file(folder / "tune.json", answered_only=True))},
              "defaults": {"encoder": str(encoder), "max_seq_length": 48, "doc_stride": 16, "max_query_length": 12,
                           "epochs": 1, "batch_size": 4, "learning_rate": 1e-3},
              "runs": [{"name": "joint", "heads": "span+bio"}], "seeds": [1]}
    (folder / "compare.json").write_text(json.dumps(config), encoding="utf-8")
    return folder / "compare.json"


@pytest.mark.slow  # trains a model of its own
def test_compare_shows_its_tuning_and_scoring_bars(tiny_encoder_dir, tmp_path, shown_bars, capsys):
    assert main(["compare", "--config", str(comparison_config(tiny_encoder_dir, tmp_path)), "--data-dir", str(tmp_path),
                 "--output-dir", str(tmp_path / "out")]) == 0
    assert [bar for bar in shown_bars if bar[0] in ("decoding", "scoring")] == [
        ("decoding", 4 * GRID + 3 * 4, 4 * GRID + 12, "question"), ("scoring", 3, 3, "decoding")]  # span, bio and joint scored
    [statistics] = [bar for bar in shown_bars if bar[0] == "statistics"]  # the report's bootstraps, every resample planned
    assert statistics[1] == statistics[2] > 0 and statistics[3] == "resample"
    out, err = capsys.readouterr()
    assert "decoding: 100%" in err and "scoring: 100%" in err and "statistics: 100%" in err and "%|" not in out


@pytest.mark.slow  # trains a model of its own
def test_a_comparison_from_a_library_call_is_quiet(tiny_encoder_dir, tmp_path, shown_bars, capsys):
    from bio_mrc.harness.compare import compare
    from bio_mrc.harness.config import load_config

    compare(load_config(str(comparison_config(tiny_encoder_dir, tmp_path))), tmp_path, tmp_path / "out")
    assert shown_bars == []
    assert "%|" not in capsys.readouterr().err
