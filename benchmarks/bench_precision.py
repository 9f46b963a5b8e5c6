"""bf16 against fp32 on this machine: training windows/s, inference questions/s, outputs.

The reference is fp32, the package's default; the lever is ``precision="bf16"`` (``torch.autocast``
bfloat16 on the CPU: matrix products in bf16, weights, optimizer state and losses in fp32). Both are
run in this process, one after the other, on the same inputs:

* training: ``bio_mrc.training.train.train_model`` as ``bio-mrc train`` runs it (the joint model on the
  default encoder, windows of 256 tokens with stride 96 and batches of 16: the CPU-budget settings of
  the comparisons) on the first ``--train-questions`` SQuAD v1.1 training questions, one epoch, the same
  seed, so both precisions see the same batches in the same order. Timed from the end of step
  ``--warmup`` to the end of the last step (first-call costs excluded): windows/s.
* inference: ``TrainedModel.windows`` (featurisation and forward passes, batches of
  ``INFERENCE_BATCH_SIZE``) over the first ``--eval-questions`` dev questions, after one untimed
  warm-up pass, with the model ``--model`` (default: the fp32 model this run just trained):
  questions/s, and how far bf16's outputs are from fp32's (largest logit difference, the share of
  questions whose span answer and whose BIO answer are the same).

The CPU's model name and bf16 support (AMX-BF16, AVX512-BF16: ``bio_mrc.precision.cpu_features``)
are recorded; where neither is present bf16 is emulated and slower.

    python benchmarks/bench_precision.py [--train-questions 400] [--eval-questions 500] [--model DIR] [--threads N]

The last line is one JSON object: ``{"benchmark": "precision", "machine": ..., "cpu": ..., "native_bf16": ...,
"training_ratio": bf16 windows/s over fp32's, "inference_ratio": bf16 questions/s over fp32's, ...}``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
import transformers
from transformers import TrainerCallback

from bio_mrc.data.squad import load_squad
from bio_mrc.decoding.postprocess import DecodeConfig
from bio_mrc.inference import TrainedModel
from bio_mrc.inference.answers import decode_answers
from bio_mrc.precision import cpu_features, cpu_name, native_bf16
from bio_mrc.training.train import TrainConfig, train_model

import _common


def parse_args() -> argparse.Namespace:
    """The options, with the data (and --model, if given) checked: a missing one ends here, before any work."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", default=None,
                        help="folder with squad-v1.1/ (default: $BIO_MRC_DATA, else ../shared/data beside the repository)")
    parser.add_argument("--train-questions", type=int, default=400)
    parser.add_argument("--eval-questions", type=int, default=500)
    parser.add_argument("--warmup", type=int, default=2, help="training steps not timed")
    parser.add_argument("--model", default=None, help="a trained model for the inference part (default: this run's fp32 one)")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    args = parser.parse_args()
    data_dir = _common.data_root(args)
    args.train = str(_common.require_data(data_dir / "squad-v1.1" / "train.json"))
    args.dev = str(_common.require_data(data_dir / "squad-v1.1" / "dev.json"))
    if args.model:
        args.model = _common.model_dir(args.model)
    return args


PRECISIONS = ("fp32", "bf16")
WINDOWS = {"max_seq_length": 256, "doc_stride": 96, "batch_size": 16}


class StepTimes(TrainerCallback):
    """The wall-clock time at the end of every optimizer step."""

    def __init__(self) -> None:
        self.ends: list[float] = []

    def on_step_end(self, args, state, control, **kwargs):
        self.ends.append(time.perf_counter())


def training_throughput(examples, config: TrainConfig, output_dir: Path, warmup: int) -> dict[str, float]:
    """Windows/s of one epoch of ``train_model`` after ``warmup`` steps; the model is left in ``output_dir``."""
    clock = StepTimes()
    result = train_model(examples, config, output_dir, save_checkpoints=False, callbacks=[clock])
    steps = len(clock.ends)
    if steps <= warmup + 1:
        raise SystemExit(f"{steps} training steps: raise --train-questions above {warmup + 1} batches' worth")
    timed_windows = result.n_windows - warmup * config.batch_size
    seconds = clock.ends[-1] - clock.ends[warmup - 1] if warmup else clock.ends[-1] - clock.ends[0]
    return {"windows_per_s": timed_windows / seconds, "seconds": seconds, "windows": timed_windows, "steps": steps,
            "final_loss": result.final_loss}


