"""The BIO decoding's span-length prior: its arithmetic, its tuning on held-out questions,
and how a comparison tunes and saves it."""

import json
import math

import numpy as np
import pytest

from bio_mrc.decoding.postprocess import DecodeConfig, decode_bio_predictions
from bio_mrc.decoding.window_outputs import WindowOutputs
from bio_mrc.harness.comparison_splits import resolve_split
from bio_mrc.harness.config import DataSpec
from bio_mrc.inference.tuning import LENGTH_PRIOR_GRID, smoothed_argmax, tune_bio_length_prior
from bio_mrc.types import Example

CONTEXT = "aa bb cc dd"


def unsure_inside_outputs(n_examples: int = 1) -> WindowOutputs:
    """"bb" is surely B; "cc" is I with p 0.4 against O 0.6 (an unsure inside token)."""
    offsets = np.array([[[-1, -1], [0, 2], [3, 5], [6, 8], [9, 11]]] * n_examples)
    probs = np.array([[[1 / 3] * 3, [0.05, 0.05, 0.9], [0.8, 0.1, 0.1], [0.0, 0.4, 0.6], [0.05, 0.05, 0.9]]] * n_examples)
    return WindowOutputs(np.arange(n_examples), offsets, offsets[..., 0] >= 0, bio_logits=np.log(probs + 1e-12))


def test_the_prior_adds_beta_per_inside_tag():
    example = [Example("q", "?", CONTEXT)]
    (plain,) = decode_bio_predictions(unsure_inside_outputs(), example, DecodeConfig(bio_length_prior=0.0))
    assert plain.answer == "bb"  # log(.4/.6) < 0: the unsure inside token is cut
    assert plain.spans[0].score == pytest.approx(math.log(0.8 / 0.1))
    (longer,) = decode_bio_predictions(unsure_inside_outputs(), example, DecodeConfig(bio_length_prior=1.0))
    assert longer.answer == "bb cc"
    assert longer.spans[0].score == pytest.approx(math.log(0.8 / 0.1) + math.log(0.4 / 0.6) + 1.0)
    assert longer.no_answer_score == pytest.approx(-longer.spans[0].score)


def test_tuning_picks_the_smallest_prior_whose_neighbours_also_recover_the_gold_spans():
    examples = [Example(f"q{i}", "?", CONTEXT, (((3, 8),),)) for i in range(3)] + [Example("u", "?", CONTEXT)]
    grid = (0.0, 0.25, 0.5, 1.0, 2.0)
    prior, f1 = tune_bio_length_prior(unsure_inside_outputs(4), examples, grid=grid)
    # log(.4/.6) = -0.405: any β above it reads "bb cc"; the unanswerable question is left out.
    np.testing.assert_allclose(f1, [100 * 2 / 3] * 2 + [100.0] * 3)
    # Averaged over the grid values within 0.25: 0.5 scores (66.7 + 100) / 2, 1.0 has no neighbour and keeps 100.
    assert prior == 1.0
    assert tune_bio_length_prior(unsure_inside_outputs(4), examples, grid=grid, bandwidth=0.0)[0] == 0.5  # plain argmax


def test_the_smoothed_argmax_passes_over_a_lone_high_point():
    grid = (0.0, 0.25, 0.5, 0.75, 1.0, 1.25)
    statistic = np.array([5.0, 9.0, 10.0, 9.5, 6.0, 10.2])
    # Means over the values within 0.25: 7, 8, 9.5, 8.5, 8.57, 8.1; the argmax alone takes the lone 10.2.
    assert smoothed_argmax(grid, statistic, 0.25) == 2
    assert smoothed_argmax(grid, statistic, 0.0) == 5
    # Within 0.5: 8, 8.38, 7.9, 8.94, 8.93, 8.57.
    assert smoothed_argmax(grid, statistic, 0.5) == 3


def test_the_smoothed_argmax_is_the_argmax_without_neighbours_and_ignores_shifts_and_scales():
    rng = np.random.default_rng(0)
    grid = LENGTH_PRIOR_GRID
    for _ in range(50):
        statistic = rng.normal(size=len(grid))
        assert smoothed_argmax(grid, statistic, 0.0) == int(np.argmax(statistic))
        pick = smoothed_argmax(grid, statistic, 0.25)
        assert smoothed_argmax(grid, 3.0 * statistic + 7.0, 0.25) == pick
    assert smoothed_argmax(grid, np.full(len(grid), 50.0), 0.25) == 0  # a flat curve: the smallest β


