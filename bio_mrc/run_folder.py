"""What a training run leaves in its output folder while it trains: checkpoints, which are no model until the run
saves one there. A command given that folder, its checkpoints folder or one checkpoint to answer with is told so,
and how to finish the run, instead of which model file the folder lacks."""

from __future__ import annotations

import re
from pathlib import Path

CHECKPOINT_DIR = "checkpoints"  # under the output folder; removed once the model is complete
TRAIN_CONFIG_FILE = "bio_mrc_train_config.json"  # in CHECKPOINT_DIR: the options (and questions) of its checkpoints
HUB_PUSH_DIR = "hub-push"  # in CHECKPOINT_DIR: the model files a hub push during training uploads, and nothing else
_CHECKPOINT = re.compile(r"checkpoint-(\d+)")  # transformers' name of the checkpoint at an optimizer step


def checkpoint_step(path: Path) -> int | None:
    """N of a ``checkpoint-N`` folder; None for any other name."""
    match = _CHECKPOINT.fullmatch(path.name)
    return int(match.group(1)) if match else None


def unfinished_run(folder: Path) -> str | None:
    """A line saying that ``folder`` is a training run's output folder without its model yet, that run's
    checkpoints folder or a checkpoint in it, and what to do; None for any other folder."""
    if _holds_checkpoints(folder / CHECKPOINT_DIR) and not (folder / "config.json").is_file():
        run, what = folder, f"an unfinished training run: no model yet, only checkpoints in {CHECKPOINT_DIR}/"
    elif folder.name == CHECKPOINT_DIR and _holds_checkpoints(folder):
        run, what = folder.parent, "the checkpoints of a training run, not a model"
    elif (_CHECKPOINT.fullmatch(folder.name) and folder.parent.name == CHECKPOINT_DIR
          and (folder / "trainer_state.json").is_file() and not (folder / "tokenizer.json").is_file()):
        run, what = folder.parent.parent, "a checkpoint of a training run, not a model"
    else:
        return None
    return (f"{what}; run its `bio-mrc train` command again with --resume to finish it, then give the folder the "
            f"model is saved in: {run}")


def _holds_checkpoints(folder: Path) -> bool:
    return folder.is_dir() and ((folder / TRAIN_CONFIG_FILE).is_file()
                                or any(_CHECKPOINT.fullmatch(entry.name) for entry in folder.iterdir() if entry.is_dir()))
