"""The encoder's dropout while training: set by TrainConfig (0 by default), kept as the encoder's own with None,
applied to fresh encoders and to models training continues from, refused where an encoder has no such rate."""

import copy
import dataclasses
import json
import pickle

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


def saved_fnet(tiny_encoder_dir, encoder):
    """A tiny random FNet encoder with the tests' tokenizer."""
    tokenizer = AutoTokenizer.from_pretrained(str(tiny_encoder_dir))
    torch.manual_seed(0)
    FNetModel(FNetConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=1, intermediate_size=64,
                         max_position_embeddings=64)).save_pretrained(str(encoder))
    tokenizer.save_pretrained(str(encoder))
    return encoder


def test_an_encoder_with_no_attention_dropout_is_built_with_its_own_and_refuses_a_rate_asked(tiny_encoder_dir, tmp_path, capsys):
    """FNet mixes tokens with a Fourier transform: no attention, so no attention dropout rate. Building the model to
    train ended in a ValueError even with no dropout option given; a rate given is refused before the data is read.
    (FNet also reads its padding, for which train refuses it once the model is built: test_encoder_families.)"""
    from bio_mrc.training.train import TrainConfig
    from bio_mrc.training.trainer import fresh_model

    encoder = saved_fnet(tiny_encoder_dir, tmp_path / "fnet")
    model, _ = fresh_model(TrainConfig(encoder=str(encoder), heads="span", max_seq_length=48, doc_stride=16, max_query_length=12))
    assert model.config.encoder.hidden_dropout_prob == 0.0  # the rate it has is set as for any encoder
    common = ["train", "--train", str(SAMPLE_V1), "--encoder", str(encoder), "--heads", "span", "--epochs", "1",
              "--batch-size", "8", "--limit", "8", *WINDOW_ARGS]

    capsys.readouterr()
    assert main([*common, "--output-dir", str(tmp_path / "asked"), "--attention-dropout", "0.1"]) != 0
    assert capsys.readouterr().err.strip().splitlines() == [
        "error: the encoder (model_type 'fnet') has no attention dropout setting bio_mrc can set (none of "
        "attention_probs_dropout_prob, attention_dropout); leave attention_dropout unset (its default) or none, which "
        "keeps the encoder's own"]
    assert not (tmp_path / "asked").exists()


UNSET = ("error: the encoder (model_type 'fnet') has no attention dropout setting bio_mrc can set (none of "
         "attention_probs_dropout_prob, attention_dropout); leave attention_dropout unset (its default) or none, which "
         "keeps the encoder's own")


def test_an_explicit_zero_is_asked_for_as_any_rate_and_the_default_is_not(tiny_encoder_dir, tmp_path, capsys):
    """--attention-dropout 0 could not be told from the default and passed on FNet, where --attention-dropout 0.1 is
    refused: bio_mrc cannot tell an encoder without the rate from one keeping it under a name it does not know."""
    from bio_mrc.training.trainer import encoder_dropout

    encoder = saved_fnet(tiny_encoder_dir, tmp_path / "fnet")
    common = ["train", "--train", str(SAMPLE_V1), "--encoder", str(encoder), "--heads", "span", "--epochs", "1",
              "--batch-size", "8", "--limit", "8", *WINDOW_ARGS]
    capsys.readouterr()
    assert main([*common, "--output-dir", str(tmp_path / "zero"), "--attention-dropout", "0"]) != 0
    assert capsys.readouterr().err.strip().splitlines() == [UNSET]
    assert not (tmp_path / "zero").exists()

    fnet, bert = FNetConfig(), BertConfig()
    with pytest.raises(ConfigError, match=r"^the encoder \(model_type 'fnet'\) has no attention dropout setting"):
        encoder_dropout(TrainConfig(attention_dropout=0.0), fnet)
    assert encoder_dropout(TrainConfig(), fnet) == {"attention": None, "hidden": 0.0}
    assert encoder_dropout(TrainConfig(attention_dropout=None), fnet) == {"attention": None, "hidden": 0.0}
    assert encoder_dropout(TrainConfig(attention_dropout=0.0), bert) == encoder_dropout(TrainConfig(), bert) == {
        "attention": 0.0, "hidden": 0.0}


def test_the_default_rate_is_written_and_keyed_as_zero_and_read_back_unasked(tiny_encoder_dir):
    """Records and model keys of the default stay those of a 0 (the model trained is the same); a record's 0 reads back
    as the default, so a run on FNet recorded by an earlier version trains again."""
    from bio_mrc.config_schema import UnaskedFloat
    from bio_mrc.training.trainer import encoder_dropout

    default, given = TrainConfig(), TrainConfig(attention_dropout=0.0, hidden_dropout=0.0)
    assert default.to_dict() == given.to_dict() and default.to_dict()["attention_dropout"] == 0.0
    assert not isinstance(given.attention_dropout, UnaskedFloat)
    record = TrainConfig.from_record(given.to_dict())
    assert isinstance(record.attention_dropout, UnaskedFloat) and isinstance(record.hidden_dropout, UnaskedFloat)
    assert encoder_dropout(record, FNetConfig())["attention"] is None
    assert TrainConfig.from_record({**given.to_dict(), "attention_dropout": None}).attention_dropout is None
    assert TrainConfig.from_record({**given.to_dict(), "attention_dropout": 0.2}).attention_dropout == 0.2


