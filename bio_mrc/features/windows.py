"""Examples -> stride windows of token ids, with offsets and span / BIO targets.

Windows follow Hugging Face's QA recipe: a fast tokenizer, question first,
``truncation="only_second"``, ``max_seq_length``, and ``doc_stride`` tokens of
overlap between consecutive windows of one context. Offsets are kept for every
paragraph token (``(-1, -1)`` elsewhere) so decoders map tokens back to exact
characters of the original context.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Sequence

import datasets
import numpy as np
from datasets import Dataset
from transformers import PreTrainedTokenizerBase

from ..code_fingerprint import sources_fingerprint
from ..errors import ConfigError
from ..tags import TAG_B, TAG_I, TAG_O, spans_to_tags
from ..types import Alternative, Example

TARGET_KINDS = ("one-hot", "soft")
BIO_TARGET_KINDS = ("one-hot", "soft", "marginal")
TAG_LEVELS = ("word", "subword")
MISSING_ANNOTATOR = -1  # fills the annotator axis of marginal targets for examples with fewer annotators


@dataclass(frozen=True)
class FeatureConfig:
    """How examples become windows and which targets they carry.

    ``bio_targets``/``span_targets``: ``"one-hot"`` uses the first annotator's
    answer; ``"soft"`` averages over all annotators (the per-token gold
    distribution; for the span head, a distribution over start/end positions).
    ``bio_targets="marginal"`` keeps every annotator's tag sequence, for the
    marginal likelihood ``log Σ_k P(tags_k)`` (TASE's objective).

    ``tag_level``: ``"word"`` tags only the first piece of each word (the other
    pieces carry no tag and no loss, as in NER taggers and TASE) and decodes on
    word boundaries; ``"subword"`` tags every paragraph token.
    """

    max_seq_length: int = 384
    doc_stride: int = 128
    max_query_length: int = 64
    bio_targets: str = "soft"
    span_targets: str = "one-hot"
    tag_level: str = "word"

    def __post_init__(self) -> None:
        for name, kinds in (("bio_targets", BIO_TARGET_KINDS), ("span_targets", TARGET_KINDS), ("tag_level", TAG_LEVELS)):
            if getattr(self, name) not in kinds:
                raise ConfigError(f"{name} must be one of {kinds}, got {getattr(self, name)!r}")
        if self.doc_stride >= self.max_seq_length - self.max_query_length - 3:
            raise ConfigError(
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
        raise ConfigError("bio_mrc expects a right-padding tokenizer (question first, context second)")


def check_window_room(tokenizer: PreTrainedTokenizerBase, config: FeatureConfig) -> None:
    """``FeatureConfig`` counts BERT's 3 special tokens; a RoBERTa-style pair has 4
    (``<s> q </s></s> c </s>``). Without room for new context tokens past the stride
    the Rust tokenizer panics (an exception ``except Exception`` does not catch)."""
    room = config.max_seq_length - config.max_query_length - tokenizer.num_special_tokens_to_add(pair=True)
    if config.doc_stride >= room:
        raise ConfigError(
            f"doc_stride ({config.doc_stride}) must be < max_seq_length - max_query_length - "
            f"{tokenizer.num_special_tokens_to_add(pair=True)} special tokens of this tokenizer = {room}"
        )


def truncate_questions(questions: Sequence[str], tokenizer: PreTrainedTokenizerBase, max_query_length: int) -> list[str]:
    """Cut each question before its first token past ``max_query_length``, at a character boundary.

    Cut before the next token, not after the last kept one: byte-level BPE splits
    one character into several tokens, and keeping that whole character would keep
    more than ``max_query_length`` tokens (the windows then lack room for the stride).
    """
    encoded = tokenizer(list(questions), add_special_tokens=False, return_offsets_mapping=True, verbose=False)
    return [
        q if len(offsets) <= max_query_length else q[: offsets[max_query_length][0]].rstrip()
        for q, offsets in zip(questions, encoded["offset_mapping"])
    ]


def tokenize_windows(
    examples: Sequence[Example], tokenizer: PreTrainedTokenizerBase, config: FeatureConfig
) -> dict[str, list[Any]]:
    """Tokenize into windows; no targets. Keys are the model inputs plus ``example_index``,
    ``offset_mapping`` (paragraph tokens only), ``paragraph_mask``, ``word_offsets``
    (the character span of each paragraph token's word; the token's own span at
    sub-word level) and ``tag_mask`` (the tokens that carry a BIO tag)."""
    check_tokenizer(tokenizer)
    check_window_room(tokenizer, config)
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
    contexts = [ex.context for ex in examples]
    attached = dropped_attached_runs(tokenizer, contexts)
    columns: dict[str, list[Any]] = {"offset_mapping": [], "paragraph_mask": [], "word_offsets": [], "tag_mask": []}
    words_of_context = context_words(tokenizer, contexts, attached) if config.tag_level == "word" else None
    for i, (offsets, example) in enumerate(zip(enc["offset_mapping"], features["example_index"])):
        in_context = np.array([sid == 1 for sid in enc.sequence_ids(i)], dtype=bool)
        offsets = np.asarray(offsets, dtype=np.int64).reshape(-1, 2)
        offsets[~in_context] = -1
        offsets = extend_over_attached(offsets, attached[example])
        if words_of_context is not None:
            words, tagged = word_of_tokens(offsets, in_context, words_of_context[example])
        else:
            words, tagged = offsets, in_context
        for key, value in zip(columns, (offsets, in_context.astype(np.int8), words, tagged.astype(np.int8))):
            columns[key].append(value)  # numpy: datasets writes it to Arrow without a detour through Python lists
    features.update(columns)
    return features


def context_words(
    tokenizer: PreTrainedTokenizerBase, contexts: Sequence[str], attached: Sequence[np.ndarray] | None = None
) -> list[np.ndarray]:
    """(W, 2) character spans of the words of each context, in order, without surrounding whitespace.

    Words are the tokenizer's own (``word_ids`` of the context tokenized alone, so
    a word cut by a window's edge keeps its whole span and is the same word in
    every window). Byte-level BPE words carry their leading space; it is stripped.
    ``attached``: :func:`dropped_attached_runs` of ``contexts``, when the caller has them.
    """
    if attached is None:
        attached = dropped_attached_runs(tokenizer, contexts)
    first: dict[str, int] = {}  # each distinct context once, by its first position
    for i, context in enumerate(contexts):
        first.setdefault(context, i)
    unique = list(first)
    enc = tokenizer(unique, add_special_tokens=False, return_offsets_mapping=True, verbose=False)  # no window: no length warning
    spans_by_context = {}
    for k, context in enumerate(unique):
        ids = np.array([-1 if w is None else w for w in enc.word_ids(k)], dtype=np.int64)
        offsets = np.asarray(enc["offset_mapping"][k], dtype=np.int64).reshape(-1, 2)
        offsets = extend_over_attached(offsets, attached[first[context]])[ids >= 0]
        ids = ids[ids >= 0]
        n_words = int(ids.max(initial=-1)) + 1
        spans = np.stack([np.full(n_words, len(context)), np.zeros(n_words, dtype=np.int64)], axis=1)
        np.minimum.at(spans[:, 0], ids, offsets[:, 0])
        np.maximum.at(spans[:, 1], ids, offsets[:, 1])
        stripped = np.array([_strip(context, a, b) for a, b in spans.tolist()], dtype=np.int64).reshape(-1, 2)
        spans_by_context[context] = stripped[stripped[:, 0] < stripped[:, 1]]  # whitespace-only "words" carry no tag
    return [spans_by_context[c] for c in contexts]


def dropped_attached_runs(tokenizer: PreTrainedTokenizerBase, contexts: Sequence[str]) -> list[np.ndarray]:
    """(R, 2) character spans of each context's runs of characters that attach to the one before
    them (combining marks, ZWJ/ZWNJ, variation selectors: no grapheme break before them) and
    that the tokenizer's normalizer deletes (an uncased BERT strips accents).

    No token covers such characters, so without them a token ends mid-grapheme and
    ``cafe\\u0301`` decodes as ``cafe``, ``नहीं`` loses its final sign.
    """
    backend = getattr(tokenizer, "backend_tokenizer", None)
    normalizer = None if backend is None else backend.normalizer
    chars = set().union(*map(set, contexts)) if normalizer is not None else set()
    attaching = (c for c in chars if unicodedata.category(c).startswith("M") or c in "\u200c\u200d")
    dropped = sorted(c for c in attaching if normalizer.normalize_str(c) == "")
    if not dropped:
        return [np.zeros((0, 2), dtype=np.int64)] * len(contexts)
    pattern = re.compile("[" + "".join(map(re.escape, dropped)) + "]+")
    return [np.array([m.span() for m in pattern.finditer(c)], dtype=np.int64).reshape(-1, 2) for c in contexts]


def extend_over_attached(offsets: np.ndarray, runs: np.ndarray) -> np.ndarray:
    """Token offsets whose end is followed by a run of :func:`dropped_attached_runs` end after the run."""
    if not len(runs):
        return offsets
    index = np.minimum(np.searchsorted(runs[:, 0], offsets[:, 1]), len(runs) - 1)
    hit = (runs[index, 0] == offsets[:, 1]) & (offsets[:, 1] > offsets[:, 0])
    offsets = offsets.copy()
    offsets[hit, 1] = runs[index[hit], 1]
    return offsets


def _strip(text: str, start: int, end: int) -> tuple[int, int]:
    piece = text[start:end]
    return start + len(piece) - len(piece.lstrip()), end - len(piece) + len(piece.rstrip())


def word_of_tokens(offsets: np.ndarray, in_context: np.ndarray, words: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For the tokens of one window: the character span of each paragraph token's word
    (-1 elsewhere), and which tokens carry the word's tag (the token holding its first character)."""
    spans = np.full_like(offsets, -1)
    if not len(words):
        return spans, np.zeros(len(offsets), dtype=bool)
    index = np.minimum(np.searchsorted(words[:, 1], offsets[:, 0], side="right"), len(words) - 1)
    word = words[index]
    belongs = in_context & (word[:, 0] <= np.maximum(offsets[:, 1] - 1, offsets[:, 0])) & (word[:, 1] > offsets[:, 0])
    spans[belongs] = word[belongs]
    first = belongs & (offsets[:, 0] <= word[:, 0]) & (word[:, 0] < offsets[:, 1])
    # Byte-level BPE splits a character into several tokens with its offsets: tag only the first.
    first[1:] &= ~(first[:-1] & (spans[1:] == spans[:-1]).all(axis=1))
    return spans, first


