"""Cells of an earlier comparison's report, reused by ``bio-mrc compare --cells-from``.

A long comparison (a learning curve, say) is run over several sittings and machines, and the
models of the earlier sittings are not always at hand; their ``report.json`` is (committed as
``report.json.xz``), with every cell's per-question scores. Reading those cells back lets a later
sitting add runs to the same report without training or scoring the earlier ones again. They are
reused only where the report is this comparison's: the same evaluation questions in the same order,
the same tuning and training questions (in cross-validation, the same questions held out in each fold),
decoding options and run settings; anything else is an error.
"""

from __future__ import annotations

import gzip
import json
import lzma
import zlib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Mapping, NamedTuple

import numpy as np

from ..config_schema import whole_number
from ..data.limits import max_json_bytes, read_at_most
from ..decoding.postprocess import available_decodings
from ..errors import ConfigError, argument
from ..io import special_file_kind
from ..json_syntax import json_value
from ..model_folder import special_float
from ..plurals import counted
from .config import DECODE_OPTIONS_WHEN_ABSENT, RUN_OPTIONS_WHEN_ABSENT, CompareConfig
from .results import Cell
from .saved_report import SavedReport

# A compressed report told by its first bytes, whatever its name: gzip's and xz's
_OPENERS = {b"\x1f\x8b": gzip.open, b"\xfd7zXZ\x00": lzma.open}


