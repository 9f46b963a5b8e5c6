"""``bio-mrc compare``: train (or reuse) every run, decode every way, score all on the same questions.

Configuration -> splits (:mod:`.splits`) -> models (:mod:`.models`, through ``training``) ->
window outputs and tuned settings (``inference``) -> cells (:mod:`.cells`, through ``decoding``
and ``metrics``) -> report (:mod:`.report`). Every step imports only the layers below the harness.
"""

from __future__ import annotations

import glob
import hashlib
import json
import time
import warnings
import zipfile
import zlib
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from .. import __version__, registry
from ..data.formats import each_file_parsed_once
from ..data.squad import as_written
from ..decoding.postprocess import available_decodings
from ..encoders import load_tokenizer, resolve_encoder, starting_point_digest
from ..errors import ConfigError, DataFormatError, FewTuningQuestionsWarning
from ..json_syntax import json_value
from ..inference import TrainedModel, threshold_key
from ..inference.answers import span_count_threshold
from ..inference.tuning import TunedSettings, tune_settings
from ..inference.defaults import INFERENCE_BATCH_SIZE
from ..inference.tuning_checks import few_tuning_questions
from ..io import atomic_write_bytes, atomic_write_json, check_outputs_apart, check_set_files, finish_file_set, note_set_files, owned_path
from ..machine import machine_description
from ..model import BioMrcConfig
from ..plurals import counted
from ..precision import resolve_device, resolve_precision
from ..precision_probe import MatrixShapes
from ..progress import resample_bar, stage_bar
from .browser_data import ModelBrowserData, load_browser_data, model_browser_data, pool_browser_data, save_browser_data
from .cells import DecodedCell, decode_cell, pool
from .comparison_folder import HARNESS_FOLDERS, REPORT_FILES, REPORT_SET, check_comparison_folder, mark_comparison_folder
from .config import CompareConfig, DataSpec, RunSpec
from .summary_records import Summary
from .earlier_report import EarlierCells, load_earlier_cells
from .held_out_questions import check_held_out_questions
from .models import carried_settings, check_model_sources, check_run_trainings, obtain_model
from .results import PER_QUESTION, Cell, ComparisonResults
from .prediction_set import PREDICTION_SET, PendingOutputs, fresh_staging, prediction_file_names, staged_predictions
from .scoring import (cells_code_fingerprint, finish_cell, record_model_evaluation, remove_other_files, score_model, timed_windows,
                      tuned_decoding)
from .summary_records import CellKey
from .comparison_splits import (Split, Splits, check_data_dir, check_disjoint, cross_validation_folds, held_out_hashes, joined_split,
                                resolve_split)


def resolve_splits(config: CompareConfig, data_dir: Path) -> Splits:
    """Every split of ``config``, checked: disjoint, and a tuning split where SQuAD 2.0 needs one."""
    check_data_dir(config, data_dir, f"comparison {json_value(config.name)}")
    named_eval = [("eval", config.eval), *((f"eval_also[{n}]", spec) for n, spec in enumerate(config.eval_also))]
    with each_file_parsed_once():  # the tuning questions are often the training file's, read for its training questions too
        eval_split = joined_split([_questions(key, spec, data_dir) for key, spec in named_eval])
        tune_split = _questions("tune", config.tune, data_dir) if config.tune else None
        train_split = _questions("train", config.train, data_dir) if config.train else None
        run_train = {run.name: _questions(f"runs[{n}].train_data", run.data, data_dir) for n, run in enumerate(config.runs) if run.data}
    held_out = [(n, s) for n, s in (("eval", eval_split), ("tune", tune_split)) if s is not None]
    trained_on = [("train", train_split)] if train_split else []
    for named in trained_on + [(f"{name} run's training", split) for name, split in run_train.items()]:
        check_disjoint([named] + held_out)  # training splits may overlap (a learning curve's are nested)
    if not trained_on:
        check_disjoint(held_out)
    if problem := eval_split.kind.tuning_split_problem(tune_split.kind if tune_split else None):
        raise ConfigError(problem)
    folds, seed = None, 0
    if config.cross_validation:
        seed = config.cross_validation["seed"]
        folds = cross_validation_folds(eval_split, config.cross_validation["folds"], seed)
    return Splits(eval_split, tune_split, train_split, folds, run_train, seed)


