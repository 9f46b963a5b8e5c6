"""Progress bars: on for long command-line work, off by default for library calls.

transformers ("Loading weights") and datasets (``map``) keep a process-wide
switch for their bars; :func:`progress_bars` sets both for the duration of a
call and restores what the caller had, so a quiet library call never changes
the settings of the program that made it.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import datasets.utils.logging as datasets_logging
import transformers.utils.logging as transformers_logging

_SWITCHES = (datasets_logging, transformers_logging)


@contextmanager
def progress_bars(enabled: bool) -> Iterator[None]:
    """Show (``True``) or hide (``False``) the bars of transformers and datasets inside the block."""
    before = [switch.is_progress_bar_enabled() for switch in _SWITCHES]
    try:
        for switch in _SWITCHES:
            switch.enable_progress_bar() if enabled else switch.disable_progress_bar()
        yield
    finally:
        for switch, was_enabled in zip(_SWITCHES, before):
            switch.enable_progress_bar() if was_enabled else switch.disable_progress_bar()
