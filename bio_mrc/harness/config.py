"""A comparison is data: which data, which runs, which decodings, which seeds.

Config files are JSON (see ``benchmarks/ablations/`` and the presets in
``bio_mrc/harness/presets/``)::

    {
      "name": "quick",
      "train": {"path": "squad-v1.1/train.json", "limit": 1500},
      "eval":  {"path": "squad-v1.1/dev.json", "limit": 500},
      "tune":  null,
      "defaults": {"max_seq_length": 256, "doc_stride": 96, ...},   # TrainConfig fields
      # (its "training_args", further TrainingArguments, merge key by key with a run's own)
      "runs": [{"name": "joint", "heads": "span+bio"}, ...],         # overrides of the defaults
      # a run may also name its own training questions and seeds (a learning curve):
      #   {"name": "joint-10k", "train_data": {"path": ..., "limit": 10000}, "seeds": [42, 43, 44]}
      # and the precision of its evaluation (default: the one it trained in): {"inference_precision": "bf16"}
      "decode": {"n_best": 20, "max_answer_length": 30},             # DecodeConfig fields
      "seeds": [42],
      "baseline": "joint/span",                                      # optional: the cell the others are compared with
      "contrasts": [["joint/bio", "bio-only/bio"]]                    # optional: further pairs (A, B) to compare
    }

A cell is ``"run/decoding"`` (every decoding the run's heads allow). The report's statistics are
about the contrasts: every cell against the baseline (the first cell when none is named), then the
listed pairs, each a paired difference A − B with p-values adjusted for that family (Holm).

A data entry is ``{"path", "skip"?, "limit"?}`` (a fixed slice of the file) or
``{"path", "split": {"fractions": [...], "part": i, "seed": s}}`` (a part of an
article-level split of the file), with ``"format": "multispanqa"`` for a
MultiSpanQA file (scored with its official multi-span metrics; left out: the file's own
layout, detected, its listed answers read as ``"squad"``'s alternatives, which ``"format": "squad"`` names
outright). Paths are relative to the data directory unless absolute or beginning with ``~`` (the home folder);
a run's ``encoder`` and ``init_from`` folders are relative to the working folder. The same entry always yields the
same questions, so splits are never re-drawn between runs.

Cross-validation replaces the training split: ``"cross_validation": {"folds": 5,
"seed": 42}`` with no ``"train"`` trains one model per fold on the other folds of
the ``eval`` questions and scores every question with the model that did not see
it (MultiSpanQA's validation set has no separate training data at CPU scale); the folds are drawn as the
questions' task says: SQuAD's and Quoref's by article (title, else paragraph), so no paragraph is trained on and
scored, MultiSpanQA's by context (it has no title). A run of
a cross-validation may say ``"length_prior_tuning": "fold-training"``: each fold's model then
decodes with the BIO length prior (and, on multi-span questions, each decoding's span-count rule) tuned on that
fold's training questions, each data set of the evaluation weighed alike (docs/multispan.md). A run may also say
``"fold_training_share": 0.25``: each fold's model trains on that share of the fold's training questions (of each data
set alike, the same seeded draw for every share, so smaller shares are nested in larger ones) and is scored on the
whole held-out fold: a learning curve by cross-validation.

``"eval_also": [data entries]`` adds further data sets to the evaluation, each scored by the same official
scorer as ``eval`` (MultiSpanQA and Quoref: MultiSpanQA's metrics); in cross-validation each data set is cut
into the same number of folds (by article where its task says so, else by question) and fold k of every set
is held out together. The report scores each data set on its own too.
"""

from __future__ import annotations

import collections
import contextlib
import copy
import difflib
import functools
import json
import math
import re
import warnings
from dataclasses import MISSING, asdict, dataclass, field, fields, replace
from importlib import resources
from pathlib import Path
from typing import Any, Iterator, Sequence

from ..arguments import MAX_COUNT, first_questions
from ..config_schema import SEED_RANGE, check_fields, dataclass_schema, schema_errors, unasked_defaults, unasked_fields
from ..data.json_reader import DataFormatError, read_json
from .. import model_defaults, registry
from ..decoding.config import DecodeConfig
from ..errors import ConfigError, InputNote, argument
from ..io import home_expanded
from ..json_syntax import json_kind, json_value
from ..precision import PRECISIONS
from ..training.config import TrainConfig
from .cell_key import CellKey

