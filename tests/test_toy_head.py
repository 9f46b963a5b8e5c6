"""A head with labels and logits no head had before, added from this file alone: what a user writes is the head
(``HasAnswerHead``), its registry entry (``HAS_ANSWER``: its label ``has_answer``, the function that makes it from a
window, its logits ``has_answer_logits``, its loss weight) and a decoding that reads it (``ANSWERABLE``). The model,
the windows, the collator, the training entry, the forward pass, the window outputs and the command line and
server choices take them from the registry; the package never names them (the last test greps it).
docs/layout.md walks through the same example.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

import bio_mrc
from bio_mrc import registry
from bio_mrc.decoding.postprocess import DecodeConfig, decode_span
from bio_mrc.heads import Head

from .conftest import SAMPLE_V1

WINDOWS = {"max_seq_length": 48, "doc_stride": 16, "max_query_length": 12}


# --- 1. the head: hidden states -> logits, and its loss ------------------------------------------------------


class HasAnswerHead(Head):
    """Whether a window holds an answer: a logit per token, the window's read at [CLS] (position 0), as the span
    head reads its no-answer score there; trained by binary cross-entropy on the window's ``has_answer`` label."""

    def __init__(self, hidden_size: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.classifier = nn.Linear(hidden_size, 1)

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.dropout(hidden_states)).squeeze(-1)

    def loss(self, logits: torch.Tensor, has_answer: torch.Tensor, attention_mask=None, tag_mask=None) -> torch.Tensor:
        return nn.functional.binary_cross_entropy_with_logits(logits[:, 0].float(), has_answer.float())


# --- 2. its entry: how to build it, its label and how a window makes it, its logits, its loss weight ---------


def build_has_answer_head(config, hidden_size: int) -> HasAnswerHead:
    return HasAnswerHead(hidden_size, config.head_dropout)


def has_answer_target(window, feature_config) -> dict[str, int]:
    """1 when the window holds some annotator's answer, else 0."""
    return {"has_answer": int(window.holds_an_answer())}


HAS_ANSWER = registry.HeadEntry(
    name="has_answer", attribute="has_answer_head", build=build_has_answer_head,
    targets={"has_answer": registry.POSITION_TARGET}, build_targets=has_answer_target,
    outputs=("has_answer_logits",), output_dims=((),), pad=0.0, loss_weight=0.5, needs_tag_mask=False,
    description="whether a window holds an answer (a toy)")


# --- 3. a decoding that reads it ------------------------------------------------------------------------------


def answerable_spans(outputs, examples, config: DecodeConfig):
    """The span head's answers, abstaining where no window of the question is likely to hold one."""
    predictions = decode_span(outputs, examples, config)
    best = np.full(len(examples), -np.inf)
    np.maximum.at(best, outputs.example_index, outputs.has_answer_logits[:, 0])
    for prediction, logit in zip(predictions, best):
        prediction.no_answer_score, prediction.abstain = float(-logit), bool(logit < 0)
    return predictions


ANSWERABLE = registry.DecodingEntry(
    name="answerable", heads=frozenset({"span", "has_answer"}), function=answerable_spans, uses_length_prior=False,
    threshold_key="answerable", multi_span=registry.NBEST_SPANS, auto_rank=9, description="span answers, gated by has_answer")


# --- the tests --------------------------------------------------------------------------------------------------


