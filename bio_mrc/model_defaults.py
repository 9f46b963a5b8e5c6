"""The model's defaults (heads, losses, the BIO head's prior, windows), defined once for ``BioMrcConfig``, the
heads and ``TrainConfig``; plain values and the window rule on them, so the command line builds its options and checks
its windows without loading torch."""

from __future__ import annotations

from typing import Any, Mapping

from .errors import ConfigError

HEADS = "span+bio"
SPAN_LOSS_WEIGHT = 1.0
# The token-mean BIO loss pulls about 1/100 as hard as the span loss at weight 1; 10 gave the best
# joint decoding with the BIO decoding past 53 F1 (benchmarks/RESULTS.md, BIO quality).
BIO_LOSS_WEIGHT = 10.0
BIO_LOSS_REDUCTIONS = ("mean", "sum", "token_mean")
BIO_LOSS_REDUCTION = "token_mean"
# Initial B/I/O probabilities (the BIO head's bias is their log), about SQuAD's tag frequencies; None = uniform.
BIO_PRIOR = (0.01, 0.02, 0.97)
# Training options added after the first models were saved, and what a run record without one means: the value every
# model had then, whatever the default is now. Records and model keys leave them out at that value, so older models
# keep their keys; a model card shows them.
TRAIN_OPTIONS_WHEN_ABSENT = {"training_args": {}, "tag_mentions": "annotated", "revision": None}
# The words BIO tags live on. "punctuation": a piece of punctuation alone is a word of its own where the tokenizer's
# words hold punctuation (sentencepiece's "Paris." is "Paris" and "."), as BERT's words are; "tokenizer": its words as
# they are, the rule of every model saved before the setting, which a model config without it keeps.
WORD_UNITS = ("punctuation", "tokenizer")
WORD_UNITS_NOW = "punctuation"
WORD_UNITS_WHEN_ABSENT = "tokenizer"
# transformers' question-answering pipeline reads windows of these sizes: what its extractive QA models
# (``...ForQuestionAnswering``) are trained and run with, and so the windows bio_mrc answers with them in.
QA_WINDOWS = {"max_seq_length": 384, "doc_stride": 128, "max_query_length": 64}
# The layout of a saved model folder; a folder saved by a newer layout is refused, not misread.
MODEL_FORMAT = 1

# The decodings' answer-length limit in tokens where neither the caller nor the model sets one (a model saves the length
# 99% of its training answer spans fit, at least this: bio_mrc.training.answer_lengths).
MAX_ANSWER_LENGTH = 30
ANSWER_LENGTH_COVERAGE = 0.99
# The bound on a saved tuned setting (thresholds, priors, calibrators, far smaller) and on a decoding's length prior:
# larger ones overflow the decoding.
MAX_SETTING = 1e6

# Windows per forward batch when answering. On CPU, batches of 16 length-sorted windows ran 1.14x faster than 64
# (bench_inference.py --levers; their activations stay in cache). Training measures auto's inference precision at
# this batch too.
INFERENCE_BATCH_SIZE = 16
# On a GPU a pass of 16 windows is over before the host has launched the next: scoring on an H100 ran 21 such
# passes a second with the GPU near idle, so a model on a GPU answers in passes of this many.
GPU_INFERENCE_BATCH_SIZE = 128


