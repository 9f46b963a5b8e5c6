"""tqdm's own ``TQDM_*`` settings, checked before any work.

tqdm reads ``TQDM_<KEYWORD>`` for the keywords of its bars once, when it is first imported, converting each text to the
keyword's type; a text it cannot convert (``TQDM_MININTERVAL=abc``) ends that import, wherever a library first makes
it, in tqdm's traceback. Where such a variable is set, tqdm is imported first, here, and its refusal said in one line.
"""

from __future__ import annotations

import os

from ..errors import ConfigError

PREFIX = "TQDM_"


def check_bar_variables() -> None:
    """Where a ``TQDM_*`` variable is set, import tqdm, and refuse the variables set, in one line, if tqdm cannot read
    them (no import otherwise: the commands that show no bar never load it)."""
    given = sorted(f"{name}={text!r}" for name, text in os.environ.items() if name.startswith(PREFIX))
    if not given:
        return
    try:
        import tqdm  # noqa: F401  (reads the variables)
    except (TypeError, ValueError) as error:
        raise ConfigError(f"tqdm cannot read its settings {', '.join(given)} ({error}): correct them, or unset them") from None


__all__ = ["PREFIX", "check_bar_variables"]
