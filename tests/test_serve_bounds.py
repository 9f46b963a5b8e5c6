"""bio-mrc serve bounds every request's work: body size (chunked too), time, clients that leave,
fair shares of the batches; and refuses JSON it will not read and Host headers naming other servers."""

from __future__ import annotations

import asyncio
import email.message
import gc
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import weakref

import httpx
import pytest
from fastapi.testclient import TestClient

from bio_mrc.features.config import estimated_windows
from bio_mrc.serving import answering as answering_module
from bio_mrc.serving.answering import Question, answer_batch
from bio_mrc.serving.app import create_app
from bio_mrc.serving.batching import DynamicBatcher, SharedWorker
from bio_mrc.serving.config import ServeConfig
from bio_mrc.serving.guards import (
    LARGE_BODY_BYTES, BodyGuard, HostGuard, StrictJson, allowed_host_names, host_name, names_json, off_loop,
)
from bio_mrc.serving.scheduler import AnswerScheduler
from bio_mrc.serving.windows import question_windows

from .test_serve import GOOD, assert_same_answer, extractor, model_dir, operator_lines, running  # noqa: F401  (fixtures)


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


def _guarded(guard, body_parts, reached):
    """``guard`` answering one POST whose body comes in ``body_parts``, then never ends (a client that stalls)."""
    parts = list(body_parts)

    async def receive():
        if parts:
            return {"type": "http.request", "body": parts.pop(0), "more_body": True}
        await asyncio.Event().wait()  # the rest never comes

    async def send(message):
        reached.append(message)

    scope = {"type": "http", "method": "POST", "headers": [(b"content-type", b"application/json")]}
    return guard(scope, receive, send)


def test_a_body_not_all_sent_within_the_request_time_is_a_408(operator_lines):  # noqa: F811
    """A client that declares a body, or chunks one, and stops sending: refused once the request's time is up, not
    held for ever; the refusal tells the client what to do, the log names the option for the operator."""
    async def app(scope, receive, send):
        raise AssertionError("the application never sees a body that did not all come")

    reached = []
    started = time.monotonic()
    asyncio.run(_guarded(BodyGuard(app, 1000, timeout_s=0.2), [b'{"que', b"stion"], reached))
    assert 0.2 <= time.monotonic() - started < 2
    detail = json.loads(reached[1]["body"])["detail"]
    assert reached[0]["status"] == 408
    assert detail == "the body was not all sent within 0.2 s, 10 bytes of it came: send the whole body at once"
    assert operator_lines == ["a request's body was not all sent within 0.2 s (--request-timeout-s): answered 408"]


def test_a_client_that_stops_sending_its_body_gets_a_408_over_http_and_others_are_answered(extractor):  # noqa: F811
    config = ServeConfig(request_timeout_s=0.5)
    with running(create_app(extractor, config)) as url:
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=10) as stalled:
            stalled.sendall(b"POST /answer HTTP/1.1\r\nHost: localhost\r\ncontent-type: application/json\r\n"
                            b"content-length: 1000\r\n\r\n" + b'{"question"')
            started, answer = time.monotonic(), b""
            while chunk := stalled.recv(4096):
                answer += chunk
        assert time.monotonic() - started < 5 and answer.startswith(b"HTTP/1.1 408 ")
        assert b"within 0.5 s, 11 bytes of it came" in answer
        assert httpx.post(url + "/answer", json=GOOD, timeout=60).status_code == 200
    (guard,) = [middleware for middleware in create_app(extractor, ServeConfig(max_bodies_bytes=123)).user_middleware
                if middleware.cls is BodyGuard]
    assert guard.kwargs["budget"] == 123 and guard.kwargs["timeout_s"] == 60

def test_bodies_held_at_once_stay_within_the_budget(operator_lines):  # noqa: F811
    """Bodies being read or answered hold at most the budget between them: a body that would pass it is a 503 with
    Retry-After; the bytes of a body answered (or refused) are given back, so the next body fits again."""
    answering, release, seen = asyncio.Event(), asyncio.Event(), []

    async def app(scope, receive, send):
        seen.append((await receive())["body"])
        answering.set()
        await release.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    guard = BodyGuard(app, limit=100, budget=150)

    def one(body: bytes, reached: list):
        async def receive():
            return {"type": "http.request", "body": body, "more_body": False}

        async def send(message):
            reached.append(message)

        return guard({"type": "http", "method": "POST", "headers": []}, receive, send)

    async def scenario():
        first, second, third = [], [], []
        holding = asyncio.ensure_future(one(b"a" * 100, first))
        await answering.wait()
        assert guard.held == 100
        await one(b"b" * 60, second)  # 100 + 60 > 150
        release.set()
        await holding
        assert guard.held == 0
        await one(b"c" * 60, third)
        return first, second, third

    first, second, third = asyncio.run(scenario())
    assert first[0]["status"] == 200 and third[0]["status"] == 200 and seen == [b"a" * 100, b"c" * 60]
    assert second[0]["status"] == 503 and (b"retry-after", b"1") in second[0]["headers"]
    assert json.loads(second[1]["body"])["detail"] == ("the server holds as many bytes of other requests' bodies as it "
                                                       "takes at once: try again shortly")
    assert operator_lines == ["the bodies of the requests being read or answered fill 150 bytes (--max-bodies-bytes): "
                              "more are answered 503"]
    assert guard.held == 0
    assert BodyGuard(app, limit=100, budget=10).budget == 100  # one largest valid body always fits


# --- requests open at once ---------------------------------------------------------------------------

def _http_scope(method: str = "POST", path: str = "/answer") -> dict:
    return {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method, "scheme": "http",
            "path": path, "raw_path": path.encode(), "root_path": "", "query_string": b"", "client": ("127.0.0.1", 1),
            "server": ("localhost", 80), "headers": [(b"host", b"localhost"), (b"content-type", b"application/json")]}


async def _good_body():
    return {"type": "http.request", "body": json.dumps(GOOD).encode(), "more_body": False}


async def _stalls():  # a body that never comes
    await asyncio.Event().wait()


async def _leaves():  # a client that hangs up before sending its body
    return {"type": "http.disconnect"}


async def _never():
    raise AssertionError("a refused request's body is never read")


