"""What the docs quote is what the package does: each error line docs/reliability.md quotes for a command-line case is
the line ``bio-mrc`` prints for it, word for word, as is each problem it quotes for a bad file or config; the
``TrainingArguments`` values docs/training.md names as the package's own are the ones it sets, on a CPU and on a CUDA
GPU (and the fields it owns are the ones it refuses); the signature and limit docs/calibration.md gives are
tune_model's and the fingerprint's; the pipeline's answer-length default and what an answers line adds to
``Prediction.to_dict()`` are those the pages give, each ``bio_mrc.…(...)`` call a page quotes names the function's own
parameters, and no page says a paragraph twice."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from bio_mrc.cli import main
from bio_mrc.training import trainer
from bio_mrc.training.train import TrainConfig

from .read_once import walked

DOCS = Path(__file__).resolve().parents[1] / "docs"
RELIABILITY = DOCS / "reliability.md"
TRAINING = DOCS / "training.md"

# Each case is refused while its options are read, before any file is opened: no model or data is needed.
CASES = {
    "an option of other commands": ["predict", "--model", "m", "--data", "d.json", "--output", "p.json",
                                    "--max_seq_length", "100"],
    "a misspelt option": ["train", "--train", "t.json", "--output-dir", "out", "--max_seq_lenght", "100"],
    "a misspelt command": ["predcit"],
    "a limit of 0": ["predict", "--model", "m", "--data", "d.json", "--output", "p.json", "--limit", "0"],
    "an absurd batch size": ["predict", "--model", "m", "--data", "d.json", "--output", "p.json", "--batch-size", "1e308"],
    "an empty model name": ["predict", "--model", "", "--data", "d.json", "--output", "p.json"],
}


def _printed_error(argv: list[str], capsys) -> str:
    try:
        code = main(argv)
    except SystemExit as exit_:
        code = exit_.code
    assert code == 2, f"bio-mrc {' '.join(argv)} exited {code}"
    last = capsys.readouterr().err.strip().splitlines()[-1]
    return last.partition("error: ")[2]


@pytest.mark.parametrize("argv", CASES.values(), ids=CASES.keys())
def test_reliability_quotes_the_error_line_the_command_prints(argv, capsys):
    printed = _printed_error(argv, capsys)
    assert printed, "no error line printed"
    assert f"`{printed}`" in RELIABILITY.read_text(encoding="utf-8"), f"docs/reliability.md does not quote {printed!r}"


def _stated_defaults() -> dict[str, tuple[str, str | None]]:
    """``name: (value, value on a CUDA GPU or None)`` from training.md's sentence on the package's own values."""
    text = TRAINING.read_text(encoding="utf-8")
    sentence = re.search(r"The package's own values stay the defaults: (.*?\.)\n", text).group(1)
    stated = {}
    for part in sentence.split(", `"):
        name, value = re.match(r"`?(\w+)` `?([\w-]+)`?", part).groups()
        gpu = re.search(r"on a CUDA GPU a worker process for every two CPUs the process may use, by its CPU quota and its "
                        r"affinity mask, (\d+) to (\d+)", part)
        stated[name] = (value, gpu.groups() if gpu else None)
    return stated


def test_training_md_names_the_trainer_values_the_package_sets(monkeypatch, tmp_path):
    stated = _stated_defaults()
    assert set(stated) >= {"optim", "lr_scheduler_type", "logging_steps", "dataloader_num_workers"}
    cpu = {**trainer._package_arguments(TrainConfig(), tmp_path, True, False, 10), **trainer._loading_arguments("cpu")}
    for name, (value, _) in stated.items():
        assert str(cpu[name]) == value, f"training.md says {name} {value}; the package sets {cpu[name]!r} on a CPU"
    # On a CUDA GPU the loader runs worker processes: one for every two CPUs usable, at least 1, at most 4.
    from bio_mrc import cpu_budget

    counts = {}
    for cores, quota in ((1, None), (2, None), (8, None), (64, None), (64, 2.5)):
        monkeypatch.setattr(cpu_budget, "affinity_count", lambda n=cores: n)
        monkeypatch.setattr(cpu_budget, "cgroup_quota", lambda q=quota: q)
        counts[cores, quota] = trainer._loading_arguments("cuda")["dataloader_num_workers"]
    assert counts == {(1, None): 1, (2, None): 1, (8, None): 4, (64, None): 4, (64, 2.5): 1}
    assert stated["dataloader_num_workers"][1] == (str(min(counts.values())), str(max(counts.values()))), \
        "training.md does not say how many loader workers a CUDA GPU gets"


def _command_options() -> dict[str, dict[str, object]]:
    """``{command: {option string: its argparse action}}`` of every ``bio-mrc`` command."""
    import argparse

    from bio_mrc.cli import build_parser

    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)).choices
    return {name: {o: action for action in parser._actions for o in action.option_strings}
            for name, parser in commands.items()}


def test_readme_names_the_commands_that_take_device_and_decoding():
    text = (DOCS.parent / "README.md").read_text(encoding="utf-8")
    stated = re.search(r"((?:`\w+`, )+`\w+` and `\w+`) take `--device ([\w:|]+)`", text)
    assert stated, "README.md no longer says which commands take --device"
    named = set(re.findall(r"`(\w+)`", stated.group(1)))
    options = _command_options()
    assert named == {name for name, opts in options.items() if "--device" in opts}
    assert set(stated.group(2).split("|")) == set(options["predict"]["--device"].metavar.strip("{}").split(","))
    decoding = re.search(r"`(\w+)` and `(\w+)` answer with the joint decoding \(both heads\) unless `--decoding`", text)
    assert decoding and all(options[name]["--decoding"].default in ("auto", ["auto"]) for name in decoding.groups())


def _documented_text() -> str:
    return "".join(page.read_text(encoding="utf-8") for page in [DOCS.parent / "README.md", *sorted(DOCS.glob("*.md"))])


def test_every_command_option_is_documented():
    text = _documented_text()
    missing = {name: [o for o in opts if o.startswith("--") and o != "--help" and not re.search(rf"(?<![\w-]){o}(?![\w-])", text)]
               for name, opts in _command_options().items()}
    assert not {name: opts for name, opts in missing.items() if opts}, \
        f"options no page of the README or docs/ names: {missing}"


def test_readme_command_table_names_only_each_commands_options():
    rows = re.findall(r"^\| `bio-mrc (\w+) ([^|]*(?:\\\|[^|]*)*)` \|", (DOCS.parent / "README.md").read_text(encoding="utf-8"), re.M)
    options = _command_options()
    assert {name for name, _ in rows} == set(options), "the README's command table lost or added a command"
    wrong = [(name, o) for name, usage in rows for o in re.findall(r"--[a-z][\w-]*", usage) if o not in options[name]]
    assert not wrong, f"the README's command table names options these commands lack: {wrong}"


def test_the_commands_one_line_help_names_what_tune_fits():
    import argparse

    from bio_mrc.cli import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    line = next(choice.help for choice in sub._choices_actions if choice.dest == "tune")
    readme_row = re.search(r"^\| `bio-mrc tune .*$", (DOCS.parent / "README.md").read_text(encoding="utf-8"), re.M).group(0)
    for setting in ("span-length prior", "no-answer thresholds", "span-count thresholds", "calibrators"):
        assert setting in line and setting in readme_row, f"bio-mrc --help or the README's tune row omits {setting!r}"


def test_training_md_names_the_class_weights_a_bio_only_model_trains_with():
    text = TRAINING.read_text(encoding="utf-8")
    stated = re.search(r"Left out, a BIO-only model of soft or one-hot BIO targets trains with (\d+) (\d+) (\d+)", text)
    assert stated, "training.md does not say which class weights a BIO-only model trains with by default"
    for targets in ("soft", "one-hot"):
        assert TrainConfig(heads="bio", bio_targets=targets).resolved_bio_class_weights == tuple(map(float, stated.groups()))
    assert TrainConfig(heads="bio", bio_targets="marginal").resolved_bio_class_weights is None
    assert TrainConfig(heads="span+bio").resolved_bio_class_weights is None


def test_training_md_names_every_training_argument_the_package_owns():
    """The list of owned fields and the run_qa.py table name each field training_args refuses as the package's own:
    label_smoothing_factor was refused but named in neither, and use_cpu had no row."""
    from bio_mrc.training.training_args import OWNED_TRAINING_ARGS

    text = TRAINING.read_text(encoding="utf-8")
    listed = re.search(r"The fields the package owns are refused by name, with the option to use instead: (.*?) \(the table", text)
    assert listed, "training.md does not list the TrainingArguments fields the package owns"
    assert set(re.findall(r"`(\w+)`", listed.group(1))) == set(OWNED_TRAINING_ARGS)
    rows = {name for row in re.findall(r"^\| (`--.*?) \|", text, re.M) for name in re.findall(r"`--(\w+)`", row)}
    assert not set(OWNED_TRAINING_ARGS) - rows, "a field the package owns has no row in the table"


def test_calibration_md_gives_tune_models_arguments_as_the_call_takes_them():
    """The arguments after data are keywords alone: the signature quoted without ``*`` read as if output_dir could be the
    third positional argument, which is a TypeError."""
    import inspect

    from bio_mrc.inference import tune_model

    text = (DOCS / "calibration.md").read_text(encoding="utf-8")
    quoted = re.search(r"`bio_mrc\.inference\.tune_model\((.*?)\)`", text).group(1).split(", ")
    parameters = inspect.signature(tune_model).parameters
    positional = [name for name, p in parameters.items() if p.kind is p.POSITIONAL_OR_KEYWORD]
    assert quoted[:len(positional) + 1] == [*positional, "*"]
    for part in quoted[len(positional) + 1:]:
        name, _, default = part.partition("=")
        assert parameters[name].kind is inspect.Parameter.KEYWORD_ONLY and repr(parameters[name].default) == default


def test_calibration_md_names_the_most_training_questions_a_fingerprint_holds():
    from bio_mrc.question_fingerprint import MAX_QUESTIONS

    assert f"more than {MAX_QUESTIONS:,} questions" in (DOCS / "calibration.md").read_text(encoding="utf-8")


def test_every_commands_model_option_says_it_takes_a_hub_id():
    """The README: every command that reads a model takes a Hugging Face hub id in place of a folder."""
    text = (DOCS.parent / "README.md").read_text(encoding="utf-8")
    assert "every command that reads a model takes a Hugging Face hub id in place of a folder" in text
    helps = {name: opts["--model"].help for name, opts in _command_options().items() if "--model" in opts}
    assert set(helps) >= {"predict", "extract", "tune", "export", "convert", "serve"}
    assert not [name for name, help_ in helps.items() if "hub id" not in help_], helps


def _load_problem(tmp_path, name: str, content: str | bytes) -> str:
    """The problem ``load_squad`` refuses a file of ``content`` with, before what it was read as and where."""
    from bio_mrc.data.squad import load_squad
    from bio_mrc.errors import DataFormatError

    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    with pytest.raises(DataFormatError) as refused:
        load_squad(str(path))
    return refused.value.problem.partition("; read as ")[0]


def _mrqa_problem(tmp_path, detected: dict, context: str = "Paris is the capital of France.") -> str:
    """The problem of an MRQA file whose one question has the ``detected`` answer, its option as the command line's."""
    import gzip

    question = {"qid": "q1", "question": "Capital of?", "detected_answers": [detected]}
    lines = "".join(json.dumps(line) + "\n" for line in [{"header": {}}, {"context": context, "qas": [question]}])
    return _load_problem(tmp_path, "d.jsonl.gz", gzip.compress(lines.encode("utf-8"))).replace("fix_offsets=True", "--fix-offsets")


