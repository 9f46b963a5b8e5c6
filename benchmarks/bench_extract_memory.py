"""Peak memory of ``AnswerExtractor`` called with a list of questions, at a few numbers of questions: the package's
call, which runs and decodes :attr:`~bio_mrc.inference.extract.AnswerExtractor.chunk_size` questions at a time (the
chunk ``bio-mrc predict`` answers), against every question's windows run and held at once (the call before: that
chunk size made unbounded), each in a process of its own, which reports its own peak resident memory (``VmHWM``)
before and after the call, the call's wall and CPU seconds, and its answers: their texts, offsets and decisions must
be equal, their scores equal to float32 rounding (a window's logits move in their last bits with the windows padded
and batched beside it).

The questions are those of ``bench_predict_memory.py`` (contexts of ``--words`` random words, four questions each)
and the model its tiny one (a 2-layer, H=32 BERT with a word-level vocabulary, windows of 64 tokens, trained one
epoch on 32 questions): its answers are arbitrary, its outputs as many as a real model's at that window length.
Nothing is downloaded.

    python benchmarks/bench_extract_memory.py [--questions 1000 4000 16000] [--words 60] [--decoding auto] [--multi-span]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import _common
import _memory
from bench_predict_memory import synthetic_squad

NAME = "extract_memory"
WAYS = ("ours", "every question at once")

# Answer the questions one way; print the peaks, the seconds and the answers. A ``-c`` program, so that the process
# holds only what the call needs.
CHILD = """
import dataclasses, json, sys
from bio_mrc.inference import AnswerExtractor
""" + _memory.MEASURED_CALL + """
way, model, data, decoding, multi_span = sys.argv[1:]
if way == "every question at once":  # the call before: every question's windows run and decoded together
    AnswerExtractor.chunk_size = 1 << 62
extractor = AnswerExtractor.from_pretrained(model, precision="fp32", device="cpu", decoding=decoding,
                                            multi_span=multi_span == "yes")
asked = json.loads(open(data, encoding="utf-8").read())
answers, measures = measured(lambda: extractor(asked["questions"], asked["contexts"]))
spans = [[(s.text, s.start, s.end) for s in p.spans] + [p.abstain] for p in answers]
scores = [x for p in answers for x in (*(s.score for s in p.spans), p.confidence) if x is not None]
print(json.dumps({**measures, "spans": spans, "scores": scores}))
"""


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=int, nargs="+", default=[1000, 4000, 16000], help="questions of each call")
    parser.add_argument("--words", type=int, default=60, help="words of each context")
    parser.add_argument("--decoding", choices=("auto", "span", "bio", "joint"), default="auto", help="the extractor's decoding")
    parser.add_argument("--multi-span", action="store_true", help="answers of several spans")
    args = parser.parse_args()
    if any(n < 1 for n in args.questions) or args.words < 4:
        _common.fail(f"--questions are at least 1 each and --words at least 4, got {args.questions} and {args.words}")
    return args


def questions_file(folder: Path, questions: int, words: int) -> Path:
    """``synthetic_squad``'s questions as the two lists the extractor takes."""
    raw = json.loads(synthetic_squad(folder / f"squad-{questions}.json", questions, words).read_text(encoding="utf-8"))
    pairs = [(qa["question"], p["context"]) for p in raw["data"][0]["paragraphs"] for qa in p["qas"]]
    path = folder / f"asked-{questions}.json"
    path.write_text(json.dumps({"questions": [q for q, _ in pairs], "contexts": [c for _, c in pairs]}), encoding="utf-8")
    return path


def rows_at(folder: Path, model: Path, questions: int, args: argparse.Namespace) -> list[dict]:
    """Both ways' rows at ``questions`` questions; their spans and decisions must be equal."""
    data = questions_file(folder, questions, args.words)
    runs = {way: measure(way, model, data, args) for way in WAYS}
    return _memory.call_rows(runs, "questions", questions, ("spans",))


def measure(way: str, model: Path, data: Path, args: argparse.Namespace) -> dict:
    arguments = [way, str(model), str(data), args.decoding, "yes" if args.multi_span else "no"]
    return _memory.run_child(CHILD, arguments, f"the call ({way}) on {data.name}")[0]


def main(args: argparse.Namespace) -> None:
    rows = _memory.rows_by_size(args.words, args.questions, lambda folder, model, n: rows_at(folder, model, n, args))
    _memory.print_report(NAME, rows, "questions", WAYS[1], _memory.CALL_COLUMNS, _memory.call_cells, "spans_equal")


if __name__ == "__main__":
    main(parse_args())
