"""The commands that train or answer a file keep a model's freed blocks for reuse (:mod:`bio_mrc.freed_memory`): each
step or batch reuses the memory the one before freed instead of faulting in fresh pages. Only in a process the command
line begins: a program that imported torch before it called :func:`bio_mrc.cli.main` keeps its allocator as it is, as
it keeps its threads (:mod:`bio_mrc.cli.torch_threads`). ``serve`` keeps glibc's own, so that a large request's memory
returns to the system. A command marks itself with :func:`reuses_freed_blocks`.
"""

from __future__ import annotations

import argparse

from ..freed_memory import keep_freed_blocks

KEEP_FREED_BLOCKS = "keep_freed_blocks"  # the parsed arguments' mark of a command that trains or answers a file


def reuses_freed_blocks(parser: argparse.ArgumentParser) -> None:
    """Mark ``parser``'s command as one that trains or answers a file, batch after batch."""
    parser.set_defaults(**{KEEP_FREED_BLOCKS: True})


def keep_freed_blocks_for(args: argparse.Namespace, torch_before: bool) -> bool:
    """Keep freed blocks where ``args``' command is marked and torch was not imported before the command line began;
    True where malloc now keeps them."""
    return bool(getattr(args, KEEP_FREED_BLOCKS, False)) and not torch_before and keep_freed_blocks()


__all__ = ["KEEP_FREED_BLOCKS", "keep_freed_blocks_for", "reuses_freed_blocks"]
