"""The optimizer that train_model builds: heads at their own learning rate, Trainer's groups otherwise."""

import pytest
from transformers import TrainingArguments

from bio_mrc.io import atomic_write_json
from bio_mrc.model import BioMrcForQuestionAnswering
from bio_mrc.training.train import HeadRateTrainer

from .conftest import StoppedReplace


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


def test_a_zero_class_weight_is_refused_when_the_config_is_built():
    """The head divides by each weight (its logits less log w): a weight of 0 is refused with the config's one line,
    before any data is read or model built, not a ValueError traceback from the head."""
    from bio_mrc.errors import ConfigError
    from bio_mrc.training.train import TrainConfig

    with pytest.raises(ConfigError, match=r"bio_class_weights\[1\]: 0.0 is less than or equal to the minimum of 0"):
        TrainConfig(bio_class_weights=(1.0, 0.0, 1.0))


def test_class_weights_default_by_heads():
    from bio_mrc.training.train import BIO_ONLY_CLASS_WEIGHTS, TrainConfig

    assert TrainConfig(heads="bio").resolved_bio_class_weights == BIO_ONLY_CLASS_WEIGHTS
    assert TrainConfig(heads="span+bio").resolved_bio_class_weights is None
    assert TrainConfig(heads="bio", bio_targets="marginal").resolved_bio_class_weights is None
    assert TrainConfig(heads="bio", bio_class_weights=(1.0, 1.0, 1.0)).resolved_bio_class_weights == (1.0, 1.0, 1.0)


@pytest.fixture
def tiny_config(tiny_encoder_dir):
    from bio_mrc.training.train import TrainConfig

    return TrainConfig(encoder=str(tiny_encoder_dir), heads="span+bio", max_seq_length=48, doc_stride=16,
                       max_query_length=12, epochs=1, batch_size=4, seed=1)


def test_the_run_record_comes_last_once_the_model_is_in_place(tiny_config, sample_v1, tmp_path, monkeypatch):
    from bio_mrc.training import saving, train

    seen = {}

    def record_writer(path, obj, **kwargs):
        if path.name == saving.RUN_FILE:  # what a reader would find in the folder at that moment
            seen["files"] = sorted(p.name for p in path.parent.iterdir())
        return atomic_write_json(path, obj, **kwargs)

    monkeypatch.setattr(saving, "atomic_write_json", record_writer)
    result = train.train_model(sample_v1.examples, tiny_config, tmp_path / "model", progress=False)
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= set(seen["files"])
    assert saving.RUN_FILE not in seen["files"] and saving.STAGING_DIR not in seen["files"]
    assert train.load_run_record(result.model_dir)["train"] == tiny_config.with_resolved_precision().to_dict()
    assert not (result.model_dir / train.CHECKPOINT_DIR).exists()



def test_training_leaves_the_callers_random_generators_as_it_found_them(tiny_config, sample_v1, tmp_path):
    import random

    import numpy as np
    import torch

    from bio_mrc.training import train

    random.seed(7), np.random.seed(7), torch.manual_seed(7)
    expected = random.Random(7).random(), np.random.RandomState(7).random_sample()
    train.train_model(sample_v1.examples[:2], tiny_config, tmp_path / "model", save_checkpoints=False)
    assert random.random() == expected[0]  # not the run's seed 1: training reseeds, then puts the caller's state back
    assert np.random.random_sample() == expected[1]
    assert torch.equal(torch.rand(3), torch.rand(3, generator=torch.Generator().manual_seed(7)))


@pytest.mark.parametrize("given, words", [
    ("file", "got a SquadFile"), ("generator", "got a generator"), ("ints", "got a list of int"),
])
def test_questions_that_are_no_list_of_examples_are_refused_in_one_line(tiny_config, sample_v1, tmp_path, given, words):
    from bio_mrc.training import train

    examples = {"file": sample_v1, "generator": (e for e in sample_v1.examples), "ints": [1, 2]}[given]
    with pytest.raises(TypeError, match=rf"train_model takes a list of Example .*load_squad\(path\)\.examples\), {words}$"):
        train.train_model(examples, tiny_config, tmp_path / "model")
    assert not (tmp_path / "model").exists()

