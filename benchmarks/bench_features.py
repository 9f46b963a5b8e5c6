"""Feature building: bio_mrc's training windows vs the recipe's, speed, peak memory and cache reuse .

Every measurement runs in its own subprocess (this script with ``--child MODE``), so each has its own
peak RSS: the parent reads it from ``os.wait4`` (the child's ``ru_maxrss``, as
``resource.getrusage(RUSAGE_CHILDREN)`` would give for that one child). Every child imports the
same modules (torch, transformers, datasets, bio_mrc) before it starts, so their baselines match, and
reports its RSS at each stage (``VmRSS``/``VmHWM`` of ``/proc/self/status``).

The data: the SQuAD v1.1 training set, all 87,599 questions (``--limit`` to shorten), windows of
``--max-seq-length`` 384 tokens with ``--doc-stride`` 128 (the training defaults), the default
encoder's tokenizer. Both sides map their function over the questions with ``datasets.map`` at the
same ``--batch-size`` (500, ``build_features``' default, which training uses). Timed: the map
alone, and reading the JSON beside it.

THE REFERENCE (``reference_recipe.py``, shared by the benchmarks of this folder):
``reference_load_squad`` (the JSON flattened into an in-memory ``Dataset`` of questions) and
``prepare_train_features`` with ``padding="max_length"`` (every window padded to 384; start/end
targets of the first answer).

OURS: ``load_squad`` and ``bio_mrc.features.windows.build_features(examples, tokenizer,
FeatureConfig(384, 128), with_targets=True)``, as ``train_model`` builds its windows (unpadded
windows; offsets, word spans, paragraph and tag masks, span and soft BIO targets).

Cache reuse. Training builds its windows with ``build_features(..., cache_dir=default_windows_cache())``:
``datasets.map`` writes them to an Arrow file named by ``windows_fingerprint`` (the questions' content,
the tokenizer, the settings, the featurisation code) and memory-maps that file when it exists. The
script runs ours with a cache folder under ``--work-dir``, first emptied, then a second time in a
fresh process (as a rerun of ``bio-mrc train`` would), and reports both times and the cache files.
For comparison (``--cache-demo``, on by default), ``reference, file-backed``: the recipe as
``load_dataset("squad")`` runs it, on a dataset backed by an Arrow file (the questions saved once
with ``save_to_disk`` under ``--work-dir``): ``map`` writes its result next to it, keyed by the
fingerprint of the function and its arguments, and a second run in a fresh process reads it back.

Training's peak memory (``--train-steps``, 5 by default; 0 skips it): ``train_model`` on the whole
training set with the default ``TrainConfig`` (what ``bio-mrc train --train train.json`` runs; the
CLI has no step limit, so the child calls ``train_model`` itself with a ``TrainerCallback`` that
stops after N steps), with RSS recorded after reading the JSON, after the model is made, after the
windows are built, when training begins (optimizer and sampler made) and after each step; run twice,
in fresh processes with a datasets cache under ``--work-dir``: first emptied (the windows built),
then with the windows read from the cache.

    python benchmarks/bench_features.py [--limit 0] [--batch-size 500] [--train-steps 5] [--no-cache-demo]

The last line is one JSON object:
``{"benchmark": "features_train", "reference_s": ..., "ours_s": ..., "ratio": ..., "identical": ..., "machine": ...}``
(the map's seconds on each side; ratio = reference seconds / ours; identical = the same windows:
the same number, the same unpadded token ids and the same start/end targets in every window).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import datasets
import numpy as np
import transformers
from transformers import TrainerCallback

import bio_mrc.training.train
import bio_mrc.training.trainer
from bio_mrc.data.squad import load_squad
from bio_mrc.encoders import load_tokenizer, resolve_encoder
from bio_mrc.features.windows import FeatureConfig, build_features
from bio_mrc.training.train import TrainConfig, train_model
from reference_recipe import reference_load_squad, reference_train_features

import _common

NAME = "features_train"
MODES = ("reference", "ours", "reference-file-backed", "train")


def rss_mib() -> dict[str, float]:
    """This process's current and peak resident memory, MiB."""
    values = {}
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith(("VmRSS:", "VmHWM:")):
                key, value = line.split(":")
                values["now" if key == "VmRSS" else "peak"] = int(value.split()[0]) / 1024
    return values


def mib(value: float) -> str:
    return f"{value:,.0f} MiB"


