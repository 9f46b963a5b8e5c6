"""docs/layout.md's module tree is the package's: every module of ``bio_mrc/`` stands there under its folder, and
every module it names exists. A module added without a line there, or removed with its line left, fails here."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LAYOUT = REPO / "docs" / "layout.md"
ENTRY = re.compile(r"^(?P<indent>(?:  )+)(?P<name>[\w.]+/|\w+\.py)(?:\s|$)")  # two spaces a level; continuations go deeper


def tree_lines(text: str) -> list[str]:
    """The lines of the code block that starts with ``bio_mrc/``, up to the first line back at the margin."""
    lines = text.splitlines()
    start = lines.index("bio_mrc/")
    end = next(i for i in range(start + 1, len(lines)) if not lines[i].startswith(" "))
    return lines[start + 1:end]


def named_modules(text: str) -> list[str]:
    """Every module the tree names, as a path under ``bio_mrc/`` (``data/formats.py``)."""
    folders: list[str] = []
    modules = []
    for line in tree_lines(text):
        match = ENTRY.match(line)
        if match is None or len(match["indent"]) // 2 > len(folders) + 1:
            continue  # a description's continuation line
        folders = folders[: len(match["indent"]) // 2 - 1]
        if match["name"].endswith("/"):
            folders.append(match["name"].rstrip("/"))
        else:
            modules.append("/".join([*folders, match["name"]]))
    return modules


def package_modules() -> set[str]:
    return {path.relative_to(REPO / "bio_mrc").as_posix() for path in (REPO / "bio_mrc").rglob("*.py")
            if path.name != "__init__.py"}


def test_the_tree_reads_folders_modules_and_skips_continuation_lines():
    text = "```\nbio_mrc/\n  a.py    one\n          two.py is mentioned, not named\n  pkg/    p\n    b.py  x\n    sub/\n" \
           "      c.py\n  d.py\nbenchmarks/\n```\n"
    assert named_modules(text) == ["a.py", "pkg/b.py", "pkg/sub/c.py", "d.py"]


def test_layout_md_names_every_module_of_the_package():
    missing = sorted(package_modules() - set(named_modules(LAYOUT.read_text(encoding="utf-8"))))
    assert not missing, f"docs/layout.md's tree does not name {len(missing)} module(s): {', '.join(missing)}"


def test_every_module_layout_md_names_exists_once():
    named = named_modules(LAYOUT.read_text(encoding="utf-8"))
    absent = sorted(set(named) - package_modules())
    assert not absent, f"docs/layout.md's tree names module(s) that do not exist: {', '.join(absent)}"
    twice = sorted({name for name in named if named.count(name) > 1})
    assert not twice, f"docs/layout.md's tree names module(s) twice: {', '.join(twice)}"
