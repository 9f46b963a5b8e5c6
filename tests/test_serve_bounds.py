"""bio-mrc serve bounds every request's work: body size (chunked too), time, clients that leave,
fair shares of the batches; and refuses JSON it will not read and Host headers naming other servers."""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import pytest
from fastapi.testclient import TestClient

from bio_mrc.serving import app as app_module
from bio_mrc.serving.app import create_app
from bio_mrc.serving.batching import DynamicBatcher
from bio_mrc.serving.config import ServeConfig
from bio_mrc.serving.guards import BodyGuard, HostGuard, allowed_host_names, host_name

from .test_serve import GOOD, extractor, model_dir, running  # noqa: F401  (fixtures)


def post(client, body: bytes | str, **headers):
    return client.post("/answer", content=body, headers={"content-type": "application/json", **headers})


# --- the body: read in pieces, never past the limit -----------------------------------------------

def test_a_chunked_body_is_refused_at_the_limit_without_reading_the_rest():
    """An endless chunked body: 413 once the limit is passed; what was read is the limit plus one chunk."""
    chunk, limit, offered = 64 * 1024, 1_000_000, []
    reached = []

    async def endless():
        offered.append(chunk)
        return {"type": "http.request", "body": b"x" * chunk, "more_body": True}

    async def send(message):
        reached.append(message)

    async def app(scope, receive, send):
        raise AssertionError("the application never sees an oversized body")

    guard = BodyGuard(app, limit)
    scope = {"type": "http", "method": "POST", "headers": [(b"content-type", b"application/json")]}
    asyncio.run(guard(scope, endless, send))
    assert reached[0]["status"] == 413 and "more than 1000000 bytes" in json.loads(reached[1]["body"])["detail"]
    assert limit < guard.bytes_read <= limit + chunk and sum(offered) == guard.bytes_read


def test_a_chunked_body_over_the_limit_gets_413_over_http(extractor):  # noqa: F811
    config = ServeConfig(max_batch_size=1, max_context_chars=100, max_question_chars=10)

    def chunks():
        yield b'{"question": "Who?", "context": "'
        for _ in range(200):  # 200 x 64 KiB: far beyond this server's limit of about 66 KB
            yield b"x" * 65536

    with running(create_app(extractor, config)) as url, httpx.Client(base_url=url, timeout=60) as client:
        try:
            response = client.post("/answer", content=chunks(), headers={"content-type": "application/json"})
        except httpx.TransportError:  # the server may close before the client has sent it all
            response = None
        after = client.post("/answer", json=GOOD)
    if response is not None:
        assert response.status_code == 413 and "sent in pieces" in response.json()["detail"]
    assert after.status_code == 200


# --- JSON the server will not read -------------------------------------------------------------------

STRICT = {  # name: (body, words of the 400's detail)
    "duplicate key": ('{"question": "Who?", "context": "Newton.", "question": "What?"}',
                      "the key 'question' appears twice"),
    "deep nesting": ('{"question": ' + "[" * 100_000 + "]" * 100_000 + ', "context": "x"}',
                     "nested deeper than 32 levels at character 44"),
    "moderate nesting": ('{"question": ' + "[" * 40 + "]" * 40 + ', "context": "x"}', "at character 44"),
    "huge integer": ('{"question": "Who?", "context": "[[[1", "top_k": ' + "9" * 5000 + "}",
                     "an integer of more than 32 digits at character 49"),
}


@pytest.mark.parametrize("name", STRICT)
def test_json_the_server_will_not_read_is_a_400_naming_where(extractor, name):  # noqa: F811
    body, words = STRICT[name]
    with TestClient(create_app(extractor), raise_server_exceptions=False) as client:
        response = post(client, body)
        fine = client.post("/answer", json=GOOD)
    assert response.status_code == 400 and words in response.json()["detail"], response.text
    assert fine.status_code == 200


def test_deep_brackets_inside_a_string_are_text():
    from bio_mrc.serving.guards import strict_json_problem

    assert strict_json_problem(json.dumps({"question": "[" * 100, "context": "\\\"{" * 50}).encode()) is None


# --- time, clients that leave, fairness ----------------------------------------------------------

@pytest.fixture
def slow_batches(monkeypatch):
    """Every forward pass takes 0.3 s more; the questions each ran, in order."""
    ran = []
    real = app_module.answer_batch

    def slow(extractor, requests):
        time.sleep(0.3)
        ran.extend(example.question for request in requests for example in request.examples)
        return real(extractor, requests)

    monkeypatch.setattr(app_module, "answer_batch", slow)
    return ran