# ---------------------------------------------------------------------------------------------
# Children: one measurement each, a JSON line at the end
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass
class ChildContext:
    """What every child mode uses: its options, the tokenizer and windows, and the report its stages fill."""

    args: argparse.Namespace
    limit: int | None
    report: dict[str, Any]
    tokenizer: Any
    config: Any  # FeatureConfig
    work: Path

    def stage(self, name: str, fn):
        """``fn()`` timed, with the RSS at its end, under ``name``."""
        value, self.report["stages"][name] = _common.timed(fn)
        self.report["rss"][name] = rss_mib()
        return value


def child(args: argparse.Namespace) -> None:
    datasets.disable_progress_bars()
    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    limit = args.limit or None
    report: dict[str, Any] = {"mode": args.child, "stages": {}, "rss": {"imports": rss_mib()}}
    tokenizer = load_tokenizer(resolve_encoder("default"))
    config = FeatureConfig(args.max_seq_length, args.doc_stride)
    context = ChildContext(args, limit, report, tokenizer, config, Path(args.work_dir))
    if args.child == "reference":
        reference_child(context)
    elif args.child == "ours":
        ours_child(context)
    elif args.child == "reference-file-backed":
        file_backed_child(context)
    elif args.child == "train":
        report.update(train_child(args, context.stage, report["rss"]))
    print(json.dumps(report))


def reference_child(context: ChildContext) -> None:
    args, stage, limit, tokenizer = context.args, context.stage, context.limit, context.tokenizer
    examples = stage("read JSON", lambda: reference_load_squad(args.data, limit))
    features = stage("map", lambda: reference_train_features(examples, tokenizer, args.max_seq_length, args.doc_stride, args.batch_size))
    context.report.update(windows=len(features), cache_files=len(features.cache_files), arrow_mib=features.data.nbytes / 2**20)
    if args.digest:
        write_digests(args.digest, features, padded=True)


def ours_child(context: ChildContext) -> None:
    args, stage, report, limit, tokenizer, config = (context.args, context.stage, context.report, context.limit,
                                                     context.tokenizer, context.config)
    squad = stage("read JSON", lambda: load_squad(args.data, limit=limit))
    cache = context.work / "windows-cache"  # train_model's default is default_windows_cache(), beside datasets' cache
    if args.fresh:
        shutil.rmtree(cache, ignore_errors=True)
    features = stage("map", lambda: build_features(squad.examples, tokenizer, config, with_targets=True,
                                                   batch_size=args.batch_size, cache_dir=cache))
    report.update(windows=len(features), cache_files=len(features.cache_files), arrow_mib=features.data.nbytes / 2**20,
                  column_mib={c: features.data.column(c).nbytes / 2**20 for c in features.column_names})
    if args.digest:
        write_digests(args.digest, features, padded=False)
        lengths = [len(x) for x in features["input_ids"]]
        report.update(mean_length=sum(lengths) / len(lengths), full=sum(n == args.max_seq_length for n in lengths))


def file_backed_child(context: ChildContext) -> None:
    args, stage, report, limit, tokenizer = context.args, context.stage, context.report, context.limit, context.tokenizer
    folder = context.work / f"reference-questions-{limit or 'all'}"
    if not folder.exists():
        reference_load_squad(args.data, limit).save_to_disk(str(folder))
    examples = stage("read JSON", lambda: datasets.load_from_disk(str(folder)))
    if args.fresh:
        report["removed_cache_files"] = examples.cleanup_cache_files()
    features = stage("map", lambda: reference_train_features(examples, tokenizer, args.max_seq_length, args.doc_stride, args.batch_size))
    report.update(windows=len(features), cache_files=len(features.cache_files))


def write_digests(path: str, features, padded: bool) -> None:
    """One 8-byte digest per window of its unpadded token ids and start/end targets (untimed)."""
    ids, starts, ends = features["input_ids"], features["start_positions"], features["end_positions"]
    masks = features["attention_mask"] if padded else None
    digests = []
    for i, (row, start, end) in enumerate(zip(ids, starts, ends)):
        n = sum(masks[i]) if padded else len(row)
        data = np.asarray(row[:n], dtype=np.int32).tobytes() + np.asarray([start, end], dtype=np.int32).tobytes()
        digests.append(hashlib.blake2b(data, digest_size=8).digest())
    ids_only = [hashlib.blake2b(np.asarray(row[: (sum(masks[i]) if padded else len(row))], dtype=np.int32).tobytes(),
                                digest_size=8).digest() for i, row in enumerate(ids)]
    with open(path, "w") as handle:
        json.dump({"windows": [d.hex() for d in digests], "ids": [d.hex() for d in ids_only]}, handle)


