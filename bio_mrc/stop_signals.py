"""Ctrl-C (SIGINT) and SIGTERM in a command: one exception, raised once, from the process's first moment to its last.

The command line takes both signals here, before its own modules load (so a stop during their import ends the command
as one during its work does), and keeps them until the interpreter exits. Only the standard library is imported."""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from typing import Any, Callable, Iterator

FINALIZER_RETRY_SECONDS = 0.05


class Terminated(SystemExit):
    """What SIGTERM raises in a command: SystemExit with the status of a process the signal ended (143)."""


class _Stops(threading.local):
    """Whether a stop is under way, or the command has ended: a signal then is set aside, so that a second Ctrl-C (a
    user pressing twice) cuts none of the first one's clean-ups short, nor its ``interrupted`` line, and one that comes
    as the command returns cannot end it a second time. ``reported``: the stop's line is printed; ``raised``: the
    stop raised last and its signal, until it is found swallowed. Each thread's own: the handlers run in the main
    thread, and a command run in another thread takes no signal."""

    def __init__(self) -> None:
        self.set_aside = False
        self.reported = False
        self.raised: tuple[BaseException, int] | None = None

    def reset(self) -> None:
        self.set_aside, self.reported, self.raised = False, False, None


_STOPS = _Stops()
_HOOKS_BEFORE: list[Callable[[Any], object]] = []  # sys.unraisablehook as it was when the signals were taken


@contextlib.contextmanager
def terminate_as_exit() -> Iterator[None]:
    """SIGTERM (``kill``, a scheduler's stop) ends the command as Ctrl-C does, by an exception, so that its cleanups
    run: no temporary folder or half-written file is left behind. Both signals are taken by ``_stop_on_signal``, which
    holds one that lands in a finalizer until it has returned, and raises one stop only: later signals are set aside.
    A signal the caller ignores or handles itself stays so; the handlers before are back afterwards (``main`` may be
    called in a longer process); a block inside another takes nothing more."""
    taken = _take_signals()
    try:
        yield
        _DEFERRED.deliver()  # one held while a finalizer ran in the command's last moments
    finally:
        try:
            _DEFERRED.cancel()  # where a signal sent meanwhile is raised, the handlers before still come back
        finally:
            _give_back(taken, lambda signum, previous: previous if previous is not None else signal.SIG_DFL)


def stops_as_status(command: Callable[[], int], say_stopped: Callable[[], None]) -> int:
    """``command()``'s status, where a stop ends it with its one line (``say_stopped``, once however many blocks it
    passes through) and the status of a process the signal ended: 130 returned for Ctrl-C, :class:`Terminated` (143)
    raised for SIGTERM. A stop that lands once ``command`` has returned is set aside: its work is done."""
    with terminate_as_exit():
        try:
            code = command()
            _DEFERRED.deliver()
            _STOPS.set_aside = True
            return code
        except KeyboardInterrupt:
            _say_once(say_stopped)
            return 128 + signal.SIGINT
        except Terminated:
            _say_once(say_stopped)
            raise
        except Exception as err:  # a stop a library raised its own error from
            stop = _stop_behind(err)
            if stop is None:
                raise
            _say_once(say_stopped)
            if isinstance(stop, Terminated):
                raise Terminated(stop.code) from None
            return 128 + signal.SIGINT


def _stop_behind(err: BaseException) -> BaseException | None:
    """The Ctrl-C or SIGTERM that ``err`` was raised from, if any: a C extension's module whose initialization a stop
    cut short raises ``ImportError: initialization failed`` from it (pybind11's modules: scipy's, which transformers
    imports as a command loads its model), which ended the command in a traceback and status 1."""
    seen: set[int] = set()
    while err is not None and id(err) not in seen:
        if isinstance(err, (KeyboardInterrupt, Terminated)):
            return err
        seen.add(id(err))
        err = err.__cause__
    return None


def _say_once(say_stopped: Callable[[], None]) -> None:
    _STOPS.set_aside = True  # a KeyboardInterrupt raised by other code than the handler's
    if not _STOPS.reported:
        _STOPS.reported = True
        say_stopped()


@contextlib.contextmanager
def stops_until_the_process_ends() -> Iterator[None]:
    """The signals taken for the rest of the process (the ``bio-mrc`` command's own): taken now, before the command
    line's modules load, and ignored once the block ends. Python puts back the system's default action on a signal
    whose handler it called as the interpreter exits, so a signal then ended the process by that signal, with no line;
    by then the command has written its outputs and its status."""
    taken = _take_signals()
    try:
        yield
    finally:
        _DEFERRED.cancel()
        _give_back(taken, lambda signum, previous: signal.SIG_IGN)


