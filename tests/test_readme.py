"""Every snippet marked ``<!-- tested snippet -->`` in the README or a ``docs/`` page runs as written, on a tiny model.

Snippets find "the model the main command trained" with ``glob("runs/quick/models/joint-seed42-*")``;
here that path is a tiny trained joint model in a temporary working directory. The heads snippet
(``<!-- tested snippet: heads -->``) uses names the surrounding text defines; the test supplies them.
Every ``docs/`` page is linked from the README, and every relative link of the README and the
pages (images included) points to a file or folder of the repository, and to a heading of it where
the link names one.
"""

import re
import shutil
from pathlib import Path

import pytest
import torch


ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
SNIPPET = re.compile(r"<!-- tested snippet(?:: (?P<name>[\w-]+))? -->\n```python\n(?P<code>.*?)```", re.S)
FENCE = re.compile(r"^```.*?^```[^\n]*$", re.S | re.M)
LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def pages() -> list[Path]:
    """The README and every docs/ page: where the project's prose and its snippets live."""
    return [README, *sorted(DOCS.glob("*.md"))]


def linked_pages() -> list[Path]:
    """Every hand-written page whose links must hold: the README, docs/, the benchmarks' notes and the GPU runner's."""
    return [*pages(), *(ROOT / "benchmarks" / name for name in ("README.md", "RESULTS.md", "gpu/README.md")), ROOT / "tools" / "gpu" / "README.md"]


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


def heads_namespace() -> dict:
    """What the text around the heads snippet names: any encoder's states and the labels."""
    torch.manual_seed(0)
    batch, seq, hidden_size = 2, 7, 16
    tag_mask = torch.zeros(batch, seq, dtype=torch.long)
    tag_mask[:, 2:] = 1
    bio_targets = torch.full((batch, seq), 2)
    bio_targets[0, 3], bio_targets[0, 4] = 0, 1
    return {
        "hidden_size": hidden_size, "states": torch.randn(batch, seq, hidden_size, requires_grad=True),
        "bio_targets": bio_targets, "tag_mask": tag_mask, "start_positions": torch.tensor([3, 0]),
        "end_positions": torch.tensor([4, 0]), "attention_mask": torch.ones(batch, seq, dtype=torch.long),
    }


@pytest.mark.parametrize("name,code", snippets(), ids=[name for name, _ in snippets()])
def test_readme_snippet_runs_as_written(name, code, trained_dir, tmp_path, monkeypatch):  # noqa: F811
    models = tmp_path / "runs" / "quick" / "models"
    models.mkdir(parents=True)
    shutil.copytree(trained_dir, models / "joint-seed42-0123456789ab")
    monkeypatch.chdir(tmp_path)
    namespace = heads_namespace() if name == "heads" else {}
    exec(compile(code, name, "exec"), namespace)  # noqa: S102
    if name == "heads":
        namespace["loss"].backward()
        assert torch.isfinite(namespace["loss"]) and namespace["states"].grad is not None


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    found = set()
    for line in FENCE.sub("", page.read_text(encoding="utf-8")).splitlines():
        if m := re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line):
            base = slug(m.group(1))
            found.add(base if base not in seen else f"{base}-{seen[base]}")
            seen[base] = seen.get(base, 0) + 1
    return found


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
        if not resolved.exists():
            broken.append(f"{target} (no {resolved.relative_to(ROOT) if resolved.is_relative_to(ROOT) else resolved})")
        elif fragment and resolved.suffix == ".md" and fragment not in anchors(resolved):
            broken.append(f"{target} (no heading #{fragment} in {resolved.relative_to(ROOT)})")
    assert not broken, f"{page.relative_to(ROOT)} links to what does not exist: {broken}"


def test_every_docs_page_is_linked_from_the_readme():
    linked = {(ROOT / target.partition("#")[0]).resolve() for target in links(README)}
    pages_ = sorted(DOCS.glob("*.md"))
    assert pages_, "docs/ has no pages"
    missing = [page.relative_to(ROOT).as_posix() for page in pages_ if page.resolve() not in linked]
    assert not missing, f"README.md does not link these docs pages: {missing}"
