"""The comparison harness end to end on the tiny encoder."""

import json
import math
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

from bio_mrc.harness.compare import compare, run_comparison
from bio_mrc.harness.comparison_splits import resolve_split
from bio_mrc.harness.config import DataSpec, load_config, parse_config
from bio_mrc.errors import AlwaysAbstainWarning, ConfigError, DataFormatError, FewTuningQuestionsWarning
from bio_mrc.inference import TrainedModel
from bio_mrc.machine import machine_description

from .conftest import FIXTURES, SAMPLE_V1


def config_dict(encoder, **overrides):
    raw = {
        "name": "tiny",
        "train": {"path": str(SAMPLE_V1), "split": {"fractions": [0.5, 0.5], "part": 0, "seed": 0}},
        "eval": {"path": str(SAMPLE_V1), "split": {"fractions": [0.5, 0.5], "part": 1, "seed": 0}},
        "defaults": {"encoder": str(encoder), "max_seq_length": 48, "doc_stride": 16, "max_query_length": 12,
                     "epochs": 2, "batch_size": 4, "learning_rate": 1e-3},
        "runs": [{"name": "span-only", "heads": "span"}, {"name": "joint", "heads": "span+bio", "bio_targets": "one-hot"}],
        "seeds": [1, 2],
    }
    raw.update(overrides)
    return raw


