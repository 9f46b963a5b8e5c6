"""bf16 against fp32 on this machine, and ``auto``'s choice against both: training windows/s, inference questions/s, outputs.

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

``auto`` runs the same way (``precision="auto"``): it measures the model's shapes (``bio_mrc.precision_probe``)
in a fresh cache folder, so the probe runs as on a machine that meets the model for the first time; its choice,
the rates it measured, and the probe's seconds are reported, and its speed against the faster fixed precision
(the target: never more than 5% slower). ``--rounds N`` runs the precisions N times in alternating order and
keeps each one's best run (on a shared machine another job slows some runs, never speeds one). ``--skip-emulated``
leaves out bf16 where it is emulated (there ``auto`` is fp32 by rule, and emulated bf16 trains about 20x slower).

The CPU's model name and bf16 support (AMX-BF16, AVX512-BF16: ``bio_mrc.precision.cpu_features``)
are recorded; where neither is present bf16 is emulated and slower.

    python benchmarks/bench_precision.py [--train-questions 400] [--eval-questions 500] [--model DIR] [--threads N] [--rounds 1] [--skip-emulated]

The last line is one JSON object: ``{"benchmark": "precision", "machine": ..., "cpu": ..., "native_bf16": ...,
"training_ratio": bf16 windows/s over fp32's, "inference_ratio": bf16 questions/s over fp32's,
"auto": {"training": {"choice", "against_faster": auto's rate over the faster fixed one's, ...}, "inference": ...}, ...}``.
"""

from __future__ import annotations

import argparse
import json
import os
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
    parser.add_argument("--rounds", type=int, default=1, help="runs of each precision, alternating; each one's best counts")
    parser.add_argument("--skip-emulated", action="store_true",
                        help="where bf16 is emulated (auto never picks it there), time fp32 and auto alone: emulated bf16 trains 20x slower")
    args = parser.parse_args()
    data_dir = _common.data_root(args)
    args.train = str(_common.require_data(data_dir / "squad-v1.1" / "train.json"))
    args.dev = str(_common.require_data(data_dir / "squad-v1.1" / "dev.json"))
    if args.model:
        args.model = _common.model_dir(args.model)
    args.precisions = ("fp32", "auto") if args.skip_emulated and not native_bf16("cpu") else PRECISIONS
    return args


PRECISIONS = ("fp32", "bf16", "auto")
FIXED = ("fp32", "bf16")
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
            result[f"max_abs_diff_{name}"] = float(np.abs(a[keep] - b[keep]).max())  # masked positions hold -inf
    config = DecodeConfig(n_best=20, max_answer_length=30, require_answer=True)
    for decoding in ("span", "bio"):
        answers = [decode_answers(out, examples, decoding, config, {}) for out in (reference, other)]
        same = [x.answer == y.answer for x, y in zip(*answers)]
        result[f"same_{decoding}_answer"] = float(np.mean(same))
    return result


def fastest_run(runs: list[dict], rate: str) -> dict:
    return max(runs, key=lambda run: run[rate])


def auto_choices(config: TrainConfig) -> tuple[dict, float]:
    """What ``auto`` chooses for this model here, for training and answering, and the probe's seconds (uncached)."""
    started = time.perf_counter()
    choices = config.precision_choices()
    return choices, time.perf_counter() - started


def auto_summary(choices: dict, training: dict, inference: dict) -> dict:
    """auto's choice per phase and its rate over the faster fixed precision's (>= 0.95 is the target)."""
    summary = {}
    for phase, results, rate in (("training", training, "windows_per_s"), ("inference", inference, "questions_per_s")):
        faster = max((p for p in FIXED if p in results), key=lambda p: results[p][rate])
        summary[phase] = {**choices.get(phase, {}), "faster_fixed": faster, "against_faster": ratio(results, "auto", faster, rate),
                          "against_fp32": ratio(results, "auto", "fp32", rate), "against_bf16": ratio(results, "auto", "bf16", rate)}
    return summary


def ratio(results: dict, over: str, under: str, rate: str) -> float | None:
    """``over``'s rate over ``under``'s; None where one of them did not run (``--skip-emulated``)."""
    return results[over][rate] / results[under][rate] if over in results and under in results else None


