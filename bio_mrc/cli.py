"""``bio-mrc``: a thin command line over the library. Each command parses, calls, prints.

Building the parser loads only light modules (the config dataclasses and their option tables); torch,
transformers and datasets load inside the command that runs a model, so ``--help`` answers at once
(tests/test_cli_startup.py checks that ``--version`` imports no torch).
"""

from __future__ import annotations

import argparse
import codecs
import contextlib
import functools
import json
import os
import signal
import sys
import threading
import time
import warnings
from pathlib import Path
from typing import Any, Iterator, Sequence

from . import __version__, registry
from .argument_parser import RUN_QA_NOTE, CommandLineParser
from .errors import BioMrcError, ConfigError
from .config_options import add_config_options, config_from_args, options_given
from .data.sources import default_data_dir
from .data.text import read_text_file
from .features.config import stride_leaves_new_context
from .io import (check_file_target, check_folder_target, check_library_path, check_outputs_apart, check_writable_folder,
                 home_expanded, printable_json, printable_line, sole_process_in, staged_folder, written_alone)
from .decoding.postprocess import DecodeConfig
from .harness.config import PRESETS
from .model_defaults import QA_WINDOWS as QA_WINDOW_DEFAULTS
from .inference.defaults import (DEFAULT_CHUNK_SIZE, FEW_TUNING_QUESTIONS, FEWEST_CALIBRATION_QUESTIONS, GPU_INFERENCE_BATCH_SIZE,
                                 INFERENCE_BATCH_SIZE, MIN_CALIBRATION_QUESTIONS)
from .precision import DEFAULT_PRECISION, PRECISIONS, pin_process_device, resolve_device
from .launcher import check_launcher_environment, launcher_number
from .serving.config import ServeConfig
from .training.config import DEFAULT_CHECKPOINT_STEPS, TrainConfig

MAX_COUNT = 10**9  # the largest count an option takes (questions, windows, steps)
LOGGED_BAR_SECONDS = 30  # a progress bar's least interval between redraws when standard error is no terminal
LONG_CONTEXT_CHARS = 100_000  # extract shows progress bars from this context length (about 100 windows)

_DESCRIPTION = "bio-mrc: a thin command line over the library. Each command parses, calls, prints."
# Options from the config dataclasses' fields (help and choices in their metadata), so they cannot drift apart.
# require_answer is the command's to set: tune never, predict and extract always (abstaining is the saved threshold's decision).
_DECODE_NOT_OPTIONS = ("require_answer", "multi_span")  # tune's; extract and predict take --multi-span


def _train_config(args: argparse.Namespace) -> TrainConfig:
    return config_from_args(TrainConfig, args, **_fitted_windows(args))


_WINDOW_OPTIONS = ("max_seq_length", "doc_stride", "max_query_length")


def _fitted_windows(args: argparse.Namespace) -> dict[str, int]:
    """The window settings train takes when the command line gave not all of them: the defaults, but a window of the
    encoder's positions where it has fewer than the default length, and, where the defaults' stride and question do
    not fit the window, those ``qa_windows`` fits to it (said in one line on stderr). A given value is kept, and one
    that does not fit is refused as before."""
    given = options_given(args) & set(_WINDOW_OPTIONS)
    if given == set(_WINDOW_OPTIONS):
        return {}
    windows = {name: getattr(args, name) for name in _WINDOW_OPTIONS}
    positions = None if "max_seq_length" in given or getattr(args, "init_from", None) else _encoder_positions(args.encoder)
    if positions is not None and positions < windows["max_seq_length"]:
        windows["max_seq_length"] = positions
    if not stride_leaves_new_context(**windows):
        from .qa_checkpoints import qa_windows

        windows = qa_windows(None, **{name: windows[name] if name in given or name == "max_seq_length" else None
                                      for name in _WINDOW_OPTIONS})
    changed = {name: value for name, value in windows.items() if value != getattr(args, name)}
    if changed:
        why = (f"encoder {args.encoder or 'default'} holds {positions} positions, fewer than the default window of "
               f"{args.max_seq_length} tokens" if "max_seq_length" in changed else
               f"the default doc stride and question length leave no new context in a window of {windows['max_seq_length']} tokens")
        chosen = " ".join(f"--{name.replace('_', '-')} {windows[name]}" for name in _WINDOW_OPTIONS if name not in given)
        print(printable_line(f"note: {why}: training with {chosen} (give them to choose others)"), file=sys.stderr)
    return changed


def _encoder_positions(encoder: str | None) -> int | None:
    """The positions a window of ``encoder`` may fill; None where they cannot be read ahead (training's own load says
    why)."""
    from .encoders import resolve_encoder
    from .qa_checkpoints import encoder_positions

    try:
        return encoder_positions(resolve_encoder(encoder))
    except BioMrcError:
        return None


def _decode_config(args: argparse.Namespace, require_answer: bool = True) -> DecodeConfig:
    return config_from_args(DecodeConfig, args, require_answer=require_answer)


def _add_data_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--fix-offsets", action="store_true",
                        help="relocate an answer_start that misses its text to the nearest occurrence of the text, "
                             "a whole word before a piece of a longer one (reported)")
    parser.add_argument("--skip-invalid", action="store_true",
                        help="leave out bad questions instead of stopping at the first one (each is reported)")
    parser.add_argument("--format", choices=registry.data_formats(),
                        help="what the questions are, as a comparison config's \"format\" says (default: detected: multispanqa "
                             "for MultiSpanQA's layout, else squad, whose listed answers are alternatives); answer-parts: any "
                             "SQuAD-shaped form whose listed answers are the parts of one answer, scored with MultiSpanQA's "
                             "metrics (your own multi-span questions)")


# The forms load_squad reads (bio_mrc/data/formats.py), for every --data and --train.
_DATA_HELP = ("questions: official SQuAD JSON; JSON Lines with the Hugging Face SQuAD columns "
              "(.jsonl, .jsonl.gz, or by content); CSV, TSV or Parquet with those columns; an MRQA shared-task file "
              "(.jsonl.gz); MultiSpanQA JSON; a folder saved with datasets' save_to_disk (FOLDER:SPLIT picks "
              "a DatasetDict's split); or a hub dataset id with a split, e.g. rajpurkar/squad:validation (needs a network)")


def _load_squad(args: argparse.Namespace, path: str, limit: int | None = None, data_format: str | None = None,
                needs_gold: str | None = None):
    """Questions in any form load_squad reads, under the command's data options,
    reporting every relocated offset and skipped question; ``needs_gold`` refuses unlabelled ones."""
    from .data.squad import load_squad

    data = load_squad(path, limit=limit, fix_offsets=args.fix_offsets, skip_invalid=args.skip_invalid, data_format=data_format,
                      needs_gold=needs_gold)
    _report_read(data, path, len(data.examples))
    return data


def _load_task_data(args: argparse.Namespace, path: str, limit: int | None, task, needs_gold: str | None):
    """The questions of ``task`` (None: of whatever task the data's form is): read by the task's own loader where it
    has one, else as _load_squad reads them, in the task's layout, and as the task means them (its format named)."""
    from .data.squad import SquadFile

    if task is None or task.load is None:
        data = _load_squad(args, path, limit, data_format=task.layout if task else None, needs_gold=needs_gold)
        if task is not None:
            _check_read_as_named(task, data.format, path, args)
            data.examples, data.format = task.task_examples(data.examples), task.format_of_read(data.format)
        return data
    examples = registry.resolve(task.load)(Path(path))[:limit]
    if not examples:
        raise ConfigError(f"no questions to use in {path}")
    return SquadFile(examples, "2.0" if any(not ex.is_answerable for ex in examples) else "1.1", str(path), task.format)