def read_report(path: str | Path) -> SavedReport:
    """A ``report.json`` as ``compare`` writes it, plain or compressed (xz or gzip, told by its first bytes), typed in this version's
    form (an older form upgraded, a newer one refused: :func:`bio_mrc.harness.results.upgrade_report`); every
    cell must score each of its evaluation questions. Errors name the file as the argument that gives it
    (``cells_from``, ``--cells-from``)."""
    path = Path(path)
    source = argument("cells_from", str(path))
    try:
        # an infinite threshold is written as {"__float__": "-Infinity"}, restored while decoding
        report = json.loads(_report_bytes(path, source).decode("utf-8"), object_hook=special_float)
    except (OSError, EOFError, lzma.LZMAError, zlib.error, json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ConfigError(f"{source}: cannot read it as a comparison report ({error})") from None
    except RecursionError:
        raise ConfigError(f"{source}: cannot read it as a comparison report (JSON nested deeper than any report)") from None
    if not isinstance(report, dict):
        raise ConfigError(f"{source}: not a bio_mrc comparison report (its JSON is no object)")
    missing = [key for key in ("config", "eval", "eval_ids", "cells") if key not in report]
    if missing or not isinstance(report["cells"], list):
        raise ConfigError(f"{source}: not a bio_mrc comparison report (no {', '.join(missing) or 'list of cells'})")
    saved = SavedReport.from_json(report, source)
    for number, cell in enumerate(saved.results.cells):
        _check_cell(source, number, cell, len(saved.eval_ids))
    return saved


def _report_bytes(path: Path, source: str) -> bytearray:
    """The report's bytes, decompressed (gzip or xz) a chunk at a time where its first bytes say so: a small xz file
    can hold gigabytes, and more than :func:`~bio_mrc.data.limits.max_json_bytes` are refused, read no further."""
    if kind := special_file_kind(path):  # reading a FIFO waits for a writer, a device may never end
        raise ConfigError(f"{source}: expected a comparison report file, found {kind}")
    with open(path, "rb") as plain:
        head = plain.read(6)
    opener = next((opener for magic, opener in _OPENERS.items() if head.startswith(magic)), open)
    most = max_json_bytes()
    with opener(path, "rb") as handle:
        raw = read_at_most(handle, most, compressed=opener is not open)
    if raw is None:
        decompressed = "" if opener is open else " decompressed"
        raise ConfigError(f"{source}: larger than {most:,} bytes{decompressed}, more than any comparison report holds "
                          "(BIO_MRC_MAX_JSON_BYTES raises the limit)")
    return raw


@dataclass(frozen=True)
class EarlierCells:
    """The cells of each (run, seed) an earlier report holds for this comparison, and where they came from."""

    source: dict[str, Any]  # path, date, package_version, code (the code fingerprint; None when not recorded)
    by_model: dict[tuple[str, int], list[Cell]]

    def holds(self, run: str, seed: int) -> bool:
        return (run, seed) in self.by_model

    def cells(self, run: str, seed: int) -> list[Cell]:
        """The cells of one model, each saying where it was scored (the first report that scored it)."""
        provenance = {k: v for k, v in self.source.items() if k != "path"}
        return [replace(cell, scored_in=cell.scored_in or provenance) for cell in self.by_model[(run, seed)]]

    def describe(self, used: list[tuple[str, int]]) -> dict[str, Any]:
        return {**self.source, "models": [{"run": run, "seed": seed} for run, seed in used]}


def load_earlier_cells(path: str | Path, config: CompareConfig, questions: Mapping[str, Any]) -> EarlierCells:
    """The cells of ``path`` this comparison can reuse: those of its runs and seeds.

    ``questions`` describes this comparison's questions: ``eval_ids`` (in order), ``eval_task`` (the task they are
    scored as), the question hashes of ``tune`` and of each run's training split (``train``: run name -> hash; None
    for folds), the hashes of their texts and answers (``eval_content``, ``tune_content``, ``train_content``), and
    in cross-validation which questions each fold holds out (``folds``: :func:`~.comparison_splits.held_out_hashes`)
    and which of each fold's training questions each run training on a share of them trains on
    (``fold_training``: run name -> :func:`~.comparison_splits.training_hashes`, or None).
    """
    saved = read_report(path)
    earlier = saved.results
    _check_same(path, "the evaluation questions (ids, in order)", saved.eval_ids, questions["eval_ids"])
    # the same questions read as another format are scored otherwise, into other columns
    _check_same(path, "the evaluation's task and scorer", earlier.eval.get("task"), questions["eval_task"])
    _check_content(path, "the evaluation questions'", earlier.eval, questions.get("eval_content"))
    _check_same(path, "the tuning questions", (earlier.tune or {}).get("question_hash"), questions["tune"])
    _check_content(path, "the tuning questions'", earlier.tune, questions.get("tune_content"))
    current = config.to_dict()
    decode = earlier.config.get("decode")
    decode = {**DECODE_OPTIONS_WHEN_ABSENT, **decode} if isinstance(decode, dict) else decode  # a report before an option
    _check_same(path, "the 'decode' options", decode, current.get("decode"), _answer_length_hint(decode, current.get("decode")))
    _check_same(path, "the 'cross_validation' options", earlier.config.get("cross_validation"), current.get("cross_validation"))
    earlier_runs = {run["name"]: run for run in earlier.config.get("runs", [])}
    for run in config.runs:
        if run.name in earlier_runs:
            _check_run(path, run.name, earlier_runs[run.name], run.to_dict())
            trained_on = earlier.run_train.get(run.name) or earlier.train or {}
            _check_same(path, f"run {json_value(run.name)}'s training questions", trained_on.get("question_hash"), questions["train"][run.name])
            _check_content(path, f"run {json_value(run.name)}'s training questions'", trained_on, (questions.get("train_content") or {}).get(run.name))
    wanted = {(run.name, seed) for run in config.runs for seed in config.run_seeds(run)}
    by_model: dict[tuple[str, int], list[Cell]] = {}
    for number, cell in enumerate(earlier.cells):
        if (cell.run, cell.seed) in wanted:
            _check_folds(path, number, cell, questions.get("folds"), (questions.get("fold_training") or {}).get(cell.run))
            by_model.setdefault((cell.run, cell.seed), []).append(cell)
    for run in config.runs:
        for seed in config.run_seeds(run):
            held = [cell.decoding for cell in by_model.get((run.name, seed), [])]
            if held and sorted(held) != sorted(available_decodings(run.train.heads)):
                raise ConfigError(f"{argument('cells_from', str(path))}: run {json_value(run.name)} seed {seed} has the decodings {json_value(held)} there, "
                                  f"not every decoding of its heads ({', '.join(available_decodings(run.train.heads))})")
    source = {"path": str(path), "date": earlier.date, "package_version": earlier.package_version, "code": earlier.code}
    return EarlierCells(source, by_model)


def fold_problem(cell: Cell, folds: list[str]) -> str | None:
    """What keeps a cross-validation cell from being paired with cells of the folds ``folds`` (which questions each
    holds out: :func:`~.comparison_splits.held_out_hashes`), or None. A cell that does not record its folds' questions
    is refused too: the draw is the code's as much as the config's (the task's ``folds`` function, how repeats and
    shared paragraphs are grouped), and nothing else a report keeps tells which questions its folds held out."""
    return _fold_hashes_problem(cell.fold_question_hashes, folds, _HELD_OUT)


def fold_training_problem(cell: Cell, training: list[str]) -> str | None:
    """What keeps a cell of a run training on a share of each fold's training questions from being paired with cells
    whose folds' models trained on ``training`` (:func:`~.comparison_splits.training_hashes`), or None; a cell that does
    not record them is refused, as one that does not record its held-out questions is."""
    return _fold_hashes_problem(cell.fold_training_hashes, training, _TRAINED_ON)


class _FoldQuestions(NamedTuple):
    """How a problem with one kind of each fold's question hashes is said."""

    unrecorded: str  # what a cell that does not record them does not record
    recorded: str  # what it records of each fold
    theirs: str  # what its fold did with other questions
    ours: str  # what this comparison's fold does with them


_HELD_OUT = _FoldQuestions("which questions each cross-validation fold held out", "held-out questions", "held out", "holds out")
_TRAINED_ON = _FoldQuestions("which of each cross-validation fold's training questions its models trained on",
                             "training questions", "trained on", "trains on")


def _fold_hashes_problem(recorded: list[str] | None, expected: list[str], kind: _FoldQuestions) -> str | None:
    if recorded == expected:
        return None
    if recorded is None:
        return f"does not record {kind.unrecorded} (a report written before cells recorded them)"
    if len(recorded) != len(expected):
        return f"records the {kind.recorded} of {counted(len(recorded), 'fold')}, not of this comparison's {len(expected)}"
    fold = next(k for k, (a, b) in enumerate(zip(recorded, expected)) if a != b)
    return (f"{kind.theirs} other questions in fold {fold + 1} of {len(expected)} than this comparison's fold {fold + 1} "
            f"{kind.ours} (their hash {recorded[fold]} there, {expected[fold]} here)")


def _check_folds(path: str | Path, number: int, cell: Cell, folds: list[str] | None, training: list[str] | None) -> None:
    """A reused cross-validation cell held out each fold's questions as this comparison's folds do (:func:`fold_problem`)
    and, where its run trains on a share of them, trained on the same ones (:func:`fold_training_problem`): its scores
    are paired question by question with those of the cells scored here."""
    problem = fold_problem(cell, folds) if folds is not None else None
    if problem is None and training is not None:
        problem = fold_training_problem(cell, training)
    if problem:
        raise ConfigError(f"{argument('cells_from', str(path))}: cell {number} ({cell.label}, seed {cell.seed}) {problem}, so its "
                          f"scores cannot be paired with this comparison's; rename the run here to train it anew, or drop "
                          f"{argument('cells_from')}")


def _check_cell(source: str, number: int, cell: Cell, n_questions: int) -> None:
    """A cell scores every evaluation question (a hand-edited or cut report must not pair scores with the
    wrong questions)."""
    values = {**cell.columns(), "answers": cell.answers}
    lengths = {key: len(value) if np.ndim(value) else None for key, value in values.items()}
    if values.keys() == {"answers"} or any(length != n_questions for length in lengths.values()):
        raise ConfigError(f"{source}: cell {number} ({cell.label}, seed {cell.seed}) does not score the "
                          f"{counted(n_questions, 'evaluation question')} ({lengths if len(lengths) > 1 else 'no em, f1 or counts'})")


def _check_same(path: str | Path, what: str, earlier: Any, current: Any, hint: str = "") -> None:
    if earlier == current:
        return
    if isinstance(earlier, list) and isinstance(current, list):
        first = next((k for k, (a, b) in enumerate(zip(earlier, current)) if a != b), min(len(earlier), len(current)))
        how = f"{len(earlier)} there, {len(current)} here; the first difference at position {first}"
    else:
        how = f"{json_value(earlier, whole=True)} there, {json_value(current, whole=True)} here"
    raise ConfigError(f"{argument('cells_from', str(path))}: {what} differ from this comparison's ({how}), so its cells are not this comparison's{hint}")


def _answer_length_hint(earlier: Any, current: Any) -> str:
    """What to give where the decode options differ in the answer-length limit alone, fixed in the report and left to
    each model here (``max_answer_length`` null: a model's own limit, at least the default): every report written before
    models kept a limit of their own names the default, 30."""
    if not isinstance(earlier, dict) or not isinstance(current, dict) or current.get("max_answer_length") is not None:
        return ""
    limit = earlier.get("max_answer_length")
    if {**earlier, "max_answer_length": None} != current or not whole_number(limit):
        return ""
    return (f"; its cells decode answers of at most {limit} tokens, this comparison's each model's own limit: "
            f'give "decode": {{"max_answer_length": {limit}}} in the config to decode as it did and reuse them')


def _check_content(path: str | Path, whose: str, earlier: dict[str, Any] | None, current: str | None) -> None:
    """The same questions' texts and answers (a data file edited in place keeps its ids); a report written before
    reports recorded them (no ``content_hash``) is told by its ids alone."""
    recorded = (earlier or {}).get("content_hash")
    if recorded is not None and current is not None:
        _check_same(path, f"{whose} text and answers", recorded, current)


# A run's seeds say which of its models a comparison holds, not how each was trained: a later sitting adds seeds.
_NOT_MODEL_SETTINGS = {"seeds"}


def _check_run(path: str | Path, name: str, earlier: dict[str, Any], current: dict[str, Any]) -> None:
    earlier, current = ({**RUN_OPTIONS_WHEN_ABSENT, **run} for run in (earlier, current))
    differing = sorted(key for key in (earlier.keys() | current.keys()) - _NOT_MODEL_SETTINGS if earlier.get(key) != current.get(key))
    if differing:
        raise ConfigError(f"{argument('cells_from', str(path))}: run {json_value(name)} has other settings there ({', '.join(differing)}); "
                          f"rename the run here to train it anew, or drop {argument('cells_from')}")
