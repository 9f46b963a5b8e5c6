"""Checkpoints of a training run: where they go, which one a resumed run continues from, and the
checks that keep a resumed run exact (the same options, the same questions, the whole run's time)."""

from __future__ import annotations

import contextlib
import functools
import json
import time
import zipfile
from pathlib import Path
from typing import Any

from transformers import TrainerCallback, TrainingArguments
from transformers.trainer import TRAINER_STATE_NAME
from transformers.trainer_callback import ExportableState
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

from ..errors import BioMrcError, ModelFormatError, argument
from ..data.json_reader import read_json
from ..io import atomic_write_json, file_sha256, is_temporary_of, owned_path, remove_file, remove_tree
from ..model_folder import safetensors_shapes
from ..json_syntax import json_value
from ..progress import progress_note
from ..model_defaults import TRAIN_OPTIONS_WHEN_ABSENT, WORD_UNITS, WORD_UNITS_WHEN_ABSENT
from ..run_folder import CHECKPOINT_DIR, TRAIN_CONFIG_FILE, checkpoint_step
from .config import DEFAULT_CHECKPOINT_STEPS  # noqa: F401 (named here too)


class ResumeError(BioMrcError, ValueError):
    """Training cannot continue (or start over) in a checkpoint folder as asked without mixing two runs."""


# In the checkpoints' options record: the digest of the init_from model's weights and tokenizer as the run began, which
# a resumed run starts from again (its decoding settings, tokenizer and earlier stages), so one retrained in place is refused.
INIT_FROM_DIGEST = "init_from_digest"
INIT_FROM_COMMIT = "init_from_commit"  # the commit of a hub id's snapshot, which a branch or tag moves on from
CHECKPOINT_DIGESTS = "bio_mrc_checksums.json"  # in each checkpoint-N: the SHA-256 of each of its files as saved


class CheckpointDigests(TrainerCallback):
    """Records the SHA-256 of every file of each checkpoint once Trainer has saved it whole, which a resumed run checks
    before it loads them: a byte changed since (a copy, a disk, a hand) keeps a file's length and its structure."""

    def on_save(self, args: TrainingArguments, state: Any, control: Any, **kwargs: Any) -> None:
        _wait_for_every_process()  # sharded saves (FSDP, DeepSpeed) write the checkpoint on every process
        if args.should_save:
            record_checkpoint_digests(Path(args.output_dir) / f"{PREFIX_CHECKPOINT_DIR}-{state.global_step}")


def _wait_for_every_process() -> None:
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
        dist.barrier()


def record_checkpoint_digests(checkpoint: Path) -> None:
    """Write ``checkpoint``'s :data:`CHECKPOINT_DIGESTS` record. Each file is read once, in blocks, right after Trainer
    wrote it (still in the page cache), once every ``checkpoint_steps`` steps: a small share of writing the checkpoint."""
    if checkpoint.is_dir():
        atomic_write_json(checkpoint / CHECKPOINT_DIGESTS, {"sha256": _file_digests(checkpoint)}, indent=1)


def _file_digests(checkpoint: Path) -> dict[str, str]:
    return {path.relative_to(checkpoint).as_posix(): file_sha256(path) for path in sorted(checkpoint.rglob("*"))
            if path.is_file() and not path.is_symlink() and path.name != CHECKPOINT_DIGESTS
            and not is_temporary_of(path.name, CHECKPOINT_DIGESTS)}


