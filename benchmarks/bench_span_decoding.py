"""Span search speed: bio_mrc's banded, vectorised search vs the reference loop.

The reference is the way Hugging Face's QA example and the original BERT code
do it: per window, take the top-20 start and top-20 end logits and loop over
the 400 pairs in Python, keeping valid spans (inside the paragraph, end >=
start, length <= max_answer_length). Both run here, in the same process, on
the same random logits; the table gives seconds and the speed-up ratio, and how
often the two agree on the best span (they can differ only where the best span
uses a start or end outside the reference's top-20).

    python benchmarks/bench_span_decoding.py [--windows 10000] [--length 384]
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from bio_mrc.decoding.spans import best_spans

import _common

NAME = "span_search"


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--windows", type=int, default=10000)
    parser.add_argument("--length", type=int, default=384)
    parser.add_argument("--repeats", type=int, default=3)
    return parser.parse_args()


def reference_best_spans(start, end, mask, max_answer_length=30, n_best=20):
    best = []
    for s, e, m in zip(start, end, mask):
        starts = np.argsort(s)[-1 : -n_best - 1 : -1]
        ends = np.argsort(e)[-1 : -n_best - 1 : -1]
        candidates = []
        for i in starts:
            for j in ends:
                if not m[i] or not m[j] or j < i or j - i + 1 > max_answer_length:
                    continue
                candidates.append((s[i] + e[j], i, j))
        candidates.sort(reverse=True)
        best.append(candidates[0][1:] if candidates else (-1, -1))
    return np.array(best)


def main(args: argparse.Namespace) -> None:
    rng = np.random.default_rng(0)
    start = rng.normal(size=(args.windows, args.length)).astype(np.float32)
    end = rng.normal(size=(args.windows, args.length)).astype(np.float32)
    mask = np.zeros((args.windows, args.length), dtype=bool)
    question = rng.integers(8, 30, size=args.windows)
    for row, q in enumerate(question):
        mask[row, q + 2 : args.length - 1] = True

    timings = {}
    for name, fn in (("bio_mrc banded (numpy)", lambda: best_spans(start, end, mask, 30, 20)),
                     ("reference top-20 x top-20 loop", lambda: reference_best_spans(start, end, mask, 30, 20))):
        out, seconds = _common.best_of(fn, args.repeats)
        timings[name] = (seconds, out)
    ours = timings["bio_mrc banded (numpy)"][1]
    ref = timings["reference top-20 x top-20 loop"][1]
    agree = np.mean((ours.start[:, 0] == ref[:, 0]) & (ours.end[:, 0] == ref[:, 1]))
    base = timings["reference top-20 x top-20 loop"][0]
    print(f"span search over {args.windows} windows x {args.length} tokens, max answer length 30, n-best 20")
    machine = _common.machine_description()
    print(f"machine: {machine}; numpy {np.__version__}; {_common.command_load_and_date()}")
    print("| method | seconds (best of %d) | speed-up vs reference |" % args.repeats)
    print("|---|---|---|")
    for name, (seconds, _) in timings.items():
        print(f"| {name} | {seconds:.3f} | {base / seconds:.1f}x |")
    print(f"best span identical in {100 * agree:.2f}% of windows (ours searches every valid span, the reference only top-20 starts/ends)")
    ours_s = timings["bio_mrc banded (numpy)"][0]
    print(json.dumps({"benchmark": NAME, "reference_s": round(base, 4), "ours_s": round(ours_s, 4), "ratio": round(base / ours_s, 3),
                      "agreement": round(float(agree), 4), "machine": machine}))


if __name__ == "__main__":
    main(parse_args())
