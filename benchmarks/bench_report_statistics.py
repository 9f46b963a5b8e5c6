"""``bio-mrc compare``'s statistics on committed comparisons' cells: the wall and CPU seconds of ``summarise`` (every
contrast, interval, breakdown, AURC contrast and "always abstain" its report shows) for each report given, each in a
process of its own, and with ``--old-tree`` the same by the package of another checkout in the same run, alternating,
with a check that both give the same summary (a digest of its JSON, ``report.json``'s ``summary``). The evaluation
questions are read from the data folder; the breakdowns' lengths count words (a comparison counts its model's tokens),
alike for both packages.

    python benchmarks/bench_report_statistics.py [--reports REPORT ...] [--repeats 3] [--old-tree DIR] [--data-dir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import _common

NAME = "report_statistics"
# SQuAD v1.1 with one seed and with three, SQuAD 2.0, and a multi-span evaluation of two data sets.
DEFAULT_REPORTS = ("gpu-squad-full", "gpu-squad-full-2ep-seeds", "v2-from-reader", "gpu-multispan-reader")

# Summarise one report's cells; print the call's seconds and a digest of the summary.
CHILD = """
import dataclasses, hashlib, json, sys, time
from pathlib import Path
import numpy as np
import bio_mrc
from bio_mrc.errors import BioMrcError
from bio_mrc.harness.compare import resolve_splits
from bio_mrc.harness.config import parse_config
from bio_mrc.harness.earlier_report import read_report
from bio_mrc.harness.summary import summarise
try:
    report = read_report(sys.argv[1])
    splits = resolve_splits(parse_config(report.results.config), Path(sys.argv[2]))
except BioMrcError as error:
    sys.exit(f"error: {error}")
if splits.eval.ids != report.eval_ids:
    sys.exit(f"error: {sys.argv[1]}: its evaluation questions are not the data's (another data folder?)")
results = dataclasses.replace(report.results, eval_examples=splits.eval.examples)
answers = np.array([len(ex.answer_texts()[0][0].split()) if ex.answers else 0 for ex in results.eval_examples])
contexts = np.array([len(ex.context.split()) for ex in results.eval_examples])
wall, cpu = time.perf_counter(), time.process_time()
summary = summarise(results, answers, contexts)
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
text = json.dumps(summary.to_json(), sort_keys=True)
print(json.dumps({"seconds": wall, "cpu_seconds": cpu, "digest": hashlib.sha256(text.encode()).hexdigest(),
                  "package": bio_mrc.__file__}))
"""


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reports", nargs="+", default=None,
                        help=f"report.json or report.json.xz files (default: those of benchmarks/reports/ {', '.join(DEFAULT_REPORTS)})")
    parser.add_argument("--repeats", type=int, default=3, help="summaries of each report by each package, alternating")
    parser.add_argument("--old-tree", default=None, help="another checkout whose package summarises the same reports")
    parser.add_argument("--data-dir", default=None,
                        help="the data folder (default: $BIO_MRC_DATA, else ../shared/data beside the repository)")
    args = parser.parse_args()
    _common.check_old_tree(args.old_tree)
    if args.repeats < 1:
        _common.fail(f"--repeats {args.repeats}: give at least 1")
    args.data_dir = _common.data_root(args).resolve()
    if not args.data_dir.is_dir():
        _common.fail(f"no data folder at {args.data_dir}: {_common.DATA_HINT}")
    return args


def summarise_once(report: Path, data_dir: Path, tree: str | None) -> dict:
    """One child's summary of ``report`` with the package of ``tree`` (None: this checkout)."""
    env = dict(os.environ)
    if tree:
        env["PYTHONPATH"] = os.pathsep.join([str(Path(tree).resolve()), env.get("PYTHONPATH", "")])
    process = subprocess.run([sys.executable, "-c", CHILD, str(report), str(data_dir)], capture_output=True, text=True,
                             env=env, cwd=Path(tree).resolve() if tree else None)
    if process.returncode != 0 or not process.stdout.strip():
        _common.fail(f"summarising {report} ({tree or 'this checkout'}) failed: {process.stderr.strip()[-500:]}")
    return json.loads(process.stdout.strip().splitlines()[-1])


def measure(report: Path, data_dir: Path, ways: dict[str, str | None], repeats: int) -> dict:
    """The median seconds of each way's summaries of ``report``, the ways alternating; the digests must agree."""
    runs: dict[str, list[dict]] = {way: [] for way in ways}
    for _ in range(repeats):
        for way, tree in ways.items():
            runs[way].append(summarise_once(report, data_dir, tree))
    if len({run["digest"] for way_runs in runs.values() for run in way_runs}) != 1:
        _common.fail(f"{report}: the packages summarised different values")
    shown = report.relative_to(_common.repo_path(".")) if report.is_relative_to(_common.repo_path(".")) else report
    return {"report": str(shown), **{way: statistics.median(run["seconds"] for run in way_runs) for way, way_runs in runs.items()},
            **{f"{way}_cpu": statistics.median(run["cpu_seconds"] for run in way_runs) for way, way_runs in runs.items()}}


def default_reports() -> list[Path]:
    """The committed reports of :data:`DEFAULT_REPORTS`."""
    return [_common.repo_path(f"benchmarks/reports/{name}/report.json.xz") for name in DEFAULT_REPORTS]


def main(args: argparse.Namespace) -> None:
    reports = _common.report_files(args.reports, default_reports)
    ways = _common.package_ways(args.old_tree)
    rows = [measure(report, args.data_dir, ways, args.repeats) for report in reports]
    print(f"\nmachine: {_common.machine_description()}; {_common.command_load_and_date()}\n")
    print("| report | " + " | ".join(f"{way} s (CPU s)" for way in ways) + (" | old / ours |" if "old" in ways else " |"))
    print("|---|" + "---:|" * (len(ways) + ("old" in ways)))
    for row in rows:
        ratio = f" | {row['old'] / row['ours']:.2f} |" if "old" in ways else " |"
        print(f"| {row['report']} | " + " | ".join(f"{row[way]:.2f} ({row[f'{way}_cpu']:.2f})" for way in ways) + ratio)
    if "old" in ways:
        _common.print_old_against_ours(rows, "every summary alike")
    print(json.dumps({"benchmark": NAME, "rows": rows, "ways": list(ways), "repeats": args.repeats, "summaries_equal": True,
                      "machine": _common.machine_description()}))


if __name__ == "__main__":
    main(parse_args())
