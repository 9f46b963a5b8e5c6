"""bio-mrc serve refuses, in the JSON every refusal has, what a request's line and headers ask that it cannot do: an
HTTP version other than 1.0 and 1.1 (505), an expectation other than 100-continue (417), a body in a content coding
(415), a WebSocket (400), each before the Host header is checked; and a path it does not serve, a near miss of /answer
included, is a 404 naming the path meant."""

from __future__ import annotations

import contextlib
import gzip
import json
import socket

import httpx
import pytest
from fastapi.testclient import TestClient
from starlette.testclient import WebSocketDenialResponse

from bio_mrc.serving import server
from bio_mrc.serving.app import create_app
from bio_mrc.serving.config import ServeConfig
from bio_mrc.serving.helper_process import HelperProcess
from bio_mrc.serving.request_head import unmet_head

from .test_serve import GOOD, extractor, model_dir, operator_lines, running  # noqa: F401  (fixtures)
from .test_serve_connections import address, free_port, read_until_closed, refusal, serving

OFFERED = "it answers POST /answer, GET /health (its API is described at /docs)"


def refused(status: int, detail: str, location: str) -> tuple[int, dict]:
    return status, {"detail": detail, "problems": [{"location": location, "message": detail}]}


@pytest.mark.parametrize("version", [b"9.9", b"2.0", b"0.9"])
def test_an_http_version_other_than_1_0_and_1_1_is_a_505_in_json(extractor, version):  # noqa: F811
    """uvicorn answered ``GET /health HTTP/9.9`` with a 200, as if it were 1.1."""
    with serving(extractor) as url:
        with socket.create_connection(address(url), timeout=10) as sock:
            sock.sendall(b"GET /health HTTP/%s\r\nHost: localhost\r\n\r\n" % version)
            data, _ = read_until_closed(sock)
        with socket.create_connection(address(url), timeout=10) as sock:
            sock.sendall(b"GET /health HTTP/1.0\r\nHost: localhost\r\n\r\n")
            older, _ = read_until_closed(sock)
    detail = f"HTTP/{version.decode()} is not a version this server speaks: send the request as HTTP/1.1"
    assert refusal(data) == refused(505, detail, "request")
    assert older.split(b"\r\n")[0] == b"HTTP/1.1 200 OK"


def test_an_expectation_other_than_100_continue_is_a_417_before_the_body_is_read(extractor):  # noqa: F811
    with TestClient(create_app(extractor, ServeConfig(max_batch_size=4))) as client:
        odd = client.post("/answer", json=GOOD, headers={"expect": "bananas"})
        mixed = client.post("/answer", json=GOOD, headers={"expect": "100-continue, x-more"})
        met = client.post("/answer", json=GOOD, headers={"expect": "100-Continue"})
    detail = ("the request expects {} (its Expect header), which this server does not do: send it without that "
              "expectation (100-continue alone is met)")
    assert (odd.status_code, odd.json()) == refused(417, detail.format("'bananas'"), "request")
    assert (mixed.status_code, mixed.json()["detail"]) == (417, detail.format("'x-more'"))
    assert met.status_code == 200


def test_a_body_in_a_content_coding_is_a_415_naming_it_and_identity_is_read(extractor):  # noqa: F811
    """A gzipped body was read as it came: ``the body is not UTF-8 JSON: invalid start byte at byte 1``."""
    body = json.dumps(GOOD).encode()
    with TestClient(create_app(extractor, ServeConfig(max_batch_size=4))) as client:
        zipped = client.post("/answer", content=gzip.compress(body),
                             headers={"content-type": "application/json", "content-encoding": "gzip"})
        two = client.post("/answer", content=body, headers={"content-type": "application/json",
                                                            "content-encoding": "identity, br"})
        plain = client.post("/answer", content=body, headers={"content-type": "application/json",
                                                              "content-encoding": "Identity"})
    detail = ("the body's content-encoding is 'gzip', which this server does not decode: send the body uncompressed, "
              "without a content-encoding header")
    assert (zipped.status_code, zipped.json()) == refused(415, detail, "body")
    assert zipped.headers["accept-encoding"] == "identity" and zipped.headers["connection"] == "close"
    assert (two.status_code, two.json()["detail"]) == (415, detail.replace("'gzip'", "'br'"))
    assert plain.status_code == 200


def test_what_a_request_head_asks_is_read_as_http_lists_are():
    def head(version="1.1", **headers):
        return {"type": "http", "http_version": version,
                "headers": [(name.replace("_", "-").encode(), value.encode()) for name, value in headers.items()]}

    assert unmet_head(head(expect="100-continue, ,", content_encoding=" , identity")) is None
    assert unmet_head(head("2")) is None and unmet_head(head("3")) is None  # an ASGI server's HTTP/2 and HTTP/3
    assert unmet_head(head("1.2"))[0] == 505 and unmet_head(head("x" * 30))[1].startswith("HTTP/" + "x" * 20 + "… is")
    assert unmet_head(head(expect="100-continue", content_encoding="gzip"))[0] == 415


@pytest.mark.parametrize("path, hint", [("/answer/", " (did you mean /answer?)"), ("/Answer", " (did you mean /answer?)"),
                                        ("/v1/answer", " (did you mean /answer?)"), ("/healthz", " (did you mean /health?)"),
                                        ("/admin", "")])
