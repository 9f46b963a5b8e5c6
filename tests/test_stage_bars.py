"""The bars of long stages that drew nothing: the bootstrap of ``evaluate --baseline`` and of a comparison's
statistics, by resamples; ``predict``'s questions bar a block of a chunk at a time. Library calls stay quiet."""

import json

import pytest

from bio_mrc.cli import main
from bio_mrc.inference import defaults, streaming
from bio_mrc.inference.paired_evaluation import compare_predictions
from bio_mrc.metrics.stats import BOOTSTRAP_RESAMPLES
from bio_mrc.progress import resample_bar

from .conftest import SAMPLE_V1, untrained_model_folder
from .test_evaluate_baseline import NEW, OLD, four  # noqa: F401 (a fixture)
from .test_harness_report import squad_summary, synthetic_results


def test_evaluate_against_a_baseline_shows_a_bar_of_the_resamples(four, shown_bars, capsys):  # noqa: F811
    data, write = four
    assert main(["evaluate", "--data", str(data), "--predictions", str(write("new.json", NEW)),
                 "--baseline", str(write("old.json", OLD)), "--resamples", "250"]) == 0
    assert shown_bars == [("bootstrap", 2 * 250, 2 * 250, "resample")]  # EM and F1, 250 resamples each
    out, err = capsys.readouterr()
    assert "bootstrap: 100%" in err and "%|" not in out
    json.loads(out)


def test_comparing_two_files_from_a_library_call_is_quiet(four, shown_bars, capfd):  # noqa: F811
    data, write = four
    capfd.readouterr()
    quiet = compare_predictions(data, write("new.json", NEW), write("old.json", OLD), n_resamples=250)
    assert shown_bars == []
    assert capfd.readouterr().err == ""
    shown = compare_predictions(data, write("new.json", NEW), write("old.json", OLD), n_resamples=250, progress=True)
    assert shown_bars == [("bootstrap", 500, 500, "resample")]
    assert shown.paired == quiet.paired  # the bar changes no draw


@pytest.mark.parametrize("task, seeds, runs", [("squad-v1.1", (42, 43), ("joint", "bio-only")), ("squad-v2.0", (42,), ("joint",)),
                                               ("multispanqa", (1,), ("joint", "span-only"))])
def test_a_comparisons_statistics_plan_every_resample_they_draw(shown_bars, task, seeds, runs):
    # contrasts, every pair, each cell's interval, the breakdowns, selective QA's AURC and "always abstain" alike
    results = synthetic_results(runs=runs, seeds=seeds, n=60, task=task, selective=task != "multispanqa")
    with resample_bar("statistics", True):
        squad_summary(results)
    [(name, drawn, planned, unit)] = shown_bars
    assert (name, unit) == ("statistics", "resample") and drawn == planned and planned % BOOTSTRAP_RESAMPLES == 0


def test_a_comparisons_statistics_bar_ends_at_its_total_with_an_empty_contrast(shown_bars):
    """bio-only's one seed shares none with joint's two: its F1 contrasts compare seed means, and its AURC contrasts come
    out empty (AURC has no seed mean to pair); the bar plans only the resamples drawn."""
    from dataclasses import replace

    results = synthetic_results(runs=("joint", "bio-only"), seeds=(42, 43, 44), n=60, selective=True, task="squad-v2.0")
    results = replace(results, cells=[c for c in results.cells if (c.run == "joint") == (c.seed != 44)])
    with resample_bar("statistics", True):
        summary = squad_summary(results)
    assert not [c for c in summary.selective.contrasts if "bio-only/bio" in (str(c.a), str(c.b))]  # the empty contrasts
    [(_, drawn, planned, _)] = shown_bars
    # 3 contrasts and 6 pairs (the contrasts among them) and 4 intervals, "always abstain" for each of the 4 cells,
    # one set of AURC draws, and a draw of each breakdown group
    groups = sum(len(next(iter(groups.values()))) for groups in summary.breakdowns.values())
    assert drawn == planned == (6 + 4 + 4 + 1 + groups) * BOOTSTRAP_RESAMPLES


def test_a_comparisons_statistics_from_a_library_call_are_quiet(shown_bars, capfd):
    capfd.readouterr()
    squad_summary(synthetic_results(runs=("joint", "bio-only"), n=60, selective=True))
    assert shown_bars == []
    assert capfd.readouterr().err == ""


@pytest.fixture(scope="module")
def model_dir(tiny_encoder_dir, tmp_path_factory):
    return untrained_model_folder(tiny_encoder_dir, tmp_path_factory.mktemp("stage-bars") / "model", heads="span+bio",
                                  max_seq_length=48, doc_stride=16, max_query_length=12)


def questions_bar_steps(monkeypatch):
    """The steps by which the questions bar of ``bio-mrc predict`` moves, in order."""
    import tqdm.std

    steps, update = [], tqdm.std.tqdm.update

    def recording_update(bar, n=1):
        if getattr(bar, "desc", "").startswith("questions") and n:
            steps.append(n)
        return update(bar, n)

    monkeypatch.setattr(tqdm.std.tqdm, "update", recording_update)
    return steps


def predicted(model_dir, output):
    assert main(["predict", "--model", str(model_dir), "--data", str(SAMPLE_V1), "--output", str(output / "preds.json"),
                 "--precision", "fp32", "--device", "cpu", "--decoding", "span", "joint"]) == 0
    return (output / "preds.answers.jsonl").read_text(encoding="utf-8")


def test_predicts_questions_bar_moves_as_a_chunk_is_decoded(model_dir, tmp_path, monkeypatch, shown_bars):
    whole = predicted(model_dir, tmp_path / "whole")
    steps = questions_bar_steps(monkeypatch)
    monkeypatch.setattr(streaming, "DECODE_BLOCK_QUESTIONS", 2)
    questions = sum(1 for _ in whole.splitlines()) // 2  # a line a decoding
    assert questions > 2 and streaming.DEFAULT_CHUNK_SIZE == defaults.DEFAULT_CHUNK_SIZE > questions  # one chunk
    assert predicted(model_dir, tmp_path / "blocks") == whole  # the blocks answer as the chunk whole does
    assert steps == [2] * (questions // 2) + [questions % 2] * (questions % 2)
    assert ("questions", questions, questions, "question") in shown_bars
