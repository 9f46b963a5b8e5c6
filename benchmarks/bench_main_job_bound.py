"""What bounds the main job on this machine: its matrix arithmetic against the CPU's best matrix-product rate.

The README's main job (`bio-mrc compare --config quick`) trains the joint model for one epoch on the real
windows of 3,000 SQuAD questions and runs two forward passes (1,000 tuning and 1,000 evaluation questions).
This script counts the matrix arithmetic of exactly those batches (the training batches are length-grouped and
padded to a multiple of 8 as the trainer makes them; the inference batches are sorted by length, longest first,
as the package answers) and divides it by the best rate this CPU multiplies matrices at, in the precision
``auto`` picks here for each phase (2048 x 2048 products, best of 10): the time each phase needs even at that
rate. With ``--report`` (a main job's ``report.json``) it sets the measured seconds beside the bound.

FLOPs of one window of L tokens: the linear layers as ``torch.utils.flop_counter`` counts them (the encoder and
both heads, forward, eval mode), plus attention's two products per layer (4 L^2 H), which the counter does not
see inside PyTorch's fused CPU attention; a training step is three forward passes' worth (forward, and the
backward's two products per linear layer).

    python benchmarks/bench_main_job_bound.py [--report runs/quick/report.json] [--data-dir DIR]

The last line is one JSON object: ``{"benchmark": "main_job_bound", "machine", "matmul_gflops", "phases":
{phase: {"tflop", "precision", "windows", "bound_s", "measured_s", "share"}}, "bound_s"}`` (phases: training,
tuning, evaluation; ``bound_s`` their sum).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch
from torch.utils.flop_counter import FlopCounterMode

from bench_training import batch_widths
from bench_training_speed import matmul_gflops
from bio_mrc.errors import ConfigError
from bio_mrc.encoders import load_tokenizer, resolve_encoder
from bio_mrc.features.windows import build_features
from bio_mrc.harness.comparison_splits import resolve_split
from bio_mrc.harness.config import load_config
from bio_mrc.model import BioMrcForQuestionAnswering
from bio_mrc.model_defaults import INFERENCE_BATCH_SIZE
from bio_mrc.precision import resolve_precision
from bio_mrc.precision_probe import MatrixShapes
from bio_mrc.training.trainer import EpochSeededLengthGroupedSampler

import _common


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", default=None,
                        help="folder with squad-v1.1/ (default: $BIO_MRC_DATA, else ../shared/data beside the repository)")
    parser.add_argument("--config", default="quick", help="the comparison whose first run is counted (default: the main job)")
    parser.add_argument("--report", default=None, help="a report.json of that comparison: its measured seconds beside the bound")
    args = parser.parse_args()
    if args.report and not _common.existing_input(args.report):
        _common.fail(f"--report {args.report}: no such file (run `{_common.QUICK_MODEL_COMMAND}` first)")
    try:
        args.comparison = load_config(args.config)
    except ConfigError as error:
        _common.fail(f"--config {args.config}: {error}")
    for spec in (args.comparison.train, args.comparison.tune, args.comparison.eval):
        if spec and not Path(spec.path).is_absolute():
            _common.require_data(_common.data_root(args) / spec.path)
    return args


def window_flops(model: BioMrcForQuestionAnswering, length: int) -> int:
    """Forward FLOPs of one window of ``length`` tokens: the counted linear layers plus attention's products."""
    inputs = {"input_ids": torch.ones(1, length, dtype=torch.long), "attention_mask": torch.ones(1, length, dtype=torch.long)}
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        model(**inputs)
    encoder = model.config.encoder
    return counter.get_total_flops() + encoder.num_hidden_layers * 4 * length * length * encoder.hidden_size


def training_batches(lengths: list[int], batch_size: int, seed: int) -> list[tuple[int, int]]:
    """(windows, padded length) of each training batch of the first epoch: the trainer's sampler, its collator's padding."""
    return batch_widths(np.asarray(lengths), list(EpochSeededLengthGroupedSampler(batch_size, lengths, seed)), batch_size)