PRESETS = ("quick", "full", "v2-quick", "v2-from-reader", "multispanqa-cv", "multispan-reader")
# Each seed trains one model a run (and a fold): a thousand are more than a study of seed variance trains, and past them
# a list is a typo or a generated range gone wrong, which would train for ever.
MAX_SEEDS = 1000
# Where a run's BIO length prior is tuned besides the default (the model's own, or the 'tune' split's):
# "fold-training", in cross-validation, on each fold's training questions with that fold's model.
FOLD_TRAINING = "fold-training"
LENGTH_PRIOR_TUNINGS = (FOLD_TRAINING,)
LENGTH_PRIOR_TUNING_HELP = ("cross-validation only: 'fold-training' tunes the BIO length prior of each fold's model on that fold's "
                            "training questions, by the task's main statistic, each data set of the evaluation weighed alike (the model has trained on them); "
                            "default: the prior tuned on the 'tune' split, else the one the model carries")
FOLD_TRAINING_SHARE_HELP = ("cross-validation only: each fold's model trains on this share of the fold's training questions, of each data "
                            "set alike, drawn with the folds' seed (smaller shares nested in larger ones), and is scored on the whole "
                            "held-out fold: a learning curve by cross-validation; default: all of them")


# A comparison's and each run's name become folder and file names under the output folder, on every system: no name
# Windows reserves for a device (CON, NUL, COM1, ..., with an extension too) and no trailing '.', which Windows drops.
WINDOWS_DEVICES = r"(?:[Cc][Oo][Nn]|[Pp][Rr][Nn]|[Aa][Uu][Xx]|[Nn][Uu][Ll]|[Cc][Oo][Mm][0-9]|[Ll][Pp][Tt][0-9])(?:\.|$)"
SAFE_NAME = re.compile(rf"(?!{WINDOWS_DEVICES})[A-Za-z0-9](?:[A-Za-z0-9._+-]{{0,98}}[A-Za-z0-9_+-])?")
# "(?!\n)": Python's "$" (jsonschema's) matches before a final newline too, which would pass "name\n" as a folder name.
NAME_SCHEMA = {"type": "string", "pattern": f"^{SAFE_NAME.pattern}(?!\\n)$",
               "problem": "a name becomes a file name, so it is 1 to 100 letters, digits, '.', '_', '+' or '-', "
                          "beginning with a letter or digit, not ending in '.', and no device name Windows reserves "
                          "(CON, PRN, AUX, NUL, COM0-9, LPT0-9)"}
SPLIT_SCHEMA = {
    "type": ["object", "null"], "required": ["fractions", "part"], "additionalProperties": False,
    "properties": {"fractions": {"type": "array", "minItems": 2, "items": {"type": "number", "exclusiveMinimum": 0}},
                   "part": {"type": "integer", "minimum": 0}, "seed": {"type": "integer", **SEED_RANGE}},
}


