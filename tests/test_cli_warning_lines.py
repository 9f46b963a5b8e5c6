"""The command line's ``warning:`` lines are its own output: the user's warning filters (``PYTHONWARNINGS=ignore`` or
``error``, ``python -W error``) neither hide them nor turn them into tracebacks. Python's filters are patched here as
those settings set them at start-up."""

import ast
import importlib
import json
import re
import warnings
from pathlib import Path

import pytest

import bio_mrc
from bio_mrc.cli import main
from bio_mrc.cli.console import input_warnings_as_lines
from bio_mrc import errors
from bio_mrc.errors import InputNote, InputWarning, argument
from bio_mrc.data.drop import NumericAnswersWarning
from bio_mrc.inference.abstention import NeverAbstainsWarning
from bio_mrc.training.run_start import SharedHeldOutWarning, warn_shared_held_out
from bio_mrc.types import Example

from .conftest import untrained_model_folder
from .read_once import walked, walked_source

FILTERS = {"ignore": ("ignore", Warning), "error": ("error", Warning), "error::InputWarning": ("error", InputWarning)}


@pytest.mark.parametrize("user_filter", FILTERS)
def test_input_warnings_are_lines_whatever_the_filters(capsys, user_filter):
    """Under ``ignore`` the lines vanished; under ``error`` the first one ended the command in a traceback."""
    with warnings.catch_warnings():
        warnings.simplefilter(*FILTERS[user_filter])
        with input_warnings_as_lines():
            for _ in range(2):  # said twice at one place: one line, as Python's default filter shows it
                warnings.warn("no tuned threshold", NeverAbstainsWarning, stacklevel=1)
            warnings.warn(SharedHeldOutWarning("the --eval questions share 1 question"), stacklevel=1)
    assert capsys.readouterr().err == "warning: no tuned threshold\nwarning: the --eval questions share 1 question\n"


def test_a_line_said_again_elsewhere_is_printed_once(capsys):
    """A command that reads its questions twice (predict counts them, then answers them) printed a reader's warning
    twice: the second read warns from the same place after Python's filters had forgotten the first."""
    def say():
        warnings.warn("left out 1 question of 2 in d.json", NumericAnswersWarning, stacklevel=1)

    with input_warnings_as_lines():
        say()
        warnings.warn("left out 1 question of 2 in d.json", NumericAnswersWarning, stacklevel=1)
        warnings.warn("left out 1 question of 3 in e.json", NumericAnswersWarning, stacklevel=1)
    assert capsys.readouterr().err == ("warning: left out 1 question of 2 in d.json\n"
                                       "warning: left out 1 question of 3 in e.json\n")


NO_DATE = {"day": "", "month": "", "year": ""}
READ_WARNINGS = {  # a file whose reading warns, and the line it warns
    "drop": ({"nfl_1": {"passage": "Robbie Gould kicked a field goal.", "qa_pairs": [
        {"query_id": "d1", "question": "Who kicked?", "answer": {"number": "", "date": NO_DATE, "spans": ["Robbie Gould"]}},
        {"query_id": "d2", "question": "How many?", "answer": {"number": "1", "date": NO_DATE, "spans": []}}]}},
        "warning: left out 1 question of 2 in {path}: their answers are numbers or dates, not spans of the passage"),
    "multispanqa": ({"data": [{"id": "m1", "question": ["who", "?"], "context": ["Dave", "and", "Barbara", "sang"],
                               "label": ["I", "O", "B", "O"]}]},
                    "warning: 1 span in {path} starts with I after O (not IOB2); read as span starts, as the official "
                    "evaluation reads them, e.g. in 'm1'"),
}


@pytest.mark.parametrize("layout", READ_WARNINGS)
def test_predict_says_a_warning_of_its_questions_once(layout, tiny_encoder_dir, tmp_path, capsys):
    """predict printed the reader's warning twice, once as it counted the questions and once as it answered them."""
    model = untrained_model_folder(tiny_encoder_dir, tmp_path / "model", max_seq_length=48, doc_stride=16,
                                   max_query_length=12)
    content, line = READ_WARNINGS[layout]
    path = tmp_path / f"{layout}.json"
    path.write_text(json.dumps(content), encoding="utf-8")
    assert main(["predict", "--model", str(model), "--data", str(path), "--output", str(tmp_path / "preds.json"),
                 "--device", "cpu", "--precision", "fp32"]) == 0
    said = [text for text in capsys.readouterr().err.splitlines() if text.startswith("warning:")]
    assert said == [line.format(path=path)]


