"""One training epoch as ``bio-mrc compare`` trains a model, by the package of a given checkout, in a process of its
own: what ``bench_gpu_training.py --old-tree`` runs for this checkout and the other one, alternately.

The child runs ``train_model`` with the GPU configs' recipe (span + BIO heads, soft BIO targets, bf16, learning rates
2e-4 and 1e-2, one epoch, checkpoints every ``checkpoint_steps``, progress bars on) on the first ``limit`` SQuAD v1.1
training questions, and reports the Trainer's own ``train_samples_per_second`` (the figure the GPU sections of
RESULTS.md quote for an epoch: from the start of the training loop, so the loader workers' start, the first steps and
the checkpoints saved during the epoch included) with the host's time at the begin and end of every step (no device
synchronisation added: the steps overlap as in a real run) and each step's windows. Every child of one comparison
shares a windows cache, so the first run of a package builds its windows and the later ones read them, as a model
trained after another of the same windows does. The child imports only what both the package of today and that of
2026-11-28 (``8077c1b``) hold.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import _common

FIRST_STEPS = 100  # the steps an epoch's start is counted over (the loader's workers starting, the first shapes)

# One epoch of train_model; prints the step times, the windows of each step and the Trainer's windows/s.
CHILD = """
import json, sys, time, warnings
settings = json.loads(sys.argv[1])
import torch
from transformers import TrainerCallback
import bio_mrc
from bio_mrc.data.squad import load_squad
from bio_mrc.training.config import TrainConfig
from bio_mrc.training.train import train_model
class EpochClock(TrainerCallback):
    def __init__(self):
        self.began, self.begins, self.ends, self.batches, self.trainer = None, [], [], [], {}
    def on_train_begin(self, args, state, control, model=None, **kwargs):
        self.began = time.perf_counter()
        model.register_forward_pre_hook(self.count, with_kwargs=True)
    def count(self, module, args, kwargs):
        ids = kwargs.get("input_ids", args[0] if args else None)
        if ids is not None and module.training:
            self.batches.append(int(ids.shape[0]))
    def on_step_begin(self, args, state, control, **kwargs):
        self.begins.append(time.perf_counter())
    def on_step_end(self, args, state, control, **kwargs):
        self.ends.append(time.perf_counter())
    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs and "train_samples_per_second" in logs:
            self.trainer = {"trainer_windows_s": logs["train_samples_per_second"], "trainer_seconds": logs["train_runtime"]}
clock = EpochClock()
config = TrainConfig(encoder=settings["encoder"], max_seq_length=settings["max_seq_length"], doc_stride=settings["doc_stride"],
                     batch_size=settings["batch_size"], learning_rate=2e-4, head_learning_rate=1e-2, epochs=1.0,
                     bio_targets="soft", precision="bf16", heads="span+bio")
examples = load_squad(settings["data"], limit=settings["limit"]).examples
steps = settings["checkpoint_steps"]
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    result = train_model(examples, config, settings["output"], save_checkpoints=steps > 0, progress=True,
                         checkpoint_steps=steps or None, callbacks=[clock])
device = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"
print(json.dumps({"began": clock.began, "begins": clock.begins, "ends": clock.ends, "batches": clock.batches,
                  "windows": result.n_windows, "package": bio_mrc.__file__, "device": device, **clock.trainer}))
