"""Decoding and tuning with one long document among short questions: questions merged in groups of like length
against every question padded to the longest (the way before), peak memory and time, answers checked equal.

The BIO and joint decodings merge each question's windows into one row of tags; merged all at once, every row is
as long as the longest question's. Here ``--short`` questions of ``--short-tokens`` tokens and one of
``--long-tokens`` (random logits of every head, in windows of ``--window`` tokens) are decoded by the BIO and the
joint decodings with ``multi_span``, and the BIO length prior is tuned on them, once with the package's groups
(``DECODE_TOKEN_SLOTS``) and once with one group for all (the reference).
Peak memory is ``tracemalloc``'s (numpy reports its arrays to it), each step on its own.

    python benchmarks/bench_decode_memory.py [--short 1000] [--short-tokens 150] [--long-tokens 20000]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import time
import tracemalloc
from typing import Any, Callable, Iterator

import numpy as np

import bio_mrc.decoding.postprocess as postprocess
from bio_mrc.decoding.window_outputs import WindowOutputs
from bio_mrc.decoding.postprocess import DecodeConfig, decode
from bio_mrc.inference.tuning import tune_bio_length_prior
from bio_mrc.types import Example

import _common

NAME = "decode_memory"
PRIOR_GRID = (0.5, 1.0)  # two grid values: the cost is a merge and a decoding per value


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--short", type=int, default=1000, help="short questions")
    parser.add_argument("--short-tokens", type=int, default=150, help="context tokens of each short question")
    parser.add_argument("--long-tokens", type=int, default=20_000, help="context tokens of the one long question")
    parser.add_argument("--window", type=int, default=256, help="tokens a window (the main job's)")
    parser.add_argument("--stride", type=int, default=96, help="tokens consecutive windows share")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if not 0 <= args.stride < args.window:
        _common.fail(f"--stride must be at least 0 and less than --window ({args.window}), got {args.stride}")
    for option in ("short", "short_tokens", "long_tokens"):
        if getattr(args, option) < 1:
            _common.fail(f"--{option.replace('_', '-')} must be at least 1, got {getattr(args, option)}")
    return args


def synthetic_outputs(lengths: list[int], window: int, stride: int, seed: int) -> tuple[WindowOutputs, list[Example]]:
    """Each question's context of ``n`` words (``w00 ``: 4 characters, a token each) in windows of ``window`` tokens,
    consecutive windows sharing ``stride`` tokens, as the package cuts a context; random logits of every head; a gold
    answer of the first two words (the length prior is tuned on answerable questions)."""
    rng, step = np.random.default_rng(seed), window - stride
    first_tokens = [list(range(0, max(n - stride, 1), step)) for n in lengths]
    index = np.repeat(np.arange(len(lengths)), [len(firsts) for firsts in first_tokens])
    tokens = np.concatenate([firsts for firsts in first_tokens])[:, None] + np.arange(window)[None, :]
    inside = tokens < np.repeat(lengths, [len(firsts) for firsts in first_tokens])[:, None]
    offsets = np.where(inside[..., None], np.stack([tokens * 4, tokens * 4 + 3], axis=-1), -1)
    examples = []
    for i, n in enumerate(lengths):
        context = "".join(f"w{k % 100:02d} " for k in range(n))
        examples.append(Example(str(i), "q", context, [((0, 7),)]))
    logits = {name: rng.normal(size=(len(index), window, *shape)).astype(np.float32) for name, shape in
              (("start_logits", ()), ("end_logits", ()), ("bio_logits", (3,)))}
    return WindowOutputs(index, offsets, inside, **logits), examples


@contextlib.contextmanager
def token_slots(slots: int | None) -> Iterator[None]:
    """Decode in the package's groups (None) or in one group of every question (the reference)."""
    saved = postprocess.DECODE_TOKEN_SLOTS
    postprocess.DECODE_TOKEN_SLOTS = saved if slots is None else slots
    try:
        yield
    finally:
        postprocess.DECODE_TOKEN_SLOTS = saved


def measured(call: Callable[[], Any]) -> tuple[Any, float, float]:
    """``call()``, its seconds and its peak traced memory in MiB."""
    tracemalloc.start()
    started = time.perf_counter()
    try:
        result = call()
        seconds = time.perf_counter() - started
        peak = tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()
    return result, seconds, peak


def steps(outputs: WindowOutputs, examples: list[Example]) -> dict[str, Callable[[], Any]]:
    multi = DecodeConfig(multi_span=True)
    answers = lambda predictions: [[(s.start, s.end) for s in p.spans] for p in predictions]  # noqa: E731
    return {
        "bio, multi-span": lambda: answers(decode(outputs, examples, "bio", multi)),
        "joint, multi-span": lambda: answers(decode(outputs, examples, "joint", multi)),
        "BIO length prior (2 values)": lambda: tune_bio_length_prior(outputs, examples, grid=PRIOR_GRID)[1].tolist(),
    }


def main(args: argparse.Namespace) -> None:
    lengths = [args.short_tokens] * args.short
    lengths.insert(args.short // 2, args.long_tokens)
    outputs, examples = synthetic_outputs(lengths, args.window, args.stride, args.seed)
    every_question = 1 << 62  # slots enough for any group: one group of every question
    rows = []
    for step, call in steps(outputs, examples).items():
        with token_slots(every_question):
            reference, reference_s, reference_mib = measured(call)
        with token_slots(None):
            ours, ours_s, ours_mib = measured(call)
        assert ours == reference, f"{step}: the grouped decoding answered otherwise"
        rows.append({"step": step, "reference_s": round(reference_s, 2), "ours_s": round(ours_s, 2),
                     "reference_mib": round(reference_mib, 1), "ours_mib": round(ours_mib, 1),
                     "memory_ratio": round(reference_mib / ours_mib, 1), "time_ratio": round(reference_s / ours_s, 2)})
    machine = _common.machine_description()
    print(f"{args.short:,} questions of {args.short_tokens} tokens and one of {args.long_tokens:,}, in {len(outputs.example_index):,} "
          f"windows of {args.window} (stride {args.stride}), seed {args.seed}; "
          f"groups of at most {postprocess.DECODE_TOKEN_SLOTS:,} token slots")
    print(f"machine: {machine}; numpy {np.__version__}; {_common.command_load_and_date()}")
    print()
    print("| step | one group: s, MiB | groups of like length: s, MiB | memory ratio | time ratio | answers |")
    print("|---|---:|---:|---:|---:|---|")
    for row in rows:
        print(f"| {row['step']} | {row['reference_s']:.2f} s, {row['reference_mib']:,.0f} | {row['ours_s']:.2f} s, "
              f"{row['ours_mib']:,.0f} | {row['memory_ratio']:.1f}x | {row['time_ratio']:.2f}x | equal |")
    print(json.dumps({"benchmark": NAME, "questions": len(lengths), "long_tokens": args.long_tokens, "steps": rows,
                      "identical": True, "machine": machine}))


if __name__ == "__main__":
    main(parse_args())
