"""Training and answering with a model's freed blocks kept for reuse (:mod:`bio_mrc.freed_memory`, what ``train``,
``predict``, ``tune`` and ``compare`` do on glibc) against glibc's own malloc, in the same run.

Each measurement is a fresh ``bio-mrc`` process: ``train`` on the first ``--train-questions`` SQuAD v1.1 training
questions, then ``predict`` on the first ``--predict-questions`` dev questions with the model the first training wrote;
the two ways alternate, ``--rounds`` times, after one run of each command that warms the caches both read (the windows,
the precision probe). glibc's own: the command under ``GLIBC_TUNABLES=glibc.malloc.perturb=0``, a malloc setting of
the user's, which the command leaves standing, that changes nothing (0 is the tunable's default). The table gives each
way's median wall seconds, CPU seconds in the process and in the kernel, minor page faults and peak resident memory
(from ``os.wait4``), and ours over glibc's own.

    python benchmarks/bench_freed_memory.py
    python benchmarks/bench_freed_memory.py --train-questions 400 --predict-questions 1000 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import command_load_and_date, data_root, fail, machine_description, require_data

WAYS = {"kept": {}, "glibc's own": {"GLIBC_TUNABLES": "glibc.malloc.perturb=0"}}
WINDOWS = ["--max-seq-length", "256", "--doc-stride", "96"]  # the main job's windows and batches
FIELDS = ("wall_s", "user_s", "system_s", "minor_faults", "max_rss_mib")


def run(argv: list[str], variables: dict[str, str], log: Path) -> dict[str, float]:
    """One ``bio-mrc`` process: its wall seconds and resource use, read from ``os.wait4``."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k != "GLIBC_TUNABLES"}
    started = time.perf_counter()
    with log.open("wb") as output:
        process = subprocess.Popen([sys.executable, "-m", "bio_mrc", *argv], env={**environment, **variables}, stdout=output, stderr=output)
        _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        fail(f"bio-mrc {argv[0]} exited {process.returncode}; its output: {log}")
    return {"wall_s": time.perf_counter() - started, "user_s": usage.ru_utime, "system_s": usage.ru_stime,
            "minor_faults": usage.ru_minflt, "max_rss_mib": usage.ru_maxrss / 1024}


def commands(args: argparse.Namespace, folder: Path) -> dict[str, list[str]]:
    squad = data_root(args) / "squad-v1.1"
    train = ["train", "--train", str(require_data(squad / "train.json")), "--limit", str(args.train_questions),
             "--output-dir", str(folder / "model"), "--batch-size", "16", *WINDOWS]
    predict = ["predict", "--model", str(folder / "first-model"), "--data", str(require_data(squad / "dev.json")),
               "--limit", str(args.predict_questions), "--output", str(folder / "predictions.json")]
    return {"train": train, "predict": predict}


def measure(args: argparse.Namespace, folder: Path) -> dict[str, dict[str, list[dict[str, float]]]]:
    argvs = commands(args, folder)
    results: dict[str, dict[str, list[dict[str, float]]]] = {name: {way: [] for way in WAYS} for name in argvs}
    for name, argv in argvs.items():  # the warm-up runs: the caches filled, the model the predictions read
        run(argv, {}, folder / f"{name}-warm-up.log")
        if name == "train":
            (folder / "model").rename(folder / "first-model")
    for round_ in range(args.rounds):
        for name, argv in argvs.items():
            for way, variables in WAYS.items():
                results[name][way].append(run(argv, variables, folder / f"{name}-{round_}.log"))
                shutil.rmtree(folder / "model", ignore_errors=True)  # a new model, not an earlier one's resume
    return results


def table(results: dict[str, dict[str, list[dict[str, float]]]]) -> tuple[list[str], dict]:
    lines = ["| command | way | " + " | ".join(FIELDS) + " |", "|---|---|" + "---|" * len(FIELDS)]
    summary: dict = {}
    for name, ways in results.items():
        medians = {way: {f: statistics.median(r[f] for r in runs) for f in FIELDS} for way, runs in ways.items()}
        summary[name] = {"median": medians, "runs": ways,
                         "ours_over_glibcs_own": {f: medians["kept"][f] / medians["glibc's own"][f] for f in FIELDS}}
        for way, values in medians.items():
            lines.append(f"| {name} | {way} | " + " | ".join(f"{values[f]:,.2f}" for f in FIELDS) + " |")
        lines.append(f"| {name} | kept / glibc's own | " + " | ".join(f"{summary[name]['ours_over_glibcs_own'][f]:.3f}x"
                                                                     for f in FIELDS) + " |")
    return lines, summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--data-dir", default=None,
                        help="the folder holding squad-v1.1/ (default: $BIO_MRC_DATA, else ../shared/data beside the repository)")
    parser.add_argument("--train-questions", type=int, default=400)
    parser.add_argument("--predict-questions", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3, help="runs of each way, alternating; the median counts")
    args = parser.parse_args()
    print(f"machine: {machine_description()}; {command_load_and_date()}")
    with tempfile.TemporaryDirectory(prefix="bench-freed-memory-") as scratch:
        os.environ["BIO_MRC_CACHE_DIR"] = str(Path(scratch) / "cache")  # this run's caches, filled by the warm-ups
        lines, summary = table(measure(args, Path(scratch)))
    print("\n".join(lines))
    print(json.dumps({"benchmark": "freed_memory", "machine": machine_description(), "rounds": args.rounds,
                      "train_questions": args.train_questions, "predict_questions": args.predict_questions, **summary}))


if __name__ == "__main__":
    main()
