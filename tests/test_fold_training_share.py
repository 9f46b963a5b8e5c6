"""A cross-validation run may train each fold's model on a share of the fold's training questions
(``"fold_training_share"``), of each data set alike, nested across shares, and be scored on the whole
held-out fold: a learning curve by cross-validation."""

import json
import math

import numpy as np
import pytest

from bio_mrc.errors import ConfigError
from bio_mrc.harness.compare import compare, resolve_splits
from bio_mrc.harness.comparison_splits import training_share
from bio_mrc.harness.config import comparison_schema, parse_config
from bio_mrc.metrics.multispan_official import metrics_from_counts

from .conftest import FIXTURES
from .test_fold_length_prior import cv_config
from .test_harness_compare import multispan_file
from .test_multispan_reader import reader_config


def test_a_share_takes_each_data_set_alike_nested_and_in_order(tiny_encoder_dir, tmp_path):
    splits = resolve_splits(reader_config(tiny_encoder_dir, tmp_path), FIXTURES)
    train, _ = splits.folds[0]
    sizes = [len(part.examples) for part in train.parts]
    kept = {}
    for share in (0.2, 0.5, 1.0):
        part_of = training_share(train, share, seed=0)
        assert [len(p.examples) for p in part_of.parts] == [max(1, math.ceil(share * n)) for n in sizes]
        assert part_of.ids == [p for part in part_of.parts for p in part.ids]  # the parts stay the data sets
        order = [train.ids.index(qid) for qid in part_of.ids]
        assert order == sorted(order)  # the fold's own order
        kept[share] = set(part_of.ids)
    assert kept[0.2] < kept[0.5] < kept[1.0] == set(train.ids)  # smaller shares nested in larger ones
    assert training_share(train, 0.5, seed=0).ids == training_share(train, 0.5, seed=0).ids  # the same draw every time
    assert training_share(train, 0.5, seed=1).ids != training_share(train, 0.5, seed=0).ids
    assert len(training_share(train.parts[0], 1e-9, seed=0).examples) == 1  # never an empty training set


def test_each_run_trains_on_its_own_share_of_every_fold(tiny_encoder_dir, tmp_path):
    config = reader_config(tiny_encoder_dir, tmp_path, runs=[{"name": "all"}, {"name": "half", "fold_training_share": 0.5}])
    splits = resolve_splits(config, FIXTURES)
    everything, half = (splits.folds_for(run) for run in config.runs)
    for (train_all, held_all), (train_half, held_half) in zip(everything, half):
        assert held_half.ids == held_all.ids  # scored on the whole held-out fold
        assert train_half.ids == training_share(train_all, 0.5, splits.seed).ids


@pytest.mark.parametrize("change, message", [
    ({"cross_validation": None, "train": {"path": "a.json"}}, "'fold_training_share' is a share of each cross-validation fold's"),
    ({"runs": [{"name": "none", "fold_training_share": 0}]}, "runs[0].fold_training_share"),
    ({"runs": [{"name": "more", "fold_training_share": 1.5}]}, "runs[0].fold_training_share"),
])
def test_a_share_is_refused_where_it_cannot_apply(tiny_encoder_dir, tmp_path, change, message):
    raw = {**cv_config(tiny_encoder_dir, tmp_path / "m.json", [{"name": "quarter", "fold_training_share": 0.25}]), **change}
    with pytest.raises(ConfigError, match=message.replace("[", r"\[")):
        parse_config({key: value for key, value in raw.items() if value is not None})


def test_a_run_without_it_keeps_its_saved_form(tiny_encoder_dir, tmp_path):
    config = parse_config(cv_config(tiny_encoder_dir, tmp_path / "m.json", [{"name": "all"}, {"name": "half", "fold_training_share": 0.5}]))
    assert "fold_training_share" not in config.runs[0].to_dict() and config.runs[1].to_dict()["fold_training_share"] == 0.5
    assert "fold_training_share" in comparison_schema()["properties"]["runs"]["items"]["properties"]


@pytest.mark.slow
def test_a_learning_curve_by_cross_validation(tiny_encoder_dir, tmp_path):
    path = multispan_file(tmp_path, n=18)
    runs = [{"name": "all", "heads": "span+bio"}, {"name": "third", "heads": "span+bio", "fold_training_share": 1 / 3},
            {"name": "whole", "heads": "span+bio", "fold_training_share": 1.0}]
    out = tmp_path / "out"
    results, _ = compare(parse_config(cv_config(tiny_encoder_dir, path, runs)), FIXTURES, out, progress=False)
    cells = {(c.run, c.decoding): c for c in results.cells}
    assert cells["all", "bio"].train_questions == 12 and cells["third", "bio"].train_questions == 4
    assert cells["whole", "bio"].fold_model_dirs == cells["all", "bio"].fold_model_dirs  # the same questions: the same models
    assert len(list((out / "models").iterdir())) == 6
    assert len(cells["third", "bio"].counts) == 18  # every question scored by the model that did not train on it
    assert results.config["runs"][1]["fold_training_share"] == pytest.approx(1 / 3)
    report = (out / "report.md").read_text()
    assert "## Learning curve: EM F1 against training questions" in report and "| 4 | third | 1 |" in report
    assert "the gap changes by" in report and "EM F1 per 10×" in report and (out / "learning_curve.png").is_file()
    curve = json.loads((out / "report.json").read_text())["summary"]["learning_curve"]
    assert curve["statistic"] == "EM F1" and {p["train_questions"] for p in curve["points"]} == {4, 12}
    bio = {p["run"]: p["f1"] for p in curve["points"] if p["decoding"] == "bio"}
    em_f1 = metrics_from_counts(np.asarray(cells["third", "bio"].counts).sum(axis=0))["em_f1"]
    assert bio["third"] == pytest.approx(em_f1)  # a point is the cell's EM F1
