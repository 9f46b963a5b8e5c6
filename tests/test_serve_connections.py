"""bio-mrc serve against slow and idle clients: a request head not all sent in time is a 408 and its connection closed,
connections past --max-connections are refused at once, idle and oversized ones end as configured; real sockets."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import select
import socket
import threading
import time
import warnings
from typing import Callable

import httpx
import pytest
import uvicorn
from uvicorn.server import ServerState

from bio_mrc.cli import build_parser
from bio_mrc.config_options import config_from_args
from bio_mrc.errors import ConfigError
from bio_mrc.serving import connections, server
from bio_mrc.serving.app import create_app
from bio_mrc.serving.config import ServeConfig

from .test_serve import GOOD, extractor, model_dir, operator_lines, running  # noqa: F401  (fixtures)


def serving(extractor, **options):  # noqa: F811
    """The application under uvicorn with the connection settings ``bio-mrc serve`` gives it: its base URL."""
    config = ServeConfig(**options)
    return running(create_app(extractor, config), **server.connection_settings(config))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def address(url: str) -> tuple[str, int]:
    host, port = url.removeprefix("http://").split(":")
    return host, int(port)


def read_until_closed(sock: socket.socket) -> tuple[bytes, float]:
    """What the server sends until it closes the connection, and the seconds that took."""
    started, data = time.monotonic(), b""
    while chunk := sock.recv(4096):
        data += chunk
    return data, time.monotonic() - started


def refusal(data: bytes) -> tuple[int, dict]:
    """A raw HTTP response's status and JSON body."""
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body)


def read_while(sock: socket.socket) -> Callable[[], tuple[bytes, float]]:
    """Read what the server sends in a thread from now on, as a client that keeps writing must: a response left unread
    when the server closes is lost to the reset the next write brings. The returned call waits for the close: the data,
    and the seconds from the call to the close (0 where it came before)."""
    result: list[tuple[bytes, float]] = []
    def read() -> None:
        data = b""
        with contextlib.suppress(ConnectionResetError):  # a close with the client's late lines unread resets
            while chunk := sock.recv(4096):
                data += chunk
        result.append((data, time.monotonic()))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()

    def closed() -> tuple[bytes, float]:
        waited = time.monotonic()
        reader.join(timeout=30)
        assert result, "the server did not close the connection"
        return result[0][0], max(0.0, result[0][1] - waited)

    return closed


def trickle(sock: socket.socket, stop: threading.Event) -> None:
    """A slow client: a request line, then a header line every 0.1 s, never the blank line that ends the head."""
    try:
        sock.sendall(b"POST /answer HTTP/1.1\r\nHost: localhost\r\n")
        for line in range(1000):
            if stop.wait(0.1):
                return
            sock.sendall(b"x-slow-%d: 1\r\n" % line)
    except OSError:  # the server closed the connection
        return


