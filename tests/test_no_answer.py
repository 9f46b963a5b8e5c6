"""SQuAD 2.0: null scores over windows, threshold tuning, thresholds saved and applied."""

import json
import math

import numpy as np
import pytest

from bio_mrc.data.squad import examples_to_squad_json, load_squad
from bio_mrc.data.unanswerable import add_unanswerable
from bio_mrc.decoding.postprocess import DecodeConfig, decode_bio_predictions, decode_span
from bio_mrc.decoding.window_outputs import WindowOutputs
from bio_mrc.harness.compare import compare
from bio_mrc.harness.config import parse_config
from bio_mrc.inference import (
    TrainedModel, apply_no_answer_threshold, decode_with_thresholds, no_answer_probability, threshold_key,
)
from bio_mrc.inference.tuning import answers_past_every_window, past_windows_line, threshold_curve, tune_no_answer_threshold
from bio_mrc.types import AnswerSpan, Example, Prediction

from .conftest import SAMPLE_V1, forget_training_questions


def test_null_score_is_the_minimum_over_windows():
    # One example seen by two windows; [CLS] is position 0, paragraph tokens 1..3.
    context = "aa bb cc dd"
    offsets = np.full((2, 4, 2), -1)
    offsets[0, 1:] = [[0, 2], [3, 5], [6, 8]]
    offsets[1, 1:] = [[3, 5], [6, 8], [9, 11]]
    mask = offsets[..., 0] >= 0
    start = np.array([[2.0, 0.0, 3.0, 0.0], [0.5, 0.0, 0.0, 0.0]])
    end = np.array([[1.0, 0.0, 1.0, 0.0], [0.5, 0.0, 0.0, 0.0]])
    outputs = WindowOutputs(np.array([0, 0]), offsets, mask, start_logits=start, end_logits=end)
    (prediction,) = decode_span(outputs, [Example("q", "?", context)], DecodeConfig(n_best=3))
    # null = min(2 + 1, 0.5 + 0.5) = 1; best span "bb" = 3 + 1 = 4 -> no-answer score 1 - 4 = -3
    assert prediction.spans[0].text == "bb" and prediction.spans[0].score == 4.0
    assert prediction.no_answer_score == pytest.approx(-3.0)


def test_bio_null_scores_by_hand():
    # One window, [CLS] then paragraph tokens "aa bb cc"; the head tags "bb cc" as B I.
    context = "aa bb cc"
    offsets = np.array([[[-1, -1], [0, 2], [3, 5], [6, 8]]])
    mask = offsets[..., 0] >= 0
    probs = np.array([[[1 / 3, 1 / 3, 1 / 3], [0.1, 0.1, 0.8], [0.6, 0.2, 0.2], [0.1, 0.5, 0.4]]])
    outputs = WindowOutputs(np.array([0]), offsets, mask, bio_logits=np.log(probs))
    example = [Example("q", "?", context)]

    (prediction,) = decode_bio_predictions(outputs, example, DecodeConfig())
    assert prediction.spans[0].text == "bb cc"
    # log P(all O) - log P(O B I) = log(0.2 / 0.6) + log(0.4 / 0.5)
    assert prediction.no_answer_score == pytest.approx(math.log(0.2 / 0.6) + math.log(0.4 / 0.5))
    assert prediction.spans[0].score == pytest.approx(-prediction.no_answer_score)

    # The ratio has its own saved key: a "bio" threshold saved by older versions (another score) is ignored.
    assert threshold_key("bio") == "bio/ratio"
    assert threshold_key("span") == "span"
    (kept,) = decode_with_thresholds(outputs, example, "bio", DecodeConfig(), {"bio": -10.0})
    (dropped,) = decode_with_thresholds(outputs, example, "bio", DecodeConfig(), {"bio/ratio": -10.0})
    assert (kept.answer, dropped.answer) == ("bb cc", "")


