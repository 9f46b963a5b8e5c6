"""bio-mrc serve: answers over HTTP equal AnswerExtractor's, concurrent requests batched, bad requests refused with a 4xx."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import math
import socket
import threading
import time
import weakref
from concurrent.futures import ThreadPoolExecutor

import httpx
import numpy as np
import pytest
import uvicorn
from fastapi.testclient import TestClient
from transformers import AutoTokenizer

from bio_mrc.cli import build_parser
from bio_mrc.config_options import config_from_args
from bio_mrc.data.squad import load_squad
from bio_mrc.decoding.postprocess import DecodeConfig
from bio_mrc.errors import ConfigError
from bio_mrc.inference import AnswerExtractor, TrainedModel
from bio_mrc.model import BioMrcForQuestionAnswering
from bio_mrc.model_card import write_model_card
from bio_mrc.serving.answering import Question, answer_batch, featurize
from bio_mrc.serving import operator_log, windows as windows_module
from bio_mrc.serving.app import create_app
from bio_mrc.serving.windows import run_chunks, window_runner
from bio_mrc.serving.batching import DynamicBatcher
from bio_mrc.serving.config import ServeConfig

from .conftest import SAMPLE_V1, untrained_model_folder

WINDOWS = {"max_seq_length": 48, "doc_stride": 16, "max_query_length": 12}
LONG = " ".join(["The Normans were famed for their martial spirit and built castles across England."] * 6)  # many windows
BETA = {"method": "beta", "a": 1.2, "b": 0.8, "c": 0.3}  # a calibrator for the joint decoding only


SEED = 0


@pytest.fixture(scope="module")
def model_dir(tiny_encoder_dir, tmp_path_factory):
    """A random joint model: span answers always abstain (threshold -inf), joint answers are calibrated."""
    import torch

    folder = tmp_path_factory.mktemp("served") / "tiny-joint"
    torch.manual_seed(SEED)  # heads drawn alike whatever ran before in this worker: the answers some tests read
    model = BioMrcForQuestionAnswering.from_encoder(str(tiny_encoder_dir), heads="span+bio", **WINDOWS)
    model.config.no_answer_thresholds = {"span": -math.inf}
    model.config.calibration = {"joint": BETA}
    model.save_pretrained(str(folder))
    AutoTokenizer.from_pretrained(str(tiny_encoder_dir)).save_pretrained(str(folder))
    write_model_card(folder)
    return folder


@pytest.fixture(scope="module")
def extractor(model_dir):
    return AnswerExtractor(TrainedModel.load(model_dir, precision="fp32"))


@pytest.fixture(scope="module")
def questions():
    """(question, context) pairs: the sample's questions and one context several windows long."""
    pairs = [(ex.question, ex.context) for ex in load_squad(SAMPLE_V1).examples]
    return pairs + [("What were the Normans famed for?", LONG), ("Who built forts?", LONG)]


class PromptServer(uvicorn.Server):
    """uvicorn looking at ``should_exit`` every 10 ms rather than every 100 ms: each test stops a server of its own."""

    async def main_loop(self) -> None:
        counter = 0
        while not await self.on_tick(counter):  # on_tick counts tenths of a second, as in uvicorn's own loop
            counter = (counter + 1) % 864000
            for _ in range(10):
                await asyncio.sleep(0.01)
                if self.should_exit:
                    break

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        """uvicorn's shutdown, looking every 10 ms for the connections and tasks to end, where uvicorn sleeps 100 ms
        first and then looks every 100 ms: the same steps in the same order, each test's server stopped sooner."""
        for listener in self.servers:
            listener.close()
        for sock in sockets or []:
            sock.close()
        for connection in list(self.server_state.connections):
            connection.shutdown()
        try:
            async with asyncio.timeout(self.config.timeout_graceful_shutdown):
                while (self.server_state.connections or self.server_state.tasks) and not self.force_exit:
                    await asyncio.sleep(0.01)
                for listener in self.servers:
                    await listener.wait_closed()
        except TimeoutError:
            for task in self.server_state.tasks:
                task.cancel()
        if not self.force_exit:
            await self.lifespan.shutdown()


@contextlib.contextmanager
def running(app, **settings):
    """``app`` under uvicorn in a thread, on a free loopback port (``settings``: more of uvicorn's): its base URL."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = PromptServer(uvicorn.Config(app, log_level="warning", **settings))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()


@pytest.fixture
def operator_lines(monkeypatch):
    """The lines the server logs for its operator, none held back by an earlier test's line of the same limit."""
    class Lines(list):  # the logger's one method the server calls (uvicorn's logging setup replaces handlers)
        warning = list.append

    lines = Lines()
    monkeypatch.setattr(operator_log, "_last_warned", {})
    monkeypatch.setattr(operator_log, "LOGGER", lines)
    return lines


def expected(extractor, question, context, decoding="auto", multi_span=False, top_k=1):
    """AnswerExtractor's answer, one request alone (with top_k, the n-best it keeps)."""
    if top_k == 1:
        return extractor(question, context, decoding=decoding, multi_span=multi_span)
    examples, _ = extractor.examples(question, context)
    (prediction,) = extractor.predict(extractor.trained.windows(examples), examples, multi_span, decoding)
    prediction.spans = prediction.spans[:top_k]
    return prediction


def assert_same_answer(got, want):
    """The same spans and offsets; the same scores up to float rounding (windows padded beside others)."""
    got, want = as_dict(got), as_dict(want)
    assert [(s["text"], s["start"], s["end"]) for s in got["spans"]] == [(s["text"], s["start"], s["end"]) for s in want["spans"]]
    assert got["abstain"] == want["abstain"]
    for name in ("no_answer_score", "confidence", "probability"):
        assert (got[name] is None) == (want[name] is None), name
        if want[name] is not None:
            assert got[name] == pytest.approx(want[name], rel=1e-5, abs=1e-6), name
    assert [s["score"] for s in got["spans"]] == pytest.approx([s["score"] for s in want["spans"]], rel=1e-5, abs=1e-6)