def test_one_shared_held_out_question_is_counted_in_the_singular():
    training = [Example("t1", "who wrote it?", "ada wrote it."), Example("t2", "who read it?", "bob read it.")]
    held_out = [Example("h1", "who wrote it?", "ada wrote it.")]  # one question, its one paragraph
    with pytest.warns(SharedHeldOutWarning, match=r"^the evaluator's questions share 1 question and 1 context \(under"):
        warn_shared_held_out(training, held_out)


def test_held_out_questions_sharing_only_ids_with_the_training_ones_are_no_warning():
    """Two data sets built apart, both numbering their questions q1, q2: they were said to share 2 questions."""
    training = [Example(f"q{n}", f"who wrote letter {n}?", f"ada wrote letter {n}.") for n in (1, 2)]
    held_out = [Example(f"q{n}", f"where is town {n}?", f"town {n} is in kent.") for n in (1, 2)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_shared_held_out(training, held_out)


def test_other_warnings_keep_the_users_filters():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with input_warnings_as_lines(), pytest.raises(UserWarning, match="^not the command's$"):
            warnings.warn("not the command's", UserWarning, stacklevel=1)


@pytest.fixture(scope="module")
def misspelt_calibration(tiny_encoder_dir, tmp_path_factory):
    """A model whose config.json holds a calibrator for no registered decoding: an UnusedSettingWarning when it loads."""
    folder = untrained_model_folder(tiny_encoder_dir, tmp_path_factory.mktemp("model") / "tiny", max_seq_length=64,
                                    doc_stride=16, max_query_length=16)
    config = json.loads((folder / "config.json").read_text())
    config["calibration"] = {"jiont": {"method": "beta", "a": 1.0, "b": 1.0, "c": 0.0}}
    (folder / "config.json").write_text(json.dumps(config))
    return folder


@pytest.mark.parametrize("user_filter", ["ignore", "error::InputWarning"])
def test_a_command_prints_its_warning_line_whatever_the_filters(misspelt_calibration, capsys, monkeypatch, user_filter):
    monkeypatch.setattr("bio_mrc.model_folder.settings_checks._WARNED", set())  # said once a process: each case a process of its own
    with warnings.catch_warnings():
        warnings.simplefilter(*FILTERS[user_filter])
        code = main(["extract", "--model", str(misspelt_calibration), "--question", "who?", "--context", "the normans ruled.",
                     "--device", "cpu", "--precision", "fp32"])
    assert code == 0
    assert [line for line in capsys.readouterr().err.splitlines() if "jiont" in line] == [
        f"warning: {misspelt_calibration / 'config.json'}: calibration key \"jiont\" names no registered decoding (bio, joint, "
        "span), so nothing uses it: a misspelt key, or a plug-in decoding's not imported here?"]


def _package_sources() -> list[tuple[str, str]]:
    """(module, source) of each module of the package, in the order of their paths."""
    root = Path(bio_mrc.__file__).parent
    return [(".".join(("bio_mrc", *path.relative_to(root).with_suffix("").parts)).removesuffix(".__init__"),
             path.read_text(encoding="utf-8")) for path in sorted(root.rglob("*.py"))]


def _package_warning_classes() -> list[tuple[str, str]]:
    """(module, class) of each warning class the package defines, read from its source's tree."""
    return [(module, node.name) for module, source in _package_sources() if "Warning" in source or "Note" in source
            for node in walked_source(source)
            if isinstance(node, ast.ClassDef) and any(ast.unparse(base).endswith(("Warning", "Note")) for base in node.bases)]


CLASS_LINE = re.compile(r"^[ \t]*class[ \t]+(\w+)[ \t]*\(([^)]*)\)[ \t]*:", re.MULTILINE)


def _package_warning_classes_by_text() -> list[tuple[str, str]]:
    """:func:`_package_warning_classes` read from the sources' ``class`` lines, not from their trees: every worker
    builds this list as it collects, whichever tests it then runs (tests/test_collection_imports.py). Held to the
    trees' list by a test."""
    return [(module, match[1]) for module, source in _package_sources() for match in CLASS_LINE.finditer(source)
            if any(base.strip().endswith(("Warning", "Note")) for base in match[2].split(","))]


def test_the_warning_classes_read_from_class_lines_are_those_of_the_trees():
    """The parametrisation below (read from ``class`` lines) leaves out no warning class and takes in nothing else."""
    assert len(_package_warning_classes()) > 10
    assert sorted(_package_warning_classes_by_text()) == sorted(_package_warning_classes())


BASES = {"BioMrcWarning", "InputWarning", "InputNote"}  # what a warning is, not what happened


def _warned_classes() -> list[tuple[str, str]]:
    """(where, class) of each ``warnings.warn`` call of the package: the category it names, or the class of the warning
    it builds; ``str`` for a bare message."""
    root = Path(bio_mrc.__file__).parent
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in walked(path):
            if not (isinstance(node, ast.Call) and ast.unparse(node.func) == "warnings.warn"):
                continue
            category = node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords if k.arg == "category"), None)
            given = category if category is not None else getattr(node.args[0], "func", None)
            found.append((f"{path.relative_to(root)}:{node.lineno}", ast.unparse(given).rsplit(".", 1)[-1] if given else "str"))
    return found


