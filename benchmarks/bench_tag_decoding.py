"""The BIO decodings' recurrences over token positions (the most probable tag sequence's semi-Markov Viterbi search
and the forward–backward of the tag lattice): a numpy step over every row at each position, every candidate span
compared (the way before, a copy here), against ``bio_mrc.decoding.tag_recurrences`` (a few rows a row at a time on
Python floats, many rows a step at a time with fewer numpy calls), decoding the same model outputs.

A tiny random model (2 layers, H=32, windows of 384, stride 128, untrained heads; a vocabulary of 2,000 random words,
a token each) answers one question over a context of each of ``--sizes`` characters of those words, and
``--questions`` questions over contexts of about 150 words each (a chunk of ``bio-mrc predict``). The windows' outputs
are made once, untimed; ``AnswerExtractor.predict`` then decodes them, BIO and joint with ``multi_span`` (the decodings
that read the tag distribution), the ways in turn (``--repeats`` times, the median kept), and the predictions are
checked equal (every field, scores and probabilities to the last bit). Reported: the decoding's seconds, and the
seconds of the Viterbi search and the lattice's messages within it.

    python benchmarks/bench_tag_decoding.py [--sizes 100000 1000000 5000000] [--questions 1000] [--repeats 3]
        [--long-repeats 1]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import tempfile
from pathlib import Path
from typing import Iterator

import numpy as np

import bio_mrc.decoding.bio_spans as bio_spans
import bio_mrc.decoding.postprocess as postprocess
from bio_mrc.decoding.bio_spans import TagSpans, tag_gains
from bio_mrc.tags import TAG_B, TAG_I, TAG_O

import _common

NAME = "tag_decoding"
DECODINGS = ("bio", "joint")
LONG = 1_000_000  # characters of a context from which --long-repeats applies


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000, 5_000_000],
                        help="characters of the one long context at each size")
    parser.add_argument("--questions", type=int, default=1000, help="short questions decoded together (0: none)")
    parser.add_argument("--words", type=int, default=150, help="words of each short question's context")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each way in turn, the median kept")
    parser.add_argument("--long-repeats", type=int, default=1,
                        help=f"runs of each way over a context of {LONG:,} characters or more (the step loops take 10-50 s there)")
    args = parser.parse_args()
    if any(size < 1000 for size in args.sizes) or args.questions < 0 or min(args.words, args.repeats, args.long_repeats) < 1:
        _common.fail(f"--sizes are at least 1000 characters each, --questions 0 or more, --words, --repeats and --long-repeats "
                     f"at least 1, got {args.sizes}, {args.questions}, {args.words}, {args.repeats} and {args.long_repeats}")
    return args


# ---------------------------------------------------------------------------- the way before, a copy


def step_likeliest_tag_spans(log_probs: np.ndarray, mask: np.ndarray, max_span_length: int) -> TagSpans:
    """The Viterbi search a numpy step over every row at each position, every candidate compared, and its trace."""
    mask = np.asarray(mask, dtype=bool)
    n, length = mask.shape
    begin, inside = tag_gains(log_probs, mask)
    cumulative = np.cumsum(np.where(mask, inside, 0.0), axis=1)
    open_at = begin - cumulative
    positions = np.arange(length)
    run_start = np.maximum.accumulate(np.where(mask & ~np.pad(mask, ((0, 0), (1, 0)))[:, :-1], positions, 0), axis=1)
    width = max(1, min(max_span_length, length))
    best, back = np.zeros((n, length + 1)), np.zeros((n, length + 1), dtype=np.int64)
    lengths = np.arange(1, width + 1)
    for p in range(1, length + 1):
        starts = p - lengths
        valid = (starts >= 0)[None, :] & (starts[None, :] >= run_start[:, [p - 1]]) & mask[:, [p - 1]]
        safe = np.maximum(starts, 0)
        candidate = np.where(valid, best[:, safe] + open_at[:, safe] + cumulative[:, [p - 1]], -np.inf)
        k = candidate.argmax(axis=1)
        take = candidate[np.arange(n), k] > best[:, p - 1]
        best[:, p] = np.where(take, candidate[np.arange(n), k], best[:, p - 1])
        back[:, p] = np.where(take, k + 1, 0)
    rows_all, position, found = np.arange(n), np.full(n, length), []
    while (position > 0).any():
        step = back[rows_all, position]
        ends_span = (step > 0) & (position > 0)
        found.append((rows_all[ends_span], (position - step)[ends_span], (position - 1)[ends_span]))
        position = np.maximum(position - np.maximum(step, 1), 0)
    rows, starts, ends = (np.concatenate([f[i] for f in found]).astype(np.int64) if found else np.zeros(0, np.int64) for i in range(3))
    order = np.lexsort((starts, rows))
    rows, starts, ends = rows[order], starts[order], ends[order]
    return TagSpans(rows, starts, ends, open_at[rows, starts] + cumulative[rows, ends])


def step_forward_backward(log_u: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Forward and backward log-messages a numpy step over every row at each position."""
    n, length, _ = log_u.shape
    forward, backward = np.empty_like(log_u), np.zeros_like(log_u)
    forward[:, 0] = log_u[:, 0] + np.where(np.arange(3) == TAG_I, -np.inf, 0.0)
    for t in range(1, length):
        from_any = np.logaddexp.reduce(forward[:, t - 1], axis=-1)
        forward[:, t, TAG_B] = log_u[:, t, TAG_B] + from_any
        forward[:, t, TAG_O] = log_u[:, t, TAG_O] + from_any
        forward[:, t, TAG_I] = log_u[:, t, TAG_I] + np.logaddexp(forward[:, t - 1, TAG_B], forward[:, t - 1, TAG_I])
    for t in range(length - 2, -1, -1):
        next_tag = log_u[:, t + 1] + backward[:, t + 1]
        to_any = np.logaddexp.reduce(next_tag, axis=-1)
        backward[:, t, TAG_B] = backward[:, t, TAG_I] = to_any
        backward[:, t, TAG_O] = np.logaddexp(next_tag[:, TAG_B], next_tag[:, TAG_O])
    return forward, backward, np.logaddexp.reduce(forward[:, -1], axis=-1)


