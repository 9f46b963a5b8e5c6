"""The scan for installed plug-ins (:func:`bio_mrc.plugins.load_plugins`): done again only when what it reads may have
changed (the packages the finders find, each one's entry-point file, the scanning function), so a long-lived process
that looks a name up many times reads every installed package's entry points once, and still sees a package installed
meanwhile."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from bio_mrc import plugins

MODULE = """
CALLS = []


def register():
    CALLS.append(1)
"""


@pytest.fixture
def scans(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The real scan, counted: each group it is asked for."""
    real = plugins.entry_points
    asked: list[str] = []

    def counted(**select):
        asked.append(select.get("group"))
        return real(**select)

    monkeypatch.setattr(plugins, "entry_points", counted)
    monkeypatch.setattr(plugins, "_LOADED_PLUGINS", set())
    return asked


def site_folder(path: Path, module: str) -> Path:
    """A folder as a site-packages folder long untouched: a plug-in's module in it, and no package naming it yet."""
    path.mkdir()
    (path / f"{module}.py").write_text(MODULE, encoding="utf-8")
    os.utime(path, ns=(10**18, 10**18))  # changed long ago: what writes into it now changes its time
    return path


def install(folder: Path, module: str) -> None:
    """What an installer writes for a package whose ``bio_mrc.plugins`` entry point is ``module:register``."""
    info = folder / f"{module}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 1.0\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(f"[{plugins.PLUGIN_GROUP}]\n{module} = {module}:register\n", encoding="utf-8")


@pytest.fixture
def forget(monkeypatch: pytest.MonkeyPatch):
    """The modules a test imports, gone from ``sys.modules`` after it."""
    names: list[str] = []
    yield names.append
    for name in names:
        sys.modules.pop(name, None)


def test_nothing_installed_meanwhile_is_read_once(scans):
    plugins.load_plugins()
    plugins.load_plugins()
    plugins.load_plugins()
    assert scans == [plugins.PLUGIN_GROUP]


def test_a_package_installed_into_a_folder_on_the_path_meanwhile_is_loaded(scans, tmp_path, monkeypatch, forget):
    folder = site_folder(tmp_path / "site", "scan_late_plugin")
    monkeypatch.syspath_prepend(str(folder))
    forget("scan_late_plugin")
    assert plugins.load_plugins() == []
    install(folder, "scan_late_plugin")
    assert plugins.load_plugins() == ["scan_late_plugin"]
    import scan_late_plugin

    assert scan_late_plugin.CALLS == [1]
    assert plugins.load_plugins() == []  # loaded once a process


def test_a_folder_put_on_the_path_meanwhile_is_read(scans, tmp_path, monkeypatch, forget):
    folder = site_folder(tmp_path / "site", "scan_path_plugin")
    install(folder, "scan_path_plugin")
    forget("scan_path_plugin")
    assert plugins.load_plugins() == []
    monkeypatch.syspath_prepend(str(folder))
    assert plugins.load_plugins() == ["scan_path_plugin"]


def test_the_working_folder_on_the_path_is_read_where_the_process_works_now(scans, tmp_path, monkeypatch, forget):
    folder = site_folder(tmp_path / "site", "scan_here_plugin")
    install(folder, "scan_here_plugin")
    forget("scan_here_plugin")
    monkeypatch.syspath_prepend("")
    monkeypatch.chdir(tmp_path)
    assert plugins.load_plugins() == []
    monkeypatch.chdir(folder)
    assert plugins.load_plugins() == ["scan_here_plugin"]


def test_a_scanning_function_put_in_place_meanwhile_is_asked(scans, monkeypatch):
    import importlib.metadata

    plugins.load_plugins()
    point = importlib.metadata.EntryPoint("nothing", "os.path:sep", plugins.PLUGIN_GROUP)  # names no function: imported only
    monkeypatch.setattr(plugins, "entry_points", lambda **select: [point])
    assert plugins.load_plugins() == ["nothing"]


def test_an_entry_point_file_written_after_the_scan_is_read(scans, tmp_path, monkeypatch, forget):
    """An installer makes a package's metadata folder, then writes its files: a scan between the two found the package
    without its entry points, and the folder on the path, changed by the metadata folder alone, never changes again.
    An egg-info folder rewritten in place (a development install's) changes no folder on the path either."""
    folder = site_folder(tmp_path / "site", "scan_written_plugin")
    monkeypatch.syspath_prepend(str(folder))
    forget("scan_written_plugin")
    install(folder, "scan_written_plugin")
    entry_points = folder / "scan_written_plugin-1.0.dist-info" / "entry_points.txt"
    written = entry_points.read_text(encoding="utf-8")
    entry_points.unlink()
    os.utime(folder, ns=(10**18, 10**18))
    assert plugins.load_plugins() == []
    entry_points.write_text(written, encoding="utf-8")
    assert plugins.load_plugins() == ["scan_written_plugin"]


def test_a_package_a_finder_on_the_meta_path_finds_meanwhile_is_loaded(scans, tmp_path, monkeypatch, forget):
    """A finder of its own on ``sys.meta_path`` (an application bundler's, a test's) that finds packages: what it finds
    may change while it stays the same finder, and the packages it finds are read again each time."""
    import importlib.metadata

    folder, metadata = site_folder(tmp_path / "site", "scan_found_plugin"), tmp_path / "metadata"
    metadata.mkdir()
    install(metadata, "scan_found_plugin")  # found by the finder alone; its module imported from the path
    monkeypatch.setattr(sys, "path", [*sys.path, str(folder)])
    forget("scan_found_plugin")
    found: list = []

    class Finder:
        @staticmethod
        def find_spec(*args: object) -> None:
            return None

        @staticmethod
        def find_distributions(context=None) -> list:
            return list(found)

    monkeypatch.setattr(sys, "meta_path", [Finder, *sys.meta_path])
    real = importlib.metadata.PathDistribution(metadata / "scan_found_plugin-1.0.dist-info")
    assert plugins.load_plugins() == []
    found.append(real)
    assert plugins.load_plugins() == ["scan_found_plugin"]
