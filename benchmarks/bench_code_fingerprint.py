"""The code fingerprint of a cache (what the comparison's cells and the cached windows depend on in the package's
code): the package's, each source text parsed once a process, against the reference, each source parsed for every
fingerprint (as before; a process's first fingerprint still does), both over this checkout's package, the sources
and the fingerprints checked equal. A later fingerprint (another cache's roots, a copy of the package, a test's
changed sources) reads the parsed imports of the texts it has seen.

    python benchmarks/bench_code_fingerprint.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from bio_mrc import code_fingerprint
from bio_mrc.code_fingerprint import source_closure, sources_digest

import _common

NAME = "code_fingerprint"
ROOTS = {"the comparison's cells": ("bio_mrc.harness.scoring",), "cached windows": ("bio_mrc.features.windows",)}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5, help="timed runs of each way, the fastest kept")
    args = parser.parse_args()
    if args.repeats < 1:
        _common.fail(f"--repeats must be at least 1, got {args.repeats}")
    return args


def ours(roots: tuple[str, ...]) -> tuple[list[Path], str]:
    return source_closure(roots), sources_digest(roots)


def reference(roots: tuple[str, ...]) -> tuple[list[Path], str]:
    """Every source parsed, as each fingerprint did before and a process's first one still does."""
    code_fingerprint._imports_in.cache_clear()
    return ours(roots)


def main(args: argparse.Namespace) -> None:
    rows = []
    for name, roots in ROOTS.items():
        theirs, reference_s = _common.best_of(lambda roots=roots: reference(roots), args.repeats)
        later, later_s = _common.best_of(lambda roots=roots: ours(roots), args.repeats)
        if theirs != later:
            _common.fail(f"the fingerprints of {name} disagree: {theirs[1]} and {later[1]}")
        rows.append({"roots": name, "sources": len(theirs[0]), "reference_s": reference_s, "later_s": later_s,
                     "time_ratio": reference_s / later_s})
    machine = _common.machine_description()
    print(f"machine: {machine}; {_common.command_load_and_date()}")
    print()
    print("| fingerprint of | sources | reference s | ours, a later fingerprint s | time ratio | results |")
    print("|---|---:|---:|---:|---:|---|")
    for row in rows:
        print(f"| {row['roots']} | {row['sources']} | {row['reference_s']:.3f} | {row['later_s']:.3f} | "
              f"{row['time_ratio']:.1f}x | equal |")
    print(json.dumps({"benchmark": NAME, "rows": rows, "identical": True, "machine": machine}))


if __name__ == "__main__":
    main(parse_args())