def compare_digests(reference: str, ours: str) -> dict[str, Any]:
    with open(reference) as a, open(ours) as b:
        ref, our = json.load(a), json.load(b)
    result = {"windows_reference": len(ref["ids"]), "windows_ours": len(our["ids"])}
    if len(ref["ids"]) == len(our["ids"]):
        result["ids_differ"] = sum(x != y for x, y in zip(ref["ids"], our["ids"]))
        result["targets_differ"] = sum(x != y for x, y in zip(ref["windows"], our["windows"])) - result["ids_differ"]
    else:
        result["ids_differ"] = result["targets_differ"] = None
    return result


def train_child(args: argparse.Namespace, stage, rss: dict[str, Any]) -> dict[str, Any]:
    """``train_model`` on the whole set, stopped after ``--train-steps`` steps; RSS at each stage."""
    limit = args.limit or None
    result: dict[str, Any] = {}
    marks: dict[str, float] = {}

    def timed(name, fn):  # wraps a function train_model calls, to mark its end (the package is unchanged)
        def wrapper(*a, **k):
            t = time.perf_counter()
            value = fn(*a, **k)
            marks[name] = time.perf_counter()
            result.setdefault("stage_seconds", {})[name] = marks[name] - t
            rss[name] = rss_mib()
            return value
        return wrapper

    bio_mrc.training.train.fresh_model_and_tokenizer = timed("model made", bio_mrc.training.train.fresh_model_and_tokenizer)
    bio_mrc.training.trainer.build_features = timed("windows built", bio_mrc.training.trainer.build_features)

    class Stop(TrainerCallback):
        def on_train_begin(self, a, state, control, **kwargs):
            marks["train begins"] = time.perf_counter()
            rss["train begins (optimizer, sampler)"] = rss_mib()
            dataset = getattr(kwargs.get("train_dataloader"), "dataset", None)
            if dataset is not None and hasattr(dataset, "data"):
                result["train_arrow_mib"] = dataset.data.nbytes / 2**20
                result["train_windows"] = len(dataset)

        def on_step_end(self, a, state, control, **kwargs):
            rss[f"step {state.global_step}"] = rss_mib()
            if state.global_step >= args.train_steps:
                control.should_training_stop = True

    datasets.config.HF_DATASETS_CACHE = Path(args.work_dir) / "hf-datasets-cache"  # where train_model caches its windows
    if args.fresh:
        shutil.rmtree(datasets.config.HF_DATASETS_CACHE, ignore_errors=True)
    squad = stage("read JSON", lambda: load_squad(args.data, limit=limit))
    out = tempfile.mkdtemp(prefix="bench-features-train-")
    _, result["train_model_seconds"] = _common.timed(lambda: train_model(
        squad.examples, TrainConfig(max_seq_length=args.max_seq_length, doc_stride=args.doc_stride),
        out, save_checkpoints=False, callbacks=[Stop()]))
    if "windows built" in marks and "train begins" in marks:
        result["stage_seconds"]["trainer set-up (sampler lengths, optimizer)"] = marks["train begins"] - marks["windows built"]
    shutil.rmtree(out, ignore_errors=True)
    return result


# ---------------------------------------------------------------------------------------------
# The parent: runs the children, reads their peak RSS
# ---------------------------------------------------------------------------------------------


def run_child(args: argparse.Namespace, mode: str, fresh: bool = False, digest: str | None = None) -> dict[str, Any]:
    command = [sys.executable, __file__, "--child", mode, "--data", args.data, "--limit", str(args.limit),
               "--batch-size", str(args.batch_size), "--max-seq-length", str(args.max_seq_length),
               "--doc-stride", str(args.doc_stride), "--work-dir", args.work_dir, "--train-steps", str(args.train_steps)]
    if fresh:
        command.append("--fresh")
    if digest:
        command += ["--digest", digest]
    t = time.perf_counter()
    with tempfile.TemporaryFile("w+") as err:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=err, text=True)
        stdout = process.stdout.read()
        _, status, usage = os.wait4(process.pid, 0)  # this child's own rusage: its peak RSS
        process.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        stderr = err.read()
    wall = time.perf_counter() - t
    if process.returncode != 0:
        raise SystemExit(f"child {mode} failed ({process.returncode}):\n{stderr[-4000:]}")
    report = json.loads([line for line in stdout.splitlines() if line.startswith("{")][-1])
    report["peak_rss_mib"] = usage.ru_maxrss / 1024
    report["wall"] = wall
    print(f"  {mode}{' (fresh)' if fresh else ''}: {', '.join(f'{k} {v:.2f} s' for k, v in report['stages'].items())}; "
          f"peak RSS {mib(report['peak_rss_mib'])}; process wall {wall:.1f} s", flush=True)
    return report


