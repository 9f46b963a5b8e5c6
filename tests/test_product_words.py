"""The product speaks of itself alone: its code, docs and tests name no issue tracker's numbers, no brief,
and no one site's machines or limits (the GPU runner is for any GPU machine without network access)."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEXT_SUFFIXES = {".py", ".md", ".json", ".toml", ".txt", ".js", ".css", ".html", ".cfg", ".yaml", ".yml"}
WORDS = re.compile(r"\blent\b|device tool|\$OUT\b|device time|\bissue [0-9]|\bthe brief\b", re.I)


def checked_files() -> list[Path]:
    """The README, the changelog, docs/, the benchmarks' own notes, scripts and plans (not the generated reports),
    tools/, bio_mrc/ and tests/, this file excepted."""
    files = [ROOT / "README.md", ROOT / "CHANGELOG.md"]
    for folder in ("docs", "benchmarks", "tools", "bio_mrc", "tests"):
        files += sorted(path for path in (ROOT / folder).rglob("*") if path.is_file() and path.suffix in TEXT_SUFFIXES)
    reports = ROOT / "benchmarks" / "reports"
    return [path for path in files if path.exists() and not path.is_relative_to(reports)
            and path.resolve() != Path(__file__).resolve() and "__pycache__" not in path.parts]


def test_no_tracker_numbers_brief_or_site_words():
    found = []
    for path in checked_files():
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if match := WORDS.search(line):
                found.append(f"{path.relative_to(ROOT).as_posix()}:{number}: {match.group(0)!r}")
    assert not found, "words that do not belong in the product:\n" + "\n".join(found)


def test_the_check_finds_what_it_looks_for():
    for line in ("on a lent H100", "the device tool carries", "files in $OUT", "15 minutes of device time",
                 "(issue 31)", "the brief's reference"):
        assert WORDS.search(line), line
    for line in ("an excellent, silent, equivalent result", "$OUTPUT", "the device's time", "issues 3"):
        assert not WORDS.search(line), line
