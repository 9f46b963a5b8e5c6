"""The length prior's grid decodes each β keeping the spans the task's scores read, and scores an answer several β
give alike once: the prior, every grid value's statistic and ``tune``'s saved settings are those of every β decoded
in full and scored afresh."""

import contextlib
import json
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from bio_mrc import registry
from bio_mrc.cli import main
from bio_mrc.decoding.postprocess import DecodeConfig, decode, decode_merged_tags, merge_tag_log_probs
from bio_mrc.decoding.window_outputs import WindowOutputs
from bio_mrc.inference import tuning, tuning_chunks
from bio_mrc.inference.tuning import LENGTH_PRIOR_BANDWIDTH, LENGTH_PRIOR_GRID, smoothed_argmax, tune_bio_length_prior
from bio_mrc.types import Example

from .conftest import SAMPLE_V1

WORDS = ("alpha", "beta", "gamma", "delta", "the", ",", "epsilon")


def random_questions(seed: int, n_questions: int = 12, length: int = 14) -> tuple[WindowOutputs, list[Example]]:
    """One window per question over a context of random words, some tokens a blank character alone (a span of them
    keeps no text once trimmed), the BIO logits drawn from a few values (ties everywhere); each question's gold a
    random span of one to four tokens, one answer of one or two parts every third question."""
    rng = np.random.default_rng(seed)
    offsets = np.full((n_questions, length + 1, 2), -1, dtype=np.int64)
    examples = []
    for q in range(n_questions):
        context, places = "", []
        for _ in range(length):
            if places and rng.random() < 0.15:  # the blank after the last word, a token of its own
                places.append((len(context), len(context) + 1))
                context += " "
            else:
                word = str(rng.choice(WORDS))
                context += ("" if not context or context.endswith(" ") else " ") + word
                places.append((len(context) - len(word), len(context)))
        offsets[q, 1:] = places
        start = int(rng.integers(0, length - 4))
        first = (places[start][0], places[start + int(rng.integers(0, 4))][1])
        second = (places[length - 1][0], places[length - 1][1])
        parts = (first, second) if q % 3 == 0 and second[0] > first[1] else (first,)
        examples.append(Example(f"q{q}", "?", context, (parts,)))
    logits = rng.choice([-2.0, -1.0, 0.0, 0.5, 1.0], size=(n_questions, length + 1, 3))
    return WindowOutputs(np.arange(n_questions), offsets, offsets[..., 0] >= 0, bio_logits=logits), examples


def straightforward_prior(outputs, examples, config, task, grid=LENGTH_PRIOR_GRID, bandwidth=LENGTH_PRIOR_BANDWIDTH):
    """The length prior as tuning finds it with every β's answers decoded in full and each scored afresh."""
    ids = [example.id for example in examples]
    statistic = []
    for prior in grid:
        predictions = decode(outputs, examples, registry.tag_decoding().name, task.decode_config(replace(config, bio_length_prior=prior)))
        statistic.append(tuning_chunks.columns_statistic(task, ids, tuning_chunks.score_columns(task, examples, predictions)))
    statistic = np.array(statistic)
    return float(grid[smoothed_argmax(grid, statistic, bandwidth)]), statistic


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), kept=st.integers(1, 4), n_best=st.integers(1, 6))
def test_a_decoding_keeping_fewer_spans_keeps_the_first_of_every_n_best(seed, kept, n_best):
    outputs, examples = random_questions(seed)
    merged = merge_tag_log_probs(outputs, len(examples))
    for prior in (0.0, 0.25, 1.5, 6.0):
        config = DecodeConfig(n_best=n_best, bio_length_prior=prior)
        full, fewer = (decode_merged_tags(merged, examples, config, **options) for options in ({}, {"kept_spans": kept}))
        for whole, part in zip(full, fewer):
            assert part.spans == whole.spans[:kept] and part.answer == whole.answer
            assert part.no_answer_score == whole.no_answer_score


@pytest.mark.parametrize(
    "task", [registry.squad_task("1.1"), pytest.param(registry.task_for("multispanqa", False), marks=pytest.mark.slow)], ids=lambda task: task.name
)
@settings(max_examples=5, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), chunk=st.sampled_from([1, 4, 1000]))
def test_the_prior_and_every_grid_statistic_are_those_of_every_beta_decoded_in_full(task, seed, chunk):
    outputs, examples = random_questions(seed, n_questions=8)
    with pytest.MonkeyPatch.context() as patch:  # chunks of a few questions each keep their own scores
        patch.setattr(tuning_chunks, "TUNING_CHUNK_QUESTIONS", chunk)
        prior, statistic = tune_bio_length_prior(outputs, examples, DecodeConfig(), task=task)
    expected_prior, expected = straightforward_prior(outputs, examples, DecodeConfig(), task)
    assert prior == expected_prior
    np.testing.assert_array_equal(statistic, expected)  # bit for bit


def test_single_answers_read_their_first_span_and_span_lists_every_one():
    assert registry.squad_task("1.1").answer_spans() == registry.squad_task("2.0").answer_spans() == 1
    assert registry.task_for("multispanqa", False).answer_spans() is None


def test_tune_saves_what_every_beta_decoded_in_full_and_scored_afresh_saves(trained_dir, tmp_path, monkeypatch, capsys):
    def tuned(out):
        assert main(["tune", "--model", str(trained_dir), "--data", str(SAMPLE_V1), "--output-dir", str(out), "--min-calibration-questions", "8"]) == 0
        return json.loads((out / "config.json").read_text()), capsys.readouterr().out

    fast = tuned(tmp_path / "fast")
    monkeypatch.setattr(registry.TaskEntry, "answer_spans", lambda task: None)  # every span built, as decoding gives it
    monkeypatch.setattr(tuning, "shared_question_scores", contextlib.nullcontext)  # every answer scored anew
    assert tuned(tmp_path / "straightforward") == fast
