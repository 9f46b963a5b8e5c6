"""Training speed against the hardware's rate: the package's training defaults against a baseline.

The baseline is fp32 with the encoder's own dropout (0.1) and the unfused AdamW; the package's defaults
are bf16 where native, no encoder dropout and the fused AdamW. In one run, on this machine:

* the matrix-product rate, fp32 and bf16 (``torch.matmul`` of two 2048 x 2048 matrices, best of 10): the
  ceiling every share below is taken of;
* one training step (forward, backward, AdamW) of the joint model on the default encoder, on a fixed batch
  of 16 windows of 256 tokens (every other one ending in 16 padding tokens), under each setting (the baseline;
  bf16 with the encoder's dropout; bf16 with attention dropout 0 alone; bf16 and no encoder dropout; the
  package's defaults: that and a fused AdamW; the defaults with ``torch.compile`` of the encoder; the defaults
  with the attention alone in fp32, as ``auto`` trains where it measures that faster; the defaults with
  PyTorch's math attention or transformers' eager attention instead of the fused kernel; the defaults
  in fp32, as ``auto`` trains where bf16 is emulated or measures slower): windows/s and GFLOP/s (the
  forward's FLOPs in eval mode counted by ``torch.utils.flop_counter``, x3 for a training step) as a share of
  the matching precision's matrix-product rate; the forward alone (eval mode) likewise;
* one layer's fused attention alone (PyTorch's SDPA on the batch's shapes and padding mask) in fp32 and in
  bf16, forward and forward + backward: what the attention costs a step in each precision;
* with ``--profile``, the training step of the defaults as ``auto`` trains them here (precision and attention) under
  ``torch.profiler``: its largest operators by self CPU time (what a step spends its time in beside the products);
* training through the package (``train_model``, as ``bio-mrc train`` and ``compare`` run it) on the first
  ``--train-questions`` SQuAD v1.1 training questions (length-grouped batches of real windows), the baseline
  against the defaults: windows/s, their ratio and the padding share. The baseline's optimizer is chosen
  through ``TrainConfig.training_args`` (``{"optim": "adamw_torch"}``).

    python benchmarks/bench_training_speed.py [--train-questions 400] [--steps 10] [--threads N] [--profile] [--skip-emulated]

``--skip-emulated`` leaves out the bf16 settings and the bf16 matrix rate where bf16 is emulated (no native bf16 on this
CPU), where each such setting's steps take minutes; the fixed attention's bf16 times stay (a few seconds).

The last line is one JSON object: ``{"benchmark": "training_speed", "machine": ..., "matmul_gflops": ... (bf16 null when skipped),
"steps": {setting: ...} (the settings that ran), "package": {"baseline": ..., "defaults": ..., "padding_share": ...},
"package_ratio": the defaults' windows/s over the baseline's, "attention_alone": {precision: {"forward_ms",
"forward_backward_ms"}}, "profile": {"setting", "precision", "ops": [{"op", "share",
"ms_per_step", "calls_per_step"}]} or null}``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.profiler import ProfilerActivity, profile
from torch.utils.flop_counter import FlopCounterMode
from transformers.trainer_pt_utils import get_length_grouped_indices

from bench_precision import training_throughput  # windows/s of train_model, timed by step ends
from bio_mrc.data.squad import load_squad
from bio_mrc.encoders import load_tokenizer, resolve_encoder
from bio_mrc.features.windows import build_features
from bio_mrc.fp32_attention import ATTENTION_NAME, train_attention_in_fp32
from bio_mrc.model import BioMrcForQuestionAnswering
from bio_mrc.precision import autocast, cpu_name, native_bf16
from bio_mrc.training.train import TrainConfig
from bio_mrc.training.trainer import OPTIMIZER

import _common


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", default=None,
                        help="folder with squad-v1.1/ (default: $BIO_MRC_DATA, else ../shared/data beside the repository)")
    parser.add_argument("--train-questions", type=int, default=400, help="questions of the package-level run (0: skip it)")
    parser.add_argument("--steps", type=int, default=10, help="timed training steps per setting (after 3 untimed)")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    parser.add_argument("--profile", action="store_true",
                        help="also profile the training step of the defaults as auto trains them here: its largest operators")
    parser.add_argument("--skip-emulated", action="store_true",
                        help="where bf16 is emulated (no native bf16 on this CPU), leave out the bf16 settings and rate")
    args = parser.parse_args()
    args.settings = settings_to_run(args.skip_emulated, native_bf16("cpu"))
    args.train = str(_common.require_data(_common.data_root(args) / "squad-v1.1" / "train.json")) if args.train_questions else None
    return args


BATCH, TOKENS = 16, 256
PADDED = 16  # padding tokens at the end of every other window (3% of the batch; SQuAD's length-grouped batches: about 5%)
WARMUP_STEPS = 3
PROFILE_ROWS = 12
# attention path -> (transformers' attn_implementation, the SDPA backends it may use; None: PyTorch's choice);
# "fp32": SDPA with the attention alone in fp32 inside bf16 (bio_mrc.fp32_attention, where auto measures it faster)
ATTENTION = {"sdpa": ("sdpa", None), "math": ("sdpa", [SDPBackend.MATH]), "eager": ("eager", None), "fp32": (ATTENTION_NAME, None)}
BASELINE, DEFAULTS = "baseline (fp32, dropout 0.1)", "package defaults (bf16, no encoder dropout, fused AdamW)"
FP32_DEFAULTS = "package defaults in fp32 (where auto trains in fp32: no encoder dropout, fused AdamW)"
FP32_ATTENTION_DEFAULTS = "package defaults, the attention alone in fp32"
# setting -> (precision, attention dropout, hidden dropout, compile the encoder, fused AdamW, attention path);
# dropout None: the encoder's own
SETTINGS = {
    BASELINE: ("fp32", None, None, False, False, "sdpa"),
    "bf16, dropout 0.1": ("bf16", None, None, False, False, "sdpa"),
    "bf16, attention dropout 0": ("bf16", 0.0, None, False, False, "sdpa"),
    "bf16, no encoder dropout": ("bf16", 0.0, 0.0, False, False, "sdpa"),
    DEFAULTS: ("bf16", 0.0, 0.0, False, True, "sdpa"),
    "package defaults + torch.compile": ("bf16", 0.0, 0.0, True, True, "sdpa"),
    FP32_ATTENTION_DEFAULTS: ("bf16", 0.0, 0.0, False, True, "fp32"),
    "package defaults, PyTorch's math attention": ("bf16", 0.0, 0.0, False, True, "math"),
    "package defaults, transformers' eager attention": ("bf16", 0.0, 0.0, False, True, "eager"),
    FP32_DEFAULTS: ("fp32", 0.0, 0.0, False, True, "sdpa"),
}


def settings_to_run(skip_emulated: bool, native: bool) -> dict[str, tuple]:
    """Every setting, or the fp32 ones alone where ``skip_emulated`` and bf16 is not ``native``."""
    return {name: setting for name, setting in SETTINGS.items() if native or not skip_emulated or setting[0] == "fp32"}


def matmul_gflops(dtype: torch.dtype, size: int = 2048, repeats: int = 10) -> float:
    """The best rate of ``repeats`` products after 3 untimed ones: the ceiling the shares are taken of."""
    a, b = torch.randn(size, size, dtype=dtype), torch.randn(size, size, dtype=dtype)
    _, seconds = _common.best_of(lambda: torch.matmul(a, b), repeats, warmup=3)
    return 2 * size**3 / seconds / 1e9


def synthetic_batch(vocab_size: int) -> dict[str, torch.Tensor]:
    """16 windows of 256 tokens, every other one ending in :data:`PADDED` padding tokens (a length-grouped batch
    of real windows carries some, so attention takes a mask, as in training): a question of 16 tokens, the rest
    paragraph; one gold span per window."""
    generator = torch.Generator().manual_seed(0)
    input_ids = torch.randint(1000, vocab_size, (BATCH, TOKENS), generator=generator)
    attention_mask = torch.ones(BATCH, TOKENS, dtype=torch.long)
    attention_mask[1::2, -PADDED:] = 0
    input_ids[attention_mask == 0] = 0
    paragraph = torch.zeros(BATCH, TOKENS, dtype=torch.bool)
    paragraph[:, 18:-1] = True
    paragraph &= attention_mask.bool()
    starts = torch.randint(18, TOKENS - PADDED - 2, (BATCH,), generator=generator)
    tags = torch.full((BATCH, TOKENS), 2)
    tags[torch.arange(BATCH), starts] = 0
    tags[torch.arange(BATCH), starts + 1] = 1
    return {"input_ids": input_ids, "attention_mask": attention_mask,
            "token_type_ids": paragraph.long(), "paragraph_mask": paragraph, "tag_mask": paragraph,
            "start_positions": starts, "end_positions": starts + 1, "bio_targets": tags}


def attention_context(path: str) -> contextlib.AbstractContextManager:
    """Confines PyTorch's attention to the path's SDPA backends (none: PyTorch chooses)."""
    backends = ATTENTION[path][1]
    return sdpa_kernel(backends) if backends else contextlib.nullcontext()


def training_step(setting: tuple) -> tuple[Callable[[], None], Callable[[], None], float]:
    """(one training step, one forward in eval mode, the forward's FLOPs) of the joint model under one setting,
    on :func:`synthetic_batch`."""
    precision, attention, hidden, compiled, fused, path = setting
    torch.manual_seed(0)
    model = BioMrcForQuestionAnswering.from_encoder(
        resolve_encoder("default"), encoder_dropout={"attention": attention, "hidden": hidden}, heads="span+bio", bio_loss_weight=10.0)
    if path == "fp32":
        train_attention_in_fp32(model)
    else:
        model.encoder.set_attn_implementation(ATTENTION[path][0])
    batch = synthetic_batch(model.config.encoder.vocab_size)
    inputs = {k: v for k, v in batch.items() if k in ("input_ids", "attention_mask", "token_type_ids")}
    model.eval()  # the useful work: without dropout, which would also send attention down another path
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        model(**inputs)
    if compiled:
        model.encoder = torch.compile(model.encoder)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=fused or None)

    def train_step() -> None:
        model.train()
        with attention_context(path):
            with autocast(precision, "cpu"):
                loss = model(**batch).loss
            loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    def forward() -> None:
        model.eval()
        with attention_context(path), torch.no_grad(), autocast(precision, "cpu"):
            model(**inputs)

    return train_step, forward, counter.get_total_flops()


def step_speed(setting: tuple, steps: int) -> dict[str, float]:
    """Windows/s and GFLOP/s of the training step and of the forward alone under one setting."""
    train_step, forward, forward_flops = training_step(setting)
    train_seconds = _common.median_of(train_step, steps, warmup=WARMUP_STEPS)[1]
    forward_seconds = _common.median_of(forward, steps, warmup=WARMUP_STEPS)[1]
    return {"train_windows_per_s": BATCH / train_seconds, "train_gflops": 3 * forward_flops / train_seconds / 1e9,
            "forward_windows_per_s": BATCH / forward_seconds, "forward_gflops": forward_flops / forward_seconds / 1e9,
            "forward_gflop_per_window": forward_flops / BATCH / 1e9}


def attention_alone(repeats: int) -> dict[str, dict[str, float]]:
    """Milliseconds of one layer's fused attention (PyTorch's SDPA on the batch's shapes: 12 heads of 32, the
    padding mask) in fp32 and in bf16, forward and forward + backward, best of ``repeats``."""
    return {name: attention_times(dtype, repeats) for name, dtype in (("fp32", torch.float32), ("bf16", torch.bfloat16))}


def attention_times(dtype: torch.dtype, repeats: int) -> dict[str, float]:
    """One precision's row of :func:`attention_alone`."""
    generator = torch.Generator().manual_seed(0)
    mask = torch.zeros(BATCH, 1, 1, TOKENS)
    mask[1::2, ..., -PADDED:] = float("-inf")
    mask = mask.to(dtype)
    q, k, v = (torch.randn(BATCH, 12, TOKENS, 32, generator=generator).to(dtype).requires_grad_() for _ in range(3))

    def forward() -> None:
        with torch.no_grad():
            F.scaled_dot_product_attention(q, k, v, attn_mask=mask)

    def forward_backward() -> None:
        F.scaled_dot_product_attention(q, k, v, attn_mask=mask).sum().backward()

    return {"forward_ms": _common.best_of(forward, repeats, warmup=2)[1] * 1e3,
            "forward_backward_ms": _common.best_of(forward_backward, repeats, warmup=2)[1] * 1e3}