@dataclass(frozen=True)
class DataSpec:
    path: str = field(metadata={"schema": {"type": "string", "minLength": 1},
                                "help": "a file (or FOLDER:SPLIT of a saved dataset), relative to the data folder unless absolute "
                                        "or beginning with ~ (the home folder)"})
    limit: int | None = field(default=None, metadata={"minimum": 1, "help": "take this many questions (after skip)"})
    skip: int = field(default=0, metadata={"minimum": 0, "help": "leave out the first questions (e.g. those a model trains on)"})
    split: dict[str, Any] | None = field(default=None, metadata={
        "schema": SPLIT_SCHEMA, "help": "part `part` of an article-level split of the file into `fractions` (summing to 1)"})
    unanswerable_ratio: float = field(default=0.0, metadata={
        "minimum": 0, "maximum": 1, "help": "v1.1 training data: add this many made-up unanswerable questions per question "
                                            "(0 to 1: each question is paired at most once)"})
    format: str | None = field(default=None, metadata={
        "choices": registry.data_formats,
        "help": "squad (listed answers are alternatives); multispanqa, drop and mash-qa (their own layouts), or quoref and "
                "answer-parts (any SQuAD-shaped form, its listed spans the parts of one answer): scored with MultiSpanQA's "
                "metrics. Left out (or null): the data's own layout, detected, its listed answers read as squad's, with "
                "a note where they look like one answer's parts"})

    def __post_init__(self) -> None:
        check_fields(self)
        if self.split:
            fractions, part = self.split["fractions"], self.split["part"]
            if not math.isclose(sum(fractions), 1.0, abs_tol=1e-6):
                raise ConfigError(f"split.fractions sum to 1; got {fractions} (sum {sum(fractions):g})")
            if part >= len(fractions):
                raise ConfigError(f"split.part is 0 to {len(fractions) - 1} (one of {len(fractions)} fractions); got {part}")

    @property
    def read_format(self) -> str:
        """The format the entry is read as: the one named, else SQuAD's (any form, its own layout detected)."""
        return self.format or registry.SQUAD_FORMAT

    def to_dict(self) -> dict[str, Any]:
        """The entry as a config and ``report.json`` keep it: a format not named as the one read, as it always was."""
        return {**asdict(self), "format": self.read_format}

    def describe(self) -> str:
        text = self.path
        if self.skip:
            text += f" (questions {self.skip + 1} to {self.skip + self.limit})" if self.limit else f" (from question {self.skip + 1})"
        else:
            text = first_questions(text, self.limit)
        if self.split:
            text += f" (article split {self.split['fractions']}, part {self.split['part']}, seed {self.split.get('seed', 0)})"
        if self.unanswerable_ratio:
            text += f" (+{self.unanswerable_ratio:g} unanswerable per question)"
        return text


@dataclass(frozen=True)
class RunSpec:
    """One model configuration of a comparison. ``data`` (the run's own training questions) and
    ``seeds`` replace the comparison's when given: a learning curve is runs on more and more data."""

    name: str
    train: TrainConfig
    data: DataSpec | None = None
    seeds: tuple[int, ...] | None = None
    inference_precision: str | None = None  # of the evaluation's forward passes; None: the training precision
    length_prior_tuning: str | None = None  # one of LENGTH_PRIOR_TUNINGS; None: the prior the model carries or the 'tune' split's
    fold_training_share: float | None = None  # of each cross-validation fold's training questions; None: all of them

    @property
    def evaluation_precision(self) -> str:
        return self.inference_precision or self.train.precision

    def to_dict(self) -> dict[str, Any]:
        own = {"train_data": self.data.to_dict() if self.data else None, "seeds": list(self.seeds) if self.seeds else None,
               "inference_precision": self.inference_precision, "length_prior_tuning": self.length_prior_tuning,
               "fold_training_share": self.fold_training_share}
        # A default not asked is left out, so the run reads back unasked (a 0 read back is a rate asked, which FNet refuses).
        settings = {k: v for k, v in self.train.to_dict().items() if k not in unasked_fields(self.train)}
        return {"name": self.name, **settings, **_kept_options(self.train), **{k: v for k, v in own.items() if v}}


def _kept_options(train: TrainConfig) -> dict[str, Any]:
    """The options ``TrainConfig.to_dict`` leaves out at the value a record without them means (an older model's), where
    that value is not today's default: a run's settings, read back as a config, must train the same model again."""
    defaults = {f.name: f.default for f in fields(TrainConfig) if f.default is not MISSING}
    return {name: getattr(train, name) for name, absent in model_defaults.TRAIN_OPTIONS_WHEN_ABSENT.items()
            if getattr(train, name) == absent and name in defaults and defaults[name] != absent}


