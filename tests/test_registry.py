"""The registries: code asks them and never compares a head's, decoding's or task's name; a head, a decoding
and a task registered from outside the package (here, from this test alone) run through the model, the
forward pass, decoding, the harness's scoring and the CLI's choices. docs/layout.md walks through the same example."""

from __future__ import annotations

import json
import re
from dataclasses import replace
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
# entry for what to do (a function, a value) instead; registry.py is where the flags are read.
FLAGS = "multi_span_gold|no_answer|squad_version|decodes_tags|uses_length_prior|needs_tag_mask"
FLAG_READ = re.compile(rf"\.({FLAGS})\b")
CONDITION = re.compile(r"\b(if|elif|else|while|and|or|not)\b")
FLAG_BRANCHES_TODAY = 29  # lower it as branches go; the test below turns from xfail to pass at 0


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
                 "if entry.needs_tag_mask and tagged is None:"):
        assert FLAG_READ.search(line) and CONDITION.search(line), line
    for line in ("entry.decode(outputs, examples, config)", "with_na_probs=split.kind.no_answer,"):
        assert not (FLAG_READ.search(line) and CONDITION.search(line)), line


def test_no_new_branch_on_a_task_head_or_decoding_flag():
    found = flag_branches()
    assert len(found) <= FLAG_BRANCHES_TODAY, (
        f"{len(found)} branches on registry flags, {FLAG_BRANCHES_TODAY} before: ask the entry instead of branching "
        "on its flag (or lower FLAG_BRANCHES_TODAY when one goes):\n" + "\n".join(found))


@pytest.mark.xfail(strict=True, reason=f"{FLAG_BRANCHES_TODAY} branches on task, head and decoding flags remain outside "
                   "registry.py (cli.py, harness/, inference/, model.py, model_card.py)")
def test_no_code_branches_on_a_task_head_or_decoding_flag():
    found = flag_branches()
    assert not found, "ask bio_mrc.registry's entry instead of branching on its flag:\n" + "\n".join(found)


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
    assert registry.task_for("multispanqa", False).multi_span_gold
    with pytest.raises(ValueError, match="heads must be one of"):
        registry.head_names("span+span")


def test_every_function_an_entry_names_exists():
    for entry in [*registry.HEADS.values(), *registry.DECODINGS.values(), *registry.TASKS.values()]:
        for name in ("build", "function", "load", "gold"):
            if isinstance(getattr(entry, name, None), str):
                assert callable(registry.resolve(getattr(entry, name))), (entry.name, name)


def test_each_head_entry_names_what_its_head_class_takes_and_returns():
    from bio_mrc.model import BioMrcConfig

    config = BioMrcConfig(encoder={"model_type": "bert", "hidden_size": 8})
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
TOY_TASK = registry.TaskEntry(
    name="toy-lines", format="toy-lines", scorer="squad", load=load_toy_lines, gold="bio_mrc.data.squad:gold_texts",
    squad_version="1.1", no_answer=False, metrics=("em", "f1"), statistic="f1", statistic_title="F1",
    title="toy lines, SQuAD v1.1 official metrics")


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
    assert len(cell["f1"]) == 3 and all(0.0 <= f <= 100.0 for f in cell["f1"])
    assert np.mean(cell["em"]) == pytest.approx(100.0 * np.mean([p.answer == "Ann" for p in decoded.predictions]))


def test_the_cli_offers_what_the_registry_holds(toy_entries):
    parser = build_parser()
    predict = parser.parse_args(["predict", "--model", "m", "--data", "d.json", "--decoding", "shortest", "--output", "o.json"])
    assert predict.decoding == ["shortest"]
