"""The bars of answering a list of questions: one a stage over the whole list, however many chunks it is run in;
none where the call is quiet."""

import re

import pytest

from bio_mrc.inference import AnswerExtractor, TrainedModel

from .conftest import untrained_model_folder

QUESTIONS = ["who wrote it?", "when was it?", "who wrote the book?", "what was written?", "who read it?"]
# each a few words: with the question, one window of 48 tokens holds it, so five questions are five windows
CONTEXTS = ["it was written by ada lovelace.", "it was written in 1843.", "the book was written by ada.",
            "a note was written.", "it was read by babbage."]


@pytest.fixture(scope="module")
def model_dir(tiny_encoder_dir, tmp_path_factory):
    return untrained_model_folder(tiny_encoder_dir, tmp_path_factory.mktemp("bars") / "model", heads="span+bio",
                                  max_seq_length=48, doc_stride=16, max_query_length=12)


@pytest.fixture
def three_chunks(monkeypatch):
    monkeypatch.setattr(AnswerExtractor, "chunk_size", 2)  # five questions: chunks of 2, 2 and 1


def test_a_list_answered_in_chunks_shows_one_bar_a_stage(model_dir, three_chunks, shown_bars, capsys):
    trained = TrainedModel.load(model_dir, precision="fp32", device="cpu")
    quiet = AnswerExtractor(trained)(QUESTIONS, CONTEXTS)
    capsys.readouterr()
    shown = AnswerExtractor(trained, progress=True)(QUESTIONS, CONTEXTS)
    assert shown_bars == [("inference", 5, 5, "window"), ("windows", 5, 5, "question")]
    assert "windows: 100%" in capsys.readouterr().err
    assert [p.to_dict() for p in shown] == [p.to_dict() for p in quiet]


def test_one_question_over_documents_in_chunks_shows_one_bar_a_stage(model_dir, three_chunks, shown_bars):
    trained = TrainedModel.load(model_dir, precision="fp32", device="cpu")
    quiet = AnswerExtractor(trained).answer_documents(QUESTIONS[0], CONTEXTS, top_k=3)
    assert shown_bars == []
    shown = AnswerExtractor(trained, progress=True).answer_documents(QUESTIONS[0], CONTEXTS, top_k=3)
    assert shown_bars == [("inference", 5, 5, "window"), ("windows", 5, 5, "question")]
    assert shown == quiet


def test_a_quiet_list_in_chunks_prints_nothing(model_dir, three_chunks, shown_bars, capsys):
    trained = TrainedModel.load(model_dir, precision="fp32", device="cpu")
    capsys.readouterr()
    assert len(AnswerExtractor(trained)(QUESTIONS, CONTEXTS)) == 5
    assert shown_bars == []
    assert capsys.readouterr().err == ""


def test_the_windows_of_one_call_show_the_same_bars(model_dir, shown_bars):
    # tune and compare run a whole list's windows in one call
    trained = TrainedModel.load(model_dir, precision="fp32", device="cpu")
    examples, _ = AnswerExtractor.examples(QUESTIONS, CONTEXTS)
    trained.windows(examples, batch_size=2, progress=True)
    assert shown_bars == [("inference", 5, 5, "window"), ("windows", 5, 5, "question")]


def test_the_pipeline_answers_a_list_in_chunks_quietly(model_dir, three_chunks, shown_bars, capsys):
    from transformers import pipeline

    qa = pipeline("bio-mrc-qa", model=str(model_dir), device="cpu")
    capsys.readouterr()
    assert len(qa(question=QUESTIONS, context=CONTEXTS)) == 5
    assert shown_bars == []
    assert capsys.readouterr().err == ""


def inference_lines(err: str) -> list[str]:
    """Each drawing of the inference bar on standard error (tqdm redraws a line after a carriage return)."""
    return [line for line in re.split(r"[\r\n]", err) if line.startswith("inference:")]


def test_the_inference_bar_shows_its_total_from_its_first_line(model_dir, capsys):
    # tune runs a whole list's windows in one call: its five windows are the bar's total from the start
    trained = TrainedModel.load(model_dir, precision="fp32", device="cpu")
    examples, _ = AnswerExtractor.examples(QUESTIONS, CONTEXTS)
    capsys.readouterr()
    trained.windows(examples, batch_size=2, progress=True)
    drawn = inference_lines(capsys.readouterr().err)
    assert drawn[0].startswith("inference:   0%|") and "| 0/5 [" in drawn[0]  # was "inference: 0window [00:00, ?window/s]"
    assert all("/5 [" in line for line in drawn) and "| 5/5 [" in drawn[-1]


def test_a_list_in_chunks_shows_the_windows_cut_so_far_from_the_first_line(model_dir, three_chunks, capsys):
    trained = TrainedModel.load(model_dir, precision="fp32", device="cpu")
    capsys.readouterr()
    AnswerExtractor(trained, progress=True)(QUESTIONS, CONTEXTS)
    drawn = inference_lines(capsys.readouterr().err)
    assert "| 0/2 [" in drawn[0] and "| 5/5 [" in drawn[-1]
    assert all(re.search(r"\| \d/[245] \[", line) for line in drawn)  # a total on every line: 2, 4, then 5 windows