@dataclass
class CompareConfig:
    """A comparison as data: its training, evaluation and tuning data, its runs and seeds, how it decodes, its
    baseline and contrasts; what :func:`load_config` and :func:`parse_config` return, checked in full."""

    name: str
    train: DataSpec | None
    eval: DataSpec
    runs: list[RunSpec]
    tune: DataSpec | None = None
    cross_validation: dict[str, int] | None = None  # {"folds": k, "seed": s}: folds of eval replace train
    decode: DecodeConfig = field(default_factory=DecodeConfig)
    seeds: list[int] = field(default_factory=lambda: [42])
    description: str = ""
    baseline: str | None = None  # "run/decoding"; None: the first cell
    contrasts: list[tuple[str, str]] = field(default_factory=list)  # further (A, B) pairs of cells
    checkpoint_steps: int | None = None  # optimizer steps between training checkpoints (None: train_model's default)
    eval_also: list[DataSpec] = field(default_factory=list)  # further evaluation data sets, scored like 'eval'
    baseline_left_out: str | None = None  # the baseline named, when the runs kept (--runs) leave its run out

    def cells(self) -> list[str]:
        """Every cell, ``"run/decoding"``, in report order (runs as listed, decodings as the heads allow)."""
        return [str(CellKey(r.name, d)) for r in self.runs for d in registry.decodings_for(r.train.heads)]

    def with_overrides(
        self, seeds: list[int] | None = None, encoder: str | None = None, runs: list[str] | None = None
    ) -> "CompareConfig":
        """The command line's overrides: every run's seeds and encoder, and the runs to keep (by name)."""
        config = self._only_runs(runs) if runs else self
        return config._with_seeds_and_encoder(seeds, encoder)

    def _only_runs(self, names: list[str]) -> "CompareConfig":
        known = [r.name for r in self.runs]
        if unknown := [name for name in names if name not in known]:
            raise ConfigError(f"unknown run(s) {json_value(unknown)}; the runs of {json_value(self.name)} are {_json_list(known)}")
        kept = [r for r in self.runs if r.name in names]
        cells = [str(CellKey(r.name, d)) for r in kept for d in registry.decodings_for(r.train.heads)]
        contrasts = [pair for pair in self.contrasts if all(cell in cells for cell in pair)]
        left_out = self.baseline if self.baseline is not None and self.baseline not in cells else self.baseline_left_out
        return replace(self, runs=kept, contrasts=contrasts, baseline=self.baseline if self.baseline in cells else None,
                       baseline_left_out=left_out)

    def _with_seeds_and_encoder(self, seeds: list[int] | None, encoder: str | None) -> "CompareConfig":
        runs = self.runs
        if encoder:
            runs = [replace(r, train=replace(r.train, encoder=encoder)) for r in runs]
        if seeds:  # the command line's seeds are every run's
            _check_seeds(seeds)
            runs = [replace(r, seeds=None) for r in runs]
        return replace(self, runs=runs, seeds=seeds or self.seeds)

    def run_seeds(self, run: RunSpec) -> list[int]:
        """The seeds a run trains with: its own, else the comparison's."""
        return list(run.seeds) if run.seeds else self.seeds

    def model_folders(self) -> list[str]:
        """The folders (or hub ids) the runs read a model from: each run's encoder and the model ``init_from`` continues."""
        return [folder for run in self.runs for folder in (run.train.encoder, run.train.init_from) if folder]

    def to_dict(self) -> dict[str, Any]:
        """The config as JSON, as ``report.json`` keeps it and ``parse_config`` reads it back."""
        saved = {
            "name": self.name,
            "description": self.description,
            "train": self.train.to_dict() if self.train else None,
            "eval": self.eval.to_dict(),
            "tune": self.tune.to_dict() if self.tune else None,
            "runs": [r.to_dict() for r in self.runs],
            "decode": asdict(self.decode),
            "seeds": self.seeds,
        }
        optional = {"eval_also": [spec.to_dict() for spec in self.eval_also], "cross_validation": self.cross_validation,
                    "baseline": self.baseline, "baseline_left_out": self.baseline_left_out, "checkpoint_steps": self.checkpoint_steps,
                    "contrasts": [list(pair) for pair in self.contrasts]}
        return saved | {key: value for key, value in optional.items() if value}  # older configs' reports read as before


