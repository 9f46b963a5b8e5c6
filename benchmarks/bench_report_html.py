"""report.html in headless Chromium: how long the page takes to open and a filter to answer (the target: within 1 s on the full dev set).

The page is a comparison's own ``report.html`` (``--comparison DIR``, the output folder of ``bio-mrc
compare``) or, by default, one written by ``bio_mrc.harness.report.write_report`` (the function every
comparison calls) for a synthetic comparison of SQuAD dev's shape: ``--questions`` questions (10,570)
in paragraphs of 5.1 questions, contexts of 120 ± 50 words, 3.3 gold answers per question, a joint model
(span, bio and joint decodings, calibrated; ``--joint-seeds`` of them) and a span-only model, per-word P(B) and P(I) on every word
of every question. The synthetic probabilities are noisier than a trained model's (a third of the words
round to a non-zero byte), so the page is larger than a real one.

Chromium (``/usr/bin/chromium`` with ``/usr/bin/chromedriver``, driven by selenium) opens the file
``--repeats`` times, each in a fresh browser: the time until ``driver.get`` returns (the load event: the
data parsed and the first page of the list drawn, as the script runs before it), the page's own
navigation timings, and for each filter the time from the change to the next frame after the list is
redrawn.

    python benchmarks/bench_report_html.py [--questions 10570] [--comparison DIR] [--repeats 3]

The last line is one JSON object: ``{"benchmark": "report_html", "machine": ..., "size_bytes": ...,
"load_seconds": median, "filter_ms": {filter: median}, ...}``.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from bio_mrc.harness.browser_data import ModelBrowserData
from bio_mrc.harness.report import write_report
from bio_mrc.types import Example

import _common

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
INSTALL = "apt-get install -y chromium chromium-driver && pip install selenium"
# (what the filter does, the control's CSS selector, its value or the start of its option's text): each from the unfiltered list
FILTERS = [("question word 'what'", 'select[name="question word"]', "what"), ("A and B disagree", "#filter-agree", "disagree"),
           ("one right, the other wrong", "#filter-right", "one"), ("sort by F1 A - B", "#sort", "diff-desc"),
           ("search 'the'", "#filter-text", "the")]


def parse_args() -> argparse.Namespace:
    """The options, with the inputs checked: a missing one ends here, before any work."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=10_570, help="questions of the synthetic comparison")
    parser.add_argument("--joint-seeds", type=int, default=1, help="joint models (seeds) of the synthetic comparison, each with word probabilities")
    parser.add_argument("--comparison", default=None, help="time this comparison's report.html instead (a `bio-mrc compare` output folder)")
    parser.add_argument("--output-dir", default="runs/bench-report-html", help="where the synthetic comparison's report is written")
    parser.add_argument("--repeats", type=int, default=3, help="fresh browsers; the medians are reported")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--screenshot", default=None,
                        help="also save a PNG of the question browser: A and B disagree, the first such question opened")
    args = parser.parse_args()
    if args.comparison:
        found = _common.existing_input(args.comparison)
        if found is None or not (found / "report.html").is_file():
            _common.fail(f"no report.html in {args.comparison}: pass --comparison with a folder `bio-mrc compare` wrote, "
                         "or leave it out to time a synthetic comparison")
        args.comparison = found
    _common.require_module("selenium", INSTALL)
    if not (Path(CHROMIUM).is_file() and Path(CHROMEDRIVER).is_file()):
        _common.fail(f"this benchmark needs {CHROMIUM} and {CHROMEDRIVER}: run `{INSTALL}` first")
    return args


SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "ta", "vi", "so", "de", "an", "the", "of", "in", "ar", "el", "on"]
QUESTION_WORDS = ["What", "Who", "When", "How many", "Which", "Where", "Why", "In what year"]


def synthetic_examples(n: int, rng: np.random.Generator) -> tuple[list[Example], np.ndarray]:
    """``n`` questions of SQuAD dev's shape, and each context's words as character offsets (one array per question)."""
    vocabulary = ["".join(rng.choice(SYLLABLES, size=rng.integers(1, 4))) for _ in range(5000)]
    examples, words = [], []
    while len(examples) < n:
        count = int(np.clip(rng.normal(120, 50), 20, 600))
        tokens = [vocabulary[k] for k in rng.integers(0, len(vocabulary), count)]
        starts = np.cumsum([0] + [len(t) + 1 for t in tokens[:-1]])
        offsets = np.stack([starts, starts + [len(t) for t in tokens]], axis=1)
        context = " ".join(tokens)
        for _ in range(min(int(rng.poisson(4.1)) + 1, n - len(examples))):
            first = int(rng.integers(0, count - 6))
            spans = tuple(((int(offsets[first + d, 0]), int(offsets[first + d + int(rng.integers(0, 4)), 1])),)
                          for d in rng.integers(0, 2, size=int(rng.choice([1, 3, 3, 4, 5]))))
            question = f"{rng.choice(QUESTION_WORDS)} {' '.join(tokens[k] for k in rng.integers(0, count, 8))}?"
            examples.append(Example(f"q{len(examples):05d}", question, context, spans, "synthetic"))
            words.append(offsets)
    return examples, words


