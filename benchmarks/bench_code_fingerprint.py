"""The code fingerprint of a cache (what the comparison's cells and the cached windows depend on in the package's
code): the package's, each source text parsed once a process, against the reference, each source parsed every time
(the walk before), both over this checkout's package, the sets of sources and the fingerprints checked equal.

A process's first fingerprint parses every source it reaches; a later one (another cache's roots, a copy of the
package, a test's changed sources) reads the parsed imports of the texts it has seen.

    python benchmarks/bench_code_fingerprint.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
from pathlib import Path

from bio_mrc import code_fingerprint
from bio_mrc.code_fingerprint import (LATE_REFERENCE, PACKAGE, PACKAGE_DIR, _runtime_nodes, module_file, source_closure,
                                      sources_digest)

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


def _reference_imports(path: Path) -> set[str]:
    here = [PACKAGE, *path.relative_to(PACKAGE_DIR).with_suffix("").parts[:-1]]
    found = set()
    for node in _runtime_nodes(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            target = ".".join((here[: len(here) - node.level + 1] if node.level else []) + ([node.module] if node.module else []))
            found.add(target)
            found.update(f"{target}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and LATE_REFERENCE.fullmatch(node.value):
            found.add(node.value.partition(":")[0])
    return {name for name in found if name == PACKAGE or name.startswith(PACKAGE + ".")}


def reference_digest(roots: tuple[str, ...]) -> tuple[list[Path], str]:
    """The sources and fingerprint as found before: every source parsed each time."""
    seen: set[Path] = set()
    pending = [module_file(root) for root in roots]
    while pending:
        path = pending.pop()
        if path is None or path in seen:
            continue
        seen.add(path)
        parts = path.relative_to(PACKAGE_DIR).parts
        pending += [p for k in range(len(parts)) if (p := PACKAGE_DIR.joinpath(*parts[:k]) / "__init__.py").is_file()]
        pending += [module_file(name) for name in _reference_imports(path)]
    digest = hashlib.sha256()
    for path in sorted(seen):
        digest.update(path.relative_to(PACKAGE_DIR).as_posix().encode() + b"\0" + path.read_bytes())
    return sorted(seen), digest.hexdigest()[:12]


def ours(roots: tuple[str, ...]) -> tuple[list[Path], str]:
    return source_closure(roots), sources_digest(roots)


def first_of_a_process(roots: tuple[str, ...]) -> tuple[list[Path], str]:
    """Ours with nothing parsed yet, as in a fresh process."""
    code_fingerprint._imports_in.cache_clear()
    return ours(roots)


def main(args: argparse.Namespace) -> None:
    rows = []
    for name, roots in ROOTS.items():
        theirs, reference_s = _common.best_of(lambda roots=roots: reference_digest(roots), args.repeats)
        first, first_s = _common.best_of(lambda roots=roots: first_of_a_process(roots), args.repeats)
        later, later_s = _common.best_of(lambda roots=roots: ours(roots), args.repeats)
        if not theirs == first == later:
            _common.fail(f"the fingerprints of {name} disagree: {theirs[1]}, {first[1]} and {later[1]}")
        rows.append({"roots": name, "sources": len(theirs[0]), "reference_s": reference_s, "first_s": first_s,
                     "later_s": later_s, "first_ratio": reference_s / first_s, "later_ratio": reference_s / later_s})
    machine = _common.machine_description()
    print(f"machine: {machine}; {_common.command_load_and_date()}")
    print()
    print("| fingerprint of | sources | reference s | ours, first in a process s | ratio | ours, later s | ratio | results |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for row in rows:
        print(f"| {row['roots']} | {row['sources']} | {row['reference_s']:.3f} | {row['first_s']:.3f} | "
              f"{row['first_ratio']:.1f}x | {row['later_s']:.3f} | {row['later_ratio']:.1f}x | equal |")
    print(json.dumps({"benchmark": NAME, "rows": rows, "identical": True, "machine": machine}))


if __name__ == "__main__":
    main(parse_args())
