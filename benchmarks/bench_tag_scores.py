"""Time ``bio_mrc.metrics.entity_scores.tag_scores`` against seqeval on random tag sequences.

Both sides compute micro precision, recall and F1 from the same lists of tag
strings; seqeval is timed with its one call that returns all three
(``precision_recall_fscore_support(average="micro")``, default mode, and the
``v1`` one with ``scheme=IOB2`` for strict mode). The results are checked equal.

    python benchmarks/bench_tag_scores.py [--sequences 20000] [--length 200] [--typed]
"""

from __future__ import annotations

import argparse
import json
import warnings

import numpy as np
from seqeval.metrics.sequence_labeling import precision_recall_fscore_support as seqeval_default
from seqeval.metrics.v1 import precision_recall_fscore_support as seqeval_scheme
from seqeval.scheme import IOB2

from bio_mrc.metrics.entity_scores import tag_scores

import _common

NAME = "tag_scores"


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sequences", type=int, default=20_000)
    parser.add_argument("--length", type=int, default=200)
    parser.add_argument("--typed", action="store_true", help="PER/LOC tags instead of bare B/I/O")
    parser.add_argument("--repeat", type=int, default=3, help="runs of tag_scores (best kept); seqeval runs once")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args()


def random_tags(n: int, length: int, typed: bool, rng: np.random.Generator) -> list[list[str]]:
    """Mostly O, with B and I (and a stray I after O now and then), like a tagger's output."""
    names = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"] if typed else ["O", "B", "I"]
    weights = np.array([0.8, 0.05, 0.05, 0.05, 0.05] if typed else [0.8, 0.08, 0.12])
    codes = rng.choice(len(names), size=(n, length), p=weights)
    table = np.array(names, dtype=object)
    return table[codes].tolist()


def main(args: argparse.Namespace) -> None:

    rng = np.random.default_rng(args.seed)
    gold = random_tags(args.sequences, args.length, args.typed, rng)
    pred = random_tags(args.sequences, args.length, args.typed, rng)
    rows = []
    for mode, strict in (("default", False), ("strict IOB2", True)):
        ours, ours_s = _common.best_of(lambda strict=strict: tag_scores(gold, pred, strict=strict), args.repeat)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if strict:
                ref, ref_s = _common.best_of(lambda: seqeval_scheme(gold, pred, average="micro", scheme=IOB2), 1)
            else:
                ref, ref_s = _common.best_of(lambda: seqeval_default(gold, pred, average="micro"), 1)
        assert all(abs(ours[k] - float(v)) <= 1e-12 for k, v in zip(("precision", "recall", "f1"), ref[:3])), (ours, ref)
        rows.append((mode, ref_s, ours_s, ours["f1"]))

    tags = "typed (PER/LOC)" if args.typed else "untyped B/I/O"
    print(f"{args.sequences:,} random sequences x {args.length} tags ({tags}), seed {args.seed}; "
          f"tag_scores best of {args.repeat}, seqeval 1 run")
    machine = _common.machine_description()
    print(f"machine: {machine}; numpy {np.__version__}; {_common.command_load_and_date()}")
    print()
    print("| mode | seqeval (s) | tag_scores (s) | speed-up | F1 (equal) |")
    print("|---|---:|---:|---:|---:|")
    for mode, ref_s, ours_s, f1 in rows:
        print(f"| {mode} | {ref_s:.2f} | {ours_s:.3f} | {ref_s / ours_s:.0f}x | {f1:.4f} |")
    print(json.dumps({"benchmark": NAME, "tags": tags, "modes": {mode: {"reference_s": round(ref_s, 3), "ours_s": round(ours_s, 4),
                      "ratio": round(ref_s / ours_s, 1)} for mode, ref_s, ours_s, _ in rows}, "identical": True, "machine": machine}))


if __name__ == "__main__":
    main(parse_args())
