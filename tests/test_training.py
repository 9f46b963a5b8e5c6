"""The optimizer that train_model builds: heads at their own learning rate, Trainer's groups otherwise."""

import pytest
from transformers import TrainingArguments

from bio_mrc.model import BioMrcForQuestionAnswering
from bio_mrc.training.train import HeadRateTrainer


@pytest.fixture
def model(tiny_encoder_dir):
    return BioMrcForQuestionAnswering.from_encoder(str(tiny_encoder_dir), heads="span+bio")


def _optimizer(model, tmp_path, head_learning_rate):
    args = TrainingArguments(output_dir=str(tmp_path), learning_rate=1e-4, weight_decay=0.01, report_to="none")
    return HeadRateTrainer(model=model, args=args, head_learning_rate=head_learning_rate).create_optimizer()


def test_heads_get_their_own_rate_and_keep_weight_decay_groups(model, tmp_path):
    optimizer = _optimizer(model, tmp_path, head_learning_rate=5e-3)
    head_ids = {id(p) for p in model.head_parameters()}
    assert head_ids == {id(p) for p in [*model.span_head.parameters(), *model.bio_head.parameters()]}
    by_rate = {}
    for group in optimizer.param_groups:
        by_rate.setdefault(group["lr"], set()).update(id(p) for p in group["params"])
    assert by_rate[5e-3] == head_ids
    assert by_rate[1e-4] == {id(p) for p in model.parameters()} - head_ids
    # The head's weight decays and its bias does not, as Trainer decides for every parameter.
    decay_of = {id(p): g["weight_decay"] for g in optimizer.param_groups for p in g["params"]}
    assert decay_of[id(model.bio_head.classifier.weight)] == 0.01
    assert decay_of[id(model.bio_head.classifier.bias)] == 0.0


def test_without_a_head_rate_the_optimizer_is_trainers(model, tmp_path):
    optimizer = _optimizer(model, tmp_path, head_learning_rate=None)
    assert {g["lr"] for g in optimizer.param_groups} == {1e-4}
    assert sum(len(g["params"]) for g in optimizer.param_groups) == len(list(model.parameters()))


def test_class_weights_default_by_heads():
    from bio_mrc.training.train import BIO_ONLY_CLASS_WEIGHTS, TrainConfig

    assert TrainConfig(heads="bio").resolved_bio_class_weights == BIO_ONLY_CLASS_WEIGHTS
    assert TrainConfig(heads="span+bio").resolved_bio_class_weights is None
    assert TrainConfig(heads="bio", bio_targets="marginal").resolved_bio_class_weights is None
    assert TrainConfig(heads="bio", bio_class_weights=(1.0, 1.0, 1.0)).resolved_bio_class_weights == (1.0, 1.0, 1.0)
