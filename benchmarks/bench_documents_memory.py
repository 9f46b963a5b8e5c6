"""Peak memory of ``AnswerExtractor`` asking one question of a list of documents, at a few numbers of documents: the
package's call, which runs and decodes :attr:`~bio_mrc.inference.extract.AnswerExtractor.chunk_size` documents at a
time and keeps each chunk's ``top_k`` best spans (:class:`~bio_mrc.inference.documents.DocumentRanking`), against
every document's windows run and held at once (the call before: that chunk size made unbounded), each in a process of
its own, which reports its own peak resident memory (``VmHWM``) before and after the call, the call's wall and CPU
seconds, and its answers: their documents, texts, offsets and decisions must be equal, their scores equal to float32
rounding (a window's logits move in their last bits with the windows padded and batched beside it).

The documents are the contexts of ``bench_predict_memory.py`` (``--words`` random words each), the question its
first, and the model its tiny one (a 2-layer, H=32 BERT with a word-level vocabulary, windows of 64 tokens, trained
one epoch on 32 questions): its answers are arbitrary, its outputs as many as a real model's at that window length.
Nothing is downloaded.

    python benchmarks/bench_documents_memory.py [--documents 1000 10000] [--words 60] [--top-k 10] [--decoding auto]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import _common
import _memory
from bench_predict_memory import synthetic_squad

NAME = "documents_memory"
WAYS = ("ours", "every document at once")

# Ask the question of the documents one way; print the peaks, the seconds and the answers. A ``-c`` program, so that
# the process holds only what the call needs.
CHILD = """
import json, sys
from bio_mrc.inference import AnswerExtractor
""" + _memory.MEASURED_CALL + """
way, model, data, decoding, top_k = sys.argv[1:]
if way == "every document at once":  # the call before: every document's windows run and decoded together
    AnswerExtractor.chunk_size = 1 << 62
extractor = AnswerExtractor.from_pretrained(model, precision="fp32", device="cpu", decoding=decoding)
asked = json.loads(open(data, encoding="utf-8").read())
ranked, measures = measured(lambda: extractor(asked["question"], asked["documents"], top_k=int(top_k)))
answers = [(a.document, a.text, a.start, a.end, a.abstain) for a in ranked.answers]
documents = [[(s.start, s.end) for s in p.spans] + [p.abstain] for p in ranked.documents]
scores = [a.score for a in ranked.answers] + [x for p in ranked.documents for x in (p.no_answer_score, p.confidence)
                                              if x is not None]
print(json.dumps({**measures, "answers": answers, "documents": documents, "scores": scores}))
"""


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--documents", type=int, nargs="+", default=[1000, 10000], help="documents of each call")
    parser.add_argument("--words", type=int, default=60, help="words of each document")
    parser.add_argument("--top-k", type=int, default=10, help="answers ranked across the documents")
    parser.add_argument("--decoding", choices=("auto", "span", "bio", "joint"), default="auto", help="the extractor's decoding")
    args = parser.parse_args()
    if any(n < 1 for n in args.documents) or args.words < 4 or args.top_k < 1:
        _common.fail(f"--documents are at least 1 each, --words at least 4 and --top-k at least 1, got {args.documents}, "
                     f"{args.words} and {args.top_k}")
    return args


def documents_file(folder: Path, documents: int, words: int) -> Path:
    """``synthetic_squad``'s contexts, one a document, and its first question, as the extractor takes them."""
    raw = json.loads(synthetic_squad(folder / f"squad-{documents}.json", 4 * documents, words).read_text(encoding="utf-8"))
    paragraphs = raw["data"][0]["paragraphs"]
    path = folder / f"asked-{documents}.json"
    path.write_text(json.dumps({"question": paragraphs[0]["qas"][0]["question"],
                                "documents": [p["context"] for p in paragraphs]}), encoding="utf-8")
    return path


def rows_at(folder: Path, model: Path, documents: int, args: argparse.Namespace) -> list[dict]:
    """Both ways' rows at ``documents`` documents; their answers, spans and decisions must be equal."""
    data = documents_file(folder, documents, args.words)
    runs = {way: measure(way, model, data, args) for way in WAYS}
    return _memory.call_rows(runs, "documents", documents, ("answers", "documents"))


def measure(way: str, model: Path, data: Path, args: argparse.Namespace) -> dict:
    arguments = [way, str(model), str(data), args.decoding, str(args.top_k)]
    return _memory.run_child(CHILD, arguments, f"the call ({way}) on {data.name}")[0]


def main(args: argparse.Namespace) -> None:
    rows = _memory.rows_by_size(args.words, args.documents, lambda folder, model, n: rows_at(folder, model, n, args))
    _memory.print_report(NAME, rows, "documents", WAYS[1], _memory.CALL_COLUMNS, _memory.call_cells, "answers_equal")


if __name__ == "__main__":
    main(parse_args())
