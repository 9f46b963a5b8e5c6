"""Settings tuned on held-out questions and saved with a model: the BIO decoding's span-length
prior, on multi-span data each decoding's span-count rule, and on SQuAD 2.0 data a no-answer threshold
per decoding. ``bio-mrc tune`` and
``bio-mrc compare`` both tune through :func:`tune_settings`."""

from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Collection, Mapping, Sequence

import numpy as np

from .. import registry
from ..answer_text import shared_normalized_answers, without_blank_edges
from ..data.squad import gold_texts
from ..decoding.postprocess import DecodeConfig, GroupedTags, decode, decode_tag_groups, merged_tag_groups
from ..decoding.window_outputs import WindowOutputs
from ..errors import AlwaysAbstainWarning, DataFormatError
from ..io import atomic_writers
from ..metrics.shared_scores import shared_question_scores
from ..metrics.squad_official import best_no_answer_threshold, no_answer_threshold_curve, per_question_scores
from ..model import BioMrcConfig
from ..model_card import CARD_FILE, model_card_text, remove_generated_card
from ..model_folder import NOT_FITTED
from ..types import Example, Prediction, content_hash
from ..plurals import counted
from ..progress import question_bar, questions_done, questions_planned
from .answers import CONFIDENCE_SPANS, apply_no_answer_threshold, multi_span_answers_at, threshold_key, with_confidence_spans
from .calibrators import degenerate_calibrator, fit_calibrator, raw_confidence
from .defaults import FEWEST_CALIBRATION_QUESTIONS
from .tuning_chunks import columns_statistic, each_chunk, joined_columns, score_columns

if TYPE_CHECKING:  # the loader runs models; tuning needs only its decodings and saved settings
    from .loading import TrainedModel

LENGTH_PRIOR_GRID = tuple(np.round(np.arange(0.0, 6.01, 0.25), 2).tolist())
# Grid values within this distance of a β vote for it: about 1,000 tuning questions leave a curve whose flat top
# wobbles by a few tenths of F1, and a lone high point there is noise (benchmarks/length_prior_rule.py).
LENGTH_PRIOR_BANDWIDTH = 0.25
# The span-count rule's thresholds: a span after the first joins a multi-span answer with at least this probability.
SPAN_PROBABILITY_GRID = tuple(np.round(np.arange(0.0, 0.951, 0.05), 2).tolist())
SPAN_PROBABILITY_BANDWIDTH = 0.05
# Why no no-answer threshold is tuned on questions that all have an answer: "answer every question" scores as well as
# abstaining on the ones answered wrong (F1 0 either way), and the official search's tie rule would pick abstaining.
NO_UNANSWERABLE = "none tuned: every tuning question has an answer, so the model answers every question"
# And on questions none of which has an answer: "always abstain" (-inf) would win, a model that answers nothing.
NO_ANSWERABLE = ("none tuned: no tuning question has an answer, and a threshold fitted on them abstains on every "
                 "question; tune on questions with and without answers")
# The question ids of each data set a tuning split joins (none: one data set).
DataSets = Sequence[Collection[str]]


def smoothed_argmax(grid: Sequence[float], statistic: np.ndarray, bandwidth: float) -> int:
    """The index of the grid value whose ``statistic``, averaged with that of every grid value within ``bandwidth``
    of it (fewer at the ends), is largest; ties go to the first. A bandwidth of 0 is the plain argmax."""
    values = np.asarray(grid, dtype=np.float64)
    near = np.abs(values[:, None] - values[None, :]) <= bandwidth + 1e-9
    return int(np.argmax(near @ np.asarray(statistic, dtype=np.float64) / near.sum(axis=1)))


def _answer_and_abstain_f1(predictions: Sequence[Prediction], gold: Mapping[str, Sequence[str]]) -> tuple[np.ndarray, ...]:
    """Per question (v2.0 rules, 0..100): its no-answer score, F1 when answering with its best span, F1 when abstaining."""
    ids = [p.id for p in predictions]
    answered = per_question_scores(gold, {p.id: (p.spans[0].text if p.spans else "") for p in predictions}, ids, "2.0")[1]
    abstained = per_question_scores(gold, dict.fromkeys(ids, ""), ids, "2.0")[1]
    scores = np.array([p.no_answer_score for p in predictions], dtype=np.float64)
    return scores, answered, abstained


def no_answer_columns(
    outputs: WindowOutputs, examples: Sequence[Example], decoding: str, config: DecodeConfig, gold: Mapping[str, Sequence[str]],
) -> tuple[np.ndarray, ...]:
    """:func:`_answer_and_abstain_f1` of ``decoding``'s answers to every question, decoded a chunk at a time."""
    parts = [_answer_and_abstain_f1(decode(part_outputs, part, decoding, config), gold)
             for part_outputs, part in each_chunk(outputs, examples)]
    return tuple(np.concatenate(column) for column in zip(*parts))


def threshold_curve(predictions: Sequence[Prediction], gold: Mapping[str, Sequence[str]]) -> tuple[np.ndarray, np.ndarray]:
    """F1 (0..100) at every threshold on the predictions' no-answer scores (see
    :func:`bio_mrc.metrics.squad_official.no_answer_threshold_curve`)."""
    return no_answer_threshold_curve(*_answer_and_abstain_f1(predictions, gold))


def _no_abstention(unanswerable: int, task: registry.TaskEntry | None) -> str:
    """Why questions without an answer tune no no-answer threshold: the task they are scored as never abstains."""
    title = task.title if task is not None else "SQuAD v1.1 official metrics"
    return (f"none tuned: {counted(unanswerable, 'tuning question')} without an answer, but they are "
            f"scored with {title}, which never abstain (SQuAD 2.0's metrics tune a no-answer threshold)")


