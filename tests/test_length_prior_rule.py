"""benchmarks/length_prior_rule.py end to end on a tiny model: the package's rule picks the β that the
comparison's tuning picks, each pick's eval F1 is the official F1 of the BIO decoding with that β, and a
second run reads its curves from the cache."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from bio_mrc.data.squad import gold_texts, load_squad
from bio_mrc.decoding.postprocess import DecodeConfig, decode
from bio_mrc.inference.loading import TrainedModel
from bio_mrc.inference.tuning import LENGTH_PRIOR_BANDWIDTH, tune_bio_length_prior
from bio_mrc.metrics.squad_official import squad_v1_metrics
from bio_mrc.training.train import TrainConfig, train_model

from .conftest import FIXTURES, SAMPLE_V1
from .test_benchmarks_cli import load_benchmark


def train_tiny(tiny_encoder_dir, folder, heads: str = "span+bio"):
    config = TrainConfig(encoder=str(tiny_encoder_dir), heads=heads, max_seq_length=48, doc_stride=16, max_query_length=12,
                         epochs=1, batch_size=4, learning_rate=1e-3, seed=1)
    train_model(load_squad(SAMPLE_V1).examples, config, folder, save_checkpoints=False)
    return folder


def script_and_argv(tmp_path, monkeypatch, model, tune=None, evaluation=None):
    """The script and its arguments: a comparison config tuning on 5 sample questions and evaluating on the rest."""
    sample = {"path": str(SAMPLE_V1)}
    comparison = {"name": "tiny", "train": {**sample, "limit": 1}, "tune": {**sample, **(tune or {"limit": 5})},
                  "eval": {**sample, **(evaluation or {"skip": 5})}, "runs": [{"name": "joint", "heads": "span+bio"}], "seeds": [1]}
    (tmp_path / "config.json").write_text(json.dumps(comparison))
    argv = ["--config", str(tmp_path / "config.json"), "--model", str(model), "--data-dir", str(FIXTURES),
            "--output-dir", str(tmp_path / "out"), "--draws", "30", "--draw-size", "2"]
    return load_benchmark("length_prior_rule", monkeypatch), argv


@pytest.mark.slow
def test_the_rules_are_scored_on_the_evaluation_questions(tiny_encoder_dir, tmp_path, monkeypatch):
    model = train_tiny(tiny_encoder_dir, tmp_path / "model")
    script, argv = script_and_argv(tmp_path, monkeypatch, model)
    result = script.main(script.parse_args(argv))
    rows = {row["bandwidth"]: row for row in result["rows"]}
    assert set(rows) == {0.0, LENGTH_PRIOR_BANDWIDTH, 0.5}
    examples = load_squad(SAMPLE_V1).examples
    tune, evaluation = examples[:5], examples[5:]
    trained = TrainedModel.load(model)
    options = DecodeConfig()  # the config's decode options: the defaults, β left open
    assert rows[LENGTH_PRIOR_BANDWIDTH]["picked"] == tune_bio_length_prior(trained.windows(tune), tune, options)[0]
    for row in rows.values():
        predictions = decode(trained.windows(evaluation), evaluation, "bio", replace(options, bio_length_prior=row["picked"]))
        official = squad_v1_metrics(gold_texts(evaluation), {p.id: p.answer for p in predictions})
        assert row["eval_f1"] == pytest.approx(official["f1"])
        # a draw's held-out questions may have a best F1 above the whole set's, so regret is bounded by F1's scale only
        assert row["oracle_f1"] >= row["eval_f1"] and 0.0 <= row["regret_mean"] <= 100.0
    assert "| argmax |" in (tmp_path / "out" / "length_prior_rule.md").read_text()

    def no_model(*_, **__):
        raise AssertionError("the curves should come from the cache")

    monkeypatch.setattr(script.TrainedModel, "load", no_model)
    assert script.main(script.parse_args([*argv, "--bandwidths", "0"]))["rows"] == [rows[0.0]]


@pytest.mark.slow
def test_first_reference_scoring_scores_each_question_against_its_first_gold_answer(tiny_encoder_dir, tmp_path, monkeypatch):
    model = train_tiny(tiny_encoder_dir, tmp_path / "model")
    # evaluated on the first 5 sample questions, 4 of which have several gold answers
    script, argv = script_and_argv(tmp_path, monkeypatch, model, tune={"skip": 5}, evaluation={"limit": 5})
    scored_gold = []
    official_scores = script.per_question_scores
    monkeypatch.setattr(script, "per_question_scores", lambda gold, *rest: scored_gold.append(gold) or official_scores(gold, *rest))
    result = script.main(script.parse_args([*argv, "--references", "first", "--bandwidths", "0"]))
    evaluation = load_squad(SAMPLE_V1).examples[:5]
    first_only = {qid: texts[:1] for qid, texts in gold_texts(evaluation).items()}
    assert first_only["n1"] == ["France"] and all(gold == first_only for gold in scored_gold if "n1" in gold)
    assert sum("n1" in gold for gold in scored_gold) == len(script.LENGTH_PRIOR_GRID)
    (row,) = result["rows"]
    trained = TrainedModel.load(model)
    predictions = decode(trained.windows(evaluation), evaluation, "bio", replace(DecodeConfig(), bio_length_prior=row["picked"]))
    assert row["eval_f1"] == pytest.approx(squad_v1_metrics(first_only, {p.id: p.answer for p in predictions})["f1"])
    assert result["references"] == "first"
    assert sorted(path.name for path in (tmp_path / "out" / "curves").iterdir()) == ["model.first-reference.npz"]


@pytest.mark.slow
def test_a_model_without_a_bio_head_and_a_negative_bandwidth_are_refused_before_any_work(tiny_encoder_dir, tmp_path, monkeypatch):
    joint = train_tiny(tiny_encoder_dir, tmp_path / "joint")
    span_only = train_tiny(tiny_encoder_dir, tmp_path / "span-only", heads="span")
    script, argv = script_and_argv(tmp_path, monkeypatch, joint)
    with pytest.raises(SystemExit, match="--bandwidths must be"):
        script.parse_args([*argv, "--bandwidths", "-1"])
    # the span-only model comes second: it is refused before the joint model's curves are computed
    with pytest.raises(SystemExit, match=r"span-only has no BIO head \(heads: span\)"):
        script.parse_args([*argv, "--model", str(span_only)])
    (tmp_path / "not-a-model").mkdir()
    with pytest.raises(SystemExit, match="not-a-model: not a saved model: no config.json"):
        script.parse_args([*argv, "--model", str(tmp_path / "not-a-model")])
    assert not (tmp_path / "out").exists()