def hand_made():
    gold = {"q1": ["Paris"], "q2": [], "q3": ["1990"], "q4": []}
    predictions = [
        Prediction("q1", [AnswerSpan("Paris", 0, 5, 1.0)], no_answer_score=-2.0),
        Prediction("q2", [AnswerSpan("x", 0, 1, 1.0)], no_answer_score=1.0),
        Prediction("q3", [AnswerSpan("1990", 0, 4, 1.0)], no_answer_score=0.5),
        Prediction("q4", [AnswerSpan("y", 0, 1, 1.0)], no_answer_score=3.0),
    ]
    return gold, predictions


def test_threshold_tuning_finds_the_known_best():
    gold, predictions = hand_made()
    # Abstaining everywhere scores 2/4. Answering by increasing no-answer score: q1 (+1), q3 (+1), q2 (-1), q4 (-1).
    # The best is to answer q1 and q3 only: threshold 0.5 (abstain when the score is above it), F1 100.
    threshold, best_f1 = tune_no_answer_threshold(predictions, gold)
    assert threshold == pytest.approx(0.5) and best_f1 == 100.0
    applied = apply_no_answer_threshold(predictions, threshold)
    assert [p.answer for p in applied] == ["Paris", "", "1990", ""]
    xs, f1 = threshold_curve(predictions, gold)
    assert xs.tolist() == [-math.inf, -2.0, 0.5, 1.0, 3.0]
    assert f1.tolist() == [50.0, 75.0, 100.0, 75.0, 50.0]


def test_always_abstaining_is_minus_infinity():
    gold = {"q1": []}
    (threshold, best_f1) = tune_no_answer_threshold([Prediction("q1", [AnswerSpan("x", 0, 1, 1.0)], no_answer_score=-5.0)], gold)
    assert threshold == -math.inf and best_f1 == 100.0


def test_na_probability_is_monotone_and_bounded():
    scores = [-math.inf, -800.0, -3.0, 0.0, 2.0, math.inf]
    probs = [no_answer_probability(s) for s in scores]
    assert probs == sorted(probs) and probs[0] == 0.0 and probs[-1] == 1.0 and probs[3] == 0.5
    with pytest.raises(ValueError, match="this decoding has no no-answer score"):
        no_answer_probability(None)


@pytest.fixture(scope="module")
def v2_file(tmp_path_factory):
    """Three made-up articles, each with answerable and unanswerable questions (SQuAD 2.0 layout)."""
    base = load_squad(SAMPLE_V1).examples
    examples = []
    for k in range(3):  # copies under new titles, with contexts made distinct so splits stay disjoint
        for ex in base:
            examples.append(Example(f"{ex.id}-{k}", ex.question, ex.context + f" Copy {k}.", ex.answers, f"{ex.title}-{k}"))
    examples = add_unanswerable(examples, ratio=0.5, seed=0)
    path = tmp_path_factory.mktemp("v2") / "v2.json"
    path.write_text(json.dumps(examples_to_squad_json(examples, version="2.0")))
    return path


