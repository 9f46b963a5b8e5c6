"""A process beside the server's for the work that would hold its interpreter lock for long.

Checking and parsing a large JSON body and reading (tokenizing) a long question are Python work that holds the
interpreter lock for milliseconds to hundreds of milliseconds at a time; in a thread of the server's own process,
every other thread (the event loop, the forward passes, the short questions' reading) then waits for the lock at
each step, and a short request's answer waits for other people's long ones. In a process of its own, that work
takes a core, not the lock, and it runs at a lower OS priority (``nice``), so the short requests' work is
scheduled first when the cores are busy.

The process starts with the first work it is given, or ahead of it with :meth:`HelperProcess.start` (``bio-mrc
serve`` starts it before it answers); its state (the tokenizer, the window settings) is sent once, when it starts.
What it runs is a module-level function importing no PyTorch, with arguments and results that pickle.

It ends with the server, however the server ends: a server killed outright (SIGKILL, the OOM killer) stops no
helper, which would otherwise live on, holding the server's standard error open (:func:`_end_with_parent`).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import multiprocessing
import os
import signal
import sys
import threading
import types
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from functools import partial
from multiprocessing.connection import Connection
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from ..features.config import FeatureConfig
from ..features.question_columns import window_columns
from ..features.ragged import RaggedColumn
from ..types import Example

HELPER_NICE = 10  # the helper's OS priority below the server's: its work yields the cores to short requests'
_STATE: dict[str, Any] = {}  # the helper process's own: what start() sent it
PR_SET_PDEATHSIG = 1  # Linux's prctl option: a signal the process gets when the thread that started it ends


class HelperProcess:
    """One helper process, its functions called from the event loop (:meth:`run`) or from a thread that may
    block (:meth:`submit`); ``state`` reaches it once, when it starts."""

    def __init__(self, state: dict[str, Any] | None = None, nice: int = HELPER_NICE) -> None:
        self.state, self.nice = dict(state or {}), nice
        self.executor: ProcessPoolExecutor | None = None
        self._lifeline: tuple[Connection, Connection] | None = None  # the pipe whose end closing ends the process
        self._starting = threading.Lock()  # the loop and the long questions' thread may both start it

    def start(self) -> None:
        """Start the process now and wait until it is ready (blocking), rather than with its first work."""
        self.submit(os.getpid).result()

    def stop(self) -> None:
        """Stop the process, if it started; what it was asked and has not begun is dropped."""
        with self._starting:
            executor, self.executor = self.executor, None
            lifeline, self._lifeline = self._lifeline, None
        if executor is not None:
            executor.shutdown(wait=True, cancel_futures=True)
        _close(lifeline)  # only after the shutdown: closing it ends the process at once

    def submit(self, function: Callable, *args: Any) -> Future:
        """The future of ``function(*args)`` in the helper process, started first if it is not running. A process
        that died (killed, out of memory) fails the work it held and is replaced at the next call."""
        with self._starting:
            if self.executor is not None:
                try:
                    return self.executor.submit(function, *args)
                except BrokenProcessPool:  # it died: replaced below
                    self.executor.shutdown(wait=False, cancel_futures=True)
                    _close(self._lifeline)
            self.executor = self._new_executor()
            with _caller_script_hidden():  # the process starts with this first call
                return self.executor.submit(function, *args)

    def _new_executor(self) -> ProcessPoolExecutor:
        # The process reads the pipe's one end; only this process holds the other, which closes when it dies.
        reader, writer = multiprocessing.Pipe(duplex=False)
        self._lifeline = (reader, writer)
        # A parent-death signal follows the starting thread, not the process: asked for only when that thread is
        # the main one, which lives as long as the process.
        on_main = threading.current_thread() is threading.main_thread()
        # Spawned, not forked: the server's threads and their locks stay behind.
        return ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"), initializer=_begin,
                                   initargs=(self.state, self.nice, reader, os.getpid(), on_main))

    async def run(self, function: Callable, *args: Any) -> Any:
        """``function(*args)`` in the helper process, awaited without holding the event loop."""
        return await asyncio.wrap_future(self.submit(function, *args))


@contextlib.contextmanager
def _caller_script_hidden() -> Iterator[None]:
    """Spawning imports the caller's ``__main__`` in the new process; the helper runs package functions only, so
    it gets none: a script without an ``if __name__ == "__main__"`` guard (or one read from standard input) would
    otherwise run again in it, loading its model and starting its server there."""
    main = sys.modules.get("__main__")
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        if main is not None:
            sys.modules["__main__"] = main


def _close(lifeline: tuple[Connection, Connection] | None) -> None:
    for end in lifeline or ():
        end.close()


def _begin(state: dict[str, Any], nice: int, lifeline: Connection, parent: int, death_signal: bool) -> None:
    _end_with_parent(lifeline, parent, death_signal)
    # Ctrl-C reaches the whole process group: the server stops this process as it shuts down, and a KeyboardInterrupt
    # here would only print a traceback from its wait for work.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _STATE.update(state)
    if nice and hasattr(os, "nice"):
        try:
            os.nice(nice)
        except OSError:  # a priority the OS does not allow: run at the server's
            pass


def _end_with_parent(lifeline: Connection, parent: int, death_signal: bool) -> None:
    """End this process when ``parent`` (the server) dies: at once by a SIGTERM from Linux where asked for, and on
    any OS when ``lifeline``, a pipe whose other end only the parent holds, reads end-of-file."""
    if death_signal and sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent:  # it died before the signal was asked for (or before this process began)
        os._exit(1)
    threading.Thread(target=_exit_at_end_of, args=(lifeline,), name="parent watcher", daemon=True).start()


def _exit_at_end_of(lifeline: Connection) -> None:
    with contextlib.suppress(EOFError, OSError):
        lifeline.recv_bytes()  # the parent never writes: this returns only at end-of-file, when the parent is gone
    os._exit(1)


def tokenized_questions(questions: Sequence[Sequence[Example]]) -> list[tuple[np.ndarray, dict[str, RaggedColumn]]]:
    """Each question's windows as :func:`~bio_mrc.features.question_columns.window_columns` gives them, read in the
    helper process with the tokenizer and window settings it was started with (:func:`reading_state`)."""
    return window_columns(_STATE["tokenizer"], _STATE["features"], questions)


def reading_state(tokenizer: Any, features: FeatureConfig) -> dict[str, Any]:
    """What a helper process that reads questions (:func:`tokenized_questions`) is started with."""
    return {"tokenizer": tokenizer, "features": features}


def read_apart(helper: HelperProcess) -> Callable[[Sequence[Sequence[Example]]], list]:
    """A blocking ``questions -> columns`` that reads in ``helper`` (for a worker thread: it waits without the lock)."""
    return partial(_read_in, helper)


def _read_in(helper: HelperProcess, questions: Sequence[Sequence[Example]]) -> list:
    return helper.submit(tokenized_questions, list(questions)).result()
