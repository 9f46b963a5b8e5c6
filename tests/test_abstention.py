"""A model trained on no question without an answer (SQuAD v1.1) has an untrained no-answer score: it abstains only by
a threshold ``bio-mrc tune`` fitted for it on held-out questions. One it holds otherwise (written in by hand, inherited
from the model it continues) is refused, in one line naming the model, by every door before any work; a model
trained with unanswerable questions abstains by the same threshold as before."""

import json
import math
import shutil

import pytest

from bio_mrc.cli import main
from bio_mrc.data.squad import examples_to_squad_json
from bio_mrc.data.unanswerable import add_unanswerable
from bio_mrc.errors import ModelFormatError
from bio_mrc.inference import AnswerExtractor
from bio_mrc.model import BioMrcConfig
from bio_mrc.model_records import RUN_FILE
from bio_mrc.training.train import TrainConfig, train_model

from .conftest import forget_training_questions, untrained_model_folder

QUESTION, CONTEXT = "Who wrote it?", "It was written by Ada Lovelace in 1843."


@pytest.fixture(scope="module")
def models(tiny_encoder_dir, sample_v1, tmp_path_factory):
    """Two tiny models of one epoch: one trained on the sample's questions, all answerable, one on them and as many
    unanswerable ones; and the SQuAD 2.0 questions the second was trained on, as a file."""
    root = tmp_path_factory.mktemp("abstention")
    config = TrainConfig(encoder=str(tiny_encoder_dir), heads="span+bio", max_seq_length=48, doc_stride=16,
                         max_query_length=12, epochs=1, batch_size=8, precision="fp32")
    with_none = add_unanswerable(sample_v1.examples, 1.0, seed=0)
    v2 = root / "v2.json"
    v2.write_text(json.dumps(examples_to_squad_json(with_none, "2.0")), encoding="utf-8")
    return (train_model(sample_v1.examples, config, root / "v1").model_dir,
            train_model(with_none, config, root / "v2").model_dir, v2, sum(not example.answers for example in with_none))


def with_thresholds(model, folder, thresholds, tuned_on=None):
    """A copy of ``model`` holding ``thresholds`` in its config.json as a hand would write them (no tuning)."""
    shutil.copytree(model, folder)
    config = BioMrcConfig.from_pretrained(folder)
    config.no_answer_thresholds, config.tuned_on = thresholds, tuned_on
    config.save_pretrained(folder)
    return folder


def test_the_run_record_counts_the_training_questions_without_an_answer(models):
    v1, v2, _, unanswerable = models
    assert json.loads((v1 / RUN_FILE).read_text(encoding="utf-8"))["unanswerable_questions"] == 0
    assert json.loads((v2 / RUN_FILE).read_text(encoding="utf-8"))["unanswerable_questions"] == unanswerable > 0


def test_a_threshold_not_tuned_for_a_model_trained_without_unanswerable_questions_is_refused(models, tmp_path):
    v1, v2, _, _ = models
    hand = with_thresholds(v1, tmp_path / "v1-hand", {"span": 0.0, "joint": 0.0})
    with pytest.raises(ModelFormatError) as info:
        AnswerExtractor.from_pretrained(hand, device="cpu")
    assert str(info.value) == (
        f"{hand} was trained on no question without an answer ({RUN_FILE}: unanswerable_questions 0), so its no-answer "
        "score is untrained, and the no-answer threshold it holds without a tuning by bio-mrc tune (joint, span) would "
        f"abstain by that score; fit one for it on held-out SQuAD 2.0 questions (bio-mrc tune --model {hand} --data "
        "HELD_OUT), or remove no_answer_thresholds from its config.json to answer every question")
    inherited = with_thresholds(v1, tmp_path / "v1-inherited", {"span": 0.0},
                                {"description": "dev", "questions": 9, "content_hash": "aa", "for_model": "first"})
    with pytest.raises(ModelFormatError, match=r"the no-answer threshold it holds from the model it continues \(first\) \(span\)"):
        AnswerExtractor.from_pretrained(inherited, device="cpu")
    # never abstaining (+inf) asks nothing of the score; the model trained with unanswerable questions abstains by it
    assert AnswerExtractor.from_pretrained(with_thresholds(v1, tmp_path / "never", {"span": math.inf}), device="cpu")
    extractor = AnswerExtractor.from_pretrained(with_thresholds(v2, tmp_path / "v2-hand", {"span": 0.0}), decoding="span",
                                                device="cpu")
    answer = extractor(QUESTION, CONTEXT)
    assert answer.abstain == (answer.no_answer_score > 0.0)