def as_dict(prediction):
    return prediction if isinstance(prediction, dict) else prediction.to_dict()


# --- one batch, many requests --------------------------------------------------------------------

@pytest.mark.parametrize("chunk_windows", [None, 1, 3])
def test_one_batch_answers_every_request_as_the_extractor_alone(extractor, questions, chunk_windows):
    """Whether a question's windows run in one forward pass or in chunks of 1 or 3 (each its own pass), its answers
    are the extractor's."""
    kinds = [("span", False, 1), ("bio", True, 1), ("joint", False, 3), ("joint", True, 1), ("bio", False, 2), ("span", True, 1)]
    requests, wanted = [], []
    for i, (question, context) in enumerate(questions):
        decoding, multi_span, top_k = kinds[i % len(kinds)]
        examples, _ = extractor.examples(question, context)
        requests.append(Question(examples, decoding, multi_span, top_k))
        wanted.append(expected(extractor, question, context, decoding, multi_span, top_k))
    answers = answer_batch(extractor, requests, chunk_windows=chunk_windows)
    assert [len(a) for a in answers] == [1] * len(questions)
    for (got,), want in zip(answers, wanted):
        assert_same_answer(got, want)
    assert any(len(w.spans) > 1 for w in wanted)  # top_k and multi-span answers were compared too
    assert max(len(windows) for windows in featurize(extractor.trained, requests)) > 3  # some questions were split


def test_an_extractor_keeping_fewer_spans_than_top_k_answers_top_k_as_alone(extractor, questions):
    """An extractor that keeps 2 n-best spans answers top_k=4 with 4 spans, its confidence a share of those 4, alone
    and through the server's steps alike (one question, and one asked of two documents)."""
    narrow = AnswerExtractor(extractor.trained, decode_config=DecodeConfig(n_best=2))
    question, context = questions[0]
    alone = narrow(question, context, decoding="joint", top_k=4)
    ranked = narrow(question, [context, questions[1][1]], decoding="joint", top_k=4)
    examples, _ = narrow.examples(question, context)
    documents, _ = narrow.examples(question, [context, questions[1][1]])
    (got,), (got_ranked,) = answer_batch(narrow, [Question(examples, "joint", top_k=4),
                                                  Question(documents, "joint", top_k=4, documents=True)])
    assert len(alone.spans) == len(got.spans) == 4
    assert_same_answer(got, alone)
    assert [(a.text, a.document) for a in got_ranked.answers] == [(a.text, a.document) for a in ranked.answers]
    assert len(ranked.answers) == 4


def test_chunked_windows_get_the_logits_of_one_pass(extractor, questions):
    """The logits of a question's windows run chunk by chunk beside other questions' chunks are those of one pass
    over its windows alone (TrainedModel.windows), to float rounding."""
    examples, _ = extractor.examples([q for q, _ in questions], [c for _, c in questions])
    requests = [Question([example], "joint") for example in examples]
    split = featurize(extractor.trained, requests)
    chunks = [chunk for windows in split for chunk in windows.chunks(2)]
    runner = window_runner(extractor.trained)
    for begin in range(0, len(chunks), 3):  # three chunks a pass: of one question, or of neighbours
        run_chunks(runner, chunks[begin : begin + 3], 0, extractor.batch_size)
    assert len(split) == len(examples) == len(questions)
    for example, windows in zip(examples, split):
        alone = extractor.trained.windows([example])
        got = windows.outputs()
        assert windows.complete and np.array_equal(got.offsets, alone.offsets) and np.array_equal(got.mask, alone.mask)
        for name in ("start_logits", "end_logits", "bio_logits"):
            inside = alone.mask
            assert np.allclose(getattr(got, name)[inside], getattr(alone, name)[inside], rtol=1e-5, atol=1e-5), name


def test_the_batcher_gathers_concurrent_requests_up_to_the_batch_size():
    batches = []

    def run(items):
        batches.append(list(items))
        if "bad" in items:
            raise ValueError("bad item")
        return [item.upper() for item in items]

    async def main():
        batcher = DynamicBatcher(run, max_batch_size=2, max_wait=0.05)
        await batcher.start()
        try:
            results = await asyncio.gather(*(batcher.submit(item) for item in ["a", "b", "c", "bad", "e"]), return_exceptions=True)
        finally:
            await batcher.stop()
        return results, batcher.stats

    results, stats = asyncio.run(main())
    assert results[:3] == ["A", "B", "C"] and results[4] == "E"
    assert isinstance(results[3], ValueError)  # only the item at fault fails; its batch-mate is run alone
    assert batches == [["a", "b"], ["c", "bad"], ["c"], ["bad"], ["e"]]
    assert (stats.batches, stats.requests, stats.questions) == (3, 4, 4)  # the batches that ran: [a, b], [c], [e]


def test_the_batcher_refuses_an_item_larger_than_a_batch():
    async def main():
        batcher = DynamicBatcher(lambda items: items, max_batch_size=2, max_wait=0)
        await batcher.start()
        try:
            with pytest.raises(ValueError, match="size 3 cannot join batches of at most 2"):
                await batcher.submit("x", size=3)
        finally:
            await batcher.stop()

    asyncio.run(main())


# --- over HTTP --------------------------------------------------------------------------------