def _untunable_thresholds(examples: Sequence[Example]) -> str | None:
    """Why no no-answer threshold can be tuned on ``examples`` (all answerable: abstaining would only break ties;
    none answerable: it would abstain always), else None."""
    answerable = [bool(ex.answers) for ex in examples]
    return NO_UNANSWERABLE if all(answerable) else NO_ANSWERABLE if not any(answerable) else None


def answers_past_every_window(outputs: WindowOutputs, examples: Sequence[Example]) -> list[str]:
    """The ids of answerable ``examples`` none of whose answers has each of its spans within one window's paragraph
    characters (a span longer than a window): no decoding can give it, so such questions pull the tuned settings (a
    longer length prior, a threshold) toward the partial credit a window's span earns."""
    starts = np.where(outputs.mask, outputs.offsets[..., 0], np.iinfo(np.int64).max).min(axis=1)
    ends = np.where(outputs.mask, outputs.offsets[..., 1], -1).max(axis=1)
    order = np.argsort(outputs.example_index, kind="stable")
    bounds = np.searchsorted(outputs.example_index[order], np.arange(len(examples) + 1))
    missed = []
    for k, example in enumerate(examples):
        rows = order[bounds[k]:bounds[k + 1]]
        answers = without_blank_edges(example.context, example.answers) or ()  # the spans a decoder can give
        held = (all(((starts[rows] <= s) & (ends[rows] >= e)).any() for s, e in alt) for alt in answers)
        if example.is_answerable and not any(held):  # a multi-span answer's parts may lie in different windows
            missed.append(example.id)
    return missed


def past_windows_line(outputs: WindowOutputs, examples: Sequence[Example]) -> list[str]:
    """A ``warning:`` line for ``tune`` naming the tuning questions whose answer no window can hold, else none."""
    if not (missed := answers_past_every_window(outputs, examples)):
        return []
    shown = ", ".join(repr(i) for i in missed[:5]) + (", …" if len(missed) > 5 else "")
    answerable = sum(1 for example in examples if example.is_answerable)
    return [f"warning: {len(missed)} of {answerable} answerable tuning questions have an answer longer than a window, "
            f"which no decoding can give; the settings were fitted with them (a longer max_seq_length holds them): {shown}"]


def tune_no_answer_threshold(predictions: Sequence[Prediction], gold: Mapping[str, Sequence[str]]) -> tuple[float, float]:
    """The threshold (``abstain`` iff ``no_answer_score > threshold``) with the best F1 on
    ``predictions``; returns ``(threshold, best F1)``. ``-inf`` means "always abstain"."""
    return best_no_answer_threshold(*_answer_and_abstain_f1(predictions, gold))


def _answerable_rows(examples: Sequence[Example]) -> np.ndarray:
    rows = np.array([i for i, ex in enumerate(examples) if ex.answers], dtype=np.int64)
    if not len(rows):
        raise ValueError("tuning the BIO length prior needs answerable questions")
    return rows


def tune_bio_length_prior(
    outputs: WindowOutputs,
    examples: Sequence[Example],
    config: DecodeConfig = DecodeConfig(),
    grid: Sequence[float] = LENGTH_PRIOR_GRID,
    task: registry.TaskEntry | None = None,
    bandwidth: float = LENGTH_PRIOR_BANDWIDTH,
    data_sets: DataSets = (),
) -> tuple[float, np.ndarray]:
    """The span-length prior β of the BIO decoding with the best main statistic of ``task`` on the answerable
    ``examples`` (held-out questions, never the evaluation ones), that statistic averaged over the grid values
    within ``bandwidth`` of β (:func:`smoothed_argmax`); returns ``(β, statistic per grid value)``.

    A per-token tagger is unsure of inner tokens, so the most probable single
    span is biased short; β (added to every inside gain) is the one number that
    corrects it, chosen like a no-answer threshold. Ties go to the smaller β.
    Windows are merged once, a chunk of questions at a time (:func:`~bio_mrc.inference.tuning_chunks.each_chunk`),
    questions of like length together (:class:`~bio_mrc.decoding.postprocess.GroupedTags`), and every β decodes the
    merged arrays, its answers keeping the spans the task's scores read (:meth:`~bio_mrc.registry.TaskEntry.answer_spans`;
    an answer several β give alike scored once); only each question's score per β is kept, and each β decoded advances the open question bar
    (:func:`bio_mrc.progress.question_bar`) by the chunk's questions. ``task`` (None: SQuAD v1.1) says how:
    a single-span task scores the single best span (official F1), a multi-span one the BIO decoding's multi-span
    answers (MultiSpanQA: exact-match F1 over span sets), where β also decides how many spans survive.
    ``data_sets``: see :func:`~bio_mrc.inference.tuning_chunks.columns_statistic`.
    """
    task = task or registry.squad_task("1.1")
    tagged = registry.tag_decoding()
    decode_tags = functools.partial(tagged.decode_merged, kept_spans=task.answer_spans())  # the spans the scores read
    rows = _answerable_rows(examples)
    options = [task.decode_config(replace(config, bio_length_prior=float(prior))) for prior in grid]
    parts: list[list[dict]] = [[] for _ in grid]  # per β, each chunk's per-question columns
    for part_outputs, part in each_chunk(outputs, examples, rows, counted=False):
        merged = GroupedTags.of(part_outputs, len(part), tagged.merged_tags)
        # while the chunk's grid runs, an answer most β give alike is scored once and a span text they meet normalised once
        with shared_question_scores(), shared_normalized_answers():
            for columns, chosen in zip(parts, options):
                columns.append(score_columns(task, part, merged.decode(decode_tags, part, chosen)))
                questions_done(len(part))  # each β is a pass over the chunk's questions
    ids = [examples[i].id for i in rows.tolist()]
    statistic = np.array([columns_statistic(task, ids, joined_columns(columns), data_sets) for columns in parts])
    return float(grid[smoothed_argmax(grid, statistic, bandwidth)]), statistic


