"""Tuning's decodings a bounded number of questions at a time: each chunk's answers are scored as soon as they are
decoded and only their per-question columns are kept, so a tuning holds one chunk's working arrays and answers, not
those of every question (tens of thousands of held-out questions otherwise need gigabytes). A question's answer
depends on its own windows alone, so the columns, joined in question order, are those of one decoding of them all."""

from __future__ import annotations

from typing import Any, Collection, Iterator, Mapping, Sequence

import numpy as np

from .. import registry
from ..decoding.postprocess import question_outputs
from ..decoding.window_outputs import WindowOutputs
from ..progress import questions_done
from ..types import Example, Prediction
from .defaults import DEFAULT_CHUNK_SIZE

# Questions decoded at once while tuning: as many as a chunk of predict holds.
TUNING_CHUNK_QUESTIONS = DEFAULT_CHUNK_SIZE


def each_chunk(
    outputs: WindowOutputs, examples: Sequence[Example], questions: np.ndarray | None = None, counted: bool = True,
) -> Iterator[tuple[WindowOutputs, list[Example]]]:
    """The windows and examples of ``questions`` (indices in increasing order; None: every question),
    :data:`TUNING_CHUNK_QUESTIONS` at a time, each chunk's questions renumbered from 0. Where ``counted``, a chunk the
    caller is done with advances the open question bar (:func:`bio_mrc.progress.question_bar`) by its questions; else
    the caller counts its own passes over each chunk."""
    chosen = np.arange(len(examples), dtype=np.int64) if questions is None else np.asarray(questions, dtype=np.int64)
    if len(chosen) == len(examples) <= TUNING_CHUNK_QUESTIONS:  # one chunk of them all: no copy of the windows
        yield outputs, list(examples)
        questions_done(len(examples) if counted else 0)
        return
    for begin in range(0, len(chosen), TUNING_CHUNK_QUESTIONS):
        part = chosen[begin : begin + TUNING_CHUNK_QUESTIONS]
        yield question_outputs(outputs, part), [examples[i] for i in part.tolist()]
        questions_done(len(part) if counted else 0)


def joined_columns(parts: Sequence[Mapping[str, Any]]) -> dict[str, np.ndarray]:
    """Per-question columns of consecutive chunks as the columns of all their questions, in order."""
    return {name: np.concatenate([np.asarray(part[name]) for part in parts]) for name in parts[0]}


def score_columns(task: registry.TaskEntry, examples: Sequence[Example], predictions: Sequence[Prediction]) -> dict[str, Any]:
    """The task's per-question columns (its ``score``) of ``predictions`` on ``examples``."""
    return task.scores(registry.resolve(task.gold)(examples), predictions, [example.id for example in examples])


def columns_statistic(
    task: registry.TaskEntry, ids: Sequence[str], columns: Mapping[str, Any], data_sets: Sequence[Collection[str]] = (),
) -> float:
    """The task's main statistic (its registry entry's ``statistic``) of per-question ``columns`` of the questions
    ``ids``; given ``data_sets`` (the question ids of each data set), the mean of each data set's statistic: every data
    set weighs alike, so a rule tuned on two sets of questions does not follow the larger one's mix (mostly one-span
    questions, say) alone."""
    rows_of_sets = [rows for rows in (_rows_in(ids, set(members)) for members in data_sets) if rows]
    if len(rows_of_sets) < 2:
        return float(task.metrics_of(columns)[task.statistic])
    return float(np.mean([task.metrics_of({name: np.asarray(column)[rows] for name, column in columns.items()})[task.statistic]
                          for rows in rows_of_sets]))


def _rows_in(ids: Sequence[str], members: Collection[str]) -> list[int]:
    return [k for k, qid in enumerate(ids) if qid in members]