@pytest.mark.slow
def test_concurrent_requests_on_a_loopback_port_get_the_extractors_answers(extractor, questions):
    app = create_app(extractor, ServeConfig(max_batch_size=8, max_wait_ms=20))
    kinds = [{"decoding": "span"}, {"decoding": "bio", "multi_span": True}, {"decoding": "joint", "top_k": 2}, {}]
    bodies = [{"question": q, "context": c, **kinds[i % len(kinds)]} for i, (q, c) in enumerate(questions * 2)]
    bodies.append({"question": [q for q, _ in questions[:3]], "context": [c for _, c in questions[:3]], "decoding": "joint"})
    with running(app) as url, httpx.Client(base_url=url, timeout=60) as client, ThreadPoolExecutor(8) as pool:
        responses = list(pool.map(lambda body: client.post("/answer", json=body), bodies))
        served = client.get("/health").json()["served"]
    assert [r.status_code for r in responses] == [200] * len(bodies)
    for body, response in zip(bodies, responses):
        result = response.json()
        questions_asked = body["question"] if isinstance(body["question"], list) else [body["question"]]
        contexts = body["context"] if isinstance(body["context"], list) else [body["context"]]
        assert len(result["results"]) == len(questions_asked)
        for got, question, context in zip(result["results"], questions_asked, contexts):
            options = {k: body[k] for k in ("decoding", "multi_span", "top_k") if k in body}
            want = expected(extractor, question, context, **options)
            assert_same_answer(got, want)
            assert got["answer"] == want.answer and got["answers"] == want.answers and not got["below_threshold"]
            assert all(context[s["start"]: s["end"]] == s["text"] for s in got["spans"])
    assert served["requests"] == len(bodies) and served["questions"] == len(bodies) + 2


def test_every_answer_carries_confidence_and_probability_where_calibrated(extractor, questions):
    question, context = questions[0]
    with TestClient(create_app(extractor)) as client:
        joint = client.post("/answer", json={"question": question, "context": context, "decoding": "joint"}).json()
        span = client.post("/answer", json={"question": question, "context": context, "decoding": "span"}).json()
        auto = client.post("/answer", json={"question": question, "context": context}).json()
    (joint_answer,), (span_answer,) = joint["results"], span["results"]
    assert joint["decoding"] == auto["decoding"] == "joint" and span["decoding"] == "span"
    assert 0 < joint_answer["confidence"] <= 1 and 0 < joint_answer["probability"] < 1
    assert span_answer["probability"] is None and span_answer["confidence"] is not None  # no calibrator for span
    assert span_answer["abstain"] and span_answer["answer"] == "" and span_answer["spans"]  # threshold -inf: always abstain


def test_a_threshold_withholds_answers_less_sure_than_it(extractor, questions):
    question, context = questions[0]
    body = {"question": question, "context": context, "decoding": "joint"}
    with TestClient(create_app(extractor)) as client:
        plain = client.post("/answer", json=body).json()["results"][0]
        sure = client.post("/answer", json={**body, "threshold": plain["probability"]}).json()["results"][0]
        unsure = client.post("/answer", json={**body, "threshold": min(1.0, plain["probability"] + 1e-6)}).json()["results"][0]
    assert not sure["below_threshold"] and sure["answer"] == plain["answer"] != ""
    assert unsure["below_threshold"] and unsure["answer"] == "" and unsure["answers"] == []
    assert unsure["spans"] == plain["spans"] and unsure["probability"] == plain["probability"]


def test_health_reports_the_model_its_card_and_the_limits(extractor, model_dir):
    config = ServeConfig(max_batch_size=4, max_wait_ms=2.5)
    with TestClient(create_app(extractor, config)) as client:
        health = client.get("/health")
        probe = client.head("/health")
    assert health.status_code == 200
    assert probe.status_code == 200 and probe.content == b""  # a load balancer's HEAD probe
    body = json.loads(health.text)  # strict JSON: the -inf threshold is a string
    assert body["status"] == "ok" and body["model"] == model_dir.name == "tiny-joint" and body["backend"] == "torch"
    card = body["card"]
    assert card["heads"] == "span+bio" and card["decodings"] == ["span", "bio", "joint"]
    assert card["windows"] == WINDOWS and card["calibrated"] == ["joint"]
    assert card["tuned"]["no_answer_thresholds"] == {"span": "-Infinity"}
    assert body["limits"]["max_batch_size"] == 4 and body["limits"]["max_wait_ms"] == 2.5
    assert body["served"] == {"batches": 0, "requests": 0, "questions": 0, "busy_seconds": 0.0, "windows": 0}


def test_the_openapi_page_describes_the_requests_and_their_limits(extractor):
    config = ServeConfig(max_context_chars=500, max_question_chars=50, max_batch_size=3)
    with TestClient(create_app(extractor, config)) as client:
        schema = client.get("/openapi.json").json()
        docs = client.get("/docs")
    assert docs.status_code == 200 and "swagger" in docs.text.lower()
    assert {"/answer", "/health"} <= set(schema["paths"])
    responses = schema["paths"]["/answer"]["post"]["responses"]
    assert {"400", "413", "415", "417", "422", "503", "505"} <= set(responses)
    # a client reads what it can do; the server's flags are its operator's
    assert [status for status, response in responses.items() if "--" in response["description"]] == []
    request = schema["components"]["schemas"]["AnswerRequest"]["properties"]
    one_context, several = request["context"]["oneOf"]
    assert one_context["maxLength"] == 500 and several["items"]["maxLength"] == 500
    assert one_context["minLength"] == several["items"]["minLength"] == request["question"]["oneOf"][0]["minLength"] == 1
    assert request["question"]["oneOf"][0]["maxLength"] == 50 and "at most 3" in request["question"]["description"]
    assert request["decoding"]["enum"] == ["auto", "span", "bio", "joint"] and request["top_k"]["maximum"] == 20
    assert all(field.get("description") for field in schema["components"]["schemas"]["Answer"]["properties"].values())


