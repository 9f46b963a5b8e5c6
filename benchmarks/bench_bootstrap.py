"""The paired bootstrap of ``bio-mrc compare``'s statistics and ``evaluate --baseline`` on SQuAD-sized inputs:
``bio_mrc.metrics.stats.paired_bootstrap`` as it is (at most ``RESAMPLES_A_CHUNK`` resamples drawn at once) against
the same function drawing as many resamples at once as ``max_chunk_elements`` allows (``RESAMPLES_A_CHUNK`` set
past any count, as the function drew before), and against ``scipy.stats.bootstrap`` (paired, percentile, vectorized)
of the mean difference. The sides run in turn, ``--repeats`` times; the intervals are checked: the two chunkings
bit-identical, scipy's (its own draws) within ``MC_ERRORS`` Monte Carlo standard errors of ours.

    python benchmarks/bench_bootstrap.py [--sizes 10570 1000] [--resamples 2000] [--repeats 5] [--seed 0]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import scipy
from scipy.stats import bootstrap, norm

from bio_mrc.metrics import stats

import _common

NAME = "paired_bootstrap"
CONFIDENCE = 0.95
# scipy's interval and ours come from independent draws: endpoints further apart than this many standard errors of
# their difference fail the run.
MC_ERRORS = 4.0
SIDES = ("ours", "one chunk", "scipy")
THP = "/sys/kernel/mm/transparent_hugepage"


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_570, 1_000], help="questions a pair of score arrays")
    parser.add_argument("--resamples", type=int, default=2_000)
    parser.add_argument("--repeats", type=int, default=5, help="timed runs of each side, in turn (after one untimed)")
    parser.add_argument("--seed", type=int, default=0, help="of the scores and of every side's draws")
    args = parser.parse_args()
    if min(args.sizes) < 2 or args.resamples < 1 or args.repeats < 1:
        _common.fail(f"--sizes are at least 2 each, --resamples and --repeats at least 1: got {args.sizes}, "
                     f"{args.resamples} and {args.repeats}")
    return args


def squad_like_scores(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Two systems' per-question F1 in [0, 1]: mostly 1 or 0, a share partial; the second agrees with the first on
    most questions (a paired comparison) and is a little weaker where it does not."""

    def draw(p_right: float, p_wrong: float) -> np.ndarray:
        kind = rng.choice(3, size=n, p=[p_right, p_wrong, 1.0 - p_right - p_wrong])
        return np.where(kind == 0, 1.0, np.where(kind == 1, 0.0, rng.uniform(0.05, 0.95, n)))

    a = draw(0.65, 0.20)
    b = np.where(rng.random(n) < 0.8, a, draw(0.60, 0.25))
    return a, b


@contextlib.contextmanager
def one_chunk() -> Iterator[None]:
    """``paired_bootstrap`` drawing as before: as many resamples at once as ``max_chunk_elements`` allows."""
    kept = stats.RESAMPLES_A_CHUNK
    stats.RESAMPLES_A_CHUNK = sys.maxsize
    try:
        yield
    finally:
        stats.RESAMPLES_A_CHUNK = kept


def chunk_rows(call) -> tuple[object, list[int]]:
    """``call()``'s value and the rows of each chunk of resamples it drew."""
    rows, draw = [], stats._resample_indices

    def counted(*args):
        for chunk, idx in draw(*args):
            rows.append(len(idx))
            yield chunk, idx

    stats._resample_indices = counted
    try:
        return call(), rows
    finally:
        stats._resample_indices = draw


def huge_pages() -> str:
    """numpy's huge-page advice on its large arrays (``NUMPY_MADVISE_HUGEPAGE``) and the kernel's transparent huge
    pages: a fresh array of hundreds of MB can wait on the kernel's compaction at its first touch."""
    advice = os.environ.get("NUMPY_MADVISE_HUGEPAGE")
    kernel = []
    for setting in ("enabled", "defrag"):
        try:
            chosen = re.search(r"\[(\w[\w+]*)\]", Path(THP, setting).read_text(encoding="ascii"))
        except OSError:
            chosen = None
        kernel.append(f"{setting} {chosen.group(1) if chosen else 'unknown'}")
    return (f"numpy huge-page advice {'off' if advice == '0' else 'on'} (NUMPY_MADVISE_HUGEPAGE "
            f"{'unset' if advice is None else advice}); transparent huge pages {', '.join(kernel)}")


