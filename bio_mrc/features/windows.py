"""Examples -> stride windows of token ids, with offsets and span / BIO targets (the words tags live on:
:mod:`.words`; the targets: :mod:`.targets`), and the windows cache.

Windows follow Hugging Face's QA recipe: a fast tokenizer, question first,
``truncation="only_second"``, ``max_seq_length``, and ``doc_stride`` tokens of
overlap between consecutive windows of one context. Offsets are kept for every
paragraph token (``(-1, -1)`` elsewhere) so decoders map tokens back to exact
characters of the original context.

``datasets`` is imported by the functions that map, cache or keep windows in a ``Dataset`` (training, tuning, the
windows cache), not by this module: the answering doors hold a call's windows in a
:class:`~bio_mrc.features.window_table.WindowTable` (:func:`windows_in_table`), which imports neither it nor the pandas
that any Arrow array built from Python pulls in.
"""

from __future__ import annotations

import hashlib
import inspect
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

import numpy as np
from transformers import PreTrainedTokenizerBase

from .. import registry
from ..answer_text import grapheme_bounds
from ..code_fingerprint import sources_fingerprint
from ..errors import ConfigError
from ..types import Example
from .pair_windows import ContextsAlone, pair_windows
from .ragged import arrow_list_column, ragged_column
from .config import BIO_TARGET_KINDS, TAG_LEVELS, TARGET_KINDS, FeatureConfig  # noqa: F401 (imported from here too)
from .targets import add_targets
from .tokenizer_lock import tokenizer_lock
from .window_table import WindowTable
from .windows_cache import cache_budget_bytes, drop_unreadable, mark_used_and_prune, windows_cache_file
from .words import (context_words, dropped_attached_runs, extend_over_attached, snap_to_graphemes, tokens_alone,
                    word_of_tokens)

if TYPE_CHECKING:  # Arrow and datasets are imported where windows are written to them: an answer's never are
    import pyarrow as pa
    from datasets import Dataset


def check_tokenizer(tokenizer: PreTrainedTokenizerBase) -> None:
    """Offsets are what map tokens back to characters; only fast tokenizers have them."""
    if not getattr(tokenizer, "is_fast", False):
        raise TypeError(
            f"{type(tokenizer).__name__} is not a fast tokenizer and cannot return offset mappings; "
            "load it with AutoTokenizer.from_pretrained(..., use_fast=True)"
        )
    sides = {"padding_side": tokenizer.padding_side, "truncation_side": getattr(tokenizer, "truncation_side", "right")}
    if set(sides.values()) != {"right"}:
        raise ConfigError(f"windows are cut and padded on the right; this tokenizer has {sides} "
                          "(set tokenizer.padding_side = tokenizer.truncation_side = 'right', as "
                          "bio_mrc.encoders.load_tokenizer does)")


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
    return cut_questions(questions, tokenizer, max_query_length)[0]


def cut_questions(questions: Sequence[str], tokenizer: PreTrainedTokenizerBase,
                  max_query_length: int) -> tuple[list[str], list[int]]:
    """:func:`truncate_questions` and each question's number of tokens before the cut, from the one tokenization."""
    offsets = _question_offsets(questions, tokenizer)
    cut = [q if len(found) <= max_query_length else q[: found[max_query_length][0]].rstrip()
           for q, found in zip(questions, offsets)]
    return cut, [len(found) for found in offsets]


def question_token_counts(questions: Sequence[str], tokenizer: PreTrainedTokenizerBase) -> list[int]:
    """Each question's number of tokens as the windows count them, against ``max_query_length``."""
    return [len(offsets) for offsets in _question_offsets([q.lstrip() for q in questions], tokenizer)]


def _question_offsets(questions: Sequence[str], tokenizer: PreTrainedTokenizerBase) -> list[list[tuple[int, int]]]:
    """Each question's token offsets, without special tokens, a special token's text read as written."""
    with tokenizer_lock(tokenizer):
        encoded = tokenizer(list(questions), add_special_tokens=False, return_offsets_mapping=True, verbose=False,
                            split_special_tokens=True)
    return encoded["offset_mapping"]


