"""``FeatureConfig``: how examples become windows and which targets they carry.

Plain data with no heavy imports, so the command line builds its options from it without loading
the tokenizers (the windows themselves: :mod:`.windows`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from numbers import Integral
from typing import Any

from ..errors import ConfigError
from ..model_defaults import WORD_UNITS, WORD_UNITS_NOW

TARGET_KINDS = ("one-hot", "soft")


@dataclass(frozen=True)
class BioTargetKind:
    """What the code asks of a kind of BIO targets: whether each token's target is a tag distribution
    (``tag_distribution``), which class weights weigh and from which ``tag_mentions="ignored"`` leaves tokens out;
    else they are every annotator's tag sequence, whose marginal likelihood takes neither."""

    tag_distribution: bool
    first_annotator_only: bool = False  # the first annotator's tags alone (one-hot); else every annotator's


# Each kind of BIO targets (``FeatureConfig.bio_targets``) by name, in the order the options offer them.
BIO_TARGETS = {"one-hot": BioTargetKind(tag_distribution=True, first_annotator_only=True), "soft": BioTargetKind(tag_distribution=True),
               "marginal": BioTargetKind(tag_distribution=False)}
BIO_TARGET_KINDS = tuple(BIO_TARGETS)
TAG_LEVELS = ("word", "subword")
TAG_MENTIONS = ("annotated", "every", "ignored")



def stride_leaves_new_context(max_seq_length: int, doc_stride: int, max_query_length: int) -> bool:
    """Whether each window after the first reads context tokens its predecessor did not: a window holds [CLS], the
    question, two [SEP] and its context, whose first ``doc_stride`` tokens overlap the window before."""
    return doc_stride < max_seq_length - max_query_length - 3


def estimated_windows(characters: int, config: FeatureConfig) -> int:
    """The windows a context of ``characters`` characters is cut into, at most, where a token holds a character or more
    (a BERT word piece, a sentencepiece: every tokenizer but a byte-level one over text outside ASCII) and the question
    takes all of ``max_query_length``: a bound on the windows, and so the memory, of a question read before it is cut."""
    room = config.max_seq_length - config.max_query_length - 3
    return 1 + max(0, -(-(characters - room) // (room - config.doc_stride)))


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

    ``tag_mentions``: ``"every"`` (default) tags every other mention of the answer
    spans' texts in the context too (TASE's targets); ``"annotated"`` tags the spans
    as given; ``"ignored"`` leaves those mentions out of the loss. Annotators of names
    often mark one mention of several, and the others, left O, teach the tagger that
    the same words are not the answer; the metrics score answers by text, so every
    mention is as right as the marked one.

    ``word_units``: which words ``"word"`` tags live on: ``"punctuation"`` (default)
    makes a piece of punctuation alone a word of its own where the tokenizer's words
    hold punctuation (sentencepiece's); ``"tokenizer"`` keeps the tokenizer's words,
    as models saved before the setting were trained on them.
    """

    max_seq_length: int = 384
    doc_stride: int = 128
    max_query_length: int = 64
    bio_targets: str = "soft"
    span_targets: str = "one-hot"
    tag_level: str = "word"
    tag_mentions: str = "every"
    word_units: str = WORD_UNITS_NOW

    def __post_init__(self) -> None:
        for name, kinds in (("bio_targets", BIO_TARGET_KINDS), ("span_targets", TARGET_KINDS), ("tag_level", TAG_LEVELS),
                            ("tag_mentions", TAG_MENTIONS), ("word_units", WORD_UNITS)):
            if getattr(self, name) not in kinds:
                raise ConfigError(f"{name} must be one of {kinds}, got {getattr(self, name)!r}")
        if self.tag_mentions == "ignored" and not BIO_TARGETS[self.bio_targets].tag_distribution:
            raise ConfigError(f"tag_mentions 'ignored' leaves tokens out of a tag distribution: it needs bio_targets {_tag_distributions()}")
        for name, least in (("max_seq_length", 1), ("doc_stride", 0), ("max_query_length", 1)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, Integral) or value < least:
                raise ConfigError(f"{name} must be an integer of at least {least}, got {value!r}")
            object.__setattr__(self, name, int(value))  # a numpy integer as a Python int: to_dict writes JSON
        if not stride_leaves_new_context(self.max_seq_length, self.doc_stride, self.max_query_length):
            raise ConfigError(
                f"doc_stride ({self.doc_stride}) must leave room for new context tokens in each window: "
                f"it must be < max_seq_length - max_query_length - 3 = {self.max_seq_length - self.max_query_length - 3}"
            )

    def to_dict(self) -> dict[str, Any]:
        """Every setting by its field name."""
        return asdict(self)


def _tag_distributions() -> str:
    """The kinds of BIO targets that are a tag distribution, the default first: ``'soft' or 'one-hot'``."""
    kinds = sorted((kind for kind, entry in BIO_TARGETS.items() if entry.tag_distribution), key=lambda kind: kind != FeatureConfig.bio_targets)
    return " or ".join(map(repr, kinds))


__all__ = ["BIO_TARGETS", "BIO_TARGET_KINDS", "BioTargetKind", "TAG_LEVELS", "TAG_MENTIONS", "TARGET_KINDS", "FeatureConfig", "stride_leaves_new_context"]