def _config_problem(change: dict) -> str:
    """The line ``parse_config`` refuses a one-run config with, changed by ``change``."""
    from bio_mrc.errors import ConfigError
    from bio_mrc.harness.config import parse_config

    with pytest.raises(ConfigError) as refused:
        parse_config({"train": {"path": "t.json"}, "eval": {"path": "e.json"}, "runs": [{"name": "joint"}], **change})
    return str(refused.value)


QUOTED_PROBLEMS = {  # each case's problem, which docs/reliability.md quotes as it is said (values as JSON spells them)
    "a key misspelt": lambda tmp: _load_problem(tmp, "d.jsonl", json.dumps({"Question": "Who?", "context": "Ada."}) + "\n"),
    "a column misspelt": lambda tmp: _load_problem(tmp, "d.csv", 'question,context, id\nWho?,"Ada.",x\n'),
    "a key twice": lambda tmp: _load_problem(tmp, "d.json", '{"data": [], "data": []}'),
    "a blank answer": lambda tmp: _load_problem(tmp, "d.jsonl", json.dumps(
        {"question": "Who?", "context": "Ada wrote.", "answers": {"text": [" "], "answer_start": [3]}}) + "\n"),
    "an MRQA answer elsewhere": lambda tmp: _mrqa_problem(tmp, {"text": "France", "char_spans": [[13, 18]]}),
    "an MRQA answer absent": lambda tmp: _mrqa_problem(tmp, {"text": "france", "char_spans": [[13, 18]]},
                                                       "Paris is the capital of Spain."),
    "an MRQA answer without text": lambda tmp: _mrqa_problem(tmp, {"char_spans": [[13, 18]]}),
    "a baseline left out of a kept run": lambda tmp: _config_problem({"runs": [{"name": "span", "heads": "span"}],
                                                                       "baseline_left_out": "span/span"}),
    "a contrast of a cell with itself": lambda tmp: _config_problem({"contrasts": [["joint/span", "joint/bio"], ["joint/bio", "joint/bio"]]}),
    "run names apart in case alone": lambda tmp: _config_problem({"runs": [{"name": "span"}, {"name": "Span", "heads": "span"}]}),
    "a training argument misspelt": lambda tmp: _config_problem({"defaults": {"training_args": {"nonsense_arg": 1}}}),
}


