"""One question over several documents: answers ranked across them by a score comparable between documents (the
span's score above its own document's no-answer score), each naming its document; ``top_k`` counts across them."""

import json

import pytest

import numpy as np

from bio_mrc import registry
from bio_mrc.decoding.postprocess import DecodeConfig, decode
from bio_mrc.decoding.window_outputs import WindowOutputs
from bio_mrc.inference import AnswerExtractor
from bio_mrc.inference.documents import cross_document_scores, rank_across_documents, window_predictions
from bio_mrc.types import AnswerSpan, Example, Prediction


QUESTION = "Who formulated the laws of motion?"
DOCUMENTS = [
    "The Normans gave their name to Normandy, a region in France.",
    "Isaac Newton formulated the laws of motion and universal gravitation in 1687.",
    "Newton was an English mathematician, physicist and astronomer.",
]


def prediction(qid, scores, no_answer_score, abstain=False):
    return Prediction(qid, [AnswerSpan(f"{qid}{k}", k, k + 1, s) for k, s in enumerate(scores)], no_answer_score, abstain)


def test_ranking_by_the_margin_over_each_documents_no_answer_score():
    # document 0: the highest raw span score (5), but its null is 1 + 5 = 6: margins -1 and -3
    # document 1: null = -4 + 2 = -2, margin 4; document 2 (a BIO-like null of 0): margin 0.5
    docs = [prediction("a", [5.0, 3.0], 1.0), prediction("b", [2.0], -4.0), prediction("c", [0.5], -0.5)]
    assert cross_document_scores(docs[0]) == [-1.0, -3.0]
    ranked = rank_across_documents("Q?", docs, top_k=4, names=["a.txt", "b.txt", "c.txt"])
    assert [(a.document, a.text, a.score) for a in ranked.answers] == [(1, "b0", 4.0), (2, "c0", 0.5), (0, "a0", -1.0), (0, "a1", -3.0)]
    assert [a.name for a in ranked.answers] == ["b.txt", "c.txt", "a.txt", "a.txt"] and ranked.answer == "b0"
    assert [a.text for a in rank_across_documents("Q?", docs, top_k=2).answers] == ["b0", "c0"]  # top_k across documents
    no_score = [prediction("a", [1.0], None), prediction("b", [3.0], None)]  # a decoding without a null: its own score
    assert [a.document for a in rank_across_documents("Q?", no_score, top_k=2).answers] == [1, 0]
    abstaining = [prediction("a", [1.0], 2.0, abstain=True)]
    assert rank_across_documents("Q?", abstaining).answer == ""


def _scores_alone(extractor, decoding, document):
    """(score, start, span) of a document asked alone, best first: where the decoding's null is a window's, each
    window's spans against that window's null, a span read in two windows at its better margin."""
    alone = extractor(QUESTION, document, top_k=20)  # the single-document API, unchanged
    if not registry.decoding(decoding).rank_windows:
        return [(score, span.start, span) for span, score in zip(alone.spans, cross_document_scores(alone))]
    (example,), _ = extractor.examples(QUESTION, document)
    outputs = extractor.trained.windows([example])
    rows = np.arange(len(outputs.example_index))
    best = {}
    for window in extractor.predict(outputs.take(rows, rows), [example] * len(rows), False, decoding):
        for span, score in zip(window.spans, cross_document_scores(window)):
            if (span.start, span.end) not in best or score > best[span.start, span.end][0]:
                best[span.start, span.end] = (score, span.start, span)
    return sorted(best.values(), key=lambda item: (-item[0], item[1], item[2].end))


def test_a_long_document_is_ranked_window_by_window_not_by_a_null_from_another_window():
    """Document 0 has two windows: "Ada" scores 3 + 3 = 6 in window 0, whose null is 5 + 5 = 10 (margin -4), and
    "Bob" 1 + 1 = 2 in window 1, whose null is 0 (margin 2). Document 1, one window: "Cy" 2 + 2 = 4, null 0.
    Measured against the document's lowest null (0, window 1's), "Ada" would get 6 and outrank "Cy"'s 4."""
    offsets = np.array([[[-1, -1], [0, 3]], [[-1, -1], [4, 7]], [[-1, -1], [0, 2]]])
    start, end = np.zeros((3, 2)), np.zeros((3, 2))
    start[0], end[0] = [5.0, 3.0], [5.0, 3.0]
    start[1], end[1] = [0.0, 1.0], [0.0, 1.0]
    start[2], end[2] = [0.0, 2.0], [0.0, 2.0]
    outputs = WindowOutputs(np.array([0, 0, 1]), offsets, offsets[..., 0] >= 0, start_logits=start, end_logits=end)
    examples = [Example("0", "who?", "Ada Bob", None), Example("1", "who?", "Cy", None)]

    def decoded(windows, asked):
        return decode(windows, asked, "span", DecodeConfig())

    documents = decoded(outputs, examples)
    assert documents[0].no_answer_score == pytest.approx(0.0 - 6.0)  # the single-document rule, unchanged
    documents[0].probability = 0.7  # as a calibrator gives it to the document's best span, "Ada"
    ranked = rank_across_documents("who?", documents, top_k=3, windows=window_predictions(outputs, examples, "span", decoded))
    assert [(a.document, a.text, a.score) for a in ranked.answers] == [(1, "Cy", 4.0), (0, "Bob", 2.0), (0, "Ada", -4.0)]
    assert ranked.answers[2].probability == 0.7 and ranked.answers[1].probability is None
    assert window_predictions(outputs, examples, "bio", decoded) is None  # a null of 0 for every window: no split


