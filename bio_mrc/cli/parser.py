"""The ``bio-mrc`` argument parser: every command's options, from the config dataclasses where there is one."""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable, Collection
from dataclasses import dataclass

from .. import __version__, registry
from ..argument_parser import RUN_QA_NOTE, CommandLineParser, EveryUse
from ..config_options import add_config_options, number_option
from ..decoding.config import DecodeConfig
from ..harness.config import PRESETS
from ..metrics.bootstrap_settings import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED
from ..model_defaults import QA_WINDOWS as QA_WINDOW_DEFAULTS
from ..inference.defaults import (DEFAULT_CHUNK_SIZE, GPU_INFERENCE_BATCH_SIZE,
                                 INFERENCE_BATCH_SIZE, MIN_CALIBRATION_QUESTIONS)
from ..serving.config import ServeConfig
from ..training.config import DEFAULT_CHECKPOINT_STEPS, TrainConfig
from .answer_commands import cmd_extract, cmd_predict, cmd_serve
from .export_commands import EXPORT_FORMATS, cmd_convert, cmd_export
from .freed_blocks import reuses_freed_blocks
from .options import (DefaultsHelpFormatter, AUTO_HELP, DATA_FORMS, DATA_HELP, DECODE_NOT_OPTIONS, MODEL_HELP, add_data_options, add_device_option,
                      add_revision_option,
                      add_network_options, add_precision_option, count_option, seed_option)
from .score_commands import cmd_compare, cmd_evaluate
from .train_command import cmd_train
from .torch_threads import runs_a_model
from .tune_command import cmd_tune

_DESCRIPTION = ("bio-mrc: extractive question answering with a BIO tagging head and a start/end span head on one "
                "encoder: train a model, answer questions with it, score, tune, compare, export and serve it.")


@dataclass(frozen=True)
class Command:
    """One ``bio-mrc`` command: the line ``bio-mrc --help`` gives it and what adds its options (and its ``func``)."""

    help: str
    add_options: Callable[[argparse.ArgumentParser], None]


def build_parser(commands: Collection[str] | None = None) -> CommandLineParser:
    """The parser of every command in :data:`COMMANDS`; with ``commands``, every command named (the top level's
    ``--help`` lists them all) but only those given options (:func:`bio_mrc.cli.main` gives the one a run names its
    options, not every command's few hundred)."""
    parser = CommandLineParser(prog="bio-mrc", description=_DESCRIPTION, epilog=RUN_QA_NOTE,
                               every_command=None if commands is None else build_parser)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, command in COMMANDS.items():
        # Every option's help ends with its real default, read from the parser (so help and defaults cannot drift).
        sub.add_parser(name, help=command.help, formatter_class=DefaultsHelpFormatter)
    for name in COMMANDS if commands is None else commands:
        add_command_options(parser, name)
    return parser


def add_command_options(parser: CommandLineParser, command: str) -> None:
    """Give ``command``'s subparser of a :func:`build_parser` parser its options."""
    COMMANDS[command].add_options(parser.command_parsers()[command])


def _train_options(train: argparse.ArgumentParser) -> None:
    train.add_argument("--train", required=True, help=DATA_HELP)
    train.add_argument("--limit", type=count_option, help="train on the first N questions of --train (default: all)")
    train.add_argument("--eval", help="held-out questions scored (official F1 of every decoding) whenever the training "
                                      "args' eval_strategy asks, e.g. --training-args '{\"eval_strategy\": \"steps\", "
                                      "\"eval_steps\": 200}'; any form --train takes")
    train.add_argument("--output-dir", required=True, help="the folder to save the model in (new or empty; --overwrite, --resume)")
    train.add_argument("--resume", action="store_true",
                       help="continue an interrupted run from its last checkpoint in OUTPUT_DIR/checkpoints (same options and data)")
    train.add_argument("--checkpoint-steps", type=count_option, default=DEFAULT_CHECKPOINT_STEPS, help="optimizer steps between checkpoints")
    train.add_argument("--overwrite", action="store_true", help="replace a finished model, a model no training of OUTPUT_DIR "
                       "left, or the files of a folder that holds no bio_mrc model, in OUTPUT_DIR")
    add_config_options(train, TrainConfig)
    add_device_option(train, pin=True)
    add_data_options(train)
    add_network_options(train)
    train.set_defaults(func=cmd_train)
    reuses_freed_blocks(train)