class TrainingClock(TrainerCallback, ExportableState):
    """The training time of every sitting so far, kept in each checkpoint's ``trainer_state.json`` (written
    with it, and last), so that a resumed run reports the whole run's time rather than its last sitting's."""

    def __init__(self, started: float = 0.0, earlier_seconds: float | None = 0.0):
        self.started, self.earlier_seconds = started, earlier_seconds

    def seconds(self) -> float:
        return (self.earlier_seconds or 0.0) + time.perf_counter() - self.started

    def on_train_begin(self, args: TrainingArguments, state: Any, control: Any, **kwargs: Any) -> None:
        # A state resumed from a checkpoint saved without the clock has no slot for it, and Trainer saves only into slots.
        state.stateful_callbacks.setdefault(type(self).__name__, {})

    def state(self) -> dict[str, Any]:
        known = self.earlier_seconds is not None
        return {"args": {}, "attributes": {"trained_seconds": self.seconds() if known else None}}

    @classmethod
    def seconds_saved_in(cls, checkpoint: Path) -> float | None:
        """The time a checkpoint's run had trained when it was saved; None for one saved without the clock (or with
        no number of seconds in its place: an edited state is partial time, never a wrong sum)."""
        state = json.loads((checkpoint / TRAINER_STATE_NAME).read_text(encoding="utf-8"))  # an object: scan_checkpoints
        saved = _object(_object(_object(state.get("stateful_callbacks")).get(cls.__name__)).get("attributes"))
        return seconds_trained(saved.get("trained_seconds"))


def seconds_trained(value: Any) -> float | None:
    """``value`` as a time trained, in seconds: a finite number from 0; None for anything else (an edited record)."""
    known = isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < float("inf")
    return float(value) if known else None


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def checkpoint_to_resume(
    folder: Path, run_options: dict[str, Any], resume: bool, save_checkpoints: bool, main_process: bool, progress: bool
) -> Path | None:
    """The checkpoint to continue from (None: from the start), after the checks that keep a resumed run exact."""
    last = check_resumable(folder, run_options, resume, save_checkpoints)
    incomplete = scan_checkpoints(folder)[1]
    if main_process and save_checkpoints:
        for partial in incomplete:  # cut short by a kill; rotation could keep one and delete our newest good one
            remove_tree(partial, folder)
        for stray in _options_temporaries(folder):  # a kill while the options record was written
            remove_file(stray, folder)
    if last is not None and resume:
        progress_note(progress, f"resuming training from {last} (step {checkpoint_step(last)})")
        return last
    if resume:
        progress_note(progress, f"nothing to resume in {folder}: training from the start")
    if save_checkpoints and main_process:
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write_json(folder / TRAIN_CONFIG_FILE, run_options, indent=2)
    return None


def check_resumable(folder: Path, run_options: dict[str, Any], resume: bool, save_checkpoints: bool) -> Path | None:
    """The checks of :func:`checkpoint_to_resume` alone, which write and remove nothing (so they run before the model
    loads): an unfinished run's checkpoints are resumed, never overwritten, and only by the same run. Returns the last
    complete checkpoint."""
    complete = scan_checkpoints(folder)[0]
    last = complete[-1] if complete else None
    if last is not None and not resume and save_checkpoints:
        raise ResumeError(
            f"{folder} holds the checkpoints of an unfinished run (last: {last.name}); resume it "
            f"({argument('resume', True)}) or delete that folder to start over"
        )
    if last is not None and resume:
        _check_same_run(folder, run_options, last)
        _check_checkpoint_files(folder, last)
        _check_checkpoint_digests(folder, last, complete)
    return last


