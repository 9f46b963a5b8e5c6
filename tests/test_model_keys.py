"""A trained model's folder is named by a hash of its training options and questions: a change of the package's
layout (a module moved, a result type, a registry) must not change that hash, or every committed model in
``runs/`` would be trained again. These pins are the hashes the committed models have."""

from __future__ import annotations

import pytest

from bio_mrc.harness.config import DataSpec
from bio_mrc.harness.comparison_splits import Split, resolve_split
from bio_mrc.harness.models import model_key
from bio_mrc.model_defaults import TRAIN_OPTIONS_WHEN_ABSENT
from bio_mrc.training.train import TrainConfig
from bio_mrc.types import Example
from .conftest import require_data

# The training options of runs/full-scale/models/joint-seed42-af159685d23c (its bio_mrc_run.json).
FULL_SCALE_JOINT = {
    "encoder": "default", "heads": "span+bio", "span_loss_weight": 1.0, "bio_loss_weight": 10.0, "bio_targets": "soft",
    "span_targets": "one-hot", "bio_loss_reduction": "token_mean", "bio_prior": [0.01, 0.02, 0.97], "bio_class_weights": None,
    "tag_level": "word", "attention_dropout": 0.0, "hidden_dropout": 0.0, "max_seq_length": 256, "doc_stride": 96,
    "max_query_length": 64, "epochs": 1, "learning_rate": 0.0001, "head_learning_rate": 0.005, "batch_size": 16,
    "warmup_ratio": 0.1, "weight_decay": 0.01, "seed": 42, "init_from": None, "precision": "bf16",
}
TOY_QUESTIONS = [Example("q1", "Who met Bob?", "Ann met Bob.", (((0, 3),),), "T"), Example("q2", "Where?", "Nowhere.", (), "T")]


def test_a_committed_models_options_keep_their_hash():
    assert model_key(TrainConfig.from_record(FULL_SCALE_JOINT), Split(TOY_QUESTIONS, "squad-v2.0", "toy")) == "f7ea00b15cf1"


@pytest.mark.slow  # real data: all of SQuAD's training questions
def test_the_full_scale_joint_model_keeps_its_folder_name():
    data_dir = require_data("squad-v1.1/train.json").parents[1]
    split = resolve_split(DataSpec(path="squad-v1.1/train.json", limit=86528), data_dir)
    assert model_key(TrainConfig.from_record(FULL_SCALE_JOINT), split) == "af159685d23c"


def test_an_option_added_later_changes_the_key_only_where_it_is_used():
    split = Split(TOY_QUESTIONS, "squad-v2.0", "toy")
    every = TrainConfig.from_record({**FULL_SCALE_JOINT, "tag_mentions": "every"})
    assert every.to_dict()["tag_mentions"] == "every" and TrainConfig.from_record(every.to_dict()) == every
    assert model_key(every, split) != "f7ea00b15cf1"
    assert "tag_mentions" not in TrainConfig.from_record({**FULL_SCALE_JOINT, "tag_mentions": "annotated"}).to_dict()


def test_a_record_without_a_later_field_means_what_it_meant_when_saved():
    # a model saved before tag_mentions existed was taught the annotated spans; options that leave it out ask for
    # today's default
    assert TRAIN_OPTIONS_WHEN_ABSENT["tag_mentions"] == "annotated" != TrainConfig().tag_mentions
    assert TrainConfig.from_record(FULL_SCALE_JOINT).tag_mentions == "annotated"
    assert TrainConfig.from_dict(FULL_SCALE_JOINT).tag_mentions == TrainConfig().tag_mentions == "every"
    for config in (TrainConfig(tag_mentions="annotated"), TrainConfig(), TrainConfig(tag_mentions="ignored")):
        assert TrainConfig.from_record(config.to_dict()) == config
    assert "tag_mentions" not in TrainConfig(tag_mentions="annotated").to_dict()


def test_a_local_folder_spelt_several_ways_keys_one_model(tmp_path, monkeypatch):
    (tmp_path / "enc").mkdir()
    monkeypatch.chdir(tmp_path)
    split = Split(TOY_QUESTIONS, "squad-v2.0", "toy")
    spellings = ["enc", "enc/", "./enc", "enc//", f"{tmp_path}/enc"]
    configs = [TrainConfig(encoder=name, init_from=name) for name in spellings]
    assert [config.encoder for config in configs[:4]] == ["enc"] * 4 and configs[4].encoder == f"{tmp_path}/enc"
    assert len({model_key(config, split) for config in configs[:4]}) == 1
    assert TrainConfig(encoder="org/name/").encoder == "org/name/"  # no such folder: a hub id, as it is given
