"""Training throughput (windows/s): bio_mrc's training path vs the Hugging Face QA recipe.

Both sides fine-tune the default encoder (all-MiniLM-L6-v2, H = 384) on the CPU, in the same
process, on the SAME training windows: the first ``--limit`` SQuAD v1.1 training questions are cut
into windows of ``--max-seq-length`` 384 tokens with ``--doc-stride`` 128 (the training defaults),
and the first ``--steps`` x ``--batch-size`` windows (in file order) are the training set. Each
timed run is exactly one epoch over those windows: ``--steps`` optimizer steps in which every
window is seen once, whatever the sampler. (Timing a fixed number of steps out of a longer epoch
would not be fair: the length-grouped sampler puts its longest batch first and sorts each
mega-batch longest to shortest, so the steps timed would decide the windows' lengths.) Before each
timed run, ``--warmup`` steps of a throw-away run of the same set-up pay torch's first-call costs;
they are not timed. A step's time is from the end of the previous step (the epoch's start for the
first) to the end of this one: data loading, collation, forward, backward and the optimizer step.

THE REFERENCE (``reference_recipe.py``, shared by the benchmarks of this folder) is the recipe of
Hugging Face's ``run_qa.py``: ``prepare_train_features`` with ``padding="max_length"`` (every
window padded to 384), mapped with ``datasets``; a plain ``AutoModelForQuestionAnswering`` loaded
from the encoder folder ``bio_mrc.encoders.resolve_encoder("default")`` (``BertForQuestionAnswering``:
the encoder and a fresh ``Linear(H, 2)``); ``Trainer`` with its defaults: the random sampler and
``default_data_collator`` (fixed-width batches of 16 x 384).

OURS is the training path of ``bio_mrc.training.train.train_model`` built from its own pieces (so
that the training set can be the same windows; ``train_model`` itself builds its windows from whole
questions and saves a model at the end): ``build_features`` (no padding; span and BIO targets),
the columns ``build_trainer`` removes, ``WindowBatches`` (one Arrow table per batch), ``WindowCollator``
(each batch padded to its longest window, rounded up to a multiple of 8), ``HeadRateTrainer`` with ``training_arguments`` (length-grouped
batches from ``EpochSeededLengthGroupedSampler``, the heads at their own learning rate) and the
joint model (span + BIO heads) from ``fresh_model_and_tokenizer``. Variants on the same windows:

* ``random`` (ours, random batches): the same, with ``train_sampling_strategy="random"`` (dynamic padding
  alone, without length grouping);
* ``span`` (ours, span head only): ``heads="span"``, the same collator and features, so the same batches
  of the same windows as the joint model (checked) with one head less: the joint model's cost.

The heads' own cost is also measured without the encoder: span head vs span + BIO heads, forward,
loss and backward on random hidden states of the joint run's batch shapes (low noise).

``identical`` (the JSON's last field) means: the two featurisations give the same training windows
(the same token ids, token types and start/end targets for every one of the windows trained on), and
every timed run, of every variant, saw each of those windows exactly once in ``--steps`` steps.
It says nothing about weights: the samplers, models and learning rates differ by design.

    python benchmarks/bench_training.py [--limit 400] [--steps 20] [--batch-size 16] [--warmup 2] [--repeats 1]

The last line is one JSON object:
``{"benchmark": "training_throughput", "reference_s": ..., "ours_s": ..., "ratio": ..., "identical": ..., "machine": ...}``
(seconds of the timed epoch, medians over ``--repeats``; ratio = reference seconds / ours, which is
ours' windows/s over the reference's since both train on the same windows).
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import functools
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import datasets
import numpy as np
import pyarrow as pa
import torch
import transformers
from transformers import AutoModelForQuestionAnswering, PrinterCallback, TrainerCallback, set_seed
from transformers.trainer_pt_utils import get_length_grouped_indices

from bio_mrc import registry
from bio_mrc.data.squad import load_squad
from bio_mrc.encoders import load_tokenizer, resolve_encoder
from bio_mrc.errors import BioMrcError
from bio_mrc.features.collate import WindowBatches, WindowCollator
from bio_mrc.features.windows import build_features
from bio_mrc.training.config import TrainConfig
from bio_mrc.training.trainer import HeadRateTrainer, fresh_model_and_tokenizer, training_arguments
from reference_recipe import (
    reference_load_squad,
    reference_train_features,
    reference_trainer,
    reference_training_arguments,
)

import _common

NAME = "training_throughput"
VARIANTS = {  # key: what the table calls it
    "reference": "reference (padded to max_seq_length, random batches, span head)",
    "ours": "ours (dynamic padding, length-grouped batches, span + BIO heads)",
    "random": "ours, random batches (dynamic padding alone)",
    "span": "ours, span head only (same batches as ours)",
}


def parse_args() -> argparse.Namespace:
    """The options, with the data checked: a missing file ends here, before any work."""
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        epilog="Prints the featurisation times, each variant's set-up and timed epoch, windows/s, tokens fed, "
               "the effect of length grouping and of the BIO head; the last line is the JSON summary.")
    _common.add_data_arguments(parser, "squad-v1.1/train.json", "SQuAD v1.1 training JSON")
    parser.add_argument("--limit", type=int, default=400,
                        help="first N training questions, the pool of windows (must give at least STEPS x BATCH_SIZE windows)")
    parser.add_argument("--steps", type=int, default=20,
                        help="timed optimizer steps = one epoch over the first STEPS x BATCH_SIZE windows of the pool")
    parser.add_argument("--batch-size", type=int, default=16, help="training windows per step (both sides)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps of a throw-away run before each timed run")
    parser.add_argument("--max-seq-length", type=int, default=384)
    parser.add_argument("--doc-stride", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=1, help="timed epochs per variant (alternating); medians are reported")
    parser.add_argument("--variants", default=",".join(VARIANTS),
                        help="comma-separated subset of: " + "; ".join(f"{k} = {v}" for k, v in VARIANTS.items())
                        + " (reference and ours always run)")
    parser.add_argument("--heads-repeats", type=int, default=3, help="repeats of the heads-alone measurement (0: skip it)")
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads for every run (default: torch's)")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--dump", default=None, help="write every timed step (variant, repeat, seconds, windows, padded width) to this JSON file")
    parser.add_argument("--project", type=int, nargs="*", default=[3000, 0],
                        help="also compute the tokens each sampler feeds on one epoch of the first N training questions "
                             "(0 = all 87,599), to see how the timed subset compares with a real training set")
    args = parser.parse_args()
    unknown = sorted({v.strip() for v in args.variants.split(",")} - set(VARIANTS) - {""})
    if unknown:
        _common.fail(f"--variants: unknown {', '.join(unknown)} (choose from {', '.join(VARIANTS)})")
    train_config(args)  # windows the package refuses end here, in one line
    args.data = _common.data_file(args, "squad-v1.1/train.json")
    return args


def train_config(args: argparse.Namespace) -> TrainConfig:
    try:
        return TrainConfig(max_seq_length=args.max_seq_length, doc_stride=args.doc_stride, batch_size=args.batch_size,
                           seed=args.seed, epochs=1.0)
    except BioMrcError as error:
        _common.fail(f"error: {error}")


class StepClock(TrainerCallback):
    """Times of the epoch's start and of each step's end; set-up = train() call -> on_train_begin."""

    def __init__(self) -> None:
        self.called = self.train_begin = self.epoch_begin = None
        self.step_ends: list[float] = []

    def on_train_begin(self, args, state, control, **kwargs):
        self.train_begin = time.perf_counter()

    def on_epoch_begin(self, args, state, control, **kwargs):
        if self.epoch_begin is None:
            self.epoch_begin = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):
        self.step_ends.append(time.perf_counter())

    @property
    def step_seconds(self) -> list[float]:
        marks = [self.epoch_begin, *self.step_ends]
        return [b - a for a, b in zip(marks, marks[1:])]

    @property
    def setup_seconds(self) -> float:
        return self.train_begin - self.called


class RecordingCollator:
    """Wraps a collator; records each batch's windows (their unpadded token ids) and padded width."""

    def __init__(self, collate: Callable) -> None:
        self.collate = collate
        self.batches: list[tuple[list[tuple[int, ...]], int]] = []

    def __call__(self, features):
        batch = self.collate(features)
        rows = features.to_pylist() if isinstance(features, pa.Table) else features  # WindowBatches gives a table
        self.batches.append(([window_key(f) for f in rows], int(batch["input_ids"].shape[1])))
        return batch


