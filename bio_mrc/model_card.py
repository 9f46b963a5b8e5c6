"""Model cards: a model folder's ``README.md`` in the Hugging Face format, so that a folder pushed to
the hub documents itself (what the model is, how it was trained, how it scored, how to run it).

The card is made from the folder's own files and nothing else: ``config.json`` read as the model reads it,
a :class:`~bio_mrc.model.BioMrcConfig` (heads, windows, tuned settings; a field config.json leaves out has
BioMrcConfig's default), the run record ``bio_mrc_run.json`` (training options, data size) and the
evaluation record ``bio_mrc_eval.json`` (what comparisons measured on the model). Whatever writes
one of them calls :func:`write_model_card`, so the card never contradicts them. The metadata is
rendered by ``huggingface_hub`` (``ModelCardData``, ``EvalResult``), the hub's own reader.

It sits in the model layer beside :mod:`bio_mrc.model`, whose config it reads, so training, inference,
the harness and serving can all keep the card up to date.
"""

from __future__ import annotations

import copy
import json
import math
import re
import shlex
import warnings
from pathlib import Path
from typing import Any, Mapping, Sequence

from . import registry
from .errors import InputWarning
from .encoders import is_default_encoder
from .evaluation_record import EVAL_FILE, save_evaluation
from .hub import snapshot_commit
from .io import atomic_write_bytes, json_with_controls_escaped, printable_line, remove_file
from .markdown_code import code_span as _code
from .model import RUN_FILE, BioMrcConfig
from .model_defaults import TRAIN_OPTIONS_WHEN_ABSENT
from .model_folder import CARD_FILE, EXPORT_FILE, NOT_FITTED, special_floats
from .plurals import counted, number_form

__all__ = ["CARD_FILE", "EVAL_FILE", "ForeignCardWarning", "card_metadata", "card_summary", "clear_model_card", "model_card_text",
           "model_config", "public", "record_evaluation", "remove_generated_card", "render_exported_card", "render_model_card",
           "write_exported_card", "write_model_card"]

RUN_RECORD_FILE = RUN_FILE
CARD_MARKER = "<!-- bio_mrc model card:"  # a README.md without it was written by hand and is left alone
LIBRARY_NAME = "bio_mrc"
TAGS = ["question-answering", "extractive-qa"]
TAGGING_TAGS = ["bio-tagging", "multi-span"]  # a model with a head whose decoding reads tag sequences (the BIO head)
DEFAULT_ENCODER_ID = "sentence-transformers/all-MiniLM-L6-v2"  # what the embedded default encoder is
# Dataset ids on the hub, recognised by the folder names of the project's data layout (../shared/data).
HUB_DATASETS = ((re.compile(r"(^|[/\\])squad-v2\.0[/\\]"), "rajpurkar/squad_v2"),
                (re.compile(r"(^|[/\\])squad-v1\.1[/\\]"), "rajpurkar/squad"))
SPLIT_NAMES = {"dev": "validation", "train": "train", "test": "test"}  # file names -> the hub's split names
WINDOW_FIELDS = ("max_seq_length", "doc_stride", "max_query_length")  # the windows the model was trained with
HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?")
# The folders of an absolute local path (POSIX, or a Windows drive's) up to its last two parts: they name the machine's
# user and layout (a home folder, a temporary folder), which a card meant for the hub does not publish.
_PART = r"[^\s/\\`'\"]+"
LOCAL_PATH = re.compile(rf"(?<![^\s`'\"(\[=])(?:/|[A-Za-z]:[\\/])(?:{_PART}[/\\])*(?={_PART}[/\\]{_PART})")


class ForeignCardWarning(InputWarning):
    """A folder's ``README.md`` lacks the card's marker line, so bio_mrc did not write it: it is left as it is, and no
    card is written over it."""


def decodings_of(heads: str) -> list[str]:
    """The decodings a model with these heads supports (the card says which it offers)."""
    return registry.decodings_for(heads)


def model_config(config: BioMrcConfig | Mapping[str, Any]) -> BioMrcConfig:
    """``config`` as the model reads it: a :class:`BioMrcConfig` as it is, a mapping (config.json's JSON) through
    ``BioMrcConfig.from_dict``, so a field it leaves out has the model's default."""
    return config if isinstance(config, BioMrcConfig) else BioMrcConfig.from_dict(dict(config))


def card_tags(heads: str) -> list[str]:
    """The hub tags of a model with these heads: bio-tagging and multi-span only where a head tags (BIO)."""
    tags_sequences = registry.decodes_tag_sequences(decodings_of(heads))
    return [*TAGS, *(TAGGING_TAGS if tags_sequences else [])]


def public(value: Any) -> Any:
    """``value`` (a string, or a record's mappings and lists of them) as a card shows it: an absolute local path by
    its last two parts (``/home/me/data/squad-v1.1/dev.json`` -> ``.../squad-v1.1/dev.json``)."""
    if isinstance(value, str):
        return LOCAL_PATH.sub(".../", value)
    if isinstance(value, Mapping):
        return {key: public(item) for key, item in value.items()}
    if isinstance(value, list):
        return [public(item) for item in value]
    return value


def _read_json(path: Path) -> Any:
    return _json_of(path.read_bytes()) if path.is_file() else None


def _json_of(content: bytes | None) -> Any:
    """A record's bytes as the card reads them (None: no record)."""
    return special_floats(json.loads(content.decode("utf-8"))) if content is not None else None