class Stopwatch:
    """Seconds spent in the calls it wraps, since it was last read."""

    def __init__(self) -> None:
        self.seconds = 0.0

    def wrap(self, function):
        def timed(*args, **kwargs):
            value, seconds = _common.timed(lambda: function(*args, **kwargs))
            self.seconds += seconds
            return value
        return timed

    def read(self) -> float:
        seconds, self.seconds = self.seconds, 0.0
        return seconds


@contextlib.contextmanager
def recurrences(likeliest, forward_backward, stopwatch: Stopwatch) -> Iterator[None]:
    """The decodings with ``likeliest`` as the Viterbi search and ``forward_backward`` as the lattice's messages,
    their seconds on ``stopwatch``."""
    saved = bio_spans.likeliest_tag_spans, postprocess.likeliest_tag_spans, bio_spans.forward_backward
    bio_spans.likeliest_tag_spans = postprocess.likeliest_tag_spans = stopwatch.wrap(likeliest)
    bio_spans.forward_backward = stopwatch.wrap(forward_backward)
    try:
        yield
    finally:
        bio_spans.likeliest_tag_spans, postprocess.likeliest_tag_spans, bio_spans.forward_backward = saved


# ---------------------------------------------------------------------------- the model and the questions


def tiny_model(folder: Path, vocabulary: list[str]) -> Path:
    """A random 2-layer BERT joint model with windows of 384 (stride 128), a token a word of ``vocabulary``."""
    return _common.untrained_tiny_model(folder, ["?", *vocabulary])


def text_of(rng: random.Random, vocabulary: list[str], characters: int) -> str:
    words, length = [], 0
    while length < characters:
        words.append(rng.choice(vocabulary))
        length += len(words[-1]) + 1
    return " ".join(words)[:characters].rstrip()


