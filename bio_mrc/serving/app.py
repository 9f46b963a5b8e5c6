"""The FastAPI application: ``POST /answer``, ``GET /health``, and FastAPI's OpenAPI page (``/docs``,
``/openapi.json``).

Every request is checked before any work: the schema (422), the number of questions (413), the
texts (:meth:`AnswerExtractor.examples`: 422) and the decoding (one the model's heads allow: 422).
Refusals answer with :class:`ErrorResponse` (``detail``, ``problems``); nothing answers with a
traceback. Before the application, :class:`~.guards.BodyGuard` bounds the body (413) and refuses
JSON it will not read (400). Each question is its own batcher item, so requests share forward passes
fairly; a request that outlives ``--request-timeout-s`` is a 504, and one whose client hangs up is
dropped (:mod:`.bounded`).
"""

import dataclasses
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException

from .. import __version__, registry
from ..errors import BioMrcError
from ..inference.extract import AnswerExtractor, asks_over_documents
from ..model_card import card_summary
from ..types import Prediction, RankedAnswers
from .answering import Question, answer_batch
from .batching import DynamicBatcher
from .bounded import ClientLeft, bounded, gather_cancelling
from .config import ServeConfig
from .guards import BodyGuard
from .schema import ONE, SEVERAL, Answer, AnswerResponse, ErrorResponse, Health, Limits, Problem, Span, answer_request_model

_REFUSALS = {status: {"model": ErrorResponse, "description": description} for status, description in (
    (400, "the body is not UTF-8 JSON, repeats a key in one object, nests deeper than 32 levels or holds an "
          "integer of more than 32 digits; or the Host header names another server"),
    (413, "more questions than the server's max batch size, or a body longer than any valid request"),
    (422, "a field breaks the schema, a text is empty or holds what no tokenizer reads, or the decoding needs "
          "heads the model lacks"),
    (504, "the request took longer than the server's --request-timeout-s"),
)}


def create_app(extractor: AnswerExtractor, config: ServeConfig | None = None, name: str | None = None) -> FastAPI:
    """The application answering with ``extractor``'s model; ``name`` defaults to the model folder's name."""
    config = config or ServeConfig()
    name = name or Path(extractor.trained.path).name or "model"
    AnswerRequest = answer_request_model(config)
    batcher = DynamicBatcher(partial(answer_batch, extractor), config.max_batch_size, config.max_wait_ms / 1000,
                             config.max_batch_chars)
    card = card_summary(extractor.trained.path) if extractor.trained.path else {}
    limits = Limits(**{key: getattr(config, key) for key in Limits.model_fields})

    @asynccontextmanager
    async def lifespan(_app: FastAPI):
        await batcher.start()
        yield
        await batcher.stop()

    app = FastAPI(title=f"bio_mrc: {name}", version=__version__, lifespan=lifespan, description=(
        "Extractive question answering: POST a question (or a batch of them) with its context to /answer; the "
        "answers are spans of the context with character offsets, confidence and, for a calibrated model, the "
        "probability of being right. Concurrent requests are answered together in one forward pass."))
    _add_refusals(app, config)

    @app.post("/answer", response_model=AnswerResponse, responses=_REFUSALS, summary="answer questions from their contexts")
    async def answer(body: AnswerRequest, request: Request) -> Response:
        documents = asks_over_documents(body.question, body.context)
        asked = len(body.context) if documents else len(body.question) if isinstance(body.question, list) else 1
        if asked > config.max_batch_size:
            what = "documents for one question" if documents else "questions"
            raise HTTPException(413, f"{asked} {what} in one request; this server answers at most "
                                     f"{config.max_batch_size} (--max-batch-size): split the batch")
        try:
            examples, _ = extractor.examples(body.question, body.context)
            decoding = registry.resolve_decoding(extractor.trained.decodings, body.decoding)
            if documents and body.multi_span:
                raise ValueError("several documents are answered with single spans ranked across them (top_k); "
                                 "multi_span answers one document at a time")
        except (BioMrcError, ValueError) as error:
            raise HTTPException(422, str(error)) from None
        options = Question([], decoding, body.multi_span, body.top_k, documents)
        work = (answer_whole if documents else answer_each)(batcher, examples, options)
        try:
            predictions = await bounded(work, config.request_timeout_s, request.is_disconnected)
        except ClientLeft:
            return Response(status_code=499)  # nobody reads it: the client is gone
        except BioMrcError as error:  # bad input only the tokenizer could see; anything else is the server's (500)
            raise HTTPException(422, str(error)) from None
        results = [answer_of(prediction, body.threshold) for prediction in predictions]
        return pydantic_json(AnswerResponse(model=name, decoding=decoding, results=results))

    @app.get("/health", response_model=Health, summary="the model that answers, its card, the limits")
    async def health() -> Response:
        return pydantic_json(Health(model=name, backend=extractor.trained.backend, card=card, limits=limits,
                                    served=batcher.stats))

    return app