@pytest.fixture(scope="module")
def comparison(tiny_encoder_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("compare")
    results, summary = compare(parse_config(config_dict(tiny_encoder_dir)), FIXTURES, out, progress=False)
    return out, results, summary


def test_every_cell_sees_the_same_questions(comparison):
    out, results, _ = comparison
    cells = results.cells
    assert {(c.run, c.decoding, c.seed) for c in cells} == {
        (r, d, s) for s in (1, 2) for r, d in [("span-only", "span"), ("joint", "span"), ("joint", "bio"), ("joint", "joint")]
    }
    ids = [ex.id for ex in results.eval_examples]
    assert all(len(c.f1) == len(ids) for c in cells)
    for c in cells:
        predictions = json.loads((out / "predictions" / f"{c.run}-seed{c.seed}-{c.decoding}.json").read_text())
        assert list(predictions) == ids
    train_ids = {ex.id for ex in resolve_split(DataSpec(**config_dict('x')["train"]), FIXTURES).examples}
    assert train_ids.isdisjoint(ids)


def test_bootstrap_is_paired_on_per_question_scores(comparison):
    _, results, summary = comparison
    f1 = {}
    for c in results.cells:
        f1.setdefault(c.key, []).append(c.f1)
    assert summary.comparisons
    for comp in summary.comparisons:
        a, b = np.mean(f1[comp.a], axis=0), np.mean(f1[comp.b], axis=0)
        assert comp.diff == pytest.approx(a.mean() - b.mean())
        assert comp.n_questions == len(a)
        if np.allclose(a - b, (a - b)[0]):  # a constant per-question difference has a zero-width paired CI
            assert comp.ci_low == pytest.approx(comp.ci_high)
        assert comp.ci_low <= comp.diff + 1e-9 and comp.diff <= comp.ci_high + 1e-9


def test_report_files_and_table(comparison):
    out, _, summary = comparison
    report = (out / "report.md").read_text()
    for needle in ("## Scores", "span-only", "joint", "Paired differences", "BIO tags", "F1 by question word", "```json"):
        assert needle in report
    assert (out / "f1_by_answer_length.png").stat().st_size > 0
    data = json.loads((out / "report.json").read_text())
    assert data["eval"]["question_hash"] and len(data["summary"]["rows"]) == 4
    assert data["machine"] == machine_description() and f"- Machine: {data['machine']}" in report  # the times' machine
    seeds = next(r for r in summary.rows if str(r.cell) == "joint/bio").seeds
    assert seeds == [1, 2]


@pytest.mark.slow  # continues the session's overfitted model twice and scores it
def test_a_reports_tag_scores_read_the_gold_each_runs_tagger_learns(trained_dir, tiny_encoder_dir, tmp_path):
    """Each answer's text twice in its context (the paragraph repeated), the first mention annotated: the tag scores of
    a run that learns every mention and of one that learns the annotated spans are each its own rule's, end to end
    from the report, and differ (the second mentions are gold entities of the first run alone)."""
    from bio_mrc.decoding.postprocess import DecodeConfig
    from bio_mrc.features.config import FeatureConfig
    from bio_mrc.harness.cells import decode_cell, score_cell
    from bio_mrc.harness.comparison_splits import Split

    data = json.loads(SAMPLE_V1.read_text())
    for paragraph in (p for article in data["data"] for p in article["paragraphs"]):
        paragraph["context"] = f"{paragraph['context']} {paragraph['context']}"
    twice = tmp_path / "twice.json"
    twice.write_text(json.dumps(data))
    halves = {name: {"path": str(twice), "split": {"fractions": [0.5, 0.5], "part": part, "seed": 0}} for part, name in enumerate(("train", "eval"))}
    runs = [{"name": rule, "heads": "span+bio", "init_from": str(trained_dir), "tag_mentions": rule} for rule in ("every", "annotated")]
    raw = config_dict(tiny_encoder_dir, seeds=[1], runs=runs, **halves)
    raw["defaults"].update(epochs=0.01, learning_rate=1e-9)  # one step that leaves the model as it is
    results, _ = compare(parse_config(raw), FIXTURES, tmp_path / "out", progress=False)
    split = Split(results.eval_examples, "squad-v1.1", "twice")
    reported = {}
    for cell in (c for c in results.cells if c.tag_scores is not None):
        trained = TrainedModel.load(cell.model_dir)
        decoded = decode_cell(trained.windows(split.examples), split, cell.decoding, trained.decode_config(DecodeConfig()), cell.threshold,
                              None, FeatureConfig(tag_mentions=cell.run))
        assert cell.tag_scores == score_cell(split, decoded)["tag_scores"]
        reported[cell.run] = cell.tag_scores
    assert reported.keys() == {"every", "annotated"} and reported["every"] != reported["annotated"]
    assert "the first annotator's spans as each run's tagger learns them" in (tmp_path / "out" / "report.md").read_text()


def test_a_configuration_without_a_description_leaves_no_empty_paragraph_under_the_title(comparison):
    out, _, _ = comparison
    assert (out / "report.md").read_text(encoding="utf-8").startswith("# Comparison report: tiny\n\n- Date: ")


def test_a_calibration_section_without_a_tuning_split_says_why_no_cell_is_calibrated(comparison):
    """The calibrated column was empty, under a paragraph naming tuning questions the configuration did not have."""
    out, _, _ = comparison
    section = (out / "report.md").read_text(encoding="utf-8").split("## Calibration")[1].split("\n## ")[0]
    assert "| – |" in section
    assert "No cell is calibrated: the configuration has no 'tune' split to fit a calibrator on." in section


def test_models_are_reused_not_retrained(comparison, tiny_encoder_dir):
    out, results, _ = comparison
    again = run_comparison(parse_config(config_dict(tiny_encoder_dir, seeds=[1])), FIXTURES, out)  # its cells; no report
    assert all(c.reused_model for c in again.cells)
    first = {(c.run, c.decoding): c.f1 for c in results.cells if c.seed == 1}
    assert first and sorted((c.run, c.decoding) for c in again.cells) == sorted(first)  # every cell of seed 1 again
    for c in again.cells:
        np.testing.assert_array_equal(c.f1, first[(c.run, c.decoding)])


def test_a_comparison_marks_its_folder_and_resumes_there_beside_the_users_files(comparison):
    from bio_mrc.harness.comparison_folder import check_comparison_folder

    out = comparison[0]
    assert json.loads((out / ".bio_mrc-comparison.json").read_text(encoding="utf-8")) == {"written_by": "bio-mrc compare"}
    notes = out / "notes.txt"
    notes.write_text("the user's", encoding="utf-8")
    try:
        check_comparison_folder(out)  # an earlier comparison's folder: taken, whatever else is kept there
        (out / ".bio_mrc-comparison.json").rename(out / "mark")
        check_comparison_folder(out)  # written before folders were marked: its report's list of files tells it
    finally:
        notes.unlink()
        if (out / "mark").exists():
            (out / "mark").rename(out / ".bio_mrc-comparison.json")


def test_a_run_that_only_evaluates_differently_shares_the_model(comparison, tiny_encoder_dir):
    """Same training options and questions under another run name (here: evaluated in bf16): no new model."""
    out, results, _ = comparison
    raw = config_dict(tiny_encoder_dir, seeds=[1],
                      runs=[{"name": "joint-in-bf16", "heads": "span+bio", "bio_targets": "one-hot", "inference_precision": "bf16"}])
    again = run_comparison(parse_config(raw), FIXTURES, out)  # its cells; no report
    trained = {c.model_dir for c in results.cells if (c.run, c.seed) == ("joint", 1)}
    assert all(c.reused_model and c.precision == "bf16" for c in again.cells)
    assert {c.model_dir for c in again.cells} == trained
    assert not list((out / "models").glob("joint-in-bf16-*"))


def test_a_cell_keeps_no_no_answer_probabilities_of_an_earlier_squad2_evaluation(comparison, tiny_encoder_dir, tmp_path):
    """A run and seed scored on SQuAD 2.0, then on SQuAD v1.1 in the same folder: the v1.1 cell's files are its
    answers and n-best alone, never the 2.0 questions' ``.na_probs.json`` beside them, read back or scored anew."""
    import shutil

    out = tmp_path / "out"
    shutil.copytree(comparison[0], out)  # the span-only model of seed 1, its v1.1 cells cached: reused, never trained
    v1 = config_dict(tiny_encoder_dir, seeds=[1], runs=[{"name": "span-only", "heads": "span"}])
    squad2, quarters = str(squad2_file(tmp_path)), {"fractions": [0.5, 0.25, 0.25], "seed": 0}
    v2 = {**v1, "eval": {"path": squad2, "split": {**quarters, "part": 1}}, "tune": {"path": squad2, "split": {**quarters, "part": 2}}}
    na_probs = out / "predictions" / "span-only-seed1-span.na_probs.json"
    kept_before = set(out.glob("cells/*.predictions"))
    run_comparison(parse_config(v2), FIXTURES, out)
    assert na_probs.is_file()  # the 2.0 cell's own
    with_na_probs = {path.parent for path in out.glob("cells/*.predictions/*.na_probs.json")}
    assert with_na_probs == set(out.glob("cells/*.predictions")) - kept_before
    run_comparison(parse_config(v1), FIXTURES, out)  # the v1.1 cells read back from cells/
    assert not na_probs.exists()
    run_comparison(parse_config(v2), FIXTURES, out)  # read back: the 2.0 cell's file with it
    assert na_probs.is_file()
    run_comparison(parse_config({**v1, "eval": {**v1["eval"], "limit": 2}}), FIXTURES, out)  # other questions: scored here
    assert not na_probs.exists()
    assert {path.parent for path in out.glob("cells/*.predictions/*.na_probs.json")} == with_na_probs


def test_overlapping_splits_are_refused(tiny_encoder_dir, tmp_path):
    raw = config_dict(tiny_encoder_dir, eval={"path": str(SAMPLE_V1)})
    with pytest.raises(ValueError, match="overlap"):
        compare(parse_config(raw), FIXTURES, tmp_path, progress=False)


def test_config_errors_are_named():
    with pytest.raises(ConfigError, match="top level: unknown key \"epochs\"; the known keys are .*defaults, runs"):
        parse_config({"runs": [{"name": "a"}], "train": {"path": "x"}, "eval": {"path": "y"}, "epochs": 3})
    with pytest.raises(ConfigError, match="runs\\[0\\]: unknown key \"heads_\" \\(did you mean \"heads\"\\?\\)"):
        parse_config({"runs": [{"name": "a", "heads_": "span"}], "train": {"path": "x"}, "eval": {"path": "y"}})
    assert load_config("quick").runs[0].train.heads == "span+bio"


def without_timings_and_paths(value, root):
    """A report with what legitimately differs between two identical runs taken out."""
    if isinstance(value, dict):
        return {k: without_timings_and_paths(v, root) for k, v in value.items() if "seconds" not in k and k != "date"}
    if isinstance(value, list):
        return [without_timings_and_paths(v, root) for v in value]
    return value.replace(str(root), "<out>") if isinstance(value, str) else value


def squad2_file(tmp_path):
    """The sample as SQuAD 2.0 (every third question unanswerable), its articles three times over (contexts told apart),
    so that a comparison has training, tuning and evaluation articles."""
    sample, articles, k = json.loads(SAMPLE_V1.read_text()), [], 0
    for copy in range(3):
        for article in json.loads(json.dumps(sample["data"])):
            article["title"] = f"{article['title']} {copy}"
            for paragraph in article["paragraphs"]:
                paragraph["context"] += f" Copy {copy}."
                for qa in paragraph["qas"]:
                    qa["id"], k = f"{qa['id']}-{copy}", k + 1
                    if k % 3 == 0:
                        qa["answers"], qa["is_impossible"] = [], True
            articles.append(article)
    path = tmp_path / "squad2.json"
    path.write_text(json.dumps({"version": "v2.0", "data": articles}), encoding="utf-8")
    return path


def _data_config(kind, tmp_path):
    """The data of a comparison of each kind: SQuAD v1.1, SQuAD 2.0 with a tuning split (no-answer thresholds), and
    MultiSpanQA cross-validated (multi-span cells)."""
    if kind == "squad-v1.1":
        return {}
    if kind == "multispanqa":
        return {"train": None, "eval": {"path": str(multispan_file(tmp_path)), "format": "multispanqa"},
                "cross_validation": {"folds": 3, "seed": 0}}
    path, thirds = str(squad2_file(tmp_path)), {"fractions": [0.5, 0.25, 0.25], "seed": 0}
    return {name: {"path": path, "split": {**thirds, "part": part}} for part, name in enumerate(("train", "eval", "tune"))}


def _always_abstains(threshold) -> bool:
    """A cell's threshold as report.json holds it: a number, or JSON's word for -inf."""
    return threshold is not None and float(threshold.get("__float__") if isinstance(threshold, dict) else threshold) == -math.inf


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["squad-v1.1", "squad-v2.0", "multispanqa"])
def test_same_seed_and_inputs_give_identical_predictions_and_reports(tiny_encoder_dir, tmp_path, kind):
    raw = config_dict(tiny_encoder_dir, seeds=[3], runs=[{"name": "joint", "heads": "span+bio"}], **_data_config(kind, tmp_path))
    raw = {key: value for key, value in raw.items() if value is not None}
    reports = []
    for name in ("a", "b"):
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always", AlwaysAbstainWarning)
            compare(parse_config(raw), FIXTURES, tmp_path / name, progress=False)
        reports.append(without_timings_and_paths(json.loads((tmp_path / name / "report.json").read_text()), tmp_path / name))
        assert not any(c["reused_model"] for c in reports[-1]["cells"])  # trained from scratch both times
        # a tiny model on a few tuning questions may abstain on all of them: each decoding that does is said, alone
        warned = [re.search(r"tuned for (\w+) is -inf", str(w.message))[1] for w in said if w.category is AlwaysAbstainWarning]
        assert sorted(warned) == sorted(c["decoding"] for c in reports[-1]["cells"] if _always_abstains(c.get("threshold")))
    assert reports[0] == reports[1] and reports[0]["eval"]["task"] == kind
    if kind == "squad-v2.0":  # thresholds tuned, and the unanswerable questions scored
        assert all(c["threshold"] is not None for c in reports[0]["cells"])
    for decoding in ("span", "bio", "joint"):
        name = f"joint-seed3-{decoding}.nbest.json"
        assert (tmp_path / "a" / "predictions" / name).read_bytes() == (tmp_path / "b" / "predictions" / name).read_bytes()


