"""A command leaves nothing behind but its outputs and the documented caches: no folder a library made in the temporary
folder or the home folder, and its input files and model folders as they were (bytes and times)."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bio_mrc.cli import main

from .conftest import SAMPLE_V1


def _files(*folders: Path) -> dict[str, tuple[int, int]]:
    """Every entry under ``folders``: its size (-1 for a folder) and modification time."""
    found = {}
    for folder in folders:
        for path in [folder, *folder.rglob("*")]:
            stat = path.lstat()
            found[str(path)] = (-1 if path.is_dir() else stat.st_size, stat.st_mtime_ns)
    return found


def _torch_cache_made_by(monkeypatch, command):
    """``evaluate`` replaced by ``command`` after making torch's compiler cache folder, as importing torch._dynamo does."""
    import bio_mrc.cli as cli
    from torch._inductor.runtime import cache_dir_utils

    def run(_args):
        cache_dir_utils.cache_dir()
        return command()

    monkeypatch.setattr(cli.parser, "cmd_evaluate", run)


@pytest.fixture
def own_temporary_folder(tmp_path, monkeypatch):
    import tempfile

    import torch._inductor.runtime.cache_dir_utils  # noqa: F401  (importing it makes the folder in the real one)

    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)  # torch set it when this process imported it
    return folder


def test_a_command_removes_the_empty_torch_cache_folder_it_made(own_temporary_folder, monkeypatch):
    """Every command that loaded a model left an empty ``$TMPDIR/torchinductor_USER`` behind."""
    _torch_cache_made_by(monkeypatch, lambda: 0)
    assert main(["evaluate", "--data", str(SAMPLE_V1), "--predictions", str(SAMPLE_V1)]) == 0
    assert list(own_temporary_folder.iterdir()) == []


def test_a_torch_cache_folder_holding_files_or_there_before_stays(own_temporary_folder, monkeypatch):
    from torch._inductor.runtime import cache_dir_utils

    _torch_cache_made_by(monkeypatch, lambda: Path(cache_dir_utils.cache_dir(), "kernel").write_text("compiled") and 0)
    assert main(["evaluate", "--data", str(SAMPLE_V1), "--predictions", str(SAMPLE_V1)]) == 0
    assert (Path(cache_dir_utils.default_cache_dir()) / "kernel").read_text() == "compiled"
    (Path(cache_dir_utils.default_cache_dir()) / "kernel").unlink()
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)  # empty now, but there before the next command
    _torch_cache_made_by(monkeypatch, lambda: 0)
    assert main(["evaluate", "--data", str(SAMPLE_V1), "--predictions", str(SAMPLE_V1)]) == 0
    assert Path(cache_dir_utils.default_cache_dir()).is_dir()


def test_a_torch_cache_folder_the_user_named_stays(own_temporary_folder, monkeypatch, tmp_path):
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "mine"))
    _torch_cache_made_by(monkeypatch, lambda: 0)
    assert main(["evaluate", "--data", str(SAMPLE_V1), "--predictions", str(SAMPLE_V1)]) == 0
    assert (tmp_path / "mine").is_dir()


@pytest.fixture
def fresh_user_folders(tmp_path, monkeypatch):
    """An empty home, cache and temporary folder, and an empty working folder: (their root, the output folder)."""
    import tempfile

    for name in ("home", "cache", "tmp", "cwd", "out"):
        (tmp_path / name).mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    monkeypatch.chdir(tmp_path / "cwd")
    return tmp_path, tmp_path / "out"


def _commands(model: str, out: Path) -> dict[str, list[str]]:
    data = str(SAMPLE_V1)
    return {
        "predict": ["predict", "--model", model, "--data", data, "--output", str(out / "preds.json"), "--precision", "fp32"],
        "extract": ["extract", "--model", model, "--question", "Who ruled?", "--context", "Rollo ruled.", "--precision", "fp32",
                    "--html", str(out / "page.html")],
        "tune": ["tune", "--model", model, "--data", data, "--output-dir", str(out / "tuned"), "--no-calibration",
                 "--precision", "fp32"],
        "export": ["export", "--model", model, "--output", str(out / "exported"), "--format", "transformers"],
        "evaluate": ["evaluate", "--data", data, "--predictions", data],  # no answers: every question scored 0
        "refused": ["predict", "--model", model, "--data", str(out / "missing.json"), "--output", str(out / "p.json")],
    }


@pytest.mark.parametrize("command", ["predict", "extract", "tune", "export", "evaluate", "refused"])
def test_a_command_writes_only_its_outputs_and_leaves_its_inputs_as_they_were(trained_dir, fresh_user_folders, command):
    root, out = fresh_user_folders
    before = _files(root, trained_dir, SAMPLE_V1.parent)
    main(_commands(str(trained_dir), out)[command])
    after = _files(root, trained_dir, SAMPLE_V1.parent)
    changed = {path for path in set(before) | set(after) if before.get(path) != after.get(path)}
    assert {path for path in changed if not path.startswith(str(out))} <= {str(out.parent / "tmp")}  # a folder's time
    assert not any((root / "tmp").iterdir())


def _fresh_environment(root: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items()
           if key not in ("TORCHINDUCTOR_CACHE_DIR", "MPLCONFIGDIR", "HF_HOME", "PYTHONDONTWRITEBYTECODE")}
    for name in ("home", "tmp", "cwd", "out"):
        (root / name).mkdir()
    return {**env, "HOME": str(root / "home"), "XDG_CACHE_HOME": str(root / "home" / ".cache"), "TMPDIR": str(root / "tmp")}


