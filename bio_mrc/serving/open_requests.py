"""A bound on the requests being read or answered at once, as ASGI middleware (no FastAPI needed).

Each such request holds a connection, a task, and its body or its questions; unbounded, a crowd of clients holds as
many as the system's file descriptors allow. uvicorn's own bound (``limit_concurrency``) answers past it in plain
text; this one refuses with the server's JSON refusal, before the request's body is read.
"""

from __future__ import annotations

from ..plurals import counted
from .guards import refuse
from .operator_log import tell_operator


class OpenRequests:
    """The HTTP requests being read or answered now (``open``), and the most there may be at once (``limit``)."""

    def __init__(self, limit: int) -> None:
        self.limit, self.open = limit, 0


# A health probe holds no body and no questions, and answers from memory: a busy server is still alive, and a
# probe refused as one too many would have an orchestrator restart it.
UNCOUNTED_PATHS = frozenset({"/health"})


class OpenRequestLimit:
    """ASGI middleware: at most ``requests.limit`` HTTP requests inside ``app`` at once (``/health`` aside); one more
    is refused (503, ``Retry-After: 1``) unread. A request leaves the count however it ends: answered, refused,
    failed, cancelled, or its client gone."""

    def __init__(self, app, requests: OpenRequests) -> None:
        self.app, self.requests = app, requests

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or scope.get("path") in UNCOUNTED_PATHS:
            await self.app(scope, receive, send)
            return
        requests = self.requests
        if requests.open >= requests.limit:
            tell_operator("requests", f"{counted(requests.limit, 'request')} at once, the most the server reads or "
                                      "answers (--max-concurrent-requests): more are answered 503")
            await refuse(send, 503, "the server is reading or answering as many requests as it takes at once: try "
                                    "again shortly", ((b"retry-after", b"1"),))
            return
        requests.open += 1
        try:
            await self.app(scope, receive, send)
        finally:
            requests.open -= 1
