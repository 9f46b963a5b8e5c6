"""Installed packages that register heads, decodings and tasks of their own (:mod:`bio_mrc.registry`): each names a
module or a function under the entry-point group of this module's name, ``bio_mrc.plugins``. The command line loads them
before a command reads the tables (its ``--help`` too, not the top level's ``--version`` and ``--help``), so ``bio-mrc``
offers what they add; a lookup of a head or decoding not registered loads
them first (docs/layout.md).

Finding the entry points reads every installed package's metadata, so the points found are kept, and the packages read
again only when what decides them may have changed (:func:`_installed_places`): a long-lived process that looks names
up many times reads them once, and still finds a package installed meanwhile."""

from __future__ import annotations

import os
import sys
from importlib.metadata import EntryPoint, entry_points
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
    """The installed packages' :data:`PLUGIN_GROUP` entry points: those the last scan found, unless what they depend on
    has changed since (the module's ``entry_points``, which a caller may replace, included)."""
    global _FOUND
    depends = (entry_points, _installed_places())
    if _FOUND is None or _FOUND[0] != depends:
        _FOUND = (depends, tuple(entry_points(group=PLUGIN_GROUP)))
    return _FOUND[1]


def _installed_places() -> tuple[Any, ...]:
    """What decides which packages :mod:`importlib.metadata` finds: each ``sys.path`` folder, a relative one as the
    working folder resolves it now, with the time it last changed (an installer adds or removes a package's metadata
    folder in it, which changes it: the standard library keeps its own listing of a folder by the same time), and the
    import system's finders that find packages."""
    places = []
    for entry in sys.path:
        try:
            place = os.path.abspath(entry or os.curdir)
            changed = os.stat(place).st_mtime_ns
        except (OSError, TypeError, ValueError):  # no such folder (yet), or no path: an import hook's name
            place, changed = entry, None
        places.append((place, changed))
    return tuple(places), tuple(finder for finder in sys.meta_path if hasattr(finder, "find_distributions"))
