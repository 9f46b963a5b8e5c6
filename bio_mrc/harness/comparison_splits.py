"""The questions a comparison names: fixed slices or article splits of SQuAD files, MultiSpanQA
files, and k folds for cross-validation; the same entry always gives the same questions."""

from __future__ import annotations

import functools
import math
import random
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .. import registry
from ..arguments import warn_limit_past
from ..data.sources import is_hub_id, local_data_path, locate, split_spec
from ..data.answer_parts import note_alternatives_read
from ..data.article_splits import (distinct_questions, folds_of_distinct_questions, id_set_hash, paragraphs, question_set_hash,
                                   shared_questions_and_contexts, split_by_article)
from ..data.squad import read_squad
from ..data.unanswerable import add_unanswerable
from ..errors import ConfigError, LimitPastDataWarning, argument  # noqa: F401 (the warning stays importable from here)
from ..json_syntax import json_value
from ..plurals import counted, number_form
from ..question_fingerprint import question_hashes
from ..types import Example, content_hash
from .config import CompareConfig, DataSpec, RunSpec


@dataclass
class Split:
    """Questions and how they are scored: ``task`` names a registered task (:mod:`bio_mrc.registry`:
    SQuAD v1.1, SQuAD v2.0, MultiSpanQA)."""

    examples: list[Example]
    task: str
    description: str
    parts: list["Split"] = field(default_factory=list)  # the data sets an evaluation joins, in order (none: one)

    @property
    def kind(self) -> registry.TaskEntry:
        return registry.task(self.task)

    @property
    def version(self) -> str | None:
        """The official SQuAD scorer's version (None for a task scored otherwise)."""
        return self.kind.squad_version

    @property
    def gold(self) -> dict[str, list[str]]:
        """The task's gold texts: SQuAD's one text per annotator, MultiSpanQA's every span's text."""
        return registry.resolve(self.kind.gold)(self.examples)

    @property
    def ids(self) -> list[str]:
        return [ex.id for ex in self.examples]

    @functools.cached_property
    def content_hash(self) -> str:
        """:func:`~bio_mrc.types.content_hash` of its questions, computed once: a comparison names its models, its
        cells' cache and its report's questions by it."""
        return content_hash(self.examples)

    @property
    def data_sets(self) -> list[list[str]]:
        """The question ids of each data set it joins (none: it is one), which tuning weighs alike."""
        return [part.ids for part in self.parts]

    def subset(self, examples: list[Example], description: str, parts: list["Split"] | None = None) -> "Split":
        return Split(examples, self.task, description, parts or [])

    def describe(self) -> dict[str, Any]:
        described = {"description": self.description, "questions": len(self.examples), "question_hash": question_set_hash(self.examples)}
        if self.parts:  # each data set's questions follow one another in the evaluation's order
            described["parts"] = [{**part.describe(), "task": part.task} for part in self.parts]
        return described


def joined_split(parts: list[Split]) -> Split:
    """Several data sets as one evaluation, scored by the first one's task: every part's task must share its
    official scorer (the MultiSpanQA metrics score MultiSpanQA and Quoref alike)."""
    if len(parts) == 1:
        return parts[0]
    first = parts[0].kind
    if other := [part.task for part in parts[1:] if not first.scored_alike(part.kind)]:
        raise ConfigError(f"eval_also: every data set is scored as 'eval' is ({first.scorer} metrics, task {first.name}); "
                          f"got task(s) {other}")
    examples = [ex for part in parts for ex in part.examples]
    if len({ex.id for ex in examples}) != len(examples):
        _refuse_repeated_id(parts)
    return Split(examples, parts[0].task, " + ".join(part.description for part in parts), parts)


def _refuse_repeated_id(parts: list[Split]) -> None:
    """Name the first question id two evaluation data sets share, by their config keys (``eval``, ``eval_also[N]``)."""
    keys = ["eval", *(f"eval_also[{number}]" for number in range(len(parts) - 1))]
    first: dict[str, int] = {}
    for number, part in enumerate(parts):
        for ex in part.examples:
            if ex.id in first:
                raise ConfigError(f"{keys[number]}: the question id {json_value(ex.id)} is in {keys[first[ex.id]]} too; each question "
                                  "is scored once, so the evaluation data sets hold different questions")
            first[ex.id] = number


@dataclass
class Splits:
    """The questions of one comparison: evaluation, tuning, and training (or the folds that replace it)."""

    eval: Split
    tune: Split | None
    train: Split | None
    folds: list[tuple[Split, Split]] | None = None
    run_train: dict[str, Split] = field(default_factory=dict)  # runs with their own training questions
    seed: int = 0  # the folds' seed, which also draws a run's share of each fold's training questions

    def train_for(self, run: RunSpec) -> Split:
        return self.run_train.get(run.name, self.train)

    def folds_for(self, run: RunSpec) -> list[tuple[Split, Split]]:
        """The (training, held-out) pairs ``run`` trains and is scored on: its share of each fold's training questions."""
        if run.fold_training_share is None:
            return list(self.folds or [])
        return [(training_share(train, run.fold_training_share, self.seed), held_out) for train, held_out in self.folds or []]

    def training_hashes_for(self, run: RunSpec) -> list[str] | None:
        """Which of each fold's training questions ``run`` trains on (:func:`training_hashes`) where it trains on a share
        of them; None otherwise, where each fold's held-out questions say which it trains on."""
        if run.fold_training_share is None or not self.folds:
            return None
        return training_hashes(self.folds_for(run))