def _predict_options(predict: argparse.ArgumentParser) -> None:
    predict.add_argument("--model", required=True, help=MODEL_HELP)
    add_revision_option(predict)
    predict.add_argument("--data", required=True, help=DATA_HELP)
    predict.add_argument("--limit", type=count_option, help="answer the first N questions of --data (default: all)")
    predict.add_argument("--decoding", choices=registry.decoding_choices(), nargs="+", action=EveryUse, default=[registry.AUTO_DECODING],
                         help=f"one or several; {AUTO_HELP}")
    predict.add_argument("--output", required=True,
                         help="the official {id: answer} file; PREDS.answers.jsonl (one line per question and decoding, written as "
                              "PREDS.answers.partial.jsonl as the answers finish and moved in at the end), PREDS.nbest.json and "
                              "PREDS.na_probs.json beside it, listed in PREDS.answers.files.json (a rerun removes the earlier "
                              "run's listed files it does not write); "
                              "- writes the answer lines to standard output and no file")
    predict.add_argument("--batch-size", type=count_option, default=None,
                         help=f"windows per forward batch (default: {INFERENCE_BATCH_SIZE} on a CPU, {GPU_INFERENCE_BATCH_SIZE} on a GPU)")
    predict.add_argument("--chunk-size", type=count_option, default=DEFAULT_CHUNK_SIZE,
                         help="questions read, run and decoded at a time (memory grows with it, not with the file)")
    predict.add_argument("--resume", action="store_true",
                         help="continue an interrupted run: skip the questions PREDS.answers.partial.jsonl answers (same options and data)")
    add_precision_option(predict)
    add_config_options(predict, DecodeConfig, exclude=("require_answer",))
    add_data_options(predict)
    predict.set_defaults(func=cmd_predict)
    reuses_freed_blocks(predict)


def _evaluate_options(evaluate: argparse.ArgumentParser) -> None:
    evaluate.add_argument("--data", required=True, help=f"{DATA_HELP}; with --metric multispan, a MultiSpanQA JSON file")
    evaluate.add_argument("--predictions", required=True,
                          help="the official {id: answer} file (predict --output), or {id: [span texts]} for multi-span scoring; "
                               "or Hugging Face evaluate's list of {id, prediction_text[, no_answer_probability]}, or JSON "
                               "Lines of such records (answer or prediction for prediction_text); gzip-compressed too")
    evaluate.add_argument("--na-probs", help="{id: no-answer probability} (predict's PREDS.na_probs.json; gzip-compressed too): "
                                             "adds best_exact and best_f1 on SQuAD 2.0 questions")
    evaluate.add_argument("--limit", type=count_option, help="score the first N questions of --data, as predict --limit answers them "
                                                                  "(default: all)")
    evaluate.add_argument("--only-predicted", action="store_true",
                          help="score only the questions the predictions file answers (a subset, stated in the output)")
    evaluate.add_argument("--metric", choices=registry.scorers(),
                          help="default: the data's own (multispan for MultiSpanQA's layout, else squad)")
    evaluate.add_argument("--strict", action="store_true",
                          help="a question without a prediction is an error, not a wrong answer, and so is an id "
                               "that is not a question of the data (else ignored with a warning, as the official SQuAD scripts; "
                               "the multi-span metrics, like MultiSpanQA's official script, always refuse both)")
    evaluate.add_argument("--baseline", help="a second predictions file on the same questions, in the same layout (the code "
                                             "or model before a change): both files' metrics and the paired difference "
                                             "--predictions minus --baseline of each, with its 95%% bootstrap interval, and the "
                                             "answers changed, better and worse")
    evaluate.add_argument("--resamples", type=count_option, metavar="N",
                          help="bootstrap resamples of the questions for --baseline's intervals, drawn as compare draws them "
                               f"(with --baseline; default: {BOOTSTRAP_RESAMPLES})")
    evaluate.add_argument("--seed", type=seed_option,
                          help="the random seed the bootstrap resamples of --baseline's intervals are drawn from "
                               f"(with --baseline; default: {BOOTSTRAP_SEED}, as compare's)")
    add_data_options(evaluate)
    evaluate.set_defaults(func=cmd_evaluate)