@pytest.mark.parametrize("case", QUOTED_PROBLEMS)
def test_reliability_quotes_the_problem_as_it_is_said(case, tmp_path):
    """The page quoted values in Python's quotes (``'Question'``, ``None``) after the messages had taken JSON's."""
    problem = QUOTED_PROBLEMS[case](tmp_path)
    head = problem.partition(" (--fix-offsets relocates it there: ")[0]  # the page shortens the option's explanation
    assert f"`{head}" in RELIABILITY.read_text(encoding="utf-8"), f"docs/reliability.md does not quote {problem!r}"


def test_reliability_quotes_the_line_for_a_relative_path_without_its_data_folder(tmp_path, monkeypatch, capsys):
    """A run's relative ``train_data`` under a data folder that is not there: the run and the path as the config spells them."""
    sample = str(Path(__file__).resolve().parent / "fixtures" / "sample_squad_v1.json")
    config = {"name": "c", "train": {"path": sample}, "eval": {"path": sample},
              "runs": [{"name": "a"}, {"name": "b", "train_data": {"path": "squad-v1.1/train.json"}}]}
    monkeypatch.chdir(tmp_path)
    Path("config.json").write_text(json.dumps(config), encoding="utf-8")
    printed = _printed_error(["compare", "--config", "config.json", "--data-dir", "../shared/data", "--output-dir", "out"], capsys)
    assert f"`{printed}`" in RELIABILITY.read_text(encoding="utf-8"), f"docs/reliability.md does not quote {printed!r}"
    assert not Path("out").exists()


