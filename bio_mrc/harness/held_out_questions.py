"""A comparison scores and tunes on held-out questions. Before any model trains, the questions of ``eval`` (each
``eval_also`` set too) and ``tune`` are matched by their fingerprints (:mod:`bio_mrc.question_fingerprint`: text and
context, normalised, under any id or file) with every question a run's models train on: its training split (in
cross-validation the other folds of ``eval``, which ``tune`` must stay out of) and every stage of its ``init_from``
model, as that model's run record keeps them.

One shared question is refused, not a share of them as ``tune`` allows: two 64-bit hashes agree by chance about once
in 1.8e19 pairs (88,000 training against 12,000 held-out questions: once in 17 billion comparisons), so a match is a
question a model has seen; the report pairs every cell question by question, and a run that saw some of them gains on
exactly those, which no interval it prints accounts for.
"""

from __future__ import annotations

import json
from typing import Iterator

import numpy as np

from ..errors import ConfigError, ModelFormatError
from ..hub import cached_folder
from ..json_syntax import json_value
from ..inference.held_out import training_fingerprint
from ..model_records import RUN_FILE
from ..question_fingerprint import decoded_hashes, question_hashes
from .comparison_splits import Split, Splits
from .config import CompareConfig, RunSpec
from .models import resolve_init_from

SAME = "(the same text and context, under any id or spacing)"
HeldOut = list[tuple[str, Split, np.ndarray]]  # (config key, its questions, their hashes)


def check_held_out_questions(config: CompareConfig, splits: Splits) -> None:
    """Refuse, in one :class:`ConfigError` naming the comparison, both entries and the count, an ``eval`` or ``tune``
    question that one of the comparison's models trains on."""
    named = [("eval" if n == 0 else f"eval_also[{n - 1}]", part) for n, part in enumerate(splits.eval.parts or [splits.eval])]
    scored = [(key, split, question_hashes(split.examples)) for key, split in named]
    tuned = [("tune", splits.tune, question_hashes(splits.tune.examples))] if splits.tune else []
    if splits.folds:  # each fold's model trains on the other folds: no 'eval' question is its own, but any 'tune' one is
        _check(config, tuned, f"in 'eval' {SAME}, whose cross-validation folds its models train on",
               np.unique(np.concatenate([hashes for _, _, hashes in scored])))
    else:
        for what, hashes in _training_splits(config, splits):
            _check(config, scored + tuned, what, hashes)
    for what, hashes in _init_from_stages(config):
        _check(config, scored + tuned, what, hashes)


def _check(config: CompareConfig, held_out: HeldOut, what: str, trained: np.ndarray) -> None:
    for key, split, hashes in held_out:
        if shared := int(np.isin(hashes, trained).sum()):
            raise ConfigError(
                f"comparison {json_value(config.name)}: {shared} of the {len(hashes)} '{key}' questions ({split.description}) "
                f"{'is' if shared == 1 else 'are'} {what}: a comparison scores and tunes its models on questions none of "
                f"them trained on; give '{key}' other questions")


def _training_splits(config: CompareConfig, splits: Splits) -> Iterator[tuple[str, np.ndarray]]:
    """The hashes of each training split a run trains on: ``train`` once for the runs that share it, each run's own
    ``train_data`` once for each entry alike (a learning curve's runs may name the same questions)."""
    trainers: dict[str, list[RunSpec]] = {}
    for number, run in enumerate(config.runs):
        trainers.setdefault(f"runs[{number}].train_data" if run.data else "train", []).append(run)
    hashed: dict[str, np.ndarray] = {}
    for key, runs in trainers.items():
        entry = json.dumps((runs[0].data or config.train).to_dict(), sort_keys=True)
        if entry not in hashed:
            hashed[entry] = np.unique(question_hashes(splits.train_for(runs[0]).examples))
        names = ", ".join(json_value(run.name) for run in runs)
        yield f"in '{key}' {SAME}, which run{'s' if len(runs) > 1 else ''} {names} train{'' if len(runs) > 1 else 's'} on", hashed[entry]


def _init_from_stages(config: CompareConfig) -> Iterator[tuple[str, np.ndarray]]:
    """The hashes a run's ``init_from`` model keeps of every stage it trained on (its run record's), each model read
    once; none where the record keeps no fingerprint (an older model), or where the model is not at hand yet: a pattern
    into this comparison's own models, whose runs are checked by their own training questions."""
    read: set[str] = set()
    for number, run in enumerate(config.runs):
        folder = _init_from_folder(run)
        if folder is None or folder in read:
            continue
        read.add(folder)
        try:
            fingerprint = training_fingerprint(folder, run.train.revision)
        except ModelFormatError as err:
            raise ConfigError(f"runs[{number}].init_from: {err}") from None
        if fingerprint is not None:
            yield (f"among the questions runs[{number}].init_from ({folder}), the model run {json_value(run.name)} continues, was trained "
                   f"on (its {RUN_FILE} keeps every stage's)", decoded_hashes(fingerprint))


def _init_from_folder(run: RunSpec) -> str | None:
    if not run.train.init_from:
        return None
    try:
        folder = resolve_init_from(run.train.init_from)
    except ConfigError:  # a pattern that matches no complete model yet
        return None
    return str(folder) if folder and cached_folder(folder, run.train.revision) is not None else None
