"""Refusals that depend only on the arguments, the files and the system come before torch is imported: the user reads
the same one line at once, not after the libraries load."""

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from .conftest import SAMPLE_V1

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "transformers", "datasets", "sklearn")

REFUSALS = """
import contextlib, io, json, sys
from bio_mrc.cli import main
lines = []
for argv in json.loads(sys.argv[1]):
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(argv)
    lines.append([code, err.getvalue().strip().splitlines()[-1]])
print(json.dumps({"lines": lines, "heavy": [m for m in %r if m in sys.modules]}))
""" % (HEAVY,)


def refused(argvs: list[list[str]], cwd: Path) -> dict:
    """Each command line's status and last line of standard error, and the heavy modules imported by then, in a fresh
    interpreter."""
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", REFUSALS, json.dumps(argvs)], capture_output=True, text=True,
                          env=environment, cwd=cwd, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_plain_bad_input_is_refused_before_torch_loads(tmp_path):
    """tune's too few questions for a calibrator and its output folder not empty, serve's port in use, extract's missing
    context and predict's --resume into standard output were refused once torch and transformers had loaded."""
    model, full = tmp_path / "model", tmp_path / "full"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"model_type": "bio_mrc", "heads": "span+bio"}), encoding="utf-8")
    full.mkdir()
    (full / "kept.txt").write_text("x", encoding="utf-8")
    data = str(SAMPLE_V1)  # 8 questions
    with socket.socket() as taken:  # a port another program listens on
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = refused([
            ["tune", "--model", str(model), "--data", data, "--output-dir", str(tmp_path / "new")],
            ["tune", "--model", str(model), "--data", data, "--output-dir", str(full)],
            ["serve", "--model", str(model), "--port", str(port)],
            ["serve", "--model", str(model), "--port", "0"],
            ["extract", "--model", str(model), "--question", "Who?"],
            ["predict", "--model", str(model), "--data", data, "--output", "-", "--resume"],
        ], tmp_path)
    assert result["lines"] == [
        [2, f"error: {data}: 8 questions are too few to fit a calibrator (at least 100); --no-calibration tunes the rest, "
            "--min-calibration-questions 8 fits one anyway"],
        [2, f"error: --output-dir {full} is not empty; give a new folder (the tuned copy of the model goes there)"],
        [2, f"error: cannot listen on 127.0.0.1:{port} (--host, --port): Address already in use"],
        [2, "error: ServeConfig: port: 0 is less than the minimum of 1"],
        [2, "error: give --context-file FILE... or --context TEXT..., one of them"],
        [2, "error: --resume continues PREDS.answers.jsonl; with --output - there is no such file"],
    ]
    assert result["heavy"] == []


def test_predict_refuses_its_files_and_options_before_torch_loads(tmp_path):
    """predict's missing data or model folder, an output that is a folder or the data itself and a misused
    --min-span-probability were refused once torch and transformers had loaded."""
    model, folder = tmp_path / "model", tmp_path / "out"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"model_type": "bio_mrc", "heads": "span+bio"}), encoding="utf-8")
    folder.mkdir()
    data, preds = str(SAMPLE_V1), str(tmp_path / "preds.json")
    missing_model, missing_data = str(tmp_path / "gone" / "model"), str(tmp_path / "gone.json")
    result = refused([
        ["predict", "--model", str(model), "--data", missing_data, "--output", preds],
        ["predict", "--model", missing_model, "--data", data, "--output", preds],
        ["predict", "--model", str(model), "--data", data, "--output", str(folder)],
        ["predict", "--model", str(model), "--data", data, "--output", data],
        ["predict", "--model", str(model), "--data", data, "--output", preds, "--min-span-probability", "0.5"],
        ["predict", "--model", str(model), "--data", data, "--output", preds, "--multi-span", "--min-span-probability", "2"],
    ], tmp_path)
    assert result["lines"] == [
        [2, f"error: file not found (in {missing_data})"],
        [2, f"error: no such model folder (and not a Hugging Face hub id) (in {missing_model})"],
        [2, f"error: a folder has this name; give a file name (in {folder})"],
        [2, f"error: this output is the input {data}, which it would replace; choose another output (in {data})"],
        [2, "error: --min-span-probability judges the spans after the first of a multi-span answer; add --multi-span, "
            "or leave it out for single answers"],
        [2, "error: DecodeConfig: min_span_probability: 2.0 is greater than the maximum of 1.0"],
    ]
    assert result["heavy"] == []


