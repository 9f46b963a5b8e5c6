"""``bio-mrc evaluate`` and ``compare``: official metrics of a predictions file; the comparison harness."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import warnings
from pathlib import Path
from typing import Iterator, Mapping

from ..errors import ConfigError, ModelFormatError, command_line_text
from ..data.sources import default_data_dir
from ..io import check_folder_target, check_library_path, check_outputs_apart, names_a_pattern, printable_line
from ..metrics.bootstrap_settings import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED
from ..plurals import counted, number_form
from .command_data import data_task, load_task_data, requested_task
from .console import json_numbers
from .options import FLAGS, check_starting_point


@contextlib.contextmanager
def _unknown_ids_as_warning_lines(flags: Mapping[str, str]) -> Iterator[None]:
    """Print each ignored-ids warning of the prediction loaders as one ``warning:`` line on stderr, naming the arguments
    it names as the command's ``flags``."""
    from ..data.predictions import UnknownIdsWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UnknownIdsWarning)  # never deduplicated: each file says its own
        yield
    for warning in caught:
        if issubclass(warning.category, UnknownIdsWarning):
            print(f"warning: {printable_line(command_line_text(warning.message, flags))} (--strict makes this an error)", file=sys.stderr)
        else:  # not ours: shown as Python would have
            warnings.showwarning(warning.message, warning.category, warning.filename, warning.lineno)


def cmd_evaluate(args: argparse.Namespace) -> int:
    from ..inference.evaluation import check_prediction_files, scored_evaluation

    if args.baseline is not None:
        return _evaluate_against_baseline(args)
    if args.resamples is not None:  # else ignored without a word: one file has no paired difference to resample
        raise ConfigError(f"--resamples {args.resamples}: the bootstrap resamples of --baseline's paired difference; "
                          "give --baseline OLD to compare --predictions with, or drop --resamples")
    if args.seed is not None:
        raise ConfigError(f"--seed {args.seed}: the seed of the bootstrap resamples of --baseline's paired difference; "
                          "give --baseline OLD to compare --predictions with, or drop --seed")
    check_prediction_files(args.predictions, args.na_probs)
    # The whole file is read even under --limit: an answer to a question past the limit is no unknown id.
    data = load_task_data(args, args.data, None, requested_task(args), needs_gold="bio-mrc evaluate")
    flags = getattr(args, FLAGS, {})

    def note(scored) -> None:  # before the scoring, naming the flags that chose the subset, not the call's keywords
        print(printable_line(f"note: scoring {scored.described(flags)}"), file=sys.stderr)

    with _unknown_ids_as_warning_lines(flags):
        result = scored_evaluation(data, args.predictions, args.na_probs, task=data_task(args, data), limit=args.limit,
                                   only_predicted=args.only_predicted, strict=args.strict, name=args.data, note=note)
    _warn_missing(result, args.predictions)
    print(json.dumps(json_numbers(_with_subset(result, flags)), indent=2))
    return 0


def _with_subset(result, flags: Mapping[str, str]) -> dict:
    """An evaluation's metrics, a subset's ``scored`` entry naming the flags that chose it."""
    subset = result.scored.described(flags)
    return {**result.metrics, **({"scored": {**result.metrics["scored"], "subset": subset}} if subset else {})}


def _warn_missing(result, predictions: str) -> None:
    """One ``warning:`` line for the questions ``predictions`` leaves out, one for those without a no-answer probability."""
    questions, missing, missing_probs = result.questions, result.missing, result.missing_probs
    if missing:
        print(printable_line(f"warning: {len(missing)} of {counted(questions, 'question')} {number_form(len(missing), 'has', 'have')} "
                             f"no prediction in {predictions} "
                             f"(e.g. {missing[0]!r}); they are scored as wrong (--strict makes this an error)"), file=sys.stderr)
    if missing_probs:
        print(printable_line(f"warning: {len(missing_probs)} of {counted(questions, 'question')} {number_form(len(missing_probs), 'has', 'have')} "
                             "no no-answer probability in "
                             f"{result.probs_source} (e.g. {missing_probs[0]!r}); best_exact and best_f1 answer them at every threshold "
                             "(--strict makes this an error)"), file=sys.stderr)


