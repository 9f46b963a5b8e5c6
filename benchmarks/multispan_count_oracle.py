"""How much of a multi-span decoding's score is the number of spans it gives: a cross-validated comparison's fold
models decode again, once as the report scored them and once told by the gold which questions have one answer.

    python benchmarks/multispan_count_oracle.py --report benchmarks/reports/multispan-reader-full-scale/report.json.xz \\
        [--data-dir ../shared/data] [--run reader]

Each fold's model (the folders the report names, on this machine) reads its held-out questions; each decoding decodes
them with the fold's recorded BIO length prior and span-count rule, and the counts must equal the report's, question
for question (else the script stops: another model or other code); a report whose cells do not record which questions
each fold held out (one written before cells recorded them), or record others than the report's config draws here, is
refused before any model loads. Then the same answers with the count told: a question whose gold is one span keeps its
answer's first span only; a question whose gold holds several keeps the spans the rule kept. Per data set and per
group of questions (every question, gold of one span, gold of several): each decoding's EM and PM F1 both ways, and
the paired bootstrap of the EM-F1 differences against the span n-best (``multispan_by_gold_size.py``'s). What the told
count leaves between two decodings is what no rule for the number of spans can close: on one-span questions it is the
quality of each decoding's first span. The last line printed is one JSON object.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from _common import comparison_report, fail, per_data_set, report_arguments
from multispan_by_gold_size import gold_sizes, group_rows, run_cells, size_masks

from bio_mrc.decoding.postprocess import DecodeConfig
from bio_mrc.decoding.window_outputs import WindowOutputs
from bio_mrc.harness.cells import decode_cell, pool
from bio_mrc.harness.comparison_splits import Split, held_out_hashes
from bio_mrc.harness.earlier_report import fold_problem
from bio_mrc.inference.loading import TrainedModel

ALL_QUESTIONS = "every question"


@dataclass
class DecodedAnswers:
    """A decoding's per-question counts and answer texts over the evaluation, as a report's cell holds them."""

    counts: list[list[float]]
    answers: list[str]


@dataclass
class FoldOutputs:
    """One fold's held-out questions, its model's outputs on them and the options its model decodes with."""

    held_out: Split
    outputs: WindowOutputs
    options: DecodeConfig


def check_folds(report_path: str, cells: dict, splits) -> None:
    """Each cell's folds held out the questions the report's config draws here, as ``compare --cells-from`` checks
    them: the fold models decode those, and the answers are paired question by question with the report's."""
    folds = held_out_hashes(splits.folds or [])
    for name, cell in cells.items():
        if problem := fold_problem(cell, folds):
            fail(f"error: {report_path}: the {name} decoding's cell (run {cell.run!r}, seed {cell.seed}) {problem}; "
                 "run its comparison again with this bio_mrc to decode its folds")


def fold_outputs(config, splits, cells: dict, run_name: str) -> list[FoldOutputs]:
    """Each fold model's outputs on its held-out questions (the report's fold models, which must be on this machine)."""
    run = next(r for r in config.runs if r.name == run_name)
    folders = next(iter(cells.values())).fold_model_dirs or []
    missing = [folder for folder in folders if not Path(folder).is_dir()]
    if not folders or missing:
        fail(f"error: the report's fold models are not on this machine ({missing[0] if missing else 'none named'}): "
             "train them with the report's config first (bio-mrc compare --config ...)")
    folds = []
    for (_, held_out), folder in zip(splits.folds_for(run), folders):
        trained = TrainedModel.load(folder, precision=run.evaluation_precision)
        folds.append(FoldOutputs(held_out, trained.windows(held_out.examples, progress=True), trained.decode_config(config.decode)))
    return folds


def fold_predictions(folds: list[FoldOutputs], splits, cells: dict) -> dict[str, list]:
    """Each decoding's predictions on the evaluation's questions, every question decoded by the fold model that did not
    train on it with that fold's recorded length prior and span-count rule."""
    parts: dict[str, list] = {name: [] for name in cells}
    for k, fold in enumerate(folds):
        for name, cell in cells.items():
            options = replace(fold.options, bio_length_prior=cell.fold_bio_length_priors[k])
            parts[name].append(decode_cell(fold.outputs, fold.held_out, name, options, None, {name: cell.fold_min_span_probabilities[k]}))
    return {name: pool(decoded, splits.eval.ids).predictions for name, decoded in parts.items()}