def main(args: argparse.Namespace) -> None:
    if args.threads:
        torch.set_num_threads(args.threads)
    train = load_squad(args.train, limit=args.train_questions).examples
    dev = load_squad(args.dev, limit=args.eval_questions).examples
    machine = _common.machine_description()
    print(f"machine: {machine}; bf16 native: {native_bf16('cpu')}; transformers {transformers.__version__}; "
          f"{_common.command_load_and_date()}", file=sys.stderr)
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["BIO_MRC_CACHE_DIR"] = str(Path(tmp) / "cache")  # auto measures as on a machine new to the model
        configs = {p: TrainConfig(heads="span+bio", precision=p, epochs=1, learning_rate=1e-4, seed=42, **WINDOWS) for p in args.precisions}
        choices, probe_seconds = auto_choices(configs["auto"])
        training_runs = {p: [] for p in args.precisions}
        for round_ in range(args.rounds):
            for p in args.precisions if round_ % 2 == 0 else args.precisions[::-1]:
                training_runs[p].append(training_throughput(train, configs[p], Path(tmp) / f"{p}-{round_}", args.warmup))
        training = {p: fastest_run(runs, "windows_per_s") for p, runs in training_runs.items()}
        model_dir = Path(args.model) if args.model else Path(tmp) / "fp32-0"
        inference_runs, outputs = {p: [] for p in args.precisions}, {}
        for round_ in range(args.rounds):
            for p in args.precisions if round_ % 2 == 0 else args.precisions[::-1]:
                stats, outputs[p] = inference_run(model_dir, dev, p)
                inference_runs[p].append(stats)
    inference = {p: fastest_run(runs, "questions_per_s") for p, runs in inference_runs.items()}
    outputs_agree = agreement(outputs["fp32"], outputs["bf16"], dev) if "bf16" in outputs else {}
    auto = auto_summary(choices, training, inference)
    print_table(training, inference, outputs_agree, auto, probe_seconds, args)
    print(json.dumps({
        "benchmark": "precision", "machine": machine, "cpu": cpu_name(), "cpu_bf16_features": cpu_features(), "native_bf16": native_bf16("cpu"),
        "threads": torch.get_num_threads(), "rounds": args.rounds, "training": training, "inference": inference, "outputs": outputs_agree,
        "training_ratio": ratio(training, "bf16", "fp32", "windows_per_s"),
        "inference_ratio": ratio(inference, "bf16", "fp32", "questions_per_s"),
        "auto": auto, "auto_probe_seconds": probe_seconds, "all_runs": {"training": training_runs, "inference": inference_runs},
    }))


def print_table(training: dict, inference: dict, outputs_agree: dict, auto: dict, probe_seconds: float, args: argparse.Namespace) -> None:
    print(f"| precision | training windows/s ({args.train_questions} questions) | inference questions/s "
          f"({args.eval_questions} dev questions) |\n|---|---|---|")
    for p in training:
        name = f"auto (training: {auto['training'].get('precision')}, inference: {auto['inference'].get('precision')})" if p == "auto" else p
        print(f"| {name} | {training[p]['windows_per_s']:.2f} | {inference[p]['questions_per_s']:.2f} |")
    if "bf16" in training:
        print(f"| bf16 / fp32 | {ratio(training, 'bf16', 'fp32', 'windows_per_s'):.2f}x | "
              f"{ratio(inference, 'bf16', 'fp32', 'questions_per_s'):.2f}x |")
    print(f"| auto / the faster fixed | {auto['training']['against_faster']:.2f}x ({auto['training']['faster_fixed']}) | "
          f"{auto['inference']['against_faster']:.2f}x ({auto['inference']['faster_fixed']}) |")
    for phase in ("training", "inference"):
        choice = auto[phase]
        rates = (f": one layer at fp32 {choice['fp32_tokens_per_s']:,.0f}, bf16 {choice['bf16_tokens_per_s']:,.0f} tokens/s"
                 if "fp32_tokens_per_s" in choice else "")
        if "bf16_fp32_attention_tokens_per_s" in choice:
            rates += f", bf16 with fp32 attention {choice['bf16_fp32_attention_tokens_per_s']:,.0f}; attention in {choice['attention']}"
        print(f"auto for {phase}: {choice.get('precision')} ({choice.get('how')}{rates})")
    print(f"auto's probe (both phases, uncached): {probe_seconds:.2f} s")
    if outputs_agree:
        print("bf16 against fp32 outputs: " + ", ".join(f"{k} {v:.4f}" for k, v in outputs_agree.items()))


if __name__ == "__main__":
    main(parse_args())
