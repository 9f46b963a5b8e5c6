"""Calibration: ECE by hand, the beta calibrator, raw confidences, and the target on synthetic data."""

import math

import numpy as np
import pytest

from bio_mrc.inference.calibrators import answer_is_right, calibrate, calibrated_probability, fit_calibrator, raw_confidence
from bio_mrc.metrics.calibration_error import expected_calibration_error, reliability_bins
from bio_mrc.types import AnswerSpan, Prediction



def test_ece_by_hand():
    # Bins of width 0.5: {0.2, 0.4} right once (acc 0.5, conf 0.3); {0.6, 0.8, 1.0} right twice (acc 2/3, conf 0.8).
    confidence = np.array([0.2, 0.4, 0.6, 0.8, 1.0])
    right = np.array([1, 0, 1, 1, 0])
    expected = 2 / 5 * abs(0.5 - 0.3) + 3 / 5 * abs(2 / 3 - 0.8)
    assert expected_calibration_error(confidence, right, n_bins=2) == pytest.approx(expected)
    bins = reliability_bins(confidence, right, n_bins=2)
    assert bins.count.tolist() == [2, 3] and bins.accuracy == pytest.approx([0.5, 2 / 3])



def test_a_confidence_on_a_bin_edge_opens_the_bin_above():
    # 0.3, 0.6 and 0.7 start the bins [0.3, 0.4), [0.6, 0.7), [0.7, 0.8) (np.linspace's edges were a hair above them)
    assert reliability_bins(np.array([0.3, 0.6, 0.7]), np.array([1, 1, 1])).count.tolist() == [0, 0, 0, 1, 0, 0, 1, 1, 0, 0]
    # bins {0.2} (acc 0, gap 0.2), {0.3} (acc 1, gap 0.7), {0.9, 1.0} (acc 0, gap 0.95): (0.2 + 0.7 + 2 * 0.95) / 4
    confidence, right = np.array([0.3, 0.2, 1.0, 0.9]), np.array([1, 0, 0, 0])
    assert expected_calibration_error(confidence, right) == pytest.approx(0.7, abs=1e-12)

def test_the_reliability_bins_agree_with_scikit_learn_off_the_bin_edges():
    from sklearn.calibration import calibration_curve

    rng = np.random.default_rng(2)
    confidence = rng.random(300)
    confidence = confidence[np.abs(confidence * 10 - np.round(confidence * 10)) > 1e-6]  # edges: the bin above here
    right = (rng.random(confidence.size) < confidence).astype(float)
    accuracy, mean_confidence = calibration_curve(right, confidence, n_bins=10)
    bins = reliability_bins(confidence, right)
    filled = bins.count > 0
    np.testing.assert_allclose(bins.accuracy[filled], accuracy, rtol=0, atol=1e-12)
    np.testing.assert_allclose(bins.confidence[filled], mean_confidence, rtol=0, atol=1e-12)
    gaps = np.abs(accuracy - mean_confidence) * bins.count[filled] / confidence.size
    assert expected_calibration_error(confidence, right) == pytest.approx(gaps.sum(), abs=1e-12)


@pytest.mark.parametrize("confidence, right, n_bins, problem", [
    ([0.2, 0.7], [1, 2], 10, "rightness 2.0 of question 2 is not 0 or 1"),
    ([0.2, 0.7], [float("nan"), 1], 10, "rightness nan of question 1 is not 0 or 1"),
    ([0.2, 0.7], [1, 0], 0, "bins must be a whole number of 1 or more, got 0"),
    ([0.2, 0.7], [1, 0], 2.5, "bins must be a whole number of 1 or more, got 2.5"),
])
def test_ece_refuses_a_rightness_other_than_0_or_1_and_fewer_than_one_bin(confidence, right, n_bins, problem):
    with pytest.raises(ValueError, match=problem) as refused:
        expected_calibration_error(np.array(confidence), np.array(right), n_bins)
    assert "\n" not in str(refused.value)