@pytest.mark.slow
def test_a_save_that_fails_midway_leaves_no_run_record(tiny_config, sample_v1, tmp_path, monkeypatch):
    from bio_mrc.training import saving, train

    out = tmp_path / "model"
    train.train_model(sample_v1.examples, tiny_config, out, progress=False, save_checkpoints=False)
    assert train.load_run_record(out) is not None

    def crash_after_one_file(source, target):
        first = sorted(source.iterdir())[0]
        first.replace(target / first.name)
        raise OSError("killed while moving the model in")

    # Retraining into the folder: the old record goes before any new file arrives.
    monkeypatch.setattr(saving, "atomic_move_files", crash_after_one_file)
    with pytest.raises(OSError, match="killed"):
        train.train_model(sample_v1.examples, tiny_config, out, progress=False, save_checkpoints=False, overwrite=True)
    assert train.load_run_record(out) is None  # the harness retrains rather than trust a mixed folder
    assert not (out / saving.STAGING_DIR).exists()


def test_the_model_and_window_settings_are_defined_once():
    """TrainConfig's model and window fields default to the model config's and the windows' own values, and
    the model and windows it builds carry every field they share with it."""
    import dataclasses

    from bio_mrc.features.windows import FeatureConfig
    from bio_mrc.model import WINDOW_SETTINGS, BioMrcConfig
    from bio_mrc.training.config import TrainConfig

    defaults = TrainConfig()
    as_json = lambda value: list(value) if isinstance(value, tuple) else value  # noqa: E731
    # The model config records the windows it was trained with (None until then); FeatureConfig defines them.
    # TrainConfig's bio_class_weights None means "by the heads" (resolved_bio_class_weights).
    for owner, not_defined_there in ((BioMrcConfig, {"encoder", "bio_class_weights", *WINDOW_SETTINGS}), (FeatureConfig, set())):
        shared = {f.name for f in dataclasses.fields(owner)} & {f.name for f in dataclasses.fields(TrainConfig)}
        assert shared - not_defined_there
        for name in shared - not_defined_there:
            assert as_json(getattr(defaults, name)) == as_json(getattr(owner, name)), name
    config = TrainConfig(heads="bio", bio_loss_weight=3.0, tag_level="subword", bio_prior=(0.2, 0.3, 0.5), max_seq_length=64,
                         doc_stride=8, max_query_length=16, bio_targets="one-hot", span_targets="soft")
    settings = config.model_settings()
    assert settings == {"heads": "bio", "span_loss_weight": 1.0, "bio_loss_weight": 3.0, "bio_loss_reduction": "token_mean",
                        "bio_prior": [0.2, 0.3, 0.5], "bio_class_weights": [10.0, 10.0, 1.0], "tag_level": "subword",
                        "max_seq_length": 64, "doc_stride": 8, "max_query_length": 16, "word_units": "punctuation"}
    assert config.features == FeatureConfig(max_seq_length=64, doc_stride=8, max_query_length=16, bio_targets="one-hot",
                                            span_targets="soft", tag_level="subword")


class _Saver:
    """Trainer's part in the final save: the model's files into the folder it is given, and a log history."""

    def __init__(self, model):
        self.model, self.state = model, type("State", (), {"log_history": [{"step": 1}]})()

    def is_world_process_zero(self):
        return True

    def save_model(self, folder, _internal_call=False):
        self.model.save_pretrained(folder)