def write_model_card(model_dir: str | Path, staged_for: str | Path | None = None, export: Mapping | None = None) -> Path | None:
    """(Re)write ``model_dir/README.md`` from the folder's files; returns its path.

    Nothing is written to a folder without ``config.json`` (no model yet), nor over a README.md
    written by hand (one without the card's marker line): that card is its author's to keep.
    ``staged_for``: ``model_dir`` is a staging folder whose files move into that folder (see :func:`_write_card`).
    ``export``: the record of the ONNX export the folder holds (its marker, written after the card; None: the marker
    ``bio_mrc_export.json`` of ``model_dir``, if any).
    """
    model_dir = Path(model_dir)
    config = _read_config(model_dir)
    if config is None:
        return None
    target = Path(staged_for) if staged_for is not None else model_dir
    return _write_card(model_dir, _folder_card(model_dir, config, target, export), target)


def model_card_text(model_dir: str | Path, config: BioMrcConfig, staged_for: str | Path | None = None) -> str | None:
    """The card :func:`write_model_card` writes in ``model_dir`` once its ``config.json`` holds ``config``, for a caller
    that writes both together; None where ``model_dir`` (or ``staged_for``, see :func:`write_model_card`) holds a
    README.md written by hand, which stays."""
    model_dir = Path(model_dir)
    target = Path(staged_for) if staged_for is not None else model_dir
    if _left_by_hand(target / CARD_FILE):
        return None
    # surrogates of an undecodable file name as \\udcNN, as _write_card writes them
    return _folder_card(model_dir, config, target, None).encode("utf-8", "backslashreplace").decode("utf-8")


def _folder_card(model_dir: Path, config: BioMrcConfig, target: Path, export: Mapping | None) -> str:
    record, evaluation = _read_json(model_dir / RUN_RECORD_FILE), _read_json(model_dir / EVAL_FILE)
    export = export if export is not None else _export_record(model_dir)
    return render_model_card(config, record, evaluation, target.name, export)


def _export_record(folder: Path) -> Mapping | None:
    """The ONNX export marker of ``folder`` as the card reads it; None without one, or for one that is no JSON object
    (loading the folder refuses it, in one line: the card leaves it out)."""
    try:
        record = _read_json(folder / EXPORT_FILE)
    except (OSError, ValueError):
        return None
    return record if isinstance(record, Mapping) else None


def write_exported_card(output_dir: str | Path, model_dir: str | Path, architecture: str, left_out: Sequence[str],
                        staged_for: str | Path | None = None, *, config: BioMrcConfig | None, run_record: bytes | None) -> Path | None:
    """``output_dir/README.md`` for transformers' QA model exported there from the bio_mrc model in ``model_dir``
    (``bio-mrc export --format transformers``): what it holds and leaves out (the heads ``left_out``), its base model,
    how to run it. ``config`` and ``run_record`` (the bytes of ``bio_mrc_run.json``; None: none) are the model's, of the
    state of its folder its weights were loaded in, not read again (a ``train --overwrite`` since would describe
    another model); no ``config``, no card (a source that is no bio_mrc model). ``staged_for``: ``output_dir`` is a
    staging folder whose files move into that folder."""
    if config is None:
        return None
    output_dir = Path(output_dir)
    target = Path(staged_for) if staged_for is not None else output_dir
    return _write_card(output_dir, render_exported_card(config, _json_of(run_record), architecture, left_out, target.name,
                                                        Path(model_dir).name), target)


def _write_card(folder: Path, text: str, target: Path | None = None) -> Path | None:
    """Write a generated card in ``folder``, never where ``target`` (the folder the card ends in: ``folder`` itself, or
    the output folder a staging folder's files move into along with the card, so that a stop after the move never
    leaves a model without its card) holds a README.md written by hand (one without the card's marker line)."""
    if _left_by_hand((target or folder) / CARD_FILE):
        return None
    # a file name the locale could not decode (LC_ALL=C) holds surrogates: shown as \\udcNN, as Python's stderr does
    return atomic_write_bytes(folder / CARD_FILE, text.encode("utf-8", "backslashreplace"))


def _left_by_hand(card: Path) -> bool:
    """Whether ``card`` is a README.md written by hand (no marker line), which stays: said in a ForeignCardWarning."""
    if not card.is_file() or CARD_MARKER in card.read_text(encoding="utf-8", errors="replace"):
        return False
    warnings.warn(ForeignCardWarning(f"{card} was not written by bio_mrc (no '{CARD_MARKER}' line): left as it is"), stacklevel=3)
    return True


def _read_config(model_dir: Path) -> BioMrcConfig | None:
    """The folder's config.json as the model reads it; None without one (no model yet)."""
    config = _read_json(model_dir / "config.json")
    return model_config(config) if isinstance(config, dict) and config.get("model_type") == BioMrcConfig.model_type else None


def clear_model_card(model_dir: str | Path) -> None:
    """A model about to be replaced: its scores and its generated card go with it (a card written by
    hand stays), so a save cut short never leaves the old model's numbers beside the new weights."""
    model_dir = Path(model_dir)
    remove_file(model_dir / EVAL_FILE, model_dir)
    remove_generated_card(model_dir)


def remove_generated_card(model_dir: str | Path) -> None:
    """Remove the folder's card when bio_mrc wrote it (a card written by hand stays)."""
    card = Path(model_dir) / CARD_FILE
    if card.is_file() and CARD_MARKER in card.read_text(encoding="utf-8", errors="replace"):
        remove_file(card, model_dir)


def record_evaluation(
    model_dir: str | Path,
    cells: Sequence[Mapping[str, Any]],
    splits: Mapping[str, Any],
    decode: Mapping[str, Any] | None = None,
) -> Path | None:
    """Keep what a comparison measured in the model's evaluation record
    (:func:`bio_mrc.evaluation_record.save_evaluation`), then refresh its card."""
    path = save_evaluation(model_dir, cells, splits, decode)
    if path is not None:
        write_model_card(model_dir)
    return path


def _hub_dataset(description: str | None) -> str | None:
    for pattern, dataset in HUB_DATASETS:
        if description and pattern.search(description):
            return dataset
    return None


