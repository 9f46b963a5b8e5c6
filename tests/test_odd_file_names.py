"""File and folder names that are no plain words (a space, ``données``, ``#``, ``%``, ``?``, quotes, brackets, a leading
``-``, a line break) go through every command and the library as the names they are: a folder named like a pattern is
that folder, a name that begins with ``-`` is refused in one line that says how to give it, and a line break shows as
``\\n`` wherever a name is shown, never as a space or a second line."""

import json
import re
import shutil

import pytest

from bio_mrc import model_card
from bio_mrc.cli import main
from bio_mrc.harness.models import resolve_init_from
from bio_mrc.markdown_code import code_span

from .conftest import SAMPLE_V1

ODD_NAMES = ["a b", "données", "数据", "a#b", "a%20b", "a?b", "a&b", "a'b\"c", "a[1]b", "-lead", "~tilde", "a\nb", "L" * 200]


@pytest.mark.parametrize("name", ["a[1]b", "run[seed-42]", "a*b", "a?b"])
def test_a_model_folder_named_like_a_pattern_is_that_folder(trained_dir, tmp_path, name):
    """``init_from`` is a glob pattern only where no folder has its very name: ``a[1]b`` matched ``a1b`` alone, and
    ``a*b`` and ``a?b`` also the folder ``a-b`` beside them."""
    folder = shutil.copytree(trained_dir, tmp_path / name)
    shutil.copytree(trained_dir, tmp_path / "a-b")
    assert resolve_init_from(str(folder)) == str(folder)
    assert resolve_init_from(str(tmp_path / "a-*")) == str(tmp_path / "a-b")  # a pattern still matches its one model


@pytest.mark.parametrize("folder", ["exp [1]", "exp?", "a*b", "r[0-9]"])
def test_a_pattern_under_a_folder_named_like_a_pattern_matches_in_that_folder(trained_dir, tmp_path, monkeypatch, folder):
    """A pattern's folders that are there by their very names are those folders: ``exp [1]/models/joint-*`` read
    ``[1]`` as the one character ``1`` and matched no model."""
    model = shutil.copytree(trained_dir, tmp_path / folder / "models" / "joint-seed1-abc")
    shutil.copytree(trained_dir, tmp_path / "exp 1" / "models" / "joint-seed1-abc")  # what [1] matches, as a pattern
    assert resolve_init_from(str(tmp_path / folder / "models" / "joint-seed1-*")) == str(model)
    monkeypatch.chdir(tmp_path / folder)
    assert resolve_init_from("models/joint-*") == "models/joint-seed1-abc"


@pytest.mark.slow
def test_a_comparison_continues_a_model_whose_folder_name_holds_brackets(trained_dir, tmp_path, capsys):
    folder = shutil.copytree(trained_dir, tmp_path / "reader [v1]")
    halves = {"fractions": [0.5, 0.5], "seed": 0}
    config = {
        "name": "odd",
        "train": {"path": str(SAMPLE_V1), "split": {**halves, "part": 0}},
        "eval": {"path": str(SAMPLE_V1), "split": {**halves, "part": 1}},
        "defaults": {"max_seq_length": 48, "doc_stride": 16, "max_query_length": 12, "epochs": 1, "batch_size": 4},
        "runs": [{"name": "joint", "heads": "span+bio", "init_from": str(folder)}],
        "seeds": [1],
    }
    (tmp_path / "config [v1].json").write_text(json.dumps(config), encoding="utf-8")
    assert main(["compare", "--config", str(tmp_path / "config [v1].json"), "--output-dir", str(tmp_path / "out"), "--train-only"]) == 0, (
        capsys.readouterr().err
    )
    [model] = (tmp_path / "out" / "models").iterdir()
    assert json.loads((model / "bio_mrc_run.json").read_text(encoding="utf-8"))["train"]["init_from"] == str(folder)


@pytest.mark.parametrize(
    "argv, option, value",
    [
        (["predict", "--model", "m", "--data", "-questions.json", "--output", "o.json"], "--data", "-questions.json"),
        (["predict", "--model", "-lead", "--data", "q.json", "--output", "o.json"], "--model", "-lead"),
        (["train", "--train", "t.json", "--output-dir", "-model"], "--output-dir", "-model"),
        (["extract", "--model", "m", "--question", "q?", "--context-file", "-doc.txt"], "--context-file", "-doc.txt"),
        (["compare", "--conf", "-c.json"], "--config", "-c.json"),  # an option's prefix, as argparse takes it
    ],
)
def test_a_name_that_begins_with_a_dash_is_refused_in_one_line_saying_how_to_give_it(argv, option, value, capsys):
    """argparse reads ``-questions.json`` as an option and answers with its usage and "expected one argument"."""
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and "usage" not in err
    assert f"{option}={value}" in err and f"./{value}" in err


@pytest.mark.parametrize(
    "argv",
    [
        ["predict", "--model", "m", "--data=-questions.json", "--output", "o.json", "--bio-length-prior", "-0.5"],
        ["predict", "--model", "m", "--data", "./-questions.json", "--output", "-o .json", "--bio-length-prior", "-.5"],
    ],
)
def test_a_dash_name_given_with_equals_or_a_path_and_a_negative_number_are_values(argv):
    from bio_mrc.cli.parser import build_parser

    args = build_parser().parse_args(argv)
    assert args.data.endswith("-questions.json") and args.bio_length_prior < 0


