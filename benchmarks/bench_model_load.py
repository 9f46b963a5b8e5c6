"""Loading a saved model (``TrainedModel.load``, what ``predict``, ``extract``, ``serve`` and ``AnswerExtractor`` do
first): the wall and CPU seconds of the first load in a fresh process (the folder checks build the model's shapes once a
process) and of each later load of the same folder, the CPU seconds of the model's build on the meta device that each
load runs (the fastest of 20 a process), and with ``--old-tree`` the same loads by the package of another
checkout, alternating, with a check that both load the same model (a digest of every tensor and of the tokenizer's
output on a question and a context).

The models are built here: the default encoder (all-MiniLM-L6-v2, embedded) with fresh span and BIO heads, and a
random 2-layer BERT with both heads (H=32), each saved with its tokenizer; ``--model DIR`` measures a folder of one's own.

    python benchmarks/bench_model_load.py [--repeats 10] [--loads 5] [--model DIR] [--old-tree DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import _common

NAME = "model_load"

# Load one folder `loads` times in this process; print each load's wall and CPU seconds, the CPU seconds of the model's
# build on the meta device within a load (the fastest of 20), and a digest of the values loaded and the tokenizer's output.
CHILD = """
import hashlib, json, sys, time
import bio_mrc
from bio_mrc.inference.loading import TrainedModel
folder, loads = sys.argv[1], int(sys.argv[2])
seconds = []
for _ in range(loads):
    wall, cpu = time.perf_counter(), time.process_time()
    trained = TrainedModel.load(folder, device="cpu")
    seconds.append([time.perf_counter() - wall, time.process_time() - cpu])
import torch
builds = []  # the model built on the meta device, as from_pretrained builds it: the fastest of 20
for _ in range(20):
    cpu = time.process_time()
    with torch.device("meta"):
        type(trained.model)(trained.model.config)
    builds.append(time.process_time() - cpu)
digest = hashlib.sha256()
for name, tensor in sorted(trained.model.state_dict().items()):
    digest.update(name.encode())
    digest.update(tensor.detach().contiguous().numpy().tobytes())
probe = trained.tokenizer("Who wrote the notes?", "The notes were written by Ada Lovelace in 1843.", return_offsets_mapping=True)
digest.update(json.dumps(dict(probe), sort_keys=True).encode())  # the tokenizer's output: ids, types, mask, offsets
print(json.dumps({"seconds": seconds, "build": min(builds), "digest": digest.hexdigest(), "package": bio_mrc.__file__}))
"""


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=10, help="fresh processes of each package per model, alternating")
    parser.add_argument("--loads", type=int, default=5, help="loads of the folder in each process (the first, then the later ones)")
    parser.add_argument("--model", default=None, help="a saved model folder to load (default: the two built here)")
    parser.add_argument("--old-tree", default=None, help="another checkout whose package loads the same folders")
    args = parser.parse_args()
    _common.check_old_tree(args.old_tree)
    if args.repeats < 1 or args.loads < 2:
        _common.fail(f"--repeats {args.repeats} --loads {args.loads}: give at least 1 repeat and 2 loads")
    if args.model and _common.existing_input(args.model) is None:
        _common.fail(f"no model folder at {args.model}: pass an existing --model DIR, or leave it out to build two")
    return args


def built_models(folder: Path) -> dict[str, Path]:
    """The default encoder with fresh span and BIO heads, and a random 2-layer BERT joint model, saved in ``folder``."""
    import torch
    from transformers import AutoTokenizer

    from bio_mrc.encoders import resolve_encoder
    from bio_mrc.model import BioMrcForQuestionAnswering

    encoder = resolve_encoder("default")
    default = folder / "all-MiniLM-L6-v2-joint"
    torch.manual_seed(0)
    BioMrcForQuestionAnswering.from_encoder(encoder, max_seq_length=256, doc_stride=64, max_query_length=32).save_pretrained(str(default))
    AutoTokenizer.from_pretrained(encoder).save_pretrained(str(default))
    tiny = _common.untrained_tiny_model(folder / "tiny", ["the", "notes", "were", "written", "by", "ada", "lovelace"])
    return {"all-MiniLM-L6-v2, span+bio": default, "2-layer BERT H=32, span+bio": tiny}


def load_once(model: Path, tree: str | None, loads: int) -> dict:
    """One child's ``loads`` loads of ``model`` with the package of ``tree`` (None: this checkout)."""
    env = dict(os.environ)
    if tree:
        env["PYTHONPATH"] = os.pathsep.join([str(Path(tree).resolve()), env.get("PYTHONPATH", "")])
    process = subprocess.run(
        [sys.executable, "-c", CHILD, str(model), str(loads)], capture_output=True, text=True, env=env, cwd=Path(tree).resolve() if tree else _common.REPO_ROOT
    )
    if process.returncode != 0 or not process.stdout.strip():
        _common.fail(f"loading {model} ({tree or 'this checkout'}) failed: {process.stderr.strip()[-500:]}")
    return json.loads(process.stdout.strip().splitlines()[-1])


