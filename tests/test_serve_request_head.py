"""bio-mrc serve refuses, in the JSON every refusal has, what a request's line and headers ask that it cannot do: an
HTTP version other than 1.0 and 1.1 (505), an expectation other than 100-continue (417), a body in a content coding
(415); and a path it does not serve, a near miss of /answer included, is a 404 naming the path meant."""

from __future__ import annotations

import gzip
import json
import socket

import httpx
import pytest
from fastapi.testclient import TestClient

from bio_mrc.serving.app import create_app
from bio_mrc.serving.config import ServeConfig
from bio_mrc.serving.request_head import unmet_head

from .test_serve import GOOD, extractor, model_dir, operator_lines, running  # noqa: F401  (fixtures)
from .test_serve_connections import address, read_until_closed, refusal, serving

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
