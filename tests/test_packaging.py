"""What a user installs: one version everywhere, the licence pyproject.toml names, the type-hints marker."""

import ast
import importlib
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

import bio_mrc
import bio_mrc.inference
from bio_mrc.cli import main

from .read_once import parsed

ROOT = Path(__file__).resolve().parents[1]


def test_version_option_prints_the_package_version(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0 and capsys.readouterr().out == f"bio-mrc {bio_mrc.__version__}\n"


def test_changelog_describes_the_current_version():
    headings = re.findall(r"^## (\S+)", (ROOT / "CHANGELOG.md").read_text(encoding="utf-8"), re.M)
    assert headings and headings[0] == bio_mrc.__version__


@pytest.mark.slow
def test_the_wheel_ships_the_licence_the_type_marker_and_the_version(tmp_path):
    source = tmp_path / "source"  # a copy: building writes build/ and *.egg-info beside the sources
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "bio_mrc", source / "bio_mrc", ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(tmp_path / "dist"),
                    str(source)], check=True, capture_output=True, timeout=600)
    (wheel,) = (tmp_path / "dist").glob("bio_mrc-*.whl")
    version = bio_mrc.__version__
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        metadata = archive.read(f"bio_mrc-{version}.dist-info/METADATA").decode()
        licence = archive.read(f"bio_mrc-{version}.dist-info/licenses/LICENSE").decode()
    assert {"bio_mrc/py.typed", "bio_mrc/__init__.pyi", "bio_mrc/inference/__init__.pyi", "bio_mrc/harness/presets/quick.json"} <= names
    # every file the package reads at run time (presets, report.html's assets, stubs), not only the ones named above
    data = {path.relative_to(source).as_posix() for path in (source / "bio_mrc").rglob("*") if path.is_file() and path.suffix != ".py"}
    assert data and not data - names, sorted(data - names)
    assert f"\nVersion: {version}\n" in metadata and "\nLicense-Expression: Apache-2.0\n" in metadata
    assert licence == (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert licence.split()[:4] == ["Apache", "License", "Version", "2.0,"] and "END OF TERMS AND CONDITIONS" in licence


@pytest.mark.slow
def test_the_source_distribution_holds_the_package_and_no_part_of_the_test_suite(tmp_path):
    """setuptools adds ``tests/test_*.py`` to an sdist by itself, without the conftest and fixtures they need."""
    import tarfile

    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE", "MANIFEST.in", "CHANGELOG.md"):
        shutil.copy(ROOT / name, source / name)
    for folder in ("bio_mrc", "tests"):
        shutil.copytree(ROOT / folder, source / folder, ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([sys.executable, "-c", "import sys; from setuptools import build_meta; build_meta.build_sdist(sys.argv[1])",
                    str(tmp_path / "dist")], cwd=source, check=True, capture_output=True, timeout=600)
    (sdist,) = (tmp_path / "dist").glob("bio_mrc-*.tar.gz")
    with tarfile.open(sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    assert {"bio_mrc/cli/__init__.py", "bio_mrc/cli/parser.py", "bio_mrc/py.typed", "bio_mrc/harness/presets/quick.json", "LICENSE", "CHANGELOG.md"} <= names
    assert not [name for name in names if name.startswith("tests")]
    # pip builds the wheel from the sdist it downloads: that wheel holds every file of the package, its data too
    with tarfile.open(sdist) as archive:
        archive.extractall(tmp_path / "unpacked", **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))  # 3.11.4 on
    (unpacked,) = (tmp_path / "unpacked").iterdir()
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(tmp_path / "wheel"),
                    str(unpacked)], check=True, capture_output=True, timeout=600)
    (wheel,) = (tmp_path / "wheel").glob("bio_mrc-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        shipped = {name for name in archive.namelist() if name.startswith("bio_mrc/")}
    package = {path.relative_to(source).as_posix() for path in (source / "bio_mrc").rglob("*") if path.is_file()}
    assert shipped == package, (sorted(package - shipped), sorted(shipped - package))


def _runtime_imports(tree: ast.AST):
    """Every import a module runs: those under ``if TYPE_CHECKING:`` only name types for a type checker."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", getattr(node.test, "attr", None)) == "TYPE_CHECKING":
            nodes = node.orelse
        else:
            nodes = [node]
        for child in nodes:
            if isinstance(child, ast.Import):
                yield from (alias.name for alias in child.names)
            elif isinstance(child, ast.ImportFrom) and not child.level:
                yield child.module
            yield from _runtime_imports(child)


def _distribution(name: str) -> str:
    """A distribution's name as pip compares names (PEP 503): ``Pillow``, ``pydantic_core`` -> ``pillow``, ``pydantic-core``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def test_every_third_party_import_of_the_package_is_declared():
    # a package imported but only installed as another's dependency (huggingface_hub through transformers, pyarrow
    # through datasets) goes missing, or changes under the package, once that dependency drops or moves it
    from importlib.metadata import packages_distributions

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    requirements = project["dependencies"] + [item for extra, items in project["optional-dependencies"].items() if extra != "dev" for item in items]
    declared = {_distribution(re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement).group()) for requirement in requirements}
    providers = packages_distributions()
    imported: dict[str, set[str]] = {}
    for path in sorted((ROOT / "bio_mrc").rglob("*.py")):
        for module in _runtime_imports(parsed(path)):
            top = module.split(".")[0]
            if top not in sys.stdlib_module_names and top not in ("__future__", "bio_mrc"):
                imported.setdefault(top, set()).add(path.relative_to(ROOT).as_posix())
    assert {"torch", "fastapi", "huggingface_hub"} <= set(imported)  # imports in a try block and inside functions too
    undeclared = {top: (providers.get(top, ["no installed distribution"]), sorted(files)) for top, files in imported.items()
                  if not declared & {_distribution(name) for name in providers.get(top, [])}}
    assert not undeclared, undeclared


