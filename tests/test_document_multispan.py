"""One question over several documents with several answer spans: each document's own multi-span answer (none from a
document that abstains), every document's spans ranked across them by the score single spans rank by, at every door."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from bio_mrc import registry
from bio_mrc.inference import AnswerExtractor
from bio_mrc.inference.documents import DocumentRanking, rank_across_documents
from bio_mrc.types import AnswerSpan, Prediction

from .conftest import untrained_model_folder

WORDS = "isaac newton formulated the laws of motion and gravitation in 1687 normans gave their name to normandy".split()
QUESTION = "who formulated the laws of motion?"


def single(qid: str, spans: list[tuple[int, float]], no_answer_score: float, abstain: bool = False) -> Prediction:
    """A document's single n-best: (start, score) spans one character long, best first."""
    return Prediction(qid, [AnswerSpan(f"{qid}{k}", k, k + 1, score) for k, score in spans], no_answer_score, abstain)


def answer(qid: str, starts: list[int], abstain: bool = False) -> Prediction:
    """The same document's multi-span answer: the spans at ``starts``, each its own probability (its share)."""
    spans = [AnswerSpan(f"{qid}{k}", k, k + 1, 0.5 - k / 10, 0.5 - k / 10) for k in starts]
    return Prediction(qid, spans, None, abstain)


# margins (span - null, null = no_answer_score + best): a0 4, a1 2; b0 1, b1 0.5, b2 -0.5; c abstains; d0 2 (a1's tie)
SINGLES = [single("a", [(0, 5.0), (1, 3.0)], -4.0), single("b", [(0, 2.0), (1, 1.5), (2, 0.5)], -1.0),
           single("c", [(0, 9.0)], 1.0, abstain=True), single("d", [(0, 3.0)], -2.0)]
ANSWERS = [answer("a", [0, 1]), answer("b", [0, 1]), answer("c", [0], abstain=True), answer("d", [0])]
RANKED = [(0, "a0", 4.0, 0.5), (0, "a1", 2.0, 0.4), (3, "d0", 2.0, 0.5), (1, "b0", 1.0, 0.5), (1, "b1", 0.5, 0.4)]


def rows(ranked) -> list[tuple]:
    return [(a.document, a.text, a.score, a.probability) for a in ranked.answers]


def test_every_documents_answer_spans_ranked_by_their_single_span_margins():
    # c abstains: its answer gives no span; b2 is no part of b's answer; a1 and d0 tie at 2: the earlier document first
    ranked = rank_across_documents("Q?", SINGLES, None, ["a", "b", "c", "d"], answers=ANSWERS)
    assert rows(ranked) == RANKED
    assert ranked.documents == ANSWERS and ranked.answer == "a0" and [a.name for a in ranked.answers] == ["a", "a", "d", "b", "b"]
    assert rows(rank_across_documents("Q?", SINGLES, 2, answers=ANSWERS)) == RANKED[:2]  # top_k: the best of every span
    assert rank_across_documents("Q?", SINGLES[2:3], None, answers=ANSWERS[2:3]).answers == []  # abstaining alone: none


def test_a_span_outside_the_single_n_best_takes_its_documents_lowest_margin():
    # b's answer holds a span at 5, which its single n-best lacks: at most b2's margin, -0.5
    wider = [answer("b", [0, 5])]
    assert rows(rank_across_documents("Q?", SINGLES[1:2], None, answers=wider)) == [(0, "b0", 1.0, 0.5), (0, "b5", -0.5, 0.0)]


def test_multi_span_documents_ranked_a_chunk_at_a_time_rank_as_in_one():
    for top_k in (None, 1, 3):
        ranking = DocumentRanking(top_k, multi_span=True)
        for begin in range(0, 4, 2):
            ranking.add(SINGLES[begin : begin + 2], answers=ANSWERS[begin : begin + 2])
        assert rows(ranking.ranked("Q?")) == RANKED[:top_k]
        assert ranking.ranked("Q?") == rank_across_documents("Q?", SINGLES, top_k, answers=ANSWERS)
    with pytest.raises(ValueError, match="a multi-span ranking takes each document's multi-span answer"):
        DocumentRanking(None, multi_span=True).add(SINGLES)


@pytest.fixture(scope="module")
def model_folder(tiny_encoder_dir, tmp_path_factory):
    return untrained_model_folder(tiny_encoder_dir, tmp_path_factory.mktemp("multispan") / "model", heads="span+bio",
                                  max_seq_length=40, doc_stride=12, max_query_length=10)


@pytest.fixture(scope="module")
def documents() -> list[str]:
    rng = np.random.default_rng(3)
    return [" ".join(rng.choice(WORDS, size=int(rng.integers(3, 60)))) for _ in range(6)]