def _check_read_as_named(task, read_format: str, path: str, args: argparse.Namespace) -> None:
    """``--format`` (else ``--metric``) named a task whose data keep their format, yet the file is in another task's
    own layout (``--format squad`` on MultiSpanQA JSON): refused, as the other way round is, not scored as that other
    task. The error names the option the command line gave."""
    if task.examples_as is None and read_format != task.format and read_format in registry.data_formats():
        option, given, own = (("--format", args.format, read_format) if args.format else
                              ("--metric", args.metric, registry.task_for(read_format, False).scorer))
        raise ConfigError(f"{option} {given}: {path} is in {read_format}'s layout, which is scored as {read_format}; "
                          f"drop {option} or give {option} {own}")


def _format_task(args: argparse.Namespace):
    """The task ``--format`` names (None: the data's own, detected)."""
    return registry.task_for(args.format, False) if args.format else None


def _requested_task(args: argparse.Namespace):
    """The task ``--format`` names, else the one of ``--metric``'s scorer (None: the data's own); the two must agree."""
    named = _format_task(args)
    if not args.metric:
        return named
    scored_by = registry.scorer(args.metric)
    if named is not None and named.scorer != scored_by.scorer:
        raise ConfigError(f"--metric {args.metric} does not score --format {args.format} ({named.title}); give one of them")
    return named or scored_by


def _data_task(args: argparse.Namespace, data):
    """The task the read questions are scored as: ``--metric``'s scorer's unless ``--format`` named the task."""
    if args.metric and not args.format:
        return registry.scorer(args.metric, data.is_v2)
    return registry.task_of_data(data.format, data.is_v2)


def _stream_squad(args: argparse.Namespace, path: str, limit: int | None = None, quiet: bool = False,
                  data_format: str | None = None):
    """The questions as a stream (memory flat in their number), their count and how many of them are labelled as
    having no answer: every one is read and checked once here, before any work, as _load_squad checks them, in
    ``data_format``'s layout (None: any)."""
    from .data.squad import stream_squad

    questions = stream_squad(path, limit=limit, fix_offsets=args.fix_offsets, skip_invalid=args.skip_invalid,
                             data_format=data_format)
    count = unanswerable = 0
    for example in questions:
        count += 1
        unanswerable += example.is_labelled and not example.is_answerable
    if not quiet or not count:
        _report_read(questions, path, count)
    return questions, count, unanswerable


def _prediction_questions(args: argparse.Namespace, task, quiet: bool):
    """What ``predict`` answers: the questions, the format they are read as, their count and how many have no answer.
    Streamed as _stream_squad reads them, in ``task``'s layout, or read whole by the loader of a task ``--format``
    names that has one (a format the format table does not read)."""
    if task is None or task.load is None:
        questions, count, unanswerable = _stream_squad(args, args.data, args.limit, quiet=quiet,
                                                       data_format=task.layout if task else None)
        return questions, task.format_of_read(questions.format) if task else questions.format, count, unanswerable
    examples = _load_task_data(args, args.data, args.limit, task, needs_gold=None).examples
    return examples, task.format, len(examples), sum(example.is_labelled and not example.is_answerable for example in examples)


def _warn_untuned_abstention(trained, decodings: Sequence[str], unanswerable: int, path: str) -> None:
    """A data file holding questions without an answer, answered by a decoding with no tuned no-answer threshold:
    every question gets an answer, which a warning says before the work."""
    from .inference import threshold_key

    untuned = [d for d in decodings if threshold_key(d) not in trained.thresholds]
    if unanswerable and untuned:
        print(printable_line(f"warning: {path} holds {unanswerable} question(s) without an answer, and the model has no "
                             f"tuned no-answer threshold for {', '.join(untuned)}, so it answers every question "
                             "(bio-mrc tune fits one on held-out SQuAD 2.0 questions)"), file=sys.stderr)


def _report_read(data, path: str, count: int) -> None:
    """Print the relocated offsets and skipped questions of a read; no question left is an error."""
    if data.fixed_offsets:
        print(printable_line(f"note: relocated answer_start of {len(data.fixed_offsets)} question(s) in {path}: "
                             f"{', '.join(map(repr, data.fixed_offsets[:10]))}{', ...' if len(data.fixed_offsets) > 10 else ''}"),
              file=sys.stderr)
    for error in data.skipped:
        print(f"skipped: {printable_line(error)}", file=sys.stderr)
    if data.skipped:
        print(printable_line(f"warning: skipped {len(data.skipped)} invalid question(s) of {path}"), file=sys.stderr)
    if not count:
        raise ConfigError(f"no questions to use in {path}")


def cmd_train(args: argparse.Namespace) -> int:
    check_library_path(check_folder_target(args.output_dir))  # before the data is read
    check_outputs_apart([args.output_dir], [args.train, args.eval])
    with _training_alone(Path(args.output_dir)):
        return _train_into(args)


@contextlib.contextmanager
def _training_alone(output_dir: Path) -> Iterator[None]:
    """Hold ``output_dir`` as the one ``train`` writing it: a second run there at once (``--resume`` or
    ``--overwrite`` too) would save, rotate and remove the first one's checkpoints and mix their models. A launcher's
    other processes train beside rank 0, which holds it; a folder made here and left empty by a failure is removed."""
    if launcher_number("RANK") != 0:
        yield
        return
    made = [folder for folder in (output_dir, *output_dir.parents) if not folder.exists()]
    try:  # the folder's real path: an output folder may be a link the user chose, which the lock must not refuse
        with sole_process_in(os.path.realpath(output_dir), "another process is training into this folder now; wait "
                             "for it to end, or choose another --output-dir", shown=str(output_dir)):
            yield
    except BaseException:
        for folder in made:
            if folder.is_dir() and not any(folder.iterdir()):
                folder.rmdir()
        raise


def _train_into(args: argparse.Namespace) -> int:
    """``train`` once its output folder is checked and held."""
    from .data.article_splits import shared_questions_and_contexts
    from .inference.during_training import TrainingEvaluator
    from .training.saving import finish_stopped_save
    from .training.train import load_run_record, train_model

    if args.resume and not args.overwrite and finish_stopped_save(args.output_dir):
        return _print_finished_run(args.output_dir, load_run_record(args.output_dir))
    if not args.overwrite and load_run_record(args.output_dir) is not None:  # --overwrite replaces even a damaged one
        raise ConfigError(f"{args.output_dir} holds a finished model; choose another --output-dir or pass --overwrite")
    if args.init_from and "encoder" in options_given(args):  # the run would train init_from's encoder, named as this one
        raise ConfigError(f"--encoder {args.encoder} and --init-from {args.init_from} name two starting points: --init-from "
                          "continues a trained model on its own encoder, so --encoder would be ignored (and named in the "
                          "run record and model card as the encoder); give one of the two")
    config = _train_config(args)
    task = _format_task(args)
    data = _load_task_data(args, args.train, args.limit, task, needs_gold="bio-mrc train")
    held_out = _load_task_data(args, args.eval, None, task, needs_gold="bio-mrc train --eval") if args.eval else None
    if held_out and any(shared := shared_questions_and_contexts(data.examples, held_out.examples)):
        print(f"warning: the --eval questions share {shared[0]} question ids and {shared[1]} contexts with the training "
              "questions: their scores during training overstate the model (hold out whole articles)", file=sys.stderr)
    evaluator = TrainingEvaluator(held_out.examples, held_out.version, task=registry.task_of_data(held_out.format, held_out.is_v2),
                                  precision=config.precision) if held_out else None  # scored in the run's precision
    print(printable_line(f"training on {len(data.examples)} questions of {args.train}"), file=sys.stderr)
    result = train_model(data.examples, config, args.output_dir, progress=True, resume=args.resume,
                         checkpoint_steps=args.checkpoint_steps, overwrite=args.overwrite, evaluator=evaluator,
                         network_args=_network_args(args))
    print(json.dumps({"model_dir": str(result.model_dir), "seconds": round(result.seconds, 1),
                      "questions": result.n_examples, "windows": result.n_windows, "final_loss": result.final_loss}, indent=2))
    return 0