@pytest.mark.slow
def test_v2_comparison_tunes_thresholds_on_other_articles(v2_file, tiny_encoder_dir, tmp_path, monkeypatch):
    import bio_mrc.inference.tuning as tuning

    monkeypatch.setattr(tuning, "degenerate_calibrator", lambda calibrator, raw: None)  # a tiny model's may be constant
    split = lambda part: {"path": str(v2_file), "split": {"fractions": [0.5, 0.25, 0.25], "part": part, "seed": 0}}  # noqa: E731
    raw = {
        "name": "tiny-v2", "train": split(0), "tune": split(1), "eval": split(2),
        "defaults": {"encoder": str(tiny_encoder_dir), "max_seq_length": 48, "doc_stride": 16, "max_query_length": 12,
                     "epochs": 1, "batch_size": 4},
        "runs": [{"name": "joint", "heads": "span+bio"}],
    }
    results, summary = compare(parse_config(raw), v2_file.parent, tmp_path, progress=False)
    assert results.eval["task"] == "squad-v2.0"
    row = next(r for r in summary.rows if r.decoding == "span")
    assert {"HasAns_f1", "NoAns_f1"} <= set(row.scores) and len(row.threshold) == 1
    model_dir = results.cells[0].model_dir
    saved = TrainedModel.load(model_dir).thresholds
    assert set(saved) == {"span", "bio/ratio", "joint"}
    tuned = {threshold_key(c.decoding): c.threshold for c in results.cells}
    assert saved == tuned
    na_probs = json.loads((tmp_path / "predictions" / "joint-seed42-span.na_probs.json").read_text())
    assert len(na_probs) == results.eval["questions"] and all(0.0 <= p <= 1.0 for p in na_probs.values())
    assert "| HasAns EM |" in (tmp_path / "report.md").read_text()
    for cell in results.cells:  # confidence measured before and after the calibrator of the tuning split
        assert set(cell.calibration) == {"raw", "calibrated"}
        assert all(0.0 <= m["ece"] <= 1.0 and sum(m["bin_count"]) == results.eval["questions"] for m in cell.calibration.values())
    calibrators = TrainedModel.load(model_dir).calibrators
    assert set(calibrators) == {"span", "bio", "joint"}
    for cell in results.cells:  # fitted and measured on the answers given, abstentions included
        assert calibrators[cell.decoding]["no_answer_threshold"] == cell.threshold
        abstained = np.array([answer == "" for answer in cell.answers])
        right = np.array(cell.selective["right"], dtype=bool)
        assert (right[abstained] == (np.array(cell.f1)[abstained] > 50)).all()
        assert (np.array(cell.selective["confidence"]["raw"])[abstained] > 0.5).all()  # beyond the threshold
    report = (tmp_path / "report.md").read_text()
    assert "## Calibration" in report and "| joint/bio |" in report and "![reliability diagrams](calibration.png)" in report
    assert (tmp_path / "calibration.png").stat().st_size > 0


def test_v2_evaluation_without_a_tuning_split_is_refused(v2_file, tiny_encoder_dir, tmp_path):
    raw = {"name": "x", "train": {"path": str(v2_file), "split": {"fractions": [0.5, 0.5], "part": 0}},
           "eval": {"path": str(v2_file), "split": {"fractions": [0.5, 0.5], "part": 1}},
           "runs": [{"name": "span", "heads": "span", "encoder": str(tiny_encoder_dir), "max_seq_length": 48, "doc_stride": 16,
                     "max_query_length": 12}]}  # windows the encoder fits: the missing tune split is the one mistake
    with pytest.raises(ValueError, match="tune"):
        compare(parse_config(raw), v2_file.parent, tmp_path, progress=False)


@pytest.mark.slow
def test_tune_command_saves_thresholds_that_predict_applies(v2_file, tiny_encoder_dir, tmp_path, capsys, monkeypatch):
    import bio_mrc.inference.tuning as tuning
    from bio_mrc.cli import main

    monkeypatch.setattr(tuning, "degenerate_calibrator", lambda calibrator, raw: None)  # a tiny model's may be constant

    model = tmp_path / "model"
    window = ["--max-seq-length", "48", "--doc-stride", "16", "--max-query-length", "12"]
    assert main(["train", "--train", str(v2_file), "--output-dir", str(model), "--encoder", str(tiny_encoder_dir),
                 "--heads", "span", "--epochs", "1", *window]) == 0
    forget_training_questions(model)  # tuned on its training questions, so the official best agrees below
    saved = json.loads((model / "config.json").read_text())  # the model says which windows it reads
    assert (saved["max_seq_length"], saved["doc_stride"], saved["max_query_length"]) == (48, 16, 12)
    capsys.readouterr()
    assert main(["tune", "--model", str(model), "--data", str(v2_file), "--plot-dir", str(tmp_path),
                 "--min-calibration-questions", "2"]) == 0
    tuned = json.loads(capsys.readouterr().out)["span"]
    tuned["threshold"] = float(tuned["threshold"])  # strict JSON on stdout: always abstaining is "-Infinity"
    assert (tmp_path / "threshold_span.png").stat().st_size > 0
    assert TrainedModel.load(model).thresholds == {"span": tuned["threshold"]}
    calibrator = TrainedModel.load(model).calibrators["span"]  # fitted on the same held-out questions, at the same threshold
    assert calibrator["correct_if"] == "f1 > 0.5" and calibrator["method"] == "beta" and min(calibrator["a"], calibrator["b"]) >= 0
    assert calibrator["no_answer_threshold"] == tuned["threshold"]

    preds = tmp_path / "preds.json"
    assert main(["predict", "--model", str(model), "--data", str(v2_file), "--output", str(preds)]) == 0
    nbest = json.loads(preds.with_suffix(".nbest.json").read_text())
    threshold = tuned["threshold"]
    for entry in nbest.values():
        assert entry["abstain"] == (entry["no_answer_score"] > threshold)
        assert (entry["answer"] == "") == entry["abstain"]
    capsys.readouterr()
    assert main(["evaluate", "--data", str(v2_file), "--predictions", str(preds),
                 "--na-probs", str(preds.with_suffix(".na_probs.json"))]) == 0
    scores = json.loads(capsys.readouterr().out)
    assert scores["best_f1"] == pytest.approx(tuned["best_f1"])  # tuned on this very file: the official best agrees


