"""docs/api.md, the API reference, made from the package itself: every name of ``bio_mrc.__all__``, every
``bio_mrc.…`` name the README and docs/ give, and the records those calls return, grouped by layer.

    python tools/api_reference.py > docs/api.md

tests/test_api_reference.py fails while the committed page differs from what this prints.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import re
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
PAGE = "docs/api.md"
# Names docs/compare.md, docs/data.md and the README give without their module.
BARE = ("bio_mrc.data.squad.stream_squad", "bio_mrc.harness.compare.train_models", "bio_mrc.harness.config.load_config")
DOTTED = re.compile(r"(?<![\w/.-])bio_mrc(?:\.[A-Za-z_]\w*)+")
IMPORTED = re.compile(r"^from (bio_mrc(?:\.\w+)*) import ([\w, ]+)$", re.M)
PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
LAYERS = (  # (title, the top-level names under bio_mrc/ it holds); what no layer holds is the core
    ("Heads and model", ("heads", "model", "model_card", "qa_checkpoints")), ("Data", ("data",)),
    ("Features", ("features",)), ("Decoding", ("decoding",)), ("Metrics", ("metrics",)),
    ("Inference", ("inference",)), ("Training", ("training",)), ("Serving", ("serving",)),
    ("Harness", ("harness",)), ("Command line", ("cli",)))
CORE = "Core: the data model and plumbing"
# One short example for each name of bio_mrc.__all__ that no page's code shows; the tests run them as written.
EXAMPLES = {
    "bio_mrc.Example": '''from bio_mrc import Example

context = "Ada Lovelace and Charles Babbage built it."
example = Example("q1", "Who built it?", context, (((0, 12), (17, 32)),))  # one answer of two spans
assert example.answer_texts() == [["Ada Lovelace", "Charles Babbage"]] and example.is_answerable
''',
    "bio_mrc.AnswerSpan": '''from bio_mrc import AnswerSpan

span = AnswerSpan("Ada Lovelace", 0, 12, score=3.5)
assert span.to_dict() == {"text": "Ada Lovelace", "start": 0, "end": 12, "score": 3.5}
''',
    "bio_mrc.Prediction": '''from bio_mrc import AnswerSpan, Prediction

prediction = Prediction("q1", [AnswerSpan("Ada", 0, 3, 2.0), AnswerSpan("Charles", 8, 15, 1.0)], no_answer_score=-1.0)
assert (prediction.answer, prediction.answers) == ("Ada", ["Ada", "Charles"])
assert Prediction("q2", prediction.spans, abstain=True).answer == ""  # abstaining: no answer
''',
    "bio_mrc.tag_scores": '''from bio_mrc import tag_scores

scores = tag_scores([["B", "I", "O", "B"]], [["B", "I", "O", "O"]])  # one of two gold entities found
assert (scores["precision"], scores["recall"]) == (1.0, 0.5)
''',
    "bio_mrc.Head": '''import torch

from bio_mrc import Head


class MeanHead(Head):  # one logit per token; its registry entry would name its labels and weight
    def __init__(self, hidden_size: int):
        super().__init__()
        self.linear = torch.nn.Linear(hidden_size, 1)

    def forward(self, hidden_states):
        return self.linear(hidden_states).squeeze(-1)

    def loss(self, logits, *, attention_mask=None, tag_mask=None, has_answer=None):
        return torch.nn.functional.binary_cross_entropy_with_logits(logits[:, 0], has_answer.float())


head = MeanHead(8)
logits = head(torch.zeros(2, 5, 8))
assert logits.shape == (2, 5) and head.loss(logits, has_answer=torch.tensor([1, 0])).ndim == 0
''',
    "bio_mrc.TrainedModel": '''from bio_mrc import TrainedModel
from bio_mrc.types import Example

trained = TrainedModel.load("my-model")  # a folder `bio-mrc train` wrote
outputs = trained.windows([Example("q1", "Who wrote it?", "Ada Lovelace wrote it.", None)])
print(trained.decodings, outputs.start_logits.shape)  # the decodings its heads allow; (windows, tokens)
''',
    "bio_mrc.BioMrcConfig": '''from bio_mrc import BioMrcConfig

config = BioMrcConfig.from_pretrained("my-model")  # a folder `bio-mrc train` wrote
print(config.heads, config.head_names, config.max_seq_length)  # span+bio ['span', 'bio'] and its windows
''',
    "bio_mrc.BioMrcForQuestionAnswering": '''from transformers import AutoTokenizer

from bio_mrc import BioMrcForQuestionAnswering

model = BioMrcForQuestionAnswering.from_pretrained("my-model")
tokenizer = AutoTokenizer.from_pretrained("my-model")
out = model(**tokenizer("Who wrote it?", "Ada Lovelace wrote it.", return_tensors="pt"))
print(sorted(out.logits))  # ['bio_logits', 'end_logits', 'start_logits']
''',
    "bio_mrc.register_auto_classes": '''from transformers import AutoModelForQuestionAnswering

import bio_mrc

bio_mrc.register_auto_classes()  # idempotent: `import bio_mrc` has registered them already
model = AutoModelForQuestionAnswering.from_pretrained("my-model")
assert isinstance(model, bio_mrc.BioMrcForQuestionAnswering)
''',
    "bio_mrc.register_pipeline": '''from transformers import pipeline

import bio_mrc

assert bio_mrc.register_pipeline() == "bio-mrc-qa"  # idempotent: `import bio_mrc` has registered it already
qa = pipeline("bio-mrc-qa", model="my-model")
assert isinstance(qa, bio_mrc.BioMrcQuestionAnsweringPipeline)
print(qa(question="Who wrote it?", context="Ada Lovelace wrote it."))  # {'score': ..., 'start': ..., 'end': ..., 'answer': ...}
''',
    "bio_mrc.data.squad.stream_squad": '''import json

from bio_mrc.data.squad import stream_squad

rows = [{"id": f"q{i}", "question": "Who?", "context": "Ada wrote it.", "answers": {"text": ["Ada"], "answer_start": [0]}}
        for i in range(3)]
with open("questions.jsonl", "w", encoding="utf-8") as file:
    file.writelines(json.dumps(row) + "\\n" for row in rows)
assert [example.id for example in stream_squad("questions.jsonl", limit=2)] == ["q0", "q1"]  # read a line at a time
''',
    "bio_mrc.inference.paired_evaluation.compare_predictions": '''import json
from pathlib import Path

from bio_mrc.inference.paired_evaluation import compare_predictions

rows = [{"id": f"q{i}", "question": "Who?", "context": "Ada wrote it.", "answers": {"text": ["Ada"], "answer_start": [0]}}
        for i in range(4)]
files = {"dev.jsonl": "".join(json.dumps(row) + "\\n" for row in rows),
         "new.json": json.dumps({"q0": "Ada", "q1": "Ada", "q2": "Ada", "q3": "wrote"}),
         "old.json": json.dumps({"q0": "Ada", "q1": "wrote", "q2": "wrote", "q3": "wrote"})}
for name, text in files.items():
    Path(name).write_text(text, encoding="utf-8")
result = compare_predictions("dev.jsonl", "new.json", "old.json", n_resamples=200)
print(result.new.metrics["exact_match"], result.baseline.metrics["exact_match"])  # 75.0 25.0
print(result.to_dict("new.json", "old.json")["difference"]["exact_match"])  # the difference (50.0), its bootstrap interval and p-value
''',
}


class Text:
    """A piece of source text that a signature prints as it is."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return self.text


