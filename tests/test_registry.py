"""The registries: code asks them and never compares a head's, decoding's or task's name; a head, a decoding
and a task registered from outside the package (here, from this test alone) run through the model, the
forward pass, decoding, the harness's scoring and the CLI's choices. docs/layout.md walks through the same example."""

from __future__ import annotations

import ast
import json
import re
import shutil
from dataclasses import fields, replace
from pathlib import Path

import numpy as np
import pytest
import torch

import bio_mrc
from bio_mrc import registry
from bio_mrc.cli import build_parser
from bio_mrc.decoding.postprocess import DecodeConfig, decode_span
from bio_mrc.features.windows import FeatureConfig
from bio_mrc.harness.cells import decode_cell, score_cell
from bio_mrc.harness.comparison_splits import Split
from bio_mrc.heads import SpanHead
from bio_mrc.inference.forward import predict_windows
from bio_mrc.model import BioMrcForQuestionAnswering
from bio_mrc.types import Example

from .read_once import parsed_source, walked

PACKAGE = Path(bio_mrc.__file__).parent
NAMES = "span|bio|joint|multispan|multispanqa|squad"
# A comparison of a name: `x == "bio"`, `"bio" in heads`, `x in ("bio", ...)`, a task's version or metric compared.
NAME_COMPARISON = re.compile(
    rf'(==|!=)\s*"({NAMES})"|"({NAMES})"\s+(not\s+)?in\s|\bin\s+[({{]"({NAMES})"|'
    r'(\.version|\["version"\]|\.metric|\["metric"\]|\.format)\s*(==|!=)'
)
# The SQuAD file format's own "version" field is read where SQuAD files are read and scored.
FORMAT_READERS = {"registry.py", "data/squad.py", "metrics/squad_official.py"}


def test_no_code_compares_a_head_decoding_or_task_name():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.relative_to(PACKAGE).as_posix() in FORMAT_READERS:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if NAME_COMPARISON.search(line.split("#")[0]):
                found.append(f"{path.relative_to(PACKAGE)}:{number}: {line.strip()}")
    assert not found, "ask bio_mrc.registry instead of comparing names:\n" + "\n".join(found)


def test_the_grep_finds_each_kind_of_comparison():
    for line in ('if decoding == "bio":', 'if "span" in names:', 'x in ("bio", "joint")', 'split.version == "2.0"',
                 'results["eval"]["metric"] != "x"', 'if spec.format == "y":'):
        assert NAME_COMPARISON.search(line), line
    assert not NAME_COMPARISON.search('registry.decoding(decoding).decodes_tags')


# A branch on an entry's flag: a line that reads one of these attributes beside a condition's keyword. Code asks the
# entry for what to do (a function, a value) instead; registry.py is where the flags are read. The flags are every
# true-or-false field and property of an entry, the task flag the entries once had (multi_span_gold) and the SQuAD
# scorer's version, which once stood for "not multi-span" (None) and is read as a value only.
def entry_flags() -> list[str]:
    flags = {"multi_span_gold", "squad_version"}
    for entry_class in (registry.HeadEntry, registry.DecodingEntry, registry.TaskEntry):
        flags |= {f.name for f in fields(entry_class) if f.type in ("bool", bool)}
        flags |= {name for name, value in vars(entry_class).items()
                  if isinstance(value, property) and value.fget.__annotations__.get("return") in ("bool", bool)}
    return sorted(flags)


FLAGS = "|".join(entry_flags())
FLAG_READ = re.compile(rf"\.({FLAGS})\b")
CONDITION = re.compile(r"\b(if|elif|else|while|and|or|not)\b")


def test_the_flags_are_every_true_or_false_attribute_of_an_entry():
    assert {"multi_span_gold", "no_answer", "multi_span_answers", "complete_predictions", "decodes_tags",
            "uses_length_prior", "needs_tag_mask", "squad_version"} <= set(entry_flags())


def flag_branches() -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.relative_to(PACKAGE).as_posix() == "registry.py":
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("#")[0]
            if FLAG_READ.search(code) and CONDITION.search(code):
                found.append(f"{path.relative_to(PACKAGE)}:{number}: {line.strip()}")
    return found


def test_the_flag_grep_finds_a_branch_on_an_entry_flag_and_not_a_question_to_the_entry():
    for line in ("if split.kind.multi_span_gold:", "x = a if task.no_answer else b", "calibrate=not task.multi_span_gold",
                 "if entry.needs_tag_mask and tagged is None:", "multi = args.multi_span or task.multi_span_answers",
                 "if registry.decoding(d).decodes_tags:"):
        assert FLAG_READ.search(line) and CONDITION.search(line), line
    for line in ("entry.decode(outputs, examples, config)", "with_na_probs=split.kind.no_answer,"):
        assert not (FLAG_READ.search(line) and CONDITION.search(line)), line


def test_no_code_branches_on_a_task_head_or_decoding_flag():
    found = flag_branches()
    assert not found, "ask bio_mrc.registry's entry instead of branching on its flag:\n" + "\n".join(found)


