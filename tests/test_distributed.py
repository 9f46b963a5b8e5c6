"""``train_model`` runs unchanged under torchrun: 2 CPU processes (gloo), the data sharded, one model saved."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import SAMPLE_V1

pytestmark = pytest.mark.slow  # torchrun starts Python processes


def _torchrun_env(tmp_path: Path) -> dict[str, str]:
    """One thread a process (torchrun's default; the single runs alike), and a temporary folder of the test's own:
    torchrun's agent makes a ``torchelastic_*`` folder there and leaves it."""
    folder = tmp_path / "tmp"
    folder.mkdir(exist_ok=True)
    return {**os.environ, "OMP_NUM_THREADS": "1", "TMPDIR": str(folder)}


def test_torchrun_on_two_cpu_processes_shards_the_windows(tiny_encoder_dir, tmp_path):
    from bio_mrc.data.squad import load_squad
    from bio_mrc.decoding.postprocess import DecodeConfig, decode
    from bio_mrc.inference import TrainedModel
    from bio_mrc.training.train import load_run_record

    script = Path(__file__).with_name("distributed_train.py")
    for attempt in range(2):  # under a loaded CPU a rendezvous may time out: one more try, in a fresh folder
        out = tmp_path / f"attempt-{attempt}"
        command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", str(script),
                   str(tiny_encoder_dir), str(SAMPLE_V1), str(out)]
        done = subprocess.run(command, capture_output=True, text=True, timeout=300, env=_torchrun_env(tmp_path))
        if done.returncode == 0:
            break
    assert done.returncode == 0, done.stderr[-3000:]
    ranks = [json.loads((out / f"windows-seen-by-rank-{rank}.json").read_text()) for rank in (0, 1)]
    assert all(r["world_size"] == 2 and r["backend"] == "gloo" for r in ranks)
    windows = ranks[0]["windows"]
    assert [r["seen"] for r in ranks] == [windows // 2, windows - windows // 2]  # each process: its half, once
    record = load_run_record(out)
    # every question, not rank 0's share of the windows: what tune refuses is all the model trained on
    assert record["training_questions"]["questions"] == len({(ex.question, ex.context) for ex in load_squad(SAMPLE_V1).examples}) == 8
    # the loss recorded is that of every step's batches on both processes, not rank 0's share alone
    own_means = [sum(r["losses"]) / len(r["losses"]) for r in ranks]
    assert record["final_loss"] == pytest.approx(sum(own_means) / 2, rel=1e-6)
    assert ranks[0]["final_loss"] == ranks[1]["final_loss"] == record["final_loss"] and own_means[0] != own_means[1]
    examples = load_squad(SAMPLE_V1).examples[:3]  # the model predict loads answers with exact substrings
    trained = TrainedModel.load(out)
    for prediction, example in zip(decode(trained.windows(examples), examples, "joint", DecodeConfig()), examples):
        best = prediction.spans[0]
        assert example.context[best.start: best.end] == best.text


def _run(command: list[str], env: dict[str, str], attempts: int = 2) -> subprocess.CompletedProcess:
    """Run ``command``; under a loaded CPU a rendezvous may time out, so a failed run is tried once more."""
    for attempt in range(attempts):
        done = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)
        if done.returncode == 0 or attempt == attempts - 1:
            return done
    return done


