"""``bio-mrc tune``'s time outside the forward pass: the CPU seconds of the tuning itself (the length prior's grid,
the span-count rules, the no-answer thresholds and the calibrators) and of the length prior's grid alone, each the
median of ``--repeats`` tunings of one forward pass's outputs, in a process of its own; with ``--old-tree`` the same
by the package of another checkout in the same run, one after the other, with a check that both wrote the same (a digest of
the JSON report and the tuned copy's ``config.json``).

    python benchmarks/bench_tune.py [--model DIR] [--data FILE] [--limit 1000] [--format F] [--repeats 3] [--old-tree DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import _common

NAME = "tune"

# Tune a copy of the model once, its tuning repeated on the same outputs; print the CPU seconds of each tuning and of
# its length prior's grid, and a digest of what the command wrote.
CHILD = """
import contextlib, hashlib, io, json, sys, time
import bio_mrc
from bio_mrc.cli import main
from bio_mrc.inference import tuning
repeats, model, data, limit, data_format, output = int(sys.argv[1]), *sys.argv[2:]
seconds, grid = [], []
tune_settings, tune_prior = tuning.tune_settings, tuning.tune_bio_length_prior
def timed_prior(*args, **kwargs):
    started = time.process_time()
    try:
        return tune_prior(*args, **kwargs)
    finally:
        grid[-1] += time.process_time() - started
def repeated(*args, **kwargs):
    for _ in range(repeats):
        grid.append(0.0)
        started = time.process_time()
        tuned = tune_settings(*args, **kwargs)
        seconds.append(time.process_time() - started)
    return tuned
tuning.tune_settings, tuning.tune_bio_length_prior = repeated, timed_prior
report = io.StringIO()
command = ["tune", "--model", model, "--data", data, "--limit", limit, "--output-dir", output, "--precision", "fp32"]
with contextlib.redirect_stdout(report):
    code = main(command + (["--format", data_format] if data_format else []))
digest = hashlib.sha256(report.getvalue().encode() + open(output + "/config.json", "rb").read()).hexdigest()
print(json.dumps({"code": code, "seconds": seconds, "grid": grid, "digest": digest, "package": bio_mrc.__file__}))
"""


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=None, help="a trained model folder (default: the newest the main job trained)")
    _common.add_data_arguments(parser, "squad-v1.1/dev.json", "held-out questions to tune on")
    parser.add_argument("--limit", type=int, default=1000, help="tune on the first N questions")
    parser.add_argument("--format", default=None, help="the questions' format, as tune's --format (default: detected)")
    parser.add_argument("--repeats", type=int, default=3, help="tunings of the outputs by each package")
    parser.add_argument("--old-tree", default=None, help="another checkout whose package tunes the same questions")
    args = parser.parse_args()
    _common.check_old_tree(args.old_tree)
    if args.repeats < 1 or args.limit < 1:
        _common.fail(f"--repeats {args.repeats} and --limit {args.limit}: give at least 1 each")
    args.model = _common.model_dir(args.model)
    args.data = _common.data_file(args, "squad-v1.1/dev.json")
    return args


def tune_once(args: argparse.Namespace, tree: str | None, folder: Path) -> dict:
    """One child's tuning with the package of ``tree`` (None: this checkout), its copy of the model in ``folder``."""
    env = dict(os.environ)
    if tree:
        env["PYTHONPATH"] = os.pathsep.join([str(Path(tree).resolve()), env.get("PYTHONPATH", "")])
    command = [
        sys.executable,
        "-c",
        CHILD,
        str(args.repeats),
        str(Path(args.model).resolve()),
        str(Path(args.data).resolve()),
        str(args.limit),
        args.format or "",
        str(folder),
    ]
    process = subprocess.run(command, capture_output=True, text=True, env=env, cwd=Path(tree).resolve() if tree else None)
    if process.returncode != 0 or not process.stdout.strip():
        _common.fail(f"tuning with {tree or 'this checkout'} failed: {process.stderr.strip()[-500:]}")
    return json.loads(process.stdout.strip().splitlines()[-1])


def measure(args: argparse.Namespace, ways: dict[str, str | None], scratch: Path) -> dict[str, dict[str, float]]:
    """Each way's median seconds of the tuning and of its prior's grid; what the ways wrote must agree."""
    runs = {way: tune_once(args, tree, scratch / way) for way, tree in ways.items()}
    if len({run["digest"] for run in runs.values()}) != 1:
        _common.fail("the packages tuned different settings or reported different values")
    return {way: {"tuning": statistics.median(run["seconds"]), "grid": statistics.median(run["grid"])} for way, run in runs.items()}


def main(args: argparse.Namespace) -> None:
    ways = _common.package_ways(args.old_tree)
    with tempfile.TemporaryDirectory(prefix="bench-tune-") as scratch:
        times = measure(args, ways, Path(scratch))
    print(f"\nmachine: {_common.machine_description()}; {_common.command_load_and_date()}\n")
    print(f"{args.limit} questions of {args.data}, {args.repeats} tunings of one forward pass's outputs each (median CPU s)\n")
    print("| | " + " | ".join(ways) + (" | old / ours |" if "old" in ways else " |"))
    print("|---|" + "---:|" * (len(ways) + ("old" in ways)))
    for stage, title in (("tuning", "the whole tuning"), ("grid", "the length prior's grid")):
        ratio = f" | {times['old'][stage] / times['ours'][stage]:.2f} |" if "old" in ways else " |"
        print(f"| {title} | " + " | ".join(f"{times[way][stage]:.2f}" for way in ways) + ratio)
    print(
        json.dumps(
            {"benchmark": NAME, "times": times, "ways": list(ways), "settings_equal": True, "questions": args.limit, "machine": _common.machine_description()}
        )
    )


if __name__ == "__main__":
    main(parse_args())
