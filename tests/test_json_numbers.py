"""Every number an answer carries is a JSON number or null: a question no span survives for (its no-answer score
infinite) was written with the token ``Infinity`` (not JSON) by predict's files and extract, and with the string
``"Infinity"`` by serve, whose OpenAPI schema says ``number``."""

from __future__ import annotations

import json
import math

import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError

from bio_mrc.inference import AnswerExtractor
from bio_mrc.inference.files import answer_record, answer_record_problem, write_files_from_stream
from bio_mrc.io import printable_json
from bio_mrc.serving.app import answer_of, create_app, pydantic_json
from bio_mrc.serving.schema import Answer, AnswerResponse, Span
from bio_mrc.types import AnswerSpan, DocumentAnswer, Prediction, RankedAnswers

from .test_serve import GOOD, extractor, model_dir  # noqa: F401  (fixtures)


def strict_json(text: str):
    """``text`` read as JSON, refusing ``NaN``, ``Infinity`` and ``-Infinity``, which Python's reader takes."""

    def refuse(constant: str):
        raise ValueError(f"{constant} is no JSON number")

    return json.loads(text, parse_constant=refuse)


NO_SPAN = Prediction("q1", [], math.inf, abstain=False, confidence=0.0)  # no span survived: null - best has no best
ANSWERED = Prediction("q2", [AnswerSpan("Newton", 0, 6, 3.5)], -2.0, confidence=0.9)


def test_a_prediction_with_no_finite_no_answer_score_gives_null():
    assert NO_SPAN.to_dict()["no_answer_score"] is None and strict_json(printable_json(NO_SPAN.to_dict()))
    assert ANSWERED.to_dict()["no_answer_score"] == -2.0
    assert Prediction("q3", [], float("nan"), confidence=float("nan")).to_dict()["confidence"] is None
    ranked = RankedAnswers("Who?", [DocumentAnswer("Newton", 0, 6, 1.0, 1)], [NO_SPAN, ANSWERED])
    documents = strict_json(printable_json(ranked.to_dict()))["documents"]
    assert [document["no_answer_score"] for document in documents] == [None, -2.0]


def test_serves_answer_of_no_span_is_json_with_null_for_no_finite_value():
    text = pydantic_json(AnswerResponse(model="m", decoding="span", results=[answer_of(NO_SPAN, None), answer_of(ANSWERED, 0.5)])).body
    results = strict_json(text)["results"]
    assert [result["no_answer_score"] for result in results] == [None, -2.0]
    assert Answer(
        answer="", answers=[], spans=[], abstain=True, below_threshold=False, no_answer_score=math.inf, confidence=math.nan, probability=-math.inf
    ).model_dump(include={"no_answer_score", "confidence", "probability"}) == {"no_answer_score": None, "confidence": None, "probability": None}


@pytest.mark.parametrize("score", [math.inf, -math.inf, math.nan])
def test_a_span_of_no_finite_score_is_refused_not_written_as_a_string(score):
    """The schema says a span's score is a number, never null: a span of no finite score is no span to answer with."""
    with pytest.raises(ValidationError, match="finite number"):
        Span(text="a", start=0, end=1, score=score)


def test_a_request_no_span_survives_for_is_answered_in_json_as_its_schema_says(extractor, monkeypatch):  # noqa: F811
    def no_span(self, outputs, examples, *args, **kwargs):
        return [Prediction(example.id, [], math.inf, confidence=0.0) for example in examples]

    monkeypatch.setattr(AnswerExtractor, "predict", no_span)
    with TestClient(create_app(extractor)) as client:
        response = client.post("/answer", json={**GOOD, "decoding": "span"})
        schema = client.get("/openapi.json").json()["components"]["schemas"]["Answer"]["properties"]["no_answer_score"]
    assert response.status_code == 200
    (result,) = strict_json(response.text)["results"]
    assert result["no_answer_score"] is None and result["spans"] == [] and result["answer"] == ""
    assert {"type": "null"} in schema["anyOf"] and "no span" in schema["description"]


def test_predicts_files_of_a_question_no_span_survives_for_are_json(tmp_path):
    """The answers stream and the n-best file hold null for its no-answer score, the na_prob file 1 (no answer, sure);
    a stream so written reads back as predict's own (a --resume)."""
    stream = tmp_path / "p.answers.jsonl"
    stream.write_text("".join(printable_json(answer_record(p, "span")) + "\n" for p in (NO_SPAN, ANSWERED)), encoding="utf-8")
    lines = [strict_json(line) for line in stream.read_text(encoding="utf-8").splitlines()]
    assert lines[0]["no_answer_score"] is None and all(answer_record_problem(line) is None for line in lines)
    files = write_files_from_stream(stream, tmp_path / "p.json", ["span"])["span"]
    assert strict_json(files.nbest.read_text(encoding="utf-8"))["q1"]["no_answer_score"] is None
    na_probs = strict_json(files.na_probs.read_text(encoding="utf-8"))
    assert na_probs["q1"] == 1.0 and 0 < na_probs["q2"] < 0.5
