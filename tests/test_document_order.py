"""Answers that do not depend on how the work is cut: the order of the documents, the batch size, the other
documents or questions of the call (whose longer windows pad a row), and equal scores, which bf16 logits give often
(each broken by position, never by the padding or the batch)."""

from __future__ import annotations

import numpy as np
import pytest

from bio_mrc.decoding.spans import best_spans
from bio_mrc.inference import AnswerExtractor
from bio_mrc.inference.documents import rank_across_documents
from bio_mrc.types import AnswerSpan, Prediction

from .conftest import untrained_model_folder

WORDS = "isaac newton formulated the laws of motion and gravitation in 1687 normans gave their name to normandy".split()
QUESTION = "who formulated the laws of motion?"


def padded(row: list[float], width: int, fill: float) -> np.ndarray:
    return np.array([row + [fill] * (width - len(row))])


def spans_of(candidates) -> list[tuple[float, int, int]]:
    return [(s, b, e) for s, b, e in zip(candidates.score[0].tolist(), candidates.start[0].tolist(), candidates.end[0].tolist())
            if b >= 0]


@pytest.mark.parametrize("width", [4, 5, 12, 40])
def test_equal_span_scores_go_to_the_earlier_start_then_the_earlier_end_whatever_the_padding(width):
    # tokens 1-3 are the paragraph's, each start and end logit 1: every span i <= j scores 2, so the n-best is by position
    start, end = padded([0.0, 1.0, 1.0, 1.0], width, -np.inf), padded([0.0, 1.0, 1.0, 1.0], width, -np.inf)
    mask = padded([False, True, True, True], width, False).astype(bool)
    assert spans_of(best_spans(start, end, mask, 30, 4)) == [(2.0, 1, 1), (2.0, 1, 2), (2.0, 1, 3), (2.0, 2, 2)]
    # a start tied at the cut: starts 1-3 all reach 2 with end 3, the earlier start's span is kept
    start, end = padded([0.0, 1.0, 1.0, 1.0], width, -np.inf), padded([0.0, 0.0, 0.0, 1.0], width, -np.inf)
    assert spans_of(best_spans(start, end, mask, 30, 1)) == [(2.0, 1, 3)]


@pytest.mark.parametrize("seed", range(3))
def test_a_window_with_tied_scores_has_the_same_n_best_however_far_it_is_padded(seed):
    # logits of a few values: many spans of equal score, as bf16 logits give them; the padding another, longer
    # window of the call gives the row (-inf, masked out) changes nothing
    rng = np.random.default_rng(seed)
    for _ in range(50):
        length, n_best = int(rng.integers(5, 40)), int(rng.integers(1, 25))
        start, end = rng.integers(-3, 3, size=(2, length)).astype(np.float32)
        mask = np.arange(length) > 0
        alone = spans_of(best_spans(start[None], end[None], mask[None], 30, n_best))
        width = length + int(rng.integers(1, 100))
        beside = spans_of(best_spans(padded(start.tolist(), width, -np.inf), padded(end.tolist(), width, -np.inf),
                                     padded(mask.tolist(), width, False).astype(bool), 30, n_best))
        assert alone == beside
        assert alone == sorted(alone, key=lambda span: (-span[0], span[1], span[2]))  # best first, then by position


@pytest.fixture(scope="module")
def extractor(tiny_encoder_dir, tmp_path_factory):
    folder = untrained_model_folder(tiny_encoder_dir, tmp_path_factory.mktemp("order") / "model", heads="span+bio",
                                    max_seq_length=40, doc_stride=12, max_query_length=10)
    return AnswerExtractor.from_pretrained(folder, device="cpu", precision="fp32")


def with_tied_logits(extractor: AnswerExtractor, monkeypatch) -> None:
    """Every forward pass's logits a few values set by each token's characters alone: the same whatever the batch, and
    many spans of equal score, as bf16 logits give them."""
    windows = type(extractor.trained).windows

    def tied(self, *args, **kwargs):
        outputs = windows(self, *args, **kwargs)
        begin, end = outputs.offsets[..., 0], outputs.offsets[..., 1]
        values = {"start_logits": (begin * 7 + end) % 3, "end_logits": (begin + end * 5) % 3,
                  "bio_logits": np.stack([(begin * k + end) % 3 for k in (2, 3, 5)], axis=-1)}
        outputs.logits = {name: np.where(np.isfinite(logits), values[name], logits).astype(np.float32)
                          for name, logits in outputs.logits.items()}
        return outputs
    monkeypatch.setattr(type(extractor.trained), "windows", tied)


