"""Bounds on connections before a request reaches the application, as uvicorn's h11 protocol with six additions:

* a connection must send a request's line and headers within ``head_timeout_s``, counted from its opening or from
  the first byte of its next request; past it the server answers 408 and closes it. uvicorn counts only the idle time
  between requests (``timeout_keep_alive``), so a client that opens a connection and sends nothing, or a header line
  every few seconds, never finishing, held its socket for ever, unseen by the application;
* at most ``max_connections`` connections are open at once, idle ones included; one more is answered 503 and closed
  lingering (below), at most :data:`MAX_LINGERING_REFUSALS` such at once; past them, at once. No refused one, lingering
  or still closing, is counted among those open. Unbounded, such connections took file descriptors until ``accept`` failed, and then nobody was served;
* a client that reads none of its responses for ``read_timeout_s`` once the buffers to it are full has its connection
  closed: uvicorn waits for it for ever, its request holding a place among those open at once;
* a request h11 cannot read is refused in the JSON every refusal has, naming h11's reason (uvicorn: a bare 400 in
  plain text), and one whose answer has begun is closed (uvicorn's 400 after it raises a traceback in the log);
* a client that half-closes its connection once its request is sent (``shutdown(SHUT_WR)``, as netcat and some
  proxies do) gets its answer, then the connection closes: uvicorn closed it as soon as it read the client's end, and
  the request was answered to nobody;
* a connection refused with a 408, a 4xx for what it sent or a 503 past ``max_connections`` is closed as HTTP servers
  close one (a lingering close): the refusal, the end of the server's side, then what the client still sends is read
  and dropped until it ends its side, :data:`LINGER_BYTES` come or :data:`LINGER_S` pass. Closed at once with the
  client's bytes still arriving, the kernel resets the connection, and the reset can discard the refusal before the
  client reads it.

All build on uvicorn's ``H11Protocol`` beyond its settings, so they are used only on the uvicorn and h11 versions
checked here (:func:`unsupported`); on any other the server runs uvicorn's own protocol and says so in its log.
"""

from __future__ import annotations

import http
import json
import re
import warnings
from typing import Any

from ..errors import ConfigError, InputWarning, argument
from .operator_log import tell_operator

LINGER_S = 2.0  # how long a refused connection drains what its client still sends before it closes
LINGER_BYTES = 1 << 20  # past a refused request's usual body, draining a client that keeps sending costs the loop more

# The versions whose H11Protocol this subclasses as it is: [from, before).
UVICORN_VERSIONS = ((0, 29), (1, 0))
H11_VERSIONS = ((0, 14), (1, 0))
MAX_REASON_CHARS = 200  # h11's reason may quote the client's bytes: cut
_BYTEARRAY = re.compile(r"bytearray\((b'.*?'|b\".*?\")\)")  # h11 quotes bytes as bytearray(b'...'): b'...' reads better
OPEN_FILES_SPARE = 128  # descriptors beside the connections: the model's files, the helper's pipes, the log, ...
MAX_LINGERING_REFUSALS = 32  # ... and the refused connections lingering at once, a fourth of the spare


class ConnectionBoundsOffWarning(InputWarning):
    """The installed uvicorn or h11 cannot take the head timeout and the connection bound (:func:`unsupported`): the
    server runs uvicorn's own protocol without them."""


class ConnectionsLoweredWarning(InputWarning):
    """The open-file limit holds fewer connections than ``max_connections`` beside the ``backlog``: the bound is
    lowered to fit."""


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
    needed = [name for name in ("connection_made", "connection_lost", "handle_events", "send_400_response", "pause_writing",
                                "resume_writing", "on_response_complete")
              if not hasattr(H11Protocol, name)]
    needed += [name for name in ("their_state", "our_state", "trailing_data", "next_event") if not hasattr(h11.Connection, name)]
    return f"uvicorn's h11 protocol lacks {', '.join(needed)}" if needed else None


def _version(text: str) -> tuple[int, int] | None:
    parts = text.split(".")[:2]
    return (int(parts[0]), int(parts[1])) if len(parts) == 2 and all(part.isdigit() for part in parts) else None


