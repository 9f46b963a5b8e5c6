"""The scan for installed plug-ins (:func:`bio_mrc.plugins.load_plugins`): done again only when what it reads may have
changed (a folder on ``sys.path`` and its contents, the finders, the scanning function), so a long-lived process that
looks a name up many times reads every installed package's metadata once, and still sees a package installed meanwhile."""

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
