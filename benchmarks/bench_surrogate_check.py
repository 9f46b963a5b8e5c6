"""The check for lone UTF-16 surrogate escapes in JSON text: the package's one pass in the regex engine against a loop
over every surrogate escape in Python (the reference, the check before), on a context of characters past the Basic
Multilingual Plane written as ``json.dump`` writes them (each a pair of escapes, 12 characters), results checked equal.

Each size is a context of that many characters; 5,000,000 is the most a context may hold. A second text at each size
ends with a lone high half, so both checks must read to the end and find it at the same place.

    python benchmarks/bench_surrogate_check.py [--sizes 250000 1000000 5000000]
"""

from __future__ import annotations

import argparse
import json
import re

from bio_mrc.data.json_reader import SURROGATE_ESCAPE, lone_surrogate_escape

import _common

NAME = "surrogate_check"
_HIGH, _LOW = "89abAB", "cdefCDEF"


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[250_000, 1_000_000, 5_000_000],
                        help="characters of the context at each size")
    args = parser.parse_args()
    if any(size < 1 for size in args.sizes):
        _common.fail(f"--sizes are counts of characters, at least 1 each, got {args.sizes}")
    return args


def reference(text: str) -> re.Match[str] | None:
    """Each surrogate escape looked at in Python: its backslashes counted back, its partner read beside it."""
    for hit in SURROGATE_ESCAPE.finditer(text):
        start = hit.start()
        backslashes = 0
        while start - backslashes - 1 >= 0 and text[start - backslashes - 1] == "\\":
            backslashes += 1
        if backslashes % 2:
            continue
        if text[start + 3] in _HIGH:
            follower = text[start + 6 : start + 12]
            if not (SURROGATE_ESCAPE.fullmatch(follower) and follower[3] in _LOW):
                return hit
        else:
            leader = text[max(start - 6, 0) : start]
            if not (SURROGATE_ESCAPE.fullmatch(leader) and leader[3] in _HIGH):
                return hit
    return None


def _where(hit: re.Match[str] | None) -> int | None:
    return None if hit is None else hit.start()


def main(args: argparse.Namespace) -> None:
    rows = []
    for size in args.sizes:
        paired = json.dumps({"context": "\U0001F600" * size})
        for name, text in (("pairs", paired), ("pairs, then a lone half", paired[:-2] + '\\ud83d"}')):
            ours, ours_s = _common.best_of(lambda text=text: _where(lone_surrogate_escape(text)), 3)
            theirs, reference_s = _common.timed(lambda text=text: _where(reference(text)))
            if ours != theirs:
                _common.fail(f"the checks disagree at {size:,} characters ({name}): {ours} against {theirs}")
            rows.append({"text": name, "characters": size, "json_characters": len(text), "reference_s": reference_s,
                         "ours_s": ours_s, "time_ratio": reference_s / ours_s, "found_at": ours})
    machine = _common.machine_description()
    print(f"machine: {machine}; {_common.command_load_and_date()}")
    print()
    print("| text | context characters | JSON characters | reference s | ours s | time ratio | results |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for row in rows:
        print(f"| {row['text']} | {row['characters']:,} | {row['json_characters']:,} | {row['reference_s']:.2f} | "
              f"{row['ours_s']:.2f} | {row['time_ratio']:.1f}x | equal |")
    print(json.dumps({"benchmark": NAME, "rows": rows, "identical": True, "machine": machine}))


if __name__ == "__main__":
    main(parse_args())
