"""Running the application: load a model folder and serve it with uvicorn until interrupted."""

from __future__ import annotations

import contextlib
import copy
import gc
import importlib.util
import os
import signal
import socket
import sys
import threading
from pathlib import Path
from typing import Any, Iterator

from ..errors import ConfigError
from ..inference.extract import AnswerExtractor
from ..io import printable_line
from .config import ServeConfig

EXTRA_PACKAGES = ("fastapi", "uvicorn")
# How often the GIL changes hands (Python's default: 5 ms): the event loop gets its turn within half a millisecond
# while the worker threads tokenize and run forward passes, so a short request is not kept waiting 5 ms at a time.
SWITCH_INTERVAL_S = 0.0005


def run_server(model_dir: str | Path, config: ServeConfig | None = None, precision: str | None = None, device: str | None = None) -> None:
    """Serve ``model_dir`` (a bio_mrc model folder, an ONNX export of one, or a hub id) on ``config``'s host and port,
    the model on ``device`` (cpu, cuda, cuda:1, mps; default auto). Ctrl-C raises :class:`KeyboardInterrupt` once the
    server has shut down."""
    missing = [name for name in EXTRA_PACKAGES if importlib.util.find_spec(name) is None]
    if missing:
        raise ConfigError(f"bio-mrc serve needs {' and '.join(missing)}: pip install 'bio_mrc[serve]'")
    from .app import create_app
    from .guards import HostGuard, allowed_host_names

    config = config or ServeConfig()
    check_listenable(config.host, config.port)  # before the model loads
    extractor = AnswerExtractor.from_pretrained(model_dir, precision=precision, device=device)
    application = create_app(extractor, config)
    application.state.helper.start()  # ready before the first request: a long one does not wait for it to start
    app = HostGuard(application, allowed_host_names(config.host, config.allowed_hosts))
    print(printable_line(f"serving {model_dir} on http://{config.host}:{config.port} (API docs at /docs)"), file=sys.stderr)
    gc.collect()
    gc.freeze()  # the model and the libraries live as long as the server: full collections need not walk them
    previous, _ = sys.getswitchinterval(), sys.setswitchinterval(SWITCH_INTERVAL_S)
    try:
        serve_until_stopped(app, config.host, config.port)
    finally:
        sys.setswitchinterval(previous)


def check_listenable(host: str, port: int) -> None:
    """Refuse an address the server could not listen on, in one line: uvicorn would load the model first, then log
    the system's bare reason (``Name or service not known``) and exit with status 3. An empty host would listen on
    every interface, which only ``0.0.0.0`` (or ``::``) asks for."""
    if not host.strip():
        raise ConfigError(f"--host {host!r} names no address: 127.0.0.1 serves this machine only, 0.0.0.0 every interface")
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET  # the family uvicorn binds ("localhost": 127.0.0.1)
        family, kind, proto, _, address = socket.getaddrinfo(host, port, family, socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn listens: a port just closed is free
            probe.bind(address)
    except OSError as err:  # socket.gaierror too: a name that resolves to nothing
        raise ConfigError(f"cannot listen on {host}:{port} (--host, --port): {err.strerror or err}") from None


def serve_until_stopped(app: Any, host: str, port: int) -> None:
    """Run uvicorn on ``app`` until it is stopped. Its log lines (requests included) go to standard error, as the
    package's messages do; Ctrl-C ends the call with :class:`KeyboardInterrupt` once the server has shut down
    (``bio-mrc serve``: ``interrupted``, status 130), as SIGTERM does with the caller's handler."""
    import uvicorn

    # uvicorn.Server, not uvicorn.run, which swallows the KeyboardInterrupt
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="info", log_config=_logging_config()))
    with _interrupt_raised():
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