def all_multi_span_candidates(outputs: WindowOutputs, examples: Sequence[Example], decoding: str, config: DecodeConfig) -> list[Prediction]:
    """``decoding``'s multi-span candidates, each span with its probability or (n-best) its score, the n-best at least
    :data:`~bio_mrc.inference.answers.CONFIDENCE_SPANS` as answers read them: a threshold's answers are
    :func:`multi_span_answers` of these (with ``config.n_best``). The rule is applied to them once, as decoding applies
    it: n-best shares computed again from shares would flatten them."""
    merged = merged_tag_groups(decoding, outputs, len(examples))
    if merged is not None:  # the spans of its tag sequence
        return decode_tag_groups(decoding, merged, examples, replace(config, multi_span=True, require_answer=True))
    predictions = decode(outputs, examples, decoding, replace(config, multi_span=True))
    return with_confidence_spans(predictions, outputs, examples, decoding, config)


def tune_span_count_rule(
    outputs: WindowOutputs, examples: Sequence[Example], decoding: str, config: DecodeConfig, task: registry.TaskEntry,
    grid: Sequence[float] = SPAN_PROBABILITY_GRID, bandwidth: float = SPAN_PROBABILITY_BANDWIDTH, data_sets: DataSets = (),
) -> tuple[float, np.ndarray]:
    """The probability a span after the first needs to join ``decoding``'s multi-span answer, with the best main
    statistic of the multi-span ``task`` (MultiSpanQA: exact-match F1 over span sets) on held-out ``examples``,
    averaged over the grid values within ``bandwidth`` (:func:`smoothed_argmax`); ties go to the smaller value.
    Returns ``(threshold, statistic per grid value)``. The first span is always kept, so no threshold empties an answer.
    ``data_sets``: see :func:`~bio_mrc.inference.tuning_chunks.columns_statistic`. The candidates are found a chunk
    of questions at a time."""
    parts = [span_count_columns(all_multi_span_candidates(part_outputs, part, decoding, config), part, decoding, task, grid,
                                config.n_best) for part_outputs, part in each_chunk(outputs, examples)]
    ids = [example.id for example in examples]
    statistic = np.array([columns_statistic(task, ids, joined_columns(columns), data_sets) for columns in zip(*parts)])
    return float(grid[smoothed_argmax(grid, statistic, bandwidth)]), statistic


def span_count_columns(
    candidates: Sequence[Prediction], examples: Sequence[Example], decoding: str, task: registry.TaskEntry,
    grid: Sequence[float], n_best: int | None,
) -> list[dict]:
    """Per grid value, the task's per-question columns of the multi-span answers that threshold keeps of ``candidates``
    (each candidate's spans grouped by text once, a text normalised once, an answer several thresholds keep alike
    scored once)."""
    with shared_question_scores(), shared_normalized_answers():
        thresholds = [float(value) for value in grid]
        return [score_columns(task, examples, answers) for answers in multi_span_answers_at(candidates, decoding, thresholds, n_best)]


def best_span_count_threshold(
    candidates: Sequence[Prediction], examples: Sequence[Example], decoding: str, task: registry.TaskEntry,
    grid: Sequence[float] = SPAN_PROBABILITY_GRID, bandwidth: float = SPAN_PROBABILITY_BANDWIDTH, data_sets: DataSets = (),
    n_best: int | None = None,
) -> tuple[float, np.ndarray]:
    """:func:`tune_span_count_rule` from the decoding's every-candidate answers (:func:`all_multi_span_candidates`), the
    first ``n_best`` n-best spans the candidates (all with None)."""
    ids = [example.id for example in examples]
    statistic = np.array([columns_statistic(task, ids, columns, data_sets)
                          for columns in span_count_columns(candidates, examples, decoding, task, grid, n_best)])
    return float(grid[smoothed_argmax(grid, statistic, bandwidth)]), statistic


@dataclass
class TunedSettings:
    """What :func:`tune_settings` chose: the decoding options to use (β filled in), the
    thresholds by :func:`threshold_key`, and how each choice scored (``report``, ``curves``)."""

    decode_config: DecodeConfig
    bio_length_prior: float | None = None  # None: not tuned
    given_bio_length_prior: float | None = None  # given, not tuned: saved, as the other settings were fitted with it
    thresholds: dict[str, float] = field(default_factory=dict)
    min_span_probabilities: dict[str, float] = field(default_factory=dict)  # per decoding: the span-count rule (tuned)
    calibration: dict[str, dict[str, Any]] = field(default_factory=dict)  # per decoding, see .calibration
    skipped_calibrators: dict[str, str] = field(default_factory=dict)  # per decoding: why none is saved
    report: dict[str, Any] = field(default_factory=dict)
    curves: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)

    @property
    def settings(self) -> dict[str, Any]:
        """Config attributes to save besides the thresholds."""
        prior = self.given_bio_length_prior if self.bio_length_prior is None else self.bio_length_prior
        settings: dict[str, Any] = {} if prior is None else {"bio_length_prior": prior}
        settings |= {"min_span_probabilities": self.min_span_probabilities} if self.min_span_probabilities else {}
        # Calibrating replaces the saved calibrator of every decoding it calibrates: a degenerate one (None here) is
        # left out, not kept from an older tuning; on the same questions the other decodings' stay (save_tuned_settings).
        fitted = self.calibration or self.skipped_calibrators
        return settings | ({"calibration": {**dict.fromkeys(self.skipped_calibrators), **self.calibration}} if fitted else {})