def _base_model(train: Mapping[str, Any], encoder_path: str | None = None) -> str | None:
    """The hub id the model was fine-tuned from (``init_from``, else the encoder); None for a local folder.
    ``encoder_path`` is the run record's: where a model trained from the encoder read it (a hub id's cached snapshot,
    a local folder as it was named), so a relative folder is known as one from any working folder. A model continued
    from a local folder has none: the record's encoder is not what it was trained from (init_from's own encoder is)."""
    init_from = train.get("init_from")
    name, read_from = (init_from, None) if init_from else (train.get("encoder"), encoder_path)
    if name is not None and is_default_encoder(name):
        return DEFAULT_ENCODER_ID
    return name if name and HUB_ID.fullmatch(name) and not _local_folder(name, read_from) else None


def _converted_from(config: BioMrcConfig, record: Mapping | None) -> str | None:
    """The hub id of the extractive QA model a model was converted from (``bio-mrc convert`` records a hub id as its
    encoder's name, a local folder by its absolute path); None for a model bio_mrc trained (its run record says)."""
    name = getattr(config.encoder, "name_or_path", None) or ""
    return name if not (record or {}).get("train") and HUB_ID.fullmatch(name) else None


def _local_folder(name: str, read_from: str | None) -> bool:
    """Whether the model ``name`` was a local folder: read from the folder of that name, or (where it was read
    from is not recorded) a folder of that name here."""
    return Path(read_from) == Path(name) if read_from else Path(name).exists()


def _finite(value: Any) -> Any:
    """YAML for the hub: a number, or words where the value is not finite (``-inf``: always abstain)."""
    if isinstance(value, (int, float)) and not math.isfinite(value):
        return "always abstain (-inf)" if value < 0 else str(value)
    return value


def card_metadata(config: BioMrcConfig | Mapping[str, Any], record: Mapping | None, evaluation: Mapping | None, name: str,
                  export: Mapping | None = None):
    """The card's YAML front matter as ``huggingface_hub.ModelCardData`` (``model-index`` included; an ONNX export's
    tagged ``onnx``)."""
    from huggingface_hub import ModelCardData

    config = model_config(config)

    results = _evaluation_results(evaluation, config) + _tuned_results(config)
    datasets = _hub_datasets(record, evaluation)
    return ModelCardData(
        library_name=LIBRARY_NAME, tags=card_tags(config.heads) + (["onnx"] if export else []), pipeline_tag="question-answering",
        base_model=_base_model((record or {}).get("train") or {}, (record or {}).get("encoder_path")) or _converted_from(config, record),
        datasets=datasets or None,
        metrics=["exact_match", "f1"] if evaluation else None,
        model_name=name if results else None, eval_results=results or None,
    )


def _hub_datasets(record: Mapping | None, evaluation: Mapping | None) -> list[str]:
    """The hub ids of the data sets the model learned from, in every stage (the run record's ``training_data``; a
    comparison's training split), each once, in order."""
    stages = (record or {}).get("training_data")
    names = [stage.get("data") for stage in stages if isinstance(stage, Mapping)] if isinstance(stages, list) else []
    names.append(((evaluation or {}).get("trained_on") or {}).get("description"))
    found = [_hub_dataset(name) if isinstance(name, str) else None for name in names]
    return list(dict.fromkeys(dataset for dataset in found if dataset))


def _dataset(description: str | None, questions: Any, question_hash: Any, suffix: str = "") -> dict[str, Any]:
    """An ``EvalResult``'s dataset fields. The hub groups results by dataset type and split, so the
    split names the questions too: two sets of questions of one file are never merged into one."""
    path = Path((description or "unknown").split(" (")[0])
    split = SPLIT_NAMES.get(path.stem, path.stem)
    return {"dataset_type": _hub_dataset(description) or "local", "dataset_name": f"{description}{suffix}",
            "dataset_split": f"{split} ({questions} questions, {question_hash})"}


def _shown_evaluations(evaluation: Mapping | None, config: BioMrcConfig) -> list[Mapping[str, Any]]:
    """One evaluation per set of questions for ``model-index``: the latest one decoded with the
    settings saved with the model (tuned on the same questions) when there is one, else the latest."""
    def tuning(tuned_on: Mapping[str, Any] | None) -> tuple[Any, Any]:
        return (tuned_on or {}).get("description"), (tuned_on or {}).get("questions")

    saved, chosen = tuning(config.tuned_on), {}
    for entry in (evaluation or {}).get("evaluations", []):
        key = entry["evaluated_on"].get("question_hash")
        if key not in chosen or tuning(entry.get("tuned_on")) == saved or tuning(chosen[key].get("tuned_on")) != saved:
            chosen[key] = entry
    return list(chosen.values())


def _evaluation_results(evaluation: Mapping | None, config: BioMrcConfig) -> list:
    """One hub ``EvalResult`` per decoding and metric (EM, F1) of each set of evaluation questions."""
    from huggingface_hub import EvalResult

    results = []
    for entry in _shown_evaluations(evaluation, config):
        on = entry["evaluated_on"]
        dataset = _dataset(on.get("description"), on.get("questions"), on.get("question_hash"))
        for decoding, scores in entry["results"].items():
            settings = {k: _finite(scores[k]) for k in ("threshold", "bio_length_prior") if k in scores}
            for metric, label in (("exact_match", "EM"), ("f1", "F1")):
                results.append(EvalResult(
                    task_type="question-answering", task_name="Extractive question answering", **dataset,
                    metric_type=metric, metric_value=scores[metric], metric_name=f"{label} ({decoding} decoding)",
                    metric_config=decoding, metric_args=settings or None,
                ))
    return results


