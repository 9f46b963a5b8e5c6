"""The package's error types: bad input always names the file, the record and the problem.

Every error a user can cause by what they pass in derives from :class:`BioMrcError`,
so a program can catch them all at once and the CLI prints them without a traceback.
"""

from __future__ import annotations

import re
import shlex
from typing import Mapping


def a_type(value: object) -> str:
    """The type of ``value`` with its article, as an error names what it got: ``a dict``, ``an object``, ``an int``,
    ``an ndarray``, ``a Series``."""
    name = type(value).__name__
    return f"{'an' if _vowel_sound(name.lower()) else 'a'} {name}"


# The starts of names said as a word though a letter of "fhlmnrsx" begins them (str, frozenset, float); any other
# such letter before a consonant is said as the letter (ndarray, HTTPResponse, LSTM), which begins with a vowel sound.
_SAID_AS_WORDS = ("fl", "fr", "sc", "sh", "sk", "sl", "sm", "sn", "sp", "sq", "st", "sw", "rh")


def _vowel_sound(name: str) -> bool:
    """Whether ``name`` (lower case) is said beginning with a vowel sound, so ``an`` goes before it."""
    if name[:1] in ("a", "e", "i", "o"):
        return not name.startswith("one")
    if name[:1] == "u":
        return not name.startswith(("uni", "uint", "us", "uu", "ur", "ut"))  # unicode, uint8, UserDict, UUID, URL: a "you" sound
    initial = name[:1] in "fhlmnrsx" and name[1:2] not in ("", "a", "e", "i", "o", "u", "y")
    return bool(initial) and not name.startswith(_SAID_AS_WORDS)


def shown_value(value: object, limit: int = 60) -> str:
    """``value`` as an error line shows what it got: its ``repr``, or past ``limit`` characters its type and length
    (a value copied into a file may be megabytes)."""
    text = repr(value)
    return text if len(text) <= limit else f"{a_type(value)} of {len(text):,} characters"


# An argument of a public call that a message names sits between these private-use characters, which no message holds
# otherwise, with its value as Python writes it and as a command line does: one message, read right from either door.
_OPEN, _SPLIT, _CLOSE = "\ue000", "\ue001", "\ue002"
_NAMED = re.compile(f"{_OPEN}(\\w+){_SPLIT}([^{_SPLIT}]*){_SPLIT}([^{_CLOSE}]*){_CLOSE}")
_PLACEHOLDER = re.compile("[A-Z][A-Z_]*")  # DIR, HELD_OUT: a name standing for a value; /DATA/OUT is a value


def argument(name: str, value: object = None) -> str:
    """The argument ``name`` of a public call as a message names it: a Python caller reads the keyword (``na_probs``,
    ``overwrite=True``, ``limit=5``; a value in capitals, ``DIR``, stands for one), the command line its flag
    (:func:`as_flags`: ``--na-probs``, ``--overwrite``, ``--limit 5``)."""
    if value is None:
        return f"{_OPEN}{name}{_SPLIT}{_SPLIT}{_CLOSE}"
    python = value if isinstance(value, str) and _PLACEHOLDER.fullmatch(value) else repr(value)
    return f"{_OPEN}{name}{_SPLIT}={python}{_SPLIT}{value}{_CLOSE}"


def as_keywords(text: str) -> str:
    """``text`` with each argument it names as the Python call's keyword."""
    return _NAMED.sub(lambda named: named[1] + named[2], text)


def as_flags(text: str, flags: Mapping[str, str]) -> str:
    """``text`` with each argument it names as a command's flag: ``flags`` maps a keyword to its flag, or
    ``keyword=value`` to a flag that says that value alone (``calibrate=False`` -> ``--no-calibration``). A true value
    is the flag alone; an argument the command has no flag for stays the keyword."""
    def flag(named: re.Match) -> str:
        name, value = named[1], named[3]
        if f"{name}={value}" in flags:
            return flags[f"{name}={value}"]
        if name not in flags:
            return named[1] + named[2]
        return flags[name] if value in ("", "True") else f"{flags[name]} {shlex.quote(value)}"  # a space, a quote: one word

    return _NAMED.sub(flag, text)


def command_line_text(error: BaseException, flags: Mapping[str, str]) -> str:
    """What ``error`` (or a warning) says with the arguments it names as the command line's flags (:func:`as_flags`)."""
    return as_flags(getattr(error, "marked", None) or str(error), flags)


