"""Bounds on connections before a request reaches the application, as uvicorn's h11 protocol with two additions:

* a connection must send a request's line and headers within ``head_timeout_s``, counted from its opening or from
  the first byte of its next request; past it the server answers 408 and closes it. uvicorn counts only the idle time
  between requests (``timeout_keep_alive``), so a client that opens a connection and sends nothing, or a header line
  every few seconds, never finishing, held its socket for ever, unseen by the application;
* at most ``max_connections`` connections are open at once, idle ones included; one more is answered 503 and closed
  at once. Unbounded, such connections took file descriptors until ``accept`` failed, and then nobody was served.

Both build on uvicorn's ``H11Protocol`` beyond its settings, so they are used only on the uvicorn and h11 versions
checked here (:func:`unsupported`); on any other the server runs uvicorn's own protocol and says so in its log.
"""

from __future__ import annotations

import json
import logging
import time
import warnings
from typing import Any

from ..errors import ConfigError, InputWarning, argument

# The versions whose H11Protocol this subclasses as it is: [from, before).
UVICORN_VERSIONS = ((0, 29), (1, 0))
H11_VERSIONS = ((0, 14), (1, 0))
OPEN_FILES_SPARE = 128  # descriptors beside the connections: the model's files, the helper's pipes, the log
WARN_EVERY_S = 60.0  # a flood of refused connections logs one line a minute, not one each
_last_warned: dict[str, float] = {}


def unsupported() -> str | None:
    """Why the installed uvicorn or h11 cannot take the bounds (a version outside those checked, or a protocol
    without what they build on), or None."""
    try:
        import h11
        import uvicorn
        from uvicorn.protocols.http.h11_impl import H11Protocol
    except ImportError as error:
        return f"uvicorn's h11 protocol does not load ({error})"
    for name, module, versions in (("uvicorn", uvicorn, UVICORN_VERSIONS), ("h11", h11, H11_VERSIONS)):
        found = _version(getattr(module, "__version__", ""))
        if found is None or not versions[0] <= found < versions[1]:
            return f"{name} {getattr(module, '__version__', '?')} is not a version these bounds were checked on"
    needed = [name for name in ("connection_made", "connection_lost", "handle_events") if not hasattr(H11Protocol, name)]
    needed += [name for name in ("their_state", "trailing_data") if not hasattr(h11.Connection, name)]
    return f"uvicorn's h11 protocol lacks {', '.join(needed)}" if needed else None


def _version(text: str) -> tuple[int, int] | None:
    parts = text.split(".")[:2]
    return (int(parts[0]), int(parts[1])) if len(parts) == 2 and all(part.isdigit() for part in parts) else None


def bounded_protocol(head_timeout_s: float, max_connections: int) -> type | None:
    """uvicorn's h11 protocol with the bounds (uvicorn's ``http`` setting), or None where :func:`unsupported`."""
    if unsupported() is not None:
        return None
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class BoundedH11Protocol(H11Protocol):
        head_timeout_s: float
        max_connections: int

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.head_timer: Any = None

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            limit = self.max_connections
            if len(self.connections) > limit:  # this one included
                _warn("connections", f"{limit} connections are open (--max-connections): more are refused")
                close_with(transport, 503, f"the server holds as many connections as it takes at once ({limit}, "
                                           f"--max-connections): try again shortly", b"retry-after: 1\r\n")
                return
            self.head_timer = self.loop.call_later(self.head_timeout_s, self.head_timed_out)

        def connection_lost(self, exc: Exception | None) -> None:
            self.stop_head_timer()
            super().connection_lost(exc)

        def handle_events(self) -> None:
            super().handle_events()
            if self.conn.their_state is not h11.IDLE:  # the head has come (or the connection failed)
                self.stop_head_timer()
            elif self.conn.trailing_data[0] and self.head_timer is None and not self.transport.is_closing():
                self.head_timer = self.loop.call_later(self.head_timeout_s, self.head_timed_out)  # a next request begins

        def stop_head_timer(self) -> None:
            if self.head_timer is not None:
                self.head_timer.cancel()
                self.head_timer = None

        def head_timed_out(self) -> None:
            self.head_timer = None
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                close_with(self.transport, 408, f"the request line and headers were not all sent within "
                                                f"{self.head_timeout_s:g} s (--head-timeout-s): send them at once")

    BoundedH11Protocol.head_timeout_s, BoundedH11Protocol.max_connections = head_timeout_s, max_connections
    return BoundedH11Protocol


def close_with(transport: Any, status: int, detail: str, headers: bytes = b"") -> None:
    """Answer ``status`` with the JSON every refusal has, then close: written as bytes, since h11 answers only a
    request it has read."""
    body = json.dumps({"detail": detail, "problems": [{"location": "connection", "message": detail}]}).encode()
    reason = {408: b"Request Timeout", 503: b"Service Unavailable"}[status]
    transport.write(b"HTTP/1.1 %d %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\nconnection: close\r\n"
                    % (status, reason, len(body)) + headers + b"\r\n" + body)
    transport.close()


def _warn(kind: str, message: str) -> None:
    now = time.monotonic()
    if now - _last_warned.get(kind, -WARN_EVERY_S) >= WARN_EVERY_S:
        _last_warned[kind] = now
        logging.getLogger("uvicorn.error").warning(message)


def make_room_for(max_connections: int, backlog: int) -> int:
    """Raise this process's open-file limit to hold ``max_connections`` connections, the ``backlog`` more that asyncio
    may accept at once before any is refused, and the server's own files, up to the hard limit; returns the connections
    it holds. Where the hard limit holds fewer, the bound is lowered to fit, with a warning; where it holds none, refused.
    Past the limit ``accept`` fails, every client is refused, and each try logs a traceback."""
    try:
        import resource
    except ImportError:  # Windows: no such limit to raise
        return max_connections
    needed = max_connections + backlog + OPEN_FILES_SPARE
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return max_connections
    most = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (most, hard))
    except (ValueError, OSError):
        most = soft
    held = min(max_connections, most - backlog - OPEN_FILES_SPARE)
    if held < 1:
        raise ConfigError(f"{argument('max_connections', max_connections)} and {argument('backlog', backlog)} need about "
                          f"{needed} open files, and this process may open {most} (ulimit -n; at most {hard}): lower "
                          f"{argument('backlog')} or raise the limit")
    if held < max_connections:
        warnings.warn(f"{argument('max_connections', max_connections)} lowered to {held}: with {argument('backlog', backlog)} "
                      f"that is what {most} open files hold (ulimit -n; at most {hard})", InputWarning, stacklevel=2)
    return held
