"""Load a trained model and turn examples into predictions and official-format files."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Sequence

from transformers import AutoTokenizer, PreTrainedTokenizerBase

from .decoding.postprocess import DecodeConfig, available_decodings, decode
from .decoding.windows import WindowOutputs
from .features.windows import FeatureConfig
from .inference import predict_windows
from .model import BioMrcForQuestionAnswering
from .training.train import TrainConfig, load_run_record
from .types import Example, Prediction


@dataclass
class TrainedModel:
    """A model with the tokenizer and window settings it was trained with."""

    model: BioMrcForQuestionAnswering
    tokenizer: PreTrainedTokenizerBase
    features: FeatureConfig
    path: str = ""

    @classmethod
    def load(cls, model_dir: str | Path) -> "TrainedModel":
        model_dir = Path(model_dir)
        if not (model_dir / "config.json").exists():
            raise FileNotFoundError(f"{model_dir} is not a saved bio_mrc model (no config.json)")
        model = BioMrcForQuestionAnswering.from_pretrained(str(model_dir))
        tokenizer = AutoTokenizer.from_pretrained(str(model_dir), use_fast=True)
        record = load_run_record(model_dir)
        features = TrainConfig.from_dict(record["train"]).features if record else FeatureConfig()
        features = replace(features, tag_level=model.config.tag_level)  # the model says which tokens it tags
        return cls(model, tokenizer, features, str(model_dir))

    @property
    def decodings(self) -> list[str]:
        return available_decodings(self.model.config.heads)

    @property
    def thresholds(self) -> dict[str, float]:
        return dict(self.model.config.no_answer_thresholds or {})

    def decode_config(self, config: DecodeConfig) -> DecodeConfig:
        """``config`` with the settings tuned for this model (the BIO length prior) where it leaves them open."""
        if config.bio_length_prior is None:
            return replace(config, bio_length_prior=self.model.config.bio_length_prior or 0.0)
        return config

    def windows(self, examples: Sequence[Example], batch_size: int = 64, progress: bool = True) -> WindowOutputs:
        return predict_windows(self.model, self.tokenizer, examples, self.features, batch_size, progress)


def apply_no_answer_threshold(predictions: Sequence[Prediction], threshold: float | None) -> list[Prediction]:
    """Abstain where ``no_answer_score > threshold`` (never, when the threshold is ``None``)."""
    for prediction in predictions:
        prediction.abstain = (
            threshold is not None and prediction.no_answer_score is not None and prediction.no_answer_score > threshold
        )
    return list(predictions)


def threshold_key(decoding: str, config: DecodeConfig) -> str:
    """Where a decoding's tuned threshold is saved: one per no-answer score, since a
    threshold tuned on one score means nothing for another (``bio/ratio`` is the tag
    log-likelihood ratio; a ``bio`` key saved by older versions is another score)."""
    return "bio/ratio" if decoding == "bio" else decoding


def decode_with_thresholds(
    outputs: WindowOutputs,
    examples: Sequence[Example],
    decoding: str,
    config: DecodeConfig,
    thresholds: dict[str, float] | None = None,
) -> list[Prediction]:
    """Decode, then apply the no-answer threshold tuned for this decoding, if there is one."""
    predictions = decode(outputs, examples, decoding, config)
    return apply_no_answer_threshold(predictions, (thresholds or {}).get(threshold_key(decoding, config)))


def no_answer_probability(score: float | None) -> float:
    """A no-answer score squashed to (0, 1) for the official ``na_prob`` file (monotone, so
    the official ``best_*`` thresholds are thresholds on the score itself)."""
    if score is None:
        raise ValueError("this decoding has no no-answer score")
    if math.isinf(score):
        return 1.0 if score > 0 else 0.0
    return 1.0 / (1.0 + math.exp(-score)) if score > -700 else 0.0


def write_prediction_files(predictions: Sequence[Prediction], output: str | Path, with_na_probs: bool = True) -> dict[str, Path]:
    """Write ``output`` (official ``{id: answer}``), ``<stem>.nbest.json`` (every span with
    offsets and scores) and, when asked, ``<stem>.na_probs.json``."""
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    paths = {"predictions": output, "nbest": output.with_suffix(".nbest.json")}
    output.write_text(json.dumps({p.id: p.answer for p in predictions}, ensure_ascii=False, indent=1))
    paths["nbest"].write_text(json.dumps({p.id: p.to_dict() for p in predictions}, ensure_ascii=False, indent=1))
    if with_na_probs:
        paths["na_probs"] = output.with_suffix(".na_probs.json")
        paths["na_probs"].write_text(json.dumps({p.id: no_answer_probability(p.no_answer_score) for p in predictions}))
    return paths