def window_key(feature: dict[str, Any]) -> tuple[int, ...]:
    """A window's identity: its token ids without padding."""
    ids = list(feature["input_ids"])
    mask = feature.get("attention_mask")
    n = int(sum(mask)) if mask is not None else len(ids)
    return tuple(int(i) for i in ids[:n])


# ---------------------------------------------------------------------------------------------
# The runs: one set-up per variant, a throw-away warm-up, then one timed epoch.
# ---------------------------------------------------------------------------------------------


def reference_run(encoder: str, tokenizer, features: datasets.Dataset, batch_size: int, max_steps: int | None,
                  seed: int, out: str) -> tuple[StepClock, RecordingCollator, Any, Any]:
    set_seed(seed)
    model = AutoModelForQuestionAnswering.from_pretrained(encoder)
    args = reference_training_arguments(out, batch_size=batch_size, seed=seed, num_train_epochs=1,
                                        max_steps=max_steps or -1)
    clock = StepClock()
    trainer = reference_trainer(model, args, features, tokenizer, callbacks=[clock])
    trainer.remove_callback(PrinterCallback)  # the end-of-training log line; output only
    recorder = RecordingCollator(trainer.data_collator)
    trainer.data_collator = recorder
    clock.called = time.perf_counter()
    trainer.train()
    return clock, recorder, model, trainer