def tune_for_model(
    trained: "TrainedModel", outputs: WindowOutputs, examples: Sequence[Example], options: DecodeConfig,
    task: registry.TaskEntry, decodings: Sequence[str] | None = None, calibrate: bool = True, data_sets: DataSets = (),
    progress: bool = False,
) -> TunedSettings:
    """The one tuning policy, of ``bio-mrc tune`` and ``bio-mrc compare`` alike, on questions of ``task``: the BIO
    length prior (by the task's main statistic) when ``options`` leave it open, a decoding tuned uses it and
    some question has an answer (else the model's saved prior; a prior ``options`` give is saved, as the other settings
    are fitted with it); on multi-span questions each decoding's span-count
    rule when ``options`` leave ``min_span_probability`` open; a no-answer threshold per decoding when the task's
    questions may have no answer (SQuAD 2.0); a confidence calibrator per decoding unless the gold is multi-span
    (MultiSpanQA's answers have no single right span), and unless ``calibrate`` is False. Questions from several
    data sets (``data_sets``: each one's question ids) weigh each data set alike
    (:func:`~bio_mrc.inference.tuning_chunks.columns_statistic`). ``progress``: a bar on standard error over the
    questions decoded (:func:`tune_settings`)."""
    # a decoding the heads cannot do, refused in one line (tuning a BIO prior on a span-only model found no tags)
    # auto as the model's preferred decoding, each decoding tuned once ("auto joint" names joint twice)
    decodings = list(dict.fromkeys(registry.resolve_decoding(trained.decodings, d, heads=trained.heads) for d in decodings)) if decodings else trained.decodings
    unlabelled = next((example.id for example in examples if not example.is_labelled), None)
    if unlabelled is not None:
        raise DataFormatError("question without answers: tuning needs labelled questions", unlabelled)
    reading_prior = set(registry.length_prior_decodings())
    uses_prior = bool(reading_prior & set(trained.decodings))
    # Fitted only for a decoding being tuned that reads it: tuning the span decoding leaves the BIO decodings' prior.
    tune_prior = options.bio_length_prior is None and bool(reading_prior & set(decodings)) and any(ex.answers for ex in examples)
    config = trained.decode_config(options)  # the prior open where it is tuned, each option as given else the model's
    config = replace(config, bio_length_prior=None) if tune_prior else config
    calibrate = calibrate and task.right is not None  # a task without a single answer to be right fits no calibrator
    tuned = tune_settings(outputs, examples, decodings, config, tune_prior,
                          tune_thresholds=task.no_answer, calibrate=calibrate, task=task, data_sets=data_sets, progress=progress)
    unanswerable = sum(1 for ex in examples if not ex.answers)
    if unanswerable and not tuned.thresholds and "no_answer_thresholds" not in tuned.report:  # the task never abstains
        tuned.report["no_answer_thresholds"] = _no_abstention(unanswerable, task)
    if uses_prior and options.bio_length_prior is not None:  # given: the thresholds and calibrators were fitted with it
        tuned.given_bio_length_prior = options.bio_length_prior
        tuned.report["bio_length_prior"] = {"value": options.bio_length_prior, "given": True}
    return tuned


def tune_settings(
    outputs: WindowOutputs,
    examples: Sequence[Example],
    decodings: Sequence[str],
    config: DecodeConfig,
    tune_prior: bool,
    tune_thresholds: bool,
    calibrate: bool = False,
    task: registry.TaskEntry | None = None,
    data_sets: DataSets = (),
    progress: bool = False,
) -> TunedSettings:
    """Tune β (when ``tune_prior``) on the answerable ``examples`` by the main statistic of ``task`` (None: SQuAD
    v1.1's F1 of the single best span), then, decoding with it, a no-answer threshold per decoding (when
    ``tune_thresholds``: SQuAD 2.0 questions) and, with ``calibrate``, each decoding's confidence calibrator
    (a degenerate one is left out, its reason in ``skipped_calibrators``). The report gives each setting's
    number of ``questions``. The prior and the task's settings weigh each of ``data_sets`` alike
    (:func:`~bio_mrc.inference.tuning_chunks.columns_statistic`).
    ``progress``: one ``decoding`` bar on standard error over the questions each pass decodes (library calls stay quiet)."""
    planned = _planned_questions(examples, decodings, tune_prior, tune_thresholds, calibrate)
    with question_bar("decoding", planned, progress):
        return _tune_settings(outputs, examples, decodings, config, tune_prior, tune_thresholds, calibrate, task, data_sets)


def _planned_questions(
    examples: Sequence[Example], decodings: Sequence[str], tune_prior: bool, tune_thresholds: bool, calibrate: bool,
) -> int:
    """The questions :func:`tune_settings` decodes, a pass at a time, besides those of the task's own steps (each
    plans its own): the prior's answerable ones once per value of its grid, and every one per decoding for its threshold
    and its calibrator."""
    passes = int(tune_thresholds and _untunable_thresholds(examples) is None)
    passes += int(calibrate and len(examples) >= FEWEST_CALIBRATION_QUESTIONS)
    answerable = sum(1 for example in examples if example.answers) if tune_prior else 0
    return answerable * len(LENGTH_PRIOR_GRID) + passes * len(decodings) * len(examples)


def prior_report(prior: float, statistic: np.ndarray, questions: int) -> dict[str, Any]:
    """The report of a fitted length prior: ``f1``, the statistic at ``prior``; the grid value whose own statistic is
    highest and that statistic (``best_grid_value``, ``best_grid_f1``), which the smoothed rule need not choose; and
    ``f1_without``, the statistic at 0."""
    best = int(np.argmax(statistic))
    return {"value": prior, "f1": float(statistic[LENGTH_PRIOR_GRID.index(prior)]), "best_grid_value": LENGTH_PRIOR_GRID[best],
            "best_grid_f1": float(statistic[best]), "f1_without": float(statistic[0]), "questions": questions}


