"""``bio-mrc tune`` and ``bio-mrc compare`` tune a model by one policy (``tune_for_model``)."""

import math
from types import SimpleNamespace

import pytest

from bio_mrc import registry
from bio_mrc.errors import AlwaysAbstainWarning, ConfigError
from bio_mrc.decoding.postprocess import DecodeConfig
from bio_mrc.inference import TrainedModel, threshold_key
from bio_mrc.inference.tuning import tune_for_model
from bio_mrc.types import Example


SQUAD_V1, SQUAD_V2 = registry.squad_task("1.1"), registry.squad_task("2.0")
MULTISPAN = registry.task_for("multispanqa", False)


def test_the_prior_is_tuned_only_when_left_open_and_calibrators_only_for_single_span_gold(trained_dir, sample_v1):  # noqa: F811
    trained = TrainedModel.load(trained_dir)
    examples = sample_v1.examples[:8]
    outputs = trained.windows(examples)
    tuned = tune_for_model(trained, outputs, examples, DecodeConfig(), SQUAD_V1)
    assert tuned.bio_length_prior is not None and tuned.decode_config.bio_length_prior == tuned.bio_length_prior
    # calibrated for every decoding; on these questions, which the tiny model answers all right, each is constant: left out
    assert set(tuned.calibration) | set(tuned.skipped_calibrators) == set(trained.decodings) and not tuned.thresholds
    # each decoding's saved calibrator is replaced by none (None: left out), not kept from an older tuning
    assert not tuned.calibration and tuned.settings["calibration"] == dict.fromkeys(trained.decodings)

    given = tune_for_model(trained, outputs, examples, DecodeConfig(bio_length_prior=0.5, min_span_probability=0.5), MULTISPAN)
    assert given.bio_length_prior is None and given.decode_config.bio_length_prior == 0.5 and not given.calibration
    # given, so not tuned: saved as given for every decoding, as the given prior is
    assert given.min_span_probabilities == {decoding: 0.5 for decoding in trained.decodings}
    assert given.report["min_span_probability/joint"] == {"value": 0.5, "given": True}


def test_a_decoding_the_model_cannot_do_is_refused_before_any_tuning():
    """Tuning the BIO prior of a span-only model ended in a ValueError traceback ("BIO decoding needs a model with a BIO
    head") once the tags were merged; the model is asked for nothing but its decodings and heads (no outputs are read)."""
    span_only = SimpleNamespace(decodings=["span"], heads="span")
    with pytest.raises(ConfigError, match="^decoding \"bio\" needs the bio head, which this model lacks; it offers \\['span'\\]$"):
        tune_for_model(span_only, None, [], DecodeConfig(), SQUAD_V1, decodings=["bio"])


def test_tuning_the_span_decoding_alone_leaves_the_saved_prior(trained_dir, sample_v1):  # noqa: F811
    # The prior is the BIO and joint decodings': tuning the span decoding refitted it, and they decoded with it untuned.
    trained = TrainedModel.load(trained_dir)
    examples = sample_v1.examples[:8]
    outputs = trained.windows(examples)
    span_only = tune_for_model(trained, outputs, examples, DecodeConfig(), SQUAD_V1, decodings=["span"])
    assert span_only.bio_length_prior is None and "bio_length_prior" not in span_only.settings
    assert span_only.decode_config.bio_length_prior == (trained.model.config.bio_length_prior or 0.0)
    assert tune_for_model(trained, outputs, examples, DecodeConfig(), SQUAD_V1, decodings=["bio"]).bio_length_prior is not None