def documented_names(root: Path) -> list[str]:
    """Every ``bio_mrc.…`` name the README and docs/ (this page aside) give, imported in their code or written out."""
    import bio_mrc

    names = [f"bio_mrc.{name}" for name in bio_mrc.__all__]
    for page in [root / "README.md", *sorted((root / "docs").glob("*.md"))]:
        if page.relative_to(root).as_posix() == PAGE:
            continue
        text = page.read_text(encoding="utf-8")
        names += DOTTED.findall(text)
        names += [f"{module}.{name.strip()}" for module, imported in IMPORTED.findall(text) for name in imported.split(",")]
    return list(dict.fromkeys([*names, *BARE]))


def resolve(name: str) -> object:
    """The module, class, function or value a dotted name gives: the longest module, then its attributes."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for part in parts[cut:]:
            found = getattr(found, part)
        return found
    raise ImportError(f"{name}: no such module")


def layer_of(obj: object, name: str) -> str:
    module = obj.__name__ if isinstance(obj, ModuleType) else getattr(obj, "__module__", None) or name
    if not module.startswith("bio_mrc."):
        module = name
    top = module.split(".")[1] if module.count(".") else ""
    return next((title for title, tops in LAYERS if top in tops), CORE)


def public_path(cls: type) -> str:
    """A library class by the shortest module path that exports it (``fastapi.FastAPI``, not ``fastapi.applications``):
    the page stays the same when a library moves a class between its private modules."""
    parts = cls.__module__.split(".")
    for end in range(1, len(parts) + 1):
        module = sys.modules.get(".".join(parts[:end]))
        if module is not None and getattr(module, cls.__name__, None) is cls:
            return f"{module.__name__}.{cls.__name__}"
    return f"{cls.__module__}.{cls.__qualname__}"


def annotation(value: object) -> object:
    if value is inspect.Parameter.empty:
        return value
    text = value if isinstance(value, str) else public_path(value) if isinstance(value, type) else inspect.formatannotation(value)
    return Text(text[1:-1] if len(text) > 1 and text[0] == text[-1] and text[0] in "'\"" else text)  # a forward reference


def default(value: object) -> object:
    if value is inspect.Parameter.empty:
        return value
    return Text(re.sub(r" at 0x[0-9a-f]+", "", repr(value)))  # no address: the page is the same on every run


def signature_of(obj: object) -> str:
    """The call's signature with its annotations as the source writes them; ``(...)`` where Python cannot tell."""
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return "(...)"
    parameters = [p.replace(annotation=annotation(p.annotation), default=default(p.default))
                  for p in signature.parameters.values()]
    return str(signature.replace(parameters=parameters, return_annotation=annotation(signature.return_annotation)))