def test_ece_is_zero_for_perfect_calibration_and_refuses_non_probabilities():
    assert expected_calibration_error(np.array([1.0, 1.0, 0.0]), np.array([1, 1, 0])) == 0.0
    with pytest.raises(ValueError, match="probabilities"):
        expected_calibration_error(np.array([1.5]), np.array([1]))


def test_the_saved_calibrator_is_beta_calibration():
    from sklearn.linear_model import LogisticRegression  # here: every worker imports this module, few fit a calibrator

    rng = np.random.default_rng(0)
    raw = rng.random(400)
    right = (rng.random(400) < raw**3).astype(float)  # overconfident raw scores
    calibrator = fit_calibrator(raw, right)
    assert calibrator["method"] == "beta" and calibrator["a"] >= 0 and calibrator["b"] >= 0
    features = np.column_stack([np.log(raw), -np.log(1 - raw)])
    reference = LogisticRegression(C=1e6, max_iter=1000, tol=1e-10).fit(features, right)
    probe = np.linspace(0.01, 0.99, 57)
    expected = reference.predict_proba(np.column_stack([np.log(probe), -np.log(1 - probe)]))[:, 1]
    np.testing.assert_allclose(calibrate(probe, calibrator), expected, atol=1e-6)
    assert (np.diff(calibrate(probe, calibrator)) > 0).all()  # monotone: the raw ranking is kept, with no ties


def test_beta_calibration_by_hand_and_at_the_edges():
    calibrator = {"method": "beta", "a": 2.0, "b": 1.0, "c": 0.5}
    p = 0.3  # sigmoid(2 ln 0.3 - ln 0.7 + 0.5)
    assert calibrate(np.array([p]), calibrator)[0] == pytest.approx(1 / (1 + math.exp(-(2 * math.log(p) - math.log(0.7) + 0.5))))
    assert np.isfinite(calibrate(np.array([0.0, 1.0]), calibrator)).all()  # raw 0 and 1 are clipped, not infinite


def test_a_negative_weight_is_dropped_so_the_map_stays_monotone():
    rng = np.random.default_rng(3)
    raw = rng.random(2000)
    right = (rng.random(2000) < 0.2 + 0.6 * (np.abs(raw - 0.5) < 0.25)).astype(float)  # non-monotone truth
    calibrator = fit_calibrator(raw, right)
    assert calibrator["a"] >= 0 and calibrator["b"] >= 0
    assert (np.diff(calibrate(np.linspace(0.01, 0.99, 99), calibrator)) >= 0).all()


def test_all_right_or_all_wrong_tuning_questions_give_their_rate():
    assert calibrate(np.array([0.1, 0.9]), fit_calibrator(np.array([0.2, 0.7, 0.9]), np.zeros(3))) == pytest.approx(1e-6, abs=1e-9)
    assert calibrate(np.array([0.1]), fit_calibrator(np.array([0.2, 0.7]), np.ones(2)))[0] == pytest.approx(1.0, abs=1e-5)