@pytest.mark.slow
def test_an_interrupted_comparison_reuses_every_finished_model_and_cell(tiny_encoder_dir, tmp_path, monkeypatch):
    import bio_mrc.harness.compare as harness
    import bio_mrc.harness.models as models

    raw = config_dict(tiny_encoder_dir, seeds=[1], runs=[{"name": "first", "heads": "span"}, {"name": "second", "heads": "bio"}])
    train, score = models.train_model, harness.score_model
    scored = []

    def killed_in_second_run(examples, config, *args, **kwargs):
        if config.heads == "bio":
            raise KeyboardInterrupt  # as if the process were stopped while training the second model
        return train(examples, config, *args, **kwargs)

    monkeypatch.setattr(models, "train_model", killed_in_second_run)
    monkeypatch.setattr(harness, "score_model", lambda trained, run, *a, **k: scored.append(run.name) or score(trained, run, *a, **k))
    with pytest.raises(KeyboardInterrupt):
        compare(parse_config(raw), FIXTURES, tmp_path, progress=False)
    assert scored == ["first"] and len(list((tmp_path / "cells").glob("first-*.json"))) == 1
    monkeypatch.setattr(models, "train_model", train)
    results, _ = compare(parse_config(raw), FIXTURES, tmp_path, progress=False)
    assert scored == ["first", "second"]  # the first model was neither retrained nor scored again
    assert [(c.run, c.reused_model) for c in results.cells] == [("first", True), ("second", False)]


@pytest.mark.slow
def test_a_reused_model_keeps_the_values_tuned_on_its_first_tuning_split(tiny_encoder_dir, tmp_path):
    normans = {"path": str(SAMPLE_V1), "split": {"fractions": [0.5, 0.5], "part": 0, "seed": 0}}  # n1-n3, then n4-n5
    raw = config_dict(tiny_encoder_dir, seeds=[1], runs=[{"name": "joint", "heads": "span+bio"}], train={**normans, "limit": 3})
    results, _ = compare(parse_config({**raw, "tune": {**normans, "skip": 3, "limit": 1}}), FIXTURES, tmp_path, progress=False)
    config_file = tmp_path / "models" / results.cells[0].model_dir.rsplit("/", 1)[-1] / "config.json"
    saved = json.loads(config_file.read_text())
    assert saved["tuned_on"]["questions"] == 1 and "bio_length_prior" in saved
    assert saved["tuned_on"]["precision"] in ("fp32", "bf16") and saved["tuned_on"]["device"] == "cpu"  # auto resolved
    assert all(c.tuning_saved_with_model for c in results.cells)
    again, _ = compare(parse_config({**raw, "tune": {**normans, "skip": 4}}), FIXTURES, tmp_path, progress=False)
    assert len(again.cells) == len(results.cells) > 0
    assert all(c.reused_model and not c.tuning_saved_with_model for c in again.cells)
    assert json.loads(config_file.read_text()) == saved  # another comparison's tuning never lands in the cached model


@pytest.mark.slow  # trains a model of its own and compares twice; the fast tier holds the lock's test on a shared model below
def test_a_comparison_scores_a_model_another_process_writes_and_leaves_its_folder_as_it_is(tiny_encoder_dir, tmp_path):
    """The evaluation record and card went into a cached model folder without the lock tune holds, as the tuned
    settings did: another process writing the folder (a user's tune) has it kept as it is, and the comparison ends."""
    pytest.importorskip("fcntl")
    import os
    import shutil

    from bio_mrc.io import sole_process_in

    normans = {"path": str(SAMPLE_V1), "split": {"fractions": [0.5, 0.5], "part": 0, "seed": 0}}
    raw = config_dict(tiny_encoder_dir, seeds=[1], runs=[{"name": "joint", "heads": "span+bio"}], train={**normans, "limit": 3})
    config = parse_config({**raw, "tune": {**normans, "skip": 3, "limit": 1}})
    results, _ = compare(config, FIXTURES, tmp_path, progress=False)
    model = Path(os.path.realpath(tmp_path / "models" / results.cells[0].model_dir.rsplit("/", 1)[-1]))
    before = {path.name: path.read_bytes() for path in model.iterdir() if path.is_file()}
    shutil.rmtree(tmp_path / "cells")  # scored again below
    with sole_process_in(model, "held"):
        again, _ = compare(config, FIXTURES, tmp_path, progress=False)
    assert len(again.cells) == len(results.cells) > 0
    assert all(c.reused_model and not c.tuning_saved_with_model for c in again.cells)
    assert all(np.array_equal(a.f1, b.f1) for a, b in zip(again.cells, results.cells))  # scored all the same
    assert {path.name: path.read_bytes() for path in model.iterdir() if path.is_file()} == before


def joint_model(comparison) -> Path:
    """The module comparison's joint model of seed 1: a test that writes into it copies it first."""
    _, results, _ = comparison
    return Path(next(c.model_dir for c in results.cells if (c.run, c.seed) == ("joint", 1)))


def test_a_comparison_saves_its_tuning_only_while_it_alone_writes_the_model_folder(comparison, tmp_path):
    """A comparison saved its tuned settings into a cached model without the lock tune holds: a user's tune of that
    model at the same time, or one that saved since the comparison read the model, had its settings written over."""
    pytest.importorskip("fcntl")
    import os
    import shutil

    from bio_mrc.data.squad import load_squad
    from bio_mrc.decoding.postprocess import DecodeConfig
    from bio_mrc.harness.comparison_splits import Split
    from bio_mrc.harness.scoring import tuned_decoding
    from bio_mrc.io import sole_process_in

    model = tmp_path / "model"
    shutil.copytree(joint_model(comparison), model)
    config = model / "config.json"
    tune = Split(load_squad(SAMPLE_V1).examples, "squad-v1.1", "tune questions")
    before = config.read_bytes()
    with sole_process_in(os.path.realpath(model), "held"):  # a user's tune writing the folder now
        tuned, saved = tuned_decoding(TrainedModel.load(model), DecodeConfig(), tune, progress=False)
    assert saved is False and config.read_bytes() == before  # not saved, and said to be
    assert tuned.settings["bio_length_prior"] is not None  # tuned all the same: the comparison scores with it
    trained = TrainedModel.load(model)
    mine = {"description": "mine.json", "questions": 3, "content_hash": "mine"}
    config.write_text(json.dumps({**json.loads(before), "tuned_on": mine}), encoding="utf-8")  # a tune that saved since
    after_tune = config.read_bytes()
    assert tuned_decoding(trained, DecodeConfig(), tune, progress=False)[1] is False
    assert config.read_bytes() == after_tune
    config.write_bytes(before)
    tuned, saved = tuned_decoding(TrainedModel.load(model), DecodeConfig(), tune, progress=False)
    assert saved is True and json.loads(config.read_text())["tuned_on"]["description"] == "tune questions"


MULTISPAN_CONTEXTS = [
    ["In", "1981", ",", "Dave", "Stewart", "and", "Barbara", "Gaskin", "sang", "."],
    ["Red", ",", "green", "and", "blue", "are", "primary", "colours", "of", "light", "."],
    ["The", "river", "passes", "Paris", "and", "Rouen", "before", "the", "sea", "."],
]


def multispan_file(tmp_path, n=12):
    records = []
    for k in range(n):
        context = MULTISPAN_CONTEXTS[k % 3]
        label = ["O"] * len(context)
        for start, length in ((3, 2), (6, 2)) if k % 3 == 0 else ((0, 1), (2, 1)) if k % 3 == 1 else ((3, 1), (5, 1)):
            label[start : start + length] = ["B"] + ["I"] * (length - 1)
        records.append({"id": f"m{k}", "question": ["which", "ones", str(k), "?"], "context": context, "label": label})
    path = tmp_path / "multispan.json"
    path.write_text(json.dumps({"data": records}), encoding="utf-8")
    return path