def _print_finished_run(output_dir: str, record: dict) -> int:
    """A run stopped while it finished, completed by ``train --resume``: its summary as the run printed it."""
    print(printable_line(f"note: {output_dir} held a finished model whose run was stopped while it finished; its card "
                         "is written and its checkpoints removed"), file=sys.stderr)
    print(json.dumps({"model_dir": str(output_dir), "seconds": round(record.get("seconds") or 0.0, 1),
                      "questions": record.get("n_examples"), "windows": record.get("n_windows"),
                      "final_loss": record.get("final_loss")}, indent=2))
    return 0


def _add_network_options(parser: argparse.ArgumentParser) -> None:
    """The only way to send a run off the machine: no config file turns these on."""
    parser.add_argument("--push-to-hub", action="store_true",
                        help="publish to the Hugging Face Hub as Trainer does (needs `hf auth login` or HF_TOKEN)")
    parser.add_argument("--hub-model-id", metavar="ID", help="the hub repository to push to (with --push-to-hub)")
    parser.add_argument("--hub-strategy", choices=("end", "every_save", "checkpoint", "all_checkpoints"),
                        help="when Trainer pushes (with --push-to-hub)")
    parser.add_argument("--hub-private-repo", action="store_true", help="make a new hub repository private (with --push-to-hub)")
    parser.add_argument("--report-to", nargs="+", metavar="TRACKER",
                        help="send logs to these trackers (wandb, mlflow, comet_ml, ...); a config's training_args take only "
                             "local ones (tensorboard)")


def _network_args(args: argparse.Namespace) -> dict[str, object]:
    values = {"push_to_hub": args.push_to_hub or None, "hub_model_id": args.hub_model_id, "hub_strategy": args.hub_strategy,
              "hub_private_repo": args.hub_private_repo or None, "report_to": args.report_to}
    return {name: value for name, value in values.items() if value is not None}


def cmd_predict(args: argparse.Namespace) -> int:
    from .inference import TrainedModel
    from .inference.sharding import Shard
    from .inference.streaming import StreamPlan, predict_to_files, prediction_outputs

    if args.resume and args.output == "-":
        raise ConfigError("--resume continues PREDS.answers.jsonl; with --output - there is no such file")
    output = args.output if args.output == "-" else check_file_target(args.output)
    outputs = [check_file_target(path) for path in prediction_outputs(output, args.decoding)]
    check_outputs_apart(outputs, [args.data], [args.model])
    decode = _decode_config(args)  # its ranges checked before any work
    shard = Shard.from_environment()  # one process, or this one's share under torchrun / accelerate launch
    task = _format_task(args)
    questions, read_format, count, unanswerable = _prediction_questions(args, task, quiet=not shard.writes)
    # MultiSpanQA's layout: {id: [span texts]}, what its metrics score
    multi_span = registry.task_of_data(read_format, False).answers_as_span_lists(args.multi_span)
    _check_span_count_option(args, multi_span)
    trained = TrainedModel.load(args.model, progress=shard.writes, precision=args.precision, device=shard.device_for(args.device),
                                decodings=args.decoding)
    config = trained.decode_config(decode)
    decodings = tuple(dict.fromkeys(registry.resolve_decoding(trained.decodings, d) for d in args.decoding))
    plan = StreamPlan(decodings, config, multi_span, chunk_size=args.chunk_size, batch_size=args.batch_size)
    if shard.writes:
        _warn_untuned_abstention(trained, decodings, unanswerable, args.data)
    started = time.perf_counter()
    files = predict_to_files(trained, questions, plan, output, args.resume, shard, total=count, progress=True,
                             source=_data_source(args.data))
    report: dict[str, object] = {"questions": count, "seconds": round(time.perf_counter() - started, 1)}
    report.update({decoding: {k: str(v) for k, v in paths.items()} for decoding, paths in files.items()})
    if shard.writes:  # with --output -, standard output holds the answers only
        print(json.dumps(report, indent=2), file=sys.stderr if output == "-" else sys.stdout)
    shard.close()
    return 0


def _data_source(data: str) -> str:
    """The data a predictions stream was made from, as its record names it: a file by its absolute path and size
    (an edited file is other data), a folder by its path, a hub dataset by its id."""
    path = Path(data).expanduser()
    if not path.exists():
        return data
    return f"{path.resolve()}, {path.stat().st_size} bytes" if path.is_file() else str(path.resolve())


@contextlib.contextmanager
def _unknown_ids_as_warning_lines() -> Iterator[None]:
    """Print each ignored-ids warning of the prediction loaders as one ``warning:`` line on stderr."""
    from .data.predictions import UnknownIdsWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UnknownIdsWarning)  # never deduplicated: each file says its own
        yield
    for warning in caught:
        if issubclass(warning.category, UnknownIdsWarning):
            print(f"warning: {printable_line(warning.message)} (--strict makes this an error)", file=sys.stderr)
        else:  # not ours: shown as Python would have
            warnings.showwarning(warning.message, warning.category, warning.filename, warning.lineno)


def cmd_evaluate(args: argparse.Namespace) -> int:
    from .data.predictions import load_na_probs, load_predictions

    # The whole file is read even under --limit: an answer to a question past the limit is no unknown id.
    data = _load_task_data(args, args.data, None, _requested_task(args), needs_gold="bio-mrc evaluate")
    scored = _scored_questions(args, data.examples)
    if scored.subset:
        print(printable_line(f"note: scoring {scored.subset}"), file=sys.stderr)
    task = _data_task(args, data)
    if args.na_probs and (problem := task.no_answer_probabilities_problem()):  # read and then ignored, it would look used
        raise ConfigError(f"--na-probs: {problem} (in {args.na_probs})")
    gold = registry.resolve(task.gold)(scored.examples)
    unscored = [ex.id for ex in data.examples if ex.id not in gold]
    with _unknown_ids_as_warning_lines():
        # A task whose official script scores only complete files (MultiSpanQA): a missing question is an error here too.
        predictions, missing = load_predictions(args.predictions, list(gold), multi_span=task.multi_span_answers,
                                                strict=task.strict_predictions(args.strict), unscored=unscored, data=args.data)
        na_probs, missing_probs = (load_na_probs(args.na_probs, list(gold), strict=args.strict, unscored=unscored,
                                                 data=args.data)
                                   if args.na_probs else (None, []))
    if missing:
        print(printable_line(f"warning: {len(missing)} of {len(gold)} questions have no prediction in {args.predictions} "
                             f"(e.g. {missing[0]!r}); they are scored as wrong (--strict makes this an error)"), file=sys.stderr)
    if missing_probs:
        print(printable_line(f"warning: {len(missing_probs)} of {len(gold)} questions have no no-answer probability in "
                             f"{args.na_probs} (e.g. {missing_probs[0]!r}); best_exact and best_f1 answer them at every threshold "
                             "(--strict makes this an error)"), file=sys.stderr)
    print(json.dumps(json_numbers({**registry.resolve(task.official)(task, gold, predictions, na_probs), **scored.record}), indent=2))
    return 0


