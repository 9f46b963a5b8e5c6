"""Reading a comparison report back (``read_report``, what ``compare --cells-from`` and the report scripts do): the
CPU seconds of the call for each committed report (or the reports given), each read in a process of its own, and
with ``--old-tree`` the same reads by the package of another checkout in the same run, alternating, with a check
that both read the same values (a digest of every field, every cell's per-question arrays included).

    python benchmarks/bench_read_report.py [--reports benchmarks/reports/*/report.json*] [--repeats 3] [--old-tree DIR]
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

NAME = "read_report"

# Read one report; print the call's CPU seconds and a digest of what it read.
CHILD = """
import dataclasses, hashlib, json, sys, time
import bio_mrc
from bio_mrc.harness.earlier_report import read_report
started = time.process_time()
report = read_report(sys.argv[1])
seconds = time.process_time() - started
plain = lambda value: value.tolist() if hasattr(value, "tolist") else repr(value)
text = json.dumps(report.to_json(), sort_keys=True, default=plain)
print(json.dumps({"cpu_seconds": seconds, "digest": hashlib.sha256(text.encode()).hexdigest(), "package": bio_mrc.__file__}))
"""


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reports", nargs="+", default=None, help="report.json or report.json.xz files (default: every committed one)")
    parser.add_argument("--repeats", type=int, default=3, help="reads of each report by each package, alternating")
    parser.add_argument("--old-tree", default=None, help="another checkout whose package reads the same reports")
    args = parser.parse_args()
    _common.check_old_tree(args.old_tree)
    if args.repeats < 1:
        _common.fail(f"--repeats {args.repeats}: give at least 1")
    return args


def committed_reports() -> list[Path]:
    folder = _common.repo_path("benchmarks/reports")
    return sorted(path for pattern in ("*/report.json", "*/report.json.xz") for path in folder.glob(pattern))


def read_once(report: Path, tree: str | None) -> dict:
    """One child's read of ``report`` with the package of ``tree`` (None: this checkout)."""
    env = dict(os.environ)
    if tree:
        env["PYTHONPATH"] = os.pathsep.join([str(Path(tree).resolve()), env.get("PYTHONPATH", "")])
    process = subprocess.run([sys.executable, "-c", CHILD, str(report)], capture_output=True, text=True, env=env,
                             cwd=Path(tree).resolve() if tree else None)
    if process.returncode != 0 or not process.stdout.strip():
        _common.fail(f"reading {report} ({tree or 'this checkout'}) failed: {process.stderr.strip()[-500:]}")
    return json.loads(process.stdout.strip().splitlines()[-1])


def measure(report: Path, ways: dict[str, str | None], repeats: int) -> dict:
    """The median CPU seconds of each way's reads of ``report``, the ways alternating; the digests must agree."""
    seconds: dict[str, list[float]] = {way: [] for way in ways}
    digests = set()
    for _ in range(repeats):
        for way, tree in ways.items():
            read = read_once(report, tree)
            seconds[way].append(read["cpu_seconds"])
            digests.add(read["digest"])
    if len(digests) != 1:
        _common.fail(f"{report}: the packages read different values")
    shown = report.relative_to(_common.repo_path(".")) if report.is_relative_to(_common.repo_path(".")) else report
    return {"report": str(shown), "bytes": report.stat().st_size, **{way: statistics.median(s) for way, s in seconds.items()}}


def main(args: argparse.Namespace) -> None:
    reports = _common.report_files(args.reports, committed_reports)
    ways = _common.package_ways(args.old_tree)
    rows = [measure(report, ways, args.repeats) for report in reports]
    print(f"\nmachine: {_common.machine_description()}; {_common.command_load_and_date()}\n")
    print("| report | bytes | " + " | ".join(f"{way} CPU s" for way in ways) + (" | old / ours |" if "old" in ways else " |"))
    print("|---|---:|" + "---:|" * (len(ways) + ("old" in ways)))
    for row in rows:
        ratio = f" | {row['old'] / row['ours']:.2f} |" if "old" in ways else " |"
        print(f"| {row['report']} | {row['bytes']:,} | " + " | ".join(f"{row[way]:.3f}" for way in ways) + ratio)
    if "old" in ways:
        _common.print_old_against_ours(rows, "every report read alike")
    print(json.dumps({"benchmark": NAME, "rows": rows, "ways": list(ways), "reads_equal": True,
                      "machine": _common.machine_description()}))


if __name__ == "__main__":
    main(parse_args())
