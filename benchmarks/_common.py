"""What every benchmark of this folder shares: where the repository and the data are, the trained
model a benchmark defaults to, one-line errors for missing inputs, the machine it ran on, and how
every script times its work (one call, each stage of a run, the median or best of repeats).

A script checks its arguments and inputs before any work, so a missing model, data file or optional
dependency ends it with one line saying what to run or pass. Paths resolve
against the repository, never the working directory, so every script runs from the repository
root and from ``benchmarks/`` alike.
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import importlib.util
import os
import shlex
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NoReturn, TypeVar

from bio_mrc.data import sources
from bio_mrc.machine import INSTRUCTION_SETS, cpuinfo_flags, instruction_sets, machine_description  # noqa: F401 (the benchmarks' names)
from bio_mrc.precision import cpu_name  # noqa: F401 (the benchmarks' name)

T = TypeVar("T")
REPO_ROOT = Path(__file__).resolve().parents[1]
QUICK_MODEL_GLOB = "runs/quick*/models/joint-seed42-*"  # the joint model `bio-mrc compare --config quick` trains
QUICK_MODEL_COMMAND = "bio-mrc compare --config quick"
DATA_HINT = "pass --data-dir DIR (the folder holding squad-v1.1/) or set $BIO_MRC_DATA"


def fail(message: str) -> NoReturn:
    """Exit non-zero with one line on stderr and no traceback: the reader needs what to do, not where."""
    raise SystemExit(message)


def default_data_dir() -> Path:
    """``$BIO_MRC_DATA``, else ``shared/data`` beside the repository (``../shared/data`` from its root)."""
    return sources.default_data_dir(beside=REPO_ROOT)


def repo_path(path: str | Path) -> Path:
    """A default path (``runs/...``) anchored at the repository root; absolute paths pass through."""
    return REPO_ROOT / path


def existing_input(path: str | Path) -> Path | None:
    """A path the user typed: as given (relative to the working directory), else relative to the
    repository root, so commands copied from RESULTS.md also work from ``benchmarks/``."""
    for candidate in (Path(path), REPO_ROOT / path):
        if candidate.exists():
            return candidate
    return None


def add_data_arguments(parser: argparse.ArgumentParser, relative: str, what: str) -> None:
    """``--data FILE`` (default: ``relative`` under the data folder) and ``--data-dir DIR``."""
    parser.add_argument("--data", default=None, help=f"{what} (default: DATA_DIR/{relative})")
    parser.add_argument("--data-dir", default=None,
                        help="the data folder (default: $BIO_MRC_DATA, else ../shared/data beside the repository)")


def data_file(args: argparse.Namespace, relative: str) -> str:
    """``--data`` if given, else ``relative`` under ``--data-dir``/the default data folder; must exist."""
    if args.data:
        found = existing_input(args.data)
        if found is None:
            fail(f"no data file at {args.data}: pass an existing --data FILE, or leave it out to use DATA_DIR/{relative}")
        return str(found)
    return str(require_data(data_root(args) / relative))


def data_root(args: argparse.Namespace) -> Path:
    return Path(args.data_dir) if args.data_dir else default_data_dir()


def comparison_inputs(args: argparse.Namespace) -> None:
    """Check ``args.config`` (a comparison config whose splits a script reads) and the data folder, and set
    both to the paths found."""
    config = existing_input(args.config)
    if config is None:
        fail(f"no comparison config at {args.config}: pass --config FILE")
    args.config = str(config)
    args.data_dir = data_root(args)
    if not args.data_dir.is_dir():
        fail(f"no data folder at {args.data_dir}: {DATA_HINT}")


def comparison_report(path: str, data_dir: str | None) -> tuple:
    """A multi-span comparison's ``report.json`` (or ``.json.xz``), its config and its questions' splits read from
    the data folder, which must hold the report's evaluation questions in order; else one line saying what is wrong."""
    from bio_mrc.errors import BioMrcError, command_line_text
    from bio_mrc.harness.compare import resolve_splits
    from bio_mrc.harness.config import parse_config
    from bio_mrc.harness.earlier_report import read_report

    try:
        report = read_report(existing_input(path) or path)
        config = parse_config(report.results.config)
        splits = resolve_splits(config, Path(data_dir) if data_dir else default_data_dir())
    except (BioMrcError, OSError) as error:  # one line naming the file and the problem, as this script's options
        fail(f"error: {command_line_text(error, {'cells_from': '--report', 'data_dir': '--data-dir'})}")
    if splits.eval.ids != report.eval_ids:
        fail(f"error: {path}: its evaluation questions are not the data's (another data folder?)")
    return report, config, splits


