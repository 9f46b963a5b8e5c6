"""Peak resident memory of one question over one long context through ``AnswerExtractor``: each context length in a
process of its own with one OpenMP thread (its ``VmHWM`` before and after the call), this checkout's package against
another checkout's (``--old-tree``), with the ratio of their growth, and a check that both answered alike (every field
of every span).

The context is SQuAD v1.1 dev paragraphs drawn with a fixed seed and joined (random letter words where the data is
absent). ``--model letters`` (the default) is the tiny random model of ``bench_long_context.py`` (a token a letter:
the windows' own cost shows); ``--model default`` an untrained model of the default encoder (windows of 384 tokens,
the forward pass's own memory shows); any other value is a model folder or hub id. Nothing is downloaded.

    python benchmarks/bench_long_context_memory.py [--chars 500000 2000000] [--model letters] --old-tree DIR
"""

from __future__ import annotations

import argparse
import json
import os
import random
import string
import subprocess
import sys
import tempfile
from pathlib import Path

import _common
import _memory

NAME = "long_context_memory"

# Answer one question over the context in a file; print the call's measures and its answer.
CHILD = """
import dataclasses, json, sys
import bio_mrc
from bio_mrc.inference import AnswerExtractor
""" + _memory.MEASURED_CALL + """
model, text, decoding, multi_span = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "yes"
context = open(text, encoding="utf-8").read()
extractor = AnswerExtractor.from_pretrained(model, precision="fp32", device="cpu", decoding=decoding, multi_span=multi_span)
answer, measures = measured(lambda: extractor("Who ruled it, and when?", context))
print(json.dumps({**measures, "package": bio_mrc.__file__, "answer": dataclasses.asdict(answer)}))
"""


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chars", type=int, nargs="+", default=[500_000, 2_000_000], help="context lengths")
    parser.add_argument("--model", default="letters", help="letters, default, or a model folder or hub id")
    parser.add_argument("--decoding", choices=("auto", "span", "bio", "joint"), default="auto", help="the extractor's decoding")
    parser.add_argument("--multi-span", action="store_true", help="answers of several spans")
    parser.add_argument("--old-tree", required=True, help="another checkout whose package answers the same calls")
    parser.add_argument("--data-dir", default=None, help="where squad-v1.1/dev.json is (default: ../shared/data)")
    args = parser.parse_args()
    if any(n < 100 for n in args.chars):
        _common.fail(f"--chars are at least 100 each, got {args.chars}")
    _common.check_old_tree(args.old_tree)
    return args


def context_text(chars: int, data_dir: Path) -> tuple[str, str]:
    """``chars`` characters of SQuAD v1.1 dev paragraphs drawn with seed 0 and joined by spaces (random letter words
    where the file is absent), and which of the two it is."""
    rng, path = random.Random(0), data_dir / "squad-v1.1" / "dev.json"
    if path.is_file():
        pieces = [p["context"] for a in json.loads(path.read_text(encoding="utf-8"))["data"] for p in a["paragraphs"]]
        source = "SQuAD v1.1 dev paragraphs"
    else:
        pieces = ["".join(rng.choices(string.ascii_lowercase, k=rng.randint(2, 9))) for _ in range(5000)]
        source = "random letter words"
    parts, total = [], 0
    while total < chars:
        parts.append(rng.choice(pieces))
        total += len(parts[-1]) + 1
    return " ".join(parts)[:chars], source


def model_folder(name: str, folder: Path) -> str:
    """The model ``--model`` names: the letters model trained here, an untrained one of the default encoder, or as given."""
    if name == "letters":
        from bench_long_context import letters_model

        return str(letters_model(folder))
    if name != "default":
        return name
    from transformers import AutoTokenizer

    from bio_mrc.encoders import resolve_encoder
    from bio_mrc.model import BioMrcForQuestionAnswering

    encoder, out = resolve_encoder("default"), folder / "default-model"
    BioMrcForQuestionAnswering.from_encoder(encoder, heads="span+bio", max_seq_length=384, doc_stride=128,
                                            max_query_length=64).save_pretrained(str(out))
    AutoTokenizer.from_pretrained(encoder).save_pretrained(str(out))
    return str(out)


def measure(model: str, text: Path, args: argparse.Namespace, tree: str | None) -> dict:
    """One child's call over the context in ``text`` with the package of ``tree`` (None: this checkout)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    if tree:
        env["PYTHONPATH"] = os.pathsep.join([str(Path(tree).resolve()), env.get("PYTHONPATH", "")])
    arguments = [model, str(text), args.decoding, "yes" if args.multi_span else "no"]
    process = subprocess.run([sys.executable, "-c", CHILD, *arguments], capture_output=True, text=True, env=env,
                             cwd=text.parent)
    if process.returncode != 0 or not process.stdout.strip():
        _common.fail(f"the call over {text.name} ({tree or 'this checkout'}) failed: {_memory.stderr_end(process)}")
    return json.loads(process.stdout.strip().splitlines()[-1])


def main(args: argparse.Namespace) -> None:
    data_dir = Path(args.data_dir) if args.data_dir else _common.default_data_dir()
    rows, ways = [], {"ours": None, "old": args.old_tree}
    with tempfile.TemporaryDirectory() as temporary:
        model = model_folder(args.model, Path(temporary))
        for chars in args.chars:
            context, source = context_text(chars, data_dir)
            text = Path(temporary) / f"context-{chars}.txt"
            text.write_text(context, encoding="utf-8")
            runs = {way: measure(model, text, args, tree) for way, tree in ways.items()}
            if runs["ours"]["answer"] != runs["old"]["answer"]:
                _common.fail(f"the answers differ at {chars:,} characters: {runs['ours']['answer']} against {runs['old']['answer']}")
            growth = {way: run["peak_mib"] - run["before_mib"] for way, run in runs.items()}
            rows.append({"chars": chars, "source": source, **{f"{way}_{key}": run[key] for way, run in runs.items()
                                                              for key in _memory.CALL_MEASURES},
                         "ours_growth_mib": growth["ours"], "old_growth_mib": growth["old"],
                         "ratio": growth["old"] / max(growth["ours"], 1e-9)})
    report(rows, args)


def report(rows: list[dict], args: argparse.Namespace) -> None:
    machine = _common.machine_description()
    print(f"\nmachine: {machine}; {_common.command_load_and_date()}")
    print(f"model: {args.model}; decoding {args.decoding}, {'several spans' if args.multi_span else 'one span'}\n")
    print("| characters | old: peak MiB | growth MiB | KB a character | ours: peak MiB | growth MiB | KB a character | "
          "old / ours (growth) | call CPU s old / ours |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        per_char = {way: row[f"{way}_growth_mib"] * 1024 * 1024 / row["chars"] / 1000 for way in ("old", "ours")}
        print(f"| {row['chars']:,} | {row['old_peak_mib']:.0f} | {row['old_growth_mib']:.0f} | {per_char['old']:.2f} | "
              f"{row['ours_peak_mib']:.0f} | {row['ours_growth_mib']:.0f} | {per_char['ours']:.2f} | {row['ratio']:.2f} | "
              f"{row['old_cpu_seconds']:.1f} / {row['ours_cpu_seconds']:.1f} |")
    print(json.dumps({"benchmark": NAME, "rows": rows, "ways": ["ours", "old"], "answers_equal": True, "machine": machine}))


if __name__ == "__main__":
    main(parse_args())