def predicted_offsets(examples: list[Example], words: list[np.ndarray], rng: np.random.Generator) -> np.ndarray:
    """A decoding's answers: the first gold span, moved a word or two now and then."""
    found = np.zeros((len(examples), 2), dtype=np.int64)
    for q, (ex, offsets) in enumerate(zip(examples, words)):
        start, end = ex.answers[0][0]
        first, last = np.searchsorted(offsets[:, 0], start), np.searchsorted(offsets[:, 1], end)
        first = int(np.clip(first + rng.choice([0, 0, 0, -1, 1, 2]), 0, len(offsets) - 1))
        last = int(np.clip(last + rng.choice([0, 0, 0, -1, 1, 3]), first, len(offsets) - 1))
        found[q] = offsets[first, 0], offsets[last, 1]
    return found


def tag_bytes(words: list[np.ndarray], spans: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """P(B), P(I) as bytes for every word: high on the answer's words, noise elsewhere."""
    rows = []
    for offsets, (start, end) in zip(words, spans):
        inside = (offsets[:, 0] >= start) & (offsets[:, 1] <= end)
        first = inside & ~np.concatenate([[False], inside[:-1]])
        logits = rng.normal(-7.0, 2.5, size=(len(offsets), 2)) + np.stack([9 * first, 9 * (inside & ~first)], axis=1)
        rows.append(np.rint(255 / (1 + np.exp(-logits))).astype(np.uint8))
    return np.concatenate(rows)


def synthetic_cell(run: str, decoding: str, seed: int, answers: list[str], rng: np.random.Generator) -> dict:
    """One cell as ``run_comparison`` keeps it: random F1 and confidences, calibrated ones in steps."""
    n = len(answers)
    f1 = np.clip(rng.normal(70, 35, n), 0, 100).round(1)
    raw = np.clip(0.4 * (f1 > 50) + 0.6 * rng.random(n), 0, 1)
    return {"run": run, "decoding": decoding, "seed": seed, "model_dir": f"/m/{run}-{seed}", "threshold": None, "bio_length_prior": None,
            "train_seconds": 1.0, "inference_seconds": 1.0, "decode_seconds": 0.1, "answers": answers, "f1": f1, "em": (f1 == 100) * 100.0,
            "selective": {"right": (f1 > 50).astype(int).tolist(), "confidence": {"raw": raw.tolist(), "calibrated": (raw.round(1) * 0.9).tolist()}}}


def synthetic_results(n: int, joint_seeds: int, seed: int) -> tuple[dict, np.ndarray]:
    """What ``run_comparison`` returns for a comparison of SQuAD dev's size, browser data included (a joint
    model per seed and one span-only model), and each context's length in words."""
    rng = np.random.default_rng(seed)
    examples, words = synthetic_examples(n, rng)
    counts = np.array([len(w) for w in words])
    seeds = list(range(42, 42 + joint_seeds))
    models = [("joint", ["span", "bio", "joint"], s) for s in seeds] + [("span-only", ["span"], 42)]
    cells, browser = [], []
    for run, decodings, model_seed in models:
        spans = np.stack([predicted_offsets(examples, words, rng) for _ in decodings])
        tags = {"word_counts": counts, "word_offsets": np.concatenate(words), "tag_bytes": tag_bytes(words, spans[0], rng)} if run == "joint" else {}
        browser.append({"run": run, "seed": model_seed, "data": ModelBrowserData([ex.id for ex in examples], decodings, spans, **tags)})
        cells += [synthetic_cell(run, decoding, model_seed, [ex.context[a:b] for ex, (a, b) in zip(examples, spans[k])], rng)
                  for k, decoding in enumerate(decodings)]
    config = {"name": "synthetic-dev", "description": f"synthetic, {n} questions of SQuAD dev's shape", "seeds": seeds,
              "runs": [{"name": "joint", "encoder": "synthetic", "heads": "span+bio"},
                       {"name": "span-only", "encoder": "synthetic", "heads": "span", "seeds": [42]}]}
    return {"config": config, "package_version": "bench", "date": time.strftime("%Y-%m-%d %H:%M:%S"),
            "train": {"description": "none", "questions": 0, "question_hash": "-"}, "run_train": {},
            "eval": {"description": config["description"], "questions": n, "question_hash": "-", "task": "squad-v1.1"},
            "tune": None, "eval_examples": examples, "cells": cells, "browser": browser}, counts


def write_synthetic_report(args: argparse.Namespace) -> Path:
    output_dir = _common.repo_path(args.output_dir) if not Path(args.output_dir).is_absolute() else Path(args.output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    results, context_words = synthetic_results(args.questions, args.joint_seeds, args.seed)
    answer_words = np.array([len(ex.context[slice(*ex.answers[0][0])].split()) for ex in results["eval_examples"]])
    started = time.perf_counter()
    write_report(results, output_dir, answer_words, context_words)
    print(f"wrote {output_dir / 'report.html'} in {time.perf_counter() - started:.1f} s (the whole report: statistics, plots, "
          "report.json, report.md, report.html)", file=sys.stderr)
    return output_dir / "report.html"


def chromium():
    """A headless Chromium driven through the system's chromedriver (selenium downloads nothing)."""
    from selenium import webdriver  # optional (the dev extra): parse_args has checked it is installed
    from selenium.webdriver.chrome.service import Service

    os.environ.setdefault("SE_OFFLINE", "true")  # selenium-manager downloads nothing
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1400,1000"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


# Set a control, dispatch its event, resolve at the next frame after the redraw (layout and paint included).
TIME_FILTER = """
const [selector, wanted, done] = arguments;
const control = document.querySelector(selector);
const options = control.tagName === "SELECT" ? Array.from(control.options) : [];
const value = !wanted || !options.length || options.some(o => o.value === wanted) ? wanted : options.find(o => o.text.startsWith(wanted)).value;
const started = performance.now();
control.value = value;
control.dispatchEvent(new Event(control.tagName === "INPUT" ? "input" : "change"));
requestAnimationFrame(() => setTimeout(() => done([performance.now() - started, window.bioMrcBrowser.shown()]), 0));
"""


def time_page(page: Path) -> dict:
    """One fresh browser: load, then each filter from the unfiltered list."""
    driver = chromium()
    try:
        started = time.perf_counter()
        driver.get(page.resolve().as_uri() + "#questions")
        load = time.perf_counter() - started
        timing = driver.execute_script(
            "const n = performance.getEntriesByType('navigation')[0];"
            "const paint = performance.getEntriesByType('paint').find(p => p.name === 'first-contentful-paint');"
            "return {dom_content_loaded_ms: n.domContentLoadedEventEnd, load_event_ms: n.loadEventEnd,"
            " first_contentful_paint_ms: paint ? paint.startTime : null, ready_ms: window.bioMrcBrowser.readyMs,"
            " questions: window.bioMrcBrowser.questions,"
            " shown: window.bioMrcBrowser.shown()};")
        filters = {}
        for name, control, value in FILTERS:
            filters[name] = driver.execute_async_script(TIME_FILTER, control, value)
            driver.execute_async_script(TIME_FILTER, control, "")  # back to the unfiltered list
        errors = [entry["message"] for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]
        return {"load_seconds": load, **timing, "filters": filters, "errors": errors}
    finally:
        driver.quit()


def screenshot(page: Path, output: Path) -> None:
    """The question browser as a reader meets it: the questions where A and B disagree, the first one opened."""
    driver = chromium()
    try:
        driver.get(page.resolve().as_uri() + "#questions")
        driver.execute_async_script(TIME_FILTER, "#filter-agree", "disagree")
        driver.execute_script("document.querySelector('#list tbody tr').click();")
        output.parent.mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(output))
    finally:
        driver.quit()
    print(f"screenshot: {output}", file=sys.stderr)


def main(args: argparse.Namespace) -> None:
    page = args.comparison / "report.html" if args.comparison else write_synthetic_report(args)
    machine = _common.machine_description()
    print(f"machine: {machine}; {_common.command_load_and_date()}", file=sys.stderr)
    runs = [time_page(page) for _ in range(args.repeats)]
    errors = sorted({e for run in runs for e in run["errors"]})
    load = statistics.median(r["load_seconds"] for r in runs)
    filters = {name: statistics.median(r["filters"][name][0] for r in runs) for name, _, _ in FILTERS}
    size = page.stat().st_size
    print(f"page: {page} ({size / 2**20:.1f} MiB, {runs[0]['questions']:,} questions)")
    print(f"load (driver.get until the load event, median of {args.repeats}): {load:.3f} s; "
          f"browser ready (data decoded, first page drawn) {statistics.median(r['ready_ms'] for r in runs):.0f} ms, "
          f"DOMContentLoaded {statistics.median(r['dom_content_loaded_ms'] for r in runs):.0f} ms, "
          f"first contentful paint {statistics.median(r['first_contentful_paint_ms'] or 0 for r in runs):.0f} ms")
    for name, _, _ in FILTERS:
        print(f"filter {name}: {filters[name]:.1f} ms, {runs[0]['filters'][name][1]:,} questions shown")
    print(f"script errors: {errors or 'none'}")
    if args.screenshot:
        screenshot(page, Path(args.screenshot))
    print(json.dumps({"benchmark": "report_html", "machine": machine, "chromium": _chromium_version(), "selenium": importlib.metadata.version("selenium"),
                      "page": str(page), "size_bytes": size, "questions": runs[0]["questions"], "load_seconds": round(load, 3),
                      "ready_ms": round(statistics.median(r["ready_ms"] for r in runs)),
                      "dom_content_loaded_ms": round(statistics.median(r["dom_content_loaded_ms"] for r in runs)),
                      "filter_ms": {k: round(v, 1) for k, v in filters.items()}, "repeats": args.repeats, "script_errors": errors}))


def _chromium_version() -> str:
    found = shutil.which("chromium") or CHROMIUM
    return subprocess.run([found, "--version"], capture_output=True, text=True).stdout.strip()


if __name__ == "__main__":
    main(parse_args())
