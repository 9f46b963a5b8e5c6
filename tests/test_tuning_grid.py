"""The length prior's grid decodes each β keeping the spans the task's scores read, and scores an answer several β
give alike once; the span-count rule's grid groups each question's spans once for every threshold; both normalise a
text once while a chunk's grid runs: the prior, every grid value's statistic and ``tune``'s saved settings are those of
every β decoded in full and every threshold's answers kept and scored afresh."""

import contextlib
import json
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from bio_mrc import answer_text, registry
from bio_mrc.answer_text import TakenCharacters
from bio_mrc.decoding import nbest_spans
from bio_mrc.cli import main
from bio_mrc.decoding.postprocess import DecodeConfig, decode, decode_merged_tags, merge_tag_log_probs
from bio_mrc.decoding.window_outputs import WindowOutputs
from bio_mrc.inference import tuning, tuning_chunks
from bio_mrc.inference.answers import multi_span_answers
from bio_mrc.inference.tuning import (
    LENGTH_PRIOR_BANDWIDTH,
    LENGTH_PRIOR_GRID,
    SPAN_PROBABILITY_BANDWIDTH,
    SPAN_PROBABILITY_GRID,
    all_multi_span_candidates,
    smoothed_argmax,
    tune_bio_length_prior,
    tune_span_count_rule,
)
from bio_mrc.types import AnswerSpan, Example, Prediction

from .conftest import property_examples, SAMPLE_V1

WORDS = ("alpha", "beta", "gamma", "delta", "the", ",", "epsilon")
MULTISPAN = registry.task_for("multispanqa", False)


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
    start, end = rng.choice([-1.0, 0.0, 1.0, 2.0], size=(2, n_questions, length + 1))  # spans of equal scores, texts alike
    return WindowOutputs(np.arange(n_questions), offsets, offsets[..., 0] >= 0, bio_logits=logits, start_logits=start, end_logits=end), examples


def straightforward_prior(outputs, examples, config, task, grid=LENGTH_PRIOR_GRID, bandwidth=LENGTH_PRIOR_BANDWIDTH):
    """The length prior as tuning finds it with every β's answers decoded in full and each scored afresh."""
    ids = [example.id for example in examples]
    statistic = []
    for prior in grid:
        predictions = decode(outputs, examples, registry.tag_decoding().name, task.decode_config(replace(config, bio_length_prior=prior)))
        statistic.append(tuning_chunks.columns_statistic(task, ids, tuning_chunks.score_columns(task, examples, predictions)))
    statistic = np.array(statistic)
    return float(grid[smoothed_argmax(grid, statistic, bandwidth)]), statistic


@settings(max_examples=property_examples(25), deadline=None)
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


def test_a_normalised_text_is_kept_while_a_block_runs_and_dropped_after(monkeypatch):
    computed = []
    normalized = answer_text._normalized
    monkeypatch.setattr(answer_text, "_normalized", lambda text: computed.append(text) or normalized(text))
    texts = ["The Alpha,", "the  alpha", "The Alpha,", "", "A."]
    assert [answer_text.normalize_answer(text) for text in texts] == ["alpha", "alpha", "alpha", "", ""]
    assert computed == texts  # no block: each text normalised afresh
    computed.clear()
    with answer_text.shared_normalized_answers():
        first = [answer_text.normalize_answer(text) for text in texts]
        with answer_text.shared_normalized_answers():  # an inner block shares the outer one's
            inner = [answer_text.normalize_answer(text) for text in texts]
    assert first == inner == ["alpha", "alpha", "alpha", "", ""]
    assert computed == ["The Alpha,", "the  alpha", "", "A."]  # each text once
    computed.clear()
    assert answer_text.normalize_answer("The Alpha,") == "alpha" and computed == ["The Alpha,"]  # dropped with the block


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_best=st.sampled_from([None, 1, 3, 20]))
def test_each_span_count_rule_at_every_threshold_keeps_what_it_keeps_at_that_threshold_alone(seed, n_best):
    outputs, examples = random_questions(seed)
    thresholds = [0.5, 0.0, 0.05, 0.5, 0.95, 0.1, 0.0]  # out of order, repeated: nothing one threshold keeps leaks into the next
    for decoding, entry in registry.DECODINGS.items():
        candidates = all_multi_span_candidates(outputs, examples, decoding, DecodeConfig())
        grid = [list(answers) for answers in entry.keep_spans_at(candidates, thresholds, n_best)]
        assert grid == [entry.keep_spans(candidates, threshold, n_best) for threshold in thresholds], decoding


def straightforward_nbest(prediction, min_probability, n_best):
    """The n-best rule of one prediction as written plainly: its answers by text, each taken unless it overlaps one
    taken before, until the first after the best below the threshold."""
    kept, answers = [], nbest_spans._answers_by_text(prediction.spans, n_best)
    taken = TakenCharacters([(span.start, span.end) for span, _ in answers])
    for span, p in answers:
        if kept and p < min_probability:
            break
        if not taken.overlaps(span.start, span.end):
            taken.take(span.start, span.end)
            kept.append(replace(span, score=p, probability=p))
    return replace(prediction, spans=kept)


def straightforward_tagged(prediction, min_probability, n_best):
    """A tag sequence's spans: the first, and each further one of answer text with the threshold's probability."""
    kept = [
        span
        for k, span in enumerate(prediction.spans)
        if k == 0 or (nbest_spans.is_answer_text(span.text) and (span.probability is None or span.probability >= min_probability))
    ]
    return replace(prediction, spans=nbest_spans.apart(kept))


