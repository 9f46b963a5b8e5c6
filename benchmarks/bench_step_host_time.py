"""The training step's host time: what one process spends a step beside the model's arithmetic.

A tiny encoder (BERT, 1 layer, hidden 32, 2 heads, intermediate 64, with the default encoder's tokenizer, so the
windows are those the default encoder trains on) makes the model's arithmetic small beside the default encoder's,
leaving what the host does around it: reading and padding the batch, the model's Python (heads, losses, checks),
Trainer's bookkeeping and the callbacks. On a CPU the arithmetic left (chiefly the attention over windows of 384
tokens, which no hidden size shrinks) still takes most of a step, and is the same for both packages; ``--profile``
tells it from the Python around it. Training runs through ``train_model`` as ``bio-mrc compare`` calls it (the
GPU recipe's options: batches of ``--batch-size`` 128 windows of ``--max-seq-length`` 384, stride 128, span + BIO
heads with soft BIO targets, learning rates 2e-4 and 1e-2, checkpoints every 250 steps, progress bars on), in fp32,
on the first ``--limit`` SQuAD v1.1 training questions, one epoch, in a process of its own. A step's time is the
interval between two step ends; the first ``--skip`` steps are left out, and each run gives its median.

``--loading gpu`` reads batches as training on a GPU does (loader worker processes, no NaN check of the loss at
each step), still on the CPU; ``--loading cpu`` (default) as training on the CPU does (the batch collated in the
training process). With ``--old-tree`` the same training by the package of another checkout, alternately, ``--repeats``
times each. ``--profile PREFIX`` then runs each package's training once more under ``cProfile`` from step ``--skip`` on and writes
its functions by own and by cumulative time to ``PREFIX.WAY.txt``, headed by the ms a step spent in torch's C functions
(the arithmetic, and on a GPU their dispatch), in Python frames (the host's work beside them) and in the package's own
frames, and the function calls a step (a count the machine's other work does not move).

    python benchmarks/bench_step_host_time.py [--limit 4000] [--repeats 3] [--loading cpu|gpu] [--old-tree DIR] [--profile PREFIX]

The medians are the median over runs of each run's median step: wall ms, and the training thread's CPU ms (less
moved by other work on a shared machine). The last line is one JSON object: ``{"benchmark": "step_host_time",
"ours_step_ms": ..., "ours_cpu_ms": ..., "old_step_ms": ..., "old_cpu_ms": ..., "ratio": old / ours, "cpu_ratio": ...,
"ours_profile": {"step_ms", "torch_ms", "python_ms", "package_ms", "calls"}, ...}``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _common

NAME = "step_host_time"

# One epoch of train_model on the tiny encoder; prints each step's end (perf_counter) and the package it ran.
CHILD = """
import cProfile, json, os, pstats, sys, time, warnings
import bio_mrc
import bio_mrc.training.trainer as trainer_module
from transformers import TrainerCallback
from bio_mrc.data.squad import load_squad
from bio_mrc.training.config import TrainConfig
from bio_mrc.training.train import train_model
data, encoder, limit, batch, seq, stride, loading, output, skip, profile = sys.argv[1:]
if loading == "gpu":  # a GPU's batch loading, on the CPU: worker processes, no NaN check each step
    loading_of = trainer_module._loading_arguments
    def gpu_loading(device, *rest):
        values = {**loading_of("cuda", *rest), "dataloader_pin_memory": False}
        values.pop("accelerator_config", None)
        return values
    trainer_module._loading_arguments = gpu_loading
class Steps(TrainerCallback):
    def __init__(self):
        self.ends, self.cpu, self.profiler = [], [], cProfile.Profile() if profile != "-" else None
    def on_step_end(self, args, state, control, **kwargs):
        self.ends.append(time.perf_counter())
        self.cpu.append(time.thread_time())
        if self.profiler is not None and len(self.ends) == int(skip):
            self.profiler.enable()
    def on_train_end(self, args, state, control, **kwargs):
        if self.profiler is not None:
            self.profiler.disable()