class BioMrcError(Exception):
    """Base of the errors bad input can cause (data files, prediction files, model folders). A message naming an
    argument (:func:`argument`) reads as the keyword; ``marked`` keeps it for the command line's flags (and a subclass's
    ``marked_problem`` its ``problem``, for an error that re-raises it with more said)."""

    def __init__(self, *args: object) -> None:
        super().__init__(*as_keyword_args(args))
        self.marked = marked_text(args)

    def _keep_problem(self, problem: str) -> None:
        """``problem`` (the message before where it was found) as the keyword text, and as ``marked_problem`` with its
        arguments still marked, what a re-raise that adds to the problem passes on."""
        self.problem, self.marked_problem = as_keywords(problem), problem


def marked_text(args: tuple[object, ...]) -> str | None:
    """The message of an error's or a warning's ``args``, its arguments still marked; None where it has none."""
    return args[0] if args and isinstance(args[0], str) else None


def as_keyword_args(args: tuple[object, ...]) -> tuple[object, ...]:
    """An error's or a warning's ``args`` with the arguments its message names as the keywords."""
    marked = marked_text(args)
    return (as_keywords(marked), *args[1:]) if marked is not None else args


class _LocatedError(BioMrcError):
    """An error whose message ends with where its problem was found: ``source`` (a file, a model) and ``record``."""

    def __init__(self, problem: str, record: str | None = None, source: str | None = None) -> None:
        where = ", ".join(part for part in (f"in {source}" if source else "", f"record {record!r}" if record else "") if part)
        super().__init__(f"{problem} ({where})" if where else problem)
        self.record, self.source = record, source
        self._keep_problem(problem)


class DataFormatError(_LocatedError, ValueError):
    """An input file or record does not fit the expected layout.

    ``problem`` says what is wrong, ``record`` names the record (a question id, or an
    article title when there is no id to name) and ``source`` the file.
    """


class ModelFormatError(BioMrcError, ValueError):
    """A folder is not a bio_mrc model this version can run, or its tokenizer cannot map tokens to characters."""

    def __init__(self, problem: str, source: str | None = None) -> None:
        super().__init__(f"{problem} (in {source})" if source else problem)
        self.source = source
        self._keep_problem(problem)


class ModelOutputError(_LocatedError, ValueError):
    """A model's forward pass gave a question scores no decoding can read (NaN or infinity): a damaged model, or a
    forward pass that overflowed. ``record`` names the question, ``source`` the model."""


class ConfigError(BioMrcError, ValueError):
    """Options that do not fit together, or do not fit the encoder and tokenizer they are used with."""


class ProcessLocalError(BioMrcError, TypeError):
    """An object that lives in one process (an ONNX export's ONNX Runtime session) was asked to be pickled, as
    ``multiprocessing`` pickles what it sends to a worker: build one in each process instead. A ``TypeError``, as
    ``pickle``'s own refusals are."""

    def __init__(self, problem: str, source: str | None = None) -> None:
        super().__init__(f"{problem} (in {source})" if source else problem)
        self.source = source
        self._keep_problem(problem)


class BioMrcWarning(UserWarning):
    """Base of the package's warnings. A message naming an argument (:func:`argument`) reads as the keyword, to a Python
    caller and its warning filters alike; ``marked`` keeps it for the command line's flags (:func:`command_line_text`)."""

    def __init__(self, *args: object) -> None:
        super().__init__(*as_keyword_args(args))
        self.marked = marked_text(args)


class InputWarning(BioMrcWarning):
    """A warning about what the user passed in (training questions, a model folder's settings): the command line
    prints it as one ``warning:`` line, as its other warnings, not as Python's two lines naming the package's source."""


class InputNote(InputWarning):
    """What the user's input made the work do otherwise than asked, harmlessly (a limit past the questions there takes
    them all): the command line prints it as one ``note:`` line."""


class LimitPastDataWarning(InputNote):
    """A ``limit`` is past the questions of the data it cuts: all of them are used."""


class PrecisionCacheNote(InputNote):
    """``precision: auto``'s cache of measurements cannot be written (its folder read-only, or a file in its place):
    each choice is measured and kept for the process alone, so every process measures again."""


class FewTuningQuestionsWarning(InputWarning):
    """Settings are fitted on fewer tuning questions than ``bio-mrc tune`` fits on without a warning (a comparison's
    'tune' split): what they fit follows the questions drawn."""


class AlwaysAbstainWarning(InputWarning):
    """A no-answer threshold tuned as -inf ("always abstain"): the F1-best choice on the tuning questions, kept, and a
    decoding that answers no question with it."""


class OutputError(BioMrcError, OSError):
    """An output could not be written: its device is full, or the user's quota is spent."""

    def __init__(self, problem: str, source: str | None = None) -> None:
        super().__init__(f"{problem} (in {source})" if source else problem)
        self.source = source
        self._keep_problem(problem)
