"""A resumed run that continues a hub id reads the commit it began from, which its checkpoints' options record keeps
(``init_from_commit``): a branch or tag moved on since would give it another model's weights halfway through."""

from __future__ import annotations

import warnings
from dataclasses import replace
from pathlib import Path

from ..data.json_reader import read_json
from ..errors import InputNote
from ..hub import cached_snapshot, local_folder, snapshot_commit
from ..json_syntax import json_value
from ..run_folder import TRAIN_CONFIG_FILE
from .checkpoints import INIT_FROM_COMMIT, ResumeError, scan_checkpoints
from .config import TrainConfig


class RecordedCommitNote(InputNote):
    """A resumed run continues a hub id whose branch or tag now reads another commit: it reads the commit it began from."""


def start_at_recorded_commit(config: TrainConfig, checkpoints: Path, resume: bool) -> TrainConfig:
    """``config`` as the run reads its ``init_from`` model: at the commit its checkpoints' options record names where the
    run resumes one and the hub id's revision now reads another commit (said in one :class:`RecordedCommitNote`), the
    snapshot read from the Hugging Face cache alone; ``config`` itself otherwise. A commit the cache lacks is a
    :class:`ResumeError` naming both commits and how to fetch the recorded one."""
    complete = scan_checkpoints(checkpoints)[0] if resume and config.init_from else []
    then = _recorded_commit(checkpoints) if complete else None
    now = snapshot_commit(config.init_from, local_folder(config.init_from, revision=config.revision)) if then else None
    if not then or not now or then == now:
        return config
    from huggingface_hub import constants
    from huggingface_hub.errors import LocalEntryNotFoundError

    ref = "default branch" if config.revision is None else f"revision {json_value(config.revision)}"
    try:
        cached_snapshot(config.init_from, then)
    except (LocalEntryNotFoundError, OSError, ValueError):
        raise ResumeError(
            f"cannot resume from {complete[-1]}: the hub id's {ref} now reads commit {now}, and commit {then}, which the run "
            f"began from, is not in the Hugging Face cache ({constants.HF_HUB_CACHE}); fetch it (`hf download "
            f"{config.init_from} --revision {then}`, the hub reachable) to continue the run, or delete {checkpoints} to "
            "start over") from None
    warnings.warn(RecordedCommitNote(f"{config.init_from}: the hub id's {ref} now reads commit {now}; the run continues "
                                     f"from commit {then}, which it began from"), stacklevel=4)  # train_model's caller
    return replace(config, revision=then)


def _recorded_commit(checkpoints: Path) -> str | None:
    """The commit the options record of ``checkpoints`` names; None where it names none (a damaged record is refused
    by the resume's own checks)."""
    path = checkpoints / TRAIN_CONFIG_FILE
    if not path.is_file():
        return None
    try:
        saved = read_json(path)
    except ValueError:
        return None
    commit = saved.get(INIT_FROM_COMMIT) if isinstance(saved, dict) else None
    return commit if isinstance(commit, str) else None


__all__ = ["RecordedCommitNote", "start_at_recorded_commit"]