def _scored_questions(args: argparse.Namespace, examples):
    """The questions ``evaluate`` scores: all it read (the first ``--limit`` of them), or with ``--only-predicted`` those
    the predictions file answers. A subset is stated on stderr and in the metrics' ``scored`` entry."""
    from .data.json_reader import DataFormatError, read_json
    from .data.predictions import ScoredQuestions

    examples = examples[:args.limit] if args.limit else examples
    if not args.only_predicted:
        subset = f"the first {len(examples)} questions of {args.data} (--limit {args.limit})" if args.limit else None
        return ScoredQuestions(list(examples), len(examples), subset)
    answered = read_json(args.predictions)
    if not isinstance(answered, dict):  # as load_predictions says it, not as "no question has an answer"
        raise DataFormatError(f"expected an object {{question id: answer}}, got a JSON {type(answered).__name__}",
                              source=str(args.predictions))
    kept = [ex for ex in examples if ex.id in answered]
    if not kept:
        raise ConfigError(f"--only-predicted: no question of {args.data} has an answer in {args.predictions}")
    among, options = ((f"the first {len(examples)}", f"--limit {args.limit} --only-predicted") if args.limit
                      else (str(len(examples)), "--only-predicted"))
    subset = f"the {len(kept)} of {among} questions of {args.data} that {args.predictions} answers ({options})"
    return ScoredQuestions(kept, len(examples), subset)


def cmd_tune(args: argparse.Namespace) -> int:
    target = _tune_target(args)
    if args.plot_dir:
        check_folder_target(args.plot_dir)  # no file in its place, found before the tuning rather than after it
    check_outputs_apart([args.plot_dir, args.output_dir], [args.data], [args.model])
    _check_tunable(args.model)
    # held from the model's reading to the settings' saving: a tune or train writing the folder meanwhile would have its
    # config replaced by one made from the model as it was read (a model folder not here is the loader's to name)
    with written_alone(target) if args.output_dir or target.is_dir() else contextlib.nullcontext():
        return _tune_into(args, target)