def _options_temporaries(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return [path for path in folder.iterdir() if is_temporary_of(path.name, TRAIN_CONFIG_FILE) and path.is_file()]


def _check_checkpoint_files(folder: Path, checkpoint: Path) -> None:
    """The checkpoint's weights whole (their tensors tile each file) and Trainer's states whole archives (as
    ``torch.save`` writes them), read before the model loads: a file cut short or edited by a copy, a full disk or a
    hand was a traceback from Trainer once training had begun."""
    for path in sorted(checkpoint.iterdir()):
        try:
            if path.suffix == ".safetensors":
                safetensors_shapes(checkpoint, path.name)
            elif path.suffix in (".pt", ".pth", ".bin"):
                zipfile.ZipFile(path).close()  # its directory is at the end: a file cut short has none
        except (ModelFormatError, zipfile.BadZipFile, OSError) as err:
            found = str(err).removesuffix(f" (in {checkpoint})").split(": ", 1)[-1] if isinstance(err, ModelFormatError) else None
            raise ResumeError(f"cannot resume from {checkpoint}: {path.name} is cut short or damaged{f' ({found})' if found else ''}; "
                              f"delete {folder} to start over") from None


def _check_checkpoint_digests(folder: Path, checkpoint: Path, complete: list[Path]) -> None:
    """Each file of ``checkpoint`` holds the bytes it was saved with (:class:`CheckpointDigests`); one saved before
    those records has none, and resumes on :func:`_check_checkpoint_files`' checks alone. Hashing the checkpoint
    once reads it as its loading does, a small cost beside that load."""
    record = checkpoint / CHECKPOINT_DIGESTS
    if not record.exists():
        return
    earlier = [path for path in complete if path != checkpoint]
    advice = (f"delete {checkpoint} to resume from {earlier[-1].name}, or delete {folder} to start over" if earlier
              else f"delete {folder} to start over")
    saved = _saved_digests(checkpoint, record)
    if saved is None:
        raise ResumeError(f"{record}: no record of the checkpoint's files (a JSON object of SHA-256 digests), so "
                          f"{checkpoint.name} cannot be checked; {advice}")
    for name, digest in saved.items():
        path = checkpoint / name
        problem = ("missing since it was saved" if not path.is_file() else
                   "its bytes changed since it was saved (SHA-256 differs)" if _hashed(path) != digest else None)
        if problem:
            raise ResumeError(f"{path}: {problem}, so {checkpoint.name} cannot be resumed; {advice}")


def _hashed(path: Path) -> str:
    stat = path.stat()
    return _file_sha256(str(path), stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=64)
def _file_sha256(path: str, size: int, mtime_ns: int) -> str:
    """A file's SHA-256, read once a process for each state (size, time) of it: a resume checks before the model
    loads and again as training starts."""
    return file_sha256(path)


def _saved_digests(checkpoint: Path, record: Path) -> dict[str, str] | None:
    """The ``{name: sha256}`` of ``record``, names inside ``checkpoint`` alone; None where it holds no such thing."""
    try:
        saved = json.loads(record.read_text(encoding="utf-8")).get("sha256")
    except (OSError, ValueError, AttributeError, RecursionError):
        return None
    inside = isinstance(saved, dict) and all(
        isinstance(digest, str) and isinstance(name, str) and not Path(name).is_absolute() and ".." not in Path(name).parts
        for name, digest in saved.items())
    return saved if inside else None


def _check_same_run(folder: Path, run_options: dict[str, Any], checkpoint: Path) -> None:
    """Refuse a checkpoint made with other training options or questions: the result would be neither run."""
    path = folder / TRAIN_CONFIG_FILE
    if not path.exists():
        raise ResumeError(f"cannot resume from {checkpoint}: {path} is missing, so its training options are unknown")
    saved = read_json(path)  # a damaged file: one line naming it
    if not isinstance(saved, dict) or not isinstance(saved.get("train", {}), dict):
        raise ResumeError(f"cannot resume from {checkpoint}: {path} holds no run's options (a JSON object with 'train'), "
                          "so its training options are unknown")
    # a record leaves an option out at its value from before the option existed: name that value, never None
    old, new = ({**TRAIN_OPTIONS_WHEN_ABSENT, **options} for options in (saved.get("train", {}), run_options["train"]))
    differing = [k for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)]
    if differing:
        changed = "; ".join(f"{k}: {json_value(old.get(k))} then, {json_value(new.get(k))} now" for k in differing)
        raise ResumeError(f"cannot resume from {checkpoint}: it was trained with other options ({changed}); "
                          f"{_options_advice([k for k in differing if k not in old], folder)}")
    if saved.get("questions") != run_options["questions"]:
        raise ResumeError(f"cannot resume from {checkpoint}: it was trained on other questions (or in another order); "
                          f"give the questions it was trained on to resume it, or delete {folder} to start over")
    # a record written before the digest was kept has none: its run resumes as it did
    if INIT_FROM_DIGEST in saved and saved[INIT_FROM_DIGEST] != run_options.get(INIT_FROM_DIGEST):
        raise ResumeError(f"cannot resume from {checkpoint}: the model it continues ({new.get('init_from')}) changed since "
                          f"the run began (its weights or tokenizer differ){_commits_words(saved, run_options)}; train from "
                          f"it into a new folder, or delete {folder} to start over")


