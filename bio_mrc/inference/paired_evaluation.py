"""Two predictions files on the same questions scored side by side: each file's official metrics and the paired
difference of each metric with its bootstrap interval, what ``bio-mrc evaluate --baseline`` does."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

from ..arguments import checked_limit, count_argument, path_argument, task_argument
from ..config_schema import SEED_RANGE, whole_number
from ..data.prediction_layouts import NO_ANSWER_KEY, PredictionFile, read_prediction_file
from ..data.predictions import ScoredQuestions
from ..data.squad import SquadFile, load_squad
from ..errors import ConfigError, argument
from ..io import home_expanded
from ..metrics.paired_scores import PairedScores, paired_scores
from ..metrics.shared_scores import shared_question_scores
from ..metrics.stats import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED
from ..progress import progress_note, resample_bar
from .evaluation import Evaluation, check_prediction_files, scored_evaluation

CALL = "compare_predictions"
_DIFFERENCE_FIELDS = ("diff", "ci_low", "ci_high", "p_value", "significant")
# A per-question column whose mean the official scores name otherwise: SQuAD's EM, as v1.1 and v2.0 name it.
_OFFICIAL_NAMES = {"em": ("exact_match", "exact")}


@dataclass(frozen=True)
class PairedEvaluation:
    """What :func:`compare_predictions` found: each file's :class:`~.evaluation.Evaluation` (``new``, ``baseline``)
    and their ``paired`` scores, new − baseline, with the bootstrap's ``n_resamples`` and ``seed``."""

    new: Evaluation
    baseline: Evaluation
    paired: PairedScores
    n_resamples: int
    seed: int

    def to_dict(self, new_name: str, baseline_name: str) -> dict[str, Any]:
        """The JSON ``bio-mrc evaluate --baseline`` prints: each file's metrics under its role, the differences."""
        paired = self.paired
        return {
            "predictions": {"file": new_name, **self.new.metrics},
            "baseline": {"file": baseline_name, **self.baseline.metrics},
            "difference": {metric: {name: getattr(result, name) for name in _DIFFERENCE_FIELDS}
                           for metric, result in paired.differences.items()},
            "questions": paired.questions, "answers_changed": paired.changed,
            "better": paired.better, "worse": paired.worse, "better_or_worse_by": paired.statistic,
            "bootstrap": {"n_resamples": self.n_resamples, "seed": self.seed, "confidence": 0.95, "resampling": "questions"},
        }


def compare_predictions(
    data: str | Path | SquadFile, predictions: str | Path, baseline: str | Path, *, task: Any = None,
    limit: int | None = None, only_predicted: bool = False, strict: bool = False, name: str | None = None,
    n_resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED, progress: bool = False,
    note: Callable[[ScoredQuestions], None] | None = None,
) -> PairedEvaluation:
    """Score ``predictions`` and ``baseline`` (two files in one layout, answering the same questions) on the labelled
    questions ``data`` as :func:`~.evaluation.evaluate_predictions` scores one, and the paired difference
    ``predictions`` − ``baseline`` of each metric: a percentile bootstrap over questions (95%; ``n_resamples``
    resamples from ``seed``, a comparison's defaults). Problems with the pair are refused before anything is scored.
    ``progress``: a note of a subset scored, and a bar of the resamples drawn, on standard error."""
    _check_arguments(data, predictions, baseline, task, limit, n_resamples, seed)
    check_prediction_pair(predictions, baseline)
    if not isinstance(data, SquadFile):
        data = load_squad(data, needs_gold=CALL)

    def said(scored: ScoredQuestions) -> None:
        progress_note(progress, f"note: scoring {scored.described()}")

    options = dict(task=task, limit=limit, only_predicted=only_predicted, strict=strict, name=name, note=note or said)
    with shared_question_scores():  # each file's official metrics and its paired columns score each question once
        new = scored_evaluation(data, predictions, **options)
        old = scored_evaluation(data, baseline, **{**options, "note": lambda scored: None})  # the same subset, said once
        with resample_bar("bootstrap", progress):
            paired = paired_scores(new.task, new.gold, new.answers, old.answers, n_resamples, seed,
                                   na_probs=new.na_probs, baseline_na_probs=old.na_probs)
    named = {_official_name(metric, new.metrics): result for metric, result in paired.differences.items()}
    return PairedEvaluation(new, old, replace(paired, differences=named), n_resamples, seed)


def _official_name(metric: str, official: dict[str, Any]) -> str:
    """``metric`` as the files' own metrics name it, so that a difference and the scores it is of share a key."""
    if metric in official:
        return metric
    return next((name for name in _OFFICIAL_NAMES.get(metric, ()) if name in official), metric)


def check_prediction_pair(predictions: str | Path, baseline: str | Path) -> None:
    """Two files, in one layout, answering the same questions, neither of them ``predict``'s answers stream: refused
    before the data is read."""
    if _same_file(predictions, baseline):
        raise ConfigError(f"{argument('baseline')}: {baseline} is the predictions file itself ({predictions}); a file "
                          "compared with itself differs nowhere: give the other file to compare it with")
    check_prediction_files(predictions)
    check_prediction_files(baseline)
    _check_pair(read_prediction_file(predictions), read_prediction_file(baseline))


def _check_arguments(data: Any, predictions: Any, baseline: Any, task: Any, limit: Any, n_resamples: Any, seed: Any) -> None:
    """Before any file is read: each argument of a type it takes."""
    if not isinstance(data, SquadFile):
        path_argument(data, "data", CALL)
    path_argument(predictions, "predictions", CALL)
    path_argument(baseline, "baseline", CALL)
    task_argument(task, CALL)
    checked_limit(limit)
    count_argument(n_resamples, "n_resamples", CALL, optional=False)
    if not (whole_number(seed) and SEED_RANGE["minimum"] <= seed <= SEED_RANGE["maximum"]):  # numpy's seeds
        raise ConfigError(f"{CALL}: seed is a whole number from {SEED_RANGE['minimum']} to {SEED_RANGE['maximum']:,}; "
                          f"got {seed!r}")


def _same_file(first: str | Path, second: str | Path) -> bool:
    one, other = home_expanded(first), home_expanded(second)
    try:
        return os.path.samefile(one, other)
    except OSError:  # one is missing: its read says so
        return Path(one).absolute() == Path(other).absolute()


def _check_pair(new: PredictionFile, old: PredictionFile) -> None:
    """The two files in one layout, both giving no-answer probabilities or neither, answering the same questions:
    the first question one of them leaves out is named."""
    if new.layout != old.layout:
        raise ConfigError(f"{argument('baseline')}: {old.source} is {_layout(old)} and {new.source} {_layout(new)}; "
                          "give both files in one layout, so that both are read and scored alike")
    if (new.na_probs is None) != (old.na_probs is None):  # best_exact and best_f1 on one side alone compare nothing
        given, lacking = (new, old) if new.na_probs is not None else (old, new)
        raise ConfigError(f"{argument('baseline')}: {given.source} gives a {NO_ANSWER_KEY} with its answers and "
                          f"{lacking.source} none; give both files with them or both without, so that both are scored alike")
    for first, second in ((new, old), (old, new)):
        if missing := next((qid for qid in first.answers if qid not in second.answers), None):
            raise ConfigError(f"{argument('baseline')}: {second.source} answers no question {missing!r}, which "
                              f"{first.source} answers; the paired difference needs both files to answer the same questions")


def _layout(read: PredictionFile) -> str:
    return "the official {id: answer} object" if read.layout == "official" else read.layout


__all__ = ["PairedEvaluation", "check_prediction_pair", "compare_predictions"]
