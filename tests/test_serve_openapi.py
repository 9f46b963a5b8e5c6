"""bio-mrc serve's OpenAPI page (``/openapi.json``) tells the truth: each status an operation answers is declared for
that operation, each body validates against the model declared for its status, each request the schema allows is
answered, and each request it forbids is refused in the JSON every refusal has, never a 500."""

from __future__ import annotations

import json

import jsonschema
import pytest
from fastapi.testclient import TestClient

from bio_mrc.inference import AnswerExtractor, TrainedModel
from bio_mrc.serving.app import create_app
from bio_mrc.serving.config import ServeConfig
from bio_mrc.serving.connections import write_refusal

from .conftest import untrained_model_folder

CONTEXT = "The Normans gave their name to Normandy. They were descended from Norse raiders."
QUESTION = "Who were the Normans descended from?"
GOOD = {"question": QUESTION, "context": CONTEXT}
LIMITS = ServeConfig(max_batch_size=3, max_question_chars=40, max_context_chars=120)
JSON = {"content-type": "application/json"}
# What each operation can answer, by hand: the head's and the connection's refusals on both, the body's on POST /answer.
STATUSES = {
    ("post", "/answer"): {200, 400, 408, 413, 415, 417, 422, 431, 500, 501, 503, 504, 505},
    ("get", "/health"): {200, 400, 408, 415, 417, 431, 500, 501, 503, 505},
}


@pytest.fixture(scope="module")
def client(tiny_encoder_dir, tmp_path_factory):
    folder = untrained_model_folder(
        tiny_encoder_dir, tmp_path_factory.mktemp("openapi") / "tiny-joint", heads="span+bio", max_seq_length=48, doc_stride=16, max_query_length=12
    )
    extractor = AnswerExtractor(TrainedModel.load(folder, precision="fp32"))
    with TestClient(create_app(extractor, LIMITS), raise_server_exceptions=False) as client:
        yield client


@pytest.fixture(scope="module")
def schema(client):
    return client.get("/openapi.json").json()


def validator(schema: dict, model: dict) -> jsonschema.Draft202012Validator:
    """A validator of ``model`` (a ``$ref`` into the schema's components, resolved there)."""
    return jsonschema.Draft202012Validator({**model, "components": schema["components"]})


def assert_declared(schema: dict, method: str, path: str, response) -> None:
    """``response``'s status is one its operation declares, and its body is JSON of the model declared for it."""
    responses = schema["paths"][path][method]["responses"]
    declared = responses.get(str(response.status_code))
    assert declared is not None, f"{method.upper()} {path} answered {response.status_code}, not among {sorted(responses)}"
    assert response.headers["content-type"] == "application/json"
    model = declared["content"]["application/json"]["schema"]
    problems = [f"{list(error.absolute_path)}: {error.message}" for error in validator(schema, model).iter_errors(response.json())]
    assert problems == [], (response.status_code, response.text[:300])


