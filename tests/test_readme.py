"""Every snippet marked ``<!-- tested snippet -->`` in the README or a ``docs/`` page runs as written, on a tiny model.

Snippets find "the model the main command trained" with ``glob("runs/quick/models/joint-seed42-*")``, and
the quick start's model as ``my-model``; here both are a tiny trained joint model in a temporary working directory. The heads snippet
(``<!-- tested snippet: heads -->``) stands alone: it loads the embedded default encoder.
The README's quick start runs as printed: its files (``<!-- quick start file: NAME -->``) are written
and its commands (``<!-- quick start commands -->``) run, with the tiny test encoder (and windows it
can hold) in place of the default one.
Every ``docs/`` page is linked from the README, and every relative link of the README, the pages and
every Markdown file under ``benchmarks/`` (its notes and the archived comparison reports; images included)
points to a file or folder of the repository, and to a heading of it where the link names one.
"""

import contextlib
import functools
import json
import re
import shlex
import shutil
from pathlib import Path

import pytest
import torch

from bio_mrc.data.drop import NumericAnswersWarning
from bio_mrc.inference.abstention import NeverAbstainsWarning
from bio_mrc.inference.long_questions import LongQuestionWarning

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
SNIPPET = re.compile(r"<!-- tested snippet(?:: (?P<name>[\w-]+))? -->\n```python\n(?P<code>.*?)```", re.S)
FENCE = re.compile(r"^```.*?^``` *$", re.S | re.M)
QUICK_FILE = re.compile(r"<!-- quick start file: (?P<name>[\w.-]+) -->\n```\n(?P<text>.*?)```", re.S)
QUICK_COMMANDS = re.compile(r"<!-- quick start commands -->\n```bash\n(?P<commands>.*?)```", re.S)
TINY_WINDOWS = ["--max-seq-length", "48", "--doc-stride", "16", "--max-query-length", "12"]
LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def pages() -> list[Path]:
    """The README and every docs/ page: where the project's prose and its snippets live."""
    return [README, *sorted(DOCS.glob("*.md"))]


def linked_pages() -> list[Path]:
    """Every page whose links must hold: the README, docs/, the changelog, the GPU runner's notes and every Markdown file
    under benchmarks/, its notes and the committed comparison reports (a report's figures are committed beside it)."""
    return [*pages(), ROOT / "CHANGELOG.md", *sorted((ROOT / "benchmarks").rglob("*.md")), ROOT / "tools" / "gpu" / "README.md"]


def snippets() -> list[tuple[str, str]]:
    found = []
    for page in pages():
        text = page.read_text(encoding="utf-8")
        where = page.relative_to(ROOT).as_posix()
        found += [(m.group("name") or f"{where} line {text[: m.start()].count(chr(10)) + 1}", m.group("code"))
                  for m in SNIPPET.finditer(text)]
    assert len(found) >= 5, "the README and docs/ lost their tested snippets"
    assert len({name for name, _ in found}) == len(found), "two tested snippets share a name"
    assert "heads" in {name for name, _ in found}, "the heads snippet is gone"
    return found


SLOW_SNIPPETS = {"compare-api"}  # it runs a comparison: over 3 s alone on 2 cores
# The warnings a snippet gives, each asserted (any other fails it): the tests' model reads questions of 12 tokens, and
# the tiny vocabulary spells most words a letter a token.
SNIPPET_WARNINGS = {
    "calibration-threshold": [LongQuestionWarning],
    "pipeline-call": [LongQuestionWarning, NeverAbstainsWarning],  # handle_impossible_answer=True on an untuned model
    "data-drop": [NumericAnswersWarning],  # the file's numeric answer is left out, as the page says
}


@pytest.mark.parametrize("name,code", [pytest.param(name, code, id=name, marks=[pytest.mark.slow] if name in SLOW_SNIPPETS else [])
                                       for name, code in snippets()])
def test_readme_snippet_runs_as_written(name, code, trained_dir, tmp_path, monkeypatch):  # noqa: F811
    models = tmp_path / "runs" / "quick" / "models"
    models.mkdir(parents=True)
    shutil.copytree(trained_dir, models / "joint-seed42-0123456789ab")
    shutil.copytree(trained_dir, tmp_path / "my-model")  # the README's quick start trains it
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    with contextlib.ExitStack() as expected:
        for category in SNIPPET_WARNINGS.get(name, []):
            expected.enter_context(pytest.warns(category))
        exec(compile(code, name, "exec"), namespace)  # noqa: S102
    if name == "heads":  # the snippet's backward pass reached both heads
        assert torch.isfinite(namespace["loss"])
        assert all(p.grad is not None for head in (namespace["bio"], namespace["span"]) for p in head.parameters())
        stated = re.search(r"print\(bio_targets\[tag_mask\]\.tolist\(\)\)  # (\[[\d, ]+\])", code)
        assert stated, "the heads snippet no longer states the tags it prints"
        assert namespace["bio_targets"][namespace["tag_mask"]].tolist() == json.loads(stated.group(1))


def test_readme_first_commands_come_first():
    lines = README.read_text(encoding="utf-8").splitlines()
    first = next(i for i, line in enumerate(lines, 1) if line.startswith("```bash"))
    assert first <= 40, f"the README's first command block starts at line {first}, past its first 40 lines"


