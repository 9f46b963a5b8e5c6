"""``bio-mrc compare`` resumes a model whose training was interrupted and ends with the uninterrupted weights;
runs may have their own training questions and seeds; ``--train-only`` trains and scores nothing."""

import json
import re

import pytest
import torch
from safetensors.torch import load_file

from bio_mrc.harness import models as harness_models
from bio_mrc.harness.compare import compare, run_comparison, train_models
from bio_mrc.errors import ConfigError
from bio_mrc.harness.config import parse_config
from bio_mrc.training.train import CHECKPOINT_DIR, load_run_record, scan_checkpoints

from .conftest import FIXTURES, SAMPLE_V1
from .training_kill import Killed, KillAtStep


def config(encoder, **overrides):
    raw = {
        "name": "resume",
        "train": {"path": str(SAMPLE_V1), "split": {"fractions": [0.5, 0.5], "part": 0, "seed": 0}},
        "eval": {"path": str(SAMPLE_V1), "split": {"fractions": [0.5, 0.5], "part": 1, "seed": 0}},
        "defaults": {"encoder": str(encoder), "max_seq_length": 32, "doc_stride": 8, "max_query_length": 12,
                     "epochs": 3, "batch_size": 4, "learning_rate": 1e-3},
        "runs": [{"name": "joint", "heads": "span+bio"}],
        "seeds": [5],
        "checkpoint_steps": 2,
    }
    return parse_config(raw | overrides)


def kill_first_training(monkeypatch, step):
    """The next training the harness starts is killed after optimizer step ``step``; later ones run."""
    real = harness_models.train_model
    calls = []

    def train_model(*args, **kwargs):
        calls.append(kwargs)
        if len(calls) == 1:
            kwargs = {**kwargs, "callbacks": [KillAtStep(step)]}
        return real(*args, **kwargs)

    monkeypatch.setattr(harness_models, "train_model", train_model)
    return calls


@pytest.mark.slow
def test_compare_resumes_an_interrupted_model_with_the_uninterrupted_weights(tiny_encoder_dir, tmp_path, monkeypatch):
    if torch.cuda.is_available():
        pytest.skip("bit-identical weights are a CPU promise")
    uninterrupted = run_comparison(config(tiny_encoder_dir), FIXTURES, tmp_path / "a")  # its cells and models; no report

    calls = kill_first_training(monkeypatch, step=5)
    with pytest.raises(Killed):
        run_comparison(config(tiny_encoder_dir), FIXTURES, tmp_path / "b")
    model_dir = next((tmp_path / "b" / "models").iterdir())
    assert load_run_record(model_dir) is None  # not finished, so never reused as it is
    assert [p.name for p in scan_checkpoints(model_dir / CHECKPOINT_DIR)[0]] == ["checkpoint-4"]

    resumed = run_comparison(config(tiny_encoder_dir), FIXTURES, tmp_path / "b")
    assert len(calls) == 2 and calls[1]["resume"] is True
    assert load_run_record(model_dir)["resumed_from"] == "checkpoint-4"
    assert {c.train_seconds_partial for c in resumed.cells} == {False}  # the checkpoint kept the first sitting's time
    assert {c.train_seconds for c in resumed.cells} == {load_run_record(model_dir)["seconds"]}
    assert not (model_dir / CHECKPOINT_DIR).exists()  # removed once the model is complete
    a = load_file(str(tmp_path / "a" / "models" / model_dir.name / "model.safetensors"))
    b = load_file(str(model_dir / "model.safetensors"))
    assert [name for name in a if not torch.equal(a[name], b[name])] == []
    assert [c.f1.tolist() for c in resumed.cells] == [c.f1.tolist() for c in uninterrupted.cells]