def ours_run(config: TrainConfig, features: datasets.Dataset, pad_id: int, max_steps: int | None, sampling: str,
             out: str) -> tuple[StepClock, RecordingCollator, Any, Any]:
    """bio_mrc's Trainer as ``train_model``/``_trainer`` build it, on the given windows."""
    set_seed(config.seed)
    model, _tokenizer, _encoder = fresh_model_and_tokenizer(config)
    args = training_arguments(config, Path(out), save_checkpoints=False, progress=False, checkpoint_steps=None)
    args.train_sampling_strategy = sampling
    if max_steps:
        args.max_steps = max_steps
    clock = StepClock()
    recorder = RecordingCollator(WindowCollator(pad_token_id=pad_id))
    trainer = HeadRateTrainer(model=model, head_learning_rate=config.head_learning_rate, args=args,
                              train_dataset=WindowBatches(features), data_collator=recorder, callbacks=[clock])
    trainer.remove_callback(PrinterCallback)
    clock.called = time.perf_counter()
    trainer.train()
    return clock, recorder, model, trainer


def tokens_fed(lengths: np.ndarray, batch_size: int, max_length: int, seed: int, curve=None) -> dict[str, float]:
    """Tokens fed per window over one epoch of these windows: padded to ``max_length`` (the reference),
    random batches padded to their longest (rounded up to 8, as WindowCollator), length-grouped batches;
    with a step-cost ``curve``, the predicted epoch seconds of each (a partial batch costs its share)."""
    grouped = get_length_grouped_indices(lengths.tolist(), batch_size, generator=torch.Generator().manual_seed(seed))
    shuffled = torch.randperm(len(lengths), generator=torch.Generator().manual_seed(seed)).numpy()
    result = {"real": float(lengths.mean()), "reference": float(max_length)}
    for name, order in (("random", shuffled), ("ours", grouped)):
        batches = batch_widths(lengths, order, batch_size)
        result[name] = sum(n * w for n, w in batches) / len(lengths)
        if curve is not None:
            result[f"{name} s"] = sum(np.polyval(curve, w) * n / batch_size for n, w in batches)
    if curve is not None:
        result["reference s"] = np.polyval(curve, max_length) * len(lengths) / batch_size
    return result


def pool_lengths(data: str, limit: int | None, tokenizer, max_length: int, stride: int) -> np.ndarray:
    """Window lengths of the first ``limit`` questions, tokenized as the recipe does (no padding)."""
    examples = reference_load_squad(data, limit)
    enc = tokenizer([q.lstrip() for q in examples["question"]], list(examples["context"]), truncation="only_second",
                    max_length=max_length, stride=stride, return_overflowing_tokens=True)
    return np.array([len(x) for x in enc["input_ids"]])


