"""Multi-span answers of a model out of its domain: every decoding on MultiSpanQA and the Quoref part, each span-count
rule at its default and tuned on the other data set.

    python benchmarks/multispan_out_of_domain.py --model runs/quick/models/<joint model> [--data-dir ../shared/data]
        [--limit N]

A model trained on SQuAD alone has seen neither data set, and a user's questions come from a domain no threshold was
tuned on. So each decoding answers every question twice: with its span-count rule's default (the registry's; the
BIO decoding's default keeps the spans its expected-F1 rule chose), and with the threshold `bio-mrc tune` would pick
on the *other* data set's questions (MultiSpanQA's exact-match F1 over span sets). Per data set and per setting:
MultiSpanQA's official EM and PM F1, spans per question, questions left empty, and the paired bootstrap of the EM-F1
differences BIO − span and joint − span (questions resampled, the micro-averaged F1 recomputed). The Quoref part's
questions whose gold answer has several spans are reported on their own too. One forward pass per data set; the last
line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from bio_mrc import registry
from bio_mrc.data.multispanqa import load_multispanqa, multispan_gold_texts
from bio_mrc.data.answer_parts import load_answer_parts
from bio_mrc.data.sources import default_data_dir
from bio_mrc.decoding.postprocess import DecodeConfig
from bio_mrc.errors import BioMrcError
from bio_mrc.metrics.stats import paired_bootstrap_ratio
from bio_mrc.inference.answers import multi_span_answers, span_count_threshold
from bio_mrc.inference.loading import TrainedModel
from bio_mrc.inference.tuning import all_multi_span_candidates, best_span_count_threshold
from bio_mrc.metrics.multispan_official import f1_from_count_sums
from bio_mrc.metrics.task_scores import span_count_metrics, span_count_scores

DATA_SETS = {"MultiSpanQA": ("multispanqa/valid.json", load_multispanqa, "multispanqa"),
             "Quoref part": ("quoref-part/train.json", load_answer_parts, "quoref")}


def candidates_of(trained: TrainedModel, examples, config: DecodeConfig) -> dict:
    """Each decoding's every-candidate multi-span answers (one forward pass)."""
    outputs = trained.windows(examples, progress=True)
    return {name: all_multi_span_candidates(outputs, examples, name, config) for name in trained.decodings}


def scores(examples, answers: dict[str, dict[str, list[str]]], task) -> dict:
    """EM/PM F1, spans per question and empty answers per decoding, and the paired EM-F1 differences against span."""
    gold, ids = multispan_gold_texts(examples), [e.id for e in examples]
    counts = {name: span_count_scores(task, gold, given, ids)["counts"] for name, given in answers.items()}
    rows = {}
    for name, columns in counts.items():
        metrics = span_count_metrics(task, {"counts": columns})
        rows[name] = {"em_f1": metrics["em_f1"], "pm_f1": metrics["pm_f1"],
                      "spans_per_question": float(np.mean([len(answers[name][q]) for q in ids])),
                      "empty": int(sum(not answers[name][q] for q in ids))}
    contrasts = {}
    for name in (n for n in ("bio", "joint") if n in counts and "span" in counts):
        result = paired_bootstrap_ratio(counts[name], counts["span"], f1_from_count_sums)
        contrasts[f"{name} - span"] = {"difference": result.diff, "ci": [result.ci_low, result.ci_high]}
    return {"questions": len(ids), "decodings": rows, "em_f1_differences": contrasts}


def answers_at(candidates: dict, thresholds: dict[str, float]) -> dict[str, dict[str, list[str]]]:
    return {name: {p.id: p.answers for p in multi_span_answers(found, name, thresholds[name])} for name, found in candidates.items()}


def evaluate(trained: TrainedModel, data: dict, config: DecodeConfig) -> dict:
    """Per data set: the defaults' scores and those of the thresholds tuned on the other data set."""
    found = {name: candidates_of(trained, examples, config) for name, (examples, _) in data.items()}
    result = {}
    for name, (examples, task) in data.items():
        other = next(n for n in data if n != name)
        tuned = {d: best_span_count_threshold(c, data[other][0], d, data[other][1])[0] for d, c in found[other].items()}
        defaults = {d: span_count_threshold(d, None, None) for d in found[name]}
        parts = {name: examples}
        several = [e for e in examples if len(e.answer_texts()[0]) >= 2]
        if len(several) < len(examples):
            parts[f"{name}, multi-span questions"] = several
        result[name] = {}
        for setting, thresholds in (("defaults", defaults), (f"tuned on {other}", tuned)):
            answers = answers_at(found[name], thresholds)
            result[name][setting] = {"thresholds": thresholds,
                                     "parts": {part: scores(subset, answers, task) for part, subset in parts.items()}}
    return result


def print_table(result: dict) -> None:
    for settings in result.values():
        for setting, row in settings.items():
            thresholds = ", ".join(f"{d} {t:g}" for d, t in row["thresholds"].items())
            for part, part_scores in row["parts"].items():
                print(f"\n{part} ({part_scores['questions']} questions), span-count rule: {setting} ({thresholds})")
                for decoding, s in part_scores["decodings"].items():
                    print(f"  {decoding:6s} EM F1 {s['em_f1']:6.2f}  PM F1 {s['pm_f1']:6.2f}  spans/question "
                          f"{s['spans_per_question']:.2f}  empty {s['empty']}")
                for contrast, c in part_scores["em_f1_differences"].items():
                    print(f"  {contrast:13s} {c['difference']:+6.2f} [{c['ci'][0]:+.2f}, {c['ci'][1]:+.2f}]")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="a bio_mrc model folder (or hub id)")
    parser.add_argument("--data-dir", default=None, help="the folder holding multispanqa/ and quoref-part/ (default: the package's)")
    parser.add_argument("--limit", type=int, default=0, help="the first N questions of each data set (0: all)")
    args = parser.parse_args()
    data_dir = Path(args.data_dir) if args.data_dir else default_data_dir()
    try:
        trained = TrainedModel.load(args.model)
        data = {}
        for name, (relative, load, task) in DATA_SETS.items():
            examples = load(data_dir / relative)
            data[name] = (examples[: args.limit] if args.limit else examples, registry.task(task))
    except (BioMrcError, OSError) as error:  # one line naming the file and the problem
        raise SystemExit(f"error: {error}") from None
    result = evaluate(trained, data, trained.decode_config(DecodeConfig()))
    print_table(result)
    print(json.dumps({"model": args.model, "data_dir": str(data_dir), "limit": args.limit, "data_sets": result}))


if __name__ == "__main__":
    main()