@pytest.mark.slow
def test_runs_with_their_own_questions_and_seeds(tiny_encoder_dir, tmp_path):
    train_file = {"path": str(SAMPLE_V1), "split": {"fractions": [0.5, 0.5], "part": 0, "seed": 0}}
    runs = [{"name": "small", "heads": "span", "train_data": {**train_file, "limit": 4}},
            {"name": "large", "heads": "span", "seeds": [5, 6]}]
    cfg = config(tiny_encoder_dir, runs=runs, checkpoint_steps=None)
    trained = train_models(cfg, FIXTURES, tmp_path)
    assert [p.name.rsplit("-", 1)[0] for p in trained] == ["small-seed5", "large-seed5", "large-seed6"]
    assert load_run_record(trained[0])["n_examples"] == 4
    assert not (tmp_path / "cells").exists() and not (tmp_path / "report.md").exists()  # nothing scored

    results = run_comparison(cfg, FIXTURES, tmp_path)  # its cells; no report
    assert all(c.reused_model for c in results.cells)  # --train-only's models
    cells = {(c.run, c.seed): c.train_questions for c in results.cells}
    assert cells[("small", 5)] == 4 and cells[("large", 5)] == cells[("large", 6)] > 4
    assert set(cells) == {("small", 5), ("large", 5), ("large", 6)}


def test_a_run_may_not_train_on_evaluation_paragraphs(tiny_encoder_dir, tmp_path):
    from bio_mrc.errors import ConfigError

    leaky = {"path": str(SAMPLE_V1), "split": {"fractions": [0.5, 0.5], "part": 1, "seed": 0}, "limit": 3}
    cfg = config(tiny_encoder_dir, runs=[{"name": "leaky", "heads": "span", "train_data": leaky}])
    with pytest.raises(ConfigError, match="leaky run's training and eval splits overlap"):
        train_models(cfg, FIXTURES, tmp_path)


@pytest.mark.parametrize("bad, message", [
    ({"runs": [{"name": "r", "seeds": []}]}, re.escape("runs[0].seeds: [] should be non-empty")),
    ({"runs": [{"name": "r", "inference_precision": "fp16"}]}, re.escape('runs[0].inference_precision: "fp16" is not one of')),
    ({"checkpoint_steps": 0}, "checkpoint_steps: 0 is less than the minimum of 1"),
])
def test_bad_run_options_are_refused(tiny_encoder_dir, bad, message):
    with pytest.raises(ValueError, match=message):
        config(tiny_encoder_dir, **bad)


@pytest.mark.slow
def test_init_from_a_pattern_finds_the_one_complete_model(tiny_encoder_dir, tmp_path):
    from bio_mrc.errors import ConfigError
    from bio_mrc.harness.models import resolve_init_from

    with pytest.raises(ConfigError, match="no complete model"):
        resolve_init_from(str(tmp_path / "models" / "joint-seed5-*"))
    (tmp_path / "models" / "joint-seed5-unfinished").mkdir(parents=True)  # no run record: not a model yet
    defaults = {"encoder": str(tiny_encoder_dir), "max_seq_length": 32, "doc_stride": 8, "max_query_length": 12,
                "epochs": 1, "batch_size": 4}
    first = train_models(config(tiny_encoder_dir, defaults=defaults, checkpoint_steps=None), FIXTURES, tmp_path)[0]
    assert resolve_init_from(str(tmp_path / "models" / "joint-seed5-*")) == str(first)
    assert resolve_init_from(str(first)) == str(first)  # a plain folder is taken as it is

    defaults["init_from"] = str(tmp_path / "models" / "joint-seed5-*")
    follow_up = train_models(config(tiny_encoder_dir, defaults=defaults, checkpoint_steps=None), FIXTURES, tmp_path / "next")[0]
    assert load_run_record(follow_up)["train"]["init_from"] == str(first)


def test_every_preset_and_ablation_config_parses():
    from pathlib import Path

    from bio_mrc.harness.config import PRESETS, load_config

    for name in PRESETS:
        assert load_config(name).runs, name
    configs = [path for path in sorted((Path(__file__).parents[1] / "benchmarks" / "ablations").glob("*.json"))
               if not path.name.endswith(".schema.json")]
    assert "gpu_squad_full.json" in {path.name for path in configs}
    for path in configs:
        assert load_config(path).runs, path
    curve = load_config(Path(__file__).parents[1] / "benchmarks" / "ablations" / "learning_curve.json")
    assert [(r.name, curve.run_seeds(r)) for r in curve.runs][:2] == [("joint-3k", [42]), ("joint-10k", [42, 43, 44])]


