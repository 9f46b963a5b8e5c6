"""``compare`` scores and tunes on held-out questions: an ``eval``, ``eval_also`` or ``tune`` question that a run's
models train on (its training split under other ids or spacing, the cross-validation folds, any stage of its
``init_from`` model) is refused before any model trains, in one line naming the comparison, the entries and the count."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bio_mrc.data.squad import load_squad
from bio_mrc.errors import ConfigError
from bio_mrc.harness import compare as harness_compare
from bio_mrc.harness import models as harness_models
from bio_mrc.harness.compare import compare, resolve_splits, train_models
from bio_mrc.harness.config import load_config, parse_config
from bio_mrc.model_records import RUN_FILE
from bio_mrc.question_fingerprint import fingerprint

from .conftest import require_data, shared_data_dir, untrained_model_folder

COLOURS = ["red", "blue", "green", "white"]


class Trained(Exception):
    """A model began to train."""


def squad_file(path: Path, prefix: str, spaced: bool = False) -> Path:
    """One question per colour, each its own article; ``spaced``: the same questions under
    other ids, every space of their questions and contexts doubled (no id and no context as the plain file's)."""
    space = "  " if spaced else " "
    articles = []
    for n, colour in enumerate(COLOURS):
        context = f"The {prefix} number {n} is {colour}.".replace(" ", space)
        question = f"What colour is the {prefix} number {n}?".replace(" ", space)
        answer = {"text": colour, "answer_start": context.index(colour)}
        articles.append({"title": f"{prefix} {n}", "paragraphs": [{"context": context, "qas": [
            {"id": f"{'copy-' * spaced}{prefix}-{n}", "question": question, "answers": [answer]}]}]})
    path.write_text(json.dumps({"version": "1.1", "data": articles}), encoding="utf-8")
    return path


@pytest.fixture
def files(tmp_path):
    return {name: squad_file(tmp_path / f"{name}.json", name) for name in ("train", "eval", "tune", "also")}


def config(encoder, files, **overrides):
    raw = {"name": "held-out", "train": {"path": str(files["train"])}, "eval": {"path": str(files["eval"])},
           "tune": {"path": str(files["tune"])}, "eval_also": [{"path": str(files["also"])}],
           "defaults": {"encoder": str(encoder), "max_seq_length": 32, "doc_stride": 8, "max_query_length": 12, "epochs": 1},
           "runs": [{"name": "joint", "heads": "span+bio"}], "seeds": [5]}
    return parse_config(raw | overrides)


@pytest.fixture
def no_training(monkeypatch):
    def train_model(*args, **kwargs):
        raise Trained

    monkeypatch.setattr(harness_models, "train_model", train_model)


def model_trained_on(encoder, folder: Path, *data: Path, limit: int | None = None) -> Path:
    """A model folder whose run record keeps the fingerprint of the first ``limit`` questions of each of ``data``."""
    untrained_model_folder(encoder, folder, heads="span+bio")
    examples = [ex for path in data for ex in load_squad(path).examples[:limit]]
    (folder / RUN_FILE).write_text(json.dumps({"training_questions": fingerprint(examples)}), encoding="utf-8")
    return folder


@pytest.mark.parametrize("key, file, shared", [("eval", "eval", 2), ("eval_also[0]", "also", 1), ("tune", "tune", 2)])
def test_an_init_from_model_trained_on_held_out_questions_is_refused_before_any_model_trains(
        tiny_encoder_dir, files, tmp_path, no_training, key, file, shared):
    """Its run record's fingerprint holds ``shared`` of the entry's questions, in a stage besides the training file's."""
    source = files[file]
    model = model_trained_on(tiny_encoder_dir, tmp_path / "reader", files["train"], source, limit=shared)
    cfg = config(tiny_encoder_dir, files, runs=[{"name": "joint", "heads": "span+bio"},
                                                {"name": "continued", "heads": "span+bio", "init_from": str(model)}])
    questions = "is" if shared == 1 else "are"
    for call in (compare, train_models):
        with pytest.raises(ConfigError) as refused:
            call(cfg, tmp_path, tmp_path / "out")
        assert str(refused.value) == (
            f"comparison \"held-out\": {shared} of the 4 '{key}' questions ({source}) {questions} among the questions "
            f"runs[1].init_from ({model}), the model run \"continued\" continues, was trained on (its {RUN_FILE} keeps every "
            f"stage's): a comparison scores and tunes its models on questions none of them trained on; give '{key}' other "
            "questions")
        assert not (tmp_path / "out").exists()


def test_a_training_split_holding_the_evaluation_questions_under_other_ids_and_spacing_is_refused(
        tiny_encoder_dir, files, tmp_path, no_training, monkeypatch):
    """No id and no raw context is the evaluation's, yet every question is one of them: the splits' check refuses them
    first, as paragraphs in both up to spacing; without it, the held-out check finds every question by its fingerprint."""
    spaced = squad_file(tmp_path / "spaced.json", "eval", spaced=True)
    cfg = config(tiny_encoder_dir, files, runs=[{"name": "joint", "heads": "span+bio"},
                                                {"name": "more", "heads": "span", "train_data": {"path": str(spaced)}}])
    with pytest.raises(ConfigError, match=re.escape(
            "the more run's training and eval splits overlap (4 questions, 4 contexts, under any id or spacing): ")):
        train_models(cfg, tmp_path, tmp_path / "out")
    monkeypatch.setattr(harness_compare, "check_disjoint", lambda named: None)
    with pytest.raises(ConfigError, match=re.escape(
            f"comparison \"held-out\": 4 of the 4 'eval' questions ({files['eval']}) are in 'runs[1].train_data' (the same "
            "text and context, under any id or spacing), which run \"more\" trains on: a comparison scores and tunes its "
            "models on questions none of them trained on; give 'eval' other questions")):
        train_models(cfg, tmp_path, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_tune_split_holding_questions_of_the_cross_validation_folds_is_refused(tiny_encoder_dir, files, tmp_path, no_training,
                                                                                 monkeypatch):
    """The splits' check refuses them first (paragraphs in both up to spacing); without it, the held-out check does."""
    spaced = squad_file(tmp_path / "spaced.json", "eval", spaced=True)
    cfg = config(tiny_encoder_dir, files, train=None, eval_also=[], tune={"path": str(spaced), "limit": 3},
                 cross_validation={"folds": 2, "seed": 0})
    with pytest.raises(ConfigError, match=re.escape("the eval and tune splits overlap (3 questions, 3 contexts, under any id or spacing)")):
        compare(cfg, tmp_path, tmp_path / "out")
    monkeypatch.setattr(harness_compare, "check_disjoint", lambda named: None)
    with pytest.raises(ConfigError, match=re.escape(
            f"comparison \"held-out\": 3 of the 3 'tune' questions ({spaced} (first 3 questions)) are in 'eval' (the same "
            "text and context, under any id or spacing), whose cross-validation folds its models train on: ")):
        compare(cfg, tmp_path, tmp_path / "out")


@pytest.mark.parametrize("tune", [{"path": "eval"}, {"path": "eval", "skip": 1, "limit": 2}])
def test_a_tune_split_of_the_evaluation_questions_is_refused_naming_both_and_the_count(tiny_encoder_dir, files, tmp_path,
                                                                                       no_training, tune):
    """Thresholds, priors and calibrators tuned on the questions scored would inflate the scores: refused before any
    work, in words of tuning, not of training."""
    cfg = config(tiny_encoder_dir, files, tune={**tune, "path": str(files[tune["path"]])}, eval_also=[])
    shared = tune.get("limit", 4)
    with pytest.raises(ConfigError) as refused:
        compare(cfg, tmp_path, tmp_path / "out")
    assert str(refused.value) == (
        f"the eval and tune splits overlap ({shared} questions, {shared} contexts, under any id or spacing): thresholds, "
        "priors and calibrators tuned on the questions scored inflate the scores; tune on other articles than the "
        "evaluation's (split by article)")
    assert not (tmp_path / "out").exists()


def test_held_out_questions_and_an_init_from_model_trained_elsewhere_train(tiny_encoder_dir, files, tmp_path, no_training):
    """The model continued was trained on the training file alone; the comparison goes on to train."""
    model = model_trained_on(tiny_encoder_dir, tmp_path / "reader", files["train"])
    cfg = config(tiny_encoder_dir, files, runs=[{"name": "continued", "heads": "span+bio", "init_from": str(model)}])
    with pytest.raises(Trained):
        train_models(cfg, tmp_path, tmp_path / "out")


def numbered_alike(files, tmp_path):
    """The train, tune and eval files as data sets built apart, each numbering its own questions q0, q1, ..."""
    numbered = {}
    for name in ("train", "tune", "eval"):
        raw = json.loads(files[name].read_text(encoding="utf-8"))
        for n, article in enumerate(raw["data"]):
            article["paragraphs"][0]["qas"][0]["id"] = f"q{n}"
        numbered[name] = tmp_path / f"numbered-{name}.json"
        numbered[name].write_text(json.dumps(raw), encoding="utf-8")
    return {**files, **numbered}


def test_files_that_number_their_own_questions_alike_train(tiny_encoder_dir, files, tmp_path, no_training):
    """No question or paragraph is in two of them, so the comparison goes on to train; it refused them as an overlap,
    telling to split by article."""
    cfg = config(tiny_encoder_dir, numbered_alike(files, tmp_path), eval_also=[])
    assert resolve_splits(cfg, tmp_path).eval.ids == resolve_splits(cfg, tmp_path).tune.ids == ["q0", "q1", "q2", "q3"]
    with pytest.raises(Trained):
        train_models(cfg, tmp_path, tmp_path / "out")


@pytest.mark.slow
def test_a_comparison_of_files_numbered_alike_scores_its_own_questions_and_reads_its_cells_back(tiny_encoder_dir, files, tmp_path):
    """Trained with evaluations on 'tune' (no warning of shared questions), tuned on 'tune', scored on 'eval': each by
    its own ids; a later comparison reads the cells back (``--cells-from``)."""
    cfg = config(tiny_encoder_dir, numbered_alike(files, tmp_path), eval_also=[],
                 defaults={"encoder": str(tiny_encoder_dir), "max_seq_length": 48, "doc_stride": 16, "max_query_length": 24, "epochs": 1},
                 runs=[{"name": "joint", "heads": "span+bio", "training_args": {"eval_strategy": "epoch"}}])
    results, _ = compare(cfg, tmp_path, tmp_path / "out")
    questions = [(ex.id, ex.question) for ex in results.eval_examples]
    assert questions == [(f"q{n}", f"What colour is the eval number {n}?") for n in range(4)]
    for cell in results.cells:
        predictions = json.loads((tmp_path / "out" / "predictions" / f"joint-seed5-{cell.decoding}.json").read_text())
        assert list(predictions) == ["q0", "q1", "q2", "q3"] and len(cell.f1) == 4
    again, _ = compare(cfg, tmp_path, tmp_path / "again", cells_from=tmp_path / "out" / "report.json")
    assert [(cell.decoding, list(cell.f1)) for cell in again.cells] == [(cell.decoding, list(cell.f1)) for cell in results.cells]


@pytest.mark.slow
@pytest.mark.parametrize("preset", ["quick", "full", "v2-quick"])
def test_the_presets_hold_their_evaluation_and_tuning_questions_out(preset):
    from bio_mrc.harness.held_out_questions import check_held_out_questions

    require_data("squad-v1.1/train.json")
    require_data("squad-v2.0/dev.json")
    cfg = load_config(preset)
    check_held_out_questions(cfg, resolve_splits(cfg, shared_data_dir()))