def answer_of(prediction: Prediction | RankedAnswers, threshold: float | None) -> Answer:
    """A prediction as the response shows it; with ``threshold``, an answer less sure than it is withheld."""
    if isinstance(prediction, RankedAnswers):
        return ranked_answer_of(prediction, threshold)
    sureness = prediction.probability if prediction.probability is not None else prediction.confidence
    below = threshold is not None and (sureness is None or sureness < threshold)
    fields = {name: value for name, value in prediction.to_dict().items() if name != "id"}
    if below:
        fields["answer"] = ""
    return Answer(**fields, answers=[] if below else prediction.answers, below_threshold=below)


def ranked_answer_of(ranked: RankedAnswers, threshold: float | None) -> Answer:
    """Answers over several documents as one :class:`Answer`: its spans ranked across the documents, each naming
    its document; the answer-level fields are those of the best span's document."""
    best = ranked.answers[0].document if ranked.answers else 0
    answer = answer_of(ranked.documents[best], threshold)
    spans = [Span(text=a.text, start=a.start, end=a.end, score=a.score, document=a.document) for a in ranked.answers]
    texts = [] if answer.below_threshold or not ranked.answer else [a.text for a in ranked.answers]
    return answer.model_copy(update={"answer": ranked.answer if not answer.below_threshold else "", "answers": texts,
                                     "spans": spans, "document": best})


def pydantic_json(model: Any, status_code: int = 200) -> Response:
    """A response model written by pydantic (non-finite numbers as strings; the standard json module refuses them)."""
    return Response(model.model_dump_json(), status_code=status_code, media_type="application/json")


def _add_refusals(app: FastAPI, config: ServeConfig) -> None:
    """Every refusal as an :class:`ErrorResponse`; an unexpected error as a bare 500 (its traceback stays in the log)."""

    @app.exception_handler(RequestValidationError)
    async def invalid(_request: Request, error: RequestValidationError) -> Response:
        problems = [_problem(item) for item in error.errors()]
        detail = f"{problems[0].location}: {problems[0].message}" if problems else "the request is not valid"
        return pydantic_json(ErrorResponse(detail=detail, problems=problems), 422)

    @app.exception_handler(HTTPException)
    async def refused(_request: Request, error: HTTPException) -> Response:
        detail = str(error.detail)
        if isinstance(error.__cause__, UnicodeDecodeError):  # FastAPI's body parser says only "error parsing the body"
            detail = f"the body is not UTF-8 JSON: {error.__cause__.reason} at byte {error.__cause__.start}"
        return pydantic_json(ErrorResponse(detail=detail), error.status_code)

    @app.exception_handler(Exception)
    async def failed(_request: Request, _error: Exception) -> Response:
        return JSONResponse({"detail": "internal error: the server's log says more", "problems": []}, 500)

    app.add_middleware(BodyGuard, limit=config.max_body_bytes)


async def answer_each(batcher: DynamicBatcher, examples: list, options: Question) -> list[Prediction]:
    """Each example's prediction, each question its own batcher item (of this request, costing its
    characters), so that the batcher can interleave requests fairly and drop what a leaving client asked."""
    owner = object()
    work = [batcher.submit(dataclasses.replace(options, examples=[example]), 1, owner,
                           len(example.question) + len(example.context)) for example in examples]
    return [prediction for (prediction,) in await gather_cancelling(*work)]


async def answer_whole(batcher: DynamicBatcher, examples: list, options: Question) -> list:
    """The answers of a request whose questions are answered together (one question over several documents)."""
    cost = sum(len(example.question) + len(example.context) for example in examples)
    return await batcher.submit(dataclasses.replace(options, examples=examples), len(examples), object(), cost)


def _problem(item: dict[str, Any]) -> Problem:
    """One of pydantic's errors without the input it quotes (a context can be long): where, and what."""
    parts = [part for part in item.get("loc", ()) if part not in (ONE, SEVERAL)]
    if item.get("type") == "json_invalid":  # its location is (body, character offset)
        error = (item.get("ctx") or {}).get("error", item.get("msg"))
        return Problem(location="body", message=f"not valid JSON at character {parts[-1]}: {error}")
    location = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in parts)
    return Problem(location=location.lstrip("."), message=str(item.get("msg", "invalid")))
