"""A model continued from another (``init_from``) starts from its decoding settings, marked as tuned for that model,
without its calibrators; a tuning of the continued model replaces what it inherited, a comparison's included."""

import os
import shutil
from dataclasses import replace
from pathlib import Path

from bio_mrc.inference.tuning import save_tuned_settings
from bio_mrc.model import BioMrcConfig
from bio_mrc.model_card import CARD_FILE, public
from bio_mrc.training.train import TrainConfig, train_model

TUNED_ON = {"description": "dev.json (first 50 questions)", "questions": 50, "content_hash": "aaaa"}
CALIBRATOR = {"method": "beta", "a": 1.0, "b": 1.0, "c": 0.0, "questions": 50}


def tuned_copy(trained_dir, folder):
    shutil.copytree(trained_dir, folder)
    config = BioMrcConfig.from_pretrained(folder)
    settings = {"bio_length_prior": 1.25, "min_span_probabilities": {"joint": 0.3}, "calibration": {"joint": CALIBRATOR}}
    assert save_tuned_settings(folder, config, {"joint": 0.5}, settings, TUNED_ON)
    return folder


def test_a_continued_model_keeps_the_settings_as_tuned_for_the_other_and_drops_its_calibrators(trained_dir, tmp_path, sample_v1):
    first = tuned_copy(trained_dir, tmp_path / "first")
    config = TrainConfig(init_from=str(first), max_seq_length=48, doc_stride=16, max_query_length=12, epochs=1, batch_size=8,
                         precision="fp32")
    continued = train_model(sample_v1.examples[:8], config, tmp_path / "continued").model_dir
    saved = BioMrcConfig.from_pretrained(continued)
    assert saved.calibration is None  # the earlier weights' confidence -> P(right): not this model's
    assert (saved.bio_length_prior, saved.no_answer_thresholds, saved.min_span_probabilities) == (1.25, {"joint": 0.5}, {"joint": 0.3})
    assert saved.tuned_on == {**TUNED_ON, "for_model": str(first)}
    card = (continued / CARD_FILE).read_text(encoding="utf-8")
    assert f"for the model this one continues, `{public(str(first))}`, not for this one" in card
    assert f"`.../{tmp_path.name}/first`" in card and str(tmp_path) not in card  # no temporary folder on a card

    again = train_model(sample_v1.examples[:8], replace(config, init_from=str(continued)), tmp_path / "third")
    assert BioMrcConfig.from_pretrained(again.model_dir).tuned_on["for_model"] == str(first)  # the model they were tuned for

    # a comparison reusing a model keeps its own tuning (overwrite off), yet replaces what it inherited, even on the same questions
    fresh = {"description": "tune split", "questions": 40, "content_hash": "bbbb"}
    assert save_tuned_settings(continued, saved, {"span": 0.1}, {"bio_length_prior": 0.5}, fresh, overwrite=False)
    retuned = BioMrcConfig.from_pretrained(continued)
    assert retuned.tuned_on == fresh and retuned.no_answer_thresholds == {"span": 0.1} and retuned.bio_length_prior == 0.5
    assert not save_tuned_settings(continued, retuned, {"span": 0.2}, {}, TUNED_ON, overwrite=False)  # now its own: kept
    assert "not for this one" not in (continued / CARD_FILE).read_text(encoding="utf-8")



def test_a_tuning_of_some_decodings_on_the_same_questions_keeps_the_others_span_count_rules(tiny_encoder_dir, tmp_path):
    """``bio-mrc tune --decoding bio`` on the questions the model was tuned on once replaced every decoding's
    span-count rule with BIO's alone: joint and span fell back to the registry's defaults."""
    from bio_mrc.model import BioMrcForQuestionAnswering

    folder = tmp_path / "model"
    BioMrcForQuestionAnswering.from_encoder(str(tiny_encoder_dir), heads="span+bio").save_pretrained(str(folder))
    config = BioMrcConfig.from_pretrained(folder)
    assert save_tuned_settings(folder, config, {}, {"min_span_probabilities": {"joint": 0.3, "span": 0.0}}, TUNED_ON)
    assert save_tuned_settings(folder, config, {}, {"min_span_probabilities": {"bio": 0.15}}, TUNED_ON)
    assert BioMrcConfig.from_pretrained(folder).min_span_probabilities == {"joint": 0.3, "span": 0.0, "bio": 0.15}
    other = {**TUNED_ON, "content_hash": "cccc"}  # other questions: what was tuned on the earlier ones is replaced
    assert save_tuned_settings(folder, config, {}, {"min_span_probabilities": {"span": 0.05}}, other)
    assert BioMrcConfig.from_pretrained(folder).min_span_probabilities == {"span": 0.05}