def _called_names() -> set[str]:
    """Every name the package's code reads (a call, an import, an attribute), its definitions and docstrings aside."""
    names: set[str] = set()
    for path in (Path(__file__).resolve().parents[1] / "bio_mrc").rglob("*.py"):
        for node in walked(path):
            if isinstance(node, ast.Name):
                names.add(node.id)
            elif isinstance(node, ast.Attribute):
                names.add(node.attr)
            elif isinstance(node, ast.ImportFrom):
                names.update(alias.name for alias in node.names)
    return names


def test_multispan_md_names_the_functions_that_weigh_data_sets_alike():
    """The section on several data sets names functions the tuning calls, not one no code reaches."""
    section = (DOCS / "multispan.md").read_text(encoding="utf-8").split("## Several data sets weigh alike")[1].split("\n## ")[0]
    named = set(re.findall(r"`([a-z_]+)`", section)) - {"data_sets"}
    assert {"tune_settings", "tune_for_model"} <= named
    assert named - _called_names() == set()


def test_pipeline_md_gives_the_answer_length_limit_the_pipeline_reads():
    """The pipeline's ``max_answer_len`` left out is the limit saved with the model (what its training answers fit, at
    least 30), as ``--max-answer-length`` is: the page said 30, which a model trained on longer answers does not use."""
    import inspect

    from bio_mrc.decoding.postprocess import DecodeConfig, with_saved_settings
    from bio_mrc.inference.pipeline import BioMrcQuestionAnsweringPipeline
    from bio_mrc.model_defaults import MAX_ANSWER_LENGTH

    text = (DOCS / "pipeline.md").read_text(encoding="utf-8")
    stated = [re.search(r"`max_answer_len=` \(tokens; [^;]*; default ([^)]*)\)", text),
              re.search(r"`max_answer_len` defaults to (.*?), not 15", text)]
    assert all(stated), "pipeline.md no longer says what max_answer_len defaults to"
    stated = [found.group(1) for found in stated]
    assert all("the limit saved with the model" in default and f"at least {MAX_ANSWER_LENGTH}" in default for default in stated), stated
    assert inspect.signature(BioMrcQuestionAnsweringPipeline.postprocess).parameters["max_answer_len"].default is None
    assert with_saved_settings(DecodeConfig(), None, 45).max_answer_length == 45
    assert with_saved_settings(DecodeConfig(), None, None).max_answer_length == MAX_ANSWER_LENGTH


