"""transformers' multi-line load report ("LOAD REPORT ... MISSING ...") never reaches the user: a model continued
with a head it has none of says so in one note of the package's words, an encoder saved with a pretraining head loads
quietly, and the caller's transformers verbosity is left as it was."""

import logging
import sys

import pytest
import transformers.utils.logging as transformers_logging

from bio_mrc.cli import main
from bio_mrc.model import BioMrcForQuestionAnswering

from .conftest import SAMPLE_V1, WINDOW_ARGS

REPORT_WORDS = ("LOAD REPORT", "MISSING", "UNEXPECTED", "newly initialized", "were not initialized")


@pytest.fixture(autouse=True)
def transformers_log_on_stderr(capfd):
    """transformers' log on the standard error the test reads, as on a terminal: its own handler holds the stream that
    was standard error when transformers was first imported."""
    handler = logging.StreamHandler(sys.stderr)
    transformers_logging.add_handler(handler)
    yield
    transformers_logging.remove_handler(handler)


@pytest.fixture
def info_verbosity():
    """transformers at INFO, as a caller may set it: each load leaves it there."""
    before = transformers_logging.get_verbosity()
    transformers_logging.set_verbosity(logging.INFO)
    yield logging.INFO
    transformers_logging.set_verbosity(before)


def no_report(text: str) -> None:
    assert not [word for word in REPORT_WORDS if word in text], text


def test_training_on_from_a_span_model_with_both_heads_says_the_fresh_head_in_one_note(span_model, tmp_path, capfd):
    code = main(["train", "--train", str(SAMPLE_V1), "--output-dir", str(tmp_path / "joint"), "--init-from", str(span_model),
                 "--epochs", "1", *WINDOW_ARGS])
    out, err = capfd.readouterr()
    assert code == 0
    no_report(out + err)
    notes = [line for line in err.splitlines() if "fresh weights" in line]
    assert notes == [f"note: {span_model} has no bio head: it starts from fresh weights"]


def test_a_library_load_with_a_head_the_model_lacks_is_one_note_and_leaves_the_verbosity(span_model, capfd, info_verbosity):
    from bio_mrc.model import FreshHeadsNote

    with pytest.warns(FreshHeadsNote, match=r"has no bio head: it starts from fresh weights$") as caught:
        model = BioMrcForQuestionAnswering.from_pretrained(str(span_model), heads="span+bio")
    assert len([w for w in caught if issubclass(w.category, FreshHeadsNote)]) == 1
    assert set(model.heads) == {"span", "bio"}
    no_report("".join(capfd.readouterr()))
    assert transformers_logging.get_verbosity() == info_verbosity


def test_a_model_loaded_with_its_own_or_fewer_heads_is_silent(span_model, trained_dir, capfd, recwarn):
    from bio_mrc.model import FreshHeadsNote

    BioMrcForQuestionAnswering.from_pretrained(str(span_model))
    assert set(BioMrcForQuestionAnswering.from_pretrained(str(trained_dir), heads="span").heads) == {"span"}
    assert not [w for w in recwarn if issubclass(w.category, FreshHeadsNote)]
    no_report("".join(capfd.readouterr()))


def test_an_encoder_saved_with_its_pretraining_head_loads_quietly(tiny_encoder_dir, tmp_path, capfd, info_verbosity):
    """bert-base-uncased and its kin are saved as masked-LM models: their ``cls.*`` weights are not the encoder's."""
    from transformers import BertConfig, BertForMaskedLM

    BertForMaskedLM(BertConfig.from_pretrained(str(tiny_encoder_dir))).save_pretrained(str(tmp_path / "mlm"))
    capfd.readouterr()
    model = BioMrcForQuestionAnswering.from_encoder(str(tmp_path / "mlm"), heads="span")
    assert set(model.heads) == {"span"}
    no_report("".join(capfd.readouterr()))
    assert transformers_logging.get_verbosity() == info_verbosity


def test_an_encoder_checkpoint_without_some_weights_is_one_warning_naming_them(tiny_encoder_dir, tmp_path, capfd):
    """transformers' report was the only word of encoder weights a checkpoint lacks, which start from random values."""
    import shutil

    from safetensors.torch import load_file, save_file

    from bio_mrc.model import UnsavedEncoderWeightsWarning

    folder = tmp_path / "partial"
    shutil.copytree(tiny_encoder_dir, folder)
    weights = load_file(folder / "model.safetensors")
    dropped = sorted(name for name in weights if name.startswith("encoder.layer.1.attention.self."))
    save_file({name: value for name, value in weights.items() if name not in dropped}, folder / "model.safetensors",
              metadata={"format": "pt"})
    with pytest.warns(UnsavedEncoderWeightsWarning) as caught:
        BioMrcForQuestionAnswering.from_encoder(str(folder), heads="span")
    assert [str(w.message) for w in caught] == [
        f"encoder {folder} holds no saved values for 6 weights ({', '.join(dropped[:3])} and 3 more): they start from "
        "random values"]
    no_report("".join(capfd.readouterr()))


def test_weights_that_no_longer_hold_what_the_checked_config_names_are_refused(span_model, trained_dir):
    """A caller's checked ``config.json`` (``checked=``) and weights read after another process wrote the folder: a
    head the weights lack is a folder changed mid-read, refused (a model loader reads it again), not a fresh head."""
    import json

    from bio_mrc.errors import ModelFormatError

    checked = json.loads((trained_dir / "config.json").read_text(encoding="utf-8"))  # span+bio; the weights are span's
    with pytest.raises(ModelFormatError, match=r"^its saved weights lack bio_head\.classifier\.bias, "
                                               r"bio_head\.classifier\.weight, which they held when checked: its files "
                                               r"changed while they were read \(in .*span-model\)$"):
        BioMrcForQuestionAnswering.from_pretrained(str(span_model), checked=checked)
