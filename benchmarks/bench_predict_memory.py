"""Peak memory of the streaming ``bio-mrc predict`` at 10,000 and 100,000 questions, and its speed against
holding every question in memory, in one run.

Synthetic SQuAD questions (an official JSON file: contexts of ``--words`` random words from a small
vocabulary, four questions each, every answer a slice of its context) and a tiny model (a 2-layer, H=32
BERT with a word-level vocabulary, trained one epoch on 32 of the questions: its answers are arbitrary,
its cost is a real model's) are made in a temporary folder. Each measurement is its own process, so its
peak resident memory (``ru_maxrss`` of ``os.wait4``) is its own:

* **streaming**: ``python -m bio_mrc.cli predict ... --decoding span bio joint`` (chunks of 1,000 questions),
  at ``--small`` and ``--large`` questions;
* **in memory**: every question held at once, by the same library calls: ``load_squad`` (the
  whole file), ``TrainedModel.windows`` over every question, then each decoding's
  ``decode_with_thresholds`` and ``write_prediction_files``, at ``--small`` questions.

Both run fp32 on the CPU with the same options; seconds include loading the model and reading the data.
Reports peak RSS (MiB), questions/s and questions per CPU second (the fairer speed on a shared machine)
per run, and the ratios peak(large)/peak(small) (target <= 1.10) and streaming/in-memory speed at
``--small`` (target >= 0.95). Below the chunk size (1,000 questions) a run holds less than a chunk, so
compare sizes of at least a few chunks.

    python benchmarks/bench_predict_memory.py                      # 10,000 vs 100,000
    python benchmarks/bench_predict_memory.py --small 1000 --large 10000   # a smaller scale
    python benchmarks/bench_predict_memory.py --sharded --small 2000       # 2 processes x 1 thread vs 1 x 2
    python benchmarks/bench_predict_memory.py --unlabelled --decodings span   # questions without answers or ids

``--unlabelled``: the same synthetic questions as JSON Lines, labelled (``id``, ``question``, ``context``,
``answers``) and unlabelled (``question`` and ``context`` only: ids generated, no gold), each streamed by
``bio-mrc predict``; at ``--small`` questions both, and the unlabelled ones at a tenth of that too, so that
the report gives unlabelled/labelled speed (target: the same) and the unlabelled peak at ``--small`` over its
peak at a tenth (target: flat, <= 1.10).
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

import torch
from transformers import BertConfig, BertModel, BertTokenizer

from bio_mrc.data.squad import load_squad
from bio_mrc.decoding.postprocess import DecodeConfig
from bio_mrc.inference import TrainedModel, decode_with_thresholds, write_prediction_files

import _common

DECODINGS = ("span", "bio", "joint")
WINDOW_ARGS = ["--max-seq-length", "64", "--doc-stride", "24", "--max-query-length", "16"]


def synthetic_squad(path: Path, questions: int, words: int, seed: int = 0) -> Path:
    """``questions`` answerable SQuAD v1.1 questions, four to a context, written as official JSON."""
    rng = random.Random(seed)
    vocabulary = [f"w{i}" for i in range(500)]
    paragraphs = []
    for first in range(0, questions, 4):
        tokens = rng.choices(vocabulary, k=words)
        context = " ".join(tokens)
        qas = []
        for qid in range(first, min(first + 4, questions)):
            begin = rng.randrange(words - 3)
            answer = " ".join(tokens[begin : begin + rng.randint(1, 3)])
            start = len(" ".join(tokens[:begin])) + (1 if begin else 0)
            qas.append({"id": f"q{qid}", "question": " ".join(rng.choices(vocabulary, k=6)) + "?",
                        "answers": [{"text": answer, "answer_start": start}]})
        paragraphs.append({"context": context, "qas": qas})
    path.write_text(json.dumps({"version": "1.1", "data": [{"title": "synthetic", "paragraphs": paragraphs}]}))
    return path


def as_json_lines(squad: Path, path: Path, labelled: bool) -> Path:
    """The official file's questions as JSON Lines in the Hugging Face columns; without ``labelled``, no ids and no answers."""
    raw = json.loads(squad.read_text())
    with open(path, "w", encoding="utf-8") as handle:
        for paragraph in raw["data"][0]["paragraphs"]:
            for qa in paragraph["qas"]:
                row = {"question": qa["question"], "context": paragraph["context"]}
                if labelled:
                    answers = {"text": [a["text"] for a in qa["answers"]], "answer_start": [a["answer_start"] for a in qa["answers"]]}
                    row = {"id": qa["id"], **row, "answers": answers}
                handle.write(json.dumps(row) + "\n")
    return path


