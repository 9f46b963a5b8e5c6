"""Peak memory of ``AnswerExtractor`` asking one question of a list of documents, at a few numbers of documents: the
package's call, which runs and decodes :attr:`~bio_mrc.inference.extract.AnswerExtractor.chunk_size` documents at a
time and keeps each chunk's ``top_k`` best spans (:class:`~bio_mrc.inference.documents.DocumentRanking`), against
every document's windows run and held at once (the call before: that chunk size made unbounded), each in a process of
its own, which reports its own peak resident memory (``VmHWM``) before and after the call, the call's wall and CPU
seconds, and its answers: their documents, texts, offsets and decisions must be equal, their scores equal to float32
rounding (a window's logits move in their last bits with the windows padded and batched beside it).

The documents are the contexts of ``bench_predict_memory.py`` (``--words`` random words each), the question its
first, and the model its tiny one (a 2-layer, H=32 BERT with a word-level vocabulary, windows of 64 tokens, trained
one epoch on 32 questions): its answers are arbitrary, its outputs as many as a real model's at that window length.
Nothing is downloaded.

    python benchmarks/bench_documents_memory.py [--documents 1000 10000] [--words 60] [--top-k 10] [--decoding auto]
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

NAME = "documents_memory"
WAYS = ("ours", "every document at once")

# Ask the question of the documents one way; print the peaks, the seconds and the answers. A ``-c`` program, so that
# the process holds only what the call needs.
CHILD = """
import json, sys, time
from bio_mrc.inference import AnswerExtractor

def peak_mib():
    status = dict(line.split(":", 1) for line in open("/proc/self/status", encoding="ascii"))
    return int(status["VmHWM"].split()[0]) / 1024

way, model, data, decoding, top_k = sys.argv[1:]
if way == "every document at once":  # the call before: every document's windows run and decoded together
    AnswerExtractor.chunk_size = 1 << 62
extractor = AnswerExtractor.from_pretrained(model, precision="fp32", device="cpu", decoding=decoding)
asked = json.loads(open(data, encoding="utf-8").read())
before, started, cpu = peak_mib(), time.perf_counter(), time.process_time()
ranked = extractor(asked["question"], asked["documents"], top_k=int(top_k))
seconds, cpu, after = time.perf_counter() - started, time.process_time() - cpu, peak_mib()
answers = [(a.document, a.text, a.start, a.end, a.abstain) for a in ranked.answers]
documents = [[(s.start, s.end) for s in p.spans] + [p.abstain] for p in ranked.documents]
scores = [a.score for a in ranked.answers] + [x for p in ranked.documents for x in (p.no_answer_score, p.confidence)
                                              if x is not None]
print(json.dumps({"before_mib": before, "peak_mib": after, "seconds": seconds, "cpu_seconds": cpu, "answers": answers,
                  "documents": documents, "scores": scores}))
"""


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--documents", type=int, nargs="+", default=[1000, 10000], help="documents of each call")
    parser.add_argument("--words", type=int, default=60, help="words of each document")
    parser.add_argument("--top-k", type=int, default=10, help="answers ranked across the documents")
    parser.add_argument("--decoding", choices=("auto", "span", "bio", "joint"), default="auto", help="the extractor's decoding")
    args = parser.parse_args()
    if any(n < 1 for n in args.documents) or args.words < 4 or args.top_k < 1:
        _common.fail(f"--documents are at least 1 each, --words at least 4 and --top-k at least 1, got {args.documents}, "
                     f"{args.words} and {args.top_k}")
    return args


def documents_file(folder: Path, documents: int, words: int) -> Path:
    """``synthetic_squad``'s contexts, one a document, and its first question, as the extractor takes them."""
    raw = json.loads(synthetic_squad(folder / f"squad-{documents}.json", 4 * documents, words).read_text(encoding="utf-8"))
    paragraphs = raw["data"][0]["paragraphs"]
    path = folder / f"asked-{documents}.json"
    path.write_text(json.dumps({"question": paragraphs[0]["qas"][0]["question"],
                                "documents": [p["context"] for p in paragraphs]}), encoding="utf-8")
    return path


def measure(way: str, model: Path, data: Path, args: argparse.Namespace) -> dict:
    command = [sys.executable, "-c", CHILD, way, str(model), str(data), args.decoding, str(args.top_k)]
    process = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    if process.returncode != 0 or not process.stdout.strip():
        _common.fail(f"the call ({way}) on {data.name} failed: {(process.stderr.strip().splitlines() or ['?'])[-1]}")
    return json.loads(process.stdout.strip().splitlines()[-1])


def compared(runs: dict[str, dict], documents: int) -> float:
    """The largest score difference between the two ways; their answers, spans and decisions must be equal."""
    ours, before = (runs[way] for way in WAYS)
    if (ours["answers"], ours["documents"]) != (before["answers"], before["documents"]) or len(ours["scores"]) != len(before["scores"]):
        _common.fail(f"the answers differ at {documents:,} documents")
    return max((abs(a - b) for a, b in zip(ours["scores"], before["scores"])), default=0.0)


def main(args: argparse.Namespace) -> None:
    rows = []
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        model = tiny_model(folder, synthetic_squad(folder / "train.json", 32, args.words, seed=1))
        for documents in args.documents:
            data = documents_file(folder, documents, args.words)
            runs = {way: measure(way, model, data, args) for way in WAYS}
            difference = compared(runs, documents)
            rows += [{"documents": documents, "way": way, "score_difference": difference,
                      **{key: run[key] for key in ("before_mib", "peak_mib", "seconds", "cpu_seconds")}}
                     for way, run in runs.items()]
    machine = _common.machine_description()
    print(f"machine: {machine}; {_common.command_load_and_date()}")
    print()
    print("| documents | way | peak MiB before the call | peak MiB | at once / ours | call CPU s | largest score difference |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    peaks = {(row["documents"], row["way"]): row["peak_mib"] for row in rows}
    for row in rows:
        ratio = peaks[(row["documents"], WAYS[1])] / row["peak_mib"]
        print(f"| {row['documents']:,} | {row['way']} | {row['before_mib']:.0f} | {row['peak_mib']:.0f} | {ratio:.2f} | "
              f"{row['cpu_seconds']:.1f} | {row['score_difference']:.1e} |")
    print(json.dumps({"benchmark": NAME, "rows": rows, "answers_equal": True, "machine": machine}))


if __name__ == "__main__":
    main(parse_args())
