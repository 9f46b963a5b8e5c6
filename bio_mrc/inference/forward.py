"""Run a model over windows and collect its outputs as padded numpy arrays."""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch
from datasets import Dataset
from tqdm.auto import tqdm
from transformers import PreTrainedTokenizerBase

from ..decoding.windows import WindowOutputs
from ..features.collate import WindowCollator
from ..features.windows import FeatureConfig, build_features
from ..model import BioMrcForQuestionAnswering
from ..types import Example


@torch.inference_mode()
def run_windows(
    model: BioMrcForQuestionAnswering,
    features: Dataset,
    pad_token_id: int = 0,
    batch_size: int = 64,
    progress: bool = True,
) -> WindowOutputs:
    """Forward every window; windows are batched by length so padding costs little."""
    model.eval()
    lengths = np.array([len(ids) for ids in features["input_ids"]])
    width = int(lengths.max(initial=1))
    n = len(features)
    offsets = np.full((n, width, 2), -1, dtype=np.int64)
    words = offsets.copy()
    mask = np.zeros((n, width), dtype=bool)
    tagged = mask.copy()
    heads = model.heads
    start = np.full((n, width), -np.inf, dtype=np.float32) if "span" in heads else None
    end = None if start is None else start.copy()
    bio = np.zeros((n, width, 3), dtype=np.float32) if "bio" in heads else None

    collate = WindowCollator(pad_token_id=pad_token_id, pad_to_multiple_of=None)
    inputs = features.select_columns([c for c in ("input_ids", "attention_mask", "token_type_ids") if c in features.column_names])
    order = np.argsort(-lengths, kind="stable")
    device = next(model.parameters()).device
    for begin in tqdm(range(0, n, batch_size), desc="inference", disable=not progress, unit="batch"):
        rows = order[begin : begin + batch_size]
        batch = {k: v.to(device) for k, v in collate([inputs[int(r)] for r in rows]).items()}
        out = model(**batch)
        length = batch["input_ids"].shape[1]
        if start is not None:
            start[rows, :length] = out.start_logits.float().cpu().numpy()
            end[rows, :length] = out.end_logits.float().cpu().numpy()
        if bio is not None:
            bio[rows, :length] = out.bio_logits.float().cpu().numpy()
    columns = zip(features["offset_mapping"], features["paragraph_mask"], features["word_offsets"], features["tag_mask"])
    for i, (offs, para, word_offs, tags) in enumerate(columns):
        offsets[i, : len(offs)], words[i, : len(word_offs)] = offs, word_offs
        mask[i, : len(para)], tagged[i, : len(tags)] = para, tags
    return WindowOutputs(np.asarray(features["example_index"]), offsets, mask, start, end, bio, words, tagged)


def predict_windows(
    model: BioMrcForQuestionAnswering,
    tokenizer: PreTrainedTokenizerBase,
    examples: Sequence[Example],
    feature_config: FeatureConfig,
    batch_size: int = 64,
    progress: bool = True,
) -> WindowOutputs:
    """Tokenize ``examples`` into windows and run the model over them."""
    features = build_features(examples, tokenizer, feature_config, with_targets=False, desc="evaluation windows")
    return run_windows(model, features, tokenizer.pad_token_id or 0, batch_size, progress)
