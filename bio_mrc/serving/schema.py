"""The JSON bodies of ``POST /answer`` and ``GET /health``: pydantic models whose field descriptions
and limits are what the OpenAPI page shows and what every request is checked against (422 otherwise).

The request's limits come from the server's :class:`ServeConfig`, so its model is made per server
(:func:`answer_request_model`). Every number of an answer is a JSON number or null, as the schema says: a score of
no finite value (the no-answer score of a question no span survives for) is null in a field declared nullable, and
refused (a 500) in one that is not. In ``GET /health``'s card, a map of any values, a tuned threshold of -inf (always
abstain) is the string ``"-Infinity"``; JSON has no such numbers.
"""

import math
from typing import Annotated, Any, Literal, Union

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Discriminator, Field, StrictBool, StringConstraints, Tag, model_validator
from pydantic_core import PydanticCustomError

from .. import registry
from ..data.text import check_text
from ..decoding.postprocess import DecodeConfig
from ..errors import DataFormatError
from .batching import BatchStats
from .config import ServeConfig

AUTO = registry.AUTO_DECODING
# The n-best every confidence is a share of: a request asks no more decoding than that.
MAX_TOP_K = DecodeConfig().n_best
_CARD = ConfigDict(ser_json_inf_nan="strings")  # the card's -inf threshold: "-Infinity", as tune writes it


def _finite_or_null(value: Any) -> Any:
    """A float of no finite value as None (JSON has no infinity); any other value as it is, for the field to check."""
    return None if isinstance(value, float) and not math.isfinite(value) else value


# An answer's number that may have no finite value: null then, as its schema says (anyOf number, null).
NullableNumber = Annotated[float | None, BeforeValidator(_finite_or_null)]
# An answer's number that always has one (a span's score): one of no finite value is refused, never written.
FiniteNumber = Annotated[float, Field(allow_inf_nan=False)]
ONE, SEVERAL = "one", "several"  # the branches of a text-or-list field: error locations leave them out

_DECODING_HELP = (
    "how to read the heads: span (start/end head), bio (BIO tagging head), joint (both), or auto (the best this "
    "model's heads allow: joint with both heads). A decoding whose heads the model lacks is refused (422)")
_THRESHOLD_HELP = (
    "answer only when the answer's probability (its raw confidence where the model has no calibrator) is at least "
    "this; below it, answer and answers are empty and below_threshold is true. null: always answer")


def _multi_span_help() -> str:
    """What ``multi_span`` answers with under each decoding registered now, as its registry entry says."""
    kinds = "; ".join(f"{name}: the {entry.multi_span}" for name, entry in registry.DECODINGS.items())
    return f"several spans per answer, each after the first kept by the span-count rule ({kinds})"


def _span_probability_help() -> str:
    """What a span's ``probability`` is under each decoding registered now, as its registry entry says."""
    meanings = "; ".join(f"{name}: {entry.span_probability}" for name, entry in registry.DECODINGS.items())
    return f"with multi_span, the span's own probability, which the span-count rule keeps it by ({meanings}); null otherwise"


