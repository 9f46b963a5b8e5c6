"""``report.html``: the report and a question browser in one file that opens from disk with no network.

The report is ``report.md`` rendered to HTML (:mod:`.markdown_html`) with every plot embedded as a
base64 PNG data URI. The browser lists the evaluation questions (filters: A and B disagree, one right
and the other wrong, answer length, question word, context length, words of the question; sorted by
the F1 difference) and shows one at a time: its context with the gold answers and the answers of the
two decodings compared highlighted, the BIO head's per-word P(B) and P(I) shaded, and every cell's
answer, confidence, calibrated probability, F1 and EM. Its data is :mod:`.browser_payload`'s; its
script and style are the package files in ``assets/``. ``bio-mrc extract --html`` draws one question
the same way (:func:`extraction_page`).
"""

from __future__ import annotations

import base64
import html
import mimetypes
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence


from ..io import atomic_write_text
from .browser_data import model_browser_data
from .browser_payload import BrowserCell, browser_payload, payload_json
from .markdown_html import markdown_to_html
from .results import Cell, ComparisonResults
from .summary_records import Contrast, Summary

if TYPE_CHECKING:
    from ..inference.extract import AnswerExtractor

ASSETS = Path(__file__).parent / "assets"
_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")


def data_uri(path: Path) -> str | None:
    """A file as a ``data:`` URI (a plot in the page itself), None when there is no such file."""
    if not path.is_file():
        return None
    kind = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    return f"data:{kind};base64,{base64.b64encode(path.read_bytes()).decode('ascii')}"


def report_fragment(markdown: str, folder: Path) -> str:
    """The report's Markdown as HTML, its images (paths relative to ``folder``) embedded."""
    def embedded(src: str) -> str | None:
        inside = (folder / src).resolve()
        return data_uri(inside) if inside.is_relative_to(folder.resolve()) else None  # only the report's own files

    return markdown_to_html(markdown, embedded)


def render_page(title: str, report_html: str = "", payload: Mapping[str, Any] | None = None) -> str:
    """The whole page: the report (may be empty) and the browser of ``payload`` (None: no browser)."""
    values = {
        "title": html.escape(title), "report": report_html, "data": payload_json(payload) if payload is not None else "null",
        "style": (ASSETS / "report.css").read_text(encoding="utf-8"), "script": (ASSETS / "browser.js").read_text(encoding="utf-8"),
    }
    template = (ASSETS / "page.html").read_text(encoding="utf-8")
    return _PLACEHOLDER.sub(lambda match: values[match.group(1)], template)  # one pass: inserted text is never rescanned


def _default_pair(cells: Sequence[Cell], contrasts: Sequence[Contrast]) -> tuple[int, int]:
    """The cells the browser compares first: the report's first contrast on its first shared seed, else the first two cells."""
    for contrast in contrasts[:1]:
        for k, cell in enumerate(cells):
            partner = [j for j, other in enumerate(cells) if other.key == contrast.b and other.seed == cell.seed]
            if cell.key == contrast.a and partner:
                return k, partner[0]
    return 0, min(1, len(cells) - 1)


def comparison_payload(results: ComparisonResults, summary: Summary, groups: Mapping[str, Sequence[str]]) -> dict[str, Any] | None:
    """The browser's data of a comparison whose cells score each answer by F1 (SQuAD; None for others: MultiSpanQA has
    no single answer to browse)."""
    if not results.cells or results.cells[0].f1 is None:
        return None
    models = [(entry["run"], entry["seed"], entry["data"]) for entry in results.browser]
    where = {(run, seed): k for k, (run, seed, _) in enumerate(models)}
    cells = []
    for cell in results.cells:
        model = where.get((cell.run, cell.seed))
        data = models[model][2] if model is not None else None
        offsets = data.span_offsets[data.decodings.index(cell.decoding)] if data and cell.decoding in data.decodings else None
        confidence = (cell.selective or {}).get("confidence", {})
        cells.append(BrowserCell(cell.run, cell.seed, cell.decoding, cell.answers, offsets, model, cell.f1, cell.em,
                                 confidence.get("raw"), confidence.get("calibrated")))
    title = f"Comparison {results.config['name']}: {results.eval['description']}"
    pair = _default_pair(results.cells, summary.contrasts)
    return browser_payload(results.eval_examples, cells, models, groups, pair, title)


def write_html_report(
    results: ComparisonResults, summary: Summary, markdown: str, output_dir: Path, groups: Mapping[str, Sequence[str]]
) -> Path:
    """Write ``report.html`` beside ``report.md`` and its plots."""
    page = render_page(f"Comparison report: {results.config['name']}", report_fragment(markdown, output_dir),
                       comparison_payload(results, summary, groups))
    return atomic_write_text(output_dir / "report.html", page)


def extraction_page(extractor: "AnswerExtractor", question: str, context: str) -> str:
    """One question about one text, as the comparison's browser draws it: the answer of every
    decoding the model has (its best span, with the saved thresholds and calibration), with its
    confidence and probability, and the BIO head's per-word probabilities."""
    examples, _ = extractor.examples(question, context)
    outputs = extractor.trained.windows(examples, batch_size=extractor.batch_size, progress=False)
    decodings = extractor.trained.decodings
    predictions = dict(zip(decodings, extractor.predict_each(outputs, examples, decodings, multi_span=False)))
    model = model_browser_data(outputs, examples, predictions)
    name = extractor.trained.shown_name or "model"
    cells = [BrowserCell(name, None, d, [p.answer for p in predictions[d]], model.span_offsets[k], 0,
                         confidence=[p.confidence or 0.0 for p in predictions[d]],
                         probability=None if predictions[d][0].probability is None else [p.probability for p in predictions[d]])
             for k, d in enumerate(decodings)]
    payload = browser_payload(examples, cells, [(name, None, model)], {}, (0, min(1, len(cells) - 1)), question)
    return render_page(f"bio-mrc extract: {question}", "", payload)