# The same branch with the flag read on one line and tested on another: a name assigned from an expression that reads
# an entry's flag (``v2 = task.no_answer``, ``tagging = any(head.needs_tag_mask for ...)``), then tested as a condition.
# A flag given to a call is passed on (the callee decides what it means), save to these, which combine flags.
FLAG_COMBINERS = {"any", "all", "bool"}


FLAG_NAMES = set(entry_flags())


def _reads_a_flag(node: ast.AST) -> bool:
    if isinstance(node, ast.Attribute) and node.attr in FLAG_NAMES:
        return True
    if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) and node.func.id in FLAG_COMBINERS):
        return _reads_a_flag(node.func)
    return any(_reads_a_flag(child) for child in ast.iter_child_nodes(node))


SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def _scopes(tree: ast.AST) -> list[list[ast.AST]]:
    """The nodes of the module and of each function, lambda and class in it, those of the scopes defined inside one left
    to their own (the inner scope's own node stays in the outer's), in one walk of the tree."""
    module: list[ast.AST] = []
    scopes, todo = [module], [(child, module) for child in ast.iter_child_nodes(tree)]
    while todo:
        node, nodes = todo.pop()
        nodes.append(node)
        if isinstance(node, SCOPES):
            nodes = []
            scopes.append(nodes)
        todo += [(child, nodes) for child in ast.iter_child_nodes(node)]
    return scopes


def _flag_names(nodes: list[ast.AST]) -> set[str]:
    """The names a scope's nodes assign from an expression reading an entry's flag (a tuple's items paired where they can be)."""
    names = set()
    for node in nodes:
        if isinstance(node, ast.Assign):
            pairs = [(target, node.value) for target in node.targets]
        elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
            pairs = [(node.target, node.value)]
        else:
            continue
        for target, value in pairs:
            if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts):
                pairs += list(zip(target.elts, value.elts))
            elif _reads_a_flag(value):
                names |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
    return names


def _conditions(nodes: list[ast.AST]) -> list[ast.AST]:
    """Every expression a scope's nodes test: of ``if``, ``while``, ``x if c else y``, a comprehension's ``if``,
    ``and``/``or``/``not``."""
    tests = []
    for node in nodes:
        if isinstance(node, (ast.If, ast.While, ast.IfExp)):
            tests.append(node.test)
        elif isinstance(node, ast.comprehension):
            tests += node.ifs
        elif isinstance(node, ast.BoolOp):
            tests += node.values
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            tests.append(node.operand)
    return tests


def flag_variable_branches(source: str, where: str = "") -> list[str]:
    """Each line of ``source`` whose condition tests a name assigned from an entry's flag in the same function."""
    if not any(name in source for name in FLAG_NAMES):
        return []  # a source that spells no flag reads none: its scopes are not walked
    found = set()
    for nodes in _scopes(parsed_source(source)):
        flagged = _flag_names(nodes)
        for test in _conditions(nodes) if flagged else ():
            found |= {(n.lineno, n.id) for n in ast.walk(test) if isinstance(n, ast.Name) and n.id in flagged}
    lines = source.splitlines()
    return [f"{where}:{line}: {lines[line - 1].strip()} ({name})" for line, name in sorted(found)]


def test_the_flag_variable_check_finds_a_flag_tested_through_a_name():
    flagged = [
        "def f(task):\n    v2, metrics = task.no_answer, list(task.metrics)\n    return [1] if v2 else []",
        "def f(names):\n    tagging = any(registry.head(n).needs_tag_mask for n in names)\n    if tagging:\n        return 1",
        "def f(c, heads):\n    only = all(registry.head(n).needs_tag_mask for n in heads)\n    return 1 if only and c.x else None",
        "def f(e):\n    multi: bool = e.multi_span_answers\n    return [x for x in e.y if not multi]",
        "def f(e):\n    if (tags := e.decodes_tags) or e.z:\n        return tags",
    ]
    for source in flagged:
        assert flag_variable_branches(source), source
    unflagged = [
        "def f(task):\n    v2 = task.no_answer\n    return g(tune=v2)",  # a value passed on: the callee decides
        "def f(task):\n    tuned = g(tune=task.no_answer)\n    if tuned:\n        return 1",  # what a call given the flag returned
        "def f(task):\n    subsets = task.subset_metrics()\n    return [1] if subsets else []",  # asked of the entry
        "def f(task):\n    metrics = list(task.metrics)\n    if metrics:\n        return 1",  # no flag
        "def f(task):\n    v2 = task.no_answer\n\ndef g(v2):\n    return 1 if v2 else 0",  # another function's name
    ]
    for source in unflagged:
        assert not flag_variable_branches(source), source


def test_no_code_branches_on_a_flag_through_a_variable():
    found = [branch for path in sorted(PACKAGE.rglob("*.py")) if path.relative_to(PACKAGE).as_posix() != "registry.py"
             for branch in flag_variable_branches(path.read_text(encoding="utf-8"), str(path.relative_to(PACKAGE)))]
    assert not found, "ask bio_mrc.registry's entry instead of branching on its flag through a variable:\n" + "\n".join(found)