def first_paragraph(obj: object) -> str | None:
    """The docstring's first paragraph on one line, in Markdown; None without a docstring of its own."""
    if not (isinstance(obj, (type, ModuleType)) or callable(obj)):
        return None  # a value: its type's docstring says nothing of it
    doc = obj.__dict__.get("__doc__") if isinstance(obj, type) else getattr(obj, "__doc__", None)
    if not isinstance(doc, str) or not doc.strip():
        return None
    if dataclasses.is_dataclass(obj) and doc.startswith(f"{obj.__name__}("):
        return None  # the text dataclass writes in place of a missing docstring
    paragraph = " ".join(inspect.cleandoc(doc).split("\n\n")[0].split())
    return re.sub(r":\w+:`~?\.?([^`]+)`", r"`\1`", paragraph).replace("``", "`")  # reST roles and literals as Markdown


def constructor_owner(cls: type) -> type:
    """The class whose ``__init__`` (or ``__new__``) builds ``cls``: the package's, or a library's."""
    return next(base for base in cls.__mro__ if "__init__" in base.__dict__ or "__new__" in base.__dict__)


def public_members(cls: type) -> list[tuple[str, object]]:
    """The methods and properties a class of the package defines (its own and its package bases'), in source order."""
    found: dict[str, object] = {}
    for base in reversed(cls.__mro__):
        if base.__module__.startswith("bio_mrc"):
            found.update((name, value) for name, value in base.__dict__.items()
                         if not name.startswith("_") and isinstance(value, (property, classmethod, staticmethod))
                         or not name.startswith("_") and inspect.isfunction(value))
    fields = {field.name for field in own_fields(cls)} if dataclasses.is_dataclass(cls) else set()
    return [(name, value) for name, value in found.items() if name not in fields]