def test_the_command_line_keeps_some_runs(tiny_encoder_dir):
    from bio_mrc.errors import ConfigError

    runs = [{"name": "a", "heads": "span", "seeds": [1, 2]}, {"name": "b", "heads": "span+bio"}]
    cfg = config(tiny_encoder_dir, runs=runs, baseline="b/span", contrasts=[["a/span", "b/bio"], ["b/bio", "b/span"]])
    only_b = cfg.with_overrides(runs=["b"])
    assert [r.name for r in only_b.runs] == ["b"] and only_b.contrasts == [("b/bio", "b/span")] and only_b.baseline == "b/span"
    only_a = cfg.with_overrides(runs=["a"], seeds=[7])
    assert only_a.baseline is None and only_a.contrasts == [] and only_a.run_seeds(only_a.runs[0]) == [7]
    with pytest.raises(ConfigError, match=r'unknown run\(s\) \["c"\]'):
        cfg.with_overrides(runs=["c"])
    # --seeds as the schema checks a config's seeds: a repeated seed (0 too) would count one model twice
    for seeds, problem in (([0, 0], "0 is given twice"), ([1, 2, 1], "1 is given twice"), ([-1], "-1 is no seed")):
        with pytest.raises(ConfigError, match=rf"^seeds: {problem}"):
            cfg.with_overrides(seeds=seeds)


def _prediction_files_hold_the_cells(results, output_dir):
    files = {f"{c.run}/{c.decoding}": json.loads((output_dir / "predictions" / f"{c.run}-seed{c.seed}-{c.decoding}.json").read_text())
             for c in results.cells}
    return files == {f"{c.run}/{c.decoding}": dict(zip([ex.id for ex in results.eval_examples], c.answers)) for c in results.cells}


@pytest.mark.slow
def test_cells_read_back_bring_their_own_prediction_files_and_run(tiny_encoder_dir, tmp_path):
    """Decoding options changed and changed back: the cells of the first are read back, and so are their prediction
    files (not the second's, left under the same names); a run sharing another run's model gets cells of its own name."""
    long, short = config(tiny_encoder_dir, checkpoint_steps=None), config(tiny_encoder_dir, checkpoint_steps=None,
                                                                         decode={"max_answer_length": 1})
    first = run_comparison(long, FIXTURES, tmp_path)  # cells and prediction files; the report only of the last below
    run_comparison(short, FIXTURES, tmp_path)
    again = run_comparison(long, FIXTURES, tmp_path)
    assert {c.reused_model for c in again.cells} == {True}
    assert [c.answers for c in again.cells] == [c.answers for c in first.cells]
    assert _prediction_files_hold_the_cells(again, tmp_path)
    twins = config(tiny_encoder_dir, checkpoint_steps=None, runs=[{"name": "joint", "heads": "span+bio"},
                                                                  {"name": "twin", "heads": "span+bio"}])
    both, summary = compare(twins, FIXTURES, tmp_path)
    assert sorted(str(row.cell) for row in summary.rows) == sorted(f"{run}/{d}" for run in ("joint", "twin") for d in ("span", "bio", "joint"))
    assert [row.seeds for row in summary.rows] == [[5]] * 6
    assert _prediction_files_hold_the_cells(both, tmp_path)


@pytest.mark.parametrize("run, key", [({"encoder": "no/such/encoder/folder"}, "runs[1].encoder"),
                                      ({"init_from": "no/such/model"}, "runs[1].init_from"),
                                      ({"init_from": "no/such/model-*"}, "runs[1].init_from")])
def test_a_missing_encoder_or_model_of_any_run_is_refused_before_any_training(tiny_encoder_dir, tmp_path, run, key):
    """The second run's encoder (or the model it continues) is checked before the first run trains: one line naming it."""
    cfg = config(tiny_encoder_dir, runs=[{"name": "joint", "heads": "span+bio"}, {"name": "second", "heads": "bio", **run}])
    for call in (compare, train_models):
        with pytest.raises(ConfigError, match=rf"^{re.escape(key)}: .*no/such/"):
            call(cfg, FIXTURES, tmp_path / "out")
        assert not (tmp_path / "out" / "models").exists()