def request_model(schema: dict) -> jsonschema.Draft202012Validator:
    body = schema["paths"]["/answer"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    return validator(schema, body)


def test_each_operation_declares_every_status_it_can_answer(schema):
    declared = {
        (method, path): {int(status) for status in operation["responses"]} for path, methods in schema["paths"].items() for method, operation in methods.items()
    }
    assert declared == STATUSES
    for (method, path), statuses in STATUSES.items():
        responses = schema["paths"][path][method]["responses"]
        refusals = {responses[str(status)]["content"]["application/json"]["schema"]["$ref"] for status in statuses - {200}}
        assert refusals == {"#/components/schemas/ErrorResponse"}
        assert all(responses[str(status)]["description"] for status in statuses)


def allowed_requests(schema: dict) -> dict[str, dict]:
    """Requests built from the schema's own words: each enum value, each bound, null where nullable, the optional fields
    left out, the texts at their longest, the lists at their shortest and longest."""
    fields = schema["components"]["schemas"]["AnswerRequest"]["properties"]
    question, listed_question = fields["question"]["oneOf"]
    context, listed_context = fields["context"]["oneOf"]
    requests = {f"decoding {value}": {**GOOD, "decoding": value} for value in fields["decoding"]["enum"]}
    requests |= {f"multi_span {value}": {**GOOD, "multi_span": value} for value in (True, False)}
    requests |= {f"top_k {bound}": {**GOOD, "top_k": fields["top_k"][bound]} for bound in ("minimum", "maximum")}
    threshold = next(choice for choice in fields["threshold"]["anyOf"] if choice["type"] == "number")
    requests |= {f"threshold {bound}": {**GOOD, "threshold": threshold[bound]} for bound in ("minimum", "maximum")}
    requests |= {
        "threshold null": {**GOOD, "threshold": None},
        "options left out": GOOD,
        "texts at their longest": {"question": "Who " * (question["maxLength"] // 4), "context": "Norse " * (context["maxLength"] // 6)},
        "lists at their shortest": {"question": [QUESTION] * listed_question["minItems"], "context": [CONTEXT] * listed_context["minItems"]},
        "lists at their longest": {"question": [QUESTION] * listed_question["maxItems"], "context": [CONTEXT] * listed_context["maxItems"]},
        "one context for every question": {"question": [QUESTION] * listed_question["maxItems"], "context": CONTEXT},
        "documents at most": {"question": QUESTION, "context": [CONTEXT] * listed_context["maxItems"], "top_k": 3},
        "multi_span over documents": {"question": QUESTION, "context": [CONTEXT, "Norse."], "multi_span": True},
    }
    return requests


def test_every_request_the_schema_allows_is_answered(client, schema):
    for name, body in allowed_requests(schema).items():
        assert list(request_model(schema).iter_errors(body)) == [], name  # the schema allows it
        response = client.post("/answer", json=body)
        assert response.status_code == 200, (name, response.text[:300])
        assert_declared(schema, "post", "/answer", response)
        questions = body["question"] if isinstance(body["question"], list) else [body["question"]]
        assert len(response.json()["results"]) == (1 if isinstance(body["context"], list) and len(questions) == 1 else len(questions))


@pytest.mark.parametrize("text", ['{"top_k": 2.0}', '{"top_k": 1e0}', '{"top_k": 20.0}', '{"threshold": 1}', '{"threshold": 0}'])
def test_a_number_is_read_by_its_value_as_json_schema_reads_it(client, schema, text):
    """JSON Schema's integer is any number of no fraction (2.0 is one; a JavaScript client cannot tell 2.0 from 2), and
    its number holds the integers: each is answered as the number it is."""
    body = {**GOOD, **json.loads(text)}
    assert list(request_model(schema).iter_errors(body)) == []
    response = client.post("/answer", content=json.dumps(GOOD)[:-1] + ", " + text[1:], headers=JSON)
    assert response.status_code == 200, response.text
    assert_declared(schema, "post", "/answer", response)
    if "top_k" in body:
        assert len(response.json()["results"][0]["spans"]) == int(body["top_k"])


FORBIDDEN = {  # name: (body, status); each breaks the schema
    "an array for the object": ([GOOD], 422),
    "a string for the object": ("Who?", 422),
    "null for the object": (None, 422),
    "no question": ({"context": CONTEXT}, 422),
    "no context": ({"question": QUESTION}, 422),
    "a question of the wrong type": ({**GOOD, "question": 5}, 422),
    "a null question": ({**GOOD, "question": None}, 422),
    "a list of numbers": ({**GOOD, "question": [1, 2]}, 422),
    "an empty list": ({**GOOD, "question": []}, 422),
    "an empty question": ({**GOOD, "question": ""}, 422),
    "a question too long": ({**GOOD, "question": "q" * 41}, 422),
    "a context too long": ({**GOOD, "context": "c" * 121}, 422),
    "a decoding not named": ({**GOOD, "decoding": "best"}, 422),
    "a null decoding": ({**GOOD, "decoding": None}, 422),
    "multi_span as a number": ({**GOOD, "multi_span": 1}, 422),
    "multi_span as a string": ({**GOOD, "multi_span": "true"}, 422),
    "a null multi_span": ({**GOOD, "multi_span": None}, 422),
    "top_k below its minimum": ({**GOOD, "top_k": 0}, 422),
    "top_k above its maximum": ({**GOOD, "top_k": 21}, 422),
    "top_k as a string": ({**GOOD, "top_k": "2"}, 422),
    "top_k as a boolean": ({**GOOD, "top_k": True}, 422),
    "a null top_k": ({**GOOD, "top_k": None}, 422),
    "top_k with a fraction": ({**GOOD, "top_k": 2.5}, 422),
    "threshold below its minimum": ({**GOOD, "threshold": -0.1}, 422),
    "threshold above its maximum": ({**GOOD, "threshold": 1.5}, 422),
    "threshold as a string": ({**GOOD, "threshold": "0.5"}, 422),
    "threshold as a boolean": ({**GOOD, "threshold": True}, 422),
    "an unknown field": ({**GOOD, "top_p": 0.9}, 422),
    "more questions than a request holds": ({**GOOD, "question": ["Who?"] * 4}, 413),
    "more documents than a request holds": ({**GOOD, "context": [CONTEXT] * 4}, 413),
}


@pytest.mark.parametrize("name", FORBIDDEN)
def test_every_request_the_schema_forbids_is_refused_as_declared(client, schema, name):
    body, status = FORBIDDEN[name]
    assert list(request_model(schema).iter_errors(body)) != []  # the schema forbids it
    response = client.post("/answer", json=body)
    assert response.status_code == status, response.text
    assert_declared(schema, "post", "/answer", response)


REFUSED = {  # name: (body bytes, headers, status): the refusals a request the schema allows (or none reads) may get
    "malformed JSON": (b'{"question": "Who?", "context": ', JSON, 422),
    "a key repeated": (b'{"question": "Who?", "question": "What?", "context": "Newton."}', JSON, 400),
    "not UTF-8": (b'{"question": "Who\xff?", "context": "Newton."}', JSON, 400),
    "no content-type": (json.dumps(GOOD).encode(), {}, 415),
    "a form's content-type": (json.dumps(GOOD).encode(), {"content-type": "application/x-www-form-urlencoded"}, 415),
    "a charset no codec reads": (json.dumps(GOOD).encode(), {"content-type": "application/json; charset=klingon"}, 415),
    "gzip": (json.dumps(GOOD).encode(), {**JSON, "content-encoding": "gzip"}, 415),
    "an expectation": (json.dumps(GOOD).encode(), {**JSON, "expect": "200-ok"}, 417),
    "a WebSocket": (json.dumps(GOOD).encode(), {**JSON, "upgrade": "websocket", "connection": "Upgrade"}, 400),
    "a blank question": (json.dumps({**GOOD, "question": "   "}).encode(), JSON, 422),
    "questions and contexts not one per question": (json.dumps({"question": ["Who?"] * 2, "context": ["a"] * 3}).encode(), JSON, 422),
    "top_k with multi_span": (json.dumps({**GOOD, "top_k": 2, "multi_span": True}).encode(), JSON, 422),
    "answered": (json.dumps(GOOD).encode(), {"content-type": "application/json; charset=utf-8"}, 200),
    "answered in the charset named": (
        json.dumps({**GOOD, "question": "Qui était Noé?"}).encode("latin-1"),
        {"content-type": "application/json; charset=iso-8859-1"},
        200,
    ),
}


@pytest.mark.parametrize("name", REFUSED)
def test_the_body_and_head_refusals_of_post_answer_are_declared(client, schema, name):
    body, headers, status = REFUSED[name]
    response = client.post("/answer", content=body, headers=headers)
    assert response.status_code == status, response.text
    assert_declared(schema, "post", "/answer", response)


@pytest.mark.parametrize(
    "headers, status", [({}, 200), ({"upgrade": "websocket", "connection": "Upgrade"}, 400), ({"content-encoding": "gzip"}, 415), ({"expect": "200-ok"}, 417)]
)
def test_the_head_refusals_of_get_health_are_declared(client, schema, headers, status):
    response = client.get("/health", headers=headers)
    assert response.status_code == status, response.text
    assert_declared(schema, "get", "/health", response)


def test_an_internal_error_is_a_declared_500_on_each_operation(client, schema, monkeypatch):
    def fail(*_args, **_kwargs):
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(client.app.state.extractor, "examples", fail)
    monkeypatch.setattr(type(client.app.state.scheduler), "stats", property(fail))
    for method, path, options in (("post", "/answer", {"json": GOOD}), ("get", "/health", {})):
        response = client.request(method, path, **options)
        assert response.status_code == 500, response.text
        assert_declared(schema, method, path, response)


class Transport:
    """What a connection's refusal writes."""

    def __init__(self) -> None:
        self.written = b""

    def write(self, data: bytes) -> None:
        self.written += data


@pytest.mark.parametrize("status", [400, 408, 431, 501, 503])
def test_the_connection_refusals_are_declared_on_each_operation(schema, status):
    """The refusals written before a request reaches its route (a head sent too slowly or too long, what h11 cannot
    read, a connection past the bound) answer any operation, as each declares."""
    transport = Transport()
    write_refusal(transport, status, "refused")
    head, _, body = transport.written.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 %d " % status) and b"content-type: application/json" in head
    for method, path in STATUSES:
        model = schema["paths"][path][method]["responses"][str(status)]["content"]["application/json"]["schema"]
        assert list(validator(schema, model).iter_errors(json.loads(body))) == []
