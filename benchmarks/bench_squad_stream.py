"""The streamed reader of official SQuAD JSON on a file of one article holding every question (SQuAD's layout: a
title, then the paragraphs): the package's reader, a paragraph at a time, against the article built whole (the reader
before), each in a process of its own, which reports its own peak resident memory (``VmHWM`` of ``/proc/self/status``:
a child's ``ru_maxrss`` starts at the size of the parent it was forked from, which holds the files it wrote).

Each size is that many questions, four to a paragraph of 60 words, in one article (the same questions in articles of
eight paragraphs beside them: the flat line one article should follow). A process reads every question through
``stream_squad`` (detection included, as ``bio-mrc predict`` reads them) and prints how many it read and a digest of
their ids, contexts and answers, which must agree across the three runs.

    python benchmarks/bench_squad_stream.py [--sizes 16000 64000 256000]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _common

NAME = "squad_stream"
WAYS = ("ours", "whole article")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[16_000, 64_000, 256_000], help="questions at each size")
    args = parser.parse_args()
    if any(size < 4 for size in args.sizes):
        _common.fail(f"--sizes are counts of questions, at least 4 each, got {args.sizes}")
    return args


def write_squad(path: Path, questions: int, per_article: int | None) -> Path:
    """``questions`` answerable questions, four to a paragraph; one article, or articles of ``per_article`` paragraphs."""
    rng = random.Random(0)
    vocabulary = [f"w{i}" for i in range(500)]
    paragraphs = []
    for first in range(0, questions, 4):
        words = rng.choices(vocabulary, k=60)
        context = " ".join(words)
        qas = [{"id": f"q{q}", "question": " ".join(rng.choices(vocabulary, k=6)) + "?",
                "answers": [{"text": words[k], "answer_start": len(" ".join(words[:k])) + (1 if k else 0)}]}
               for q, k in ((q, rng.randrange(60)) for q in range(first, min(first + 4, questions)))]
        paragraphs.append({"context": context, "qas": qas})
    size = per_article or len(paragraphs)
    data = [{"title": f"article {k}", "paragraphs": paragraphs[k : k + size]} for k in range(0, len(paragraphs), size)]
    path.write_text(json.dumps({"version": "1.1", "data": data}), encoding="utf-8")
    return path


# Read every question of a file one way; print the count and a digest of what was read. A ``-c`` program, so that
# the process imports only what reading needs (_common imports torch).
CHILD = """
import hashlib, json, sys
from bio_mrc.data import json_stream
from bio_mrc.data.squad import stream_squad

way, path = sys.argv[1:]
if way == "whole article":  # the reader before: an article's value built whole, then its questions read
    json_stream._article = lambda events, number: iter([json_stream._value_from("start_map", None, events)])
digest, count = hashlib.sha256(), 0
for example in stream_squad(path):
    digest.update(f"{example.id}\\n{example.context}\\n{example.answers!r}\\n".encode())
    count += 1
status = dict(line.split(":", 1) for line in open("/proc/self/status", encoding="ascii"))
print(json.dumps({"questions": count, "digest": digest.hexdigest(), "peak_mib": int(status["VmHWM"].split()[0]) / 1024}))
"""


def measure(way: str, path: Path) -> dict:
    started = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-c", CHILD, way, str(path)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(process.pid, 0)  # its CPU seconds
    seconds = time.perf_counter() - started
    out, err = process.stdout.read(), process.stderr.read()
    if os.waitstatus_to_exitcode(status) != 0:
        _common.fail(f"the {way} reader failed on {path}: {err.strip().splitlines()[-1] if err.strip() else status}")
    return {**json.loads(out), "seconds": seconds, "cpu_s": usage.ru_utime + usage.ru_stime}


def main(args: argparse.Namespace) -> None:
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for size in args.sizes:
            one = write_squad(Path(folder) / f"one-{size}.json", size, None)
            many = write_squad(Path(folder) / f"many-{size}.json", size, 8)
            runs = {way: measure(way, one) for way in WAYS}
            runs["ours, articles of 8 paragraphs"] = measure("ours", many)
            if len({(run["questions"], run["digest"]) for run in runs.values()}) != 1:
                _common.fail(f"the readers disagree at {size:,} questions: {runs}")
            rows += [{"questions": size, "file_mib": one.stat().st_size / 2**20, "way": way, **run} for way, run in runs.items()]
    machine = _common.machine_description()
    print(f"machine: {machine}; {_common.command_load_and_date()}")
    print()
    print("| questions | file MiB | way | peak RSS MiB | CPU s | wall s | questions read |")
    print("|---:|---:|---|---:|---:|---:|---|")
    for row in rows:
        print(f"| {row['questions']:,} | {row['file_mib']:.1f} | {row['way']} | {row['peak_mib']:.0f} | {row['cpu_s']:.2f} | "
              f"{row['seconds']:.2f} | all, equal |")
    print(json.dumps({"benchmark": NAME, "rows": rows, "identical": True, "machine": machine}))


if __name__ == "__main__":
    main(parse_args())