@pytest.fixture
def has_answer_registered(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setitem(registry.HEADS, HAS_ANSWER.name, HAS_ANSWER)
    monkeypatch.setitem(registry.DECODINGS, ANSWERABLE.name, ANSWERABLE)


def test_the_new_head_trains_through_the_training_entry_and_decodes(has_answer_registered, tiny_encoder_dir, tiny_tokenizer, tmp_path):
    from bio_mrc.data.squad import load_squad
    from bio_mrc.decoding.postprocess import decode
    from bio_mrc.features.windows import FeatureConfig
    from bio_mrc.inference.forward import predict_windows
    from bio_mrc.model import BioMrcForQuestionAnswering
    from bio_mrc.training.train import TrainConfig, train_model

    examples = load_squad(SAMPLE_V1).examples
    config = TrainConfig(encoder=str(tiny_encoder_dir), heads="span+has_answer", epochs=2, batch_size=4,
                         learning_rate=1e-2, seed=3, **WINDOWS)
    result = train_model(examples, config, tmp_path / "model", save_checkpoints=False)
    assert result.final_loss is not None and np.isfinite(result.final_loss)

    model = BioMrcForQuestionAnswering.from_pretrained(tmp_path / "model")
    assert list(model.heads) == ["span", "has_answer"]
    trained = model.has_answer_head.classifier.weight
    assert not torch.equal(trained, build_has_answer_head(model.config, trained.shape[1]).classifier.weight)
    assert {name.split(".")[0] for name in model.state_dict()} == {"encoder", "span_head", "has_answer_head"}

    outputs = predict_windows(model, tiny_tokenizer, examples, FeatureConfig(**WINDOWS), progress=False)
    assert outputs.has_answer_logits.shape == outputs.start_logits.shape and outputs.bio_logits is None
    assert registry.decodings_for(model.config.heads) == ["span", "answerable"]
    predictions = decode(outputs, examples, "answerable", DecodeConfig())
    assert [p.id for p in predictions] == [e.id for e in examples]
    best = {e: max(outputs.has_answer_logits[outputs.example_index == e, 0]) for e in range(len(examples))}
    assert [p.abstain for p in predictions] == [best[e] < 0 for e in range(len(examples))]


def test_the_model_takes_its_label_weighs_its_loss_and_outputs_its_logits(has_answer_registered, tiny_encoder_dir):
    from bio_mrc.model import BioMrcForQuestionAnswering

    torch.manual_seed(0)
    model = BioMrcForQuestionAnswering.from_encoder(str(tiny_encoder_dir), heads="span+has_answer").eval()
    inputs = {"input_ids": torch.randint(5, 50, (2, 9)), "attention_mask": torch.ones(2, 9, dtype=torch.long)}
    labels = {"start_positions": torch.tensor([3, 0]), "end_positions": torch.tensor([4, 0]), "has_answer": torch.tensor([1, 0])}
    out = model(**inputs, **labels)
    assert out.has_answer_logits.shape == (2, 9) and out["has_answer_logits"] is out.has_answer_logits
    by_hand = nn.functional.binary_cross_entropy_with_logits(out.has_answer_logits[:, 0], torch.tensor([1.0, 0.0]))
    assert out.has_answer_loss.item() == pytest.approx(by_hand.item(), rel=1e-6)
    assert out.loss.item() == pytest.approx(out.span_loss.item() + 0.5 * by_hand.item(), rel=1e-6)
    assert set(out.head_losses) == {"span", "has_answer"} and set(out.logits) == {"start_logits", "end_logits", "has_answer_logits"}
    assert model(**inputs, return_dict=False)[2] is not None  # start, end, has_answer logits: a flat tuple
    with pytest.raises(TypeError, match="has_answers"):
        model(**inputs, has_answers=torch.tensor([1, 0]))


def test_windows_carry_the_label_its_target_function_makes(has_answer_registered, tiny_tokenizer, sample_v1):
    from bio_mrc.features.collate import WindowCollator
    from bio_mrc.features.windows import FeatureConfig, build_features

    features = build_features(sample_v1.examples, tiny_tokenizer, FeatureConfig(**WINDOWS), heads=["has_answer"])
    assert "has_answer" in features.column_names and "start_positions" not in features.column_names
    assert features["has_answer"] == [int(held) for held in features["answer_in_window"]]
    assert 0 < sum(features["has_answer"]) < len(features)  # small windows: some hold the answer, some do not
    batch = WindowCollator()([features[i] for i in range(4)])
    assert batch["has_answer"].dtype == torch.long and batch["has_answer"].tolist() == features["has_answer"][:4]


def test_the_package_never_names_the_new_head():
    package = Path(bio_mrc.__file__).parent
    names = ("has_answer_head", "has_answer_logits", "has_answer_loss", "HasAnswerHead", '"has_answer"', '"answerable"')
    named = [path.name for path in package.rglob("*.py") if any(name in path.read_text(encoding="utf-8") for name in names)]
    assert not named, f"the package names the toy head: {named}"


def test_the_command_line_the_configs_and_the_server_offer_what_is_registered_when_they_are_built(monkeypatch, capsys, tmp_path):
    from pydantic import ValidationError

    from bio_mrc.cli import build_parser, main
    from bio_mrc.errors import ConfigError
    from bio_mrc.serving.config import ServeConfig
    from bio_mrc.serving.schema import answer_request_model
    from bio_mrc.training.config import TrainConfig

    train = ["train", "--train", "t.json", "--output-dir", "o", "--heads", "span+has_answer"]
    tune = ["tune", "--model", "m", "--data", "d.json", "--decoding", "answerable"]
    assert TrainConfig().heads  # checked once before the head is registered: no stale copy of the choices stays behind
    with pytest.raises(SystemExit):
        build_parser().parse_args(train)
    with pytest.raises(ConfigError, match="heads"):
        TrainConfig(heads="span+has_answer")
    with pytest.raises(ValidationError):
        answer_request_model(ServeConfig())(question="q", context="c", decoding="answerable")
    capsys.readouterr()

    with monkeypatch.context() as registered:
        registered.setitem(registry.HEADS, HAS_ANSWER.name, HAS_ANSWER)
        registered.setitem(registry.DECODINGS, ANSWERABLE.name, ANSWERABLE)
        parser = build_parser()
        assert parser.parse_args(train).heads == "span+has_answer"
        assert parser.parse_args(tune).decoding == ["answerable"]
        assert parser.parse_args(["predict", "--model", "m", "--data", "d.json", "--decoding", "answerable", "--output", "o.json"]).decoding == ["answerable"]
        assert TrainConfig(heads="span+has_answer").model_settings()["heads"] == "span+has_answer"
        assert answer_request_model(ServeConfig())(question="q", context="c", decoding="answerable").decoding == "answerable"
        missing = str(tmp_path / "no-model")
        assert main(["tune", "--model", missing, "--data", str(SAMPLE_V1), "--decoding", "answerable"]) == 2
        assert "error: " in capsys.readouterr().err  # one line past the parser, which took the decoding