def ranked_rows(ranked, order: list[int]) -> list[tuple]:
    """The ranked answers, each document named by its index in the list ``order`` was drawn from."""
    return [(order[a.document], a.text, a.start, a.end, a.score, a.abstain) for a in ranked.answers]


@pytest.mark.parametrize("decoding", ["span", "bio", "joint"])
def test_tied_documents_answer_alike_in_any_order_and_company(extractor, decoding, monkeypatch):
    with_tied_logits(extractor, monkeypatch)
    rng = np.random.default_rng(7)
    documents = [" ".join(rng.choice(WORDS, size=int(rng.integers(2, 70)))) for _ in range(6)]
    everything = extractor(QUESTION, documents, top_k=100_000, decoding=decoding)
    for _ in range(3):
        order = rng.permutation(len(documents)).tolist()
        shuffled = extractor(QUESTION, [documents[k] for k in order], top_k=100_000, decoding=decoding)
        # equal scores go to the earlier document of the list asked, then the earlier span
        assert ranked_rows(shuffled, order) == sorted(ranked_rows(everything, list(range(len(documents)))), key=lambda row: (
            row[5], -row[4], order.index(row[0]), row[2], row[3]))
    for d, document in enumerate(documents):  # each document alone: its own spans and numbers
        alone = extractor(QUESTION, [document], top_k=5, decoding=decoding).documents[0]
        among = everything.documents[d]
        assert [(s.start, s.end, s.score) for s in alone.spans] == [(s.start, s.end, s.score) for s in among.spans[:len(alone.spans)]]
        assert (alone.no_answer_score, alone.confidence) == (among.no_answer_score, among.confidence)
    top = extractor(QUESTION, documents, top_k=8, decoding=decoding)  # top_k: the best of all documents' spans
    assert ranked_rows(top, list(range(len(documents)))) == ranked_rows(everything, list(range(len(documents))))[:8]


@pytest.mark.parametrize("decoding", ["span", "joint"])
def test_documents_answer_alike_whatever_the_batch_size_and_threads(extractor, decoding):
    import torch

    rng = np.random.default_rng(11)
    documents = [" ".join(rng.choice(WORDS, size=int(rng.integers(2, 70)))) for _ in range(5)]
    base = extractor(QUESTION, documents, top_k=6, decoding=decoding)
    threads = torch.get_num_threads()
    for batch_size, count in ((1, threads), (3, 1)):
        torch.set_num_threads(count)
        try:
            other = AnswerExtractor(extractor.trained, decoding=decoding, batch_size=batch_size)(QUESTION, documents, top_k=6)
        finally:
            torch.set_num_threads(threads)
        assert [(a.document, a.start, a.end) for a in other.answers] == [(a.document, a.start, a.end) for a in base.answers]
        assert [a.score for a in other.answers] == pytest.approx([a.score for a in base.answers], abs=1e-5)
        assert [p.confidence for p in other.documents] == pytest.approx([p.confidence for p in base.documents], abs=1e-5)


def test_an_abstaining_documents_spans_carry_no_probability():
    # document 0 abstains: its probability (0.8) is that of "no answer" being right, no span's
    abstaining = Prediction("0", [AnswerSpan("a", 0, 1, 1.0), AnswerSpan("b", 2, 3, 0.5)], 3.0, abstain=True, probability=0.8)
    answering = Prediction("1", [AnswerSpan("c", 0, 1, 2.0)], -1.0, probability=0.6)
    ranked = rank_across_documents("Q?", [abstaining, answering], top_k=3)
    assert [(a.document, a.text, a.abstain, a.probability) for a in ranked.answers] == [
        (1, "c", False, 0.6), (0, "a", True, None), (0, "b", True, None)]
    assert ranked.to_dict()["documents"][0]["probability"] == 0.8  # the document's own, as predicted
