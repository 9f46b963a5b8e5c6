"""Running the application: load a model folder and serve it with uvicorn until interrupted."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import dataclasses
import gc
import os
import signal
import socket
import sys
import threading
import warnings
from pathlib import Path
from typing import Any, Callable, Iterator

from ..errors import argument
from ..hub import snapshot_commit
from ..inference.extract import AnswerExtractor
from ..io import printable_line
from .config import ServeConfig
from .connections import ConnectionBoundsOffWarning, bounded_protocol, make_room_for, unsupported
from .listening import check_servable
from .operator_log import tell_operator

# How often the GIL changes hands (Python's default: 5 ms): the event loop gets its turn within half a millisecond
# while the worker threads tokenize and run forward passes, so a short request is not kept waiting 5 ms at a time.
SWITCH_INTERVAL_S = 0.0005
CUT_AT_STOP = ("the server is stopping: this request was not all sent or answered in the time it gives requests to end; "
               "send it again (to another server, or to this one once it is back)")


def run_server(model_dir: str | Path, config: ServeConfig | None = None, precision: str | None = None, device: str | None = None,
               revision: str | None = None) -> None:
    """Serve ``model_dir`` (a bio_mrc model folder, an ONNX export of one, or a hub id at ``revision``) on ``config``'s host and port,
    the model on ``device`` (cpu, cuda, cuda:1, mps; default auto). Ctrl-C raises :class:`KeyboardInterrupt` once the
    server has shut down; SIGTERM returns once it has."""
    config = config or ServeConfig()
    check_servable(model_dir, config)  # before the model loads
    from .app import create_app

    config = dataclasses.replace(config, max_connections=make_room_for(config.max_connections, config.backlog))
    extractor = AnswerExtractor.from_pretrained(model_dir, precision=precision, device=device, revision=revision)
    application = create_app(extractor, config)
    application.state.helper.start()  # ready before the first request: a long one does not wait for it to start
    app = guarded(application, config)
    at = f" at revision {revision}" if revision is not None else ""
    if commit := snapshot_commit(model_dir, extractor.trained.path):  # the snapshot a moving branch or tag gave
        at += f" (commit {commit})"
    print(printable_line(f"serving {model_dir}{at} on http://{config.host}:{config.port} (API docs at /docs)"), file=sys.stderr)
    previous, _ = sys.getswitchinterval(), sys.setswitchinterval(SWITCH_INTERVAL_S)
    try:
        with _loaded_frozen():
            serve_until_stopped(app, config.host, config.port, stopping=application.state.scheduler.close,
                                grace_s=config.stop_grace_s, connections=connection_settings(config))
    finally:
        sys.setswitchinterval(previous)


@contextlib.contextmanager
def _loaded_frozen() -> Iterator[None]:
    """What is loaded (the model, the libraries) frozen out of the collector's sight while the server runs, so full
    collections need not walk it, and given back to the collector when it returns: the app, its scheduler and its model
    hold one another, and frozen they would stay in memory for the rest of a process that goes on after serving (or
    serves again). A caller that froze objects of its own has its freeze left as it is, and nothing more frozen."""
    if gc.get_freeze_count():
        yield
        return
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def guarded(application: Any, config: ServeConfig) -> Any:
    """``application`` as ``bio-mrc serve`` runs it: what its request heads ask checked first, in the order HTTP reads a
    request (the version, the expectation, the framing), then the Host header, and a request cut at a stop answered."""
    from .guards import HostGuard, allowed_host_names
    from .request_head import RequestHeadGuard

    return CutAtStop(RequestHeadGuard(HostGuard(application, allowed_host_names(config.host, config.allowed_hosts))))


class CutAtStop:
    """ASGI middleware: a request still being sent or answered when a stop's grace ends (uvicorn cancels it) is
    answered 503, saying so, where uvicorn would log a traceback and answer 500."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def sending(message: dict) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, sending)
        except asyncio.CancelledError:
            if started:
                raise
            from .guards import refuse

            tell_operator("stop grace", "a request was still being sent or answered when the stop's grace ended "
                                        "(--stop-grace-s): answered 503")
            await refuse(send, 503, CUT_AT_STOP, ((b"retry-after", b"1"),))