def _options_advice(unrecorded: list[str], folder: Path) -> str:
    """What to do about a checkpoint trained with other options; ``unrecorded``: those its record leaves out with no
    value known for then (an earlier version saved it before they existed: the encoder's own dropout), which no option gives."""
    if not unrecorded:
        return f"give the options it was trained with to resume it, or delete {folder} to start over"
    names = " and ".join([", ".join(unrecorded[:-1]), unrecorded[-1]] if len(unrecorded) > 1 else unrecorded)
    return (f"it was saved before {names} existed, by a version this one cannot continue exactly: delete {folder} "
            "to start over")


def _commits_words(saved: dict[str, Any], run_options: dict[str, Any]) -> str:
    """``: the hub id's default branch now reads commit B, the run began from commit A`` where the run continues a hub
    id whose revision now reads another commit; empty otherwise."""
    then, now = saved.get(INIT_FROM_COMMIT), run_options.get(INIT_FROM_COMMIT)
    if not isinstance(then, str) or not now or then == now:
        return ""
    revision = run_options["train"].get("revision")
    ref = "default branch" if revision is None else f"revision {json_value(revision)}"
    return f": the hub id's {ref} now reads commit {now}, the run began from commit {then}"


def checkpoint_word_units(checkpoint: Path) -> str:
    """The words the BIO head of ``checkpoint`` was trained on, from its ``config.json``, which a resumed run keeps
    tagging: a checkpoint saved before ``word_units`` has none and was trained on the tokenizer's words."""
    path = checkpoint / "config.json"
    if not path.is_file():
        raise ResumeError(f"cannot resume from {checkpoint}: no config.json, so the words its BIO head was trained on are unknown")
    saved = read_json(path)  # a damaged file: one line naming it
    if not isinstance(saved, dict):
        raise ResumeError(f"cannot resume from {checkpoint}: no model config (a JSON object)")
    units = saved.get("word_units", WORD_UNITS_WHEN_ABSENT)
    if units not in WORD_UNITS:
        raise ResumeError(f"cannot resume from {checkpoint}: word_units is {json_value(units)}, not one of {json_value(list(WORD_UNITS), whole=True)}")
    return units


def scan_checkpoints(folder: str | Path) -> tuple[list[Path], list[Path]]:
    """(complete, incomplete) ``checkpoint-N`` folders, by step. Trainer writes ``trainer_state.json`` last,
    so a checkpoint is complete when that file reads as a JSON object; a kill while saving leaves it missing or cut."""
    folder = Path(folder)
    if folder.is_symlink():  # its checkpoint-N folders are not this run's to delete or continue
        raise ResumeError(f"{folder} is a symbolic link, which bio_mrc does not follow to delete or write checkpoints; "
                          "remove the link or choose another output folder")
    if not folder.is_dir():
        return [], []
    found = sorted((p for p in folder.iterdir() if p.is_dir() and checkpoint_step(p) is not None), key=checkpoint_step)
    complete = [p for p in found if _reads_as_json(p / TRAINER_STATE_NAME)]
    return complete, [p for p in found if p not in complete]


def _reads_as_json(path: Path) -> bool:
    """Whether ``path`` holds one JSON object (Trainer's state always is; anything else is no state to resume)."""
    try:
        return isinstance(json.loads(path.read_text(encoding="utf-8")), dict)
    except (OSError, ValueError, RecursionError):  # RecursionError: nested past the parser's stack
        return False


def remove_checkpoints(folder: Path, ours: bool) -> None:
    """Once the model is complete nothing is left to resume: remove this run's checkpoints. A run that saved
    none leaves another run's alone and removes only the empty folder Trainer made."""
    if ours:
        remove_tree(folder, folder.parent)
    else:
        with contextlib.suppress(OSError):
            owned_path(folder, folder.parent).rmdir()


__all__ = ["CHECKPOINT_DIGESTS", "CHECKPOINT_DIR", "DEFAULT_CHECKPOINT_STEPS", "INIT_FROM_COMMIT", "INIT_FROM_DIGEST", "TRAIN_CONFIG_FILE",
           "CheckpointDigests", "ResumeError", "TrainingClock", "record_checkpoint_digests", "checkpoint_step", "checkpoint_to_resume",
           "remove_checkpoints", "scan_checkpoints", "seconds_trained"]