def member_line(name: str, value: object) -> str:
    if isinstance(value, property):
        returns = annotation(inspect.signature(value.fget).return_annotation)
        head = f"`{name}` (property{'' if returns is inspect.Parameter.empty else f': {returns}'})"
        return f"- {head}: {first_paragraph(value.fget) or '(no docstring)'}"
    function = value.__func__ if isinstance(value, (classmethod, staticmethod)) else value
    kind = "classmethod " if isinstance(value, classmethod) else "staticmethod " if isinstance(value, staticmethod) else ""
    signature = signature_of(function)
    if not isinstance(value, staticmethod):
        signature = re.sub(r"^\((?:self|cls)(?:, )?", "(", signature)
    return f"- {kind}`{name}{signature}`: {first_paragraph(function) or '(no docstring)'}"


def own_fields(cls: type) -> list[dataclasses.Field]:
    """A dataclass's fields that the package's classes declare (a library base's, such as transformers' config, aside)."""
    declared = {name for base in cls.__mro__ if base.__module__.startswith("bio_mrc") for name in base.__dict__.get("__annotations__", {})}
    return [f for f in dataclasses.fields(cls) if f.name in declared]


def field_lines(cls: type) -> list[str]:
    """The typed fields of a dataclass (or a named tuple): what a caller reads from the record."""
    if dataclasses.is_dataclass(cls):
        fields = [(f.name, f.type, f.default) for f in own_fields(cls)]
    elif hasattr(cls, "_fields"):
        fields = [(name, cls.__annotations__.get(name, ""), cls._field_defaults.get(name, dataclasses.MISSING)) for name in cls._fields]
    else:  # a record class of its own making: its annotated attributes
        fields = [(name, kind, dataclasses.MISSING) for name, kind in cls.__dict__.get("__annotations__", {}).items()
                  if not name.startswith("_") and cls.__module__.startswith("bio_mrc")]
    return [f"- `{name}: {annotation(kind)}{'' if value is dataclasses.MISSING else f' = {default(value)}'}`"
            for name, kind, value in fields]


def class_signature(cls: type) -> str:
    """How the class is called, ``-> None`` left out; ``...`` in place of a library base's own fields."""
    signature = signature_of(cls).removesuffix(" -> None")
    if not dataclasses.is_dataclass(cls) or len(own_fields(cls)) == len(dataclasses.fields(cls)):
        return signature
    own = {f.name for f in own_fields(cls)}
    parameters = [p for p in inspect.signature(cls).parameters.values() if p.name in own]
    star = ["*"] if parameters and parameters[0].kind is inspect.Parameter.KEYWORD_ONLY else []
    return "(" + ", ".join(["...", *star, *(str(p.replace(annotation=annotation(p.annotation), default=default(p.default)))
                                             for p in parameters)]) + ")"


def class_lines(cls: type) -> list[str]:
    owner = constructor_owner(cls)
    if owner.__module__.startswith("bio_mrc") or dataclasses.is_dataclass(cls):
        lines = ["```python", f"class {cls.__name__}{class_signature(cls)}", "```"]
    else:
        lines = [f"`class {cls.__name__}({public_path(owner)})`, called as its library base is"]
    fields, members = field_lines(cls), public_members(cls)
    lines += ["", "Fields:", "", *fields] if fields else []
    lines += ["", "Methods and properties:", "", *(member_line(n, v) for n, v in members)] if members else []
    return lines


def source_link(obj: object) -> str:
    module = obj if isinstance(obj, ModuleType) else sys.modules.get(getattr(obj, "__module__", "") or "")
    path = Path(getattr(module, "__file__", "") or "")
    return f"[`{path.relative_to(ROOT).as_posix()}`](../{path.relative_to(ROOT).as_posix()})" if path.is_relative_to(ROOT) else ""


def kind_of(obj: object) -> str:
    if isinstance(obj, ModuleType):
        return "module"
    return "class" if isinstance(obj, type) else "function" if callable(obj) else f"value of type `{type(obj).__name__}`"