@pytest.mark.parametrize(
    "argv, option, value",
    [
        (["predict", "--model", "m", "--data", "q.json", "--output", "o.json", "--bio-length-prior", "-1e-3"], "--bio-length-prior", "-1e-3"),
        (["predict", "--model", "m", "--data", "q.json", "--output", "o.json", "--bio-length-prior", "-inf"], "--bio-length-prior", "-inf"),
        (["train", "--train", "t.json", "--output-dir", "m", "--seed", "-1_0"], "--seed", "-1_0"),
    ],
)
def test_a_number_argparse_reads_as_an_option_is_told_to_be_given_with_equals_alone(argv, option, value, capsys):
    """A number is no file: the line said "or ./-1e-3 for a file", which gives the option no number."""
    with pytest.raises(SystemExit):
        main(argv)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{option}={value}" in err and "./" not in err


@pytest.mark.parametrize("then", [["--outp", "o.json"], ["--output=o.json"], ["--outp=o.json"], ["--he"]])
def test_an_option_after_an_option_that_lacks_its_value_is_the_option_argparse_reads(then, capsys):
    """``--data --outp o.json`` lacks the value of --data: the line told to write ``--data=--outp`` (``--data=--output=o.json``),
    an option's prefix, or an option given with ``=``, taken for a file's name."""
    with pytest.raises(SystemExit) as stopped:
        main(["predict", "--model", "m", "--data", *then])
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and "begins with '-'" not in err and "--data=" not in err
    assert "argument --data: expected one argument" in err


def test_a_negative_number_is_a_value_wherever_the_parsers_argparse_reads_it_as_one(monkeypatch):
    """The check reads negative numbers as the parser's argparse does (later Pythons read ``-1e-3`` as a number): a
    number that argparse takes as a value was refused before argparse saw it."""
    from bio_mrc.cli.parser import build_parser

    parser = build_parser()
    for action in parser._actions:
        for sub in (action.choices or {}).values() if isinstance(action.choices, dict) else ():
            monkeypatch.setattr(sub, "_negative_number_matcher", re.compile(r"^-\d[\d_]*(\.\d[\d_]*)?([eE][+-]?\d[\d_]*)?$"))
    args = parser.parse_args(["predict", "--model", "m", "--data", "q.json", "--output", "o.json", "--bio-length-prior", "-1e-3"])
    assert args.bio_length_prior == -1e-3


@pytest.mark.parametrize("name", ODD_NAMES)
def test_a_name_in_markdown_code_is_shown_whole_on_one_line(name):
    """A card's "Training data" named ``a\\nb.json`` as ``a b.json``, another file's name."""
    shown = code_span(f"/data/{name}.json")
    assert "\n" not in shown and shown.strip("`").strip() == f"/data/{name}.json".replace("\n", "\\n")


def test_the_card_names_training_data_whose_name_holds_a_line_break_as_it_is():
    record = {"train": {"heads": "span"}, "n_examples": 2, "training_data": [{"data": "/data/q/a\nb.json", "questions": 2}]}
    card = model_card.render_model_card({"heads": "span"}, record, None, "m")
    assert "Training data: `.../q/a\\nb.json` (2 questions)." in card.splitlines()
    assert code_span("/data/a\nb.json") != code_span("/data/a b.json")
    assert code_span("a\u2028b") == "`a\\u2028b`"  # a line end of str.splitlines(), where the report's page reads one


@pytest.fixture(scope="module")
def odd_folder(trained_dir, tmp_path_factory):
    """A folder holding, for each odd name, the tiny model and the sample's questions under that name."""
    folder = tmp_path_factory.mktemp("odd names")
    for number, name in enumerate(ODD_NAMES):
        (folder / str(number)).mkdir()
        shutil.copytree(trained_dir, folder / str(number) / name)
        shutil.copy(SAMPLE_V1, folder / str(number) / f"{name}.json")
    return folder


@pytest.mark.parametrize("number", range(len(ODD_NAMES)), ids=[ascii(name)[1:-1][:12] for name in ODD_NAMES])
def test_predict_evaluate_and_extract_take_every_odd_name_as_it_is(odd_folder, number, capsys):
    name = ODD_NAMES[number]
    model, data, out = odd_folder / str(number) / name, odd_folder / str(number) / f"{name}.json", odd_folder / str(number) / f"out {name}"
    (odd_folder / str(number) / f"{name}.txt").write_text("The notes were written by Charles Babbage in 1837.", encoding="utf-8")
    assert main(["predict", f"--model={model}", f"--data={data}", f"--output={out / name}.json"]) == 0
    assert main(["evaluate", f"--data={data}", f"--predictions={out / name}.json"]) == 0
    assert (
        main(["extract", f"--model={model}", "--question", "Who wrote?", f"--context-file={odd_folder / str(number) / name}.txt", f"--html={out / name}.html"])
        == 0
    )
    err = capsys.readouterr().err
    assert sorted(path.name for path in out.iterdir()) == sorted(
        f"{name}{suffix}" for suffix in (".answers.files.json", ".answers.jsonl", ".answers.run.json", ".html", ".json", ".na_probs.json", ".nbest.json")
    )
    assert sorted(path.name for path in out.parent.iterdir()) == sorted([name, f"{name}.json", f"{name}.txt", f"out {name}"])
    record = json.loads((out / f"{name}.answers.run.json").read_text(encoding="utf-8"))
    assert record["model"] == str(model) and record["data"].startswith(f"{data}, ")  # the paths as they are
    page = f"page: {out / name}.html (".replace("\n", "\\n")  # a line break in a name cannot forge a line
    assert [line for line in err.splitlines() if line.startswith("page: ")] == [line for line in err.splitlines() if line.startswith(page)]
    assert len([line for line in err.splitlines() if line.startswith(page)]) == 1
