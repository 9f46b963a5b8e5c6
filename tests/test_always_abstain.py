"""A no-answer threshold of -inf ("always abstain") tuned on questions with and without answers is kept (the official
metric prefers it) and said: the decoding answers no question."""

import math

import numpy as np
import pytest

from bio_mrc.decoding.postprocess import DecodeConfig
from bio_mrc.decoding.window_outputs import WindowOutputs
from bio_mrc.errors import AlwaysAbstainWarning, BioMrcWarning
from bio_mrc.inference.tuning import always_abstain_line, tune_settings
from bio_mrc.types import Example

CONTEXT = "aa bb cc"


def _outputs(picks: list[int], nulls: list[float]) -> WindowOutputs:
    """One window per question, [CLS] then "aa bb cc": the span head puts 3 + 3 on token ``pick`` alone and
    ``null`` + 0 on [CLS], so each question's answer is that token and its no-answer score ``null - 6``."""
    offsets = np.tile(np.array([[-1, -1], [0, 2], [3, 5], [6, 8]]), (len(picks), 1, 1))
    start = np.zeros((len(picks), 4))
    end = np.zeros((len(picks), 4))
    for row, (pick, null) in enumerate(zip(picks, nulls)):
        start[row, pick] = end[row, pick] = 3.0
        start[row, 0] = null
    return WindowOutputs(np.arange(len(picks)), offsets, offsets[..., 0] >= 0, start_logits=start, end_logits=end)


def test_always_abstaining_that_wins_is_kept_and_said():
    """q1's answer is "aa" but the model answers "cc" (F1 0 either way); q2 has none. Abstaining on both scores 50;
    the thresholds that answer: q2 answered first (no-answer score -5 below q1's -1) scores 0, both answered 0."""
    examples = [Example("q1", "?", CONTEXT, [((0, 2),)]), Example("q2", "?", CONTEXT, [])]
    outputs = _outputs(picks=[3, 3], nulls=[5.0, 1.0])
    with pytest.warns(AlwaysAbstainWarning) as said:
        tuned = tune_settings(outputs, examples, ["span"], DecodeConfig(), tune_prior=False, tune_thresholds=True)
    assert tuned.thresholds == {"span": -math.inf}  # the F1-best choice stays
    assert issubclass(AlwaysAbstainWarning, BioMrcWarning) and len(said) == 1
    line = str(said[0].message)
    assert "\n" not in line
    assert line.startswith("the no-answer threshold tuned for span is -inf (always abstain): span will answer no question")
    assert "always abstaining scores F1 50.00 on the 2 tuning questions, the best threshold that answers some 0.00" in line
    assert "tune on more held-out questions, or other ones" in line


def test_a_threshold_that_answers_some_questions_says_nothing():
    """q1 answered right ("aa") at the lower no-answer score: answering it alone scores 100, the threshold kept."""
    examples = [Example("q1", "?", CONTEXT, [((0, 2),)]), Example("q2", "?", CONTEXT, [])]
    outputs = _outputs(picks=[1, 3], nulls=[1.0, 5.0])  # no-answer scores -5 (q1) and -1 (q2)
    tuned = tune_settings(outputs, examples, ["span"], DecodeConfig(), tune_prior=False, tune_thresholds=True)
    assert tuned.thresholds == {"span": -5.0}


@pytest.mark.parametrize("thresholds, f1, line", [
    ([-math.inf, -1.0, 2.0], [50.0, 25.0, 0.0], "F1 50.00 on the 3 tuning questions, the best threshold that answers some 25.00"),
    ([-math.inf, -1.0], [50.0, 50.0], "F1 50.00 on the 3 tuning questions, the best threshold that answers some 50.00"),
])
def test_the_line_compares_always_abstaining_with_the_best_threshold_that_answers(thresholds, f1, line):
    said = always_abstain_line("joint", -math.inf, (np.array(thresholds), np.array(f1)), 3)
    assert said is not None and line in said and "joint will answer no question" in said


def test_a_finite_threshold_has_no_line():
    assert always_abstain_line("span", -1.0, (np.array([-math.inf, -1.0]), np.array([50.0, 75.0])), 2) is None


def test_tune_says_it_on_the_command_line_in_one_line_and_saves_it(trained_dir, tmp_path, capsys, monkeypatch):  # noqa: F811
    """``bio-mrc tune`` saved "always abstain" without a word (the model card alone showed it)."""
    import json

    from bio_mrc.cli import main
    from bio_mrc.inference import tuning
    from bio_mrc.model import BioMrcConfig

    from .conftest import SAMPLE_V1

    data = json.loads(SAMPLE_V1.read_text())
    for qa in data["data"][0]["paragraphs"][0]["qas"][:2]:
        qa["answers"], qa["is_impossible"] = [], True
    mixed = tmp_path / "mixed.json"
    mixed.write_text(json.dumps(data))
    # every answer wrong, the unanswerable questions' no-answer scores the lowest: abstaining on all wins
    questions = sum(len(p["qas"]) for article in data["data"] for p in article["paragraphs"])
    table = (np.arange(questions, dtype=np.float64), np.zeros(questions), np.array([100.0, 100.0] + [0.0] * (questions - 2)))
    monkeypatch.setattr(tuning, "no_answer_columns", lambda *args: table)
    out = tmp_path / "tuned"
    assert main(["tune", "--model", str(trained_dir), "--data", str(mixed), "--decoding", "span", "--output-dir", str(out),
                 "--no-calibration"]) == 0
    said = [line for line in capsys.readouterr().err.splitlines() if "always abstain" in line]
    f1 = 200 / questions
    assert said == [f"warning: the no-answer threshold tuned for span is -inf (always abstain): span will answer no question "
                    f"with it (always abstaining scores F1 {f1:.2f} on the {questions} tuning questions, the best threshold "
                    f"that answers some {f1 - 100 / questions:.2f}); tune on more held-out questions, or other ones, or set "
                    "the threshold by hand in the model's config.json (no_answer_thresholds, key 'span')"]
    assert BioMrcConfig.from_pretrained(out).no_answer_thresholds == {"span": -math.inf}  # kept
