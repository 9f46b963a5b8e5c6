"""One question over several documents: answers ranked across them by a score comparable between documents (the
span's score above its own document's no-answer score), each naming its document; ``top_k`` counts across them."""

import json

import pytest

from bio_mrc.inference import AnswerExtractor
from bio_mrc.inference.documents import cross_document_scores, rank_across_documents
from bio_mrc.types import AnswerSpan, Prediction

from .test_pipeline import trained_dir  # noqa: F401  (module-scoped fixture: a tiny overfitted joint model)

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


@pytest.mark.parametrize("decoding", ["span", "bio", "joint"])
def test_the_extractor_ranks_every_documents_spans_as_computed_document_by_document(trained_dir, decoding):  # noqa: F811
    extractor = AnswerExtractor.from_pretrained(trained_dir, decoding=decoding)
    ranked = extractor(QUESTION, DOCUMENTS, top_k=5, names=["n.txt", "newton.txt", "bio.txt"])
    alone = [extractor(QUESTION, doc, top_k=20) for doc in DOCUMENTS]  # the single-document API, unchanged
    expected = sorted(((score, -d, -k, d, span.text) for d, p in enumerate(alone)
                       for k, (span, score) in enumerate(zip(p.spans, cross_document_scores(p)))), reverse=True)[:5]
    assert [(a.document, a.text) for a in ranked.answers] == [(d, text) for *_, d, text in expected]
    assert [a.score for a in ranked.answers] == pytest.approx([score for score, *_ in expected])
    for answer in ranked.answers:
        assert DOCUMENTS[answer.document][answer.start:answer.end] == answer.text
        assert answer.name == ["n.txt", "newton.txt", "bio.txt"][answer.document]
    assert len(ranked.documents) == 3 and json.dumps(ranked.to_dict())


def test_several_documents_refuse_what_they_cannot_do(trained_dir):  # noqa: F811
    extractor = AnswerExtractor.from_pretrained(trained_dir)
    with pytest.raises(ValueError, match="multi_span answers one document at a time"):
        extractor(QUESTION, DOCUMENTS, multi_span=True)
    with pytest.raises(ValueError, match="the list of contexts is empty"):
        extractor(QUESTION, [])
    with pytest.raises(ValueError, match="empty or missing context \\(record 'input 1'\\)"):
        extractor(QUESTION, ["Newton.", " "])
    with pytest.raises(ValueError, match="2 document names for 3 documents"):
        extractor(QUESTION, DOCUMENTS, names=["a", "b"])
    with pytest.raises(ValueError, match="2 questions but 3 contexts"):  # lists of both still pair them
        extractor([QUESTION, QUESTION], DOCUMENTS)