def _tune_settings(
    outputs: WindowOutputs, examples: Sequence[Example], decodings: Sequence[str], config: DecodeConfig, tune_prior: bool,
    tune_thresholds: bool, calibrate: bool, task: registry.TaskEntry | None, data_sets: DataSets,
) -> TunedSettings:
    """:func:`tune_settings` inside its bar."""
    tuned = TunedSettings(config)
    if tune_prior:
        prior, statistic = tune_bio_length_prior(outputs, examples, config, task=task, data_sets=data_sets)
        tuned.bio_length_prior, tuned.decode_config = prior, replace(config, bio_length_prior=prior)
        tuned.report["bio_length_prior"] = prior_report(prior, statistic, sum(1 for ex in examples if ex.answers))
    for step in task.tuning_steps if task is not None else ():  # the task's own settings (multi-span: span-count rules)
        registry.resolve(step)(tuned, outputs, examples, decodings, task, data_sets)
    if tune_thresholds and (untunable := _untunable_thresholds(examples)):
        tuned.report["no_answer_thresholds"] = untunable
    elif tune_thresholds:
        gold = gold_texts(examples)
        for decoding in decodings:
            columns = no_answer_columns(outputs, examples, decoding, replace(tuned.decode_config, require_answer=False), gold)
            key = threshold_key(decoding)
            tuned.thresholds[key], best_f1 = best_no_answer_threshold(*columns)
            tuned.report[key] = {"threshold": tuned.thresholds[key], "best_f1": best_f1, "questions": len(examples)}
            tuned.curves[decoding] = no_answer_threshold_curve(*columns)
            if line := always_abstain_line(decoding, tuned.thresholds[key], tuned.curves[decoding], len(examples)):
                warnings.warn(AlwaysAbstainWarning(line), stacklevel=3)  # tune_settings' caller
    if calibrate and len(examples) >= FEWEST_CALIBRATION_QUESTIONS:  # one question calibrates nothing
        fitted = fit_calibrators(outputs, examples, decodings, tuned.decode_config, tuned.thresholds, task)
        tuned.calibration = {decoding: c for decoding, c in fitted.items() if "degenerate" not in c}
        tuned.skipped_calibrators = {decoding: c["degenerate"] for decoding, c in fitted.items() if "degenerate" in c}
        tuned.report["calibration"] = {decoding: {key: c[key] for key in ("questions", "degenerate") if key in c}
                                       for decoding, c in fitted.items()}
    return tuned


def always_abstain_line(decoding: str, threshold: float, curve: tuple[np.ndarray, np.ndarray], questions: int) -> str | None:
    """Where ``decoding``'s tuned no-answer ``threshold`` is -inf (always abstain: abstaining on every one of the
    ``questions`` scored at least as well as any threshold that answers some, ``curve``), the line that says so: the
    choice stays, as the official search makes it, but the decoding answers nothing with it; else None."""
    if threshold != -np.inf:
        return None
    thresholds, f1 = (np.asarray(values, dtype=np.float64) for values in curve)
    answering = f1[thresholds > -np.inf]
    return (f"the no-answer threshold tuned for {decoding} is -inf (always abstain): {decoding} will answer no question "
            f"with it (always abstaining scores F1 {float(f1[thresholds == -np.inf].max()):.2f} on the "
            f"{counted(questions, 'tuning question')}, the best threshold that answers some {float(answering.max()):.2f}); "
            "tune on more held-out questions, or other ones, or set the threshold by hand in the model's config.json "
            f"(no_answer_thresholds, key {threshold_key(decoding)!r})")


def tune_span_count_rules(
    tuned: TunedSettings, outputs: WindowOutputs, examples: Sequence[Example], decodings: Sequence[str], task: registry.TaskEntry,
    data_sets: DataSets = (),
) -> None:
    """Each decoding's span-count threshold on the multi-span ``examples``, decoded with ``tuned``'s options, into ``tuned``
    (a task's tuning step); none when no question has an answer. A rule the options fix (``min_span_probability``) is
    saved for every decoding, as given: it was dropped with the rules tuned before, and the model answered with the defaults."""
    if not any(ex.answers for ex in examples):
        return
    if (given := tuned.decode_config.min_span_probability) is not None:
        for decoding in decodings:
            tuned.min_span_probabilities[decoding] = given
            tuned.report[f"min_span_probability/{decoding}"] = {"value": given, "given": True}
        return
    questions_planned(len(decodings) * len(examples))  # a pass over every question per decoding
    for decoding in decodings:
        value, statistic = tune_span_count_rule(outputs, examples, decoding, tuned.decode_config, task, data_sets=data_sets)
        default = registry.decoding(decoding).min_span_probability
        at_default = min(range(len(SPAN_PROBABILITY_GRID)), key=lambda k: abs(SPAN_PROBABILITY_GRID[k] - default))
        tuned.min_span_probabilities[decoding] = value
        tuned.report[f"min_span_probability/{decoding}"] = {
            "value": value, task.statistic: float(statistic[SPAN_PROBABILITY_GRID.index(value)]),
            f"{task.statistic}_at_default": float(statistic[at_default]), f"{task.statistic}_keeping_every_span": float(statistic[0])}


