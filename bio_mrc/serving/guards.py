"""What a request must pass before the application sees it, as ASGI middleware (no FastAPI needed):

* :class:`BodyGuard`: the body is read in pieces and refused (413) as soon as it passes the limit,
  whether its length is declared (``Content-Length``) or not (chunked), so no more than the limit is
  ever held; a body not all sent within the request's time is refused (408), and the bodies being read or answered
  together hold at most a budget (503 past it); a JSON body is read in the charset its content-type names
  (:mod:`.body_charset`: 415 for one unknown, 400 for a body not in it), then parsed strictly
  (:func:`read_strict_json`: duplicate keys, nesting and integer digits bounded), a refusal (400) naming where in
  the body it is; a large body is decoded and parsed in the server's helper process (:func:`off_loop`), so the
  event loop keeps serving short requests meanwhile, and the document goes to the application in the request's
  scope (:data:`PARSED_BODY`), so it is parsed once;
* :class:`HostGuard`: the ``Host`` header must name this server (DNS rebinding: a web page whose own
  name resolves to 127.0.0.1 must not reach a loopback server from the browser).

Refusals answer with the :class:`~bio_mrc.serving.schema.ErrorResponse` shape (``detail``, ``problems``).
"""

from __future__ import annotations

import asyncio
import email.message
import json
import re
from dataclasses import dataclass
from functools import partial
from typing import Any, Callable, Iterable, TypeVar

from ..errors import shown_value
from ..json_syntax import json_value
from .body_charset import as_utf8, declared_charset, unknown_charset
from .helper_process import HelperProcess
from .operator_log import tell_operator

MAX_JSON_DEPTH = 32  # a request is two levels deep; deeper is never valid
MAX_INT_DIGITS = 32  # the largest valid integer (top_k) has two digits
LARGE_BODY_BYTES = 1 << 16  # a body this long is parsed off the loop: its milliseconds are not the event loop's
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
ANY_HOST = "*"
_PORT = re.compile(r"(?::[0-9]{0,5})?")  # what may follow a host name in a Host header: nothing, or its port
PARSED_BODY = "bio_mrc.parsed_body"  # the scope key holding the JSON document BodyGuard parsed from the body
# A JSON string (escapes included), an opening or closing bracket, or a run of digits outside a string.
_TOKENS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]|-?\d{%d,}' % (MAX_INT_DIGITS + 1), re.DOTALL)


async def refuse(send, status: int, detail: str, headers: tuple = (), location: str = "body", kind: str = "http") -> None:
    """Answer ``status`` with an ErrorResponse body, its one problem at ``location``, closing the connection.
    ``kind``: ``websocket.http`` answers a WebSocket handshake so (ASGI's WebSocket denial response)."""
    body = json.dumps({"detail": detail, "problems": [{"location": location, "message": detail}]}).encode()
    await send({"type": f"{kind}.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close"), *headers]})
    await send({"type": f"{kind}.response.body", "body": body})


