"""An extractor in worker processes started with ``spawn`` (``multiprocessing``, ``ProcessPoolExecutor``): one built in
each worker answers as the parent's does; a PyTorch model's extractor sent to a worker (pickled) does too; an ONNX
export's, whose ONNX Runtime session cannot be pickled, is refused in one line that says to build one in each process,
and a deep copy of it in the same process shares the session and answers alike (a hand-made graph of an export's signature,
which loads and answers as an export does, stands for one: the exporter takes seconds)."""

from __future__ import annotations

import copy
import json
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from bio_mrc.errors import ProcessLocalError
from bio_mrc.inference import AnswerExtractor

from .conftest import NEEDS_ONNX_EXTRA, untrained_model_folder
from .test_onnx_answers import hand_made_export

ROOT = Path(__file__).resolve().parents[1]
QUESTIONS = ["Who wrote it?", "When?", "Who read it?", "Which ones?"]
CONTEXT = "It was written by Jane in 1813, and read by many. The Normans came from Denmark, Iceland and Norway."


@pytest.fixture(scope="module")
def model_dir(tiny_encoder_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return untrained_model_folder(
        tiny_encoder_dir, tmp_path_factory.mktemp("workers") / "model", heads="span+bio", max_seq_length=48, doc_stride=16, max_query_length=12
    )


@pytest.fixture(scope="module")
def onnx_dir(model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An ONNX export's folder of ``model_dir``'s config and tokenizer, its graph hand-made (it scores each token by its id)."""
    return hand_made_export(model_dir, tmp_path_factory.mktemp("workers-onnx") / "exported")


def answers(predictions) -> list[list]:
    return [[p.answer, p.spans[0].start, p.spans[0].end, round(p.spans[0].score, 4)] for p in predictions]


def test_a_pytorch_extractor_pickles_and_answers_alike(model_dir):
    extractor = AnswerExtractor.from_pretrained(model_dir, precision="fp32", multi_span=True, batch_size=3)
    copied = pickle.loads(pickle.dumps(extractor))
    assert (copied.multi_span, copied.batch_size, copied.decoding) == (True, 3, "auto")
    assert copied(QUESTIONS, CONTEXT) == extractor(QUESTIONS, CONTEXT)
    assert copy.deepcopy(extractor)(QUESTIONS, CONTEXT) == extractor(QUESTIONS, CONTEXT)


@NEEDS_ONNX_EXTRA
def test_an_onnx_extractor_is_refused_by_pickle_in_one_line_that_says_what_to_do(onnx_dir):
    extractor = AnswerExtractor.from_pretrained(onnx_dir)
    for sent in (extractor, extractor.trained, extractor.trained.model):
        with pytest.raises(ProcessLocalError) as refused:
            pickle.dumps(sent)
        message = str(refused.value)
        assert "\n" not in message and isinstance(refused.value, TypeError)
        assert message == (
            f"an ONNX export's model cannot be pickled (its ONNX Runtime session lives in this process), so "
            f"it cannot be sent to another process: build one in each process, "
            f"AnswerExtractor.from_pretrained({str(onnx_dir)!r}) in the worker (a ProcessPoolExecutor's "
            f"initializer), and send it the questions (in {onnx_dir})"
        )


@NEEDS_ONNX_EXTRA
def test_an_onnx_extractor_deep_copies_sharing_its_session(onnx_dir):
    extractor = AnswerExtractor.from_pretrained(onnx_dir)
    copied = copy.deepcopy(extractor)
    assert copied.trained.model is not extractor.trained.model and copied.trained.model.session is extractor.trained.model.session
    copied.trained.model.config.no_answer_thresholds = {"span": -1e9}  # the copy's own settings
    assert extractor.trained.model.config.no_answer_thresholds != copied.trained.model.config.no_answer_thresholds
    assert copied(QUESTIONS, CONTEXT, decoding="span") != extractor(QUESTIONS, CONTEXT, decoding="span")
    assert all(p.abstain for p in copied(QUESTIONS, CONTEXT, decoding="span"))
    assert copy.copy(extractor.trained.model).session is extractor.trained.model.session


# Run as a script, as an application runs: spawn's workers import __main__ by its file. A function that builds its
# worker's own extractor on its first call, and the parent's extractor sent with each question (pickled), answer the
# questions the parent answers, to 4 decimals of each score, in two workers.
WORKERS = r"""
import json, multiprocessing, sys
from concurrent.futures import ProcessPoolExecutor

from bio_mrc import AnswerExtractor

FOLDER = sys.argv[1]
QUESTIONS, CONTEXT = json.loads(sys.argv[2])
_OWN = None


def shown(p):
    return [p.answer, p.spans[0].start, p.spans[0].end, round(p.spans[0].score, 4)]


def answer(question):
    global _OWN
    if _OWN is None:  # built once in each worker
        _OWN = AnswerExtractor.from_pretrained(FOLDER, precision="fp32")
    return shown(_OWN(question, CONTEXT))


def answer_with(extractor, question):
    return shown(extractor(question, CONTEXT))


if __name__ == "__main__":
    extractor = AnswerExtractor.from_pretrained(FOLDER, precision="fp32")
    parent = [shown(extractor(question, CONTEXT)) for question in QUESTIONS]
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        built = list(pool.map(answer, QUESTIONS))
        sent = list(pool.map(answer_with, [extractor] * len(QUESTIONS), QUESTIONS))
    print(json.dumps({"parent": parent, "built": built, "sent": sent}))
"""


@pytest.mark.slow
def test_spawned_workers_answer_as_the_parent(model_dir, tmp_path):
    script = tmp_path / "workers.py"
    script.write_text(WORKERS, encoding="utf-8")
    result = subprocess.run(
        [sys.executable, str(script), str(model_dir), json.dumps([QUESTIONS, CONTEXT])], capture_output=True, text=True, cwd=ROOT, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    assert seen["built"] == seen["parent"] and seen["sent"] == seen["parent"]
    assert len(seen["parent"]) == len(QUESTIONS)