def fit_calibrators(
    outputs: WindowOutputs, examples: Sequence[Example], decodings: Sequence[str], config: DecodeConfig,
    thresholds: Mapping[str, float] | None = None, task: registry.TaskEntry | None = None,
) -> dict[str, dict[str, Any]]:
    """Per decoding, the beta calibration of raw confidence to P(answer right) on these questions, an answer right as
    ``task``'s entry says (``right``; None: SQuAD's, of the version the questions need); with the decoding's no-answer
    threshold (SQuAD 2.0), of the answers it gives, abstentions included. A degenerate calibrator
    (:func:`~bio_mrc.inference.calibrators.degenerate_calibrator`) carries its reason as ``degenerate``."""
    task = task or registry.squad_task("2.0" if any(not ex.answers for ex in examples) else "1.1")
    gold, right = registry.resolve(task.gold)(examples), registry.resolve(task.right)
    calibrators = {}
    for decoding in decodings:
        threshold = (thresholds or {}).get(threshold_key(decoding))
        pooled = replace(config, multi_span=False, n_best=max(config.n_best, CONFIDENCE_SPANS))  # the shares answers carry
        options = pooled if threshold is None else replace(pooled, require_answer=False)
        raw, rightness = _confidence_columns(outputs, examples, decoding, options, threshold, task, gold, right)
        fitted = fit_calibrator(raw, rightness)
        calibrators[decoding] = {**fitted, "questions": len(examples)} | ({} if threshold is None else {"no_answer_threshold": threshold})
        if reason := degenerate_calibrator(fitted, raw):
            calibrators[decoding]["degenerate"] = reason
    return calibrators


def _confidence_columns(
    outputs: WindowOutputs, examples: Sequence[Example], decoding: str, options: DecodeConfig, threshold: float | None,
    task: registry.TaskEntry, gold: Any, right: Any,
) -> tuple[np.ndarray, np.ndarray]:
    """Each question's raw confidence and rightness (0/1) of ``decoding``'s answer at ``threshold``, a chunk at a time."""
    parts = []
    for part_outputs, part in each_chunk(outputs, examples):
        predictions = apply_no_answer_threshold(decode(part_outputs, part, decoding, options), threshold)
        parts.append((raw_confidence(predictions, threshold), right(task, predictions, gold)))
    return np.concatenate([raw for raw, _ in parts]), np.concatenate([rightness for _, rightness in parts])


def tuning_summary(tuned: TunedSettings, before: BioMrcConfig, task: registry.TaskEntry | None = None) -> list[str]:
    """One line per setting :func:`tune_settings` fitted on questions of ``task`` (None: SQuAD v1.1), with the questions
    it used, its statistic and the value ``before`` held (the model's config as it was), and one ``warning:`` line per
    calibrator left out."""
    task = task or registry.squad_task("1.1")
    lines = []
    if tuned.given_bio_length_prior is not None:
        lines.append(f"bio_length_prior: {tuned.given_bio_length_prior:g} (was {_shown(before.bio_length_prior)}), as given; "
                     "the other settings were fitted with it")
    elif tuned.bio_length_prior is not None:
        report = tuned.report["bio_length_prior"]
        lines.append(f"bio_length_prior: {tuned.bio_length_prior:g} (was {_shown(before.bio_length_prior)}), fitted on "
                     f"{counted(report['questions'], 'answerable question')} ({_prior_scores(report, task.statistic_title)})")
    old_rules = before.min_span_probabilities or {}
    for decoding, value in tuned.min_span_probabilities.items():
        report = tuned.report[f"min_span_probability/{decoding}"]
        if report.get("given"):
            lines.append(f"span-count rule {decoding}: a further span kept from probability {value:g} "
                         f"(was {_shown(old_rules.get(decoding))}), as given")
            continue
        lines.append(f"span-count rule {decoding}: a further span kept from probability {value:g} "
                     f"(was {_shown(old_rules.get(decoding))}; {task.statistic_title} {report[task.statistic]:.2f}, "
                     f"{report[f'{task.statistic}_at_default']:.2f} at the default)")
    old_thresholds = before.no_answer_thresholds or {}
    for key, threshold in tuned.thresholds.items():
        report = tuned.report[key]
        lines.append(f"no-answer threshold {key}: {threshold:.4g} (was {_shown(old_thresholds.get(key))}), fitted on "
                     f"{counted(report['questions'], 'question')} (F1 {report['best_f1']:.2f}, the best of any threshold)")
    if (untunable := tuned.report.get("no_answer_thresholds")) is not None:
        lines.append(f"no-answer thresholds: {untunable}")
    old_calibrators = before.calibration or {}
    for decoding, calibrator in tuned.calibration.items():
        old = old_calibrators.get(decoding)
        was = f"one fitted on {counted(old.get('questions', '?'), 'question')}" if old else "none"
        lines.append(f"calibrator {decoding}: beta a={calibrator['a']:.4g} b={calibrator['b']:.4g} c={calibrator['c']:.4g}, "
                     f"fitted on {counted(calibrator['questions'], 'question')} (was {was})")
    for decoding, reason in tuned.skipped_calibrators.items():
        lines.append(f"warning: no calibrator saved for {decoding}: degenerate ({reason}); its answers get no probability")
    return lines


def _prior_scores(report: Mapping[str, Any], title: str) -> str:
    """What a fitted prior scored: at the prior; where one grid value alone scored more (the prior is chosen by the
    statistic averaged with its grid neighbours'), at that value too; and at 0."""
    shown = f"{title} {report['f1']:.2f}"
    if report["best_grid_f1"] > report["f1"]:
        shown += (f" at {report['value']:g}, whose grid values within {LENGTH_PRIOR_BANDWIDTH:g} score best on average; "
                  f"{report['best_grid_f1']:.2f} at {report['best_grid_value']:g}, the best grid value alone")
    return f"{shown}; {report['f1_without']:.2f} at 0"


