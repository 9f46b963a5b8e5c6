"""Questions and contexts as data tools hold them (a tuple, a pandas Series or Index, a numpy array of strings, any
sequence, an iterator), read into the list every front end checks item by item.

A string is one text, never a sequence of characters, and bytes are no text. An iterator (a generator, ``map``) is
read once, in order, into a list; an unordered collection (a set, a dict's keys) and a mapping have no order of
questions to answer in, so they stay refused, as do arrays of more than one dimension. An open file is refused too:
read as an iterator, each of its lines, newline and all, would be one text.
"""

from __future__ import annotations

import io
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol, Union, runtime_checkable

import numpy as np

from ..errors import DataFormatError, a_type


@runtime_checkable
class ArrayOfTexts(Protocol):
    """What numpy reads by position: a numpy array, a pandas Series or Index, a polars Series."""

    def __array__(self) -> Any: ...


# Several texts as a type checker reads them: what text_input takes as a list. A str is a Sequence[str] too, so a
# signature taking one text as well lists it first.
TextBatch = Union[Sequence[str], Iterator[str], ArrayOfTexts]


def text_input(value: Any, name: str = "text") -> Any:
    """``value`` as a list of its items where it is an ordered collection of texts (each text a plain ``str``, a
    numpy string one included); a string, bytes, a list and anything else unchanged, for the check that refuses it.
    An open file is refused, naming it as the ``name`` (``question``, ``context``) it was given as."""
    if isinstance(value, (str, bytes, bytearray, list)) or value is None:
        return value
    if isinstance(value, io.IOBase) or (callable(getattr(value, "read", None)) and callable(getattr(value, "readline", None))):
        raise DataFormatError(f"the {name} is an open file ({a_type(value)}), whose lines, newlines and all, would each be "
                              "read as one: give its text (f.read()), or its lines as a list (f.read().splitlines())")
    if hasattr(value, "__array__") and not isinstance(value, Mapping):  # numpy, pandas and polars: by position
        array = np.asarray(value)
        return _plain(array.tolist()) if array.ndim == 1 else value
    if isinstance(value, (Sequence, Iterator)):
        return _plain(list(value))
    if hasattr(value, "__len__") and hasattr(value, "__getitem__") and not isinstance(value, Mapping):
        return _plain([value[i] for i in range(len(value))])  # a sized, indexable column of another library
    return value


def _plain(items: list[Any]) -> list[Any]:
    """Each string subclass (numpy's ``str_``) as a plain ``str``, so tokenizers and JSON see the text alone."""
    return [str.__str__(item) if isinstance(item, str) and type(item) is not str else item for item in items]