def test_the_docs_pages_show_a_hostile_name_as_text(extractor):
    """FastAPI writes the app's title into the docs pages' <title> as it is: a name holding ``</title><script>`` ran as
    script there. It is HTML-escaped on both pages; the schema keeps the name as it is."""
    name = "</title><script>alert(1)</script>"
    with TestClient(create_app(extractor, ServeConfig(), name=name)) as client:
        pages = [client.get(path) for path in ("/docs", "/redoc")]
        schema = client.get("/openapi.json").json()
    for page, viewer in zip(pages, ("Swagger UI", "ReDoc")):
        assert page.status_code == 200 and "<script>alert(1)" not in page.text
        assert f"<title>bio_mrc: &lt;/title&gt;&lt;script&gt;alert(1)&lt;/script&gt; - {viewer}</title>" in page.text
    assert schema["info"]["title"] == f"bio_mrc: {name}"


def test_the_openapi_page_says_what_multi_span_answers_under_each_decoding(extractor):
    with TestClient(create_app(extractor, ServeConfig())) as client:
        schema = client.get("/openapi.json").json()["components"]["schemas"]
    multi_span = schema["AnswerRequest"]["properties"]["multi_span"]["description"]
    # joint answers with the tagger's spans where it holds several likely ones, not the n-best spans alone
    assert "span: the n-best spans; bio: the tag sequence; joint: the tag sequence or n-best spans" in multi_span
    probability = schema["Span"]["properties"]["probability"]["description"]
    assert "joint: where the BIO decoding's multi-span answer holds two or more spans" in probability


# --- bad requests ------------------------------------------------------------------------------

GOOD = {"question": "Who?", "context": "Newton wrote it."}
BAD_REQUESTS = {  # name: (body as bytes or JSON, status, words the message holds)
    "malformed JSON": (b'{"question": "Who?", "context": ', 422, "not valid JSON"),
    "not an object": ([GOOD], 422, "valid dictionary"),
    "question of the wrong type": ({**GOOD, "question": 5}, 422, "body.question: Input should be a string or a list of strings"),
    "top_k as a string": ({**GOOD, "top_k": "2"}, 422, "body.top_k"),
    "multi_span as a number": ({**GOOD, "multi_span": 1}, 422, "body.multi_span"),
    "empty question": ({**GOOD, "question": ""}, 422, "body.question: empty or missing question"),
    "blank question": ({**GOOD, "question": "   "}, 422, "body.question: empty or missing question"),
    "blank item of a list": ({**GOOD, "question": ["Who?", " \t"]}, 422, "body.question[1]: empty or missing question"),
    "blank document": ({**GOOD, "context": ["Newton.", "\n"]}, 422, "body.context[1]: empty or missing context"),
    "invisible question": ({**GOOD, "question": "\u200b\u00ad"}, 422, "body.question: the question holds no readable text"),
    "empty list": ({**GOOD, "question": []}, 422, "body.question"),
    "empty item of a list": ({**GOOD, "question": ["Who?", ""]}, 422, "body.question[1]: empty or missing question"),
    "empty context": ({**GOOD, "context": ""}, 422, "body.context: empty or missing context"),
    "lone surrogate": ({**GOOD, "context": "New\ud800ton"}, 422, "body.context"),
    "unknown decoding": ({**GOOD, "decoding": "crf"}, 422, "body.decoding: Input should be 'auto', 'span', 'bio' or 'joint'"),
    "unknown field": ({**GOOD, "multispan": True}, 422, "body.multispan: Extra inputs are not permitted"),
    "lone surrogate in a field's name": ({**GOOD, "top\udc00k": 2}, 422,
                                         'an unknown field "top\\udc00k", its name holding a lone surrogate'),
    "top_k beyond the n-best": ({**GOOD, "top_k": 21}, 422, "body.top_k"),
    "top_k with multi_span": ({**GOOD, "top_k": 2, "multi_span": True}, 422, "pick one"),
    "threshold above 1": ({**GOOD, "threshold": 1.5}, 422, "body.threshold"),
    "threshold NaN": (b'{"question": "Who?", "context": "Newton.", "threshold": NaN}', 422, "body.threshold: Input should be a finite number"),
    "contexts not one per question": ({"question": ["a?", "b?"], "context": ["x", "y", "z"]}, 422, "2 questions but 3 contexts"),
    "context too long": ({**GOOD, "context": "x" * 201}, 422, "body.context: String should have at most 200 characters"),
    "oversize batch": ({**GOOD, "question": ["Who?"] * 5}, 413, "at most 4"),
    "body too long": (b'{"question": "' + b"x" * 100_000 + b'"}', 413, "no valid request is longer"),
    "non-UTF-8 body": (b'{"question": "Who\xff\xfe?", "context": "Newton."}', 400, "not UTF-8"),
}


@pytest.mark.parametrize("name", BAD_REQUESTS)
def test_bad_requests_get_a_4xx_with_a_message_and_no_traceback(extractor, name):
    body, status, words = BAD_REQUESTS[name]
    config = ServeConfig(max_batch_size=4, max_context_chars=200, max_question_chars=20)
    with TestClient(create_app(extractor, config), raise_server_exceptions=False) as client:
        if isinstance(body, bytes):
            response = client.post("/answer", content=body, headers={"content-type": "application/json"})
        else:
            response = client.post("/answer", content=json.dumps(body), headers={"content-type": "application/json"})
        still_fine = client.post("/answer", json=GOOD)
    assert response.status_code == status, response.text
    assert words in response.json()["detail"] and "Traceback" not in response.text
    assert still_fine.status_code == 200


