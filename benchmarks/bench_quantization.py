"""int8 dynamic quantization against the fp32 model on CPU (a measurement only; not adopted).

The same trained model predicts the same questions twice in one process:
fp32 (the package's path: length-sorted dynamic-padding windows under
``inference_mode``) and a copy whose ``Linear`` layers are quantized to int8 by
``torch.ao.quantization.quantize_dynamic`` (weights int8, activations quantized
on the fly; embeddings and LayerNorm stay fp32). Timed: the forward over all
windows (the features are built once, untimed, and shared). Reported: seconds,
the ratio fp32 / int8 (bigger is better), official SQuAD v1.1 EM/F1 of the span
and BIO decodings, and how many answers are identical. The bar for a
documented option: ≥ 1.5× faster for ≤ 0.5 F1.

    python benchmarks/bench_quantization.py [--model DIR] [--limit 1000] [--repeats 3] [--per-channel] [--heads-too]

``--model`` defaults to the newest ``runs/quick*/models/joint-seed42-*`` (what ``bio-mrc compare --config quick`` trains).

By default only the encoder is quantized, one weight scale per matrix; ``--per-channel``
gives each output unit its own scale, ``--heads-too`` quantizes the heads as well.

Its last line is one JSON object: {"benchmark", "reference_s" (fp32), "ours_s" (int8), "ratio", "identical", "machine"}.
"""

from __future__ import annotations

import argparse
import copy
import json

import torch

from bio_mrc.data.squad import load_squad
from bio_mrc.decoding.postprocess import DecodeConfig, decode
from bio_mrc.features.windows import build_features
from bio_mrc.inference import TrainedModel, run_windows
from bio_mrc.metrics.squad_official import squad_metrics
from bio_mrc.progress import progress_bars

import _common


def parse_args() -> argparse.Namespace:
    """The options, with the model and data checked: a missing one ends here, before any work."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=None, help=f"bio_mrc model folder (default: the newest {_common.QUICK_MODEL_GLOB})")
    _common.add_data_arguments(parser, "squad-v1.1/dev.json", "SQuAD v1.1 dev JSON")
    parser.add_argument("--limit", type=int, default=1000, help="first N questions; 0 = all")
    parser.add_argument("--repeats", type=int, default=1, help="median of this many forwards per side")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--per-channel", action="store_true", help="per-channel weight scales (default: per tensor)")
    parser.add_argument("--heads-too", action="store_true", help="quantize the heads' Linear layers as well")
    args = parser.parse_args()
    args.model = _common.model_dir(args.model)
    args.data = _common.data_file(args, "squad-v1.1/dev.json")
    return args


def timed_forward(model, features, pad_id: int, batch_size: int, repeats: int):
    return _common.median_of(lambda: run_windows(model, features, pad_id, batch_size, progress=False, precision="fp32"), repeats)


def scores(outputs, data, trained: TrainedModel) -> dict[str, dict]:
    result = {}
    for decoding in ("span", "bio"):
        predictions = decode(outputs, data.examples, decoding, trained.decode_config(DecodeConfig()))
        answers = {p.id: p.answer for p in predictions}
        result[decoding] = {"answers": answers, **squad_metrics(data.gold_texts(), answers, "1.1")}
    return result


def main(args: argparse.Namespace) -> None:
    data = load_squad(args.data, limit=args.limit or None)
    trained = TrainedModel.load(args.model)
    with progress_bars(False):
        features = build_features(data.examples, trained.tokenizer, trained.features, with_targets=False)
    pad_id = trained.tokenizer.pad_token_id or 0
    quantized = copy.deepcopy(trained.model)
    # Per-channel weight scales (one per output unit) lose less than one scale per matrix.
    spec = {torch.nn.Linear: torch.ao.quantization.per_channel_dynamic_qconfig if args.per_channel else torch.ao.quantization.default_dynamic_qconfig}
    if args.heads_too:
        quantized = torch.ao.quantization.quantize_dynamic(quantized, spec, dtype=torch.qint8)
    else:  # the heads stay fp32: they are a sliver of the compute, and their logits are the decoders' input
        quantized.encoder = torch.ao.quantization.quantize_dynamic(quantized.encoder, spec, dtype=torch.qint8)
    # Both sides in fp32: int8 kernels take fp32 activations (bf16 autocast, precision auto's choice on some CPUs, breaks them).
    run_windows(trained.model, features.select(range(8)), pad_id, 8, progress=False, precision="fp32")  # first-call set-up, untimed
    run_windows(quantized, features.select(range(8)), pad_id, 8, progress=False, precision="fp32")
    fp32_out, fp32_s = timed_forward(trained.model, features, pad_id, args.batch_size, args.repeats)
    int8_out, int8_s = timed_forward(quantized, features, pad_id, args.batch_size, args.repeats)
    fp32, int8 = scores(fp32_out, data, trained), scores(int8_out, data, trained)

    machine = _common.machine_description()
    print(f"{len(data.examples)} questions, {len(features)} windows, model {args.model}, median of {args.repeats}")
    print(f"machine: {machine}; {_common.command_load_and_date()}")
    print(f"forward fp32 {fp32_s:.2f} s, int8 {int8_s:.2f} s: {fp32_s / int8_s:.2f}x")
    for decoding in ("span", "bio"):
        same = sum(fp32[decoding]["answers"][q] == int8[decoding]["answers"][q] for q in fp32[decoding]["answers"])
        print(f"{decoding}: fp32 EM/F1 {fp32[decoding]['exact_match']:.2f} / {fp32[decoding]['f1']:.2f}, "
              f"int8 {int8[decoding]['exact_match']:.2f} / {int8[decoding]['f1']:.2f} "
              f"(F1 change {int8[decoding]['f1'] - fp32[decoding]['f1']:+.2f}); same answers {same}/{len(data.examples)}")
    span_drop = fp32["span"]["f1"] - int8["span"]["f1"]
    print(json.dumps({"benchmark": "int8_dynamic_quantization", "reference_s": round(fp32_s, 3), "ours_s": round(int8_s, 3),
                      "ratio": round(fp32_s / int8_s, 3), "identical": bool(fp32_s / int8_s >= 1.5 and span_drop <= 0.5),
                      "machine": machine}))


if __name__ == "__main__":
    main(parse_args())
