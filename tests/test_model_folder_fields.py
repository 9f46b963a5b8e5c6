"""Each field of a saved model folder's files, missing, null, of another kind, out of range or a list of the wrong
length: a folder from anywhere either loads and answers (the field is optional) or is refused in one line naming the
file and the field, at every door (``TrainedModel.load``, the pipeline), never in a traceback of transformers'."""

from __future__ import annotations

import json
import math
import shutil
import warnings
from pathlib import Path

import pytest

from bio_mrc.errors import BioMrcError, BioMrcWarning
from bio_mrc.inference import TrainedModel
from .conftest import untrained_model_folder

WINDOWS = {"max_seq_length": 64, "doc_stride": 16, "max_query_length": 16}
# Tuned settings as tune writes them, so that each is there to break.
TUNED = {
    "no_answer_thresholds": {"span": 0.5, "joint": -1.0},
    "bio_length_prior": 0.5,
    "min_span_probabilities": {"joint": 0.4},
    "calibration": {"joint": {"method": "beta", "a": 1.0, "b": 2.0, "c": 0.5, "questions": 100}},
    "tuned_on": {"description": "dev.json", "questions": 100, "content_hash": "c9d20ec7f79507b4"},
}
RUN_RECORD = {"train": {"encoder": "tiny", "init_from": None}, "seconds": 1.5, "n_examples": 8, "final_loss": 3.5,
              "finished": "2026-01-31 12:00:00"}
EVAL_RECORD = {"evaluations": [{"evaluated_on": {"description": "dev.json", "questions": 8},
                                "results": {"joint": {"exact_match": 50.0, "f1": 60.0}}}]}
VALUES = {"missing": ..., "null": None, "text": "7", "number": 7, "negative": -3, "zero": 0, "huge": 10**12,
          "nan": math.nan, "infinity": math.inf, "list": [1, 2], "object": {"a": 1}, "bool": True}


@pytest.fixture(scope="module")
def tuned_model(tiny_encoder_dir, tmp_path_factory) -> Path:
    folder = untrained_model_folder(tiny_encoder_dir, tmp_path_factory.mktemp("model") / "tuned", **WINDOWS)
    config = json.loads((folder / "config.json").read_text()) | TUNED
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "bio_mrc_run.json").write_text(json.dumps(RUN_RECORD))
    (folder / "bio_mrc_eval.json").write_text(json.dumps(EVAL_RECORD))
    return folder


def edited(model: Path, tmp_path: Path, file: str, path: tuple, value) -> Path:
    """A copy of ``model`` with the field at ``path`` of ``file`` set to ``value`` (``...``: removed)."""
    folder = tmp_path / "copy"
    shutil.copytree(model, folder)
    document = json.loads((folder / file).read_text())
    holder = document
    for key in path[:-1]:
        holder = holder[key]
    if value is ...:
        holder.pop(path[-1], None)
    else:
        holder[path[-1]] = value
    (folder / file).write_text(json.dumps(document))  # NaN and Infinity as Python's json writes them
    return folder


def pipeline_of(folder: Path):
    import bio_mrc  # noqa: F401 - registers the task
    from transformers import pipeline

    return pipeline("bio-mrc-qa", model=str(folder), device="cpu")


# (file, field, value, what the one line says): each was transformers' traceback or a line naming no field.
REFUSED = [
    ("config.json", ("bio_prior",), [0.5, 0.5], "bio_prior must be null or three positive numbers"),
    ("config.json", ("bio_prior",), 7, "bio_prior must be null or three positive numbers"),
    ("config.json", ("bio_class_weights",), "7", "bio_class_weights must be null or three positive numbers"),
    ("config.json", ("bio_loss_reduction",), None, "bio_loss_reduction must be one of mean, sum, token_mean"),
    ("config.json", ("head_dropout",), 7, r"head_dropout must be a probability in \[0, 1\]"),
    ("config.json", ("head_dropout",), None, r"head_dropout must be a probability in \[0, 1\]"),
    ("config.json", ("architectures",), 7, "architectures must be a list of class names"),
    ("config.json", ("encoder", "pad_token_id"), 10**12, "encoder.pad_token_id must be null or a token id below vocab_size"),
    ("config.json", ("encoder", "hidden_act"), "7", "encoder.hidden_act must be one of transformers' activations"),
]


# The pipeline built the model through transformers, which wrapped a refusal in its own "Could not load model ... with
# any of the following classes", or ended in a traceback of its config classes.
@pytest.mark.parametrize("path, value, match", [
    (("doc_stride",), "7", "doc_stride must be an integer"),
    (("heads",), None, "heads must be one of"),
    (("dtype",), "7", "dtype must be one of"),
    (("encoder", "hidden_size"), None, r"encoder.hidden_size must be an integer in \[1"),
    (("calibration", "joint", "a"), "7", "calibration.joint must hold the numbers a, b and c"),
    (("architectures",), [1, 2], "architectures must be a list of class names"),
])
def test_the_pipeline_refuses_a_broken_field_in_the_line_load_gives(tuned_model, tmp_path, path, value, match):
    folder = edited(tuned_model, tmp_path, "config.json", path, value)
    with pytest.raises(BioMrcError, match=f"config.json: {match}"):
        pipeline_of(folder)


def _cases(model: Path, file: str):
    document = json.loads((model / file).read_text())

    def fields(value, prefix=()):
        for key, item in value.items():
            yield (*prefix, key)
            if isinstance(item, dict):
                yield from fields(item, (*prefix, key))

    for path in fields(document):
        yield from ((file, path, name, value) for name, value in VALUES.items())


