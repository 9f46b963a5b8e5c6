"""``DecodeConfig``: the decoding options shared by the command line, the harness and :class:`AnswerExtractor`.

Light on purpose, as ``features.config`` and ``training.config`` are: the command line builds its options from this
class, so a command's ``--help`` reads them without the decoders' numeric code (:mod:`bio_mrc.decoding.postprocess`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..arguments import MAX_COUNT
from ..config_schema import check_fields
from ..model_defaults import MAX_SETTING


@dataclass(frozen=True)
class DecodeConfig:
    """Decoding options shared by the CLI, the harness and :class:`AnswerExtractor`; each field's
    metadata gives its command-line help (bio_mrc.config_options builds the options).

    ``bio_length_prior`` (β) is a geometric span-length prior on the BIO head's
    spans (in the BIO and joint decodings): ``β`` is added to every inside gain
    ``log p_I - log p_O``. ``None`` means the value tuned on held-out questions
    and saved with the model (0 for a model without one). ``max_answer_length`` ``None`` means the answer-length
    limit saved with the model at training (:data:`MAX_ANSWER_LENGTH` for a model without one).
    """

    n_best: int = field(default=20, metadata={"help": "answer candidates kept per question, best first: the n-best spans "
                                                       "(predict's n-best file) and those a multi-span answer is chosen from",
                                               "minimum": 1, "maximum": MAX_COUNT})  # every count's bound
    max_answer_length: int | None = field(default=None, metadata={
        "help": "in tokens (in words for the BIO decoding of a word-level tagger); none: the limit saved with the model "
                "(one 99 in 100 of its training answers fit, at least 30), else 30", "minimum": 1, "maximum": MAX_COUNT})
    multi_span: bool = field(default=False, metadata={
        "help": "return every answer span, not only the best (the BIO decoding: the spans of highest posterior that maximise "
                "the expected exact-match F1 instead of the n-best single spans; the joint decoding: also those spans)"})
    require_answer: bool = field(default=True, metadata={
        "help": "with multi_span, answer also where the most probable tag sequence has no span (off: no BIO span there)"})
    bio_length_prior: float | None = field(default=None, metadata={
        "minimum": -MAX_SETTING, "maximum": MAX_SETTING,  # as a model folder's tuned one: larger ones overflow the decoding
        "help": "BIO span-length prior β (a span of n tags gains β(n-1)); none: the value tuned for the model"})
    min_span_probability: float | None = field(default=None, metadata={
        "minimum": 0.0, "maximum": 1.0,
        "help": "multi-span answers: a span after the first joins the answer only with at least this probability (BIO: "
                "the span's posterior under the tag distribution; span and joint: its share of the n-best probability, the joint "
                "decoding's only where the tag sequence holds fewer than two spans more likely than not); "
                "none: the value tuned for the model and decoding on multi-span questions, else the decoding's default"})

    def __post_init__(self) -> None:
        check_fields(self)


__all__ = ["DecodeConfig"]
