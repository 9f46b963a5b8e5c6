"""The span-count rule of multi-span answers: the first span always, each further span only with its own
probability at least the decoding's threshold, tuned on multi-span questions and saved with the model."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from bio_mrc import registry
from bio_mrc.decoding.bio_spans import span_posteriors
from bio_mrc.decoding.nbest_spans import keep_probable_spans, nbest_multi_span
from bio_mrc.decoding.postprocess import DecodeConfig, decode_merged_tags
from bio_mrc.decoding.window_outputs import MergedTokens
from bio_mrc.features.windows import FeatureConfig
from bio_mrc.answer_text import normalize_answer
from bio_mrc.inference.answers import add_first_span_confidence, decode_answers, multi_span_answers, span_count_threshold
from bio_mrc.inference.calibrators import calibrate
from bio_mrc.inference.forward import predict_windows
from bio_mrc.inference.tuning import SPAN_PROBABILITY_GRID, all_multi_span_candidates, best_span_count_threshold
from bio_mrc.model import BioMrcForQuestionAnswering
from bio_mrc.tags import TAG_B, TAG_I, TAG_O
from bio_mrc.types import AnswerSpan, Example, Prediction

MULTISPAN = registry.task("multispanqa")


def test_the_first_span_stays_and_each_further_one_needs_the_threshold():
    spans = [AnswerSpan("a", 0, 1, 3.0, 0.2), AnswerSpan("b", 2, 3, 2.0, 0.7), AnswerSpan("c", 4, 5, 1.0, 0.4)]
    (kept,) = keep_probable_spans([Prediction("q", spans)], 0.5)
    assert [s.text for s in kept.spans] == ["a", "b"]  # "a" is first: kept though its probability is 0.2
    (every,) = keep_probable_spans([Prediction("q", spans)], 0.0)
    assert [s.text for s in every.spans] == ["a", "b", "c"]
    (only_first,) = keep_probable_spans([Prediction("q", spans)], 1.0)
    assert [s.text for s in only_first.spans] == ["a"]
    (empty,) = keep_probable_spans([Prediction("q", [])], 0.5)
    assert empty.spans == []


def test_the_threshold_is_the_callers_then_the_tuned_then_the_registrys():
    assert span_count_threshold("bio", 0.3, {"bio": 0.6}) == 0.3
    assert span_count_threshold("bio", None, {"bio": 0.6}) == 0.6
    assert span_count_threshold("bio", None, {"joint": 0.6}) == registry.decoding("bio").min_span_probability
    assert span_count_threshold("span", None, None) == registry.decoding("span").min_span_probability


def tag_rows(rows: list[list[tuple[float, float, float]]]) -> MergedTokens:
    """Merged tag log-probabilities (a probability 0 as 1e-9) of one example per row, one word per character pair ``"w "``."""
    probabilities = np.array(rows, dtype=np.float64)
    n, length, _ = probabilities.shape
    offsets = np.stack([np.arange(length) * 2, np.arange(length) * 2 + 1], axis=-1)
    return MergedTokens(np.log(np.maximum(probabilities, 1e-9)), np.broadcast_to(offsets, (n, length, 2)).copy(), np.ones((n, length), dtype=bool))


def test_each_bio_span_carries_its_posterior():
    # B, I, O per word; the words "a b c d e": spans "a" (sure) and "d" (unsure, yet in the most probable sequence)
    merged = tag_rows([[(0.9, 0.0, 0.1), (0.05, 0.05, 0.9), (0.05, 0.05, 0.9), (0.55, 0.0, 0.45), (0.05, 0.05, 0.9)]])
    example = Example("q", "?", "a b c d e")
    (prediction,) = decode_merged_tags(merged, [example], DecodeConfig(multi_span=True, bio_length_prior=0.0))
    assert [s.text for s in prediction.spans] == ["a", "d"]
    want = span_posteriors(merged.values, merged.mask, np.array([0, 0]), np.array([0, 3]), np.array([0, 3]))
    assert [s.probability for s in prediction.spans] == pytest.approx(want.tolist())
    assert want[1] < 0.6 < want[0]
    (kept,) = keep_probable_spans([prediction], 0.6)
    assert [s.text for s in kept.spans] == ["a"]


def test_one_text_tagged_at_two_mentions_is_one_answer():
    # the words "B x b c": "B" and "b" (one text once normalised) B with 0.36 and 0.34, "c" with 0.3 (not "A" and "a":
    # an article normalises to nothing, no answer, pooled with none)
    merged = tag_rows([[(0.36, 0.0, 0.64), (0.0, 0.0, 1.0), (0.34, 0.0, 0.66), (0.3, 0.0, 0.7)]])
    (prediction,) = decode_merged_tags(merged, [Example("q", "?", "B x b c")], DecodeConfig(multi_span=True, bio_length_prior=0.0))
    assert [s.text for s in prediction.spans] == ["B"]  # 2 * .7 / (1 + 1) beats 2 * 1 / (2 + 1)
    assert prediction.spans[0].probability == pytest.approx(0.7, abs=1e-6)


def test_an_all_o_sequence_still_answers_with_its_likeliest_spans():
    merged = tag_rows([[(0.2, 0.0, 0.8), (0.3, 0.1, 0.6), (0.05, 0.05, 0.9)]])
    example = Example("q", "?", "a b c")
    (answer,) = decode_merged_tags(merged, [example], DecodeConfig(multi_span=True, bio_length_prior=0.0))
    assert [s.text for s in answer.spans] == ["b", "a"]  # best first by r: log(0.3/0.6) > log(0.2/0.8)
    assert all(s.probability < 0.5 for s in answer.spans)  # neither is in the most probable sequence, all O
    (kept,) = keep_probable_spans([answer], 0.5)
    assert [s.text for s in kept.spans] == ["b"]
    (abstaining,) = decode_merged_tags(merged, [example], DecodeConfig(multi_span=True, require_answer=False, bio_length_prior=0.0))
    assert abstaining.spans == []
    assert TAG_B == 0 and TAG_O == 2  # the rows above list B, I, O


def test_the_tuned_threshold_is_the_best_exact_match_f1_on_the_questions():
    # q1's second span is right (probability 0.7), q2's is wrong (0.3): any threshold in (0.3, 0.7] is best
    examples = [Example("q1", "?", "x y", (((0, 1), (2, 3)),)), Example("q2", "?", "x z", (((0, 1),),))]
    candidates = [Prediction("q1", [AnswerSpan("x", 0, 1, 2.0, 0.9), AnswerSpan("y", 2, 3, 1.0, 0.7)]),
                  Prediction("q2", [AnswerSpan("x", 0, 1, 2.0, 0.9), AnswerSpan("z", 2, 3, 1.0, 0.3)])]
    value, statistic = best_span_count_threshold(candidates, examples, "bio", MULTISPAN, bandwidth=0.0)
    # keeping every span: 3 of 4 predicted spans right, all 3 gold found -> EM F1 = 2 * 0.75 * 1 / 1.75
    assert statistic[0] == pytest.approx(100 * 2 * 0.75 / 1.75)
    assert 0.3 < value <= 0.7
    assert statistic.max() == pytest.approx(100.0)  # every gold span, no wrong one
    assert value == min(v for v, s in zip(SPAN_PROBABILITY_GRID, statistic) if s == statistic.max())


def test_questions_of_two_data_sets_weigh_each_set_alike():
    # set "one": four one-span questions, each with a wrong second span at 0.4; set "many": one question with three gold
    # spans, its two further spans right at 0.4. Pooled, the larger set wins (drop the second spans: EM F1 83.3 against
    # 77.8); each set weighed alike, keeping them wins (one 66.7 and many 100 against one 100 and many 50)
    one = [Example(f"o{k}", "?", "x z", (((0, 1),),)) for k in range(4)]
    many = [Example("m", "?", "x y w", (((0, 1), (2, 3), (4, 5)),))]
    candidates = [Prediction(ex.id, [AnswerSpan("x", 0, 1, 2.0, 0.9), AnswerSpan("z", 2, 3, 1.0, 0.4)]) for ex in one]
    candidates.append(Prediction("m", [AnswerSpan("x", 0, 1, 2.0, 0.9), AnswerSpan("y", 2, 3, 1.0, 0.4), AnswerSpan("w", 4, 5, 1.0, 0.4)]))
    examples, data_sets = one + many, [[ex.id for ex in one], ["m"]]
    pooled, pooled_statistic = best_span_count_threshold(candidates, examples, "bio", MULTISPAN, bandwidth=0.0)
    weighed, weighed_statistic = best_span_count_threshold(candidates, examples, "bio", MULTISPAN, bandwidth=0.0, data_sets=data_sets)
    assert pooled > 0.4 and pooled_statistic.max() == pytest.approx(100 * 10 / 12) and pooled_statistic[0] == pytest.approx(100 * 14 / 18)
    assert weighed == 0.0 and weighed_statistic[0] == pytest.approx((100 * 2 / 3 + 100) / 2)
    assert weighed_statistic[-1] == pytest.approx((100 + 50) / 2)
    # one data set, or sets none of the questions belong to, is the pooled statistic
    for alone in ([[ex.id for ex in examples]], [[ex.id for ex in examples], ["elsewhere"]]):
        np.testing.assert_allclose(best_span_count_threshold(candidates, examples, "bio", MULTISPAN, data_sets=alone)[1], pooled_statistic)


def tagged(text_spans: list[tuple[str, int, float]]) -> list[AnswerSpan]:
    return [AnswerSpan(text, start, start + 1, 1.0, probability) for text, start, probability in text_spans]


def test_the_joint_rule_takes_the_tag_sequence_where_it_holds_several_likely_spans_else_the_nbest():
    nbest = [AnswerSpan("x y", 0, 3, 2.0), AnswerSpan("z", 4, 5, 1.0), AnswerSpan("y", 2, 3, 0.5)]  # shares 0.63, 0.23, 0.14
    rule = registry.decoding("joint").keep_spans
    several = Prediction("q", nbest, tag_spans=tagged([("x", 0, 0.9), ("y", 2, 0.6), ("z", 4, 0.3)]))
    (answer,) = rule([several], 0.9)
    assert [s.text for s in answer.spans] == ["x", "y"]  # two spans more likely than not; the threshold is not asked
    one_likely = Prediction("q", nbest, tag_spans=tagged([("x", 0, 0.9), ("z", 4, 0.3)]))
    (answer,) = rule([one_likely], 0.2)
    assert [s.text for s in answer.spans] == ["x y", "z"]  # the n-best rule: "z" holds 0.23 of the mass, "b" overlaps "x y"
    assert answer.spans[1].probability == pytest.approx(np.exp(1.0) / np.exp([2.0, 1.0, 0.5]).sum())
    (strict,) = rule([one_likely], 0.3)
    assert [s.text for s in strict.spans] == ["x y"]
    (untagged,) = rule([Prediction("q", nbest)], 0.2)
    assert [s.text for s in untagged.spans] == ["x y", "z"]
    (empty,) = rule([Prediction("q", [], tag_spans=[])], 0.2)
    assert empty.spans == []



def test_the_joint_rule_counts_one_text_at_two_likely_mentions_as_one_answer():
    """A tagger sure of "Paris" at two of its mentions holds one answer, not several: the n-best rule decides, as
    where it holds one likely span (it once answered "Paris", "paris" and never the n-best's "Lyon")."""
    nbest = [AnswerSpan("Paris", 0, 5, 2.0), AnswerSpan("Lyon", 40, 44, 1.6), AnswerSpan("France", 20, 26, 0.5)]
    mentions = [AnswerSpan("Paris", 0, 5, 1.0, 0.95), AnswerSpan("paris", 60, 65, 1.0, 0.8)]
    (answer,) = registry.decoding("joint").keep_spans([Prediction("q", nbest, tag_spans=mentions)], 0.2)
    assert [s.text for s in answer.spans] == ["Paris", "Lyon"]
    both = [*mentions, AnswerSpan("Lyon", 40, 44, 1.0, 0.7)]  # two texts: the tagger's spans, every likely mention
    (answer,) = registry.decoding("joint").keep_spans([Prediction("q", nbest, tag_spans=both)], 0.1)
    assert [s.text for s in answer.spans] == ["Paris", "paris", "Lyon"]

@pytest.mark.parametrize("decoding", ["span", "joint", "bio"])
def test_tuning_scores_each_threshold_as_decoding_with_it_answers(decoding, tiny_encoder_dir, tiny_tokenizer):
    """The tuning grid's answers at a threshold are the answers the model gives with it: the rule is applied to the
    candidates once, never to already kept n-best spans (their shares taken as scores again would flatten them)."""
    examples = [Example(f"q{i}", "Who met Bob?", f"Ann {i} and Eve met Bob and Cy in Paris on day {i}.", (((0, 3),),)) for i in range(4)]
    torch.manual_seed(1)
    model = BioMrcForQuestionAnswering.from_encoder(str(tiny_encoder_dir), heads="span+bio")
    outputs = predict_windows(model, tiny_tokenizer, examples, FeatureConfig(64, 16, 16), progress=False)
    config = DecodeConfig(bio_length_prior=0.0)
    candidates = all_multi_span_candidates(outputs, examples, decoding, config)
    for threshold in np.arange(0.0, 0.6, 0.01).tolist():
        tuned = multi_span_answers(candidates, decoding, threshold)
        decoded = decode_answers(outputs, examples, decoding, config, multi_span=True, min_span_probability=threshold)
        assert [[(s.start, s.end) for s in p.spans] for p in tuned] == [[(s.start, s.end) for s in p.spans] for p in decoded]
    if decoding == "joint":  # its untrained n-best spread their mass over many short spans: the thresholds differ here
        assert len({sum(len(p.spans) for p in multi_span_answers(candidates, decoding, t)) for t in (0.0, 0.08, 0.5)}) == 3



@pytest.mark.parametrize("decoding", ["span", "joint"])
def test_tuning_with_a_small_n_best_reads_the_shares_answers_carry(decoding, tiny_encoder_dir, tiny_tokenizer):
    """With n_best 2 the candidates are the first two n-best spans, each with its share of the default 20 (as at the
    default n_best), in tuning's grid as in the answers."""
    examples = [Example(f"q{i}", "Who met Bob?", f"Ann {i} and Eve met Bob and Cy in Paris on day {i}.", (((0, 3),),)) for i in range(4)]
    torch.manual_seed(1)
    model = BioMrcForQuestionAnswering.from_encoder(str(tiny_encoder_dir), heads="span+bio")
    outputs = predict_windows(model, tiny_tokenizer, examples, FeatureConfig(64, 16, 16), progress=False)
    config = DecodeConfig(bio_length_prior=0.0, n_best=2)
    candidates = all_multi_span_candidates(outputs, examples, decoding, config)
    wide = decode_answers(outputs, examples, decoding, DecodeConfig(bio_length_prior=0.0), multi_span=True, min_span_probability=1.0)
    for threshold in (0.0, 0.05, 0.2):
        tuned = multi_span_answers(candidates, decoding, threshold, n_best=2)
        decoded = decode_answers(outputs, examples, decoding, config, multi_span=True, min_span_probability=threshold)
        assert [[(s.start, s.end, s.probability) for s in p.spans] for p in tuned] == [[(s.start, s.end, s.probability) for s in p.spans] for p in decoded]
        assert all(len(p.spans) <= 2 for p in decoded)
        # the best span's share is the one it has at the default n_best (with n_best 2 it was its share of two)
        assert [p.spans[0].probability for p in decoded] == pytest.approx([p.spans[0].probability for p in wide])
        assert [p.confidence for p in decoded] == [p.confidence for p in wide]


def test_a_further_span_of_punctuation_or_an_article_alone_joins_no_answer():
    """Such a text normalises to nothing and scores 0 against any gold: it is never a further span, and never pools
    the probability of other such spans into one candidate."""
    nbest = [AnswerSpan("Rollo", 0, 5, 2.0), AnswerSpan("The", 6, 9, 1.9), AnswerSpan(",", 9, 10, 1.9), AnswerSpan("an", 11, 13, 1.9),
             AnswerSpan("Norse", 14, 19, 1.0)]
    (span_answer,) = registry.decoding("span").keep_spans([Prediction("q", nbest)], 0.05)
    assert [s.text for s in span_answer.spans] == ["Rollo", "Norse"]
    tagged_spans = tagged([("Rollo", 0, 0.9), (",", 9, 0.8), ("Norse", 14, 0.4)])
    (bio_answer,) = registry.decoding("bio").keep_spans([Prediction("q", tagged_spans)], 0.3)
    assert [s.text for s in bio_answer.spans] == ["Rollo", "Norse"]
    (joint_answer,) = registry.decoding("joint").keep_spans([Prediction("q", nbest, tag_spans=tagged_spans)], 0.5)
    assert [s.text for s in joint_answer.spans] == ["Rollo"]  # one tagged span with text: the n-best rule answers
    (lone,) = registry.decoding("span").keep_spans([Prediction("q", [AnswerSpan(".", 0, 1, 1.0)])], 0.1)
    assert [s.text for s in lone.spans] == ["."]  # the best span stays: an answered question is never empty


def test_the_joint_rule_puts_the_single_answer_first_then_the_likeliest_tagged_spans():
    """Where the tagger's spans answer, the span the prediction's confidence describes (the n-best's best) comes first
    when the tagger holds its text, so ``answer`` and ``confidence`` speak of one span; the others likeliest first."""
    nbest = [AnswerSpan("Bob", 8, 11, 2.0), AnswerSpan("Ann", 0, 3, 1.0)]
    spans = tagged([("Ann", 0, 0.6), ("Eve", 4, 0.9), ("Bob", 8, 0.55)])
    (answer,) = registry.decoding("joint").keep_spans([Prediction("q", nbest, tag_spans=spans)], 0.5)
    assert [s.text for s in answer.spans] == ["Bob", "Eve", "Ann"] and answer.answer == "Bob"
    (elsewhere,) = registry.decoding("joint").keep_spans([Prediction("q", [AnswerSpan("Cy", 12, 14, 2.0)], tag_spans=spans)], 0.5)
    assert [s.text for s in elsewhere.spans] == ["Eve", "Ann", "Bob"]


def test_the_joint_rule_lists_the_single_answers_other_mentions_by_their_probability():
    """The single answer's text leads at its likeliest mention; its other mentions follow the other spans by
    probability, as every multi-span answer lists its spans after the first (they came right after it, before a
    likelier span of another text)."""
    nbest = [AnswerSpan("Paris", 0, 5, 2.0), AnswerSpan("Lyon", 40, 44, 1.6)]
    spans = [AnswerSpan("paris", 60, 65, 1.0, 0.6), AnswerSpan("Lyon", 40, 44, 1.0, 0.9), AnswerSpan("Paris", 0, 5, 1.0, 0.95)]
    (answer,) = registry.decoding("joint").keep_spans([Prediction("q", nbest, tag_spans=spans)], 0.5)
    assert [(s.text, s.probability) for s in answer.spans] == [("Paris", 0.95), ("Lyon", 0.9), ("paris", 0.6)]
    led = [AnswerSpan("Paris", 0, 5, 1.0, 0.7), AnswerSpan("Lyon", 40, 44, 1.0, 0.9), AnswerSpan("paris", 60, 65, 1.0, 0.8)]
    (answer,) = registry.decoding("joint").keep_spans([Prediction("q", nbest, tag_spans=led)], 0.5)
    assert [(s.start, s.probability) for s in answer.spans] == [(60, 0.8), (40, 0.9), (0, 0.7)]


def word_tags(begin_probabilities: list[float]) -> np.ndarray:
    """Tag log-probabilities of one row of words, each word B with the given probability (I almost never)."""
    tiny = 1e-6
    log_probs = np.zeros((1, len(begin_probabilities), 3))
    for t, b in enumerate(begin_probabilities):
        b = b or tiny
        log_probs[0, t, [TAG_B, TAG_I, TAG_O]] = np.log([b, tiny, 1 - b - tiny])
    return log_probs


def test_spans_without_answer_text_pool_into_no_phantom_bio_answer():
    """Punctuation tagged at two places is no answer: pooled into one candidate of their summed posterior, it took
    the expected-F1 answer's second place and was then dropped as a further span, crowding out "Norse"."""
    context = "Rollo led . them , the Norse"
    words = np.array([[(0, 5), (6, 9), (10, 11), (12, 16), (17, 18), (19, 22), (23, 28)]])
    log_probs = word_tags([0.9, 0.0, 0.3, 0.0, 0.3, 0.0, 0.35])
    merged = MergedTokens(log_probs, words, np.ones((1, 7), bool))
    (decoded,) = decode_merged_tags(merged, [Example("q", "Who?", context, None)], DecodeConfig(multi_span=True, bio_length_prior=0.0))
    assert [s.text for s in decoded.spans] == ["Rollo", "Norse"]
    assert [round(s.probability, 6) for s in decoded.spans] == [0.9, 0.35]


def test_an_answer_of_many_spans_is_kept_apart():
    # A sure tagger's answer holds every mention of a name: 20,000 spans were each checked against every span
    # kept before them (minutes for the mentions of a 5,000,000-character context); their characters are marked.
    spans = [AnswerSpan("bob", 6 * i, 6 * i + 3, 1.0, 0.9) for i in range(20_000)]
    inside = AnswerSpan("ob", 7, 9, 1.0, 0.9)  # shares characters with the first: joins none
    (prediction,) = keep_probable_spans([Prediction("q", [*spans, inside])], 0.5)
    assert prediction.spans == spans


def test_a_long_nbest_is_kept_apart():
    # n_best has no upper bound: 8,000 n-best answers were each checked against every answer kept before them (20 s;
    # 20,000: two minutes); their characters are marked. "w1" overlaps "w0": it joins none.
    spans = [AnswerSpan("w0", 0, 3, 0.0), AnswerSpan("w1", 1, 2, -1e-4)]
    spans += [AnswerSpan(f"w{i}", 4 * i, 4 * i + 3, -i * 1e-4) for i in range(2, 8_000)]
    (prediction,) = nbest_multi_span([Prediction("q", spans)], 0.0)
    assert [span.text for span in prediction.spans] == ["w0", *(f"w{i}" for i in range(2, 8_000))]


BETA = {"method": "beta", "a": 1.0, "b": 1.0, "c": 0.0, "correct_if": "f1 > 0.5"}


def test_a_multi_span_answers_confidence_is_its_first_spans_share_of_the_single_answers_nbest():
    """Read at the best-ranked single n-best span of the first span's text (once normalised); 0 where none has it; an
    abstention's from the no-answer margin alone. Shares of scores 2, 1, 0: e^2, e^1, e^0 over their sum."""
    single = [AnswerSpan("Bob", 8, 11, 2.0), AnswerSpan("Ann", 0, 3, 1.0), AnswerSpan("Eve", 4, 7, 0.0)]
    total = np.exp([2.0, 1.0, 0.0]).sum()
    answers = [Prediction("a", [AnswerSpan("Ann", 20, 23, 9.0, 1.0)]), Prediction("b", [AnswerSpan("the Bob", 12, 19, 5.0, 0.3)]),
               Prediction("c", [AnswerSpan("Cy", 0, 2, 7.0, 1.0)]), Prediction("d", [])]
    add_first_span_confidence(answers, [Prediction(p.id, single) for p in answers], "bio", BETA)
    assert [p.confidence for p in answers] == pytest.approx([np.e / total, np.e ** 2 / total, 0.0, 0.0])
    assert [p.probability for p in answers] == pytest.approx(calibrate(np.array([np.e / total, np.e ** 2 / total, 0.0, 0.0]), BETA).tolist())
    assert [s.probability for s in answers[1].spans] == [0.3]  # each span keeps its own probability
    abstaining = [Prediction("e", [AnswerSpan("Ann", 0, 3, 1.0)], no_answer_score=3.0, abstain=True)]
    add_first_span_confidence(abstaining, [Prediction("e", single)], "bio", None, threshold=1.0)
    assert abstaining[0].confidence == pytest.approx(1.0 - 1.0 / (1.0 + np.exp(2.0))) and abstaining[0].probability is None


@pytest.mark.parametrize("decoding", ["span", "bio", "joint"])
def test_a_multi_span_answer_is_as_confident_as_the_single_answer_of_its_first_span(decoding, tiny_encoder_dir, tiny_tokenizer):
    """The calibrator is fitted on single answers: a multi-span answer led by the single answer's text has its
    confidence and probability, to the bit (a one-span BIO answer's share among its own spans was always 1)."""
    examples = [Example(f"q{i}", "Who met Bob?", f"Ann {i} and Eve met Bob and Cy in Paris on day {i}.", (((0, 3),),)) for i in range(6)]
    torch.manual_seed(1)
    model = BioMrcForQuestionAnswering.from_encoder(str(tiny_encoder_dir), heads="span+bio")
    outputs = predict_windows(model, tiny_tokenizer, examples, FeatureConfig(64, 16, 16), progress=False)
    config, calibrators = DecodeConfig(bio_length_prior=0.0), {decoding: BETA}
    single = decode_answers(outputs, examples, decoding, config, calibrators=calibrators)
    for threshold in (0.0, 1.0):
        multi = decode_answers(outputs, examples, decoding, config, multi_span=True, min_span_probability=threshold, calibrators=calibrators)
        led = [(m, s) for m, s in zip(multi, single) if normalize_answer(m.answer) == normalize_answer(s.answer)]
        assert led and all((m.confidence, m.probability) == (s.confidence, s.probability) for m, s in led)
        assert all(m.confidence < 1.0 for m in multi)
