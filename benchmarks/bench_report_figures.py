"""A comparison report's figures (``write_plots``, what ``write_report`` spends most of its time on) written three ways
from one committed report's results, alternating, in one process: matplotlib's default (``Figure.savefig``, a
full-colour PNG), the figure drawn once and paletted by median cut at zlib's highest level (``optimize``), and the
package's way (drawn once, a palette by maximum coverage, zlib's default level). CPU seconds, bytes, and how far
each way's pixels are from the full-colour ones.

    python benchmarks/bench_report_figures.py [--report benchmarks/reports/quick/report.json.xz] [--repeats 5]
"""

from __future__ import annotations

import argparse
import io
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

import _common

NAME = "report_figures"


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--report", default="benchmarks/reports/quick/report.json.xz",
                        help="a comparison's report.json or report.json.xz, its figures redrawn")
    parser.add_argument("--repeats", type=int, default=5, help="writes of the figures by each way, alternating; medians reported")
    parser.add_argument("--output-dir", default=None,
                        help="a new or empty folder where each way's figures are written (default: a fresh temporary one)")
    args = parser.parse_args()
    if args.repeats < 1:
        _common.fail(f"--repeats {args.repeats}: give at least 1")
    report = _common.existing_input(args.report)
    if report is None:
        _common.fail(f"--report {args.report}: no such file (give a comparison's report.json or report.json.xz)")
    args.report = report
    args.output_dir = figures_folder(args.output_dir)
    return args


def figures_folder(given: str | None) -> Path:
    """Where the figures go: ``given`` where it is new or empty (a folder holding anything is refused, so that
    nothing the benchmark did not write is replaced), else a fresh temporary folder."""
    if given is None:
        return Path(tempfile.mkdtemp(prefix="bench-report-figures-"))
    folder = _common.repo_path(given)
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        _common.fail(f"--output-dir {given}: {'not a folder' if not folder.is_dir() else 'not empty'}; give a new or empty folder")
    return folder


def read(path: Path) -> Any:
    """The report read back, its summary checked to hold what its figures draw (a report of format 1 kept the
    breakdowns' means alone, without their intervals)."""
    from bio_mrc.errors import ConfigError
    from bio_mrc.harness.earlier_report import read_report

    try:
        report = read_report(path)
    except ConfigError as error:
        _common.fail(str(error))
    for name, table in report.summary.breakdowns.items():
        if any("ci_low" not in group for cells in table.values() for group in cells.values()):
            _common.fail(f"{path}: its breakdown by {name} has no intervals (an older report); give one written since they have")
    return report


def savefig(fig: Any, path: Path) -> Path:
    """matplotlib's default: ``savefig`` renders the figure and writes its RGBA pixels as they are."""
    from bio_mrc.harness import plots

    fig.savefig(path, dpi=plots._DPI, format="png")
    return Path(path)


def median_cut(fig: Any, path: Path) -> Path:
    """The figure drawn once, its pixels paletted by median cut and packed at zlib's highest level."""
    from PIL import Image

    fig.canvas.draw()
    image = Image.fromarray(np.asarray(fig.canvas.buffer_rgba())).convert("RGB")
    paletted = image.quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    buffer = io.BytesIO()
    paletted.save(buffer, format="png", optimize=True)
    Path(path).write_bytes(buffer.getvalue())
    return Path(path)


def write_once(report: Any, save: Callable[[Any, Path], Path], folder: Path) -> float:
    """The CPU seconds of writing every figure of ``report`` into a fresh ``folder`` with ``save`` as the figures' writer."""
    from bio_mrc.harness import plots
    from bio_mrc.harness.report import write_plots

    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    package_save, plots._save = plots._save, save
    try:
        started = time.process_time()
        write_plots(report.results, report.summary, folder)
        return time.process_time() - started
    finally:
        plots._save = package_save


def pixels(folder: Path) -> dict[str, np.ndarray]:
    from PIL import Image

    return {path.name: np.asarray(Image.open(path).convert("RGB"), dtype=np.int16) for path in sorted(folder.glob("*.png"))}


def main(args: argparse.Namespace) -> None:
    from bio_mrc.harness import plots

    report = read(args.report)
    ways = {"savefig": savefig, "median cut, optimize": median_cut, "ours": plots._save}
    output = args.output_dir
    folders = {way: output / way.split(",")[0].replace(" ", "-") for way in ways}
    for way, save in ways.items():  # warm-up: matplotlib imported, fonts listed
        write_once(report, save, folders[way])
    seconds: dict[str, list[float]] = {way: [] for way in ways}
    for _ in range(args.repeats):
        for way, save in ways.items():
            seconds[way].append(write_once(report, save, folders[way]))
    full = pixels(folders["savefig"])
    rows = []
    for way in ways:
        drawn = pixels(folders[way])
        if {name: image.shape for name, image in drawn.items()} != {name: image.shape for name, image in full.items()}:
            _common.fail(f"{way}: the figures differ in number or size from savefig's")
        rows.append({"way": way, "cpu_seconds": statistics.median(seconds[way]),
                     "bytes": sum(path.stat().st_size for path in folders[way].glob("*.png")),
                     "max_channel_difference": int(max(np.abs(drawn[name] - full[name]).max() for name in full)),
                     "mean_channel_difference": float(np.mean([np.abs(drawn[name] - full[name]).mean() for name in full]))})
    ours = rows[-1]["cpu_seconds"]
    for row in rows:
        row["time_ratio"] = row["cpu_seconds"] / ours
    machine = _common.machine_description()
    print(f"machine: {machine}; {_common.command_load_and_date()}")
    print(f"\n{args.report}: {len(full)} figures, {args.repeats} writes a way, alternating (median CPU seconds); "
          f"each way's figures in {output}\n")
    print("| way | CPU s | time ratio to ours | bytes | max / mean channel difference from savefig's pixels |")
    print("|---|---:|---:|---:|---|")
    for row in rows:
        print(f"| {row['way']} | {row['cpu_seconds']:.3f} | {row['time_ratio']:.2f}x | {row['bytes']:,} | "
              f"{row['max_channel_difference']} / {row['mean_channel_difference']:.3f} |")
    print(json.dumps({"benchmark": NAME, "report": str(args.report), "figures": len(full), "repeats": args.repeats, "rows": rows,
                      "machine": machine}))


if __name__ == "__main__":
    main(parse_args())