def step_cost_curve(results: dict[str, list], batch_size: int) -> tuple[np.ndarray, float] | None:
    """Seconds of one full-size step as a function of its padded width, fitted (least squares,
    quadratic: the attention's cost grows with the width squared) to every timed full-size step of
    every variant; returns (coefficients, highest power first) and R^2, None with too few steps."""
    widths, seconds = [], []
    for runs in results.values():
        for clock, recorder in runs:
            for sec, (keys, width) in zip(clock.step_seconds, recorder.batches):
                if len(keys) == batch_size:
                    widths.append(width)
                    seconds.append(sec)
    if len(set(widths)) < 3:
        return None
    widths, seconds = np.array(widths, float), np.array(seconds)
    coef = np.polyfit(widths, seconds, 2)
    r2 = 1 - np.sum((np.polyval(coef, widths) - seconds) ** 2) / np.sum((seconds - seconds.mean()) ** 2)
    return coef, float(r2)


def batch_widths(lengths: np.ndarray, order, batch_size: int) -> list[tuple[int, int]]:
    """(windows, padded width as WindowCollator pads it) of each batch of ``order``."""
    order, width = np.asarray(order), WindowCollator().padded_width
    return [(len(order[i : i + batch_size]), width(int(lengths[order[i : i + batch_size]].max())))
            for i in range(0, len(order), batch_size)]


def data_pipeline_seconds(trainer) -> float:
    """Seconds to fetch and collate one epoch of batches (no model): the data side of a step."""
    loader = trainer.get_train_dataloader()
    recorder = trainer.data_collator
    kept = list(recorder.batches)  # the timed epoch's record stays as it was
    _, seconds = _common.timed(lambda: collections.deque(loader, maxlen=0))  # every batch fetched, none kept
    recorder.batches[:] = kept
    return seconds


def heads_cost(model, features: datasets.Dataset, batches: list[list[int]], pad_id: int, repeats: int) -> tuple[float, float]:
    """Seconds per step of the heads alone (forward, loss, backward into the hidden states) on random
    hidden states of the given batches' shapes with their real masks and targets: span head, span + BIO."""
    collate = WindowCollator(pad_token_id=pad_id)
    collated = [collate([features[i] for i in rows]) for rows in batches]
    hidden_size = model.config.encoder.hidden_size
    weights = {name: registry.head(name).weight(model.config) for name in model.heads}
    generator = torch.Generator().manual_seed(0)
    states = [torch.randn(*b["input_ids"].shape, hidden_size, generator=generator) for b in collated]
    model.train()

    def step_all(names: tuple[str, ...]) -> None:
        for batch, hidden in zip(collated, states):
            h = hidden.clone().requires_grad_(True)
            losses = []
            for name in names:
                head = model.heads[name]
                logits = head(h)
                targets = {k: batch[k] for k in registry.head(name).targets}
                losses.append(weights[name] * head.loss(logits, attention_mask=batch["attention_mask"],
                                                        tag_mask=batch["tag_mask"], **targets))
            torch.stack(losses).sum().backward()

    step_all(("span", "bio"))  # untimed: first calls of the loss ops
    runs = [{names: _common.timed(functools.partial(step_all, names))[1] / len(collated) for names in (("span",), ("span", "bio"))}
            for _ in range(repeats)]
    medians = _common.median_times(runs)
    return medians[("span",)], medians[("span", "bio")]


# ---------------------------------------------------------------------------------------------
# The training windows, both featurisations, and their agreement
# ---------------------------------------------------------------------------------------------


def compare_windows(ref: datasets.Dataset, ours: datasets.Dataset) -> dict[str, int]:
    """Counts of windows whose unpadded ids, token types or start/end targets differ (same order)."""
    counts = collections.Counter()
    for r, o in zip(ref, ours):
        key = window_key(r)
        counts["ids"] += key != tuple(o["input_ids"])
        counts["token types"] += list(r["token_type_ids"][: len(key)]) != list(o["token_type_ids"])
        counts["start/end targets"] += (r["start_positions"], r["end_positions"]) != (o["start_positions"], o["end_positions"])
    counts["windows"] = len(ours)
    return counts


