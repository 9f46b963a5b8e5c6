"""The trained model's folder: how the model appears in it atomically, and its run record (what may be trained into:
:mod:`.output_folder`; the records read back, without torch: :mod:`.run_records`)."""

from __future__ import annotations

import filecmp
import glob
from pathlib import Path
from typing import Any, Sequence

from transformers import Trainer

from ..errors import OutputError
from ..hub import hub_failure
from ..io import atomic_move_files, atomic_write_json, remove_file, remove_tree
from ..model import RUN_FILE
from ..model_card import clear_model_card, write_model_card
from ..model_folder import (PICKLED_WEIGHTS, SAFETENSORS_FILE, SAFETENSORS_INDEX, TRAINING_LOG_FILE, remove_model_temporaries,
                            remove_replaced_model_files)
from .checkpoints import CHECKPOINT_DIR, checkpoint_step
from .run_records import load_run_record
from .output_folder import LOG_DIR, STAGING_DIR, TRAINING_WRITES, check_inputs_kept, check_output_folder, checkpoint_strangers  # noqa: F401 (named here too)


def save_final_model(trainer: Trainer, tokenizer: Any, output_dir: Path, record: dict[str, Any]) -> list[str]:
    """Save into a staging folder (the weights, the tokenizer, Trainer's log history), move the files into
    ``output_dir``, then write the run record and the model card (README.md, made from the folder's files). Returns
    the names of the files written (none on a process other than the main one).

    The record is the "complete" marker (the harness reuses a folder that has one), so the old
    record goes first and the new one comes only once every file of the new model is in place;
    the old model's scores and card go with the old record, and its files the new model does not write
    (an ONNX export's graph, weights in another layout) before the new files move in.
    """
    staging, zero = output_dir / STAGING_DIR, trainer.is_world_process_zero()
    if zero:
        remove_tree(staging, output_dir)  # left by a save that was killed
    try:
        # every process: sharded (FSDP/DeepSpeed) saves gather on all of them. Internal: Trainer's own push (of its
        # checkpoints folder, with transformers' card and no tokenizer) stays out; push_final_model uploads the model.
        trainer.save_model(str(staging), _internal_call=True)
        if not zero:
            return []
        tokenizer.save_pretrained(str(staging))
        atomic_write_json(staging / TRAINING_LOG_FILE, trainer.state.log_history, indent=1)
        remove_file(output_dir / RUN_FILE, output_dir)
        clear_model_card(output_dir)
        names = sorted(path.name for path in staging.iterdir())
        remove_replaced_model_files(output_dir, names)  # an old export's graph too
        remove_model_temporaries(output_dir)  # left by a kill while an earlier model's record or card was written
        atomic_move_files(staging, output_dir)
    finally:  # a full disk or a stop while saving leaves no half-written weights taking the space
        if zero:
            remove_tree(staging, output_dir)
    atomic_write_json(output_dir / RUN_FILE, record, indent=2)
    card = write_model_card(output_dir)  # None where a README.md of the user's stays
    return [*names, RUN_FILE, *([card.name] if card else [])]


def finish_stopped_save(output_dir: str | Path) -> bool:
    """A run stopped after its run record was written but before its card and the removal of its checkpoints (the last
    moments of ``save_final_model`` and ``train_model``) holds the finished model: ``train --resume`` completes it,
    writing the card and removing this run's checkpoints, rather than refusing it as a finished model and leaving them.
    True when there was such a run to finish."""
    output_dir = Path(output_dir)
    checkpoints = output_dir / CHECKPOINT_DIR
    if load_run_record(output_dir) is None or checkpoints.is_symlink() or not checkpoints.is_dir() or checkpoint_strangers(checkpoints):
        return False  # (a removal cut short may have taken the checkpoints' options file already)
    if not _model_of_checkpoints(output_dir, checkpoints):
        return False  # another run's (train --overwrite over this model, stopped): refused as a finished model
    remove_tree(output_dir / STAGING_DIR, output_dir)
    remove_model_temporaries(output_dir)  # the card's, or the record's, where the kill came while it was written
    write_model_card(output_dir)
    remove_tree(checkpoints, output_dir)
    return True


# A model's weights in every layout save_pretrained writes: a checkpoint holds the same files.
WEIGHT_PATTERNS = (SAFETENSORS_FILE, SAFETENSORS_INDEX, "model-?????-of-?????.safetensors", *PICKLED_WEIGHTS,
                   "pytorch_model-?????-of-?????.bin")


def _model_of_checkpoints(output_dir: Path, checkpoints: Path) -> bool:
    """The folder's weights are a checkpoint's (the last one's, or the best one's where the run loads the best at its
    end): those checkpoints are its run's. Another run's (``train --overwrite`` over the model, stopped while it trained
    or saved) hold other weights, at any step, and are no finished model's to remove."""
    found = [path for path in checkpoints.iterdir() if checkpoint_step(path) is not None]
    if not found:
        return True
    weights = sorted({path.name for pattern in WEIGHT_PATTERNS for path in output_dir.glob(pattern)})
    return bool(weights) and any(
        all((path / name).is_file() and filecmp.cmp(output_dir / name, path / name, shallow=False) for name in weights)
        for path in found)


def push_final_model(trainer: Trainer, output_dir: Path, files: Sequence[str]) -> None:
    """With ``push_to_hub`` (``train --push-to-hub``): upload the finished model (``files``, the names
    :func:`save_final_model` wrote: weights, tokenizer, run record and the bio_mrc model card) to the hub repository
    Trainer made for it, once every file is in place. Nothing else in the folder goes: one trained into with
    ``overwrite`` keeps the user's other files (a ``.env``, the data, earlier logs), which are not the model's."""
    if not trainer.args.push_to_hub or not trainer.is_world_process_zero():
        return
    from huggingface_hub import HfApi

    try:
        getattr(trainer, "_finish_current_push", lambda: None)()  # a checkpoint's upload still running ends first
        # the login's token and the default branch: network_args takes neither hub_token nor hub_revision
        HfApi().upload_folder(repo_id=trainer.hub_model_id, folder_path=str(output_dir), commit_message="End of training",
                              allow_patterns=[glob.escape(name) for name in files])  # each name as written, no pattern
    except Exception as err:  # a refusal or no network, after the model is saved: it stays, complete
        raise OutputError(f"the model is saved here and complete, but its upload to the hub repository {trainer.hub_model_id!r} "
                          f"failed ({hub_failure(err)}); only the upload is missing", str(output_dir)) from None


__all__ = ["LOG_DIR", "STAGING_DIR", "TRAINING_LOG_FILE", "TRAINING_WRITES", "check_inputs_kept",
           "check_output_folder", "finish_stopped_save", "push_final_model", "save_final_model"]