def tiny_model(folder: Path, train_data: Path) -> Path:
    """A tiny random BERT with a word vocabulary, trained one epoch on ``train_data`` with bio-mrc train."""
    encoder = folder / "encoder"
    vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "?", *(f"w{i}" for i in range(500))]
    tokenizer = BertTokenizer(vocab={w: i for i, w in enumerate(vocabulary)}, do_lower_case=True)
    tokenizer.save_pretrained(str(encoder))
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=len(vocabulary), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                         intermediate_size=64, max_position_embeddings=128)).save_pretrained(str(encoder))
    model = folder / "model"
    run([sys.executable, "-m", "bio_mrc.cli", "train", "--train", str(train_data), "--output-dir", str(model),
         "--encoder", str(encoder), "--heads", "span+bio", "--epochs", "1", "--batch-size", "8", *WINDOW_ARGS])
    return model


def run(command: list[str], threads: int | None = None) -> tuple[float, float, float]:
    """Run ``command`` to its end (with ``threads`` OpenMP threads per process): (seconds, CPU seconds, peak resident
    MiB). Linux's ``wait4`` counts the process with the children it waited for: a launcher's CPU seconds are its
    workers' too, and its peak is that of the largest process."""
    env = {**os.environ, **({"OMP_NUM_THREADS": str(threads)} if threads else {})}
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(command)}\n{process.stderr.read().decode()[-3000:]}")
    return seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024  # Linux: KiB


def in_memory_predict(model: str, data: str, output: str) -> None:
    """Prediction with every question, window and answer held at once."""
    examples = load_squad(data).examples
    trained = TrainedModel.load(model, precision="fp32")
    outputs = trained.windows(examples)
    config = trained.decode_config(DecodeConfig())
    for decoding in DECODINGS:
        predictions = decode_with_thresholds(outputs, examples, decoding, config, trained.thresholds)
        write_prediction_files(predictions, Path(output).with_suffix(f".{decoding}.json"))


