"""``bio-mrc tune``: the decodings' settings fitted on held-out questions and saved with the model."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from ..decoding.config import DecodeConfig
from ..errors import ConfigError
from ..io import check_file_target, check_folder_target, check_outputs_apart, printable_line
from .command_data import data_task, load_task_data, requested_task
from .console import json_numbers
from .options import check_model_at_hand, decode_config


def cmd_tune(args: argparse.Namespace) -> int:
    from ..inference.tuning_checks import check_tunable, held_for_tuning, tuning_folder
    from ..model_folder import check_loadable

    options = decode_config(args, require_answer=False)  # its ranges checked first, before the model is looked up
    target = tuning_folder(args.model, args.output_dir)
    plots = _plot_files(args) if args.plot_dir else []
    if args.plot_dir:
        check_folder_target(args.plot_dir)  # no file in its place, found before the tuning rather than after it
    for plot in plots:  # no folder at a plot's name either: it would end the command once the tuning is done, unsaved
        check_file_target(plot)
    check_outputs_apart([args.plot_dir, args.output_dir, *plots], [args.data], [args.model])
    _check_plots_apart(args)
    check_tunable(args.model, args.revision)
    check_model_at_hand(args.model, args.revision,  # before the data is read
                        lambda folder: check_loadable(folder, args.model, precision=args.precision, device=args.device))
    with held_for_tuning(target, args.output_dir):
        return _tune_into(args, target, options)


def _tune_into(args: argparse.Namespace, target: Path, options: DecodeConfig) -> int:
    """``tune`` once its output is checked and held: the rest of :func:`~bio_mrc.inference.tune_model`, with the data
    read by the command's options."""
    from ..inference.tuning_checks import check_saved_settings, check_tuning_questions

    options = check_saved_settings(args.model, args.decoding, options)
    data = load_task_data(args, args.data, args.limit, requested_task(args), needs_gold="bio-mrc tune")
    task = data_task(args, data)
    questions = check_tuning_questions(args.model, data.examples, options, task, args.data, not args.no_calibration,
                                       args.min_calibration_questions, args.revision)  # each check so far before torch loads
    from ..inference.model_tuning import TuningPlan, tune_read_questions

    plots = (lambda tuned: _plot_threshold_curves(tuned, Path(args.plot_dir))) if args.plot_dir else None
    plan = TuningPlan(args.model, target, args.decoding, options, task, args.data, args.limit,
                      args.batch_size, args.precision, args.device, progress=True, revision=args.revision)
    tuning = tune_read_questions(plan, questions, plots)
    for line in tuning.lines:
        print(printable_line(line), file=sys.stderr)  # names and keys of the model's config.json: one line each
    print(json.dumps(json_numbers(tuning.report), indent=2))
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
    """The plots ``--plot-dir`` may receive, one per decoding tuned: those asked for (``auto``: the model's preferred),
    else the model's (read from its ``config.json``), else every registered one (a folder the loader reads otherwise,
    a hub id, where ``auto`` may be any of them)."""
    from .. import registry
    from ..inference.saved_settings import saved_settings

    settings = saved_settings(Path(args.model)) if Path(args.model).is_dir() else None
    available = settings[0] if settings else registry.decoding_names()
    asked = list(args.decoding or available)
    if registry.AUTO_DECODING in asked:
        asked += [registry.preferred_decoding(available)] if settings else available
    decodings = [decoding for decoding in dict.fromkeys(asked) if decoding != registry.AUTO_DECODING]
    return [plot_file(Path(args.plot_dir), decoding) for decoding in decodings]


def plot_file(plot_dir: Path, decoding: str) -> Path:
    return plot_dir / f"threshold_{decoding}.png"


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