@pytest.mark.parametrize("copied, given_stays_given", [
    (lambda config: dataclasses.replace(config, seed=7), True),  # a comparison's seeds, a resolved precision
    (copy.deepcopy, True),
    (lambda config: pickle.loads(pickle.dumps(config)), True),  # to spawned DataLoader workers and processes
    # A run record written and read back: its 0 reads back unasked, as every record's (the model trained is the same).
    (lambda config: TrainConfig.from_record(json.loads(json.dumps(config.to_dict()))), False),
], ids=["replace", "deepcopy", "pickle", "run-record"])
def test_a_default_rate_stays_unasked_however_the_config_is_copied(copied, given_stays_given):
    from bio_mrc.config_schema import UnaskedFloat

    default, given = copied(TrainConfig()), copied(TrainConfig(attention_dropout=0.0, hidden_dropout=0.0))
    assert isinstance(default.attention_dropout, UnaskedFloat) and isinstance(default.hidden_dropout, UnaskedFloat)
    assert default == given and default.to_dict()["attention_dropout"] == default.to_dict()["hidden_dropout"] == 0.0
    kept = [isinstance(rate, UnaskedFloat) for rate in (given.attention_dropout, given.hidden_dropout)]
    assert kept == [not given_stays_given] * 2


def test_a_comparison_run_giving_a_zero_rate_to_an_encoder_without_one_is_refused(tiny_encoder_dir, tmp_path):
    from bio_mrc.harness.config import parse_config
    from bio_mrc.harness.models import check_model_sources

    encoder = str(saved_fnet(tiny_encoder_dir, tmp_path / "fnet"))
    raw = {"name": "c", "train": {"path": "t.json"}, "eval": {"path": "e.json"},
           "defaults": {"max_seq_length": 48, "doc_stride": 16, "max_query_length": 12},
           "runs": [{"name": "own", "encoder": encoder, "heads": "span"},
                    {"name": "zero", "encoder": encoder, "heads": "span", "attention_dropout": 0}]}
    config = parse_config(raw)
    check_model_sources(config.runs[:1], config.runs, tmp_path / "models")
    with pytest.raises(ConfigError, match=r"^runs\[1\]\.encoder: the encoder \(model_type 'fnet'\) has no attention dropout"):
        check_model_sources(config.runs, config.runs, tmp_path / "models")


def test_a_comparison_reports_config_reads_back_as_the_same_runs(tiny_encoder_dir, tmp_path):
    """The config a report holds (``compare`` writes ``config.to_dict()``), given to ``compare --config``, is the same
    runs: a default rate reads back unasked (FNet trains with its own attention), a rate given stays given, and every
    run keeps its model key and its run record."""
    from bio_mrc.config_schema import UnaskedFloat
    from bio_mrc.harness.comparison_splits import Split
    from bio_mrc.harness.config import load_config, parse_config
    from bio_mrc.harness.models import check_model_sources, model_key

    fnet = str(saved_fnet(tiny_encoder_dir, tmp_path / "fnet"))
    raw = {"name": "c", "train": {"path": "t.json"}, "eval": {"path": "e.json"},
           "defaults": {"max_seq_length": 48, "doc_stride": 16, "max_query_length": 12, "heads": "span"},
           "runs": [{"name": "fnet", "encoder": fnet}, {"name": "fnet-hidden", "encoder": fnet, "hidden_dropout": 0},
                    {"name": "bert", "encoder": str(tiny_encoder_dir), "attention_dropout": 0.0, "hidden_dropout": None}]}
    config = parse_config(raw)
    (tmp_path / "report-config.json").write_text(json.dumps(config.to_dict()), encoding="utf-8")
    again = load_config(tmp_path / "report-config.json")
    check_model_sources(again.runs, again.runs, tmp_path / "models")  # the FNet runs are not refused

    unasked = [[isinstance(getattr(run.train, name), UnaskedFloat) for name in ("attention_dropout", "hidden_dropout")]
               for run in again.runs]
    assert unasked == [[True, True], [True, False], [False, False]]
    split = Split([], "squad-v1.1", "none")
    for before, after in zip(config.runs, again.runs):
        assert json.dumps(after.train.to_dict()) == json.dumps(before.train.to_dict())
        assert model_key(after.train, split) == model_key(before.train, split)
    assert again.to_dict() == config.to_dict()


def test_cells_from_an_earlier_report_holding_the_default_rate_written_match_the_run():
    """A report's run leaves a default rate out; one that writes it as 0 (or a run giving 0) is the same model."""
    from bio_mrc.harness.config import parse_config
    from bio_mrc.harness.earlier_report import _check_run

    raw = {"train": {"path": "t.json"}, "eval": {"path": "e.json"}, "runs": [{"name": "a"}]}
    default = parse_config(raw).runs[0]
    given = parse_config({**raw, "runs": [{"name": "a", "attention_dropout": 0, "hidden_dropout": 0.0}]}).runs[0]
    assert "attention_dropout" not in default.to_dict() and given.to_dict()["attention_dropout"] == 0.0
    _check_run("report.json", "a", given.to_dict(), default.to_dict())
    _check_run("report.json", "a", default.to_dict(), given.to_dict())
    with pytest.raises(ConfigError, match=r'run "a" has other settings there \(attention_dropout\)'):
        _check_run("report.json", "a", {**default.to_dict(), "attention_dropout": 0.1}, default.to_dict())
