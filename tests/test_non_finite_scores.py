"""Scores no decoding can read (NaN, infinity from a damaged model or an overflowing forward pass) are refused in
one line naming the question, never decoded into an empty or arbitrary answer."""

from __future__ import annotations

import re

import numpy as np
import pytest
from fastapi.testclient import TestClient
from transformers import AutoTokenizer

from bio_mrc.cli import main
from bio_mrc.decoding.window_outputs import WindowOutputs, first_non_finite
from bio_mrc.errors import ModelOutputError
from bio_mrc.inference import AnswerExtractor, TrainedModel
from bio_mrc.inference.forward import TorchRunner
from bio_mrc.model import BioMrcForQuestionAnswering
from bio_mrc.serving.app import create_app
from bio_mrc.types import Example

from .conftest import untrained_model_folder

WINDOWS = {"max_seq_length": 48, "doc_stride": 16, "max_query_length": 12}
PYTHON_ADVICE = "answer with precision='fp32'"  # the command line's: --precision fp32
PROBLEM = ("the model's start_logits for this question hold NaN or infinity, from which no answer can be decoded: "
           "a damaged model, or a forward pass that overflowed (in bf16: answer with precision='fp32')")


@pytest.fixture(scope="module")
def model_dir(tiny_encoder_dir, tmp_path_factory):
    return untrained_model_folder(tiny_encoder_dir, tmp_path_factory.mktemp("scores") / "tiny-joint", heads="span+bio",
                                  **WINDOWS)


def outputs_of(start: np.ndarray, bio: np.ndarray | None = None) -> WindowOutputs:
    """Three windows of five tokens, two questions (windows 0 and 1 of the first); tokens 1-3 are the paragraph's,
    token 4 is padding past each window's end (-inf, as the forward pass pads the span head's scores)."""
    mask = np.zeros((3, 5), dtype=bool)
    mask[:, 1:4] = True
    offsets = np.where(mask[..., None], np.stack([np.arange(5), np.arange(5) + 1], axis=-1)[None], -1)
    bio = np.zeros((3, 5, 3), dtype=np.float32) if bio is None else bio
    return WindowOutputs(np.array([0, 0, 1]), offsets, mask, start_logits=start, end_logits=np.zeros((3, 5), np.float32),
                         bio_logits=bio)


def padded_scores() -> np.ndarray:
    scores = np.zeros((3, 5), dtype=np.float32)
    scores[:, 4] = -np.inf
    return scores


def test_the_scores_a_decoding_reads_are_checked_and_no_others():
    assert first_non_finite(outputs_of(padded_scores())) is None  # -inf past a window's end is padding
    unread = padded_scores()
    unread[2, 4] = np.nan  # beyond the paragraph, not the first token: never read
    assert first_non_finite(outputs_of(unread)) is None
    broken = padded_scores()
    broken[2, 2] = np.nan  # a paragraph token of the second question's window
    broken[1, 3] = np.inf  # and of the first question's second window
    assert first_non_finite(outputs_of(broken)) == (0, "start_logits")
    null = padded_scores()
    null[2, 0] = -np.inf  # the first token carries the null score
    assert first_non_finite(outputs_of(null)) == (1, "start_logits")
    bio = np.zeros((3, 5, 3), dtype=np.float32)
    bio[2, 1, 1] = np.nan
    assert first_non_finite(outputs_of(padded_scores(), bio)) == (1, "bio_logits")


def test_answer_extractor_refuses_nan_scores_naming_the_question(model_dir):
    extractor = AnswerExtractor(TrainedModel.load(model_dir, precision="fp32"))
    examples = [Example("q1", "Who?", "Ada wrote it."), Example("q2", "What?", "Ada wrote it.")]
    broken = padded_scores()
    broken[2, 2] = np.nan
    with pytest.raises(ModelOutputError) as raised:
        extractor.predict(outputs_of(broken), examples)
    assert str(raised.value) == f"{PROBLEM} (in {model_dir}, record 'q2')"
    assert raised.value.record == "q2" and raised.value.problem == PROBLEM


@pytest.fixture()
def overflowing(monkeypatch):
    """Every forward pass gives +inf start scores, as a bf16 one that overflows can."""
    called = TorchRunner.__call__

    def overflow(self, batch):
        logits = called(self, batch)
        logits["start_logits"][:] = np.inf
        return logits

    monkeypatch.setattr(TorchRunner, "__call__", overflow)


def test_a_forward_pass_that_overflows_is_one_line_from_the_command_line(model_dir, overflowing, capsys):
    code = main(["extract", "--model", str(model_dir), "--question", "Who wrote it?", "--context", "Ada wrote it.",
                 "--precision", "fp32"])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    line = PROBLEM.replace(PYTHON_ADVICE, "answer with --precision fp32")
    assert err.count("\n") == 1 and re.fullmatch(re.escape(f"error: {line} (in {model_dir}, record ") + "'[^']+'\\)\n", err), err


def test_serve_answers_a_question_with_unreadable_scores_with_a_500_naming_it(model_dir, overflowing):
    extractor = AnswerExtractor(TrainedModel.load(model_dir, precision="fp32"))
    with TestClient(create_app(extractor)) as client:
        response = client.post("/answer", json={"question": "Who wrote it?", "context": "Ada wrote it."})
    assert response.status_code == 500
    detail = response.json()["detail"]
    assert detail.startswith(PROBLEM + " (record ") and str(model_dir) not in detail, detail