def test_the_threshold_curve_has_only_thresholds_the_rule_can_apply():
    from bio_mrc.metrics.squad_official import best_no_answer_threshold, no_answer_threshold_curve

    scores = np.array([1.0, 1.0, 2.0, -np.inf])
    answer_f1 = np.array([100.0, 0.0, 0.0, 100.0])
    abstain_f1 = np.array([0.0, 100.0, 100.0, 0.0])
    xs, f1 = no_answer_threshold_curve(scores, answer_f1, abstain_f1)
    # "Abstain on all" is no point (a -inf score is answered at any threshold): -inf answers that question alone;
    # the tie at 1.0 is one point.
    assert xs.tolist() == [-np.inf, 1.0, 2.0] and f1.tolist() == [75.0, 75.0, 50.0]
    assert best_no_answer_threshold(scores, answer_f1, abstain_f1) == (-np.inf, 75.0)  # ties: abstain more
    abstained = apply_no_answer_threshold([Prediction(str(i), [], s) for i, s in enumerate(scores)], 1.0)
    assert [p.abstain for p in abstained] == [False, False, True, False]  # F1 (100 + 0 + 100 + 100) / 4 = 75


def test_tuning_questions_whose_answer_no_window_holds_are_named():
    # Two windows over "aaaa bbbb cccc dddd": characters 0-9 and 5-14 (tokens of 4 letters and a space).
    offsets = np.tile(np.array([[[0, 4], [5, 9], [-1, -1]], [[5, 9], [10, 14], [-1, -1]]]), (5, 1, 1))  # 5 questions
    mask = offsets[..., 0] >= 0
    windows = WindowOutputs(np.repeat(np.arange(5), 2), offsets, mask)
    context = "aaaa bbbb cccc dddd"
    examples = [Example("inside", "q", context, (((5, 14),),)),  # the second window holds it
                Example("longer", "q", context, (((0, 14),),)),  # longer than either window
                Example("other", "q", context, (((0, 14),), ((0, 4),))),  # an alternative fits the first
                Example("none", "q", context, ()),  # unanswerable: nothing to hold
                Example("parts", "q", context, (((0, 4), (10, 14)),))]  # a multi-span answer: each part in a window
    assert answers_past_every_window(windows, examples) == ["longer"]
    (line,) = past_windows_line(windows, examples)
    assert line.startswith("warning: 1 of 4 answerable tuning questions have an answer longer than a window") and "'longer'" in line
    assert past_windows_line(windows, examples[:1]) == []


def test_a_tuning_gold_is_held_by_a_window_that_holds_its_words():
    # Windows over "aaaa bbbb cccc dddd" of characters 0-9 and 5-14: the gold " cccc " (9-15) is the second window's
    # "cccc" with a space at either edge, which every decoder trims; only "aaaa bbbb cccc" (0-14) is past both.
    offsets = np.tile(np.array([[[0, 4], [5, 9], [-1, -1]], [[5, 9], [10, 14], [-1, -1]]]), (2, 1, 1))
    windows = WindowOutputs(np.repeat(np.arange(2), 2), offsets, offsets[..., 0] >= 0)
    context = "aaaa bbbb cccc dddd"
    examples = [Example("spaced", "q", context, (((9, 15),),)), Example("longer", "q", context, (((0, 14),),))]
    assert answers_past_every_window(windows, examples) == ["longer"]
