"""A cross-validation run may tune the BIO length prior of each fold's model on that fold's training questions
(``"length_prior_tuning": "fold-training"``): each fold decodes with its own prior, tuned by the task's main
statistic, and the models stay shared with runs that decode with the prior the model carries."""

import json

import numpy as np
import pytest

from bio_mrc import registry
from bio_mrc.decoding.postprocess import DecodeConfig
from bio_mrc.errors import ConfigError
from bio_mrc.harness.cells import decode_cell, score_cell
from bio_mrc.harness.compare import run_comparison
from bio_mrc.harness.comparison_splits import cross_validation_folds, resolve_split
from bio_mrc.harness.config import DataSpec, parse_config
from bio_mrc.inference import TrainedModel
from bio_mrc.inference.tuning import tune_bio_length_prior

from .conftest import FIXTURES
from .test_harness_compare import config_dict, multispan_file

TUNED = {"length_prior_tuning": "fold-training"}


def cv_config(encoder, path, runs, **overrides):
    raw = config_dict(encoder, seeds=[1], runs=runs, eval={"path": str(path), "format": "multispanqa"},
                      cross_validation={"folds": 3, "seed": 0}, **overrides)
    del raw["train"]
    return raw


@pytest.mark.slow
def test_each_fold_decodes_with_the_prior_tuned_on_its_own_training_questions(tiny_encoder_dir, tmp_path):
    path = multispan_file(tmp_path)
    runs = [{"name": "joint", "heads": "span+bio"}, {"name": "joint-tuned", "heads": "span+bio", **TUNED}]
    out = tmp_path / "out"
    results = run_comparison(parse_config(cv_config(tiny_encoder_dir, path, runs)), FIXTURES, out)  # its cells and models; no report
    assert len(list((out / "models").iterdir())) == 3  # the tuned run decodes the same fold models
    assert results.config["runs"][1]["length_prior_tuning"] == "fold-training" and "length_prior_tuning" not in results.config["runs"][0]
    cells = {(c.run, c.decoding): c for c in results.cells}
    split = resolve_split(DataSpec(str(path), format="multispanqa"), tmp_path)
    folds = cross_validation_folds(split, 3, 0)
    multispan = registry.task_for("multispanqa", False)
    position = {qid: k for k, qid in enumerate(split.ids)}
    for k, (train_fold, held_out) in enumerate(folds):
        model_dir = cells["joint-tuned", "bio"].fold_model_dirs[k]
        assert model_dir == cells["joint", "bio"].fold_model_dirs[k]
        trained = TrainedModel.load(model_dir)
        own = trained.decode_config(DecodeConfig()).bio_length_prior
        saved = json.loads((out / "models" / model_dir.rsplit("/", 1)[-1] / "config.json").read_text())
        assert saved["bio_length_prior"] is None and saved["tuned_on"] is None  # the fold's prior stays out of the shared model
        prior, _ = tune_bio_length_prior(trained.windows(train_fold.examples), train_fold.examples, DecodeConfig(), task=multispan)
        held_out_outputs = trained.windows(held_out.examples)
        rows = [position[qid] for qid in held_out.ids]
        for decoding in ("bio", "joint"):
            tuned, untuned = cells["joint-tuned", decoding], cells["joint", decoding]
            assert tuned.fold_bio_length_priors[k] == prior and untuned.fold_bio_length_priors[k] == own
            # the pooled cell's counts of this fold's questions are those of its model decoded with its own prior and
            # its own span-count threshold (tuned on the same training questions)
            rules = {decoding: tuned.fold_min_span_probabilities[k]}
            decoded = decode_cell(held_out_outputs, held_out, decoding, trained.decode_config(DecodeConfig(bio_length_prior=prior)), None, rules)
            np.testing.assert_allclose(np.asarray(tuned.counts)[rows], score_cell(held_out, decoded)["counts"])
    assert cells["joint-tuned", "bio"].fold_bio_length_priors != cells["joint", "bio"].fold_bio_length_priors  # tuning moved it
    assert cells["joint-tuned", "bio"].bio_length_prior == pytest.approx(np.mean(cells["joint-tuned", "bio"].fold_bio_length_priors))
    assert cells["joint-tuned", "span"].fold_bio_length_priors == [None] * 3  # the span decoding has no prior


@pytest.mark.parametrize("change, message", [
    ({"cross_validation": None, "train": {"path": "a.json"}}, 'runs[0].length_prior_tuning: "fold-training" tunes on the training questions of each '
                                                           'cross-validation fold'),
    ({"tune": {"path": "t.json"}}, "neither 'decode.bio_length_prior' nor a 'tune' split"),
    ({"decode": {"bio_length_prior": 1.0}}, "neither 'decode.bio_length_prior' nor a 'tune' split"),
    ({"runs": [{"name": "span-only", "heads": "span", **TUNED}]}, 'length_prior_tuning: run "span-only" '),
    ({"runs": [{"name": "joint", "length_prior_tuning": "held-out"}]}, 'runs[0].length_prior_tuning: "held-out" is not one of'),
])
def test_fold_tuning_is_refused_where_it_cannot_apply(tiny_encoder_dir, tmp_path, change, message):
    raw = {**cv_config(tiny_encoder_dir, tmp_path / "m.json", [{"name": "joint", "heads": "span+bio", **TUNED}]), **change}
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("(", r"\(")):
        parse_config({key: value for key, value in raw.items() if value is not None})


def test_a_run_without_it_keeps_its_saved_form(tiny_encoder_dir, tmp_path):
    """Reports and cached models of runs that do not tune stay theirs: the run's saved form has no new key."""
    config = parse_config(cv_config(tiny_encoder_dir, tmp_path / "m.json", [{"name": "joint", "heads": "span+bio"}]))
    assert "length_prior_tuning" not in config.runs[0].to_dict()
    assert config.to_dict()["cross_validation"] == {"folds": 3, "seed": 0}