def _questions(key: str, spec: DataSpec, data_dir: Path) -> Split:
    """The questions of the config's entry ``key``; an entry that names none (a ``skip`` past the file's end, an empty
    article part) is a :class:`ConfigError` naming the key, before any model trains."""
    try:
        split = resolve_split(spec, data_dir, key)
    except ConfigError as err:
        raise ConfigError(f"{key}: {err}") from None
    except DataFormatError as err:  # the file's problem, named with the config key that points to it
        raise DataFormatError(f"{key}: {as_written(err.marked_problem)}", err.record, err.source) from None
    if not split.examples:
        raise ConfigError(f"{key}: {spec.describe()} holds no questions; a comparison trains, tunes and scores on at least one")
    return split


def earlier_cells(cells_from: str | Path | None, config: CompareConfig, splits: Splits) -> EarlierCells | None:
    """The cells this comparison reuses from an earlier report (``--cells-from``), checked to be its own."""
    if cells_from is None:
        return None
    questions = {"eval_ids": splits.eval.ids, "eval_task": splits.eval.task, "eval_content": splits.eval.content_hash,
                 "tune": splits.tune.describe()["question_hash"] if splits.tune else None,
                 "tune_content": splits.tune.content_hash if splits.tune else None,
                 "train": {run.name: None if splits.folds else splits.train_for(run).describe()["question_hash"] for run in config.runs},
                 "train_content": {run.name: None if splits.folds else splits.train_for(run).content_hash for run in config.runs},
                 "folds": held_out_hashes(splits.folds) if splits.folds else None,
                 "fold_training": {run.name: splits.training_hashes_for(run) for run in config.runs}}
    return load_earlier_cells(cells_from, config, questions)


def _checked_sources_and_splits(config: CompareConfig, data_dir: Path, models_dir: Path,
                                cells_from: str | Path | None) -> tuple[Splits, EarlierCells | None]:
    """The splits and the earlier report's cells, each run's encoder (or model it continues) checked first: a run's
    mistake (windows past its encoder's positions) is named before the data is read. Which runs an earlier report
    spares is known only from the splits, so with ``cells_from`` the runs left to train are checked after them."""
    if cells_from is None:
        check_model_sources(config.runs, config.runs, models_dir, config.run_seeds)
    splits = resolve_splits(config, data_dir)
    earlier = earlier_cells(cells_from, config, splits)
    if cells_from is not None:
        check_model_sources(runs_to_train(config, earlier), config.runs, models_dir, config.run_seeds)
    return splits, earlier


def runs_to_train(config: CompareConfig, earlier: EarlierCells | None) -> list[RunSpec]:
    """The runs with a seed whose cells an earlier report (``--cells-from``) does not hold."""
    return [run for run in config.runs if not earlier or not all(earlier.holds(run.name, seed) for seed in config.run_seeds(run))]


def check_own_folders(output_dir: Path) -> None:
    """Before any work: none of the harness's folders, nor a model folder in ``models/`` or an entry of ``cells/``
    (a cell's ``.predictions`` folder), is a symbolic link (training or scoring there would delete and write where
    it points)."""
    for name in HARNESS_FOLDERS:
        owned_path(output_dir / name, output_dir)
    for folder in (output_dir / "models", output_dir / "cells"):
        for entry in sorted(folder.iterdir()) if folder.is_dir() else []:
            owned_path(entry, output_dir)


def check_outside_models(config: CompareConfig, output_dir: Path) -> None:
    """Before any work: the output folder lies in no run's encoder or ``init_from`` folder (a model being read, which
    training there would refuse only once that run's turn came, after the runs before it had trained)."""
    check_outputs_apart([output_dir], model_dirs=config.model_folders())