def _tune_options(tune: argparse.ArgumentParser) -> None:
    tune.add_argument("--model", required=True, help=MODEL_HELP)
    add_revision_option(tune)
    tune.add_argument("--data", required=True, help=f"held-out questions, used neither for training nor for the final evaluation: {DATA_FORMS}")
    tune.add_argument("--limit", type=count_option, help="tune on the first N questions of --data (default: all)")
    tune.add_argument("--decoding", choices=registry.decoding_choices(), nargs="+", action=EveryUse,
                      help="default: every decoding the model has; auto: the one predict and extract use by default, the best "
                           "the model's heads allow (joint with both heads)")
    tune.add_argument("--batch-size", type=count_option, default=None,
                         help=f"windows per forward batch (default: {INFERENCE_BATCH_SIZE} on a CPU, {GPU_INFERENCE_BATCH_SIZE} on a GPU)")
    add_precision_option(tune)
    tune.add_argument("--plot-dir", help="write threshold_<decoding>.png (F1 against the no-answer threshold; SQuAD 2.0 questions)")
    tune.add_argument("--output-dir", help="a new folder: copy the model there and save the tuned settings in the copy "
                                           "(default: in the model's own config.json)")
    tune.add_argument("--min-calibration-questions", type=count_option, default=MIN_CALIBRATION_QUESTIONS,
                      help="fewer tuning questions than this are refused for fitting calibrators")
    tune.add_argument("--metric", choices=registry.scorers(),
                      help="the official scorer to tune by (default: the data's own: multispan for MultiSpanQA's layout, else squad)")
    tune.add_argument("--no-calibration", action="store_true",
                      help="tune the length prior and thresholds only; the saved calibrators stay as they are")
    add_config_options(tune, DecodeConfig, exclude=DECODE_NOT_OPTIONS)
    add_data_options(tune)
    tune.set_defaults(func=cmd_tune)
    reuses_freed_blocks(tune)


def _compare_options(compare: argparse.ArgumentParser) -> None:
    """compare: the harness."""
    compare.add_argument("--config", default="quick", help=f"a JSON config file (--print-schema prints every key it takes) "
                                                          f"or a preset: {', '.join(PRESETS)}")
    compare.add_argument("--data-dir", help="the folder a config's relative data paths are read under (squad-v1.1/, "
                         "squad-v2.0/), needed only for those (default: $BIO_MRC_DATA or ../shared/data)")
    compare.add_argument("--output-dir", help="a new or empty folder, or an earlier comparison's (resumed); "
                         "default: runs/<config name>")
    compare.add_argument("--seeds", type=int, nargs="+", action=EveryUse, help="override the config's seeds; cells become mean ± sd")
    compare.add_argument("--encoder", help="override every run's encoder (a local folder or a Hugging Face hub id)")
    add_device_option(compare, pin=True)
    compare.add_argument("--print-schema", action="store_true",
                         help="print the JSON Schema of comparison configs (every key, type and range) and exit")
    compare.add_argument("--runs", nargs="+", action=EveryUse, metavar="NAME", help="only these runs of the config (e.g. one per sitting or machine)")
    compare.add_argument("--train-only", action="store_true",
                         help="train (or resume) every model and score nothing; a later compare scores them")
    compare.add_argument("--cells-from", metavar="REPORT",
                         help="an earlier report.json (or .json.xz, .json.gz) of this comparison: the models it holds are neither "
                              "trained nor scored, their cells are read from it (a comparison composed over sittings or machines)")
    compare.set_defaults(func=cmd_compare)
    reuses_freed_blocks(compare)


def _extract_options(extract: argparse.ArgumentParser) -> None:
    """extract: one question about one text, or across several."""
    extract.add_argument("--model", required=True, help=MODEL_HELP)
    add_revision_option(extract)
    add_precision_option(extract)
    extract.add_argument("--question", required=True, help="the question, as text")
    extract.add_argument("--context-file", nargs="+", action=EveryUse, metavar="FILE",
                         help="UTF-8 text file(s); several: the answers are ranked across them, each naming its file "
                              "(this or --context, one of the two)")
    extract.add_argument("--context", nargs="+", action=EveryUse, metavar="TEXT", help="the text(s) themselves, instead of --context-file")
    extract.add_argument("--top-k", type=count_option, help="how many answers, best first (across every document; with --multi-span over "
                         "several documents every span, else default: 1)")
    extract.add_argument("--decoding", choices=registry.decoding_choices(), default=registry.AUTO_DECODING, help=AUTO_HELP)
    extract.add_argument("--html", metavar="OUT.html",
                         help="also write a page that shows the question as report.html's browser does: every decoding's best "
                              "span highlighted in the context (one span each, with --multi-span too), its confidence and "
                              "probability, the BIO head's per-word P(B) and P(I)")
    add_config_options(extract, DecodeConfig, exclude=("require_answer",))
    extract.set_defaults(func=cmd_extract)


