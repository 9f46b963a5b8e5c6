"""Answers that do not depend on how the work is cut: the order of the documents, the batch size, the other
documents or questions of the call (whose longer windows pad a row), and equal scores, which bf16 logits give often
(each broken by position, never by the padding or the batch)."""

from __future__ import annotations

import weakref

import numpy as np
import pytest

from bio_mrc import registry
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


def test_documents_ranked_a_chunk_at_a_time_rank_as_in_one():
    from bio_mrc.inference.documents import DocumentRanking

    # margins (span - null, null = no_answer_score + best): a -1, -3; b 4; c 0.5; b again (d) 4; e abstains, 9 - 0 = 9
    documents = [Prediction("a", [AnswerSpan("a0", 0, 1, 5.0), AnswerSpan("a1", 2, 3, 3.0)], 1.0),
                 Prediction("b", [AnswerSpan("b0", 0, 1, 2.0)], -4.0), Prediction("c", [AnswerSpan("c0", 0, 1, 0.5)], -0.5),
                 Prediction("d", [AnswerSpan("b0", 0, 1, 2.0)], -4.0),
                 Prediction("e", [AnswerSpan("e0", 0, 1, 9.0)], -9.0, abstain=True)]
    for top_k in (1, 3, 10):
        ranking = DocumentRanking(top_k)
        for begin in range(0, len(documents), 2):
            ranking.add(documents[begin : begin + 2])
        ranked = ranking.ranked("Q?", ["a", "b", "c", "d", "e"])
        assert ranked == rank_across_documents("Q?", documents, top_k, ["a", "b", "c", "d", "e"])
        assert [(a.document, a.text, a.score) for a in ranked.answers] == [
            (1, "b0", 4.0), (3, "b0", 4.0), (2, "c0", 0.5), (0, "a0", -1.0), (0, "a1", -3.0), (4, "e0", 9.0)][:top_k]
        assert [p.id for p in ranked.documents] == ["a", "b", "c", "d", "e"] and len(ranking.best) == min(top_k, 6)


def documents_alive(extractor: AnswerExtractor, monkeypatch) -> list[int]:
    """For each forward pass of ``extractor`` from now on: the documents whose window logits are alive as it begins,
    its own included (a view of the logits keeps them alive)."""
    windows, alive, counts = extractor.trained.windows, {}, []

    def counted(examples, **options):
        counts.append(sum(alive.values()) + len(examples))
        outputs = windows(examples, **options)
        alive[len(counts)] = len(examples)
        weakref.finalize(outputs.logits["start_logits"], alive.pop, len(counts))
        return outputs
    monkeypatch.setattr(extractor.trained, "windows", counted)
    return counts


def abstaining_half(extractor: AnswerExtractor, documents: list[str], decoding: str, monkeypatch) -> None:
    """A no-answer threshold saved with the model at the median of the documents' no-answer scores: the documents
    above it abstain."""
    nulls = sorted(p.no_answer_score for p in extractor(QUESTION, documents, decoding=decoding).documents)
    key = registry.decoding(decoding).threshold_key
    monkeypatch.setattr(extractor.trained.model.config, "no_answer_thresholds", {key: nulls[len(nulls) // 2]})


@pytest.mark.parametrize("decoding", ["span", "bio", "joint"])
def test_documents_are_run_a_chunk_at_a_time_with_the_answers_of_one_pass(extractor, decoding, monkeypatch):
    with_tied_logits(extractor, monkeypatch)  # logits of each token's own: the numbers of one pass, bit for bit
    rng = np.random.default_rng(5)
    documents = [" ".join(rng.choice(WORDS, size=int(rng.integers(2, 70)))) for _ in range(5)]
    documents += ["newton", "the laws", documents[1], documents[3]]  # no-answer scores apart; equal answers in chunks apart
    abstaining_half(extractor, documents, decoding, monkeypatch)
    names = [f"{k}.txt" for k in range(len(documents))]
    whole = {top_k: extractor(QUESTION, documents, top_k=top_k, decoding=decoding, names=names) for top_k in (1, 3, 100_000)}
    answers = whole[100_000].answers
    assert {p.abstain for p in whole[1].documents} == {False, True}
    assert any(a.score == b.score and a.document // 2 != b.document // 2 for a, b in zip(answers, answers[1:]))
    alive = documents_alive(extractor, monkeypatch)
    monkeypatch.setattr(extractor, "chunk_size", 2)
    for top_k, expected in whole.items():
        assert extractor(QUESTION, documents, top_k=top_k, decoding=decoding, names=names) == expected
    assert alive == [2, 2, 2, 2, 1] * 3  # 9 documents: four chunks of 2, then 1, the windows of one chunk alive at a time


@pytest.mark.parametrize("decoding", ["span", "joint"])
def test_the_pipeline_runs_documents_a_chunk_at_a_time_with_the_answers_of_one_pass(extractor, decoding, monkeypatch):
    from transformers import pipeline

    from bio_mrc.inference.pipeline import TASK

    qa = pipeline(TASK, model=extractor.trained.path, device="cpu", precision="fp32")
    with_tied_logits(qa.extractor, monkeypatch)
    rng = np.random.default_rng(9)
    documents = [" ".join(rng.choice(WORDS, size=int(rng.integers(2, 70)))) for _ in range(5)]
    documents += ["newton", documents[0]]
    abstaining_half(qa.extractor, documents, decoding, monkeypatch)
    whole = [qa(question=QUESTION, context=documents, top_k=top_k, decoding=decoding, handle_impossible_answer=True)
             for top_k in (1, 4, 100)]
    alive, calls = documents_alive(qa.extractor, monkeypatch), qa.call_count
    monkeypatch.setattr(qa.extractor, "chunk_size", 4)
    assert [qa(question=QUESTION, context=documents, top_k=top_k, decoding=decoding, handle_impossible_answer=True)
            for top_k in (1, 4, 100)] == whole
    assert alive == [4, 3] * 3 and qa.call_count == calls + 3  # a call counts once, whatever its chunks
