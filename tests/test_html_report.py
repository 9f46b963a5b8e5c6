"""report.html from a real (tiny) comparison: one file with the plots inside, every question in the
browser's data with its answers as exact substrings, nothing of it in report.json, re-rendered from the
cache without the model; and ``bio-mrc extract --html``."""

import json
import re
import shutil

import numpy as np
import pytest

from bio_mrc.cli import main
from bio_mrc.harness.compare import compare
from bio_mrc.harness.config import parse_config
from bio_mrc.inference import TrainedModel

from .conftest import BROWSER_PARAGRAPHS, HOSTILE_TEXT
from .test_browser_payload import array, decode_zero_runs, utf16_slice

DATA = re.compile(r'<script type="application/json" id="browser-data">(.*?)</script>', re.S)


def page_payload(path):
    return json.loads(DATA.search(path.read_text(encoding="utf-8")).group(1))


def test_every_comparison_writes_one_page_with_its_plots_inside(browser_comparison):
    out, _, _ = browser_comparison
    page = (out / "report.html").read_text(encoding="utf-8")
    plots = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", (out / "report.md").read_text(encoding="utf-8"))
    sources = re.findall(r'<img src="([^"]+)"', page)
    assert len(sources) == len(plots) >= 3
    assert all(src.startswith("data:image/png;base64,iVBORw0KGgo") for src in sources)  # PNGs, in the file itself
    assert "http://" not in page.split("<main>")[0] and not re.search(r'(src|href)="(https?:)?//', page)  # nothing to fetch
    assert page.count("<script") == 2 and page.count("</script>") == 2  # the hostile context stayed text


def test_a_comparison_report_has_a_training_loss_section(browser_comparison):
    """Each run's logged training loss has a section and a figure of the report; beside the other tests of
    ``browser_comparison``, so a worker makes that comparison once."""
    folder, results, _ = browser_comparison
    report = (folder / "report.md").read_text(encoding="utf-8")
    assert "## Training loss" in report and "![training loss](training_loss.png)" in report
    assert (folder / "training_loss.png").is_file()
    assert [run["training_args"] for run in results.config["runs"]] == [{"logging_steps": 1}] * 2


def test_the_browser_holds_every_question_and_each_context_once(browser_comparison):
    out, results, _ = browser_comparison
    payload = page_payload(out / "report.html")
    assert payload["ids"] == [ex.id for ex in results.eval_examples] == ["b1", "b2", "b3", "b4", "b5"]
    assert payload["contexts"] == [context for context, _ in BROWSER_PARAGRAPHS]
    assert array(payload["paragraph"]).tolist() == [0, 0, 0, 1, 1]
    assert [(c["run"], c["decoding"], c["seed"]) for c in payload["cells"]] == [
        ("joint", "span", 1), ("joint", "bio", 1), ("joint", "joint", 1), ("span-only", "span", 1)]
    assert [g["name"] for g in payload["groups"]] == ["answer length (tokens)", "question word", "context length (tokens)"]
    words = payload["groups"][1]
    assert [words["labels"][k] for k in array(words["codes"])] == ["what", "who", "when", "what", "which"]


def test_every_highlight_is_the_exact_substring_it_stands_for(browser_comparison):
    out, results, _ = browser_comparison
    payload = page_payload(out / "report.html")
    paragraph = array(payload["paragraph"])
    context = lambda q: payload["contexts"][paragraph[q]]  # noqa: E731
    assert len(payload["cells"]) == len(results.cells) > 0
    for cell, entry in zip(results.cells, payload["cells"]):
        start, end = array(entry["start"]), array(entry["end"])
        shown = [utf16_slice(context(q), s, e) if s >= 0 else "" for q, (s, e) in enumerate(zip(start, end))]
        assert shown == cell.answers and entry["texts"] is None
        np.testing.assert_allclose(array(entry["f1"]), cell.f1, atol=1e-4)
    gold = array(payload["gold"]["offsets"]).reshape(-1, 2)
    assert [utf16_slice(context(q), *span) for q, span in enumerate(gold)] == [
        answer for _, questions in BROWSER_PARAGRAPHS for _, _, answer in questions]


