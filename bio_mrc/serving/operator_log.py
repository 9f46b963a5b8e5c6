"""Lines for the server's operator: a client refused by a limit is told what it can do, and the log names the
option that sets the limit, once a minute for each limit (a flood of refusals is one line, not one each)."""

from __future__ import annotations

import logging
import time

WARN_EVERY_S = 60.0
LOGGER = logging.getLogger("uvicorn.error")  # uvicorn's own log: where the server's operator reads
_last_warned: dict[str, float] = {}


def tell_operator(limit: str, message: str) -> None:
    """Log ``message`` (naming the option behind ``limit``) unless ``limit``'s last line is under a minute old."""
    now = time.monotonic()
    if now - _last_warned.get(limit, -WARN_EVERY_S) >= WARN_EVERY_S:
        _last_warned[limit] = now
        LOGGER.warning(message)
