"""What a request's line and headers ask that the server cannot do, refused before anything else is read, as ASGI
middleware (no FastAPI needed): an HTTP version other than 1.0 and 1.1 (505), an expectation other than
``100-continue`` (417), and a body in a content coding (``Content-Encoding: gzip``, ``br``) the server does not decode
(415, with ``Accept-Encoding: identity``). Left alone, uvicorn answers ``HTTP/9.9`` as 1.1, and the application
ignores the other two: a gzipped body is refused as "not UTF-8 JSON at byte 1".
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


class RequestHeadGuard:
    """ASGI middleware: refuse an HTTP request whose version, ``Expect`` or ``Content-Encoding`` header the server cannot
    honour (:func:`unmet_head`), before its body is read; answer any other as ``app`` does."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        refusal = unmet_head(scope) if scope["type"] == "http" else None
        if refusal is None:
            await self.app(scope, receive, send)
            return
        status, detail, headers = refusal
        await refuse(send, status, detail, headers, location="body" if status == 415 else "request")


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
    return None


def listed(scope, name: bytes) -> list[str]:
    """The elements of every ``name`` header, comma-separated lists joined, each stripped; empty ones skipped, as HTTP
    reads a list."""
    values = (value.decode("latin-1") for key, value in scope.get("headers", ()) if key.lower() == name)
    return [element.strip() for value in values for element in value.split(",") if element.strip()]