def _tuned_results(config: BioMrcConfig) -> list:
    """The settings tuned on held-out questions, as ``model-index`` values measured on those questions."""
    from huggingface_hub import EvalResult

    tuned_on, prior = config.tuned_on, config.bio_length_prior
    values = [("bio_length_prior", "BIO span-length prior β (tuned setting)", None, prior)] if prior is not None else []
    for key, threshold in sorted((config.no_answer_thresholds or {}).items()):
        if math.isfinite(threshold):  # -inf (always abstain) is no number the hub reads
            values.append(("no_answer_threshold", f"no-answer threshold, {key} (tuned setting)", key, threshold))
    if not tuned_on or not values or "for_model" in tuned_on:  # values inherited from a model this one continues: not its own
        return []
    dataset = _dataset(tuned_on.get("description"), tuned_on.get("questions"), tuned_on.get("content_hash"),
                       suffix=" (tuning questions)")
    return [EvalResult(task_type="question-answering", task_name="Extractive question answering", **dataset,
                       metric_type=kind, metric_value=value, metric_name=label, metric_config=key)
            for kind, label, key, value in values]


def render_model_card(config: BioMrcConfig | Mapping[str, Any], record: Mapping | None, evaluation: Mapping | None, name: str,
                      export: Mapping | None = None) -> str:
    """The whole card: YAML front matter, then what the model is (``export``: the record of the ONNX export the folder
    holds), its training, scores, tuned settings, usage. Local absolute paths in the records are shown by their last
    two parts (:func:`public`)."""
    at = _at_revision(record)  # from the snapshot's whole path, which public() shortens
    config, record, evaluation, export = copy.deepcopy(model_config(config)), public(record), public(evaluation), public(export)
    config.tuned_on = public(config.tuned_on)
    metadata = card_metadata(config, record, evaluation, name, export)
    sections = [
        f"# {_heading(name)}",
        f"{CARD_MARKER} made from config.json, {RUN_RECORD_FILE} and {EVAL_FILE}, and remade when they change; "
        "remove this line to keep edits -->",
        _model_section(config, record, at) + _export_words(export),
        _training_section(record, evaluation, config, at),
        _evaluation_section(evaluation, record),
        _tuned_section(config),
        _usage_section(config, name),
    ]
    return f"---\n{metadata.to_yaml()}\n---\n\n" + "\n\n".join(sections) + "\n"


def render_exported_card(config: BioMrcConfig, record: Mapping | None, architecture: str, left_out: Sequence[str], name: str,
                         source: str) -> str:
    """The card of transformers' QA model exported from a bio_mrc model: the span head on its encoder, nothing else."""
    from huggingface_hub import ModelCardData

    config, record = model_config(config), public(record)
    metadata = ModelCardData(library_name="transformers", pipeline_tag="question-answering", tags=[*TAGS, LIBRARY_NAME],
                             base_model=_base_model((record or {}).get("train") or {}, (record or {}).get("encoder_path"))
                             or _converted_from(config, record), datasets=_hub_datasets(record, None) or None)
    windows = ", ".join(f"`{k}` {getattr(config, k)}" for k in WINDOW_FIELDS)
    body = [
        f"# {_heading(name)}",
        f"{CARD_MARKER} made by bio-mrc export --format transformers; remove this line to keep edits -->",
        f"transformers' `{architecture}` exported from the `bio_mrc` model {_code(source)}: its encoder and its span head "
        "(start and end logits), checked to give the same logits. "
        + (f"Left out: the {', '.join(left_out)} head, which transformers has no class for. " if left_out else "")
        + f"It was trained on windows of {windows}: the usage below reads one window of that length with "
        "transformers' own classes (transformers 5 ships no question-answering pipeline); `bio-mrc convert` reads it "
        "in the windows it was trained with, longer contexts included. Tuned settings (a no-answer threshold, the BIO "
        "length prior, calibration) stay with the bio_mrc model: transformers' QA models keep none.",
        _exported_usage(config, name),
    ]
    return f"---\n{metadata.to_yaml()}\n---\n\n" + "\n\n".join(body) + "\n"


def _export_words(export: Mapping | None) -> str:
    """What an ONNX export's folder holds, from its marker's record: the graph, opset, exporter, checked tolerance and
    the model it was made from, and what runs it."""
    if not isinstance(export, Mapping):
        return ""
    tolerance = export.get("tolerance")
    checked = f", its logits within {tolerance:g} of PyTorch's" if isinstance(tolerance, (int, float)) else ""
    return (f"\n\nThis folder is an ONNX export ({_code(export.get('file'))}, opset {_count(export.get('opset'))}, by "
            f"{_code(export.get('exporter'))}{checked}) of the bio_mrc model {_code(export.get('source'))}: bio_mrc runs it with "
            "ONNX Runtime on the CPU (`pip install 'bio_mrc[onnx]'`); it holds no PyTorch weights, so `train --init-from` "
            "and `export` take the model it was made from.")


def _exported_usage(config: BioMrcConfig, name: str) -> str:
    """The exported card's usage: the best span of one window by transformers' classes alone, and bio_mrc's reading."""
    model = _python_string(name)
    windows = " ".join(f"--{k.replace('_', '-')} {getattr(config, k)}" for k in WINDOW_FIELDS)
    return (
        "## Usage\n\n```python\nimport torch\nfrom transformers import AutoModelForQuestionAnswering, AutoTokenizer\n\n"
        f"tokenizer = AutoTokenizer.from_pretrained({model})\n"
        f"model = AutoModelForQuestionAnswering.from_pretrained({model}).eval()\n"
        'question = "Which countries did the Norse come from?"\n'
        'context = "The Normans were descended from Norse raiders from Denmark, Iceland and Norway."\n'
        f'inputs = tokenizer(question, context, truncation="only_second", max_length={config.max_seq_length}, '
        'return_offsets_mapping=True, return_tensors="pt")\n'
        'offsets = inputs.pop("offset_mapping")[0]\n'
        "with torch.no_grad():\n    logits = model(**inputs)\n"
        "in_context = torch.tensor([part == 1 for part in inputs.sequence_ids(0)])\n"
        "scores = logits.start_logits[0][:, None] + logits.end_logits[0][None, :]\n"
        "allowed = (in_context[:, None] & in_context[None, :]).triu()  # a span of the context, its end not before its start\n"
        'start, end = divmod(int(scores.masked_fill(~allowed, float("-inf")).argmax()), scores.shape[1])\n'
        "print(context[offsets[start][0] : offsets[end][1]])\n```\n\n"
        f"```bash\nbio-mrc convert --model {shlex.quote(printable_line(name))} --output reader {windows}\n```"
    )


