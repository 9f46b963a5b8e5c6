"""What a request must pass before the application sees it, as ASGI middleware (no FastAPI needed):

* :class:`BodyGuard`: the body is read in pieces and refused (413) as soon as it passes the limit,
  whether its length is declared (``Content-Length``) or not (chunked), so no more than the limit is
  ever held; a JSON body is then parsed strictly (:func:`read_strict_json`: duplicate keys, nesting
  and integer digits bounded), a refusal (400) naming where in the body it is; a large body is parsed in the
  server's helper process (:func:`off_loop`), so the event loop keeps serving short requests meanwhile, and the
  document goes to the application in the request's scope (:data:`PARSED_BODY`), so it is parsed once;
* :class:`HostGuard`: the ``Host`` header must name this server (DNS rebinding: a web page whose own
  name resolves to 127.0.0.1 must not reach a loopback server from the browser).

Refusals answer with the :class:`~bio_mrc.serving.schema.ErrorResponse` shape (``detail``, ``problems``).
"""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable, TypeVar

from .helper_process import HelperProcess

MAX_JSON_DEPTH = 32  # a request is two levels deep; deeper is never valid
MAX_INT_DIGITS = 32  # the largest valid integer (top_k) has two digits
LARGE_BODY_BYTES = 1 << 16  # a body this long is parsed off the loop: its milliseconds are not the event loop's
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
ANY_HOST = "*"
PARSED_BODY = "bio_mrc.parsed_body"  # the scope key holding the JSON document BodyGuard parsed from the body
# A JSON string (escapes included), an opening or closing bracket, or a run of digits outside a string.
_TOKENS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]|-?\d{%d,}' % (MAX_INT_DIGITS + 1), re.DOTALL)


async def refuse(send, status: int, detail: str) -> None:
    """Answer ``status`` with an ErrorResponse body, closing the connection's request: the body is the problem."""
    body = json.dumps({"detail": detail, "problems": [{"location": "body", "message": detail}]}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})


class BodyGuard:
    """Read an HTTP request's body up to ``limit`` bytes (413 beyond it, the rest never read), check a
    JSON body strictly (400), then hand the application the body as it came. ``bytes_read`` counts
    the body bytes taken from the client so far (what the limit bounds)."""

    def __init__(self, app, limit: int, helper: HelperProcess | None = None) -> None:
        self.app, self.limit, self.helper, self.bytes_read = app, limit, helper, 0

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or scope.get("method") in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers", ())).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.limit:
            await refuse(send, 413, f"a body of {int(declared)} bytes; no valid request is longer than {self.limit}")
            return
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return  # the client left before sending its request: no work for it
            chunk = message.get("body", b"")
            size += len(chunk)
            self.bytes_read += len(chunk)
            if size > self.limit:
                await refuse(send, 413, f"a body of more than {self.limit} bytes (sent in pieces); "
                                        f"no valid request is longer")
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        del chunks
        if _is_json(scope):
            read = await off_loop(read_strict_json, body, self.helper)
            if read.problem:
                await refuse(send, 400, read.problem)
                return
            if read.parsed:
                scope = {**scope, PARSED_BODY: read.document}
        await self.app(scope, _replay(body, receive), send)


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
    types = [value.split(b";")[0].strip().lower() for name, value in scope.get("headers", ()) if name == b"content-type"]
    return any(kind == b"application/json" or kind.endswith(b"+json") for kind in types)


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
            raise _Refused(f"the key {key!r} appears twice in one object (JSON leaves which to keep undefined)")
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
                await refuse(send, 400, f"the Host header {host!r} names no host this server answers to "
                                        f"({', '.join(sorted(self.names))}; --allowed-hosts adds others)")
                return
        await self.app(scope, receive, send)


def host_name(host: str) -> str:
    """``host`` without its port, lower case: ``[::1]:8000`` -> ``::1``, ``Localhost:80`` -> ``localhost``."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:].split("]", 1)[0]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host
