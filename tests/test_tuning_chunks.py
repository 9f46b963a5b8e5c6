"""Tuning decodes a bounded chunk of questions at a time and keeps only their per-question columns: the settings it
fits, and every number it reports, are those of one decoding of every question."""

import numpy as np
import pytest

from bio_mrc import registry
from bio_mrc.decoding.postprocess import DecodeConfig
from bio_mrc.decoding.window_outputs import WindowOutputs
from bio_mrc.inference import tuning, tuning_chunks
from bio_mrc.types import Example

CONTEXT = "aa bb cc dd"
OFFSETS = [[-1, -1], [0, 2], [3, 5], [6, 8], [9, 11]]


def one_span_outputs(tokens: list[int], halves: list[float]) -> WindowOutputs:
    """One window a question; its span head sure of the one-token span at ``tokens[q]``, scoring ``2 * halves[q]``
    against a null score of 0, so its no-answer score is ``-2 * halves[q]``."""
    n = len(tokens)
    start = np.full((n, 5), -10.0, dtype=np.float32)
    start[:, 0] = 0.0
    start[np.arange(n), tokens] = halves
    offsets = np.array([OFFSETS] * n)
    return WindowOutputs(np.arange(n), offsets, offsets[..., 0] >= 0, start_logits=start, end_logits=start.copy())


def counted_decodings(monkeypatch) -> list[int]:
    """The number of questions of each call of tuning's decoding."""
    sizes, decode = [], tuning.decode
    monkeypatch.setattr(tuning, "decode", lambda outputs, examples, *rest: sizes.append(len(examples)) or decode(outputs, examples, *rest))
    return sizes


def test_a_no_answer_threshold_tuned_a_question_at_a_time_is_the_hand_computed_one(monkeypatch):
    monkeypatch.setattr(tuning_chunks, "TUNING_CHUNK_QUESTIONS", 1)
    sizes = counted_decodings(monkeypatch)
    # answers: q0 "bb" (right, no-answer score -3), q1 "cc" (1, no answer), q2 "dd" (-1, wrong), q3 "aa" (-2, no answer)
    examples = [Example("q0", "?", CONTEXT, (((3, 5),),)), Example("q1", "?", CONTEXT),
                Example("q2", "?", CONTEXT, (((6, 8),),)), Example("q3", "?", CONTEXT)]
    outputs = one_span_outputs([2, 3, 4, 1], [1.5, -0.5, 0.5, 1.0])
    tuned = tuning.tune_settings(outputs, examples, ["span"], DecodeConfig(bio_length_prior=0.0), tune_prior=False,
                                 tune_thresholds=True, task=registry.squad_task("2.0"))
    # abstaining on all scores q1 and q3 (50); answering q0 alone adds it (75); q3 and q2 answered: 50, 50; all: 25
    key = tuning.threshold_key("span")
    assert tuned.thresholds == {key: -3.0}
    assert tuned.report[key] == {"threshold": -3.0, "best_f1": 75.0, "questions": 4}
    xs, f1 = tuned.curves["span"]
    assert xs.tolist() == [-np.inf, -3.0, -2.0, -1.0, 1.0] and f1.tolist() == [50.0, 75.0, 50.0, 50.0, 25.0]
    assert sizes == [1, 1, 1, 1]


def random_outputs(n_questions: int, seed: int = 0) -> tuple[WindowOutputs, list[Example]]:
    """Span and BIO logits drawn at random for ``n_questions`` over one 8-word context; every third question has two
    overlapping windows, every fourth no answer, and the others one or two gold spans."""
    rng = np.random.default_rng(seed)
    words = [(3 * k, 3 * k + 2) for k in range(8)]
    context = " ".join(f"w{k}" for k in range(8))
    index, offsets, examples = [], [], []
    for q in range(n_questions):
        for part in ([words[:5], words[3:]] if q % 3 == 0 else [words]):
            index.append(q)
            offsets.append([(-1, -1), *part] + [(-1, -1)] * (8 - len(part)))
        first = int(rng.integers(0, 6))
        gold = ((words[first][0], words[first + int(rng.integers(0, 2))][1]),) + (((words[7],) if q % 2 else ()))
        examples.append(Example(f"q{q}", "?", context, () if q % 4 == 3 else (gold,)))
    offsets_array = np.array(offsets, dtype=np.int64)
    n, width = offsets_array.shape[:2]
    logits = {"start_logits": rng.normal(size=(n, width)).astype(np.float32), "end_logits": rng.normal(size=(n, width)).astype(np.float32),
              "bio_logits": rng.normal(size=(n, width, 3)).astype(np.float32)}
    return WindowOutputs(np.array(index), offsets_array, offsets_array[..., 0] >= 0, **logits), examples


def tuned_values(tuned: tuning.TunedSettings) -> tuple:
    curves = {decoding: (xs.tolist(), f1.tolist()) for decoding, (xs, f1) in tuned.curves.items()}
    return tuned.bio_length_prior, tuned.thresholds, tuned.min_span_probabilities, tuned.calibration, tuned.report, curves


@pytest.mark.parametrize("task", [registry.squad_task("2.0"), registry.task_for("multispanqa", False)], ids=lambda task: task.name)
def test_settings_tuned_in_chunks_equal_those_of_every_question_decoded_at_once(monkeypatch, task):
    outputs, examples = random_outputs(11)
    options = dict(decodings=["span", "bio", "joint"], config=DecodeConfig(), tune_prior=True, tune_thresholds=task.no_answer,
                   calibrate=task.right is not None, task=task)
    whole = tuned_values(tuning.tune_settings(outputs, examples, **options))  # 11 questions: one chunk, every question at once
    monkeypatch.setattr(tuning_chunks, "TUNING_CHUNK_QUESTIONS", 3)
    sizes = counted_decodings(monkeypatch)
    assert tuned_values(tuning.tune_settings(outputs, examples, **options)) == whole
    assert sizes and max(sizes) <= 3
