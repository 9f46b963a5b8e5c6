"""The trained model's folder: what may be trained into, how the model appears in it atomically, and its run record."""

from __future__ import annotations

import glob
import json
import os
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any, Iterable, Sequence

from transformers import Trainer

from ..data.json_reader import read_json
from ..errors import ConfigError, DataFormatError, OutputError, argument
from ..hub import hub_failure
from ..io import UnsafePathError, atomic_move_files, atomic_write_json, check_folder_target, check_library_path, remove_file, remove_tree
from ..model import RUN_FILE, BioMrcConfig
from ..model_card import CARD_FILE, clear_model_card, write_model_card
from ..model_folder import MODEL_FILE_NAMES, TRAINING_LOG_FILE, remove_replaced_model_files
from ..run_folder import HUB_PUSH_DIR
from .checkpoints import CHECKPOINT_DIR, TRAIN_CONFIG_FILE, checkpoint_step

STAGING_DIR = ".bio_mrc-saving"  # under the output folder while the final model is written
LOG_DIR = "logs"  # under the output folder: trackers' files (TensorBoard's event files), kept with the model


def check_output_folder(folder: Path, overwrite: bool) -> None:
    """Before any work: train only into a folder that is new, empty or holds bio_mrc's own work, or, with
    ``overwrite``, replace another folder's files of the same names; never into a checkpoints folder bio_mrc
    did not write (a finished run removes its checkpoints folder)."""
    check_library_path(check_folder_target(folder))  # tokenizers writes tokenizer.json by a UTF-8 name
    if not folder.is_dir():
        return
    links = sorted(p.name for p in folder.iterdir() if p.is_symlink())
    if links:  # a link here would send checkpoints, deletions or the model's files to where it points
        raise UnsafePathError(f"{folder / links[0]} is a symbolic link, which bio_mrc neither follows nor replaces in "
                              "an output folder; remove it or choose another output folder", str(folder))
    checkpoints = folder / CHECKPOINT_DIR
    strangers = _strangers(checkpoints) if checkpoints.is_dir() else []
    if strangers:
        raise ConfigError(f"{checkpoints} holds files bio_mrc did not write ({', '.join(strangers[:4])}), and training removes "
                          "its checkpoints folder when it ends; choose another output folder")
    others = sorted(p.name for p in folder.iterdir() if p.name not in (CHECKPOINT_DIR, STAGING_DIR, LOG_DIR))
    if not others or overwrite or _holds_training_work(folder):
        return
    if _holds_bio_mrc_model(folder):  # a converted, tuned-copy or copied model: no training of this folder's
        raise ConfigError(f"{folder} holds a bio_mrc model that no training here left (no run record, checkpoints or "
                          "staging folder: a converted or copied model?); choose another output folder or pass "
                          f"{argument('overwrite', True)} to replace it")
    raise ConfigError(f"{folder} is not empty ({', '.join(others[:4])}) and holds no bio_mrc model; choose another "
                      f"output folder or pass {argument('overwrite', True)} to replace its files")


# The names training writes or removes at the top of its output folder: the model's files (a tokenizer's of any kind
# too), its config and card. Its checkpoints and staging folders are removed whole.
TRAINING_WRITES = (*MODEL_FILE_NAMES, "config.json", "generation_config.json", "*.model", "chat_template.jinja", CARD_FILE)


def check_inputs_kept(folder: Path, inputs: Iterable[str | Path | None]) -> None:
    """Before any work: no input of the run lies where training writes or removes a file in its output ``folder`` (a
    data file named ``config.json`` there, replaced under ``overwrite`` or ``resume``; one in its staging folder)."""
    top = Path(os.path.realpath(folder))
    for given in (Path(p) for p in inputs if p is not None):
        if not given.exists():  # a hub data set, a saved dataset's FOLDER:SPLIT
            continue
        try:
            below = Path(os.path.realpath(given)).relative_to(top).parts
        except ValueError:
            continue
        if below and (below[0] in (CHECKPOINT_DIR, STAGING_DIR)
                      or (len(below) == 1 and _training_writes(below[0]))):
            raise UnsafePathError(f"training writes or removes {folder.joinpath(*below)} in its output folder, and it is the "
                                  f"input {given}; move it out or choose another output folder", str(given))