def test_questions_without_answers_leave_the_saved_prior_and_tune_no_threshold(trained_dir, sample_v1):  # noqa: F811
    trained = TrainedModel.load(trained_dir)
    unanswerable = [Example(f"u{i}", ex.question, ex.context) for i, ex in enumerate(sample_v1.examples[:4])]
    tuned = tune_for_model(trained, trained.windows(unanswerable), unanswerable, DecodeConfig(), SQUAD_V2, decodings=["span"])
    assert tuned.bio_length_prior is None and tuned.decode_config.bio_length_prior == (trained.model.config.bio_length_prior or 0.0)
    assert tuned.thresholds == {}  # on them "always abstain" wins: a model answering nothing
    assert tuned.report["no_answer_thresholds"].startswith("none tuned: no tuning question has an answer")


def test_bio_mrc_tune_on_multispanqa_questions_tunes_the_prior_by_their_exact_match_f1(trained_dir, tmp_path, capsys):  # noqa: F811
    import json
    import shutil

    from bio_mrc.cli import main
    from bio_mrc.data.multispanqa import load_multispanqa
    from bio_mrc.inference.tuning import LENGTH_PRIOR_GRID, tune_bio_length_prior

    from .test_harness_compare import multispan_file

    model, data = tmp_path / "model", multispan_file(tmp_path)
    shutil.copytree(trained_dir, model)
    capsys.readouterr()
    assert main(["tune", "--model", str(model), "--data", str(data)]) == 0
    report = json.loads(capsys.readouterr().out)
    examples = load_multispanqa(data)
    trained = TrainedModel.load(trained_dir)
    prior, em_f1 = tune_bio_length_prior(trained.windows(examples), examples, DecodeConfig(), task=MULTISPAN)
    at_prior = float(em_f1[LENGTH_PRIOR_GRID.index(prior)])
    best = int(em_f1.argmax())
    assert report["bio_length_prior"] == {"value": prior, "f1": at_prior, "best_grid_value": LENGTH_PRIOR_GRID[best],
                                          "best_grid_f1": float(em_f1[best]), "f1_without": float(em_f1[0]),
                                          "questions": len(examples)}
    saved = json.loads((model / "config.json").read_text())
    # no threshold (every question has an answer), no calibrator (multi-span gold); each decoding's span-count rule
    assert set(report) == {"bio_length_prior", *(f"min_span_probability/{d}" for d in trained.decodings)}
    assert saved["bio_length_prior"] == prior and saved["tuned_on"]["questions"] == len(examples) and not saved.get("calibration")
    assert saved["min_span_probabilities"] == {d: report[f"min_span_probability/{d}"]["value"] for d in trained.decodings}
    assert TrainedModel.load(model).span_count_rules == saved["min_span_probabilities"]  # what AnswerExtractor decodes with


def test_questions_that_all_have_an_answer_tune_no_threshold_and_the_model_answers_every_one(trained_dir, sample_v1):  # noqa: F811
    from dataclasses import replace

    from bio_mrc.inference.tuning import tuning_summary

    trained = TrainedModel.load(trained_dir)
    examples = sample_v1.examples[:6]
    # Gold a span the model does not answer (the context's first character): every answer scores F1 0, as abstaining
    # would, so the official search's tie rule chose "abstain on all" for SQuAD 2.0 questions with no unanswerable one.
    wrong = [replace(ex, answers=(((0, 1),),)) for ex in examples]
    tuned = tune_for_model(trained, trained.windows(wrong), wrong, DecodeConfig(), SQUAD_V2, decodings=["span"], calibrate=False)
    assert tuned.thresholds == {}  # was {"span": -inf}: every later question abstained
    assert any(line.startswith("no-answer thresholds: none tuned: every tuning question has an answer")
               for line in tuning_summary(tuned, trained.model.config, SQUAD_V2))
    # one unanswerable question among them: thresholds are tuned as before; every answer wrong, "always abstain" wins, said
    mixed = [*wrong, Example("u0", examples[0].question, examples[0].context, ())]
    with pytest.warns(AlwaysAbstainWarning, match="span will answer no question"):
        tuned = tune_for_model(trained, trained.windows(mixed), mixed, DecodeConfig(), SQUAD_V2, decodings=["span"], calibrate=False)
    assert tuned.thresholds == {threshold_key("span"): -math.inf}