def abstaining_half(folder, documents: list[str], decoding: str, tmp_path, **settings):
    """A copy of ``folder`` whose saved no-answer threshold is the median of the documents' no-answer scores, with
    ``settings`` saved in its config too."""
    import shutil

    copy = shutil.copytree(folder, tmp_path / "model")
    nulls = sorted(p.no_answer_score for p in AnswerExtractor.from_pretrained(copy, decoding=decoding, device="cpu")(
        QUESTION, documents).documents)
    config = json.loads((copy / "config.json").read_text())
    config.update(settings, no_answer_thresholds={registry.decoding(decoding).threshold_key: nulls[len(nulls) // 2]})
    (copy / "config.json").write_text(json.dumps(config))
    return copy


@pytest.mark.parametrize("decoding", ["span", "bio", "joint"])
def test_each_documents_spans_are_its_own_multi_span_answer_scored_as_single_spans_rank(
        model_folder, documents, decoding, tmp_path):
    folder = abstaining_half(model_folder, documents, decoding, tmp_path)
    extractor = AnswerExtractor.from_pretrained(folder, decoding=decoding, device="cpu", precision="fp32")
    ranked = extractor(QUESTION, documents, multi_span=True)
    assert {p.abstain for p in ranked.documents} == {False, True}
    for d, document in enumerate(documents):
        alone = extractor(QUESTION, document, multi_span=True)  # the document asked alone
        mine = [a for a in ranked.answers if a.document == d]
        assert ranked.documents[d].abstain == alone.abstain  # padded beside the others: the same up to float rounding
        assert [(s.start, s.end) for s in ranked.documents[d].spans] == [(s.start, s.end) for s in alone.spans]
        expected = [] if alone.abstain else sorted((s.start, s.end, s.text, s.probability) for s in alone.spans)
        got = sorted((a.start, a.end, a.text, a.probability) for a in mine)
        assert [row[:3] for row in got] == [row[:3] for row in expected]
        assert [row[3] for row in got] == pytest.approx([row[3] for row in expected], abs=1e-5)
        # each span's score: the one the single-span ranking gives those characters of this document alone
        margins = {(a.start, a.end): a.score for a in extractor(QUESTION, [document], top_k=100_000).answers}
        floor = min(margins.values())
        assert [a.score for a in mine] == pytest.approx([margins.get((a.start, a.end), floor) for a in mine], abs=1e-5)
    assert [(-a.score, a.document) for a in ranked.answers] == sorted((-a.score, a.document) for a in ranked.answers)
    assert extractor(QUESTION, documents, multi_span=True, top_k=2).answers == ranked.answers[:2]
    extractor.chunk_size = 4  # two chunks: the answers of one pass
    assert extractor(QUESTION, documents, multi_span=True) == ranked


@pytest.mark.parametrize("decoding", ["span", "joint"])
def test_every_door_gives_the_extractors_multi_span_answers_over_documents(model_folder, documents, decoding, tmp_path, capsys):
    from transformers import pipeline

    from bio_mrc.cli import main
    from bio_mrc.inference.pipeline import TASK

    # every further n-best span joins an answer (a span-count rule of 0 saved with the model), half the documents abstain
    model_folder = abstaining_half(model_folder, documents, decoding, tmp_path, min_span_probabilities={decoding: 0.0})
    extractor = AnswerExtractor.from_pretrained(model_folder, decoding=decoding, device="cpu", precision="fp32")
    ranked = extractor(QUESTION, documents, multi_span=True)
    expected = [(a.document, a.start, a.end, a.text) for a in ranked.answers]
    assert {p.abstain for p in ranked.documents} == {False, True}
    assert len({a.document for a in ranked.answers}) > 1 and len(expected) > len({a.document for a in ranked.answers})
    assert extractor.answer_documents(QUESTION, documents, multi_span=True) == ranked
    qa = pipeline(TASK, model=str(model_folder), device="cpu", precision="fp32")
    results = qa(question=QUESTION, context=documents, multi_span=True, decoding=decoding)
    assert [(r["document"], r["start"], r["end"], r["answer"]) for r in results] == expected
    assert [r["score"] for r in results] == pytest.approx([1 / (1 + math.exp(-a.score)) for a in ranked.answers], abs=1e-5)
    assert [r["probability"] for r in results] == pytest.approx([a.probability for a in ranked.answers], abs=1e-5)
    paths = []
    for k, text in enumerate(documents):
        paths.append(tmp_path / f"doc{k}.txt")  # beside the model's copy
        paths[-1].write_text(text, encoding="utf-8")
    capsys.readouterr()
    assert main(["extract", "--model", str(model_folder), "--question", QUESTION, "--context-file", *map(str, paths),
                 "--multi-span", "--decoding", decoding, "--precision", "fp32", "--device", "cpu"]) == 0
    printed = json.loads(capsys.readouterr().out)["answers"]
    assert [(a["document"], a["start"], a["end"], a["text"]) for a in printed] == expected
    assert [a["name"] for a in printed] == [str(paths[a.document]) for a in ranked.answers]
    served = _served(extractor, documents, decoding)
    assert [(s["document"], s["start"], s["end"], s["text"]) for s in served["spans"]] == expected
    assert [s["probability"] for s in served["spans"]] == pytest.approx([a.probability for a in ranked.answers], abs=1e-5)
    assert served["answers"] == [a.text for a in ranked.answers] and served["answer"] == ranked.answer


def _served(extractor: AnswerExtractor, documents: list[str], decoding: str) -> dict:
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from bio_mrc.serving.app import create_app
    from bio_mrc.serving.config import ServeConfig

    with TestClient(create_app(extractor, ServeConfig(max_batch_size=len(documents)))) as client:
        response = client.post("/answer", json={"question": QUESTION, "context": documents, "multi_span": True,
                                                "decoding": decoding})
        cut = client.post("/answer", json={"question": QUESTION, "context": documents, "multi_span": True,
                                           "decoding": decoding, "top_k": 2})
    assert response.status_code == 200 and cut.status_code == 200, response.text + cut.text
    (result,) = response.json()["results"]
    cut_spans, first_two = cut.json()["results"][0]["spans"], result["spans"][:2]
    # two requests are two forward passes, batched apart: the same spans, their numbers to float32's last bits
    assert [{k: v for k, v in s.items() if k not in ("score", "probability")} for s in cut_spans] == \
        [{k: v for k, v in s.items() if k not in ("score", "probability")} for s in first_two]
    assert [v for s in cut_spans for v in (s["score"], s["probability"])] == pytest.approx(
        [v for s in first_two for v in (s["score"], s["probability"])], abs=1e-5)
    return result