def measure(name: str, model: Path, ways: dict[str, str | None], repeats: int, loads: int) -> list[dict]:
    """Each way's median wall and CPU seconds of the first load and of the later loads of ``model``, the ways
    alternating (each first in turn); the digests must agree."""
    seconds: dict[str, dict[str, list[list[float]]]] = {way: {"first": [], "later": []} for way in ways}
    builds: dict[str, list[float]] = {way: [] for way in ways}
    digests = set()
    for repeat in range(repeats):
        for way in list(ways) if repeat % 2 == 0 else list(ways)[::-1]:
            done = load_once(model, ways[way], loads)
            seconds[way]["first"].append(done["seconds"][0])
            seconds[way]["later"].extend(done["seconds"][1:])
            builds[way].append(done["build"])
            digests.add(done["digest"])
    if len(digests) != 1:
        _common.fail(f"{model}: the packages loaded different values or tokenizers")
    return [
        {
            "model": name,
            "way": way,
            "build cpu": min(builds[way]),
            **{f"{load} {kind}": statistics.median(s[i] for s in runs[load]) for load in ("first", "later") for i, kind in enumerate(("wall", "cpu"))},
        }
        for way, runs in seconds.items()
    ]


def print_table(rows: list[dict]) -> None:
    """A row per model and way, and the old package's CPU seconds over ours where an old one ran."""
    print("| model | package | first load wall s | first load CPU s | later load wall s | later load CPU s | its build on meta CPU ms |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for row in rows:
        print(
            f"| {row['model']} | {row['way']} | "
            + " | ".join(f"{row[f'{load} {kind}']:.3f}" for load in ("first", "later") for kind in ("wall", "cpu"))
            + f" | {row['build cpu'] * 1000:.1f} |"
        )
    by_model = {(row["model"], row["way"]): row for row in rows}
    for model in dict.fromkeys(row["model"] for row in rows):
        if (model, "old") in by_model:
            old, ours = by_model[(model, "old")], by_model[(model, "ours")]
            print(
                f"\n{model}: old / ours CPU seconds, first load {old['first cpu'] / ours['first cpu']:.2f}x, "
                f"later loads {old['later cpu'] / ours['later cpu']:.2f}x, the build on meta {old['build cpu'] / ours['build cpu']:.2f}x; "
                "the same values and tokenizer output loaded"
            )


def main(args: argparse.Namespace) -> None:
    ways = _common.package_ways(args.old_tree)
    with tempfile.TemporaryDirectory() as folder:
        models = {args.model: _common.existing_input(args.model)} if args.model else built_models(Path(folder))
        rows = [row for name, model in models.items() for row in measure(name, model, ways, args.repeats, args.loads)]
    print(f"\nmachine: {_common.machine_description()}; {_common.command_load_and_date()}")
    print(
        f"medians of the first load in a fresh process ({args.repeats} processes a package) and of the later loads "
        f"({args.loads - 1} a process), fp32 on the CPU\n"
    )
    print_table(rows)
    print(json.dumps({"benchmark": NAME, "rows": rows, "ways": list(ways), "loads_equal": True, "machine": _common.machine_description()}))


if __name__ == "__main__":
    main(parse_args())
