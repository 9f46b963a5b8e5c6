"""The FastAPI application: ``POST /answer``, ``GET /health``, and FastAPI's OpenAPI page (``/docs``,
``/openapi.json``).

Every request is checked before any work: the schema (422), the number of questions (413), the
texts (:meth:`AnswerExtractor.examples`: 422) and the decoding (one the model's heads allow: 422); a question past the
model's ``max_query_length`` is answered as its first tokens, its answer marked ``question_cut``.
Refusals answer with :class:`ErrorResponse` (``detail``, ``problems``); nothing answers with a
traceback; a path not served is a 404 naming the one meant, never a redirect. Before the application,
:class:`~.request_head.RequestHeadGuard` refuses a version, expectation, content coding or WebSocket it cannot honour
(505, 417, 415, 400), :class:`~.open_requests.OpenRequestLimit` bounds the requests open at once
(503), :class:`~.guards.BodyGuard` bounds the body (413) and refuses JSON it will not read (400); a large body is
parsed in the server's helper process, so the event loop keeps serving others. Each question is scheduled on its
own (:mod:`.scheduler`), its windows in chunks, so requests share forward passes fairly; a request that outlives
``--request-timeout-s`` is a 504, and one whose client hangs up is dropped (:mod:`.bounded`). Once the server
begins to stop, a request not yet answered is a 503.
"""

import dataclasses
import difflib
import html
from contextlib import asynccontextmanager
from typing import Any

from .listening import extra_missing

try:
    from fastapi import FastAPI, Request
    from fastapi.routing import APIRoute
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import HTMLResponse, JSONResponse, Response
    from starlette.exceptions import HTTPException
except ModuleNotFoundError as err:  # the application from Python, without the serve extra: one line naming it
    raise extra_missing(__name__, err) from None

from .. import __version__, registry
from ..data.text import unwritable_character
from ..errors import BioMrcError, ModelOutputError, shown_value
from ..io import json_with_controls_escaped
from ..json_syntax import json_value
from ..inference.documents import DocumentRanking
from ..inference.extract import AnswerExtractor, asks_over_documents
from ..inference.long_questions import long_questions
from ..model_card import card_summary
from ..plurals import counted
from ..types import Prediction, RankedAnswers
from .answering import Question
from .batching import Stopping
from .bounded import ClientLeft, bounded, gather_cancelling
from .config import ServeConfig
from .guards import PARSED_BODY, BodyGuard, names_json, off_loop, read_utf8_json
from .open_requests import OpenRequestLimit, OpenRequests
from .operator_log import tell_operator
from .request_head import RequestHeadGuard
from .responses import declared_refusals
from .scheduler import AnswerScheduler
from .schema import ONE, SEVERAL, Answer, AnswerResponse, ErrorResponse, Health, Limits, Problem, Span, answer_request_model

MAX_PROBLEMS = 10  # a refusal lists this many of a body's problems, then counts the rest
MAX_LOCATION_CHARS = 200  # a problem's location (a field's name) is cut to this many characters
NEAR_PATH = 0.6  # how alike a path unknown and one served must be (difflib's ratio) for a 404 to suggest it
STOPPING = ("the server is stopping: this request's questions not yet answered were dropped; send it again (to "
            "another server, or to this one once it is back)")