"""


def epoch_summary(run: dict[str, Any], first_steps: int, checkpoint_steps: int) -> dict[str, Any]:
    """A child's epoch: the Trainer's windows/s; the seconds from the training's begin to the end of its first
    ``first_steps`` steps (fewer where the epoch is shorter, one step always left after them); the windows/s and the
    median step (ms, end to end) of the steps after them; and each checkpoint save's seconds, from the end of its step
    to the begin of the next (the save, and the fetch of the next batch)."""
    ends, begins, batches = run["ends"], run["begins"], run["batches"]
    if len(ends) < 2:
        _common.fail(f"an epoch of {len(ends)} step(s) says nothing of the steps after its first: give a larger --limit")
    first = min(first_steps, len(ends) - 1)
    after = [later - earlier for earlier, later in zip(ends[first - 1 :], ends[first:])]
    saves = range(checkpoint_steps, len(ends), checkpoint_steps) if checkpoint_steps else range(0)
    return {
        "steps": len(ends),
        "windows": run["windows"],
        "trainer_windows_s": run.get("trainer_windows_s"),
        "first_steps": first,
        "first_steps_s": round(ends[first - 1] - run["began"], 3),
        "after_windows_s": round(sum(batches[first : len(ends)]) / (ends[-1] - ends[first - 1]), 1),
        "median_step_ms": round(1000 * statistics.median(after), 1),
        "saves_s": [round(begins[step] - ends[step - 1], 3) for step in saves],
        **{key: run[key] for key in ("package", "device") if key in run},
    }


def run_epoch(tree: str | None, settings: dict[str, Any], scratch: Path) -> dict[str, Any]:
    """One child's epoch by the package of ``tree`` (None: this checkout), its model written under ``scratch`` and
    removed after; the child's report, checked to come from that package."""
    root = Path(tree).resolve() if tree else _common.REPO_ROOT
    inherited = [str(Path(path).resolve()) for path in os.environ.get("PYTHONPATH", "").split(os.pathsep) if path]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), *inherited]), "HF_DATASETS_CACHE": str(scratch / "datasets-cache"), "HF_HUB_OFFLINE": "1"}
    output = tempfile.mkdtemp(prefix="model-", dir=scratch)
    try:
        process = subprocess.run(
            [sys.executable, "-c", CHILD, json.dumps({**settings, "output": output})], capture_output=True, text=True, env=env, cwd=scratch
        )
    finally:
        shutil.rmtree(output, ignore_errors=True)
    if process.returncode:
        _common.fail(f"the epoch by {tree or 'this checkout'} failed: {process.stderr.strip().splitlines()[-1:]}")
    run = json.loads(process.stdout.strip().splitlines()[-1])
    if not Path(run["package"]).resolve().is_relative_to(root):
        _common.fail(f"the epoch by {tree or 'this checkout'} ran the package at {run['package']}, not the one in {root}")
    return run


def compare_epochs(settings: dict[str, Any], old_tree: str, repeats: int) -> dict[str, list[dict[str, Any]]]:
    """``repeats`` epochs by this checkout's package ("ours") and by ``old_tree``'s ("old"), alternately, so that a
    slow spell of the machine falls on both; each epoch's :func:`epoch_summary`."""
    ways = _common.package_ways(old_tree)
    epochs: dict[str, list[dict[str, Any]]] = {way: [] for way in ways}
    with tempfile.TemporaryDirectory(prefix="bench-gpu-training-epochs-") as scratch:
        for _ in range(repeats):
            for way, tree in ways.items():
                run = epoch_summary(run_epoch(tree, settings, Path(scratch)), FIRST_STEPS, settings["checkpoint_steps"])
                epochs[way].append(run)
                print(
                    f"{way} epoch ({run['package']}): {run['steps']} steps, the Trainer's {run['trainer_windows_s']} "
                    f"windows/s; first {run['first_steps']} steps {run['first_steps_s']} s, then "
                    f"{run['after_windows_s']:,.0f} windows/s; saves {run['saves_s']} s",
                    flush=True,
                )
    return epochs


def print_epochs(epochs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """The epochs as a table; returns the JSON fields: every epoch, each package's median Trainer windows/s and their
    ratio (ours / old: above 1, this checkout trains faster)."""
    print("\n| package | run | Trainer windows/s (epoch) | first steps | windows/s after them | median step ms | saves s |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for way, runs in epochs.items():
        for index, run in enumerate(runs, 1):
            saves = ", ".join(f"{seconds:.2f}" for seconds in run["saves_s"]) or "none"
            print(
                f"| {way} | {index} | {run['trainer_windows_s']:,.0f} | {run['first_steps']} in {run['first_steps_s']:.1f} s | "
                f"{run['after_windows_s']:,.0f} | {run['median_step_ms']:.1f} | {saves} |"
            )
    medians = {way: statistics.median(run["trainer_windows_s"] for run in runs) for way, runs in epochs.items()}
    return {
        "epochs": epochs,
        **{f"{way}_epoch_windows_s": round(value, 1) for way, value in medians.items()},
        "epoch_ratio": round(medians["ours"] / medians["old"], 3),
    }
