"""A worker forked after its parent answered (gunicorn's ``--preload`` with a warm-up call, ``multiprocessing`` with
``fork``) answers too: it runs torch with one thread, since the parent's OpenMP pool threads stay behind at the fork."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from .conftest import untrained_model_folder

ROOT = Path(__file__).resolve().parents[1]

# The parent answers with two threads (the hang needs a pool of more than one, whatever the machine's cores), forks,
# and the child answers the same question; a child still running after 60 s is killed, so nothing can hang the suite.
FORKED_AFTER_AN_ANSWER = r"""
import json, os, sys, time
import torch
from bio_mrc import AnswerExtractor

torch.set_num_threads(2)
extractor = AnswerExtractor.from_pretrained(sys.argv[1])

def answer():
    best = extractor("who wrote it?", "it was written by jane in 1813, and read by many.").spans[0]
    return [best.text, best.start, best.end, round(best.score, 3)]

parent = answer()
read, write = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(read)
    child = answer()
    os.write(write, json.dumps({"answer": child, "threads": torch.get_num_threads()}).encode())
    os._exit(0)
os.close(write)
deadline = time.monotonic() + 60
while os.waitpid(pid, os.WNOHANG)[0] == 0:
    if time.monotonic() > deadline:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        print(json.dumps({"hung": True}))
        sys.exit(0)
    time.sleep(0.05)
child = json.loads(os.read(read, 10_000).decode())
print(json.dumps({"parent": parent, "parent_threads": torch.get_num_threads(), **child}))
"""


@pytest.fixture(scope="module")
def model_dir(tiny_encoder_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return untrained_model_folder(tiny_encoder_dir, tmp_path_factory.mktemp("forked") / "model", heads="span+bio",
                                  max_seq_length=48, doc_stride=16, max_query_length=12)


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this OS")
def test_a_child_forked_after_an_answer_answers_with_one_thread(model_dir: Path):
    result = subprocess.run([sys.executable, "-c", FORKED_AFTER_AN_ANSWER, str(model_dir)], capture_output=True,
                            text=True, cwd=ROOT, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    assert "hung" not in seen, "the forked child hung in its first forward pass"
    assert seen["answer"] == seen["parent"]  # the same span, its score to 3 decimals
    assert seen["threads"] == 1
    assert seen["parent_threads"] == 2  # the parent keeps its own


def test_the_handler_leaves_one_thread():
    from bio_mrc.inference import forked_threads

    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(3)
        forked_threads.one_thread_in_child()
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(threads)


def test_the_handler_is_registered_once(monkeypatch: pytest.MonkeyPatch):
    from bio_mrc.inference import forked_threads

    registered = []
    monkeypatch.setattr(forked_threads, "_registered", False)
    monkeypatch.setattr(os, "register_at_fork", lambda **hooks: registered.append(hooks))
    forked_threads.register_fork_handler()
    forked_threads.register_fork_handler()
    assert registered == [{"after_in_child": forked_threads.one_thread_in_child}]
