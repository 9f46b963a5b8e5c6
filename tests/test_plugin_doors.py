"""Entries registered from outside the package, as a plug-in registers them (docs/layout.md), taking every default
their entry class offers: each door (the CLI's help, evaluate, tune, predict) answers from the entry's own fields."""

from __future__ import annotations

import csv
import json
from dataclasses import replace
from pathlib import Path

import pytest

from bio_mrc import plugins, registry
from bio_mrc.types import Example


def load_qa_tsv(path: Path) -> list[Example]:
    """A format of one's own: a TSV of id, question, context and answer text (at its first occurrence)."""
    examples = []
    with open(path, encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            start = row["context"].index(row["answer"])
            examples.append(Example(row["id"], row["question"], row["context"], (((start, start + len(row["answer"])),),)))
    return examples


# Every scoring field left at its default: SQuAD's per-question EM and F1, their means, no calibration rule of its own.
QA_TSV = registry.TaskEntry(
    name="qa-tsv", format="qa-tsv", scorer="qa-tsv", load=load_qa_tsv, gold="bio_mrc.data.squad:gold_texts",
    no_answer=False, metrics=("em", "f1"), statistic="f1", statistic_title="F1", title="QA TSV, SQuAD's metrics")


@pytest.fixture
def qa_tsv(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setitem(registry.TASKS, QA_TSV.name, QA_TSV)
    path = tmp_path / "qa.tsv"
    rows = [("q1", "Who wrote the notes?", "The notes were written by Charles Babbage in 1837.", "Charles Babbage"),
            ("q2", "When were they written?", "The notes were written by Charles Babbage in 1837.", "1837")]
    with open(path, "w", encoding="utf-8", newline="") as handle:
        csv.writer(handle, delimiter="\t").writerows([("id", "question", "context", "answer"), *rows])
    return path


def test_a_task_taking_the_default_scorer_is_scored_by_squad_v1_1_rules(qa_tsv, tmp_path, capsys):
    from bio_mrc.cli import main

    predictions = tmp_path / "preds.json"
    predictions.write_text(json.dumps({"q1": "Babbage", "q2": "1837"}), encoding="utf-8")
    assert main(["evaluate", "--metric", "qa-tsv", "--data", str(qa_tsv), "--predictions", str(predictions)]) == 0
    metrics = json.loads(capsys.readouterr().out)
    # q1: EM 0, F1 2·(1·½)/(1+½) = ⅔; q2: EM 1, F1 1
    assert metrics == {"em": pytest.approx(50.0), "f1": pytest.approx(100 * (2 / 3 + 1) / 2)}


def test_a_task_taking_the_default_scorer_may_have_unanswerable_questions(monkeypatch):
    from bio_mrc.metrics.task_scores import squad_question_scores

    task = replace(QA_TSV, name="qa-tsv-v2", no_answer=True)
    monkeypatch.setitem(registry.TASKS, task.name, task)
    gold = {"q1": [""], "q2": ["1837"]}
    columns = squad_question_scores(task, gold, {"q1": "", "q2": ""}, ["q1", "q2"])
    assert columns["em"].tolist() == [100.0, 0.0]  # an abstention is right where there is no answer, as SQuAD 2.0 scores it


def test_a_task_taking_the_default_scorer_gets_right_answers_for_its_calibrators(qa_tsv):
    from bio_mrc.metrics.task_scores import squad_right
    from bio_mrc.types import AnswerSpan, Prediction

    predictions = [Prediction("q1", [AnswerSpan("Babbage", 34, 41, 1.0)]), Prediction("q2", [AnswerSpan("in", 42, 44, 1.0)])]
    assert squad_right(QA_TSV, predictions, {"q1": ["Charles Babbage"], "q2": ["1837"]}).tolist() == [1.0, 0.0]


# --- the command line loads each installed package's bio_mrc.plugins entry point ---------------------------------

PLUGIN = '''
from dataclasses import replace

from bio_mrc import plugins, registry

CALLS = []


def decode_short(outputs, examples, config):
    from bio_mrc.decoding.postprocess import decode_span

    return decode_span(outputs, examples, replace(config, max_answer_length=3))


def register():
    CALLS.append(1)
    registry.register_decoding(registry.DecodingEntry(
        name="plugged", heads=frozenset({"span"}), function=decode_short, uses_length_prior=False, threshold_key="plugged",
        multi_span=registry.NBEST_SPANS, auto_rank=7, description="span answers of at most 3 tokens"))


def broken():
    raise RuntimeError("no table today")
'''


@pytest.fixture
def installed_plugin(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """A package whose ``bio_mrc.plugins`` entry point names ``value`` in the module above; its entries unregistered after."""
    import importlib.metadata
    import sys

    (tmp_path / "b36_plugin.py").write_text(PLUGIN, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(plugins, "_LOADED_PLUGINS", set())

    def install(value: str) -> None:
        point = importlib.metadata.EntryPoint("short-answers", value, plugins.PLUGIN_GROUP)
        monkeypatch.setattr(plugins, "entry_points", lambda **select: [point] if select.get("group") == point.group else [])

    yield install
    registry.DECODINGS.pop("plugged", None)
    sys.modules.pop("b36_plugin", None)


def test_the_command_line_offers_what_an_installed_plugin_registers(installed_plugin, capsys):
    from bio_mrc.cli import main

    installed_plugin("b36_plugin:register")
    with pytest.raises(SystemExit):
        main(["predict", "--help"])
    assert "plugged" in capsys.readouterr().out
    with pytest.raises(SystemExit):  # loaded once a process: a second command does not register it again
        main(["tune", "--help"])
    import b36_plugin

    assert b36_plugin.CALLS == [1] and "plugged" in registry.decoding_choices()


def test_a_plugin_that_fails_to_load_is_one_line_naming_it(installed_plugin, capsys):
    from bio_mrc.cli import main

    installed_plugin("b36_plugin:broken")
    assert main(["predict", "--help"]) == 2
    assert capsys.readouterr().err == ("error: plug-in 'short-answers' (the bio_mrc.plugins entry point b36_plugin:broken) "
                                       "could not be loaded: RuntimeError: no table today\n")


def test_a_library_lookup_of_a_name_not_registered_loads_the_installed_plugins_first(installed_plugin):
    installed_plugin("b36_plugin:register")
    assert "plugged" not in registry.DECODINGS
    assert registry.resolve_decoding(["span", "plugged"], "plugged") == "plugged"  # AnswerExtractor(decoding=...), a request


def test_the_model_card_of_a_plugin_head_speaks_of_its_own_head(monkeypatch):
    from bio_mrc import model_card
    from bio_mrc.heads import SpanHead

    pointer = registry.HeadEntry(
        name="pointer", attribute="pointer_head", build=lambda config, hidden: SpanHead(hidden),
        targets={"start_positions": registry.POSITION_TARGET, "end_positions": registry.POSITION_TARGET},
        build_targets="bio_mrc.features.targets:span_targets", outputs=("start_logits", "end_logits"),
        output_dims=((), ()), pad=float("-inf"), loss_weight=1.0, needs_tag_mask=False, description="a pointer head")
    monkeypatch.setitem(registry.HEADS, pointer.name, pointer)
    monkeypatch.setitem(registry.DECODINGS, "pointer", registry.DecodingEntry(
        name="pointer", heads=frozenset({"pointer"}), function="bio_mrc.decoding.postprocess:decode_span",
        uses_length_prior=False, threshold_key="pointer", multi_span=registry.NBEST_SPANS, auto_rank=6, description="its spans"))
    text = model_card.render_model_card({"heads": "pointer"}, None, None, "m")
    assert "one BERT-style encoder with a pointer head." in text and "| decodings | `pointer` |" in text
    assert "span head" not in text  # the model has none: its multi-span answers are its decoding's n-best spans


# --- a plug-in's entries in the command line's own words ---------------------------------------------------------

def pointer_head(**changes) -> registry.HeadEntry:
    """A head of one's own, as a plug-in registers it."""
    return registry.HeadEntry(**{
        "name": "pointer", "attribute": "pointer_head", "build": lambda config, hidden: None,
        "targets": {"pointer_positions": registry.POSITION_TARGET}, "build_targets": "bio_mrc.features.targets:span_targets",
        "outputs": ("pointer_logits",), "output_dims": ((),), "pad": float("-inf"), "loss_weight": 1.0, "needs_tag_mask": False,
        "description": "a pointer head of one's own (one position a window)", "short_description": "pointer head", **changes})


def test_the_heads_help_of_the_built_in_heads_is_the_words_it_always_had():
    assert registry.head_help() == "span: start/end head; bio: B/I/O tagging head; span+bio: both on one encoder"


def test_train_help_names_a_registered_head_in_its_own_words(monkeypatch, capsys):
    from bio_mrc.cli import main

    monkeypatch.setitem(registry.HEADS, "pointer", pointer_head())
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert ("span: start/end head; bio: B/I/O tagging head; pointer: pointer head; span+bio: both on one encoder "
            "(any set the choices list, joined by +)") in help_text
    # one without a short description: its description
    monkeypatch.setitem(registry.HEADS, "pointer", pointer_head(short_description=None))
    assert "pointer: a pointer head of one's own (one position a window);" in registry.head_help()


@pytest.mark.parametrize("available, decoding, heads, missing", [
    (["span"], "bio", None, "the bio head"),
    (["span"], "joint", "span", "the bio head"),
    (["bio"], "joint", ["bio"], "the span head"),
    ([], "joint", "pointer", "the span and bio heads"),
])
def test_a_decoding_the_model_cannot_do_names_the_heads_it_lacks(available, decoding, heads, missing):
    from bio_mrc.errors import ConfigError

    with pytest.raises(ConfigError) as refused:
        registry.resolve_decoding(available, decoding, heads=heads)
    assert str(refused.value) == (f"decoding {json.dumps(decoding)} needs {missing}, which this model lacks; "
                                  f"it offers {available}")


LAYOUT_HINT = "install a package with a bio_mrc.plugins entry point (docs/layout.md, your entries in the bio-mrc command)"


@pytest.mark.parametrize("argv, hint", [
    (["predict", "--model", "m", "--data", "d", "--output", "o", "--decoding", "span", "shortest"],
     f"argument --decoding: invalid choice: 'shortest' (choose from 'auto', 'span', 'bio', 'joint'); a decoding of your own: {LAYOUT_HINT}"),
    (["train", "--train", "t", "--output-dir", "o", "--heads", "pointer"],
     f"argument --heads: invalid choice: 'pointer' (choose from 'span', 'bio', 'span+bio'); a head of your own: {LAYOUT_HINT}"),
    (["predict", "--model", "m", "--data", "d", "--output", "o", "--format", "qa-tsv"],
     "argument --format: invalid choice: 'qa-tsv' (choose from 'squad', 'multispanqa', 'quoref', 'drop', 'mash-qa', "
     f"'answer-parts'); a data format of your own (a task's): {LAYOUT_HINT}"),
    (["export", "--model", "m", "--output", "o", "--format", "tflite"],  # no table: nothing a plug-in could add
     "argument --format: invalid choice: 'tflite' (choose from 'onnx', 'transformers')"),
])
def test_a_name_no_entry_has_is_one_line_saying_how_to_add_one(argv, hint, capsys):
    from bio_mrc.cli import main

    with pytest.raises(SystemExit) as exit:
        main(argv)
    assert exit.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == f"bio-mrc {argv[0]}: error: {hint}"


def test_a_plugin_task_scored_by_a_squad_version_leaves_squads_own_task_in_place():
    """The table of SQuAD versions was built with the last entry of each version winning: a plug-in's task scored by
    SQuAD v1.1's official scorer became what every door took for SQuAD v1.1 (its loader, title and scoring)."""
    built_in = {version: registry.squad_task(version) for version in ("1.1", "2.0")}
    assert [entry.name for entry in built_in.values()] == ["squad-v1.1", "squad-v2.0"]
    mine = registry.register_task(replace(QA_TSV, name="squad-tsv", squad_version="1.1", title="SQuAD in a TSV"))
    try:
        assert {version: registry.squad_task(version) for version in built_in} == built_in
        assert registry.task("squad-tsv") is mine and mine.squad_rules == "1.1"
    finally:
        registry.TASKS.pop("squad-tsv")


@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["--version", "predict"]])
def test_the_top_levels_version_and_help_import_no_plugin(installed_plugin, capsys, argv):
    """``--version`` imported every installed plug-in first, so a broken one broke ``bio-mrc --version`` too."""
    import sys

    from bio_mrc import __version__
    from bio_mrc.cli import main

    installed_plugin("b36_plugin:broken")
    with pytest.raises(SystemExit) as exited:
        main(argv)
    out = capsys.readouterr().out
    assert exited.value.code == 0 and "b36_plugin" not in sys.modules
    assert out == f"bio-mrc {__version__}\n" if argv[0] == "--version" else out.startswith("usage: bio-mrc")


def test_a_commands_help_and_the_command_itself_import_the_plugins(installed_plugin, capsys):
    import sys

    from bio_mrc.cli import main

    installed_plugin("b36_plugin:register")
    with pytest.raises(SystemExit):
        main(["tune", "--help"])
    assert "b36_plugin" in sys.modules and "plugged" in capsys.readouterr().out
    sys.modules.pop("b36_plugin")
    installed_plugin("b36_plugin:broken")
    plugins._LOADED_PLUGINS.clear()
    assert main(["evaluate", "--data", "d.json", "--predictions", "p.json"]) == 2
    assert capsys.readouterr().err.startswith("error: plug-in 'short-answers' (the bio_mrc.plugins entry point b36_plugin:broken)")