def check_prediction_files(config: CompareConfig, output_dir: Path) -> None:
    """Before any work: a file of the user's in ``OUTPUT/predictions/`` at a name a cell's prediction files take
    (any registered decoding) is refused, as the report's files are: the comparison replaces only files it listed."""
    folder = Path(output_dir) / "predictions"
    for run in config.runs:
        for seed in config.run_seeds(run):
            prefix = f"{run.name}-seed{seed}-"
            names = [name for decoding in registry.DECODINGS for name in prediction_file_names(prefix, decoding)]
            note_set_files(folder, PREDICTION_SET, [name for name in names if _kept_with_cells(output_dir, prefix, name)])
            check_set_files(folder, PREDICTION_SET, names)


def _kept_with_cells(output_dir: Path, prefix: str, name: str) -> bool:
    """Whether ``predictions/NAME`` holds what a cell's kept copy holds (``cells/PREFIX*.predictions/``): a file the
    comparison wrote before it listed its files there."""
    path = Path(output_dir) / "predictions" / name
    if path.is_symlink() or not path.is_file():
        return False
    kept = sorted((Path(output_dir) / "cells").glob(f"{glob.escape(prefix)}*.predictions/{glob.escape(name[len(prefix):])}"))
    content = path.read_bytes()
    return any(copy.is_file() and not copy.is_symlink() and copy.read_bytes() == content for copy in kept)


def run_comparison(
    config: CompareConfig, data_dir: str | Path, output_dir: str | Path, progress: bool = False, cells_from: str | Path | None = None
) -> ComparisonResults:
    """Everything the report needs (arrays per question included).

    Finished work is reused: a model whose run record exists is not retrained, and the
    cells of a model already scored on the same questions with the same decoding options
    are read back from ``output_dir/cells``, so an interrupted comparison run again
    redoes only what was not finished. With ``cells_from`` (an earlier report of this
    comparison), the models that report holds are neither trained nor scored: their cells are its.
    The cells' prediction files (``output_dir/predictions``) and the models' evaluation records are written last.
    """
    results, pending = _run_comparison(config, data_dir, output_dir, progress, cells_from)
    pending.publish()
    return results


def _run_comparison(
    config: CompareConfig, data_dir: str | Path, output_dir: str | Path, progress: bool, cells_from: str | Path | None
) -> tuple[ComparisonResults, PendingOutputs]:
    """:func:`run_comparison` with its prediction files and models' evaluation records left to write
    (:class:`~bio_mrc.harness.prediction_set.PendingOutputs`): ``compare`` writes them once its report is in."""
    data_dir, output_dir = Path(data_dir), Path(output_dir)
    check_comparison_folder(output_dir)
    check_own_folders(output_dir)
    check_outside_models(config, output_dir)
    check_prediction_files(config, output_dir)
    splits, earlier = _checked_sources_and_splits(config, data_dir, output_dir / "models", cells_from)
    check_held_out_questions(config, splits)  # its init_from models found: every stage they trained on
    check_run_trainings(runs_to_train(config, earlier), config.runs, output_dir / "models", config.checkpoint_steps, splits.tune)
    warn_few_tuning_questions(splits.tune)
    mark_comparison_folder(output_dir)  # once the splits and cells are known good: a refused config leaves no folder
    fresh_staging(output_dir)
    pending = PendingOutputs(output_dir)
    cells: list[Cell] = []
    browser: list[dict[str, Any]] = []  # the question browser's data of each model (report.html)
    reused: list[tuple[str, int]] = []
    for run in config.runs:
        for seed in config.run_seeds(run):
            if earlier and earlier.holds(run.name, seed):
                cells += earlier.cells(run.name, seed)
                reused.append((run.name, seed))
                continue
            score = _score_folds if splits.folds else _score_trained_run
            run_cells, browser_data = score(run, seed, config, splits, output_dir, progress, pending)
            cells += run_cells
            browser.append({"run": run.name, "seed": seed, "data": browser_data})
    return ComparisonResults(
        config=config.to_dict(), package_version=__version__, code=cells_code_fingerprint(),
        cells_from=earlier.describe(reused) if earlier else None, date=time.strftime("%Y-%m-%d %H:%M:%S"),
        train=_recorded(splits.train) if splits.train else None,
        run_train={name: _recorded(split) for name, split in splits.run_train.items()},
        eval={**_recorded(splits.eval), "task": splits.eval.task}, tune=_recorded(splits.tune) if splits.tune else None,
        eval_examples=splits.eval.examples, cells=cells,
        browser=browser, machine=machine_description(),
    ), pending