def test_a_stop_while_tuned_settings_are_saved_waits_for_the_card(tiny_encoder_dir, tmp_path, monkeypatch):
    """A Ctrl-C between config.json and the card left a card of the settings before: it now lands once both are renamed."""
    import signal

    import pytest

    from bio_mrc import model_card
    from bio_mrc.io import atomic
    from bio_mrc.model import BioMrcForQuestionAnswering

    folder = tmp_path / "model"
    BioMrcForQuestionAnswering.from_encoder(str(tiny_encoder_dir), heads="span+bio").save_pretrained(str(folder))
    config = BioMrcConfig.from_pretrained(folder)
    model_card.write_model_card(folder)  # the card of the settings before
    renamed, real_replace = [], os.replace

    def replace_after_a_stop(source, target):
        if not renamed:
            signal.raise_signal(signal.SIGINT)  # Ctrl-C just before config.json replaces the old one
        renamed.append(Path(target).name)
        real_replace(source, target)

    monkeypatch.setattr(atomic.os, "replace", replace_after_a_stop)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            save_tuned_settings(folder, config, {"joint": 0.25}, {"bio_length_prior": 1.5}, TUNED_ON)
    finally:
        signal.signal(signal.SIGINT, previous)
    monkeypatch.undo()
    assert renamed == ["config.json", CARD_FILE]
    assert BioMrcConfig.from_pretrained(folder).bio_length_prior == 1.5
    assert "1.5" in (folder / CARD_FILE).read_text(encoding="utf-8")  # the card of the settings saved


def test_an_init_from_model_whose_encoder_config_transformers_rejects_is_one_line_before_any_work(trained_dir, tmp_path,
                                                                                                   capsys):
    """Its encoder's ``use_cache`` a string: refused in the line ``predict`` gives for the folder, before ``precision:
    auto`` reads the encoder's config (which raised transformers' own error) and before the output folder is made."""
    import json

    from bio_mrc.cli import main

    from .conftest import SAMPLE_V1

    broken = tmp_path / "broken"
    shutil.copytree(trained_dir, broken)
    config = json.loads((broken / "config.json").read_text(encoding="utf-8"))
    config["encoder"]["use_cache"] = "x"
    (broken / "config.json").write_text(json.dumps(config), encoding="utf-8")
    code = main(["train", "--train", str(SAMPLE_V1), "--output-dir", str(tmp_path / "out"), "--init-from", str(broken),
                 "--precision", "auto"])
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert code == 2
    assert error.startswith("error: config.json: describes no model this version can build: ")
    assert error.endswith(f"(in {broken})")
    assert not (tmp_path / "out").exists()


def test_an_onnx_export_to_continue_is_named_so_before_any_work(trained_dir, tmp_path, capsys):
    """``--init-from`` an ONNX export (``model.onnx``, no PyTorch weights) was called an unfinished or partial copy."""
    from bio_mrc.cli import main

    from .conftest import SAMPLE_V1

    exported = tmp_path / "exported"
    shutil.copytree(trained_dir, exported)
    (exported / "model.safetensors").unlink()
    (exported / "model.onnx").write_bytes(b"a graph")
    code = main(["train", "--train", str(SAMPLE_V1), "--output-dir", str(tmp_path / "out"), "--init-from", str(exported)])
    assert code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"error: an ONNX export (model.onnx), which holds no PyTorch weights: give the PyTorch model it was made from "
        f"(in {exported})")
    assert not (tmp_path / "out").exists()
