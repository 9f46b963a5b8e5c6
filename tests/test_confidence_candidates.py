"""benchmarks/confidence_candidates.py end to end on a tiny model: every decoding's candidates are
measured on the evaluation split with calibrators fitted on the tuning split."""

from __future__ import annotations

import json
import math

import pytest

from bio_mrc.data.squad import load_squad
from bio_mrc.training.train import TrainConfig, train_model

from .conftest import FIXTURES, SAMPLE_V1
from .test_benchmarks_cli import load_benchmark


@pytest.mark.slow
def test_every_candidate_is_measured_on_held_out_questions(tiny_encoder_dir, tmp_path, monkeypatch):
    model = tmp_path / "model"
    config = TrainConfig(encoder=str(tiny_encoder_dir), max_seq_length=48, doc_stride=16, max_query_length=12,
                         epochs=1, batch_size=4, learning_rate=1e-3, seed=1)
    train_model(load_squad(SAMPLE_V1).examples, config, model, save_checkpoints=False)
    sample = {"path": str(SAMPLE_V1)}
    comparison = {"name": "tiny", "train": {**sample, "limit": 1}, "tune": {**sample, "limit": 5},
                  "eval": {**sample, "skip": 5}, "runs": [{"name": "joint", "heads": "span+bio"}], "seeds": [1]}
    (tmp_path / "config.json").write_text(json.dumps(comparison))
    script = load_benchmark("confidence_candidates", monkeypatch)
    args = script.parse_args(["--config", str(tmp_path / "config.json"), "--model", str(model), "--data-dir", str(FIXTURES),
                              "--output-dir", str(tmp_path / "out"), "--resamples", "20"])
    result = script.main(args)
    measured = {(row["decoding"], row["candidate"]) for row in result["rows"]}
    assert measured == {("span", "n-best share"), ("joint", "n-best share"), ("bio", "sigmoid(r)"), ("bio", "n-best share"),
                        ("bio", "n-best share with all-O"), ("bio", "posterior"),
                        *((decoding, "logistic on n-best features") for decoding in ("span", "bio", "joint"))}
    for row in result["rows"]:
        assert 0.0 <= row["ece_raw"] <= 1.0 and 0.0 <= row["ece_beta"] <= 1.0 and 0.0 <= row["coverage_at_80"] <= 1.0
        low, high = row["ece_beta_ci"]
        assert low <= high and math.isfinite(row["aurc"])
    assert "| bio | posterior |" in (tmp_path / "out" / "confidence.md").read_text()