def resolve_contrasts(
    cells: Sequence[str], baseline: str | None, contrasts: Sequence[Sequence[str]] = ()
) -> tuple[str, list[tuple[str, str]]]:
    """The baseline and the contrasts ``(A, B)`` a comparison is about: (baseline, cell) for every other
    cell, then each listed pair not already among them (in either order). The baseline is the first
    cell when ``baseline`` is None. A name that is not one of ``cells`` is a :class:`ConfigError` naming it."""
    listed = _contrast_pairs(contrasts)
    if baseline is not None and not isinstance(baseline, str):
        raise ConfigError(f"'baseline' is one cell, \"run/decoding\"; got {json_value(baseline)}")
    named = ([("baseline", baseline)] if baseline is not None else []) + [
        (f"contrasts[{number}][{side}]", name) for number, pair in enumerate(listed) for side, name in enumerate(pair)]
    if unknown := list(dict.fromkeys(name for _, name in named if name not in cells)):
        where = next(key for key, name in named if name == unknown[0])
        guess = difflib.get_close_matches(unknown[0], list(cells), n=1)
        hint = f" (did you mean {json_value(guess[0])} for {json_value(unknown[0])}?)" if guess else ""
        raise ConfigError(f"{where}: unknown cell(s) {json_value(unknown)}{hint}; the cells (run/decoding) are {_json_list(cells)}")
    base = baseline if baseline is not None else cells[0]
    pairs = [(base, cell) for cell in cells if cell != base]
    seen = {frozenset(pair) for pair in pairs}
    for pair in listed:
        if frozenset(pair) not in seen:
            pairs.append(pair)
            seen.add(frozenset(pair))
    return base, pairs


def _json_list(names: Sequence[str]) -> str:
    """Every name of ``names`` as a JSON list (``json_value`` shortens past a few, and the cells to choose from are
    all worth reading)."""
    return json_value(list(names), whole=True)


def _contrast_pairs(contrasts: Any) -> list[tuple[str, str]]:
    """The listed contrasts as pairs of two different cell names, or a :class:`ConfigError`."""
    is_pair = lambda p: isinstance(p, (list, tuple)) and len(p) == 2 and all(isinstance(c, str) for c in p)  # noqa: E731
    if not isinstance(contrasts, (list, tuple)) or not all(is_pair(p) for p in contrasts):
        raise ConfigError(f"'contrasts' is a list of pairs [\"run/decoding\", \"run/decoding\"]; got {json_value(contrasts)}")
    if same := [number for number, p in enumerate(contrasts) if p[0] == p[1]]:
        raise ConfigError(f"contrasts[{same[0]}]: a contrast compares two different cells; got {json_value(list(contrasts[same[0]]))}")
    return [(a, b) for a, b in contrasts]


def comparison_schema() -> dict[str, Any]:
    """The JSON Schema of a comparison config: every key, its type and range, built from the config
    dataclasses (published as ``benchmarks/ablations/compare-config.schema.json`` for editors)."""
    return copy.deepcopy(_comparison_schema())


def _comparison_schema() -> dict[str, Any]:
    return _comparison_schema_of(registry.data_formats())


@functools.lru_cache(maxsize=4)
def _comparison_schema_of(data_formats: tuple[str, ...]) -> dict[str, Any]:
    """The schema with these data formats registered (a task registered later makes a new one)."""
    data = {**dataclass_schema(DataSpec), "required": ["path"]}
    seeds = {"type": "array", "minItems": 1, "maxItems": MAX_SEEDS, "uniqueItems": True, "items": {"type": "integer", **SEED_RANGE},
             "description": f"training seeds, each one model a run, at most {MAX_SEEDS:,}"}
    run = dataclass_schema(TrainConfig)
    run["properties"] = {"name": NAME_SCHEMA, **run["properties"], "train_data": data, "seeds": seeds,
                         "inference_precision": {"enum": [*PRECISIONS, None]},
                         "length_prior_tuning": {"enum": [*LENGTH_PRIOR_TUNINGS, None], "description": LENGTH_PRIOR_TUNING_HELP},
                         "fold_training_share": {"type": ["number", "null"], "exclusiveMinimum": 0, "maximum": 1,
                                                 "description": FOLD_TRAINING_SHARE_HELP}}
    cells = {"type": "string", "description": "a cell, \"run/decoding\""}
    properties = {
        "$schema": {"type": "string"}, "name": NAME_SCHEMA, "description": {"type": "string"},
        "train": {**data, "type": ["object", "null"]}, "eval": data, "eval_also": {"type": "array", "items": data},
        "tune": {**data, "type": ["object", "null"]},
        "defaults": dataclass_schema(TrainConfig), "runs": {"type": "array", "minItems": 1, "items": {**run, "required": ["name"]}},
        "decode": dataclass_schema(DecodeConfig), "seeds": seeds,
        "cross_validation": {"type": ["object", "null"], "additionalProperties": False,
                             "properties": {"folds": {"type": "integer", "minimum": 2}, "seed": {"type": "integer", **SEED_RANGE}}},
        "baseline": {**cells, "type": ["string", "null"]},
        # written by to_dict where --runs left the baseline's run out: the report's configuration reads back as itself
        "baseline_left_out": {**cells, "type": ["string", "null"]},
        "contrasts": {"type": "array", "items": {"type": "array", "items": cells, "minItems": 2, "maxItems": 2}},
        "checkpoint_steps": {"type": ["integer", "null"], "minimum": 1, "maximum": MAX_COUNT},  # train_model's bound
    }
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "bio_mrc comparison config (bio-mrc compare --config)",
            "type": "object", "required": ["eval", "runs"], "additionalProperties": False, "properties": properties}