def create_app(extractor: AnswerExtractor, config: ServeConfig | None = None, name: str | None = None) -> FastAPI:
    """The application answering with ``extractor``'s model; ``name`` defaults to the model's (its folder's, or its hub
    id's with the commit read)."""
    config = config or ServeConfig()
    name = name or extractor.trained.shown_name or "model"
    AnswerRequest = answer_request_model(config)
    scheduler = AnswerScheduler(extractor, config)
    card = card_summary(extractor.trained.path, extractor.trained.model.config) if extractor.trained.path else {}
    limits = Limits(**{key: getattr(config, key) for key in Limits.model_fields})

    app = _new_app(name, scheduler)
    app.router.route_class = OffLoopJsonRoute
    app.state.helper = scheduler.helper
    # The routes read the model from the app's state, never from their closures: FastAPI keeps every endpoint it
    # has seen in a module-level cache, which would keep a dropped app's model in memory with them.
    app.state.extractor, app.state.scheduler = extractor, scheduler
    app.state.max_batch_size, app.state.request_fields = config.max_batch_size, set(AnswerRequest.model_fields)
    app.state.open_requests = OpenRequests(config.max_concurrent_requests)
    _add_refusals(app, config)

    @app.post("/answer", response_model=AnswerResponse, responses=declared_refusals(reads_body=True), summary="answer questions from their contexts")
    async def answer(body: AnswerRequest, request: Request) -> Response:
        extractor, scheduler = request.app.state.extractor, request.app.state.scheduler
        documents = asks_over_documents(body.question, body.context)
        too_many = refused_too_many(body.question, body.context, config.max_batch_size)
        if too_many is not None:
            raise too_many
        try:
            examples, _ = extractor.examples(body.question, body.context)
            decoding = registry.resolve_decoding(extractor.trained.decodings, body.decoding, heads=extractor.trained.heads)
        except (BioMrcError, ValueError) as error:
            raise HTTPException(422, str(error)) from None
        cut = questions_cut(extractor, examples)
        every = documents and body.multi_span and "top_k" not in body.model_fields_set  # every document's every span
        options = Question([], decoding, body.multi_span, None if every else body.top_k, documents)
        work = (answer_whole if documents else answer_each)(scheduler, examples, options)
        try:
            predictions = await bounded(work, config.request_timeout_s, request.is_disconnected)
        except ClientLeft:
            return Response(status_code=499)  # nobody reads it: the client is gone
        except Stopping:
            raise HTTPException(503, STOPPING, headers={"Retry-After": "1", "Connection": "close"}) from None
        except ModelOutputError as error:  # the model's scores, not the request: the server's error (its folder unnamed)
            raise HTTPException(500, str(ModelOutputError(error.problem, error.record))) from None
        except BioMrcError as error:  # bad input only the tokenizer could see; anything else is the server's (500)
            raise HTTPException(422, str(error)) from None
        results = [answer_of(prediction, body.threshold, body.multi_span).model_copy(update={"question_cut": question in cut})
                   for prediction, question in zip(predictions, [example.question for example in examples])]
        return pydantic_json(AnswerResponse(model=name, decoding=decoding, results=results))

    @app.get("/health", response_model=Health, responses=declared_refusals(reads_body=False),
             summary="the model that answers, its card, the limits")
    async def health(request: Request) -> Response:
        state = request.app.state
        return pydantic_json(Health(model=name, backend=state.extractor.trained.backend, card=card, limits=limits,
                                    served=state.scheduler.stats))

    # HEAD too, outside the OpenAPI page: the probe of load balancers and uptime checks that read the status alone
    app.add_api_route("/health", health, methods=["HEAD"], include_in_schema=False)

    return app


class OffLoopJsonRequest(Request):
    """A request whose JSON body is the document :class:`~.guards.BodyGuard` parsed (once, a large one in the app's
    helper process); a body it left alone is parsed here, likewise off the loop when large (:func:`~.guards.off_loop`)."""

    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            if PARSED_BODY in self.scope:
                self._json = self.scope[PARSED_BODY]
            else:
                self._json = await off_loop(read_utf8_json, await self.body(), self.app.state.helper)
            refusal = refused_unvalidated(self._json, self.app.state.request_fields, self.app.state.max_batch_size)
            if refusal is not None:
                raise refusal
        return self._json


class OffLoopJsonRoute(APIRoute):
    """FastAPI's route, its endpoints reading their bodies through :class:`OffLoopJsonRequest`."""

    def get_route_handler(self):
        handler = super().get_route_handler()

        async def handle(request: Request) -> Response:
            return await handler(OffLoopJsonRequest(request.scope, request.receive))

        return handle


def refused_unvalidated(document: Any, fields: set[str], limit: int) -> HTTPException | None:
    """A body's refusal found before the schema checks each of its items, which for a list of 300,000 texts or
    300,000 unknown fields took seconds of the event loop: more texts than a request may ask (413), more unknown
    fields than a refusal lists, or one whose name holds a lone surrogate (422). None: the schema decides."""
    if not isinstance(document, dict):
        return None
    too_many = refused_too_many(document.get("question"), document.get("context"), limit)
    if too_many is not None:
        return too_many
    unknown = [name for name in document if name not in fields]
    unreadable = [name for name in unknown if unwritable_character(name)]
    if unreadable:  # the schema refuses it as the body's, naming neither the field nor that it is unknown
        return HTTPException(422, f"an unknown field {json_value(unreadable[0][:MAX_LOCATION_CHARS])}, its name holding a lone "
                                  f"surrogate; a request has only the fields {', '.join(sorted(fields))}")
    if len(unknown) <= MAX_PROBLEMS:
        return None
    named = ", ".join(json_value(name[:MAX_LOCATION_CHARS]) for name in unknown[:3])
    return HTTPException(422, f"{len(unknown)} unknown fields ({named}, …); a request has only the fields "
                              f"{', '.join(sorted(fields))}")


