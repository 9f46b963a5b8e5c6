"""ONNX Runtime against PyTorch for a bio_mrc model's forward over windows.

One trained model, the same questions, one process, the CPU. THE REFERENCE is the package's
PyTorch fp32 path, ``TrainedModel.load(model_dir).windows(examples)`` (windows sorted by length,
each batch padded to its longest window, ``torch.inference_mode``). OURS is the same call on the
folder ``bio-mrc export --format onnx`` writes, ``TrainedModel.load(onnx_dir).windows(examples)``:
the same tokenization, batching and output arrays (one ``run_windows``), the batches run by an
ONNX Runtime session instead of PyTorch. The export runs first (untimed) unless ``--onnx-dir``
names one; one small untimed call per side pays each runtime's first-call set-up.

Timed: ``.windows`` (tokenization into windows + forward; ``--repeats N`` alternates the sides
N times and reports each side's median). Also printed: the forward alone (``run_windows`` on
features built once), the largest logit difference, the official SQuAD v1.1 EM/F1 of the span
decoding of both sides (``bio_mrc.metrics.squad_official``), and the share of identical answers per decoding.

    python benchmarks/bench_onnx.py [--model DIR] [--limit 1000] [--repeats 1] [--threads N] [--onnx-dir DIR]

The last line is one JSON object: ``{"benchmark": "onnx_runtime", "reference_s" (PyTorch),
"ours_s" (ONNX Runtime), "ratio" (PyTorch seconds / ONNX seconds), "identical", "machine"}``, where
identical means the span answers agree on at least 99.5% of the questions.
"""

from __future__ import annotations

import argparse
import functools
import importlib.metadata
import json
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
import transformers

from bio_mrc.data.squad import load_squad
from bio_mrc.decoding.postprocess import DecodeConfig, decode
from bio_mrc.features.windows import build_features
from bio_mrc.inference import TrainedModel, run_windows
from bio_mrc.inference.onnx import OnnxModel, export_onnx
from bio_mrc.metrics.squad_official import squad_metrics
from bio_mrc.progress import progress_bars

import _common


def parse_args() -> argparse.Namespace:
    """The options, with the model and data checked: a missing one ends here, before any work."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=None, help=f"bio_mrc model folder (default: the newest {_common.QUICK_MODEL_GLOB})")
    parser.add_argument("--onnx-dir", default=None, help="an existing export of --model (default: export now, untimed)")
    _common.add_data_arguments(parser, "squad-v1.1/dev.json", "SQuAD v1.1 dev JSON")
    parser.add_argument("--limit", type=int, default=1000, help="first N questions of the file; 0 = all")
    parser.add_argument("--repeats", type=int, default=1, help="runs per side (alternating); the median is reported")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--threads", type=int, default=None, help="threads for both sides (default: each runtime's own)")
    args = parser.parse_args()
    _common.require_module("onnxruntime", "pip install -e '.[onnx]'")
    args.model = _common.model_dir(args.model)
    if args.onnx_dir:
        args.onnx_dir = _common.model_dir(args.onnx_dir, option="--onnx-dir (an export of --model)")
    args.data = _common.data_file(args, "squad-v1.1/dev.json")
    return args


NAME = "onnx_runtime"
AGREEMENT = 0.995  # "identical": the span answers agree on at least this share of the questions


def load_sides(model_dir: str, onnx_dir: str, threads: int | None) -> tuple[TrainedModel, TrainedModel]:
    """The PyTorch model and its export, each as ``TrainedModel`` (ONNX Runtime on ``threads`` too)."""
    reference = TrainedModel.load(model_dir, backend="torch")
    ours = TrainedModel.load(onnx_dir, backend="onnx")
    if threads:
        ours.model = OnnxModel.load(onnx_dir, threads=threads)
    return reference, ours


def timed_windows(sides: dict[str, TrainedModel], examples, batch_size: int, repeats: int):
    """Each side's ``.windows`` over the same examples, alternating sides; median seconds and the last outputs."""
    def side(trained: TrainedModel):
        return lambda: (trained.windows(examples, batch_size=batch_size), {})

    medians, outputs = _common.alternate({name: side(trained) for name, trained in sides.items()}, repeats)
    return {name: stages["total"] for name, stages in medians.items()}, outputs


def timed_forward(sides: dict[str, TrainedModel], features, batch_size: int) -> dict[str, float]:
    """The forward alone: ``run_windows`` on windows built once (the same for both sides)."""
    result = {}
    for name, trained in sides.items():
        _, result[name] = _common.timed(functools.partial(
            run_windows, trained.model, features, trained.tokenizer.pad_token_id or 0, batch_size, progress=False))
    return result