def test_torchrun_predict_on_two_processes_writes_what_one_process_writes(tiny_encoder_dir, tmp_path):
    """Each rank answers every other chunk; rank 0 gathers them over gloo and writes the files of a single run."""
    from bio_mrc.cli import main

    model = tmp_path / "model"
    assert main(["train", "--train", str(SAMPLE_V1), "--output-dir", str(model), "--encoder", str(tiny_encoder_dir),
                 "--heads", "span+bio", "--epochs", "1", "--batch-size", "4", "--max-seq-length", "48", "--doc-stride", "16",
                 "--max-query-length", "12"]) == 0
    predict = ["-m", "bio_mrc.cli", "predict", "--model", str(model), "--data", str(SAMPLE_V1), "--decoding", "span", "joint",
               "--chunk-size", "2", "--precision", "fp32", "--output"]
    env = _torchrun_env(tmp_path)
    single = _run([sys.executable, *predict, str(tmp_path / "one" / "p.json")], env, attempts=1)
    assert single.returncode == 0, single.stderr[-3000:]
    sharded = _run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", *predict,
                    str(tmp_path / "two" / "p.json")], env)
    assert sharded.returncode == 0, sharded.stderr[-3000:]
    files = sorted(path.name for path in (tmp_path / "one").iterdir())
    assert files == sorted(path.name for path in (tmp_path / "two").iterdir()) and "p.answers.jsonl" in files
    for name in files:
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes(), name
    assert sharded.stdout.count('"questions": 8') == 1  # one report, from rank 0
    # a stream rank 0 refuses to resume: one line from each rank, no rank left to fail in gloo with a traceback
    (tmp_path / "three").mkdir()
    stream = (tmp_path / "one" / "p.answers.jsonl").read_text().replace('"decoding": "span"', '"decoding": "bio"', 1)
    (tmp_path / "three" / "p.answers.jsonl").write_text(stream)
    refused = _run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", *predict,
                    str(tmp_path / "three" / "p.json"), "--resume"], env, attempts=1)
    assert refused.returncode != 0 and "]: Traceback" not in refused.stderr, refused.stderr[-3000:]  # no rank's traceback
    assert 'error: line 1 answers "n1" with decoding "bio"' in refused.stderr
    assert 'error: rank 0 refused the run: line 1 answers "n1"' in refused.stderr


# Each rank records how main ended, then waits for the other's record: torchrun stops the other ranks once one exits
# with a status but 0, which would cut a rank short before it wrote.
PROBE = """import json, os, sys, time
import torch.distributed as dist
from bio_mrc.cli import main
joined = []
init = dist.init_process_group
dist.init_process_group = lambda *args, **kwargs: joined.append(True) or init(*args, **kwargs)
code = main(sys.argv[2:])
record = os.path.join(sys.argv[1], "rank-{}.json")
with open(record.format(os.environ["RANK"]) + ".part", "w") as handle:
    json.dump({"code": code, "joined": bool(joined), "still_joined": dist.is_initialized()}, handle)
os.replace(record.format(os.environ["RANK"]) + ".part", record.format(os.environ["RANK"]))
deadline = time.monotonic() + 120
while not all(os.path.exists(record.format(rank)) for rank in (0, 1)) and time.monotonic() < deadline:
    time.sleep(0.1)
sys.exit(code)
"""


def test_torchrun_train_refused_leaves_the_process_group_on_each_rank(tiny_encoder_dir, tmp_path):
    """A refusal after TrainingArguments joined the group (a duplicate question id): each rank prints its one line and
    leaves the group, so none ends in gloo's ``terminate called without an active exception``."""
    bad = tmp_path / "dup.json"
    qa = {"question": "Who wrote it?", "answers": [{"text": "Ada", "answer_start": 0}]}
    bad.write_text(json.dumps({"version": "1.1", "data": [{"title": "t", "paragraphs": [
        {"context": "Ada wrote it.", "qas": [{"id": "q1", **qa}, {"id": "q1", **qa}]}]}]}))
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)
    train = ["train", "--train", str(bad), "--output-dir", str(tmp_path / "out"), "--encoder", str(tiny_encoder_dir)]
    done = _run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", str(probe),
                 str(tmp_path), *train], _torchrun_env(tmp_path), attempts=1)
    assert done.returncode != 0  # torchrun reports any rank's status but 0 as a failure
    records = [json.loads((tmp_path / f"rank-{rank}.json").read_text()) for rank in (0, 1)]
    assert records == [{"code": 2, "joined": True, "still_joined": False}] * 2, done.stderr[-3000:]
    assert done.stderr.count("error: duplicate question id") == 2
    assert "terminate called" not in done.stderr and "SIGABRT" not in done.stderr, done.stderr[-3000:]