def tokenize_windows(
    examples: Sequence[Example], tokenizer: PreTrainedTokenizerBase, config: FeatureConfig, alone: ContextsAlone | None = None
) -> dict[str, list[Any]]:
    """Tokenize into windows; no targets. Keys are the model inputs plus ``example_index``, ``question_tokens`` (the
    tokens of the window's question before it was cut to ``max_query_length``), ``offset_mapping`` (paragraph tokens
    only), ``paragraph_mask``, ``word_offsets`` (the character span of each paragraph token's word; the token's own
    span at sub-word level) and ``tag_mask`` (the tokens that carry a BIO tag). ``alone``: the contexts an earlier
    batch of the same questions tokenized alone, kept for this one (None: none kept)."""
    check_tokenizer(tokenizer)
    check_window_room(tokenizer, config)
    alone = ContextsAlone() if alone is None else alone  # the words and the windows' slices read one tokenization
    questions, question_tokens = cut_questions([ex.question.lstrip() for ex in examples], tokenizer, config.max_query_length)
    contexts = [ex.context for ex in examples]
    tokens = tokens_alone(tokenizer, contexts, alone) if config.tag_level == "word" else None  # before the windows are held
    cut = pair_windows(tokenizer, questions, contexts, config.max_seq_length, config.doc_stride, alone)
    # each window's question's tokens before the cut: the questions read cut are said from the windows, cached too
    features: dict[str, list[Any]] = {**cut.inputs, "example_index": cut.example_index,
                                      "question_tokens": [question_tokens[example] for example in cut.example_index]}
    window_offsets, window_in_context = cut.offsets, cut.in_context
    attached = dropped_attached_runs(contexts, _offsets_of_examples(window_offsets, features["example_index"], len(contexts)))
    bounds = grapheme_bounds(contexts)
    columns: dict[str, list[Any]] = {"offset_mapping": [], "paragraph_mask": [], "word_offsets": [], "tag_mask": []}
    words_of_context = context_words(tokenizer, contexts, attached, bounds, config.word_units, tokens) if config.tag_level == "word" else None
    for example, first, end in _runs_of_examples(features["example_index"]):  # an example's windows at once
        edges = np.cumsum([0, *map(len, window_offsets[first:end])])
        offsets = snap_to_graphemes(extend_over_attached(np.concatenate(window_offsets[first:end]), attached[example]),
                                    bounds[example])
        in_context = np.concatenate(window_in_context[first:end])
        if words_of_context is not None:
            words, tagged = word_of_tokens(offsets, in_context, words_of_context[example], edges[1:-1])
        else:
            words, tagged = offsets, in_context
        for key, value in zip(columns, (offsets, in_context.astype(np.int8), words, tagged.astype(np.int8))):
            # numpy: written to Arrow from one buffer a column (windows_table)
            columns[key].extend(value[a:b] for a, b in zip(edges[:-1].tolist(), edges[1:].tolist()))
    features.update(columns)
    return features


def _runs_of_examples(example_index: Sequence[int]) -> list[tuple[int, int, int]]:
    """(example, first window, end window) of each run of consecutive windows of one example, in order."""
    index = np.asarray(example_index, dtype=np.int64)
    starts = np.flatnonzero(np.concatenate([[True], index[1:] != index[:-1]])) if len(index) else np.zeros(0, dtype=np.int64)
    ends = np.append(starts[1:], len(index))
    return list(zip(index[starts].tolist(), starts.tolist(), ends.tolist()))


def _offsets_of_examples(window_offsets: list[np.ndarray], example_index: Sequence[int], n_examples: int) -> list[np.ndarray]:
    """Each example's token offsets, its windows' together: the characters some token of the context holds."""
    by_example: list[list[np.ndarray]] = [[] for _ in range(n_examples)]
    for offsets, example in zip(window_offsets, example_index):
        by_example[example].append(offsets)
    return [np.concatenate(parts) if parts else np.zeros((0, 2), dtype=np.int64) for parts in by_example]


# Questions tokenized at once: their windows are held (the tokenizer's encodings, then a few arrays a window) until
# the batch is written, so a batch holds at most this many questions and, on average, this many characters of context
# (SQuAD's contexts fill 500 questions' batches).
BATCH_QUESTIONS = 500
BATCH_CONTEXT_CHARS = 500_000


