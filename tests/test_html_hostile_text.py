"""report.html and report.md of a comparison whose every text a user writes is hostile: questions, contexts, answers,
ids, the description, the data file's, the encoder's and the earlier report's paths. Each shows as the text it is,
never as markup or script, and the page's data reads back as it was given."""

import html
import json
import re
import shutil
from html.parser import HTMLParser

import pytest

from bio_mrc.harness.compare import compare
from bio_mrc.harness.config import parse_config

from .conftest import FIXTURES, SAMPLE_V1

DATA = re.compile(r'<script type="application/json" id="browser-data">(.*?)</script>', re.S)
SCRIPT = "<script>alert(1)</script>"
CLOSE = "</script><img src=x onerror=alert(1)>"
QUOTE = "\"'><svg onload=alert(1)>"
LINK = "[click](javascript:alert(1))"
SEPARATORS = "a\u2028b\u2029c"
PARAGRAPHS = [
    (f"First {CLOSE} then {QUOTE} and {LINK} end. Lines {SEPARATORS} here.",
     [("q\"1\\'", SCRIPT, CLOSE), ("q2<b>", f"Which {QUOTE}?", QUOTE)]),
    (f"A {LINK} here & {SCRIPT} there.", [("q3\u2028", "What link?", LINK), ("q4", "What script?", SCRIPT)]),
]
# A folder name may hold all of these but ``/``: backticks that would end a code span, HTML, a link, a table's bar.
FOLDER = "x `y` <img src=x onerror=alert(1)> [l](javascript:alert(1)) | ``"


class Tags(HTMLParser):
    """Every element of a page with its attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, list[tuple[str, str | None]]]] = []

    def handle_starttag(self, tag, attrs):
        self.found.append((tag, attrs))


def write_eval_file(folder):
    paragraphs = [{"context": context, "qas": [{"id": qid, "question": question,
                                                "answers": [{"text": answer, "answer_start": context.index(answer)}]}
                                               for qid, question, answer in questions]}
                  for context, questions in PARAGRAPHS]
    path = folder / f"eval {FOLDER}.json"
    path.write_text(json.dumps({"version": "1.1", "data": [{"title": "T", "paragraphs": paragraphs}]}), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def hostile_comparison(tiny_encoder_dir, tmp_path_factory):
    """The comparison, and a second one that reads its cells from a copy of its report.json under a hostile name."""
    folder = tmp_path_factory.mktemp("hostile")
    data = folder / f"data {FOLDER}"
    data.mkdir()
    encoder = shutil.copytree(tiny_encoder_dir, folder / f"encoder {FOLDER}")
    raw = {
        "name": "hostile", "description": f"{SCRIPT} {QUOTE} {LINK} {SEPARATORS}",
        "train": {"path": str(SAMPLE_V1)}, "eval": {"path": str(write_eval_file(data))},
        "defaults": {"encoder": str(encoder), "max_seq_length": 96, "doc_stride": 32, "max_query_length": 32,
                     "epochs": 1, "batch_size": 4, "learning_rate": 1e-3},
        "runs": [{"name": "joint", "heads": "span+bio", "bio_targets": "one-hot"}, {"name": "span-only", "heads": "span"}],
        "seeds": [1],
    }
    compare(parse_config(raw), FIXTURES, folder / "out", progress=False)
    earlier = shutil.copy(folder / "out" / "report.json", data / f"earlier {FOLDER}.json")
    compare(parse_config(raw), FIXTURES, folder / "again", progress=False, cells_from=earlier)
    return folder, encoder, earlier


@pytest.mark.parametrize("report", ["out", "again"])
def test_no_text_of_the_users_becomes_markup_or_script(hostile_comparison, report):
    folder, _, _ = hostile_comparison
    page = (folder / report / "report.html").read_text(encoding="utf-8")
    parser = Tags()
    parser.feed(page)
    assert {tag for tag, _ in parser.found} <= {"html", "head", "meta", "title", "style", "body", "header", "nav", "button", "main",
                                                "section", "h1", "h2", "h3", "p", "ul", "li", "code", "pre", "strong", "em", "div",
                                                "table", "thead", "tbody", "tr", "th", "td", "img", "form", "fieldset", "legend",
                                                "label", "select", "option", "span", "input", "article", "script", "a"}
    assert [tag for tag, _ in parser.found].count("script") == 2  # the data and the code
    assert not [name for _, attrs in parser.found for name, _ in attrs if name.startswith("on") and name != "onsubmit"]
    assert all(value.startswith("data:image/png;base64,") for tag, attrs in parser.found if tag == "img" for name, value in attrs if name == "src")
    assert not [value for _, attrs in parser.found for name, value in attrs if name == "href" and ":" in (value or "")]


def test_the_browsers_data_is_safe_in_its_script_and_reads_back_as_given(hostile_comparison):
    folder, _, _ = hostile_comparison
    page = (folder / "out" / "report.html").read_text(encoding="utf-8")
    text = DATA.search(page).group(1)
    assert not set("<>&\u2028\u2029") & set(text)
    payload = json.loads(text)
    questions = [question for _, qas in PARAGRAPHS for question in qas]
    assert payload["ids"] == [qid for qid, _, _ in questions] and payload["questions"] == [q for _, q, _ in questions]
    assert payload["contexts"] == [context for context, _ in PARAGRAPHS]
    assert payload["title"].endswith(f"data {FOLDER}/eval {FOLDER}.json")


def test_a_path_with_backticks_and_markup_shows_whole_in_one_code_span(hostile_comparison):
    folder, encoder, earlier = hostile_comparison
    page = (folder / "again" / "report.html").read_text(encoding="utf-8")
    assert f"<li>Encoder(s): <code>{html.escape(str(encoder))}</code></li>" in page
    assert f"<li>Cells read from an earlier report, <code>{html.escape(str(earlier))}</code> (" in page
    assert f"<li>Evaluation: {html.escape(str(folder / f'data {FOLDER}' / f'eval {FOLDER}.json'))}: 4 questions" in page
    markdown = (folder / "again" / "report.md").read_text(encoding="utf-8")
    assert f"- Encoder(s): ``` {encoder} ```\n" in markdown  # a fence longer than any run of backticks in the path
    assert f"- Cells read from an earlier report, ```{earlier}``` (" in markdown