def dropped_settings(before: BioMrcConfig, after: BioMrcConfig, fitted: Mapping[str, Any] | None = None) -> list[str]:
    """One line per tuned setting ``before`` held that saving a tuning on other questions dropped (see
    :func:`save_tuned_settings`). ``fitted``: the settings the tuning saved (:attr:`TunedSettings.settings`); the
    calibrators among them replace every saved one, so the other decodings' are dropped too (a decoding it fitted, or
    found degenerate, says so in its own line)."""
    if same_questions(before.tuned_on or {}, after.tuned_on or {}):
        return prior_dropped_lines(before, after, fitted)
    where = (before.tuned_on or {}).get("description", "other questions")
    names = ("no_answer_thresholds", *REPLACED_SETTINGS, *(name for name in MERGED_SETTINGS if name in (fitted or {})))
    lines = []
    for name in dict.fromkeys(names):  # per decoding: a tune of some decodings drops the others'
        now = {**(getattr(after, name) or {}), **((fitted or {}).get(name) or {})}
        if gone := {decoding: value for decoding, value in (getattr(before, name) or {}).items() if decoding not in now}:
            shown = ", ".join(gone) if name == "calibration" else gone  # a calibrator's fields would fill the line
            lines.append(f"{name}: dropped (was {shown}, tuned on {where}, not on these questions)")
    return lines


def prior_stale(before: BioMrcConfig, prior: float | None) -> dict[str, set[str]]:
    """Per setting of :data:`PRIOR_FITTED_SETTINGS`, the keys ``before`` holds of the decodings that read the length
    prior, where another ``prior`` is saved: their scores move with it, so what they were fitted at no longer holds.
    Empty where the prior stays."""
    if _decoded_prior(before.bio_length_prior) == _decoded_prior(prior):
        return {}
    readers = registry.length_prior_decodings()
    keys = {"no_answer_thresholds": {threshold_key(decoding) for decoding in readers}} | dict.fromkeys(MERGED_SETTINGS, set(readers))
    return {name: keys[name] & set(getattr(before, name) or {}) for name in PRIOR_FITTED_SETTINGS}


def _decoded_prior(prior: float | None) -> float:
    """The prior a decoding reads: none saved decodes as 0 (:func:`bio_mrc.decoding.postprocess.with_saved_settings`)."""
    return 0.0 if prior is None else prior


def prior_dropped_lines(before: BioMrcConfig, after: BioMrcConfig, fitted: Mapping[str, Any] | None = None) -> list[str]:
    """One line per setting a tuning on the same questions dropped as fitted at the length prior it replaced (one it
    fitted again, or found degenerate, says so in its own line)."""
    lines = []
    for name, keys in prior_stale(before, after.bio_length_prior).items():
        now = {*(getattr(after, name) or {}), *((fitted or {}).get(name) or {})}
        if gone := {key: value for key, value in (getattr(before, name) or {}).items() if key in keys and key not in now}:
            shown = ", ".join(gone) if name == "calibration" else gone  # a calibrator's fields would fill the line
            lines.append(f"{name}: dropped (was {shown}, fitted at bio_length_prior {_shown(before.bio_length_prior)}, "
                         f"not {_shown(after.bio_length_prior)})")
    return lines


def calibrators_at_thresholds(calibration: Mapping[str, Any] | None, thresholds: Mapping[str, float] | None) -> dict | None:
    """The calibrators that still describe the answers given at the no-answer ``thresholds`` saved beside them: one
    fitted at another threshold (kept by ``--no-calibration``) would score an abstention as the answer it no longer
    gives, so it is left out. A calibrator fitted without a threshold is kept: it scores the best span, as it was fitted."""
    kept = {decoding: calibrator for decoding, calibrator in (calibration or {}).items()
            if "no_answer_threshold" not in calibrator
            or calibrator["no_answer_threshold"] in _thresholds_read_by(decoding, thresholds)}
    return kept or None


def _thresholds_read_by(decoding: str, thresholds: Mapping[str, float] | None) -> list[float]:
    """The saved no-answer thresholds ``decoding`` may answer by: its own score's, or, for a decoding not registered
    here (a plug-in's, not imported), whose score is unknown, every saved one."""
    entry = registry.DECODINGS.get(decoding)
    return list((thresholds or {}).values()) if entry is None else [(thresholds or {}).get(entry.threshold_key)]


def stale_calibrator_lines(before: BioMrcConfig, after: BioMrcConfig) -> list[str]:
    """One line per calibrator ``before`` held that saving dropped as fitted at another no-answer threshold
    (:func:`calibrators_at_thresholds`), for a tune that fitted none."""
    thresholds = after.no_answer_thresholds or {}
    kept_or_said = {*(after.calibration or {}), *prior_stale(before, after.bio_length_prior).get("calibration", ())}
    return [f"calibrator {decoding}: dropped (fitted at no-answer threshold {calibrator['no_answer_threshold']:.4g}, "
            f"{_threshold_now(decoding, thresholds)}); its answers get no probability until a tune "
            "without --no-calibration fits one"
            for decoding, calibrator in (before.calibration or {}).items() if decoding not in kept_or_said]


def _threshold_now(decoding: str, thresholds: Mapping[str, float]) -> str:
    """The saved no-answer threshold ``decoding`` answers by, for a line (:func:`_thresholds_read_by`)."""
    if decoding in registry.DECODINGS:
        return f"now {_shown(thresholds.get(threshold_key(decoding)))}"
    return f"which no saved threshold holds now; {decoding} is no registered decoding"


def _shown(value: Any) -> str:
    return "none" if value is None else f"{value:.4g}" if isinstance(value, float) else str(value)


def tuning_provenance(description: str, examples: Sequence[Example], training_questions: int | None = None,
                      calibrators_not_fitted: Mapping[str, str] | None = None,
                      answering: Mapping[str, str] | None = None) -> dict[str, Any]:
    """What tuned values saved with a model say about the questions they were tuned on; ``training_questions``: how many
    of them the model was trained on, where its run record says (:func:`bio_mrc.inference.held_out.check_held_out`);
    ``calibrators_not_fitted``: each decoding whose calibrator the tuning found degenerate, and why
    (:attr:`TunedSettings.skipped_calibrators`); ``answering``: the ``precision`` and ``device`` the scores tuned on were
    computed in (:meth:`~bio_mrc.inference.TrainedModel.answering_settings`: ``auto`` as it resolved there)."""
    known = {} if training_questions is None else {"training_questions": training_questions}
    known |= {NOT_FITTED: dict(calibrators_not_fitted)} if calibrators_not_fitted else {}
    known |= {key: answering[key] for key in ("precision", "device") if key in (answering or {})}
    return {"description": description, "questions": len(examples), "content_hash": content_hash(examples), **known}