def _export_options(export: argparse.ArgumentParser) -> None:
    """export: a saved model as a self-describing ONNX folder that predict, extract and AnswerExtractor run.
    ``--opset`` and ``--atol`` are unset by default (export_onnx's defaults apply): their help names
    bio_mrc.inference.export_options' DEFAULT_OPSET and TOLERANCE (tests/test_onnx.py ties them)."""
    export.add_argument("--model", required=True, help="a saved bio_mrc model folder, transformers' extractive QA "
                                                       "model (...ForQuestionAnswering), or a hub id of one")
    add_revision_option(export)
    export.add_argument("--output", required=True, help="the folder to write: model.onnx, tokenizer, config.json, "
                                                        "bio_mrc_export.json (onnx); config.json, weights, tokenizer (transformers)")
    export.add_argument("--format", choices=tuple(EXPORT_FORMATS), default="onnx",
                        help="onnx: the whole model for ONNX Runtime; transformers: the encoder and span head as "
                             "transformers' extractive QA model (no BIO head, windows or tuned settings)")
    export.add_argument("--opset", type=int, help="ONNX opset version (onnx) (default: 18)")
    export.add_argument("--atol", type=number_option, help="largest logit difference from PyTorch allowed on the random windows "
                                                   "checked at export (onnx) (default: 0.0001)")
    export.add_argument("--overwrite", action="store_true", help="replace the files of a folder that is not empty")
    export.set_defaults(func=cmd_export)
    runs_a_model(export)  # on the CPU: the export is checked against PyTorch's outputs


def _convert_options(convert: argparse.ArgumentParser) -> None:
    """convert: transformers' extractive QA model as a bio_mrc model with a span head."""
    convert.add_argument("--model", required=True, help="the ...ForQuestionAnswering model: a folder or a hub id")
    add_revision_option(convert)
    convert.add_argument("--output", required=True, help="a new or empty folder for the bio_mrc model")
    convert.add_argument("--overwrite", action="store_true", help="replace the model in a folder that is not empty "
                                                                  "(its model files; any other file stays)")
    window_help = {"max_seq_length": "tokens a window holds; unset: {}, or the encoder's positions where fewer",
                   "doc_stride": "tokens of overlap between a context's windows; unset: {}, or half of what a shorter "
                                 "window holds besides the question",
                   "max_query_length": "a question's tokens kept; unset: {}, or a quarter of a shorter window"}
    least = {"doc_stride": 0}  # windows that do not overlap, as train takes them
    for option, default in QA_WINDOW_DEFAULTS.items():
        convert.add_argument(f"--{option.replace('_', '-')}", type=functools.partial(count_option, least=least.get(option, 1)),
                             help=window_help[option].format(default))
    convert.set_defaults(func=cmd_convert)
    runs_a_model(convert)


def _serve_options(serve: argparse.ArgumentParser) -> None:
    """serve: answers over HTTP, concurrent requests batched into one forward pass (bio_mrc.serving)."""
    serve.add_argument("--model", dest="model_option", metavar="MODEL",
                       help="a saved bio_mrc model folder, an ONNX export of one, or a hub id (or give it as MODEL)")
    serve.add_argument("model", nargs="?", metavar="MODEL", help="the same as --model")
    add_revision_option(serve)
    add_precision_option(serve)
    add_config_options(serve, ServeConfig)
    serve.set_defaults(func=cmd_serve)


# The commands, in the order bio-mrc --help lists them.
COMMANDS: dict[str, Command] = {
    "train": Command("fine-tune a model on labelled questions (SQuAD JSON, JSON Lines, CSV, ...)", _train_options),
    "predict": Command("write official-format predictions (+ n-best and na_prob files)", _predict_options),
    "evaluate": Command("official SQuAD v1.1/v2.0 or MultiSpanQA metrics", _evaluate_options),
    "tune": Command("tune the BIO span-length prior, no-answer thresholds (SQuAD 2.0 data), span-count thresholds "
                    "(multi-span data) and calibrators on held-out questions and save them with the model", _tune_options),
    "compare": Command("train/reuse runs, evaluate every decoding on the same questions, write a report", _compare_options),
    "extract": Command("answer one question about a text, or across several texts, ranked", _extract_options),
    "export": Command("export a model to ONNX (needs pip install 'bio_mrc[onnx]'; predict/extract/AnswerExtractor run the "
                      "folder with ONNX Runtime), or its span head as transformers' ...ForQuestionAnswering", _export_options),
    "convert": Command("save transformers' extractive QA model (BertForQuestionAnswering and its kin; a folder or hub id) "
                       "as a bio_mrc model with a span head, for tune and the rest", _convert_options),
    "serve": Command("answer questions over HTTP: POST /answer, GET /health, OpenAPI page at /docs "
                     "(needs pip install 'bio_mrc[serve]')", _serve_options),
}