def bio_targets(words: np.ndarray, tagged: np.ndarray, alternatives: tuple[Alternative, ...], kind: str) -> np.ndarray:
    """BIO targets of one window over its tagged tokens (``words``: their character spans).

    ``soft``: (L, 3) the annotators' mean tag distribution; ``one-hot``: the
    same for the first annotator; ``marginal``: (L, K) every annotator's
    integer tags. An unanswerable question is one all-O annotator. Untagged
    tokens get zero distributions (no loss) or O.
    """
    chosen = alternatives[:1] if kind == "one-hot" else alternatives
    tags = np.stack([spans_to_tags(words, tagged, alt) for alt in chosen]) if chosen else np.full((1, len(words)), TAG_O)
    if kind == "marginal":
        return np.ascontiguousarray(tags.T)
    dist = np.stack([(tags == t).mean(0) for t in (TAG_B, TAG_I, TAG_O)], axis=-1)
    dist[~tagged] = 0.0  # never scored; zeros keep the soft loss exactly 0 there
    return dist.astype(np.float32)


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
    starts, ends, bio, covered = [], [], [], []
    windows = zip(features["offset_mapping"], features["paragraph_mask"], features["word_offsets"], features["tag_mask"], features["example_index"])
    for offsets, para, words, tagged, ex_index in windows:
        offsets, para = np.asarray(offsets), np.asarray(para, dtype=bool)
        alternatives = examples[ex_index].answers
        bio.append(bio_targets(np.asarray(words), np.asarray(tagged, dtype=bool), alternatives, config.bio_targets))

        positions = [_span_positions(offsets, para, *alt[0]) for alt in alternatives] or [(0, 0)]
        covered.append(any(position != (0, 0) for position in positions))
        if config.span_targets == "one-hot":
            starts.append(positions[0][0])
            ends.append(positions[0][1])
        else:
            s_dist, e_dist = np.zeros(len(offsets), np.float32), np.zeros(len(offsets), np.float32)
            np.add.at(s_dist, [p[0] for p in positions], 1.0 / len(positions))
            np.add.at(e_dist, [p[1] for p in positions], 1.0 / len(positions))
            starts.append(s_dist)
            ends.append(e_dist)
    return {**features, "start_positions": starts, "end_positions": ends, "bio_targets": bio, "answer_in_window": covered}


