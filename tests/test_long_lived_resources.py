"""What a long-lived process keeps after calling the package: a read refused part-way through its file holds the file
no longer than the call, however long the caller keeps the error (a log, a list of failures, a notebook's last
exception, the traceback of a test)."""

from __future__ import annotations

import gzip
import json
import os
import sys
from pathlib import Path

import pytest

from bio_mrc.data.squad import load_squad, stream_squad
from bio_mrc.errors import DataFormatError

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self: Linux alone")

GOOD = [{"id": f"q{i}", "question": "Who wrote it?", "context": "Ada wrote it.", "answers": {"text": ["Ada"], "answer_start": [0]}} for i in range(8)]
BAD = [*GOOD[:5], {**GOOD[5], "answers": {"text": ["Bob"], "answer_start": [0]}}, *GOOD[6:]]  # found while reading


def opened_under(folder: Path) -> list[str]:
    """The files under ``folder`` this process holds open, or memory-maps."""
    held = []
    for descriptor in os.listdir("/proc/self/fd"):
        try:
            held.append(os.readlink(f"/proc/self/fd/{descriptor}"))
        except OSError:  # the listing's own descriptor, closed since
            pass
    with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
        held += [line.split(maxsplit=5)[-1].strip() for line in maps if str(folder) in line]
    return sorted({path for path in held if path.startswith(str(folder))})


def _jsonl(path: Path, rows: list[dict]) -> Path:
    with (gzip.open if path.suffix == ".gz" else open)(path, "wt", encoding="utf-8") as handle:
        handle.writelines(json.dumps(row) + "\n" for row in rows)
    return path


def _squad_json(path: Path, rows: list[dict]) -> Path:
    qas = [
        {"id": row["id"], "question": row["question"], "answers": [{"text": row["answers"]["text"][0], "answer_start": row["answers"]["answer_start"][0]}]}
        for row in rows
    ]
    path.write_text(json.dumps({"version": "1.1", "data": [{"title": "t", "paragraphs": [{"context": "Ada wrote it.", "qas": qas}]}]}), encoding="utf-8")
    return path


def _saved_dataset(path: Path, rows: list[dict]) -> Path:
    import datasets

    datasets.Dataset.from_list(rows).save_to_disk(str(path))
    return path


SOURCES = {
    "jsonl": lambda folder, rows: _jsonl(folder / "data.jsonl", rows),
    "jsonl.gz": lambda folder, rows: _jsonl(folder / "data.jsonl.gz", rows),
    "squad json": lambda folder, rows: _squad_json(folder / "data.json", rows),
    "saved dataset": lambda folder, rows: _saved_dataset(folder / "saved", rows),
}
READS = {"load_squad": lambda path: load_squad(path).examples, "stream_squad": lambda path: list(stream_squad(path))}


@pytest.mark.parametrize("read", READS)
@pytest.mark.parametrize("source", SOURCES)
def test_a_read_refused_part_way_holds_no_file_while_its_error_is_kept(tmp_path, source, read):
    path = SOURCES[source](tmp_path, BAD)
    with pytest.raises(DataFormatError, match="q5") as refused:  # the error's traceback is kept, as a caller may keep it
        READS[read](path)
    assert refused.value.__traceback__ is not None
    assert opened_under(tmp_path) == []


@pytest.mark.parametrize("read", READS)
@pytest.mark.parametrize("source", SOURCES)
def test_a_whole_read_holds_no_file(tmp_path, source, read):
    path = SOURCES[source](tmp_path, GOOD)
    assert [example.id for example in READS[read](path)] == [row["id"] for row in GOOD]
    assert opened_under(tmp_path) == []


def test_a_stream_left_part_way_holds_its_file_until_it_is_closed(tmp_path):
    """A caller that stops iterating keeps the file open while it keeps the iterator (its next question may come),
    and closing the iterator closes the file."""
    questions = iter(stream_squad(_jsonl(tmp_path / "data.jsonl", GOOD)))
    assert next(questions).id == "q0"
    assert opened_under(tmp_path) == [str(tmp_path / "data.jsonl")]
    questions.close()
    assert opened_under(tmp_path) == []


def test_a_cached_browser_file_that_is_no_archive_holds_no_file(tmp_path):
    """A comparison's cached browser data cut short (a zip file's first bytes, no directory) is read as none, so it is
    made again; NumPy's reader left the file open where its archive could not be read."""
    import zipfile

    from bio_mrc.harness.browser_data import load_browser_data

    path = tmp_path / "m-key.browser.npz"
    path.write_bytes(b"PK\x03\x04" + b"\0" * 60)
    with pytest.raises(zipfile.BadZipFile) as refused:
        load_browser_data(path)
    assert refused.value.__traceback__ is not None
    assert opened_under(tmp_path) == []
