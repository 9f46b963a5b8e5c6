"""The package's tables: every head, decoding and task, with what the rest of the code asks of each.

Code asks these tables and never compares a head's, decoding's or task's name (tests/test_registry.py
greps for such comparisons). An entry names its functions as ``"module:attribute"`` strings, resolved
when called, so the tables sit in the core layer while the functions live in the layers above;
an entry registered from outside the package (a test, a plugin) may hold the callables themselves.
docs/layout.md shows how to add a head, a decoding and a task.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from importlib import import_module
from typing import Any, Callable, Iterable, Mapping, Sequence

TAG_SEQUENCE = "tag sequence"  # multi-span answers: every span of the most probable tag sequence (the decoder's own)
NBEST_SPANS = "n-best spans"  # multi-span answers: the non-overlapping n-best single spans
POSITION_TARGET = "position"  # a label per window: an integer position, or a distribution over positions
TOKEN_TARGET = "token"  # a label per token: a distribution over tags, or (seq, K) integer tags of K annotators


def resolve(target: str | Callable[..., Any]) -> Callable[..., Any]:
    """A callable, or the attribute a ``"module:attribute"`` string names."""
    if callable(target):
        return target
    module, _, attribute = target.partition(":")
    return getattr(import_module(module), attribute)


@dataclass(frozen=True, kw_only=True)
class HeadEntry:
    """A head, declared once: everything the model, the windows, the collator, the forward pass and the ONNX
    export ask of it.

    ``attribute`` is the model's attribute holding it (so its weights' names, ``span_head.*``);
    ``build(model_config, hidden_size)`` makes it (a :class:`bio_mrc.heads.Head`: logits and their loss);
    ``targets`` maps each label it trains on to how batches pad it (:data:`POSITION_TARGET`, :data:`TOKEN_TARGET`),
    and ``build_targets(window, feature_config)`` makes those labels for one training window
    (:class:`bio_mrc.features.targets.Window`: its token offsets, masks and the question's answer spans);
    ``outputs`` names its logits, in the order ``forward`` returns them, as the model's output, the window outputs
    and the ONNX export name them, ``output_dims`` gives their dimensions after (batch, seq) and ``pad`` fills them
    past a window's end; ``loss_weight`` weights its loss: the model config's attribute of that name, or the
    number itself; ``needs_tag_mask``: its loss is scored on the tagged tokens."""

    name: str
    attribute: str
    build: str | Callable[..., Any]
    targets: Mapping[str, str]
    build_targets: str | Callable[..., Any]
    outputs: tuple[str, ...]
    output_dims: tuple[tuple[int, ...], ...]
    pad: float
    loss_weight: str | float
    needs_tag_mask: bool
    description: str

    def weight(self, model_config: Any) -> float:
        """The weight of its loss in the model's total loss."""
        return getattr(model_config, self.loss_weight) if isinstance(self.loss_weight, str) else float(self.loss_weight)

    def named_outputs(self, logits: Any) -> dict[str, Any]:
        """What the head's ``forward`` returned (a tensor, or a tuple of them), by ``outputs``' names."""
        named = logits if isinstance(logits, tuple) else (logits,)
        if len(named) != len(self.outputs):
            raise ValueError(f"head {self.name!r} returned {len(named)} tensors; its entry names {len(self.outputs)}: {self.outputs}")
        return dict(zip(self.outputs, named))

    def window_targets(self, window: Any, feature_config: Any) -> dict[str, Any]:
        """Its labels of one training window, each of ``targets`` (a missing or extra one is refused)."""
        made = resolve(self.build_targets)(window, feature_config)
        if set(made) != set(self.targets):
            raise ValueError(f"head {self.name!r}: build_targets made {sorted(made)}, its entry names {sorted(self.targets)}")
        return made


@dataclass(frozen=True, kw_only=True)
class DecodingEntry:
    """A decoding: the heads it reads, ``function(outputs, examples, decode_config) -> predictions``, whether
    the BIO span-length prior applies, the key its no-answer threshold is saved under, how it gives several
    answers (:data:`TAG_SEQUENCE` or :data:`NBEST_SPANS`), ``auto_rank`` (``auto`` picks the available
    decoding of lowest rank, for one answer and several alike), and its span-count rule:
    a span after the first joins a multi-span answer only with a probability of at least ``min_span_probability``
    (this default until one is tuned on multi-span questions; ``span_probability`` says what that probability is)."""

    name: str
    heads: frozenset[str]
    function: str | Callable[..., Any]
    uses_length_prior: bool
    threshold_key: str
    multi_span: str
    auto_rank: int
    description: str
    min_span_probability: float = 0.1
    span_probability: str = "its share of the probability of the question's n-best spans"

    @property
    def decodes_tags(self) -> bool:
        """Whether its multi-span answers are the tag sequence's spans (so the tag-level scores apply)."""
        return self.multi_span == TAG_SEQUENCE

    def decode(self, outputs: Any, examples: Any, config: Any) -> list[Any]:
        return resolve(self.function)(outputs, examples, config)


@dataclass(frozen=True, kw_only=True)
class TaskEntry:
    """A task: its data ``format`` (the comparison config's), the official ``scorer`` it is scored with
    (``bio-mrc evaluate --metric``), ``load(path)`` for data the format table
    (:mod:`bio_mrc.data.formats`) does not read (None: :func:`bio_mrc.data.squad.load_squad` reads it), ``gold(examples)`` (each question's
    gold texts), ``squad_version`` of the official SQuAD scorer (None: ``multi_span_gold``, scored by
    MultiSpanQA's span counts), whether questions may have no answer, the metrics of a summary row
    (``metrics``), the main statistic (``statistic``, with its ``statistic_title``), how reports name it, and
    whether cross-validation folds keep an article's questions together (``folds_by_article``: questions of one
    article share its paragraphs; else folds are drawn by question)."""

    name: str
    format: str
    scorer: str
    load: str | Callable[..., Any] | None
    gold: str | Callable[..., Any]
    squad_version: str | None
    no_answer: bool
    metrics: tuple[str, ...]
    statistic: str
    statistic_title: str
    title: str
    folds_by_article: bool = False

    @property
    def multi_span_gold(self) -> bool:
        return self.squad_version is None


HEADS: dict[str, HeadEntry] = {}
DECODINGS: dict[str, DecodingEntry] = {}
TASKS: dict[str, TaskEntry] = {}


def register_head(entry: HeadEntry) -> HeadEntry:
    HEADS[entry.name] = entry
    return entry


def register_decoding(entry: DecodingEntry) -> DecodingEntry:
    DECODINGS[entry.name] = entry
    return entry


def register_task(entry: TaskEntry) -> TaskEntry:
    TASKS[entry.name] = entry
    return entry


def _lookup(table: Mapping[str, Any], kind: str, name: str) -> Any:
    if name not in table:
        raise ValueError(f"{kind} must be one of {tuple(table)}, got {name!r}")
    return table[name]


def head(name: str) -> HeadEntry:
    return _lookup(HEADS, "head", name)


def decoding(name: str) -> DecodingEntry:
    return _lookup(DECODINGS, "decoding", name)


def task(name: str) -> TaskEntry:
    return _lookup(TASKS, "task", name)


def head_choices() -> tuple[str, ...]:
    """Every set of registered heads a model can carry, as ``heads`` spells it (registry order, ``+``-joined)."""
    names = list(HEADS)
    return tuple("+".join(combo) for size in range(1, len(names) + 1) for combo in itertools.combinations(names, size))


def head_names(heads: str) -> list[str]:
    """The heads ``heads`` (``"span+bio"``) names, in registry order; an unknown or repeated name is refused."""
    names = heads.split("+")
    if len(set(names)) != len(names) or any(name not in HEADS for name in names):
        raise ValueError(f"heads must be one of {head_choices()}, got {heads!r}")
    return [name for name in HEADS if name in names]


def head_outputs(heads: Iterable[str] | None = None) -> list[str]:
    """The logits of these heads (None: of every registered head), in registry order (the exported graph's outputs)."""
    chosen = set(HEADS if heads is None else heads)
    return [output for name in HEADS if name in chosen for output in HEADS[name].outputs]


def head_labels() -> dict[str, str]:
    """Every registered head's labels (the model's ``forward`` takes them by name), each with how batches pad it."""
    return {label: kind for entry in HEADS.values() for label, kind in entry.targets.items()}


def decoding_names() -> tuple[str, ...]:
    """Every registered decoding, in registry order."""
    return tuple(DECODINGS)


def decoding_choices() -> tuple[str, ...]:
    """``auto`` and every registered decoding: what a command or a request may ask for."""
    return (AUTO_DECODING, *DECODINGS)


def decodings_for(heads: str | Iterable[str]) -> list[str]:
    """Every decoding a model with these heads supports, in registry order."""
    have = set(heads.split("+") if isinstance(heads, str) else heads)
    return [name for name, entry in DECODINGS.items() if entry.heads <= have]


def length_prior_decodings() -> tuple[str, ...]:
    """The decodings that score the BIO head's spans, so its length prior applies."""
    return tuple(name for name, entry in DECODINGS.items() if entry.uses_length_prior)


def preferred_decoding(available: Iterable[str]) -> str:
    """``auto``'s choice among ``available``: the lowest ``auto_rank``, for one answer and several alike (the joint
    decoding gave the best multi-span answers out of domain: docs/multispan.md)."""
    return min(available, key=lambda name: DECODINGS[name].auto_rank)


# The default decoding of every command and API: the best one the model's heads allow (joint with both heads).
AUTO_DECODING = "auto"


def resolve_decoding(available: Sequence[str], decoding: str) -> str:
    """``auto`` -> :func:`preferred_decoding` of the model's decodings; a decoding the heads cannot do is refused
    (one line naming it and what the model offers) rather than silently replaced."""
    if decoding == AUTO_DECODING:
        return preferred_decoding(available)
    if decoding not in available:
        from .errors import ConfigError

        raise ConfigError(f"decoding {decoding!r} needs heads this model lacks; it offers {list(available)}")
    return decoding


def task_for(format: str, has_unanswerable: bool) -> TaskEntry:
    """The task of questions in a data ``format``: the one task of that format, or, of several (SQuAD's
    versions), the one whose ``no_answer`` matches whether some question has no answer."""
    matching = [entry for entry in TASKS.values() if entry.format == format]
    if not matching:
        raise ValueError(f"format must be one of {tuple(dict.fromkeys(e.format for e in TASKS.values()))}, got {format!r}")
    return next((e for e in matching if e.no_answer == has_unanswerable), matching[0]) if len(matching) > 1 else matching[0]


def squad_task(version: str) -> TaskEntry:
    """The SQuAD task the official scorer of ``version`` ("1.1", "2.0") scores."""
    return _lookup({entry.squad_version: entry for entry in TASKS.values() if entry.squad_version}, "SQuAD version", version)


SQUAD_FORMAT = "squad"  # the format of every SQuAD-shaped form the data format table reads


def task_of_data(data_format: str, has_unanswerable: bool) -> TaskEntry:
    """The task of questions that :mod:`bio_mrc.data.formats` read as ``data_format``: the task of that format
    where one has it (MultiSpanQA's layout), else SQuAD's (JSON Lines, tables, MRQA and the rest are SQuAD-shaped)."""
    return task_for(data_format if data_format in data_formats() else SQUAD_FORMAT, has_unanswerable)


def data_formats() -> tuple[str, ...]:
    return tuple(dict.fromkeys(entry.format for entry in TASKS.values()))


def scorers() -> tuple[str, ...]:
    """The official scorers ``bio-mrc evaluate --metric`` offers."""
    return tuple(dict.fromkeys(entry.scorer for entry in TASKS.values()))


def scorer(name: str) -> TaskEntry:
    """The first task scored by the official scorer ``name``."""
    return next(entry for entry in TASKS.values() if entry.scorer == _lookup({s: s for s in scorers()}, "metric", name))


register_head(HeadEntry(
    name="span", attribute="span_head", build="bio_mrc.heads.span:build_span_head",
    targets={"start_positions": POSITION_TARGET, "end_positions": POSITION_TARGET},
    build_targets="bio_mrc.features.targets:span_targets", outputs=("start_logits", "end_logits"), output_dims=((), ()), pad=float("-inf"),
    loss_weight="span_loss_weight", needs_tag_mask=False,
    description="a start/end span head (one answer span, an n-best list, a no-answer score from [CLS])",
))
register_head(HeadEntry(
    name="bio", attribute="bio_head", build="bio_mrc.heads.bio:build_bio_head",
    targets={"bio_targets": TOKEN_TARGET}, build_targets="bio_mrc.features.targets:bio_window_targets",
    outputs=("bio_logits",), output_dims=((3,),), pad=0.0,
    loss_weight="bio_loss_weight", needs_tag_mask=True,
    description="a BIO tagging head (B/I/O per paragraph token: one or several answer spans)",
))
register_decoding(DecodingEntry(
    name="span", heads=frozenset({"span"}), function="bio_mrc.decoding.postprocess:decode_span",
    uses_length_prior=False, threshold_key="span", multi_span=NBEST_SPANS, auto_rank=1,
    description="BERT's n-best start/end spans",
))
register_decoding(DecodingEntry(
    name="bio", heads=frozenset({"bio"}), function="bio_mrc.decoding.postprocess:decode_bio_predictions",
    uses_length_prior=True, threshold_key="bio/ratio", multi_span=TAG_SEQUENCE, auto_rank=2,
    description="the BIO head's tag log-likelihood ratios", min_span_probability=0.5,
    span_probability="its posterior: the probability, over every tag sequence, that the tags hold exactly that span",
))
register_decoding(DecodingEntry(
    name="joint", heads=frozenset({"span", "bio"}), function="bio_mrc.decoding.postprocess:decode_joint",
    uses_length_prior=True, threshold_key="joint", multi_span=NBEST_SPANS, auto_rank=0,
    description="the span and BIO heads as a product of experts",
))
SQUAD_METRICS = ("em", "f1")
MULTISPAN_METRICS = ("em_precision", "em_recall", "em_f1", "pm_precision", "pm_recall", "pm_f1")
register_task(TaskEntry(
    name="squad-v1.1", format="squad", scorer="squad", load=None, gold="bio_mrc.data.squad:gold_texts",
    squad_version="1.1", no_answer=False, metrics=SQUAD_METRICS, statistic="f1", statistic_title="F1",
    title="SQuAD v1.1 official metrics",
))
register_task(TaskEntry(
    name="squad-v2.0", format="squad", scorer="squad", load=None, gold="bio_mrc.data.squad:gold_texts",
    squad_version="2.0", no_answer=True, metrics=SQUAD_METRICS, statistic="f1", statistic_title="F1",
    title="SQuAD v2.0 official metrics",
))
register_task(TaskEntry(
    name="multispanqa", format="multispanqa", scorer="multispan", load=None,
    gold="bio_mrc.data.multispanqa:multispan_gold_texts", squad_version=None, no_answer=False,
    metrics=MULTISPAN_METRICS, statistic="em_f1", statistic_title="EM F1",
    title="MultiSpanQA official metrics (micro-averaged over spans)",
))
register_task(TaskEntry(
    name="quoref", format="quoref", scorer="multispan", load="bio_mrc.data.quoref:load_quoref",
    gold="bio_mrc.data.multispanqa:multispan_gold_texts", squad_version=None, no_answer=False,
    metrics=MULTISPAN_METRICS, statistic="em_f1", statistic_title="EM F1",
    title="Quoref (listed spans form one answer), MultiSpanQA official metrics", folds_by_article=True,
))