class BodyGuard:
    """Read an HTTP request's body up to ``limit`` bytes (413 beyond it, the rest never read) within ``timeout_s``
    (408 after it), check a JSON body strictly (400), then hand the application the body as it came. ``bytes_read``
    counts the body bytes taken from the client so far (what the limit bounds); ``held`` those of the bodies being
    read or answered now, which stay within ``budget`` (at least ``limit``; None: unbounded): a body that would
    pass it is refused (503, retry later), so that many clients sending large bodies at once cannot exhaust memory."""

    def __init__(self, app, limit: int, helper: HelperProcess | None = None, timeout_s: float | None = None,
                 budget: int | None = None) -> None:
        self.app, self.limit, self.helper, self.bytes_read = app, limit, helper, 0
        self.timeout_s, self.budget, self.held = timeout_s, None if budget is None else max(budget, limit), 0

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or scope.get("method") in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers", ())).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.limit:
            await refuse(send, 413, f"a body of {int(declared)} bytes; no valid request is longer than {self.limit}")
            return
        body = await self._read_body(receive, send)
        if body is None:
            return
        try:
            await self._check_and_answer(scope, body, receive, send)
        finally:
            self.held -= len(body)

    async def _check_and_answer(self, scope, body: bytes, receive, send) -> None:
        if _is_json(scope):
            charset = declared_charset(scope)
            if charset is not None:  # read as the content-type says, then as any other body: in UTF-8
                refusal = unknown_charset(charset)
                if refusal:
                    await refuse(send, 415, refusal)
                    return
                body, problem = await off_loop(partial(as_utf8, charset=charset), body, self.helper)
                if problem:
                    await refuse(send, 400, problem)
                    return
            read = await off_loop(read_strict_json, body, self.helper)
            if read.problem:
                await refuse(send, 400, read.problem)
                return
            if read.parsed:
                scope = {**scope, PARSED_BODY: read.document}
        await self.app(scope, _replay(body, receive), send)

    async def _read_body(self, receive, send) -> bytes | None:
        """The whole body, its bytes counted in ``held`` (the caller gives them back), or None once refused (413 past
        the limit; 408 when it is not all sent within ``timeout_s``, a request's time; 503 past the budget) or its
        client has left."""
        loop = asyncio.get_running_loop()
        deadline = None if self.timeout_s is None else loop.time() + self.timeout_s
        chunks, size, body = [], 0, None
        try:
            while body is None:
                try:
                    message = await asyncio.wait_for(receive(), None if deadline is None else max(0.0, deadline - loop.time()))
                except TimeoutError:
                    tell_operator("body time", f"a request's body was not all sent within {self.timeout_s:g} s "
                                               "(--request-timeout-s): answered 408")
                    await refuse(send, 408, f"the body was not all sent within {self.timeout_s:g} s, {size} bytes of it "
                                            "came: send the whole body at once")
                    return None
                if message["type"] == "http.disconnect":
                    return None  # the client left before sending its request: no work for it
                chunk = message.get("body", b"")
                size += len(chunk)
                self.bytes_read += len(chunk)
                if size > self.limit:
                    await refuse(send, 413, f"a body of more than {self.limit} bytes (sent in pieces); "
                                            f"no valid request is longer")
                    return None
                if self.budget is not None and self.held + len(chunk) > self.budget:
                    tell_operator("bodies", f"the bodies of the requests being read or answered fill {self.budget} "
                                            "bytes (--max-bodies-bytes): more are answered 503")
                    await refuse(send, 503, "the server holds as many bytes of other requests' bodies as it takes at "
                                            "once: try again shortly", ((b"retry-after", b"1"),))
                    return None
                self.held += len(chunk)
                chunks.append(chunk)
                if not message.get("more_body", False):
                    body = b"".join(chunks)
            return body
        finally:
            if body is None:
                self.held -= sum(map(len, chunks))


Parsed = TypeVar("Parsed")


async def off_loop(parse: Callable[[bytes], Parsed], body: bytes, helper: HelperProcess | None = None) -> Parsed:
    """``parse(body)`` (a module-level function); for a body of :data:`LARGE_BODY_BYTES` or more in ``helper`` (or,
    without one, a worker thread), so that the event loop keeps reading and answering other requests meanwhile,
    and, in the helper, without the interpreter lock they need."""
    if len(body) < LARGE_BODY_BYTES:
        return parse(body)
    if helper is None:
        return await asyncio.to_thread(parse, body)
    return await helper.run(parse, body)


def _is_json(scope) -> bool:
    """Whether any ``Content-Type`` header names JSON (the application reads the body by the first of them)."""
    return any(names_json(value.decode("latin-1")) for name, value in scope.get("headers", ()) if name == b"content-type")


def names_json(content_type: str) -> bool:
    """Whether FastAPI reads a body of this ``Content-Type`` as JSON, parsed as it parses it (the email parser, which
    also strips a trailing no-break space or NEL): ``application/json`` or ``application/...+json``."""
    message = email.message.Message()
    message["content-type"] = content_type
    subtype = message.get_content_subtype()
    return message.get_content_maintype() == "application" and (subtype == "json" or subtype.endswith("+json"))


def _replay(body: bytes, receive):
    """A ``receive`` that gives ``body`` once, then what the client sends next (its disconnect)."""
    sent = False

    async def replay():
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


class _Refused(ValueError):
    """A JSON document this server will not read (duplicate keys, integers too long)."""


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen = set()
    for key, _ in pairs:
        if key in seen:
            raise _Refused(f"the key {json_value(key)} appears twice in one object (JSON leaves which to keep undefined)")
        seen.add(key)
    return dict(pairs)


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise _Refused("too long")
    return int(text)