def workloads(args: argparse.Namespace, vocabulary: list[str]) -> list[tuple[str, list[str], list[str]]]:
    """(label, questions, contexts): one question over each long context, and the short questions together."""
    rng = random.Random(0)
    question = lambda: " ".join(rng.choices(vocabulary, k=6)) + "?"  # noqa: E731
    found = [(f"{size:,} characters", [question()], [text_of(rng, vocabulary, size)]) for size in args.sizes]
    if args.questions:
        contexts = [" ".join(rng.choices(vocabulary, k=args.words)) for _ in range(args.questions)]
        found.append((f"{args.questions:,} questions of {args.words} words", [question() for _ in contexts], contexts))
    return found


# ---------------------------------------------------------------------------- timing


WAYS = {"step loops": (step_likeliest_tag_spans, step_forward_backward),
        "ours": (bio_spans.likeliest_tag_spans, bio_spans.forward_backward)}


def decode_both_ways(extractor, outputs, examples, decoding: str, repeats: int) -> dict[str, dict[str, float]]:
    """Each way's median seconds (``total``: the decoding; ``recurrences``: the search and the messages within it),
    the ways alternated ``repeats`` times; the predictions checked equal."""
    stopwatch = Stopwatch()

    def side(way: str):
        def run():
            with recurrences(*WAYS[way], stopwatch):
                predictions = extractor.predict(outputs, examples, multi_span=True, decoding=decoding)
            return repr(predictions), {"recurrences": stopwatch.read()}
        return run

    seconds, last = _common.alternate({way: side(way) for way in WAYS}, repeats)
    if last["ours"] != last["step loops"]:
        _common.fail(f"{decoding}: the predictions differ from the step loops'")
    return seconds


def measured_rows(args: argparse.Namespace) -> list[dict]:
    """A row of seconds per input and decoding: the median of each way's runs, total and in the recurrences."""
    from bio_mrc.inference.extract import AnswerExtractor

    rng = random.Random(1)
    vocabulary = sorted({"".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(3, 9))) for _ in range(2000)})
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        extractor = AnswerExtractor(tiny_model(Path(scratch), vocabulary), multi_span=True)
        for label, questions, contexts in workloads(args, vocabulary):
            examples, _ = extractor.examples(questions, contexts)
            outputs = extractor.trained.windows(examples)
            tokens = int(postprocess.merge_tag_log_probs(outputs, len(examples)).mask.sum())
            repeats = args.long_repeats if len(contexts) == 1 and len(contexts[0]) >= LONG else args.repeats
            for decoding in DECODINGS:
                seconds = decode_both_ways(extractor, outputs, examples, decoding, repeats)
                rows.append({"input": label, "decoding": decoding, "tokens": tokens, "runs": repeats,
                             **{f"{way.split()[0]}_{stage}_s": round(seconds[way][stage], 4)
                                for way in WAYS for stage in ("total", "recurrences")}})
                print(f"{label}, {decoding}: " + ", ".join(f"{way} {seconds[way]['total']:.2f} s" for way in WAYS), flush=True)
    return rows


def main(args: argparse.Namespace) -> None:
    rows = measured_rows(args)
    machine = _common.machine_description()
    print(f"machine: {machine}; numpy {np.__version__}; {_common.command_load_and_date()}")
    print()
    print("| input | decoding (multi-span) | merged tokens | runs | step loops: recurrences s | decoding s | "
          "ours: recurrences s | decoding s | ratio: recurrences | decoding | predictions |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for row in rows:
        before_r, before_t, ours_r, ours_t = (row[f"{way}_{stage}_s"] for way in ("step", "ours") for stage in ("recurrences", "total"))
        print(f"| {row['input']} | {row['decoding']} | {row['tokens']:,} | {row['runs']} | {before_r:.3f} | {before_t:.2f} | "
              f"{ours_r:.3f} | {ours_t:.2f} | {before_r / ours_r:.1f}x | {before_t / ours_t:.2f}x | equal |")
    print(json.dumps({"benchmark": NAME, "rows": rows, "identical": True, "machine": machine}))


if __name__ == "__main__":
    main(parse_args())