def check_data_dir(config: CompareConfig, data_dir: Path, source: str) -> None:
    """Before any work: a data folder that is not there is refused only where an entry's path is resolved against it,
    naming the config (``source``), the entry and the path; absolute paths and hub ids need no data folder."""
    if data_dir.exists():
        return
    entries = [("eval", config.eval), *((f"eval_also[{n}]", spec) for n, spec in enumerate(config.eval_also)),
               ("tune", config.tune), ("train", config.train),
               *((f"runs[{n}].train_data (run {json_value(run.name)})", run.data) for n, run in enumerate(config.runs))]
    for key, spec in entries:
        if spec is not None and needs_data_dir(spec):
            raise ConfigError(f"{key}: the path {json_value(spec.path, whole=True)} is relative to the data directory {data_dir}, which is not "
                              f"found; pass {argument('data_dir')} or set BIO_MRC_DATA, or give the path in full (in {source})")


def needs_data_dir(spec: DataSpec) -> bool:
    """Whether an entry's path is read under the data folder: a relative one, unless it is a hub id (read from the hub
    where no local path shadows it) in a format the table of forms reads."""
    if local_data_path(spec.path, Path()).is_absolute():
        return False
    return registry.task_for(spec.read_format, False).load is not None or not is_hub_id(split_spec(spec.path)[0])


def resolve_split(spec: DataSpec, data_dir: Path, key: str = "") -> Split:
    """The questions a data entry names; the same entry always gives the same questions. A ``limit`` past them takes
    them all: a :class:`LimitPastDataWarning` says so (naming the config's ``key``), and the description names no limit."""
    task = registry.task_for(spec.read_format, False)
    if task.load is not None:  # a task whose data the format table does not read
        path = local_data_path(spec.path, data_dir)
        examples, is_v2, detected = task.load_questions(path), False, spec.read_format
    else:
        # any form load_squad reads: a file, JSON Lines, a table, MRQA, MultiSpanQA, a saved dataset (FOLDER:SPLIT) under
        # data_dir, or a hub id; MultiSpanQA's "format" insists on its layout, SQuAD's and the answer-parts tasks' take any
        # SQuAD-shaped form (those read their listed answers as one answer's parts)
        data = read_squad(locate(spec.path, data_dir), limit=None if spec.split or spec.limit is None else spec.skip + spec.limit,
                          data_format=task.layout, needs_gold="bio-mrc compare")
        if spec.format is None:  # no format named: where the form's listed answers mean either, say how they are read
            note_alternatives_read(data, key)
        examples, is_v2, detected = task.task_examples(data.examples, data.source), data.is_v2, task.format_of_read(data.format)
    if spec.split:
        try:
            parts = split_by_article(examples, spec.split["fractions"], seed=spec.split.get("seed", 0))
        except ValueError as err:  # too few articles, or a fraction that leaves a part none
            raise ConfigError(f"split: {err}") from None
        examples = parts[spec.split["part"]]
    examples = examples[spec.skip : spec.skip + spec.limit if spec.limit else None]
    if examples and spec.limit and len(examples) < spec.limit:
        warn_limit_past(spec.limit, len(examples), replace(spec, limit=None, unanswerable_ratio=0.0).describe(), key=key)
        spec = replace(spec, limit=None)  # described as what it takes, not as "the first N"
    if spec.unanswerable_ratio:
        examples = add_unanswerable(examples, spec.unanswerable_ratio, seed=spec.split.get("seed", 0) if spec.split else 0)
    task = registry.task_of_data(detected, is_v2 or any(not ex.is_answerable for ex in examples))
    return Split(examples, task.name, spec.describe())


def cross_validation_folds(split: Split, folds: int, seed: int) -> list[tuple[Split, Split]]:
    """``folds`` (train, held-out) pairs over the questions of ``split``: each question is held out once, with every
    repeat of it (the same text and context under another id or spacing)."""
    if split.parts:  # fold k of every data set is held out together
        check_no_question_in_two_parts(split.parts)
        check_no_paragraph_in_two_parts(split.parts)
        per_part = [cross_validation_folds(part, folds, seed) for part in split.parts]
        joined = lambda parts, description: split.subset([ex for part in parts for ex in part.examples], description, parts)  # noqa: E731
        return [(joined([train for train, _ in fold], f"{split.description} (fold {k + 1} of {folds}, training part)"),
                 joined([test for _, test in fold], f"{split.description} (fold {k + 1} of {folds})"))
                for k, fold in enumerate(zip(*per_part))]
    if folds > (distinct := distinct_questions(split.examples)):
        repeats = f" distinct ones of its {len(split.examples)} (a question asked again counts once)" if distinct < len(split.examples) else ""
        raise ConfigError(f"cross_validation.folds: {folds} folds need at least {folds} questions; "
                          f"{split.description} has {distinct}{repeats}")
    draw = registry.resolve(split.kind.folds)
    try:
        pairs = folds_of_distinct_questions(draw, split.examples, folds, seed)
    except ValueError as err:
        raise ConfigError(f"cross_validation.folds: {split.description}: {err}") from None
    return [
        (split.subset(train, f"{split.description} (fold {k + 1} of {folds}, training part)"),
         split.subset(test, f"{split.description} (fold {k + 1} of {folds})"))
        for k, (train, test) in enumerate(pairs)
    ]