def questions_per_batch(examples: Sequence[Example]) -> int:
    """How many of ``examples`` to tokenize at once: :data:`BATCH_QUESTIONS`, fewer where their contexts are long."""
    characters = sum(len(example.context) for example in examples)
    if not characters:
        return BATCH_QUESTIONS
    return max(1, min(BATCH_QUESTIONS, BATCH_CONTEXT_CHARS * len(examples) // characters))


def build_features(
    examples: Sequence[Example],
    tokenizer: PreTrainedTokenizerBase,
    config: FeatureConfig,
    with_targets: bool = True,
    batch_size: int | None = None,
    desc: str = "windows",
    cache_dir: str | Path | None = None,
    heads: Sequence[str] | None = None,
    advance: Callable[[int], None] | None = None,
) -> Dataset:
    """Windows of all examples as a ``datasets.Dataset`` (mapped in batches, with datasets' progress bar; ``advance``,
    where given, is called with each batch's number of questions as they are cut: a bar of the caller's).

    ``example_index`` points into ``examples``. With ``cache_dir``, the windows are written there
    as an Arrow file named by :func:`windows_fingerprint`, and a later call with the same
    questions, tokenizer and settings memory-maps that file instead of tokenizing again
    (``datasets``' own cache lookup; ``load_from_cache_file`` follows ``datasets.is_caching_enabled``).
    ``with_targets`` adds the labels of ``heads`` (a model's heads; None: every registered head), each made by
    its registry entry's ``build_targets``. ``batch_size``: questions tokenized at once (None: :func:`questions_per_batch`).
    """
    from datasets import Dataset

    target_heads = _target_heads(with_targets, heads)
    batch_size = questions_per_batch(examples) if batch_size is None else batch_size
    index = Dataset.from_dict({"example_index": list(range(len(examples)))})
    alone = ContextsAlone()  # a context the next batch's questions ask too is tokenized once

    def prepare(batch: dict[str, list[Any]]) -> pa.Table:
        return _batch_table(examples, batch["example_index"], tokenizer, config, target_heads, advance, alone)

    # An explicit fingerprint: otherwise datasets hashes ``prepare`` with every example it holds. Windows held in
    # memory are looked up by none, so the questions name them: the tokenizer's definition (JSON of its whole
    # vocabulary, ~95 ms a call for 30,000 words, holding the interpreter lock from every other thread) keys files only.
    if cache_dir is None:
        return index.map(prepare, batched=True, batch_size=batch_size, remove_columns=["example_index"], desc=desc,
                         new_fingerprint=_examples_digest(examples).hexdigest()[:20])
    fingerprint = windows_fingerprint(examples, tokenizer, config, with_targets, target_heads)
    budget = cache_budget_bytes()  # a bad setting is refused before the windows are built
    cache_file = windows_cache_file(cache_dir, fingerprint)
    cache_file.parent.mkdir(parents=True, exist_ok=True)
    drop_unreadable(cache_file, lambda windows: holds_every_window(windows, examples, tokenizer, config))
    features = index.map(prepare, batched=True, batch_size=batch_size, remove_columns=["example_index"], desc=desc,
                         new_fingerprint=fingerprint, cache_file_name=str(cache_file))
    mark_used_and_prune(cache_file, budget)
    return features


def _batch_table(examples: Sequence[Example], rows: Sequence[int], tokenizer: PreTrainedTokenizerBase,
                 config: FeatureConfig, target_heads: Sequence[str], advance: Callable[[int], None] | None,
                 alone: ContextsAlone | None = None) -> pa.Table:
    """The windows of ``examples[rows]`` (with the labels of ``target_heads``) as :func:`windows_table` writes them;
    ``alone`` as :func:`tokenize_windows` takes it."""
    return windows_table(_batch_windows(examples, rows, tokenizer, config, target_heads, advance, alone))


def _batch_windows(examples: Sequence[Example], rows: Sequence[int], tokenizer: PreTrainedTokenizerBase,
                   config: FeatureConfig, target_heads: Sequence[str], advance: Callable[[int], None] | None,
                   alone: ContextsAlone | None = None) -> dict[str, list[Any]]:
    """The windows of ``examples[rows]`` (with the labels of ``target_heads``) as :func:`tokenize_windows` gives them,
    each window's ``example_index`` its example's place in ``examples``; ``advance``, where given, told their number."""
    chunk = [examples[i] for i in rows]
    feats = tokenize_windows(chunk, tokenizer, config, alone)
    if target_heads:
        feats = add_targets(feats, chunk, config, target_heads)
    feats["example_index"] = [rows[i] for i in feats["example_index"]]
    if advance is not None:
        advance(len(chunk))
    return feats


def windows_in_memory(examples: Sequence[Example], tokenizer: PreTrainedTokenizerBase, config: FeatureConfig,
                      batch_size: int | None = None, advance: Callable[[int], None] | None = None,
                      alone: ContextsAlone | None = None) -> Dataset:
    """The windows :func:`build_features` builds without targets or a cache, each batch's Arrow table kept as it is
    built: ``Dataset.map`` writes every table into one growing in-memory stream and reads the dataset back from it,
    which held two to three copies of a long context's windows at once. ``alone``: the contexts an earlier call tokenized
    alone, kept for this one (a chunk's slices share one; None: kept from batch to batch of this call alone)."""
    if not examples:  # no batch: the empty dataset map gives
        return build_features(examples, tokenizer, config, with_targets=False, batch_size=batch_size, advance=advance)
    import pyarrow as pa
    from datasets import Dataset

    tables = [windows_table(batch) for batch in _windows_by_batch(examples, tokenizer, config, batch_size, advance, alone)]
    return Dataset(pa.concat_tables(tables), fingerprint=_examples_digest(examples).hexdigest()[:20])


def windows_in_table(examples: Sequence[Example], tokenizer: PreTrainedTokenizerBase, config: FeatureConfig,
                     batch_size: int | None = None, advance: Callable[[int], None] | None = None,
                     alone: ContextsAlone | None = None) -> WindowTable:
    """The windows :func:`windows_in_memory` keeps, cut in the same batches, held as numpy columns in a
    :class:`~bio_mrc.features.window_table.WindowTable`: what the answering doors run, which reads the same values as
    the ``Dataset`` without importing ``datasets`` or pandas. ``batch_size``, ``advance`` and ``alone`` as
    :func:`windows_in_memory` takes them; no examples, no columns."""
    if not examples:
        return WindowTable({})
    return WindowTable.joined([held_columns(batch) for batch in _windows_by_batch(examples, tokenizer, config, batch_size,
                                                                                   advance, alone)])


def _windows_by_batch(examples: Sequence[Example], tokenizer: PreTrainedTokenizerBase, config: FeatureConfig,
                      batch_size: int | None, advance: Callable[[int], None] | None,
                      alone: ContextsAlone | None) -> Iterator[dict[str, list[Any]]]:
    """The windows of ``examples`` without targets, a batch of ``batch_size`` questions (None: :func:`questions_per_batch`)
    at a time, as :func:`tokenize_windows` gives them; ``alone`` as :func:`windows_in_memory` takes it."""
    batch_size = questions_per_batch(examples) if batch_size is None else batch_size
    alone = ContextsAlone() if alone is None else alone  # a context the next batch's questions ask too is tokenized once
    for begin in range(0, len(examples), batch_size):
        yield _batch_windows(examples, range(begin, min(begin + batch_size, len(examples))), tokenizer, config, (), advance, alone)


# The windows' list columns: their values' type, as datasets inferred it from the rows (its small integer types for
# the tokenizer's columns), and each item's width where a row is a list of pairs; answer_lengths typed here too, as a
# batch of windows holding no answer would leave it a list of nothing.
WINDOW_COLUMNS = {"input_ids": (np.int32, None), "token_type_ids": (np.int8, None), "attention_mask": (np.int8, None),
                  "offset_mapping": (np.int64, 2), "paragraph_mask": (np.int8, None), "word_offsets": (np.int64, 2),
                  "tag_mask": (np.int8, None), "answer_lengths": (np.int64, None)}


def windows_table(features: dict[str, list[Any]]) -> pa.Table:
    """``features`` as the Arrow table ``datasets`` writes: the window columns (:data:`WINDOW_COLUMNS`) built from
    one buffer each, the others (the example index, the heads' targets) typed as ``datasets`` types them; the example
    index first, as ``datasets`` put it."""
    import pyarrow as pa
    from datasets.arrow_writer import OptimizedTypedSequence

    return pa.table({name: arrow_list_column(features[name], *WINDOW_COLUMNS[name]) if name in WINDOW_COLUMNS
                     else pa.array(OptimizedTypedSequence(features[name], col=name)) for name in _column_order(features)})


def held_columns(features: dict[str, list[Any]]) -> WindowTable:
    """``features`` without targets (:func:`tokenize_windows`'s) as :func:`windows_table` writes them and Arrow reads
    them back, as numpy columns, in its order and of its types: each window column (:data:`WINDOW_COLUMNS`) a
    :class:`~bio_mrc.features.ragged.RaggedColumn` (:func:`~bio_mrc.features.ragged.ragged_column`), the example index
    and the question's tokens (Python ints) int64 arrays, as Arrow infers them."""
    return WindowTable({name: ragged_column(features[name], *WINDOW_COLUMNS[name]) if name in WINDOW_COLUMNS
                        else np.asarray(features[name], dtype=np.int64) for name in _column_order(features)})


def _column_order(features: dict[str, list[Any]]) -> list[str]:
    """The example index first, as ``datasets`` put it, then the others as they come."""
    return ["example_index", *(name for name in features if name != "example_index")]


def holds_every_window(windows: Dataset, examples: Sequence[Example], tokenizer: PreTrainedTokenizerBase,
                       config: FeatureConfig) -> bool:
    """Whether ``windows`` (in the order they were built) hold windows of every example and all of the last one's:
    a windows file cut short reads as fewer rows, not as an error."""
    import pyarrow.compute as pc

    if not examples:
        return len(windows) == 0
    indices = windows.with_format("arrow")["example_index"]
    last = len(indices) and indices[len(indices) - 1].as_py()
    expected = len(tokenize_windows([examples[-1]], tokenizer, config)["input_ids"])
    return (last == len(examples) - 1 and pc.count_distinct(indices).as_py() == len(examples)
            and pc.sum(pc.equal(indices, last)).as_py() == expected)


def windows_fingerprint(
    examples: Sequence[Example], tokenizer: PreTrainedTokenizerBase, config: FeatureConfig, with_targets: bool,
    heads: Sequence[str] | None = None,
) -> str:
    """What the windows depend on: the questions' content, the tokenizer's whole definition
    (vocabulary, normalizer, pre-tokenizer), the settings, the heads whose labels they carry (and the functions
    that make them), and the code that builds them."""
    digest = _examples_digest(examples)
    for part in (_tokenizer_definition(tokenizer), type(tokenizer).__name__,
                 json.dumps(config.to_dict(), sort_keys=True), str(with_targets), _targets_of(_target_heads(with_targets, heads)),
                 _code_fingerprint()):
        digest.update(part.encode())
    return digest.hexdigest()[:20]


def _examples_digest(examples: Sequence[Example]) -> Any:
    """A sha256 of every field of ``examples`` the windows read, length-prefixed (cheaper than JSON of each example)."""
    digest = hashlib.sha256()
    for example in examples:
        q, c = example.question, example.context
        digest.update(f"{len(q)}:{q}{len(c)}:{c}{example.answers!r};".encode())
    return digest


def _target_heads(with_targets: bool, heads: Sequence[str] | None) -> tuple[str, ...]:
    """The heads whose labels windows carry: none without targets, else ``heads`` (None: every registered head)."""
    return tuple(registry.HEADS if heads is None else heads) if with_targets else ()


def _targets_of(heads: Sequence[str]) -> str:
    """The heads' labels and the functions that make them: a ``module:attribute`` name (the package's code is in
    :func:`_code_fingerprint`), or a callable registered from outside, by its name and source."""
    return json.dumps([[name, sorted(registry.head(name).targets), _function_identity(registry.head(name).build_targets)]
                       for name in heads])


def _function_identity(target: Any) -> str:
    if isinstance(target, str):
        return target
    try:
        source = inspect.getsource(target)
    except (OSError, TypeError):  # defined where no source is kept (a REPL)
        source = ""
    return f"{getattr(target, '__module__', '')}.{getattr(target, '__qualname__', repr(target))}:{source}"


def _tokenizer_definition(tokenizer: PreTrainedTokenizerBase) -> str:
    """The fast tokenizer's serialisation without its truncation and padding state, which
    every call with other settings rewrites."""
    with tokenizer_lock(tokenizer):
        definition = json.loads(tokenizer.backend_tokenizer.to_str())
    definition.pop("truncation", None)
    definition.pop("padding", None)
    return json.dumps(definition, sort_keys=True)


def _code_fingerprint() -> str:
    """The sources of this module and all it imports: a changed featurisation never reads old windows."""
    return sources_fingerprint((__name__,))
