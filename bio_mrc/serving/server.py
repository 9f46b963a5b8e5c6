"""Running the application: load a model folder and serve it with uvicorn until interrupted."""

from __future__ import annotations

import gc
import importlib.util
import sys
from pathlib import Path

from ..errors import ConfigError
from ..inference.extract import AnswerExtractor
from .config import ServeConfig

EXTRA_PACKAGES = ("fastapi", "uvicorn")
# How often the GIL changes hands (Python's default: 5 ms): the event loop gets its turn within half a millisecond
# while the worker threads tokenize and run forward passes, so a short request is not kept waiting 5 ms at a time.
SWITCH_INTERVAL_S = 0.0005


def run_server(model_dir: str | Path, config: ServeConfig | None = None, precision: str | None = None, device: str | None = None) -> None:
    """Serve ``model_dir`` (a bio_mrc model folder, an ONNX export of one, or a hub id) on ``config``'s host and port,
    the model on ``device`` (cpu, cuda, cuda:1, mps; default auto)."""
    missing = [name for name in EXTRA_PACKAGES if importlib.util.find_spec(name) is None]
    if missing:
        raise ConfigError(f"bio-mrc serve needs {' and '.join(missing)}: pip install 'bio_mrc[serve]'")
    import uvicorn

    from .app import create_app
    from .guards import HostGuard, allowed_host_names

    config = config or ServeConfig()
    extractor = AnswerExtractor.from_pretrained(model_dir, precision=precision, device=device)
    application = create_app(extractor, config)
    application.state.helper.start()  # ready before the first request: a long one does not wait for it to start
    app = HostGuard(application, allowed_host_names(config.host, config.allowed_hosts))
    print(f"serving {model_dir} on http://{config.host}:{config.port} (API docs at /docs)", file=sys.stderr)
    gc.collect()
    gc.freeze()  # the model and the libraries live as long as the server: full collections need not walk them
    previous, _ = sys.getswitchinterval(), sys.setswitchinterval(SWITCH_INTERVAL_S)
    try:
        uvicorn.run(app, host=config.host, port=config.port, log_level="info")
    finally:
        sys.setswitchinterval(previous)