def test_a_request_past_its_time_is_a_504_and_its_questions_are_dropped(extractor, slow_batches):  # noqa: F811
    config = ServeConfig(request_timeout_s=0.5, max_batch_chars=1, max_wait_ms=0)
    questions = [f"Who {i}?" for i in range(8)]
    with TestClient(create_app(extractor, config), raise_server_exceptions=False) as client:
        response = client.post("/answer", json={"question": questions, "context": "Newton wrote it."})
        time.sleep(0.7)  # any batch already running ends
        ran_then = len(slow_batches)
        time.sleep(0.7)
    assert response.status_code == 504 and "--request-timeout-s" in response.json()["detail"]
    assert len(slow_batches) == ran_then < len(questions)  # one batch per question: the rest never ran


def test_work_for_a_client_that_hangs_up_is_cancelled(extractor, slow_batches):  # noqa: F811
    config = ServeConfig(max_batch_chars=1, max_wait_ms=0)  # one question per forward pass
    questions = [f"Who {i}?" for i in range(10)]
    with running(create_app(extractor, config)) as url:
        with httpx.Client(base_url=url, timeout=0.45) as client, pytest.raises(httpx.TimeoutException):
            client.post("/answer", json={"question": questions, "context": "Newton wrote it."})
        time.sleep(1.0)  # the server notices within 50 ms; a batch already running ends
        ran_then = len(slow_batches)
        time.sleep(1.0)
        with httpx.Client(base_url=url, timeout=30) as client:
            assert client.post("/answer", json=GOOD).status_code == 200
    assert ran_then <= 4 and len(slow_batches) == ran_then + 1  # of ten; then only the next request's


def test_a_short_request_is_not_held_behind_another_clients_long_ones():
    """Ten costly items of one owner, then one cheap item of another: the cheap one runs in the
    second batch, not the eleventh (the batches are filled owner by owner, least served first)."""
    batches = []

    def run(items):
        batches.append(list(items))
        return items

    async def main():
        batcher = DynamicBatcher(run, max_batch_size=32, max_wait=0.01, max_batch_cost=100)
        await batcher.start()
        try:
            greedy = [batcher.submit(f"long {i}", 1, "greedy", 100) for i in range(10)]
            await asyncio.sleep(0)
            return await asyncio.gather(*greedy, batcher.submit("short", 1, "polite", 5))
        finally:
            await batcher.stop()

    results = asyncio.run(main())
    assert results[-1] == "short" and len(batches) == 11
    assert batches[1] == ["short"] and all(len(batch) == 1 for batch in batches)


def test_a_cancelled_item_is_never_run():
    ran = []

    async def main():
        batcher = DynamicBatcher(lambda items: ran.extend(items) or items, max_batch_size=4, max_wait=0.05)
        await batcher.start()
        try:
            left = asyncio.ensure_future(batcher.submit("left", 1, "a"))
            stays = asyncio.ensure_future(batcher.submit("stays", 1, "b"))
            await asyncio.sleep(0)
            left.cancel()
            return await stays
        finally:
            await batcher.stop()

    assert asyncio.run(main()) == "stays" and ran == ["stays"]


# --- the Host header -----------------------------------------------------------------------------

def test_only_hosts_naming_this_server_are_answered(extractor):  # noqa: F811
    names = allowed_host_names("127.0.0.1", "")
    assert names == {"localhost", "127.0.0.1", "::1"}
    assert allowed_host_names("0.0.0.0", "*") is None and allowed_host_names("x", "a.example, B.example") == {
        "a.example", "b.example"}
    assert [host_name(h) for h in ("[::1]:8000", "LocalHost:80", "::1", "evil.example")] == [
        "::1", "localhost", "::1", "evil.example"]
    app = HostGuard(create_app(extractor), names)
    with TestClient(app, base_url="http://localhost:8000") as client:
        for host in ("localhost:8000", "127.0.0.1:8000", "[::1]:8000", "localhost"):
            assert client.get("/health", headers={"host": host}).status_code == 200, host
        for host in ("evil.example", "evil.example:8000", "localhost.evil.example", ""):
            refused = client.get("/health", headers={"host": host})
            assert refused.status_code == 400 and "--allowed-hosts" in refused.json()["detail"], host
