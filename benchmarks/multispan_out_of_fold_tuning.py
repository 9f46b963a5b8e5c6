"""A cross-validated multi-span reader's decodings tuned on questions their models have not trained on: each fold's
BIO length prior and span-count rules tuned on the other folds' held-out answers, against the report's own settings.

    python benchmarks/multispan_out_of_fold_tuning.py --report benchmarks/reports/multispan-reader-full-scale/report.json.xz \\
        [--data-dir ../shared/data] [--run reader]

With ``"length_prior_tuning": "fold-training"`` a fold's settings are tuned on the fold's training questions, which its
model has trained on and is surer of than of new ones. Here fold k's settings are tuned instead, by the same policy
(:func:`bio_mrc.inference.tuning.tune_settings`: the task's main statistic, each data set weighed alike), on the other
folds' questions as their own models answered them: questions the model answering them never trained on, and never
fold k's own (those models trained on fold k's questions, so the few numbers tuned are not wholly independent of
them). Each fold model reads its held-out questions (the folders the report names, on this machine); the answers
with the report's settings must equal the report's, question for question, and its cells must record the questions
each fold held out, as the report's config draws them here (``multispan_count_oracle.py`` reads the report). Per data
set and group of questions (every question, gold of one span, gold of several): each decoding's EM and PM F1 both
ways, with the paired bootstrap of the EM-F1 differences against the span n-best, and each fold's settings both ways.
The last line printed is one JSON object.
"""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
from _common import fail, per_data_set
from multispan_count_oracle import FoldOutputs, as_cell, data_set_rows, print_data_set, read_report_again

from bio_mrc.decoding.window_outputs import WindowOutputs
from bio_mrc.harness.cells import decode_cell, pool
from bio_mrc.inference.tuning import TunedSettings, tune_settings


def joined_outputs(folds: list[FoldOutputs]) -> WindowOutputs:
    """The folds' windows one after another, their questions numbered in the folds' order."""
    lengths = {fold.outputs.mask.shape[1] for fold in folds}
    if len(lengths) > 1:
        fail(f"error: the folds' windows are padded to different lengths {sorted(lengths)}; they cannot be joined")
    index, first = [], 0
    for fold in folds:
        index.append(fold.outputs.example_index + first)
        first += len(fold.held_out.examples)
    return WindowOutputs.concatenate([fold.outputs for fold in folds], np.concatenate(index))


def out_of_fold_settings(folds: list[FoldOutputs], k: int, decodings: list[str], splits) -> TunedSettings:
    """Fold k's length prior and span-count rules tuned on every other fold's held-out answers."""
    others = [fold for j, fold in enumerate(folds) if j != k]
    examples = [ex for fold in others for ex in fold.held_out.examples]
    tuned_on = {ex.id for ex in examples}
    data_sets = [[qid for qid in part.ids if qid in tuned_on] for part in splits.eval.parts]
    return tune_settings(joined_outputs(others), examples, decodings, replace(folds[k].options, bio_length_prior=None),
                         tune_prior=True, tune_thresholds=False, task=splits.eval.kind, data_sets=data_sets)


def out_of_fold_predictions(folds: list[FoldOutputs], splits, decodings: list[str]) -> tuple[dict[str, list], list[dict]]:
    """Each decoding's predictions, fold k decoded with the settings tuned out of fold; and each fold's settings."""
    parts: dict[str, list] = {name: [] for name in decodings}
    settings = []
    for k, fold in enumerate(folds):
        tuned = out_of_fold_settings(folds, k, decodings, splits)
        settings.append({"bio_length_prior": tuned.bio_length_prior, "min_span_probabilities": tuned.min_span_probabilities})
        for name in decodings:
            parts[name].append(decode_cell(fold.outputs, fold.held_out, name, tuned.decode_config, None, tuned.min_span_probabilities))
    return {name: pool(decoded, splits.eval.ids).predictions for name, decoded in parts.items()}, settings


def reported_settings(cells: dict, folds: int) -> list[dict]:
    """Each fold's settings as the report records them (the length prior of the decodings it applies to)."""
    priors = next((cell.fold_bio_length_priors for cell in cells.values() if any(p is not None for p in cell.fold_bio_length_priors or [])),
                  [None] * folds)
    return [{"bio_length_prior": priors[k], "min_span_probabilities": {name: cell.fold_min_span_probabilities[k] for name, cell in cells.items()}}
            for k in range(folds)]


def main() -> None:
    again = read_report_again(__doc__.splitlines()[0])
    splits = again.splits
    predictions, settings = out_of_fold_predictions(again.folds, splits, list(again.cells))
    ways = {"as reported": again.as_reported,
            "tuned out of fold": {name: as_cell(splits.eval.kind, splits.eval, p) for name, p in predictions.items()}}
    data_sets = per_data_set(splits, lambda part, first_row: data_set_rows(part, first_row, ways))
    fold_settings = {"as reported": reported_settings(again.cells, len(again.folds)), "tuned out of fold": settings}
    for way, per_fold in fold_settings.items():
        print(f"{way}: " + "; ".join(f"fold {k + 1}: β {s['bio_length_prior']}, span-count "
                                     + ", ".join(f"{name} {value:g}" for name, value in s["min_span_probabilities"].items())
                                     for k, s in enumerate(per_fold)))
    for data_set in data_sets:
        print_data_set(data_set)
    print(json.dumps({"report": again.report_path, "fold_settings": fold_settings, "data_sets": data_sets}))


if __name__ == "__main__":
    main()
