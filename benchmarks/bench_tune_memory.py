"""Peak memory of ``bio-mrc tune`` at a few numbers of questions: the package's tuning, which decodes and scores
:data:`~bio_mrc.inference.tuning_chunks.TUNING_CHUNK_QUESTIONS` questions at a time and keeps their per-question
columns, against every question decoded at once (the tuning before: that chunk size made unbounded), each in a process
of its own, which reports its own peak resident memory (``VmHWM``) and a digest of what the tuning wrote (its JSON
report and the tuned copy's ``config.json``), which must agree.

The questions are synthetic SQuAD 2.0 ones (contexts of ``--words`` random words, four questions each, a third of them
without an answer, so the length prior, the no-answer thresholds and the calibrators are all tuned) and the model the
tiny one of ``bench_predict_memory.py`` (a 2-layer, H=32 BERT with a word-level vocabulary, windows of 64 tokens,
trained one epoch on 32 questions): its answers are arbitrary, its outputs as many as a real model's at that window
length. Nothing is downloaded.

    python benchmarks/bench_tune_memory.py [--questions 1000 4000 16000] [--words 60]
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

import _common
import _memory
from bench_predict_memory import synthetic_squad

NAME = "tune_memory"
WAYS = ("ours", "every question at once")
COLUMNS = (("peak RSS MiB", "---:"), ("ours / at once", "---:"), ("wall s", "---:"), ("report and config.json", "---"))

# Tune a copy of the model one way; print the peak memory and a digest of the report and the saved config. A ``-c``
# program, so that the process holds only what the tuning needs.
CHILD = """
import contextlib, hashlib, io, json, sys
from bio_mrc.cli import main
from bio_mrc.inference import tuning_chunks
""" + _memory.PEAK_MIB + """
way, model, data, output = sys.argv[1:]
if way == "every question at once":  # the tuning before: one decoding of every question, its answers held whole
    tuning_chunks.TUNING_CHUNK_QUESTIONS = 1 << 62
report = io.StringIO()
with contextlib.redirect_stdout(report):
    code = main(["tune", "--model", model, "--data", data, "--output-dir", output, "--precision", "fp32"])
digest = hashlib.sha256(report.getvalue().encode() + open(output + "/config.json", "rb").read()).hexdigest()
print(json.dumps({"code": code, "digest": digest, "peak_mib": peak_mib()}))
"""


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=int, nargs="+", default=[1000, 4000, 16000], help="tuning questions at each size")
    parser.add_argument("--words", type=int, default=60, help="words of each context")
    args = parser.parse_args()
    if any(n < 100 for n in args.questions) or args.words < 4:
        _common.fail(f"--questions are at least 100 each (a calibrator's fewest) and --words at least 4, got "
                     f"{args.questions} and {args.words}")
    return args


def squad_v2(path: Path, questions: int, words: int) -> Path:
    """``synthetic_squad``'s questions, a third of them (drawn at random) without an answer, as SQuAD 2.0."""
    raw = json.loads(synthetic_squad(path, questions, words).read_text())
    rng = random.Random(2)
    for paragraph in raw["data"][0]["paragraphs"]:
        for qa in paragraph["qas"]:
            qa["is_impossible"] = rng.random() < 1 / 3
            qa["answers"] = [] if qa["is_impossible"] else qa["answers"]
    raw["version"] = "v2.0"
    path.write_text(json.dumps(raw), encoding="utf-8")
    return path


def rows_at(folder: Path, model: Path, questions: int, args: argparse.Namespace) -> list[dict]:
    """Both ways' rows at ``questions`` questions; what they wrote must be the same."""
    data = squad_v2(folder / f"tune-{questions}.json", questions, args.words)
    runs = {way: measure(way, model, data, folder / f"tuned-{questions}-{k}") for k, way in enumerate(WAYS)}
    if len({run["digest"] for run in runs.values()}) != 1:
        _common.fail(f"the tuned settings differ at {questions:,} questions: {runs}")
    return [{"questions": questions, "way": way, **run} for way, run in runs.items()]


def measure(way: str, model: Path, data: Path, output: Path) -> dict:
    what = f"tuning ({way}) on {data.name}"
    result, process, seconds = _memory.run_child(CHILD, [way, str(model), str(data), str(output)], what)
    if result["code"] != 0:
        _common.fail(f"{what} ended with {result['code']}: {_memory.stderr_end(process)}")
    return {"digest": result["digest"], "peak_mib": result["peak_mib"], "seconds": seconds}


def cells(row: dict, at_once_peak: float) -> list[str]:
    """A row's cells under ``COLUMNS``."""
    return [f"{row['peak_mib']:.0f}", f"{row['peak_mib'] / at_once_peak:.2f}", f"{row['seconds']:.1f}", "equal"]


def main(args: argparse.Namespace) -> None:
    rows = _memory.rows_by_size(args.words, args.questions, lambda folder, model, n: rows_at(folder, model, n, args))
    _memory.print_report(NAME, rows, "questions", WAYS[1], COLUMNS, cells, "identical")


if __name__ == "__main__":
    main(parse_args())