def warn_few_tuning_questions(tune: Split | None) -> None:
    """A :class:`~bio_mrc.errors.FewTuningQuestionsWarning` where the 'tune' split is smaller than
    ``bio-mrc tune`` fits on without a warning: every model's thresholds, prior and calibrators are fitted on it."""
    if tune is None:
        return
    said = f"tune: each model's settings are tuned on {counted(len(tune.examples), 'question')} of {tune.description}"
    if few := few_tuning_questions(said, len(tune.examples)):
        warnings.warn(FewTuningQuestionsWarning(few), stacklevel=3)


def _recorded(split: Split) -> dict[str, Any]:
    """A split as the report records it: its ids' hash, and the hash of its texts and answers (``content_hash``), by
    which ``--cells-from`` tells a data file edited in place, its ids kept."""
    return {**split.describe(), "content_hash": split.content_hash}


def train_models(
    config: CompareConfig, data_dir: str | Path, output_dir: str | Path, progress: bool = False, cells_from: str | Path | None = None
) -> list[Path]:
    """Train every model of the comparison (reusing finished ones, resuming interrupted ones) and score
    nothing: the long part of a comparison, in as many sittings as it takes; ``compare`` then scores.
    Models whose cells ``cells_from`` holds are not trained."""
    check_comparison_folder(output_dir)
    check_own_folders(Path(output_dir))
    check_outside_models(config, Path(output_dir))
    models_dir = Path(output_dir) / "models"
    splits, earlier = _checked_sources_and_splits(config, Path(data_dir), models_dir, cells_from)
    check_held_out_questions(config, splits)
    check_run_trainings(runs_to_train(config, earlier), config.runs, models_dir, config.checkpoint_steps, splits.tune)
    mark_comparison_folder(Path(output_dir))
    trained = []
    for run in config.runs:
        for seed in config.run_seeds(run):
            if earlier and earlier.holds(run.name, seed):
                continue
            train_splits = [fold for fold, _ in splits.folds_for(run)] if splits.folds else [splits.train_for(run)]
            trained += [obtain_model(run, seed, split, models_dir, progress, config.checkpoint_steps, splits.tune).model_dir for split in train_splits]
    return trained


def _score_trained_run(
    run: RunSpec, seed: int, config: CompareConfig, splits: Splits, output_dir: Path, progress: bool, pending: PendingOutputs
) -> tuple[list[Cell], ModelBrowserData]:
    """The cells of one run and seed trained on its training split, and the model's browser data
    (both read back when cached); their prediction files and the model's evaluation record added to ``pending``."""
    train_split = splits.train_for(run)
    model_dir, train_seconds, reused, partial = obtain_model(
        run, seed, train_split, output_dir / "models", progress, config.checkpoint_steps, splits.tune)
    precision = answering_precision(model_dir, run.evaluation_precision)
    cache = output_dir / "cells" / f"{model_dir.name}-{_cells_key(config, splits, precision, model_dir)}.json"
    browser_cache, kept_predictions = cache.with_suffix(".browser.npz"), cache.with_suffix(".predictions")
    check_cache_files(cache, browser_cache)
    model_cells = _read_cells(cache, len(splits.eval.examples)) if reused else None  # a model trained just now has no cells yet
    browser = _read_browser_data(browser_cache, splits.eval.ids) if model_cells is not None else None
    if model_cells is None or browser is None or not kept_predictions.is_dir():
        trained = TrainedModel.load(model_dir, progress=progress, precision=precision)  # auto as resolved: the cells say which
        carried = carried_settings(run) if splits.tune is None else None
        model_cells, browser = score_model(trained, run, seed, config.decode, splits, splits.eval, output_dir, progress, carried)
        cache.parent.mkdir(parents=True, exist_ok=True)
        save_browser_data(browser, browser_cache)  # first: cached cells always have their browser data and prediction files
        _copy_prediction_files(staged_predictions(output_dir), f"{run.name}-seed{seed}-", kept_predictions, "", model_cells)
        atomic_write_json(cache, model_cells)
    else:  # the prediction files of the cells read back, not those a run of other options left under the same names
        _copy_prediction_files(kept_predictions, "", staged_predictions(output_dir), f"{run.name}-seed{seed}-", model_cells)
    model_splits = {"eval": splits.eval, "train": train_split, "tune": splits.tune}  # read back too: a record a failure missed
    pending.add(f"{run.name}-seed{seed}-", [cell["decoding"] for cell in model_cells],
                lambda: record_model_evaluation(model_dir, model_cells, model_splits, config.decode))
    trained_with = {"train_seconds": train_seconds, "train_seconds_partial": partial, "reused_model": reused,
                    "train_questions": len(train_split.examples), "run": run.name}  # a model shared by two runs: each its own
    return [Cell.from_json({**cell, **trained_with}, f"{cache}: cell {k}") for k, cell in enumerate(model_cells)], browser