def test_prediction_md_names_what_an_answers_line_adds_to_a_predictions_dict():
    """``Prediction.to_dict()`` is an answers stream line without the keys the page names: it named ``decoding`` alone,
    while the line also gives the answer's ``start`` and ``end`` (and a multi-span answer's ``answers``)."""
    from bio_mrc.inference.files import answer_record
    from bio_mrc.types import AnswerSpan, Prediction

    text = (DOCS / "prediction.md").read_text(encoding="utf-8")
    stated = re.search(r"a `Prediction`'s is a line of `predict`'s answers stream without its (.*?)\); ", text)
    assert stated, "prediction.md no longer says how to_dict() differs from an answers line"
    prediction = Prediction(id="q1", spans=[AnswerSpan(text="Ada", start=0, end=3, score=1.0)], no_answer_score=0.0)
    added = set(answer_record(prediction, "joint", multi_span=True)) - set(prediction.to_dict())
    assert set(re.findall(r"`(\w+)`", stated.group(1))) == added


def _prose_paragraphs(page: Path) -> list[str]:
    """A page's paragraphs outside code blocks, headings and tables, each on one line."""
    text = re.sub(r"^```.*?^```[^\n]*$", "", page.read_text(encoding="utf-8"), flags=re.S | re.M)
    return [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith(("#", "|", "<!--"))]


@pytest.mark.parametrize("page", [DOCS.parent / "README.md", *sorted(DOCS.glob("*.md"))], ids=lambda page: page.name)
def test_no_page_says_a_paragraph_twice(page):
    """data.md held its paragraph on answers without answer_start twice, the second an older wording of the first."""
    openings: dict[str, int] = {}
    for number, paragraph in enumerate(_prose_paragraphs(page)):
        opening = paragraph[:160]
        assert len(opening) < 160 or opening not in openings, f"{page.name} says a paragraph twice: {opening[:80]!r}…"
        openings[opening] = number


def _quoted_calls() -> list[tuple[str, str, str]]:
    """``(page, function's dotted name, its arguments)`` of each ``bio_mrc.….name(arguments)`` a page quotes in code."""
    pages = [DOCS.parent / "README.md", *sorted(DOCS.glob("*.md"))]
    return [(page.name, m.group(1), m.group(2)) for page in pages
            for m in re.finditer(r"`(bio_mrc(?:\.\w+)+)\(([^`]*?)\)`", page.read_text(encoding="utf-8"))]


def _function(dotted: str):
    import importlib

    module, _, name = dotted.rpartition(".")
    try:
        return getattr(importlib.import_module(module), name)
    except ModuleNotFoundError:  # a method: module.Class.name
        module, _, owner = module.rpartition(".")
        return getattr(getattr(importlib.import_module(module), owner), name)


def test_quoted_calls_name_the_functions_own_parameters():
    """A call a page quotes, ``bio_mrc.qa_checkpoints.span_model_from_qa_model(model, tokenizer)``, names its arguments
    as the function does, in its order: that function's first parameter is ``source``, so ``model=`` was a TypeError."""
    import inspect

    calls = _quoted_calls()
    assert len(calls) >= 10, "the pages lost their quoted calls"
    wrong = []
    for page, dotted, arguments in calls:
        parameters = inspect.signature(_function(dotted)).parameters
        call = ast.parse(f"f({arguments.replace('*, ', '').replace('...', 'None')})", mode="eval").body
        positional = [name for name, p in parameters.items() if p.kind is p.POSITIONAL_OR_KEYWORD]
        named = [(position, argument.id) for position, argument in enumerate(call.args) if isinstance(argument, ast.Name)]
        wrong += [f"{page}: {dotted}({arguments}) names {name!r} where the function has {positional[position:position + 1]}"
                  for position, name in named if positional[position:position + 1] != [name]]
        wrong += [f"{page}: {dotted}({arguments}) names {keyword.arg!r}, no parameter of it"
                  for keyword in call.keywords if keyword.arg not in parameters]
    assert not wrong, wrong