def entry(names: list[str], obj: object, shown_in: list[str]) -> list[str]:
    """One name's section: its import paths, docstring's first paragraph, signature, fields, methods, example."""
    primary = names[0]
    imports = ", ".join(f"`import {n}`" if isinstance(obj, ModuleType) else "`from {} import {}`".format(*n.rsplit(".", 1))
                        for n in names)
    where = f"; in {source_link(obj)}" if source_link(obj) else ""
    lines = [f"### `{primary}`", "", f"{kind_of(obj)}: {imports}{where}", ""]
    if callable(obj) or isinstance(obj, ModuleType):
        lines += [first_paragraph(obj) or "(no docstring)", ""]
    if isinstance(obj, type):
        lines += [*class_lines(obj), ""]
    elif callable(obj):
        lines += ["```python", f"{primary.rsplit('.', 1)[1]}{signature_of(obj)}", "```", ""]
    if primary in EXAMPLES:
        lines += [f"<!-- tested snippet: api-{primary.rsplit('.', 1)[1].lower()} -->", "```python", EXAMPLES[primary].rstrip(), "```", ""]
    elif shown_in:
        lines += ["In use: " + ", ".join(f"[{page}]({page.removeprefix('docs/') if page.startswith('docs/') else '../' + page})"
                                          for page in shown_in), ""]
    return lines


def returned_classes(obj: object) -> list[str]:
    """The package's classes a call (or a class's methods) returns, by the names its return annotation gives."""
    calls = [value for _, value in public_members(obj)] if isinstance(obj, type) else [obj] if callable(obj) else []
    found = []
    for call in calls:
        function = getattr(call, "__func__", getattr(call, "fget", call))
        returns = getattr(function, "__annotations__", {}).get("return")
        for word in re.findall(r"[A-Z]\w*", returns if isinstance(returns, str) else ""):
            cls = getattr(function, "__globals__", {}).get(word)
            if isinstance(cls, type) and cls.__module__.startswith("bio_mrc."):
                found.append(f"{cls.__module__}.{cls.__qualname__}")
    return found


def code_by_page(root: Path) -> dict[str, str]:
    """Each page's Python code blocks, joined: where a name is shown in use."""
    pages = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    return {page.relative_to(root).as_posix(): "\n".join(PYTHON_BLOCK.findall(page.read_text(encoding="utf-8")))
            for page in pages if page.relative_to(root).as_posix() != PAGE}


def grouped(root: Path) -> dict[str, list[tuple[list[str], object]]]:
    """The names by layer, each object once with every name it goes by (its shortest first)."""
    names = documented_names(root)
    objects: dict[int, tuple[list[str], object]] = {}
    for name in [*names, *(cls for given in names for cls in returned_classes(resolve(given)))]:
        obj = resolve(name)
        objects.setdefault(id(obj), ([], obj))[0].append(name)
    layers: dict[str, list[tuple[list[str], object]]] = {title: [] for title in [CORE, *(t for t, _ in LAYERS)]}
    for found, obj in objects.values():
        found = sorted(set(found), key=lambda n: (n.count("."), n))
        layers[layer_of(obj, found[0])].append((found, obj))
    return {title: sorted(items, key=lambda item: item[0][0].lower()) for title, items in layers.items() if items}


def reference(root: Path = ROOT) -> str:
    """docs/api.md's text."""
    code = code_by_page(root)
    layers = grouped(root)
    lines = ["# API reference", "", "[← README](../README.md) · [all documentation](../README.md#documentation)", "",
             "Every name of `bio_mrc.__all__`, every `bio_mrc.…` name the README and the other pages give, and the records "
             "their calls return, by the layer that holds them ([layout and layers](layout.md#layers)): how to import "
             "each, its signature, its docstring's first paragraph, and for a class its typed fields and public methods. "
             "`python tools/api_reference.py > docs/api.md` writes this page from the package; "
             "`tests/test_api_reference.py` fails while the two differ.", ""]
    lines += [f"- [{title}](#{re.sub(r'[^a-z0-9 -]', '', title.lower()).replace(' ', '-')})" for title in layers] + [""]
    for title, items in layers.items():
        lines += [f"## {title}", ""]
        for names, obj in items:
            short = names[0].rsplit(".", 1)[1]
            shown = [] if isinstance(obj, ModuleType) else [page for page, text in code.items() if re.search(rf"\b{short}\b", text)]
            lines += entry(names, obj, shown)
    return "\n".join(lines).rstrip() + "\n"


if __name__ == "__main__":
    sys.stdout.write(reference())
