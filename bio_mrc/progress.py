"""Progress bars: on for long command-line work, off by default for library calls.

transformers ("Loading weights") and datasets (``map``) keep a process-wide
switch for their bars; :func:`progress_bars` sets both for the duration of a
call and restores what the caller had, so a quiet library call never changes
the settings of the program that made it, nor do calls made from several threads at once; :func:`transformers_quiet`
does the same for transformers' log (its load report of a model's weights). :func:`window_bars` are
the bars of answering questions, one a stage over a whole list however many chunks it is run in; a
:func:`question_bar` counts the questions a stage decodes, in passes, a chunk at a time; a :func:`resample_bar` counts
the bootstrap resamples a stage draws, a chunk of them at a time.
"""

from __future__ import annotations

import sys
import threading
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Iterable, Iterator, TypeVar

from tqdm.auto import tqdm

from .io import printable_line

Item = TypeVar("Item")


# The switches are the process's: the blocks open in any thread are counted, the latest decides, and the setting found
# by the first is restored by the last to end (two threads each saving and restoring would leave it as one found it
# inside the other's block).
_LOCK = threading.Lock()
_OPEN: list[list[bool]] = []  # each open block's wish, in the order they opened
_FOUND: dict[str, bool] = {}  # each switch (by its module) as the first open block that set it found it


@contextmanager
def progress_bars(enabled: bool) -> Iterator[None]:
    """Show (``True``) or hide (``False``) the bars of transformers and datasets inside the block: datasets' once it is
    imported (:func:`_switches`)."""
    wish = [bool(enabled)]  # a list of its own: the block is removed by identity, not by value
    switches = _switches()  # imported outside the lock
    with _LOCK:
        _OPEN.append(wish)
        _set(switches, wish[0])
    try:
        yield
    finally:
        switches = _switches()  # datasets' too where the block imported it
        with _LOCK:
            del _OPEN[next(i for i, block in enumerate(_OPEN) if block is wish)]
            if _OPEN:
                _set(switches, _OPEN[-1][0])
            else:
                _restore(switches)


def _switches() -> tuple:
    """transformers' switch, imported by the first block (every block wraps its work), and datasets' once datasets is
    imported: the modules that map a dataset import it before they open a block, and an answer, which maps none, does
    not import it (pandas and more) to switch off a bar nothing draws. A library imported inside a block keeps its own
    setting there, and has it back when the blocks end."""
    import transformers.utils.logging as transformers_logging

    if "datasets" not in sys.modules:
        return (transformers_logging,)
    import datasets.utils.logging as datasets_logging  # waits for an import another thread is in the middle of

    return datasets_logging, transformers_logging


def _set(switches: tuple, shown: bool) -> None:
    for switch in switches:
        _FOUND.setdefault(switch.__name__, switch.is_progress_bar_enabled())  # as the program had it
        switch.enable_progress_bar() if shown else switch.disable_progress_bar()


def _restore(switches: tuple) -> None:
    """Each switch the blocks set, as the first of them found it."""
    for switch in switches:
        if switch.__name__ in _FOUND:
            switch.enable_progress_bar() if _FOUND[switch.__name__] else switch.disable_progress_bar()
    _FOUND.clear()


# transformers' verbosity is the process's too: quiet blocks open in several threads (models loaded at once) are
# counted, and the level the first found is restored by the last to end.
_QUIET = threading.Lock()
_QUIET_FOUND: list[int] = []  # per open block, the level the first of them found


@contextmanager
def transformers_quiet() -> Iterator[None]:
    """transformers' warnings off inside the block (its load report of weights missing or left over, which the package
    checks or says in its own words), its level restored after the last open block ends."""
    from transformers.utils import logging

    with _QUIET:
        _QUIET_FOUND.append(_QUIET_FOUND[0] if _QUIET_FOUND else logging.get_verbosity())
        logging.set_verbosity_error()
    try:
        yield
    finally:
        with _QUIET:
            found = _QUIET_FOUND.pop()
            if not _QUIET_FOUND:
                logging.set_verbosity(found)


def progress_note(shown: bool, message: str) -> None:
    """One line of what a long call is doing, on standard error, when its ``progress`` asks for it (library calls
    stay quiet); control characters in names are shown escaped (:func:`bio_mrc.io.printable_line`)."""
    if shown:
        print(printable_line(message), file=sys.stderr)


@dataclass
class WindowBars:
    """The bars of answering questions: ``windows`` counts the questions cut into windows, ``inference`` the windows
    run through the model. No count of windows comes before a chunk's are cut, so the inference bar starts at the
    first :meth:`cut`, with that chunk's windows as its total (a bar without one draws a bare ``inference: 0window``),
    and each later chunk's join it."""

    windows: tqdm
    shown: bool
    inference: tqdm | None = None

    def cut(self, windows: int) -> tqdm:
        """A chunk's questions are cut into ``windows`` windows, which the inference bar, returned, now waits for."""
        if self.inference is None:
            self.inference = tqdm(total=windows, desc="inference", unit="window", disable=not self.shown)
        else:
            self.inference.total += windows
            self.inference.refresh()
        return self.inference


@contextmanager
def window_bars(questions: int, shown: bool) -> Iterator[WindowBars]:
    """One bar a stage over ``questions`` questions, on standard error where ``shown`` (library calls stay quiet)."""
    with tqdm(total=questions, desc="windows", unit="question", disable=not shown) as windows, _closing(WindowBars(windows, shown)) as bars:
        yield bars