def one_span_where_told(predictions: list, gold_sizes: dict[str, int]) -> list:
    """The answers with the count told: a question whose gold is one span keeps its first span only."""
    return [replace(p, spans=p.spans[:1]) if gold_sizes[p.id] == 1 else p for p in predictions]


def as_cell(task, split, predictions: list) -> DecodedAnswers:
    counts = np.asarray(task.scores(split.gold, predictions, split.ids)["counts"], dtype=np.float64)
    by_id = {p.id: p for p in predictions}
    return DecodedAnswers(counts.tolist(), [task.answer_text(by_id[qid]) for qid in split.ids])


def check_as_reported(cells: dict, decoded: dict) -> None:
    for name, cell in cells.items():
        if not np.array_equal(np.asarray(cell.counts, dtype=np.float64), np.asarray(decoded[name].counts)):
            fail(f"error: the {name} decoding's counts differ from the report's: these are not the report's models or code")


def data_set_rows(part, begin: int, ways: dict[str, dict]) -> dict:
    """A data set's groups of questions (every one, one-span gold, several-span gold), scored each way."""
    sizes = gold_sizes(part.examples)
    masks = {ALL_QUESTIONS: np.ones(len(sizes), dtype=bool)} | size_masks(sizes)
    groups = {label: {way: group_rows(cells, begin + np.flatnonzero(mask)) for way, cells in ways.items()}
              for label, mask in masks.items() if mask.any()}
    return {"description": part.description, "questions": len(part.examples), "groups": groups}


def print_data_set(data_set: dict) -> None:
    print(f"\n{data_set['description']} ({data_set['questions']} questions)")
    for label, ways in data_set["groups"].items():
        for way, group in ways.items():
            print(f"  {label}, {way} ({group['questions']} questions)")
            scores = "  ".join(f"{name} {row['em_f1']:6.2f}" for name, row in group["decodings"].items())
            contrasts = "  ".join(f"{name} {c['difference']:+.2f} [{c['ci'][0]:+.2f}, {c['ci'][1]:+.2f}]"
                                  for name, c in group["em_f1_differences"].items())
            print(f"    EM F1: {scores}\n    {contrasts}")


@dataclass
class ReadAgain:
    """A cross-validated report's fold models read again: each fold's outputs, and each decoding's predictions with the
    fold's recorded settings, scored (``as_reported``: checked equal to the report's counts)."""

    report_path: str
    splits: Any
    cells: dict
    folds: list[FoldOutputs]
    predictions: dict[str, list]
    as_reported: dict[str, DecodedAnswers]


def read_report_again(description: str) -> ReadAgain:
    """The command line's report, its fold models' outputs and the report's answers decoded from them again."""
    args = report_arguments(description, "a cross-validated multi-span comparison's report.json (or .json.xz)",
                            "the run whose decodings to compare (default: the report's first)")
    report, config, splits = comparison_report(args.report, args.data_dir)
    run_name = args.run or config.runs[0].name
    cells = run_cells(report, run_name)
    check_folds(args.report, cells, splits)
    folds = fold_outputs(config, splits, cells, run_name)
    predictions = fold_predictions(folds, splits, cells)
    as_reported = {name: as_cell(splits.eval.kind, splits.eval, p) for name, p in predictions.items()}
    check_as_reported(cells, as_reported)
    return ReadAgain(args.report, splits, cells, folds, predictions, as_reported)


def main() -> None:
    again = read_report_again(__doc__.splitlines()[0])
    splits = again.splits
    sizes = dict(zip(splits.eval.ids, gold_sizes(splits.eval.examples).tolist()))
    told = {name: as_cell(splits.eval.kind, splits.eval, one_span_where_told(p, sizes)) for name, p in again.predictions.items()}
    ways = {"as reported": again.as_reported, "count told": told}
    data_sets = per_data_set(splits, lambda part, first_row: data_set_rows(part, first_row, ways))
    for data_set in data_sets:
        print_data_set(data_set)
    print(json.dumps({"report": again.report_path, "data_sets": data_sets}))


if __name__ == "__main__":
    main()