# The value a run's settings mean by an option they leave out: an option added later (as every earlier model had it) or
# a default not asked (as its models trained, the same whether asked or not).
RUN_OPTIONS_WHEN_ABSENT = {**model_defaults.TRAIN_OPTIONS_WHEN_ABSENT, **unasked_defaults(TrainConfig)}
# Decoding options added after the first reports were written, and what a report's decode without one means: the
# value every comparison decoded with then.
DECODE_OPTIONS_WHEN_ABSENT = {"min_span_probability": None}
RUN_OWN_KEYS = ("train_data", "seeds", "inference_precision", "length_prior_tuning", "fold_training_share")  # a run's keys that are no TrainConfig fields


def parse_config(raw: dict[str, Any]) -> CompareConfig:
    """Validate a config dict in full before any work: every key against :func:`comparison_schema`,
    then what a schema cannot say (unique names, splits that exist, cells that exist). Each problem is
    a :class:`ConfigError` naming its key path, e.g. ``runs[2].epochs``."""
    if problems := schema_errors(raw, _comparison_schema()):
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise ConfigError(problems[0] + more)
    defaults = raw.get("defaults", {})
    runs = []
    for number, entry in enumerate(raw["runs"]):
        own = {key: entry[key] for key in RUN_OWN_KEYS if key in entry}
        options = {key: value for key, value in entry.items() if key not in ("name", *RUN_OWN_KEYS)}
        # A run's training_args go over the defaults' key by key: a run adds to them rather than replacing them.
        training_args = {**defaults.get("training_args", {}), **options.get("training_args", {})}
        train = _run_train_config(defaults, {**defaults, **options, "training_args": training_args}, number)
        with _naming(f"runs[{number}]"):
            data = _data_spec(own.get("train_data"), "train_data")
        runs.append(RunSpec(entry["name"], train, data, tuple(own["seeds"]) if "seeds" in own else None, own.get("inference_precision"),
                            own.get("length_prior_tuning"), own.get("fold_training_share")))
    if repeated := sorted(name for name, count in collections.Counter(r.name for r in runs).items() if count > 1):
        raise ConfigError(f"runs: run names are unique; {json_value(repeated)} appear more than once")
    _check_names_apart_in_any_case([r.name for r in runs])
    evaluating = [r.name for r in runs if r.train.training_args.get("eval_strategy", "no") != "no"]
    if evaluating and raw.get("tune") is None:
        raise ConfigError(f"runs {json_value(evaluating)} evaluate during training (training_args eval_strategy), which scores the "
                          "'tune' questions (never 'eval', which the report scores); add a 'tune' split")
    train, evaluation, tune = (_data_spec(raw.get(key), key) for key in ("train", "eval", "tune"))
    config = CompareConfig(
        name=raw.get("name", "comparison"), description=raw.get("description", ""), train=train, eval=evaluation, tune=tune,
        runs=runs, decode=DecodeConfig(**raw.get("decode", {})), seeds=list(raw.get("seeds", [42])),
        cross_validation=_cross_validation(raw, runs), baseline=raw.get("baseline"), baseline_left_out=raw.get("baseline_left_out"),
        checkpoint_steps=raw.get("checkpoint_steps"), contrasts=_contrast_pairs(raw.get("contrasts", [])),
        eval_also=[_data_spec(entry, f"eval_also[{number}]") for number, entry in enumerate(raw.get("eval_also", []))],
    )
    resolve_contrasts(config.cells(), config.baseline, config.contrasts)  # unknown cells are errors at load time, not after training
    _check_baseline_left_out(config.baseline_left_out, [run.name for run in runs])
    _check_length_prior_tuning(config)
    if shared := [run.name for run in runs if run.fold_training_share is not None and not config.cross_validation]:
        raise ConfigError(f"runs {json_value(shared)}: 'fold_training_share' is a share of each cross-validation fold's training questions; "
                          "add 'cross_validation' or leave it out")
    return config


