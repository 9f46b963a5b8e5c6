"""The arguments of the public calls checked before any work: a wrong type is one TypeError naming the call and the
argument, not Python's own error from deep inside (``expected str, bytes or os.PathLike object, not dict``)."""

from __future__ import annotations

import numbers
import os
import sys
import warnings
from typing import Any

from .errors import ConfigError, LimitPastDataWarning, a_type, argument
from .plurals import counted

MAX_COUNT = 10**9  # the largest count an option or a config takes (questions, windows, steps, candidates)


def path_argument(value: Any, name: str, call: str, optional: bool = False) -> Any:
    """``value`` if it is a path (a ``str`` or ``os.PathLike``; None too where ``optional``), else a TypeError."""
    if (optional and value is None) or isinstance(value, (str, os.PathLike)):
        return value
    raise TypeError(f"{call}: {name} is a path (a str or os.PathLike){' or None' if optional else ''}, got {given_type(value)}")


def instance_argument(value: Any, kind: type, name: str, call: str, optional: bool = False, hint: str = "") -> Any:
    """``value`` if it is a ``kind`` (None too where ``optional``), else a TypeError (``hint``: how to make one)."""
    if (optional and value is None) or isinstance(value, kind):
        return value
    raise TypeError(f"{call}: {name} is a {kind.__name__}{' or None' if optional else ''}, got {given_type(value)}{hint}")


def names_argument(value: Any, name: str, call: str, optional: bool = True) -> Any:
    """``value`` if it is a list or tuple of strings (or None where ``optional``); a lone string, read letter by
    letter, is refused."""
    if (optional and value is None) or (isinstance(value, (list, tuple)) and all(isinstance(item, str) for item in value)):
        return value
    got = f"the string {value!r}: give [{value!r}]" if isinstance(value, str) else given_type(value)
    raise TypeError(f"{call}: {name} is a list of names{' (or None)' if optional else ''}, got {got}")


def count_argument(value: Any, name: str, call: str, optional: bool = True) -> Any:
    """``value`` if it is a positive whole number (None too where ``optional``), else a ConfigError."""
    if (optional and value is None) or _positive_whole(value):
        return count_at_most(value, name, call)
    raise ConfigError(f"{call}: {name} is a positive whole number{' (or None)' if optional else ''}; got {value!r}")


def is_flag(value: Any) -> bool:
    """A yes/no as a caller may hold it: a Python or numpy bool (``np.True_``), never a number, a string or None. A numpy
    bool exists only where numpy is imported: this module, read by the command line's options, never imports it."""
    numpy = sys.modules.get("numpy")
    return isinstance(value, bool) or (numpy is not None and isinstance(value, numpy.bool_))


def check_flag(value: Any, name: str) -> bool:
    """``value`` as a Python bool where it :func:`is_flag`; else a ConfigError naming ``name``."""
    if not is_flag(value):
        raise ConfigError(f"{name} is true or false, got {value!r}")
    return bool(value)


def checked_limit(limit: Any) -> int | None:
    """``limit`` if it is None or a positive whole number of questions (True, 2.5, "3", 0 and -1 are not)."""
    if limit is not None and not _positive_whole(limit):
        raise ConfigError(f"limit is a positive number of questions (or none for all); got {limit!r}")
    return limit


def limit_past_data(limit: int | None, count: int, data: str, skipped: int = 0) -> str | None:
    """What a ``limit`` past the ``count`` questions of ``data`` is said as (``limit=5: DATA has 4 questions``, on the
    command line ``--limit 5``), one wording for every door; None where the limit is within them. ``skipped``: the
    invalid questions left out, which the count is of the valid ones beside (``4 valid questions (2 skipped)``)."""
    if limit is None or limit <= count:
        return None
    held = f"{counted(count, 'valid question')} ({skipped} skipped)" if skipped else counted(count, "question")
    return f"{argument('limit', limit)}: {data} has {held}"


def first_questions(data: str, limit: int | None, count: int | None = None) -> str:
    """``data`` named as cut to its first ``limit`` questions (``FILE (first 100 questions)``), as every record and card
    names a limited file; ``data`` alone where no limit cut it: none given, or one past its ``count`` questions."""
    if not limit or (count is not None and count < limit):
        return data
    return f"{data} (first {counted(limit, 'question')})"


def warn_limit_past(limit: int | None, count: int, data: str, skipped: int = 0, key: str = "", stacklevel: int = 2) -> None:
    """A ``limit`` past the ``count`` questions of ``data`` takes them all: a :class:`LimitPastDataWarning` says so in
    :func:`limit_past_data`'s words (after a comparison config's ``key``), which the command line prints as its note;
    ``stacklevel`` counts from the caller."""
    if past := limit_past_data(limit, count, data, skipped):
        warnings.warn(LimitPastDataWarning(f"{key + ': ' if key else ''}{past}; all {count} are used"), stacklevel=stacklevel + 1)


def count_at_most(value: Any, name: str, call: str = "") -> Any:
    """``value`` unless it is a number past :data:`MAX_COUNT`, refused as the command line refuses such an option
    (``top_k: at most 1,000,000,000, not ...``), naming the keyword (after ``call``, where given)."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool) and value > MAX_COUNT:
        raise ConfigError(f"{call + ': ' if call else ''}{name}: at most {MAX_COUNT:,}, not {value}")
    return value


def _positive_whole(value: Any) -> bool:
    """Whether ``value`` is an int of at least 1 (a bool is no count)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def task_argument(task: Any, call: str) -> Any:
    """``task`` if it is None, a :mod:`bio_mrc.registry` task entry or the name of an official scorer."""
    from . import registry

    if isinstance(task, str) and task not in registry.scorers():
        raise ConfigError(f"{call}: task {task!r} is no official scorer; choose one of {', '.join(registry.scorers())}")
    if task is None or isinstance(task, (str, registry.TaskEntry)):
        return task
    raise TypeError(f"{call}: task is a registry task entry or a scorer's name ({', '.join(registry.scorers())}), "
                    f"got {given_type(task)}")


def given_type(value: Any) -> str:
    """What a refusal says it got: ``None``, or the type with its article (``a dict``)."""
    return "None" if value is None else a_type(value)


__all__ = ["MAX_COUNT", "check_flag", "checked_limit", "count_argument", "count_at_most", "given_type", "instance_argument",
           "is_flag", "limit_past_data", "names_argument", "path_argument", "task_argument", "warn_limit_past"]
