"""The joint decoding's multi-span rule re-decoded from a multi-span comparison's own answers: the BIO head's
tag-sequence spans where they are several, else the joint decoding's n-best answer.

    python benchmarks/multispan_joint_rule_from_report.py --report benchmarks/reports/gpu-multispan-reader/report.json.xz \\
        [--data-dir ../shared/data] [--run reader]

A report keeps each cell's answer per question (its spans' texts). For every evaluation question, the rule's answer is
the run's BIO answer where it has two or more spans, else the run's joint answer. The BIO spans there passed the BIO
decoding's tuned span-count threshold (the report's, per fold), where the package's joint rule asks each tag-sequence
span to be more likely than not (posterior 0.5): an approximation of the rule with no model at hand. Per data set of
the evaluation: MultiSpanQA's official EM and PM F1, spans per question, and the paired bootstrap of the EM-F1
differences (questions resampled, the micro-averaged F1 recomputed) against the run's span n-best and joint answers.
The last line printed is one JSON object.
"""

from __future__ import annotations

import json

import numpy as np
from _common import comparison_report, report_arguments

from bio_mrc.metrics.stats import paired_bootstrap_ratio
from bio_mrc.metrics.multispan_official import f1_from_count_sums
from bio_mrc.metrics.task_scores import span_count_metrics, span_count_scores

RULE = "tags where several, else joint"


def answers_by_decoding(report, run: str) -> dict[str, dict[str, list[str]]]:
    """The run's answers per decoding, per question id, as span texts; and the rule's."""
    cells = {cell.decoding: cell for cell in report.results.cells if cell.run == run}
    missing = {"span", "bio", "joint"} - set(cells)
    if missing:
        raise SystemExit(f"error: the report has no {', '.join(sorted(missing))} cell of run {run!r}")
    answers = {name: {qid: [s for s in text.split("\n") if s] for qid, text in zip(report.eval_ids, cell.answers)}
               for name, cell in cells.items()}
    answers[RULE] = {qid: bio if len(bio) >= 2 else answers["joint"][qid] for qid, bio in answers["bio"].items()}
    return answers


def data_set_rows(part, answers: dict[str, dict[str, list[str]]]) -> dict:
    """EM/PM F1 and spans per question of each decoding on one data set, and the rule's paired EM-F1 differences."""
    gold, ids = part.gold, part.ids
    counts = {name: span_count_scores(part.kind, gold, given, ids)["counts"] for name, given in answers.items()}
    rows = {}
    for name, columns in counts.items():
        metrics = span_count_metrics(part.kind, {"counts": columns})
        spans = float(np.mean([len(answers[name][qid]) for qid in ids]))
        rows[name] = {"em_f1": metrics["em_f1"], "pm_f1": metrics["pm_f1"], "spans_per_question": spans}
    contrasts = {}
    for other in ("span", "joint", "bio"):
        result = paired_bootstrap_ratio(counts[RULE], counts[other], f1_from_count_sums)
        contrasts[f"{RULE} - {other}"] = {"difference": result.diff, "ci": [result.ci_low, result.ci_high], "p": result.p_value}
    return {"description": part.description, "questions": len(ids), "decodings": rows, "em_f1_differences": contrasts}


def main() -> None:
    args = report_arguments(__doc__.splitlines()[0], "a multi-span comparison's report.json (or .json.xz)",
                            "the run whose answers to combine (default: the report's first)")
    report, config, splits = comparison_report(args.report, args.data_dir)
    answers = answers_by_decoding(report, args.run or config.runs[0].name)
    result = {"report": args.report, "rule": RULE,
              "data_sets": [data_set_rows(part, answers) for part in splits.eval.parts or [splits.eval]]}
    for data_set in result["data_sets"]:
        print(f"\n{data_set['description']} ({data_set['questions']} questions)")
        for name, row in data_set["decodings"].items():
            print(f"  {name:32s} EM F1 {row['em_f1']:6.2f}  PM F1 {row['pm_f1']:6.2f}  spans/question {row['spans_per_question']:.2f}")
        for name, contrast in data_set["em_f1_differences"].items():
            low, high = contrast["ci"]
            print(f"  {name:32s} {contrast['difference']:+6.2f} [{low:+.2f}, {high:+.2f}]")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
