"""compare needs the data folder only where a config path is relative to it."""

import json
import warnings

import pytest

from bio_mrc.cli import main
from bio_mrc.harness import compare as compare_module

from .conftest import SAMPLE_V1


class Trained(Exception):
    """Raised where the first model would train: everything before it passed."""


def _config(tmp_path, encoder, **overrides):
    raw = {"name": "c", "train": {"path": str(SAMPLE_V1), "split": {"fractions": [0.5, 0.5], "part": 0}},
           "eval": {"path": str(SAMPLE_V1), "split": {"fractions": [0.5, 0.5], "part": 1}},
           "defaults": {"encoder": str(encoder), "max_seq_length": 48, "doc_stride": 16, "max_query_length": 12},
           "runs": [{"name": "a"}], **overrides}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(raw))
    return path


def _fail_at_training(monkeypatch):
    def obtain_model(*args, **kwargs):
        raise Trained

    monkeypatch.setattr(compare_module, "obtain_model", obtain_model)


def test_compare_with_absolute_paths_needs_no_data_folder(tmp_path, tiny_encoder_dir, monkeypatch):
    _fail_at_training(monkeypatch)
    config = _config(tmp_path, tiny_encoder_dir)
    with pytest.raises(Trained):  # not refused: the splits are read from their absolute paths
        main(["compare", "--config", str(config), "--data-dir", str(tmp_path / "missing"), "--output-dir", str(tmp_path / "out")])
    monkeypatch.setenv("BIO_MRC_DATA", str(tmp_path / "missing-too"))  # the default folder, missing, alike
    with pytest.raises(Trained):
        main(["compare", "--config", str(config), "--output-dir", str(tmp_path / "out"), "--train-only"])


def test_a_relative_path_without_its_data_folder_is_refused_naming_the_entry(tmp_path, tiny_encoder_dir, monkeypatch, capsys):
    _fail_at_training(monkeypatch)
    config = _config(tmp_path, tiny_encoder_dir,
                     runs=[{"name": "a"}, {"name": "b", "train_data": {"path": "squad-v1.1/train.json", "limit": 5}}])
    missing = tmp_path / "missing"
    assert main(["compare", "--config", str(config), "--data-dir", str(missing), "--output-dir", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err == (
        f'error: runs[1].train_data (run "b"): the path "squad-v1.1/train.json" is relative to the data directory {missing}, '
        f"which is not found; pass --data-dir or set BIO_MRC_DATA, or give the path in full (in {config})\n")
    assert not (tmp_path / "out").exists()


def test_a_path_beginning_with_a_tilde_is_the_home_folders_as_a_runs_encoder_is(tmp_path, tiny_encoder_dir, monkeypatch):
    """It was joined under the data folder (DATA/~/sample.json), while a run's "~/encoder" was read from the home folder."""
    from bio_mrc.harness.comparison_splits import resolve_split
    from bio_mrc.harness.config import DataSpec

    home = tmp_path / "home"
    home.mkdir()
    (home / "sample.json").write_text(SAMPLE_V1.read_text(encoding="utf-8"), encoding="utf-8")
    monkeypatch.setenv("HOME", str(home))
    spec = DataSpec(path="~/sample.json", limit=3)
    assert [e.id for e in resolve_split(spec, tmp_path / "missing").examples] == [e.id for e in resolve_split(
        DataSpec(path=str(SAMPLE_V1), limit=3), tmp_path).examples]
    _fail_at_training(monkeypatch)
    config = _config(tmp_path, tiny_encoder_dir, eval={"path": "~/sample.json", "split": {"fractions": [0.5, 0.5], "part": 1}})
    with pytest.raises(Trained):  # not refused: the home folder's file needs no data folder
        main(["compare", "--config", str(config), "--data-dir", str(tmp_path / "missing"), "--output-dir", str(tmp_path / "out")])


def test_a_preset_named_like_a_file_here_is_the_preset_with_a_note(tmp_path, monkeypatch, capsys):
    """``compare --config quick`` beside a file ``quick`` took the preset without a word; it still does (a preset's name
    means the same run wherever it is typed), and one note line says the file is not read and how to name it."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "quick").write_text("{}")
    assert main(["compare", "--config", "quick", "--data-dir", "no-data"]) == 2
    assert capsys.readouterr().err == (
        "note: --config quick is the preset quick; the file quick here is not read (give --config ./quick for it)\n"
        'error: eval: the path "squad-v1.1/dev.json" is relative to the data directory no-data, which is not found; '
        "pass --data-dir or set BIO_MRC_DATA, or give the path in full (in quick)\n")
    assert main(["compare", "--config", "./quick", "--data-dir", "no-data"]) == 2
    assert capsys.readouterr().err == 'error: top level: "eval" is a required property (and 1 more) (in quick)\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["quick"]


def test_a_preset_named_like_a_file_here_is_noted_to_python_callers_too(tmp_path, monkeypatch):
    """The note was the command's own line, so ``load_config("quick")`` took the preset over the file ``quick`` without
    a word; it is a ``PresetOverFileWarning`` (an ``InputNote``), naming the keyword."""
    from bio_mrc.errors import InputNote
    from bio_mrc.harness.config import PresetOverFileWarning, load_config

    monkeypatch.chdir(tmp_path)
    (tmp_path / "quick").write_text("{}")
    with pytest.warns(PresetOverFileWarning) as caught:
        assert load_config("quick").name == "quick"
    assert issubclass(PresetOverFileWarning, InputNote) and [str(w.message) for w in caught] == [
        "path_or_preset='quick' is the preset quick; the file quick here is not read (give path_or_preset='./quick' for it)"]
    (tmp_path / "quick").unlink()
    (tmp_path / "quick").mkdir()  # a folder is no config: nothing to say
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_config("quick")


def test_a_preset_named_like_its_output_folder_is_no_input_of_it(tmp_path, monkeypatch, capsys):
    """``compare --output-dir quick`` (the preset quick by default) a second time was refused, ``this output is the input
    quick, which it would replace``: the preset's name was checked as a file beside the output folder of that name."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "quick").mkdir()
    (tmp_path / "data").mkdir()
    assert main(["compare", "--output-dir", "quick", "--data-dir", "data"]) == 2
    assert capsys.readouterr().err == "error: eval: file not found (in data/squad-v1.1/dev.json)\n"  # past the output check
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data", "quick"] and not list((tmp_path / "quick").iterdir())