def _check_baseline_left_out(left_out: str | None, runs: list[str]) -> None:
    """What ``to_dict`` writes where ``--runs`` left out the baseline's run: a cell, ``run/decoding``, of a run not kept
    (the report names that run, and which cells it compares with)."""
    if left_out is None:
        return
    key = CellKey.parse(left_out, "baseline_left_out")
    if key.decoding not in registry.decoding_names():
        raise ConfigError(f"baseline_left_out: {json_value(left_out)} names no decoding; the decodings are {', '.join(registry.decoding_names())}")
    if key.run in runs:
        raise ConfigError(f"'baseline_left_out' {json_value(left_out)} is the baseline of a run the runs selected leave out, but the "
                          f"run {json_value(key.run)} is among them: name it as 'baseline'")


def _check_names_apart_in_any_case(names: list[str]) -> None:
    """Run names differ beyond letter case: they name files (``predictions/RUN-seedN-DECODING.json``), and a file system
    that ignores case (macOS's, Windows') would give two such runs one file, the later run's answers over the earlier's."""
    by_folded = collections.defaultdict(list)
    for name in names:
        by_folded[name.lower()].append(name)
    if clashes := [group for group in by_folded.values() if len(group) > 1]:
        raise ConfigError(f"runs: run names differ beyond letter case, since they name files and some systems do not tell "
                          f"case apart; {json_value(clashes[0])} differ only in case")


def _run_train_config(defaults: dict[str, Any], merged: dict[str, Any], number: int) -> TrainConfig:
    """A run's training options (``merged``: its own over the defaults); a refusal names ``defaults`` when the defaults
    alone are refused alike (a typo there is not the run's), else ``runs[number]``."""
    try:
        return TrainConfig.from_dict(merged)
    except ValueError as err:  # ConfigError among them
        # a config names keys, not the class that holds them
        problem = str(err).removeprefix(f"{TrainConfig.__name__}: ")
        raise ConfigError(f"{'defaults' if _refused_alike(defaults, err) else f'runs[{number}]'}: {problem}") from None


def _refused_alike(defaults: dict[str, Any], err: ValueError) -> bool:
    try:
        TrainConfig.from_dict(defaults)
    except ValueError as own:
        return str(own) == str(err)
    return False


def _check_length_prior_tuning(config: CompareConfig) -> None:
    """A run that tunes its length prior on the folds' training questions is cross-validated, has a decoding
    the prior applies to, and leaves the prior open (not fixed by 'decode', not tuned on a 'tune' split)."""
    for number, run in enumerate(config.runs):
        if run.length_prior_tuning is None:
            continue
        where = f"runs[{number}].length_prior_tuning"
        if not config.cross_validation:
            raise ConfigError(f"{where}: {json_value(run.length_prior_tuning)} tunes on the training questions of each cross-validation fold; "
                              "add 'cross_validation' or leave it out")
        if not set(registry.decodings_for(run.train.heads)) & set(registry.length_prior_decodings()):
            raise ConfigError(f"{where}: run {json_value(run.name)} ({run.train.heads}) has no decoding the BIO length prior applies to")
        if config.decode.bio_length_prior is not None or config.tune is not None:
            raise ConfigError(f"{where}: the prior is tuned on the folds' training questions, so neither 'decode.bio_length_prior' "
                              "nor a 'tune' split may set it")


def _data_spec(raw: dict[str, Any] | None, key: str) -> DataSpec | None:
    with _naming(key):
        return DataSpec(**raw) if raw is not None else None


@contextlib.contextmanager
def _naming(where: str) -> Iterator[None]:
    """Prefix the key path to an error a dataclass raises about a combination of its fields."""
    try:
        yield
    except ValueError as err:  # ConfigError among them
        raise ConfigError(f"{where}: {err}") from None


