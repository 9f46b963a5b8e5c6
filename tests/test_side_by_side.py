"""Commands side by side on one model folder: a reader never takes half of one model and half of another.

Another process's write is made at a fixed point of the reader's work (a real process, run to its end there), so each
test is deterministic: no sleeps, no timing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bio_mrc.cli import main
from bio_mrc.errors import ModelFormatError

from .conftest import SAMPLE_V1, untrained_model_folder

MODEL_FILES = ("config.json", "model.safetensors")


def replaced_by_another_process(source: Path, target: Path) -> None:
    """``target``'s model files replaced by ``source``'s, file by file, as ``train`` moves a new model in, by another
    process that ends before this returns."""
    moves = "; ".join(f"shutil.copy2({str(source / name)!r}, {str(target / f'.{name}.new')!r}); "
                      f"os.replace({str(target / f'.{name}.new')!r}, {str(target / name)!r})" for name in MODEL_FILES)
    subprocess.run([sys.executable, "-c", f"import os, shutil; {moves}"], check=True)


@pytest.fixture(scope="module")
def two_models(tiny_encoder_dir, tmp_path_factory):
    """A joint model and a span-only one of the tiny encoder: the first is the one read, the second the one written over it."""
    root = tmp_path_factory.mktemp("two-models")
    windows = {"max_seq_length": 48, "doc_stride": 16, "max_query_length": 12}
    joint = untrained_model_folder(tiny_encoder_dir, root / "joint", heads="span+bio", **windows)
    span = untrained_model_folder(tiny_encoder_dir, root / "span", heads="span", **windows)
    return joint, span


def test_a_model_replaced_while_it_loads_is_read_again_whole(two_models, tmp_path, monkeypatch):
    """The config read before the new model moved in and the weights read after it: a model of neither (here refused
    as a config and weights that disagree; where they fit, one that answers silently with the old windows)."""
    import shutil

    import bio_mrc.inference.loading as loading

    joint, span = two_models
    folder = shutil.copytree(joint, tmp_path / "model")
    read_tokenizer, writes = loading.load_tokenizer, []

    def tokenizer_then_a_new_model(*args, **kwargs):  # between the config's reading and the weights'
        if not writes:
            writes.append("new model")
            replaced_by_another_process(span, folder)
        return read_tokenizer(*args, **kwargs)

    monkeypatch.setattr(loading, "load_tokenizer", tokenizer_then_a_new_model)
    trained = loading.TrainedModel.load(folder)
    assert writes == ["new model"]
    assert trained.model.config.heads == "span" and trained.model.bio_head is None


def test_a_model_that_keeps_changing_while_it_loads_is_refused_in_one_line(two_models, tmp_path, monkeypatch):
    import shutil

    import bio_mrc.inference.loading as loading

    joint, span = two_models
    folder = shutil.copytree(joint, tmp_path / "model")
    read_tokenizer, turns = loading.load_tokenizer, []

    def another_model_each_time(*args, **kwargs):
        turns.append(len(turns))
        replaced_by_another_process(span if len(turns) % 2 else joint, folder)
        return read_tokenizer(*args, **kwargs)

    monkeypatch.setattr(loading, "load_tokenizer", another_model_each_time)
    with pytest.raises(ModelFormatError, match="its files changed while they were read, each of 3 times: another process "
                                               "is writing a model there") as refused:
        loading.TrainedModel.load(folder)
    assert str(folder) in str(refused.value) and len(turns) == 3


def test_a_tuned_copy_of_a_model_replaced_meanwhile_is_refused_not_saved_mixed(trained_dir, two_models, tmp_path,
                                                                                monkeypatch, capsys):
    """``tune --output-dir`` copied the source's files once the tuning was done: a model trained into the source
    meanwhile gave the copy its weights beside the config the tuning read (a folder that no longer loads)."""
    import shutil

    import bio_mrc.inference.tuning as tuning

    source = shutil.copytree(trained_dir, tmp_path / "model")
    fit = tuning.tune_for_model

    def tuned_while_a_train_writes(*args, **kwargs):
        replaced_by_another_process(two_models[1], source)
        return fit(*args, **kwargs)

    monkeypatch.setattr(tuning, "tune_for_model", tuned_while_a_train_writes)
    copy = tmp_path / "tuned"
    assert main(["tune", "--model", str(source), "--data", str(SAMPLE_V1), "--no-calibration", "--output-dir", str(copy)]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err == (f"error: {source} changed while it was tuned (another process wrote a model there): no copy is saved; "
                   f"tune again once that process is done (in {copy})"), err
    assert not copy.exists()