def _holds_training_work(folder: Path) -> bool:
    """Whether training wrote ``folder``'s model: its run record, or what a run cut short leaves (its checkpoints, or
    the final model's staging folder), which a resumed run continues."""
    return any((folder / name).exists() for name in (RUN_FILE, CHECKPOINT_DIR, STAGING_DIR))


def _strangers(checkpoints: Path) -> list[str]:
    """The names in a checkpoints folder that bio_mrc did not write. In one holding its run's options record, a
    ``hub-push`` folder is where a push during training copies the model's files to upload them."""
    ours = (checkpoints / TRAIN_CONFIG_FILE).is_file()
    return sorted(p.name for p in checkpoints.iterdir()
                  if p.is_symlink() or (p.name != TRAIN_CONFIG_FILE and checkpoint_step(p) is None
                                        and not (ours and p.name == HUB_PUSH_DIR and p.is_dir())))


def _training_writes(name: str) -> bool:
    """Whether training writes or removes a file of this name at the top of its output folder."""
    return any(fnmatchcase(name, pattern) for pattern in TRAINING_WRITES)


def _holds_bio_mrc_model(folder: Path) -> bool:
    try:
        return json.loads((folder / "config.json").read_text(encoding="utf-8")).get("model_type") == BioMrcConfig.model_type
    except (OSError, ValueError, AttributeError, RecursionError):  # RecursionError: nested past the parser's stack
        return False


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
    if load_run_record(output_dir) is None or checkpoints.is_symlink() or not checkpoints.is_dir() or _strangers(checkpoints):
        return False  # (a removal cut short may have taken the checkpoints' options file already)
    if not _model_of_checkpoints(output_dir, checkpoints):
        return False  # another run's (train --overwrite over this model, stopped): refused as a finished model
    remove_tree(output_dir / STAGING_DIR, output_dir)
    write_model_card(output_dir)
    remove_tree(checkpoints, output_dir)
    return True


def _model_of_checkpoints(output_dir: Path, checkpoints: Path) -> bool:
    """The folder's model ended at the step of the last checkpoint left: those checkpoints are its run's."""
    steps = [step for step in map(checkpoint_step, checkpoints.iterdir()) if step is not None]
    logged = [entry.get("step") for entry in load_training_log(output_dir) or [] if isinstance(entry, dict)]
    return not steps or (bool(logged) and logged[-1] == max(steps))


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


def load_training_log(model_dir: str | Path) -> list[dict[str, Any]] | None:
    """The log history a model folder keeps (one dict per logged step: loss, learning_rate, eval_*, step,
    epoch), or None for a folder that keeps none."""
    path = Path(model_dir) / TRAINING_LOG_FILE
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def load_run_record(model_dir: str | Path) -> dict[str, Any] | None:
    """The run record of a complete model in ``model_dir``, or None (no model, or one still being saved). One that
    cannot be read (cut short, not UTF-8, a folder, no JSON object) raises a DataFormatError naming it."""
    path = Path(model_dir) / RUN_FILE
    if not path.exists():
        return None
    record = read_json(path)
    if not isinstance(record, dict):
        raise DataFormatError(f"a run record is a JSON object, got a JSON {type(record).__name__}", source=str(path))
    return record


__all__ = ["LOG_DIR", "STAGING_DIR", "TRAINING_LOG_FILE", "TRAINING_WRITES", "load_training_log", "check_inputs_kept",
           "check_output_folder", "finish_stopped_save", "load_run_record", "push_final_model", "save_final_model"]