def _not_fitted(previous: Mapping[str, Any], tuned_on: Mapping[str, Any], same: bool, config: BioMrcConfig) -> dict[str, Any]:
    """``tuned_on`` with the calibrators not fitted on its questions: this tuning's, and an earlier tuning's on the same
    questions (of the decodings this one left alone), but none of a decoding that has a calibrator now."""
    notes = {**((previous.get(NOT_FITTED) or {}) if same else {}), **(tuned_on.get(NOT_FITTED) or {})}
    notes = {decoding: reason for decoding, reason in notes.items() if decoding not in (config.calibration or {})}
    return {key: value for key, value in tuned_on.items() if key != NOT_FITTED} | ({NOT_FITTED: notes} if notes else {})


# Tuned settings that a tuning on other questions drops where it does not fit them again. The length prior stays: it is
# the one the new thresholds and calibrators were fitted with. Calibrators are kept unless calibrated again
# (--no-calibration); each names its own questions.
REPLACED_SETTINGS = ("min_span_probabilities",)
# Tuned settings saved per decoding: a tuning of some decodings on the model's own questions keeps the others'.
MERGED_SETTINGS = ("min_span_probabilities", "calibration")
# Tuned settings saved per decoding that a decoding reading the BIO length prior fits at it (its scores move with it).
PRIOR_FITTED_SETTINGS = ("no_answer_thresholds", *MERGED_SETTINGS)


def same_questions(previous: Mapping[str, Any], tuned_on: Mapping[str, Any]) -> bool:
    """Whether settings saved with ``previous`` (a model's ``tuned_on``) were tuned on the questions ``tuned_on`` names,
    for this model: not those a continued model holds from the model it continues (``for_model``)."""
    return "for_model" not in previous and previous.get("content_hash") == tuned_on.get("content_hash")


def save_tuned_settings(
    model_dir: str | Path,
    config: BioMrcConfig,
    thresholds: dict[str, float],
    settings: dict[str, Any],
    tuned_on: dict[str, Any],
    overwrite: bool = True,
    staged_for: str | Path | None = None,
) -> bool:
    """Save tuned no-answer ``thresholds`` and other tuned ``settings`` (e.g. ``bio_length_prior``)
    in the model's config, stamped with ``tuned_on`` (``description``, ``questions``, ``content_hash``).

    Values tuned on the same questions are merged (the no-answer thresholds, the span-count rules and the calibrators,
    decoding by decoding: a tuning of some decodings keeps the others'). Values tuned on other questions are
    replaced, and those this tuning did not fit (:data:`REPLACED_SETTINGS`, the no-answer thresholds) dropped, so
    ``tuned_on`` names the questions they were tuned on; or, without ``overwrite`` (a comparison reusing a cached model), kept:
    then nothing is written and False is returned. Values a continued model holds from the model it continues
    (``tuned_on["for_model"]``) were never tuned for it, and are always replaced. The model card is remade with
    the new values; ``staged_for``: ``model_dir`` is a staging folder whose files move into that folder, the name the
    card gives the model.
    """
    previous = config.tuned_on or {}
    same = same_questions(previous, tuned_on)
    if previous and "for_model" not in previous and not same and not overwrite:
        return False
    if same:  # the settings of decodings this tuning left alone, fitted at a prior it replaces, would not hold
        for name, keys in prior_stale(config, settings.get("bio_length_prior", config.bio_length_prior)).items():
            setattr(config, name, {key: value for key, value in (getattr(config, name) or {}).items() if key not in keys} or None)
    kept = (config.no_answer_thresholds or {}) if same else {}
    config.no_answer_thresholds = {**kept, **thresholds} or None  # -inf ("always abstain") survives the JSON round trip
    if not same:  # fitted on other questions, which the new tuned_on would not name: none is kept
        for name in REPLACED_SETTINGS:
            setattr(config, name, None)
    for name, value in settings.items():
        if name in MERGED_SETTINGS:  # per decoding, as the thresholds; None: this tuning's, left out
            kept_values = (getattr(config, name) or {}) if same else {}
            value = {key: one for key, one in {**kept_values, **value}.items() if one is not None} or None
        setattr(config, name, value)
    config.calibration = calibrators_at_thresholds(config.calibration, config.no_answer_thresholds)
    config.tuned_on = _not_fitted(previous, tuned_on, same, config)
    _save_config_and_card(Path(model_dir), config, staged_for)
    return True


def _save_config_and_card(model_dir: Path, config: BioMrcConfig, staged_for: str | Path | None) -> None:
    """``config.json`` and the card that shows its values, written together: a full disk while either is written
    keeps the old pair. A rename refused between the two leaves the new settings, and then no card rather than one
    of the settings before."""
    texts = {model_dir / "config.json": config.to_json_string()}
    if (card := model_card_text(model_dir, config, staged_for)) is not None:  # None: a card written by hand stays
        texts[model_dir / CARD_FILE] = card
    try:
        with atomic_writers(list(texts)) as handles:
            for handle, text in zip(handles, texts.values()):
                handle.write(text)
    except BaseException:
        if _holds(model_dir / "config.json", texts) and not _holds(model_dir / CARD_FILE, texts):
            remove_generated_card(model_dir)
        raise


def _holds(path: Path, texts: Mapping[Path, str]) -> bool:
    """Whether ``path`` holds the text ``texts`` has for it (its new content)."""
    try:
        return path in texts and path.read_text(encoding="utf-8") == texts[path]
    except (OSError, ValueError):
        return False
