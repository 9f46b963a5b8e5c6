"""bio-mrc serve against slow and idle clients: a request head not all sent in time is a 408 and its connection closed,
connections past --max-connections are refused at once, idle and oversized ones end as configured; real sockets."""

from __future__ import annotations

import json
import socket
import threading
import time
import warnings

import httpx
import pytest
import uvicorn

from bio_mrc.cli import build_parser
from bio_mrc.config_options import config_from_args
from bio_mrc.errors import ConfigError, InputWarning
from bio_mrc.serving import connections, server
from bio_mrc.serving.app import create_app
from bio_mrc.serving.config import ServeConfig

from .test_serve import GOOD, extractor, model_dir, running  # noqa: F401  (fixtures)


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
def test_a_request_head_not_all_sent_in_time_is_a_408_and_the_connection_closed(extractor, client):  # noqa: F811
    """A connection that sends nothing, one that sends a header line every 0.1 s, and one that begins a second request
    after its first is answered and never finishes it: each gets a 408 in the JSON every refusal has and is closed
    (well within ten times --head-timeout-s), while another client is answered."""
    stop = threading.Event()
    with serving(extractor, head_timeout_s=0.5, keep_alive_s=60) as url, socket.create_connection(address(url), timeout=10) as sock:
        if client == "trickling":
            threading.Thread(target=trickle, args=(sock, stop), daemon=True).start()
        elif client == "next request unfinished":
            sock.sendall(b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n")
            first = sock.recv(65536)
            assert first.startswith(b"HTTP/1.1 200 ")
            sock.sendall(b"GET /health HTTP/1.1\r\nHost: local")
        assert httpx.post(url + "/answer", json=GOOD, timeout=60).status_code == 200
        data, seconds = read_until_closed(sock)
        stop.set()
    status, body = refusal(data)
    assert status == 408 and seconds < 5
    assert body["detail"] == "the request line and headers were not all sent within 0.5 s (--head-timeout-s): send them at once"


def test_a_head_sent_in_time_is_answered_and_its_connection_kept_alive(extractor):  # noqa: F811
    """The head's time covers the head alone: a request whose head comes at once is answered, however long its
    connection then stays open within --keep-alive-s, and a second request on it is answered too."""
    with serving(extractor, head_timeout_s=0.3, keep_alive_s=60) as url:
        with httpx.Client(base_url=url, timeout=60) as client:
            assert client.get("/health").status_code == 200
            time.sleep(0.6)  # twice the head's time, idle between requests: the keep-alive's time, not the head's
            assert client.post("/answer", json=GOOD).status_code == 200


def test_connections_past_the_limit_are_refused_at_once_and_room_comes_back(extractor):  # noqa: F811
    with serving(extractor, max_connections=3, head_timeout_s=60) as url:
        held = [socket.create_connection(address(url), timeout=10) for _ in range(3)]
        with socket.create_connection(address(url), timeout=10) as one_more:
            data, _ = read_until_closed(one_more)
        status, body = refusal(data)
        assert status == 503 and b"\r\nretry-after: 1\r\n" in data
        assert body["detail"] == ("the server holds as many connections as it takes at once (3, --max-connections): "
                                  "try again shortly")
        for sock in held:
            sock.close()
        deadline = time.monotonic() + 10
        while httpx.get(url + "/health", timeout=10).status_code != 200:  # the closed ones leave as the server sees them go
            assert time.monotonic() < deadline
            time.sleep(0.05)


def test_an_idle_connection_is_closed_after_the_keep_alive_time(extractor):  # noqa: F811
    with serving(extractor, keep_alive_s=0.3) as url, socket.create_connection(address(url), timeout=10) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n")
        data, seconds = read_until_closed(sock)
    assert data.startswith(b"HTTP/1.1 200 ") and seconds < 3


def test_an_unfinished_head_past_max_head_bytes_is_a_400_at_once(extractor):  # noqa: F811
    """The server holds at most --max-head-bytes of a head still coming: past it, a 400 and the connection closed,
    without waiting out --head-timeout-s."""
    with serving(extractor, max_head_bytes=2048, head_timeout_s=60) as url, socket.create_connection(address(url), timeout=10) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: localhost\r\nx-long: " + b"a" * 3000)
        data, seconds = read_until_closed(sock)
        assert httpx.get(url + "/health", headers={"x-long": "a" * 1000}, timeout=10).status_code == 200
    assert data.startswith(b"HTTP/1.1 400 ") and seconds < 30


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
    assert warning.category is InputWarning and str(warning.message) == (
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
    with pytest.warns(InputWarning) as caught:
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