def step_profile(setting: tuple, steps: int, rows: int = PROFILE_ROWS) -> list[dict]:
    """The operators a training step spends its CPU time in (``torch.profiler``, self time over ``steps`` steps
    after the untimed ones), the largest ``rows`` of them."""
    train_step = training_step(setting)[0]
    for _ in range(WARMUP_STEPS):
        train_step()
    with profile(activities=[ProfilerActivity.CPU]) as profiler:
        for _ in range(steps):
            train_step()
    events = sorted(profiler.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
    total = sum(e.self_cpu_time_total for e in events) or 1
    return [{"op": e.key, "share": e.self_cpu_time_total / total, "ms_per_step": e.self_cpu_time_total / 1e3 / steps,
             "calls_per_step": e.count / steps} for e in events[:rows]]


def package_speed(examples, config: TrainConfig, output_dir: Path) -> dict[str, float]:
    """Windows/s of ``train_model`` under ``config``, after 2 untimed steps (first-call costs)."""
    speed = training_throughput(examples, config, output_dir, warmup=2)
    return {**speed, "all_windows": speed["windows"] + 2 * config.batch_size, "precision": config.with_resolved_precision().precision,
            "attention_dropout": config.attention_dropout, "hidden_dropout": config.hidden_dropout,
            "optimizer": config.training_args.get("optim", OPTIMIZER)}


def padding_share(examples, config: TrainConfig) -> float:
    """Share of the tokens in length-grouped batches of the real windows that are padding."""
    features = build_features(examples, load_tokenizer(resolve_encoder("default")), config.features)
    lengths = [len(ids) for ids in features["input_ids"]]
    order = get_length_grouped_indices(lengths, config.batch_size, generator=torch.Generator().manual_seed(0))
    batches = [order[i:i + config.batch_size] for i in range(0, len(order), config.batch_size)]
    padded = sum(max(lengths[i] for i in b) * len(b) for b in batches)
    return 1 - sum(lengths) / padded


def main(args: argparse.Namespace) -> None:
    if args.threads:
        torch.set_num_threads(args.threads)
    machine = _common.machine_description()
    print(f"machine: {machine}; bf16 native: {native_bf16('cpu')}; {_common.command_load_and_date()}", file=sys.stderr)
    with_bf16 = any(setting[0] == "bf16" for setting in args.settings.values())
    rates = {"fp32": matmul_gflops(torch.float32), "bf16": matmul_gflops(torch.bfloat16) if with_bf16 else None}
    steps = {name: step_speed(setting, args.steps) for name, setting in args.settings.items()}
    for name, setting in args.settings.items():
        rate = rates[setting[0]]
        steps[name] |= {"train_share": steps[name]["train_gflops"] / rate, "forward_share": steps[name]["forward_gflops"] / rate}
    package = {}
    if args.train_questions:
        examples = load_squad(args.train, limit=args.train_questions).examples
        common = {"heads": "span+bio", "max_seq_length": TOKENS, "doc_stride": 96, "batch_size": BATCH, "epochs": 1, "seed": 42}
        baseline = TrainConfig(precision="fp32", attention_dropout=None, hidden_dropout=None, training_args={"optim": "adamw_torch"},
                               **common)
        configs = {"baseline": baseline, "defaults": TrainConfig(**common)}
        with tempfile.TemporaryDirectory() as tmp:
            package = {name: package_speed(examples, config, Path(tmp) / name) for name, config in configs.items()}
        package["padding_share"] = padding_share(examples, configs["defaults"])
    attention = attention_alone(args.steps)
    choice = TrainConfig().precision_choices()["training"]  # how `auto` trains the default encoder here
    precision_here = choice["precision"]
    defaults_here = (FP32_DEFAULTS if precision_here == "fp32" else FP32_ATTENTION_DEFAULTS if choice.get("attention") == "fp32"
                     else DEFAULTS)
    profiled = defaults_profile(args.steps, defaults_here) if args.profile else None
    print_tables(rates, steps, package, defaults_here)
    print("\none layer's fused attention alone: " + "; ".join(
        f"{name} forward {t['forward_ms']:.1f} ms, forward + backward {t['forward_backward_ms']:.1f} ms" for name, t in attention.items()))
    if profiled:
        print_profile(profiled)
    print(json.dumps({
        "benchmark": "training_speed", "machine": machine, "cpu": cpu_name(), "native_bf16": native_bf16("cpu"),
        "default_precision_here": precision_here, "threads": torch.get_num_threads(),
        "matmul_gflops": rates, "steps": steps, "package": package,
        "step_ratio": steps[defaults_here]["train_windows_per_s"] / steps[BASELINE]["train_windows_per_s"],
        "package_ratio": package["defaults"]["windows_per_s"] / package["baseline"]["windows_per_s"] if package else None,
        "attention_alone": attention, "profile": profiled,
    }))


def defaults_profile(steps: int, setting: str) -> dict:
    """The largest operators of the training step of ``setting`` (the defaults as ``auto`` trains them here)."""
    return {"setting": setting, "precision": SETTINGS[setting][0], "ops": step_profile(SETTINGS[setting], steps)}


def print_profile(profiled: dict) -> None:
    print(f"\nthe training step of {profiled['setting']}, its largest operators (self CPU time)\n"
          "| operator | ms a step | calls a step | share of the step |\n|---|---|---|---|")
    for op in profiled["ops"]:
        print(f"| `{op['op']}` | {op['ms_per_step']:.1f} | {op['calls_per_step']:g} | {op['share']:.1%} |")


def print_tables(rates: dict, steps: dict, package: dict, defaults_here: str) -> None:
    bf16 = f"{rates['bf16']:.0f} GFLOP/s" if rates["bf16"] else "not measured (emulated)"
    print(f"matrix products (2048^3): fp32 {rates['fp32']:.0f} GFLOP/s, bf16 {bf16}\n")
    print(f"| setting ({BATCH} windows x {TOKENS} tokens) | training windows/s | GFLOP/s | share of the rate | "
          "forward windows/s | GFLOP/s | share |\n|---|---|---|---|---|---|---|")
    for name, s in steps.items():
        print(f"| {name} | {s['train_windows_per_s']:.1f} | {s['train_gflops']:.0f} | {s['train_share']:.0%} | "
              f"{s['forward_windows_per_s']:.1f} | {s['forward_gflops']:.0f} | {s['forward_share']:.0%} |")
    print(f"\npackage defaults here ({defaults_here}) against the baseline, training step: "
          f"{steps[defaults_here]['train_windows_per_s'] / steps[BASELINE]['train_windows_per_s']:.2f}x")
    if package:
        baseline, defaults = package["baseline"], package["defaults"]
        print(f"through train_model on real windows ({defaults['all_windows']} windows, {package['padding_share']:.1%} "
              f"padding): baseline {baseline['windows_per_s']:.1f}, defaults {defaults['windows_per_s']:.1f} windows/s, "
              f"{defaults['windows_per_s'] / baseline['windows_per_s']:.2f}x")


if __name__ == "__main__":
    main(parse_args())