def questions_cut(extractor: AnswerExtractor, examples: list) -> set[str]:
    """The questions of a request past the model's ``max_query_length``, each answered as its first tokens: its
    answers say so (``question_cut``), and the operator's log once a minute."""
    cut = long_questions(extractor.trained, examples)
    if cut:
        most = extractor.trained.features.max_query_length
        tell_operator("long questions", f"a request asked {counted(len(cut), 'question')} of more tokens than the {most} "
                                        f"the model reads (its max_query_length): each was answered as its first {most} "
                                        "tokens, its answer marked question_cut")
    return set(cut)


def refused_too_many(question: Any, context: Any, limit: int) -> HTTPException | None:
    """The 413 refusing a request that asks more than ``limit`` questions (or documents for one question, or contexts),
    its operator told which option sets the limit; or None. Read before the schema too: a list of 300,000 texts of the
    wrong type took seconds of the event loop to refuse."""
    documents = asks_over_documents(question, context)
    counts = {"questions": len(question) if isinstance(question, list) else 1,
              "documents for one question" if documents else "contexts": len(context) if isinstance(context, list) else 1}
    what, asked = max(counts.items(), key=lambda count: count[1])
    if asked <= limit:
        return None
    tell_operator("batch size", f"a request asked {asked} {what}, more than {limit} (--max-batch-size): answered 413")
    return HTTPException(413, f"{asked} {what} in one request; this server answers at most {limit} a request: send "
                              f"them in requests of at most {limit}")


def answer_of(prediction: Prediction | RankedAnswers, threshold: float | None, multi_span: bool = False) -> Answer:
    """A prediction as the response shows it; with ``threshold``, an answer less sure than it is withheld."""
    if isinstance(prediction, RankedAnswers):
        return ranked_answer_of(prediction, threshold, multi_span)
    sureness = prediction.probability if prediction.probability is not None else prediction.confidence
    below = threshold is not None and (sureness is None or sureness < threshold)
    fields = {name: value for name, value in prediction.to_dict().items() if name != "id"}
    if below:
        fields["answer"] = ""
    return Answer(**fields, answers=[] if below else prediction.answers, below_threshold=below)


def ranked_answer_of(ranked: RankedAnswers, threshold: float | None, multi_span: bool = False) -> Answer:
    """Answers over several documents as one :class:`Answer`: its spans ranked across the documents, each naming
    its document (with ``multi_span``, each span's own probability too); the answer-level fields are those of the
    best span's document."""
    best = ranked.answers[0].document if ranked.answers else 0
    answer = answer_of(ranked.documents[best], threshold)
    spans = [Span(text=a.text, start=a.start, end=a.end, score=a.score, document=a.document,
                  probability=a.probability if multi_span else None) for a in ranked.answers]
    texts = [] if answer.below_threshold or not ranked.answer else [a.text for a in ranked.answers]
    return answer.model_copy(update={"answer": ranked.answer if not answer.below_threshold else "", "answers": texts,
                                     "spans": spans, "document": best})


def pydantic_json(model: Any, status_code: int = 200) -> Response:
    """A response model written by pydantic (an answer's numbers finite or null; the card's -inf threshold as the string
    ``"-Infinity"``: :mod:`.schema`), with DEL and U+0080-U+009F escaped: an answer cut from a document, a model
    folder's name or a request's own key echoed in a refusal then carries no raw terminal control (U+009B begins an
    escape sequence as ESC [ does) to whoever prints the response, the same JSON value."""
    text = json_with_controls_escaped(model.model_dump_json())
    return Response(text, status_code=status_code, media_type="application/json")


def refusal_of(detail: str, location: str, status_code: int) -> Response:
    """A refusal with one problem, at ``location``, saying what ``detail`` says."""
    return pydantic_json(ErrorResponse(detail=detail, problems=[Problem(location=location, message=detail)]), status_code)


