"""The encoder's dropout while training: set by TrainConfig (0 by default), kept as the encoder's own with None,
applied to fresh encoders and to models training continues from, refused where an encoder has no such rate."""

import pytest
import torch
from transformers import AutoTokenizer, BertConfig, FNetConfig, FNetModel, T5Config

from bio_mrc.cli import main
from bio_mrc.errors import ConfigError
from bio_mrc.model import BioMrcForQuestionAnswering, set_encoder_dropout
from bio_mrc.training.train import TrainConfig, train_model

from .conftest import SAMPLE_V1, WINDOW_ARGS


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
    with pytest.raises(ConfigError, match=r"^the encoder \(model_type 't5'\) has no attention dropout setting"):
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


def test_an_encoder_with_no_attention_dropout_trains_with_its_own_and_refuses_a_rate_asked(tiny_encoder_dir, tmp_path, capsys):
    """FNet mixes tokens with a Fourier transform: no attention, so no attention dropout rate. train --encoder ended in a
    ValueError traceback even with no dropout option given; a rate given is refused before the data is read."""
    encoder = tmp_path / "fnet"
    tokenizer = AutoTokenizer.from_pretrained(str(tiny_encoder_dir))
    torch.manual_seed(0)
    FNetModel(FNetConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=1, intermediate_size=64,
                         max_position_embeddings=64)).save_pretrained(str(encoder))
    tokenizer.save_pretrained(str(encoder))
    common = ["train", "--train", str(SAMPLE_V1), "--encoder", str(encoder), "--heads", "span", "--epochs", "1",
              "--batch-size", "8", "--limit", "8", *WINDOW_ARGS]
    assert main([*common, "--output-dir", str(tmp_path / "model")]) == 0
    saved = BioMrcForQuestionAnswering.from_pretrained(str(tmp_path / "model")).config.encoder
    assert saved.hidden_dropout_prob == 0.0  # the rate it has is set as for any encoder

    capsys.readouterr()
    assert main([*common, "--output-dir", str(tmp_path / "asked"), "--attention-dropout", "0.1"]) != 0
    assert capsys.readouterr().err.strip().splitlines() == [
        "error: the encoder (model_type 'fnet') has no attention dropout setting bio_mrc can set (none of "
        "attention_probs_dropout_prob, attention_dropout); leave attention_dropout unset (its default) or none, which "
        "keeps the encoder's own"]
    assert not (tmp_path / "asked").exists()