def answers_no_window_holds(features: Any, examples: Sequence[Example]) -> list[str]:
    """The ids of answerable questions whose every answer misses every window's tokens: pure whitespace,
    characters the tokenizer drops (zero-width, control), or longer than a window. They would train as
    unanswerable, so the official scripts' tolerance of such answers should not pass without a word."""
    held = np.zeros(len(examples), dtype=bool)
    index, in_window = np.asarray(features["example_index"]), np.asarray(features["answer_in_window"], dtype=bool)
    held[index[in_window]] = True
    return [example.id for example, found in zip(examples, held) if example.is_answerable and not found]


def build_features(
    examples: Sequence[Example],
    tokenizer: PreTrainedTokenizerBase,
    config: FeatureConfig,
    with_targets: bool = True,
    batch_size: int = 500,
    desc: str = "windows",
    cache_dir: str | Path | None = None,
) -> Dataset:
    """Windows of all examples as a ``datasets.Dataset`` (mapped in batches, with a progress bar).

    ``example_index`` points into ``examples``. With ``cache_dir``, the windows are written there
    as an Arrow file named by :func:`windows_fingerprint`, and a later call with the same
    questions, tokenizer and settings memory-maps that file instead of tokenizing again
    (``datasets``' own cache lookup; ``load_from_cache_file`` follows ``datasets.is_caching_enabled``).
    """
    index = Dataset.from_dict({"example_index": list(range(len(examples)))})

    def prepare(batch: dict[str, list[Any]]) -> dict[str, list[Any]]:
        chunk = [examples[i] for i in batch["example_index"]]
        feats = tokenize_windows(chunk, tokenizer, config)
        if with_targets:
            feats = add_targets(feats, chunk, config)
        feats["example_index"] = [batch["example_index"][i] for i in feats["example_index"]]
        return feats

    # An explicit fingerprint: otherwise datasets hashes ``prepare`` with every example it holds.
    fingerprint = windows_fingerprint(examples, tokenizer, config, with_targets)
    cache_file = None if cache_dir is None else str(Path(cache_dir) / f"windows-{fingerprint}.arrow")
    if cache_file is not None:
        Path(cache_dir).mkdir(parents=True, exist_ok=True)
    return index.map(prepare, batched=True, batch_size=batch_size, remove_columns=["example_index"], desc=desc,
                     new_fingerprint=fingerprint, cache_file_name=cache_file)