def _new_app(name: str, scheduler: AnswerScheduler) -> FastAPI:
    """The FastAPI application of model ``name``, its scheduler started and stopped with it, its docs pages added."""
    @asynccontextmanager
    async def lifespan(_app: FastAPI):
        await scheduler.start()
        yield
        await scheduler.stop()

    # No redirect of /answer/ to /answer: a 307 with no body, which many clients do not follow for a POST (and those
    # that do send the body twice); a 404 naming the path (:func:`no_such_path`) tells the client what to fix.
    app = FastAPI(title=f"bio_mrc: {name}", version=__version__, lifespan=lifespan, docs_url=None, redoc_url=None,
                  redirect_slashes=False, description=(
        "Extractive question answering: POST a question (or a batch of them) with its context to /answer; the "
        "answers are spans of the context with character offsets, confidence and, for a calibrated model, the "
        "probability of being right. Concurrent requests are answered together in one forward pass."))
    _add_docs_pages(app)
    return app


def _add_docs_pages(app: FastAPI) -> None:
    """FastAPI's ``/docs`` and ``/redoc`` pages, with the title HTML-escaped: FastAPI writes it into ``<title>`` as it
    is, so a name holding ``</title><script>`` (``create_app(..., name=...)``) would run as script on the page."""
    from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html

    async def swagger_ui(request: Request) -> HTMLResponse:  # the app from the request: see the routes' state below
        page = request.app
        return get_swagger_ui_html(openapi_url=page.openapi_url, title=f"{html.escape(page.title)} - Swagger UI")

    async def redoc(request: Request) -> HTMLResponse:
        page = request.app
        return get_redoc_html(openapi_url=page.openapi_url, title=f"{html.escape(page.title)} - ReDoc")

    app.add_api_route("/docs", swagger_ui, methods=["GET"], include_in_schema=False)
    app.add_api_route("/redoc", redoc, methods=["GET"], include_in_schema=False)


def _add_refusals(app: FastAPI, config: ServeConfig) -> None:
    """Every refusal as an :class:`ErrorResponse`; an unexpected error as a bare 500 (its traceback stays in the log)."""

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, error: RequestValidationError) -> Response:
        unread = _unread_media_type(request, error)
        if unread is not None:  # FastAPI reads no JSON out of such a body: say why, not "not a dictionary"
            return refusal_of(unread, "body", 415)
        problems = listed_problems(error.errors())
        detail = f"{problems[0].location}: {problems[0].message}" if problems else "the request is not valid"
        return pydantic_json(ErrorResponse(detail=detail, problems=problems), 422)

    @app.exception_handler(HTTPException)
    async def refused(request: Request, error: HTTPException) -> Response:
        detail, location = str(error.detail), "body"
        if error.status_code == 405:  # starlette says only "Method Not Allowed" (a 404 is not_found's)
            detail, location = not_allowed(request, error), "path"
        elif isinstance(error.__cause__, UnicodeDecodeError):  # FastAPI's body parser says only "error parsing the body"
            detail = f"the body is not UTF-8 JSON: {error.__cause__.reason} at byte {error.__cause__.start}"
        refusal = refusal_of(detail, location, error.status_code)
        refusal.headers.update(error.headers or {})
        return refusal

    @app.exception_handler(404)
    async def not_found(request: Request, _error: Exception) -> Response:
        detail = no_such_path(request.url.path, request.app.routes)
        return refusal_of(detail, "path", 404)

    @app.exception_handler(Exception)
    async def failed(_request: Request, _error: Exception) -> Response:
        return JSONResponse({"detail": "internal error: the server's log says more", "problems": []}, 500)

    app.add_middleware(BodyGuard, limit=config.max_body_bytes, helper=app.state.helper,
                       timeout_s=config.request_timeout_s, budget=config.max_bodies_bytes)
    # Added last, so they run first: a head the server cannot honour, then a request past the limit, is refused
    # before its body is read (the first uncounted).
    app.add_middleware(OpenRequestLimit, requests=app.state.open_requests)
    app.add_middleware(RequestHeadGuard)


def no_such_path(path: str, routes: list) -> str:
    """Why ``path`` is answered 404: the path the client likely meant (``/answer/``, ``/Answer``, ``/v1/answer``:
    ``/answer``), where one is close, and the paths the server answers."""
    served = [route for route in routes if isinstance(route, APIRoute) and route.include_in_schema]
    paths = [route.path for route in routes if isinstance(getattr(route, "path", None), str)]
    near = difflib.get_close_matches(path.rstrip("/").lower() or "/", paths, n=1, cutoff=NEAR_PATH)
    offered = ", ".join(f"{'/'.join(sorted(route.methods))} {route.path}" for route in served)
    hint = f" (did you mean {near[0]}?)" if near else ""
    return f"no path {shown_value(path)} on this server{hint}; it answers {offered} (its API is described at /docs)"


