"""Load a trained model and turn examples into predictions and official-format files."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Sequence

from transformers import PreTrainedTokenizerBase

from . import __version__
from .data.errors import read_json
from .decoding.postprocess import DecodeConfig, available_decodings, decode
from .decoding.windows import WindowOutputs
from .encoders import load_tokenizer
from .errors import ModelFormatError
from .features.windows import FeatureConfig
from .inference import predict_windows
from .io import atomic_write_json, atomic_write_text
from .model import MODEL_FORMAT, BioMrcConfig, BioMrcForQuestionAnswering
from .progress import progress_bars
from .training.train import TrainConfig, load_run_record
from .types import Example, Prediction, content_hash


@dataclass
class TrainedModel:
    """A model with the tokenizer and window settings it was trained with."""

    model: BioMrcForQuestionAnswering
    tokenizer: PreTrainedTokenizerBase
    features: FeatureConfig
    path: str = ""

    @classmethod
    def load(cls, model_dir: str | Path, progress: bool = False) -> "TrainedModel":
        """Load a saved bio_mrc model folder; a folder that is not one raises :class:`ModelFormatError`."""
        model_dir = Path(model_dir)
        check_model_dir(model_dir)
        with progress_bars(progress):
            model = BioMrcForQuestionAnswering.from_pretrained(str(model_dir))
        tokenizer = load_tokenizer(str(model_dir))
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

    def windows(self, examples: Sequence[Example], batch_size: int = 64, progress: bool = False) -> WindowOutputs:
        with progress_bars(progress):
            return predict_windows(self.model, self.tokenizer, examples, self.features, batch_size, progress)


WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin", "pytorch_model.bin.index.json")


def check_model_dir(model_dir: Path) -> None:
    """Raise :class:`ModelFormatError` naming what makes ``model_dir`` unusable as a bio_mrc model."""
    source = str(model_dir)
    if not model_dir.is_dir():
        raise ModelFormatError("no such model folder", source)
    if not (model_dir / "config.json").is_file():
        raise ModelFormatError("not a saved model: no config.json (train one with `bio-mrc train`)", source)
    config = read_json(model_dir / "config.json")
    model_type = config.get("model_type") if isinstance(config, dict) else None
    if model_type != BioMrcConfig.model_type:
        raise ModelFormatError(
            f"a {model_type or 'non-bio_mrc'} model, not a bio_mrc model (model_type {model_type!r}); "
            "a bare encoder is trained into one with `bio-mrc train --encoder PATH`", source,
        )
    saved_format = config.get("bio_mrc_format", 1)
    if not isinstance(saved_format, int) or saved_format > MODEL_FORMAT:
        raise ModelFormatError(
            f"saved in bio_mrc model format {saved_format!r}; this bio_mrc {__version__} reads formats up to {MODEL_FORMAT} "
            "(upgrade bio_mrc)", source,
        )
    if not any((model_dir / name).is_file() for name in WEIGHT_FILES):
        raise ModelFormatError(f"no weights ({' or '.join(WEIGHT_FILES[::2])}): an unfinished or partial copy?", source)


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


def tuning_provenance(description: str, examples: Sequence[Example]) -> dict[str, Any]:
    """What tuned values saved with a model say about the questions they were tuned on."""
    return {"description": description, "questions": len(examples), "content_hash": content_hash(examples)}


def save_tuned_settings(
    model_dir: str | Path,
    config: BioMrcConfig,
    thresholds: dict[str, float],
    settings: dict[str, Any],
    tuned_on: dict[str, Any],
    overwrite: bool = True,
) -> bool:
    """Save tuned no-answer ``thresholds`` and other tuned ``settings`` (e.g. ``bio_length_prior``)
    in the model's config, stamped with ``tuned_on`` (``description``, ``questions``, ``content_hash``).

    Values tuned on the same questions are merged. Values tuned on other questions are
    replaced, or, without ``overwrite`` (a comparison reusing a cached model), kept:
    then nothing is written and False is returned.
    """
    previous = config.tuned_on or {}
    same_questions = previous.get("content_hash") == tuned_on["content_hash"]
    if previous and not same_questions and not overwrite:
        return False
    kept = (config.no_answer_thresholds or {}) if same_questions else {}
    config.no_answer_thresholds = {**kept, **thresholds} or None  # -inf survives JSON as -Infinity
    for name, value in settings.items():
        setattr(config, name, value)
    config.tuned_on = tuned_on
    atomic_write_text(Path(model_dir) / "config.json", config.to_json_string())
    return True


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
    atomic_write_json(output, {p.id: p.answer for p in predictions}, ensure_ascii=False, indent=1)
    atomic_write_json(paths["nbest"], {p.id: p.to_dict() for p in predictions}, ensure_ascii=False, indent=1)
    if with_na_probs:
        paths["na_probs"] = output.with_suffix(".na_probs.json")
        atomic_write_json(paths["na_probs"], {p.id: no_answer_probability(p.no_answer_score) for p in predictions})
    return paths