def bounded_protocol(head_timeout_s: float, max_connections: int, read_timeout_s: float | None = None) -> type | None:
    """uvicorn's h11 protocol with the bounds (uvicorn's ``http`` setting), or None where :func:`unsupported`.
    ``read_timeout_s``: how long a client may leave a response unread (its socket's buffers full) before its
    connection is closed (None: for ever)."""
    if unsupported() is not None:
        return None
    import h11
    from uvicorn.protocols.http.h11_impl import DEFAULT_MAX_INCOMPLETE_EVENT_SIZE, H11Protocol

    ExplainedConnection = explained_connection()

    class BoundedH11Protocol(ConnectionBound, LingeringClose, HeadTimeout, ReadTimeout, HalfClose, H11Protocol):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.max_head_bytes = self.config.h11_max_incomplete_event_size or DEFAULT_MAX_INCOMPLETE_EVENT_SIZE
            self.conn = ExplainedConnection(h11.SERVER, self.max_head_bytes)

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            if self.past_bound():
                self.refuse_past_bound()
                return
            self.start_head_timer()

        def connection_lost(self, exc: Exception | None) -> None:
            self.stop_head_timer()
            self.resume_writing()  # its read timer stopped too
            super().connection_lost(exc)

        def handle_events(self) -> None:
            super().handle_events()
            if self.conn.their_state is not h11.IDLE:  # the head has come (or the connection failed)
                self.stop_head_timer()
            elif self.conn.trailing_data[0] and self.head_timer is None and not self.transport.is_closing():
                self.start_head_timer()  # a next request begins

        def send_400_response(self, msg: str) -> None:
            refuse_unreadable(self)

        def _unsupported_upgrade_warning(self) -> None:  # uvicorn's advice to install a WebSocket library: none is used
            self.logger.warning("Unsupported upgrade request.")

    BoundedH11Protocol.head_timeout_s, BoundedH11Protocol.max_connections = head_timeout_s, max_connections
    BoundedH11Protocol.read_timeout_s, BoundedH11Protocol.refused, BoundedH11Protocol.refused_lingering = read_timeout_s, set(), set()
    return BoundedH11Protocol


class HeadTimeout:
    """The part of :func:`bounded_protocol`'s protocol that answers 408 and closes a connection which has not sent a
    request's line and headers within ``head_timeout_s`` of its timer's start (the connection's opening, or the first
    byte of its next request)."""

    head_timeout_s: float
    head_timer: Any = None

    def start_head_timer(self) -> None:
        self.head_timer = self.loop.call_later(self.head_timeout_s, self.head_timed_out)

    def stop_head_timer(self) -> None:
        if self.head_timer is not None:
            self.head_timer.cancel()
            self.head_timer = None

    def head_timed_out(self) -> None:
        import h11

        self.head_timer = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            tell_operator("head", f"a connection did not send a request's line and headers within "
                                  f"{self.head_timeout_s:g} s (--head-timeout-s): answered 408 and closed")
            self.refuse(408, f"the request line and headers were not all sent within {self.head_timeout_s:g} s: "
                             "send them at once")


class ConnectionBound:
    """The part of :func:`bounded_protocol`'s protocol that holds at most ``max_connections`` connections open at once:
    one more is answered 503 and closed lingering while fewer than :data:`MAX_LINGERING_REFUSALS` refused ones linger
    (their descriptors within :data:`OPEN_FILES_SPARE`), else closed at once; none, lingering or still closing, is
    counted among those open."""

    max_connections: int
    # The protocol's class's own (:func:`bounded_protocol` makes them a server): the connections refused past the bound
    # until each is gone, lingering or closing (asyncio tells a closed one's protocol on a later turn of its loop,
    # after the connections accepted meanwhile are made), and those of them lingering.
    refused: set
    refused_lingering: set

    def past_bound(self) -> bool:
        """Whether more than ``max_connections`` are open, this one included and refused ones not."""
        return len(self.connections) - len(self.refused) > self.max_connections

    def refuse_past_bound(self) -> None:
        tell_operator("connections", f"{self.max_connections} connections are open (--max-connections): more are refused")
        write_refusal(self.transport, 503, "the server holds as many connections as it takes at once: try again shortly", b"retry-after: 1\r\n")
        self.refused.add(self)
        if len(self.refused_lingering) < MAX_LINGERING_REFUSALS and self.close_lingering():
            self.refused_lingering.add(self)
        else:
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.refused.discard(self)
        self.refused_lingering.discard(self)
        super().connection_lost(exc)