def report_arguments(description: str, report_help: str, run_help: str) -> argparse.Namespace:
    """The command line of a script that reads a multi-span comparison's report: --report, --data-dir and --run."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--report", required=True, help=report_help)
    parser.add_argument("--data-dir", default=None, help="the data folder (default: $BIO_MRC_DATA, else ../shared/data beside the repository)")
    parser.add_argument("--run", default=None, help=run_help)
    return parser.parse_args()


def per_data_set(splits, rows_of: Callable) -> list:
    """``rows_of(part, first_row)`` for each data set of the evaluation (the evaluation itself when it joins none),
    ``first_row`` the position of the data set's first question among the evaluation's."""
    rows, first_row = [], 0
    for part in splits.eval.parts or [splits.eval]:
        rows.append(rows_of(part, first_row))
        first_row += len(part.examples)
    return rows


def word_tokenizer_folder(folder: Path) -> Path:
    """A WordPiece tokenizer of 500 words ``w0`` … ``w499`` saved in ``folder``: windows cut fast, the package's own
    work measured rather than a real vocabulary's."""
    from transformers import BertTokenizerFast

    vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "?", *(f"w{i}" for i in range(500))]
    (folder / "vocab.txt").write_text("\n".join(vocabulary) + "\n", encoding="utf-8")
    BertTokenizerFast(vocab_file=str(folder / "vocab.txt"), do_lower_case=True).save_pretrained(str(folder))
    return folder


def require_data(path: Path) -> Path:
    if not path.is_file():
        fail(f"no data file at {path}: {DATA_HINT}")
    return path


def require_module(name: str, install: str) -> None:
    """An optional dependency the benchmark needs, found before anything is loaded or trained."""
    if importlib.util.find_spec(name) is None:
        fail(f"this benchmark needs {name}: run `{install}` first")


def model_dir(given: str | None, option: str = "--model") -> str:
    """The model folder ``given``, or the newest one ``bio-mrc compare --config quick`` trained."""
    if given:
        found = existing_input(given)
        if found is None or not found.is_dir():
            fail(f"no model folder at {given}: pass {option} with a folder `bio-mrc train` or `bio-mrc compare` wrote")
        return str(found)
    return str(newest_model(QUICK_MODEL_GLOB, QUICK_MODEL_COMMAND))


def newest_model(pattern: str, command: str) -> Path:
    """The most recently written folder matching ``pattern`` under the repository root."""
    matches = [Path(p) for p in glob.glob(str(REPO_ROOT / pattern)) if Path(p).is_dir()]
    if not matches:
        fail(f"no trained model under {REPO_ROOT / pattern}: run `{command}` in {REPO_ROOT} first, or pass --model DIR")
    return max(matches, key=lambda p: p.stat().st_mtime)


# ---------------------------------------------------------------------------------------------
# The machine: ratios between runtimes and precisions differ across CPUs, so every record names it
# ---------------------------------------------------------------------------------------------

# The line a comparison's report has too (bio_mrc.machine: machine_description, instruction_sets, imported above).


def command_line() -> str:
    """The command that started this script, quoted so that it can be typed again."""
    return f"python {shlex.join(sys.argv)}"


def command_load_and_date() -> str:
    """The command, the load average now and the UTC time: what ran, how busy the machine was, and when."""
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return f"command: {command_line()}; load average {load}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"


# ---------------------------------------------------------------- timing


def timed(call: Callable[[], T]) -> tuple[T, float]:
    """``call()``'s value and the wall seconds it took."""
    started = time.perf_counter()
    value = call()
    return value, time.perf_counter() - started


def repeated(call: Callable[[], T], repeats: int, warmup: int = 0) -> tuple[T, list[float]]:
    """``call()`` run ``warmup`` times untimed, then ``repeats`` times timed: the last value and every run's seconds."""
    for _ in range(warmup):
        call()
    value, seconds = None, []
    for _ in range(repeats):
        value, elapsed = timed(call)
        seconds.append(elapsed)
    return value, seconds


def median_of(call: Callable[[], T], repeats: int, warmup: int = 0) -> tuple[T, float]:
    """The last value and the median seconds of ``repeats`` timed runs (after ``warmup`` untimed ones)."""
    value, seconds = repeated(call, repeats, warmup)
    return value, statistics.median(seconds)