def as_integer(value: Any) -> Any:
    """A JSON number of no fraction (``2.0``, ``1e0``) as the integer it is, as JSON Schema's ``integer`` reads it (a
    JavaScript client writes 2 and 2.0 alike); any other value as it is, for the field's strict check to refuse
    (``2.5``, ``"2"``, ``true``). JSON has one kind of number: 2.0 is the integer 2 (RFC 8259, JSON Schema)."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


class AnswerOptions(BaseModel):
    """How to answer: the decoding (its choices are the registry's, read when a server's request model is made:
    :func:`answer_request_model`), one span or several, how many alternatives, when to stay silent."""

    model_config = ConfigDict(extra="forbid")

    decoding: str = Field(AUTO, description=_DECODING_HELP)
    multi_span: StrictBool = Field(False, description=_multi_span_help())
    top_k: Annotated[int, BeforeValidator(as_integer)] = Field(1, ge=1, le=MAX_TOP_K, strict=True, description=(
        "how many alternative single spans to return, best first (with multi_span: 1); with multi_span over several "
        "documents, how many of their spans (not given: every one)"))
    threshold: float | None = Field(None, ge=0.0, le=1.0, strict=True, allow_inf_nan=False, description=_THRESHOLD_HELP)

    @model_validator(mode="after")
    def _one_kind_of_several(self) -> "AnswerOptions":
        over_documents = isinstance(getattr(self, "question", None), str) and isinstance(getattr(self, "context", None), list)
        if self.multi_span and self.top_k > 1 and not over_documents:  # over documents: a cut of every span
            raise ValueError("top_k > 1 asks for alternative answers, multi_span for one answer of several spans: pick one")
        return self


def answer_request_model(config: ServeConfig) -> type[AnswerOptions]:
    """The ``POST /answer`` body under ``config``'s limits: the options above, the decodings registered now
    and the texts."""
    decodings = Literal[registry.decoding_choices()]  # type: ignore[valid-type]
    questions = one_or_several(text_type("question", config.max_question_chars), config.max_batch_size)
    contexts = one_or_several(text_type("context", config.max_context_chars), config.max_batch_size)

    class AnswerRequest(AnswerOptions):
        """One question (strings) or a batch (lists); one context may serve every question of a batch."""

        decoding: decodings = Field(AUTO, description=_DECODING_HELP)  # type: ignore[valid-type]
        multi_span: StrictBool = Field(False, description=_multi_span_help())
        question: questions = Field(description=(
            f"a question, or a list of at most {config.max_batch_size} (more: 413), each of 1 to "
            f"{config.max_question_chars} characters"))
        context: contexts = Field(description=(
            f"the text to answer from, of 1 to {config.max_context_chars} characters: one for every question, or a "
            "list with one per question; with one question (a string), a list of documents: the answer is the top_k "
            "spans ranked across them, each naming its document (with multi_span, every document's multi-span answer's "
            "spans, ranked across them). Longer than the model's window, a text is read in "
            "overlapping windows"))

    return AnswerRequest


def text_type(what: str, max_chars: int) -> Any:
    """A text field of at most ``max_chars`` characters; an empty one is refused by :func:`readable_text`, in the one
    message of a blank one (``empty or missing question``), while the OpenAPI page still shows its 1 character at least."""
    return Annotated[str, StringConstraints(max_length=max_chars), Field(json_schema_extra={"minLength": 1}), readable_text(what)]


def readable_text(what: str) -> AfterValidator:
    """A text field's check that it holds readable text (:func:`~bio_mrc.data.text.check_text`: not whitespace
    alone), refused as the schema refuses a field, at its location (``body.question[2]``), not as the body's."""
    def check(value: str) -> str:
        try:
            return check_text(value, what)
        except DataFormatError as error:
            raise PydanticCustomError("unreadable_text", "{problem}", {"problem": error.problem}) from None
    return AfterValidator(check)


def one_or_several(text: Any, most: int) -> Any:
    """A string, or a non-empty list of strings, of the type ``text``; anything else is refused in one error. The
    OpenAPI page shows the list's ``most`` items, which the app refuses past (413) before the schema is checked
    (:func:`~bio_mrc.serving.app.refused_too_many`)."""
    def kind(value: Any) -> str | None:
        return ONE if isinstance(value, str) else SEVERAL if isinstance(value, list) else None

    branches = Union[Annotated[text, Tag(ONE)], Annotated[list[text], Field(min_length=1, json_schema_extra={"maxItems": most}), Tag(SEVERAL)]]
    return Annotated[branches, Discriminator(kind, custom_error_type="text_or_texts",
                                             custom_error_message="Input should be a string or a list of strings")]