def saw_each_once(recorder: RecordingCollator, keys: collections.Counter, steps: int) -> bool:
    seen = collections.Counter(k for rows, _ in recorder.batches for k in rows)
    return seen == keys and len(recorder.batches) == steps


# ---------------------------------------------------------------------------------------------
# main: the untimed set-up, the timed runs (variants alternating), then the printed report
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Setup:
    """What every run shares, made before anything is timed."""

    variants: list[str]
    out: str
    n_windows: int
    encoder: str
    config: TrainConfig
    tokenizer: Any
    pad_id: int


@dataclasses.dataclass
class TrainingWindows:
    """Both featurisations' pools, the windows trained on, and their agreement."""

    ref_pool: datasets.Dataset
    our_pool: datasets.Dataset
    ref_feature_s: float
    our_feature_s: float
    ref_features: datasets.Dataset
    our_features: datasets.Dataset
    agreement: collections.Counter
    keys: collections.Counter  # each window's unpadded ids: what every timed epoch must see once
    index_of: dict[tuple[int, ...], int]
    lengths: np.ndarray


@dataclasses.dataclass
class Runs:
    """Every timed epoch's clock and recorded batches, by variant, and what was measured beside them."""

    results: dict[str, list[tuple[StepClock, RecordingCollator]]]
    pipeline: dict[str, float]
    joint_model: Any


@dataclasses.dataclass
class Summary:
    """The medians and checks the report prints."""

    seconds: dict[str, float]
    setup_s: dict[str, float]
    once: dict[str, bool]
    fed: dict[str, int]
    ratio: float
    identical: bool


def set_up(args: argparse.Namespace) -> Setup:
    if args.threads:
        torch.set_num_threads(args.threads)
    variants = [v for v in VARIANTS if v in {"reference", "ours", *[s.strip() for s in args.variants.split(",")]}]
    datasets.disable_progress_bars()
    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    out = tempfile.mkdtemp(prefix="bench-training-")
    encoder = resolve_encoder("default")
    config = train_config(args)
    tokenizer = load_tokenizer(encoder)
    return Setup(variants, out, args.steps * args.batch_size, encoder, config, tokenizer, tokenizer.pad_token_id or 0)


def featurise(args: argparse.Namespace, setup: Setup) -> TrainingWindows:
    """Both featurisations of the pool (untimed in the ratio; printed), cut to the windows trained on."""
    n_windows, tokenizer = setup.n_windows, setup.tokenizer
    times = _common.StageTimes()
    with times.stage("reference"):
        ref_examples = reference_load_squad(args.data, args.limit)
        ref_pool = reference_train_features(ref_examples, tokenizer, args.max_seq_length, args.doc_stride)
    with times.stage("ours"):
        squad = load_squad(args.data, limit=args.limit)
        our_pool = build_features(squad.examples, tokenizer, setup.config.features, desc="training windows")
        our_pool = our_pool.remove_columns(["offset_mapping", "word_offsets", "example_index"])  # as _trainer does
    ref_feature_s, our_feature_s = times["reference"], times["ours"]
    if min(len(ref_pool), len(our_pool)) < n_windows:
        raise SystemExit(f"--limit {args.limit} gives {len(our_pool)} windows (reference {len(ref_pool)}), fewer than "
                         f"--steps x --batch-size = {n_windows}: raise --limit")
    ref_features, our_features = ref_pool.select(range(n_windows)), our_pool.select(range(n_windows))
    agreement = compare_windows(ref_features, our_features)
    keys = collections.Counter(tuple(ids) for ids in our_features["input_ids"])
    index_of = {tuple(ids): i for i, ids in enumerate(our_features["input_ids"])}
    lengths = np.array([len(ids) for ids in our_features["input_ids"]])
    return TrainingWindows(ref_pool, our_pool, ref_feature_s, our_feature_s, ref_features, our_features, agreement,
                           keys, index_of, lengths)


def length_sets(args: argparse.Namespace, setup: Setup, lengths: np.ndarray) -> list[tuple[str, np.ndarray]]:
    """The timed windows' lengths and (untimed) those of real training sets, for the tokens-fed table."""
    sets = [(f"timed ({setup.n_windows})", lengths)]
    for n in args.project:
        sets.append((f"first {n:,} questions" if n else "all training questions", pool_lengths(
            args.data, n or None, setup.tokenizer, args.max_seq_length, args.doc_stride)))
    return sets