def code_strings(path: Path) -> list[tuple[int, str]]:
    """The string constants of a module's code (its docstrings left out), with their lines."""
    nodes = walked(path)
    docstrings = {id(node.body[0].value) for node in nodes
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body
                  and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    return [(node.lineno, node.value) for node in nodes
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings]


def test_the_default_heads_are_spelled_once():
    """A model config without ``heads`` means model_defaults.HEADS wherever it is read; no module spells it again."""
    from bio_mrc import model_defaults

    found = [f"{path.relative_to(PACKAGE)}:{line}" for path in sorted(PACKAGE.rglob("*.py")) if path.name != "model_defaults.py"
             for line, text in code_strings(path) if text == model_defaults.HEADS]
    assert not found, "use bio_mrc.model_defaults.HEADS:\n" + "\n".join(found)


def test_the_package_tables_say_what_the_code_used_to_spell_out():
    assert registry.head_choices() == ("span", "bio", "span+bio")
    assert registry.decodings_for("span+bio") == ["span", "bio", "joint"] and registry.decodings_for("bio") == ["bio"]
    assert registry.length_prior_decodings() == ("bio", "joint")
    assert [registry.decoding(d).threshold_key for d in ("span", "bio", "joint")] == ["span", "bio/ratio", "joint"]
    assert registry.preferred_decoding(["span", "bio", "joint"]) == "joint"
    assert registry.preferred_decoding(["span", "bio"]) == "span"
    assert registry.preferred_decoding(["bio"]) == "bio"
    assert registry.head_outputs(["bio", "span"]) == ["start_logits", "end_logits", "bio_logits"]
    assert registry.task_for("squad", True).name == "squad-v2.0" and registry.task_for("squad", False).name == "squad-v1.1"
    assert registry.task_for("multispanqa", False).multi_span_answers
    v2, v1 = registry.task("squad-v2.0"), registry.task("squad-v1.1")
    assert v2.subset_metrics() == ["HasAns_em", "HasAns_f1", "NoAns_em", "NoAns_f1"] and v2.threshold_columns() == ("threshold",)
    assert v1.subset_metrics() == [] and v1.threshold_columns() == () and v1.abstaining_scores([]) is None
    assert [v2.metric_title(m) for m in v2.subset_metrics()] == ["HasAns EM", "HasAns F1", "NoAns EM", "NoAns F1"]
    assert registry.tags_tokens(["span", "bio"]) and not registry.tags_tokens(["span"])
    assert registry.tags_alone(["bio"]) and not registry.tags_alone(["span", "bio"])
    with pytest.raises(ValueError, match="heads must be one of"):
        registry.head_names("span+span")


HOOKS = ("build", "function", "merge_tags", "decode_tags", "rank_windows", "load", "gold", "score", "aggregate", "official", "right", "folds")


def test_every_function_an_entry_names_exists():
    assert {"span", "bio"} <= set(registry.HEADS) and {"span", "bio", "joint"} <= set(registry.DECODINGS)
    assert {"squad-v1.1", "squad-v2.0", "multispanqa", "quoref", "answer-parts"} <= set(registry.TASKS)
    for entry in [*registry.HEADS.values(), *registry.DECODINGS.values(), *registry.TASKS.values()]:
        for name in HOOKS:
            if isinstance(getattr(entry, name, None), str):
                assert callable(registry.resolve(getattr(entry, name))), (entry.name, name)
        for step in getattr(entry, "tuning_steps", ()):
            assert callable(registry.resolve(step)), (entry.name, step)
    for rule in [*registry.SPAN_COUNT_RULES.values(), *registry.NBEST_SOURCES.values(), *registry.SINGLE_NBEST_SOURCES.values()]:
        assert callable(registry.resolve(rule)), rule
    from bio_mrc.harness.summary import QUESTION_GROUPS, SUMMARIES

    for entry in registry.TASKS.values():  # the summary and the groups are named: the harness's tables hold them
        assert entry.summary in SUMMARIES and (entry.groups is None or entry.groups in QUESTION_GROUPS), entry.name


def test_a_tag_sequence_decoding_names_how_to_merge_and_decode_its_tags():
    for entry in registry.DECODINGS.values():
        assert (entry.merge_tags is not None) == (entry.decode_tags is not None) == entry.decodes_tags, entry.name
    assert registry.tag_decoding().name == "bio"


def test_each_head_entry_names_what_its_head_class_takes_and_returns():
    from bio_mrc.model import BioMrcConfig

    config = BioMrcConfig(encoder={"model_type": "bert", "hidden_size": 8})
    assert {"span", "bio"} <= set(registry.HEADS)
    for entry in registry.HEADS.values():
        head = registry.resolve(entry.build)(config, 8)
        logits = head(torch.randn(2, 5, 8))
        assert list(entry.named_outputs(logits)) == list(entry.outputs), entry.name
        assert len(entry.output_dims) == len(entry.outputs) and isinstance(entry.weight(config), float)
        # declared once: the head class repeats none of its entry's names
        assert not hasattr(head, "output_names") and not hasattr(head, "label_names")


# --- a toy head, decoding and task, registered from this test alone -------------------------------------------


def build_toy_head(config, hidden_size: int) -> SpanHead:
    return SpanHead(hidden_size, config.head_dropout)


def shortest_answer(outputs, examples, config: DecodeConfig):
    """A toy decoding: the span head's best one-token answers."""
    return decode_span(outputs, examples, replace(config, max_answer_length=1))


def load_toy_lines(path: Path) -> list[Example]:
    """A toy format: JSON Lines of ``{"id", "question", "context", "answer"}`` (the answer's first occurrence)."""
    examples = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        start = record["context"].index(record["answer"])
        examples.append(Example(record["id"], record["question"], record["context"], (((start, start + len(record["answer"])),),)))
    return examples


TOY_HEAD = registry.HeadEntry(
    name="pointer", attribute="pointer_head", build=build_toy_head,
    targets={"start_positions": registry.POSITION_TARGET, "end_positions": registry.POSITION_TARGET},
    build_targets="bio_mrc.features.targets:span_targets", outputs=("start_logits", "end_logits"), output_dims=((), ()),
    pad=float("-inf"), loss_weight="span_loss_weight",
    needs_tag_mask=False, description="a toy pointer head")
TOY_DECODING = registry.DecodingEntry(
    name="shortest", heads=frozenset({"pointer"}), function=shortest_answer, uses_length_prior=False,
    threshold_key="shortest", multi_span=registry.NBEST_SPANS, auto_rank=5, description="one-token answers")
def lead_word(text: str) -> str:
    return text.split()[0].lower() if text.split() else ""


def lead_word_scores(task, gold, answers, ids):
    """A toy scorer: per question, 100 where the answer's first word is a gold answer's first word, and whether it answered."""
    return {"lead_word": np.array([100.0 * any(lead_word(answers[q]) == lead_word(g) for g in gold[q]) for q in ids]),
            "answered": np.array([100.0 * bool(answers[q].strip()) for q in ids])}


TOY_TASK = registry.TaskEntry(
    name="toy-lines", format="toy-lines", scorer="lead-word", load=load_toy_lines, gold="bio_mrc.data.squad:gold_texts",
    no_answer=False, score=lead_word_scores, metrics=("lead_word", "answered"),
    metric_titles={"lead_word": "lead word", "answered": "answered"}, statistic="lead_word",
    statistic_title="lead-word match", title="toy lines, lead-word match")


@pytest.fixture
def toy_entries(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setitem(registry.HEADS, TOY_HEAD.name, TOY_HEAD)
    monkeypatch.setitem(registry.DECODINGS, TOY_DECODING.name, TOY_DECODING)
    monkeypatch.setitem(registry.TASKS, TOY_TASK.name, TOY_TASK)


def test_a_toy_head_decoding_and_task_run_from_their_registration_alone(toy_entries, tiny_encoder_dir, tiny_tokenizer, tmp_path):
    lines = [{"id": f"q{i}", "question": "Who met Bob?", "context": f"Ann {i} met Bob in Paris.", "answer": "Ann"} for i in range(3)]
    (tmp_path / "toy.jsonl").write_text("\n".join(json.dumps(line) for line in lines), encoding="utf-8")
    entry = registry.task_for("toy-lines", False)
    split = Split(registry.resolve(entry.load)(tmp_path / "toy.jsonl"), entry.name, "toy questions")
    assert split.gold == {f"q{i}": ["Ann"] for i in range(3)}

    torch.manual_seed(0)
    model = BioMrcForQuestionAnswering.from_encoder(str(tiny_encoder_dir), heads="pointer")
    assert list(model.heads) == ["pointer"] and model.pointer_head is not None and model.span_head is None
    assert all(name.startswith(("encoder.", "pointer_head.")) for name in model.state_dict())
    batch = tiny_tokenizer(["who met bob"], ["ann met bob"], return_tensors="pt")
    out = model(**batch, start_positions=torch.tensor([1]), end_positions=torch.tensor([1]))
    assert torch.isfinite(out.loss) and out.start_logits.shape == batch["input_ids"].shape
    assert out.head_losses["pointer"] == out.loss  # its loss weight (span_loss_weight) is 1

    assert registry.decodings_for(model.config.heads) == ["shortest"]
    outputs = predict_windows(model, tiny_tokenizer, split.examples, FeatureConfig(64, 16, 16), progress=False)
    decoded = decode_cell(outputs, split, "shortest", DecodeConfig(), threshold=None)
    assert all(len(p.answer.split()) <= 1 for p in decoded.predictions)
    cell = score_cell(split, decoded)
    assert "f1" not in cell and cell["answers"] == [p.answer for p in decoded.predictions]
    assert cell["scores"]["lead_word"] == [100.0 * (lead_word(p.answer) == "ann") for p in decoded.predictions]


def test_a_task_loader_that_fails_is_one_line_naming_the_task_and_the_file(toy_entries, tmp_path, capsys, monkeypatch):
    """The toy loader's KeyError on a line without an answer ended evaluate (and tune, predict, compare) in a traceback."""
    from bio_mrc.cli import main
    from bio_mrc.errors import DataFormatError

    data, preds = tmp_path / "toy.jsonl", tmp_path / "preds.json"
    data.write_text(json.dumps({"id": "q1", "question": "Who?", "context": "Ann met Bob."}), encoding="utf-8")
    preds.write_text(json.dumps({"q1": "Ann"}), encoding="utf-8")
    assert main(["evaluate", "--metric", "lead-word", "--data", str(data), "--predictions", str(preds)]) == 2
    assert capsys.readouterr().err == f"error: the loader of task 'toy-lines' could not read it: KeyError: 'answer' (in {data})\n"

    def refuses(path):
        raise DataFormatError("line 1 lacks its answer", "q1", str(path))

    monkeypatch.setitem(registry.TASKS, TOY_TASK.name, replace(TOY_TASK, load=refuses))
    with pytest.raises(DataFormatError) as info:  # the loader's own line, as it said it
        registry.task("toy-lines").load_questions(data)
    assert str(info.value) == f"line 1 lacks its answer (in {data}, record 'q1')"


def test_the_cli_offers_what_the_registry_holds(toy_entries):
    parser = build_parser()
    predict = parser.parse_args(["predict", "--model", "m", "--data", "d.json", "--decoding", "shortest", "--output", "o.json"])
    assert predict.decoding == ["shortest"]


# --- a task with a scorer of its own, through compare, evaluate --metric, tune and the report ----------------------

NAMES = ("Ann", "Bob", "Cleo", "Dan", "Eve", "Finn", "Gus", "Hana", "Ivo", "Jo", "Kai", "Lea", "Max", "Nia", "Oto", "Pia")


def write_toy_lines(path: Path, start: int, count: int) -> Path:
    lines = []
    for k in range(start, start + count):
        name, other = NAMES[k % len(NAMES)], NAMES[(k + 5) % len(NAMES)]
        lines.append({"id": f"t{k}", "question": f"Who met {other}?", "context": f"{name} met {other} in town {k} at noon.",
                      "answer": name})
    path.write_text("\n".join(json.dumps(line) for line in lines), encoding="utf-8")
    return path


def files_naming(*words: str) -> list[str]:
    """The package's files that name any of ``words``: what had to know about a task registered from outside."""
    return [path.relative_to(PACKAGE).as_posix() for path in sorted(PACKAGE.rglob("*.py"))
            if any(word in path.read_text(encoding="utf-8") for word in words)]


@pytest.fixture
def toy_comparison(toy_entries, tiny_encoder_dir, tmp_path):
    from bio_mrc.harness.compare import compare
    from bio_mrc.harness.config import parse_config

    data = tmp_path / "data"
    data.mkdir()
    for name, start, count in (("train", 0, 12), ("tune", 12, 4), ("eval", 16, 6)):
        write_toy_lines(data / f"{name}.jsonl", start, count)
    raw = {
        "name": "toy", "train": {"path": "train.jsonl", "format": "toy-lines"}, "tune": {"path": "tune.jsonl", "format": "toy-lines"},
        "eval": {"path": "eval.jsonl", "format": "toy-lines"},
        "defaults": {"encoder": str(tiny_encoder_dir), "max_seq_length": 48, "doc_stride": 16, "max_query_length": 12,
                     "epochs": 1, "batch_size": 4, "learning_rate": 1e-3},
        "runs": [{"name": "joint", "heads": "span+bio", "bio_targets": "one-hot"}], "seeds": [1],
    }
    results, summary = compare(parse_config(raw), data, tmp_path / "out", progress=False)
    return data, tmp_path / "out", results, summary


def test_a_task_with_its_own_scorer_runs_from_its_registration_alone(toy_comparison, capsys):
    from bio_mrc.cli import main
    from bio_mrc.harness.saved_report import SavedReport

    data, out, results, summary = toy_comparison
    assert results.eval["task"] == "toy-lines" and {c.decoding for c in results.cells} == {"span", "bio", "joint"}
    gold = {f"t{k}": NAMES[k % len(NAMES)] for k in range(16, 22)}
    for cell in results.cells:  # the cells hold the toy's own columns, and its answers
        assert cell.f1 is None and cell.em is None and cell.counts is None and cell.calibration is None
        expected = [100.0 * (lead_word(answer) == lead_word(gold[qid])) for qid, answer in zip(gold, cell.answers)]
        assert cell.column("lead_word").tolist() == expected
    rows = {row.cell: row for row in summary.rows}
    for cell in results.cells:
        assert rows[cell.key].scores["lead_word"] == [pytest.approx(float(np.mean(cell.column("lead_word"))))]
        assert rows[cell.key].scores["answered"] == [pytest.approx(float(np.mean(cell.column("answered"))))]
    assert summary.breakdowns == {} and summary.selective is None

    markdown = (out / "report.md").read_text(encoding="utf-8")
    assert "| run | decoding | lead word | answered | BIO β |" in markdown and "toy lines, lead-word match" in markdown
    saved = SavedReport.from_json(json.loads((out / "report.json").read_text(encoding="utf-8")), "report.json")
    assert [c.scores["lead_word"].tolist() for c in saved.results.cells] == [c.column("lead_word").tolist() for c in results.cells]
    assert saved.summary.rows == summary.rows

    # evaluate --metric: the toy's metrics of a prediction file the comparison wrote
    cell = results.cells[0]
    predictions = out / "predictions" / f"{cell.run}-seed{cell.seed}-{cell.decoding}.json"
    capsys.readouterr()
    assert main(["evaluate", "--metric", "lead-word", "--data", str(data / "eval.jsonl"), "--predictions", str(predictions)]) == 0
    metrics = json.loads(capsys.readouterr().out)
    assert metrics == {"lead_word": pytest.approx(float(np.mean(cell.column("lead_word")))),
                       "answered": pytest.approx(float(np.mean(cell.column("answered"))))}

    # tune --metric: the BIO length prior by the toy's statistic, no calibrator (the task has no notion of a right answer)
    tuned = out.parent / "tuned"
    assert main(["tune", "--metric", "lead-word", "--model", cell.model_dir, "--data", str(data / "tune.jsonl"),
                 "--output-dir", str(tuned)]) == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert report["bio_length_prior"]["questions"] == 4 and "calibration" not in report
    assert "calibrators: none fitted" in captured.err

    assert files_naming("toy-lines", "toy lines", "lead-word", "lead_word", "lead word") == []  # no package file had to know about it


def no_spans(merged, examples, config: DecodeConfig):
    """A toy tag-sequence decoding: the BIO decoding's predictions with every span dropped."""
    from bio_mrc.decoding.postprocess import decode_merged_tags

    return [replace(p, spans=[]) for p in decode_merged_tags(merged, examples, config)]


SILENT = registry.DecodingEntry(
    name="silent", heads=frozenset({"bio"}), function=lambda outputs, examples, config: no_spans(
        registry.resolve("bio_mrc.decoding.postprocess:merge_tag_log_probs")(outputs, len(examples)), examples, config),
    uses_length_prior=False, threshold_key="silent", multi_span=registry.TAG_SEQUENCE, auto_rank=9, description="no answers",
    merge_tags="bio_mrc.decoding.postprocess:merge_tag_log_probs", decode_tags=no_spans)


def test_a_second_tag_sequence_decoding_is_decoded_and_tag_scored_by_its_own_entry(monkeypatch, tiny_encoder_dir, tiny_tokenizer):
    from bio_mrc.inference.tuning import all_multi_span_candidates

    monkeypatch.setitem(registry.DECODINGS, SILENT.name, SILENT)
    examples = [Example(f"q{i}", "Who met Bob?", f"Ann {i} met Bob in Paris.", (((0, 3),),)) for i in range(3)]
    torch.manual_seed(0)
    model = BioMrcForQuestionAnswering.from_encoder(str(tiny_encoder_dir), heads="span+bio")
    outputs = predict_windows(model, tiny_tokenizer, examples, FeatureConfig(64, 16, 16), progress=False)
    bio = decode_cell(outputs, Split(examples, "squad-v1.1", "q"), "bio", DecodeConfig(), threshold=None)
    assert all(p.spans for p in bio.predictions)  # the BIO rule answers every question
    for split in (Split(examples, "squad-v1.1", "q"), Split(examples, "multispanqa", "q")):
        silent = decode_cell(outputs, split, "silent", DecodeConfig(), threshold=None)
        assert [p.spans for p in silent.predictions] == [[], [], []]
        assert silent.predicted_tags == [["O"] * len(tags) for tags in silent.gold_tags]  # its own tags, not BIO's
    assert [p.spans for p in all_multi_span_candidates(outputs, examples, "silent", DecodeConfig())] == [[], [], []]


def test_a_task_whose_questions_may_have_no_answer_reports_its_own_metrics_by_subset():
    task = replace(TOY_TASK, no_answer=True)
    assert task.question_subsets() == {"HasAns": True, "NoAns": False} and task.threshold_columns() == ("threshold",)
    assert task.subset_metrics() == ["HasAns_lead_word", "HasAns_answered", "NoAns_lead_word", "NoAns_answered"]


def test_a_head_scored_on_tagged_tokens_refuses_labels_without_a_tag_mask(tiny_encoder_dir, tiny_tokenizer):
    model = BioMrcForQuestionAnswering.from_encoder(str(tiny_encoder_dir), heads="bio")
    batch = tiny_tokenizer(["who met bob"], ["ann met bob"], return_tensors="pt")
    targets = torch.zeros(batch["input_ids"].shape + (3,))
    with pytest.raises(ValueError, match=r"bio_targets need a tag_mask \(or paragraph_mask\)"):
        model(**batch, bio_targets=targets)
    registry.head("span").check_tag_mask(None)  # the span head's loss reads no tag mask


def test_calibrators_are_fitted_against_the_task_s_own_notion_of_a_right_answer(tiny_encoder_dir, tiny_tokenizer):
    from bio_mrc.inference.tuning import fit_calibrators

    asked = []

    def every_other_right(task, predictions, gold):
        asked.append((task.name, sorted(gold)))
        return np.arange(len(predictions)) % 2.0

    examples = [Example(f"q{i}", "Who met Bob?", f"Ann {i} met Bob in Paris.", (((0, 3),),)) for i in range(4)]
    torch.manual_seed(0)
    model = BioMrcForQuestionAnswering.from_encoder(str(tiny_encoder_dir), heads="span")
    outputs = predict_windows(model, tiny_tokenizer, examples, FeatureConfig(64, 16, 16), progress=False)
    fitted = fit_calibrators(outputs, examples, ["span"], DecodeConfig(), task=replace(TOY_TASK, right=every_other_right))
    assert asked == [("toy-lines", ["q0", "q1", "q2", "q3"])] and fitted["span"]["questions"] == 4


def test_a_multi_span_answer_text_has_one_line_per_span():
    # a span across a line break of the context ("New\nYork") is one line, so a report counts 2 spans, not 3
    from bio_mrc.types import AnswerSpan, Prediction

    prediction = Prediction("q", [AnswerSpan("New\nYork", 0, 8, 1.0), AnswerSpan("LA", 10, 12, 0.5)])
    text = registry.task("multispanqa").answer_text(prediction)
    assert text == "LA\nNew York" and len(text.split("\n")) == 2


def test_a_name_registered_already_is_refused_not_replaced(monkeypatch):
    for table in ("HEADS", "DECODINGS", "TASKS"):  # whatever happens here leaves the package's tables as they were
        monkeypatch.setattr(registry, table, dict(getattr(registry, table)))
    span_decoding, span_head, squad = registry.decoding("span"), registry.head("span"), registry.task("squad-v1.1")
    with pytest.raises(ValueError, match=r"a decoding named 'span' is registered already \(BERT's n-best start/end spans\); "
                                         "give yours another name"):
        registry.register_decoding(replace(span_decoding, description="my span decoding", auto_rank=-1))
    with pytest.raises(ValueError, match="a head named 'span' is registered already"):
        registry.register_head(replace(span_head, attribute="my_head"))
    with pytest.raises(ValueError, match=r"a task named 'squad-v1.1' is registered already \(SQuAD v1.1 official metrics\)"):
        registry.register_task(replace(squad, no_answer=True))
    assert registry.decoding("span") is span_decoding and registry.head("span") is span_head and registry.task("squad-v1.1") is squad
    assert registry.register_decoding(span_decoding) is span_decoding  # the same entry again: no change
    with pytest.raises(ValueError, match="a decoding cannot be named 'auto'"):
        registry.register_decoding(replace(TOY_DECODING, name="auto"))
    assert "auto" not in registry.DECODINGS
    registry.register_decoding(TOY_DECODING)  # a new name is taken
    assert registry.decoding_names() == ("span", "bio", "joint", "shortest")
    again = replace(TOY_DECODING, description="the shortest span, its cell run again")  # a notebook cell run again
    with pytest.raises(ValueError, match="pass replace=True to put yours in its place"):
        registry.register_decoding(again)
    assert registry.register_decoding(again, replace=True) is again and registry.decoding("shortest") is again



def test_a_malformed_entry_is_refused_at_registration_in_one_line(monkeypatch, tiny_encoder_dir):
    for table in ("HEADS", "DECODINGS", "TASKS"):
        monkeypatch.setattr(registry, table, dict(getattr(registry, table)))
    span_decoding = registry.decoding("span")
    # each was taken, and failed later far from its cause: a KeyError decoding, a TypeError offering decodings
    with pytest.raises(ValueError, match=r"^decoding 'two': multi_span must be one of \('tag sequence', 'n-best spans', "):
        registry.register_decoding(replace(span_decoding, name="two", multi_span="two spans"))
    with pytest.raises(ValueError, match=r"^decoding 'two': heads must be a frozenset of head names, got 'span'$"):
        registry.register_decoding(replace(span_decoding, name="two", heads="span"))
    # merged rows without a decoder of them ended in TypeError: 'NoneType' object is not callable when tuned or compared
    bio_decoding = registry.decoding("bio")
    with pytest.raises(ValueError, match=r"^decoding 'two': names merge_tags without decode_tags; a tag-sequence decoding "
                                         r"names both \(its windows merged, then decoded\), any other neither$"):
        registry.register_decoding(replace(bio_decoding, name="two", decode_tags=None))
    with pytest.raises(ValueError, match=r"^decoding 'two': names decode_tags without merge_tags; "):
        registry.register_decoding(replace(bio_decoding, name="two", merge_tags=None))
    with pytest.raises(TypeError, match=r"^register a bio_mrc.registry.DecodingEntry, got dict$"):
        registry.register_decoding({"name": "two"})
    with pytest.raises(TypeError, match=r"^register a bio_mrc.registry.TaskEntry, got HeadEntry$"):
        registry.register_task(TOY_HEAD)
    # a head sharing the span head's attribute would unset it (None) in every model that lacks the new head
    with pytest.raises(ValueError, match=r"^head 'pointer': its attribute 'span_head' holds the 'span' head already; "):
        registry.register_head(replace(TOY_HEAD, attribute="span_head"))
    with pytest.raises(ValueError, match=r"^head 'pointer': its attribute 'pointer head' is no Python identifier; "):
        registry.register_head(replace(TOY_HEAD, attribute="pointer head"))
    assert list(registry.HEADS) == ["span", "bio"] and registry.decoding_names() == ("span", "bio", "joint")
    # the model's own attribute: it replaced the encoder of every model (None), refused when a model is built
    registry.register_head(replace(TOY_HEAD, attribute="encoder"))
    with pytest.raises(ValueError, match=r"^head 'pointer': its attribute 'encoder' is the model's own; "):
        BioMrcForQuestionAnswering.from_encoder(str(tiny_encoder_dir), heads="span")



def test_two_heads_naming_the_same_logits_are_refused_together(toy_entries, monkeypatch):
    from bio_mrc import model

    # the toy pointer head names its logits as the span head does: a model of both held only the pointer's
    assert registry.head_names("pointer") == ["pointer"] and registry.head_names("bio+span") == ["span", "bio"]
    with pytest.raises(ValueError, match=r'^heads "span\+pointer" name the same logits '
                                         r"\['end_logits', 'start_logits'\]: "
                                         "a model carries one head of each output name$"):
        registry.head_names("span+pointer")
    # refused before its encoder is built (the default encoder's dozen layers drawn at random for nothing)
    monkeypatch.setattr(model, "_encoder_from_config", lambda config: pytest.fail("the encoder was built"))
    with pytest.raises(ValueError, match="name the same logits"):
        BioMrcForQuestionAnswering(registry.resolve("bio_mrc.model:BioMrcConfig")(heads="span+pointer"))
    # nor are they offered as a choice (train --heads): every choice is one head_names takes
    assert registry.head_choices() == ("span", "bio", "pointer", "span+bio", "bio+pointer")
    assert all(registry.head_names(choice) for choice in registry.head_choices())


def test_a_head_that_is_not_registered_is_named_as_such(trained_dir, tmp_path):
    from bio_mrc.errors import ModelFormatError
    from bio_mrc.inference import TrainedModel

    model = tmp_path / "model"
    shutil.copytree(trained_dir, model)
    config = json.loads((model / "config.json").read_text(encoding="utf-8"))
    (model / "config.json").write_text(json.dumps({**config, "heads": "span+pointer"}), encoding="utf-8")  # saved with a plug-in head
    with pytest.raises(ModelFormatError, match=r'got "span\+pointer": no head named "pointer" is registered '
                                               r"\(a head of your own: install the package whose bio_mrc.plugins entry point "
                                               r"registers it, or import the code that calls bio_mrc.registry.register_head "
                                               r"first\)"):
        TrainedModel.load(model)


def test_predict_reads_the_questions_of_a_task_with_its_own_loader(toy_entries, trained_dir, tmp_path):
    from bio_mrc.cli import main

    data = write_toy_lines(tmp_path / "toy.jsonl", 0, 4)
    assert main(["predict", "--model", str(trained_dir), "--data", str(data), "--format", "toy-lines", "--limit", "3",
                 "--decoding", "span", "--output", str(tmp_path / "out" / "preds.json")]) == 0
    predictions = json.loads((tmp_path / "out" / "preds.json").read_text(encoding="utf-8"))
    assert sorted(predictions) == ["t0", "t1", "t2"] and all(isinstance(answer, str) for answer in predictions.values())


def test_a_task_of_its_own_is_scored_during_training_by_its_own_metrics(tiny_encoder_dir, tiny_tokenizer):
    from bio_mrc.errors import ConfigError
    from bio_mrc.inference import TrainingEvaluator

    examples = [Example(f"q{i}", "Who met Bob?", f"Ann {i} met Bob in Paris.", (((0, 3),),)) for i in range(3)]
    torch.manual_seed(0)
    model = BioMrcForQuestionAnswering.from_encoder(str(tiny_encoder_dir), heads="span")
    model.config.max_seq_length, model.config.doc_stride, model.config.max_query_length = 48, 16, 12
    evaluator = TrainingEvaluator(examples, task=TOY_TASK)  # its entry names no training_scores: its metrics are logged
    assert evaluator.metric_names("span") == ["span_lead_word", "span_answered"]
    scores = evaluator(model, tiny_tokenizer)
    assert sorted(scores) == ["span_answered", "span_lead_word"]
    assert scores["span_answered"] == 100.0  # every question has an answer, so one is always given
    assert scores["span_lead_word"] in (0.0, 100 / 3, 200 / 3, 100.0)
    with pytest.raises(ConfigError, match=r"task 'toy-lines': its training score 'f1' reads \['f1'\], which its official metrics "
                                          r"lack \(they are \['answered', 'lead_word'\]\)"):
        TrainingEvaluator(examples, task=replace(TOY_TASK, training_scores={"f1": ("f1",)}))(model, tiny_tokenizer)
