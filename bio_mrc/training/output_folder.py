"""What may be trained into: an output folder that is new, empty or holds bio_mrc's own work, and no input where
training writes. Light on purpose (no torch, no transformers): ``bio-mrc train`` refuses these before they load."""

from __future__ import annotations

import contextlib
import json
import os
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Iterable, Iterator

from ..errors import ConfigError, argument
from ..io import UnsafePathError, check_folder_target, check_library_path, is_temporary_of, written_alone
from ..launcher import launcher_number
from ..model_folder import CARD_FILE, MODEL_FILE_NAMES
from ..model_records import RUN_FILE
from ..run_folder import CHECKPOINT_DIR, HUB_PUSH_DIR, TRAIN_CONFIG_FILE, checkpoint_step
from ..transformers_registration import MODEL_TYPE

STAGING_DIR = ".bio_mrc-saving"  # under the output folder while the final model is written
LOG_DIR = "logs"  # under the output folder: trackers' files (TensorBoard's event files), kept with the model


# The folder's one lock is held by train, tune, export and convert alike: which of them holds it is not known here.
_TRAINING_BUSY = ("another process is writing into this folder now (a train, tune, export or convert of a model there); "
                 f"wait for it to end, or choose another {argument('output_dir')}")


@contextlib.contextmanager
def training_alone(output_dir: str | Path) -> Iterator[None]:
    """Hold ``output_dir`` as the one training writing it, from before any work (``bio-mrc train`` and ``train_model``
    alike, the one lock of :func:`~bio_mrc.io.written_alone`, so held again by the same thread it is taken as held): a
    second run there at once (resuming or overwriting too) would save, rotate and remove the first one's checkpoints
    and mix their models. A launcher's other processes train beside rank 0, which holds it."""
    if launcher_number("RANK") != 0:
        yield
        return
    with written_alone(output_dir, _TRAINING_BUSY):
        yield


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
    strangers = checkpoint_strangers(checkpoints) if checkpoints.is_dir() else []
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


def checkpoint_strangers(checkpoints: Path) -> list[str]:
    """The names in a checkpoints folder that bio_mrc did not write. In one holding its run's options record, a
    ``hub-push`` folder is where a push during training copies the model's files to upload them; a run killed while
    writing that record leaves its temporary file."""
    ours = (checkpoints / TRAIN_CONFIG_FILE).is_file()
    return sorted(p.name for p in checkpoints.iterdir()
                  if p.is_symlink() or (p.name != TRAIN_CONFIG_FILE and checkpoint_step(p) is None
                                        and not (ours and p.name == HUB_PUSH_DIR and p.is_dir())
                                        and not (is_temporary_of(p.name, TRAIN_CONFIG_FILE) and p.is_file())))


def _training_writes(name: str) -> bool:
    """Whether training writes or removes a file of this name at the top of its output folder."""
    return any(fnmatchcase(name, pattern) for pattern in TRAINING_WRITES)


def _holds_bio_mrc_model(folder: Path) -> bool:
    try:
        return json.loads((folder / "config.json").read_text(encoding="utf-8")).get("model_type") == MODEL_TYPE
    except (OSError, ValueError, AttributeError, RecursionError):  # RecursionError: nested past the parser's stack
        return False


__all__ = ["LOG_DIR", "STAGING_DIR", "TRAINING_WRITES", "check_inputs_kept", "check_output_folder", "checkpoint_strangers"]
