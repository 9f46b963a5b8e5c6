"""What a launcher (``torchrun``, ``accelerate launch``) tells each of its processes: ``WORLD_SIZE``, ``RANK`` and
``LOCAL_RANK``, read in one place and refused in one line when they are no whole number (torch, accelerate and the
package would each end in int()'s traceback). Imports no torch, so the command line checks them before any work."""

from __future__ import annotations

import os
import sys

from .errors import ConfigError

# Each variable: its value without a launcher, and its least value.
LAUNCHER_VARIABLES = {"WORLD_SIZE": (1, 1), "RANK": (0, 0), "LOCAL_RANK": (0, 0)}


def launcher_number(name: str) -> int:
    """``WORLD_SIZE``, ``RANK`` or ``LOCAL_RANK`` as a launcher sets it (its default when unset); any other value, an
    empty one included, is refused naming the variable."""
    default, least = LAUNCHER_VARIABLES[name]
    text = os.environ.get(name)
    if text is None:
        return default
    if not (text.strip().isascii() and text.strip().isdigit() and int(text) >= least):
        raise ConfigError(f"{name}={text!r}: a launcher (torchrun) sets it to a whole number from {least}; "
                          "unset it to run one process")
    return int(text)


def check_launcher_environment() -> None:
    """Refuse a launcher's variable that is no whole number, before any work."""
    for name in LAUNCHER_VARIABLES:
        launcher_number(name)


def close_process_group() -> None:
    """Leave the process group this process joined (``Shard``'s, or the one ``TrainingArguments`` joins under a
    launcher), if any: gloo left to the interpreter's exit can abort the process after its one-line refusal
    (``terminate called without an active exception``). Imports no torch: a process that never did joined none."""
    distributed = sys.modules.get("torch.distributed")
    if distributed is not None and distributed.is_available() and distributed.is_initialized():
        distributed.destroy_process_group()


__all__ = ["LAUNCHER_VARIABLES", "check_launcher_environment", "close_process_group", "launcher_number"]