def test_a_data_slice_skips_questions(tmp_path):
    from bio_mrc.data.squad import examples_to_squad_json

    examples = [Example(f"q{i}", "?", f"context {i}", (((0, 7),),), title="t") for i in range(10)]
    path = tmp_path / "d.json"
    path.write_text(json.dumps(examples_to_squad_json(examples)))
    split = resolve_split(DataSpec(str(path), limit=3, skip=4), tmp_path)
    assert [ex.id for ex in split.examples] == ["q4", "q5", "q6"]
    assert "questions 5 to 7" in split.description


def test_the_joint_decoding_adds_the_prior_per_inside_tag():
    from bio_mrc.decoding.postprocess import decode_joint

    tags = unsure_inside_outputs()
    flat = np.zeros(tags.mask.shape)  # the span head indifferent: every score difference is the tagger's
    outputs = WindowOutputs(tags.example_index, tags.offsets, tags.mask, start_logits=flat, end_logits=flat, **tags.logits)
    example = [Example("q", "?", CONTEXT)]
    scores = {}
    for prior in (0.0, 0.7):
        (prediction,) = decode_joint(outputs, example, DecodeConfig(bio_length_prior=prior))
        scores[prior] = {s.text: s.score for s in prediction.spans}
    for text in ("bb", "bb cc", "bb cc dd"):
        assert scores[0.7][text] - scores[0.0][text] == pytest.approx(0.7 * (len(text.split()) - 1))


TWO_SPANS = "aa bb cc dd ee"


def two_span_outputs() -> WindowOutputs:
    """Gold spans "bb cc" and "ee": "bb" is surely B, "cc" an unsure I (0.4 against O 0.6), "dd" surely O, "ee" surely B."""
    offsets = np.array([[[-1, -1], [0, 2], [3, 5], [6, 8], [9, 11], [12, 14]]])
    probs = np.array([[[1 / 3] * 3, [0.05, 0.05, 0.9], [0.8, 0.1, 0.1], [0.0, 0.4, 0.6], [0.05, 0.05, 0.9], [0.9, 0.05, 0.05]]])
    return WindowOutputs(np.arange(1), offsets, offsets[..., 0] >= 0, bio_logits=np.log(probs + 1e-12))


def test_the_multi_span_tuner_scores_every_span_and_picks_another_prior_than_the_single_span_one():
    from bio_mrc import registry

    example = [Example("m", "?", TWO_SPANS, (((3, 8), (12, 14)),))]
    grid = (0.0, 1.0, 2.0)
    # Single best span against the joined gold "bb cc ee" (SQuAD F1). Gains: B(bb) = ln 8, I(cc) = ln(2/3) + β,
    # I(dd) = ln(1/18) + β, B(ee) = ln 18, I(ee) = β. β = 0 and 1: "ee" (ln 18) beats "bb cc" (ln 8 + ln(2/3) + β),
    # F1 2·(1·1/3)/(4/3) = 50; β = 2: "bb cc dd ee" (ln 8 + ln(2/3) + ln(1/18) + 6 = 4.78) wins, F1 2·(3/4·1)/(7/4) = 85.7.
    single, single_f1 = tune_bio_length_prior(two_span_outputs(), example, grid=grid)
    np.testing.assert_allclose(single_f1, [50.0, 50.0, 600 / 7])
    assert single == 2.0
    # Every span of the most probable tag sequence against the gold set {"bb cc", "ee"} (EM F1 over spans).
    # β = 0: {"bb", "ee"} (cc's gain is negative), 1 of 2 right both ways: 50. β = 1 and 2: "bb cc" and "ee" apart
    # beat one span "bb cc dd ee" (B(ee) = ln 18 > I(dd) + I(ee) = ln(1/18) + 2β): 100.
    multi, em_f1 = tune_bio_length_prior(two_span_outputs(), example, grid=grid, task=registry.task_for("multispanqa", False))
    np.testing.assert_allclose(em_f1, [50.0, 100.0, 100.0])
    assert multi == 1.0  # the tie goes to the smaller prior
