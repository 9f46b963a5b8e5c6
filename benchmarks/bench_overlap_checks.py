"""Overlap checks over many spans: the package's marked characters against each span checked against every span kept
before it (the reference), at growing sizes, results checked equal.

Three steps where an input the limits allow holds hundreds of thousands of spans: the other mentions of a training
answer's text (``with_every_mention``: "a" in a long context), the parts of a multi-span answer kept apart
(``apart``: a sure tagger's answer holding every mention of a name), and a long n-best kept apart
(``nbest_multi_span``: ``n_best`` has no upper bound). Each size doubles the last; a time ratio that doubles with it
is the reference's quadratic cost against the package's linear one.

    python benchmarks/bench_overlap_checks.py [--sizes 2000 4000 8000]
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from typing import Any, Callable

from bio_mrc.answer_text import mentions, with_every_mention
from bio_mrc.decoding import nbest_spans
from bio_mrc.types import AnswerSpan, Prediction

import _common

NAME = "overlap_checks"


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[2000, 4000, 8000], help="spans at each size")
    args = parser.parse_args()
    if any(size < 1 for size in args.sizes):
        _common.fail(f"--sizes are counts of spans, at least 1 each, got {args.sizes}")
    return args


def _disjoint(span: tuple[int, int], others: list[tuple[int, int]]) -> bool:
    return all(span[1] <= start or span[0] >= end for start, end in others)


def every_mention_reference(context: str, spans: tuple[tuple[int, int], ...]) -> tuple[tuple[int, int], ...]:
    """``with_every_mention`` with each mention checked against every span chosen before it."""
    chosen, extra = list(spans), []
    for text in sorted({context[s:e] for s, e in spans}, key=len, reverse=True):
        for found in mentions(context, text):
            if _disjoint(found, chosen + extra):
                extra.append(found)
    return (*chosen, *sorted(extra))


def apart_reference(spans: list[AnswerSpan]) -> list[AnswerSpan]:
    kept: list[AnswerSpan] = []
    for span in spans:
        if _disjoint((span.start, span.end), [(k.start, k.end) for k in kept]):
            kept.append(span)
    return kept


def nbest_reference(prediction: Prediction) -> list[AnswerSpan]:
    kept: list[AnswerSpan] = []
    for span, p in nbest_spans._answers_by_text(prediction.spans):
        if _disjoint((span.start, span.end), [(k.start, k.end) for k in kept]):
            kept.append(replace(span, score=p, probability=p))
    return kept


def cases(size: int) -> dict[str, tuple[Callable[[], Any], Callable[[], Any]]]:
    """Each step at ``size`` spans: (the package's call, the reference's)."""
    context = "a b " * size
    names = [AnswerSpan("bob", 6 * i, 6 * i + 3, 1.0, 0.9) for i in range(size)] + [AnswerSpan("ob", 7, 9, 1.0, 0.9)]
    nbest = Prediction("q", [AnswerSpan(f"w{i}", 4 * i, 4 * i + 3, -i * 1e-4) for i in range(size)])
    return {
        "every mention of a training answer": (lambda: with_every_mention(context, ((4, 5),)),
                                               lambda: every_mention_reference(context, ((4, 5),))),
        "a multi-span answer's parts kept apart": (lambda: nbest_spans.apart(names), lambda: apart_reference(names)),
        "a long n-best kept apart": (lambda: nbest_spans.nbest_multi_span([nbest], 0.0)[0].spans,
                                     lambda: nbest_reference(nbest)),
    }


def main(args: argparse.Namespace) -> None:
    rows = []
    for size in args.sizes:
        for step, (ours, reference) in cases(size).items():
            ours_result, ours_s = _common.best_of(ours, 3)  # the package's step is short: the best of three
            reference_result, reference_s = _common.timed(reference)
            assert list(ours_result) == list(reference_result), f"{step} at {size}: the results differ"
            rows.append({"step": step, "spans": size, "reference_s": round(reference_s, 3), "ours_s": round(ours_s, 3),
                         "time_ratio": round(reference_s / max(ours_s, 1e-9), 1)})
    machine = _common.machine_description()
    print(f"machine: {machine}; {_common.command_load_and_date()}")
    print()
    print("| step | spans | reference s | ours s | time ratio | results |")
    print("|---|---:|---:|---:|---:|---|")
    for row in rows:
        print(f"| {row['step']} | {row['spans']:,} | {row['reference_s']:.3f} | {row['ours_s']:.3f} | {row['time_ratio']:.1f}x | equal |")
    print(json.dumps({"benchmark": NAME, "rows": rows, "identical": True, "machine": machine}))


if __name__ == "__main__":
    main(parse_args())
