"""``bio-mrc evaluate`` and ``compare``: official metrics of a predictions file; the comparison harness."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import warnings
from pathlib import Path
from typing import Iterator

from .. import registry
from ..errors import ConfigError
from ..data.sources import default_data_dir
from ..io import check_folder_target, check_library_path, check_outputs_apart, printable_line
from ..plurals import counted, number_form
from .command_data import data_task, load_task_data, requested_task
from .console import json_numbers


@contextlib.contextmanager
def _unknown_ids_as_warning_lines() -> Iterator[None]:
    """Print each ignored-ids warning of the prediction loaders as one ``warning:`` line on stderr."""
    from ..data.predictions import UnknownIdsWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UnknownIdsWarning)  # never deduplicated: each file says its own
        yield
    for warning in caught:
        if issubclass(warning.category, UnknownIdsWarning):
            print(f"warning: {printable_line(warning.message)} (--strict makes this an error)", file=sys.stderr)
        else:  # not ours: shown as Python would have
            warnings.showwarning(warning.message, warning.category, warning.filename, warning.lineno)


def cmd_evaluate(args: argparse.Namespace) -> int:
    from ..data.prediction_layouts import NO_ANSWER_KEY, read_prediction_file
    from ..data.predictions import load_na_probs, load_predictions
    from ..inference.files import check_no_answers_stream

    check_no_answers_stream(args.predictions)
    if args.na_probs:
        check_no_answers_stream(args.na_probs, "na_probs")
    # The whole file is read even under --limit: an answer to a question past the limit is no unknown id.
    data = load_task_data(args, args.data, None, requested_task(args), needs_gold="bio-mrc evaluate")
    read = read_prediction_file(args.predictions)  # in its layout, told from its content
    if args.na_probs and read.na_probs is not None:
        raise ConfigError(f"--na-probs: {args.predictions} gives a {NO_ANSWER_KEY} with its answers (Hugging Face's "
                          f"squad_v2 layout), so the probabilities would be given twice; drop --na-probs {args.na_probs}, "
                          f"or the {NO_ANSWER_KEY} of {args.predictions}")
    scored = _scored_questions(args, data.examples, read.answers)
    if scored.subset:
        print(printable_line(f"note: scoring {scored.subset}"), file=sys.stderr)
    task = data_task(args, data)
    probs_given, probs_source = _no_answer_probabilities(args, read, task)
    gold = registry.resolve(task.gold)(scored.examples)
    unscored = [ex.id for ex in data.examples if ex.id not in gold]
    with _unknown_ids_as_warning_lines():
        # A task whose official script scores only complete files (MultiSpanQA): a missing question is an error here too.
        predictions, missing = load_predictions(read, list(gold), multi_span=task.multi_span_answers,
                                                strict=task.strict_predictions(args.strict), unscored=unscored, data=args.data)
        na_probs, missing_probs = (load_na_probs(probs_given, list(gold), strict=args.strict, unscored=unscored, data=args.data)
                                   if probs_given is not None else (None, []))
    if missing:
        print(printable_line(f"warning: {len(missing)} of {counted(len(gold), 'question')} {number_form(len(missing), 'has', 'have')} "
                             f"no prediction in {args.predictions} "
                             f"(e.g. {missing[0]!r}); they are scored as wrong (--strict makes this an error)"), file=sys.stderr)
    if missing_probs:
        print(printable_line(f"warning: {len(missing_probs)} of {counted(len(gold), 'question')} {number_form(len(missing_probs), 'has', 'have')} "
                             "no no-answer probability in "
                             f"{probs_source} (e.g. {missing_probs[0]!r}); best_exact and best_f1 answer them at every threshold "
                             "(--strict makes this an error)"), file=sys.stderr)
    print(json.dumps(json_numbers({**registry.resolve(task.official)(task, gold, predictions, na_probs), **scored.record}), indent=2))
    return 0


def _no_answer_probabilities(args: argparse.Namespace, read, task):
    """``(what to read no-answer probabilities from, its name)``: ``--na-probs``, else the predictions file ``read``
    where its records give them, else ``(None, None)``. Probabilities the task's scorer takes none of are refused, as
    read and then ignored they would look used."""
    from ..data.prediction_layouts import NO_ANSWER_KEY

    given = args.na_probs or (read if read.na_probs is not None else None)
    if given is None:
        return None, None
    source = args.na_probs or f"the {NO_ANSWER_KEY} of {args.predictions}"
    if problem := task.no_answer_probabilities_problem():
        raise ConfigError(f"--na-probs: {problem} (in {args.na_probs})" if args.na_probs else f"{source}: {problem}")
    return given, source


def _scored_questions(args: argparse.Namespace, examples, answered):
    """The questions ``evaluate`` scores: all it read (the first ``--limit`` of them), or with ``--only-predicted`` those
    ``answered`` (the predictions file's ``{id: answer}``) answers. A subset is stated on stderr and in the metrics'
    ``scored`` entry."""
    from ..data.predictions import ScoredQuestions

    examples = examples[:args.limit] if args.limit else examples
    if not args.only_predicted:
        subset = f"the first {counted(len(examples), 'question')} of {args.data} (--limit {args.limit})" if args.limit else None
        return ScoredQuestions(list(examples), len(examples), subset)
    kept = [ex for ex in examples if ex.id in answered]
    if not kept:
        raise ConfigError(f"--only-predicted: no question of {args.data} has an answer in {args.predictions}")
    among, options = ((f"the first {len(examples)}", f"--limit {args.limit} --only-predicted") if args.limit
                      else (str(len(examples)), "--only-predicted"))
    subset = f"the {len(kept)} of {among} {number_form(len(examples), 'question')} of {args.data} that {args.predictions} answers ({options})"
    return ScoredQuestions(kept, len(examples), subset)


def cmd_compare(args: argparse.Namespace) -> int:
    from ..harness.compare import compare, train_models
    from ..harness.comparison_splits import check_data_dir
    from ..harness.config import load_config
    from ..harness.report import console_table

    if args.print_schema:
        from ..harness.config import comparison_schema

        print(json.dumps(comparison_schema(), indent=2))
        return 0
    # An empty --data-dir, --encoder or --output-dir (an unset shell variable) is refused, not read as "not given".
    for option, value in (("--data-dir", args.data_dir), ("--encoder", args.encoder)):
        if value is not None and not value.strip():
            raise ConfigError(f"{option}: an empty path names no folder; give one")
    config = load_config(args.config).with_overrides(seeds=args.seeds, encoder=args.encoder, runs=args.runs)
    data_dir = Path(args.data_dir) if args.data_dir is not None else default_data_dir()
    check_data_dir(config, data_dir, args.config)  # needed only where a config path is relative to it
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
