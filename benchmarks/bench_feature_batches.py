"""Windows of long contexts: 500 questions tokenized at a time (the batches before) against batches of at most about
500,000 characters of context (``questions_per_batch``), each in a process of its own, which reports its own peak
resident memory (``VmHWM``) and CPU seconds of ``build_features`` alone, and a digest of the windows, which must agree.

The questions are ``--questions`` synthetic ones over contexts of ``--words`` random words, windows of 64 tokens
(stride 24, questions of at most 16), a word-level vocabulary: a tiny tokenizer, so the windows' own cost shows.

    python benchmarks/bench_feature_batches.py [--questions 250 1000] [--words 2000]
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

NAME = "feature_batches"
WAYS = {"500 questions a batch": "500", "batches of about 500,000 characters": "auto"}

# Build every window of the questions, one way; print the peak memory, the CPU seconds and a digest of the windows.
CHILD = """
import hashlib, json, random, resource, sys, time
from transformers import BertTokenizerFast
from bio_mrc.features.windows import FeatureConfig, build_features
from bio_mrc.types import Example

folder, way, questions, words = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
tokenizer = BertTokenizerFast.from_pretrained(folder)
rng = random.Random(0)
vocabulary = [f"w{i}" for i in range(500)]
examples = [Example(f"q{i}", " ".join(rng.choices(vocabulary, k=6)) + "?", " ".join(rng.choices(vocabulary, k=words)))
            for i in range(questions)]
def peak():
    status = dict(line.split(":", 1) for line in open("/proc/self/status", encoding="ascii"))
    return int(status["VmHWM"].split()[0]) / 1024
before, started = peak(), time.process_time()
features = build_features(examples, tokenizer, FeatureConfig(64, 24, 16), with_targets=False, batch_size=None if way == "auto" else int(way))
seconds, after = time.process_time() - started, peak()  # before the digest reads every window back
digest = hashlib.sha256(json.dumps([features[:]["input_ids"], features[:]["offset_mapping"]]).encode()).hexdigest()
print(json.dumps({"windows": len(features), "peak_mib": after, "growth_mib": after - before, "cpu_s": seconds, "digest": digest}))
"""


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=int, nargs="+", default=[250, 1000], help="questions at each size")
    parser.add_argument("--words", type=int, default=2000, help="words of each context")
    args = parser.parse_args()
    if any(n < 1 for n in args.questions) or args.words < 1:
        _common.fail(f"--questions and --words are positive counts, got {args.questions} and {args.words}")
    return args


def measure(folder: Path, way: str, questions: int, words: int) -> dict:
    result = subprocess.run([sys.executable, "-c", CHILD, str(folder), way, str(questions), str(words)], capture_output=True,
                            text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    if result.returncode != 0:
        _common.fail(f"building the windows ({way}) failed: {result.stderr.strip().splitlines()[-1] if result.stderr.strip() else result.returncode}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def main(args: argparse.Namespace) -> None:
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        tokenizer = _common.word_tokenizer_folder(Path(folder))
        for questions in args.questions:
            runs = {name: measure(tokenizer, way, questions, args.words) for name, way in WAYS.items()}
            if len({(run["windows"], run["digest"]) for run in runs.values()}) != 1:
                _common.fail(f"the windows differ at {questions} questions: {runs}")
            rows += [{"questions": questions, "words": args.words, "way": name, **run} for name, run in runs.items()]
    machine = _common.machine_description()
    print(f"machine: {machine}; {_common.command_load_and_date()}")
    print()
    print("| questions | words a context | windows | way | peak RSS MiB | growth MiB | CPU s | windows |")
    print("|---:|---:|---:|---|---:|---:|---:|---|")
    for row in rows:
        print(f"| {row['questions']:,} | {row['words']:,} | {row['windows']:,} | {row['way']} | {row['peak_mib']:.0f} | "
              f"{row['growth_mib']:.0f} | {row['cpu_s']:.2f} | equal |")
    print(json.dumps({"benchmark": NAME, "rows": rows, "identical": True, "machine": machine}))


if __name__ == "__main__":
    main(parse_args())