def held_out_hashes(folds: list[tuple[Split, Split]]) -> list[str]:
    """Which questions each fold holds out, as a cross-validation cell records them: a short hash of their sorted ids
    (the config alone does not fix them: the code that draws the folds does too)."""
    return [id_set_hash(held_out.ids) for _, held_out in folds]


def training_hashes(folds: list[tuple[Split, Split]]) -> list[str]:
    """Which of each fold's training questions its model trained on, as a cell of a run with a ``fold_training_share``
    records them: the share's draw is the code's as the folds' is."""
    return [id_set_hash(train.ids) for train, _ in folds]


def check_no_question_in_two_parts(parts: list[Split]) -> None:
    """Each data set's folds are drawn apart, so a question in two of them (under any id or spacing) could be held out
    in one fold and trained on in another: refused, naming both data sets and the count."""
    _refuse_shared(parts, [set(question_hashes(part.examples).tolist()) for part in parts], "question",
                   "the same text and context, under any id or spacing", "a question it is scored on", "the repeats")


def check_no_paragraph_in_two_parts(parts: list[Split]) -> None:
    """A paragraph in two data sets (up to spacing, as the question fingerprint reads it) could be trained on in one
    set's folds and its questions scored in another's: refused as a question in two of them is, as grouping it across
    the sets would redraw the folds of sets each drawn by its own task's rule."""
    _refuse_shared(parts, [set(paragraphs(part.examples).values()) for part in parts], "paragraph", "up to spacing",
                   "a paragraph whose questions it is scored on", "the shared paragraphs' questions")


def _refuse_shared(parts: list[Split], keys: list[set], noun: str, alike: str, trained_on: str, leave_out: str) -> None:
    """Refused where two data sets' ``keys`` meet, naming both sets, how many ``noun``s they share and what to leave out."""
    if found := _first_shared(parts, keys):
        a, b, shared = found
        raise ConfigError(
            f"cross_validation: {counted(shared, noun)} of {parts[b].description} {number_form(shared, 'is', 'are')} "
            f"in {parts[a].description} too ({alike}): each data set's folds are drawn apart, so a model would train "
            f"on {trained_on}; leave {leave_out} out of one of them")


def _first_shared(parts: list[Split], keys: list[set]) -> tuple[int, int, int] | None:
    """The first two data sets (in order) whose ``keys`` meet, and how many they share; None where no two do."""
    for a in range(len(parts)):
        for b in range(a + 1, len(parts)):
            if shared := len(keys[a] & keys[b]):
                return a, b, shared
    return None


def training_share(split: Split, share: float, seed: int) -> Split:
    """``share`` of the questions of ``split`` (at least one), of each data set it joins alike, in their order: the first
    of one seeded shuffle, so a smaller share's questions are among a larger one's."""
    if split.parts:
        parts = [training_share(part, share, seed) for part in split.parts]
        return split.subset([ex for part in parts for ex in part.examples], f"{split.description}, {share:g} of it", parts)
    order = list(range(len(split.examples)))
    random.Random(seed).shuffle(order)
    kept = sorted(order[: max(1, math.ceil(share * len(order)))])
    return split.subset([split.examples[i] for i in kept], f"{split.description}, {share:g} of it")


HELD_OUT_SPLITS = ("eval", "tune")  # the splits no model trains on: scored, and tuned on


def check_disjoint(named: list[tuple[str, Split]]) -> None:
    """No question (text and context under any id or spacing) and no paragraph (up to spacing) in two splits: training
    on a paragraph leaks its answers, and tuning on the questions scored fits the settings to them. Ids name questions
    within a split alone (each split is predicted, tuned on and scored apart), so splits that number other questions
    alike (``q1, q2, ...``) pass."""
    for i, (name_a, a) in enumerate(named):
        for name_b, b in named[i + 1 :]:
            shared, contexts = shared_questions_and_contexts(a.examples, b.examples)
            if shared or contexts:
                held_out = name_a in HELD_OUT_SPLITS and name_b in HELD_OUT_SPLITS
                raise ConfigError(
                    f"the {name_a} and {name_b} splits overlap ({counted(shared, 'question')}, {counted(contexts, 'context')}, under any id or spacing): "
                    + ("thresholds, priors and calibrators tuned on the questions scored inflate the scores; tune on other "
                       "articles than the evaluation's (split by article)" if held_out
                       else "split by article so no paragraph is seen in training and evaluation"))