def _copy_prediction_files(source: Path, source_prefix: str, target: Path, target_prefix: str, cells: list[dict[str, Any]]) -> None:
    """Copy each cell's prediction files, ``<prefix><decoding><suffix>``, from ``source`` to ``target`` (each atomically),
    and no other file of its names: a model's cached cells keep the files they were scored from beside them, so cells
    read back bring their own."""
    target.mkdir(parents=True, exist_ok=True)
    for cell in cells:
        names = zip(prediction_file_names(source_prefix, cell["decoding"]), prediction_file_names(target_prefix, cell["decoding"]))
        copied = [(found, name) for found, name in names if (source / found).is_file()]
        for found, name in copied:
            atomic_write_bytes(target / name, (source / found).read_bytes())
        remove_other_files(target, target_prefix, cell["decoding"], [name for _, name in copied])


def _score_folds(
    run: RunSpec, seed: int, config: CompareConfig, splits: Splits, output_dir: Path, progress: bool, pending: PendingOutputs
) -> tuple[list[Cell], ModelBrowserData]:
    """Cross-validation: one model per fold, each question decoded by the model that did not train on it."""
    decoded: dict[str, list[DecodedCell]] = {}
    browser_parts = []
    inference_seconds = train_seconds = 0.0
    reused_all, partial_any, model_dirs, fold_settings = True, False, [], []
    folds = splits.folds_for(run)
    carried = carried_settings(run) if splits.tune is None else None
    for train_fold, held_out in folds:
        model_dir, seconds, reused, partial = obtain_model(run, seed, train_fold, output_dir / "models", progress, config.checkpoint_steps, splits.tune)
        model_dirs.append(str(model_dir))
        trained = TrainedModel.load(model_dir, progress=progress, precision=answering_precision(model_dir, run.evaluation_precision))
        outputs, inference = timed_windows(trained, held_out, progress)
        tuned, _ = tuned_decoding(trained, config.decode, splits.tune, progress, carried)
        if run.length_prior_tuning is not None:  # "fold-training", its one value: tuned on this fold's training questions
            tuned = prior_tuned_on(trained, tuned, train_fold, progress)
        decode_config = tuned.decode_config
        rules = {**trained.span_count_rules, **tuned.min_span_probabilities}
        fold_settings.append((decode_config.bio_length_prior, tuned.thresholds, trained.precision, rules))
        for decoding in stage_bar(available_decodings(run.train.heads), "scoring", "decoding", progress):
            threshold = tuned.thresholds.get(threshold_key(decoding))
            decoded.setdefault(decoding, []).append(decode_cell(outputs, held_out, decoding, decode_config, threshold, rules, run.train.features))
        browser_parts.append(model_browser_data(outputs, held_out.examples, {d: parts[-1].predictions for d, parts in decoded.items()}))
        train_seconds, inference_seconds = train_seconds + seconds, inference_seconds + inference
        reused_all, partial_any = reused_all and reused, partial_any or partial
    cells = []
    pending.add(f"{run.name}-seed{seed}-", list(decoded))
    for decoding, parts in decoded.items():
        cell = finish_cell(run, seed, decoding, pool(parts, splits.eval.ids), splits.eval, output_dir, model_dirs[0])
        cells.append(Cell.from_json({
            **cell, "fold_model_dirs": model_dirs, "inference_seconds": inference_seconds, **_fold_settings(fold_settings, decoding),
            "train_seconds": train_seconds, "train_seconds_partial": partial_any, "reused_model": reused_all,
            "train_questions": len(folds[0][0].examples), "fold_question_hashes": held_out_hashes(folds),
            "fold_training_hashes": splits.training_hashes_for(run)},
            f"{CellKey(run.name, decoding)}, seed {seed}"))
    return cells, pool_browser_data(browser_parts, splits.eval.ids)


