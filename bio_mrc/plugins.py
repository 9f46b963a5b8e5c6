"""Installed packages that register heads, decodings and tasks of their own (:mod:`bio_mrc.registry`): each names a
module or a function under the entry-point group of this module's name, ``bio_mrc.plugins``. The command line loads them
before a command reads the tables (its ``--help`` too, not the top level's ``--version`` and ``--help``), so ``bio-mrc``
offers what they add; a lookup of a head or decoding not registered loads
them first (docs/layout.md).

Finding the entry points reads and parses every installed package's entry-point file, so the points found are kept,
and read again only when one of those files, or the packages found, may have changed (:func:`_entry_point_files`): a
long-lived process that looks names up many times reads them once, and still finds a package installed meanwhile."""

from __future__ import annotations

import os
from importlib.metadata import EntryPoint, distributions, entry_points
from pathlib import Path
from typing import Any

from .errors import ConfigError

PLUGIN_GROUP = "bio_mrc.plugins"
_LOADED_PLUGINS: set[str] = set()  # the entry points loaded in this process (each registers its entries once)
_FOUND: tuple[Any, tuple[EntryPoint, ...]] | None = None  # the last scan: what it depended on, and the points it found


def load_plugins() -> list[str]:
    """Load every installed package's :data:`PLUGIN_GROUP` entry point not loaded yet in this process: one naming a
    module is imported (its import registers), one naming a function is called with no arguments. Returns the names
    loaded now. One that fails is a :class:`~bio_mrc.errors.ConfigError` naming it and what went wrong."""
    loaded = []
    for point in _plugin_points():
        if point.value in _LOADED_PLUGINS:
            continue
        try:
            target = point.load()
            if point.attr is not None and callable(target):
                target()
        except Exception as error:  # a plug-in's own failure, whatever it raises: one line naming it
            raise ConfigError(f"plug-in {point.name!r} (the {PLUGIN_GROUP} entry point {point.value}) could not be loaded: "
                              f"{type(error).__name__}: {error}") from error
        _LOADED_PLUGINS.add(point.value)
        loaded.append(point.name)
    return loaded


def _plugin_points() -> tuple[EntryPoint, ...]:
    """The installed packages' :data:`PLUGIN_GROUP` entry points: those the last scan found, unless what they are read
    from has changed since (the module's ``entry_points``, which a caller may replace, included)."""
    global _FOUND
    depends = (entry_points, _entry_point_files())
    if _FOUND is None or _FOUND[0] != depends:
        _FOUND = (depends, tuple(entry_points(group=PLUGIN_GROUP)))
    return _FOUND[1]


def _entry_point_files() -> tuple[Any, ...]:
    """What the entry points are read from: each installed package's metadata folder, in the order the import system's
    finders find them now (:mod:`importlib.metadata` keeps its own listing of a ``sys.path`` folder by the time the
    folder last changed), with its ``entry_points.txt`` as it is now (None: none yet). A folder's time alone is not
    enough: an installer makes a package's metadata folder, then writes its files, and a development install rewrites
    its egg-info in place. A package whose metadata is in no folder (a zip file's, a finder's own) cannot be told
    unchanged: it is read again each time."""
    files: list[Any] = []
    for distribution in distributions():
        folder = getattr(distribution, "_path", None)
        if not isinstance(folder, Path):
            files.append(object())  # equal to nothing
            continue
        try:
            written = os.stat(os.path.join(folder, "entry_points.txt"))
        except OSError:
            files.append((str(folder), None))
        else:
            files.append((str(folder), written.st_ino, written.st_size, written.st_mtime_ns))
    return tuple(files)