def mean_difference(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    return x.mean(axis=axis) - y.mean(axis=axis)


def monte_carlo_bound(d: np.ndarray, resamples: int, confidence: float = CONFIDENCE) -> float:
    """``MC_ERRORS`` standard errors of the difference of two independent percentile endpoints of ``resamples``
    draws: the resampled mean difference is about normal with sd ``std(d) / sqrt(n)``, and a ``q`` quantile of
    ``B`` draws has the standard error ``sqrt(q (1 - q) / B) / density``."""
    q = (1.0 - confidence) / 2.0
    spread = float(np.std(d)) / np.sqrt(len(d))
    one = np.sqrt(q * (1.0 - q) / resamples) / norm.pdf(norm.ppf(q)) * spread
    return MC_ERRORS * np.sqrt(2.0) * one


def sides(a: np.ndarray, b: np.ndarray, resamples: int, seed: int) -> dict:
    """Each side's call: (its interval, the CPU seconds it took) beside ``alternate``'s wall seconds."""

    def ours():
        return stats.paired_bootstrap(a, b, resamples, CONFIDENCE, seed)

    def before():
        with one_chunk():
            return ours()

    def reference():
        found = bootstrap((a, b), mean_difference, n_resamples=resamples, confidence_level=CONFIDENCE, paired=True,
                          vectorized=True, method="percentile", rng=np.random.default_rng(seed))
        return found.confidence_interval.low, found.confidence_interval.high

    def with_cpu(call):
        started = time.process_time()
        value = call()
        return value, {"cpu": time.process_time() - started}

    return {side: (lambda call=call: with_cpu(call)) for side, call in zip(SIDES, (ours, before, reference))}


def measure(n: int, args: argparse.Namespace) -> dict:
    a, b = squad_like_scores(n, np.random.default_rng(args.seed))
    calls = sides(a, b, args.resamples, args.seed)
    (result, _), ours_rows = chunk_rows(calls["ours"])  # the untimed run: each side's chunks and its interval
    (before, _), before_rows = chunk_rows(calls["one chunk"])
    (low, high), _ = calls["scipy"]()
    if before != result:
        _common.fail(f"{n} questions: the chunkings disagree: {before} and {result}")
    bound = monte_carlo_bound(a - b, args.resamples)
    apart = max(abs(low - result.ci_low), abs(high - result.ci_high))
    if apart > bound:
        _common.fail(f"{n} questions: scipy's interval [{low}, {high}] is {apart:.2e} from ours "
                     f"[{result.ci_low}, {result.ci_high}], past {MC_ERRORS:g} Monte Carlo errors ({bound:.2e})")
    runs = []
    medians, last = _common.alternate(calls, args.repeats, after_repeat=lambda repeat, latest: runs.append(latest))
    if not last["ours"] == last["one chunk"] == result:
        _common.fail(f"{n} questions: a timed run's interval differs from the untimed run's")
    spread = {side: {kind: [min(run[side][kind] for run in runs), max(run[side][kind] for run in runs)]
                     for kind in ("total", "cpu")} for side in SIDES}
    return {"questions": n, "resamples": args.resamples, "chunk_rows": {"ours": sorted(set(ours_rows)),
            "one chunk": before_rows}, "interval": [result.ci_low, result.ci_high], "scipy_interval": [low, high],
            "scipy_apart": apart, "bound": bound, "median": medians, "range": spread,
            "wall_runs": {side: [run[side]["total"] for run in runs] for side in SIDES}}


def print_table(rows: list[dict]) -> None:
    print("| questions | side | resamples a chunk | wall s, median (min–max) | CPU s, median (min–max) | "
          "/ ours (wall) | 95% interval |")
    print("|---:|---|---|---:|---:|---:|---|")
    for row in rows:
        ours = row["median"]["ours"]["total"]
        chunks = {"ours": f"{max(row['chunk_rows']['ours'])}", "one chunk": " + ".join(map(str, row["chunk_rows"]["one chunk"])),
                  "scipy": "all at once"}
        for side in SIDES:
            wall, cpu, spread = row["median"][side]["total"], row["median"][side]["cpu"], row["range"][side]
            interval = ("[%.6f, %.6f]" % tuple(row["interval"]) + (" bit-identical" if side == "one chunk" else "")
                        if side != "scipy" else "[%.6f, %.6f], %.1e from ours" % (*row["scipy_interval"], row["scipy_apart"]))
            print(f"| {row['questions']:,} | {side} | {chunks[side]} | {wall:.3f} ({spread['total'][0]:.3f}–"
                  f"{spread['total'][1]:.3f}) | {cpu:.3f} ({spread['cpu'][0]:.3f}–{spread['cpu'][1]:.3f}) | "
                  f"{wall / ours:.2f}x | {interval} |")


def main(args: argparse.Namespace) -> None:
    rows = [measure(n, args) for n in args.sizes]
    machine = _common.machine_description()
    print(f"{args.resamples:,} resamples, seed {args.seed}, {args.repeats} repeats of each side in turn after one "
          f"untimed; scipy within {MC_ERRORS:g} Monte Carlo errors of ours")
    print(f"machine: {machine}; numpy {np.__version__}, scipy {scipy.__version__}; {huge_pages()}; "
          f"{_common.command_load_and_date()}")
    print()
    print_table(rows)
    print(json.dumps({"benchmark": NAME, "rows": rows, "identical": True, "huge_pages": huge_pages(), "machine": machine}))


if __name__ == "__main__":
    main(parse_args())
