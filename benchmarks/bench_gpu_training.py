"""Training throughput on one GPU (windows/s): the package's training path against the Hugging Face QA recipe.

Every variant trains a fresh default encoder (all-MiniLM-L6-v2) in bf16 autocast, in this process, one after
another, on the same windows: the first ``--limit`` SQuAD v1.1 training questions cut into windows of
``--max-seq-length`` 384 tokens with stride ``--doc-stride`` 128, of which the first ``--steps`` x batch windows
(in file order) are the training set. Each timed run is one epoch over them, so every variant sees each window
once whatever its sampler; it is timed from the end of its first step to the end of its last (CUDA synchronised),
which leaves out the model's load, the loader's start and torch's first-call costs. A throw-away run of
``--warmup`` steps of the same set-up comes before each timed run.

Variants:

* ``reference``: the recipe of Hugging Face's ``run_qa.py`` (``reference_recipe.py``): windows padded to 384,
  ``default_data_collator``, Trainer's random sampler, ``AutoModelForQuestionAnswering``, with ``bf16=True``,
  at ``--batch-size``.
* ``ours``: ``bio_mrc``'s Trainer as ``train_model`` builds it (``WindowBatches`` read by loader workers,
  length-grouped batches padded to their longest window, span + BIO heads), at ``--batch-size``.
* ``ours-32``: the same at 32 windows a batch (the batch size of the earlier GPU configs).
* ``rows-32``: the package's batch loading before ``WindowBatches``, at 32: windows read row by row in the
  training process, the loss checked for NaN (a GPU sync) at every step.
* ``ours-compile``: ``ours`` with the model under ``torch.compile`` (Trainer's ``torch_compile``).

``--profile-steps N`` then runs each variant again for N steps (after ``--warmup`` more) under ``torch.profiler``
and reports where a step's time goes: the host's wall time a step, the device's busy time a step (its kernels'
time, where there is a device), kernels launched and operators dispatched a step, and the host's waits a step
(on a GPU the runtime's synchronize calls, which a tensor's value read on the host makes; without one, the
operators that would: ``aten::_local_scalar_dense`` and ``aten::nonzero``); ``--output`` also gets each variant's
operator table beside it (``OUTPUT.VARIANT.profile.txt``) and the profiled steps' timeline of host and device
(``OUTPUT.VARIANT.trace.json.gz``, which Perfetto or chrome://tracing opens). A step whose wall time is well above the
device's busy time leaves the device idle: the host sets its pace.

The share of the GPU's rate counts 6 x the encoder's non-embedding parameters per token fed (padding included,
attention left out), against ``--peak-tflops`` (dense bf16; default by the GPU's name).

``--old-tree DIR`` first trains one whole epoch over the ``--limit`` questions' windows as ``bio-mrc compare`` trains a
model (``train_model``, checkpoints every ``--checkpoint-steps``; ``_training_epoch.py``) by this checkout's package and
by DIR's (a checkout of an earlier commit: ``git worktree add DIR COMMIT``), alternately, ``--repeats`` times each,
each epoch in a process of its own on the same GPU: the Trainer's windows/s over the epoch (``train_samples_per_second``,
the loader's start and the checkpoints included, as the GPU sections of RESULTS.md quote it), the seconds of its first
100 steps, the windows/s and median step after them, and each checkpoint save's seconds.

    python benchmarks/bench_gpu_training.py [--limit 12000] [--steps 80] [--batch-size 128] [--encoder DIR]
        [--old-tree DIR [--repeats 2] [--checkpoint-steps 250]]

The last line is one JSON object:
``{"benchmark": "gpu_training", "reference_windows_s": ..., "ours_windows_s": ..., "ratio": ..., ...}``, with
``--old-tree`` also ``"epochs"`` (each epoch's figures by package), ``"ours_epoch_windows_s"``,
``"old_epoch_windows_s"`` and ``"epoch_ratio"`` (ours / old).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

import datasets
import torch
import transformers
from transformers import AutoModelForQuestionAnswering, PrinterCallback, TrainerCallback, set_seed

from bio_mrc.data.squad import load_squad
from bio_mrc.encoders import load_tokenizer, resolve_encoder
from bio_mrc.errors import BioMrcError
from bio_mrc.features.collate import WindowBatches, WindowCollator
from bio_mrc.features.windows import build_features
from bio_mrc.training.config import TrainConfig
from bio_mrc.training.trainer import HeadRateTrainer, fresh_model_and_tokenizer, training_arguments
from reference_recipe import reference_load_squad, reference_train_features, reference_trainer, reference_training_arguments

import _common
import _training_epoch

NAME = "gpu_training"
DENSE_BF16_TFLOPS = {"H100": 989.0, "H200": 989.0, "A100": 312.0}  # by a word of torch.cuda.get_device_name
# The package's loading before WindowBatches: rows into the collator in the training process, NaN checked each step.
ROW_LOADING = {"dataloader_num_workers": 0, "dataloader_persistent_workers": False, "dataloader_prefetch_factor": None,
               "logging_nan_inf_filter": True}
VARIANT_TRAINING_ARGS = {"rows-32": ROW_LOADING, "ours-compile": {"torch_compile": True}}


VARIANTS = ("reference", "ours", "ours-32", "rows-32", "ours-compile")
# What makes the host wait for the device: on a GPU the runtime's synchronisations (a value read on the host, item,
# bool or a nonzero's size, makes one); without a device, the operators that would.
HOST_WAIT_CALLS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize")
HOST_WAIT_OPERATORS = ("aten::_local_scalar_dense", "aten::nonzero")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    _common.add_data_arguments(parser, "squad-v1.1/train.json", "SQuAD v1.1 training file")
    parser.add_argument("--encoder", default="default", help="encoder folder or id (default: the embedded one)")
    parser.add_argument("--limit", type=int, default=12000, help="training questions cut into windows (the pool)")
    parser.add_argument("--steps", type=int, default=80, help="steps of each timed epoch")
    parser.add_argument("--batch-size", type=int, default=128, help="windows a step for reference and ours")
    parser.add_argument("--warmup", type=int, default=5, help="steps of the throw-away run before each timed run")
    parser.add_argument("--max-seq-length", type=int, default=384)
    parser.add_argument("--doc-stride", type=int, default=128)
    parser.add_argument("--variants", default="reference,ours,ours-32,rows-32")
    parser.add_argument("--peak-tflops", type=float, default=None, help="the GPU's dense bf16 TFLOP/s (default: by name)")
    parser.add_argument("--profile-steps", type=int, default=0,
                        help="then profile each variant over this many steps (0: no profile)")
    parser.add_argument("--output", default=None, help="also write the JSON result to this file")
    parser.add_argument("--old-tree", default=None,
                        help="first train an epoch by this checkout's package and by DIR's, alternately (a checkout)")
    parser.add_argument("--repeats", type=int, default=2, help="epochs by each package with --old-tree")
    parser.add_argument("--checkpoint-steps", type=int, default=250,
                        help="steps between the checkpoints of an --old-tree epoch (250, the GPU configs'; 0: none)")
    args = parser.parse_args()
    unknown = sorted(set(variant.strip() for variant in args.variants.split(",")) - set(VARIANTS))
    if unknown:
        _common.fail(f"--variants: unknown {', '.join(unknown)} (choose from {', '.join(VARIANTS)})")
    if args.profile_steps < 0:
        _common.fail(f"--profile-steps must be 0 (no profile) or more, got {args.profile_steps}")
    if args.steps < 2:
        _common.fail(f"--steps must be at least 2 (an epoch is timed from the end of its first step), got {args.steps}")
    if args.repeats < 1:
        _common.fail(f"--repeats must be at least 1, got {args.repeats}")
    if args.checkpoint_steps < 0:
        _common.fail(f"--checkpoint-steps must be 0 (no checkpoints) or more, got {args.checkpoint_steps}")
    _common.check_old_tree(args.old_tree)
    try:  # windows the package refuses end here, in one line
        TrainConfig(max_seq_length=args.max_seq_length, doc_stride=args.doc_stride, batch_size=args.batch_size, epochs=1.0)
    except BioMrcError as error:
        _common.fail(f"error: {error}")
    args.data = _common.data_file(args, "squad-v1.1/train.json")
    return args


class StepClock(TrainerCallback):
    """CUDA-synchronised time at the end of every step."""

    def __init__(self) -> None:
        self.ends: list[float] = []

    def on_step_end(self, args, state, control, **kwargs):
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        self.ends.append(time.perf_counter())


class StepProfiler(TrainerCallback):
    """``torch.profiler`` over steps ``start`` to ``start + count - 1`` (1-based), then :func:`profile_summary` of them."""

    def __init__(self, start: int, count: int) -> None:
        self.start, self.count, self.profile, self.wall, self._began = start, count, None, 0.0, 0.0

    def on_step_begin(self, args, state, control, **kwargs):
        if state.global_step + 1 == self.start:
            activities = [torch.profiler.ProfilerActivity.CPU]
            if torch.cuda.is_available():
                activities.append(torch.profiler.ProfilerActivity.CUDA)
                torch.cuda.synchronize()
            self.profile = torch.profiler.profile(activities=activities)
            self.profile.__enter__()
            self._began = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):
        if self.profile is not None and state.global_step == self.start + self.count - 1:
            if torch.cuda.is_available():
                torch.cuda.synchronize()
            self.wall = time.perf_counter() - self._began
            self.profile.__exit__(None, None, None)


def profile_summary(profile: Any, steps: int, wall_seconds: float) -> dict[str, float | None]:
    """Per step of a profile over ``steps`` steps lasting ``wall_seconds``: wall ms, the device's busy ms (its kernels'
    own time) and kernels (None without a device), the operators the host dispatched (``aten::`` calls not made by
    another ``aten::`` call: the forward's, autograd's and the optimizer's), and its waits for the device."""
    events, device = profile.events(), torch.cuda.is_available()
    on_device = [e for e in events if e.device_type == torch.autograd.DeviceType.CUDA]
    waits = sum(1 for e in events if e.name in (HOST_WAIT_CALLS if device else HOST_WAIT_OPERATORS))
    operators = sum(1 for e in events if e.name.startswith("aten::") and not _called_by_an_operator(e))
    busy_us = sum(e.self_device_time_total for e in on_device)
    return {"wall_ms": round(1000 * wall_seconds / steps, 3),
            "device_busy_ms": round(busy_us / 1000 / steps, 3) if device else None,
            "kernels": round(len(on_device) / steps, 1) if device else None,
            "operators": round(operators / steps, 1), "host_waits": round(waits / steps, 2)}


def _called_by_an_operator(event: Any) -> bool:
    parent = event.cpu_parent
    return parent is not None and parent.name.startswith("aten::")


@dataclass
class Timed:
    variant: str
    batch_size: int
    steps: int
    seconds: float  # from the end of step 1 to the end of the last
    windows: int  # windows of steps 2..last
    tokens: int  # tokens fed (padding included) in steps 2..last

    @property
    def windows_per_s(self) -> float:
        return self.windows / self.seconds


class BatchShapes:
    """The (windows, padded width) of every batch the model is given, recorded by a forward pre-hook: in the
    training process, wherever the loader's workers collate."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.shapes: list[tuple[int, int]] = []
        model.register_forward_pre_hook(self._record, with_kwargs=True)

    def _record(self, module, args, kwargs) -> None:
        ids = kwargs.get("input_ids", args[0] if args else None)
        if ids is not None and module.training:
            self.shapes.append(tuple(ids.shape))


def our_trainer(config: TrainConfig, windows: datasets.Dataset, out: str, steps: int | None, variant: str,
                callbacks: list) -> tuple[Any, BatchShapes]:
    set_seed(config.seed)
    model, tokenizer, _ = fresh_model_and_tokenizer(config)
    rows = variant.startswith("rows")
    extra = VARIANT_TRAINING_ARGS.get(variant, {})
    config = replace(config, training_args={**extra, **({"max_steps": steps} if steps else {})})
    args = training_arguments(config, Path(out), save_checkpoints=False, progress=False, checkpoint_steps=None)
    trainer = HeadRateTrainer(model=model, head_learning_rate=config.head_learning_rate, args=args,
                              train_dataset=windows if rows else WindowBatches(windows),
                              data_collator=WindowCollator(pad_token_id=tokenizer.pad_token_id or 0), callbacks=callbacks)
    trainer.remove_callback(PrinterCallback)
    return trainer, BatchShapes(model)


def reference_run(encoder: str, tokenizer, windows: datasets.Dataset, batch_size: int, out: str, steps: int | None,
                  callbacks: list) -> tuple[Any, BatchShapes]:
    set_seed(42)
    model = AutoModelForQuestionAnswering.from_pretrained(encoder)
    args = reference_training_arguments(out, batch_size=batch_size, num_train_epochs=1, max_steps=steps or -1, bf16=True,
                                        use_cpu=not torch.cuda.is_available(),
                                        dataloader_pin_memory=torch.cuda.is_available())
    trainer = reference_trainer(model, args, windows, tokenizer, callbacks=callbacks)
    trainer.remove_callback(PrinterCallback)
    return trainer, BatchShapes(model)


def timed_epoch(name: str, batch_size: int, build: Callable[[int | None, list], tuple[Any, BatchShapes]],
                warmup: int) -> Timed:
    build(warmup, [])[0].train()
    clock = StepClock()
    trainer, recorded = build(None, [clock])
    trainer.train()
    shapes = recorded.shapes[1 : len(clock.ends)]
    return Timed(name, batch_size, len(clock.ends), clock.ends[-1] - clock.ends[0], sum(s[0] for s in shapes),
                 sum(s[0] * s[1] for s in shapes))


def profiled_steps(name: str, build: Callable[[int | None, list], tuple[Any, BatchShapes]], warmup: int, steps: int,
                   output: str | None) -> dict[str, float]:
    """The variant trained for ``warmup + steps`` steps, the last ``steps`` profiled; its operator table and its
    timeline written beside ``output`` when given."""
    profiler = StepProfiler(warmup + 1, steps)
    build(warmup + steps, [profiler])[0].train()
    if output:
        sort = "self_device_time_total" if torch.cuda.is_available() else "self_cpu_time_total"
        table = profiler.profile.key_averages().table(sort_by=sort, row_limit=40)
        Path(f"{output}.{name}.profile.txt").write_text(table + "\n")
        profiler.profile.export_chrome_trace(f"{output}.{name}.trace.json.gz")
    return profile_summary(profiler.profile, steps, profiler.wall)


def pools(args: argparse.Namespace, tokenizer, config: TrainConfig) -> tuple[datasets.Dataset | None, datasets.Dataset]:
    """The recipe's windows (where a variant asks for them, else None) and the package's, of the first ``--limit``
    questions."""
    reference = None
    if "reference" in variant_names(args):
        reference = reference_train_features(reference_load_squad(args.data, args.limit), tokenizer, args.max_seq_length,
                                             args.doc_stride)
    ours = build_features(load_squad(args.data, limit=args.limit).examples, tokenizer, config.features,
                          desc="training windows", heads=["span", "bio"])
    ours = ours.remove_columns(["offset_mapping", "word_offsets", "example_index", "answer_in_window"])
    return reference, ours


def non_embedding_parameters(encoder: str) -> int:
    model = AutoModelForQuestionAnswering.from_pretrained(encoder)
    embeddings = sum(p.numel() for name, p in model.named_parameters() if "embeddings" in name)
    return sum(p.numel() for p in model.parameters()) - embeddings


def peak_tflops(args: argparse.Namespace) -> tuple[str, float | None]:
    if not torch.cuda.is_available():
        return "no GPU", args.peak_tflops
    name = torch.cuda.get_device_name(0)
    known = next((value for word, value in DENSE_BF16_TFLOPS.items() if word in name), None)
    return name, args.peak_tflops or known


def variant_builder(variant: str, batch: int, needed: int, encoder: str, tokenizer, config: TrainConfig,
                    pools_: tuple[datasets.Dataset, datasets.Dataset], out: str) -> Callable:
    """The variant's set-up, given its step limit (None: the epoch) and callbacks, on its first ``needed`` windows."""
    if variant == "reference":
        windows = pools_[0].select(range(needed))
        return lambda steps, callbacks: reference_run(encoder, tokenizer, windows, batch, out, steps, callbacks)
    windows, ours = pools_[1].select(range(needed)), replace(config, batch_size=batch)
    return lambda steps, callbacks: our_trainer(ours, windows, out, steps, variant, callbacks)


def variant_names(args: argparse.Namespace) -> list[str]:
    return [variant.strip() for variant in args.variants.split(",")]


def package_epochs(args: argparse.Namespace, encoder: str) -> dict[str, Any]:
    """With ``--old-tree``: the epochs by both packages, alternately, and their table's JSON fields; else none."""
    if not args.old_tree:
        return {}
    settings = {"data": str(Path(args.data).resolve()), "limit": args.limit, "batch_size": args.batch_size,
                "max_seq_length": args.max_seq_length, "doc_stride": args.doc_stride,
                "checkpoint_steps": args.checkpoint_steps,
                "encoder": str(Path(encoder).resolve()) if Path(encoder).exists() else encoder}
    return {"old_tree": args.old_tree, **_training_epoch.print_epochs(_training_epoch.compare_epochs(settings, args.old_tree, args.repeats))}


def main(args: argparse.Namespace) -> None:
    datasets.disable_progress_bars()
    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    encoder = resolve_encoder(args.encoder)
    epochs = package_epochs(args, encoder)  # before this process's own work, so each epoch has the machine alone
    tokenizer = load_tokenizer(encoder)
    config = TrainConfig(encoder=encoder, max_seq_length=args.max_seq_length, doc_stride=args.doc_stride,
                         precision="bf16", epochs=1.0)
    reference_pool, our_pool = pools(args, tokenizer, config)
    gpu, peak = peak_tflops(args)
    print(f"machine: {_common.machine_description()}; GPU {gpu}; {_common.command_load_and_date()}", flush=True)
    runs: dict[str, Timed] = {}
    profiles: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-gpu-training-") as out:  # the Trainers' output folders, removed at the end
        for variant in variant_names(args):
            batch = 32 if variant.endswith("-32") else args.batch_size
            needed = args.steps * batch
            if min(len(pool) for pool in (reference_pool, our_pool) if pool is not None) < needed:
                _common.fail(f"--limit {args.limit} gives {len(our_pool)} windows, fewer than --steps x {batch} = {needed}")
            build = variant_builder(variant, batch, needed, encoder, tokenizer, config, (reference_pool, our_pool), out)
            runs[variant] = timed_epoch(variant, batch, build, args.warmup)
            print(f"{variant}: batch {batch}, {runs[variant].steps} steps, {runs[variant].windows_per_s:,.0f} windows/s", flush=True)
            if args.profile_steps:
                profiles[variant] = profiled_steps(variant, build, args.warmup, args.profile_steps, args.output)
                print(f"{variant}: a profiled step {profiles[variant]}", flush=True)
    report(args, runs, non_embedding_parameters(encoder), gpu, peak, profiles, epochs)


def report(args: argparse.Namespace, runs: dict[str, Timed], parameters: int, gpu: str, peak: float | None,
           profiles: dict[str, dict[str, float]], epochs: dict[str, Any]) -> None:
    print(f"\n| variant | batch | windows/s | tokens/s | model TFLOP/s | share of {peak or '?'} TFLOP/s |")
    print("| --- | --- | --- | --- | --- | --- |")
    for run in runs.values():
        tokens_s = run.tokens / run.seconds
        tflops = 6 * parameters * tokens_s / 1e12
        share = f"{100 * tflops / peak:.1f}%" if peak else "n/a"
        print(f"| {run.variant} | {run.batch_size} | {run.windows_per_s:,.0f} | {tokens_s:,.0f} | {tflops:.1f} | {share} |")
    result = {"benchmark": NAME, "gpu": gpu, "machine": _common.machine_description(), "date": time.strftime("%Y-%m-%d"),
              "batch_size": args.batch_size, "steps": args.steps,
              **{f"{name}_windows_s": round(run.windows_per_s, 1) for name, run in runs.items()},
              **{f"{name}_profile": profile for name, profile in profiles.items()}, **epochs}
    if "reference" in runs and "ours" in runs:
        result["ratio"] = round(runs["ours"].windows_per_s / runs["reference"].windows_per_s, 3)
    if "rows-32" in runs and "ours-32" in runs:
        result["loading_ratio_32"] = round(runs["ours-32"].windows_per_s / runs["rows-32"].windows_per_s, 3)
    line = json.dumps(result)
    if args.output:
        Path(args.output).write_text(line + "\n")
    print(line)


if __name__ == "__main__":
    main(parse_args())
