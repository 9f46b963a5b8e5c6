"""Training twice with the same seed, options and questions gives the same model bit for bit and the same run record
but for its times; another seed gives another model. (A training on another number of torch threads sums in another
order: its weights differ in their last bits, which docs/reliability.md says.)"""

from __future__ import annotations

import dataclasses

import pytest

TIMES = ("finished", "seconds")  # the run record's fields that differ between two identical trainings


def trained(examples, config, folder):
    from safetensors.torch import load_file

    from bio_mrc.training import train

    result = train.train_model(examples, config, folder, save_checkpoints=False, progress=False)
    record = {key: value for key, value in train.load_run_record(result.model_dir).items() if key not in TIMES}
    return load_file(str(result.model_dir / "model.safetensors")), record


@pytest.mark.slow  # three trainings of its own
@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_the_same_seed_trains_the_same_model_bit_for_bit_and_another_seed_another(tiny_encoder_dir, sample_v1, tmp_path,
                                                                                  precision):
    from bio_mrc.training.train import TrainConfig

    config = TrainConfig(encoder=str(tiny_encoder_dir), heads="span+bio", max_seq_length=48, doc_stride=16,
                         max_query_length=12, epochs=1, batch_size=2, learning_rate=3e-3, seed=5, precision=precision)
    examples = sample_v1.examples[:6]
    weights, record = trained(examples, config, tmp_path / "a")
    again, record_again = trained(examples, config, tmp_path / "b")
    assert record_again == record and record["train"]["seed"] == 5
    assert weights.keys() == again.keys() and all(weights[name].equal(again[name]) for name in weights)
    other, other_record = trained(examples, dataclasses.replace(config, seed=6), tmp_path / "c")
    assert other_record["train"]["seed"] == 6 and other_record["final_loss"] != record["final_loss"]
    assert any(not weights[name].equal(other[name]) for name in weights if "head" in name)
