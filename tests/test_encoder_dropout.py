"""The encoder's dropout while training: set by TrainConfig (0 by default), kept as the encoder's own with None,
applied to fresh encoders and to models training continues from, refused where an encoder has no such rate."""

import pytest
import torch
from transformers import BertConfig, T5Config

from bio_mrc.model import BioMrcForQuestionAnswering, set_encoder_dropout
from bio_mrc.training.train import TrainConfig, train_model


def encoder_dropouts(model: BioMrcForQuestionAnswering) -> set[float]:
    return {module.p for module in model.encoder.modules() if isinstance(module, torch.nn.Dropout)}


def two_training_passes(model: BioMrcForQuestionAnswering) -> tuple[torch.Tensor, torch.Tensor]:
    """The encoder's output twice, in training mode, on the same input."""
    model.train()
    ids = torch.arange(4, 20).reshape(2, 8)
    with torch.no_grad():
        return tuple(model.encoder(input_ids=ids).last_hidden_state for _ in range(2))


def test_no_encoder_dropout_makes_training_passes_deterministic(tiny_encoder_dir):
    quiet = BioMrcForQuestionAnswering.from_encoder(str(tiny_encoder_dir), encoder_dropout={"attention": 0.0, "hidden": 0.0})
    assert quiet.config.encoder.attention_probs_dropout_prob == 0.0 and quiet.config.encoder.hidden_dropout_prob == 0.0
    assert encoder_dropouts(quiet) == {0.0}
    first, second = two_training_passes(quiet)
    assert torch.equal(first, second)

    own = BioMrcForQuestionAnswering.from_encoder(str(tiny_encoder_dir))  # None: BERT's own 0.1
    assert own.config.encoder.attention_probs_dropout_prob == 0.1 and encoder_dropouts(own) == {0.1}
    first, second = two_training_passes(own)
    assert not torch.equal(first, second)


def test_each_rate_is_set_alone_under_every_name_the_config_uses():
    config = BertConfig()
    set_encoder_dropout(config, attention=0.0)
    assert (config.attention_probs_dropout_prob, config.hidden_dropout_prob) == (0.0, 0.1)
    set_encoder_dropout(config, hidden=0.25)
    assert (config.attention_probs_dropout_prob, config.hidden_dropout_prob) == (0.0, 0.25)
    set_encoder_dropout(config)  # nothing asked: nothing changes
    assert (config.attention_probs_dropout_prob, config.hidden_dropout_prob) == (0.0, 0.25)
    with pytest.raises(ValueError, match=r"in \[0, 1\)"):
        set_encoder_dropout(config, attention=1.0)
    t5 = T5Config()  # one dropout_rate for everything: neither kind by our names
    with pytest.raises(ValueError, match="no attention dropout rate"):
        set_encoder_dropout(t5, attention=0.0)


def test_training_applies_the_configured_dropout_also_when_it_continues_a_model(tiny_encoder_dir, tmp_path, sample_v1):
    common = dict(encoder=str(tiny_encoder_dir), heads="span+bio", max_seq_length=48, doc_stride=16, max_query_length=12,
                  epochs=1, batch_size=8, precision="fp32")
    assert (TrainConfig().attention_dropout, TrainConfig().hidden_dropout) == (0.0, 0.0)  # the package's default
    first = train_model(sample_v1.examples[:8], TrainConfig(**common), tmp_path / "first").model_dir
    saved = BioMrcForQuestionAnswering.from_pretrained(str(first))
    assert saved.config.encoder.attention_probs_dropout_prob == 0.0 and saved.config.encoder.hidden_dropout_prob == 0.0

    continued = train_model(sample_v1.examples[:8], TrainConfig(**common, init_from=str(first), attention_dropout=0.2,
                                                                hidden_dropout=None), tmp_path / "second").model_dir
    encoder = BioMrcForQuestionAnswering.from_pretrained(str(continued)).config.encoder
    assert (encoder.attention_probs_dropout_prob, encoder.hidden_dropout_prob) == (0.2, 0.0)  # None keeps what it had