def test_the_server_without_the_serve_extra_names_it(monkeypatch, capsys, tmp_path):
    monkeypatch.setitem(sys.modules, "fastapi", None)  # what an install without the extra finds: no fastapi
    for name in ("bio_mrc.serving.app", "bio_mrc.serving.schema", "bio_mrc.serving.bounded"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    assert main(["serve", "--model", str(tmp_path)]) == 2
    assert capsys.readouterr().err == "error: bio-mrc serve needs fastapi: pip install 'bio_mrc[serve]'\n"
    with pytest.raises(ImportError) as error:  # the application from Python, as docs/serving.md builds it
        importlib.import_module("bio_mrc.serving.app")
    assert str(error.value) == "bio_mrc.serving.app needs fastapi, which the serve extra installs: pip install 'bio_mrc[serve]'"


def _stub_names(package) -> dict[str, object]:
    """``{name: object}`` of what a package's ``__init__.pyi`` imports, each looked up where the stub says."""
    stub = Path(package.__file__).with_suffix(".pyi")
    found = {}
    for node in parsed(stub).body:
        if isinstance(node, ast.ImportFrom):
            module = importlib.import_module(f"{package.__name__}.{node.module}" if node.level else node.module)
            found |= {alias.asname or alias.name: getattr(module, alias.name) for alias in node.names}
    return found


@pytest.mark.parametrize("package", [bio_mrc, bio_mrc.inference], ids=["bio_mrc", "bio_mrc.inference"])
def test_the_type_stubs_name_each_lazy_export_as_the_package_loads_it(package):
    # a type checker reads the stub, not __getattr__: a name missing there is Any, or an error, for the package's users
    stubbed = _stub_names(package)
    assert sorted(stubbed) == sorted(package._LAZY)
    assert all(stubbed[name] is getattr(package, name) for name in package._LAZY)


@pytest.mark.parametrize("package", [bio_mrc, bio_mrc.inference], ids=["bio_mrc", "bio_mrc.inference"])
def test_dir_lists_each_lazy_export(package):
    # help(bio_mrc) documents and a notebook completes what dir() lists: without the lazy names, no class at all
    assert set(package._LAZY) <= set(dir(package)) and "__version__" in dir(bio_mrc)
    assert dir(package) == sorted(dir(package))


@pytest.mark.parametrize("package", [bio_mrc, bio_mrc.inference], ids=["bio_mrc", "bio_mrc.inference"])
def test_the_type_stubs_name_what_all_exports_and_nothing_else(package):
    # `from package import *` reads __all__, a type checker the stub: the two name the same things; a stub import
    # re-exports only as `name as name`, and a stub annotation (`__version__: str`) names a value the package has;
    # nothing else (a `def` written out there could drift from the signature it copies)
    body = parsed(Path(package.__file__).with_suffix(".pyi")).body
    assert all(isinstance(node, (ast.ImportFrom, ast.AnnAssign)) for node in body[1:]) and isinstance(body[0], ast.Expr)
    aliases = [alias for node in body if isinstance(node, ast.ImportFrom) for alias in node.names]
    annotated = [node.target.id for node in body if isinstance(node, ast.AnnAssign)]
    assert all(alias.asname == alias.name for alias in aliases)
    assert sorted([alias.name for alias in aliases] + annotated) == sorted(package.__all__)
    assert all(hasattr(package, name) for name in package.__all__)


def test_every_docstring_example_of_the_package_runs_or_is_marked_skipped():
    # help() shows these examples; one that needs a trained model folder is marked `# doctest: +SKIP`
    import doctest

    finder, runner = doctest.DocTestFinder(exclude_empty=True), doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    package = ROOT / "bio_mrc"  # only the modules that hold an example are imported: others may need an optional extra
    names = [".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
             for path in sorted(package.rglob("*.py")) if ">>>" in path.read_text(encoding="utf-8")]
    tests = [test for name in names for test in finder.find(importlib.import_module(name), name) if test.examples]
    assert {test.name for test in tests} >= {"bio_mrc.inference.extract.AnswerExtractor",
                                             "bio_mrc.inference.pipeline.BioMrcQuestionAnsweringPipeline"}
    for test in tests:
        runner.run(test, out=lambda text: None)
    assert runner.summarize(verbose=False).failed == 0