@pytest.mark.slow
def test_every_field_of_every_file_loads_or_is_one_line_at_every_door(tuned_model, tmp_path):
    """The whole grid: each outcome a model that answers with finite scores (any package warning on the way naming
    the file), or a BioMrcError naming the file or the field."""
    cases = [case for file in ("config.json", "bio_mrc_run.json", "bio_mrc_eval.json")
             for case in _cases(tuned_model, file)]
    wrong = []
    for number, (file, path, name, value) in enumerate(cases):
        folder = edited(tuned_model, tmp_path / str(number), file, path, value)
        for door in (TrainedModel.load, pipeline_of):
            try:
                with warnings.catch_warnings(record=True) as said:
                    warnings.simplefilter("always", BioMrcWarning)  # a setting nothing uses: said, not refused
                    model = door(folder)
                wrong += [f"{file} {'.'.join(path)}={name} ({door.__name__}): {w.category.__name__}: {w.message}" for w in said
                          if issubclass(w.category, BioMrcWarning) and file not in str(w.message)]
            except BioMrcError as err:
                if file not in str(err) and path[-1] not in str(err):  # an edited size: the weights' shapes, per config.json
                    wrong.append(f"{file} {'.'.join(path)}={name} ({door.__name__}): {err}")
                continue
            except Exception as err:  # noqa: BLE001 - what the grid looks for
                wrong.append(f"{file} {'.'.join(path)}={name} ({door.__name__}): {type(err).__name__}: {err}")
                continue
            if door is pipeline_of:
                answer = model(question="Who?", context="Ada wrote it in London.")  # within an edited max_query_length
                if not math.isfinite(answer["score"]):
                    wrong.append(f"{file} {'.'.join(path)}={name}: score {answer['score']}")
        shutil.rmtree(tmp_path / str(number))
    assert not wrong, "\n".join(wrong[:20])


# Each was a line naming neither the file nor the field: transformers' "not a multiple of the number of attention
# heads (12)", "describes no model this version can build: BertLayer(", a model_type named without its file.
MORE_REFUSED = [
    ("tokenizer_config.json", ("do_lower_case",), None, "do_lower_case must be true or false"),
    ("tokenizer_config.json", ("strip_accents",), 7, "strip_accents must be null, true or false"),
    ("tokenizer_config.json", ("tokenize_chinese_chars",), "7", "tokenize_chinese_chars must be true or false"),
    ("config.json", ("encoder", "add_cross_attention"), True, "encoder.add_cross_attention must be false"),
    ("config.json", ("encoder", "num_attention_heads"), ...,
     r"encoder.hidden_size 32 is not a multiple of num_attention_heads 12 \(bert's default: encoder.num_attention_heads is missing\): give the encoder's own"),
    ("tokenizer_config.json", ("padding_side",), None, "padding_side must be 'left' or 'right'"),
    ("tokenizer_config.json", ("tokenizer_class",), 7, "tokenizer_class must be a tokenizer class's name"),
    ("tokenizer_config.json", ("model_input_names",), None, "model_input_names must be a list of input names"),
    ("config.json", ("encoder", "model_type"), ..., "encoder.model_type is missing"),
    ("config.json", ("encoder", "model_type"), "xyz", 'encoder.model_type "xyz" is no model type transformers'),
    ("config.json", ("model_type",), 7, r"a 7 model, not a bio_mrc model \(model_type 7\)"),
    ("bio_mrc_run.json", ("seconds",), math.nan, "seconds must be a finite number, got NaN"),
    ("bio_mrc_run.json", ("final_loss",), math.inf, "final_loss must be a finite number, got Infinity"),
    ("bio_mrc_eval.json", ("evaluations", 0, "results", "joint", "f1"), math.nan,
     "evaluations.0.results.joint.f1 must be a finite number, got NaN"),
    ("bio_mrc_eval.json", ("evaluations", 0, "results", "joint", "threshold"), math.nan,
     r"evaluations.0.results.joint.threshold must be a number or ±Infinity, got NaN"),
    # These three loaded unchecked: a string or a number where a flag belongs.
    ("tokenizer_config.json", ("add_prefix_space",), "yes", "add_prefix_space must be null, true or false, got \"yes\""),
    ("tokenizer_config.json", ("trim_offsets",), 1, "trim_offsets must be true or false, got 1"),
    ("tokenizer_config.json", ("clean_up_tokenization_spaces",), "no",
     "clean_up_tokenization_spaces must be null, true or false, got \"no\""),
]


@pytest.mark.parametrize("file, path, value, match", REFUSED + MORE_REFUSED)
def test_a_broken_field_is_one_line_naming_it(tuned_model, tmp_path, file, path, value, match):
    folder = edited(tuned_model, tmp_path, file, path, value)
    with pytest.raises(BioMrcError, match=f"^{file}: {match}") as info:
        TrainedModel.load(folder)
    assert info.value.source == str(folder)


@pytest.mark.parametrize("file, path, value, match", [MORE_REFUSED[i] for i in (0, 3, 4, 8, 10, 11)])
def test_the_pipeline_names_the_file_and_field(tuned_model, tmp_path, file, path, value, match):
    folder = edited(tuned_model, tmp_path, file, path, value)
    with pytest.raises(BioMrcError, match=f"{file}: {match}"):
        pipeline_of(folder)