def test_every_door_refuses_it_before_any_work(models, tmp_path, capsys):
    from transformers import pipeline

    v1, _, v2_data, _ = models
    hand = with_thresholds(v1, tmp_path / "hand", {"span": 0.0})
    expected = f"{hand} was trained on no question without an answer"
    with pytest.raises(ModelFormatError, match=expected):
        pipeline("bio-mrc-qa", model=str(hand), device="cpu")
    preds = tmp_path / "out" / "preds.json"
    assert main(["predict", "--model", str(hand), "--data", str(v2_data), "--output", str(preds), "--device", "cpu"]) == 2
    assert main(["extract", "--model", str(hand), "--question", QUESTION, "--context", CONTEXT, "--device", "cpu"]) == 2
    err = capsys.readouterr().err
    assert err.count(expected) == 2 and "Traceback" not in err and not (tmp_path / "out").exists()


def test_handle_impossible_answer_without_a_threshold_warns_that_the_model_answers_every_question(models, tmp_path):
    """The pipeline's handle_impossible_answer=True returned a span without a word where no threshold was saved."""
    import warnings

    from transformers import pipeline

    from bio_mrc.inference.abstention import NeverAbstainsWarning

    v1, v2, _, _ = models
    asked = dict(question=QUESTION, context=CONTEXT, decoding="span", handle_impossible_answer=True)
    with pytest.warns(NeverAbstainsWarning) as caught:
        assert pipeline("bio-mrc-qa", model=str(v1), device="cpu")(**asked)["answer"]
    assert str(caught[0].message) == (
        "handle_impossible_answer=True asks for no answer where there is none, and the model has no tuned no-answer "
        "threshold for span, so it answers every question (its no-answer score is untrained: it was trained on no "
        "question without an answer) (bio-mrc tune fits one on held-out SQuAD 2.0 questions)")
    with pytest.warns(NeverAbstainsWarning, match=r"threshold for span, so it answers every question \(bio-mrc tune"):
        pipeline("bio-mrc-qa", model=str(v2), device="cpu")(**asked)
    tuned = with_thresholds(v1, tmp_path / "tuned", {"span": 0.0}, {"description": "dev", "questions": 9, "content_hash": "a"})
    with warnings.catch_warnings():
        warnings.simplefilter("error", NeverAbstainsWarning)
        pipeline("bio-mrc-qa", model=str(tuned), device="cpu")(**asked)


def test_handle_impossible_answer_warns_once_a_call(models):
    """One call warned twice, from two lines of the pipeline (its own check of the options and Pipeline.__call__'s),
    so Python's default filter showed both."""
    import warnings

    from transformers import pipeline

    from bio_mrc.inference.abstention import NeverAbstainsWarning

    qa = pipeline("bio-mrc-qa", model=str(models[0]), device="cpu")
    for asked in (dict(question=QUESTION, context=CONTEXT), dict(question=[QUESTION, QUESTION], context=[CONTEXT, CONTEXT])):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            qa(**asked, decoding="span", handle_impossible_answer=True)
        warned = [w for w in caught if issubclass(w.category, NeverAbstainsWarning)]
        assert len(warned) == 1 and warned[0].filename == __file__  # at the caller's line


def test_a_threshold_tune_fits_on_held_out_questions_is_the_models_own(models, tmp_path, capsys):
    """tune reads the refused model, and the threshold it fits is one the model abstains by."""
    v1, _, v2_data, _ = models
    hand = forget_training_questions(with_thresholds(v1, tmp_path / "hand", {"span": 0.0}))  # v2_data holds its questions
    assert main(["tune", "--model", str(hand), "--data", str(v2_data), "--decoding", "span", "--no-calibration",
                 "--device", "cpu"]) == 0
    tuned = BioMrcConfig.from_pretrained(hand)
    assert "span" in tuned.no_answer_thresholds and "for_model" not in tuned.tuned_on
    extractor = AnswerExtractor.from_pretrained(hand, decoding="span", device="cpu")
    answer = extractor(QUESTION, CONTEXT)
    assert answer.abstain == (answer.no_answer_score > tuned.no_answer_thresholds["span"])
    capsys.readouterr()


def test_a_model_whose_training_is_unknown_keeps_its_thresholds(tiny_encoder_dir, tmp_path):
    """No run record (a model from elsewhere, one saved before the count): nothing says its score is untrained."""
    folder = untrained_model_folder(tiny_encoder_dir, tmp_path / "model", heads="span", max_seq_length=48, doc_stride=16,
                                    max_query_length=12)
    config = BioMrcConfig.from_pretrained(folder)
    config.no_answer_thresholds = {"span": 0.0}
    config.save_pretrained(folder)
    assert AnswerExtractor.from_pretrained(folder, device="cpu").trained.thresholds == {"span": 0.0}