def split(profiler, steps):
    # ms a step in torch's C functions (the arithmetic, and on a GPU its dispatch), in Python frames, and in the package's
    stats, package = pstats.Stats(profiler).stats, os.path.dirname(bio_mrc.__file__)
    torch_calls = sum(v[2] for (f, _, n), v in stats.items() if f == "~" and any(w in n for w in ("torch", "Tensor", "_EngineBase")))
    python = sum(v[2] for (f, _, _), v in stats.items() if f != "~")
    ours = sum(v[2] for (f, _, _), v in stats.items() if f.startswith(package))
    calls = sum(v[1] for v in stats.values())
    return {"torch_ms": 1000 * torch_calls / steps, "python_ms": 1000 * python / steps, "package_ms": 1000 * ours / steps,
            "calls": calls / steps}
steps = Steps()
config = TrainConfig(encoder=encoder, max_seq_length=int(seq), doc_stride=int(stride), batch_size=int(batch),
                     learning_rate=2e-4, head_learning_rate=1e-2, epochs=1.0, bio_targets="soft", precision="fp32",
                     heads="span+bio")
examples = load_squad(data, limit=int(limit)).examples
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    result = train_model(examples, config, output, save_checkpoints=True, progress=True, checkpoint_steps=250,
                         callbacks=[steps])
shares = {}
if steps.profiler is not None:
    counted = len(steps.ends) - int(skip)
    shares = split(steps.profiler, counted)
    with open(profile, "w") as out:
        out.write(f"# {counted} steps profiled; {json.dumps(shares)}\\n")
        for order in ("tottime", "cumulative"):
            pstats.Stats(steps.profiler, stream=out).sort_stats(order).print_stats(45)
print(json.dumps({"ends": steps.ends, "cpu": steps.cpu, "windows": result.n_windows, "package": bio_mrc.__file__,
                  **shares}))
"""


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    _common.add_data_arguments(parser, "squad-v1.1/train.json", "SQuAD v1.1 training file")
    parser.add_argument("--limit", type=int, default=4000, help="training questions (the first N of the file)")
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--max-seq-length", type=int, default=384)
    parser.add_argument("--doc-stride", type=int, default=128)
    parser.add_argument("--skip", type=int, default=3, help="first steps left out of the median (start-up)")
    parser.add_argument("--repeats", type=int, default=3, help="trainings by each package, alternately")
    parser.add_argument(
        "--loading", choices=("cpu", "gpu"), default="cpu", help="batch loading as training on the CPU (in the process) or on a GPU (worker processes) does"
    )
    parser.add_argument("--old-tree", default=None, help="another checkout whose package trains the same way")
    parser.add_argument("--profile", default=None, help="write each package's steps under cProfile to PREFIX.WAY.txt")
    args = parser.parse_args()
    _common.check_old_tree(args.old_tree)
    if args.repeats < 1 or args.limit < 1 or args.skip < 1:
        _common.fail(f"--repeats {args.repeats}, --limit {args.limit} and --skip {args.skip}: give at least 1 each")
    args.data = _common.data_file(args, "squad-v1.1/train.json")
    return args


def tiny_encoder(folder: Path) -> Path:
    """A random 1-layer BERT (H=32, 2 heads, intermediate 64) with the default encoder's tokenizer: ``folder/encoder``."""
    import torch
    from transformers import BertConfig, BertModel

    from bio_mrc.encoders import load_tokenizer, resolve_encoder

    encoder = folder / "encoder"
    tokenizer = load_tokenizer(resolve_encoder("default"))
    tokenizer.save_pretrained(str(encoder))
    torch.manual_seed(0)
    BertModel(
        BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64, max_position_embeddings=512)
    ).save_pretrained(str(encoder))
    return encoder