def default_windows_cache() -> Path | None:
    """Where training windows are cached: beside ``datasets``' own cache (``HF_DATASETS_CACHE``);
    ``None`` (no cache) after ``datasets.disable_caching()``."""
    return Path(datasets.config.HF_DATASETS_CACHE) / "bio_mrc_windows" if datasets.is_caching_enabled() else None


def windows_fingerprint(
    examples: Sequence[Example], tokenizer: PreTrainedTokenizerBase, config: FeatureConfig, with_targets: bool
) -> str:
    """What the windows depend on: the questions' content, the tokenizer's whole definition
    (vocabulary, normalizer, pre-tokenizer), the settings, and the code that builds them."""
    digest = hashlib.sha256()
    for example in examples:  # every field the windows read, length-prefixed; cheaper than JSON of each example
        q, c = example.question, example.context
        digest.update(f"{len(q)}:{q}{len(c)}:{c}{example.answers!r};".encode())
    for part in (_tokenizer_definition(tokenizer), type(tokenizer).__name__,
                 json.dumps(config.to_dict(), sort_keys=True), str(with_targets), _code_fingerprint()):
        digest.update(part.encode())
    return digest.hexdigest()[:20]


def _tokenizer_definition(tokenizer: PreTrainedTokenizerBase) -> str:
    """The fast tokenizer's serialisation without its truncation and padding state, which
    every call with other settings rewrites."""
    definition = json.loads(tokenizer.backend_tokenizer.to_str())
    definition.pop("truncation", None)
    definition.pop("padding", None)
    return json.dumps(definition, sort_keys=True)


def _code_fingerprint() -> str:
    """The sources of this module and all it imports: a changed featurisation never reads old windows."""
    return sources_fingerprint((__name__,))