@pytest.mark.parametrize("decoding", ["span", "bio", "joint"])
def test_the_extractor_ranks_every_documents_spans_as_computed_document_by_document(trained_dir, decoding):  # noqa: F811
    extractor = AnswerExtractor.from_pretrained(trained_dir, decoding=decoding)
    ranked = extractor(QUESTION, DOCUMENTS, top_k=5, names=["n.txt", "newton.txt", "bio.txt"])
    expected = sorted(((-score, d, start, span.end, span.text, score) for d, doc in enumerate(DOCUMENTS)
                       for score, start, span in _scores_alone(extractor, decoding, doc)))[:5]
    expected = [(score, d, text) for _, d, _, _, text, score in expected]
    assert [(a.document, a.text) for a in ranked.answers] == [(d, text) for *_, d, text in expected]
    # several documents run in one padded batch: the same scores up to float32 rounding
    assert [a.score for a in ranked.answers] == pytest.approx([score for score, *_ in expected], rel=1e-5, abs=1e-5)
    for answer in ranked.answers:
        assert DOCUMENTS[answer.document][answer.start:answer.end] == answer.text
        assert answer.name == ["n.txt", "newton.txt", "bio.txt"][answer.document]
    assert len(ranked.documents) == 3 and json.dumps(ranked.to_dict())


def test_several_documents_refuse_what_they_cannot_do(trained_dir):  # noqa: F811
    extractor = AnswerExtractor.from_pretrained(trained_dir)
    with pytest.raises(ValueError, match="^require_answer=False changes only multi_span answers"):  # single spans
        extractor(QUESTION, DOCUMENTS, require_answer=False)
    several = extractor(QUESTION, DOCUMENTS, multi_span=True)  # each document's multi-span answer, ranked across them
    assert [[(s.start, s.end) for s in p.spans] for p in several.documents] == [  # padded beside the others: the same spans
        [(s.start, s.end) for s in extractor(QUESTION, d, multi_span=True).spans] for d in DOCUMENTS]
    with pytest.raises(ValueError, match="the list of contexts is empty"):
        extractor(QUESTION, [])
    with pytest.raises(ValueError, match="empty or missing context \\(record 'input 1'\\)"):
        extractor(QUESTION, ["Newton.", " "])
    with pytest.raises(ValueError, match="2 document names for 3 documents"):
        extractor(QUESTION, DOCUMENTS, names=["a", "b"])
    with pytest.raises(ValueError, match="2 questions but 3 contexts"):  # lists of both still pair them
        extractor([QUESTION, QUESTION], DOCUMENTS)


def test_the_pipeline_ranks_documents_as_the_extractor_does(trained_dir):  # noqa: F811
    import math

    from transformers import pipeline

    qa = pipeline("bio-mrc-qa", model=str(trained_dir), device="cpu")
    results = qa(question=QUESTION, context=DOCUMENTS, top_k=4, decoding="joint")
    ranked = AnswerExtractor.from_pretrained(trained_dir, decoding="joint")(QUESTION, DOCUMENTS, top_k=4)
    assert [(r["document"], r["answer"], r["start"]) for r in results] == [(a.document, a.text, a.start) for a in ranked.answers]
    assert [r["score"] for r in results] == pytest.approx([1 / (1 + math.exp(-a.score)) for a in ranked.answers])
    best = qa(question=QUESTION, context=DOCUMENTS, decoding="joint")  # top_k 1: one dict
    assert best == results[0]
    several = qa(question=QUESTION, context=DOCUMENTS, multi_span=True, decoding="joint")  # every span, a list
    ranked = AnswerExtractor.from_pretrained(trained_dir, decoding="joint")(QUESTION, DOCUMENTS, multi_span=True)
    assert [(r["document"], r["answer"], r["start"]) for r in several] == [(a.document, a.text, a.start) for a in ranked.answers]
    # several documents inside a batch of dicts: said as such (it read "empty or missing context (got a list)")
    with pytest.raises(ValueError, match=r"^the context is a list of documents: one question over several documents is "
                                         r"asked on its own .*\(record 'input 1'\)$"):
        qa([{"question": QUESTION, "context": DOCUMENTS[0]}, {"question": QUESTION, "context": DOCUMENTS}])