def test_the_joint_models_word_probabilities_are_the_cached_ones(browser_comparison):
    out, _, _ = browser_comparison
    payload = page_payload(out / "report.html")
    joint, span_only = payload["models"]
    assert span_only["tags"] is None and joint["tags"] is not None
    tables = array(joint["tables"])
    assert tables.tolist() == [0, 0, 0, 1, 1]  # one word table per paragraph, however the windows fell
    counts = array(payload["wordTables"]["counts"])
    cached = next(iter(out.glob("cells/joint-*.browser.npz")))
    saved = np.load(cached)
    first_word = np.concatenate([[0], np.cumsum(saved["word_counts"])])
    code, starts = array(joint["tags"]), array(joint["tagStarts"])
    for q in range(5):
        assert counts[tables[q]] == saved["word_counts"][q]
        assert decode_zero_runs(code, starts[q], starts[q + 1]) == saved["tag_bytes"][first_word[q]:first_word[q + 1]].ravel().tolist()


def test_report_json_keeps_none_of_the_browsers_data(browser_comparison):
    out, _, _ = browser_comparison
    report = json.loads((out / "report.json").read_text())
    assert "browser" not in report and not any("word" in key or "tag_bytes" in key for cell in report["cells"] for key in cell)


@pytest.fixture
def comparison_copy(browser_comparison, tmp_path):
    out, _, _ = browser_comparison
    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    raw = json.loads((out / "report.json").read_text())["config"]
    return copy, parse_config(raw)


@pytest.mark.slow  # over 3 s alone on 2 cores
def test_a_rerun_renders_the_page_from_the_cache_without_the_model(comparison_copy, monkeypatch):
    copy, config = comparison_copy
    before = page_payload(copy / "report.html")
    (copy / "report.html").unlink()
    monkeypatch.setattr(TrainedModel, "load", lambda *a, **k: pytest.fail("the model was loaded"))
    compare(config, copy.parent, copy, progress=False)
    assert page_payload(copy / "report.html") == before


@pytest.mark.slow  # over 3 s alone on 2 cores
def test_cells_without_their_browser_data_are_scored_again(comparison_copy, monkeypatch):
    copy, config = comparison_copy
    for cached in copy.glob("cells/*.browser.npz"):
        cached.unlink()
    loads = []
    load = TrainedModel.load.__func__
    monkeypatch.setattr(TrainedModel, "load", classmethod(lambda cls, *a, **k: loads.append(a[0]) or load(cls, *a, **k)))
    compare(config, copy.parent, copy, progress=False)
    assert len(loads) == 2 and len(list(copy.glob("cells/*.browser.npz"))) == 2


def test_extract_html_draws_one_question_as_the_browser_does(browser_comparison, tmp_path, capsys):
    out, _, _ = browser_comparison
    model = next(out.glob("models/joint-*"))
    context = BROWSER_PARAGRAPHS[1][0]
    page = tmp_path / "one.html"
    assert main(["extract", "--model", str(model), "--question", "What does the tag hold?", "--context", context,
                 "--html", str(page)]) == 0
    printed = json.loads(capsys.readouterr().out)
    payload = page_payload(page)
    assert payload["ids"] == ["0"] and payload["contexts"] == [context] and payload["gold"] is None
    assert [c["decoding"] for c in payload["cells"]] == ["span", "bio", "joint"]
    start, end = array(payload["cells"][2]["start"])[0], array(payload["cells"][2]["end"])[0]
    assert utf16_slice(context, start, end) == printed["answer"]  # extract's default decoding is joint
    assert payload["models"][0]["tags"] is not None
    assert page.read_text(encoding="utf-8").count("</script>") == 2 and HOSTILE_TEXT in payload["contexts"][0]


def test_extract_html_with_multi_span_says_the_page_draws_each_decodings_best_span(browser_comparison, tmp_path, capsys):
    """The page draws one span an answer: with --multi-span the line said it drew every decoding's answer, which printed several."""
    out, _, _ = browser_comparison
    model = next(out.glob("models/joint-*"))
    page = tmp_path / "several.html"
    assert main(["extract", "--model", str(model), "--question", "What does the tag hold?", "--context", BROWSER_PARAGRAPHS[1][0],
                 "--multi-span", "--html", str(page)]) == 0
    assert f"page: {page} (every decoding's best span (the page draws one span an answer)" in capsys.readouterr().err