def best_of(call: Callable[[], T], repeats: int, warmup: int = 0) -> tuple[T, float]:
    """The last value and the fastest of ``repeats`` timed runs: the least disturbed by the rest of the machine."""
    value, seconds = repeated(call, repeats, warmup)
    return value, min(seconds)


class StageTimes(dict[str, float]):
    """Seconds by stage of one run, in the order the stages ran: ``with times.stage("forward"): ...``."""

    @contextlib.contextmanager
    def stage(self, name: str) -> Iterator[None]:
        started = time.perf_counter()
        yield
        self[name] = time.perf_counter() - started


def median_times(runs: list[dict[str, float]]) -> dict[str, float]:
    """Each stage's median over runs (alternating sides run their stages once per repeat)."""
    return {stage: statistics.median(run[stage] for run in runs) for stage in runs[0]}


def alternate(sides: dict[str, Callable[[], tuple[T, dict[str, float]]]], repeats: int,
              after_side: Callable[[str], None] = lambda side: None,
              after_repeat: Callable[[int, dict[str, dict[str, float]]], None] = lambda repeat, latest: None,
              ) -> tuple[dict[str, dict[str, float]], dict[str, T]]:
    """The skeleton of a side-by-side benchmark: every side in turn, ``repeats`` times, so that a machine's slow
    spell falls on both. A side returns (its value, its stage seconds); its ``"total"`` is the whole call unless the
    side gives one. Returns each side's median seconds by stage and its last value; ``after_side`` runs after each
    side (memory peaks, say), ``after_repeat`` with the repeat's index and every side's seconds (a progress line)."""
    runs: dict[str, list[dict[str, float]]] = {side: [] for side in sides}
    last: dict[str, T] = {}
    for repeat in range(repeats):
        for side, call in sides.items():
            (last[side], stages), seconds = timed(call)
            runs[side].append({**stages, "total": stages.get("total", seconds)})
            after_side(side)
        after_repeat(repeat, {side: side_runs[-1] for side, side_runs in runs.items()})
    return {side: median_times(side_runs) for side, side_runs in runs.items()}, last


def check_old_tree(old_tree: str | None) -> None:
    """``--old-tree``, where given, is a checkout holding a ``bio_mrc`` package, else one line."""
    if old_tree and not (Path(old_tree) / "bio_mrc" / "__init__.py").is_file():
        fail(f"--old-tree {old_tree} holds no bio_mrc package: give a checkout (git worktree add DIR COMMIT)")


def report_files(given: list[str] | None, default: Callable[[], list[Path]]) -> list[Path]:
    """The report files given (resolved), else ``default()``'s; a missing one ends the run in one line."""
    reports = [Path(path).resolve() for path in given] if given else default()
    if missing := [str(path) for path in reports if not path.is_file()]:
        fail(f"no report file {missing[0]}")
    return reports


def package_ways(old_tree: str | None) -> dict[str, str | None]:
    """The packages a benchmark runs alternately: this checkout's ("ours"), and ``--old-tree``'s ("old") where given."""
    return {"ours": None, **({"old": old_tree} if old_tree else {})}


def print_old_against_ours(rows: list[dict], alike: str) -> None:
    """The total of each package's seconds over ``rows`` and their ratio, where an old package ran."""
    old, ours = sum(row["old"] for row in rows), sum(row["ours"] for row in rows)
    print(f"\ntotal: old {old:.2f} s, ours {ours:.2f} s, {old / ours:.2f}x; {alike}")


def untrained_tiny_model(folder: Path, vocabulary: list[str]) -> Path:
    """A random 2-layer BERT joint model (H=32, untrained heads) with windows of 384 (stride 128), its WordPiece
    vocabulary BERT's special tokens and then ``vocabulary``: ``folder/tiny-joint``."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizerFast

    from bio_mrc.model import BioMrcForQuestionAnswering

    encoder, model_dir = folder / "encoder", folder / "tiny-joint"
    encoder.mkdir(parents=True)
    (encoder / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *vocabulary]) + "\n", encoding="utf-8")
    tokenizer = BertTokenizerFast(vocab_file=str(encoder / "vocab.txt"), do_lower_case=True)
    tokenizer.save_pretrained(str(encoder))
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                         intermediate_size=64, max_position_embeddings=512)).save_pretrained(str(encoder))
    model = BioMrcForQuestionAnswering.from_encoder(str(encoder), heads="span+bio", max_seq_length=384, doc_stride=128,
                                                    max_query_length=64)
    model.save_pretrained(str(model_dir))
    tokenizer.save_pretrained(str(model_dir))
    return model_dir
