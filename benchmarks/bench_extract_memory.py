"""Peak memory of ``AnswerExtractor`` called with a list of questions, at a few numbers of questions: the package's
call, which runs and decodes :attr:`~bio_mrc.inference.extract.AnswerExtractor.chunk_size` questions at a time (the
chunk ``bio-mrc predict`` answers), against every question's windows run and held at once (the call before: that
chunk size made unbounded), each in a process of its own, which reports its own peak resident memory (``VmHWM``)
before and after the call, the call's wall and CPU seconds, and its answers: their texts, offsets and decisions must
be equal, their scores equal to float32 rounding (a window's logits move in their last bits with the windows padded
and batched beside it).

The questions are those of ``bench_predict_memory.py`` (contexts of ``--words`` random words, four questions each)
and the model its tiny one (a 2-layer, H=32 BERT with a word-level vocabulary, windows of 64 tokens, trained one
epoch on 32 questions): its answers are arbitrary, its outputs as many as a real model's at that window length.
Nothing is downloaded.

    python benchmarks/bench_extract_memory.py [--questions 1000 4000 16000] [--words 60] [--decoding auto] [--multi-span]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import _common
from bench_predict_memory import synthetic_squad, tiny_model

NAME = "extract_memory"
WAYS = ("ours", "every question at once")

# Answer the questions one way; print the peaks, the seconds and the answers. A ``-c`` program, so that the process
# holds only what the call needs.
CHILD = """
import dataclasses, json, sys, time
from bio_mrc.inference import AnswerExtractor

def peak_mib():
    status = dict(line.split(":", 1) for line in open("/proc/self/status", encoding="ascii"))
    return int(status["VmHWM"].split()[0]) / 1024

way, model, data, decoding, multi_span = sys.argv[1:]
if way == "every question at once":  # the call before: every question's windows run and decoded together
    AnswerExtractor.chunk_size = 1 << 62
extractor = AnswerExtractor.from_pretrained(model, precision="fp32", device="cpu", decoding=decoding,
                                            multi_span=multi_span == "yes")
asked = json.loads(open(data, encoding="utf-8").read())
before, started, cpu = peak_mib(), time.perf_counter(), time.process_time()
answers = extractor(asked["questions"], asked["contexts"])
seconds, cpu, after = time.perf_counter() - started, time.process_time() - cpu, peak_mib()
spans = [[(s.text, s.start, s.end) for s in p.spans] + [p.abstain] for p in answers]
scores = [x for p in answers for x in (*(s.score for s in p.spans), p.confidence) if x is not None]
print(json.dumps({"before_mib": before, "peak_mib": after, "seconds": seconds, "cpu_seconds": cpu, "spans": spans,
                  "scores": scores}))
"""


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=int, nargs="+", default=[1000, 4000, 16000], help="questions of each call")
    parser.add_argument("--words", type=int, default=60, help="words of each context")
    parser.add_argument("--decoding", choices=("auto", "span", "bio", "joint"), default="auto", help="the extractor's decoding")
    parser.add_argument("--multi-span", action="store_true", help="answers of several spans")
    args = parser.parse_args()
    if any(n < 1 for n in args.questions) or args.words < 4:
        _common.fail(f"--questions are at least 1 each and --words at least 4, got {args.questions} and {args.words}")
    return args


def questions_file(folder: Path, questions: int, words: int) -> Path:
    """``synthetic_squad``'s questions as the two lists the extractor takes."""
    raw = json.loads(synthetic_squad(folder / f"squad-{questions}.json", questions, words).read_text(encoding="utf-8"))
    pairs = [(qa["question"], p["context"]) for p in raw["data"][0]["paragraphs"] for qa in p["qas"]]
    path = folder / f"asked-{questions}.json"
    path.write_text(json.dumps({"questions": [q for q, _ in pairs], "contexts": [c for _, c in pairs]}), encoding="utf-8")
    return path


def measure(way: str, model: Path, data: Path, args: argparse.Namespace) -> dict:
    command = [sys.executable, "-c", CHILD, way, str(model), str(data), args.decoding, "yes" if args.multi_span else "no"]
    process = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    if process.returncode != 0 or not process.stdout.strip():
        _common.fail(f"the call ({way}) on {data.name} failed: {(process.stderr.strip().splitlines() or ['?'])[-1]}")
    return json.loads(process.stdout.strip().splitlines()[-1])


def compared(runs: dict[str, dict], questions: int) -> float:
    """The largest score difference between the two ways; their spans and decisions must be equal."""
    ours, before = (runs[way] for way in WAYS)
    if ours["spans"] != before["spans"] or len(ours["scores"]) != len(before["scores"]):
        _common.fail(f"the answers differ at {questions:,} questions")
    return max((abs(a - b) for a, b in zip(ours["scores"], before["scores"])), default=0.0)


def main(args: argparse.Namespace) -> None:
    rows = []
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        model = tiny_model(folder, synthetic_squad(folder / "train.json", 32, args.words, seed=1))
        for questions in args.questions:
            data = questions_file(folder, questions, args.words)
            runs = {way: measure(way, model, data, args) for way in WAYS}
            difference = compared(runs, questions)
            rows += [{"questions": questions, "way": way, "score_difference": difference,
                      **{key: run[key] for key in ("before_mib", "peak_mib", "seconds", "cpu_seconds")}}
                     for way, run in runs.items()]
    machine = _common.machine_description()
    print(f"machine: {machine}; {_common.command_load_and_date()}")
    print()
    print("| questions | way | peak MiB before the call | peak MiB | at once / ours | call CPU s | largest score difference |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    peaks = {(row["questions"], row["way"]): row["peak_mib"] for row in rows}
    for row in rows:
        ratio = peaks[(row["questions"], WAYS[1])] / row["peak_mib"]
        print(f"| {row['questions']:,} | {row['way']} | {row['before_mib']:.0f} | {row['peak_mib']:.0f} | {ratio:.2f} | "
              f"{row['cpu_seconds']:.1f} | {row['score_difference']:.1e} |")
    print(json.dumps({"benchmark": NAME, "rows": rows, "spans_equal": True, "machine": machine}))


if __name__ == "__main__":
    main(parse_args())