@pytest.mark.slow
def test_multispanqa_cross_validation_through_the_harness(tiny_encoder_dir, tmp_path):
    from bio_mrc.data.multispanqa import load_multispanqa, multispan_gold_texts
    from bio_mrc.metrics.multispan_official import multispan_metrics

    path = multispan_file(tmp_path)
    raw = config_dict(tiny_encoder_dir, seeds=[1], runs=[{"name": "joint", "heads": "span+bio"}],
                      eval={"path": str(path), "format": "multispanqa"}, cross_validation={"folds": 3, "seed": 0})
    del raw["train"]
    results, summary = compare(parse_config(raw), FIXTURES, tmp_path / "out", progress=False)
    assert len(list((tmp_path / "out" / "models").iterdir())) == 3  # one model per fold
    gold = multispan_gold_texts(load_multispanqa(path))
    for row in summary.rows:  # each row is the official metric of the pooled prediction file
        predicted = json.loads((tmp_path / "out" / "predictions" / f"joint-seed1-{row.decoding}.json").read_text())
        assert set(predicted) == set(gold)
        official = multispan_metrics(gold, predicted)
        assert all(row.scores[k] == [pytest.approx(v)] for k, v in official.items())
    assert {c.decoding for c in results.cells} == {"span", "bio", "joint"}
    for cell in results.cells:  # every fold's own tuned prior, their mean as the cell's; the forward pass's precision
        priors = cell.fold_bio_length_priors
        assert len(priors) == 3 and cell.precision in ("fp32", "bf16", "auto") and cell.fold_thresholds == [None] * 3
        if cell.decoding == "span":
            assert priors == [None] * 3 and cell.bio_length_prior is None
        else:
            assert all(p is not None for p in priors) and cell.bio_length_prior == pytest.approx(sum(priors) / 3)
    assert len(summary.comparisons) == 3 and all(c.n_questions == 12 for c in summary.comparisons)
    report = (tmp_path / "out" / "report.md").read_text()
    assert "3-fold cross-validation" in report and "EM F1" in report and "PM F1" in report


def test_cross_validation_and_a_training_split_exclude_each_other(tiny_encoder_dir):
    with pytest.raises(ValueError, match="leave out 'train'"):
        parse_config(config_dict(tiny_encoder_dir, cross_validation={"folds": 3}))
    raw = config_dict(tiny_encoder_dir)
    del raw["train"]
    with pytest.raises(ValueError, match="needs a 'train' split"):
        parse_config(raw)


def test_the_cells_cache_follows_the_code_that_scores_and_nothing_else(tmp_path):
    """What a cached cell depends on is derived from the scoring module's imports: the code of features,
    model, inference, decoding and metrics is in it; report renderers and training are not (their change
    keeps hours of scored cells)."""
    import shutil
    from pathlib import Path

    import bio_mrc
    from bio_mrc.code_fingerprint import source_closure, sources_digest

    package = Path(bio_mrc.__file__).parent
    scoring = {path.relative_to(package).as_posix() for path in source_closure(("bio_mrc.harness.scoring",))}
    assert {"harness/cells.py", "harness/scoring.py", "decoding/postprocess.py", "features/windows.py", "features/targets.py", "model.py",
            "inference/forward.py", "inference/tuning.py", "heads/bio.py", "registry.py", "metrics/multispan_official.py",
            "data/multispanqa.py"} <= scoring  # the last two only through the registry's "module:attribute" names
    assert not {"cli/__init__.py", "cli/parser.py", "cli/answer_commands.py",
                "harness/compare.py", "harness/report.py", "harness/summary.py", "harness/html_report.py",
                "metrics/stats.py", "metrics/paired_scores.py", "inference/paired_evaluation.py",
                "harness/plots.py", "harness/learning_curve.py", "harness/earlier_report.py",
                "harness/summary_records.py", "harness/statistics_records.py", "harness/selective_records.py",
                "harness/learning_curve_records.py", "harness/data_set_records.py",
                "training/train.py", "harness/models.py", "features/collate.py"} & scoring

    copy = tmp_path / "bio_mrc"
    shutil.copytree(package, copy, ignore=shutil.ignore_patterns("__pycache__"))
    fingerprint = sources_digest  # uncached: the sources change under it
    before = fingerprint(("bio_mrc.harness.scoring",), copy)
    with (copy / "harness" / "report.py").open("a") as handle:
        handle.write("\n# a report-only change\n")
    assert fingerprint(("bio_mrc.harness.scoring",), copy) == before
    with (copy / "decoding" / "spans.py").open("a") as handle:
        handle.write("\n# a decoder change\n")
    assert fingerprint(("bio_mrc.harness.scoring",), copy) != before
    decoder_changed = fingerprint(("bio_mrc.harness.scoring",), copy)
    with (copy / "features" / "targets.py").open("a") as handle:
        handle.write("\n# a change of the gold the tagger learns, which the tag scores read\n")
    assert fingerprint(("bio_mrc.harness.scoring",), copy) != decoder_changed


def test_a_model_is_stale_once_the_encoder_it_was_trained_from_changes(tiny_encoder_dir, tmp_path):
    """A reused model's record keeps a digest of its encoder's weights and tokenizer: one tokenizer.json entry changed
    in place makes it stale; a config.json change (a tuned model's thresholds) and a record without the digest do not."""
    import shutil

    from bio_mrc.encoders import starting_point_digest
    from bio_mrc.harness.models import same_starting_point
    from bio_mrc.training.train import TrainConfig

    encoder = tmp_path / "encoder"
    shutil.copytree(tiny_encoder_dir, encoder)
    config = TrainConfig(encoder=str(encoder))
    record = {"starting_point_digest": starting_point_digest(encoder)}
    assert same_starting_point(record, config) and same_starting_point({}, config)
    (encoder / "config.json").write_text((encoder / "config.json").read_text().replace("}", ', "note": 1}', 1))
    assert same_starting_point(record, config)
    definition = json.loads((encoder / "tokenizer.json").read_text())
    vocabulary = definition["model"]["vocab"]
    vocabulary["normans"], vocabulary["normandy"] = vocabulary["normandy"], vocabulary["normans"]
    (encoder / "tokenizer.json").write_text(json.dumps(definition))
    assert not same_starting_point(record, config) and same_starting_point({}, config)


@pytest.mark.slow
def test_a_comparison_trains_again_from_an_encoder_changed_in_place(tiny_encoder_dir, tmp_path):
    import shutil

    encoder = tmp_path / "encoder"
    shutil.copytree(tiny_encoder_dir, encoder)
    raw = config_dict(encoder, seeds=[1], runs=[{"name": "joint", "heads": "span+bio"}])
    raw["defaults"]["epochs"] = 1
    compare(parse_config(raw), FIXTURES, tmp_path / "out", progress=False)
    definition = json.loads((encoder / "tokenizer.json").read_text())
    vocabulary = definition["model"]["vocab"]
    vocabulary["normans"], vocabulary["normandy"] = vocabulary["normandy"], vocabulary["normans"]
    (encoder / "tokenizer.json").write_text(json.dumps(definition))
    again, _ = compare(parse_config(raw), FIXTURES, tmp_path / "out", progress=False)
    assert not any(c.reused_model for c in again.cells)  # trained again from the changed tokenizer, not reused
    model = json.loads((tmp_path / "out" / "models" / again.cells[0].model_dir.rsplit("/", 1)[-1] / "tokenizer.json").read_text())
    assert model["model"]["vocab"]["normans"] == vocabulary["normans"]


@pytest.mark.parametrize("measured", ["fp32", "bf16"])
def test_cells_are_cached_under_the_precision_auto_answers_in(comparison, monkeypatch, measured):
    """``auto`` is keyed as what it resolves to on this machine (what the model's runner answers in), so cells scored in
    one precision are not read back once the measurement chooses the other."""
    from bio_mrc import precision, precision_probe
    from bio_mrc.harness.compare import answering_precision
    from bio_mrc.inference.forward import TorchRunner

    monkeypatch.setattr(precision, "native_bf16", lambda device: True)
    monkeypatch.setattr(precision_probe, "measured_choice", lambda *args, **kwargs: {"precision": measured, "how": "cached"})
    _, results, _ = comparison
    model_dir = results.cells[0].model_dir
    assert answering_precision(model_dir, "auto") == measured == TorchRunner(TrainedModel.load(model_dir).model, "auto").precision
    assert answering_precision(model_dir, "fp32") == "fp32" and answering_precision(model_dir, "bf16") == "bf16"
    assert {cell.precision for cell in results.cells} <= {"fp32", "bf16"}  # what answered, never "auto"