def _evaluate_against_baseline(args: argparse.Namespace) -> int:
    """``evaluate --baseline OLD``: both files' official metrics and the paired difference, new − OLD."""
    from ..inference.paired_evaluation import check_prediction_pair, compare_predictions

    if args.na_probs:  # whose threshold it would tune is unclear: each file's own probabilities go in its records
        raise ConfigError(f"--na-probs: one file's no-answer probabilities, while --baseline {args.baseline} scores two; "
                          "evaluate each file alone for best_exact and best_f1")
    check_prediction_pair(args.predictions, args.baseline)
    flags = getattr(args, FLAGS, {})
    data = load_task_data(args, args.data, None, requested_task(args), needs_gold="bio-mrc evaluate")

    def note(scored) -> None:
        print(printable_line(f"note: scoring {scored.described(flags)}"), file=sys.stderr)

    with _unknown_ids_as_warning_lines(flags):
        result = compare_predictions(data, args.predictions, args.baseline, task=data_task(args, data), limit=args.limit,
                                     only_predicted=args.only_predicted, strict=args.strict, name=args.data,
                                     n_resamples=args.resamples or BOOTSTRAP_RESAMPLES,
                                     seed=BOOTSTRAP_SEED if args.seed is None else args.seed, progress=True, note=note)
    _warn_missing(result.new, args.predictions)
    _warn_missing(result.baseline, args.baseline)
    record = result.to_dict(args.predictions, args.baseline)
    record["predictions"], record["baseline"] = ({"file": name, **_with_subset(side, flags)}
                                                 for name, side in ((args.predictions, result.new), (args.baseline, result.baseline)))
    print(json.dumps(json_numbers(record), indent=2))
    return 0


def _check_starting_points(config, names: list[str]) -> None:
    """Each run's encoder folder (or the model it continues from) where it is at hand, refused before torch loads in the
    words of the comparison's own check once it has (``runs[2].encoder: ...``; ``names``: the config's runs, by which
    they are numbered); a glob ``init_from`` is left to that check."""
    checked = set()
    for run in config.runs:
        train = run.train
        key = "init_from" if train.init_from else "encoder"
        source = (train.init_from, train.revision) if train.init_from else (train.encoder, train.encoder_revision)
        if source in checked or names_a_pattern(train.init_from):
            continue
        checked.add(source)
        try:
            check_starting_point(train.init_from, train.encoder, source[1])
        except (ConfigError, ModelFormatError) as err:
            raise ConfigError(f"runs[{names.index(run.name)}].{key}: {err}") from None


def cmd_compare(args: argparse.Namespace) -> int:
    from ..harness.comparison_folder import check_comparison_folder
    from ..harness.comparison_splits import check_data_dir
    from ..harness.config import PRESETS, load_config

    if args.print_schema:
        from ..harness.config import comparison_schema

        print(json.dumps(comparison_schema(), indent=2))
        return 0
    # An empty --data-dir, --encoder or --output-dir (an unset shell variable) is refused, not read as "not given".
    for option, value in (("--data-dir", args.data_dir), ("--encoder", args.encoder)):
        if value is not None and not value.strip():
            raise ConfigError(f"{option}: an empty path names no folder; give one")
    loaded = load_config(args.config)
    config = loaded.with_overrides(seeds=args.seeds, encoder=args.encoder, runs=args.runs)
    data_dir = Path(args.data_dir) if args.data_dir is not None else default_data_dir()
    check_data_dir(config, data_dir, args.config)  # needed only where a config path is relative to it
    output_dir = check_library_path(check_folder_target(args.output_dir if args.output_dir is not None else Path("runs") / config.name))
    # a preset is no file here; an output inside a run's encoder is refused before the encoder is read
    check_outputs_apart([output_dir], [None if args.config in PRESETS else args.config, data_dir], config.model_folders())
    check_comparison_folder(output_dir)  # a folder of other files (., ~, a project's)
    if args.cells_from is None:  # the runs an earlier report holds are neither trained nor checked
        _check_starting_points(config, [run.name for run in loaded.runs])
    from ..harness.compare import compare, train_models  # each check so far before torch loads
    from ..harness.report import console_table

    if args.train_only:
        for model_dir in train_models(config, data_dir, output_dir, progress=True, cells_from=args.cells_from):
            print(printable_line(model_dir))
        return 0
    results, summary = compare(config, data_dir, output_dir, progress=True, cells_from=args.cells_from)
    print(console_table(results, summary))
    print("\n" + printable_line(f"report: {output_dir / 'report.md'} (also report.html with a question browser, report.json and PNG plots there)"))
    return 0
