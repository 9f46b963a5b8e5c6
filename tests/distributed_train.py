"""Run by ``tests/test_distributed.py`` under torchrun: ``train_model`` as a user's script would call it,
recording how many training windows this process was given and the loss of each of its steps."""

import json
import os
import sys

import torch.distributed as dist

from bio_mrc.data.squad import load_squad
from bio_mrc.features.collate import WindowCollator
from bio_mrc.training.train import TrainConfig, train_model
from bio_mrc.training.trainer import HeadRateTrainer

encoder, data, output_dir = sys.argv[1:4]
seen: list[int] = []
collate = WindowCollator.__call__
WindowCollator.__call__ = lambda self, rows: seen.append(len(rows)) or collate(self, rows)
losses: list[float] = []
step = HeadRateTrainer.training_step
HeadRateTrainer.training_step = lambda self, *args, **kwargs: losses.append(float(loss := step(self, *args, **kwargs))) or loss
config = TrainConfig(encoder=encoder, max_seq_length=48, doc_stride=16, max_query_length=12, epochs=1, batch_size=2)
result = train_model(load_squad(data).examples, config, output_dir, save_checkpoints=False)
rank = int(os.environ["RANK"])
with open(os.path.join(output_dir, f"windows-seen-by-rank-{rank}.json"), "w") as handle:
    json.dump({"world_size": dist.get_world_size(), "backend": dist.get_backend(), "seen": sum(seen),
               "windows": result.n_windows, "losses": losses, "final_loss": result.final_loss}, handle)
dist.barrier()  # both ranks wrote their record before either tears the group down
dist.destroy_process_group()  # a clean exit: gloo left to its destructor can abort a rank at shutdown
