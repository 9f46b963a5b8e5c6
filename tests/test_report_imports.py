"""What rendering a comparison's report imports: ``bio_mrc.harness.report``, a report rendered again from a finished
comparison's records (``report.json``) and its training-loss curves (read from each model folder's
``training_log.json``) load neither torch nor transformers' Trainer; a report re-rendered would pay their import for
nothing it uses."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
QUICK_REPORT = ROOT / "benchmarks" / "reports" / "quick" / "report.json.xz"
# The training stack a report never uses: torch, transformers (its Trainer among it) and datasets (with pandas and Arrow).
NOT_FOR_REPORTS = ("torch", "transformers", "transformers.trainer", "datasets")

RENDER_FROM_RECORDS = """
import json, sys
from dataclasses import replace
from bio_mrc.harness.earlier_report import read_report
from bio_mrc.harness.report import render_markdown
from bio_mrc.harness.training_loss import loss_curves
report = read_report(sys.argv[1])
markdown = render_markdown(report.results, report.summary, {})
cell = replace(report.results.cells[0], model_dir=sys.argv[2])
print(json.dumps({"title": markdown.splitlines()[0], "curves": loss_curves([cell]),
                  "loaded": [name for name in json.loads(sys.argv[3]) if name in sys.modules]}))
"""


def model_with_a_log(folder: Path) -> Path:
    """A model folder keeping nothing but Trainer's log history: two losses, an evaluation and the run's summary."""
    folder.mkdir()
    log = [
        {"loss": 2.5, "step": 25, "epoch": 0.5},
        {"eval_span_f1": 40.0, "step": 25},
        {"loss": 1.75, "step": 50, "epoch": 1.0},
        {"train_runtime": 9.0, "step": 50},
    ]
    (folder / "training_log.json").write_text(json.dumps(log), encoding="utf-8")
    return folder


def run_python(code: str, *args: str, cwd: Path) -> dict:
    """The JSON ``code`` prints last, run in a fresh interpreter with ``args`` and the names of NOT_FOR_REPORTS."""
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, "-c", code, *args, json.dumps(NOT_FOR_REPORTS)], capture_output=True, text=True, env=environment, cwd=cwd, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.splitlines()[-1])


def test_rendering_a_report_from_its_records_imports_neither_torch_nor_the_trainer(tmp_path):
    model = model_with_a_log(tmp_path / "model")
    result = run_python(RENDER_FROM_RECORDS, str(QUICK_REPORT), str(model), cwd=tmp_path)
    assert result["title"] == "# Comparison report: quick"
    # only the entries that log a loss at a step, in the log's order
    assert result["curves"] == {"joint": [{"seed": 42, "fold": None, "model_dir": str(model), "steps": [25, 50], "loss": [2.5, 1.75]}]}
    assert result["loaded"] == []


WRITE_IN_FULL = """
import json, sys
import numpy as np
from bio_mrc.harness.report import write_report
from bio_mrc.harness.results import Cell, ComparisonResults
from bio_mrc.types import Example
n = 30
examples = [Example(f"q{i}", f"Who is {i}?", f"It is {i} here.", (((6, 6 + len(str(i))),),)) for i in range(n)]
f1 = {"span": np.linspace(0, 100, n), "bio": np.linspace(100, 0, n)}
cells = [Cell(run="joint", decoding=decoding, seed=42, model_dir=sys.argv[1], threshold=None, bio_length_prior=None,
              train_seconds=10.0, inference_seconds=2.0, decode_seconds=0.1, answers=[str(i) for i in range(n)],
              f1=scores, em=(scores > 50) * 100.0) for decoding, scores in f1.items()]
results = ComparisonResults(config={"name": "full", "seeds": [42], "runs": [{"name": "joint", "encoder": "tiny", "heads": "span+bio"}]},
                            package_version="0", date="today", train={"description": "t", "questions": 9, "question_hash": "h"},
                            eval={"description": "e", "questions": n, "question_hash": "h", "task": "squad-v1.1"},
                            tune=None, eval_examples=examples, cells=cells)
write_report(results, sys.argv[2], np.arange(n) % 7, 50 + np.arange(n))
print(json.dumps({"loaded": [name for name in json.loads(sys.argv[3]) if name in sys.modules]}))
"""


@pytest.mark.slow  # matplotlib draws the figures: about 3 s
def test_writing_a_report_in_full_imports_neither_torch_nor_the_trainer(tmp_path):
    """``write_report``: report.json, report.md, every figure (the training-loss one from a model folder's log) and
    report.html."""
    model = model_with_a_log(tmp_path / "model")
    assert run_python(WRITE_IN_FULL, str(model), str(tmp_path / "report"), cwd=tmp_path) == {"loaded": []}
    assert (tmp_path / "report" / "training_loss.png").is_file() and (tmp_path / "report" / "report.html").is_file()
    assert "## Training loss" in (tmp_path / "report" / "report.md").read_text(encoding="utf-8")