def prior_tuned_on(trained: TrainedModel, tuned: TunedSettings, split: Split, progress: bool) -> TunedSettings:
    """``tuned`` with the BIO length prior (and, on multi-span questions, each decoding's span-count rule) tuned on
    ``split`` (a fold's training questions, which the model has trained on) by the task's main statistic, each data set
    of the fold weighed alike. They stay out of the model's folder, which runs that decode with the model's own
    settings share."""
    outputs = timed_windows(trained, split, progress)[0]
    fold = tune_settings(outputs, split.examples, trained.decodings, tuned.decode_config, tune_prior=True, tune_thresholds=False,
                         task=split.kind, data_sets=split.data_sets, progress=progress)
    return replace(tuned, bio_length_prior=fold.bio_length_prior, decode_config=fold.decode_config, report={**tuned.report, **fold.report},
                   min_span_probabilities={**tuned.min_span_probabilities, **fold.min_span_probabilities})


def _fold_settings(folds: list[tuple[float | None, dict[str, float], str, dict[str, float]]], decoding: str) -> dict[str, Any]:
    """What each fold's model decoded with (its own tuned prior, threshold and span-count rule), and their means as the cell's."""
    entry = registry.decoding(decoding)
    priors = [entry.length_prior(prior) for prior, _, _, _ in folds]
    thresholds = [tuned.get(threshold_key(decoding)) for _, tuned, _, _ in folds]
    span_rules = [span_count_threshold(decoding, None, rules) for _, _, _, rules in folds]
    mean = lambda values: None if None in values else float(np.mean(values))  # noqa: E731
    return {"bio_length_prior": mean(priors), "threshold": mean(thresholds), "precision": folds[0][2],
            "min_span_probability": mean(span_rules), "fold_bio_length_priors": priors, "fold_thresholds": thresholds,
            "fold_min_span_probabilities": span_rules}


def answering_precision(model_dir: Path, precision: str) -> str:
    """The precision the model's forward passes run in here: ``auto`` resolved as the model's runner resolves it (by
    this machine's measurement for its sizes), so that cells scored in bf16 are never read back where it answers in fp32."""
    if precision != "auto":
        return precision
    config = BioMrcConfig.from_pretrained(str(model_dir))
    try:
        shapes = MatrixShapes.of(config.encoder, INFERENCE_BATCH_SIZE, config.max_seq_length)
    except (AttributeError, TypeError, ValueError):
        shapes = None
    return resolve_precision(precision, resolve_device(None), shapes, "inference")


