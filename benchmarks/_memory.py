"""What the peak-memory benchmarks that compare two ways of one call share (``bench_documents_memory.py``,
``bench_extract_memory.py``, ``bench_tune_memory.py``): the tiny model of ``bench_predict_memory.py`` trained once for
every size; a child process a way, which reports its own peak resident memory; the check that both ways answered
alike; and the machine line, the Markdown table and the JSON line printed.

Each way runs in a process of its own with one OpenMP thread, so that its peak holds only what the call needs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import _common
from bench_predict_memory import synthetic_squad, tiny_model

# The child's peak resident memory so far (``VmHWM``), in MiB: a child program starts with it.
PEAK_MIB = """
def peak_mib():
    status = dict(line.split(":", 1) for line in open("/proc/self/status", encoding="ascii"))
    return int(status["VmHWM"].split()[0]) / 1024
"""

# What a child reports of its call, kept in a table row.
CALL_MEASURES = ("before_mib", "peak_mib", "seconds", "cpu_seconds")

# A child program that measures one call starts with it: ``measured(call)`` gives the call's value and its
# CALL_MEASURES (the peak before and after it, its wall and CPU seconds).
MEASURED_CALL = PEAK_MIB + """
import time

def measured(call):
    before, started, cpu = peak_mib(), time.perf_counter(), time.process_time()
    value = call()
    seconds, cpu, after = time.perf_counter() - started, time.process_time() - cpu, peak_mib()
    return value, {"before_mib": before, "peak_mib": after, "seconds": seconds, "cpu_seconds": cpu}
"""

# The columns after the size and the way of the tables of one call's answers (bench_documents_memory, bench_extract_memory).
CALL_COLUMNS = (("peak MiB before the call", "---:"), ("peak MiB", "---:"), ("at once / ours", "---:"),
                ("call CPU s", "---:"), ("largest score difference", "---:"))


def rows_by_size(words: int, sizes: list[int], rows_at: Callable[[Path, Path, int], list[dict]]) -> list[dict]:
    """A tiny model trained on 32 questions of ``words``-word contexts in a temporary folder, then
    ``rows_at(folder, model, size)``'s rows for each of ``sizes`` in turn."""
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        model = tiny_model(folder, synthetic_squad(folder / "train.json", 32, words, seed=1))
        return [row for size in sizes for row in rows_at(folder, model, size)]


def stderr_end(process: subprocess.CompletedProcess) -> str:
    """The last line the child wrote to stderr, else its exit status."""
    lines = process.stderr.strip().splitlines()
    return lines[-1] if lines else str(process.returncode)


def run_child(program: str, arguments: list[str], what: str) -> tuple[dict, subprocess.CompletedProcess, float]:
    """``program`` (a ``-c`` program) run with ``arguments``: the JSON of its last stdout line, the process and its wall
    seconds; a child that fails or prints nothing ends the benchmark with ``what`` failed and its last stderr line."""
    started = time.perf_counter()
    process = subprocess.run([sys.executable, "-c", program, *arguments], capture_output=True, text=True,
                             env={**os.environ, "OMP_NUM_THREADS": "1"})
    seconds = time.perf_counter() - started
    if process.returncode != 0 or not process.stdout.strip():
        _common.fail(f"{what} failed: {stderr_end(process)}")
    return json.loads(process.stdout.strip().splitlines()[-1]), process, seconds


def call_rows(runs: dict[str, dict], size: str, count: int, equal: tuple[str, ...]) -> list[dict]:
    """A table row a way of ``runs`` (ours first) at ``count`` ``size`` (documents, questions): its
    :data:`CALL_MEASURES` and the largest score difference between the ways. What ``equal`` names must be equal and
    the scores as many, else the benchmark ends saying the answers differ."""
    ours, before = runs.values()
    if any(ours[key] != before[key] for key in equal) or len(ours["scores"]) != len(before["scores"]):
        _common.fail(f"the answers differ at {count:,} {size}")
    difference = max((abs(a - b) for a, b in zip(ours["scores"], before["scores"])), default=0.0)
    return [{size: count, "way": way, "score_difference": difference, **{key: run[key] for key in CALL_MEASURES}}
            for way, run in runs.items()]


def call_cells(row: dict, at_once_peak: float) -> list[str]:
    """A row's cells under :data:`CALL_COLUMNS`."""
    return [f"{row['before_mib']:.0f}", f"{row['peak_mib']:.0f}", f"{at_once_peak / row['peak_mib']:.2f}",
            f"{row['cpu_seconds']:.1f}", f"{row['score_difference']:.1e}"]


def print_report(name: str, rows: list[dict], size: str, at_once: str, columns: tuple[tuple[str, str], ...],
                 cells: Callable[[dict, float], list[str]], agreed: str) -> None:
    """The machine line, then a Markdown table a row per size and way (the ``size`` column, the way, then ``columns``:
    (title, alignment) pairs filled by ``cells(row, the at_once way's peak at that size)``), then the JSON line of
    ``rows`` with ``agreed`` true."""
    machine = _common.machine_description()
    print(f"machine: {machine}; {_common.command_load_and_date()}")
    print()
    print("| " + " | ".join([size, "way", *(title for title, _ in columns)]) + " |")
    print("|" + "|".join(["---:", "---", *(align for _, align in columns)]) + "|")
    peaks = {(row[size], row["way"]): row["peak_mib"] for row in rows}
    for row in rows:
        print("| " + " | ".join([f"{row[size]:,}", row["way"], *cells(row, peaks[(row[size], at_once)])]) + " |")
    print(json.dumps({"benchmark": name, "rows": rows, agreed: True, "machine": machine}))