def connection_settings(config: ServeConfig) -> dict[str, Any]:
    """uvicorn's settings bounding connections before a request reaches the application (:mod:`.connections`). Where
    the installed uvicorn cannot take the head timeout and the connection bound, a warning says so, and the others
    still hold (h11, which bounds the head's bytes, rather than httptools, which uvicorn may prefer)."""
    protocol = bounded_protocol(config.head_timeout_s, config.max_connections, config.request_timeout_s)
    if protocol is None:
        warnings.warn(f"{argument('head_timeout_s')} and {argument('max_connections')} are off: {unsupported()}; a reverse "
                      "proxy in front bounds slow and idle clients (nginx: client_header_timeout)", ConnectionBoundsOffWarning,
                      stacklevel=2)
    # No WebSockets ("ws": "none"): a handshake reaches the application as an HTTP request, refused there in JSON,
    # alike on every install (uvicorn hands it to a WebSocket library where one is installed, else answers it as HTTP).
    return {"http": protocol or "h11", "ws": "none", "timeout_keep_alive": config.keep_alive_s,
            "h11_max_incomplete_event_size": config.max_head_bytes, "backlog": config.backlog}


def serve_until_stopped(app: Any, host: str, port: int, stopping: Callable[[], None] | None = None,
                        grace_s: float | None = None, connections: dict[str, Any] | None = None) -> None:
    """Run uvicorn on ``app`` until it is stopped. Its log lines (requests included) go to standard error, as the
    package's messages do. A stop calls ``stopping()`` first (the scheduler answers what waits 503 at once), stops
    accepting connections, waits at most ``grace_s`` for the requests being answered (None: for all), then closes.
    Ctrl-C ends the call with :class:`KeyboardInterrupt` once the server has shut down (``bio-mrc serve``:
    ``interrupted``, status 130); SIGTERM, an orchestrator's stop, returns (status 0). ``connections``: uvicorn's
    settings bounding connections (:func:`connection_settings`)."""
    import uvicorn

    class Server(uvicorn.Server):
        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            if stopping is not None:
                stopping()  # before uvicorn waits for the requests being answered: queued ones end at once
            await super().shutdown(sockets)

    # uvicorn.Server, not uvicorn.run, which swallows the KeyboardInterrupt
    server = Server(uvicorn.Config(app, host=host, port=port, log_level="info", log_config=_logging_config(),
                                   timeout_graceful_shutdown=grace_s, **(connections or {})))
    with _interrupt_raised(), _terminate_stops(server):
        server.run()


def _logging_config() -> dict[str, Any]:
    """uvicorn's logging, every handler on standard error (its own sends the request lines to standard output), in
    colour only where standard error is a terminal that takes it (uvicorn asks standard output, so ``serve 2> log``
    from a terminal would write colour escapes into the log file)."""
    from uvicorn.config import LOGGING_CONFIG

    config = copy.deepcopy(LOGGING_CONFIG)
    for handler in config["handlers"].values():
        if handler.get("stream") == "ext://sys.stdout":
            handler["stream"] = "ext://sys.stderr"
    for formatter in config["formatters"].values():
        formatter["use_colors"] = colours_on(sys.stderr)
    return config


def colours_on(stream) -> bool:
    """Colour escapes on ``stream``: a terminal, unless ``NO_COLOR`` is set (https://no-color.org) or ``TERM`` is
    ``dumb``."""
    isatty = getattr(stream, "isatty", None)
    wanted = not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"
    return bool(wanted and isatty is not None and isatty())


@contextlib.contextmanager
def _interrupt_raised() -> Iterator[None]:
    """uvicorn answers Ctrl-C by shutting down and then raising SIGINT again for the handler it found, but with
    Python's own handler that second signal lands in asyncio's runner, which swallows it: the server returned as
    if it had ended by itself. With this handler in place the interrupt reaches the caller."""
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield
        return
    previous = signal.signal(signal.SIGINT, _raise_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _raise_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


@contextlib.contextmanager
def _terminate_stops(server: Any) -> Iterator[None]:
    """SIGTERM stops the server as its ordinary end: uvicorn shuts down, then raises the signal again for the handler
    it found, which in ``bio-mrc serve`` ends the command as a failure (status 143). This one only asks the server to
    stop (one that comes before uvicorn takes the signal is not lost)."""
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGTERM) == signal.SIG_IGN:
        yield
        return
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: setattr(server, "should_exit", True))
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