def _take_signals() -> dict[int, object]:
    """SIGTERM unless ignored, SIGINT while Python's own handler has it, neither where a block outside has taken it:
    each taken with the handler it had (and ``sys.unraisablehook`` replaced, where any is taken)."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    previous = {signal.SIGTERM: signal.getsignal(signal.SIGTERM), signal.SIGINT: signal.getsignal(signal.SIGINT)}
    taken = {
        signum: handler
        for signum, handler in previous.items()
        if handler != signal.SIG_IGN and handler is not _stop_on_signal and (signum != signal.SIGINT or handler is signal.default_int_handler)
    }
    if taken:
        _STOPS.reset()
        _HOOKS_BEFORE.append(sys.unraisablehook)
        sys.unraisablehook = _held_if_swallowed
    for signum in taken:
        signal.signal(signum, _stop_on_signal)
    return taken


def _give_back(taken: dict[int, object], handler_after: Callable[[int, object], object]) -> None:
    if not taken:
        return
    sys.unraisablehook = _HOOKS_BEFORE.pop()
    for signum, previous in taken.items():
        signal.signal(signum, handler_after(signum, previous))
    _STOPS.reset()


def _held_if_swallowed(unraisable: Any) -> None:
    """``sys.unraisablehook`` while the signals are taken. A stop raised where Python cannot raise it on (a finalizer
    that ``_in_finalizer`` does not see: a weakref's callback, a Python method that C code calls and whose error it
    reports, such as ``isinstance`` inside a C extension) was printed as "Exception ignored" and lost: the command went
    on to exit 0. It is held and raised again as a finalizer's is; any other report is Python's own."""
    raised = _STOPS.raised
    if raised is not None and unraisable.exc_value is raised[0]:
        _STOPS.set_aside, _STOPS.raised = False, None  # it took no effect: the stop is still to come
        _DEFERRED.defer(raised[1])
        return
    (_HOOKS_BEFORE[-1] if _HOOKS_BEFORE else sys.__unraisablehook__)(unraisable)


def _stop_on_signal(signum: int, frame: object) -> None:
    """Raise KeyboardInterrupt for SIGINT, Terminated for SIGTERM, once. Inside a finalizer (a ``__del__`` that garbage
    collection runs, such as a dataset's) Python would print the exception as "ignored" and carry on: the command
    went on to exit 0 with a traceback. There the signal is sent again once the finalizer has had time to return
    (or raised when the command ends first); so is one raised where Python reported it instead (``_held_if_swallowed``)."""
    if _STOPS.set_aside:
        return
    if _in_finalizer(frame):
        _DEFERRED.defer(signum)
        return
    _DEFERRED.cancel()
    raise _stop_for(signum)


def _stop_for(signum: int) -> BaseException:
    stop = KeyboardInterrupt() if signum == signal.SIGINT else Terminated(128 + signum)
    _STOPS.set_aside, _STOPS.raised = True, (stop, signum)
    return stop


class _DeferredSignal:
    """A signal that landed in a finalizer: sent again shortly by a timer, or raised by the command's end, never both.
    The timer's thread takes the signal under the lock before sending it, and the command's end takes it under the same
    lock: a timer that fired as the command ended sent a second Ctrl-C after ``interrupted``, and the process died of
    it (status -2, not 130)."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self.timer: threading.Timer | None = None
        self.lock = threading.RLock()  # re-entered by the handler when a second signal lands while the main thread holds it

    def defer(self, signum: int) -> None:
        timer = threading.Timer(FINALIZER_RETRY_SECONDS, self._send_again)
        timer.daemon = True
        with self.lock:
            self._drop()
            self.signum, self.timer = signum, timer
        timer.start()

    def cancel(self) -> None:
        with self.lock:
            self._drop()

    def deliver(self) -> None:
        with self.lock:
            signum = self.signum
            self._drop()
        if signum is not None:
            raise _stop_for(signum)

    def _send_again(self) -> None:
        with self.lock:
            if self.timer is not threading.current_thread():  # cancelled, delivered or deferred anew meanwhile
                return
            signum = self.signum
            self._drop()
            signal.raise_signal(signum)  # from this thread: sets the signal aside for the main thread's handler

    def _drop(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
        self.signum, self.timer = None, None


_DEFERRED = _DeferredSignal()


def _in_finalizer(frame) -> bool:
    while frame is not None:
        if frame.f_code.co_name == "__del__":
            return True
        frame = frame.f_back
    return False


def say_interrupted() -> None:
    """The stop's one line on standard error."""
    print("interrupted", file=sys.stderr)