def runners(args: argparse.Namespace, setup: Setup, windows: TrainingWindows) -> dict[str, Callable]:
    """Each variant's run, given its step limit (None: the whole epoch)."""
    config, features, pad_id, out = setup.config, windows.our_features, setup.pad_id, setup.out
    span_config = TrainConfig(**{**config.__dict__, "heads": "span"})
    return {
        "reference": lambda steps: reference_run(setup.encoder, setup.tokenizer, windows.ref_features, args.batch_size,
                                                 steps, args.seed, out),
        "ours": lambda steps: ours_run(config, features, pad_id, steps, "group_by_length", out),
        "random": lambda steps: ours_run(config, features, pad_id, steps, "random", out),
        "span": lambda steps: ours_run(span_config, features, pad_id, steps, "group_by_length", out),
    }


def timed_runs(args: argparse.Namespace, setup: Setup, windows: TrainingWindows) -> Runs:
    """Warm-up + timed epochs, variants alternating within each repeat."""
    run = runners(args, setup, windows)
    results: dict[str, list[tuple[StepClock, RecordingCollator]]] = {v: [] for v in setup.variants}
    warm: dict[str, float] = {}
    pipeline: dict[str, float] = {}
    joint_model = None
    for repeat in range(args.repeats):
        for variant in setup.variants:
            _, warm[variant] = _common.timed(functools.partial(run[variant], args.warmup))
            outcome = run[variant](None)
            if variant == "ours":
                joint_model = outcome[2]
            if repeat == 0:
                pipeline[variant] = data_pipeline_seconds(outcome[3])
            results[variant].append(outcome[:2])
            clock = outcome[0]
            print(f"run {repeat + 1}/{args.repeats} {variant}: set-up {clock.setup_seconds:.2f} s, warm-up "
                  f"({args.warmup} steps, own run) {warm[variant]:.1f} s, timed epoch {sum(clock.step_seconds):.2f} s "
                  f"({len(clock.step_seconds)} steps)", flush=True)
    return Runs(results, pipeline, joint_model)


def summarise(args: argparse.Namespace, runs: Runs, windows: TrainingWindows) -> Summary:
    results = runs.results
    seconds = {v: statistics.median(sum(c.step_seconds) for c, _ in r) for v, r in results.items()}
    setup_s = {v: statistics.median(c.setup_seconds for c, _ in r) for v, r in results.items()}
    once = {v: all(saw_each_once(rec, windows.keys, args.steps) for _, rec in r) for v, r in results.items()}
    fed = {v: sum(len(rows) * width for rows, width in r[0][1].batches) for v, r in results.items()}
    ratio = seconds["reference"] / seconds["ours"]
    agreement = windows.agreement
    identical = all(agreement[k] == 0 for k in ("ids", "token types", "start/end targets")) and all(once.values())
    return Summary(seconds, setup_s, once, fed, ratio, identical)


def print_header(args: argparse.Namespace, setup: Setup, windows: TrainingWindows) -> str:
    """The set-up's lines; returns the machine's description (the JSON line names it)."""
    lengths = windows.lengths
    print()
    print(f"training throughput, SQuAD v1.1 {Path(args.data).name}: first {args.limit} questions -> {len(windows.our_pool)} windows "
          f"(reference {len(windows.ref_pool)}); trained on the first {setup.n_windows} ({args.steps} steps x {args.batch_size}), "
          f"max_seq_length {args.max_seq_length}, stride {args.doc_stride}, encoder {setup.encoder}")
    machine = _common.machine_description()
    print(f"machine: {machine}; transformers {transformers.__version__}, datasets {datasets.__version__}; "
          f"{_common.command_load_and_date()} at the end; median of {args.repeats} timed epoch(s) per variant")
    print(f"windows trained on: mean length {lengths.mean():.1f} tokens, {100 * np.mean(lengths == args.max_seq_length):.1f}% "
          f"at {args.max_seq_length}; featurisation of the pool: reference {windows.ref_feature_s:.2f} s, ours {windows.our_feature_s:.2f} s")
    return machine


