"""The refusals each operation of the server declares on its OpenAPI page, every one answered with an
:class:`~.schema.ErrorResponse`: those of a request's head and connection, which may answer any request (a Host header
naming another server, a head sent too slowly, a server that holds all the connections it takes), and those of a JSON
body, which answer only an operation that reads one (``POST /answer``).
"""

from typing import Any

from .schema import ErrorResponse

# status: (why any request may be answered so, why a request with a JSON body may be too); None: never for that reason
REFUSALS: dict[int, tuple[str | None, str | None]] = {
    400: (
        "the Host header names another server, the request asks for a WebSocket, which the server does not speak, or "
        "it is not a request HTTP/1.1 reads (no Host header, a malformed chunk)",
        "the body is not UTF-8 (or not text in the charset its content-type names), or its JSON repeats a key in one "
        "object, nests deeper than 32 levels or holds an integer of more than 32 digits",
    ),
    408: (
        "the request line and headers were not all sent within the time the server gives them",
        "the body was not all sent within the time the server gives a request: send it at once",
    ),
    413: (
        None,
        "more questions (documents for one question, contexts) than the server answers in one request (GET "
        "/health: limits.max_batch_size; the schema's maxItems), or a body longer than any valid request",
    ),
    415: (
        "sent in a content-encoding the server does not decode (gzip): send it uncompressed",
        "a body not sent as JSON (its content-type is not application/json, or there is none), or in a charset the server has no codec for",
    ),
    417: ("an Expect header asking for more than 100-continue", None),
    422: (
        None,
        "malformed JSON; a field breaks the schema; a text holds nothing a tokenizer reads (whitespace alone) or "
        "what none reads (a lone surrogate); questions and contexts not one per question; top_k > 1 with "
        "multi_span, but over several documents; or the decoding needs heads the model lacks",
    ),
    431: ("the request line and headers pass the bytes the server holds of them: send shorter ones", None),
    500: (
        "an error of the server itself: the body says only that, the server's log says more",
        "the model gave a question NaN or infinite scores (the detail names the question)",
    ),
    501: ("a transfer coding other than chunked", None),
    503: (
        "the server holds as many connections as it takes at once, or it is stopping: try again (Retry-After)",
        "it holds as many requests or bodies as it takes at once: try again (Retry-After)",
    ),
    504: (None, "the request took longer than the time the server gives a request: send fewer or shorter questions"),
    505: ("an HTTP version other than 1.0 and 1.1: send HTTP/1.1", None),
}


def declared_refusals(reads_body: bool) -> dict[int, dict[str, Any]]:
    """An operation's refusals as FastAPI's ``responses`` take them: those of any request, and where the operation
    ``reads_body``, those of its JSON body too, each status's reasons in one description."""
    reasons = {status: [why for why in (any_request, body if reads_body else None) if why] for status, (any_request, body) in REFUSALS.items()}
    return {status: {"model": ErrorResponse, "description": "; or ".join(whys)} for status, whys in reasons.items() if whys}