def test_a_blank_text_is_located_at_its_field_as_an_empty_one_is(extractor):
    """A question of whitespace alone was refused at location ``body`` with the record ``input 1``, where an empty
    one is at ``body.question[1]``: both are one field's problem, located as the schema locates it, and said in one
    message (an empty one got pydantic's "String should have at least 1 character")."""
    with TestClient(create_app(extractor, ServeConfig(max_batch_size=4))) as client:
        empty = client.post("/answer", json={**GOOD, "question": ["Who?", ""]})
        blank = client.post("/answer", json={**GOOD, "question": ["Who?", "   "]})
    assert empty.status_code == blank.status_code == 422
    assert empty.json()["problems"] == [{"location": "body.question[1]", "message": "empty or missing question"}]
    assert blank.json()["problems"] == [{"location": "body.question[1]", "message": "empty or missing question"}]
    assert blank.json()["detail"] == "body.question[1]: empty or missing question"


@pytest.mark.parametrize("content_type, named", [("text/plain", "its content-type is 'text/plain'"), (None, "it has no content-type"),
                                                 ("application/x-www-form-urlencoded", "its content-type is 'application/x-www-form-urlencoded'")])
def test_a_body_not_sent_as_json_is_a_415_that_says_so(extractor, content_type, named):
    """curl -d sends a form's content-type: the JSON was never read, yet the answer said it was no dictionary."""
    headers = {"content-type": content_type} if content_type else {}
    with TestClient(create_app(extractor, ServeConfig(max_batch_size=4))) as client:
        response = client.post("/answer", content=json.dumps(GOOD).encode(), headers=headers)
        as_json = client.post("/answer", content=json.dumps(GOOD).encode(), headers={"content-type": "application/problem+json"})
    assert response.status_code == 415 and response.json()["detail"] == (
        f"the body is not read as JSON: {named}; send it with the header content-type: application/json")
    assert response.json()["problems"] == [{"location": "body", "message": response.json()["detail"]}]
    assert as_json.status_code == 200


ACCENTED = {"question": "Who wrote the Café?", "context": "Amélie wrote the Café in Zürich."}


def answers_in_charsets(extractor, sent: list[tuple[str, str]]) -> list:
    """The server's responses to ``(JSON text, charset)`` bodies, each encoded in its charset and saying so."""
    with TestClient(create_app(extractor, ServeConfig(max_batch_size=4))) as client:
        return [client.post("/answer", content=body.encode(charset), headers={"content-type": f"application/json; charset={charset}"})
                for body, charset in sent]


def test_a_body_in_the_charset_its_content_type_names_is_read_as_that_charset(extractor):
    """A body in Latin-1 or UTF-16 that says so is answered as its text in UTF-8 is (it was a 400, "not UTF-8")."""
    text = json.dumps(ACCENTED, ensure_ascii=False)
    answers = answers_in_charsets(extractor, [(text, "utf-8"), (text, "iso-8859-1"), (text, "utf-16"), (text, "UTF-16LE")])
    assert [answer.status_code for answer in answers] == [200] * 4, [answer.text for answer in answers]
    assert all(answer.json() == answers[0].json() for answer in answers)


@pytest.mark.slow  # starts the helper process: a Python start
def test_a_large_body_in_the_charset_its_content_type_names_is_decoded_in_the_helper_process(extractor):
    """A body past 64 KiB (here of spaces) in UTF-16 that says so is decoded in the helper process, and answered as
    its text in UTF-8 is."""
    text = json.dumps(ACCENTED, ensure_ascii=False)
    answers = answers_in_charsets(extractor, [(text, "utf-8"), (text + " " * 40_000, "utf-16")])
    assert [answer.status_code for answer in answers] == [200] * 2, [answer.text for answer in answers]
    assert answers[1].json() == answers[0].json()


@pytest.mark.parametrize("charset, body, status, detail", [
    ("klingon", b"{}", 415, "the body's content-type names the charset 'klingon', which this server cannot read; "
                            "send it in UTF-8 (content-type: application/json; charset=utf-8)"),
    ("base64", b"{}", 415, "the body's content-type names the charset 'base64', which this server cannot read; "
                           "send it in UTF-8 (content-type: application/json; charset=utf-8)"),
    ("utf-16-le", b'{\x00}', 400, "the body is not utf-16-le text, as its content-type says: truncated data at byte 2; "
                                 "send it in that charset, or say which it is in"),
])
def test_a_body_in_a_charset_unknown_or_not_kept_is_a_4xx_naming_it(extractor, charset, body, status, detail):
    with TestClient(create_app(extractor, ServeConfig(max_batch_size=4)), raise_server_exceptions=False) as client:
        response = client.post("/answer", content=body, headers={"content-type": f"application/json; charset={charset}"})
        still_fine = client.post("/answer", json=GOOD)
    assert (response.status_code, response.json()["detail"]) == (status, detail)
    assert "Traceback" not in response.text and still_fine.status_code == 200


def test_a_decoding_the_heads_cannot_do_is_refused(tiny_encoder_dir, tmp_path):
    untrained_model_folder(tiny_encoder_dir, tmp_path, heads="span", **WINDOWS)
    with TestClient(create_app(AnswerExtractor.from_pretrained(tmp_path, precision="fp32"))) as client:
        refused = client.post("/answer", json={**GOOD, "decoding": "bio"})
        auto = client.post("/answer", json={**GOOD, "multi_span": True})
    assert refused.status_code == 422 and 'decoding "bio" needs the bio head, which this model lacks' in refused.json()["detail"]
    assert auto.status_code == 200 and auto.json()["decoding"] == "span"