def print_variant_table(args: argparse.Namespace, setup: Setup, runs: Runs, summary: Summary) -> None:
    seconds, fed = summary.seconds, summary.fed
    print()
    print("| variant | set-up (s) | timed epoch (s) | windows/s | s/step (median) | of which data: fetch + collate (s/step) "
          "| tokens fed / reference's | vs reference |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for v in setup.variants:
        steps = [s for c, _ in runs.results[v] for s in c.step_seconds]
        print(f"| {VARIANTS[v]} | {summary.setup_s[v]:.2f} | {seconds[v]:.2f} | {setup.n_windows / seconds[v]:.2f} | "
              f"{statistics.median(steps):.3f} | {runs.pipeline[v] / args.steps:.3f} | {fed[v] / fed['reference']:.3f} | "
              f"{seconds['reference'] / seconds[v]:.2f}x |")


def print_ratios(setup: Setup, runs: Runs, summary: Summary) -> None:
    """The ratio, per repeat and on the fastest epochs, and what length grouping alone gives."""
    results, seconds, ratio = runs.results, summary.seconds, summary.ratio
    print()
    print(f"ratio (reference / ours, = ours' windows/s over the reference's): {ratio:.2f}x (target >= 2x: {'met' if ratio >= 2 else 'missed'})")
    per_repeat = [sum(r[0].step_seconds) / sum(o[0].step_seconds) for r, o in zip(results["reference"], results["ours"])]
    fastest = {v: min(sum(c.step_seconds) for c, _ in r) for v, r in results.items()}
    print(f"per repeat (reference / ours, run back to back): {', '.join(f'{x:.2f}x' for x in per_repeat)}; "
          f"fastest epochs (noise only adds time): reference {fastest['reference']:.2f} s, ours {fastest['ours']:.2f} s, "
          f"{fastest['reference'] / fastest['ours']:.2f}x" + "".join(
              f"; {v} {fastest[v]:.2f} s" for v in setup.variants if v not in ("reference", "ours")))
    if "random" in seconds:
        print(f"length grouping alone (dynamic padding with random batches -> with length-grouped batches): "
              f"{seconds['random'] / seconds['ours']:.2f}x; dynamic padding alone against the reference: "
              f"{seconds['reference'] / seconds['random']:.2f}x")


def print_bio_head_cost(args: argparse.Namespace, setup: Setup, windows: TrainingWindows, runs: Runs, summary: Summary) -> None:
    """The joint model against the span head alone on the same batches, then the heads alone (measured here)."""
    results, seconds = runs.results, summary.seconds
    same = all(j[1].batches == s[1].batches for j, s in zip(results["ours"], results["span"]))
    paired = [jt / st for j, s in zip(results["ours"], results["span"])
              for jt, st in zip(j[0].step_seconds, s[0].step_seconds)]
    extra = seconds["ours"] / seconds["span"] - 1
    print(f"joint model vs span head only, same batches of the same windows ({'checked: identical batches' if same else 'BATCHES DIFFER'}): "
          f"epoch {100 * extra:+.1f}%, median per-step ratio {100 * (statistics.median(paired) - 1):+.1f}% "
          f"(target <= +3%: {'met' if extra <= 0.03 else 'missed'} on the epoch; run-to-run noise on this machine is of that order)")
    if args.heads_repeats and runs.joint_model is not None:
        batches = [[windows.index_of[k] for k in rows] for rows, _ in results["ours"][0][1].batches]
        span_s, joint_s = heads_cost(runs.joint_model, windows.our_features, batches, setup.pad_id, args.heads_repeats)
        step = seconds["span"] / args.steps
        print(f"heads alone (forward + loss + backward into the hidden states, random states of the same batch shapes): "
              f"span {1000 * span_s:.1f} ms/step, span + BIO {1000 * joint_s:.1f} ms/step; the BIO head adds "
              f"{1000 * (joint_s - span_s):.1f} ms = {100 * (joint_s - span_s) / step:.2f}% of a span-only step "
              f"({1000 * step:.0f} ms)")


def dump_steps(path: str, results: dict[str, list[tuple[StepClock, RecordingCollator]]]) -> None:
    """Every timed step (variant, repeat, seconds, windows, padded width) as JSON."""
    steps_out = [{"variant": v, "repeat": r, "seconds": sec, "windows": len(keys), "width": width}
                 for v, runs in results.items() for r, (clock, recorder) in enumerate(runs)
                 for sec, (keys, width) in zip(clock.step_seconds, recorder.batches)]
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(steps_out))


