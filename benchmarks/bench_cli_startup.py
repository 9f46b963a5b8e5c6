"""How fast the command line answers: ``bio-mrc --version``, ``--help`` and every ``bio-mrc COMMAND --help``
(target: under 1.5 s each on 2 cores), and what a first ``extract`` answer costs (import, load, answer).

Each measurement is a fresh process (``python -m bio_mrc.cli ...``, what the ``bio-mrc`` script runs), run
``--runs`` times; the table gives the median wall seconds and the median CPU seconds (user + system of the
children, from ``os.times``: the fairer number on a shared machine).

The first answer is measured on a model built here, unless ``--model DIR`` names one: the default encoder
(all-MiniLM-L6-v2, embedded) with both heads, trained one step on four synthetic questions (its answers are
arbitrary, its cost is a real model's). A child process times its own three steps: importing
``AnswerExtractor``, ``AnswerExtractor.from_pretrained`` (fp32, CPU) and the first answer to one question about
a 120-word context; the whole ``bio-mrc extract`` command is timed as well.

    python benchmarks/bench_cli_startup.py
    python benchmarks/bench_cli_startup.py --runs 3 --model runs/quick/models/joint-seed42-...
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

from _common import existing_input, fail, command_load_and_date, machine_description
from _common import timed as timed_call

REPO = Path(__file__).resolve().parents[1]
COMMANDS = ("train", "predict", "evaluate", "tune", "compare", "extract", "export", "serve")
QUESTION = "Who wrote the notes?"
CONTEXT = " ".join(["The notes on the engine were written by Ada Lovelace in 1843."] * 10)  # 120 words
FIRST_ANSWER = f"""
import json, sys, time
clock = lambda: (time.perf_counter(), time.process_time())  # wall, and CPU of this process (all its threads)
started = clock()
from bio_mrc.inference import AnswerExtractor
imported = clock()
extractor = AnswerExtractor.from_pretrained(sys.argv[1], precision="fp32", device="cpu")
loaded = clock()
extractor({QUESTION!r}, {CONTEXT!r})
answered = clock()
steps = {{"import": (started, imported), "load": (imported, loaded), "first answer": (loaded, answered)}}
print(json.dumps({{name: [b[0] - a[0], b[1] - a[1]] for name, (a, b) in steps.items()}}))
"""


def run_timed(argv: list[str], env: dict[str, str]) -> tuple[float, str]:
    """(wall seconds, standard output) of one fresh process; a failure ends the benchmark in one line."""
    done, wall = timed_call(lambda: subprocess.run(argv, cwd=env["PYTHONPATH"].split(os.pathsep)[0], env=env,
                                                   capture_output=True, text=True))  # -m reads the cwd first
    if done.returncode != 0:
        fail(f"{' '.join(argv[2:])[:200]} failed: {done.stderr.strip().splitlines()[-1] if done.stderr.strip() else done.returncode}")
    return wall, done.stdout


def timed_runs(argv: list[str], env: dict[str, str], runs: int) -> tuple[float, float]:
    """Median wall and CPU seconds over ``runs`` fresh processes (CPU from resource usage of the children)."""
    walls, cpus = [], []
    for _ in range(runs):
        before = os.times()
        wall, _ = run_timed(argv, env)
        after = os.times()
        walls.append(wall)
        cpus.append((after.children_user - before.children_user) + (after.children_system - before.children_system))
    return statistics.median(walls), statistics.median(cpus)


def build_default_model(folder: Path, env: dict[str, str]) -> Path:
    """The default encoder with both heads, trained one step on four synthetic questions."""
    data = folder / "four.json"
    context = "Ada Lovelace wrote the notes in 1843 in London."
    qas = [{"id": str(i), "question": q, "answers": [{"text": a, "answer_start": context.index(a)}]}
           for i, (q, a) in enumerate([("Who wrote the notes?", "Ada Lovelace"), ("When?", "1843"),
                                       ("Where?", "London"), ("What did she write?", "the notes")])]
    data.write_text(json.dumps({"version": "1.1", "data": [{"title": "t", "paragraphs": [{"context": context, "qas": qas}]}]}))
    model = folder / "model"
    run_timed([sys.executable, "-m", "bio_mrc.cli", "train", "--train", str(data), "--output-dir", str(model), "--epochs", "1",
           "--max-seq-length", "128", "--doc-stride", "32", "--precision", "fp32"], env)
    return model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="fresh processes per measurement (the median is reported)")
    parser.add_argument("--model", help="a model folder for the first extract answer (default: one built here on the default encoder)")
    parser.add_argument("--skip-extract", action="store_true", help="measure the help answers only")
    parser.add_argument("--package-root", default=str(REPO),
                        help="the checkout whose bio_mrc is measured (another one: a baseline; default: this one)")
    args = parser.parse_args()
    model = existing_input(args.model) if args.model else None
    if args.model and model is None:
        fail(f"no model folder at {args.model}: pass an existing --model DIR, or leave it out to build one")
    root = existing_input(args.package_root)
    if root is None or not (root / "bio_mrc" / "cli" / "__init__.py").is_file():
        fail(f"no bio_mrc checkout at {args.package_root}: pass --package-root DIR, a folder holding bio_mrc/cli/")
    env = {**os.environ, "PYTHONPATH": str(root.resolve()) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    print(f"# bio-mrc start-up ({root.resolve()}): median of {args.runs} fresh processes\n\n{machine_description()}\n{command_load_and_date()}\n")
    print("| command | wall s | CPU s |\n|---|---:|---:|")
    for argv in (["--version"], ["--help"], *[[command, "--help"] for command in COMMANDS]):
        wall, cpu = timed_runs([sys.executable, "-m", "bio_mrc.cli", *argv], env, args.runs)
        print(f"| `bio-mrc {' '.join(argv)}` | {wall:.2f} | {cpu:.2f} |", flush=True)
    if args.skip_extract:
        return
    with tempfile.TemporaryDirectory() as folder:
        model = model or build_default_model(Path(folder), env)
        steps = [json.loads(run_timed([sys.executable, "-c", FIRST_ANSWER, str(model)], env)[1]) for _ in range(args.runs)]
        command = [sys.executable, "-m", "bio_mrc.cli", "extract", "--model", str(model), "--question", QUESTION,
                   "--context", CONTEXT, "--precision", "fp32", "--device", "cpu"]
        wall, cpu = timed_runs(command, env, args.runs)
    print(f"\nfirst extract answer ({'--model ' + args.model if args.model else 'all-MiniLM-L6-v2, both heads'}; fp32, CPU):\n")
    print("| step | wall s | CPU s |\n|---|---:|---:|")
    for step in ("import", "load", "first answer"):
        print(f"| {step} | {statistics.median(s[step][0] for s in steps):.2f} | {statistics.median(s[step][1] for s in steps):.2f} |")
    print(f"| `bio-mrc extract`, the whole command | {wall:.2f} | {cpu:.2f} |")


if __name__ == "__main__":
    main()