def _many_questions(path: Path) -> Path:
    """The sample's first article 400 times over, each copy's ids its own and its paragraphs its own: minutes of work."""
    article = json.loads(SAMPLE_V1.read_text(encoding="utf-8"))["data"][0]
    many = [{"title": f"{article['title']} {k}",
             "paragraphs": [{"context": f"{k:04d} {p['context']}",
                             "qas": [{**q, "id": f"{q['id']}-{k}",
                                      "answers": [{**a, "answer_start": a["answer_start"] + 5} for a in q["answers"]]}
                                     for q in p["qas"]]} for p in article["paragraphs"]]}
            for k in range(400)]
    path.write_text(json.dumps({"version": "1.1", "data": many}), encoding="utf-8")
    return path


def _ctrl_c_heard() -> None:
    """In the command's process before it starts: SIGINT's default action, which Python turns into its Ctrl-C handler.
    A test run started in the background of a shell without job control ignores SIGINT, and its children inherit
    that: the command would never hear the test's Ctrl-C."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.slow
@pytest.mark.parametrize("command", ["predict", "train"])
def test_a_command_stopped_with_ctrl_c_leaves_nothing_in_the_temporary_folder(trained_dir, tiny_encoder_dir, tmp_path, command):
    """torch's compiler cache folder, made when transformers loads, was left in ``$TMPDIR`` after every command."""
    env = _fresh_environment(tmp_path)
    data, out = _many_questions(tmp_path / "data.json"), tmp_path / "out"
    args, working = {
        "predict": (["--model", str(trained_dir), "--output", str(out / "preds.json"), "--batch-size", "1"], out / "preds.answers.partial.jsonl"),
        "train": (["--encoder", str(tiny_encoder_dir), "--output-dir", str(out / "model"), "--epochs", "5", "--max-seq-length", "48",
                   "--doc-stride", "16", "--max-query-length", "12"], out / "model" / "checkpoints"),
    }[command]
    process = subprocess.Popen([sys.executable, "-m", "bio_mrc", command, "--train" if command == "train" else "--data", str(data),
                                "--precision", "fp32", *args], cwd=tmp_path / "cwd", env=env, stderr=subprocess.PIPE, text=True,
                               preexec_fn=_ctrl_c_heard)
    while not working.exists() and process.poll() is None:
        time.sleep(0.1)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=300)
    assert process.returncode == 130, err
    assert list((tmp_path / "tmp").iterdir()) == [] and list((tmp_path / "cwd").iterdir()) == []
    cached = {p.relative_to(tmp_path / "home").as_posix() for p in (tmp_path / "home").rglob("*") if p.is_file()}
    assert {name for name in cached if "bio_mrc_windows/windows-" not in name} == set()  # the documented windows cache alone


PLOT = """
import sys
import numpy as np
from bio_mrc.harness.plots import plot_threshold_curve
plot_threshold_curve(np.array([0.0, 1.0]), np.array([50.0, 60.0]), 0.5, "a threshold", sys.argv[1])
"""


@pytest.mark.slow
def test_a_plot_leaves_no_matplotlib_cache_in_the_home_folder(tmp_path):
    """``tune --plot-dir`` and ``compare`` left matplotlib's font list in ``~/.cache/matplotlib`` and an empty
    ``~/.config/matplotlib``."""
    env = _fresh_environment(tmp_path)
    subprocess.run([sys.executable, "-c", PLOT, str(tmp_path / "out" / "t.png")], cwd=tmp_path / "cwd", env=env, check=True,
                   timeout=300)
    assert (tmp_path / "out" / "t.png").is_file()
    assert [p for name in ("home", "tmp", "cwd") for p in (tmp_path / name).rglob("*")] == []


@pytest.mark.slow
def test_train_and_compare_write_only_their_outputs(tiny_encoder_dir, fresh_user_folders):
    """No ``runs/``, ``lightning_logs`` or logging folder of the Trainer's in the working folder, nothing in the home or
    temporary folder (the windows and precision caches are the test session's own), the encoder and data untouched."""
    from .conftest import WINDOW_ARGS, write_browser_eval_file

    root, out = fresh_user_folders
    config = root / "config" / "c.json"
    config.parent.mkdir()
    config.write_text(json.dumps({
        "name": "c", "train": {"path": str(SAMPLE_V1)}, "eval": {"path": str(write_browser_eval_file(config.parent / "eval.json"))},
        "defaults": {"encoder": str(tiny_encoder_dir), "max_seq_length": 48, "doc_stride": 16, "max_query_length": 12,
                     "epochs": 1, "batch_size": 4, "training_args": {"logging_steps": 1}},
        "runs": [{"name": "span", "heads": "span"}], "seeds": [1]}))
    before = _files(root, tiny_encoder_dir, SAMPLE_V1.parent)
    assert main(["train", "--train", str(SAMPLE_V1), "--output-dir", str(out / "model"), "--encoder", str(tiny_encoder_dir),
                 "--epochs", "1", "--report-to", "tensorboard", *WINDOW_ARGS]) == 0
    assert main(["compare", "--config", str(config), "--output-dir", str(out / "comparison"), "--data-dir", str(config.parent)]) == 0
    after = _files(root, tiny_encoder_dir, SAMPLE_V1.parent)
    changed = {path for path in set(before) | set(after) if before.get(path) != after.get(path)}
    assert {path for path in changed if not path.startswith(str(out))} <= {str(out.parent / "tmp")}
    assert not any((root / "tmp").iterdir()) and (out / "comparison" / "report.md").is_file()