def straightforward_tagged_or_nbest(prediction, min_probability, n_best):
    tagged = nbest_spans._several_tagged_spans(prediction)
    return replace(prediction, spans=tagged) if tagged is not None else straightforward_nbest(prediction, min_probability, n_best)


STRAIGHTFORWARD_RULES = {
    registry.TAG_SEQUENCE: straightforward_tagged,
    registry.NBEST_SPANS: straightforward_nbest,
    registry.TAGS_OR_NBEST: straightforward_tagged_or_nbest,
}


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_best=st.sampled_from([None, 1, 3, 20]))
def test_each_span_count_rule_keeps_what_the_rule_written_plainly_keeps(seed, n_best):
    outputs, examples = random_questions(seed)
    assert set(STRAIGHTFORWARD_RULES) == set(registry.SPAN_COUNT_RULES)
    for decoding, entry in registry.DECODINGS.items():
        candidates = all_multi_span_candidates(outputs, examples, decoding, DecodeConfig())
        rule = STRAIGHTFORWARD_RULES[entry.multi_span]
        for threshold in (0.0, 0.05, 0.1, 0.3, 0.5, 0.95, 1.0):
            expected = [rule(prediction, threshold, n_best) for prediction in candidates]
            assert entry.keep_spans(candidates, threshold, n_best) == expected, (decoding, threshold)


def test_an_answer_that_overlaps_the_best_still_stops_the_rule_below_the_threshold():
    # "beta" and "gamma" near-tied (gamma's share a hair larger, beta first by position); beta overlaps the best answer
    spans = [AnswerSpan("alpha beta", 0, 10, 5.0), AnswerSpan("beta", 6, 10, 1.0), AnswerSpan("gamma", 11, 16, 1.0 + 1e-7)]
    prediction = Prediction("q", spans)
    (every,) = nbest_spans.nbest_multi_span([prediction], 0.0)
    beta, gamma = (float(nbest_spans.nbest_shares([s.score for s in spans])[k]) for k in (1, 2))
    assert beta < gamma and [s.text for s in every.spans] == ["alpha beta", "gamma"]
    for threshold, texts in ((beta, ["alpha beta", "gamma"]), (gamma, ["alpha beta"])):  # beta below: nothing after it
        grid = list(registry.decoding("span").keep_spans_at([prediction], [0.0, threshold, 0.0], None))
        assert [[s.text for s in answers[0].spans] for answers in grid] == [["alpha beta", "gamma"], texts, ["alpha beta", "gamma"]]
        assert grid[1] == [straightforward_nbest(prediction, threshold, None)]


def straightforward_span_count_rule(outputs, examples, decoding, config, task):
    """The span-count rule as tuning finds it with every threshold's answers kept from the candidates and scored afresh."""
    candidates = all_multi_span_candidates(outputs, examples, decoding, config)
    ids = [example.id for example in examples]
    statistic = []
    for value in SPAN_PROBABILITY_GRID:
        answers = multi_span_answers(candidates, decoding, float(value), config.n_best)
        statistic.append(tuning_chunks.columns_statistic(task, ids, tuning_chunks.score_columns(task, examples, answers)))
    statistic = np.array(statistic)
    return float(SPAN_PROBABILITY_GRID[smoothed_argmax(SPAN_PROBABILITY_GRID, statistic, SPAN_PROBABILITY_BANDWIDTH)]), statistic


@pytest.mark.parametrize("decoding", ["span", "bio", "joint"])
@settings(max_examples=5, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), chunk=st.sampled_from([1, 4, 1000]), n_best=st.sampled_from([2, 20]))
def test_the_span_count_rule_and_every_grid_statistic_are_those_of_every_threshold_kept_afresh(decoding, seed, chunk, n_best):
    outputs, examples = random_questions(seed, n_questions=8)
    config = MULTISPAN.decode_config(DecodeConfig(n_best=n_best, bio_length_prior=1.0))
    with pytest.MonkeyPatch.context() as patch:  # chunks of a few questions each keep their own groupings and texts
        patch.setattr(tuning_chunks, "TUNING_CHUNK_QUESTIONS", chunk)
        value, statistic = tune_span_count_rule(outputs, examples, decoding, config, MULTISPAN)
    expected_value, expected = straightforward_span_count_rule(outputs, examples, decoding, config, MULTISPAN)
    assert value == expected_value
    np.testing.assert_array_equal(statistic, expected)  # bit for bit


def test_a_multi_span_tune_saves_what_every_threshold_kept_and_every_text_normalised_afresh_saves(trained_dir, tmp_path, monkeypatch, capsys):
    def tuned(out):
        command = ["tune", "--model", str(trained_dir), "--data", str(SAMPLE_V1), "--format", "answer-parts", "--output-dir", str(out)]
        assert main(command) == 0
        return json.loads((out / "config.json").read_text()), capsys.readouterr().out

    fast = tuned(tmp_path / "fast")
    afresh = lambda entry, predictions, thresholds, n_best=None: (entry.keep_spans(predictions, t, n_best) for t in thresholds)  # noqa: E731
    monkeypatch.setattr(registry.DecodingEntry, "keep_spans_at", afresh)  # each threshold groups the spans anew
    monkeypatch.setattr(tuning, "shared_normalized_answers", contextlib.nullcontext)  # every text normalised anew
    monkeypatch.setattr(tuning, "shared_question_scores", contextlib.nullcontext)
    assert tuned(tmp_path / "straightforward") == fast
