"""The pipeline's ``align_to_words`` on a long document's multi-span answer: each widened part checked against the
characters and the parts kept (``bio_mrc.inference.pipeline.word_aligned``) against each checked against every part
kept before it (the reference, the check before, a copy here), the parts kept checked equal.

Each size is a context of that many characters of random words, with a part of one word every ``--every`` characters
(a BIO answer listing every name of a long document), listed in a random order as probabilities order them, and a
piece of a word beside each tenth part, which widens onto it and is dropped. Both sides widen every part alike.

    python benchmarks/bench_align_to_words.py [--sizes 100000 1000000 5000000] [--every 400]
"""

from __future__ import annotations

import argparse
import json
import random
from dataclasses import replace

from bio_mrc.answer_text import trimmed_span
from bio_mrc.inference.pipeline import _own_word, _word_character, word_aligned
from bio_mrc.types import AnswerSpan, Prediction

import _common

NAME = "align_to_words"


def _one_word(left: str, right: str) -> bool:
    """Whether two neighbouring characters are of one word, as ``align_to_words`` reads them: the previous way's test."""
    return not (_own_word(left) or _own_word(right)) and _word_character(left) and _word_character(right)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000, 5_000_000],
                        help="characters of the context at each size")
    parser.add_argument("--every", type=int, default=400, help="characters of context a part of the answer")
    args = parser.parse_args()
    if any(size < 1 for size in args.sizes) or args.every < 20:
        _common.fail(f"--sizes are counts of characters, at least 1 each, and --every at least 20, got {args.sizes} and {args.every}")
    return args


def reference(prediction: Prediction, context: str) -> Prediction:
    """Each widened part checked against every part kept before it, for overlap and for being one of them."""
    spans: list[AnswerSpan] = []
    for span in prediction.spans:
        start, end = span.start, span.end
        while start > 0 and _one_word(context[start - 1], context[start]):
            start -= 1
        while end < len(context) and _one_word(context[end - 1], context[end]):
            end += 1
        start, end = trimmed_span(context, start, end)
        if any(start < kept.end and kept.start < end for kept in spans):
            continue
        if all((start, end) != (kept.start, kept.end) for kept in spans):
            spans.append(replace(span, text=context[start:end], start=start, end=end))
    return replace(prediction, spans=spans)


def long_answer(size: int, every: int, rng: random.Random) -> tuple[str, Prediction]:
    """A context of ``size`` characters of words and its answer: a word every ``every`` characters, in random order."""
    words, length = [], 0
    while length < size:
        words.append("".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(2, 9))))
        length += len(words[-1]) + 1
    context = " ".join(words)[:size]
    spans, start = [], 0
    for word in words:
        if start // every != (start + len(word) + 1) // every and start + len(word) <= len(context):
            spans.append(AnswerSpan(word, start, start + len(word), 0.0, rng.random()))
            if len(spans) % 10 == 0 and len(word) > 2:  # a piece of the same word: widened onto it
                spans.append(AnswerSpan(word[1:], start + 1, start + len(word), 0.0, rng.random()))
        start += len(word) + 1
    rng.shuffle(spans)
    return context, Prediction("q", spans)


def main(args: argparse.Namespace) -> None:
    rows = []
    rng = random.Random(0)
    for size in args.sizes:
        context, answer = long_answer(size, args.every, rng)
        ours, ours_s = _common.best_of(lambda a=answer, c=context: word_aligned(a, c, multi_span=True), 3)
        theirs, reference_s = _common.timed(lambda a=answer, c=context: reference(a, c))
        if ours != theirs:
            _common.fail(f"the parts kept differ at {size:,} characters")
        rows.append({"characters": size, "parts": len(answer.spans), "kept": len(ours.spans), "reference_s": reference_s,
                     "ours_s": ours_s, "time_ratio": reference_s / ours_s})
    machine = _common.machine_description()
    print(f"machine: {machine}; {_common.command_load_and_date()}")
    print()
    print("| context characters | parts | parts kept | reference s | ours s | time ratio | parts |")
    print("|---:|---:|---:|---:|---:|---:|---|")
    for row in rows:
        print(f"| {row['characters']:,} | {row['parts']:,} | {row['kept']:,} | {row['reference_s']:.2f} | "
              f"{row['ours_s']:.3f} | {row['time_ratio']:.0f}x | equal |")
    print(json.dumps({"benchmark": NAME, "rows": rows, "identical": True, "machine": machine}))


if __name__ == "__main__":
    main(parse_args())