@pytest.mark.parametrize("key, entry", [
    ("tune", {"tune": {"path": str(SAMPLE_V1), "skip": 8}}),
    ("eval", {"eval": {"path": str(SAMPLE_V1), "skip": 20, "limit": 3}}),
    ("train", {"train": {"path": str(SAMPLE_V1), "split": {"fractions": [0.5, 0.5], "part": 0, "seed": 0}, "skip": 5}}),
    ("eval_also[0]", {"eval_also": [{"path": str(SAMPLE_V1), "skip": 8}]}),
])
def test_an_entry_that_holds_no_questions_is_refused_before_training(tiny_encoder_dir, key, entry):
    """The sample has 8 questions (5 in the train part): skipping them all leaves none to train, tune or score on."""
    from bio_mrc.harness.compare import resolve_splits

    config = parse_config(config_dict(tiny_encoder_dir, **entry))
    with pytest.raises(ConfigError, match=rf"^{re.escape(key)}: .* holds no questions"):
        resolve_splits(config, FIXTURES)


@pytest.mark.parametrize("fractions", [[1e-300, 1], [1.0, 1e-9]])
def test_a_split_fraction_that_leaves_a_part_no_articles_is_refused_naming_the_key(tiny_encoder_dir, fractions):
    """Both sum to 1 within the tolerance, yet one part's share rounds to none: scikit-learn's ValueError was a traceback."""
    from bio_mrc.harness.compare import resolve_splits

    config = parse_config(config_dict(tiny_encoder_dir, eval={"path": str(SAMPLE_V1), "split": {"fractions": fractions, "part": 0}}))
    with pytest.raises(ConfigError, match=r"^eval: split: fraction .* leaves a part no share of the articles$"):
        resolve_splits(config, FIXTURES)


def test_a_data_file_that_is_not_there_is_refused_naming_the_key(tiny_encoder_dir, tmp_path):
    from bio_mrc.harness.compare import resolve_splits

    config = parse_config(config_dict(tiny_encoder_dir, train={"path": "nope.json"}))
    with pytest.raises(DataFormatError, match=rf"^train: file not found \(in {re.escape(str(tmp_path / 'nope.json'))}\)$"):
        resolve_splits(config, tmp_path)


@pytest.mark.parametrize("key", ["encoder", "init_from"])
def test_an_empty_encoder_or_init_from_is_refused_not_read_as_the_current_folder(tiny_encoder_dir, key):
    """Path("") is "." : an empty name was read as the working folder, refused later as an output inside a model."""
    raw = config_dict(tiny_encoder_dir)
    raw["runs"][1][key] = ""
    with pytest.raises(ConfigError, match=rf'^runs\[1\]\.{key}: "" should be non-empty$'):
        parse_config(raw)


def test_a_squad2_tune_split_for_an_evaluation_that_always_has_answers_is_refused(tiny_encoder_dir, tmp_path):
    """Its tuned no-answer threshold made every SQuAD v1.1 question abstain (an F1 of 0 for answers the model had)."""
    from bio_mrc.harness.compare import resolve_splits

    config = parse_config(config_dict(tiny_encoder_dir, tune={"path": str(squad2_file(tmp_path))}))
    with pytest.raises(ConfigError, match=r"^tune: its questions may have no answer .* every question has an answer"):
        resolve_splits(config, FIXTURES)


def test_a_squad2_evaluation_without_a_tuning_split_names_eval_and_what_to_give(tiny_encoder_dir, tmp_path):
    from bio_mrc.harness.compare import resolve_splits

    config = parse_config(config_dict(tiny_encoder_dir, eval={"path": str(squad2_file(tmp_path))}))
    with pytest.raises(ConfigError, match=r"^eval: its questions may have no answer \(SQuAD v2\.0 official metrics\), "
                                          r"so each decoding's no-answer threshold is tuned: give a 'tune' split"):
        resolve_splits(config, FIXTURES)


def test_a_tuning_split_whose_every_question_has_an_answer_is_named_for_a_squad2_evaluation(tiny_encoder_dir, tmp_path):
    """A 'tune' split was given, so "needs a SQuAD 2.0 'tune' split" sent the reader looking for a missing key."""
    from bio_mrc.harness.compare import resolve_splits

    config = parse_config(config_dict(tiny_encoder_dir, eval={"path": str(squad2_file(tmp_path))},
                                      tune={"path": str(SAMPLE_V1), "split": {"fractions": [0.5, 0.5], "part": 1, "seed": 0}}))
    with pytest.raises(ConfigError, match=r"^tune: every question has an answer \(SQuAD v1\.1 official metrics\), so no "
                                          r"no-answer threshold can be tuned on it .* questions may have none"):
        resolve_splits(config, FIXTURES)


def _parts_shaped_jsonl(tmp_path):
    """Questions in the Hugging Face SQuAD columns, each listing answers that share no text, as one answer's parts do."""
    context = "The Normans came from Denmark, Iceland and Norway."
    path = tmp_path / "parts.jsonl"
    path.write_text("".join(json.dumps({"id": f"p{n}", "title": f"t{n}", "question": f"Where from {n}?", "context": context,
                                        "answers": {"text": parts, "answer_start": [context.index(t) for t in parts]}}) + "\n"
                            for n, parts in enumerate([["Denmark", "Norway"], ["Iceland", "Norway"]])), encoding="utf-8")
    return path


def test_a_comparison_says_when_answers_shaped_as_parts_are_read_as_alternatives(tmp_path):
    """``train``, ``tune`` and ``evaluate`` said so in a note; a comparison scored such a file with SQuAD's metrics unsaid."""
    from bio_mrc.data.answer_parts import AlternativesReadNote

    path = _parts_shaped_jsonl(tmp_path)
    with pytest.warns(AlternativesReadNote, match=r"^eval: 2 questions of .*parts\.jsonl list several answers that share no text.*"
                                                  r"give \"format\": \"answer-parts\" in eval where they are the parts of one answer, "
                                                  r"or \"format\": \"squad\" to read them as alternatives without this note$"):
        split = resolve_split(DataSpec(path=str(path)), tmp_path, "eval")
    assert split.task == "squad-v1.1"


