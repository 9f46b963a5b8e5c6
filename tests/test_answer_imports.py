"""What answering imports: ``bio-mrc extract``, ``bio-mrc predict`` and ``AnswerExtractor`` load neither the training
code of transformers nor datasets, nor the libraries of tuning, reports, ONNX or serving; each would cost every answer
its import."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import untrained_model_folder

ROOT = Path(__file__).resolve().parents[1]
# Libraries the answering doors never use: transformers' Trainer, the calibrator's fitting (scikit-learn) and the
# statistics of reports (scipy.stats), plots, tag metrics, ONNX and the HTTP server; datasets and Arrow (and the pandas
# both import), which training, tuning and the windows cache keep windows in: an answer's are numpy columns held for
# the call.
NOT_FOR_ANSWERS = ("transformers.trainer", "transformers.training_args", "sklearn", "scipy.stats", "matplotlib",
                   "seqeval", "onnx", "onnxruntime", "fastapi", "uvicorn", "datasets", "pandas", "pyarrow")

ANSWER_ALL_DOORS = """
import contextlib, io, json, sys
from pathlib import Path
from bio_mrc.cli import main
model, folder = sys.argv[1], Path(sys.argv[2])
(folder / "questions.jsonl").write_text(json.dumps({"question": "Who wrote it?", "context": "Ada wrote it."}) + "\\n")
codes = []
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    codes.append(main(["extract", "--model", model, "--question", "Who wrote it?", "--context", "Ada wrote it."]))
    codes.append(main(["predict", "--model", model, "--data", str(folder / "questions.jsonl"),
                       "--output", str(folder / "preds.json")]))
from bio_mrc import AnswerExtractor
answer = AnswerExtractor.from_pretrained(model)("Who wrote it?", "Ada wrote it.")
print(json.dumps({"codes": codes, "answered": isinstance(answer.answer, str),
                  "loaded": [name for name in json.loads(sys.argv[3]) if name in sys.modules]}))
"""


@pytest.mark.slow
def test_answering_imports_no_training_tuning_report_onnx_or_server_library(tiny_encoder_dir, tmp_path):
    model = untrained_model_folder(tiny_encoder_dir, tmp_path / "model", heads="span+bio", max_seq_length=48,
                                   doc_stride=16, max_query_length=12)
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", ANSWER_ALL_DOORS, str(model), str(tmp_path), json.dumps(NOT_FOR_ANSWERS)],
                          capture_output=True, text=True, env=environment, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.splitlines()[-1])
    assert result == {"codes": [0, 0], "answered": True, "loaded": []}