def inference_run(model_dir: Path, examples, precision: str) -> tuple[dict[str, float], object]:
    """Questions/s of the forward passes over ``examples`` (after an untimed warm-up) and the outputs."""
    trained = TrainedModel.load(model_dir, precision=precision)
    trained.windows(examples[:32])
    outputs, seconds = _common.timed(lambda: trained.windows(examples))
    return {"questions_per_s": len(examples) / seconds, "seconds": seconds}, outputs


def agreement(reference, other, examples) -> dict[str, float]:
    """How far ``other``'s outputs are from ``reference``'s: logits and decoded answers."""
    result = {}
    for name in ("start_logits", "end_logits", "bio_logits"):
        a, b = getattr(reference, name), getattr(other, name)
        if a is not None:
            keep = reference.mask if name != "bio_logits" else reference.mask[..., None].repeat(a.shape[-1], -1)
            result[f"max_abs_diff_{name}"] = float(np.abs(a - b)[keep].max())
    config = DecodeConfig(n_best=20, max_answer_length=30, require_answer=True)
    for decoding in ("span", "bio"):
        answers = [decode_answers(out, examples, decoding, config, {}) for out in (reference, other)]
        same = [x.answer == y.answer for x, y in zip(*answers)]
        result[f"same_{decoding}_answer"] = float(np.mean(same))
    return result


def main(args: argparse.Namespace) -> None:
    if args.threads:
        torch.set_num_threads(args.threads)
    train = load_squad(args.train, limit=args.train_questions).examples
    dev = load_squad(args.dev, limit=args.eval_questions).examples
    machine = _common.machine_description()
    print(f"machine: {machine}; bf16 native: {native_bf16('cpu')}; transformers {transformers.__version__}; "
          f"{_common.load_and_date()}", file=sys.stderr)
    with tempfile.TemporaryDirectory() as tmp:
        configs = {p: TrainConfig(heads="span+bio", precision=p, epochs=1, learning_rate=1e-4, seed=42, **WINDOWS) for p in PRECISIONS}
        training = {p: training_throughput(train, config, Path(tmp) / p, args.warmup) for p, config in configs.items()}
        model_dir = Path(args.model) if args.model else Path(tmp) / "fp32"
        runs = {p: inference_run(model_dir, dev, p) for p in PRECISIONS}
    inference = {p: stats for p, (stats, _) in runs.items()}
    outputs_agree = agreement(runs["fp32"][1], runs["bf16"][1], dev)
    print_table(training, inference, outputs_agree, args)
    print(json.dumps({
        "benchmark": "precision", "machine": machine, "cpu": cpu_name(), "cpu_bf16_features": cpu_features(), "native_bf16": native_bf16("cpu"),
        "threads": torch.get_num_threads(), "training": training, "inference": inference, "outputs": outputs_agree,
        "training_ratio": training["bf16"]["windows_per_s"] / training["fp32"]["windows_per_s"],
        "inference_ratio": inference["bf16"]["questions_per_s"] / inference["fp32"]["questions_per_s"],
    }))


def print_table(training: dict, inference: dict, outputs_agree: dict, args: argparse.Namespace) -> None:
    print(f"| precision | training windows/s ({args.train_questions} questions) | inference questions/s "
          f"({args.eval_questions} dev questions) |\n|---|---|---|")
    for p in PRECISIONS:
        print(f"| {p} | {training[p]['windows_per_s']:.2f} | {inference[p]['questions_per_s']:.2f} |")
    print(f"| bf16 / fp32 | {training['bf16']['windows_per_s'] / training['fp32']['windows_per_s']:.2f}x | "
          f"{inference['bf16']['questions_per_s'] / inference['fp32']['questions_per_s']:.2f}x |")
    print("bf16 against fp32 outputs: " + ", ".join(f"{k} {v:.4f}" for k, v in outputs_agree.items()))


if __name__ == "__main__":
    main(parse_args())
