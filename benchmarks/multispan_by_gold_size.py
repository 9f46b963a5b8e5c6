"""A multi-span comparison's decodings on the questions whose gold answer is one span and on those whose gold holds
several, per data set, from the report's own per-question counts.

    python benchmarks/multispan_by_gold_size.py --report benchmarks/reports/multispan-reader-full-scale/report.json.xz \\
        [--data-dir ../shared/data] [--run reader]

A data set that is mostly one-span answers (the Quoref part: 9 in 10) can hide what each decoding does where the
answer comes in pieces. For each data set of the evaluation and each group of its questions (gold of one span, gold
of several), each decoding's MultiSpanQA EM and PM F1 (micro-averaged over the group's spans), spans per question,
the share of questions answered with more than one text (the metrics' normalised texts), and the paired bootstrap
of the EM-F1 differences against the span n-best (questions resampled, the micro-averaged F1 recomputed). The
report's counts are used as scored; only the gold answers' sizes come from the data. The last line printed is one
JSON object.
"""

from __future__ import annotations

import json

import numpy as np
from _common import comparison_report, fail, per_data_set, report_arguments

from bio_mrc.answer_text import normalize_answer
from bio_mrc.metrics.stats import paired_bootstrap_ratio
from bio_mrc.metrics.multispan_official import f1_from_count_sums, metrics_from_counts

GROUPS = {"one-span gold": lambda sizes: sizes == 1, "several-span gold": lambda sizes: sizes > 1}


def run_cells(report, run: str) -> dict:
    """The run's cells by decoding."""
    cells = {cell.decoding: cell for cell in report.results.cells if cell.run == run}
    if "span" not in cells or len(cells) < 2:
        fail(f"error: the report has no span cell and another decoding of run {run!r}")
    return cells


def group_rows(cells: dict, rows: np.ndarray) -> dict:
    """Each decoding's scores on the questions at ``rows``, and its paired EM-F1 difference against the span n-best."""
    counts = {name: np.asarray(cell.counts, dtype=np.float64)[rows] for name, cell in cells.items()}
    decodings = {}
    for name, cell in cells.items():
        metrics = metrics_from_counts(counts[name].sum(axis=0).tolist())
        texts = [[normalize_answer(span) for span in cell.answers[k].split("\n") if span] for k in rows]
        decodings[name] = {"em_f1": metrics["em_f1"], "pm_f1": metrics["pm_f1"],
                           "spans_per_question": float(np.mean([len(t) for t in texts])),
                           "several_texts_share": float(np.mean([len(set(t)) > 1 for t in texts]))}
    differences = {}
    for name in cells:
        if name != "span":
            result = paired_bootstrap_ratio(counts[name], counts["span"], f1_from_count_sums)
            differences[f"{name} - span"] = {"difference": result.diff, "ci": [result.ci_low, result.ci_high], "p": result.p_value}
    return {"questions": int(len(rows)), "decodings": decodings, "em_f1_differences": differences}


def gold_sizes(examples) -> np.ndarray:
    """Each question's gold answer size in spans (its largest alternative's; 0 without an answer)."""
    return np.array([max((len(answer) for answer in example.answers), default=0) for example in examples])


def size_masks(sizes: np.ndarray) -> dict[str, np.ndarray]:
    """Each of ``GROUPS``' questions among those of gold ``sizes``."""
    return {label: chosen(sizes) for label, chosen in GROUPS.items()}


def data_set_groups(part, begin: int, cells: dict) -> dict:
    """A data set's questions (report rows ``begin`` onwards) by the size of their gold answer."""
    masks = size_masks(gold_sizes(part.examples))
    groups = {label: group_rows(cells, begin + np.flatnonzero(mask)) for label, mask in masks.items() if mask.any()}
    return {"description": part.description, "questions": len(part.examples), "groups": groups}


def print_data_set(data_set: dict) -> None:
    print(f"\n{data_set['description']} ({data_set['questions']} questions)")
    for label, group in data_set["groups"].items():
        print(f"  {label} ({group['questions']} questions)")
        for name, row in group["decodings"].items():
            print(f"    {name:6s} EM F1 {row['em_f1']:6.2f}  PM F1 {row['pm_f1']:6.2f}  spans/question "
                  f"{row['spans_per_question']:.2f}  several texts {100 * row['several_texts_share']:5.1f}%")
        for name, contrast in group["em_f1_differences"].items():
            low, high = contrast["ci"]
            print(f"    {name:13s} {contrast['difference']:+6.2f} [{low:+.2f}, {high:+.2f}]")


def main() -> None:
    args = report_arguments(__doc__.splitlines()[0], "a multi-span comparison's report.json (or .json.xz)",
                            "the run whose decodings to compare (default: the report's first)")
    report, config, splits = comparison_report(args.report, args.data_dir)
    cells = run_cells(report, args.run or config.runs[0].name)
    data_sets = per_data_set(splits, lambda part, first_row: data_set_groups(part, first_row, cells))
    for data_set in data_sets:
        print_data_set(data_set)
    print(json.dumps({"report": args.report, "data_sets": data_sets}))


if __name__ == "__main__":
    main()