@pytest.mark.parametrize("client", ["silent", "trickling", "next request unfinished"])
def test_a_request_head_not_all_sent_in_time_is_a_408_and_the_connection_closed(extractor, client, operator_lines):  # noqa: F811
    """A connection that sends nothing, one that sends a header line every 0.1 s, and one that begins a second request
    after its first is answered and never finishes it: each gets a 408 in the JSON every refusal has and is closed
    (well within ten times --head-timeout-s), while another client is answered."""
    stop = threading.Event()
    with serving(extractor, head_timeout_s=0.5, keep_alive_s=60) as url, socket.create_connection(address(url), timeout=10) as sock:
        if client == "next request unfinished":
            sock.sendall(b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n")
            first = sock.recv(65536)
            assert first.startswith(b"HTTP/1.1 200 ")
            sock.sendall(b"GET /health HTTP/1.1\r\nHost: local")
        closed = read_while(sock)
        if client == "trickling":
            threading.Thread(target=trickle, args=(sock, stop), daemon=True).start()
        assert httpx.post(url + "/answer", json=GOOD, timeout=60).status_code == 200
        data, seconds = closed()
        stop.set()
    status, body = refusal(data)
    assert status == 408 and seconds < 5
    assert body["detail"] == "the request line and headers were not all sent within 0.5 s: send them at once"
    assert operator_lines == ["a connection did not send a request's line and headers within 0.5 s (--head-timeout-s): "
                              "answered 408 and closed"]


def test_a_head_sent_in_time_is_answered_and_its_connection_kept_alive(extractor):  # noqa: F811
    """The head's time covers the head alone: a request whose head comes at once is answered, however long its
    connection then stays open within --keep-alive-s, and a second request on it is answered too."""
    body = json.dumps(GOOD).encode()
    with serving(extractor, head_timeout_s=0.3, keep_alive_s=60) as url, socket.create_connection(address(url), timeout=10) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n")
        assert read_response(sock).startswith(b"HTTP/1.1 200 ")
        with socket.create_connection(address(url), timeout=10) as silent:  # opened after that answer
            data, _ = read_until_closed(silent)  # its 408: the head's time has passed since, idle on the kept one
        assert refusal(data)[0] == 408
        sock.sendall(POST_HEAD + b"content-length: %d\r\n\r\n%s" % (len(body), body))
        assert read_response(sock).startswith(b"HTTP/1.1 200 ")  # the keep-alive's time, not the head's


def test_connections_past_the_limit_are_refused_at_once_and_room_comes_back(extractor, operator_lines):  # noqa: F811
    with serving(extractor, max_connections=3, head_timeout_s=60) as url:
        held = [socket.create_connection(address(url), timeout=10) for _ in range(3)]
        with socket.create_connection(address(url), timeout=10) as one_more:
            data, _ = read_until_closed(one_more)
        status, body = refusal(data)
        assert status == 503 and b"\r\nretry-after: 1\r\n" in data
        assert body["detail"] == "the server holds as many connections as it takes at once: try again shortly"
        assert operator_lines == ["3 connections are open (--max-connections): more are refused"]
        for sock in held:
            sock.close()
        deadline = time.monotonic() + 10
        while httpx.get(url + "/health", timeout=10).status_code != 200:  # the closed ones leave as the server sees them go
            assert time.monotonic() < deadline
            time.sleep(0.05)


def open_descriptors() -> int:
    """The files this process holds open: the server, in a thread of it, and its clients alike."""
    return len(os.listdir("/proc/self/fd"))


def wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def held_open(url: str) -> socket.socket:
    """A connection the server has accepted and answered once, kept open."""
    sock = socket.create_connection(address(url), timeout=10)
    sock.sendall(b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n")
    assert read_response(sock).startswith(b"HTTP/1.1 200 ")
    return sock


def test_a_client_past_the_limit_that_sent_its_whole_request_reads_the_503(extractor, monkeypatch):  # noqa: F811
    """A client past --max-connections that sends its whole request (a body of 256 KiB with it) before it reads: the
    server closed the connection at once with the request unread, its kernel reset the connection, and the reset
    discarded the 503 before the client read it (``Connection reset by peer``). The client now reads the 503, then
    the end of the connection."""
    monkeypatch.setattr(connections, "LINGER_S", 60.0)  # the client's close ends it, however loaded the machine
    body = b'{"questions": "' + b"x" * 262_144 + b'"}'
    with serving(extractor, max_connections=1, head_timeout_s=60, keep_alive_s=60) as url, held_open(url):
        with socket.create_connection(address(url), timeout=10) as refused:
            refused.sendall(POST_HEAD + b"content-length: %d\r\n\r\n" % len(body) + body)
            data, _ = read_until_closed(refused)
    status, answer = refusal(data)
    assert status == 503 and b"\r\nretry-after: 1\r\n" in data
    assert answer["detail"] == "the server holds as many connections as it takes at once: try again shortly"


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts open files by /proc")
def test_a_refused_client_that_never_ends_its_side_is_closed_after_the_linger_time(extractor, monkeypatch):  # noqa: F811
    """The refused connection lingers: what its client sends after the 503 is read and dropped, and a client that
    never closes has the connection closed once LINGER_S pass, its descriptor given back."""
    monkeypatch.setattr(connections, "LINGER_S", 0.2)
    config = ServeConfig(max_connections=1, head_timeout_s=60, keep_alive_s=60)
    settings, drained = server.connection_settings(config), threading.Event()

    class Draining(settings["http"]):
        """The server's protocol, saying when it is handed what its client sent after the refusal, the linger's end
        held back until then (events, not longer times)."""

        def data_received(self, data: bytes) -> None:
            if self.lingering:
                drained.set()
            super().data_received(data)

        def linger_ended(self) -> None:
            if drained.is_set():
                super().linger_ended()
            else:
                self.linger_timer = self.loop.call_later(0.01, self.linger_ended)

    with running(create_app(extractor, config), **{**settings, "http": Draining}) as url, held_open(url):
        before = open_descriptors()
        with socket.create_connection(address(url), timeout=10) as refused:
            refused.sendall(b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n")
            data, _ = read_until_closed(refused)  # the 503, then the end of the server's side
            refused.sendall(b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n")
            assert drained.wait(10), "the server took nothing its client sent after the refusal"
            wait_for(lambda: open_descriptors() == before + 1, "the refused connection was not closed")  # the client's own
    assert refusal(data)[0] == 503


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts open files by /proc")
def test_refused_connections_past_those_that_may_linger_close_at_once_and_others_are_answered(extractor, monkeypatch):  # noqa: F811
    """Two refused connections may linger (here), each for a minute: a third is closed at once. Those lingering hold
    no place among --max-connections: once the held connection closes, a request is answered beside them, and once
    their clients close, the server holds no descriptor more than before."""
    monkeypatch.setattr(connections, "MAX_LINGERING_REFUSALS", 2)
    monkeypatch.setattr(connections, "LINGER_S", 60.0)
    with serving(extractor, max_connections=1, head_timeout_s=60, keep_alive_s=60) as url:
        before = open_descriptors()
        held = held_open(url)
        refused = [socket.create_connection(address(url), timeout=10) for _ in range(3)]
        for sock in refused:
            assert refusal(read_until_closed(sock)[0])[0] == 503
        wait_for(lambda: open_descriptors() == before + 2 + 3 + 2, "not two refused connections lingering, the third closed")
        held.close()
        wait_for(lambda: httpx.get(url + "/health", timeout=10).status_code == 200, "the lingering refusals held places")
        for sock in refused:
            sock.close()
        wait_for(lambda: open_descriptors() == before, "the server holds descriptors of closed connections")


def test_a_refused_client_that_keeps_sending_is_closed_past_the_bytes_a_linger_drops(extractor, monkeypatch):  # noqa: F811
    """A refused client that sends a body of 1 MiB after its 503, never closing: its connection is closed once more
    than LINGER_BYTES (here 64 KiB) have been dropped, long before LINGER_S (here a minute) pass."""
    monkeypatch.setattr(connections, "LINGER_BYTES", 65_536)
    monkeypatch.setattr(connections, "LINGER_S", 60.0)
    config = ServeConfig(max_connections=1, head_timeout_s=60, keep_alive_s=60)
    settings, dropped = server.connection_settings(config), []

    class Dropping(settings["http"]):
        """The server's protocol, saying how many bytes a lingering connection dropped before it closed."""

        def connection_lost(self, exc: Exception | None) -> None:
            if self.lingering:
                dropped.append(self.drained)
            super().connection_lost(exc)

    with running(create_app(extractor, config), **{**settings, "http": Dropping}) as url, held_open(url):
        with socket.create_connection(address(url), timeout=10) as refused:
            refused.sendall(b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n")
            data, _ = read_until_closed(refused)  # the 503, then the end of the server's side
            with contextlib.suppress(OSError):  # the reset once the server closes with bytes still coming
                refused.sendall(b"x" * 1_048_576)
            wait_for(lambda: bool(dropped), "the refused connection was not closed")
    assert refusal(data)[0] == 503 and 65_536 < dropped[0] < 1_048_576


def test_a_refused_client_gone_before_its_refusal_is_closed_and_logs_no_error(extractor, caplog):  # noqa: F811
    """A client past --max-connections that sends its request and closes before the server takes its connection: the
    refusal written, the client's reset came before the end of the server's side, which failed, and the log held a
    traceback (``Transport endpoint is not connected``). The connection now closes at once."""
    config = ServeConfig(max_connections=1, head_timeout_s=60, keep_alive_s=60)
    settings, gone, closed = server.connection_settings(config), threading.Event(), threading.Event()

    class TakenLate(settings["http"]):
        """The server's protocol, taking a connection past the held one only once its client has gone (the loop held
        for it: events, not longer times), and saying when it closed."""

        def connection_made(self, transport) -> None:
            if self.connections:
                assert gone.wait(10)
            super().connection_made(transport)

        def connection_lost(self, exc: Exception | None) -> None:
            if self.connections - {self}:
                closed.set()
            super().connection_lost(exc)

    with running(create_app(extractor, config), **{**settings, "http": TakenLate}) as url, held_open(url):
        with socket.create_connection(address(url), timeout=10) as refused:
            refused.sendall(b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n")
        gone.set()
        assert closed.wait(10), "the refused connection was not closed"
    assert [record.getMessage() for record in caplog.records if record.levelno >= logging.ERROR] == []


class HeldTransport:
    """A connection's transport as asyncio's: what is written kept, and a close told to its protocol only when the test
    says (asyncio tells it on a later turn of the loop, after the connections accepted meanwhile are made)."""

    def __init__(self) -> None:
        self.written, self.closed = b"", False

    def write(self, data: bytes) -> None:
        self.written += data

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def can_write_eof(self) -> bool:
        return True

    def write_eof(self) -> None:
        pass

    def get_extra_info(self, name: str, default=None):
        return default


def test_a_refused_connection_still_closing_holds_no_place_among_those_open(monkeypatch):
    """A connection past --max-connections that may not linger is closed at once, and stays among uvicorn's open
    connections until asyncio tells its protocol it is gone: a connection made meanwhile, once a held one has closed,
    was refused 503 with none but itself held."""
    monkeypatch.setattr(connections, "MAX_LINGERING_REFUSALS", 0)  # every refusal closes at once
    protocol = connections.bounded_protocol(60, 1, None)
    config, state, loop = uvicorn.Config(create_app, http=protocol, ws="none", log_level="warning"), ServerState(), asyncio.new_event_loop()

    def made() -> tuple:
        connection, transport = protocol(config=config, server_state=state, app_state={}, _loop=loop), HeldTransport()
        connection.connection_made(transport)
        return connection, transport

    try:
        held, _ = made()
        refused, refused_transport = made()
        assert refused_transport.closed and refused_transport.written.startswith(b"HTTP/1.1 503 ")
        held.connection_lost(None)
        _, taken = made()  # before the refused one is told it is gone
        assert not taken.closed and taken.written == b""
        refused.connection_lost(None)
    finally:
        loop.close()


def test_a_refusal_lingering_when_the_server_stops_is_closed_at_once(extractor, monkeypatch):  # noqa: F811
    """A request refused while its body comes (a malformed chunk) lingers with its application's cycle unfinished,
    and uvicorn's shutdown waits for that request's answer, which never comes: the server stopped only once the linger
    ended (LINGER_S, here an hour). A lingering connection now closes as the server stops."""
    monkeypatch.setattr(connections, "LINGER_S", 3_600.0)
    config = ServeConfig(head_timeout_s=60, keep_alive_s=60)
    settings, closed = server.connection_settings(config), threading.Event()

    class Told(settings["http"]):
        """The server's protocol, saying when a lingering connection closes."""

        def connection_lost(self, exc: Exception | None) -> None:
            if self.lingering:
                closed.set()
            super().connection_lost(exc)

    with contextlib.ExitStack() as client:
        with running(create_app(extractor, config), **{**settings, "http": Told}) as url:  # stopped at the block's end
            sock = client.enter_context(socket.create_connection(address(url), timeout=10))
            sock.sendall(UNREADABLE["malformed chunk"][0])
            data = read_response(sock)  # the 400; the client keeps its side open
        assert closed.is_set(), "the server's stop waited for the linger's end"
    assert refusal(data)[0] == 400


def test_an_idle_connection_is_closed_after_the_keep_alive_time(extractor):  # noqa: F811
    """The keep-alive's time counts from the response's end, so however short it is the answer comes first."""
    with serving(extractor, keep_alive_s=0.1) as url, socket.create_connection(address(url), timeout=10) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n")
        data, seconds = read_until_closed(sock)
    assert data.startswith(b"HTTP/1.1 200 ") and seconds < 3


def test_an_unfinished_head_past_max_head_bytes_is_a_431_at_once(extractor):  # noqa: F811
    """The server holds at most --max-head-bytes of a head still coming: past it, a 431 in the JSON every refusal has
    and the connection closed, without waiting out --head-timeout-s."""
    with serving(extractor, max_head_bytes=2048, head_timeout_s=60) as url, socket.create_connection(address(url), timeout=10) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: localhost\r\nx-long: " + b"a" * 3000)
        data, seconds = read_until_closed(sock)
        assert httpx.get(url + "/health", headers={"x-long": "a" * 1000}, timeout=10).status_code == 200
    assert refusal(data) == (431, {"detail": "the request line and headers pass 2048 bytes: send shorter ones", "problems": [
        {"location": "request", "message": "the request line and headers pass 2048 bytes: send shorter ones"}]})
    assert seconds < 30


@pytest.mark.parametrize("pieces", [1, 2, 7])
def test_a_whole_head_past_max_head_bytes_is_a_431_however_it_arrives(extractor, pieces):  # noqa: F811
    """A head of 5,000 bytes with its blank line sent in one write (or in pieces, the last of which ends it while fewer
    than --max-head-bytes were still coming): it was answered, the limit holding only for a head still arriving."""
    head = b"GET /health HTTP/1.1\r\nHost: localhost\r\nx-long: " + b"a" * 5000 + b"\r\n\r\n"
    cuts = [2000 * piece // pieces for piece in range(pieces)] + [len(head)]  # those before the last hold 2,000 bytes in all
    config = ServeConfig(max_head_bytes=2048, head_timeout_s=60)
    settings, handed = server.connection_settings(config), threading.Semaphore(0)

    class Handed(settings["http"]):
        """The server's protocol, saying each time it has taken what its client sent: each piece is sent once the one
        before has been taken, so each is read apart (events, not times)."""

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            handed.release()

    app = create_app(extractor, config)
    with running(app, **{**settings, "http": Handed}) as url, socket.create_connection(address(url), timeout=10) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for begin, end in zip(cuts, cuts[1:]):
            sock.sendall(head[begin:end])
            assert handed.acquire(timeout=10), "the server took nothing of a piece"
        data, _ = read_until_closed(sock)
        assert httpx.get(url + "/health", headers={"x-long": "a" * 1000}, timeout=10).status_code == 200
    detail = "the request line and headers pass 2048 bytes: send shorter ones"
    assert refusal(data) == (431, {"detail": detail, "problems": [{"location": "request", "message": detail}]})


def test_a_head_of_max_head_bytes_is_answered():
    """The limit counts the request line, the headers and the blank line that ends them: a head of exactly that
    many bytes passes, one more byte is refused."""
    import h11

    for extra, refused in ((0, False), (1, True)):
        conn = connections.explained_connection()(h11.SERVER, 256)
        start = b"GET / HTTP/1.1\r\nHost: localhost\r\nx: "
        conn.receive_data(start + b"a" * (256 - len(start) - 4 + extra) + b"\r\n\r\n")
        if refused:
            with pytest.raises(h11.RemoteProtocolError) as raised:
                conn.next_event()
            assert raised.value.error_status_hint == 431
        else:
            assert isinstance(conn.next_event(), h11.Request)


POST_HEAD = b"POST /answer HTTP/1.1\r\nHost: localhost\r\ncontent-type: application/json\r\n"
UNREADABLE = {  # name: (what the client sends, status, detail)
    "no request line": (b"HELLO\r\n\r\n", 400, "illegal request line: b'HELLO'"),
    "no Host header": (b"GET /health HTTP/1.1\r\n\r\n", 400, "Missing mandatory Host: header"),
    "two lengths": (POST_HEAD + b"content-length: 2\r\ncontent-length: 3\r\n\r\n{}", 400, "conflicting Content-Length headers"),
    "negative length": (POST_HEAD + b"content-length: -2\r\n\r\n{}", 400, "bad Content-Length"),
    "malformed chunk": (POST_HEAD + b"transfer-encoding: chunked\r\n\r\n2\r\n{}\r\nzz\r\n", 400,
                        "illegal chunk header: b'zz\\r\\n'"),
    "gzip transfer coding": (POST_HEAD + b"transfer-encoding: gzip\r\n\r\n{}", 501,
                             "Only Transfer-Encoding: chunked is supported"),
}


@pytest.mark.parametrize("name", UNREADABLE)
def test_a_request_that_is_not_http_is_refused_in_json_naming_why_and_others_are_answered(extractor, name):  # noqa: F811
    """uvicorn answered what h11 cannot read with a bare 400 in plain text (and 400 where the status is 501); the
    refusal now names h11's reason in the JSON every refusal has."""
    sent, status, reason = UNREADABLE[name]
    with serving(extractor) as url, socket.create_connection(address(url), timeout=10) as sock:
        sock.sendall(sent)
        data, _ = read_until_closed(sock)
        assert httpx.post(url + "/answer", json=GOOD, timeout=60).status_code == 200
    detail = f"not a valid HTTP/1.1 request: {reason}"
    assert refusal(data) == (status, {"detail": detail, "problems": [{"location": "request", "message": detail}]})


HALF_CLOSED = {  # name: (what the client sends before it half-closes, the statuses of its answers)
    "GET": (b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n", [200]),
    "POST with a body": (POST_HEAD + b"content-length: %d\r\n\r\n%s" % (len(json.dumps(GOOD)), json.dumps(GOOD).encode()),
                         [200]),
    "two pipelined": (b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n" * 2, [200, 200]),
    "a bad one": (POST_HEAD + b"content-length: 2\r\n\r\n[]", [422]),
}


@pytest.mark.parametrize("name", HALF_CLOSED)
def test_a_client_that_half_closes_after_its_request_gets_its_answer(extractor, name):  # noqa: F811
    """A client that shuts down its sending side once its request is sent (netcat, some proxies) got no answer: the
    server closed the connection as soon as it read the end of what the client sent."""
    sent, statuses = HALF_CLOSED[name]
    with serving(extractor) as url, socket.create_connection(address(url), timeout=10) as sock:
        sock.sendall(sent)
        sock.shutdown(socket.SHUT_WR)
        data, _ = read_until_closed(sock)
    answers = []
    while data:
        head, _, rest = data.partition(b"\r\n\r\n")
        length = int(next(line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")))
        answers.append((int(head.split()[1]), json.loads(rest[:length])))
        data = rest[length:]
    assert [status for status, _ in answers] == statuses
    if name == "POST with a body":
        assert len(answers[0][1]["results"]) == 1


def test_a_client_that_half_closes_with_its_request_unfinished_is_closed_at_once(extractor):  # noqa: F811
    """Its request can never end: the connection closes, as before, unanswered and without waiting for the body."""
    with serving(extractor, request_timeout_s=30) as url, socket.create_connection(address(url), timeout=10) as sock:
        sock.sendall(POST_HEAD + b"content-length: 100\r\n\r\n{")
        sock.shutdown(socket.SHUT_WR)
        data, seconds = read_until_closed(sock)
        assert httpx.get(url + "/health", timeout=10).status_code == 200
    assert data == b"" and seconds < 10


def read_response(sock: socket.socket) -> bytes:
    """One whole response with a content-length, read from ``sock``."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(4096)
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(next(line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")))
    while len(body) < length:
        body += sock.recv(4096)
    return head + b"\r\n\r\n" + body


def test_a_body_malformed_after_its_answer_closes_the_connection_and_logs_no_error(extractor, caplog):  # noqa: F811
    """A GET answered while its chunked body still comes, the body then malformed: uvicorn wrote its 400 after the
    answer, which h11 refuses, and the log held a traceback (``protocol.data_received() call failed``)."""
    with serving(extractor) as url, socket.create_connection(address(url), timeout=10) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: localhost\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n")
        answer = read_response(sock)
        sock.sendall(b"zz\r\n\r\n")
        rest, _ = read_until_closed(sock)
        assert httpx.get(url + "/health", timeout=10).status_code == 200
    assert answer.startswith(b"HTTP/1.1 200 ") and rest == b""
    assert [record.getMessage() for record in caplog.records if record.levelno >= logging.ERROR] == []


def test_a_client_that_reads_none_of_its_responses_is_closed_and_its_place_comes_back(extractor, operator_lines):  # noqa: F811
    """A client that pipelines requests and never reads the answers: once the server's buffers to it were full, the
    request being answered waited for ever to be written, holding its place among --max-concurrent-requests (here
    one), and every other request was refused 503 for as long as the client kept its socket. Its connection is now
    closed once it has read nothing for --request-timeout-s, and the place comes back."""
    config = ServeConfig(max_concurrent_requests=1, request_timeout_s=0.2, head_timeout_s=60)
    app, settings = create_app(extractor, config), server.connection_settings(config)
    held, refused = threading.Event(), threading.Event()

    class RefusedFirst(settings["http"]):
        """The server's protocol, saying when the buffers to its client are full (an answer then waits to be written),
        its read timer's end held back until the first request below has been refused: that request must come while
        the held answer still waits, however loaded the machine (events, not longer times)."""

        def pause_writing(self) -> None:
            super().pause_writing()
            held.set()

        def read_timed_out(self) -> None:
            if refused.is_set():
                super().read_timed_out()
            else:
                self.read_timer = self.loop.call_later(0.01, self.read_timed_out)

    with running(app, **{**settings, "http": RefusedFirst}) as url, socket.socket() as reader:
        reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
        reader.connect(address(url))
        reader.setblocking(False)
        with contextlib.suppress(BlockingIOError):
            reader.send(b"GET /openapi.json HTTP/1.1\r\nHost: localhost\r\n\r\n" * 3000)  # megabytes of answers, never read
        deadline = time.monotonic() + 30
        assert held.wait(timeout=30), "the server's buffers to the client never filled"
        while not app.state.open_requests.open:  # the request whose answer waits (a slow answer alone is no sign)
            assert time.monotonic() < deadline
            time.sleep(0.005)
        statuses = [httpx.post(url + "/answer", json=GOOD, timeout=10).status_code]
        refused.set()
        while statuses[-1] != 200:
            assert time.monotonic() < deadline, f"answered {statuses[-1]} after {len(statuses)} tries"
            time.sleep(0.05)
            statuses.append(httpx.post(url + "/answer", json=GOOD, timeout=10).status_code)
    assert statuses[0] == 503
    assert "a client read none of its response for 0.2 s (--request-timeout-s): its connection closed" in operator_lines


def test_the_options_reach_uvicorn(monkeypatch):
    """``bio-mrc serve``'s connection options, read from its command line, are the settings uvicorn runs with."""
    args = build_parser().parse_args(["serve", "m", "--head-timeout-s", "2.5", "--keep-alive-s", "7", "--max-connections",
                                      "50", "--max-head-bytes", "4096", "--backlog", "64"])
    settings = server.connection_settings(config_from_args(ServeConfig, args))
    ran = []
    monkeypatch.setattr(uvicorn.Server, "run", lambda self, *args: ran.append(self.config))
    server.serve_until_stopped(_no_app, "127.0.0.1", 1, connections=settings)
    (config,) = ran
    assert (config.timeout_keep_alive, config.h11_max_incomplete_event_size, config.backlog) == (7, 4096, 64)
    config.load()
    protocol = config.http_protocol_class
    assert protocol.__name__ == "BoundedH11Protocol" and (protocol.head_timeout_s, protocol.max_connections) == (2.5, 50)


async def _no_app(scope, receive, send):
    raise AssertionError("never called")


def test_an_unchecked_uvicorn_runs_its_own_protocol_and_says_so(monkeypatch):
    """On a uvicorn these bounds were not checked on, the server runs h11 as uvicorn has it (the head's bytes, the
    keep-alive and the backlog still bounded), with a warning that names a reverse proxy for the rest."""
    monkeypatch.setattr(uvicorn, "__version__", "1.2.0")
    assert connections.bounded_protocol(1.0, 10) is None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        settings = server.connection_settings(ServeConfig())
    assert settings["http"] == "h11" and settings["timeout_keep_alive"] == 5
    (warning,) = caught
    assert warning.category is connections.ConnectionBoundsOffWarning and str(warning.message) == (
        "head_timeout_s and max_connections are off: uvicorn 1.2.0 is not a version these bounds were checked on; a "
        "reverse proxy in front bounds slow and idle clients (nginx: client_header_timeout)")


def test_serve_says_an_unchecked_uvicorn_in_one_line_naming_its_flags(monkeypatch, capsys):
    """The command printed Python's two lines naming the package's source; now one ``warning:`` line, as its others."""
    from bio_mrc.cli.console import input_warnings_as_lines
    from bio_mrc.cli.options import argument_flags

    monkeypatch.setattr(uvicorn, "__version__", "1.2.0")
    with input_warnings_as_lines(argument_flags(build_parser(), "serve")):
        server.connection_settings(ServeConfig())
    assert capsys.readouterr().err == (
        "warning: --head-timeout-s and --max-connections are off: uvicorn 1.2.0 is not a version these bounds were "
        "checked on; a reverse proxy in front bounds slow and idle clients (nginx: client_header_timeout)\n")


class FakeLimits:
    """``resource``'s open-file limit, as a test sets it."""

    RLIMIT_NOFILE, RLIM_INFINITY = 7, -1

    def __init__(self, soft: int, hard: int) -> None:
        self.limits = (soft, hard)

    def getrlimit(self, which: int) -> tuple[int, int]:
        return self.limits

    def setrlimit(self, which: int, limits: tuple[int, int]) -> None:
        self.limits = limits


def test_the_open_file_limit_is_raised_to_hold_the_connections(monkeypatch):
    """1,000 connections, 2,048 accepted at once, 128 of the server's own: 3,176 files, within the hard limit."""
    fake = FakeLimits(1024, 1 << 20)
    monkeypatch.setitem(__import__("sys").modules, "resource", fake)
    connections.make_room_for(1000, 2048)
    assert fake.limits == (3176, 1 << 20)
    connections.make_room_for(10, 10)  # already room: left as it is
    assert fake.limits == (3176, 1 << 20)


def test_connections_past_the_hard_limit_lower_the_bound_with_a_warning(monkeypatch):
    """A hard limit of 1,024 files, 100 accepted at once, 128 of the server's own: 796 connections fit, not 1,000."""
    fake = FakeLimits(256, 1024)
    monkeypatch.setitem(__import__("sys").modules, "resource", fake)
    with pytest.warns(connections.ConnectionsLoweredWarning) as caught:
        assert connections.make_room_for(1000, 100) == 796
    assert fake.limits == (1024, 1024)
    assert [str(warning.message) for warning in caught] == [
        "max_connections=1000 lowered to 796: with backlog=100 that is what 1024 open files hold (ulimit -n; at most 1024)"]


def _no_model(*args, **kwargs):
    raise ConfigError("no model")


def test_serve_names_the_flags_of_the_connections_it_lowers(monkeypatch, capsys):
    from bio_mrc.cli import main

    monkeypatch.setitem(__import__("sys").modules, "resource", FakeLimits(256, 1024))
    monkeypatch.setattr(server.AnswerExtractor, "from_pretrained", _no_model)
    assert main(["serve", "--model", "m", "--port", str(free_port()), "--max-connections", "1000", "--backlog", "100"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "warning: --max-connections 1000 lowered to 796: with --backlog 100 that is what 1024 open files hold (ulimit -n; "
        "at most 1024)", "error: no model"]


def test_a_backlog_the_hard_limit_cannot_hold_is_refused_before_the_model_loads(monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "resource", FakeLimits(256, 1024))
    monkeypatch.setattr(server.AnswerExtractor, "from_pretrained", lambda *a, **k: pytest.fail("the model was loaded"))
    with pytest.raises(ConfigError) as refused:
        server.run_server("m", ServeConfig(port=free_port(), max_connections=1000, backlog=1000))
    assert str(refused.value) == ("max_connections=1000 and backlog=1000 need about 2128 open files, and this process may "
                                  "open 1024 (ulimit -n; at most 1024): lower backlog or raise the limit")


def test_serve_names_the_flags_of_a_backlog_the_hard_limit_cannot_hold(monkeypatch, capsys):
    from bio_mrc.cli import main

    monkeypatch.setitem(__import__("sys").modules, "resource", FakeLimits(256, 1024))
    monkeypatch.setattr(server.AnswerExtractor, "from_pretrained", lambda *a, **k: pytest.fail("the model was loaded"))
    assert main(["serve", "--model", "m", "--port", str(free_port()), "--max-connections", "1000", "--backlog", "1000"]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "error: --max-connections 1000 and --backlog 1000 need about 2128 open files, and this process may open 1024 "
        "(ulimit -n; at most 1024): lower --backlog or raise the limit")


def test_a_client_still_writing_after_its_408_reads_the_refusal(extractor, operator_lines):  # noqa: F811
    """A client that keeps sending header lines past its head's time, reading nothing meanwhile, then reads: the 408
    is there, then the connection's end. The server goes on taking what the client sends after its refusal (seen
    here: its connection is handed those lines); closed at once, its kernel answers them with a reset, which fails
    the client's next write and can discard the refusal unread."""
    config = ServeConfig(head_timeout_s=0.3, keep_alive_s=60)
    settings, drained = server.connection_settings(config), threading.Event()

    class Draining(settings["http"]):
        """The server's protocol, saying when it is handed what its client sent after the refusal."""

        def data_received(self, data: bytes) -> None:
            if self.lingering:
                drained.set()
            super().data_received(data)

    app = create_app(extractor, config)
    with running(app, **{**settings, "http": Draining}) as url, socket.create_connection(address(url), timeout=10) as sock:
        sock.sendall(b"POST /answer HTTP/1.1\r\nHost: localhost\r\n")
        line = 0
        while not select.select([sock], [], [], 0.05)[0]:  # a header line every 0.05 s until the refusal has come
            sock.sendall(b"x-slow-%d: 1\r\n" % line)
            line += 1
        sock.sendall(b"x-late: 1\r\n")  # after the refusal, which is left unread
        assert drained.wait(30), "the server took nothing its client sent after the refusal"
        sock.sendall(b"x-later: 1\r\n")
        data, _ = read_until_closed(sock)
    status, body = refusal(data)
    assert status == 408 and body["detail"].startswith("the request line and headers were not all sent within 0.3 s")
    assert len(operator_lines) == 1