@pytest.mark.parametrize("pattern", ["second-seed5-*", "*", "second-*"])
def test_a_run_continuing_from_its_own_models_is_refused_before_any_training(tiny_encoder_dir, tmp_path, monkeypatch, pattern):
    """A glob ``init_from`` into the comparison's own models that matches the run's own model cannot name the model it
    starts from (that model is the one being trained): refused before the first run trains, naming the run's key."""
    trained = []

    def train_model(*args, **kwargs):
        trained.append(args)
        raise Killed

    monkeypatch.setattr(harness_models, "train_model", train_model)
    own = str(tmp_path / "out" / "models" / pattern)
    cfg = config(tiny_encoder_dir, runs=[{"name": "joint", "heads": "span+bio"}, {"name": "second", "heads": "bio", "init_from": own}])
    for call in (compare, train_models):
        with pytest.raises(ConfigError, match=rf"^runs\[1\]\.init_from: {re.escape(json.dumps(own))} matches this run's own model "
                                              r"second-seed5-\.\.\.: a run cannot continue from itself"):
            call(cfg, FIXTURES, tmp_path / "out")
        assert trained == [] and not (tmp_path / "out" / "models").exists()


def test_a_run_continuing_from_an_earlier_runs_models_is_left_to_its_turn(tiny_encoder_dir, tmp_path, monkeypatch):
    """A chain of the comparison's runs: the pattern names the earlier run's models only, which train first."""
    calls = []

    def train_model(*args, **kwargs):
        calls.append(args[1].init_from)
        raise Killed

    monkeypatch.setattr(harness_models, "train_model", train_model)
    earlier = str(tmp_path / "out" / "models" / "joint-seed5-*")
    cfg = config(tiny_encoder_dir, runs=[{"name": "joint", "heads": "span+bio"}, {"name": "second", "heads": "bio", "init_from": earlier}])
    with pytest.raises(Killed):
        train_models(cfg, FIXTURES, tmp_path / "out")
    assert calls == [None]  # the first run's training started: the chain was not refused


def test_windows_longer_than_a_later_runs_encoder_positions_are_refused_before_any_training(tiny_encoder_dir, tmp_path):
    """The tests' encoder has 128 positions: a second run's windows of 129 tokens are refused before the first run
    trains, naming the run's key (before: the first run trained and was scored, then the second failed)."""
    cfg = config(tiny_encoder_dir, runs=[{"name": "joint", "heads": "span+bio"},
                                         {"name": "long", "heads": "span", "max_seq_length": 129}])
    for call in (compare, train_models):
        with pytest.raises(ConfigError, match=r"^runs\[1\]\.max_seq_length: 129 exceeds the 128 positions a window"):
            call(cfg, FIXTURES, tmp_path / "out")
        assert not (tmp_path / "out" / "models").exists()


def test_windows_longer_than_the_encoder_positions_are_refused_before_the_data_is_read(tiny_encoder_dir, tmp_path):
    """A config's mistake is named before any data is read (which takes seconds on a full training file): here no evaluation
    file is there at all, and the windows are still what the line names."""
    cfg = config(tiny_encoder_dir, runs=[{"name": "long", "heads": "span", "max_seq_length": 129}],
                 eval={"path": str(tmp_path / "missing.json")})
    for call in (compare, train_models):
        with pytest.raises(ConfigError, match=r"^runs\[0\]\.max_seq_length: 129 exceeds the 128 positions a window"):
            call(cfg, tmp_path, tmp_path / "out")
        assert not (tmp_path / "out").exists()


def test_a_bare_encoder_as_init_from_is_refused_before_any_training(tiny_encoder_dir, tmp_path):
    cfg = config(tiny_encoder_dir, runs=[{"name": "joint", "heads": "span+bio"},
                                         {"name": "second", "heads": "bio", "init_from": str(tiny_encoder_dir)}])
    with pytest.raises(ConfigError, match=r"^runs\[1\]\.init_from: config.json: a bert model, not a bio_mrc model"):
        compare(cfg, FIXTURES, tmp_path / "out")
    assert not (tmp_path / "out" / "models").exists()
