"""MultiSpanQA, 5-fold cross-validation by question on the 653-question validation split.

Each fold trains a joint (span + BIO) model on the other folds, then decodes the
held-out questions with every multi-span method:

- BIO decoding: the spans of the most probable tag sequence (no span over the
  maximum answer length), each ranked by its log-likelihood ratio against O,
  without a span-length prior (``bio``) and with the prior tuned on SQuAD for
  the ``--init-from`` model, which every fold model inherits (``bio-squad-prior``;
  nothing is tuned on MultiSpanQA);
- span-head n-best multi-span: non-overlapping n-best spans with probability >= 0.1.

Predictions of the five folds are pooled (every question is predicted exactly
once, by the model that did not see it) and scored with MultiSpanQA's official
metrics. ``--init-from`` starts every fold from a model already trained on SQuAD
instead of the bare encoder.

    python benchmarks/multispanqa_cv.py --output runs/multispanqa [--init-from runs/core-joint]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from dataclasses import replace
from pathlib import Path

from bio_mrc.data.multispanqa import load_multispanqa, multispan_gold_texts
from bio_mrc.data.splits import kfold_by_question
from bio_mrc.decoding.multispan import nbest_multi_span
from bio_mrc.decoding.postprocess import DecodeConfig, decode
from bio_mrc.metrics.multispan import multispan_metrics
from bio_mrc.predict import TrainedModel
from bio_mrc.training.train import TrainConfig, load_run_record, train_model

METHODS = ("bio", "bio-squad-prior", "span-nbest")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=os.environ.get("BIO_MRC_DATA", "../shared/data") + "/multispanqa/valid.json")
    parser.add_argument("--output", default="runs/multispanqa")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--epochs", type=float, default=3.0)
    parser.add_argument("--learning-rate", type=float, default=1e-4)
    parser.add_argument("--head-learning-rate", type=float, default=TrainConfig.head_learning_rate,
                        help="learning rate of the heads (default: the package default)")
    parser.add_argument("--init-from", help="a trained bio_mrc model (e.g. on SQuAD) to start every fold from")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--tag-level", choices=("word", "subword"), default=TrainConfig.tag_level)
    parser.add_argument("--bio-loss-weight", type=float, default=TrainConfig.bio_loss_weight)
    parser.add_argument("--max-seq-length", type=int, default=256)
    parser.add_argument("--doc-stride", type=int, default=96)
    args = parser.parse_args()

    examples = load_multispanqa(args.data)
    output = Path(args.output)
    config = TrainConfig(heads="span+bio", max_seq_length=args.max_seq_length, doc_stride=args.doc_stride, epochs=args.epochs, batch_size=16,
                         learning_rate=args.learning_rate, head_learning_rate=args.head_learning_rate, seed=args.seed, bio_targets="one-hot", init_from=args.init_from,
                         tag_level=args.tag_level, bio_loss_weight=args.bio_loss_weight)
    predictions: dict[str, dict[str, list[str]]] = {m: {} for m in METHODS}
    started = time.perf_counter()
    for fold, (train, test) in enumerate(kfold_by_question(examples, args.folds, seed=args.seed)):
        model_dir = output / f"fold{fold}"
        if load_run_record(model_dir) is None:  # the record is written last: only a finished fold is reused
            train_model(train, config, model_dir, save_checkpoints=False, progress=True)
        trained = TrainedModel.load(model_dir, progress=True)
        outputs = trained.windows(test, progress=True)
        multi = DecodeConfig(multi_span=True, require_answer=True, bio_length_prior=0.0)
        for method, decode_config in (("bio", multi), ("bio-squad-prior", trained.decode_config(replace(multi, bio_length_prior=None)))):
            decoded = decode(outputs, test, "bio", decode_config)
            predictions[method].update({p.id: [s.text for s in p.spans] for p in decoded})
        decoded = nbest_multi_span(decode(outputs, test, "span", DecodeConfig()), min_probability=0.1)
        predictions["span-nbest"].update({p.id: [s.text for s in p.spans] for p in decoded})
        print(f"fold {fold}: trained on {len(train)}, predicted {len(test)}", flush=True)

    gold = multispan_gold_texts(examples)
    rows = {m: multispan_metrics(gold, predictions[m]) for m in METHODS}
    seconds = time.perf_counter() - started
    output.mkdir(parents=True, exist_ok=True)
    (output / "results.json").write_text(json.dumps({"args": vars(args), "seconds": seconds, "metrics": rows}, indent=2))
    for method in METHODS:
        (output / f"predictions-{method}.json").write_text(json.dumps(predictions[method], ensure_ascii=False))
    print(f"MultiSpanQA valid ({len(examples)} questions), {args.folds}-fold CV by question, "
          f"{'from ' + args.init_from if args.init_from else 'from the default encoder'}; {seconds / 60:.1f} min")
    print(f"machine: {platform.platform()}, {os.cpu_count()} CPUs; date {time.strftime('%Y-%m-%d')}")
    print("| method | EM P | EM R | EM F1 | PM P | PM R | PM F1 |")
    print("|---|---|---|---|---|---|---|")
    for method, m in rows.items():
        print(f"| {method} | " + " | ".join(f"{m[k]:.2f}" for k in
              ("em_precision", "em_recall", "em_f1", "pm_precision", "pm_recall", "pm_f1")) + " |")


if __name__ == "__main__":
    main()