def _table(rows: Sequence[tuple[Any, ...]], header: tuple[str, ...]) -> str:
    """A pipe table; a ``|`` in a cell (an encoder folder's name, a training option's text) is escaped, as a table
    needs it to be even inside inline code, so it cannot end the cell and shift or cut off the row."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(str(cell).replace("|", "\\|") for cell in row) + " |" for row in rows])


def _model_section(config: BioMrcConfig, record: Mapping | None, at: str = "") -> str:
    """What the model is: heads, decodings, tag level, windows, encoder (``at``: :func:`_at_revision`'s words)."""
    heads = config.heads
    names = [name for name in heads.split("+") if name in registry.HEADS]
    parts = {name: registry.head(name).description for name in names}
    decodings = decodings_of(heads)
    tagging = registry.tags_tokens(names)
    encoder = public(_encoder_name(config, record))
    train = (record or {}).get("train") or {}
    init_from = public(train.get("init_from"))  # its encoder trained, not the record's
    tag_level = config.tag_level
    rows = [
        ("heads", f"`{heads}`"),
        ("decodings", ", ".join(f"`{d}`" for d in decodings_of(heads))),
        ("multi-span answers", "yes: the BIO head's spans of highest posterior, as many as maximise the expected F1 (`multi_span=True`)"
         if registry.decodes_tag_sequences(decodings) else "its decodings' non-overlapping n-best spans"),
        ("BIO tag level", {"word": "`word`: the first piece of each word", "subword": "`subword`: every paragraph token"}
         .get(tag_level, f"`{tag_level}`") if tagging else "no BIO head"),
        *([("BIO words", _word_units(config.word_units))] if tagging and tag_level == "word" else []),
        ("windows", ", ".join(f"`{k}` {getattr(config, k)}" for k in WINDOW_FIELDS)),
        *([("answer-length limit", f"{config.max_answer_length} tokens, what 99% of the training answer spans fit (at least 30; "
                                   "`max_answer_length` given to a decoding overrides it)")] if getattr(config, "max_answer_length", None) else []),
        ("encoder", f"that of {_code(init_from)}{at}" if init_from else f"{_code(encoder)}{at}" if encoder else "unknown"),
        *([("encoder family", _code(family))] if (family := getattr(config.encoder, "model_type", "")) else []),
        ("bio_mrc model format", config.bio_mrc_format),
    ]
    intro = (f"Extractive question answering made with `bio_mrc`: one BERT-style encoder with "
             f"{' and '.join(parts[h] for h in names if h in parts)}.")
    return "## Model\n\n" + intro + "\n\n" + _table(rows, ("", ""))


# The words a word-level tagger tags (the config's word_units; a config without it: the tokenizer's, as models had then).
_WORD_UNITS = {"punctuation": "the tokenizer's words, a piece of punctuation alone a word of its own (`Paris` `.`)",
               "tokenizer": "the tokenizer's own words (sentencepiece's keep punctuation beside letters: `Paris.`)"}


def _at_revision(record: Mapping | None) -> str:
    """`` at revision `dev`, commit `1a2b…` `` for a model trained or converted from a hub id (the commit of the
    snapshot read, which a branch or tag moves on from; the revision where one was given); empty otherwise."""
    record = record or {}
    train, converted = record.get("train") or {}, _conversion(record) or {}
    revision = train.get("revision") or converted.get("revision")
    name, snapshot = ((train.get("init_from") or train.get("encoder"), record.get("encoder_path")) if train
                      else (converted.get("model"), converted.get("snapshot")))
    commit = snapshot_commit(name, snapshot) if isinstance(name, str) and isinstance(snapshot, str) else None
    said = [f"revision {_code(revision)}"] * bool(revision) + [f"commit {_code(commit)}"] * bool(commit)
    return " at " + ", ".join(said) if said else ""


def _conversion(record: Mapping | None) -> Mapping | None:
    """What a converted model's run record says it was converted from; None for a trained model."""
    converted = (record or {}).get("converted_from")
    return converted if isinstance(converted, Mapping) and not (record or {}).get("train") else None


def _word_units(units: str) -> str:
    return f"`{units}`: {_WORD_UNITS[units]}" if units in _WORD_UNITS else _code(units)


def _encoder_name(config: BioMrcConfig, record: Mapping | None) -> str | None:
    """The encoder the model was trained from: the run record's, else the one its config was read from."""
    return ((record or {}).get("train") or {}).get("encoder") or getattr(config.encoder, "name_or_path", None) or None


def card_summary(model_dir: str | Path, config: BioMrcConfig | None = None) -> dict[str, Any]:
    """The card's facts as plain data, for a program to read (``bio-mrc serve``'s ``/health``): what the
    model is, its tuned settings and calibrated decodings, how it was trained, how it scored. Made from
    the same files as the card, or from ``config``, the loaded model's (a model converted as it loads); an empty
    dict for a folder without a bio_mrc ``config.json``."""
    model_dir = Path(model_dir)
    config = config or _read_config(model_dir)
    if config is None:
        return {}
    record, evaluation = _read_json(model_dir / RUN_RECORD_FILE), _read_json(model_dir / EVAL_FILE)
    train = record if isinstance(record, dict) else {}
    return {
        "name": model_dir.name,
        "heads": config.heads,
        "decodings": decodings_of(config.heads),
        "tag_level": config.tag_level,
        "word_units": config.word_units,
        "windows": {key: getattr(config, key) for key in WINDOW_FIELDS},
        "max_answer_length": getattr(config, "max_answer_length", None),
        "encoder": _encoder_name(config, train),
        "bio_mrc_format": config.bio_mrc_format,
        "tuned": {"no_answer_thresholds": config.no_answer_thresholds or {},
                  "bio_length_prior": config.bio_length_prior, "tuned_on": config.tuned_on},
        "calibrated": sorted(config.calibration or {}),
        "training": {key: train.get(key) for key in ("n_examples", "n_windows", "seconds", "final_loss", "finished")}
        if train and not _conversion(train) else None,
        "evaluations": [{"evaluated_on": entry["evaluated_on"], "results": entry["results"]}
                        for entry in _shown_evaluations(evaluation, config)],
    }


def training_time_is_partial(record: Mapping) -> bool:
    """Whether a run record's ``seconds`` are its last sitting's only: resumed from a checkpoint that did not
    keep the earlier sittings' time (saved by a bio_mrc before the training clock; such records lack ``earlier_seconds``)."""
    return record.get("resumed_from") is not None and record.get("earlier_seconds") is None


def _loss_words(record: Mapping) -> str:
    """The run record's ``final_loss``: Trainer's mean over the steps of the run's last sitting (all of it, unless resumed)."""
    loss = record.get("final_loss", float("nan"))
    if loss is None:  # resumed from the run's last step: nothing left to train, no loss measured
        return "training loss not measured (its last sitting, resumed at the final step, trained no steps)"
    return f"final training loss {loss:.4f}" + (" (the mean of its last sitting's steps)" if record.get("resumed_from") else "")


def _training_section(record: Mapping | None, evaluation: Mapping | None, config: BioMrcConfig, at: str = "") -> str:
    """How the model was trained: the data and the full training configuration (the run record's, with the
    defaults the model resolved as its config holds them)."""
    if not record:
        return f"## Training\n\nNo run record ({RUN_RECORD_FILE}): how this model was trained is not recorded."
    if converted := _conversion(record):
        return (f"## Training\n\nConverted by `bio-mrc convert` from transformers' {_code(converted.get('architecture'))} "
                f"{_code(converted.get('model'))}{at}: its encoder, and its start/end layer as the span "
                "head. How that model was trained is not recorded.")
    trained_on = (evaluation or {}).get("trained_on")
    resumed = f", resumed from {_code(record['resumed_from'])}" if record.get("resumed_from") else ""
    sittings = " (its last sitting's)" if training_time_is_partial(record) else " (every sitting's)" if resumed else ""
    lines = [f"Trained on {record.get('n_examples')} questions ({record.get('n_windows')} windows){_steps_words(record)} in "
             f"{record.get('seconds', 0):.0f} s{sittings}; {_loss_words(record)}; finished {record.get('finished')}{resumed}."]
    if record.get("precision_choice"):
        lines.append(_precision_line(record["precision_choice"]))
    if isinstance(versions := record.get("versions"), Mapping) and versions:
        lines.append("Trained with " + ", ".join(f"{name} {printable_line(str(version))}" for name, version in versions.items()) + ".")
    if isinstance(fingerprint := record.get("training_questions"), Mapping):
        lines.append(_fingerprint_words(fingerprint))
    if trained_on:
        lines.append(f"Training questions: {_code(trained_on.get('description'))} ({_count(trained_on.get('questions'))} questions, "
                     f"hash {_code(trained_on.get('question_hash'))}).")
    elif stages := _stages_words(record.get("training_data")):
        lines.append(stages)
    else:
        lines.append("Which questions they were is not recorded (a comparison records its training split here).")
    train = record.get("train") or {}
    options = {**TRAIN_OPTIONS_WHEN_ABSENT, **train} if train else {}  # a record leaves an option out at its value from before the option existed
    rows = [(f"`{key}`", _option_value(key, value, config)) for key, value in options.items()]
    return ("## Training\n\n" + "\n".join(lines) + "\n\nTraining configuration (`TrainConfig`):\n\n"
            + _table(rows, ("option", "value")))


def _fingerprint_words(fingerprint: Mapping) -> str:
    """What the run record's ``training_questions`` holds: every stage's questions, or those of the stages since a
    model whose record kept none (``partial``)."""
    stages = ("the stages that recorded theirs" if fingerprint.get("partial") is True else "every stage")
    line = (f"Its run record keeps a fingerprint of the {_count(fingerprint.get('questions'))} questions it was trained on in "
            f"{stages} (`training_questions`: a 64-bit hash of each question's text and context), which `tune` and "
            "`compare` read to keep them out of tuning and evaluation.")
    if fingerprint.get("partial") is True:
        line += (" The questions of an earlier stage are not recorded: the model it continued kept none (an earlier "
                 "version's, or one from elsewhere).")
    return line


def _steps_words(record: Mapping) -> str:
    """The optimizer steps a run took and the epochs they made, beside the epochs asked (``max_steps`` may stop a run
    short of them); none in a record that predates them."""
    steps, epochs = record.get("steps"), record.get("epochs_trained")
    if not isinstance(steps, int) or not isinstance(epochs, (int, float)):
        return ""
    asked = (record.get("train") or {}).get("epochs")
    done = f"{epochs:g} {number_form(epochs, 'epoch')}"
    if isinstance(asked, (int, float)) and asked != epochs:
        done = f"{epochs:g} of the {asked:g} {number_form(asked, 'epoch')} asked"
    return f" for {counted(steps, 'optimizer step')} ({done})"


def _stages_words(stages: Any) -> str | None:
    """The run record's ``training_data``: each stage's file (as a comparison's training questions are named:
    ``FILE (first N questions)`` where a limit cut it) and question count, and the model a stage continued."""
    if not isinstance(stages, list) or not stages or not all(isinstance(stage, Mapping) for stage in stages):
        return None

    def stage_words(stage: Mapping) -> str:
        data, questions = stage.get("data"), stage.get("questions")
        count = f"{_count(questions)} {number_form(questions, 'question')}"
        words = f"{_code(data)} ({count})" if data else f"{count} (their file not recorded)"
        return words + (f", continuing {_code(stage['continued_from'])}" if stage.get("continued_from") else "")

    if len(stages) == 1:
        return f"Training data: {stage_words(stages[0])}."
    return "Training data, stage by stage: " + "; ".join(f"{k}. {stage_words(stage)}" for k, stage in enumerate(stages, 1)) + "."


def _option_value(key: str, value: Any, config: BioMrcConfig) -> str:
    """A training option's cell: as recorded, but an option left to its default that the model's config holds
    resolved (the class weights of a BIO-only model) is shown as the model trained with it."""
    if key == "bio_class_weights" and value is None and config.bio_class_weights:
        return f"{_code(json.dumps(list(config.bio_class_weights)))} (a BIO-only model's default)"
    return _code(json.dumps(value))


def _precision_line(choices: Mapping[str, Any]) -> str:
    """How the precision was decided, per phase: explicit, or auto's choice and the rates it measured."""
    parts = []
    for phase, choice in choices.items():
        if not isinstance(choice, Mapping):
            continue
        rates = ""
        if "fp32_tokens_per_s" in choice:
            rates = (f": bf16 {choice['bf16_tokens_per_s']:,.0f} against fp32 {choice['fp32_tokens_per_s']:,.0f} tokens/s "
                     f"through one encoder layer of the model's shapes, measured {choice.get('measured', '?')}")
        if choice.get("precision") == "bf16" and choice.get("attention") == "fp32":
            rates += (f"; the attention in fp32, {choice['bf16_fp32_attention_tokens_per_s']:,.0f} tokens/s with it"
                      if "bf16_fp32_attention_tokens_per_s" in choice else "; the attention in fp32")
        parts.append(f"{phase} `{choice.get('precision')}` ({choice.get('how')}{rates})")
    return "Precision: " + "; ".join(parts) + "."


_MARKDOWN_PUNCTUATION = re.compile(r"([\\`*_\[\]<>#|!~&])")


def _heading(name: str) -> str:
    """A folder's name as a heading's text: one line, its control characters as Python writes them (``\\x1b``), and the
    characters that start markup (emphasis, links, HTML, code, a closing ``#``) escaped, so the name shows as it is."""
    return _MARKDOWN_PUNCTUATION.sub(r"\\\1", printable_line(name))


def _python_string(text: str) -> str:
    """``text`` as a Python string literal in a card's code (a JSON string is one): a quote, a backslash or a line
    break in a folder's name stays inside it, and no control character is written raw."""
    return json_with_controls_escaped(json.dumps(text, ensure_ascii=False))


def _count(value: Any) -> str:
    """A record's count of questions: a whole number as it is, any other value (a hand-edited or copied config.json
    holds what it likes, and ``train --init-from`` carries its ``tuned_on`` over) as inline code
    (:func:`~bio_mrc.markdown_code.code_span`), so it cannot break the line into a table, a heading or HTML of its own."""
    return str(value) if isinstance(value, int) or value is None else _code(value)


def _number(value: Any, digits: int = 2) -> str:
    if value is None:
        return "–"
    if not math.isfinite(value):
        return "−∞ (always abstain)" if value < 0 else str(value)
    return f"{value:.{digits}f}"


def _evaluation_section(evaluation: Mapping | None, record: Mapping | None = None) -> str:
    """The official scores of every decoding, per set of evaluation questions, and those taken during training."""
    entries = (evaluation or {}).get("evaluations") or []
    during = _scored_during_training(record, (record or {}).get("evaluated_during_training"))
    if not entries and not during:
        return "## Evaluation\n\nNo evaluation recorded yet: `bio-mrc compare` records each decoding's scores here."
    blocks = ["## Evaluation", *during]
    for entry in entries:
        on, tune = entry["evaluated_on"], entry.get("tuned_on")
        note = (f"{_count(on.get('questions'))} questions, official SQuAD v{on.get('version', '1.1')} metrics, measured "
                f"{entry.get('date')} by `bio-mrc compare` (bio_mrc {entry.get('package_version')})")
        if tune:
            note += f"; settings tuned on {_code(tune.get('description'))} ({_count(tune.get('questions'))} questions)"
        rows = [(_code(d), _number(s["exact_match"]), _number(s["f1"]), _number(s.get("threshold")),
                 _number(s.get("bio_length_prior"))) for d, s in entry["results"].items()]
        blocks.append(f"### {_code(on.get('description'))}\n\n{note}.\n\n"
                      + _table(rows, ("decoding", "EM", "F1", "no-answer threshold", "BIO length prior β")))
    return "\n\n".join(blocks)


def _scored_during_training(record: Mapping | None, scored: Any) -> list[str]:
    """The run record's ``evaluated_during_training``: the held-out scores of the model saved, with the step and the file."""
    if not isinstance(scored, Mapping) or not isinstance(scores := scored.get("scores"), Mapping):
        return []
    step, steps = scored.get("step"), (record or {}).get("steps")
    at = f"optimizer step {_count(step)}" + (f" of {_count(steps)}" if isinstance(steps, int) else "")
    if scored.get("best"):
        at += " (the best scored, which the model saved is)"
    elif isinstance(steps, int) and step != steps:
        at += f" (the model saved is step {steps}'s)"
    data = _code(scored.get("data")) if scored.get("data") else "held-out questions"
    rows = [(_code(name), _number(value) if isinstance(value, (int, float)) else _code(value)) for name, value in scores.items()]
    return [f"Scored during training on {data} ({_count(scored.get('questions'))} questions) at {at}:\n\n"
            + _table(rows, ("score", "value"))]


def _tuned_section(config: BioMrcConfig) -> str:
    """The decoding settings saved in config.json, with the questions they were tuned on, and each calibrator a tune
    left unfitted, with why."""
    prior, thresholds = config.bio_length_prior, config.no_answer_thresholds or {}
    span_counts, calibrators = config.min_span_probabilities or {}, config.calibration or {}
    tuned_on, not_fitted = config.tuned_on or {}, _calibrators_not_fitted(config)
    if prior is None and not thresholds and not span_counts and not calibrators and not not_fitted:
        uses_prior = bool(set(registry.length_prior_decodings()) & set(decodings_of(config.heads)))
        prior_note = "the BIO span-length prior β is 0 and " if uses_prior else ""
        return (f"## Tuned settings\n\nNone: {prior_note}no no-answer threshold is set "
                "(`bio-mrc tune --model DIR --data HELDOUT.json` tunes them on held-out questions).")
    rows = ([("BIO span-length prior β", _number(prior))] if prior is not None else []) + [
        (f"no-answer threshold {_code(key)}", _number(value, 4)) for key, value in sorted(thresholds.items())] + [
        (f"multi-span answers, {_code(key)}: a span after the first needs probability ≥", _number(value)) for key, value in sorted(span_counts.items())] + [
        _calibrator_row(key, calibrators[key]) if key in calibrators else (f"calibrator {_code(key)}", f"not fitted: degenerate ({_code(not_fitted[key])})")
        for key in sorted({*calibrators, *not_fitted})]  # a decoding's row where a calibrator would be
    provenance = (f"Tuned on {_code(tuned_on.get('description'))} ({_count(tuned_on.get('questions'))} questions, content hash "
                  f"{_code(tuned_on.get('content_hash'))}{_known_questions(tuned_on)}){_computed_in(tuned_on)}" if tuned_on
                  else "Where these were tuned is not recorded")
    if "for_model" in tuned_on:
        provenance += (f" for the model this one continues, {_code(tuned_on['for_model'])}, not for this one (`bio-mrc tune --model "
                       "DIR --data HELDOUT.json` tunes them for it)")
    rule = " (a question is left unanswered when its no-answer score exceeds the threshold)" if thresholds else ""
    return ("## Tuned settings\n\n" + provenance + f"; saved in config.json, applied by `predict`, `compare` and `AnswerExtractor`{rule}.\n\n"
            + _table(rows, ("setting", "value")))


def _calibrators_not_fitted(config: BioMrcConfig) -> dict[str, Any]:
    """The decodings whose calibrator a tune on the questions of ``tuned_on`` found degenerate, and why (the tune
    record's ``calibrators_not_fitted``), but for one that has a calibrator now."""
    not_fitted = (config.tuned_on or {}).get(NOT_FITTED)
    if not isinstance(not_fitted, Mapping):
        return {}
    return {decoding: reason for decoding, reason in not_fitted.items() if decoding not in (config.calibration or {})}


def _calibrator_row(decoding: str, calibrator: Any) -> tuple[str, str]:
    """A decoding's calibrator (raw confidence -> the probability its answer is right): its kind, weights and questions."""
    if not isinstance(calibrator, Mapping) or not all(isinstance(calibrator.get(k), (int, float)) for k in "abc"):
        return f"calibrator {_code(decoding)}", _code(json.dumps(calibrator))
    weights = ", ".join(f"{k} {calibrator[k]:.4g}" for k in "abc")
    return (f"calibrator {_code(decoding)}: P(answer right, {_code(calibrator.get('correct_if'))})",
            f"{_code(calibrator.get('method'))}: {weights}, fitted on {_count(calibrator.get('questions'))} questions")


def _known_questions(tuned_on: Mapping[str, Any]) -> str:
    """How many of the tuning questions the model tuned was trained on, as ``tune`` counted them in its run record's
    fingerprint (``tuned_on.training_questions``; nothing where that record kept none)."""
    if (known := tuned_on.get("training_questions")) is None:
        return ""
    return (f"; {'none' if known == 0 else _count(known)} of them among the training questions of the model tuned, by its "
            "run record's fingerprint")


def _computed_in(tuned_on: Mapping[str, Any]) -> str:
    """The precision and device the tuned scores were computed in, as the tune record keeps them (``auto`` resolved: a
    threshold fitted on bf16 scores may sit off fp32 ones); nothing for a record that keeps neither."""
    parts = [f"{word} {_code(tuned_on[key])}" for key, word in (("precision", "in"), ("device", "on")) if key in tuned_on]
    return f", on scores computed {' '.join(parts)}" if parts else ""


def _usage_section(config: BioMrcConfig, name: str) -> str:
    """How to run the model from Python and from the command line."""
    decodings = decodings_of(config.heads)
    decoding = registry.preferred_decoding(decodings) if decodings else "span"
    multi = ", multi_span=True" if registry.decodes_tag_sequences(decodings) else ""
    return (
        "## Usage\n\n```python\nfrom bio_mrc import AnswerExtractor\n\n"
        f'model_dir = {_python_string(name)}  # this folder; from the hub: huggingface_hub.snapshot_download({_python_string("USER/" + name)})\n'
        f"extractor = AnswerExtractor.from_pretrained(model_dir{multi})\n"
        'context = "The Normans were descended from Norse raiders from Denmark, Iceland and Norway."\n'
        'result = extractor("Which countries did the Norse come from?", context)\n'
        "print([(s.text, s.start, s.end, s.score) for s in result.spans])\n```\n\n"
        f"```bash\nbio-mrc predict --model {shlex.quote(printable_line(name))} --data dev.json --decoding {decoding} --output preds.json\n"
        "bio-mrc evaluate --data dev.json --predictions preds.json\n```"
    )
