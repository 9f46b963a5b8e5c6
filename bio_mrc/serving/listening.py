"""What serve checks before anything heavy loads: its extra installed, a model named, an address it can listen on.
Light on purpose (sockets and the package's errors): ``bio-mrc serve`` refuses these before torch is imported."""

from __future__ import annotations

import importlib.util
import socket
from pathlib import Path

from ..errors import ConfigError, argument
from ..hub import check_name_given
from .config import ServeConfig

EXTRA_PACKAGES = ("fastapi", "uvicorn")
EXTRA_MODULES = (*EXTRA_PACKAGES, "starlette", "pydantic", "pydantic_core", "h11")  # what the serve extra installs
EXTRA_HINT = "pip install 'bio_mrc[serve]'"  # quoted: zsh reads bare brackets as a glob


def check_servable(model_dir: str | Path, config: ServeConfig) -> None:
    """Refuse a serve that could not start, before the model loads: no model named, the serve extra missing, an
    address the server could not listen on."""
    check_name_given(model_dir)
    missing = [name for name in EXTRA_PACKAGES if importlib.util.find_spec(name) is None]
    if missing:
        raise ConfigError(f"bio-mrc serve needs {' and '.join(missing)}: {EXTRA_HINT}")
    check_listenable(config.host, config.port)


def extra_missing(module: str, err: ModuleNotFoundError) -> ModuleNotFoundError:
    """The error importing ``module`` gives where ``err`` is a package of the serve extra missing: one line naming the
    extra, where Python's names the package alone (``No module named 'fastapi'``); ``err`` itself otherwise."""
    if (err.name or "").split(".")[0] not in EXTRA_MODULES:
        return err
    return ModuleNotFoundError(f"{module} needs {err.name}, which the serve extra installs: {EXTRA_HINT}", name=err.name)


def check_listenable(host: str, port: int) -> None:
    """Refuse an address the server could not listen on, in one line: uvicorn would load the model first, then log
    the system's bare reason (``Name or service not known``) and exit with status 3. An empty host would listen on
    every interface, which only ``0.0.0.0`` (or ``::``) asks for. The probe socket is closed at once: uvicorn binds the
    port itself."""
    if not host.strip():
        raise ConfigError(f"{argument('host')} {host!r} names no address: 127.0.0.1 serves this machine only, 0.0.0.0 every "
                          "interface")
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET  # the family uvicorn binds ("localhost": 127.0.0.1)
        family, kind, proto, _, address = socket.getaddrinfo(host, port, family, socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn listens: a port just closed is free
            probe.bind(address)
    except OSError as err:  # socket.gaierror too: a name that resolves to nothing
        raise ConfigError(f"cannot listen on {host}:{port} ({argument('host')}, {argument('port')}): {err.strerror or err}") from None
