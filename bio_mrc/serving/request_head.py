"""What a request's line and headers ask that the server cannot do, refused before anything else is read, as ASGI
middleware (no FastAPI needed): an HTTP version other than 1.0 and 1.1 (505), an expectation other than
``100-continue`` (417), a body in a content coding (``Content-Encoding: gzip``, ``br``) the server does not decode
(415, with ``Accept-Encoding: identity``), and a switch to a WebSocket (400). Left alone, uvicorn answers ``HTTP/9.9``
as 1.1, the application ignores the next two (a gzipped body is refused as "not UTF-8 JSON at byte 1"), and a
WebSocket handshake gets Starlette's 403 with no body. ``bio-mrc serve`` runs it before the Host header's check, in the
order HTTP reads a request (RFC 9112): the version, then the expectation and the framing, then the target.
"""

from __future__ import annotations

from ..errors import shown_value
from .guards import refuse

# "2" and "3": an ASGI server speaking HTTP/2 or HTTP/3 names its version so; a request line never does (h11 reads
# "HTTP/2.0" as "2.0", which is refused).
SPOKEN_VERSIONS = frozenset({"1.0", "1.1", "2", "3"})
MET_EXPECTATION = "100-continue"  # uvicorn answers it with "100 Continue" once the body is read
IDENTITY = "identity"  # the content coding that leaves a body as it is
MAX_VERSION_CHARS = 20  # another ASGI server may pass on any version text: cut
WEBSOCKET = "websocket"  # the Upgrade token of a WebSocket handshake (RFC 6455)
NO_WEBSOCKETS = ("the request asks to switch to a WebSocket (its Upgrade header), which this server does not speak: it "
                 "answers HTTP requests with JSON bodies; send the request without Upgrade: websocket (POST /answer takes "
                 "the questions)")
HEAD_READ = "bio_mrc.request_head_read"  # the scope key saying an outer guard has passed this request's head


class RequestHeadGuard:
    """ASGI middleware: refuse an HTTP request whose version, ``Expect``, ``Content-Encoding`` or ``Upgrade`` header the
    server cannot honour (:func:`unmet_head`), before its body is read; answer any other as ``app`` does. A request
    it has passed is marked so, and passes the application's own guard unchecked."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "websocket":  # served by an ASGI server that speaks WebSocket (bio-mrc serve's does not)
            await refuse_websocket(scope, receive, send)
            return
        checked = scope["type"] != "http" or scope.get(HEAD_READ, False)
        refusal = None if checked else unmet_head(scope)
        if refusal is None:
            await self.app(scope if checked else {**scope, HEAD_READ: True}, receive, send)
            return
        status, detail, headers = refusal
        await refuse(send, status, detail, headers, location="body" if status == 415 else "request")


async def refuse_websocket(scope, receive, send) -> None:
    """Refuse a WebSocket handshake as an HTTP request asking for one is refused, where the ASGI server can send a
    refusal's body; otherwise with the bare close every such server answers 403."""
    if (await receive())["type"] != "websocket.connect":  # its client has gone
        return
    if "websocket.http.response" in scope.get("extensions", {}):
        await refuse(send, 400, NO_WEBSOCKETS, location="request", kind="websocket.http")
    else:
        await send({"type": "websocket.close"})


def unmet_head(scope) -> tuple[int, str, tuple] | None:
    """The status, detail and headers refusing a request of this ``scope``, or None where the server can answer it."""
    version = str(scope.get("http_version", "1.1"))
    if version not in SPOKEN_VERSIONS:
        shown = version if len(version) <= MAX_VERSION_CHARS else version[:MAX_VERSION_CHARS] + "…"
        return 505, f"HTTP/{shown} is not a version this server speaks: send the request as HTTP/1.1", ()
    unmet = [value for value in listed(scope, b"expect") if value.lower() != MET_EXPECTATION]
    if unmet:
        return 417, (f"the request expects {shown_value(', '.join(unmet))} (its Expect header), which this server does "
                     f"not do: send it without that expectation ({MET_EXPECTATION} alone is met)"), ()
    codings = [value for value in listed(scope, b"content-encoding") if value.lower() != IDENTITY]
    if codings:
        return 415, (f"the body's content-encoding is {shown_value(', '.join(codings))}, which this server does not "
                     "decode: send the body uncompressed, without a content-encoding header"), (
            (b"accept-encoding", IDENTITY.encode()),)
    if asks_websocket(scope):
        return 400, NO_WEBSOCKETS, ()
    return None


def asks_websocket(scope) -> bool:
    """Whether the request asks this connection to switch to a WebSocket: ``Upgrade: websocket`` with the ``upgrade``
    option in ``Connection``, as HTTP has a switch asked (RFC 9110, 7.8). Any other protocol offered (``h2c``) is
    ignored, as HTTP allows: the request is answered in HTTP/1.1."""
    offered = {value.lower().partition("/")[0] for value in listed(scope, b"upgrade")}
    return WEBSOCKET in offered and "upgrade" in {value.lower() for value in listed(scope, b"connection")}


def listed(scope, name: bytes) -> list[str]:
    """The elements of every ``name`` header, comma-separated lists joined, each stripped; empty ones skipped, as HTTP
    reads a list."""
    values = (value.decode("latin-1") for key, value in scope.get("headers", ()) if key.lower() == name)
    return [element.strip() for value in values for element in value.split(",") if element.strip()]