def test_requests_past_the_limit_get_a_json_503_unread_and_the_count_always_comes_back(extractor, monkeypatch, operator_lines):  # noqa: F811
    """With one request allowed open: a second is refused (503, JSON, Retry-After) before any of its body is read;
    the count comes back to zero after a client that leaves, a request cancelled mid-body and one that fails; then
    requests are answered again. uvicorn's own limit answered such a request in plain text."""
    app = create_app(extractor, ServeConfig(max_concurrent_requests=1))
    count = app.state.open_requests

    async def call(receive, method="POST", path="/answer"):
        sent = []

        async def send(message):
            sent.append(message)

        await app(_http_scope(method, path), receive, send)
        return sent

    async def scenario():
        async with app.router.lifespan_context(app):
            held = asyncio.ensure_future(call(_stalls))
            await asyncio.sleep(0)  # it enters, and waits for its body
            assert count.open == 1
            refused = await call(_never)
            probe = await call(_never, "GET", "/health")  # a liveness probe is answered, however busy
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as client:
                over_http = await client.post("/answer", json=GOOD)
            held.cancel()
            await asyncio.gather(held, return_exceptions=True)
            after_cancel = count.open
            await call(_leaves)
            after_leaving = count.open
            monkeypatch.setattr(AnswerScheduler, "answer", lambda *args: 1 / 0)
            with pytest.raises(ZeroDivisionError):  # answered 500, then raised on to the server to log
                await call(_good_body)
            after_error = count.open
            monkeypatch.undo()
            answered = await call(_good_body)
            return refused, probe, over_http, (after_cancel, after_leaving, after_error, count.open), answered

    refused, probe, over_http, counts, answered = asyncio.run(scenario())
    assert probe[0]["status"] == 200
    for start, body in (refused,):
        assert start["status"] == 503 and (b"retry-after", b"1") in start["headers"]
        assert (b"content-type", b"application/json") in start["headers"]
        detail = json.loads(body["body"])["detail"]
        assert detail == "the server is reading or answering as many requests as it takes at once: try again shortly"
    assert operator_lines == ["1 request at once, the most the server reads or answers (--max-concurrent-requests): "
                              "more are answered 503"]  # once, for both refusals
    assert over_http.status_code == 503 and over_http.headers["retry-after"] == "1"
    assert over_http.json()["problems"] == [{"location": "body", "message": over_http.json()["detail"]}]
    assert counts == (0, 0, 0, 0)
    assert answered[0]["status"] == 200
    assert ServeConfig().max_concurrent_requests == 256


def test_a_refusal_stays_short_whatever_the_body_holds(extractor, operator_lines):  # noqa: F811
    """More texts than a request may ask are a 413, and more unknown fields than a refusal lists one 422, before any is
    validated; otherwise a refusal lists ten problems and counts the rest, each location cut to 200 characters: a
    900 KB body of 300,000 questions of the wrong type got a 24 MB answer, after seconds of the event loop."""
    with TestClient(create_app(extractor, ServeConfig(max_batch_size=4))) as client:
        many = post(client, json.dumps({"question": [1] * 1000, "context": "x"}))
        documents = post(client, json.dumps({"question": "Who?", "context": [""] * 50}))
        unknown = post(client, json.dumps({**GOOD, **{f"field{i}": 0 for i in range(25)}}))
        long_name = post(client, json.dumps({**GOOD, "k" * 1000: 0}))
        wrong = post(client, json.dumps({"question": ["Who?"] * 4, "context": [7] * 4, **{f"f{i}": 0 for i in range(10)},
                                         "top_k": "x", "threshold": "y", "decoding": 3, "multi_span": 4}))
        assert post(client, json.dumps(GOOD)).status_code == 200
    assert many.status_code == 413 and many.json()["detail"] == (
        "1000 questions in one request; this server answers at most 4 a request: send them in requests of at most 4")
    assert operator_lines == ["a request asked 1000 questions, more than 4 (--max-batch-size): answered 413"]  # once a minute
    assert documents.status_code == 413 and documents.json()["detail"].startswith("50 documents for one question")
    assert unknown.status_code == 422 and unknown.json()["detail"].startswith(
        '25 unknown fields ("field0", "field1", "field2", …); a request has only the fields context, decoding, ')
    problems = wrong.json()["problems"]
    # 18 problems: four options, four contexts, ten unknown fields (as many as a refusal lists)
    assert wrong.status_code == 422 and len(problems) == 11 and "body.context[3]" in {p["location"] for p in problems}
    assert problems[10] == {"location": "body", "message": "and 8 more problems not listed"}
    (problem,) = long_name.json()["problems"]
    assert long_name.status_code == 422 and problem["location"] == "body." + "k" * 195 + "… (1005 characters)"


# --- JSON the server will not read -------------------------------------------------------------------

STRICT = {  # name: (body, words of the 400's detail)
    "duplicate key": ('{"question": "Who?", "context": "Newton.", "question": "What?"}',
                      'the key "question" appears twice'),
    "deep nesting": ('{"question": ' + "[" * 100_000 + "]" * 100_000 + ', "context": "x"}',
                     "nested deeper than 32 levels at character 44"),
    "moderate nesting": ('{"question": ' + "[" * 40 + "]" * 40 + ', "context": "x"}', "at character 44"),
    "huge integer": ('{"question": "Who?", "context": "[[[1", "top_k": ' + "9" * 5000 + "}",
                     "an integer of more than 32 digits at character 49"),
}


# A body of LARGE_BODY_BYTES or more is parsed in the helper process: a Python start, so the slow tier (tests/conftest.py).
HELPER_PROCESS = "starts the helper process"


@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.slow) if len(STRICT[name][0]) >= LARGE_BODY_BYTES else name
                                  for name in STRICT])
def test_json_the_server_will_not_read_is_a_400_naming_where(extractor, name):  # noqa: F811
    body, words = STRICT[name]
    with TestClient(create_app(extractor), raise_server_exceptions=False) as client:
        response = post(client, body)
        fine = client.post("/answer", json=GOOD)
    assert response.status_code == 400 and words in response.json()["detail"], response.text
    assert fine.status_code == 200


def test_deep_brackets_inside_a_string_are_text():
    from bio_mrc.serving.guards import read_strict_json

    document = {"question": "[" * 100, "context": "\\\"{" * 50}
    assert read_strict_json(json.dumps(document).encode()) == StrictJson(parsed=True, document=document)


@pytest.mark.parametrize("body, read", [
    (b'{"a": 1}', StrictJson(parsed=True, document={"a": 1})),
    (b'{"a": 1, "a": 2}', StrictJson('body: the key "a" appears twice in one object (JSON leaves which to keep undefined)')),
    (b'{"a": ', StrictJson()),  # syntax: the application's 422, with its position
    (b'{"a": "\xff"}', StrictJson()),  # not UTF-8: the application's 400
    (b'null', StrictJson(parsed=True, document=None)),
])
def test_a_strict_read_refuses_parses_or_leaves_to_the_application(body, read):
    from bio_mrc.serving.guards import read_strict_json

    assert read_strict_json(body) == read



@pytest.mark.parametrize("content_type, json_", [
    ("application/json", True), ("application/json; charset=utf-8", True), ("APPLICATION/JSON", True),
    ("application/problem+json", True), ("application/json\xa0", True), ("application/json\x85", True),
    ("text/plain", False), ("application/jsonx", False), ("(c)application/x+json", False)])