def test_serve_answers_one_question_over_several_documents(trained_dir):  # noqa: F811
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from bio_mrc.serving.app import create_app
    from bio_mrc.serving.config import ServeConfig

    extractor = AnswerExtractor.from_pretrained(trained_dir, decoding="joint")
    ranked = extractor(QUESTION, DOCUMENTS, top_k=3)
    with TestClient(create_app(extractor, ServeConfig(max_batch_size=3))) as client:
        response = client.post("/answer", json={"question": QUESTION, "context": DOCUMENTS, "top_k": 3, "decoding": "joint"})
        single = client.post("/answer", json={"question": QUESTION, "context": DOCUMENTS[1]})
        too_many = client.post("/answer", json={"question": QUESTION, "context": DOCUMENTS * 2})
        multi = client.post("/answer", json={"question": QUESTION, "context": DOCUMENTS, "multi_span": True})
    assert response.status_code == 200, response.text
    (result,) = response.json()["results"]
    assert [(s["document"], s["text"], s["start"]) for s in result["spans"]] == [(a.document, a.text, a.start) for a in ranked.answers]
    assert [s["score"] for s in result["spans"]] == pytest.approx([a.score for a in ranked.answers])
    assert result["answer"] == ranked.answer and result["document"] == ranked.answers[0].document
    assert single.json()["results"][0]["document"] is None and single.json()["results"][0]["spans"][0]["document"] is None
    assert too_many.status_code == 413 and "6 documents for one question" in too_many.json()["detail"]
    multi_ranked = extractor(QUESTION, DOCUMENTS, multi_span=True)  # every document's spans, ranked across them
    assert multi.status_code == 200 and [(s["document"], s["text"]) for s in multi.json()["results"][0]["spans"]] == [
        (a.document, a.text) for a in multi_ranked.answers]


def test_extract_ranks_the_answers_of_several_context_files(trained_dir, tmp_path, capsys):  # noqa: F811
    from bio_mrc.cli import main

    paths = []
    for k, text in enumerate(DOCUMENTS):
        paths.append(tmp_path / f"doc{k}.txt")
        paths[-1].write_text(text, encoding="utf-8")
    capsys.readouterr()
    assert main(["extract", "--model", str(trained_dir), "--question", QUESTION, "--context-file", *map(str, paths),
                 "--top-k", "3", "--decoding", "joint"]) == 0
    result = json.loads(capsys.readouterr().out)
    ranked = AnswerExtractor.from_pretrained(trained_dir, decoding="joint")(QUESTION, DOCUMENTS, top_k=3)
    assert [(a["document"], a["name"], a["text"]) for a in result["answers"]] == [
        (a.document, str(paths[a.document]), a.text) for a in ranked.answers]
    assert result["answer"] == ranked.answer and [d["name"] for d in result["documents"]] == list(map(str, paths))
    assert main(["extract", "--model", str(trained_dir), "--question", QUESTION, "--context", DOCUMENTS[1], "--top-k", "2"]) == 0
    assert len(json.loads(capsys.readouterr().out)["spans"]) == 2  # one document: the single-document record
    assert main(["extract", "--model", str(trained_dir), "--question", QUESTION, "--context-file", *map(str, paths),
                 "--html", str(tmp_path / "page.html")]) == 2
    error = capsys.readouterr().err.strip()
    assert error == "error: --html takes one document; several are answered with spans ranked across them (--top-k, --multi-span)"
    assert not (tmp_path / "page.html").exists()
    assert main(["extract", "--model", str(trained_dir), "--question", QUESTION]) == 2
    assert "give --context-file FILE... or --context TEXT..." in capsys.readouterr().err
    assert main(["extract", "--model", str(trained_dir), "--question", QUESTION, "--context", DOCUMENTS[1],
                 "--top-k", "2", "--multi-span"]) == 2
    assert capsys.readouterr().err.strip() == ("error: top_k > 1 asks for alternative answers, multi_span for one answer "
                                               "of several spans: pick one")