class Span(BaseModel):
    """One answer span: its text and where it is in the context."""

    text: str = Field(description="the span's text, exactly context[start:end]")
    start: int = Field(description="character offset of its first character in the context")
    end: int = Field(description="character offset just past its last character (exclusive)")
    score: FiniteNumber = Field(description=(
        "the decoding's own score of the span (span: s_i + e_j; bio: the tag log-likelihood ratio; joint: both); "
        "with multi_span for span and joint, the span's share of the n-best probability; over several documents, "
        "the score that ranks spans across them: the span's score above its own document's no-answer score"))
    document: int | None = Field(None, description="the index of the span's document, when a question asks several")
    probability: NullableNumber = Field(None, description=_span_probability_help())


class Answer(BaseModel):
    """One question's answer, as :class:`bio_mrc.AnswerExtractor` returns it."""

    answer: str = Field(description="the best span's text; empty when the model abstains or below_threshold")
    answers: list[str] = Field(description="every span's text, best first: the parts of one answer (multi_span) or the "
                                           "alternatives (top_k); empty when the model abstains or below_threshold")
    spans: list[Span] = Field(description="the decoded spans, best first: top_k of them, or with multi_span every span")
    abstain: bool = Field(description="the no-answer threshold saved with the model fired: the model says there is no answer")
    below_threshold: bool = Field(description="the request's threshold was not met")
    no_answer_score: NullableNumber = Field(description=(
        "higher: more likely unanswerable; null for a decoding without one, and where no span survives (its score is "
        "then no finite number: the text offers no answer)"))
    confidence: NullableNumber = Field(description="the decoding's raw confidence in this answer (abstentions included)")
    probability: NullableNumber = Field(description=(
        "the calibrated probability that the best span is right (official F1 > 0.5); null when the model has no "
        "calibrator for this decoding (bio-mrc tune fits one)"))
    document: int | None = Field(None, description=(
        "over several documents, the best span's document (abstain, no_answer_score, confidence and probability "
        "are that document's); null for one context"))
    question_cut: bool = Field(False, description=(
        "the question has more tokens than the model reads (its max_query_length: GET /health's card.windows): it was "
        "answered as its first max_query_length tokens, as the model's training questions were cut"))


class AnswerResponse(BaseModel):
    """The answers of one request, in the order of its questions."""

    model: str = Field(description="the model's name (its folder's name)")
    decoding: str = Field(description="the decoding that answered (auto resolved)")
    results: list[Answer] = Field(description="one answer per question, in order")


class Limits(BaseModel):
    """The limits every request is checked against."""

    max_batch_size: int = Field(description="most questions per request, and per forward pass")
    max_wait_ms: float = Field(description="how long a request waits for others to join its batch")
    max_context_chars: int
    max_question_chars: int
    max_body_bytes: int


class Health(BaseModel):
    """The server is up; which model answers, and what its model card says about it."""

    model_config = _CARD

    status: Literal["ok"] = "ok"
    model: str = Field(description="the model's name (its folder's name)")
    backend: str = Field(description="torch or onnx")
    card: dict[str, Any] = Field(description=(
        "the model card's summary (bio_mrc.model_card.card_summary): heads, decodings, windows, encoder, tuned "
        "settings, calibrated decodings, training record, evaluations; a no-answer threshold of -inf, always abstain, "
        "is the string \"-Infinity\", as JSON has no such number"))
    limits: Limits
    served: BatchStats = Field(description=(
        "since the start: forward passes run (batches) and the windows they ran, requests and questions read "
        "(questions / batches: questions per forward pass), and the seconds the workers spent on them"))


class Problem(BaseModel):
    """One thing wrong with a request."""

    location: str = Field(description="where in the request, e.g. body.question[2]")
    message: str


class ErrorResponse(BaseModel):
    """Why a request was refused (every 4xx, and the rare 5xx, answers with this body)."""

    detail: str = Field(description="what is wrong, in one sentence")
    problems: list[Problem] = Field(default_factory=list, description="each field that failed its check (422), or the body "
                                    "as a whole (location body) where the problem is not one field's")