def print_step_cost(args: argparse.Namespace, results: dict[str, list[tuple[StepClock, RecordingCollator]]]) -> np.ndarray | None:
    """The fitted step cost by padded width, printed; returns its coefficients (None without a fit)."""
    fit = step_cost_curve(results, args.batch_size)
    if fit is None:
        return None
    curve, r2 = fit
    at = {w: np.polyval(curve, w) for w in (128, 192, 256, args.max_seq_length)}
    reference_step = statistics.median(s for c, _ in results["reference"] for s in c.step_seconds)
    ours_full = [sec for c, r in results["ours"] for sec, (k, w) in zip(c.step_seconds, r.batches) if w == args.max_seq_length]
    print(f"step cost by padded width ({args.batch_size} windows; quadratic fit to every full-size timed step of every "
          f"variant, R^2 {r2:.3f}): " + ", ".join(f"{w}: {sec:.2f} s" for w, sec in at.items())
          + f"; at width {args.max_seq_length} the reference's steps (median {reference_step:.2f} s) "
          f"and ours' ({statistics.median(ours_full or [float('nan')]):.2f} s) cost the same: "
          "the gain is the padding not fed")
    return curve


def print_tokens_fed(args: argparse.Namespace, sets: list[tuple[str, np.ndarray]], curve: np.ndarray | None) -> None:
    print()
    print("tokens fed per window over one epoch (padding included), by sampler: the timed windows and whole training sets")
    print("(predicted: reference / ours epoch seconds from the step-cost curve above)")
    print("| windows | count | real tokens | reference (padded) | ours, random batches | ours, length-grouped | "
          "tokens, reference / ours | predicted speed-up: random batches | predicted speed-up: ours |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, values in sets:
        fed_ = tokens_fed(values, args.batch_size, args.max_seq_length, args.seed, curve)
        predicted = (f"{fed_['reference s'] / fed_['random s']:.2f}x | {fed_['reference s'] / fed_['ours s']:.2f}x"
                     if curve is not None else "- | -")
        print(f"| {name} | {len(values):,} | {fed_['real']:.1f} | {fed_['reference']:.0f} | {fed_['random']:.1f} | "
              f"{fed_['ours']:.1f} | {fed_['reference'] / fed_['ours']:.2f}x | {predicted} |")


def print_agreement(setup: Setup, agreement: collections.Counter, once: dict[str, bool]) -> None:
    print(f"same windows: {agreement['windows'] - agreement['ids']}/{agreement['windows']} identical token ids, "
          f"{agreement['windows'] - agreement['token types']} identical token types, "
          f"{agreement['windows'] - agreement['start/end targets']} identical start/end targets; "
          f"each window seen exactly once per timed epoch: {', '.join(f'{v} {once[v]}' for v in setup.variants)}")


def main(args: argparse.Namespace) -> None:
    setup = set_up(args)
    windows = featurise(args, setup)
    sets = length_sets(args, setup, windows.lengths)  # untimed, before the timed runs
    runs = timed_runs(args, setup, windows)
    summary = summarise(args, runs, windows)
    machine = print_header(args, setup, windows)
    print_variant_table(args, setup, runs, summary)
    print_ratios(setup, runs, summary)
    if "span" in summary.seconds:
        print_bio_head_cost(args, setup, windows, runs, summary)
    if args.dump:
        dump_steps(args.dump, runs.results)
    curve = print_step_cost(args, runs.results)
    print_tokens_fed(args, sets, curve)
    print_agreement(setup, windows.agreement, summary.once)
    print(json_line(NAME, summary.seconds["reference"], summary.seconds["ours"], summary.ratio, summary.identical, machine))


def json_line(name: str, reference_s: float, ours_s: float, ratio: float, identical: bool, machine: str) -> str:
    return json.dumps({"benchmark": name, "reference_s": round(reference_s, 3), "ours_s": round(ours_s, 3),
                       "ratio": round(ratio, 3), "identical": bool(identical), "machine": machine})


if __name__ == "__main__":
    main(parse_args())