def train_once(args: argparse.Namespace, tree: str | None, encoder: Path, folder: Path, profile: str | None) -> dict:
    """One child's epoch with the package of ``tree`` (None: this checkout) into a fresh folder under ``folder``: its
    median step (wall ms, and the training thread's CPU ms), under cProfile where ``profile`` names a file."""
    env = {**os.environ, "HF_DATASETS_CACHE": str(folder / "datasets-cache"), "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    if tree:
        env["PYTHONPATH"] = os.pathsep.join([str(Path(tree).resolve()), env.get("PYTHONPATH", "")])
    output = tempfile.mkdtemp(prefix="model-", dir=folder)
    command = [
        sys.executable,
        "-c",
        CHILD,
        args.data,
        str(encoder),
        str(args.limit),
        str(args.batch_size),
        str(args.max_seq_length),
        str(args.doc_stride),
        args.loading,
        output,
        str(args.skip),
        profile or "-",
    ]
    process = subprocess.run(command, capture_output=True, text=True, env=env, cwd=Path(tree).resolve() if tree else folder)
    if process.returncode:
        _common.fail(f"training by {tree or 'this checkout'} failed: {process.stderr.strip().splitlines()[-1:]}")
    run = json.loads(process.stdout.strip().splitlines()[-1])
    if len(run["ends"]) <= args.skip + 1:
        _common.fail(f"--limit {args.limit} gives {len(run['ends'])} steps, too few beyond --skip {args.skip}")
    return {
        "step_ms": _median_step(run["ends"], args.skip),
        "cpu_ms": _median_step(run["cpu"], args.skip),
        "steps": len(run["ends"]),
        "windows": run["windows"],
        "package": run["package"],
        **{key: run[key] for key in ("torch_ms", "python_ms", "package_ms", "calls") if key in run},
    }


def _median_step(ends: list[float], skip: int) -> float:
    """The median ms between two step ends, the first ``skip`` steps left out."""
    return 1000 * statistics.median(later - earlier for earlier, later in list(zip(ends, ends[1:]))[skip - 1 :])


def profiles(args: argparse.Namespace, ways: dict[str, str | None], encoder: Path, folder: Path) -> dict[str, dict]:
    """Each package's steps once under cProfile, written to ``--profile``.WAY.txt: ms a step in torch's C functions,
    in Python frames and in the package's own frames, and the function calls a step."""
    split = {}
    for way, tree in ways.items():
        path = Path(f"{args.profile}.{way}.txt").resolve()
        run = train_once(args, tree, encoder, folder, str(path))
        split[way] = {key: round(run[key], 2) for key in ("step_ms", "torch_ms", "python_ms", "package_ms", "calls")}
        print(f"{way} under cProfile: {split[way]} ({path})", flush=True)
    return split


def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-step-host-time-") as scratch:
        folder = Path(scratch)
        encoder = tiny_encoder(folder)
        print(f"machine: {_common.machine_description()}; {_common.command_load_and_date()}", flush=True)
        ways = _common.package_ways(args.old_tree)
        runs: dict[str, list[dict]] = {way: [] for way in ways}
        for _ in range(args.repeats):
            for way, tree in ways.items():
                runs[way].append(train_once(args, tree, encoder, folder, None))
                run = runs[way][-1]
                print(
                    f"{way} ({run['package']}): {run['steps']} steps of {run['windows']} windows, median step "
                    f"{run['step_ms']:.1f} ms ({run['cpu_ms']:.1f} ms of the training thread's CPU)",
                    flush=True,
                )
        split = profiles(args, ways, encoder, folder) if args.profile else {}
    wall = {way: statistics.median(run["step_ms"] for run in done) for way, done in runs.items()}
    cpu = {way: statistics.median(run["cpu_ms"] for run in done) for way, done in runs.items()}
    result = {
        "benchmark": NAME,
        "machine": _common.machine_description(),
        "date": time.strftime("%Y-%m-%d"),
        "loading": args.loading,
        "batch_size": args.batch_size,
        "limit": args.limit,
        "repeats": args.repeats,
        **{f"{way}_step_ms": round(value, 1) for way, value in wall.items()},
        **{f"{way}_cpu_ms": round(value, 1) for way, value in cpu.items()},
        **{f"{way}_runs_ms": [round(run["step_ms"], 1) for run in done] for way, done in runs.items()},
        **{f"{way}_profile": value for way, value in split.items()},
    }
    if "old" in wall:
        result["ratio"] = round(wall["old"] / wall["ours"], 3)
        result["cpu_ratio"] = round(cpu["old"] / cpu["ours"], 3)
    print(json.dumps(result))


if __name__ == "__main__":
    main(parse_args())
