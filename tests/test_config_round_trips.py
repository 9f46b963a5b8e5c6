"""A configuration an application saves as JSON reads back as itself: every shipped comparison config (the presets and
``benchmarks/ablations/``) through ``CompareConfig.to_dict`` -> JSON -> ``parse_config``, and each of its runs' training
options through ``TrainConfig.to_dict`` -> JSON -> ``TrainConfig.from_record``; and their ``repr``s stay a few lines."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from bio_mrc.harness.config import DataSpec, load_config, parse_config
from bio_mrc.training.config import TrainConfig

ROOT = Path(__file__).resolve().parents[1]
PRESETS = ["quick", "full", "v2-quick", "v2-from-reader", "multispanqa-cv", "multispan-reader"]
ABLATIONS = sorted(str(path.relative_to(ROOT)) for path in (ROOT / "benchmarks" / "ablations").glob("*.json") if not path.name.endswith(".schema.json"))


def as_read(spec: DataSpec | None) -> DataSpec | None:
    """An entry as its saved form names it: a format left out is saved as the format read (``report.json`` always has)."""
    return None if spec is None else replace(spec, format=spec.read_format)


@pytest.mark.parametrize("name", PRESETS + ABLATIONS)
def test_a_shipped_config_reads_back_from_its_json(name, monkeypatch):
    monkeypatch.chdir(ROOT)
    config = load_config(name)
    saved = json.loads(json.dumps(config.to_dict(), allow_nan=False))
    read = parse_config(saved)
    assert read.to_dict() == saved
    assert read == replace(
        config,
        train=as_read(config.train),
        eval=as_read(config.eval),
        tune=as_read(config.tune),
        eval_also=[as_read(spec) for spec in config.eval_also],
        runs=[replace(run, data=as_read(run.data)) for run in config.runs],
    )
    for run in config.runs:
        assert TrainConfig.from_record(json.loads(json.dumps(run.train.to_dict()))) == run.train
    assert len(repr(config)) < 20_000 and "\n" not in repr(config)


def test_every_ablation_file_is_read():
    assert len(ABLATIONS) >= 30 and "benchmarks/ablations/every_mention_squad.json" in ABLATIONS


def test_a_record_reads_back_by_from_record_not_from_dict():
    """``to_dict`` leaves out ``tag_mentions="annotated"``, the value a record without it means; ``from_record`` reads it
    so, ``from_dict`` as today's default."""
    annotated = TrainConfig(tag_mentions="annotated")
    assert "tag_mentions" not in annotated.to_dict()
    assert TrainConfig.from_record(annotated.to_dict()) == annotated
    assert TrainConfig.from_dict(annotated.to_dict()).tag_mentions == "every"