def qa_windows(encoder_config, tokenizer_max_length: int | None = None, positions: int | None = None,
               **windows: int | None) -> dict[str, int]:
    """The window settings ``windows`` gives, the others :data:`QA_WINDOWS`' within the encoder's ``positions`` (default:
    its ``max_position_embeddings``) and the tokenizer's ``model_max_length``: a shorter window keeps a question of at
    most a quarter of it and a stride that leaves new context in each window. Settings that do not fit are refused
    (:class:`ConfigError`)."""
    least = {"doc_stride": 0}  # windows that do not overlap, as train takes them
    if given := {name: value for name, value in windows.items()
                 if value is not None and (type(value) is not int or value < least.get(name, 1))}:
        raise ConfigError(f"window settings are positive integers (doc_stride may be 0); got {given}")
    configured = getattr(encoder_config, "max_position_embeddings", None)
    positions = positions or (configured if isinstance(configured, int) and configured > 0 else None)
    limits = [QA_WINDOWS["max_seq_length"], *[limit for limit in (positions, tokenizer_max_length) if limit]]
    length = windows.get("max_seq_length") or min(limits)
    question = windows.get("max_query_length") or min(QA_WINDOWS["max_query_length"], length // 4)
    stride = windows["doc_stride"] if windows.get("doc_stride") is not None else min(QA_WINDOWS["doc_stride"], max(1, (length - question - 3) // 2))
    if positions and length > positions:
        raise ConfigError(f"max_seq_length {length} exceeds the {positions} positions the encoder's windows may fill")
    if question >= length - 4:
        raise ConfigError(f"max_query_length {question} leaves no context in a window of max_seq_length {length}")
    if stride >= length - question - 3:  # [CLS] and two [SEP]: the windows' rule (bio_mrc.features.config)
        raise ConfigError(f"doc_stride {stride} leaves no new context in a window of max_seq_length {length} after "
                          f"max_query_length {question} (it must be < max_seq_length - max_query_length - 3)")
    return {"max_seq_length": length, "doc_stride": stride, "max_query_length": question}


# The encoder families whose position table holds the padding id and numbers a window's positions from after it
# (RoBERTa and its kin, as fairseq numbers them): a window fills ``max_position_embeddings`` less ``pad_token_id + 1``.
POSITIONS_AFTER_PADDING = frozenset({
    "camembert", "data2vec-text", "ibert", "layoutlmv3", "lilt", "longformer", "luke", "markuplm", "mpnet", "roberta",
    "roberta-prelayernorm", "xlm-roberta", "xlm-roberta-xl", "xmod"})


def window_positions(max_positions: Any, padding_id: Any = None) -> int | None:
    """The positions a window may fill of an encoder of ``max_positions`` whose positions are numbered from after
    ``padding_id`` (None: from 0); None where ``max_positions`` is no count."""
    if type(max_positions) is not int or max_positions < 1:
        return None
    return max(0, max_positions - (padding_id + 1)) if type(padding_id) is int and padding_id >= 0 else max_positions


def config_window_positions(encoder_config: Mapping[str, Any]) -> int | None:
    """:func:`window_positions` of the encoder whose ``config.json`` (as read) is ``encoder_config``, without torch: its
    ``model_type`` says whether positions start after its ``pad_token_id``."""
    model_type = encoder_config.get("model_type")
    after_padding = isinstance(model_type, str) and model_type in POSITIONS_AFTER_PADDING  # a list is no family (nor hashable)
    return window_positions(encoder_config.get("max_position_embeddings"), encoder_config.get("pad_token_id") if after_padding else None)


def windows_that_fit(positions: int) -> str:
    """The window settings :func:`qa_windows` takes for an encoder of ``positions``, as ``max_seq_length 128,
    doc_stride 46, max_query_length 32``: a set that fits as a whole (a shorter window alone leaves the default stride
    no room)."""
    return ", ".join(f"{name} {value}" for name, value in qa_windows(None, positions=positions).items())


__all__ = ["BIO_LOSS_REDUCTION", "BIO_LOSS_REDUCTIONS", "BIO_LOSS_WEIGHT", "BIO_PRIOR", "GPU_INFERENCE_BATCH_SIZE",
           "HEADS", "INFERENCE_BATCH_SIZE", "MAX_ANSWER_LENGTH", "MAX_SETTING", "MODEL_FORMAT", "POSITIONS_AFTER_PADDING", "QA_WINDOWS",
           "ANSWER_LENGTH_COVERAGE", "SPAN_LOSS_WEIGHT", "WORD_UNITS", "WORD_UNITS_NOW", "WORD_UNITS_WHEN_ABSENT",
           "config_window_positions", "qa_windows", "window_positions", "windows_that_fit"]
