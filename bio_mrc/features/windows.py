"""Examples -> stride windows of token ids, with offsets and span / BIO targets.

Windows follow Hugging Face's QA recipe: a fast tokenizer, question first,
``truncation="only_second"``, ``max_seq_length``, and ``doc_stride`` tokens of
overlap between consecutive windows of one context. Offsets are kept for every
paragraph token (``(-1, -1)`` elsewhere) so decoders map tokens back to exact
characters of the original context.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Sequence

import numpy as np
from datasets import Dataset
from transformers import PreTrainedTokenizerBase

from ..types import TAG_B, TAG_I, TAG_O, Alternative, Example

TARGET_KINDS = ("one-hot", "soft")


@dataclass(frozen=True)
class FeatureConfig:
    """How examples become windows and which targets they carry.

    ``bio_targets``/``span_targets``: ``"one-hot"`` uses the first annotator's
    answer; ``"soft"`` averages over all annotators (the per-token gold
    distribution; for the span head, a distribution over start/end positions).
    """

    max_seq_length: int = 384
    doc_stride: int = 128
    max_query_length: int = 64
    bio_targets: str = "soft"
    span_targets: str = "one-hot"

    def __post_init__(self) -> None:
        for name in ("bio_targets", "span_targets"):
            if getattr(self, name) not in TARGET_KINDS:
                raise ValueError(f"{name} must be one of {TARGET_KINDS}, got {getattr(self, name)!r}")
        if self.doc_stride >= self.max_seq_length - self.max_query_length - 3:
            raise ValueError(
                f"doc_stride ({self.doc_stride}) must leave room for new context tokens in each window: "
                f"it must be < max_seq_length - max_query_length - 3 = {self.max_seq_length - self.max_query_length - 3}"
            )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def check_tokenizer(tokenizer: PreTrainedTokenizerBase) -> None:
    """Offsets are what map tokens back to characters; only fast tokenizers have them."""
    if not getattr(tokenizer, "is_fast", False):
        raise TypeError(
            f"{type(tokenizer).__name__} is not a fast tokenizer and cannot return offset mappings; "
            "load it with AutoTokenizer.from_pretrained(..., use_fast=True)"
        )
    if tokenizer.padding_side != "right":
        raise ValueError("bio_mrc expects a right-padding tokenizer (question first, context second)")


def truncate_questions(questions: Sequence[str], tokenizer: PreTrainedTokenizerBase, max_query_length: int) -> list[str]:
    """Cut each question after its ``max_query_length``-th token, at a character boundary."""
    encoded = tokenizer(list(questions), add_special_tokens=False, return_offsets_mapping=True)
    return [
        q if len(offsets) <= max_query_length else q[: offsets[max_query_length - 1][1]]
        for q, offsets in zip(questions, encoded["offset_mapping"])
    ]


def tokenize_windows(
    examples: Sequence[Example], tokenizer: PreTrainedTokenizerBase, config: FeatureConfig
) -> dict[str, list[Any]]:
    """Tokenize into windows; no targets. Keys are the model inputs plus ``example_index``,
    ``offset_mapping`` (paragraph tokens only) and ``paragraph_mask``."""
    check_tokenizer(tokenizer)
    questions = truncate_questions([ex.question.lstrip() for ex in examples], tokenizer, config.max_query_length)
    enc = tokenizer(
        questions,
        [ex.context for ex in examples],
        truncation="only_second",
        max_length=config.max_seq_length,
        stride=config.doc_stride,
        return_overflowing_tokens=True,
        return_offsets_mapping=True,
        padding=False,
    )
    features: dict[str, list[Any]] = {key: enc[key] for key in enc.keys() if key not in ("offset_mapping", "overflow_to_sample_mapping")}
    features["example_index"] = list(enc["overflow_to_sample_mapping"])
    offsets_out, masks = [], []
    for i, offsets in enumerate(enc["offset_mapping"]):
        in_context = np.array([sid == 1 for sid in enc.sequence_ids(i)], dtype=bool)
        offsets = np.asarray(offsets, dtype=np.int64).reshape(-1, 2)
        offsets[~in_context] = -1
        offsets_out.append(offsets.tolist())
        masks.append(in_context.astype(np.int8).tolist())
    features["offset_mapping"] = offsets_out
    features["paragraph_mask"] = masks
    return features


def _alternative_tags(offsets: np.ndarray, para: np.ndarray, alternative: Alternative) -> np.ndarray:
    """Integer B/I/O tags of one annotator's answer over one window.

    Every token overlapping an answer span is I; the token holding the span's
    first character is B. A span that began in an earlier window therefore
    shows as I's without a B here: the truth about this window, and the
    maximum-context merge decides such tokens from the window that holds the start.
    """
    tags = np.full(len(offsets), TAG_O, dtype=np.int64)
    for start, end in alternative:
        inside = para & (offsets[:, 0] < end) & (offsets[:, 1] > start)
        tags[inside] = TAG_I
        first = np.flatnonzero(inside & (offsets[:, 0] <= start))
        if len(first):
            tags[first[-1]] = TAG_B
    return tags


def _span_positions(offsets: np.ndarray, para: np.ndarray, start: int, end: int) -> tuple[int, int]:
    """Gold start/end token of a character span, or ``(0, 0)`` ([CLS]) when the window lacks part of it."""
    positions = np.flatnonzero(para)
    window_start, window_end = offsets[positions[0], 0], offsets[positions[-1], 1]
    if start < window_start or end > window_end:
        return 0, 0
    inside = np.flatnonzero(para & (offsets[:, 0] < end) & (offsets[:, 1] > start))
    if not len(inside):  # the span is pure whitespace between tokens
        return 0, 0
    return int(inside[0]), int(inside[-1])


def add_targets(features: dict[str, list[Any]], examples: Sequence[Example], config: FeatureConfig) -> dict[str, list[Any]]:
    """Add ``start_positions``/``end_positions`` and ``bio_targets`` to tokenized windows.

    Unanswerable examples get ``[CLS]`` span targets and all-O tags. Multi-span
    alternatives train the span head on their first span (a start/end head can
    only name one); the BIO head sees all of them.
    """
    starts, ends, bio = [], [], []
    for offsets, para, ex_index in zip(features["offset_mapping"], features["paragraph_mask"], features["example_index"]):
        offsets, para = np.asarray(offsets), np.asarray(para, dtype=bool)
        alternatives = examples[ex_index].answers
        if config.bio_targets == "one-hot":
            alternatives_for_bio = alternatives[:1]
        else:
            alternatives_for_bio = alternatives
        if alternatives_for_bio:
            tags = np.stack([_alternative_tags(offsets, para, alt) for alt in alternatives_for_bio])
            dist = np.stack([(tags == t).mean(0) for t in (TAG_B, TAG_I, TAG_O)], axis=-1)
        else:
            dist = np.tile(np.array([0.0, 0.0, 1.0]), (len(offsets), 1))
        dist[~para] = 0.0  # never scored; zeros keep the soft loss exactly 0 there
        bio.append(dist.astype(np.float32).tolist())

        positions = [_span_positions(offsets, para, *alt[0]) for alt in alternatives] or [(0, 0)]
        if config.span_targets == "one-hot":
            starts.append(positions[0][0])
            ends.append(positions[0][1])
        else:
            s_dist, e_dist = np.zeros(len(offsets), np.float32), np.zeros(len(offsets), np.float32)
            np.add.at(s_dist, [p[0] for p in positions], 1.0 / len(positions))
            np.add.at(e_dist, [p[1] for p in positions], 1.0 / len(positions))
            starts.append(s_dist.tolist())
            ends.append(e_dist.tolist())
    return {**features, "start_positions": starts, "end_positions": ends, "bio_targets": bio}


def build_features(
    examples: Sequence[Example],
    tokenizer: PreTrainedTokenizerBase,
    config: FeatureConfig,
    with_targets: bool = True,
    batch_size: int = 500,
    desc: str = "windows",
) -> Dataset:
    """Windows of all examples as a ``datasets.Dataset`` (mapped in batches, with a progress bar).

    ``example_index`` points into ``examples``.
    """
    index = Dataset.from_dict({"example_index": list(range(len(examples)))})

    def prepare(batch: dict[str, list[Any]]) -> dict[str, list[Any]]:
        chunk = [examples[i] for i in batch["example_index"]]
        feats = tokenize_windows(chunk, tokenizer, config)
        if with_targets:
            feats = add_targets(feats, chunk, config)
        feats["example_index"] = [batch["example_index"][i] for i in feats["example_index"]]
        return feats

    return index.map(prepare, batched=True, batch_size=batch_size, remove_columns=["example_index"], desc=desc)