def test_an_internal_error_is_a_500_without_a_traceback(extractor, monkeypatch):
    with TestClient(create_app(extractor), raise_server_exceptions=False) as client:
        monkeypatch.setattr(windows_module, "input_logits", lambda *a, **k: 1 / 0)
        response = client.post("/answer", json=GOOD)
    assert response.status_code == 500 and "Traceback" not in response.text and "ZeroDivision" not in response.text
    assert response.json()["detail"].startswith("internal error")


# --- the command ---------------------------------------------------------------------------------

def test_serve_command_defaults_to_loopback_and_its_options_are_the_configs():
    args = build_parser().parse_args(["serve", "MODEL"])
    assert args.model == "MODEL" and config_from_args(ServeConfig, args) == ServeConfig()
    assert ServeConfig().host == "127.0.0.1"
    args = build_parser().parse_args(["serve", "m", "--port", "9000", "--max-batch-size", "64", "--max-wait-ms", "0"])
    assert config_from_args(ServeConfig, args) == ServeConfig(port=9000, max_batch_size=64, max_wait_ms=0.0)
    with pytest.raises(ConfigError, match="max_batch_size"):
        ServeConfig(max_batch_size=0)


def test_serving_without_the_extra_says_what_to_install(monkeypatch, model_dir):
    import importlib.util

    from bio_mrc.serving import server

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "uvicorn" else real(name, *a))
    with pytest.raises(ConfigError, match=r"needs uvicorn: pip install 'bio_mrc\[serve\]'"):
        server.run_server(model_dir)


@pytest.mark.parametrize("host, problem", [("", "host '' names no address"), (" ", "host ' ' names no address"),
                                           ("127.0.0.1", "cannot listen on 127.0.0.1:{port} (host, port): Address already in use")])
def test_an_address_the_server_cannot_listen_on_is_refused_before_the_model_loads(monkeypatch, host, problem):
    from bio_mrc.serving import server

    def never(*args, **kwargs):
        raise AssertionError("the model loaded")

    monkeypatch.setattr(server.AnswerExtractor, "from_pretrained", never)
    with socket.socket() as taken:  # a port another program listens on
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ConfigError) as refused:
            server.run_server("no-model", ServeConfig(host=host, port=port))
    assert str(refused.value).startswith(problem.format(port=port))


