"""Several questions over one long context: each batch of questions tokenizing the context alone again, twice with
word tags (its words, then its windows' slices; the windows before) against the context tokenized alone once
(``ContextsAlone``), each way in a process of its own, which reports the CPU seconds and peak resident memory
(``VmHWM``) of ``windows_in_memory`` alone (the batches ``predict``, ``extract`` and ``AnswerExtractor`` cut, in a ``Dataset``), the
times the context was tokenized, and a digest of the windows, which must agree.

A context of ``--chars`` characters of random words fills a batch of its own (``questions_per_batch``), so each of the
``--questions`` questions over it is a batch; windows of 384 tokens (stride 128, questions of at most 64), word-level
tags, a word-level vocabulary: a tiny tokenizer, so the windows' own cost shows.

    python benchmarks/bench_context_tokenized_once.py [--chars 1000000 4000000] [--questions 4]
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

NAME = "context_tokenized_once"
WAYS = {"tokenized again each batch (before)": "before", "tokenized alone once": "now"}

# Cut every window of the questions, one way; print the CPU seconds, the peak memory, the tokenizations of the context
# and a digest of the windows.
CHILD = """
import hashlib, random, json, sys, time
from transformers import BertTokenizerFast
from bio_mrc.features import pair_windows, windows
from bio_mrc.features.windows import FeatureConfig, windows_in_memory
from bio_mrc.types import Example

folder, way, chars, questions = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
tokenizer = BertTokenizerFast.from_pretrained(folder)
rng = random.Random(0)
vocabulary = [f"w{i}" for i in range(500)]
context = " ".join(rng.choices(vocabulary, k=chars // 4))[:chars]
examples = [Example(f"q{i}", " ".join(rng.choices(vocabulary, k=6)) + "?", context) for i in range(questions)]
encodings, encode = [], pair_windows.backend_encodings
pair_windows.backend_encodings = lambda t, texts, *rest: encodings.extend(texts) or encode(t, texts, *rest)

class Forgetting(pair_windows.ContextsAlone):  # the windows before: every call tokenizes its contexts again
    def __call__(self, tokenizer, contexts):
        self._held = {}
        return super().__call__(tokenizer, contexts)

if way == "before":
    windows.ContextsAlone = Forgetting
def peak():
    status = dict(line.split(":", 1) for line in open("/proc/self/status", encoding="ascii"))
    return int(status["VmHWM"].split()[0]) / 1024
before, started = peak(), time.process_time()
features = windows_in_memory(examples, tokenizer, FeatureConfig(384, 128, 64, tag_level="word"))
seconds, after = time.process_time() - started, peak()  # before the digest reads every window back
digest = hashlib.sha256(json.dumps([features[:][name] for name in ("input_ids", "offset_mapping", "word_offsets", "tag_mask")]).encode()).hexdigest()
print(json.dumps({"windows": len(features), "tokenized": encodings.count(context), "peak_mib": after,
                  "growth_mib": after - before, "cpu_s": seconds, "digest": digest}))
"""


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chars", type=int, nargs="+", default=[1_000_000, 4_000_000], help="characters of the context")
    parser.add_argument("--questions", type=int, default=4, help="questions over it")
    args = parser.parse_args()
    if any(n < 1 for n in args.chars) or args.questions < 1:
        _common.fail(f"--chars and --questions are positive counts, got {args.chars} and {args.questions}")
    return args


def measure(folder: Path, way: str, chars: int, questions: int) -> dict:
    result = subprocess.run([sys.executable, "-c", CHILD, str(folder), way, str(chars), str(questions)], capture_output=True,
                            text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    if result.returncode != 0:
        _common.fail(f"cutting the windows ({way}) failed: {result.stderr.strip().splitlines()[-1] if result.stderr.strip() else result.returncode}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def main(args: argparse.Namespace) -> None:
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        tokenizer = _common.word_tokenizer_folder(Path(folder))
        for chars in args.chars:
            runs = {name: measure(tokenizer, way, chars, args.questions) for name, way in WAYS.items()}  # one after the other
            if len({(run["windows"], run["digest"]) for run in runs.values()}) != 1:
                _common.fail(f"the windows differ at {chars} characters: {runs}")
            rows += [{"chars": chars, "questions": args.questions, "way": name, **run} for name, run in runs.items()]
    machine = _common.machine_description()
    print(f"machine: {machine}; {_common.command_load_and_date()}")
    print()
    print("| characters | questions | windows | way | context tokenized | CPU s | peak RSS MiB | growth MiB | windows |")
    print("|---:|---:|---:|---|---:|---:|---:|---:|---|")
    for row in rows:
        print(f"| {row['chars']:,} | {row['questions']} | {row['windows']:,} | {row['way']} | {row['tokenized']} | "
              f"{row['cpu_s']:.2f} | {row['peak_mib']:.0f} | {row['growth_mib']:.0f} | equal |")
    print(json.dumps({"benchmark": NAME, "rows": rows, "identical": True, "machine": machine}))


if __name__ == "__main__":
    main(parse_args())