def _tune_into(args: argparse.Namespace, target: Path) -> int:
    """``tune`` once its output is checked and held."""
    import copy

    from .hub import local_folder
    from .inference import TrainedModel, save_tuned_settings, tuning_provenance
    from .inference.tuning import dropped_settings, past_windows_line, stale_calibrator_lines, tune_for_model, tuning_summary

    data = _load_task_data(args, args.data, args.limit, _requested_task(args), needs_gold="bio-mrc tune")
    task = _data_task(args, data)
    calibrate = _calibrates(args, len(data.examples), task)
    trained = TrainedModel.load(args.model, progress=True, precision=args.precision, device=args.device,
                                decodings=args.decoding or ())
    before = copy.deepcopy(trained.model.config)
    outputs = trained.windows(data.examples, batch_size=args.batch_size, progress=True)
    tuned = tune_for_model(trained, outputs, data.examples, _decode_config(args, require_answer=False),
                           task, decodings=args.decoding, calibrate=calibrate)
    if args.plot_dir:
        _plot_threshold_curves(tuned, Path(args.plot_dir))
    description = f"{args.data}" + (f" (first {args.limit} questions)" if args.limit else "")
    provenance = tuning_provenance(description, data.examples)
    if target == Path(args.model):  # predict, compare and AnswerExtractor apply them from now on
        save_tuned_settings(target, trained.model.config, tuned.thresholds, tuned.settings, provenance)
    else:  # the copy is made whole in a staging folder, so a full disk leaves no model that looks complete but is not
        with staged_folder(target, False, TUNE_STAGING_DIR) as staging:
            _copy_model(local_folder(args.model), staging)  # a hub id: its snapshot in the cache
            save_tuned_settings(staging, trained.model.config, tuned.thresholds, tuned.settings, provenance,
                                staged_for=target)
    for line in (tuning_summary(tuned, before, task) + dropped_settings(before, trained.model.config)
                 + past_windows_line(outputs, data.examples)):
        print(printable_line(line), file=sys.stderr)  # names and keys of the model's config.json: one line each
    if len(data.examples) < FEW_TUNING_QUESTIONS:
        print(f"warning: tuned on {len(data.examples)} questions: settings fitted on fewer than {FEW_TUNING_QUESTIONS} follow "
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


def _check_tunable(model: str) -> None:
    """tune writes into a bio_mrc model folder: transformers' own QA model is converted into one first."""
    from .hub import local_folder
    from .qa_checkpoints import qa_architecture

    if architecture := qa_architecture(local_folder(model)):
        raise ConfigError(f"{model} is a {architecture}, which tune cannot save settings into; convert it into a bio_mrc "
                          f"model first (bio-mrc convert --model {model} --output DIR), then tune DIR")


def _tune_target(args: argparse.Namespace) -> Path:
    """Where ``tune`` saves: the model folder itself, or ``--output-dir``, a new (or empty) folder it copies the model to
    (a hub id's model only there: its snapshot in the cache is not the user's folder)."""
    from .hub import is_hub_id

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


def json_numbers(value):
    """``value`` with each non-finite number as the string JSON readers take for it (``"-Infinity"``: a no-answer
    threshold that always abstains), as ``serve`` writes them."""
    from .model_folder import non_finite_as

    return non_finite_as(value, str)


def _plot_threshold_curves(tuned, plot_dir: Path) -> None:
    import numpy as np

    from .harness.plots import plot_threshold_curve
    from .inference import threshold_key

    if not tuned.curves:
        print(printable_line(f"note: nothing plotted in {plot_dir}: the curves are of no-answer thresholds, which questions "
                             "that all have an answer do not tune (SQuAD 2.0 questions do)"), file=sys.stderr)
    for decoding, (xs, f1) in tuned.curves.items():
        finite = np.isfinite(xs)
        plot_threshold_curve(xs[finite], f1[finite], tuned.thresholds[threshold_key(decoding)],
                             f"no-answer threshold, {decoding} decoding", plot_dir / f"threshold_{decoding}.png")


def cmd_compare(args: argparse.Namespace) -> int:
    from .harness.compare import compare, train_models
    from .harness.config import load_config
    from .harness.report import console_table

    if args.print_schema:
        from .harness.config import comparison_schema

        print(json.dumps(comparison_schema(), indent=2))
        return 0
    # An empty --data-dir, --encoder or --output-dir (an unset shell variable) is refused, not read as "not given".
    for option, value in (("--data-dir", args.data_dir), ("--encoder", args.encoder)):
        if value is not None and not value.strip():
            raise ConfigError(f"{option}: an empty path names no folder; give one")
    config = load_config(args.config).with_overrides(seeds=args.seeds, encoder=args.encoder, runs=args.runs)
    data_dir = Path(args.data_dir) if args.data_dir is not None else default_data_dir()
    if not data_dir.exists():
        raise ConfigError(f"data directory {data_dir} not found; pass --data-dir or set BIO_MRC_DATA")
    output_dir = check_library_path(check_folder_target(args.output_dir if args.output_dir is not None else Path("runs") / config.name))
    check_outputs_apart([output_dir], [args.config, data_dir])
    if args.train_only:
        for model_dir in train_models(config, data_dir, output_dir, progress=True, cells_from=args.cells_from):
            print(printable_line(model_dir))
        return 0
    results, summary = compare(config, data_dir, output_dir, progress=True, cells_from=args.cells_from)
    print(console_table(results, summary))
    print("\n" + printable_line(f"report: {output_dir / 'report.md'} (also report.html with a question browser, report.json and PNG plots there)"))
    return 0


def cmd_extract(args: argparse.Namespace) -> int:
    from .inference.extract import AnswerExtractor, question_context_examples

    if args.html:
        check_file_target(args.html)
        check_outputs_apart([args.html], list(args.context_file or []), [args.model])
    _check_span_count_option(args, args.multi_span)
    texts, names = _extract_documents(args)
    question_context_examples(args.question, texts if len(texts) > 1 else texts[0])  # the texts checked before the model loads
    extractor = AnswerExtractor.from_pretrained(
        args.model, precision=args.precision, device=args.device, decoding=args.decoding, multi_span=args.multi_span, decode_config=_decode_config(args),
        progress=sum(map(len, texts)) >= LONG_CONTEXT_CHARS,
    )
    if len(texts) > 1:  # one question over several documents: answers ranked across them
        print(printable_json(extractor(args.question, texts, top_k=args.top_k, names=names).to_dict(), indent=2))
        return 0
    context = texts[0]
    print(printable_json(extractor(args.question, context, top_k=args.top_k).to_dict(), indent=2))
    if args.html:
        from .harness.html_report import extraction_page
        from .io import atomic_write_text

        page = Path(args.html)
        page.parent.mkdir(parents=True, exist_ok=True)  # as predict makes its --output's folder
        atomic_write_text(page, extraction_page(extractor, args.question, context))
        drawn = "best span (the page draws one span an answer)" if args.multi_span else "answer"
        print(printable_line(f"page: {args.html} (every decoding's {drawn} and the BIO head's word probabilities)"), file=sys.stderr)
    return 0


def _check_span_count_option(args: argparse.Namespace, multi_span: bool) -> None:
    """--min-span-probability judges a multi-span answer's spans after the first: refused, not ignored, for single spans."""
    if args.min_span_probability is not None and not multi_span:
        raise ConfigError("--min-span-probability judges the spans after the first of a multi-span answer; "
                          "add --multi-span, or leave it out for single answers")


def _extract_documents(args: argparse.Namespace) -> tuple[list[str], list[str] | None]:
    """The texts ``extract`` answers from and their names (the files', or none for --context), checked before any work."""
    if bool(args.context_file) == bool(args.context):
        raise ConfigError("give --context-file FILE... or --context TEXT..., one of them")
    texts = [read_text_file(path) for path in args.context_file] if args.context_file else list(args.context)
    if len(texts) > 1 and (args.html or args.multi_span):
        raise ConfigError(f"{'--html' if args.html else '--multi-span'} takes one document; several are answered with "
                          "single spans ranked across them (--top-k)")
    return texts, list(args.context_file) if args.context_file else None


def _export_onnx(args: argparse.Namespace) -> dict:
    from .inference.onnx import export_onnx

    given = {name: getattr(args, name) for name in EXPORT_OPTIONS if getattr(args, name) is not None}
    return export_onnx(args.model, args.output, overwrite=args.overwrite, **given)  # the others: export_onnx's defaults


def _export_transformers(args: argparse.Namespace) -> dict:
    from .inference.conversion import export_qa_checkpoint

    return export_qa_checkpoint(args.model, args.output, overwrite=args.overwrite, progress=True)


EXPORT_FORMATS = {"onnx": _export_onnx, "transformers": _export_transformers}  # --format: how each is written
# The options of one format alone (unset by default): another format would ignore them, so given to it they are refused.
EXPORT_OPTIONS = {"opset": "onnx", "atol": "onnx"}


def cmd_export(args: argparse.Namespace) -> int:
    unread = [name for name, owner in EXPORT_OPTIONS.items() if getattr(args, name) is not None and owner != args.format]
    if unread:
        named, one = " and ".join(f"--{name}" for name in unread), len(unread) == 1
        raise ConfigError(f"{named} {'is' if one else 'are'} read by the {EXPORT_OPTIONS[unread[0]]} export alone, not by "
                          f"--format {args.format}: leave {'it' if one else 'them'} out")
    check_library_path(check_folder_target(args.output))  # both formats save a tokenizer
    print(printable_line(f"exporting {args.model} to {args.format} in {args.output}"), file=sys.stderr)
    record = EXPORT_FORMATS[args.format](args)
    print(json.dumps({"output": str(args.output), **record}, indent=2))
    return 0


def cmd_convert(args: argparse.Namespace) -> int:
    from .inference.conversion import convert_qa_checkpoint

    check_library_path(check_folder_target(args.output))
    print(printable_line(f"converting {args.model} into a bio_mrc model in {args.output}"), file=sys.stderr)
    written = convert_qa_checkpoint(args.model, args.output, progress=True, overwrite=args.overwrite,
                                    max_seq_length=args.max_seq_length, doc_stride=args.doc_stride,
                                    max_query_length=args.max_query_length)
    print(json.dumps(written, indent=2))
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from .serving.server import run_server

    if (args.model is None) == (args.model_option is None):
        raise ConfigError("serve takes the model once: --model DIR (or DIR alone)")
    run_server(args.model_option or args.model, config_from_args(ServeConfig, args), precision=args.precision, device=args.device)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = CommandLineParser(prog="bio-mrc", description=_DESCRIPTION, epilog=RUN_QA_NOTE)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    # Every option's help ends with its real default, read from the parser (so help and defaults cannot drift).
    add_command = functools.partial(sub.add_parser, formatter_class=DefaultsHelpFormatter)

    train = add_command("train", help="fine-tune a model on SQuAD-format data")
    train.add_argument("--train", required=True, help=_DATA_HELP)
    train.add_argument("--limit", type=_count, help="first N questions of the file")
    train.add_argument("--eval", help="held-out questions scored (official F1 of every decoding) whenever the training "
                                      "args' eval_strategy asks, e.g. --training-args '{\"eval_strategy\": \"steps\", "
                                      "\"eval_steps\": 200}'; any form --train takes")
    train.add_argument("--output-dir", required=True, help="the folder to save the model in (new or empty; --overwrite, --resume)")
    train.add_argument("--resume", action="store_true",
                       help="continue an interrupted run from its last checkpoint in OUTPUT_DIR/checkpoints (same options and data)")
    train.add_argument("--checkpoint-steps", type=_count, default=DEFAULT_CHECKPOINT_STEPS, help="optimizer steps between checkpoints")
    train.add_argument("--overwrite", action="store_true", help="replace a finished model, or the files of a folder that holds no bio_mrc model, in OUTPUT_DIR")
    add_config_options(train, TrainConfig)
    _add_device_option(train, pin=True)
    _add_data_options(train)
    _add_network_options(train)
    train.set_defaults(func=cmd_train)
    _add_model_commands(add_command)
    _add_compare_and_extract(add_command)
    _add_export_command(add_command)
    _add_serve_command(add_command)
    return parser


class DefaultsHelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Each option's help ends with its default, except where the option is unset by default and its help says what
    that means (``--batch-size``: 16 on a CPU, 128 on a GPU): argparse's ``(default: None)`` would contradict it."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default is None and "default:" in (action.help or ""):
            return action.help
        return super()._get_help_string(action)


def _add_precision_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--precision", choices=PRECISIONS, default=DEFAULT_PRECISION,
                        help="of the forward pass: bf16 = bfloat16 autocast; auto = the faster of the two on this machine "
                             "(measured once and cached; fp32 where bf16 is not native)")
    _add_device_option(parser)


def _add_device_option(parser: argparse.ArgumentParser, pin: bool = False) -> None:
    """``--device``, checked in main before the command's work; ``pin``: the process sees that device alone
    (for transformers' Trainer, which picks its own)."""
    parser.add_argument("--device", default="auto", metavar="{auto,cpu,cuda,cuda:N,mps}",
                        help="where the model runs: auto = the GPU when there is one, else the CPU")
    parser.set_defaults(check_device=pin_process_device if pin else resolve_device)