@pytest.mark.slow
def test_readme_quick_start_runs_as_printed(tiny_encoder_dir, tmp_path, monkeypatch, capsys):
    from bio_mrc.cli import main

    text = README.read_text(encoding="utf-8")
    files = {m.group("name"): m.group("text") for m in QUICK_FILE.finditer(text)}
    assert {"my.csv", "questions.jsonl", "doc.txt"} <= set(files), "the quick start lost one of its files"
    commands = QUICK_COMMANDS.search(text)
    assert commands, "the quick start lost its commands"
    monkeypatch.chdir(tmp_path)
    for name, content in files.items():
        (tmp_path / name).write_text(content, encoding="utf-8")
    steps = [shlex.split(line) for line in commands.group("commands").splitlines() if line.strip()]
    assert [argv[:2] for argv in steps] == [["bio-mrc", "train"], ["bio-mrc", "predict"], ["bio-mrc", "extract"]]
    for argv in steps:
        args = argv[1:]
        if args[0] == "train":  # the tiny encoder instead of the default one, on windows it can hold
            args += ["--encoder", str(tiny_encoder_dir), *TINY_WINDOWS]
        assert main(args) == 0, f"`{shlex.join(argv)}` failed: {capsys.readouterr().err[-2000:]}"
        if args[0] == "extract":
            assert capsys.readouterr().out.strip(), "extract printed no answer"
    predictions = json.loads((tmp_path / "preds.json").read_text(encoding="utf-8"))
    lines = [json.loads(line) for line in (tmp_path / "preds.answers.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(predictions) == 2 and {line["id"] for line in lines} == set(predictions)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


@functools.cache  # a long page links to its own headings many times: its anchors read once
def anchors(page: Path) -> frozenset[str]:
    seen: dict[str, int] = {}
    found = set()
    for line in FENCE.sub("", page.read_text(encoding="utf-8")).splitlines():
        if m := re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line):
            base = slug(m.group(1))
            found.add(base if base not in seen else f"{base}-{seen[base]}")
            seen[base] = seen.get(base, 0) + 1
    return frozenset(found)


def links(page: Path) -> list[str]:
    """The targets of a page's Markdown links and images, outside code blocks and code spans."""
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    text = re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", "", text)  # code spans: `[a](b)` there is an example, not a link
    return LINK.findall(text)


@pytest.mark.parametrize("page", linked_pages(), ids=lambda page: page.relative_to(ROOT).as_posix())
def test_relative_links_point_to_files(page):
    broken = []
    for target in links(page):
        if re.match(r"[a-z][a-z0-9+.-]*:", target, re.I):  # http:, https:, mailto: ...
            continue
        path, _, fragment = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.is_relative_to(ROOT):
            broken.append(f"{target} (outside the repository)")
        elif not resolved.exists():
            broken.append(f"{target} (no {resolved.relative_to(ROOT)})")
        elif fragment and resolved.suffix == ".md" and fragment not in anchors(resolved):
            broken.append(f"{target} (no heading #{fragment} in {resolved.relative_to(ROOT)})")
    assert not broken, f"{page.relative_to(ROOT)} links to what does not exist: {broken}"


SUMMARY_ROW = re.compile(r"^\|(?:[^|]*\|){2} *\d{4}-\d{2}-\d{2}[^|]*\|[^|]*\| *\[[^\]]*\]\(#[^)]+\) *\|$")


def test_results_summary_rows_lie_in_the_summary_table():
    """A row of the lab notebook's summary (figure, command, date, machine, section link) lies in its Summary table,
    not inside an entry's own table, where the summary would lack it."""
    lines = (ROOT / "benchmarks" / "RESULTS.md").read_text(encoding="utf-8").splitlines()
    start, end = lines.index("## Summary"), lines.index("### Superseded")
    rows = [number for number, line in enumerate(lines) if SUMMARY_ROW.match(line)]
    assert rows and start < rows[0] < end, "the Summary table lost its rows"
    astray = [number + 1 for number in rows if not start < number < end]
    assert not astray, f"benchmarks/RESULTS.md: summary rows outside the Summary table, at lines {astray}"


OPENING_FENCE = re.compile(r"^(`{3,})[^`]*$")


def unclosed_fences(text: str) -> list[str]:
    """The code blocks a page leaves open, read as CommonMark reads them: a block closes only at a line of at least its
    fence's backticks and nothing else but spaces, so a fence with text after it on its line (a paragraph run on after
    the closing backticks) closes nothing, and the prose after it renders as code."""
    problems, fence, opened = [], "", 0
    for number, line in enumerate(text.splitlines(), 1):
        if not fence:
            match = OPENING_FENCE.match(line)
            fence, opened = (match.group(1), number) if match else ("", 0)
        elif re.fullmatch(rf"{fence}`* *", line):
            fence = ""
        elif line.startswith("```"):
            problems.append(f"line {number}: text after the backticks, so it does not close the block of line {opened}")
    return problems + ([f"line {opened}: its code block never closes"] if fence else [])


@pytest.mark.parametrize("page", linked_pages(), ids=lambda page: page.relative_to(ROOT).as_posix())
def test_code_blocks_close_where_they_end(page):
    assert unclosed_fences("```\ncode\n``` prose\n") == ["line 3: text after the backticks, so it does not close the "
                                                           "block of line 1", "line 1: its code block never closes"]
    problems = unclosed_fences(page.read_text(encoding="utf-8"))
    assert not problems, f"{page.relative_to(ROOT)}: {problems}"


def test_every_docs_page_is_linked_from_the_readme():
    linked = {(ROOT / target.partition("#")[0]).resolve() for target in links(README)}
    pages_ = sorted(DOCS.glob("*.md"))
    assert pages_, "docs/ has no pages"
    missing = [page.relative_to(ROOT).as_posix() for page in pages_ if page.resolve() not in linked]
    assert not missing, f"README.md does not link these docs pages: {missing}"
