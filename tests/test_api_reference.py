"""docs/api.md is the package's API as it is: the page is what tools/api_reference.py writes from the package, every
name of ``bio_mrc.__all__`` and every ``bio_mrc.…`` name the README and docs/ give imports and has its place there,
and each of them (and each public method of a class there) has a docstring to show."""

from __future__ import annotations

import importlib
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

import bio_mrc

ROOT = Path(__file__).resolve().parents[1]
API = ROOT / "docs" / "api.md"
GENERATOR = ROOT / "tools" / "api_reference.py"


def load_generator():
    spec = importlib.util.spec_from_file_location("api_reference", GENERATOR)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def generated() -> str:
    """The page as a fresh interpreter writes it: a head another test registers in this process would add its labels
    to the model's ``forward`` signature."""
    written = subprocess.run([sys.executable, str(GENERATOR)], capture_output=True, text=True, encoding="utf-8", check=True)
    return written.stdout


def mentioned_names() -> set[str]:
    """``bio_mrc.__all__``, every dotted ``bio_mrc.…`` name of the README and docs/ (this page aside), and every name
    their code imports from the package."""
    names = {f"bio_mrc.{name}" for name in bio_mrc.__all__}
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        if page == API:
            continue
        text = page.read_text(encoding="utf-8")
        names |= set(re.findall(r"(?<![\w/.-])bio_mrc(?:\.[A-Za-z_]\w*)+", text))
        for module, imported in re.findall(r"^from (bio_mrc[\w.]*) import ([\w, ]+)$", text, re.M):
            names |= {f"{module}.{name.strip()}" for name in imported.split(",")}
    return names


def resolved(name: str) -> object:
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for part in parts[cut:]:
            found = getattr(found, part)
        return found
    raise AssertionError(name)


@pytest.mark.slow  # a fresh interpreter importing the whole package and torch
def test_docs_api_md_is_what_the_generator_writes(generated):
    assert API.read_text(encoding="utf-8") == generated, "regenerate it: python tools/api_reference.py > docs/api.md"


def test_every_public_and_documented_name_imports_and_has_its_place_in_api_md():
    text = API.read_text(encoding="utf-8")
    names = mentioned_names()
    assert {"bio_mrc.AnswerExtractor", "bio_mrc.training.train.train_model", "bio_mrc.data.squad.load_squad",
            "bio_mrc.inference.TrainingEvaluator", "bio_mrc.inference.paired_evaluation.compare_predictions"} <= names
    unresolved = []
    for name in sorted(names):
        try:
            resolved(name)
        except (ImportError, AttributeError) as error:
            unresolved.append(f"{name} ({error})")
    assert not unresolved, f"names the docs give that do not import: {unresolved}"
    placed = lambda name: (f"### `{name}`" in text or f"`import {name}`" in text
                           or "`from {} import {}`".format(*name.rsplit(".", 1)) in text)
    missing = sorted(name for name in names if not placed(name))
    assert not missing, f"docs/api.md has no entry for {missing}"


@pytest.mark.slow  # the generator's page, as above
def test_every_name_and_public_method_in_api_md_has_a_docstring(generated):
    bare = [line for line in generated.splitlines() if "(no docstring)" in line]
    assert not bare, f"docs/api.md shows names without a docstring: {bare}"
    assert generated.count("\n### `") >= len(bio_mrc.__all__)


def test_the_generator_reads_docstrings_signatures_and_fields_as_the_source_writes_them():
    generator = load_generator()
    from bio_mrc.types import AnswerSpan

    assert generator.first_paragraph(AnswerSpan).startswith("One predicted span: its text, character offsets")
    assert generator.signature_of(AnswerSpan.to_dict) == "(self) -> dict[str, Any]"
    assert generator.field_lines(AnswerSpan)[-1] == "- `probability: float | None = None`"
    assert generator.first_paragraph(bio_mrc.__version__) is None  # a value: str's docstring says nothing of it