def test_every_warning_the_package_gives_is_a_class_of_its_own_naming_what_happened():
    """A bare message was a ``UserWarning`` (a hand-written model card kept, the dynamo exporter's fallback) that no
    filter on the package's warnings caught and the command line showed as Python's two lines; a base class names no
    event a filter can pick out."""
    defined = {name for _, name in _package_warning_classes()} - BASES
    warned = _warned_classes()
    assert len(warned) > 10 and [(where, name) for where, name in warned if name not in defined] == []


MARKED = f"{argument('max_connections', 5)} and {argument('overwrite', True)} ({argument('na_probs')})"
SERVE_FLAGS = {"max_connections": "--max-connections", "overwrite": "--overwrite", "na_probs": "--na-probs"}
# Warnings whose constructor takes more than the message; None: one that builds its own message from what it counts.
BUILT = {"UnknownIdsWarning": lambda cls: cls(MARKED, ["q9"], "preds.json"), "UnheldAnswersWarning": None}


@pytest.mark.parametrize(("module", "name"), _package_warning_classes_by_text())
def test_every_package_warning_names_arguments_as_each_door_does(module, name, capsys, monkeypatch):
    """A warning's message read the command line's flags to Python callers (``--max-connections 1000 lowered to …``);
    now the keyword there, and the flag on the command line's line, as an error does."""
    cls = getattr(importlib.import_module(module), name)
    assert issubclass(cls, errors.BioMrcWarning)
    if "__init__" in vars(cls) and cls is not errors.BioMrcWarning:
        assert name in BUILT, f"{name} takes more than a message: say in BUILT how to build one"
    if BUILT.get(name, cls) is None:
        return
    warning = BUILT.get(name, lambda cls: cls(MARKED))(cls)
    assert str(warning) == "max_connections=5 and overwrite=True (na_probs)" and "\ue000" not in str(warning)
    shown = []  # what Python shows of a warning that is no InputWarning
    monkeypatch.setattr(warnings, "showwarning", lambda message, category, *rest: shown.append(f"{category.__name__}: {message}"))
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        with input_warnings_as_lines(SERVE_FLAGS):
            warnings.warn(warning, stacklevel=1)
    said = "--max-connections 5 and --overwrite (--na-probs)"
    lines = capsys.readouterr().err.splitlines() + shown
    kind = "note" if issubclass(cls, InputNote) else "warning"  # a note: the input changed the work harmlessly
    assert lines == [f"{kind}: {said}"] if issubclass(cls, InputWarning) else [f"{name}: {said}"]