def not_allowed(request: Request, error: HTTPException) -> str:
    """A request with a method its path does not take (``GET /answer``): the methods it takes."""
    asked = f"{request.method} {request.url.path}"[:MAX_LOCATION_CHARS]
    allowed = (error.headers or {}).get("allow", (error.headers or {}).get("Allow", ""))
    return f"{asked} is not answered: the path takes {allowed or 'other methods'}" + (
        ", a JSON body sent with the header content-type: application/json" if "POST" in allowed else "")


def _unread_media_type(request: Request, error: RequestValidationError) -> str | None:
    """Why the body was not read as JSON, where it was not: FastAPI parses a body only when its content-type is
    ``application/json`` (or ``application/...+json``) and otherwise validates its bytes, which fail as "not a
    dictionary". None where the body was sent as JSON, or none was sent."""
    sent = request.headers.get("content-type")
    if sent and names_json(sent):
        return None
    if not any(tuple(item.get("loc", ())) == ("body",) and isinstance(item.get("input"), bytes) for item in error.errors()):
        return None
    what = f"its content-type is {sent!r}" if sent else "it has no content-type"
    return f"the body is not read as JSON: {what}; send it with the header content-type: application/json"


async def answer_each(scheduler: AnswerScheduler, examples: list, options: Question) -> list[Prediction]:
    """Each example's prediction, each question scheduled on its own (all of this request, for fair shares), so that
    requests interleave and what a leaving client asked is dropped; a slice of them at a time
    (:meth:`AnswerScheduler.slices`), so that a request of many long questions holds one slice's windows, not all."""
    owner, predictions = object(), []
    for part in scheduler.slices(examples):
        work = [scheduler.answer(dataclasses.replace(options, examples=[example]), owner) for example in part]
        predictions += [prediction for (prediction,) in await gather_cancelling(*work)]
    return predictions


async def answer_whole(scheduler: AnswerScheduler, examples: list, options: Question) -> list[RankedAnswers]:
    """The answers of a request whose questions are answered together (one question over several documents): a slice
    of its documents at a time (:meth:`AnswerScheduler.slices`), each read, run and decoded into one ranking
    (:class:`~bio_mrc.inference.documents.DocumentRanking`, as :class:`AnswerExtractor` ranks its slices), so that a
    request over many long documents holds one slice's windows, not all; the last slice's answers rank them all."""
    owner, ranking = object(), DocumentRanking(options.top_k, options.multi_span)
    answers: list[RankedAnswers] = []
    for part in scheduler.slices(examples):
        answers = await scheduler.answer(dataclasses.replace(options, examples=list(part), ranking=ranking), owner)
    return answers


def listed_problems(items: list[dict[str, Any]]) -> list[Problem]:
    """The first :data:`MAX_PROBLEMS` of pydantic's errors as problems, and a last one counting the rest: a body of
    100,000 questions of the wrong type or unknown fields is refused in a few lines, not one line per item (a refusal
    twenty times the body's size)."""
    problems = [_problem(item) for item in items[:MAX_PROBLEMS]]
    if len(items) > MAX_PROBLEMS:
        problems.append(Problem(location="body", message=f"and {len(items) - MAX_PROBLEMS} more problems not listed"))
    return problems


def _problem(item: dict[str, Any]) -> Problem:
    """One of pydantic's errors without the input it quotes (a context can be long): where, and what."""
    parts = [part for part in item.get("loc", ()) if part not in (ONE, SEVERAL)]
    if item.get("type") == "json_invalid":  # its location is (body, character offset)
        error = (item.get("ctx") or {}).get("error", item.get("msg"))
        return Problem(location="body", message=f"not valid JSON at character {parts[-1]}: {error}")
    location = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in parts).lstrip(".")
    if len(location) > MAX_LOCATION_CHARS:  # an unknown field's name is the client's own, of any length
        location = location[:MAX_LOCATION_CHARS] + f"… ({len(location)} characters)"
    return Problem(location=location, message=str(item.get("msg", "invalid")))
