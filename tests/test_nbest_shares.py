"""An answer's confidence and probability are a share of the same 20 best spans however many answers a caller asks
for: asking to see more alternatives changes neither, and the calibrator reads the quantity it was fitted on."""

from __future__ import annotations

import pytest

from bio_mrc.decoding.nbest_spans import nbest_multi_span
from bio_mrc.decoding.postprocess import DecodeConfig
from bio_mrc.decoding.shares import CONFIDENCE_SPANS, nbest_shares
from bio_mrc.inference import AnswerExtractor
from bio_mrc.inference.calibrators import raw_confidence
from bio_mrc.types import AnswerSpan, Prediction

# A question the tiny model is unsure of over several windows: many spans past the 20 best hold a part of the mass.
QUESTION = "Who?"
CONTEXT = " ".join(["The Normans were famed for their martial spirit."] * 8)
CALIBRATOR = {"method": "beta", "a": 2.0, "b": 0.5, "c": 0.25, "questions": 50}


def equal_spans(count: int) -> list[AnswerSpan]:
    return [AnswerSpan(f"w{k}", 3 * k, 3 * k + 2, 0.0) for k in range(count)]


def test_a_share_is_of_the_best_twenty_spans_however_many_follow():
    # 25 spans of one score: each is 1/20 of the best 20, the five past them too (1/25 when all 25 were the sum)
    assert CONFIDENCE_SPANS == DecodeConfig().n_best == 20
    assert nbest_shares([0.0] * 25).tolist() == pytest.approx([0.05] * 25)
    assert raw_confidence([Prediction("q", equal_spans(25))]).tolist() == pytest.approx([0.05])
    assert raw_confidence([Prediction("q", equal_spans(4))]).tolist() == pytest.approx([0.25])  # fewer: all of them
    (answer,) = nbest_multi_span([Prediction("q", equal_spans(25))], min_probability=0.0)
    assert [s.probability for s in answer.spans] == pytest.approx([0.05] * 25)


def test_a_mention_past_the_twenty_adds_no_probability_to_its_answer():
    # 20 texts of one score, then "w0" again five times and "Zed": each answer 1/20, "w0" too (it was 6/26, "Zed" 1/26)
    spans = [*equal_spans(20), *(AnswerSpan("w0", 100 + 3 * k, 102 + 3 * k, 0.0) for k in range(5)), AnswerSpan("Zed", 200, 203, 0.0)]
    (answer,) = nbest_multi_span([Prediction("q", spans)], min_probability=0.0)
    assert [s.text for s in answer.spans] == [*(f"w{k}" for k in range(20)), "Zed"]
    assert [s.probability for s in answer.spans] == pytest.approx([0.05] * 21)


@pytest.fixture(scope="module")
def calibrated(trained_dir):  # noqa: F811
    extractor = AnswerExtractor.from_pretrained(trained_dir)
    extractor.trained.model.config.calibration = {decoding: CALIBRATOR for decoding in ("span", "bio", "joint")}
    return extractor


@pytest.mark.parametrize("decoding", ["span", "bio", "joint"])
def test_asking_for_more_answers_changes_no_answers_confidence_or_probability(calibrated, decoding):
    answers = {top_k: calibrated(QUESTION, CONTEXT, decoding=decoding, top_k=top_k) for top_k in (1, 20, 50)}
    assert len(answers[50].spans) > 20  # spans past the twenty best: at 50 the shares were of 50
    best = answers[1]
    assert best.probability is not None and 0.0 < best.confidence < 1.0
    for more in (answers[20], answers[50]):
        assert more.spans[0] == best.spans[0]  # the same answer
        assert (more.confidence, more.probability) == pytest.approx((best.confidence, best.probability), rel=1e-12)


@pytest.mark.parametrize("decoding", ["span", "bio", "joint"])
def test_the_pipelines_scores_stay_with_a_larger_top_k(trained_dir, decoding):  # noqa: F811
    from transformers import pipeline

    from bio_mrc.inference.pipeline import TASK

    qa = pipeline(TASK, model=str(trained_dir), device="cpu")
    qa.extractor.trained.model.config.calibration = {decoding: CALIBRATOR}
    best = qa(question=QUESTION, context=CONTEXT, decoding=decoding)
    twenty, fifty = (qa(question=QUESTION, context=CONTEXT, decoding=decoding, top_k=top_k) for top_k in (20, 50))
    assert len(fifty) == 50 and "probability" in best
    assert [r["answer"] for r in fifty[:20]] == [r["answer"] for r in twenty] and fifty[0]["answer"] == best["answer"]
    assert [r["score"] for r in fifty[:20]] == pytest.approx([r["score"] for r in twenty], rel=1e-12)
    assert (fifty[0]["score"], fifty[0]["probability"]) == pytest.approx((best["score"], best["probability"]), rel=1e-12)


@pytest.mark.parametrize("decoding", ["span", "bio", "joint"])
def test_a_multi_span_answer_of_a_longer_n_best_keeps_its_shares(calibrated, decoding):
    wide = AnswerExtractor(calibrated.trained, decode_config=DecodeConfig(n_best=60))
    default = calibrated(QUESTION, CONTEXT, decoding=decoding, multi_span=True)
    longer = wide(QUESTION, CONTEXT, decoding=decoding, multi_span=True)
    assert [s.text for s in longer.spans] == [s.text for s in default.spans]
    assert (longer.confidence, longer.probability) == pytest.approx((default.confidence, default.probability), rel=1e-12)
    assert [s.probability for s in longer.spans] == pytest.approx([s.probability for s in default.spans], rel=1e-12)


def test_a_bio_multi_span_answer_stays_that_of_the_default_n_best(calibrated):
    # "spirit" of its posterior over its mentions among the best 20 spans (about 0.0093; it was 0.0094 with 60 spans
    # and 0.0047 with one): a longer or shorter n-best gives the default's spans, of the same posteriors
    default = calibrated(QUESTION, CONTEXT, decoding="bio", multi_span=True)
    assert [s.text for s in default.spans] == ["spirit"]
    for n_best in (1, 60):
        other = AnswerExtractor(calibrated.trained, decode_config=DecodeConfig(n_best=n_best))(QUESTION, CONTEXT, decoding="bio", multi_span=True)
        assert [(s.text, s.start, s.probability) for s in other.spans] == [(s.text, s.start, s.probability) for s in default.spans]


def test_tune_fits_a_calibrator_on_the_shares_answers_carry_whatever_its_n_best(calibrated, sample_v1, monkeypatch):  # noqa: F811
    from dataclasses import replace

    from bio_mrc.inference import tuning

    fitted_on = []
    monkeypatch.setattr(tuning, "fit_calibrator", lambda raw, right: fitted_on.append(raw.tolist()) or dict(CALIBRATOR))
    examples = [replace(example, question=QUESTION) for example in sample_v1.examples]  # unsure answers
    outputs = calibrated.trained.windows(examples)
    for n_best in (20, 60):
        tuning.fit_calibrators(outputs, examples, ["span"], DecodeConfig(n_best=n_best))
    answers = calibrated([e.question for e in examples], [e.context for e in examples], decoding="span", top_k=1)
    assert fitted_on[1] == pytest.approx(fitted_on[0], rel=1e-12)
    assert fitted_on[0] == pytest.approx([answer.confidence for answer in answers], rel=1e-12)  # what answers carry
