"""The process's environment as a user's shell gives it: standard streams closed (``>&-``, ``2>&-``), and a text
option spelt in UTF-8 under a locale whose encoding is not (``LC_ALL=C`` with UTF-8 mode off)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from bio_mrc.cli import main

from .conftest import SAMPLE_V1


def _predictions(tmp_path):
    path = tmp_path / "preds.json"
    path.write_text(json.dumps({"n1": "France"}), encoding="utf-8")
    return path


def test_a_closed_standard_output_is_refused_before_any_work(monkeypatch, capsys, tmp_path):
    """The result would go nowhere and the command end 0, as if it had been seen."""
    monkeypatch.setattr(sys, "stdout", None)
    code = main(["evaluate", "--data", str(SAMPLE_V1), "--predictions", str(_predictions(tmp_path))])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("error: standard output is closed") and err.count("\n") == 1


def test_a_closed_standard_error_never_sends_the_error_line_into_standard_output(monkeypatch, capsys, tmp_path):
    """print(file=None) writes to standard output: the refusal landed in the file the command's JSON goes to."""
    before = sys.stderr
    monkeypatch.setattr(sys, "stderr", None)
    try:
        code = main(["evaluate", "--data", str(tmp_path / "missing.json"), "--predictions", str(_predictions(tmp_path))])
    finally:
        stream, sys.stderr = sys.stderr, before
    assert code == 2
    assert capsys.readouterr().out == ""
    assert stream is not None and stream.name == os.devnull
    stream.close()  # the command's for the rest of its process; this process goes on with the suite's


@pytest.mark.slow
def test_closed_streams_from_a_shell(tmp_path):
    """``2>&-``: the refusal nowhere, not in standard output; ``>&-``: one line on standard error, before any work."""
    predictions = _predictions(tmp_path)
    command = [sys.executable, "-m", "bio_mrc.cli", "evaluate", "--data", str(tmp_path / "missing.json"), "--predictions", str(predictions)]
    shell = subprocess.run(["sh", "-c", '"$@" 2>&-', "sh", *command], capture_output=True, text=True)
    assert (shell.returncode, shell.stdout) == (2, "")
    command[command.index("--data") + 1] = str(SAMPLE_V1)
    shell = subprocess.run(["sh", "-c", '"$@" >&-', "sh", *command], capture_output=True, text=True)
    assert shell.returncode == 2
    assert shell.stderr.startswith("error: standard output is closed") and shell.stderr.count("\n") == 1


def test_a_text_option_in_utf8_under_an_ascii_locale_is_read_as_utf8():
    """Under ``LC_ALL=C`` Python decodes the arguments as ASCII, each other byte a lone surrogate (``\\udcc3``)."""
    from bio_mrc.cli.options import text_from_argv

    assert text_from_argv("Z\udcc3\udcbcrich") == "Zürich"
    assert text_from_argv("Zürich") == "Zürich"
    assert text_from_argv("mod\udce8le") == "mod\udce8le"  # Latin-1 bytes, no UTF-8: left for the refusal naming them


def test_extract_reads_a_question_typed_in_utf8_under_an_ascii_locale(trained_dir, capsys):
    """The same answer, and the same id (made from the text), as the question and context read as UTF-8."""
    texts = ["Who wrote in Zürich?", "Zoë wrote the letters in Zürich in 1843."]
    typed = [text.encode("utf-8").decode("ascii", "surrogateescape") for text in texts]
    answers = []
    for question, context in (texts, typed):
        assert main(["extract", "--model", str(trained_dir), "--question", question, "--context", context]) == 0
        answers.append(json.loads(capsys.readouterr().out))
    assert answers[0] == answers[1]
    span = answers[1]["spans"][0]
    assert texts[1][span["start"] : span["end"]] == span["text"]


def test_an_unwritable_windows_cache_is_one_note_and_windows_in_memory(monkeypatch, tmp_path):
    """``HF_DATASETS_CACHE`` (or ``HF_HOME``, or a home folder it lies in) a file, missing and unmakeable, or read-only:
    training ended in ``cannot open it: Not a directory`` once the data was read and the model built."""
    import datasets

    from bio_mrc.features.windows_cache import WindowsCacheNote, default_windows_cache

    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", blocker / "datasets")
    with pytest.warns(WindowsCacheNote, match=r"a-file/datasets/bio_mrc_windows cannot be written \(Not a directory\)"):
        assert default_windows_cache() is None


def test_an_empty_datasets_cache_variable_is_no_cache_in_the_working_folder(monkeypatch, tmp_path):
    import datasets

    from bio_mrc.features.windows_cache import default_windows_cache

    monkeypatch.setenv("HF_DATASETS_CACHE", "")
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", ".")  # as datasets reads the empty variable
    monkeypatch.setattr(datasets.config, "DEFAULT_HF_DATASETS_CACHE", str(tmp_path / "default"))
    monkeypatch.chdir(tmp_path)
    assert default_windows_cache() == tmp_path / "default" / "bio_mrc_windows"


@pytest.mark.slow
def test_train_runs_where_the_windows_cache_cannot_be_written(monkeypatch, tmp_path, tiny_encoder_dir, capsys):
    import datasets

    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", blocker / "datasets")
    code = main(
        [
            "train",
            "--train",
            str(SAMPLE_V1),
            "--output-dir",
            str(tmp_path / "out"),
            "--encoder",
            str(tiny_encoder_dir),
            "--epochs",
            "1",
            "--batch-size",
            "4",
            "--max-seq-length",
            "48",
            "--doc-stride",
            "16",
            "--max-query-length",
            "12",
        ]
    )
    err = capsys.readouterr().err
    assert code == 0
    assert err.count("note: the training windows cache") == 1
    assert (tmp_path / "out" / "model.safetensors").is_file()