def test_evaluate_refuses_resamples_without_a_baseline_before_its_libraries_load(tmp_path):
    """bio_mrc.progress imported transformers and datasets for their bars' switches, before evaluate refused --resamples
    without --baseline."""
    predictions = tmp_path / "preds.json"
    predictions.write_text("{}", encoding="utf-8")
    result = refused([["evaluate", "--data", str(SAMPLE_V1), "--predictions", str(predictions), "--resamples", "100"]], tmp_path)
    assert result["lines"] == [
        [2, "error: --resamples 100: the bootstrap resamples of --baseline's paired difference; give --baseline OLD to "
            "compare --predictions with, or drop --resamples"],
    ]
    assert result["heavy"] == []


def test_train_refuses_its_folder_data_and_starting_points_before_torch_loads(tmp_path):
    """train's output folder that is a file or not empty, a missing --train or --eval file and --init-from with
    --encoder were refused once the training modules (Trainer) had loaded torch and transformers."""
    afile, full = tmp_path / "afile", tmp_path / "full"
    afile.write_text("x", encoding="utf-8")
    full.mkdir()
    (full / "kept.txt").write_text("x", encoding="utf-8")
    data, new, missing = str(SAMPLE_V1), str(tmp_path / "new"), str(tmp_path / "gone.json")
    result = refused([
        ["train", "--train", data, "--output-dir", str(afile)],
        ["train", "--train", missing, "--output-dir", new],
        ["train", "--train", data, "--eval", missing, "--output-dir", new],
        ["train", "--train", data, "--output-dir", str(full)],
        ["train", "--train", data, "--output-dir", new, "--init-from", str(full), "--encoder", "enc"],
    ], tmp_path)
    assert result["lines"] == [
        [2, f"error: a file has this name; give a folder (in {afile})"],
        [2, f"error: file not found (in {missing})"],
        [2, f"error: file not found (in {missing})"],
        [2, f"error: {full} is not empty (kept.txt) and holds no bio_mrc model; choose another output folder or pass "
            "--overwrite to replace its files"],
        [2, f"error: --encoder enc and --init-from {full} name two starting points: --init-from continues a trained model "
            "on its own encoder, so --encoder would be ignored (and named in the run record and model card as the "
            "encoder); give one of the two"],
    ]
    assert result["heavy"] == []
    assert not Path(new).exists()


def test_compare_export_and_convert_refuse_plain_bad_input_before_torch_loads(tmp_path):
    """compare's missing or malformed config and empty --data-dir, export's and convert's missing model folder and
    convert's output that is a file were refused once torch and transformers had loaded."""
    broken, afile = tmp_path / "broken.json", tmp_path / "afile"
    broken.write_text("x", encoding="utf-8")
    afile.write_text("x", encoding="utf-8")
    missing, out = str(tmp_path / "gone" / "model"), str(tmp_path / "out")
    result = refused([
        ["compare", "--config", str(tmp_path / "none.json")],
        ["compare", "--config", str(broken)],
        ["compare", "--config", str(broken), "--data-dir", " "],
        ["export", "--model", missing, "--output", out],
        ["convert", "--model", missing, "--output", out],
        ["convert", "--model", missing, "--output", str(afile)],
    ], tmp_path)
    assert result["lines"] == [
        [2, "error: no such config file (presets: quick, full, v2-quick, v2-from-reader, multispanqa-cv, multispan-reader) "
            f"(in {tmp_path / 'none.json'})"],
        [2, f"error: not valid JSON: Expecting value (line 1, column 1) (in {broken})"],
        [2, "error: --data-dir: an empty path names no folder; give one"],
        [2, f"error: no such model folder (and not a Hugging Face hub id) (in {missing})"],
        [2, f"error: no such model folder (and not a Hugging Face hub id) (in {missing})"],
        [2, f"error: a file has this name; give a folder (in {afile})"],
    ]
    assert result["heavy"] == []
    assert not Path(out).exists()