def answers_and_scores(outputs, data, trained: TrainedModel) -> dict[str, dict]:
    """Per decoding the model has, the answers; for span, the official v1.1 EM/F1 too."""
    result = {}
    for decoding in trained.decodings:
        predictions = decode(outputs, data.examples, decoding, trained.decode_config(DecodeConfig()))
        answers = {p.id: p.answer for p in predictions}
        result[decoding] = {"answers": answers, **squad_metrics(data.gold_texts(), answers, "1.1")}
    return result


def largest_difference(got, want) -> float:
    """The largest absolute logit difference over paragraph tokens (what the decoders read)."""
    worst = 0.0
    for name in ("start_logits", "end_logits", "bio_logits"):
        a, b = getattr(got, name), getattr(want, name)
        if a is not None:
            worst = max(worst, float(np.abs(a[want.mask] - b[want.mask]).max(initial=0.0)))
    return worst


def main(args: argparse.Namespace) -> None:
    model_dir = args.model
    if args.threads:
        torch.set_num_threads(args.threads)
    transformers.logging.set_verbosity_error()
    onnx_dir = args.onnx_dir
    if onnx_dir is None:
        onnx_dir = str(Path(tempfile.mkdtemp(prefix="bench-onnx-")) / "model")
        started = time.perf_counter()
        with progress_bars(False):
            record = export_onnx(model_dir, onnx_dir)
        print(f"exported to {onnx_dir} with {record.exporter} in {time.perf_counter() - started:.1f} s "
              f"(logit difference at export {max(record.max_abs_logit_difference.values()):.2e})", flush=True)

    data = load_squad(args.data, limit=args.limit or None)
    reference, ours = load_sides(model_dir, onnx_dir, args.threads)
    sides = {"pytorch": reference, "onnx": ours}
    for trained in sides.values():  # first-call set-up, untimed
        trained.windows(data.examples[:4], batch_size=args.batch_size)
    seconds, outputs = timed_windows(sides, data.examples, args.batch_size, args.repeats)
    with progress_bars(False):
        features = build_features(data.examples, reference.tokenizer, reference.features, with_targets=False)
    forward = timed_forward(sides, features, args.batch_size)
    results = {name: answers_and_scores(outputs[name], data, sides[name]) for name in sides}
    report(args, model_dir, onnx_dir, data, features, seconds, forward, outputs, results)


def report(args, model_dir, onnx_dir, data, features, seconds, forward, outputs, results) -> None:
    """The tables and, last, the one-line JSON record."""
    n = len(data.examples)
    ratio = seconds["pytorch"] / seconds["onnx"]
    print()
    print(f"ONNX Runtime vs PyTorch, SQuAD v1.1 {Path(args.data).name}, {n} questions, {len(features)} windows, model {model_dir}")
    machine = _common.machine_description()
    print(f"machine: {machine}; onnxruntime {importlib.metadata.version('onnxruntime')}, transformers {transformers.__version__}; "
          f"{_common.command_load_and_date()}; median of {args.repeats} run(s) per side")
    print()
    print("| | PyTorch fp32 (s) | ONNX Runtime (s) | PyTorch / ONNX |")
    print("|---|---:|---:|---:|")
    print(f"| TrainedModel.windows (windows + forward) | {seconds['pytorch']:.2f} | {seconds['onnx']:.2f} | {ratio:.2f}x |")
    print(f"| forward alone (run_windows) | {forward['pytorch']:.2f} | {forward['onnx']:.2f} | "
          f"{forward['pytorch'] / forward['onnx']:.2f}x |")
    print()
    print(f"largest logit difference (paragraph tokens): {largest_difference(outputs['onnx'], outputs['pytorch']):.2e}")
    same = {}
    for decoding, ref in results["pytorch"].items():
        got = results["onnx"][decoding]
        same[decoding] = sum(ref["answers"][q] == got["answers"][q] for q in ref["answers"]) / n
        print(f"{decoding}: PyTorch EM/F1 {ref['exact_match']:.2f} / {ref['f1']:.2f}, ONNX {got['exact_match']:.2f} / "
              f"{got['f1']:.2f}; identical answers {100 * same[decoding]:.1f}%")
    print(json.dumps({"benchmark": NAME, "reference_s": round(seconds["pytorch"], 3), "ours_s": round(seconds["onnx"], 3),
                      "ratio": round(ratio, 3), "identical": bool(same.get("span", 0.0) >= AGREEMENT),
                      "machine": machine}))


if __name__ == "__main__":
    main(parse_args())