def _count(text: str, least: int = 1) -> int:
    """A whole number from ``least`` (a positive one unless told) to no larger than any run needs (``1e308`` and
    ``0`` are typos, not counts)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a whole number from {least} to {MAX_COUNT:,}, not {text!r}") from None
    if value < least:
        raise argparse.ArgumentTypeError(f"a positive number, not {value}" if least == 1 else f"at least {least}, not {value}")
    if value > MAX_COUNT:
        raise argparse.ArgumentTypeError(f"at most {MAX_COUNT:,}, not {value}")
    return value


def _decoding_choices() -> tuple[str, ...]:
    """auto and every registered decoding, read when the parser is built (a decoding registered later is offered)."""
    return registry.decoding_choices()


_MODEL_HELP = "a saved bio_mrc model folder, an ONNX export of one, or a Hugging Face hub id (read from the hub cache first)"
_AUTO_HELP = "auto: the best decoding the model's heads allow (joint with both heads, for one answer or several)"


def _add_model_commands(add_command) -> None:
    """The commands that run a trained model: predict, evaluate, tune."""
    predict = add_command("predict", help="write official-format predictions (+ n-best and na_prob files)")
    predict.add_argument("--model", required=True, help=_MODEL_HELP)
    predict.add_argument("--data", required=True, help=_DATA_HELP)
    predict.add_argument("--limit", type=_count, help="answer the first N questions of --data (default: all)")
    predict.add_argument("--decoding", choices=_decoding_choices(), nargs="+", default=[registry.AUTO_DECODING],
                         help=f"one or several; {_AUTO_HELP}")
    predict.add_argument("--output", required=True,
                         help="the official {id: answer} file; PREDS.answers.jsonl (the answers as they finish, one line per "
                              "question and decoding), PREDS.nbest.json and PREDS.na_probs.json beside it; "
                              "- writes the answer lines to standard output and no file")
    predict.add_argument("--batch-size", type=_count, default=None,
                         help=f"windows per forward batch (default: {INFERENCE_BATCH_SIZE} on a CPU, {GPU_INFERENCE_BATCH_SIZE} on a GPU)")
    predict.add_argument("--chunk-size", type=_count, default=DEFAULT_CHUNK_SIZE,
                         help="questions read, run and decoded at a time (memory grows with it, not with the file)")
    predict.add_argument("--resume", action="store_true",
                         help="continue an interrupted run: skip the questions PREDS.answers.jsonl answers (same options and data)")
    _add_precision_option(predict)
    add_config_options(predict, DecodeConfig, exclude=("require_answer",))
    _add_data_options(predict)
    predict.set_defaults(func=cmd_predict)

    evaluate = add_command("evaluate", help="official SQuAD v1.1/v2.0 or MultiSpanQA metrics")
    evaluate.add_argument("--data", required=True, help=f"{_DATA_HELP}; with --metric multispan, a MultiSpanQA JSON file")
    evaluate.add_argument("--predictions", required=True,
                          help="the official {id: answer} file (predict --output), or {id: [span texts]} for multi-span scoring")
    evaluate.add_argument("--na-probs", help="{id: no-answer probability} (predict's PREDS.na_probs.json): adds best_exact "
                                             "and best_f1 on SQuAD 2.0 questions")
    evaluate.add_argument("--limit", type=_count, help="score the first N questions of --data, as predict --limit answers them")
    evaluate.add_argument("--only-predicted", action="store_true",
                          help="score only the questions the predictions file answers (a subset, stated in the output)")
    evaluate.add_argument("--metric", choices=registry.scorers(),
                          help="default: the data's own (multispan for MultiSpanQA's layout, else squad)")
    evaluate.add_argument("--strict", action="store_true",
                          help="a question without a prediction is an error, not a wrong answer, and so is an id "
                               "that is not a question of the data (else ignored with a warning, as the official SQuAD scripts; "
                               "the multi-span metrics, like MultiSpanQA's official script, always refuse both)")
    _add_data_options(evaluate)
    evaluate.set_defaults(func=cmd_evaluate)
    tune = add_command("tune", help="tune the BIO span-length prior, no-answer thresholds (SQuAD 2.0 data), span-count "
                                       "thresholds (multi-span data) and calibrators on held-out questions and save them "
                                       "with the model")
    tune.add_argument("--model", required=True, help=_MODEL_HELP)
    tune.add_argument("--data", required=True, help=f"questions NOT used for training or the final evaluation. {_DATA_HELP}")
    tune.add_argument("--limit", type=_count, help="tune on the first N questions of --data (default: all)")
    tune.add_argument("--decoding", choices=registry.decoding_names(), nargs="+", help="default: every decoding the model has")
    tune.add_argument("--batch-size", type=_count, default=None,
                         help=f"windows per forward batch (default: {INFERENCE_BATCH_SIZE} on a CPU, {GPU_INFERENCE_BATCH_SIZE} on a GPU)")
    _add_precision_option(tune)
    tune.add_argument("--plot-dir", help="write threshold_<decoding>.png (F1 against the no-answer threshold; SQuAD 2.0 questions)")
    tune.add_argument("--output-dir", help="a new folder: copy the model there and save the tuned settings in the copy "
                                           "(default: in the model's own config.json)")
    tune.add_argument("--min-calibration-questions", type=_count, default=MIN_CALIBRATION_QUESTIONS,
                      help="fewer tuning questions than this are refused for fitting calibrators")
    tune.add_argument("--metric", choices=registry.scorers(),
                      help="the official scorer to tune by (default: the data's own: multispan for MultiSpanQA's layout, else squad)")
    tune.add_argument("--no-calibration", action="store_true",
                      help="tune the length prior and thresholds only; the saved calibrators stay as they are")
    add_config_options(tune, DecodeConfig, exclude=_DECODE_NOT_OPTIONS)
    _add_data_options(tune)
    tune.set_defaults(func=cmd_tune)


def _add_compare_and_extract(add_command) -> None:
    """compare (the harness) and extract (one question about one text)."""
    compare = add_command("compare", help="train/reuse runs, evaluate every decoding on the same questions, write a report")
    compare.add_argument("--config", default="quick", help=f"a JSON config file (--print-schema prints every key it takes) "
                                                          f"or a preset: {', '.join(PRESETS)}")
    compare.add_argument("--data-dir", help="folder with squad-v1.1/, squad-v2.0/ (default: $BIO_MRC_DATA or ../shared/data)")
    compare.add_argument("--output-dir", help="default: runs/<config name>")
    compare.add_argument("--seeds", type=int, nargs="+", help="override the config's seeds; cells become mean ± sd")
    compare.add_argument("--encoder", help="override every run's encoder (a local folder or a Hugging Face hub id)")
    _add_device_option(compare, pin=True)
    compare.add_argument("--print-schema", action="store_true",
                         help="print the JSON Schema of comparison configs (every key, type and range) and exit")
    compare.add_argument("--runs", nargs="+", metavar="NAME", help="only these runs of the config (e.g. one per sitting or machine)")
    compare.add_argument("--train-only", action="store_true",
                         help="train (or resume) every model and score nothing; a later compare scores them")
    compare.add_argument("--cells-from", metavar="REPORT",
                         help="an earlier report.json (or .json.xz, .json.gz) of this comparison: the models it holds are neither "
                              "trained nor scored, their cells are read from it (a comparison composed over sittings or machines)")
    compare.set_defaults(func=cmd_compare)
    extract = add_command("extract", help="answer one question about a text, or across several texts, ranked")
    extract.add_argument("--model", required=True, help=_MODEL_HELP)
    _add_precision_option(extract)
    extract.add_argument("--question", required=True, help="the question, as text")
    extract.add_argument("--context-file", nargs="+", metavar="FILE",
                         help="UTF-8 text file(s); several: the answers are ranked across them, each naming its file")
    extract.add_argument("--context", nargs="+", metavar="TEXT", help="the text(s) themselves, as --context-file")
    extract.add_argument("--top-k", type=_count, help="how many answers, best first (across every document; default: 1)")
    extract.add_argument("--decoding", choices=_decoding_choices(), default=registry.AUTO_DECODING, help=_AUTO_HELP)
    extract.add_argument("--html", metavar="OUT.html",
                         help="also write a page that shows the question as report.html's browser does: every decoding's best "
                              "span highlighted in the context (one span each, with --multi-span too), its confidence and "
                              "probability, the BIO head's per-word P(B) and P(I)")
    add_config_options(extract, DecodeConfig, exclude=("require_answer",))
    extract.set_defaults(func=cmd_extract)


def _add_export_command(add_command) -> None:
    """export: a saved model as a self-describing ONNX folder that predict, extract and AnswerExtractor run.
    ``--opset`` and ``--atol`` are unset by default (export_onnx's defaults apply): their help names
    bio_mrc.inference.onnx's DEFAULT_OPSET and TOLERANCE (not imported here, so that building the parser does not
    load the inference package; tests/test_onnx.py ties them)."""
    export = add_command("export", help="export a model to ONNX (needs pip install bio_mrc[onnx]; predict/extract/"
                                         "AnswerExtractor run the folder with ONNX Runtime), or its span head as "
                                         "transformers' ...ForQuestionAnswering")
    export.add_argument("--model", required=True, help="a saved bio_mrc model folder")
    export.add_argument("--output", required=True, help="the folder to write: model.onnx, tokenizer, config.json, "
                                                        "bio_mrc_export.json (onnx); config.json, weights, tokenizer (transformers)")
    export.add_argument("--format", choices=tuple(EXPORT_FORMATS), default="onnx",
                        help="onnx: the whole model for ONNX Runtime; transformers: the encoder and span head as "
                             "transformers' extractive QA model (no BIO head, windows or tuned settings)")
    export.add_argument("--opset", type=int, help="ONNX opset version (onnx) (default: 18)")
    export.add_argument("--atol", type=float, help="largest logit difference from PyTorch allowed on the random windows "
                                                   "checked at export (onnx) (default: 0.0001)")
    export.add_argument("--overwrite", action="store_true", help="replace the files of a folder that is not empty")
    export.set_defaults(func=cmd_export)

    convert = add_command("convert", help="save transformers' extractive QA model (BertForQuestionAnswering and its kin; "
                                          "a folder or hub id) as a bio_mrc model with a span head, for tune and the rest")
    convert.add_argument("--model", required=True, help="the ...ForQuestionAnswering model: a folder or a hub id")
    convert.add_argument("--output", required=True, help="a new or empty folder for the bio_mrc model")
    convert.add_argument("--overwrite", action="store_true", help="replace the model in a folder that is not empty "
                                                                  "(its model files; any other file stays)")
    window_help = {"max_seq_length": "tokens a window holds; unset: {}, or the encoder's positions where fewer",
                   "doc_stride": "tokens of overlap between a context's windows; unset: {}, or half of what a shorter "
                                 "window holds besides the question",
                   "max_query_length": "a question's tokens kept; unset: {}, or a quarter of a shorter window"}
    least = {"doc_stride": 0}  # windows that do not overlap, as train takes them
    for option, default in QA_WINDOW_DEFAULTS.items():
        convert.add_argument(f"--{option.replace('_', '-')}", type=functools.partial(_count, least=least.get(option, 1)),
                             help=window_help[option].format(default))
    convert.set_defaults(func=cmd_convert)


def _add_serve_command(add_command) -> None:
    """serve: answers over HTTP, concurrent requests batched into one forward pass (bio_mrc.serving)."""
    serve = add_command("serve", help="answer questions over HTTP: POST /answer, GET /health, OpenAPI page at /docs "
                                      "(needs pip install bio_mrc[serve])")
    serve.add_argument("--model", dest="model_option", metavar="MODEL",
                       help="a saved bio_mrc model folder, an ONNX export of one, or a hub id (or give it as MODEL)")
    serve.add_argument("model", nargs="?", metavar="MODEL", help="the same as --model")
    _add_precision_option(serve)
    add_config_options(serve, ServeConfig)
    serve.set_defaults(func=cmd_serve)


# The options naming a file or folder: a leading ~ is the home folder in each, as the shell reads it (which it does not
# in --output=~/x or a quoted "~/x"), so a file read is found and an output never goes to a folder named ~ here.
PATH_OPTIONS = ("model", "data", "train", "eval", "predictions", "na_probs", "config", "data_dir", "cells_from",
                "context_file", "output", "output_dir", "html", "plot_dir", "encoder", "init_from")


def _expand_home(args: argparse.Namespace) -> None:
    for name in PATH_OPTIONS:
        value = getattr(args, name, None)
        if isinstance(value, str):
            setattr(args, name, home_expanded(value))
        elif isinstance(value, list):
            setattr(args, name, [home_expanded(v) for v in value])


def main(argv: Sequence[str] | None = None) -> int:
    with _escapes_what_stdout_cannot_hold():  # --help too: several commands' help holds β, Σ or ±
        return _run(argv)


def _run(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    _expand_home(args)
    try:
        check_launcher_environment()  # a WORLD_SIZE or RANK that is no number, before any work
        if getattr(args, "device", "auto") != "auto":  # an unavailable device, before any work
            args.check_device(args.device)
        with _terminate_as_exit(), _bars_for_a_log(sys.stderr), _input_warnings_as_lines():
            code = args.func(args)
        sys.stdout.flush()  # a reader that stopped early (| head) is found here, not at exit
        return code
    except (BioMrcError, FileNotFoundError) as err:
        print(f"error: {printable_line(err)}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return _reader_gone()
    except OSError as err:
        if err.filename is None:  # not about a path the user gave
            raise
        print(f"error: {printable_line(_path_error(err))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C: the command's clean-ups have run on the way out; a traceback would say nothing more
        _close_open_bars()
        print("interrupted", file=sys.stderr)
        return 130
    except Terminated:  # SIGTERM: the same line as Ctrl-C, and the status of a process the signal ended
        _close_open_bars()
        print("interrupted", file=sys.stderr)
        raise


def _path_error(err: OSError) -> str:
    """A path the system would not open (no permission, a loop of links, a name too long) as one line naming it."""
    name = os.fsdecode(err.filename) if isinstance(err.filename, (str, bytes, os.PathLike)) else str(err.filename)
    shown = name if len(name) <= 300 else name[:300] + "..."
    hint = "; check its permissions" if isinstance(err, PermissionError) else ""
    return f"cannot open it: {err.strerror or err}{hint} (in {shown})"


JSON_ESCAPES = "bio_mrc-json-escapes"
PYTHON_STDOUT_ERRORS = ("strict", "surrogateescape")  # what Python gives standard output unless PYTHONIOENCODING names one


def _json_escapes(error: UnicodeError) -> tuple[str, int]:
    """The codec error handler of :func:`_escapes_what_stdout_cannot_hold`: each character the encoding lacks as JSON's
    ``\\u00eb`` (a character past U+FFFF as its UTF-16 pair, as ``json.dumps`` writes it)."""
    if not isinstance(error, UnicodeEncodeError):
        raise error
    return "".join(_json_escape(char) for char in error.object[error.start:error.end]), error.end


def _json_escape(char: str) -> str:
    code = ord(char)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


codecs.register_error(JSON_ESCAPES, _json_escapes)


@contextlib.contextmanager
def _escapes_what_stdout_cannot_hold() -> Iterator[None]:
    """A standard output whose encoding lacks a character the command prints (``PYTHONIOENCODING=ascii``, a Latin-1
    locale) writes it as JSON's ``\\u00eb`` rather than ending the command in a ``UnicodeEncodeError`` traceback after
    the work is done: what the commands print there is JSON (an answer's letters stay the same JSON value) or
    ``compare``'s table. An error handler the caller chose (``PYTHONIOENCODING=ascii:replace``) stays; the stream's own
    is back afterwards. Python's own choices are replaced: ``strict``, and ``surrogateescape`` in the C locale."""
    stream = sys.stdout
    errors = getattr(stream, "errors", None)
    if errors not in PYTHON_STDOUT_ERRORS or not hasattr(stream, "reconfigure"):
        yield
        return
    stream.reconfigure(errors=JSON_ESCAPES)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError, OSError):  # a stream closed, or a reader gone (| head), by now
            stream.reconfigure(errors=errors)


