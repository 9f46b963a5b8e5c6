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