class LingeringClose:
    """The part of :func:`bounded_protocol`'s protocol that refuses a connection and closes it lingering: the refusal,
    then the end of the server's side (its client reads the answer, then the end), then what the client still sends
    dropped until it ends its own side, :data:`LINGER_BYTES` come or :data:`LINGER_S` pass; none blocks the loop."""

    lingering = False
    drained = 0
    linger_timer: Any = None

    def refuse(self, status: int, detail: str, location: str = "connection") -> None:
        self.stop_head_timer()
        write_refusal(self.transport, status, detail, location=location)
        if not self.close_lingering():
            self.transport.close()

    def close_lingering(self) -> bool:
        """End the server's side after what is written and close once the linger ends; False, doing nothing, where
        the transport cannot end its side alone or the client has gone: the caller closes it."""
        if not self.transport.can_write_eof():
            return False
        try:
            self.transport.write_eof()
        except OSError:  # the client has gone already (its reset came after the refusal was written): none to drain
            return False
        self.lingering = True
        self.linger_timer = self.loop.call_later(LINGER_S, self.linger_ended)
        return True

    def linger_ended(self) -> None:
        self.linger_timer = None
        self.transport.close()

    def data_received(self, data: bytes) -> None:
        if not self.lingering:
            super().data_received(data)
            return
        self.drained += len(data)
        if self.drained > LINGER_BYTES:
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.linger_timer is not None:
            self.linger_timer.cancel()
            self.linger_timer = None
        super().connection_lost(exc)

    def eof_received(self) -> bool | None:
        """The client has ended its side: a lingering connection closes now (asyncio closes it on a false return)."""
        return False if self.lingering else super().eof_received()

    def shutdown(self) -> None:
        """The server stops: a lingering connection closes now, its refusal written. uvicorn closes a connection whose
        request is answered, and waits for the answer of one still coming, which for a request refused while its body
        came never comes: the server stopped only once the linger ended."""
        if self.lingering:
            self.transport.close()
        else:
            super().shutdown()


class HalfClose:
    """The part of :func:`bounded_protocol`'s protocol that answers a client which has sent the end of its side of the
    connection (a half-close): the requests it sent whole are answered, then the connection closes."""

    client_ended = False

    def eof_received(self) -> bool:
        """True keeps the connection open to write the answer of a request read whole; a request still coming can
        never end, so its connection closes now, as uvicorn closes it (its application hears the client gone)."""
        self.client_ended = True
        return self.answering()

    def on_response_complete(self) -> None:
        super().on_response_complete()  # a next request read whole (pipelined) begins here
        if self.client_ended and not self.answering() and not self.transport.is_closing():
            self.transport.close()

    def answering(self) -> bool:
        """Whether a request read whole, its body included, is being answered."""
        cycle = self.cycle
        return cycle is not None and not cycle.response_complete and not cycle.more_body


class ReadTimeout:
    """The part of :func:`bounded_protocol`'s protocol that closes a connection whose client leaves a response unread
    for ``read_timeout_s`` (None: never), put before uvicorn's ``H11Protocol``, whose writing it wraps."""

    read_timeout_s: float | None = None
    read_timer: Any = None

    def pause_writing(self) -> None:
        """The client reads none of what is written: uvicorn waits for it for ever, the request holding its place
        among those open at once, so a few clients that pipeline requests and never read hold them all."""
        super().pause_writing()
        if self.read_timeout_s is not None and self.read_timer is None:
            self.read_timer = self.loop.call_later(self.read_timeout_s, self.read_timed_out)

    def resume_writing(self) -> None:
        super().resume_writing()
        if self.read_timer is not None:
            self.read_timer.cancel()
            self.read_timer = None

    def read_timed_out(self) -> None:
        self.read_timer = None
        tell_operator("reading", f"a client read none of its response for {self.read_timeout_s:g} s "
                                 "(--request-timeout-s): its connection closed")
        self.transport.abort()  # what waits to be written is dropped, as if its client left