@pytest.mark.parametrize("stop", ["ctrl-c", "full disk"])
def test_a_final_save_stopped_at_any_rename_never_leaves_a_record_or_card_beside_other_files(tiny_encoder_dir, tmp_path,
                                                                                            monkeypatch, stop,
                                                                                            sigint_as_in_a_terminal):
    """Every rename of the final save, stopped in turn: a run record, and a card, are there only beside the new files,
    and a rename refused after others says the folder mixes new and old files."""
    from transformers import AutoTokenizer

    from bio_mrc import io
    from bio_mrc.errors import OutputError
    from bio_mrc.model import RUN_FILE, BioMrcForQuestionAnswering
    from bio_mrc.model_card import CARD_FILE
    from bio_mrc.training import saving

    tokenizer = AutoTokenizer.from_pretrained(str(tiny_encoder_dir))
    models = [BioMrcForQuestionAnswering.from_encoder(str(tiny_encoder_dir), heads=heads) for heads in ("span", "span+bio")]

    def save(out, model, run, k=0):
        with monkeypatch.context() as patch:
            patch.setattr(io.atomic.os, "replace", replace := StoppedReplace(stop, k))
            saving.save_final_model(_Saver(model), tokenizer, out, {"run": run})
        return replace.calls

    renames = len(save(tmp_path / "new", models[1], "new"))
    new = {path.name: path.read_bytes() for path in (tmp_path / "new").iterdir()}
    assert renames > 4
    for k in range(1, renames + 1):
        out = tmp_path / f"at-{k}"
        save(out, models[0], "old")
        old = {path.name: path.read_bytes() for path in out.iterdir()}
        with pytest.raises(KeyboardInterrupt if stop == "ctrl-c" else (OSError, OutputError)) as raised:
            save(out, models[1], "new", k)
        now = {path.name: path.read_bytes() for path in out.iterdir()}
        if now == old:  # stopped before the old model was touched
            continue
        kept = [name for name in now if name in new and now[name] == old.get(name) != new[name]]
        mixed = bool(kept) and any(now[name] == new[name] != old.get(name) for name in now if name in new)
        assert not (mixed and RUN_FILE in now), k
        assert RUN_FILE not in now or now[RUN_FILE] == new[RUN_FILE]
        assert CARD_FILE not in now or now[CARD_FILE] == new[CARD_FILE], k
        assert not mixed or (isinstance(raised.value, OutputError) and "do not agree" in str(raised.value)), k
        assert stop == "full disk" or not mixed


def test_a_broken_tokenizer_is_refused_before_any_weights_load(tiny_encoder_dir, tmp_path, monkeypatch):
    """An encoder's tokenizer is loaded before its weights: a broken one is refused without reading them."""
    import shutil

    from transformers import AutoModel

    from bio_mrc.errors import ModelFormatError
    from bio_mrc.training.config import TrainConfig
    from bio_mrc.training.trainer import fresh_model_and_tokenizer

    encoder = tmp_path / "encoder"
    shutil.copytree(tiny_encoder_dir, encoder)
    (encoder / "tokenizer.json").write_text('{"broken', encoding="utf-8")

    def no_weights(*args, **kwargs):
        raise AssertionError("weights loaded before the tokenizer was checked")

    monkeypatch.setattr(AutoModel, "from_pretrained", no_weights)
    with pytest.raises(ModelFormatError, match="tokenizer.json: not a tokenizer file tokenizers can read"):
        fresh_model_and_tokenizer(TrainConfig(encoder=str(encoder), max_seq_length=48, doc_stride=16, max_query_length=12))



def test_a_steps_flops_count_the_models_parameters_once_and_match_trainers_estimate(model, tiny_encoder_dir, tmp_path, monkeypatch):
    # Trainer adds a step's estimate to total_flos at every step: 6 x tokens fed x non-embedding parameters.
    import torch
    from transformers import Trainer

    trainer = HeadRateTrainer(model=model, args=TrainingArguments(output_dir=str(tmp_path), report_to="none", use_cpu=True))
    batches = [{"input_ids": torch.ones(4, 24, dtype=torch.long)}, {"input_ids": torch.ones(3, 16, dtype=torch.long)}]
    parameters = model.num_parameters(exclude_embeddings=True)
    assert [Trainer.floating_point_ops(trainer, batch) for batch in batches] == [6 * 96 * parameters, 6 * 48 * parameters]
    counted = []
    count_of = BioMrcForQuestionAnswering.num_parameters
    monkeypatch.setattr(BioMrcForQuestionAnswering, "num_parameters", lambda self, *args, **kwargs: counted.append(self) or count_of(self, *args, **kwargs))
    assert [trainer.floating_point_ops(batch) for batch in batches * 3] == [6 * 96 * parameters, 6 * 48 * parameters] * 3
    assert counted == [model]  # once, not at every step
    trainer.model = span_only = BioMrcForQuestionAnswering.from_encoder(str(tiny_encoder_dir), heads="span")
    assert trainer.floating_point_ops(batches[0]) == 6 * 96 * count_of(span_only, exclude_embeddings=True) < 6 * 96 * parameters
    trainer.model = torch.nn.Linear(2, 2)  # a model without num_parameters: no estimate, as Trainer's
    assert trainer.floating_point_ops(batches[0]) == 0