def _cross_validation(raw: dict[str, Any], runs: list[RunSpec]) -> dict[str, int] | None:
    """Either training splits (the comparison's, or each run's own) or cross-validation over the
    evaluation questions, never both."""
    cv = raw.get("cross_validation")
    if cv is None:
        if raw.get("train") is None and not all(r.data for r in runs):
            raise ConfigError("a comparison needs a 'train' split (or a 'train_data' in every run), "
                              "or 'cross_validation' over the 'eval' questions")
        return None
    if raw.get("train") is not None or any(r.data for r in runs):
        raise ConfigError("'cross_validation' trains on folds of 'eval'; leave out 'train' and the runs' 'train_data'")
    return {"folds": cv.get("folds", 5), "seed": cv.get("seed", 0)}


class PresetOverFileWarning(InputNote):
    """A preset's name given where a file of that name is in the working folder: the preset is read, not the file."""


def load_config(path_or_preset: str | Path) -> CompareConfig:
    """A JSON config file, or the name of a shipped preset (``quick``, ``full``, ``v2-quick``). A preset's name is the
    preset even where a file of that name is in the working folder, which ``./quick`` names (a
    :class:`PresetOverFileWarning` says so).

    A file that is not valid JSON or not a valid comparison raises :class:`DataFormatError` naming it.
    """
    if str(path_or_preset) in PRESETS:
        _note_file_named_as_preset(str(path_or_preset))
        return parse_config(json.loads(resources.files("bio_mrc.harness.presets").joinpath(f"{path_or_preset}.json").read_text(encoding="utf-8")))
    if not str(path_or_preset).strip():  # Path("") is the current folder
        raise DataFormatError(f"an empty path names no config file; give one, or a preset: {', '.join(PRESETS)}", source=repr(str(path_or_preset)))
    path = Path(home_expanded(path_or_preset))
    if not path.exists():
        raise DataFormatError(f"no such config file ({_preset_guess(str(path_or_preset))}presets: {', '.join(PRESETS)})", source=str(path))
    raw = read_json(path, bounded=True)  # within BIO_MRC_MAX_JSON_BYTES: a config is never read whole past it
    if not isinstance(raw, dict):
        raise DataFormatError(f"expected a JSON object, got {json_kind(raw)}", source=str(path))
    try:
        return parse_config(raw)
    except ConfigError as err:
        raise DataFormatError(str(err), source=str(path)) from None


def _preset_guess(given: str) -> str:
    """``did you mean the preset quick? `` for a missing file named like a preset (``Quick``, ``quick.json``); "" otherwise."""
    guess = difflib.get_close_matches(given.lower(), PRESETS, n=1) if "/" not in given else []
    return f"did you mean the preset {guess[0]}? " if guess else ""


def _note_file_named_as_preset(name: str) -> None:
    """A preset's name means the same comparison wherever it is typed; a file of that name here is named once as the
    one not read, with how to read it. A folder of that name is no config, so it needs no word."""
    if Path(name).exists() and not Path(name).is_dir():
        warnings.warn(PresetOverFileWarning(f"{argument('path_or_preset', name)} is the preset {name}; the file {name} here "
                                            f"is not read (give {argument('path_or_preset', './' + name)} for it)"), stacklevel=3)


def _check_seeds(seeds: Sequence[int]) -> None:
    """``--seeds`` as the schema checks a config's ``seeds``: at most :data:`MAX_SEEDS`, each in range, none twice (a
    repeated seed trains the same model again and would count as another, its scores a mean ± sd of copies)."""
    if len(seeds) > MAX_SEEDS:
        raise ConfigError(f"{argument('seeds')}: {len(seeds):,} seeds are too many (the maximum is {MAX_SEEDS:,}): each trains "
                          "one model a run")
    counts = collections.Counter(seeds)
    if (repeated := next((seed for seed in seeds if counts[seed] > 1), None)) is not None:
        raise ConfigError(f"{argument('seeds')}: {repeated} is given twice; each seed trains one model, counted once")
    if (wrong := next((seed for seed in seeds if not SEED_RANGE["minimum"] <= seed <= SEED_RANGE["maximum"]), None)) is not None:
        raise ConfigError(f"{argument('seeds')}: {wrong} is no seed; seeds are whole numbers from {SEED_RANGE['minimum']} to "
                          f"{SEED_RANGE['maximum']:,}")