def _cells_key(config: CompareConfig, splits: Splits, precision: str, model_dir: Path) -> str:
    """What a model's cells depend on: the model's weights and tokenizer files (a model trained again in its folder,
    from an encoder changed in place, is scored again), the questions and the task each split is scored and tuned as
    (the same file read as another ``format`` holds the same questions, scored otherwise), the decoding options, the
    precision of the forward passes (resolved: :func:`answering_precision`) and the code that scores them
    (:func:`bio_mrc.harness.scoring.cells_code_fingerprint`)."""
    blob = json.dumps({
        "decode": config.decode.__dict__, "eval": splits.eval.content_hash, "precision": precision,
        "tune": splits.tune.content_hash if splits.tune else None, "code": cells_code_fingerprint(),
        "model": starting_point_digest(model_dir), "tasks": _split_tasks(splits),
    }, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def _split_tasks(splits: Splits) -> dict[str, Any]:
    """The task the evaluation (and each data set it joins) and the tuning split are scored as."""
    return {"eval": splits.eval.task, "eval_parts": [part.task for part in splits.eval.parts],
            "tune": splits.tune.task if splits.tune else None}


def check_cache_files(*paths: Path) -> None:
    """Refuse a folder (or anything but a file) where a model's cached cells keep a file: it could never be written."""
    for path in paths:
        if path.exists() and not path.is_file():
            raise ConfigError(f"{path} is not a file, yet compare caches a model's scores there: move it away, or delete it")


def _read_cells(path: Path, n_questions: int) -> list[dict[str, Any]] | None:
    """The cached cells of one model, or None when there are none or the file is no list of cells scoring each of the
    ``n_questions`` evaluation questions (cut short by a full disk, edited): such a model is scored again and its file
    rewritten, never paired question by question with scores that belong to other questions."""
    try:
        cells = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):  # RecursionError: nested past the parser's stack
        return None
    if not isinstance(cells, list) or not cells or not all(isinstance(cell, dict) for cell in cells):
        return None
    return cells if all(_scores_every_question(cell, n_questions) for cell in cells) else None


def _scores_every_question(cell: dict[str, Any], n_questions: int) -> bool:
    """Whether each per-question list of a cached cell (its scores, answers, confidences) holds one entry per question."""
    selective = cell.get("selective") if isinstance(cell.get("selective"), dict) else {}
    own = [cell.get("scores"), selective.get("confidence")]
    columns = [cell.get(key) for key in (*PER_QUESTION, "answers")] + [selective.get("right")]
    columns += [value for group in own if isinstance(group, dict) for value in group.values()]
    return "answers" in cell and all(isinstance(column, list) and len(column) == n_questions for column in columns if column is not None)


def _read_browser_data(path: Path, ids: list[str]) -> ModelBrowserData | None:
    """A model's cached browser data, or None when there is none, it cannot be read, or it is not the data of the
    evaluation questions ``ids`` (scored again)."""
    try:
        data = load_browser_data(path)
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile, zlib.error):
        return None
    return data if data is not None and data.fits(ids) else None


def compare(
    config: CompareConfig, data_dir: str | Path, output_dir: str | Path, progress: bool = False, cells_from: str | Path | None = None
) -> tuple[ComparisonResults, Summary]:
    """Run the comparison and write its report; returns (results, summary)."""
    from .report import token_counts, write_report

    check_comparison_folder(output_dir)  # a folder of the user's other files, before its report set is touched
    finish_file_set(output_dir, REPORT_SET)  # a report set a kill left half moved in is completed first
    check_set_files(output_dir, REPORT_SET, REPORT_FILES)  # a report.md of the user's is refused before any work
    results, pending = _run_comparison(config, data_dir, output_dir, progress, cells_from)
    answer_tokens = context_tokens = None
    if registry.task(results.eval["task"]).groups is not None:  # the breakdowns by length, in the model's tokens
        tokenizer = load_tokenizer(_tokenizer_source(results.cells, config))
        answer_tokens, context_tokens = token_counts(results.eval_examples, tokenizer)
    with resample_bar("statistics", progress):  # the bootstraps of every contrast, interval and breakdown
        summary = write_report(results, output_dir, answer_tokens, context_tokens)
    pending.publish()  # the prediction files and models' records of the report now in
    return results, summary


def _tokenizer_source(cells: list[Cell], config: CompareConfig) -> str:
    """A model folder of the comparison at hand (cells read from an earlier report may name folders
    that are gone), else the first run's encoder, whose tokenizer its models share."""
    folders = [cell.model_dir for cell in cells if Path(cell.model_dir).is_dir()]
    return folders[0] if folders else resolve_encoder(config.runs[0].train.encoder, config.runs[0].train.encoder_revision)
