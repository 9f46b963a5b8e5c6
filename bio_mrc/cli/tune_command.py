"""``bio-mrc tune``: the decodings' settings fitted on held-out questions and saved with the model."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from pathlib import Path

from ..errors import ConfigError, DataFormatError
from ..io import (check_file_target, check_folder_target, check_outputs_apart, check_writable_folder,
                 printable_line, staged_folder, written_alone)
from ..inference.defaults import FEW_TUNING_QUESTIONS, FEWEST_CALIBRATION_QUESTIONS
from ..plurals import counted
from .command_data import data_task, load_task_data, requested_task
from .console import json_numbers
from .options import PRIOR_OPTION, decode_config


def cmd_tune(args: argparse.Namespace) -> int:
    target = _tune_target(args)
    plots = _plot_files(args) if args.plot_dir else []
    if args.plot_dir:
        check_folder_target(args.plot_dir)  # no file in its place, found before the tuning rather than after it
    for plot in plots:  # no folder at a plot's name either: it would end the command once the tuning is done, unsaved
        check_file_target(plot)
    check_outputs_apart([args.plot_dir, args.output_dir, *plots], [args.data], [args.model])
    _check_plots_apart(args)
    _check_tunable(args.model)
    # held from the model's reading to the settings' saving: a tune or train writing the folder meanwhile would have its
    # config replaced by one made from the model as it was read (a model folder not here is the loader's to name)
    with written_alone(target) if args.output_dir or target.is_dir() else contextlib.nullcontext():
        return _tune_into(args, target)


def _tune_into(args: argparse.Namespace, target: Path) -> int:
    """``tune`` once its output is checked and held."""
    import copy

    from ..hub import local_folder
    from ..inference import TrainedModel, check_held_out, save_tuned_settings, tuning_provenance
    from ..inference.loading import check_length_prior, check_saved_decodings, check_saved_length_prior
    from ..inference.tuning import dropped_settings, past_windows_line, stale_calibrator_lines, tune_for_model, tuning_summary

    check_saved_decodings(args.model, args.decoding or ())  # before the data is read
    options = decode_config(args, require_answer=False)
    check_saved_length_prior(args.model, args.decoding, options.bio_length_prior, PRIOR_OPTION)  # a prior none tuned reads
    data = load_task_data(args, args.data, args.limit, requested_task(args), needs_gold="bio-mrc tune")
    task = data_task(args, data)
    _check_span_count_given(args, task)
    _check_some_answered(data.examples, args.data)
    # from the run record, before the model loads and before the count of questions: no option makes them tunable
    training_questions = check_held_out(args.model, data.examples, args.data)
    calibrate = _calibrates(args, len(data.examples), task)
    trained = TrainedModel.load(args.model, progress=True, precision=args.precision, device=args.device,
                                decodings=args.decoding or ())
    check_length_prior(trained.decodings, args.decoding or trained.decodings, options.bio_length_prior, PRIOR_OPTION)  # a hub id's
    before = copy.deepcopy(trained.model.config)
    outputs = trained.windows(data.examples, batch_size=args.batch_size, progress=True)
    tuned = tune_for_model(trained, outputs, data.examples, options, task, decodings=args.decoding, calibrate=calibrate,
                           progress=True)
    if args.plot_dir:
        _plot_threshold_curves(tuned, Path(args.plot_dir))
    description = f"{args.data}" + (f" (first {counted(args.limit, 'question')})" if args.limit else "")
    provenance = tuning_provenance(description, data.examples, training_questions)
    if target == Path(args.model):  # predict, compare and AnswerExtractor apply them from now on
        save_tuned_settings(target, trained.model.config, tuned.thresholds, tuned.settings, provenance)
    else:  # the copy is made whole in a staging folder, so a full disk leaves no model that looks complete but is not
        with staged_folder(target, False, TUNE_STAGING_DIR) as staging:
            _copy_model(local_folder(args.model), staging)  # a hub id: its snapshot in the cache
            save_tuned_settings(staging, trained.model.config, tuned.thresholds, tuned.settings, provenance,
                                staged_for=target)
    for line in (tuning_summary(tuned, before, task) + dropped_settings(before, trained.model.config, tuned.settings)
                 + past_windows_line(outputs, data.examples)):
        print(printable_line(line), file=sys.stderr)  # names and keys of the model's config.json: one line each
    if len(data.examples) < FEW_TUNING_QUESTIONS:
        print(f"warning: tuned on {counted(len(data.examples), 'question')}: settings fitted on fewer than {FEW_TUNING_QUESTIONS} follow "
              "the questions drawn; tune on a few hundred held-out questions, as the model will meet them, to rely on them",
              file=sys.stderr)
    if not calibrate:
        for line in stale_calibrator_lines(before, trained.model.config):
            print(printable_line(line), file=sys.stderr)
        kept = trained.model.config.calibration or {}
        print(printable_line(f"calibrators: none fitted; kept as saved ({', '.join(kept) or 'none'})"), file=sys.stderr)
    print(printable_line(f"saved in {target / 'config.json'}"
                         + (" (in place)" if target == Path(args.model) else f" (a tuned copy of {args.model})")), file=sys.stderr)
    print(json.dumps(json_numbers(tuned.report), indent=2))
    return 0


def _check_plots_apart(args: argparse.Namespace) -> None:
    """``--plot-dir`` outside ``--output-dir``: the copy of the model goes into a new folder, which plots written first
    would make one that is not empty, refused once the tuning is done."""
    if not (args.plot_dir and args.output_dir):
        return
    plots, output = (Path(os.path.realpath(path)) for path in (args.plot_dir, args.output_dir))
    if plots == output or output in plots.parents:
        raise ConfigError(f"--plot-dir {args.plot_dir} lies in --output-dir {args.output_dir}, the new folder of the tuned "
                          "copy of the model alone; give a plot folder outside it")


def _plot_files(args: argparse.Namespace) -> list[Path]:
    """The plots ``--plot-dir`` may receive, one per decoding tuned: those asked for, else the model's (read from its
    ``config.json``), else every registered one (a folder the loader reads otherwise, a hub id)."""
    from .. import registry
    from ..inference.loading import saved_settings

    settings = saved_settings(Path(args.model)) if Path(args.model).is_dir() else None
    decodings = args.decoding or (settings[0] if settings else registry.decoding_names())
    return [plot_file(Path(args.plot_dir), decoding) for decoding in decodings]


def plot_file(plot_dir: Path, decoding: str) -> Path:
    return plot_dir / f"threshold_{decoding}.png"


def _check_tunable(model: str) -> None:
    """tune writes into a bio_mrc model folder: transformers' own QA model is converted into one first."""
    from ..hub import local_folder
    from ..qa_checkpoints import qa_architecture

    if architecture := qa_architecture(local_folder(model)):
        raise ConfigError(f"{model} is a {architecture}, which tune cannot save settings into; convert it into a bio_mrc "
                          f"model first (bio-mrc convert --model {model} --output DIR), then tune DIR")