def test_the_fit_is_the_bounded_maximum_likelihood_of_kull_et_al():
    # Beta calibration: logistic regression on (ln p, -ln(1 - p)) with a, b >= 0, solved here by scipy's bounded L-BFGS-B.
    from scipy.optimize import minimize

    rng = np.random.default_rng(0)
    raw = rng.beta(2.0, 1.5, 500)
    features = np.column_stack([np.log(raw), -np.log1p(-raw)])
    for a, b, c in [(1.5, 1.5, -1.2), (1.0, -1.0, 0.1), (2.0, 0.8, 1.5)]:  # the second needs the bound b >= 0
        right = (rng.random(raw.size) < 1 / (1 + np.exp(-(features @ [a, b] + c)))).astype(float)
        nll = lambda w: np.sum(np.logaddexp(0, features @ w[:2] + w[2]) - right * (features @ w[:2] + w[2]))  # noqa: E731,B023
        reference = minimize(nll, [1.0, 1.0, 0.0], bounds=[(0, None), (0, None), (None, None)], method="L-BFGS-B",
                             options={"ftol": 1e-15, "gtol": 1e-12})
        calibrator = fit_calibrator(raw, right)
        # converged, not stopped at the solver's default tolerance (which left c up to 0.04 off the optimum)
        assert nll([calibrator["a"], calibrator["b"], calibrator["c"]]) == pytest.approx(reference.fun, abs=1e-8)
        np.testing.assert_allclose([calibrator["a"], calibrator["b"], calibrator["c"]], reference.x, atol=1e-5)
        expected = 1 / (1 + np.exp(-(features @ reference.x[:2] + reference.x[2])))
        assert np.abs(calibrate(raw, calibrator) - expected).max() < 1e-6


@pytest.mark.parametrize("raw, right, problem", [
    ([0.1, float("nan"), 0.5], [0, 1, 0], "raw confidence nan of question 2 is not a probability"),
    ([0.1, 1.5, 0.5], [0, 1, 0], "raw confidence 1.5 of question 2"),
    ([-0.1, 0.5, 0.5], [0, 1, 0], "raw confidence -0.1 of question 1"),
    ([0.1, 0.2, 0.5], [0, 2, 1], "rightness 2.0 of question 2 is not 0 or 1"),
    ([0.1, 0.2, 0.5], [0, float("nan"), 1], "rightness nan of question 2"),
    ([0.1, 0.2, 0.5], [0, 1], "1-D arrays of one length"),
])
def test_a_fit_on_what_is_not_a_probability_or_a_rightness_is_refused_in_one_line(raw, right, problem):
    with pytest.raises(ValueError, match=problem) as refused:
        fit_calibrator(np.array(raw), np.array(right))
    assert "\n" not in str(refused.value)


def test_the_same_questions_in_another_order_fit_the_same_numbers():
    rng = np.random.default_rng(5)
    raw = np.round(rng.random(400), 2)  # ties included
    right = (rng.random(400) < raw).astype(float)
    order = rng.permutation(400)
    assert fit_calibrator(raw[order], right[order]) == fit_calibrator(raw, right)


def test_confidences_of_exactly_0_and_1_are_fitted():
    calibrator = fit_calibrator(np.array([0.0, 0.0, 1.0, 1.0, 0.5, 0.5]), np.array([0, 1, 1, 1, 0, 1.0]))
    probabilities = calibrate(np.array([0.0, 0.5, 1.0]), calibrator)
    assert np.isfinite(probabilities).all() and (np.diff(probabilities) >= 0).all()


@pytest.mark.parametrize("a, b, c", [(1.0, 1.0, 0.0), (60.0, 0.0, 0.0), (0.0, 60.0, 0.0), (1e6, 1e6, -1e6), (1e6, 0.0, 1e6),
                                     (0.0, 0.0, -1e6), (1e-3, 2.0, 3.0)])
