"""``bio-mrc train``: one process trains into its output folder, alone."""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

from .. import registry
from ..arguments import first_questions
from ..errors import ConfigError
from ..config_options import options_given
from ..features.windows_cache import cache_budget_bytes
from ..io import check_folder_target, check_library_path, check_outputs_apart, printable_line
from ..plurals import counted
from .command_data import check_data_found, format_task, load_task_data
from .options import check_starting_point, network_args, train_config


def cmd_train(args: argparse.Namespace) -> int:
    from ..training.output_folder import check_inputs_kept, training_alone

    check_library_path(check_folder_target(args.output_dir))  # before the data is read
    check_outputs_apart([args.output_dir], [args.train, args.eval])
    check_inputs_kept(Path(args.output_dir), [args.train, args.eval])  # a data file --overwrite would replace
    if args.init_from and "encoder" in options_given(args):  # the run would train init_from's encoder, named as this one
        raise ConfigError(f"--encoder {args.encoder} and --init-from {args.init_from} name two starting points: --init-from "
                          "continues a trained model on its own encoder, so --encoder would be ignored (and named in the "
                          "run record and model card as the encoder); give one of the two")
    for path in (args.train, args.eval):  # a missing file: before the options are checked against the encoder
        check_data_found(path, format_task(args))
    check_starting_point(args.init_from, args.encoder, args.revision)  # before torch loads
    cache_budget_bytes()  # $BIO_MRC_WINDOWS_CACHE_GB, read once the windows are built
    with training_alone(Path(args.output_dir)):  # before the data is read; train_model holds it again
        return _train_into(args)


def _train_into(args: argparse.Namespace) -> int:
    """``train`` once its output folder is checked and held."""
    from ..training.output_folder import check_output_folder
    from ..training.run_start import check_windows_held

    check_output_folder(Path(args.output_dir), args.overwrite)
    config = train_config(args)  # its options: each check so far before torch loads
    check_outputs_apart([args.output_dir], model_dirs=[config.encoder, config.init_from])  # where --overwrite passed above
    if "max_seq_length" in options_given(args):  # one left out fits the encoder, or its own load says why it cannot
        check_windows_held(config)
    from ..inference.during_training import TrainingEvaluator
    from ..training.run_start import SharedHeldOutWarning, finished_run, warn_shared_held_out
    from ..training.train import train_model
    from ..training.run_checks import check_best_metric
    from ..training.trainer import starting_point
    from ..training.training_args import check_network_args, check_run_trackers

    if (record := finished_run(args.output_dir, args.resume, args.overwrite)) is not None:
        return _print_finished_run(args.output_dir, record)
    check_run_trackers(config.training_args, network_args(args))  # before the data is read, as is
    check_network_args(network_args(args), Path(args.output_dir))  # a push that cannot happen (offline, no token, an id the hub refuses)
    task = format_task(args)
    training_args = _checked_options(args, config, starting_point(config))  # before the data is read
    data = load_task_data(args, args.train, args.limit, task, needs_gold="bio-mrc train")
    held_out = load_task_data(args, args.eval, None, task, needs_gold="bio-mrc train --eval") if args.eval else None
    if held_out:
        warn_shared_held_out(data.examples, held_out.examples, "the --eval questions")
    evaluator = TrainingEvaluator(held_out.examples, held_out.version, task=registry.task_of_data(held_out.format, held_out.is_v2),
                                  precision=config.precision, data_name=str(args.eval)) if held_out else None  # in the run's precision
    check_best_metric(training_args, evaluator.metric_names(config.heads) if evaluator else None)  # the scores of its task
    print(printable_line(f"training on {counted(len(data.examples), 'question')} of {args.train}"), file=sys.stderr)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SharedHeldOutWarning)  # said above, before the --eval questions' scoring was set up
        result = train_model(data.examples, config, args.output_dir, progress=True, resume=args.resume,
                             checkpoint_steps=args.checkpoint_steps, overwrite=args.overwrite, evaluator=evaluator,
                             network_args=network_args(args), data_name=first_questions(str(args.train), args.limit, len(data.examples)))
    print(json.dumps({"model_dir": str(result.model_dir), "seconds": round(result.seconds, 1),
                      "questions": result.n_examples, "windows": result.n_windows, "final_loss": result.final_loss}, indent=2))
    return 0


def _checked_options(args: argparse.Namespace, config, source: str):
    """The run's options checked together against its encoder (or ``init_from``'s model, ``source``) and output folder,
    as training checks them once the data is read and the model built; returns its ``TrainingArguments``."""
    from ..training.checkpoints import CHECKPOINT_DIR, check_resumable
    from ..training.run_checks import check_run_options, check_windows_fit

    check_windows_fit(config, source)
    training_args = check_run_options(config, args.output_dir, bool(args.eval), True, args.checkpoint_steps)
    if not args.resume:  # an unfinished run's checkpoints, which a resumed run checks against its questions once read
        check_resumable(Path(args.output_dir) / CHECKPOINT_DIR, {}, False, True)
    check_outputs_apart([args.output_dir], model_dirs=[config.encoder, config.init_from])
    return training_args


def _print_finished_run(output_dir: str, record: dict) -> int:
    """A run stopped while it finished, completed by ``train --resume``: its summary as the run printed it."""
    print(printable_line(f"note: {output_dir} held a finished model whose run was stopped while it finished; its card "
                         "is written and its checkpoints removed"), file=sys.stderr)
    print(json.dumps({"model_dir": str(output_dir), "seconds": round(record.get("seconds") or 0.0, 1),
                      "questions": record.get("n_examples"), "windows": record.get("n_windows"),
                      "final_loss": record.get("final_loss")}, indent=2))
    return 0