def test_the_guard_reads_as_json_what_fastapi_reads_as_json(content_type, json_):
    """FastAPI's email parser strips a trailing no-break space or NEL: a body sent so was read as JSON, unchecked."""
    message = email.message.Message()
    message["content-type"] = content_type
    subtype = message.get_content_subtype()
    read_by_fastapi = message.get_content_maintype() == "application" and (subtype == "json" or subtype.endswith("+json"))
    assert names_json(content_type) == read_by_fastapi == json_


def test_a_duplicate_key_sent_with_a_content_type_ending_in_a_no_break_space_is_a_400_over_http(extractor):  # noqa: F811
    body = b'{"question": "Who?", "context": "Newton.", "question": "What?"}'
    with running(create_app(extractor)) as url:
        port = int(url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
            sock.sendall(b"POST /answer HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\xa0\r\n"
                         b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (len(body), body))
            reply = b"".join(iter(lambda: sock.recv(65536), b""))
    head, _, payload = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400"), reply
    assert 'the key "question" appears twice' in json.loads(payload)["detail"]

# --- time, clients that leave, fairness ----------------------------------------------------------

MANY_WINDOWS = " ".join(["The Normans were famed for their martial spirit and built castles across England."] * 18)


def slowed_passes(monkeypatch, delays, only=None):
    """Forward passes that take ``delays[i]`` seconds more (the last delay for every later pass; ``only``: the passes
    whose first question is that one, the others as they are); what each pass ran, in order: one (question, windows)
    pair per chunk."""
    passes = []
    real = answering_module.run_chunks

    def slow(runner, chunks, *args):
        if only is None or chunks[0].windows.examples[0].question == only:
            time.sleep(delays[min(len(passes), len(delays) - 1)])
        passes.append([(chunk.windows.examples[0].question, len(chunk)) for chunk in chunks])
        return real(runner, chunks, *args)

    monkeypatch.setattr(answering_module, "run_chunks", slow)
    return passes


def first_pass_held(monkeypatch):
    """Forward passes recorded as :func:`slowed_passes` records them, the first held on the steps' thread until
    ``release`` is set: what a test asks once ``running`` is set is asked while that pass runs, however loaded the
    machine (events, not times). Returns (passes, running, release)."""
    passes, running, release = [], threading.Event(), threading.Event()
    real = answering_module.run_chunks

    def held(runner, chunks, *args):
        if not running.is_set():
            running.set()
            release.wait(10)  # released once the test has asked what it asks meanwhile, or the test has failed
        passes.append([(chunk.windows.examples[0].question, len(chunk)) for chunk in chunks])
        return real(runner, chunks, *args)

    monkeypatch.setattr(answering_module, "run_chunks", held)
    return passes, running, release


async def until_set(event: threading.Event, what: str) -> None:
    """Wait, off the event loop, for ``event`` (set on another thread); a hang guard, no measurement."""
    assert await asyncio.to_thread(event.wait, 60), what


@pytest.fixture
def slow_passes(monkeypatch):
    """Every forward pass takes 0.3 s more; the chunks each ran."""
    return slowed_passes(monkeypatch, [0.3])


def windows_of(extractor, question, context):  # noqa: F811
    examples, _ = extractor.examples(question, context)
    return len(question_windows(extractor.trained, [examples])[0])


def test_a_request_past_its_time_is_a_504_and_its_windows_are_dropped(extractor, monkeypatch, operator_lines):  # noqa: F811
    """Its first forward pass held until the 504 is in: by then none of its other windows waits in the passes' queue,
    so none runs after (the server's stop then waits for the held pass alone)."""
    passes, _, release = first_pass_held(monkeypatch)
    config = ServeConfig(request_timeout_s=0.5, max_batch_size=1, max_wait_ms=0)  # one window per forward pass
    app = create_app(extractor, config)
    with TestClient(app, raise_server_exceptions=False) as client:
        try:
            response = client.post("/answer", json={"question": "Who built forts?", "context": MANY_WINDOWS})
            still_queued = app.state.scheduler.passes.has_waiting
        finally:
            release.set()
    assert response.status_code == 504 and response.json()["detail"] == (
        "the request took longer than 0.5 s; its questions not yet answered were dropped: send fewer or shorter ones")
    assert operator_lines == ["a request took longer than 0.5 s (--request-timeout-s): answered 504"]
    assert not still_queued and len(passes) <= 1 < windows_of(extractor, "Who built forts?", MANY_WINDOWS)


@pytest.mark.slow  # over 3 s alone on 2 cores
def test_work_for_a_client_that_hangs_up_is_cancelled(extractor, slow_passes):  # noqa: F811
    config = ServeConfig(max_batch_size=1, max_wait_ms=0)  # one window per forward pass
    with running(create_app(extractor, config)) as url:
        with httpx.Client(base_url=url, timeout=0.45) as client, pytest.raises(httpx.TimeoutException):
            client.post("/answer", json={"question": "Who built forts?", "context": MANY_WINDOWS})
        time.sleep(1.0)  # the server notices within 50 ms; a pass already running ends
        ran_then = len(slow_passes)
        time.sleep(1.0)
        with httpx.Client(base_url=url, timeout=30) as client:
            assert client.post("/answer", json=GOOD).status_code == 200
    assert ran_then <= 4 and len(slow_passes) == ran_then + 1  # of more than ten; then only the next request's
    assert windows_of(extractor, "Who built forts?", MANY_WINDOWS) > 10


@pytest.mark.parametrize("max_wait_ms", [0, 10_000])
def test_a_short_question_runs_in_the_pass_after_the_one_running_not_after_a_long_questions_windows(extractor, monkeypatch, max_wait_ms):  # noqa: F811
    """A long question's windows run in chunks: a short question asked while its first chunk runs is read when that
    pass ends, then runs in the very next pass (reading and passes take turns on one thread, each step chosen when
    the thread is free), not after the long question's other chunks; both answers are the extractor's. A reading
    step waits for company only while the worker would idle: not while the long question's passes are due."""
    passes, running, release = first_pass_held(monkeypatch)
    long, short = ("Who built forts?", MANY_WINDOWS), (GOOD["question"], GOOD["context"])
    config = ServeConfig(max_batch_size=2, max_wait_ms=max_wait_ms, max_batch_chars=len(long[0]) + len(long[1]))

    async def main():  # the long question alone fills a reading step: it waits for no company
        scheduler = AnswerScheduler(extractor, config)
        await scheduler.start()
        try:
            greedy = asyncio.ensure_future(scheduler.answer(question(extractor, *long), "greedy"))
            await until_set(running, "the long question's first chunk never ran")
            polite = asyncio.ensure_future(scheduler.answer(question(extractor, *short), "polite"))
            await asyncio.sleep(0)  # it is queued, to be read, while that pass runs
            assert scheduler.windows.has_waiting
            release.set()
            return await greedy, await polite
        finally:
            release.set()
            await scheduler.stop()

    (got_long,), (got_short,) = asyncio.run(main())
    windows = windows_of(extractor, *long)
    assert passes[0] == [(long[0], 2)] and passes[1][0] == (short[0], 1)  # the short one next, first
    assert all(sum(size for _, size in ran) <= 2 for ran in passes)  # at most --max-batch-size windows a pass
    assert sum(size for ran in passes for text, size in ran if text == long[0]) == windows > 10  # each window once
    assert_same_answer(got_long, extractor(*long, decoding="joint"))
    assert_same_answer(got_short, extractor(*short, decoding="joint"))


def test_a_request_cancelled_mid_question_runs_no_more_of_its_chunks(extractor, monkeypatch):  # noqa: F811
    passes, running, release = first_pass_held(monkeypatch)

    async def main():
        scheduler = AnswerScheduler(extractor, ServeConfig(max_batch_size=2, max_wait_ms=0))
        await scheduler.start()
        try:
            left = asyncio.ensure_future(scheduler.answer(question(extractor, "Who built forts?", MANY_WINDOWS), "a"))
            await until_set(running, "its first chunk never ran")
            left.cancel()  # while its first chunk runs
            await asyncio.sleep(0)
            release.set()
            deadline = time.monotonic() + 30
            while not passes or scheduler.passes.has_waiting:  # that pass ends, and nothing of it waits to run after
                assert time.monotonic() < deadline, "the held pass never ended or the queue never drained"
                await asyncio.sleep(0.005)
            return await scheduler.answer(question(extractor, GOOD["question"], GOOD["context"]), "b")
        finally:
            release.set()
            await scheduler.stop()

    (answer,) = asyncio.run(main())
    assert passes == [[("Who built forts?", 2)], [(GOOD["question"], 1)]]  # of more than ten windows, two ran
    assert_same_answer(answer, extractor(GOOD["question"], GOOD["context"], decoding="joint"))



def test_a_long_questions_decoding_does_not_hold_back_a_short_question(extractor, monkeypatch):  # noqa: F811
    """Decoding a question of many windows (seconds, for a context of millions of characters) ran on the thread that
    reads questions and runs every forward pass: a short question asked meanwhile waited for all of it. It is answered
    while that decoding still runs, and both answers are the extractor's."""
    decoding, release, decoded, real = threading.Event(), threading.Event(), threading.Event(), extractor.predict

    def held(outputs, examples, *args, **kwargs):
        if examples[0].context == MANY_WINDOWS:
            decoding.set()
            release.wait(10)  # released once the short answer is in, or the test has failed
            decoded.set()
        return real(outputs, examples, *args, **kwargs)

    monkeypatch.setattr(extractor, "predict", held)
    long, short = ("Who built forts?", MANY_WINDOWS), (GOOD["question"], GOOD["context"])

    async def main():
        scheduler = AnswerScheduler(extractor, ServeConfig(max_batch_size=2, max_wait_ms=0))
        await scheduler.start()
        try:
            greedy = asyncio.ensure_future(scheduler.answer(question(extractor, *long), "greedy"))
            while not decoding.is_set():
                await asyncio.sleep(0.01)
            polite = await scheduler.answer(question(extractor, *short), "polite")
            still_decoding = not decoded.is_set()
            release.set()
            return await greedy, polite, still_decoding
        finally:
            release.set()
            await scheduler.stop()

    (got_long,), (got_short,), still_decoding = asyncio.run(main())
    assert still_decoding
    assert_same_answer(got_long, extractor(*long, decoding="joint"))
    assert_same_answer(got_short, extractor(*short, decoding="joint"))


@pytest.mark.parametrize("options", [{"top_k": 3}, {"multi_span": True}])
def test_one_question_over_documents_is_decoded_a_document_at_a_time(extractor, monkeypatch, options):  # noqa: F811
    """Every document was decoded in one call, its memory that of all of them at once (gigabytes, for a few
    documents of millions of characters), where the extractor decodes a slice of them at a time. The ranked
    answers are the extractor's."""
    documents = ["The Normans came from Normandy.", MANY_WINDOWS, "Newton wrote a book in Cambridge."]
    asked, real = [], extractor.predict

    def counted(outputs, examples, *args, **kwargs):
        asked.append(len({example.context for example in examples}))  # the documents whose windows it decodes
        return real(outputs, examples, *args, **kwargs)

    examples, _ = extractor.examples("Who built forts?", documents)
    monkeypatch.setattr(extractor, "predict", counted)
    top_k = options.get("top_k")
    (served,) = answer_batch(extractor, [Question(examples, "joint", options.get("multi_span", False), top_k, True)])
    monkeypatch.undo()
    assert asked and set(asked) == {1}
    want = extractor("Who built forts?", documents, decoding="joint", **options)
    assert [(a.document, a.text, a.start) for a in served[0].answers] == [(a.document, a.text, a.start) for a in want.answers]
    assert [a.score for a in served[0].answers] == pytest.approx([a.score for a in want.answers])

SHORT_QUESTIONS = [("Who wrote it?", "Newton wrote it."), ("What did Newton write?", "Newton wrote a book."),
                   ("Where was he?", "He lived in Cambridge."), ("When?", "It was 1687."), ("Who?", "Halley paid.")]


def counted_reads(monkeypatch):
    """The questions each reading step read, in order."""
    reads = []
    real = answering_module.question_windows

    def reading(trained, questions, requests, read=None):
        reads.append([question[0].question for question in questions])
        return real(trained, questions, requests, read)

    monkeypatch.setattr(answering_module, "question_windows", reading)
    return reads


def ask_all(extractor, config, delays):  # noqa: F811
    """Each short question asked ``delays[i]`` seconds after the start, of one scheduler; their answers."""
    async def main():
        scheduler = AnswerScheduler(extractor, config)
        await scheduler.start()

        async def ask(pair, delay):
            await asyncio.sleep(delay)
            return await scheduler.answer(question(extractor, *pair), pair)

        try:
            return await asyncio.gather(*(ask(pair, delay) for pair, delay in zip(SHORT_QUESTIONS, delays)))
        finally:
            await scheduler.stop()

    return asyncio.run(main())


def test_short_questions_waiting_together_are_read_in_one_step_and_run_in_one_pass(extractor, monkeypatch):  # noqa: F811
    passes, reads = slowed_passes(monkeypatch, [0.0]), counted_reads(monkeypatch)
    answers = ask_all(extractor, ServeConfig(max_batch_size=8, max_wait_ms=0), [0.0] * 5)
    assert reads == [[text for text, _ in SHORT_QUESTIONS]]  # one tokenizer call
    assert len(passes) == 1 and len(passes[0]) == 5  # one forward pass of the five questions' windows
    for (got,), pair in zip(answers, SHORT_QUESTIONS):
        assert_same_answer(got, extractor(*pair, decoding="joint"))


def test_questions_asked_while_others_are_read_join_their_forward_pass(extractor, monkeypatch):  # noqa: F811
    """The first question is read alone, its reading held until two more are queued, and 0.25 s more. Its forward
    pass, not full, waits for their reading (it is pending, and within --max-wait-ms) and runs all three at once.
    Each step waits up to --max-wait-ms from its first item's arrival: the two questions' reading falls due 0.25 s
    before the first one's pass would, room for a loaded machine to wake the worker late (with both due, the pass
    would go first)."""
    passes, reads = slowed_passes(monkeypatch, [0.0]), counted_reads(monkeypatch)
    reading, release, real = threading.Event(), threading.Event(), answering_module.question_windows

    def held(*args, **kwargs):
        if not reading.is_set():
            reading.set()
            release.wait(10)  # released once the others are queued, or the test has failed
        return real(*args, **kwargs)

    monkeypatch.setattr(answering_module, "question_windows", held)

    async def main():
        scheduler = AnswerScheduler(extractor, ServeConfig(max_batch_size=8, max_wait_ms=300))
        await scheduler.start()
        ask = [asyncio.ensure_future(scheduler.answer(question(extractor, *pair), pair)) for pair in SHORT_QUESTIONS[:1]]
        try:
            await until_set(reading, "the first question was never read")
            ask += [asyncio.ensure_future(scheduler.answer(question(extractor, *pair), pair)) for pair in SHORT_QUESTIONS[1:3]]
            await asyncio.sleep(0)  # they are queued, to be read, while the first reading runs
            assert scheduler.windows.has_waiting
            await asyncio.sleep(0.25)
            release.set()
            return await asyncio.gather(*ask)
        finally:
            release.set()
            await scheduler.stop()

    answers = asyncio.run(main())
    texts = [text for text, _ in SHORT_QUESTIONS[:3]]
    assert reads == [texts[:1], texts[1:]]
    assert [sorted(text for text, _ in ran) for ran in passes] == [sorted(texts)]
    for (got,), pair in zip(answers, SHORT_QUESTIONS):
        assert_same_answer(got, extractor(*pair, decoding="joint"))


def test_a_batch_not_full_waits_only_while_what_would_fill_it_is_being_read():
    async def main():
        worker = SharedWorker("test-steps")
        reads = DynamicBatcher(lambda items: items, max_batch_size=4, max_wait=10.0, worker=worker)
        passes = DynamicBatcher(lambda items: items, max_batch_size=4, max_wait=10.0, worker=worker, fed_by=reads)
        await worker.start()
        try:  # the worker's loop cannot run before the next await: nothing is taken meanwhile
            passes.enqueue("chunk")
            arrived = next(iter(passes._waiting)).arrived
            due = [passes.due()]  # nothing being read: at once
            reads.enqueue("question")
            due.append(passes.due())  # a question being read: until the chunk has waited max_wait
            for _ in range(3):
                passes.enqueue("chunk")
            due.append(passes.due())  # full: at once
            return [when - arrived for when in due]
        finally:
            await worker.stop()

    assert asyncio.run(main()) == [0.0, 10.0, 0.0]


@pytest.mark.slow(reason=HELPER_PROCESS)
def test_a_question_longer_than_a_step_is_read_apart_and_holds_no_short_one_back(extractor, monkeypatch):  # noqa: F811
    """A question of more than --max-batch-chars is tokenized in a queue of its own: a short question asked while it
    is being read is answered before that reading ends."""
    events, reading_long, release = [], threading.Event(), threading.Event()
    real = answering_module.question_windows

    def reading(trained, questions, requests, read=None):
        long = sum(len(example.context) for question in questions for example in question) > 500
        events.append("long read starts" if long else "short read")
        if long:
            reading_long.set()
            release.wait(10)  # released once the short answer is in, or the test has failed
            events.append("long read ends")
        return real(trained, questions, requests, read)

    monkeypatch.setattr(answering_module, "question_windows", reading)

    async def main():
        scheduler = AnswerScheduler(extractor, ServeConfig(max_batch_chars=500, max_wait_ms=0))
        await scheduler.start()
        try:
            greedy = asyncio.ensure_future(scheduler.answer(question(extractor, "Who built forts?", MANY_WINDOWS), "a"))
            await until_set(reading_long, "the long question was never read")
            polite = await scheduler.answer(question(extractor, GOOD["question"], GOOD["context"]), "b")
            events.append("short answered")
            release.set()
            return await greedy, polite
        finally:
            release.set()
            await scheduler.stop()

    (got_long,), (got_short,) = asyncio.run(main())
    assert events == ["long read starts", "short read", "short answered", "long read ends"]
    assert_same_answer(got_long, extractor("Who built forts?", MANY_WINDOWS, decoding="joint"))
    assert_same_answer(got_short, extractor(GOOD["question"], GOOD["context"], decoding="joint"))


def question(extractor, text, context):  # noqa: F811
    examples, _ = extractor.examples(text, context)
    return Question(examples, "joint")


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


def test_a_long_questions_chunk_runs_in_a_pass_of_its_own():
    """A chunk limited to passes of 2: the short item asked with it, though it would fit the batch size, waits for
    the next pass; short items share passes as before."""
    batches = []

    async def main():
        batcher = DynamicBatcher(lambda items: batches.append(list(items)) or items, max_batch_size=8, max_wait=0.01)
        await batcher.start()
        try:
            chunk = batcher.enqueue("chunk", 2, "long", 2, limit=2)
            shorts = [batcher.enqueue(f"short {i}", 1, f"short {i}", 1) for i in range(3)]
            return await asyncio.gather(chunk, *shorts)
        finally:
            await batcher.stop()

    asyncio.run(main())
    assert batches == [["chunk"], ["short 0", "short 1", "short 2"]]


def test_a_long_question_runs_in_chunks_of_about_long_pass_ms(extractor, monkeypatch):  # noqa: F811
    """Before any pass a long question's chunks are full passes; once passes are measured (here 0.25 s a window), a
    chunk holds what runs in --long-pass-ms (at least one window), each in a pass of its own; the answer is the
    extractor's whichever the chunks. 0.75 s over a pass of 0.25 s and its own time is 2 windows for any pass time
    up to 0.125 s, so a loaded machine gives the same chunks."""
    slowed_passes(monkeypatch, [0.25], only=GOOD["question"])  # the long question's own passes run at their speed
    long = ("Who built forts?", MANY_WINDOWS)

    async def main(long_pass_ms, answer_long):
        scheduler = AnswerScheduler(extractor, ServeConfig(max_batch_size=4, long_pass_ms=long_pass_ms))
        await scheduler.start()
        try:
            windows = question_windows(extractor.trained, [question(extractor, *long).examples])[0]
            before = [(len(chunk), limit) for chunk, limit in scheduler.chunks_of(windows)]
            await scheduler.answer(question(extractor, GOOD["question"], GOOD["context"]), "short")  # 1 window, >= 0.1 s
            after = [(len(chunk), limit) for chunk, limit in scheduler.chunks_of(windows)]
            return before, after, await scheduler.answer(question(extractor, *long), "long") if answer_long else None
        finally:
            await scheduler.stop()

    before, after, (answer,) = asyncio.run(main(long_pass_ms=750, answer_long=True))
    assert sum(size for size, _ in before) == sum(size for size, _ in after) == windows_of(extractor, *long) > 10
    assert {limit for _, limit in before} == {size for size, _ in before[:-1]} == {4}  # nothing measured: full passes
    assert {limit for _, limit in after} == {2} and {size for size, _ in after[:-1]} == {2}  # 0.75 s / (0.25 s and the pass itself)
    assert_same_answer(answer, extractor(*long, decoding="joint"))
    assert {limit for _, limit in asyncio.run(main(long_pass_ms=50, answer_long=False))[1]} == {1}  # at least one window


@pytest.mark.slow(reason=HELPER_PROCESS)
def test_long_questions_are_read_and_large_bodies_parsed_in_the_helper_process(extractor):  # noqa: F811
    """The helper starts only when a long question or a large body needs it, runs in a process of its own, and
    what it reads or parses is what the server's own process would."""
    config = ServeConfig(max_batch_chars=500, max_wait_ms=0)
    body = json.dumps({"question": "Who?", "context": "x" * LARGE_BODY_BYTES}).encode()

    async def main():
        scheduler = AnswerScheduler(extractor, config)
        await scheduler.start()
        try:
            await scheduler.answer(question(extractor, GOOD["question"], GOOD["context"]), "short")
            started_for_short = scheduler.helper.executor is not None
            (long,) = await scheduler.answer(question(extractor, "Who built forts?", MANY_WINDOWS), "long")
            parsed = await off_loop(json.loads, body, scheduler.helper)
            return started_for_short, long, parsed, await scheduler.helper.run(os.getpid)
        finally:
            await scheduler.stop()

    started_for_short, long, parsed, helper_pid = asyncio.run(main())
    assert not started_for_short and helper_pid != os.getpid()
    assert_same_answer(long, extractor("Who built forts?", MANY_WINDOWS, decoding="joint"))
    assert parsed == json.loads(body)


@pytest.mark.slow(reason=HELPER_PROCESS)
def test_a_helper_process_that_dies_fails_its_work_and_is_replaced():
    from concurrent.futures.process import BrokenProcessPool

    from bio_mrc.serving.helper_process import HelperProcess

    helper = HelperProcess()
    try:
        first = helper.submit(os.getpid).result(60)
        os.kill(first, signal.SIGKILL)
        answers = []
        for _ in range(2):  # the call that finds it dead fails (or, once the pool has noticed, starts a new one)
            try:
                answers.append(helper.submit(os.getpid).result(60))
            except BrokenProcessPool:
                answers.append(None)
        assert answers[-1] not in (None, first, os.getpid())
    finally:
        helper.stop()


ORPHANED_SCRIPT = """import os, sys, threading, time
from bio_mrc.serving.helper_process import HelperProcess
helper, pids = HelperProcess(), []
start = threading.Thread(target=lambda: pids.append(helper.submit(os.getpid).result(60)))
if sys.argv[1] == "another thread":
    start.start()
    start.join()  # the starting thread ends; the helper goes on working for the server
else:
    start.run()
print(pids[0], helper.submit(os.getpid).result(60) == pids[0], flush=True)
time.sleep(600)
"""


def _gone(pid: int) -> bool:
    """Whether ``pid`` has exited (a zombie no process reaped counts: it holds no files and runs nothing)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True
    except OSError:  # no /proc: ask the OS whether the pid is still there
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False


@pytest.mark.slow(reason=HELPER_PROCESS)
@pytest.mark.parametrize("started_in", ["the main thread", "another thread"])
def test_the_helper_process_ends_when_the_server_is_killed(tmp_path, started_in):
    """A server killed outright (SIGKILL: an orchestrator's grace spent, the OOM killer) stops no helper; the helper
    ends anyway, so the server's standard error, which it shares, reaches its end for whoever reads it."""
    script = tmp_path / "server.py"
    script.write_text(ORPHANED_SCRIPT)
    with subprocess.Popen([sys.executable, str(script), started_in], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, cwd=tmp_path) as server:  # its pipes closed at the end
        helper = None
        try:
            pid, same = server.stdout.readline().split()
            helper = int(pid)
            assert same == "True"
            server.kill()
            server.wait(60)
            read_to_end = threading.Thread(target=server.stderr.read, daemon=True)
            read_to_end.start()
            read_to_end.join(30)  # a hang guard: the helper ends within a second or so
            assert not read_to_end.is_alive(), "the server's standard error is still held open"
            for _ in range(150):  # a hang guard as well
                if _gone(helper):
                    break
                time.sleep(0.1)
            assert _gone(helper)
        finally:
            server.kill()
            if helper is not None and not _gone(helper):
                os.kill(helper, signal.SIGKILL)


UNGUARDED_SCRIPT = """import os
from bio_mrc.serving.helper_process import HelperProcess
print("script ran", flush=True)
helper = HelperProcess()
print("helper pid differs:", helper.submit(os.getpid).result(60) != os.getpid(), flush=True)
helper.stop()
"""


@pytest.mark.slow
@pytest.mark.parametrize("how", ["file", "stdin"])
def test_the_helper_never_runs_the_callers_script_again(tmp_path, how):
    """A script without a __main__ guard, or one read from standard input, starts the helper: the script runs once
    (spawning would otherwise import it again in the helper) and the helper answers."""
    script = tmp_path / "serve_it.py"
    script.write_text(UNGUARDED_SCRIPT)
    command, stdin = ([sys.executable, str(script)], None) if how == "file" else ([sys.executable, "-"], UNGUARDED_SCRIPT)
    result = subprocess.run(command, input=stdin, capture_output=True, text=True, timeout=180, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.splitlines() == ["script ran", "helper pid differs: True"]


# --- a stop -----------------------------------------------------------------------------------------

def test_closing_a_batcher_lets_the_batch_running_finish_and_fails_what_waits_at_once():
    from bio_mrc.serving.batching import Stopping

    started, release = threading.Event(), threading.Event()

    def run(items):
        started.set()
        release.wait(30)
        return items

    async def main():
        batcher = DynamicBatcher(run, max_batch_size=1, max_wait=0)
        await batcher.start()
        try:
            running = batcher.enqueue("running")
            await asyncio.to_thread(started.wait, 30)
            queued = batcher.enqueue("queued")
            batcher.close()
            assert isinstance(queued.exception(), Stopping)  # at once, not after the batch running
            with pytest.raises(Stopping):
                batcher.enqueue("asked after")
            release.set()
            return await running
        finally:
            release.set()
            await batcher.stop()

    assert asyncio.run(main()) == "running"


def test_a_request_to_a_stopping_server_is_a_503_saying_so(extractor):  # noqa: F811
    app = create_app(extractor, ServeConfig(max_wait_ms=0))
    with TestClient(app) as client:
        assert client.post("/answer", json=GOOD).status_code == 200
        app.state.scheduler.close()  # what a stop does first
        response = client.post("/answer", json=GOOD)
    assert response.status_code == 503 and response.headers["retry-after"] == "1"
    assert response.headers["connection"] == "close"
    body = response.json()
    assert body["detail"].startswith("the server is stopping: this request's questions not yet answered were dropped")
    assert body["problems"] == [{"location": "body", "message": body["detail"]}]


def test_a_request_cut_at_the_end_of_a_stops_grace_is_a_503_saying_so(operator_lines):
    """uvicorn cancels the requests still running when a stop's grace ends: one whose response has not begun (its
    body still coming) is answered 503, not uvicorn's 500; one whose response has begun is left to end as it can."""
    from bio_mrc.serving.server import CutAtStop

    async def cut(respond_first):
        sent = []

        async def app(scope, receive, send):
            if respond_first:
                await send({"type": "http.response.start", "status": 200, "headers": []})
            await receive()  # a body that never comes

        async def send(message):
            sent.append(message)

        task = asyncio.ensure_future(CutAtStop(app)({"type": "http"}, asyncio.Event().wait, send))
        await asyncio.sleep(0.01)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return sent, task.cancelled()

    sent, cancelled = asyncio.run(cut(respond_first=False))
    assert not cancelled and sent[0]["status"] == 503 and (b"retry-after", b"1") in sent[0]["headers"]
    assert json.loads(sent[1]["body"])["detail"] == (
        "the server is stopping: this request was not all sent or answered in the time it gives requests to end; send it "
        "again (to another server, or to this one once it is back)")
    assert operator_lines == ["a request was still being sent or answered when the stop's grace ended (--stop-grace-s): "
                              "answered 503"]
    sent, cancelled = asyncio.run(cut(respond_first=True))
    assert cancelled and [message["status"] for message in sent] == [200]


# --- the Host header -----------------------------------------------------------------------------

def test_only_hosts_naming_this_server_are_answered(extractor, operator_lines):  # noqa: F811
    names = allowed_host_names("127.0.0.1", "")
    assert names == {"localhost", "127.0.0.1", "::1"}
    assert allowed_host_names("0.0.0.0", "*") is None and allowed_host_names("x", "a.example, B.example") == {
        "a.example", "b.example"}
    assert [host_name(h) for h in ("[::1]:8000", "LocalHost:80", "::1", "evil.example", "localhost:")] == [
        "::1", "localhost", "::1", "evil.example", "localhost"]
    # what follows the name is a port or nothing: anything else names no host of this server
    tricks = ("[::1]evil.example", "[::1].evil.example", "[::1]:80evil", "localhost:80@evil.example", "localhost:8o")
    assert [host_name(h) for h in tricks] == [h.lower() for h in tricks]
    app = HostGuard(create_app(extractor), names)
    with TestClient(app, base_url="http://localhost:8000") as client:
        for host in ("localhost:8000", "127.0.0.1:8000", "[::1]:8000", "localhost"):
            assert client.get("/health", headers={"host": host}).status_code == 200, host
        for host in ("evil.example", "evil.example:8000", "localhost.evil.example", "", *tricks):
            refused = client.get("/health", headers={"host": host})
            assert refused.status_code == 400 and refused.json()["detail"] == (
                f"the Host header {host!r} names no host this server answers to: send one of 127.0.0.1, ::1, localhost"), host
    # the client reads what it can do; the flag that adds names is the operator's, in the log
    assert operator_lines == ["a request's Host header named 'evil.example', no host this server answers to "
                              "(--allowed-hosts adds others): answered 400"]


# --- large bodies off the event loop -------------------------------------------------------------

def test_a_large_body_is_parsed_in_another_thread_a_small_one_inline():
    threads = []

    def parse(body):
        threads.append(threading.get_ident())
        return len(body)

    async def main():
        return await off_loop(parse, b"x" * 10), await off_loop(parse, b"x" * LARGE_BODY_BYTES), threading.get_ident()

    small, large, loop_thread = asyncio.run(main())
    assert (small, large) == (10, LARGE_BODY_BYTES) and threads[0] == loop_thread != threads[1]


@pytest.mark.slow(reason=HELPER_PROCESS)
def test_a_large_body_read_off_the_loop_is_refused_and_answered_as_a_small_one(extractor, monkeypatch):  # noqa: F811
    """A valid body is parsed once, by the guard: the route takes its document (one trip to the helper, not two)."""
    from bio_mrc.serving import app as app_module

    parsed_by_the_route = []
    parse_in_route = app_module.off_loop
    monkeypatch.setattr(app_module, "off_loop", lambda *args: parsed_by_the_route.append(args) or parse_in_route(*args))
    context, padding = "Newton wrote it.", " " * LARGE_BODY_BYTES  # JSON whitespace: a large body, a context quick to answer
    body = '{"question": "Who wrote it?", "context": "' + context + '"' + padding + "}"
    with TestClient(create_app(extractor), raise_server_exceptions=False) as client:
        broken = post(client, body[:-1])
        duplicate = post(client, '{"question": "Who?", "question": "Who?", "context": "' + context + '"' + padding + "}")
        parsed_by_the_route.clear()  # the broken body: its syntax error is the route's to answer (422)
        answered = post(client, body)
        small = client.post("/answer", json=GOOD)
    assert len(body) > LARGE_BODY_BYTES and json.loads(body) == {"question": "Who wrote it?", "context": context}
    assert broken.status_code == 422 and "not valid JSON" in broken.json()["detail"]
    assert duplicate.status_code == 400 and "appears twice" in duplicate.json()["detail"]
    assert answered.status_code == 200 and small.status_code == 200 and parsed_by_the_route == []
    assert_same_answer(answered.json()["results"][0], extractor("Who wrote it?", context))


# --- a request of many long questions, a slice at a time ---------------------------------------------

LONG_CONTEXT = " ".join(["The Normans were famed for their martial spirit and built castles across England."] * 6)
MIXED = [("Who wrote it?", "Newton wrote it."), ("Who built forts?", LONG_CONTEXT),
         ("What did Newton write?", "Newton wrote a book."), ("What were the Normans famed for?", LONG_CONTEXT),
         ("Where was he?", "He lived in Cambridge.")]


def answered_in_order(extractor, monkeypatch, config, body=None, key=lambda example: example.question):  # noqa: F811
    """The answers to one request (``body``; default: the :data:`MIXED` questions), and the order the server read and
    decoded its examples in, each named by ``key`` (default: its question): ("read", name) for each example read,
    ("answered", name) for each decoded, and ("held", names) at each reading step: the examples whose windows are
    still alive then. The cyclic garbage collector is off meanwhile: windows are let go as soon as nothing uses them,
    not whenever it next runs."""
    events, read, predict, alive = [], answering_module.question_windows, extractor.predict, weakref.WeakSet()
    body = body or {"question": [q for q, _ in MIXED], "context": [c for _, c in MIXED]}

    def reading(trained, questions, requests, read_apart=None):
        events.append(("held", frozenset(key(example) for windows in alive for example in windows.examples)))
        events.extend(("read", key(example)) for question in questions for example in question)
        found = read(trained, questions, requests, read_apart)
        alive.update(found)
        return found

    def decoding(outputs, examples, *args, **kwargs):
        found = predict(outputs, examples, *args, **kwargs)
        events.extend(("answered", key(example)) for example in examples)
        return found

    monkeypatch.setattr(answering_module, "question_windows", reading)
    monkeypatch.setattr(extractor, "predict", decoding)
    gc.disable()
    try:
        with TestClient(create_app(extractor, config)) as client:
            response = client.post("/answer", json=body)
    finally:
        gc.enable()
        monkeypatch.undo()
    assert response.status_code == 200, response.text
    return response.json()["results"], events


@pytest.mark.parametrize("slices", ["pairs", "alone"])
def test_a_request_past_its_window_bound_is_answered_a_slice_at_a_time_with_the_same_answers(extractor, monkeypatch, slices):  # noqa: F811
    """Every question of a request was read before the first was answered: a request of many long questions held all
    their windows and logits at once. Past --max-request-windows (estimated from the contexts' lengths), its
    questions go in consecutive slices, each read once the one before is answered and its windows let go; a long
    question alone past the bound is a slice of its own, and answered. The answers are those of one slice, and the
    extractor's."""
    short, long = (estimated_windows(len(MIXED[0][1]), extractor.trained.features),
                   estimated_windows(len(LONG_CONTEXT), extractor.trained.features))
    assert short == 1 and long > 20  # what the slices below are counted from
    bound, want = {"pairs": (short + long, [[0, 1], [2, 3], [4]]), "alone": (1, [[0], [1], [2], [3], [4]])}[slices]
    config = dict(max_batch_size=8, max_wait_ms=0)
    sliced, events = answered_in_order(extractor, monkeypatch, ServeConfig(max_request_windows=bound, **config))
    whole, whole_events = answered_in_order(extractor, monkeypatch, ServeConfig(**config))
    position = {event: at for at, event in enumerate(events)}
    slice_of = {MIXED[i][0]: number for number, part in enumerate(want) for i in part}
    for held, read in zip(events, events[1:]):
        if held[0] == "held":  # a reading step's questions: none of an earlier slice is held then
            assert {slice_of[text] for text in held[1]} <= {slice_of[read[1]]}, (held, read)
    for earlier, later in zip(want, want[1:]):
        assert max(position["answered", MIXED[i][0]] for i in earlier) < min(position["read", MIXED[i][0]] for i in later)
    assert whole_events.index(("read", MIXED[-1][0])) < whole_events.index(("answered", MIXED[1][0]))  # one slice
    for got, all_at_once, (text, context) in zip(sliced, whole, MIXED):
        assert_same_answer(got, all_at_once)
        assert_same_answer(got, extractor(text, context, decoding="joint"))


# Two long documents of the same length (the same estimated windows), one short one either side of each.
DOCUMENTS = [context for _, context in MIXED[:3]] + [LONG_CONTEXT.replace("England", "Ireland"), MIXED[4][1]]


def reading_steps(events):
    """The examples read at each reading step, in order."""
    steps = []
    for event in events:
        if event[0] == "held":
            steps.append([])
        elif event[0] == "read":
            steps[-1].append(event[1])
    return steps


@pytest.mark.parametrize("options", [{}, {"top_k": 3}, {"multi_span": True}])
@pytest.mark.parametrize("slices", ["pairs", "alone"])
def test_one_question_over_documents_past_the_window_bound_is_answered_a_slice_at_a_time_with_the_same_answers(
        extractor, monkeypatch, slices, options):  # noqa: F811
    """One question over several documents read every document's windows before running any: a request over many
    long documents held all their windows and logits at once, whatever --max-request-windows. Past the bound its
    documents go in consecutive slices, each read, run and decoded into one ranking once the one before is ranked and
    its windows let go. The ranked answers (spans, scores, documents, the best document's fields) are those of the
    request answered whole, and the extractor's."""
    features = extractor.trained.features
    short, long = estimated_windows(len(DOCUMENTS[0]), features), estimated_windows(len(DOCUMENTS[1]), features)
    assert [estimated_windows(len(document), features) for document in DOCUMENTS] == [short, long, short, long, short]
    assert short == 1 and long > 20  # what the slices below are counted from
    bound, want = {"pairs": (short + long, [[0, 1], [2, 3], [4]]), "alone": (1, [[0], [1], [2], [3], [4]])}[slices]
    body, config = {"question": "Who built forts?", "context": DOCUMENTS, **options}, dict(max_batch_size=8, max_wait_ms=0)
    asked = dict(monkeypatch=monkeypatch, body=body, key=lambda example: int(example.id))
    sliced, events = answered_in_order(extractor, config=ServeConfig(max_request_windows=bound, **config), **asked)
    whole, whole_events = answered_in_order(extractor, config=ServeConfig(**config), **asked)
    assert reading_steps(events) == want and reading_steps(whole_events) == [[0, 1, 2, 3, 4]]
    slice_of = {document: number for number, part in enumerate(want) for document in part}
    for held, read in zip(events, events[1:]):
        if held[0] == "held":  # a reading step's documents: none of an earlier slice is held then
            assert {slice_of[document] for document in held[1]} <= {slice_of[read[1]]}, (held, read)
    position = {event: at for at, event in enumerate(events)}  # a document's last decoding
    for earlier, later in zip(want, want[1:]):
        assert max(position["answered", d] for d in earlier) < min(position["read", d] for d in later)
    (got,), (all_at_once,) = sliced, whole
    assert_same_answer(got, all_at_once)
    assert (got["answer"], got["document"]) == (all_at_once["answer"], all_at_once["document"])
    ranked = extractor("Who built forts?", DOCUMENTS, decoding="joint", **options)
    assert [(s["document"], s["text"], s["start"], s["end"]) for s in got["spans"]] == [
        (a.document, a.text, a.start, a.end) for a in ranked.answers]
    assert [s["score"] for s in got["spans"]] == pytest.approx([a.score for a in ranked.answers], rel=1e-5, abs=1e-6)
    multi_span = options.get("multi_span", False)
    assert [s["probability"] is None for s in got["spans"]] == [not multi_span or a.probability is None for a in ranked.answers]
    assert [s["probability"] for s in got["spans"] if s["probability"] is not None] == pytest.approx(
        [a.probability for a in ranked.answers if multi_span and a.probability is not None], rel=1e-5, abs=1e-6)
    best = ranked.documents[ranked.answers[0].document]
    assert (got["answer"], got["document"], got["abstain"]) == (ranked.answer, ranked.answers[0].document, best.abstain)
    for name in ("no_answer_score", "confidence", "probability"):
        assert got[name] == pytest.approx(getattr(best, name), rel=1e-5, abs=1e-6), name