def _tune_target(args: argparse.Namespace) -> Path:
    """Where ``tune`` saves: the model folder itself, or ``--output-dir``, a new (or empty) folder it copies the model to
    (a hub id's model only there: its snapshot in the cache is not the user's folder)."""
    from ..hub import is_hub_id

    if not args.output_dir:
        if Path(args.model).is_dir():  # a missing folder is the loader's to name
            check_writable_folder(args.model, "tune saves the tuned settings in its config.json (--output-dir: "
                                              "in a copy elsewhere)")
        elif is_hub_id(args.model) and not Path(args.model).is_symlink():  # a broken link is the loader's to name
            # a mistyped or not yet trained folder reads as a hub id too: say which was assumed
            raise ConfigError(f"{args.model} is no folder here, so it names a Hugging Face hub id, whose cached snapshot "
                              "tune does not change; give the model's folder, or --output-dir DIR to save a tuned copy "
                              "of the hub model there")
        return Path(args.model)
    target = check_folder_target(args.output_dir)
    if target.exists() and (target.resolve() == Path(args.model).resolve() or any(target.iterdir())):
        raise ConfigError(f"--output-dir {target} is not empty; give a new folder (the tuned copy of the model goes there)")
    return target


TUNE_STAGING_DIR = ".tune-staging"  # under tune's --output-dir while the tuned copy is written


def _copy_model(model: Path, target: Path) -> None:
    """The model folder's files (its top level: a model's files; a link is copied as the file it names) into
    ``target``, each copy raising the OSError of a full disk as it comes (shutil.copytree gathers them into one
    shutil.Error without an errno)."""
    import shutil

    for file in sorted(model.iterdir()):
        if file.is_file():
            shutil.copy2(file, target / file.name)


def _check_some_answered(examples, path: str) -> None:
    """Every setting tune fits needs questions with an answer: on none, tune would fit nothing after the model's whole
    pass (a calibrator would learn only how often the model abstains) and, in place, drop the thresholds saved."""
    if not any(example.is_answerable for example in examples):
        raise DataFormatError(f"none of its {counted(len(examples), 'question')} has an answer: tune fits the length prior and "
                              "span-count rules on answered questions, no-answer thresholds on answered and unanswerable "
                              "ones, and calibrators on the answers given; tune on held-out questions with and without "
                              "answers", source=str(path))


def _check_span_count_given(args: argparse.Namespace, task) -> None:
    """--min-span-probability is saved as the span-count rule, which tune sets on questions answered with span lists
    alone: refused, not ignored, on single-span questions."""
    if args.min_span_probability is not None and not task.answers_as_span_lists():
        raise ConfigError(f"--min-span-probability sets the span-count rule of multi-span answers, which tune saves from "
                          f"multi-span questions (MultiSpanQA's layout, --format answer-parts or quoref); {args.data} is read "
                          "as single-span questions: leave it out, or name the format its answers have")


def _calibrates(args: argparse.Namespace, questions: int, task) -> bool:
    """Whether ``tune`` fits calibrators: not for a task without a single answer to be right (multi-span gold) nor with
    --no-calibration; too few questions are refused."""
    if args.no_calibration or task.right is None:
        return False
    least = max(args.min_calibration_questions, FEWEST_CALIBRATION_QUESTIONS)  # one question calibrates nothing
    if questions < least:
        anyway = f", --min-calibration-questions {questions} fits one anyway" if questions >= FEWEST_CALIBRATION_QUESTIONS else ""
        raise ConfigError(f"{args.data}: {questions} question{'s are' if questions != 1 else ' is'} too few to fit a "
                          f"calibrator (at least {least}); --no-calibration tunes the rest{anyway}")
    return True


def _plot_threshold_curves(tuned, plot_dir: Path) -> None:
    import numpy as np

    from ..harness.plots import plot_threshold_curve
    from ..inference import threshold_key

    if not tuned.curves:
        print(printable_line(f"note: nothing plotted in {plot_dir}: the curves are of no-answer thresholds, which questions "
                             "that all have an answer do not tune (SQuAD 2.0 questions do)"), file=sys.stderr)
    for decoding, (xs, f1) in tuned.curves.items():
        finite = np.isfinite(xs)
        plot_threshold_curve(xs[finite], f1[finite], tuned.thresholds[threshold_key(decoding)],
                             f"no-answer threshold, {decoding} decoding", plot_file(plot_dir, decoding))