def inference_batches(lengths: list[int], batch_size: int) -> list[tuple[int, int]]:
    """(windows, padded length) of each inference batch: sorted by length, longest first, padded to the longest."""
    ordered = sorted(lengths, reverse=True)
    return [(len(ordered[i : i + batch_size]), ordered[i]) for i in range(0, len(ordered), batch_size)]


def phase_flops(batches: list[tuple[int, int]], flops_of: dict[int, int], passes: int) -> float:
    return passes * sum(windows * flops_of[length] for windows, length in batches)


def measured_seconds(report_path: str | None) -> dict[str, float]:
    """Training and evaluation seconds of the report's first cell (every decoding shares them; the tuning
    pass is not timed on its own)."""
    if not report_path:
        return {}
    cell = json.loads(_common.existing_input(report_path).read_text(encoding="utf-8"))["cells"][0]
    return {"training": cell["train_seconds"], "evaluation": cell["inference_seconds"]}


def main(args: argparse.Namespace) -> None:
    machine = _common.machine_description()
    print(f"machine: {machine}; {_common.command_load_and_date()}", file=sys.stderr)
    config = args.comparison
    run, data_dir = config.runs[0], _common.data_root(args)
    seed, training = config.run_seeds(run)[0], resolve_split(config.train, data_dir).examples
    questions = {name: resolve_split(spec, data_dir).examples for name, spec in (("tuning", config.tune), ("evaluation", config.eval)) if spec}
    encoder = resolve_encoder(run.train.encoder)
    tokenizer = load_tokenizer(encoder)
    lengths = {name: [len(ids) for ids in build_features(examples, tokenizer, run.train.features, with_targets=False)["input_ids"]]
               for name, examples in {"training": training, **questions}.items()}
    torch.manual_seed(0)
    model = BioMrcForQuestionAnswering.from_encoder(encoder, heads=run.train.heads).eval()
    batches = {"training": training_batches(lengths["training"], run.train.batch_size, seed),
               **{name: inference_batches(lengths[name], INFERENCE_BATCH_SIZE) for name in questions}}
    flops_of = {length: window_flops(model, length) for length in {length for b in batches.values() for _, length in b}}
    shapes = MatrixShapes.of(model.config.encoder, run.train.batch_size, run.train.max_seq_length)
    precision = {"training": resolve_precision(run.train.precision, "cpu", shapes, "training"),
                 "inference": resolve_precision(run.evaluation_precision, "cpu", shapes, "inference")}
    rates = {p: matmul_gflops(torch.float32 if p == "fp32" else torch.bfloat16) for p in set(precision.values())}
    measured = measured_seconds(args.report)
    phases = {}
    for phase, passes in (("training", 3), *((name, 1) for name in questions)):
        chosen = precision["training" if phase == "training" else "inference"]
        tflop = phase_flops(batches[phase], flops_of, passes) / 1e12
        bound, seen = tflop * 1e3 / rates[chosen], measured.get(phase)
        phases[phase] = {"tflop": tflop, "precision": chosen, "windows": len(lengths[phase]), "bound_s": bound,
                         "measured_s": seen, "share": bound / seen if seen else None}
    print_table(rates, phases)
    bound = sum(p["bound_s"] for p in phases.values())
    print(json.dumps({"benchmark": "main_job_bound", "config": args.config, "machine": machine, "cpu": _common.cpu_name(),
                      "matmul_gflops": rates, "phases": phases, "bound_s": bound}))


def print_table(rates: dict[str, float], phases: dict[str, dict]) -> None:
    print("matrix products (2048^3): " + ", ".join(f"{p} {r:.0f} GFLOP/s" for p, r in sorted(rates.items())) + "\n")
    print("| phase | windows | TFLOP | precision | seconds at that rate | measured s | share of the rate |\n|---|---|---|---|---|---|---|")
    for phase, p in phases.items():
        seen = f"{p['measured_s']:.0f} | {p['share']:.0%}" if p["measured_s"] else "– | –"
        print(f"| {phase} | {p['windows']:,} | {p['tflop']:.1f} | {p['precision']} | {p['bound_s']:.0f} | {seen} |")


if __name__ == "__main__":
    main(parse_args())