@contextmanager
def inference_bar(shown: bool) -> Iterator[WindowBars]:
    """The inference bar alone, a step a forward pass, on standard error where ``shown``: for a stream whose own bar
    counts its questions answered (``bio-mrc predict``), so a slice of long contexts shows its windows run as they
    run; the questions cut go uncounted."""
    with tqdm(disable=True) as uncounted, _closing(WindowBars(uncounted, shown)) as bars:
        yield bars


@contextmanager
def _closing(bars: WindowBars) -> Iterator[WindowBars]:
    """``bars``, their inference bar closed at the end of the block where one was opened."""
    try:
        yield bars
    finally:
        if bars.inference is not None:
            bars.inference.close()


# The question bar open in this context: the chunk loops of a stage advance it without each being handed it (a
# registered tuning step is called with the task's arguments alone); another thread's call has its own.
_QUESTION_BAR: ContextVar[tqdm | None] = ContextVar("bio_mrc_question_bar", default=None)


@contextmanager
def question_bar(description: str, questions: int, shown: bool) -> Iterator[None]:
    """One bar over ``questions`` questions a stage decodes (a question decoded in two passes counts twice), on
    standard error where ``shown`` (library calls stay quiet); a pass the stage does not plan adds its own
    (:func:`questions_planned`). Inside it :func:`questions_done` advances it."""
    with tqdm(total=questions, desc=description, unit="question", disable=not shown) as bar:
        token = _QUESTION_BAR.set(bar)
        try:
            yield
        finally:
            _QUESTION_BAR.reset(token)


# The window bars of a stream open in this context: its chunks' slices run their windows under them unhanded.
_WINDOW_BARS: ContextVar[WindowBars | None] = ContextVar("bio_mrc_window_bars", default=None)


@contextmanager
def stream_bars(questions: tqdm | None, windows: WindowBars | None) -> Iterator[None]:
    """Inside the block, the bars of a stream answered a chunk at a time, its caller's (``bio-mrc predict``'s):
    :func:`questions_done` advances ``questions`` and :func:`open_window_bars` gives ``windows`` (None: no bar), so each
    chunk moves them a slice and a forward pass at a time without being handed them."""
    questions_token, windows_token = _QUESTION_BAR.set(questions), _WINDOW_BARS.set(windows)
    try:
        yield
    finally:
        _WINDOW_BARS.reset(windows_token)
        _QUESTION_BAR.reset(questions_token)


def open_window_bars() -> WindowBars | None:
    """The window bars of the open :func:`stream_bars` block (none open: None)."""
    return _WINDOW_BARS.get()


def questions_planned(questions: int) -> None:
    """A pass over ``questions`` more questions joins the open question bar's total (none open: nothing)."""
    if (bar := _QUESTION_BAR.get()) is not None:
        bar.total += questions
        bar.refresh()


def questions_done(questions: int) -> None:
    """``questions`` more are decoded: the open question bar advances (none open: nothing)."""
    if (bar := _QUESTION_BAR.get()) is not None:
        bar.update(questions)


# The resample bar open in this context: the bootstrap's chunk loops (bio_mrc.metrics.stats) advance it unhanded.
_RESAMPLE_BAR: ContextVar[PlannedBar | None] = ContextVar("bio_mrc_resample_bar", default=None)


@dataclass
class PlannedBar:
    """A bar drawn once the first work is planned, with that work as its total (never a bare ``0resample`` line);
    work planned later joins the total."""

    description: str
    unit: str
    shown: bool
    bar: tqdm | None = None

    def plan(self, count: int) -> None:
        if self.bar is None:
            self.bar = tqdm(total=count, desc=self.description, unit=self.unit, disable=not self.shown)
        else:
            self.bar.total += count
            self.bar.refresh()

    def done(self, count: int) -> None:
        if self.bar is not None:
            self.bar.update(count)


@contextmanager
def resample_bar(description: str, shown: bool) -> Iterator[None]:
    """One bar over the bootstrap resamples drawn inside the block, on standard error where ``shown`` (library calls
    stay quiet): each stage adds the resamples it will draw (:func:`resamples_planned`) before it draws them, and each
    chunk drawn advances it (:func:`resamples_done`)."""
    planned = PlannedBar(description, "resample", shown)
    token = _RESAMPLE_BAR.set(planned)
    try:
        yield
    finally:
        _RESAMPLE_BAR.reset(token)
        if planned.bar is not None:
            planned.bar.close()


def resamples_planned(resamples: int) -> None:
    """A stage will draw ``resamples`` more resamples: they join the open resample bar's total (none open: nothing)."""
    if (planned := _RESAMPLE_BAR.get()) is not None:
        planned.plan(resamples)


def resamples_done(resamples: int) -> None:
    """``resamples`` more are drawn: the open resample bar advances (none open: nothing)."""
    if (planned := _RESAMPLE_BAR.get()) is not None:
        planned.done(resamples)


def stage_bar(items: Iterable[Item], description: str, unit: str, shown: bool) -> Iterator[Item]:
    """``items`` one at a time, a bar counting them on standard error where ``shown`` (library calls stay quiet)."""
    items = list(items)
    with tqdm(total=len(items), desc=description, unit=unit, disable=not shown) as bar:
        for item in items:
            yield item
            bar.update(1)