def measure(kind: str, model: Path, data: Path, out: Path, questions: int, decodings: tuple[str, ...] = DECODINGS) -> dict:
    """One run of ``kind``: streaming, in memory, 2 processes x 1 thread or 1 process x 2 threads."""
    predict = ["-m", "bio_mrc.cli", "predict", "--model", str(model), "--data", str(data), "--output", str(out / "p.json"),
               "--decoding", *decodings, "--precision", "fp32"]
    commands = {"streaming": ([sys.executable, *predict], None),
                "in memory": ([sys.executable, __file__, "--in-memory-child", str(model), str(data), str(out / "p.json")], None),
                "1 process x 2 threads": ([sys.executable, *predict], 2),
                "1 process x 1 thread": ([sys.executable, *predict], 1),
                "2 processes x 1 thread": ([sys.executable, "-m", "torch.distributed.run", "--standalone",
                                            "--nproc_per_node=2", *predict], 1)}
    seconds, cpu, peak = run(*commands[kind])
    row = {"way": kind, "data": data.name, "questions": questions, "seconds": round(seconds, 1), "questions_per_s": round(questions / seconds, 1),
           "cpu_seconds": round(cpu, 1), "questions_per_cpu_s": round(questions / cpu, 1), "peak_rss_mib": round(peak, 1)}
    print(json.dumps(row), file=sys.stderr)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", type=int, default=10_000, help="questions of the smaller run (both ways)")
    parser.add_argument("--large", type=int, default=100_000, help="questions of the larger run (streaming only)")
    parser.add_argument("--words", type=int, default=60, help="words per context")
    parser.add_argument("--sharded", action="store_true",
                        help="instead: --small questions by 2 processes x 1 thread (torchrun) against 1 process x 2 threads "
                             "(and 1 process x 1 thread, which tells the threads' cost from the processes' gain)")
    parser.add_argument("--unlabelled", action="store_true",
                        help="instead: --small questions in JSON Lines with answers and ids against without either, and "
                             "the unlabelled ones at a tenth of --small (memory flat)")
    parser.add_argument("--decodings", nargs="+", choices=DECODINGS, default=list(DECODINGS), help="the decodings predict runs")
    parser.add_argument("--in-memory-child", nargs=3, metavar=("MODEL", "DATA", "OUTPUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.in_memory_child:
        return in_memory_predict(*args.in_memory_child)
    check_sizes(args)
    print(f"machine: {_common.machine_description()}; {_common.command_load_and_date()}", file=sys.stderr)
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        model = tiny_model(folder, synthetic_squad(folder / "train.json", 32, args.words, seed=1))
        small = synthetic_squad(folder / "small.json", args.small, args.words)
        if args.unlabelled:
            return report_unlabelled(folder, model, small, args.small, tuple(args.decodings))
        if args.sharded:
            return report_sharded([measure(kind, model, small, folder, args.small)
                                   for kind in ("1 process x 2 threads", "2 processes x 1 thread", "1 process x 1 thread")])
        large = synthetic_squad(folder / "large.json", args.large, args.words)
        runs = (("in memory", small, args.small), ("streaming", small, args.small), ("streaming", large, args.large))
        rows = [measure(kind, model, data, folder, n) for kind, data, n in runs]
    memory_ratio = rows[2]["peak_rss_mib"] / rows[1]["peak_rss_mib"]
    speed_ratio = rows[1]["questions_per_s"] / rows[0]["questions_per_s"]
    cpu_ratio = rows[1]["questions_per_cpu_s"] / rows[0]["questions_per_cpu_s"]
    print(json.dumps({"runs": rows, "machine": _common.machine_description(), "peak_large_over_small": round(memory_ratio, 3),
                      "streaming_over_in_memory_questions_per_s": round(speed_ratio, 3),
                      "streaming_over_in_memory_questions_per_cpu_s": round(cpu_ratio, 3)}, indent=2))


def check_sizes(args: argparse.Namespace) -> None:
    """Sizes that make every run hold questions, checked before the model is trained."""
    if args.words < 4:
        _common.fail(f"--words must be at least 4 (an answer is up to 3 words of its context), got {args.words}")
    smallest = 10 if args.unlabelled else 1  # --unlabelled also runs a tenth of --small
    if args.small < smallest or args.large < 1:
        _common.fail(f"--small must be at least {smallest} and --large at least 1, got {args.small} and {args.large}")


def report_unlabelled(folder: Path, model: Path, squad: Path, questions: int, decodings: tuple[str, ...]) -> None:
    """Labelled against unlabelled JSON Lines at ``questions``, and unlabelled at a tenth of them."""
    labelled = as_json_lines(squad, folder / "labelled.jsonl", labelled=True)
    unlabelled = as_json_lines(squad, folder / "unlabelled.jsonl", labelled=False)
    tenth = folder / "unlabelled-tenth.jsonl"
    tenth.write_text("".join(unlabelled.read_text().splitlines(keepends=True)[: questions // 10]))
    rows = [measure("streaming", model, data, folder, n, decodings)
            for data, n in ((labelled, questions), (unlabelled, questions), (tenth, questions // 10))]
    print(json.dumps({"runs": rows, "machine": _common.machine_description(), "decodings": list(decodings),
                      "unlabelled_over_labelled_questions_per_s": round(rows[1]["questions_per_s"] / rows[0]["questions_per_s"], 3),
                      "unlabelled_over_labelled_questions_per_cpu_s": round(rows[1]["questions_per_cpu_s"] / rows[0]["questions_per_cpu_s"], 3),
                      "unlabelled_peak_over_labelled_peak": round(rows[1]["peak_rss_mib"] / rows[0]["peak_rss_mib"], 3),
                      "unlabelled_peak_full_over_tenth": round(rows[1]["peak_rss_mib"] / rows[2]["peak_rss_mib"], 3)}, indent=2))


def report_sharded(rows: list[dict]) -> None:
    print(json.dumps({"runs": rows, "machine": _common.machine_description(),
                      "two_processes_over_one_questions_per_s": round(rows[1]["questions_per_s"] / rows[0]["questions_per_s"], 3)},
                     indent=2))


if __name__ == "__main__":
    main()
