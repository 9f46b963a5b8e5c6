"""One question over one long context through ``AnswerExtractor``: wall and CPU seconds and peak resident memory
(``VmHWM``) of the call at each context length, each in a process of its own with one OpenMP thread, and with
``--profile`` a cProfile of one length's call (each way's) (the functions of most time, by their own time and with callees).

The contexts are random words of 2 to 9 random lowercase letters; the model is a tiny random one (a 2-layer, H=32
BERT, windows of 64 tokens, stride 24, trained one epoch on 32 questions) whose vocabulary holds the letters alone,
so a word is a token a letter, as a BERT vocabulary cuts text of a script it lacks words of (Chinese, one token a
character): the windows' own cost shows, the forward pass nearly free. Nothing is downloaded.

``--old-tree DIR`` runs the same calls with the package of another checkout (``git worktree add DIR COMMIT``) in
the same run, and checks that both answered alike: their spans, offsets and scores.

    python benchmarks/bench_long_context.py [--chars 100000 500000 2000000] [--profile 500000] [--old-tree DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import string
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _common
import _memory
from bench_predict_memory import WINDOW_ARGS, synthetic_squad

NAME = "long_context"

# Answer one question over one context of ``chars`` random letter words; print the call's measures and answer.
CHILD = """
import json, random, string, sys
import bio_mrc
from bio_mrc.inference import AnswerExtractor
""" + _memory.MEASURED_CALL + """
model, chars, decoding, multi_span, profile = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4] == "yes", sys.argv[5]
rng, words, total = random.Random(0), [], 0
while total < chars:
    words.append("".join(rng.choices(string.ascii_lowercase, k=rng.randint(2, 9))))
    total += len(words[-1]) + 1
context = " ".join(words)[:chars]
extractor = AnswerExtractor.from_pretrained(model, precision="fp32", device="cpu", decoding=decoding, multi_span=multi_span)
call = lambda: extractor("which word is it?", context)
if profile != "-":
    import cProfile
    profiler = cProfile.Profile()
    call = (lambda run: lambda: profiler.runcall(run))(call)
answer, measures = measured(call)
if profile != "-":
    profiler.dump_stats(profile)
spans = [(s.text, s.start, s.end, s.score) for s in answer.spans]
print(json.dumps({**measures, "package": bio_mrc.__file__, "tokens": len(extractor.trained.tokenizer(context, add_special_tokens=False)["input_ids"]),
                  "spans": spans}))
"""


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chars", type=int, nargs="+", default=[100_000, 500_000, 2_000_000], help="context lengths")
    parser.add_argument("--decoding", choices=("auto", "span", "bio", "joint"), default="auto", help="the extractor's decoding")
    parser.add_argument("--multi-span", action="store_true", help="answers of several spans")
    parser.add_argument("--profile", type=int, default=None, help="a context length to profile (with cProfile) too")
    parser.add_argument("--old-tree", default=None, help="another checkout whose package answers the same calls")
    args = parser.parse_args()
    if any(n < 100 for n in args.chars):
        _common.fail(f"--chars are at least 100 each, got {args.chars}")
    _common.check_old_tree(args.old_tree)
    return args


def letters_model(folder: Path) -> Path:
    """The tiny model of ``bench_predict_memory.py`` with a vocabulary of letters alone, trained one epoch."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizer

    encoder = folder / "encoder"
    letters = list(string.ascii_lowercase)
    vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "?", *letters, *(f"##{c}" for c in letters)]
    BertTokenizer(vocab={w: i for i, w in enumerate(vocabulary)}, do_lower_case=True).save_pretrained(str(encoder))
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=len(vocabulary), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                         intermediate_size=64, max_position_embeddings=128)).save_pretrained(str(encoder))
    model = folder / "model"
    train = synthetic_squad(folder / "train.json", 32, 60, seed=1)
    subprocess.run([sys.executable, "-m", "bio_mrc.cli", "train", "--train", str(train), "--output-dir", str(model),
                    "--encoder", str(encoder), "--heads", "span+bio", "--epochs", "1", "--batch-size", "8", *WINDOW_ARGS],
                   check=True, capture_output=True)
    return model


def measure(model: Path, chars: int, args: argparse.Namespace, tree: str | None, profile: str = "-") -> dict:
    """One child's call at ``chars`` characters, with the package of ``tree`` (None: this checkout), run in the
    model's folder: the working directory comes first on a ``-c`` program's path."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    if tree:
        env["PYTHONPATH"] = os.pathsep.join([str(Path(tree).resolve()), env.get("PYTHONPATH", "")])
    arguments = [str(model), str(chars), args.decoding, "yes" if args.multi_span else "no", profile]
    started = time.perf_counter()
    process = subprocess.run([sys.executable, "-c", CHILD, *arguments], capture_output=True, text=True, env=env,
                             cwd=model.parent)
    if process.returncode != 0 or not process.stdout.strip():
        _common.fail(f"the call at {chars:,} characters ({tree or 'this checkout'}) failed: {_memory.stderr_end(process)}")
    return {**json.loads(process.stdout.strip().splitlines()[-1]), "process_seconds": time.perf_counter() - started}


def print_profile(path: str, chars: int, way: str) -> None:
    import pstats

    print(f"\nprofile of the call at {chars:,} characters ({way}):")
    for order in ("tottime", "cumulative"):
        pstats.Stats(path, stream=sys.stdout).strip_dirs().sort_stats(order).print_stats(25)


def main(args: argparse.Namespace) -> None:
    ways = _common.package_ways(args.old_tree)
    rows = []
    with tempfile.TemporaryDirectory() as temporary:
        model = letters_model(Path(temporary))
        for chars in args.chars:
            runs = {way: measure(model, chars, args, tree) for way, tree in ways.items()}
            if len({json.dumps(run["spans"]) for run in runs.values()}) != 1:
                _common.fail(f"the answers differ at {chars:,} characters: {[run['spans'] for run in runs.values()]}")
            rows += [{"chars": chars, "way": way, **{k: v for k, v in run.items() if k != "spans"}} for way, run in runs.items()]
        for way, tree in ways.items() if args.profile else ():
            stats = str(Path(temporary) / f"{way}.prof")
            measure(model, args.profile, args, tree, stats)
            print_profile(stats, args.profile, way)
    report(rows, list(ways))


def report(rows: list[dict], ways: list[str]) -> None:
    machine = _common.machine_description()
    print(f"\nmachine: {machine}; {_common.command_load_and_date()}\n")
    print("| characters | context tokens | way | call s | call CPU s | peak MiB before | peak MiB | growth KB a character |")
    print("|---:|---:|---|---:|---:|---:|---:|---:|")
    for row in rows:
        growth = (row["peak_mib"] - row["before_mib"]) * 1024 * 1024 / row["chars"] / 1000
        print(f"| {row['chars']:,} | {row['tokens']:,} | {row['way']} | {row['seconds']:.1f} | {row['cpu_seconds']:.1f} | "
              f"{row['before_mib']:.0f} | {row['peak_mib']:.0f} | {growth:.2f} |")
    print(json.dumps({"benchmark": NAME, "rows": rows, "ways": ways, "answers_equal": True, "machine": machine}))


if __name__ == "__main__":
    main(parse_args())
