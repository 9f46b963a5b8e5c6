"""Atomic writes: a file has its old content or its complete new content, and no temporary file stays behind."""

import json
import os
import stat

import pytest

from bio_mrc import io
from bio_mrc.io import atomic_move_files, atomic_write_json, atomic_write_text


def test_write_text_creates_and_replaces(tmp_path):
    path = tmp_path / "out.txt"
    assert atomic_write_text(str(path), "first") == path
    assert atomic_write_text(path, "zweite Fassung é", encoding="latin-1") == path
    assert path.read_text(encoding="latin-1") == "zweite Fassung é"
    assert os.listdir(tmp_path) == ["out.txt"]


def test_new_files_get_the_umask_permissions_not_tempfiles_0600(tmp_path):
    old = os.umask(0o022)
    try:
        atomic_write_text(tmp_path / "out.txt", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "out.txt").stat().st_mode) == 0o644


def test_a_failed_rename_keeps_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "report.json"
    path.write_text("old")

    def crash(src, dst):
        raise OSError("disk gone")

    monkeypatch.setattr(io.os, "replace", crash)
    with pytest.raises(OSError, match="disk gone"):
        atomic_write_text(path, "new")
    assert path.read_text() == "old"
    assert os.listdir(tmp_path) == ["report.json"]  # the temporary file is removed too


def test_a_failed_write_leaves_no_file(tmp_path):
    with pytest.raises(UnicodeEncodeError):
        atomic_write_text(tmp_path / "out.txt", "snowman ☃", encoding="ascii")
    assert os.listdir(tmp_path) == []


def test_json_that_does_not_serialise_writes_nothing(tmp_path):
    path = tmp_path / "record.json"
    atomic_write_json(path, {"a": [1, 2]}, indent=2)
    assert path.read_text() == json.dumps({"a": [1, 2]}, indent=2)
    with pytest.raises(TypeError):
        atomic_write_json(path, {"a": object()})
    assert json.loads(path.read_text()) == {"a": [1, 2]}
    assert os.listdir(tmp_path) == ["record.json"]


def test_move_files_replaces_the_targets(tmp_path):
    source, target = tmp_path / "staging", tmp_path / "model"
    source.mkdir()
    target.mkdir()
    (source / "a.bin").write_bytes(b"new a")
    (source / "b.json").write_text("{}")
    (target / "a.bin").write_bytes(b"old a")
    (target / "keep.txt").write_text("other")
    assert atomic_move_files(source, target) == [target / "a.bin", target / "b.json"]
    assert (target / "a.bin").read_bytes() == b"new a"
    assert sorted(os.listdir(target)) == ["a.bin", "b.json", "keep.txt"]
    assert os.listdir(source) == []


def test_move_files_refuses_folders(tmp_path):
    (tmp_path / "staging" / "sub").mkdir(parents=True)
    with pytest.raises(IsADirectoryError):
        atomic_move_files(tmp_path / "staging", tmp_path)