@contextlib.contextmanager
def _input_warnings_as_lines() -> Iterator[None]:
    """A warning about the user's input (``InputWarning``: a model's unused tuned setting, training questions whose
    answer no window holds) as one ``warning:`` line on stderr, as the command's other warnings are, not Python's two
    lines naming the package's source; any other warning as Python shows it."""
    from .errors import InputWarning

    with warnings.catch_warnings():
        shown = warnings.showwarning

        def show(message, category, filename, lineno, file=None, line=None):
            if issubclass(category, InputWarning):
                print(printable_line(f"warning: {message}"), file=sys.stderr)
            else:
                shown(message, category, filename, lineno, file, line)

        warnings.showwarning = show
        yield


@contextlib.contextmanager
def _bars_for_a_log(stream) -> Iterator[None]:
    """Progress bars on a standard error that is no terminal (a log file, a pipe) redraw at most every
    ``LOGGED_BAR_SECONDS``, not ten times a second: each redraw is a carriage return and a line that a terminal
    overwrites and a file keeps, thousands of them over a long training run. tqdm reads ``TQDM_MININTERVAL`` when it
    is imported, and a value of the user's stays; a tqdm imported already (the package imports transformers, which imports
    it) takes the interval as its default keyword (:func:`_tqdm_defaults`)."""
    isatty = getattr(stream, "isatty", None)
    if (isatty is not None and isatty()) or "TQDM_MININTERVAL" in os.environ:
        yield
        return
    os.environ["TQDM_MININTERVAL"] = str(LOGGED_BAR_SECONDS)
    defaults = _tqdm_defaults()
    before = dict(defaults)
    defaults["mininterval"] = float(LOGGED_BAR_SECONDS)
    try:
        yield
    finally:
        os.environ.pop("TQDM_MININTERVAL", None)
        defaults.clear()
        defaults.update(before)