def explained_connection() -> type:
    """h11's connection, keeping the reason it refused what the client sent (uvicorn keeps none), and refusing a
    request whose line and headers pass the most bytes it holds of an event (``max_incomplete_event_size``,
    ``--max-head-bytes``) however they arrived: h11 bounds only a head still coming, so one sent whole in one write,
    or ended by a last write that brought it past the bound, was read."""
    import h11
    from h11._connection import DEFAULT_MAX_INCOMPLETE_EVENT_SIZE  # where uvicorn reads it from too

    class ExplainedConnection(h11.Connection):
        refusal: h11.RemoteProtocolError | None = None

        def __init__(self, our_role: Any, max_incomplete_event_size: int = DEFAULT_MAX_INCOMPLETE_EVENT_SIZE) -> None:
            super().__init__(our_role, max_incomplete_event_size)
            self.max_head_bytes = max_incomplete_event_size

        def next_event(self) -> Any:
            before = len(self.trailing_data[0]) if self.their_state is h11.IDLE else None  # a request's head comes next
            try:
                event = super().next_event()
                if before is not None and isinstance(event, h11.Request) and before - len(self.trailing_data[0]) > self.max_head_bytes:
                    raise h11.RemoteProtocolError("Request head too long", error_status_hint=431)
                return event
            except h11.RemoteProtocolError as error:
                self.refusal = error
                raise

    return ExplainedConnection


def refuse_unreadable(protocol: Any) -> None:
    """Refuse what h11 could not read, in JSON naming why, and close; uvicorn answers a bare 400 in plain text, and
    one written after the request's own response has begun (a GET answered, its chunked body then malformed) raises a
    traceback in the log, as does the application's own answer to a request so refused while it reads the body."""
    import h11

    cycle = protocol.cycle
    if cycle is not None and not cycle.response_complete:  # the application reading the body hears the client gone
        cycle.disconnected = True
        cycle.message_event.set()
    if protocol.conn.our_state not in (h11.IDLE, h11.SEND_RESPONSE):  # a response began: nothing more can go
        protocol.transport.close()
        return
    status, detail = unreadable_request(protocol.conn.refusal, protocol.max_head_bytes)
    protocol.refuse(status, detail, location="request")


def unreadable_request(error: Exception | None, max_head_bytes: int) -> tuple[int, str]:
    """The status and detail refusing a request h11 could not read (``error``: h11's reason, if it gave one): 431 for a
    head past ``max_head_bytes``, 501 for a transfer coding other than chunked, else 400."""
    status = getattr(error, "error_status_hint", 400)
    if status == 431:
        return status, f"the request line and headers pass {max_head_bytes} bytes: send shorter ones"
    reason = _BYTEARRAY.sub(r"\1", str(error))[:MAX_REASON_CHARS] if error is not None else "unreadable"
    return status, f"not a valid HTTP/1.1 request: {reason}"


def write_refusal(transport: Any, status: int, detail: str, headers: bytes = b"", location: str = "connection") -> None:
    """Answer ``status`` with the JSON every refusal has: written as bytes, since h11 answers only a request it has
    read."""
    body = json.dumps({"detail": detail, "problems": [{"location": location, "message": detail}]}).encode()
    reason = http.HTTPStatus(status).phrase.encode()
    transport.write(b"HTTP/1.1 %d %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\nconnection: close\r\n"
                    % (status, reason, len(body)) + headers + b"\r\n" + body)


def make_room_for(max_connections: int, backlog: int) -> int:
    """Raise this process's open-file limit to hold ``max_connections`` connections, the ``backlog`` more that asyncio
    may accept at once before any is refused, and the server's own files (the refused connections lingering among
    them), up to the hard limit; returns the connections it holds. Where the hard limit holds fewer, the bound is
    lowered to fit, with a warning; where it holds none, refused.
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
                      f"that is what {most} open files hold (ulimit -n; at most {hard})", ConnectionsLoweredWarning, stacklevel=2)
    return held
