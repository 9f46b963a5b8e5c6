"""``train_model`` runs unchanged under torchrun: 2 CPU processes (gloo), the data sharded, one model saved."""

import json
import subprocess
import sys
from pathlib import Path

from .conftest import SAMPLE_V1


def test_torchrun_on_two_cpu_processes_shards_the_windows(tiny_encoder_dir, tmp_path):
    from bio_mrc.data.squad import load_squad
    from bio_mrc.decoding.postprocess import DecodeConfig, decode
    from bio_mrc.inference import TrainedModel
    from bio_mrc.training.train import load_run_record

    script = Path(__file__).with_name("distributed_train.py")
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", str(script),
               str(tiny_encoder_dir), str(SAMPLE_V1), str(tmp_path)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"windows-seen-by-rank-{rank}.json").read_text()) for rank in (0, 1)]
    assert all(r["world_size"] == 2 and r["backend"] == "gloo" for r in ranks)
    windows = ranks[0]["windows"]
    assert [r["seen"] for r in ranks] == [windows // 2, windows - windows // 2]  # each process: its half, once
    assert load_run_record(tmp_path) is not None
    examples = load_squad(SAMPLE_V1).examples[:3]  # the model predict loads answers with exact substrings
    trained = TrainedModel.load(tmp_path)
    for prediction, example in zip(decode(trained.windows(examples), examples, "joint", DecodeConfig()), examples):
        best = prediction.spans[0]
        assert example.context[best.start: best.end] == best.text