def _tqdm_defaults() -> dict[str, Any]:
    """The default keywords of every tqdm bar made from now on: the ``TQDM_*`` variables tqdm read when it was imported
    (its ``__init__`` is a ``functools.partialmethod`` of them); an empty dict to no purpose where tqdm is not imported
    yet (it reads the variables then) or keeps them otherwise."""
    module = sys.modules.get("tqdm.std")
    init = vars(getattr(module, "tqdm", object)).get("__init__")
    return init.keywords if isinstance(init, functools.partialmethod) else {}


class Terminated(SystemExit):
    """What SIGTERM raises in a command: SystemExit with the status of a process the signal ended (143)."""


@contextlib.contextmanager
def _terminate_as_exit() -> Iterator[None]:
    """SIGTERM (``kill``, a scheduler's stop) ends the command as Ctrl-C does, by an exception, so that its cleanups
    run: no temporary folder or half-written file is left behind. Both signals are taken by ``_stop_on_signal``, which
    holds one that lands in a finalizer until it has returned. A signal the caller ignores or handles itself stays
    so; the handlers before are back afterwards (``main`` may be called in a longer process)."""
    taken = _signals_to_take()
    for signum in taken:
        signal.signal(signum, _stop_on_signal)
    try:
        yield
        _DEFERRED.deliver()  # one held while a finalizer ran in the command's last moments
    finally:
        _DEFERRED.cancel()
        for signum, previous in taken.items():
            signal.signal(signum, previous if previous is not None else signal.SIG_DFL)


def _signals_to_take() -> dict[int, object]:
    """SIGTERM unless ignored, SIGINT while Python's own handler has it: each with the handler it had."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    previous = {signal.SIGTERM: signal.getsignal(signal.SIGTERM), signal.SIGINT: signal.getsignal(signal.SIGINT)}
    return {signum: handler for signum, handler in previous.items()
            if handler != signal.SIG_IGN and (signum != signal.SIGINT or handler is signal.default_int_handler)}


FINALIZER_RETRY_SECONDS = 0.05


def _stop_on_signal(signum: int, frame: object) -> None:
    """Raise KeyboardInterrupt for SIGINT, Terminated for SIGTERM. Inside a finalizer (a ``__del__`` that garbage
    collection runs, such as a dataset's) Python would print the exception as "ignored" and carry on: the command
    went on to exit 0 with a traceback. There the signal is sent again once the finalizer has had time to return
    (or raised when the command ends first)."""
    if _in_finalizer(frame):
        _DEFERRED.defer(signum)
        return
    _DEFERRED.cancel()
    raise _stop_for(signum)


def _stop_for(signum: int) -> BaseException:
    return KeyboardInterrupt() if signum == signal.SIGINT else Terminated(128 + signum)


class _DeferredSignal:
    """A signal that landed in a finalizer: sent again shortly by a timer, or raised by the command's end."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self.timer: threading.Timer | None = None

    def defer(self, signum: int) -> None:
        self.cancel()
        self.signum = signum
        self.timer = threading.Timer(FINALIZER_RETRY_SECONDS, signal.raise_signal, (signum,))
        self.timer.daemon = True
        self.timer.start()

    def cancel(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
        self.signum, self.timer = None, None

    def deliver(self) -> None:
        signum = self.signum
        self.cancel()
        if signum is not None:
            raise _stop_for(signum)


_DEFERRED = _DeferredSignal()


def _in_finalizer(frame) -> bool:
    while frame is not None:
        if frame.f_code.co_name == "__del__":
            return True
        frame = frame.f_back
    return False


def _close_open_bars() -> None:
    """Close the progress bars a stopped command left open (Trainer's training bar is closed only when training ends),
    so that ``interrupted`` is a line of its own and the last one: written while a bar is open, it lands on the bar's
    line, and the bar, closed as the process ends, draws itself again below it."""
    module = sys.modules.get("tqdm.std")
    for bar in list(getattr(getattr(module, "tqdm", None), "_instances", ())):
        with contextlib.suppress(Exception):  # a bar whose stream is gone is no reason for a traceback now
            bar.close()


def _reader_gone() -> int:
    """What a Unix tool does when the reader of its output goes away (``| head``): stop quietly, with the
    status of a process ended by SIGPIPE. Standard output is pointed at /dev/null so that Python's final
    flush finds no broken pipe to report."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return 128 + 13


if __name__ == "__main__":
    raise SystemExit(main())