def test_serve_names_the_flags_of_an_address_it_cannot_listen_on(monkeypatch, capsys):
    from bio_mrc.cli import main
    from bio_mrc.serving import server

    monkeypatch.setattr(server.AnswerExtractor, "from_pretrained", lambda *a, **k: pytest.fail("the model loaded"))
    assert main(["serve", "--model", "no-model", "--host", " "]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith("error: --host ' ' names no address")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["serve", "--model", "no-model", "--host", "127.0.0.1", "--port", str(port)]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith(
        f"error: cannot listen on 127.0.0.1:{port} (--host, --port): Address already in use")


@pytest.mark.slow  # over 3 s alone on 2 cores
def test_run_server_serves_the_folder_on_the_configured_address(monkeypatch, model_dir):
    from bio_mrc.serving import server

    calls = []
    monkeypatch.setattr(server, "serve_until_stopped", lambda app, host, port, **options: calls.append((app, host, port, options)))
    server.run_server(model_dir, ServeConfig(port=8123, head_timeout_s=3), precision="fp32")
    ((app, host, port, options),) = calls
    assert host == "127.0.0.1" and port == 8123 and options["connections"]["http"].head_timeout_s == 3
    with TestClient(app, base_url="http://localhost:8123") as client:  # the Host a browser on this machine sends
        assert client.get("/health").json()["model"] == "tiny-joint"


@pytest.mark.slow  # over 3 s alone on 2 cores: the helper process starts
@pytest.mark.parametrize("frozen_before", [False, True], ids=["nothing frozen", "the caller's objects frozen"])
def test_a_server_that_returns_lets_its_model_go(monkeypatch, model_dir, frozen_before):
    """run_server freezes what is loaded out of the collector's sight while it serves; once it returns (SIGTERM), its
    model, app and scheduler, which hold one another, are collected, and the caller's own freeze is as it was."""
    from bio_mrc.serving import app as app_module, server

    models = []
    create_app = app_module.create_app
    monkeypatch.setattr(app_module, "create_app", lambda extractor, config=None, name=None: (
        models.append(weakref.ref(extractor.trained.model)), create_app(extractor, config, name))[1])

    def serve_one_request(app, host, port, **options):
        with TestClient(app, base_url=f"http://localhost:{port}") as client:
            assert client.post("/answer", json={"question": "Who?", "context": "Ada wrote it."}).status_code == 200

    monkeypatch.setattr(server, "serve_until_stopped", serve_one_request)
    gc.collect()
    gc.unfreeze()  # the suite froze what collection made (tests/conftest.py); frozen again below
    try:
        if frozen_before:
            gc.freeze()
        before = gc.get_freeze_count()
        server.run_server(model_dir, ServeConfig(port=8124), precision="fp32")
        assert gc.get_freeze_count() <= before  # nothing more frozen (frozen objects freed since leave the count)
        gc.collect()
        assert [model() for model in models] == [None]
    finally:
        gc.freeze()


async def _empty_app(scope, receive, send):
    """An ASGI application with a lifespan that answers every request with an empty 204."""
    if scope["type"] == "lifespan":
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
    await send({"type": "http.response.start", "status": 204, "headers": []})
    await send({"type": "http.response.body", "body": b""})


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _signal_once_answering(port: int, signum: int, answered: list) -> None:
    """In a thread: ask the server on ``port`` until it answers, then send this process ``signum``; never a signal to
    a process that is not serving."""
    import os

    def request_then_signal():
        for _ in range(200):
            try:
                answered.append(httpx.get(f"http://127.0.0.1:{port}/ping", timeout=5).status_code)
            except httpx.TransportError:
                time.sleep(0.05)
                continue
            os.kill(os.getpid(), signum)
            return

    threading.Thread(target=request_then_signal, daemon=True).start()


def test_ctrl_c_stops_the_server_with_an_interrupt_and_its_log_lines_go_to_stderr(capfd):
    import signal

    from bio_mrc.serving.server import serve_until_stopped

    port, answered = _free_port(), []
    _signal_once_answering(port, signal.SIGINT, answered)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # Python's own Ctrl-C handler, whatever ran before
    try:
        with pytest.raises(KeyboardInterrupt):  # bio-mrc serve: `interrupted`, status 130 (uvicorn.run returned as if stopped by itself)
            serve_until_stopped(_empty_app, "127.0.0.1", port)
    finally:
        signal.signal(signal.SIGINT, previous)
    out, err = capfd.readouterr()
    assert answered == [204]
    assert out == ""  # uvicorn's own logging writes each request's line to standard output
    assert '"GET /ping HTTP/1.1" 204' in err and "Finished server process" in err


def test_sigterm_stops_the_server_its_queue_first_and_returns():
    """SIGTERM (an orchestrator's stop) is the server's ordinary end: ``stopping`` is called as the stop begins, the
    call returns (``bio-mrc serve``: status 0), and the handler before it is back."""
    import signal

    from bio_mrc.serving.server import serve_until_stopped

    port, answered, stopped = _free_port(), [], []

    def terminated(signum, frame):  # the command's own handler: a stop it raises would fail the command (143)
        raise SystemExit(128 + signum)

    _signal_once_answering(port, signal.SIGTERM, answered)
    previous = signal.signal(signal.SIGTERM, terminated)
    try:
        serve_until_stopped(_empty_app, "127.0.0.1", port, stopping=lambda: stopped.append(True), grace_s=1)
        assert signal.getsignal(signal.SIGTERM) is terminated
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert answered == [204] and stopped == [True]


@pytest.mark.slow  # a server in a subprocess, busy for seconds
def test_sigterm_under_load_answers_queued_requests_503_and_exits_0_promptly(model_dir, tmp_path):
    """Every question of 8 full requests read, their forward passes (about 15,000 windows) mostly still queued: a
    SIGTERM ends the server with status 0 well within 20 s (it ran the whole queue first, then exited 143), and each
    client gets its answers or a 503 saying the server is stopping, never a dropped connection."""
    import os
    import signal
    import subprocess
    import sys

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url, log = f"http://127.0.0.1:{port}", tmp_path / "serve.log"
    command = [sys.executable, "-m", "bio_mrc.cli", "serve", str(model_dir), "--port", str(port), "--precision", "fp32",
               "--device", "cpu"]
    with log.open("w") as err:  # a file, not a pipe: the helper process holds it too
        server = subprocess.Popen(command, stderr=err, env={**os.environ, "NO_COLOR": "1"})
    requests, asked = 8, 32  # 32 questions a request: the default --max-batch-size
    body = {"question": ["Who built castles?"] * asked, "context": " ".join([LONG] * 10)}
    clients = ThreadPoolExecutor(requests)
    try:
        _wait_until(lambda: _served(url) is not None, server, "the server did not start")
        answers = [clients.submit(_posted, f"{url}/answer", body) for _ in range(requests)]
        _wait_until(lambda: (_served(url) or {}).get("questions", 0) >= requests * asked, server,
                    "the server did not read every question")
        server.send_signal(signal.SIGTERM)
        try:
            code = server.wait(timeout=20)  # a hang guard, no measurement
        except subprocess.TimeoutExpired:
            pytest.fail("the server was still running 20 s after SIGTERM")
    finally:
        server.kill()  # only if still running: then the clients' connections end too
        server.wait()
        clients.shutdown()
    outcomes, err = [answer.result() for answer in answers], log.read_text()
    assert code == 0, err
    assert "Traceback" not in err and "interrupted" not in err
    stopping = [outcome for outcome in outcomes if outcome[0] == 503]
    assert stopping and all(status in (200, 503) for status, _ in outcomes), outcomes
    assert all(len(body["results"]) == asked for status, body in outcomes if status == 200)
    assert all(body["detail"].startswith("the server is stopping: ") for _, body in stopping)


def _served(url):
    """The server's ``served`` counts, or None while it does not answer."""
    try:
        return httpx.get(f"{url}/health", timeout=5).json()["served"]
    except httpx.TransportError:
        return None


def _wait_until(condition, server, failure, limit_s=120):
    deadline = time.monotonic() + limit_s
    while not condition():
        assert server.poll() is None and time.monotonic() < deadline, failure
        time.sleep(0.05)


def _posted(url, body):
    """(status, JSON body) of one POST, or (the transport error's name, None): a connection dropped unanswered."""
    try:
        response = httpx.post(url, json=body, timeout=120)
    except httpx.TransportError as error:
        return type(error).__name__, None
    return response.status_code, response.json()


@pytest.mark.slow  # over 3 s alone on 2 cores: a spawned process imports numpy and the package
def test_the_helper_process_outlives_a_ctrl_c_to_the_process_group(capfd):
    import os
    import signal

    from bio_mrc.serving.helper_process import HelperProcess

    helper = HelperProcess(nice=0)
    try:
        pid = helper.submit(os.getpid).result(timeout=60)
        os.kill(pid, signal.SIGINT)  # what Ctrl-C in a terminal sends the helper beside the server
        time.sleep(0.5)
        assert helper.submit(os.getpid).result(timeout=60) == pid  # the same process, still working
    finally:
        helper.stop()
    assert "Traceback" not in capfd.readouterr().err  # the server stops it as it shuts down; no KeyboardInterrupt


def test_no_raw_c1_control_reaches_a_response_from_a_folder_name_a_document_or_a_request_key(extractor):
    """U+009B begins a terminal escape as ESC [ does; JSON writers leave U+0080-U+009F raw. The model's name (a
    folder's), an answer cut from the document and a request's own key echoed in a refusal come back escaped,
    the same JSON values."""
    name, context = "tiny\x9b2J\x85joint", " ".join(["nor\x9bmans came\x85 from nor\x9bmandy"] * 4)
    with TestClient(create_app(extractor, name=name)) as client:
        responses = [client.get("/health"),
                     client.post("/answer", json={"question": "who\x9b31m?", "context": context, "top_k": 5}),
                     client.post("/answer", json={"question": "who?", "context": "x", "bad\x9bkey": 1})]
    assert [r.status_code for r in responses] == [200, 200, 422]
    assert all(b"\xc2\x9b" not in r.content and b"\xc2\x85" not in r.content for r in responses)
    assert b"tiny\\u009b2J\\u0085joint" in responses[0].content and responses[0].json()["model"] == name
    assert responses[2].json()["problems"][0]["location"] == "body.bad\x9bkey"
    assert any("\x9b" in span["text"] for span in responses[1].json()["results"][0]["spans"])


class _Terminal:
    def __init__(self, tty: bool) -> None:
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty

    def write(self, text: str) -> int:
        return len(text)


@pytest.mark.parametrize(("stdout_tty", "stderr_tty", "env", "coloured"), [
    (True, False, {}, False),  # serve 2> log from a terminal: the log file had colour escapes
    (False, True, {}, True),
    (False, True, {"NO_COLOR": "1"}, False),
    (False, True, {"TERM": "dumb"}, False),
])
def test_the_log_lines_are_coloured_only_on_a_terminal_that_takes_colour(monkeypatch, stdout_tty, stderr_tty, env, coloured):
    import logging

    from uvicorn.logging import DefaultFormatter

    from bio_mrc.serving.server import _logging_config

    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr("sys.stdout", _Terminal(stdout_tty))
    monkeypatch.setattr("sys.stderr", _Terminal(stderr_tty))
    options = {k: v for k, v in _logging_config()["formatters"]["default"].items() if k != "()"}
    line = DefaultFormatter(**options).format(logging.LogRecord("uvicorn.error", logging.INFO, "", 0, "Started", None, None))
    assert ("\x1b[" in line) is coloured
    assert line.endswith("Started")


def _answers_over_two_starts(app, bodies):
    """Each body's answer from ``app`` started, stopped, then started again in this process: both starts' answers."""
    starts = []
    for _ in range(2):
        with TestClient(app) as client:
            responses = [client.post("/answer", json=body) for body in bodies]
            assert [response.status_code for response in responses] == [200] * len(bodies), responses[-1].text
            starts.append([response.json() for response in responses])
    return starts


def test_an_app_started_again_answers_as_it_did_the_first_time(extractor):
    """A second start of one app (a second TestClient, a server restarted in-process) failed every request with a 500:
    the batch worker's wake-up event stayed bound to the first start's event loop, so its task died at once."""
    app = create_app(extractor)
    first, second = _answers_over_two_starts(app, [GOOD, {"question": "Who built castles?", "context": LONG}])
    assert first == second
    with TestClient(app) as client:
        assert client.get("/health").json()["served"]["requests"] == 4


@pytest.mark.slow  # starts the helper process twice
def test_an_app_started_again_reads_long_questions_and_large_bodies_in_a_new_helper(extractor):
    """Long questions (past --max-batch-chars) and bodies of 64 KiB or more go to the helper process, which the first
    stop ended: the second start's are read in a new one."""
    from bio_mrc.serving.guards import LARGE_BODY_BYTES

    app = create_app(extractor, ServeConfig(max_batch_chars=100))
    long = {"question": "Who built castles?", "context": LONG, "top_k": 2}
    large = {**long, "context": LONG + " " * LARGE_BODY_BYTES}  # a body parsed in the helper; trailing spaces are no windows
    first, second = _answers_over_two_starts(app, [GOOD, long, large])
    assert first == second


def test_a_dropped_app_releases_its_model(model_dir):
    """FastAPI keeps every endpoint it has called in a module-level cache: an endpoint closing over the extractor
    would keep each app's model in memory after the app, its client and the extractor are dropped."""
    import gc
    import weakref

    extractor = AnswerExtractor(TrainedModel.load(model_dir, precision="fp32"))
    model = weakref.ref(extractor.trained.model)
    app = create_app(extractor)
    with TestClient(app) as client:
        assert client.post("/answer", json={"question": "Who?", "context": "Ada wrote it."}).status_code == 200
        assert client.get("/health").status_code == 200
    del extractor, app, client
    gc.collect()
    assert model() is None


def test_a_method_or_path_the_server_does_not_answer_says_what_it_does(extractor):
    """A GET with the question in the query string was told only "Method Not Allowed" (located at the body), and a
    mistyped path "Not Found": each now names what the server answers."""
    with TestClient(create_app(extractor, ServeConfig(max_batch_size=4))) as client:
        got = client.get("/answer", params={"question": "Who?", "context": "Ada."})
        typo = client.post("/answers", json=GOOD)
    assert got.status_code == 405 and got.json()["detail"] == (
        "GET /answer is not answered: the path takes POST, a JSON body sent with the header content-type: application/json")
    assert got.json()["problems"] == [{"location": "path", "message": got.json()["detail"]}]
    assert typo.status_code == 404 and typo.json()["detail"] == (
        "no path '/answers' on this server (did you mean /answer?); it answers POST /answer, GET /health (its API is "
        "described at /docs)")