def test_probabilities_are_monotone_in_0_1_and_quiet_for_any_finite_raw_confidence(a, b, c):
    import warnings

    raw = np.sort(np.concatenate([[-1e30, -1.0, 0.0, 1e-300, 5e-7, 1e-6, 0.5, 1 - 1e-6, 1 - 1e-16, 1.0, 2.0, 1e30],
                                  np.random.default_rng(0).random(200)]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an overflow in the logistic must not reach the caller
        probabilities = calibrate(raw, {"method": "beta", "a": a, "b": b, "c": c})
    assert ((probabilities >= 0.0) & (probabilities <= 1.0)).all() and (np.diff(probabilities) >= 0).all()


def test_a_calibrator_read_back_from_config_json_gives_the_same_probabilities():
    import json

    from bio_mrc.model import BioMrcConfig

    rng = np.random.default_rng(4)
    raw = rng.random(300)
    calibrator = fit_calibrator(raw, (rng.random(300) < raw**2).astype(float))
    saved = BioMrcConfig(calibration={"joint": calibrator}).to_json_string()  # what tune writes
    read = BioMrcConfig.from_dict(json.loads(saved)).calibration["joint"]
    probe = np.concatenate([np.linspace(0.0, 1.0, 1001), [1e-300, 5e-7, 1 - 5e-7, 1 - 1e-16]])
    assert read == calibrator and np.array_equal(calibrate(probe, read), calibrate(probe, calibrator))


def test_a_calibrator_of_another_method_is_refused_with_what_to_do():
    isotonic = {"x": [0.0, 0.6, 1.0], "y": [0.1, 0.4, 0.9]}  # knots, not beta calibration
    with pytest.raises(ValueError, match="bio-mrc tune"):
        calibrated_probability([Prediction("q", [AnswerSpan("a", 0, 1, 2.0)])], "span", isotonic)


def test_calibration_brings_ece_down_on_held_out_data():
    rng = np.random.default_rng(1)
    raw_fit, raw_test = rng.random(3000), rng.random(3000)
    truth = lambda raw: (rng.random(raw.size) < raw**3).astype(float)  # noqa: E731
    calibrator = fit_calibrator(raw_fit, truth(raw_fit))
    right = truth(raw_test)
    before = expected_calibration_error(raw_test, right)
    after = expected_calibration_error(calibrate(raw_test, calibrator), right)
    assert before > 0.2 and after < 0.03


def test_raw_confidences_are_n_best_shares_for_every_decoding():
    spans = [AnswerSpan("a", 0, 1, 2.0), AnswerSpan("b", 2, 3, 0.0)]
    shares = raw_confidence([Prediction("q", spans), Prediction("empty")])
    assert shares.tolist() == pytest.approx([1 / (1 + math.exp(-2.0)), 0.0])  # softmax over the n-best


def test_right_means_official_f1_above_one_half():
    gold = {"q1": ["the Eiffel Tower"], "q2": ["Paris France"], "q3": ["x"]}
    predictions = [Prediction("q1", [AnswerSpan("Eiffel Tower", 0, 1, 0.0)]),
                   Prediction("q2", [AnswerSpan("Paris", 0, 1, 0.0)]), Prediction("q3")]
    # q1: F1 1.0; q2: P 1, R 1/2, F1 2/3; q3: no span.
    assert answer_is_right(predictions, gold, "1.1").tolist() == [1.0, 1.0, 0.0]


def test_an_f1_of_exactly_one_half_is_wrong_however_it_rounds():
    words = [f"w{k}" for k in range(11)]
    gold = {"q1": [" ".join(words)], "q2": [" ".join(words[:4])], "q3": [" ".join(words[:10])]}
    four_and_one = " ".join(words[:4] + ["x"])
    predictions = [Prediction("q1", [AnswerSpan(four_and_one, 0, 1, 0.0)]),  # P 4/5, R 4/11: F1 1/2 (0.5000000000000001 in floats)
                   Prediction("q2", [AnswerSpan("w0 w1 x y", 0, 1, 0.0)]),  # P 1/2, R 1/2: F1 1/2
                   Prediction("q3", [AnswerSpan(four_and_one, 0, 1, 0.0)])]  # P 4/5, R 4/10: F1 8/15
    assert answer_is_right(predictions, gold, "1.1").tolist() == [0.0, 0.0, 1.0]


def test_bio_mrc_tune_calibrates_and_the_extractor_and_pipeline_return_the_probability(trained_dir, tmp_path, monkeypatch):
    import shutil

    import bio_mrc.metrics.task_scores as task_scores

    # The tiny model answers all 8 questions right: a calibrator of that is constant, and never saved. Rightness
    # that rises with the confidence (the upper half right) gives one to save.
    monkeypatch.setattr(task_scores, "squad_right", lambda task, predictions, gold: (
        raw_confidence(predictions) >= np.median(raw_confidence(predictions))).astype(np.float64))

    from transformers import pipeline

    from bio_mrc.cli import main
    from bio_mrc.data.squad import load_squad
    from bio_mrc.inference import AnswerExtractor, TrainedModel

    from .conftest import SAMPLE_V1

    model = tmp_path / "model"
    shutil.copytree(trained_dir, model)
    assert main(["tune", "--model", str(model), "--data", str(SAMPLE_V1), "--min-calibration-questions", "2"]) == 0
    calibrators = TrainedModel.load(model).calibrators
    assert set(calibrators) == {"span", "bio", "joint"}
    example = load_squad(SAMPLE_V1).examples[0]
    for decoding in ("span", "bio", "joint"):
        answer = AnswerExtractor.from_pretrained(model, decoding=decoding)(example.question, example.context)
        assert answer.probability == pytest.approx(float(calibrate(np.array([answer.confidence]), calibrators[decoding])[0]))
        assert 0.0 <= answer.probability <= 1.0
    qa = pipeline("bio-mrc-qa", model=str(model), device="cpu")
    result = qa(question=example.question, context=example.context, decoding="joint")
    assert result["probability"] == pytest.approx(AnswerExtractor.from_pretrained(model, decoding="joint")(
        example.question, example.context).probability)
    joint = AnswerExtractor.from_pretrained(model, decoding="joint")(example.question, example.context)
    assert result["score"] == pytest.approx(joint.confidence)  # the raw score stays beside the calibrated one


def test_with_a_no_answer_threshold_the_confidence_is_in_the_answer_given_abstentions_included():
    sigmoid = lambda x: 1 / (1 + math.exp(-x))  # noqa: E731
    spans = [AnswerSpan("a", 0, 1, 2.0), AnswerSpan("b", 2, 3, 0.0)]
    answered = Prediction("q1", spans, no_answer_score=0.5)  # below the threshold 1.0: answers
    abstained = Prediction("q2", spans, no_answer_score=3.0, abstain=True)
    certain = Prediction("q3", spans, no_answer_score=math.inf, abstain=True)
    no_score = Prediction("q4", spans)  # a decoding without a no-answer score never abstains
    share = sigmoid(2.0)
    confidence = raw_confidence([answered, abstained, certain, no_score], threshold=1.0)
    # answer: share × P(answerable) = share × sigmoid(1.0 - 0.5); abstention: 1 - sigmoid(1.0 - 3.0)
    assert confidence.tolist() == pytest.approx([share * sigmoid(0.5), 1 - sigmoid(-2.0), 1.0, share])
    assert raw_confidence([answered, abstained]).tolist() == pytest.approx([share, share])  # no threshold: the span's share


def test_an_abstention_is_right_where_the_question_has_no_answer():
    gold = {"q1": [""], "q2": ["Paris"], "q3": [""]}
    span = [AnswerSpan("Paris", 0, 5, 1.0)]
    predictions = [Prediction("q1", span, 2.0, abstain=True), Prediction("q2", span, 2.0, abstain=True), Prediction("q3", span, -1.0)]
    assert answer_is_right(predictions, gold, "2.0").tolist() == [1.0, 0.0, 0.0]


def test_a_calibrator_fitted_with_a_threshold_scores_abstentions_at_that_threshold():
    beta = {"method": "beta", "a": 1.0, "b": 1.0, "c": 0.0}  # the identity map
    abstained = [Prediction("q", [AnswerSpan("a", 0, 1, 0.0)], no_answer_score=3.0, abstain=True)]
    assert calibrated_probability(abstained, "span", {**beta, "no_answer_threshold": 1.0}) == pytest.approx([1 / (1 + math.exp(-2.0))])
    assert calibrated_probability(abstained, "span", beta) == pytest.approx([1.0], abs=1e-5)  # an earlier version's: the span's share
