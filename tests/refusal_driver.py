"""Run by ``tests/test_early_refusals.py``: ``bio_mrc.cli.main`` on command lines that are refused, one interpreter for
many requests. Each line on standard input is one request, a JSON object: ``argvs`` (command lines), ``cwd``,
``environment`` (the whole environment of the request) and ``label`` (who asks); each is answered by one JSON line,
``lines`` (each command's status and last line of standard error), ``printed`` (what each wrote to standard output) and
``heavy`` (each heavy module imported so far, with the request and command line that first imported it), or ``error``
(a command that raised, with its traceback). The answers go out on a copy of the process's standard output: its
descriptors 0 and 1 are /dev/null and standard error, so that nothing a command reads or writes touches the requests.

What a request changes is restored after it, so that no request's answer depends on the ones before it: the
environment (replaced by the request's whole environment, then restored), the working folder, ``sys.path``, the
standard streams, the warnings filters and ``warnings.showwarning``, every logger's level, handlers, propagation and
``disabled`` flag (and ``logging.disable``), and the SIGINT and SIGTERM handlers. The modules a request imports stay
loaded, as in any long-lived process: unloading one would leave its classes and functions held by the modules that stay
(errors, registered entries) beside a second copy; the package's tables are filled when ``bio_mrc.registry`` is imported,
before the first request, and none of its modules reads the environment when imported. A heavy module stays loaded too,
so a request that imports one is seen by every later answer, named as the first to import it. The variables the
interpreter reads as it starts (``PYTHON*``) cannot change in a running one: a request that sets them otherwise is an
error."""

import contextlib
import io
import json
import logging
import os
import signal
import sys
import traceback
import warnings
from pathlib import Path

HEAVY = ("torch", "transformers", "datasets", "sklearn")
SIGNALS = (signal.SIGINT, signal.SIGTERM)

if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    del sys.path[0]  # the tests' folder, put first as the script's own: the package is found on PYTHONPATH, as in ``python -c``


def channels() -> tuple[io.TextIOBase, io.TextIOBase]:
    """The requests and the answers, on copies of descriptors 0 and 1; the descriptors themselves then /dev/null and
    standard error, and ``sys.stdin`` /dev/null."""
    requests = os.fdopen(os.dup(0), "r", encoding="utf-8")
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115 (for the life of the process)
    return requests, answers


def logging_state() -> dict:
    loggers = [logging.root, *(logger for logger in logging.root.manager.loggerDict.values() if isinstance(logger, logging.Logger))]
    return {
        "disable": logging.root.manager.disable,
        "loggers": {logger: (logger.level, list(logger.handlers), logger.propagate, logger.disabled) for logger in loggers},
    }


def restore_logging(state: dict) -> None:
    """Each logger as ``state`` saw it; one made since, as a new logger is."""
    logging.disable(state["disable"])
    for logger in [logging.root, *logging.root.manager.loggerDict.values()]:
        if isinstance(logger, logging.Logger):
            level, handlers, propagate, disabled = state["loggers"].get(logger, (logging.NOTSET, [], True, False))
            logger.setLevel(level)
            logger.handlers[:] = handlers
            logger.propagate, logger.disabled = propagate, disabled


@contextlib.contextmanager
def restored(request: dict):
    """The process as it was, after the request's environment and working folder have been in force."""
    environment, cwd, path = dict(os.environ), os.getcwd(), list(sys.path)
    streams, handlers, logs = (sys.stdin, sys.stdout, sys.stderr), {s: signal.getsignal(s) for s in SIGNALS}, logging_state()
    try:
        with warnings.catch_warnings():  # the filters and showwarning
            os.environ.clear()
            os.environ.update(request["environment"])
            os.chdir(request["cwd"])
            yield
    finally:
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(environment)
        sys.path[:] = path
        sys.stdin, sys.stdout, sys.stderr = streams
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
        restore_logging(logs)


def answer(request: dict, number: int, first: dict[str, str], main) -> dict:
    """The request's answer; ``first`` (each heavy module and who first imported it) is filled as they are imported."""
    started = {name: value for name, value in os.environ.items() if name.startswith("PYTHON")}
    asked = {name: value for name, value in request["environment"].items() if name.startswith("PYTHON")}
    if asked != started:
        return {"error": f"PYTHON* variables {asked} differ from the ones this interpreter started with {started}: a fresh one is needed"}
    lines, printed = [], []
    try:
        with restored(request):
            for argv in request["argvs"]:
                err, out = io.StringIO(), io.StringIO()
                with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
                    code = main(argv)
                said = err.getvalue().strip().splitlines()
                lines.append([code, said[-1] if said else ""])
                printed.append(out.getvalue())
                for name in HEAVY:
                    if name in sys.modules and name not in first:
                        first[name] = f"{name}: first imported by {argv} (request {number}, {request['label']})"
    except BaseException:  # noqa: B036 - a command's traceback or SystemExit is the answer, and the next request is served
        return {"error": traceback.format_exc()}
    return {"lines": lines, "printed": printed, "heavy": [first[name] for name in HEAVY if name in first]}


def serve() -> None:
    requests, answers = channels()
    from bio_mrc.cli import main  # loaded once, before the first request: what every request finds loaded

    first: dict[str, str] = {}
    for first_name in HEAVY:  # imported before any request: the start's own doing
        if first_name in sys.modules:
            first[first_name] = f"{first_name}: imported as bio_mrc.cli was, before any request"
    for number, line in enumerate(requests, 1):
        answers.write(json.dumps(answer(json.loads(line), number, first, main)) + "\n")
        answers.flush()


if __name__ == "__main__":
    serve()