def test_a_path_not_served_is_a_404_naming_the_path_meant(extractor, path, hint):  # noqa: F811
    """``POST /answer/`` got FastAPI's 307 redirect with no body: a client that does not follow redirects for a POST
    read nothing, and one that does sent its body twice."""
    with TestClient(create_app(extractor, ServeConfig(max_batch_size=4)), follow_redirects=False) as client:
        response = client.post(path, json=GOOD)
    detail = f"no path {path!r} on this server{hint}; {OFFERED}"
    assert (response.status_code, response.json()) == refused(404, detail, "path")


def test_a_near_miss_of_answer_is_a_404_over_http_too(extractor):  # noqa: F811
    with serving(extractor) as url:
        response = httpx.post(url + "/answer/", json=GOOD, timeout=60)
    assert response.status_code == 404 and response.json()["detail"] == (
        f"no path '/answer/' on this server (did you mean /answer?); {OFFERED}")


@contextlib.contextmanager
def served(monkeypatch, extractor):  # noqa: F811
    """The application ``run_server`` serves (its middleware and uvicorn settings), under uvicorn: its base URL."""
    calls = []
    monkeypatch.setattr(server.AnswerExtractor, "from_pretrained", lambda *args, **kwargs: extractor)
    monkeypatch.setattr(HelperProcess, "start", lambda self: None)  # it starts with its first work, if any comes
    monkeypatch.setattr(server, "serve_until_stopped", lambda app, host, port, **options: calls.append((app, options)))
    server.run_server("tiny-joint", ServeConfig(port=free_port()))
    ((app, options),) = calls
    with running(app, **options["connections"]) as url:
        yield url


def sent_raw(url: str, request: bytes) -> bytes:
    """What the server answers ``request`` before it closes the connection."""
    with socket.create_connection(address(url), timeout=10) as sock:
        sock.sendall(request)
        data, _ = read_until_closed(sock)
    return data


WEBSOCKET = (b"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
             b"Sec-WebSocket-Version: 13\r\n")
NO_WEBSOCKETS = ("the request asks to switch to a WebSocket (its Upgrade header), which this server does not speak: it "
                 "answers HTTP requests with JSON bodies; send the request without Upgrade: websocket (POST /answer takes "
                 "the questions)")


@pytest.mark.parametrize("path", ["/answer", "/health", "/nowhere"])
def test_a_websocket_handshake_is_a_400_in_json_saying_the_server_speaks_none(monkeypatch, extractor, path):  # noqa: F811
    """It got Starlette's 403 with an empty body, which reads as a permission refused and says nothing of why."""
    with served(monkeypatch, extractor) as url:
        data = sent_raw(url, b"GET %s HTTP/1.1\r\nHost: localhost\r\n%s\r\n" % (path.encode(), WEBSOCKET))
        lowered = sent_raw(url, b"GET %s HTTP/1.1\r\nHost: localhost\r\n%s\r\n" % (path.encode(), WEBSOCKET.lower()))
        # another protocol offered (curl --http2 on http://) is ignored, as HTTP allows: the request is answered
        h2c = sent_raw(url, b"GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade, HTTP2-Settings, close\r\n"
                            b"Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n")
    assert refusal(data) == refused(400, NO_WEBSOCKETS, "request") == refusal(lowered)
    assert h2c.startswith(b"HTTP/1.1 200 OK\r\n") and json.loads(h2c.partition(b"\r\n\r\n")[2])["status"] == "ok"


def test_a_websocket_handshake_reaching_the_application_is_refused_so_too(extractor):  # noqa: F811
    """``create_app`` under an ASGI server that speaks WebSocket (uvicorn with wsproto installed, Starlette's test
    client) answered Starlette's bare 403."""
    with TestClient(create_app(extractor, ServeConfig(max_batch_size=4))) as client:
        with pytest.raises(WebSocketDenialResponse) as denied:
            client.websocket_connect("/answer").__enter__()
    assert (denied.value.status_code, denied.value.json()) == refused(400, NO_WEBSOCKETS, "request")


def test_a_websocket_is_asked_by_upgrade_and_connection_together():
    def head(**headers):
        return {"type": "http", "headers": [(name.encode(), value.encode()) for name, value in headers.items()]}

    assert unmet_head(head(upgrade="WebSocket/13, h2c", connection="keep-alive, Upgrade"))[0] == 400
    assert unmet_head(head(upgrade="websocket")) is None  # no Connection: upgrade, no switch asked of this hop
    assert unmet_head(head(upgrade="h2c", connection="upgrade")) is None


@pytest.mark.parametrize("problem, status", [(b"GET /health HTTP/9.9\r\n", 505),
                                             (b"GET /health HTTP/1.1\r\nExpect: bananas\r\n", 417),
                                             (b"POST /answer HTTP/1.1\r\nContent-Encoding: gzip\r\n", 415),
                                             (b"GET /health HTTP/1.1\r\n" + WEBSOCKET, 400)])
def test_what_a_request_head_asks_is_refused_before_its_host_is_checked(monkeypatch, extractor, problem, status):  # noqa: F811
    """A request with a Host naming another server and a version, expectation or coding the server cannot honour was
    refused for its Host; HTTP reads the version, then the expectation and the framing, before the request's target."""
    with served(monkeypatch, extractor) as url:
        data = sent_raw(url, problem + b"Host: evil.example\r\nContent-Length: 0\r\n\r\n")
        host_alone = sent_raw(url, b"GET /health HTTP/1.1\r\nHost: evil.example\r\n\r\n")
    assert refusal(data)[0] == status and "Host" not in refusal(data)[1]["detail"]
    assert refusal(host_alone) == refused(400, "the Host header 'evil.example' names no host this server answers to: send "
                                               "one of 127.0.0.1, ::1, localhost", "body")
