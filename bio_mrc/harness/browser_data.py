"""What the question browser of ``report.html`` shows of one model beyond its cells: each decoding's
answer as character offsets, and the BIO head's per-word P(B) and P(I).

A comparison caches it beside the model's cells (``cells/<model>-<key>.browser.npz``, the same key), so
a re-run re-renders the report without running the model. It stays out of ``report.json``: on the full
SQuAD dev set the per-word probabilities alone are about 1.5 million words.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from ..decoding.postprocess import GroupedTags, grouped_word_tag_probabilities, merge_tag_log_probs
from ..decoding.window_outputs import WindowOutputs
from ..io import atomic_write_bytes
from ..types import Example, Prediction

NO_ANSWER = -1  # the offsets of an answer that is not there (abstained, or no span found)
PROBABILITY_LEVELS = 255  # probabilities are kept as bytes: round(255 p)


@dataclass
class ModelBrowserData:
    """One model on some questions (in the order of ``ids``).

    ``span_offsets`` (D, E, 2): each decoding's best span, ``NO_ANSWER`` where it gives none. With a
    BIO head, ``word_counts`` (E,) tagged words per question, their ``word_offsets`` (W, 2), the
    questions one after another, and ``tag_bytes`` (W, 2): P(B) and P(I) quantised to bytes
    (:func:`quantise`); None without one.
    """

    ids: list[str]
    decodings: list[str]
    span_offsets: np.ndarray
    word_counts: np.ndarray | None = None
    word_offsets: np.ndarray | None = None
    tag_bytes: np.ndarray | None = None

    @property
    def has_tags(self) -> bool:
        return self.tag_bytes is not None

    def fits(self, ids: Sequence[str]) -> bool:
        """Whether this is data of the questions ``ids``, in order, with arrays of the shapes above (a cached file
        edited, or another model's copied over it, is none)."""
        if self.ids != list(ids) or np.shape(self.span_offsets) != (len(self.decodings), len(ids), 2):
            return False
        if not self.has_tags:
            return self.word_counts is None and self.word_offsets is None
        words = int(np.sum(self.word_counts)) if np.shape(self.word_counts) == (len(ids),) else -1
        return np.shape(self.word_offsets) == np.shape(self.tag_bytes) == (words, 2)


def quantise(probabilities: np.ndarray) -> np.ndarray:
    """Probabilities in [0, 1] as bytes, ``round(255 p)``: a byte is within 0.002 of the probability."""
    return np.rint(np.clip(probabilities, 0.0, 1.0) * PROBABILITY_LEVELS).astype(np.uint8)


def best_span_offsets(predictions: Sequence[Prediction]) -> np.ndarray:
    """(E, 2) character offsets of each prediction's answer (its best span), ``NO_ANSWER`` where it has none."""
    offsets = np.full((len(predictions), 2), NO_ANSWER, dtype=np.int64)
    for row, prediction in enumerate(predictions):
        if prediction.answer:
            offsets[row] = prediction.spans[0].start, prediction.spans[0].end
    return offsets


def model_browser_data(
    outputs: WindowOutputs, examples: Sequence[Example], predictions: Mapping[str, Sequence[Prediction]]
) -> ModelBrowserData:
    """The browser's data of one model: ``predictions`` maps each decoding to its predictions on
    ``examples`` (in their order), ``outputs`` are the model's windows over them."""
    decodings = list(predictions)
    spans = np.stack([best_span_offsets(predictions[d]) for d in decodings]) if decodings else np.zeros((0, len(examples), 2))
    data = ModelBrowserData([ex.id for ex in examples], decodings, spans.astype(np.int64))
    if outputs.bio_logits is not None:
        grouped = GroupedTags.of(outputs, len(examples), merge_tag_log_probs)  # no question padded to the longest
        counts, offsets, probabilities = grouped_word_tag_probabilities(grouped)
        data.word_counts, data.word_offsets, data.tag_bytes = counts.astype(np.int64), offsets.astype(np.int64), quantise(probabilities)
    return data


def save_browser_data(data: ModelBrowserData, path: str | Path) -> Path:
    """Write ``data`` as one compressed ``.npz``, atomically."""
    arrays = {"ids": np.array(data.ids, dtype=str), "decodings": np.array(data.decodings, dtype=str), "span_offsets": data.span_offsets}
    if data.has_tags:
        arrays.update(word_counts=data.word_counts, word_offsets=data.word_offsets, tag_bytes=data.tag_bytes)
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    return atomic_write_bytes(path, buffer.getvalue())


def load_browser_data(path: str | Path) -> ModelBrowserData | None:
    """What :func:`save_browser_data` wrote, or None when there is no such file."""
    if not Path(path).is_file():
        return None
    # NumPy's reader opened by name keeps the file open where its archive cannot be read (a file cut short): given
    # the open file, it is closed here whatever np.load raises
    with open(path, "rb") as handle, np.load(handle, allow_pickle=False) as saved:
        tags = {key: saved[key] for key in ("word_counts", "word_offsets", "tag_bytes") if key in saved}
        return ModelBrowserData(saved["ids"].tolist(), saved["decodings"].tolist(), saved["span_offsets"], **tags)


def pool_browser_data(parts: Sequence[ModelBrowserData], order: Sequence[str]) -> ModelBrowserData:
    """The data of several folds' models as one, questions in the order of the ids ``order``."""
    where = {qid: (k, row) for k, part in enumerate(parts) for row, qid in enumerate(part.ids)}
    picks = [where[qid] for qid in order]
    spans = np.stack([parts[k].span_offsets[:, row] for k, row in picks], axis=1)
    pooled = ModelBrowserData(list(order), list(parts[0].decodings), spans)
    if all(part.has_tags for part in parts):
        starts = [np.concatenate([[0], np.cumsum(part.word_counts)]) for part in parts]
        words = [slice(starts[k][row], starts[k][row + 1]) for k, row in picks]
        pooled.word_counts = np.array([parts[k].word_counts[row] for k, row in picks], dtype=np.int64)
        pooled.word_offsets = np.concatenate([parts[k].word_offsets[w] for (k, _), w in zip(picks, words)]).reshape(-1, 2)
        pooled.tag_bytes = np.concatenate([parts[k].tag_bytes[w] for (k, _), w in zip(picks, words)]).reshape(-1, 2)
    return pooled