def parse_args() -> argparse.Namespace:
    """The options, with the data checked (a missing file ends here) and the work folder in the repository."""
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        epilog="Prints each child's stage times and peak RSS, the windows/s of both sides, the cache answer and "
               "training's memory by stage; the last line is the JSON summary.")
    _common.add_data_arguments(parser, "squad-v1.1/train.json", "SQuAD v1.1 training JSON")
    parser.add_argument("--limit", type=int, default=0, help="first N questions; 0 = all (87,599)")
    parser.add_argument("--batch-size", type=int, default=500, help="datasets.map batch size, both sides (build_features' default)")
    parser.add_argument("--max-seq-length", type=int, default=384)
    parser.add_argument("--doc-stride", type=int, default=128)
    parser.add_argument("--train-steps", type=int, default=5, help="steps of the train_model run whose peak RSS is measured (0: skip it)")
    parser.add_argument("--no-cache-demo", dest="cache_demo", action="store_false",
                        help="skip the file-backed recipe (2 more children)")
    parser.add_argument("--work-dir", default=None,
                        help="the saved questions and the caches of both sides (default: runs/bench-features in the repository)")
    parser.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    parser.add_argument("--fresh", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--digest", help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.data = _common.data_file(args, "squad-v1.1/train.json")
    args.work_dir = args.work_dir or str(_common.repo_path("runs/bench-features"))
    return args


@dataclasses.dataclass
class Children:
    """The children's reports: feature building (by the table's row name), the windows' agreement, training's memory."""

    runs: dict[str, dict[str, Any]]
    agree: dict[str, Any]
    train: dict[str, Any] | None
    train_again: dict[str, Any] | None

    @property
    def ratio(self) -> float:
        return self.runs["reference"]["stages"]["map"] / self.runs["ours"]["stages"]["map"]

    @property
    def identical(self) -> bool:
        agree = self.agree
        return agree["windows_reference"] == agree["windows_ours"] and agree["ids_differ"] == 0 and agree["targets_differ"] == 0


def run_children(args: argparse.Namespace) -> Children:
    """Every measurement, one child process each, in this order."""
    runs: dict[str, Any] = {}
    digests = {side: str(Path(args.work_dir) / f"digests-{side}.json") for side in ("reference", "ours")}
    runs["reference"] = run_child(args, "reference", digest=digests["reference"])
    runs["ours"] = run_child(args, "ours", fresh=True, digest=digests["ours"])
    runs["ours, second run"] = run_child(args, "ours")
    if args.cache_demo:
        runs["reference file-backed, first"] = run_child(args, "reference-file-backed", fresh=True)
        runs["reference file-backed, second"] = run_child(args, "reference-file-backed")
    agree = compare_digests(digests["reference"], digests["ours"])
    train = run_child(args, "train", fresh=True) if args.train_steps else None
    train_again = run_child(args, "train") if args.train_steps else None
    return Children(runs, agree, train, train_again)


def print_header(args: argparse.Namespace, versions: str) -> str:
    """What was measured, and on what; returns the machine's description (the JSON line names it)."""
    print()
    print(f"feature building, SQuAD v1.1 {Path(args.data).name}{f' (first {args.limit})' if args.limit else ''}: "
          f"max_seq_length {args.max_seq_length}, stride {args.doc_stride}, datasets.map batch size {args.batch_size}")
    machine = _common.machine_description()
    print(f"machine: {machine}; {versions}; {_common.command_load_and_date()} at the end; one run each")
    return machine


def print_runs_table(runs: dict[str, dict[str, Any]]) -> None:
    print()
    print("| run | windows | read JSON (s) | map (s) | windows/s | RSS after imports | peak RSS | in-memory Arrow table | cache files |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, r in runs.items():
        arrow = mib(r["arrow_mib"]) if "arrow_mib" in r else "memory-mapped" if r["cache_files"] else "-"
        print(f"| {name} | {r['windows']:,} | {r['stages']['read JSON']:.2f} | {r['stages']['map']:.2f} | "
              f"{r['windows'] / r['stages']['map']:,.0f} | {mib(r['rss']['imports']['now'])} | {mib(r['peak_rss_mib'])} | "
              f"{arrow} | {r['cache_files']} |")


def print_comparisons(args: argparse.Namespace, children: Children) -> None:
    """The ratio, ours' columns, whether each side's cache is reused, and the windows' agreement."""
    runs, agree = children.runs, children.agree
    ref, ours = runs["reference"], runs["ours"]
    print()
    print(f"ratio (reference map / ours): {children.ratio:.2f}x (ours' windows/s {ours['windows'] / ours['stages']['map']:,.0f} against "
          f"{ref['windows'] / ref['stages']['map']:,.0f})")
    if "column_mib" in ours:
        print("ours' columns in memory: " + ", ".join(f"{c} {v:,.0f} MiB" for c, v in sorted(ours["column_mib"].items(), key=lambda x: -x[1])))
    second = runs["ours, second run"]
    reused = bool(second["cache_files"]) and second["stages"]["map"] < 0.5 * ours["stages"]["map"]
    print(f"repeated runs: ours' second run (a fresh process) took {second['stages']['map']:.2f} s against {ours['stages']['map']:.2f} s; "
          f"its result is memory-mapped from {second['cache_files']} cache file(s): the datasets cache is "
          f"{'reused' if reused else 'NOT reused'}")
    if args.cache_demo:
        a, b = runs["reference file-backed, first"], runs["reference file-backed, second"]
        print(f"the recipe on a file-backed dataset (as load_dataset gives it): first map {a['stages']['map']:.2f} s, second "
              f"(fresh process) {b['stages']['map']:.2f} s: the cache is {'reused' if b['stages']['map'] < 0.5 * a['stages']['map'] else 'NOT reused'}")
    print(f"windows: reference {agree['windows_reference']:,}, ours {agree['windows_ours']:,}; unpadded token ids differ in "
          f"{agree['ids_differ']}, start/end targets (of windows with the same ids) in {agree['targets_differ']}; ours' mean "
          f"window {ours.get('mean_length', float('nan')):.1f} tokens, {ours.get('full', 0):,} at {args.max_seq_length}")


def print_training_memory(args: argparse.Namespace, train: dict[str, Any], train_again: dict[str, Any]) -> None:
    """train_model's peak RSS, its RSS by stage, and the rerun that reads its windows from the cache."""
    print()
    print(f"a second train_model in a fresh process (its windows from the cache): windows "
          f"{train_again.get('stage_seconds', {}).get('windows built', float('nan')):.1f} s against "
          f"{train.get('stage_seconds', {}).get('windows built', float('nan')):.1f} s, peak RSS {mib(train_again['peak_rss_mib'])}")
    print(f"train_model (default TrainConfig) on the same questions ({train.get('train_windows', '?')} windows), "
          f"stopped after {args.train_steps} steps: peak RSS "
          f"**{mib(train['peak_rss_mib'])}**; train_model {train['train_model_seconds']:.1f} s")
    print("| stage | seconds | RSS at its end | peak so far |")
    print("|---|---:|---:|---:|")
    seconds = {**train["stages"], **train.get("stage_seconds", {})}
    for name, value in train["rss"].items():
        took = f"{seconds[name]:.1f}" if name in seconds else ""
        print(f"| {name} | {took} | {mib(value['now'])} | {mib(value['peak'])} |")
    if "train_arrow_mib" in train:
        print(f"the training windows' Arrow table (after the columns train_model drops): {mib(train['train_arrow_mib'])}")
    if "trainer set-up (sampler lengths, optimizer)" in train.get("stage_seconds", {}):
        print(f"trainer set-up between the windows and the first step (the length-grouped sampler reads every row's "
              f"input_ids): {train['stage_seconds']['trainer set-up (sampler lengths, optimizer)']:.1f} s")


def main() -> None:
    args = parse_args()
    if args.child:
        child(args)
        return
    Path(args.work_dir).mkdir(parents=True, exist_ok=True)
    print(f"load average at the start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    children = run_children(args)
    machine = print_header(args, f"transformers {transformers.__version__}, datasets {datasets.__version__}")
    print_runs_table(children.runs)
    print_comparisons(args, children)
    if children.train is not None:
        print_training_memory(args, children.train, children.train_again)
    print(json.dumps({"benchmark": NAME, "reference_s": round(children.runs["reference"]["stages"]["map"], 3),
                      "ours_s": round(children.runs["ours"]["stages"]["map"], 3), "ratio": round(children.ratio, 3),
                      "identical": bool(children.identical), "machine": machine}))


if __name__ == "__main__":
    main()
