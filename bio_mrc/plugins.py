"""Installed packages that register heads, decodings and tasks of their own (:mod:`bio_mrc.registry`): each names a
module or a function under the entry-point group of this module's name, ``bio_mrc.plugins``. The command line loads them
before a command reads the tables (its ``--help`` too, not the top level's ``--version`` and ``--help``), so ``bio-mrc``
offers what they add; a lookup of a head or decoding not registered loads
them first (docs/layout.md)."""

from __future__ import annotations

from importlib.metadata import entry_points

from .errors import ConfigError

PLUGIN_GROUP = "bio_mrc.plugins"
_LOADED_PLUGINS: set[str] = set()  # the entry points loaded in this process (each registers its entries once)


def load_plugins() -> list[str]:
    """Load every installed package's :data:`PLUGIN_GROUP` entry point not loaded yet in this process: one naming a
    module is imported (its import registers), one naming a function is called with no arguments. Returns the names
    loaded now. One that fails is a :class:`~bio_mrc.errors.ConfigError` naming it and what went wrong."""
    loaded = []
    for point in entry_points(group=PLUGIN_GROUP):
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
