"""Options shared by several commands, and what they become: configs, decoding settings, windows, counts, paths."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

from .. import registry
from ..argument_parser import EveryUse
from ..arguments import MAX_COUNT
from ..config_options import check_options, config_from_args, options_given
from ..config_schema import SEED_RANGE
from ..errors import ConfigError, argument
from ..io import home_expanded, printable_line
from ..decoding.config import DecodeConfig
from ..precision import DEFAULT_PRECISION, PRECISIONS, pin_process_device, resolve_device
from ..training.config import TrainConfig
from .torch_threads import runs_a_model

# Options from the config dataclasses' fields (help and choices in their metadata), so they cannot drift apart.
# require_answer is the command's to set: tune never, predict and extract always (abstaining is the saved threshold's decision).
DECODE_NOT_OPTIONS = ("require_answer", "multi_span")  # tune's; extract and predict take --multi-span


def train_config(args: argparse.Namespace) -> TrainConfig:
    check_options(TrainConfig, args)  # each option's own range first: fitting the windows may load torch, and says so
    return config_from_args(TrainConfig, args, **_fitted_windows(args))


def _fitted_windows(args: argparse.Namespace) -> dict[str, int]:
    """The window settings train takes when the command line gave not all of them (``fitted_windows``), said in one
    line on stderr."""
    from ..training.run_start import WINDOW_FIELDS, fitted_windows  # torch loads only for an encoder of fewer positions

    given = options_given(args) & set(WINDOW_FIELDS)
    windows = {name: getattr(args, name) for name in WINDOW_FIELDS}
    changed, positions = fitted_windows(args.encoder, getattr(args, "init_from", None), windows, given,
                                        getattr(args, "revision", None))
    if changed:
        why = (f"encoder {args.encoder or 'default'} holds {positions} positions, fewer than the default window of "
               f"{args.max_seq_length} tokens" if "max_seq_length" in changed else
               f"the default doc stride and question length leave no new context in a window of "
               f"{changed.get('max_seq_length', args.max_seq_length)} tokens")
        chosen = " ".join(f"--{name.replace('_', '-')} {changed.get(name, windows[name])}" for name in WINDOW_FIELDS
                          if name not in given)
        print(printable_line(f"note: {why}: training with {chosen} (give them to choose others)"), file=sys.stderr)
    return changed


def decode_config(args: argparse.Namespace, require_answer: bool = True) -> DecodeConfig:
    return config_from_args(DecodeConfig, args, require_answer=require_answer)


def add_data_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--fix-offsets", action="store_true",
                        help="relocate an answer_start that misses its text to the nearest occurrence of the text, "
                             "a whole word before a piece of a longer one, and give an answer without one the place of "
                             "its text where the text occurs exactly once in the context (reported)")
    parser.add_argument("--skip-invalid", action="store_true",
                        help="leave out bad questions instead of stopping at the first one (each is reported)")
    parser.add_argument("--format", choices=registry.data_formats(),
                        help="what the questions are, as a comparison config's \"format\" says (default: detected: multispanqa "
                             "for MultiSpanQA's layout, drop, quoref and mash-qa for theirs, each answer's spans its parts, "
                             "else squad, whose listed answers are alternatives); answer-parts: any "
                             "SQuAD-shaped form whose listed answers are the parts of one answer, scored with MultiSpanQA's "
                             "metrics (your own multi-span questions)")


# The forms load_squad reads (bio_mrc/data/formats.py), for every --data and --train.
DATA_FORMS = ("official SQuAD JSON; JSON Lines with the Hugging Face SQuAD columns "
              "(.jsonl, .jsonl.gz, or by content); CSV, TSV or Parquet with those columns; an MRQA shared-task file "
              "(.jsonl.gz); MultiSpanQA, DROP, Quoref or MASH-QA JSON; a folder saved with datasets' save_to_disk (FOLDER:SPLIT picks "
              "a DatasetDict's split); or a hub dataset id with a split, e.g. rajpurkar/squad:validation (needs a network)")
DATA_HELP = f"questions: {DATA_FORMS}"


def add_network_options(parser: argparse.ArgumentParser) -> None:
    """The only way to send a run off the machine: no config file turns these on."""
    parser.add_argument("--push-to-hub", action="store_true",
                        help="publish to the Hugging Face Hub as Trainer does (needs `hf auth login` or HF_TOKEN)")
    parser.add_argument("--hub-model-id", metavar="ID", help="the hub repository to push to (with --push-to-hub; "
                                                             "default: OUTPUT_DIR's folder name in your namespace)")
    parser.add_argument("--hub-strategy", choices=("end", "every_save", "checkpoint", "all_checkpoints"),
                        help="when Trainer pushes (with --push-to-hub) (default: every_save, Trainer's)")
    parser.add_argument("--hub-private-repo", action="store_true", help="make a new hub repository private (with --push-to-hub)")
    parser.add_argument("--report-to", nargs="+", action=EveryUse, metavar="TRACKER",
                        help="send logs to these trackers (wandb, mlflow, comet_ml, ...); a config's training_args take only "
                             "local ones (tensorboard)")


def network_args(args: argparse.Namespace) -> dict[str, object]:
    values = {"push_to_hub": args.push_to_hub or None, "hub_model_id": args.hub_model_id, "hub_strategy": args.hub_strategy,
              "hub_private_repo": args.hub_private_repo or None, "report_to": args.report_to}
    return {name: value for name, value in values.items() if value is not None}


class DefaultsHelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Each option's help ends with its default as it is typed (``0.01 0.02 0.97``, not a Python tuple), except where
    the option is required, or unset by default and its help says what that means (``--batch-size``: 16 on a CPU, 128
    on a GPU): argparse's ``(default: None)`` would contradict it."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.required or (action.default is None and "default:" in (action.help or "")):
            return action.help
        if isinstance(action.default, (list, tuple)) or action.default == "":
            shown = " ".join(map(str, action.default)) if action.default != "" else "empty"
            return f"{action.help} (default: {shown})"
        return super()._get_help_string(action)


def add_precision_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--precision", choices=PRECISIONS, default=DEFAULT_PRECISION,
                        help="of the forward pass: bf16 = bfloat16 autocast; auto = the faster of the two on this machine "
                             "(measured once and cached; fp32 where bf16 is not native)")
    add_device_option(parser)


def add_device_option(parser: argparse.ArgumentParser, pin: bool = False) -> None:
    """``--device``, checked in main before the command's work; ``pin``: the process sees that device alone
    (for transformers' Trainer, which picks its own)."""
    parser.add_argument("--device", default="auto", metavar="{auto,cpu,cuda,cuda:N,mps}",
                        help="where the model runs: auto = the GPU when there is one, else the CPU")
    parser.set_defaults(check_device=pin_process_device if pin else resolve_device)
    runs_a_model(parser)


def seed_option(text: str) -> int:
    """A random seed numpy takes: a whole number from 0 to 2**32 - 1."""
    low, high = SEED_RANGE["minimum"], SEED_RANGE["maximum"]
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or not low <= value <= high:
        raise argparse.ArgumentTypeError(f"a whole number from {low} to {high:,}, not {text if value is not None else repr(text)}")
    return value


def count_option(text: str, least: int = 1) -> int:
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


MODEL_HELP = "a saved bio_mrc model folder, an ONNX export of one, or a Hugging Face hub id (read from the hub cache first)"
REVISION_HELP = ("the branch, tag or commit hash (a short one where the cache holds its commit) of --model's hub id to read "
                 "(default: its default branch); refused with a local folder")


AUTO_HELP = "auto: the best decoding the model's heads allow (joint with both heads, for one answer or several)"


def add_revision_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--revision", help=REVISION_HELP)


# The options naming a file or folder: a leading ~ is the home folder in each, as the shell reads it (which it does not
# in --output=~/x or a quoted "~/x"), so a file read is found and an output never goes to a folder named ~ here.
PATH_OPTIONS = ("model", "data", "train", "eval", "predictions", "na_probs", "config", "data_dir", "cells_from",
                "context_file", "output", "output_dir", "html", "plot_dir", "encoder", "init_from")


# The optional file options a command reads as left out when empty: an empty value given (an unset shell variable) is
# refused, never taken as no evaluation questions, no page or no earlier report.
OPTIONAL_FILES = ("eval", "html", "na_probs", "baseline", "cells_from")


def check_optional_files(args: argparse.Namespace) -> None:
    for name in OPTIONAL_FILES:
        if getattr(args, name, None) == "":
            raise ConfigError(f"{argument(name)}: an empty path names no file; give one, or leave the option out")


def check_model_names(args: argparse.Namespace) -> None:
    """An empty ``--model`` (an unset shell variable) refused before any work: ``Path("")`` is the current folder."""
    from ..hub import check_name_given

    for name in ("model", "model_option"):  # serve takes its model as --model or as MODEL
        check_name_given(getattr(args, name, None), option="--model")
    check_revision_of_folder(args)


def check_model_at_hand(name: str, revision: str | None, check: Callable[[Path], object] | None = None,
                        what: str = "model folder") -> Path | None:
    """The model a command reads (``name``: a folder or a hub id) refused before torch loads where its loading would
    refuse it: a missing folder; offline, a hub id the Hugging Face cache lacks; and what ``check`` (one of
    :mod:`bio_mrc.model_folder`'s checks, of the folder) finds, in the loading's words. A hub id the loading may still
    download is checked as it loads. Returns the folder at hand (a hub id's cached snapshot), or None."""
    from ..hub import folder_at_hand, named_as_given

    folder = folder_at_hand(name, what, revision)
    if folder is not None and check is not None:
        with named_as_given(name, folder):  # a hub id's snapshot named by the id
            check(folder)
    return folder


def check_starting_point(init_from: str | None, encoder: str | None, revision: str | None) -> None:
    """What training starts from, checked from its files before torch loads: the model ``init_from`` continues, as
    training checks it (its tokenizer is read from its encoder's files, not required), else the folder of ``encoder``
    (a hub id's where the cache has it; the package's default encoder where it resolves)."""
    from ..encoders import is_default_encoder
    from ..model_folder import check_encoder_files, check_model_files

    if init_from:
        check_model_at_hand(init_from, revision, lambda folder: check_model_files(folder, tokenizer_required=False))
    elif not is_default_encoder(encoder):
        check_model_at_hand(encoder, revision, check_encoder_files, what="encoder")


def check_revision_of_folder(args: argparse.Namespace) -> None:
    """``--revision`` with a local folder for the model (train: ``--init-from``, else ``--encoder``) refused before any
    work, as the loader refuses it; a hub id's revision is read, or found missing, when the model loads."""
    from ..encoders import is_default_encoder
    from ..hub import check_revision_given, local_folder

    revision = getattr(args, "revision", None)
    check_revision_given(revision)
    named = [getattr(args, name, None) for name in ("model", "model_option", "init_from")]
    name, what = next(((n, "model folder") for n in named if n), (getattr(args, "encoder", None), "encoder"))
    if what == "encoder" and is_default_encoder(name):  # the package's folder: refused where the encoder resolves
        return
    if revision is not None and isinstance(name, str) and os.path.isdir(os.path.expanduser(name)):
        local_folder(name, what, revision)


def expand_home(args: argparse.Namespace) -> None:
    _map_options(args, PATH_OPTIONS, home_expanded)


def _map_options(args: argparse.Namespace, names: Sequence[str], read: Callable[[str], Any]) -> None:
    """The options ``names`` of ``args`` given (a text or a list of texts) replaced by what ``read`` makes of each text."""
    for name in names:
        value = getattr(args, name, None)
        if isinstance(value, str):
            setattr(args, name, read(value))
        elif isinstance(value, list):
            setattr(args, name, [read(v) for v in value])


# The options whose value is text, not a path: a question, a document's text, JSON of training arguments.
TEXT_OPTIONS = ("question", "context", "training_args")


def text_from_argv(text: str) -> str:
    """An argument as the text it spells in UTF-8, where Python decoded it in a locale of another encoding: under
    ``LC_ALL=C`` with UTF-8 mode off, each byte past ASCII of "Zürich" is a lone surrogate (``Z\\udcc3\\udcbcrich``),
    which the text checks refuse as no character. Bytes that are no UTF-8 stay as they are, for those checks to name."""
    if text.isascii() or not any("\udc80" <= char <= "\udcff" for char in text):
        return text
    try:
        return os.fsencode(text).decode("utf-8")
    except UnicodeError:
        return text


def decode_text_options(args: argparse.Namespace) -> None:
    """:data:`TEXT_OPTIONS` read by :func:`text_from_argv`; paths stay as Python decoded them, the names the system opens."""
    _map_options(args, TEXT_OPTIONS, text_from_argv)


# Keywords of the library's calls that a command's option of another name sets (load_squad's data_format is --format,
# train_model's evaluator --eval, load_config's path_or_preset --config, a stream's decodings --decoding), or that a flag
# sets to one value (tune_model's calibrate=False is --no-calibration).
KEYWORD_OPTIONS = {"data_format": "format", "evaluator": "eval", "calibrate=False": "no_calibration",
                   "path_or_preset": "config", "decodings": "decoding"}


FLAGS = "argument_flags"  # the namespace's argument_flags for its command, for a line printed before the command ends


def argument_flags(parser: argparse.ArgumentParser, command: str | None) -> dict[str, str]:
    """Each keyword of the library's calls -> ``command``'s flag for it, read from the command's own options
    (``na_probs`` -> ``--na-probs``), else another command's (evaluate's advice to predict without ``--multi-span``):
    what an error naming an argument says on this command line."""
    commands = next((action.choices for action in parser._actions if isinstance(action, argparse._SubParsersAction)), {})
    ordered = [*(name for name in commands if name != command), *([command] if command in commands else [])]
    flags = {action.dest: max(action.option_strings, key=len) for name in ordered for action in commands[name]._actions
             if action.option_strings and action.dest != "help"}
    return {**flags, **{keyword: flags[dest] for keyword, dest in KEYWORD_OPTIONS.items() if dest in flags}}


class FlagsWhenRead(Mapping[str, str]):
    """:func:`argument_flags` of the parser ``whole`` returns, every command's options, read the first time a line
    names an argument: a run's parser has its own command's options alone, and most runs name none."""

    def __init__(self, whole: Callable[[], argparse.ArgumentParser], command: str | None) -> None:
        self._whole, self._command, self._flags = whole, command, None

    def _read(self) -> dict[str, str]:
        if self._flags is None:
            self._flags = argument_flags(self._whole(), self._command)
        return self._flags

    def __getitem__(self, keyword: str) -> str:
        return self._read()[keyword]

    def __iter__(self) -> Iterator[str]:
        return iter(self._read())

    def __len__(self) -> int:
        return len(self._read())

    def __reduce__(self) -> tuple[type, tuple[dict[str, str]]]:
        """Copied or pickled, the flags themselves: the parser that reads them neither copies deeply nor pickles."""
        return dict, (dict(self._read()),)