def test_a_comparison_reads_answers_named_as_alternatives_without_the_note(tmp_path):
    """An entry naming "format": "squad" means SQuAD's alternatives, as one reading the note gives it: read so, unsaid,
    where the same entry without a format says so."""
    import warnings

    path = _parts_shaped_jsonl(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        split = resolve_split(DataSpec(path=str(path), format="squad"), tmp_path, "eval")
    assert split.task == "squad-v1.1" and split.gold["p0"] == ["Denmark", "Norway"]


def test_a_format_not_given_is_told_from_squad_given_and_saved_as_before(tiny_encoder_dir, tmp_path):
    """No "format" (or null) reads the data's own; the config a report keeps says "squad" for it, as it always has."""
    unnamed = parse_config(config_dict(tiny_encoder_dir, eval={"path": str(SAMPLE_V1), "format": None}))
    named = parse_config(config_dict(tiny_encoder_dir, eval={"path": str(SAMPLE_V1), "format": "squad"},
                                     runs=[{"name": "joint", "train_data": {"path": str(SAMPLE_V1)}}]))
    assert DataSpec(path="x").format is None and unnamed.eval.format is None and unnamed.train.format is None
    assert named.eval.format == "squad" and named.runs[0].data.format is None
    assert unnamed.to_dict()["eval"]["format"] == unnamed.to_dict()["train"]["format"] == "squad"
    assert named.to_dict()["runs"][0]["train_data"]["format"] == "squad"
    assert parse_config(unnamed.to_dict()).to_dict() == unnamed.to_dict()


def test_a_comparison_reads_answers_named_as_parts_without_the_note(tmp_path):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        split = resolve_split(DataSpec(path=str(_parts_shaped_jsonl(tmp_path)), format="answer-parts"), tmp_path, "eval")
    assert split.task == "answer-parts" and split.examples[0].answer_texts() == [["Denmark", "Norway"]]


def test_span_count_thresholds_untuned_are_not_called_tuned(tiny_encoder_dir, tmp_path):
    """Without a 'tune' split or folds the thresholds are the decodings' defaults, which the report called tuned."""
    raw = config_dict(tiny_encoder_dir, seeds=[1], runs=[{"name": "joint", "heads": "span+bio"}],
                      eval={"path": str(_parts_shaped_jsonl(tmp_path)), "format": "answer-parts"})
    compare(parse_config(raw), tmp_path, tmp_path / "out", progress=False)
    section = (tmp_path / "out" / "report.md").read_text(encoding="utf-8").split("## Span-count thresholds")[1].split("##")[0]
    assert "tuned on held-out questions" not in section
    assert "not tuned here: the configuration has no 'tune' split" in section


def test_a_model_continued_from_a_pattern_is_stale_once_the_model_the_pattern_finds_changes(tmp_path, monkeypatch):
    """``init_from`` a glob pattern: the pattern is resolved before the model's key and its staleness are read, so the
    digest is of the folder it finds (a pattern itself names no folder to digest): reused while that folder is
    unchanged, trained again once its weights change in place."""
    import dataclasses

    from bio_mrc.encoders import starting_point_digest
    from bio_mrc.harness import models
    from bio_mrc.harness.comparison_splits import Split
    from bio_mrc.harness.config import RunSpec
    from bio_mrc.model_folder import RUN_FILE
    from bio_mrc.training.train import TrainConfig

    upstream = tmp_path / "upstream" / "joint-seed5-0123456789ab"
    upstream.mkdir(parents=True)
    (upstream / RUN_FILE).write_text("{}")
    (upstream / "model.safetensors").write_bytes(b"first weights")
    run = RunSpec("next", TrainConfig(init_from=str(tmp_path / "upstream" / "joint-seed5-*"), precision="fp32"))
    split = Split([], "squad-v1.1", "no questions")
    resolved = dataclasses.replace(run.train, seed=5, init_from=str(upstream))
    models_dir = tmp_path / "models"
    kept = models_dir / f"next-seed5-{models.model_key(resolved, split)}"
    kept.mkdir(parents=True)
    (kept / RUN_FILE).write_text(json.dumps({"train": resolved.to_dict(), "seconds": 1.0,
                                             "starting_point_digest": starting_point_digest(upstream)}))
    trained = []

    def train(examples, config, model_dir, **_):
        trained.append(config.init_from)
        (model_dir / RUN_FILE).write_text(json.dumps({"train": config.to_dict(), "seconds": 2.0}))

    monkeypatch.setattr(models, "train_model", train)
    assert models.obtain_model(run, 5, split, models_dir, progress=False).reused and trained == []
    (upstream / "model.safetensors").write_bytes(b"weights replaced in place")
    assert not models.obtain_model(run, 5, split, models_dir, progress=False).reused and trained == [str(upstream)]


@pytest.mark.parametrize("seconds", [None, "12", -1.0, True, "missing"])
def test_a_kept_models_run_record_of_no_training_time_is_one_line(tmp_path, seconds):
    """A model's record whose options match but whose ``seconds`` is edited into no time was a KeyError, TypeError or
    ValueError traceback on every later comparison (or a negative time in its cells)."""
    from dataclasses import replace

    from bio_mrc.harness import models
    from bio_mrc.harness.comparison_splits import Split
    from bio_mrc.harness.config import RunSpec
    from bio_mrc.model_folder import RUN_FILE
    from bio_mrc.training.train import TrainConfig

    run, split = RunSpec("span", TrainConfig(precision="fp32")), Split([], "squad-v1.1", "no questions")
    resolved = replace(run.train, seed=5)
    kept = tmp_path / "models" / f"span-seed5-{models.model_key(resolved, split)}"
    kept.mkdir(parents=True)
    record = {"train": resolved.to_dict(), **({} if seconds == "missing" else {"seconds": seconds})}
    (kept / RUN_FILE).write_text(json.dumps(record))
    with pytest.raises(DataFormatError, match=rf"'seconds' holds .*not a number of seconds trained.*\(in {re.escape(str(kept / RUN_FILE))}\)"):
        models.obtain_model(run, 5, split, tmp_path / "models", progress=False)
    record["seconds"] = 7
    (kept / RUN_FILE).write_text(json.dumps(record))
    assert models.obtain_model(run, 5, split, tmp_path / "models", progress=False) == (kept, 7.0, True, False)


def test_a_model_that_keeps_its_best_checkpoint_is_the_tuning_questions_too(tmp_path, monkeypatch):
    """With load_best_model_at_end the checkpoint kept is chosen by the scores on the 'tune' questions: other tuning
    questions train another model, never reuse the one chosen on the first; a run that only logs its scores is reused."""
    from bio_mrc.harness import models
    from bio_mrc.harness.comparison_splits import Split
    from bio_mrc.harness.config import RunSpec
    from bio_mrc.model_folder import RUN_FILE
    from bio_mrc.training.train import TrainConfig
    from bio_mrc.types import Example

    def split(name):
        return Split([Example(name, "Who?", "Rollo came.", (((0, 5),),))], "squad-v1.1", name)

    trained = []

    def train(examples, config, model_dir, **_):
        trained.append(model_dir.name)
        model_dir.mkdir(parents=True, exist_ok=True)
        (model_dir / RUN_FILE).write_text(json.dumps({"train": config.to_dict(), "seconds": 2.0}))

    monkeypatch.setattr(models, "train_model", train)
    monkeypatch.setattr(models, "TrainingEvaluator", lambda *args, **kwargs: None)
    scores = {"eval_strategy": "steps", "eval_steps": 1}
    for keeps_best, expected in ((True, 2), (False, 1)):
        args = {**scores, "load_best_model_at_end": True, "metric_for_best_model": "span_f1"} if keeps_best else scores
        run = RunSpec("joint", TrainConfig(precision="fp32", training_args=args))
        models_dir, trained[:] = tmp_path / f"models-{keeps_best}", []
        first = models.obtain_model(run, 5, split("train"), models_dir, progress=False, held_out=split("tune-a"))
        again = models.obtain_model(run, 5, split("train"), models_dir, progress=False, held_out=split("tune-b"))
        assert len(trained) == expected and again.reused == (not keeps_best) and (first.model_dir == again.model_dir) == (not keeps_best)


def test_the_cells_cache_follows_the_models_own_files_not_its_folder(tmp_path):
    """A model trained again in its folder (its encoder changed in place) has other weights: its cells are scored
    again, never read back from the model that was there before; the same files in another folder keep the key."""
    from types import SimpleNamespace

    from bio_mrc.harness.compare import _cells_key
    from bio_mrc.harness.comparison_splits import Split

    config = SimpleNamespace(decode=SimpleNamespace(n_best=20))
    splits = SimpleNamespace(eval=Split([], "squad-v1.1", "eval"), tune=None)
    model, same = tmp_path / "model", tmp_path / "elsewhere"
    for folder in (model, same):
        folder.mkdir()
        (folder / "model.safetensors").write_bytes(b"weights of the first training")
    before = _cells_key(config, splits, "fp32", model)
    assert _cells_key(config, splits, "fp32", same) == before
    (model / "model.safetensors").write_bytes(b"weights of the training from the changed encoder")
    assert _cells_key(config, splits, "fp32", model) != before


def test_the_cells_cache_follows_the_task_the_questions_are_scored_as(tmp_path):
    """The same file read as another format (squad, answer-parts) holds the same questions but is scored otherwise
    (SQuAD's EM/F1 against MultiSpanQA's counts): its cells are scored again, never read back (a traceback)."""
    from types import SimpleNamespace

    from bio_mrc.harness.compare import _cells_key
    from bio_mrc.harness.comparison_splits import Split

    (tmp_path / "model.safetensors").write_bytes(b"weights")
    config = SimpleNamespace(decode=SimpleNamespace(n_best=20))
    keys = {_cells_key(config, SimpleNamespace(eval=Split([], task, "eval", parts), tune=None), "fp32", tmp_path)
            for task, parts in [("squad-v1.1", []), ("answer-parts", []), ("multispanqa", [SimpleNamespace(task="multispanqa")]),
                                ("multispanqa", [SimpleNamespace(task="quoref")])]}
    assert len(keys) == 4


def test_a_reports_configuration_trains_the_same_runs_again():
    """report.md's configuration is to be repeated with --config: a run's tag_mentions 'annotated' (the value an older
    model's record means when it names none) is kept in it, not left out to be read back as today's default, 'every'."""
    config = load_config(Path(__file__).resolve().parents[1] / "benchmarks" / "ablations" / "every_mention_squad.json")
    assert config.to_dict()["runs"][0]["tag_mentions"] == "annotated"
    again = parse_config(json.loads(json.dumps(config.to_dict())))
    assert [run.train.tag_mentions for run in again.runs] == ["annotated", "every"]
    assert again.runs == config.runs


def test_an_unreadable_cells_cache_is_scored_again_and_a_folder_in_its_place_is_one_line(tmp_path):
    from bio_mrc.harness.compare import _read_browser_data, _read_cells, check_cache_files
    from bio_mrc.harness.browser_data import ModelBrowserData, save_browser_data

    cells = tmp_path / "m-key.json"
    cells.write_text('[{"run": "span-only", "decoding": "sp', encoding="utf-8")  # cut short
    assert _read_cells(cells, 2) is None
    for content in ("[1, 2]", "{}", "[]", "\xff", "[" * 100_000 + "]" * 100_000):  # the last nested past the parser's stack
        cells.write_text(content, encoding="latin-1")
        assert _read_cells(cells, 2) is None
    whole = {"run": "span-only", "f1": [0.0, 50.0], "em": [0, 0], "answers": ["a", "b"],
             "selective": {"right": [0, 1], "confidence": {"raw": [0.1, 0.9]}}}
    cells.write_text(json.dumps([whole]), encoding="utf-8")
    assert _read_cells(cells, 2) == [whole]
    # a list that lost a question would pair the other questions' scores with the wrong ones (or a traceback)
    for edited in ({**whole, "f1": [50.0]}, {**whole, "answers": ["a"]}, {**whole, "selective": {"right": [0], "confidence": {"raw": [0.1, 0.9]}}},
                   {key: value for key, value in whole.items() if key != "answers"}, {**whole, "f1": 50.0}):
        cells.write_text(json.dumps([whole, edited]), encoding="utf-8")
        assert _read_cells(cells, 2) is None
    browser = tmp_path / "m-key.browser.npz"
    browser.write_bytes(b"PK\x03\x04 not a whole zip file")
    assert _read_browser_data(browser, ["q1", "q2"]) is None
    spans = np.array([[[0, 3], [-1, -1]]])
    tags = {"word_counts": np.array([1, 2]), "word_offsets": np.zeros((3, 2), int), "tag_bytes": np.zeros((3, 2), np.uint8)}
    save_browser_data(ModelBrowserData(["q1", "q2"], ["span"], spans, **tags), browser)
    assert _read_browser_data(browser, ["q1", "q2"]).ids == ["q1", "q2"]
    # another model's or questions' data under its name, or arrays of other shapes, would show answers against the
    # wrong questions or stop the report: scored again
    assert _read_browser_data(browser, ["q2", "q1"]) is None
    for data in (ModelBrowserData(["q1", "q2"], ["span", "bio"], spans), ModelBrowserData(["q1", "q2"], ["span"], spans[:, :1]),
                 ModelBrowserData(["q1", "q2"], ["span"], spans, **{**tags, "word_counts": np.array([1, 1])})):
        save_browser_data(data, browser)
        assert _read_browser_data(browser, ["q1", "q2"]) is None
    browser.unlink()
    browser.mkdir()
    with pytest.raises(ConfigError, match=r"m-key\.browser\.npz is not a file.*move it away"):
        check_cache_files(cells, browser)


def test_a_model_another_process_is_training_is_refused_in_one_line(tiny_encoder_dir, tmp_path):
    """Two comparisons sharing an output folder: the second never trains the same model at once (it would remove the
    first's checkpoints under it)."""
    from dataclasses import replace

    from bio_mrc.errors import OutputError
    from bio_mrc.harness.compare import resolve_splits
    from bio_mrc.harness.models import model_key, obtain_model
    from bio_mrc.io import sole_process_in

    raw = config_dict(tiny_encoder_dir, runs=[{"name": "span-only", "heads": "span"}], seeds=[1])
    raw["defaults"]["precision"] = "fp32"
    config = parse_config(raw)
    splits, run = resolve_splits(config, FIXTURES), config.runs[0]
    key = model_key(replace(run.train, seed=1).with_resolved_precision(), splits.train_for(run))
    models = tmp_path / "models"
    with sole_process_in(models / f"span-only-seed1-{key}", "held"):  # another process training it now (flock: another open file)
        with pytest.raises(OutputError, match=f"another process is training this model now.*span-only-seed1-{key}"):
            obtain_model(run, 1, splits.train_for(run), models, progress=False)
    assert [path.name for path in models.iterdir()] == [f"span-only-seed1-{key}"]
    assert not any((models / f"span-only-seed1-{key}").iterdir())  # nothing trained there


@pytest.mark.slow
def test_a_model_trained_again_from_a_changed_encoder_is_scored_again(tiny_encoder_dir, tmp_path):
    import shutil

    import torch
    from safetensors.torch import load_file, save_file

    from bio_mrc.harness.compare import train_models

    encoder = tmp_path / "encoder"
    shutil.copytree(tiny_encoder_dir, encoder)
    raw = config_dict(encoder, runs=[{"name": "span-only", "heads": "span"}], seeds=[1])
    raw["defaults"]["precision"] = "fp32"
    config, out = parse_config(raw), tmp_path / "out"
    first, _ = compare(config, FIXTURES, out, progress=False)
    weights = load_file(encoder / "model.safetensors")
    save_file({name: torch.randn_like(value) if value.is_floating_point() else value for name, value in weights.items()},
              encoder / "model.safetensors")  # the encoder replaced in place
    train_models(config, FIXTURES, out)  # trains the model again: its starting point changed
    again, _ = compare(config, FIXTURES, out, progress=False)
    shutil.rmtree(out / "cells")
    fresh, _ = compare(config, FIXTURES, out, progress=False)
    assert [cell.answers for cell in again.cells] == [cell.answers for cell in fresh.cells]
    assert [cell.answers for cell in again.cells] != [cell.answers for cell in first.cells]


@pytest.mark.parametrize("inference_precision, expected", [(None, "fp32"), ("bf16", "bf16")])
def test_evaluation_during_training_answers_in_the_precision_the_comparison_scores_in(
        tmp_path, monkeypatch, sample_v1, tiny_encoder_dir, inference_precision, expected):
    """A run pinned to fp32 chose its checkpoints on scores answered in auto (bf16 where it measured faster)."""
    from bio_mrc.harness import models
    from bio_mrc.harness.comparison_splits import Split
    from bio_mrc.harness.config import RunSpec
    from bio_mrc.training.train import TrainConfig

    train = TrainConfig(encoder=str(tiny_encoder_dir), precision="fp32", training_args={"eval_strategy": "epoch"})
    run = RunSpec("r", train, inference_precision=inference_precision)
    evaluators = []

    def train_model(examples, config, model_dir, evaluator=None, **_):
        evaluators.append(evaluator)
        (model_dir / "bio_mrc_run.json").write_text(json.dumps({"train": config.to_dict(), "seconds": 1.0}))

    monkeypatch.setattr(models, "train_model", train_model)
    split = Split(sample_v1.examples[:2], "squad-v1.1", "two questions")
    models.obtain_model(run, 1, split, tmp_path / "models", progress=False, held_out=split)
    assert [e.precision for e in evaluators] == [expected]


def test_a_run_init_from_a_model_whose_encoder_config_transformers_rejects_is_refused_before_training(comparison,
                                                                                                       tmp_path):
    """Its encoder's ``use_cache`` a string: the run's key names it in one line before any run trains, as training
    would refuse it once the run's turn came."""
    import shutil

    from bio_mrc.harness.config import RunSpec
    from bio_mrc.harness.models import check_model_sources
    from bio_mrc.training.config import TrainConfig

    broken = tmp_path / "broken"
    shutil.copytree(joint_model(comparison), broken)
    config = json.loads((broken / "config.json").read_text(encoding="utf-8"))
    config["encoder"]["use_cache"] = "x"
    (broken / "config.json").write_text(json.dumps(config), encoding="utf-8")
    run = RunSpec("next", TrainConfig(init_from=str(broken)))
    with pytest.raises(ConfigError, match=r"^runs\[0\]\.init_from: config\.json: describes no model this version can "
                                          rf"build: .*\(in {re.escape(str(broken))}\)$"):
        check_model_sources([run], [run], tmp_path / "models")


def test_a_tracker_that_cannot_run_is_refused_before_any_folder(tiny_encoder_dir, tmp_path, monkeypatch):
    from transformers.integrations import integration_utils

    monkeypatch.setattr(integration_utils, "is_tensorboard_available", lambda: False)  # as without the tensorboard extra
    raw = config_dict(tiny_encoder_dir, runs=[{"name": "span-only", "heads": "span"},
                                              {"name": "logged", "heads": "span", "training_args": {"report_to": ["tensorboard"]}}])
    out = tmp_path / "cmp"
    with pytest.raises(ConfigError, match=r'^runs\[1\]\.training_args: report_to "tensorboard" cannot run here, .*: '
                                          r"pip install 'bio_mrc\[tensorboard\]'$"):
        compare(parse_config(raw), FIXTURES, out)
    assert not out.exists()  # not even the first run's model folder


@pytest.mark.parametrize("tuned_on, prior, rules", [
    ({"description": "another comparison's tune split", "questions": 30, "content_hash": "0" * 16}, 0.0, {}),
    ({"description": "the model it continues", "questions": 30, "content_hash": "0" * 16, "for_model": "earlier"}, 6.0, {"bio": 0.4}),
])
def test_without_a_tuning_split_a_comparison_decodes_with_no_tuning_of_the_model_itself(trained_dir, tmp_path, tuned_on, prior, rules):
    """A comparison with a tune split saves what it tunes in its model; the same model scored again by the config
    without one (the same output folder) decodes as a fresh folder does, not with settings tuned on questions this
    comparison does not name (they may be its evaluation questions). Settings carried from the model a run continues
    are the model's from its training, kept."""
    import shutil

    from bio_mrc.decoding.postprocess import DecodeConfig
    from bio_mrc.harness.scoring import tuned_decoding

    model = shutil.copytree(trained_dir, tmp_path / "model")
    config = json.loads((model / "config.json").read_text())
    config |= {"bio_length_prior": 6.0, "min_span_probabilities": {"bio": 0.4}, "tuned_on": tuned_on}
    (model / "config.json").write_text(json.dumps(config))
    trained = TrainedModel.load(model, precision="fp32", device="cpu")
    tuned, saved = tuned_decoding(trained, DecodeConfig(), None, False)
    assert (tuned.decode_config.bio_length_prior, trained.span_count_rules, saved) == (prior, rules, None)
    assert json.loads((model / "config.json").read_text())["bio_length_prior"] == 6.0  # the folder is left as it is


def test_without_a_tuning_split_a_model_tuned_in_its_folder_decodes_with_what_it_carries_from_init_from(trained_dir, tmp_path):
    """A tuning of a continued model in its folder replaced the settings it carried from its ``init_from`` model; scored
    again without a tuning split it decoded with none, where a model trained in a fresh output folder carries them."""
    import shutil

    from bio_mrc.decoding.postprocess import DecodeConfig
    from bio_mrc.harness.config import RunSpec
    from bio_mrc.harness.models import carried_settings
    from bio_mrc.harness.scoring import tuned_decoding
    from bio_mrc.training.config import TrainConfig

    source, model = (shutil.copytree(trained_dir, tmp_path / name) for name in ("source", "model"))
    tuned_on = {"description": "held out", "questions": 30, "content_hash": "0" * 16}
    for folder, prior, rules in ((source, 6.0, {"bio": 0.4}), (model, 2.0, {"bio": 0.9})):  # the model tuned in its folder
        config = json.loads((folder / "config.json").read_text())
        config |= {"bio_length_prior": prior, "min_span_probabilities": rules, "tuned_on": tuned_on,
                   "calibration": {"bio": {"method": "beta", "a": 1.0, "b": 0.0, "c": 0.0, "correct_if": "f1>=0.5", "questions": 30}}}
        (folder / "config.json").write_text(json.dumps(config))
    carried = carried_settings(RunSpec("continued", TrainConfig(init_from=str(source))))
    assert carried.tuned_on == {**tuned_on, "for_model": str(source)} and carried.calibration is None  # as training carries them
    trained = TrainedModel.load(model, precision="fp32", device="cpu")
    tuned, saved = tuned_decoding(trained, DecodeConfig(), None, False, carried)
    assert (tuned.decode_config.bio_length_prior, trained.span_count_rules, trained.calibrators, saved) == (6.0, {"bio": 0.4}, {}, None)
    assert carried_settings(RunSpec("fresh", TrainConfig())) is None


def test_a_tuning_split_of_fewer_than_100_questions_is_warned_of_once_before_any_model_trains(tiny_encoder_dir, tmp_path, monkeypatch):
    """bio-mrc tune warns that settings fitted on fewer than 100 questions follow the questions drawn; compare fitted
    the same (thresholds, priors, calibrators) on a 'tune' split of 2 without a word."""
    import warnings

    from bio_mrc.harness import compare as comparing
    from bio_mrc.errors import FewTuningQuestionsWarning

    class Training(Exception):
        pass

    def obtain_model(*args, **kwargs):
        raise Training

    monkeypatch.setattr(comparing, "obtain_model", obtain_model)
    normans = {"path": str(SAMPLE_V1), "split": {"fractions": [0.5, 0.5], "part": 0, "seed": 0}}  # n1-n3, then n4-n5
    raw = config_dict(tiny_encoder_dir, train={**normans, "limit": 3}, tune={**normans, "skip": 3})  # two runs, two seeds
    with warnings.catch_warnings(record=True) as said, pytest.raises(Training):
        warnings.simplefilter("always")
        compare(parse_config(raw), FIXTURES, tmp_path / "out", progress=False)
    few = [str(w.message) for w in said if issubclass(w.category, FewTuningQuestionsWarning)]
    tune = parse_config(raw).tune.describe()
    assert few == [f"tune: each model's settings are tuned on 2 questions of {tune}: settings fitted on fewer than 100 follow "
                   "the questions drawn; tune on a few hundred held-out questions, as the model will meet them, to rely on them"]



@pytest.mark.slow  # continues the session's model twice and scores it in three sittings
def test_an_untuned_sitting_decodes_with_the_carried_settings_after_a_tuned_one(trained_dir, tiny_encoder_dir, tmp_path):
    """A model continued from a tuned one carries its settings (here β 6), which a sitting without a tune split decodes
    with. A sitting with one replaced them in the model's folder, so a later sitting without one there decoded with
    no β at all, where a fresh output folder decodes with the carried one."""
    import shutil

    source = shutil.copytree(trained_dir, tmp_path / "source")
    config = json.loads((source / "config.json").read_text())
    config |= {"bio_length_prior": 6.0, "tuned_on": {"description": "held out", "questions": 30, "content_hash": "0" * 16}}
    (source / "config.json").write_text(json.dumps(config))
    parts = {name: {"path": str(SAMPLE_V1), "skip": skip, **({"limit": limit} if limit else {})}  # one context apiece
             for name, skip, limit in (("train", 0, 3), ("eval", 3, 2), ("tune", 5, None))}
    raw = config_dict(tiny_encoder_dir, seeds=[1], train=parts["train"], eval=parts["eval"],
                      runs=[{"name": "continued", "heads": "span+bio", "init_from": str(source)}])
    raw["defaults"].update(epochs=0.01, learning_rate=1e-9)  # one step that leaves the model as it is

    def priors(raw, out):
        results, _ = compare(parse_config(raw), FIXTURES, out, progress=False)
        return {cell.decoding: cell.bio_length_prior for cell in results.cells}

    assert priors(raw, tmp_path / "fresh") == {"span": None, "bio": 6.0, "joint": 6.0}
    with pytest.warns(FewTuningQuestionsWarning):
        assert priors({**raw, "tune": parts["tune"]}, tmp_path / "used")["bio"] != 6.0  # tuned on the three questions
    assert priors(raw, tmp_path / "used") == {"span": None, "bio": 6.0, "joint": 6.0}
