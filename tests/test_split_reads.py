"""A comparison's splits read each data file once: the training and tuning questions of one file (the main job's
``train.json``) come from one parse of it, and the questions are those each entry names on its own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bio_mrc.data import formats
from bio_mrc.data.squad import read_squad
from bio_mrc.harness.compare import resolve_splits
from bio_mrc.harness.config import parse_config


def squad_file(path: Path, prefix: str, questions: int) -> Path:
    contexts = [f"The {prefix} number {n} is red." for n in range(questions)]
    articles = [
        {
            "title": f"{prefix} {n}",
            "paragraphs": [
                {
                    "context": context,
                    "qas": [
                        {"id": f"{prefix}-{n}", "question": f"What colour is {prefix} {n}?", "answers": [{"text": "red", "answer_start": context.index("red")}]}
                    ],
                }
            ],
        }
        for n, context in enumerate(contexts)
    ]
    path.write_text(json.dumps({"version": "1.1", "data": articles}), encoding="utf-8")
    return path


@pytest.fixture
def parses(monkeypatch):
    """The data files parsed whole, in order."""
    seen: list[str] = []
    real = formats.read_json

    def counted(path, *args, **kwargs):
        seen.append(Path(path).name)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(formats, "read_json", counted)
    return seen


def test_the_training_and_tuning_questions_of_one_file_come_from_one_parse(tmp_path, parses):
    train, dev = squad_file(tmp_path / "train.json", "train", 12), squad_file(tmp_path / "dev.json", "dev", 3)
    config = parse_config(
        {
            "name": "once",
            "train": {"path": str(train), "limit": 4},
            "eval": {"path": str(dev)},
            "tune": {"path": str(train), "skip": 6, "limit": 5},
            "runs": [{"name": "joint"}],
        }
    )
    splits = resolve_splits(config, tmp_path)
    assert sorted(parses) == ["dev.json", "train.json"]
    assert [ex.id for ex in splits.train.examples] == [f"train-{n}" for n in range(4)]
    assert [ex.id for ex in splits.tune.examples] == [f"train-{n}" for n in range(6, 11)]
    assert [ex.id for ex in splits.eval.examples] == [f"dev-{n}" for n in range(3)]


def test_outside_a_comparison_every_read_parses_the_file(tmp_path, parses):
    train = squad_file(tmp_path / "train.json", "train", 3)
    for _ in range(2):
        assert len(read_squad(train).examples) == 3
    assert parses == ["train.json", "train.json"]


def test_a_file_changed_between_two_reads_is_parsed_again(tmp_path, parses):
    train = squad_file(tmp_path / "train.json", "train", 3)
    with formats.each_file_parsed_once():
        assert len(read_squad(train).examples) == 3
        assert len(read_squad(train).examples) == 3
        squad_file(train, "train", 5)  # another size: another state of the file
        assert [ex.id for ex in read_squad(train).examples] == [f"train-{n}" for n in range(5)]
    assert parses == ["train.json", "train.json"]


def test_a_file_that_is_not_json_is_refused_at_each_read(tmp_path, parses):
    from bio_mrc.errors import DataFormatError

    broken = tmp_path / "broken.json"
    broken.write_text('{"version": "1.1", "data": [', encoding="utf-8")
    with formats.each_file_parsed_once():
        for _ in range(2):
            with pytest.raises(DataFormatError, match="broken.json"):
                read_squad(broken)