@dataclass(frozen=True)
class StrictJson:
    """A body read as JSON this server takes: why it is refused, or its document (``parsed``). Neither when its
    syntax or encoding is wrong: the application answers those (422 and 400, with their own positions)."""

    problem: str | None = None
    parsed: bool = False
    document: Any = None


def read_strict_json(body: bytes) -> StrictJson:
    """``body`` parsed strictly: duplicate keys, integers of more than :data:`MAX_INT_DIGITS` digits and nesting
    deeper than :data:`MAX_JSON_DEPTH` are refused, each naming where it is."""
    try:
        text = body.decode("utf-8-sig")
    except UnicodeDecodeError:
        return StrictJson()
    try:
        document = json.loads(text, object_pairs_hook=_no_duplicates, parse_int=_bounded_int)
    except _Refused as refused:
        if str(refused) == "too long":
            where = _first_token(text, lambda token: token[0] not in '"[]{}')
            return StrictJson(f"body: an integer of more than {MAX_INT_DIGITS} digits at character {where}")
        return StrictJson(f"body: {refused}")
    except RecursionError:
        return StrictJson(_too_deep(text))
    except ValueError:
        return StrictJson()
    problem = _too_deep(text)
    return StrictJson(problem) if problem else StrictJson(parsed=True, document=document)


def read_utf8_json(body: bytes) -> Any:
    """A JSON body the strict read left to the application, read as that read reads it: UTF-8 (a byte-order mark
    allowed), never guessed to be UTF-16 or UTF-32 as ``json.loads`` guesses bytes (which would skip its checks)."""
    return json.loads(body.decode("utf-8-sig"))


def _first_token(text: str, wanted) -> int:
    """Character offset of the first token outside strings for which ``wanted(token)`` holds (-1: none)."""
    for match in _TOKENS.finditer(text):
        if wanted(match.group()):
            return match.start()
    return -1


def _too_deep(text: str) -> str | None:
    """Where ``text`` nests arrays and objects deeper than :data:`MAX_JSON_DEPTH`, or None."""
    depth = 0
    for match in _TOKENS.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > MAX_JSON_DEPTH:
                return f"body: JSON nested deeper than {MAX_JSON_DEPTH} levels at character {match.start()}"
        elif token in "]}":
            depth -= 1
    return None


def allowed_host_names(listen_host: str, allowed: str) -> set[str] | None:
    """The host names a server listening on ``listen_host`` answers to: ``allowed`` (comma-separated;
    ``*``: any, None returned) or, when empty, the loopback names and ``listen_host`` itself."""
    names = {name.strip().lower().strip("[]") for name in allowed.split(",") if name.strip()}
    if ANY_HOST in names:
        return None
    return names or {*LOOPBACK_NAMES, listen_host.lower().strip("[]")}


class HostGuard:
    """Refuse (400) an HTTP request whose ``Host`` header names no host in ``names`` (None: any)."""

    def __init__(self, app, names: Iterable[str] | None) -> None:
        self.app, self.names = app, None if names is None else set(names)

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http" and self.names is not None:
            host = dict(scope.get("headers", ())).get(b"host", b"").decode("latin-1")
            name = host_name(host)
            if name not in self.names:
                tell_operator("host", f"a request's Host header named {shown_value(host)}, no host this server answers "
                                      "to (--allowed-hosts adds others): answered 400")
                await refuse(send, 400, f"the Host header {host!r} names no host this server answers to: send one of "
                                        f"{', '.join(sorted(self.names))}")
                return
        await self.app(scope, receive, send)


def host_name(host: str) -> str:
    """``host`` without its port, lower case: ``[::1]:8000`` -> ``::1``, ``Localhost:80`` -> ``localhost``. What
    follows the name must be a port (``:`` and digits) or nothing; otherwise the whole header is returned, which
    names no host (``[::1]evil.example`` or ``localhost:80@evil.example`` is not ``::1`` or ``localhost``)."""
    host = host.strip().lower()
    if host.startswith("["):
        name, _, rest = host[1:].partition("]")
    elif host.count(":") == 1:
        name, colon, port = host.partition(":")
        rest = colon + port
    else:
        name, rest = host, ""
    return name if _PORT.fullmatch(rest) else host
