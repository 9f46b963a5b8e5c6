"""Model folders are checked before use (bio_mrc.model_folder): each broken folder is one ModelFormatError naming
the folder, the file and the problem; texts that tokenize to nothing and impossible report numbers are refused."""

from __future__ import annotations

import json
import math
import os
import random
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from bio_mrc.cli import main
from bio_mrc.errors import ConfigError, DataFormatError, ModelFormatError
from bio_mrc.inference import AnswerExtractor, TrainedModel
from bio_mrc.model_folder import check_model_folder
from .conftest import ascii_locale_run, untrained_model_folder

WINDOWS = {"max_seq_length": 64, "doc_stride": 16, "max_query_length": 16}


@pytest.fixture(scope="module")
def saved_model(tiny_encoder_dir, tmp_path_factory):
    return untrained_model_folder(tiny_encoder_dir, tmp_path_factory.mktemp("model") / "tiny", **WINDOWS)


def copy_of(saved_model: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "copy"
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(saved_model, folder)
    return folder


def edit_config(folder: Path, encoder: bool = False, **values) -> Path:
    config = json.loads((folder / "config.json").read_text())
    (config["encoder"] if encoder else config).update(values)
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def refused(folder: Path, match: str) -> ModelFormatError:
    with pytest.raises(ModelFormatError, match=match) as info:
        TrainedModel.load(folder)
    assert info.value.source == str(folder)
    return info.value


def _truncate(path: Path, size: int) -> None:
    path.write_bytes(path.read_bytes()[:size])


def test_loading_parses_config_json_once_for_its_checks_and_the_model(saved_model, tmp_path, monkeypatch):
    """TrainedModel.load parsed config.json in its folder check, in the same check again inside
    BioMrcForQuestionAnswering.from_pretrained, and once more there to build the config: six opens. The model is now
    built from the config the check parsed. The opens left: the look for transformers' QA architecture, the check, and
    the tokenizer's (transformers reads the model type there). A config with an infinite threshold builds alike."""
    import builtins
    import io

    from bio_mrc.model import BioMrcForQuestionAnswering

    folder = edit_config(copy_of(saved_model, tmp_path), no_answer_thresholds={"span": {"__float__": "Infinity"}})
    opened, real_open = [], io.open

    def counting_open(file, *args, **kwargs):
        if isinstance(file, (str, os.PathLike)) and Path(file) == folder / "config.json":
            opened.append(file)
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", counting_open)
    monkeypatch.setattr(io, "open", counting_open)
    trained = TrainedModel.load(folder, device="cpu")
    monkeypatch.undo()
    assert len(opened) == 3
    assert trained.model.config.to_dict() == BioMrcForQuestionAnswering.from_pretrained(str(folder)).config.to_dict()
    assert trained.thresholds == {"span": math.inf}



def package_opens(monkeypatch, folder: Path, names: tuple[str, ...]) -> dict[str, int]:
    """Counts, by file name, the opens of ``names`` in ``folder`` made by the package's own code (the first frame
    outside the standard library's file reading is one of bio_mrc's): transformers' and tokenizers' reads are theirs."""
    import builtins
    import io
    import traceback

    import bio_mrc

    package, opened, real_open = Path(bio_mrc.__file__).parent, {name: 0 for name in names}, io.open

    def counting_open(file, *args, **kwargs):
        if isinstance(file, (str, os.PathLike)) and Path(file).parent == folder and Path(file).name in names:
            caller = next(frame for frame in reversed(traceback.extract_stack()[:-1])
                          if Path(frame.filename).name not in ("pathlib.py", "io.py", "codecs.py"))
            opened[Path(file).name] += Path(caller.filename).is_relative_to(package)
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", counting_open)
    monkeypatch.setattr(io, "open", counting_open)
    return opened


def test_loading_reads_the_weights_header_and_parses_tokenizer_json_once(saved_model, tmp_path, monkeypatch):
    """The folder checks read the safetensors header twice (the files checked, then the shapes fitted to the config) and
    the package parsed tokenizer.json twice (its ids checked, then the frame of a window); each is read once now and
    handed on. transformers' and tokenizers' own reads are theirs. The model loaded is the same."""
    folder = copy_of(saved_model, tmp_path)
    before = TrainedModel.load(folder, device="cpu")
    opened = package_opens(monkeypatch, folder, ("model.safetensors", "tokenizer.json"))
    trained = TrainedModel.load(folder, device="cpu")
    monkeypatch.undo()
    assert opened == {"model.safetensors": 1, "tokenizer.json": 1}
    assert trained.model.state_dict().keys() == before.model.state_dict().keys()
    assert all(trained.model.state_dict()[name].equal(tensor) for name, tensor in before.model.state_dict().items())
    probe = ("Who wrote the notes?", "The notes were written by Ada Lovelace in 1843.")
    assert trained.tokenizer(*probe, return_offsets_mapping=True) == before.tokenizer(*probe, return_offsets_mapping=True)


def test_an_encoder_folder_check_reads_the_weights_header_once(tiny_encoder_dir, tmp_path, monkeypatch):
    """check_encoder_folder (training from an encoder) read the safetensors header in its files' check, then again for
    the shapes the encoder's class builds."""
    from bio_mrc.model_folder import check_encoder_folder

    folder = copy_of(tiny_encoder_dir, tmp_path)
    opened = package_opens(monkeypatch, folder, ("model.safetensors", "tokenizer.json"))
    check_encoder_folder(folder)
    monkeypatch.undo()
    assert opened == {"model.safetensors": 1, "tokenizer.json": int((folder / "tokenizer.json").is_file())}


def _with_raw_header(path: Path, text: bytes) -> None:
    """Replace a safetensors file's header with ``text`` (the tensors' bytes stay where they are)."""
    data = path.read_bytes()
    text += b" " * (-len(text) % 8)
    path.write_bytes(len(text).to_bytes(8, "little") + text + data[8 + int.from_bytes(data[:8], "little") :])


def _shift_to_start(header: dict) -> None:
    """The smallest tensor's bytes moved over the first tensor's: two tensors overlap."""
    name = min((n for n in header if n != "__metadata__"), key=lambda n: header[n]["data_offsets"][1] - header[n]["data_offsets"][0])
    header[name]["data_offsets"] = [0, header[name]["data_offsets"][1] - header[name]["data_offsets"][0]]


@pytest.mark.parametrize("damage, match", [
    (lambda p: _with_raw_header(p, b"[1, 2]"), r"^model.safetensors: its header is not a JSON object \(a corrupt file\?\) \(in "),
    (lambda p: _with_header(p, lambda h: h["bio_head.classifier.bias"].update(dtype="F7")),
     r'^model.safetensors: tensor "bio_head.classifier.bias" has a corrupt header entry \(in '),
    (lambda p: _with_header(p, lambda h: h["bio_head.classifier.bias"].update(shape=[4])),
     r'^model.safetensors: tensor "bio_head.classifier.bias": its bytes do not match its shape \[4\] \(a corrupt file\?\) \(in '),
    (lambda p: _with_header(p, _shift_to_start), r"^model.safetensors: its tensors overlap or leave gaps \(a corrupt file\?\) \(in "),
])
def test_each_corrupt_weights_header_is_refused_in_its_own_line(saved_model, tmp_path, damage, match):
    folder = copy_of(saved_model, tmp_path)
    damage(folder / "model.safetensors")
    refused(folder, match)


def test_an_index_naming_a_tensor_no_shard_holds_is_refused(saved_model, tmp_path):
    folder = copy_of(saved_model, tmp_path)
    shard = "model-00001-of-00001.safetensors"
    (folder / "model.safetensors").rename(folder / shard)
    names = [name for name in json.loads(_header_bytes(folder / shard)) if name != "__metadata__"]
    weight_map = {**{name: shard for name in names}, "ghost.weight": shard}
    (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    refused(folder, r"^model.safetensors.index.json: names tensors no shard holds: ghost.weight \(in ")


def _header_bytes(path: Path) -> bytes:
    data = path.read_bytes()
    return data[8 : 8 + int.from_bytes(data[:8], "little")]


def test_a_tokenizer_of_no_tokens_or_too_many_bytes_is_refused(saved_model, tmp_path, monkeypatch):
    import bio_mrc.model_folder.tokenizer_checks as tokenizer_checks

    folder = copy_of(saved_model, tmp_path)
    size = (folder / "tokenizer.json").stat().st_size
    monkeypatch.setattr(tokenizer_checks, "MAX_TOKENIZER_BYTES", size - 1)
    refused(folder, rf"^tokenizer.json: {size:,} bytes, more than {size - 1:,} \(in ")
    monkeypatch.undo()
    (folder / "tokenizer_config.json").unlink()  # its special tokens would be named first as no tokens of the vocabulary
    (folder / "tokenizer.json").write_text(json.dumps({"version": "1.0", "model": {"type": "WordLevel", "vocab": {}, "unk_token": "[UNK]"}}))
    refused(folder, r"^tokenizer.json: holds no tokens \(in ")

# --- the weights ----------------------------------------------------------------------------------

@pytest.mark.parametrize("damage, match", [
    (lambda p: p.write_bytes(b""), r"model.safetensors: not a safetensors file, or cut short \(0 bytes\)"),
    (lambda p: _truncate(p, 5000), r"model.safetensors: cut short: the header names [\d,]+ bytes of tensors, the file holds"),
    (lambda p: p.write_bytes(b"x" * 1000), "model.safetensors: not a safetensors file"),
    (lambda p: p.write_bytes(p.read_bytes()[:8] + b"{" * (p.stat().st_size - 8)), "its header is not valid JSON"),
    (lambda p: p.write_bytes(p.read_bytes() + b"tail"), "longer than its tensors"),
])
def test_a_broken_weights_file_is_one_error(saved_model, tmp_path, damage, match):
    folder = copy_of(saved_model, tmp_path)
    damage(folder / "model.safetensors")
    refused(folder, match)


@pytest.mark.parametrize("edit, match", [
    ({"num_hidden_layers": 3}, r"lacks 16 tensors the config implies \(encoder.encoder.layer.2"),
    ({"num_hidden_layers": 1}, r"holds 16 the config does not \(encoder.encoder.layer.1"),
    ({"hidden_size": 64}, r"tensors do not have the shapes config.json implies \(e.g. .*\[224, 32\], config.json: \[224, 64\]"),
    ({"intermediate_size": 32}, "do not have the shapes config.json implies"),
])
def test_a_config_that_disagrees_with_the_weights_is_refused_not_filled_at_random(saved_model, tmp_path, edit, match):
    from bio_mrc.model import BioMrcForQuestionAnswering

    folder = edit_config(copy_of(saved_model, tmp_path), encoder=True, **edit)
    refused(folder, match)
    with pytest.raises(ModelFormatError, match=match):  # the pipeline's and training's way in, too
        BioMrcForQuestionAnswering.from_pretrained(str(folder))


@pytest.mark.parametrize("field, value, match", [
    ("num_hidden_layers", 1_000_000, r"encoder.num_hidden_layers must be an integer in \[1, 96\], got 1000000"),
    ("hidden_size", 1e9, r"encoder.hidden_size must be an integer in \[1, 16,384\], got 1000000000.0"),
    ("hidden_size", -32, "encoder.hidden_size must be an integer"),
    ("vocab_size", "224", "encoder.vocab_size must be an integer"),
    ("num_attention_heads", 3, "hidden_size 32 is not a multiple of num_attention_heads 3"),
    ("layer_norm_eps", -1.0, r"layer_norm_eps must be a number in \(0, 1\)"),
])
def test_sizes_past_their_bounds_are_refused_before_anything_is_built(saved_model, tmp_path, monkeypatch, field, value, match):
    import torch

    folder = edit_config(copy_of(saved_model, tmp_path), encoder=True, **{field: value})
    monkeypatch.setattr(torch.nn.Linear, "__init__", lambda *a, **k: pytest.fail("built a layer before the check"))
    refused(folder, match)


@pytest.mark.parametrize("value, match", [
    (-72, "min_span_probabilities must be an object, got -72"),
    ({"bio": 1.5}, r"min_span_probabilities.bio must be a probability in \[0, 1\], got 1.5"),
    ({"joint": "x"}, r"min_span_probabilities.joint must be a probability in \[0, 1\], got \"x\""),
])
def test_a_span_count_rule_that_is_no_probability_is_refused(saved_model, tmp_path, value, match):
    refused(edit_config(copy_of(saved_model, tmp_path), min_span_probabilities=value), match)


@pytest.mark.parametrize("value, match", [
    (["v2.json"], r'tuned_on must be an object, got \["v2.json"\]'),
    ("v2.json", 'tuned_on must be an object, got "v2.json"'),
    (5, "tuned_on must be an object, got 5"),
])
def test_a_tuned_on_that_is_no_object_is_refused(saved_model, tmp_path, value, match):
    """A tuned_on of another type loaded, and tune ended in an AttributeError traceback after answering every question."""
    refused(edit_config(copy_of(saved_model, tmp_path), tuned_on=value), match)
    TrainedModel.load(edit_config(copy_of(saved_model, tmp_path), tuned_on={"description": "dev.json", "questions": 3}))


@pytest.mark.parametrize("value, shown", [(["span"], r'\["span"\]'), (5, "5"), (None, "null")])
def test_heads_that_are_no_string_are_named_as_written(saved_model, tmp_path, value, shown):
    """They were checked as the empty name, and the line said ``got ''`` of a config that holds ``["span"]``."""
    refused(edit_config(copy_of(saved_model, tmp_path), heads=value),
            rf"^config.json: heads must be one of \('span', 'bio', 'span\+bio'\), got {shown} \(in ")


@pytest.mark.parametrize("field, value, match", [
    ("description", 5, "tuned_on.description must be a string, got 5"),
    ("description", ["dev.json"], r'tuned_on.description must be a string, got \["dev.json"\]'),
    ("questions", "three", "tuned_on.questions must be a whole number of questions \\(0 or more\\), got \"three\""),
    ("questions", True, "tuned_on.questions must be a whole number of questions \\(0 or more\\), got true"),
    ("questions", -3, "tuned_on.questions must be a whole number of questions \\(0 or more\\), got -3"),
    ("content_hash", 7, "tuned_on.content_hash must be a string, got 7"),
    ("for_model", None, "tuned_on.for_model must be a string, got null"),
    ("precision", 16, "tuned_on.precision must be a string, got 16"),
    ("device", ["cpu"], r'tuned_on.device must be a string, got \["cpu"\]'),
    ("description", ["x" * 100], 'tuned_on.description must be a string, got \\["' + "x" * 38 + r'\.\.\.' + "x" * 39 + '"\\]'),  # shortened to 80
    ("calibrators_not_fitted", "span", 'tuned_on.calibrators_not_fitted must be an object of decodings and reasons \\(strings\\), got "span"'),
    ("calibrators_not_fitted", {"span": 5}, 'tuned_on.calibrators_not_fitted must be an object of decodings and reasons \\(strings\\), got {"span": 5}'),
])
def test_a_tuned_on_field_of_another_kind_is_refused_naming_it(saved_model, tmp_path, field, value, match):
    """A hub model's tuned_on of a description that is no string loaded; writing its card (export, convert, a model
    continued from it by train --init-from) ended in an AttributeError traceback."""
    tuned_on = {"description": "dev.json", "questions": 3, "content_hash": "abc", field: value}
    error = refused(edit_config(copy_of(saved_model, tmp_path), tuned_on=tuned_on), match)
    assert str(error).startswith("config.json: tuned_on.") and "\n" not in str(error)


RUN_RECORD = {"train": {"encoder": "enc", "init_from": None, "seed": 42}, "seconds": 12.5, "n_examples": 8, "n_windows": 9,
              "final_loss": 2.5, "resumed_from": None, "finished": "2026-12-05 01:07:34",
              "precision_choice": {"training": {"precision": "bf16", "how": "measured", "fp32_tokens_per_s": 1.0,
                                                "bf16_tokens_per_s": 2.0, "measured": "2026-12-05 01:02:51"}}}
EVAL_RECORD = {"bio_mrc_eval_format": 1, "trained_on": {"description": "train.json", "questions": 8, "question_hash": "ab"},
               "evaluations": [{"evaluated_on": {"description": "dev.json", "questions": 3, "question_hash": "cd", "version": "2.0"},
                                "tuned_on": None, "date": "2026-12-05 01:10:07", "package_version": "0.1.0",
                                "results": {"span": {"exact_match": 50.0, "f1": 60.0, "threshold": -math.inf}}}]}


def with_records(folder: Path, run: object = RUN_RECORD, evaluation: object = EVAL_RECORD) -> Path:
    (folder / "bio_mrc_run.json").write_text(json.dumps(run))  # an always-abstaining threshold as -Infinity, as written
    (folder / "bio_mrc_eval.json").write_text(json.dumps(evaluation))
    return folder


def test_a_models_run_and_evaluation_records_as_written_load_and_make_its_card(saved_model, tmp_path):
    from bio_mrc.model_card import write_model_card

    folder = with_records(copy_of(saved_model, tmp_path))
    TrainedModel.load(folder)
    card = write_model_card(folder).read_text(encoding="utf-8")
    assert "Trained on 8 questions (9 windows) in 12 s" in card and "| `span` | 50.00 | 60.00 | −∞ (always abstain) |" in card


def _edited(record: dict, path: str, value: object) -> dict:
    record = json.loads(json.dumps(record))
    *parents, last = path.split(".")
    place = record
    for key in parents:
        place = place[int(key)] if key.isdigit() else place[key]
    place[last] = value
    return record


@pytest.mark.parametrize("file, path, value, match", [
    ("run", "train", [1], r'bio_mrc_run.json: train: \[1\] is not of type "object", "null"'),
    ("run", "train.encoder", 5, r'bio_mrc_run.json: train.encoder: 5 is not of type "string", "null"'),
    ("run", "seconds", "12", r'bio_mrc_run.json: seconds: "12" is not of type "number"'),
    ("run", "finished", "<img src=x onerror=alert(1)>", r'bio_mrc_run.json: finished: "<img src=x onerror=alert\(1\)>" is not a date'),
    ("run", "precision_choice.training.bf16_tokens_per_s", "fast", r'precision_choice.training.bf16_tokens_per_s: "fast" is not of type'),
    ("eval", "evaluations", 5, r'bio_mrc_eval.json: evaluations: 5 is not of type "array", "null"'),
    ("eval", "evaluations.0.results", [1], r'evaluations.0.results: \[1\] is not of type "object"'),
    ("eval", "evaluations.0.results.span.f1", "high", r'evaluations.0.results.span.f1: "high" is not of type "number"'),
    ("eval", "evaluations.0.date", "`x` | <b>", r'evaluations.0.date: "`x` \| <b>" is not a date and time'),
    ("eval", "trained_on.description", 5, r'bio_mrc_eval.json: trained_on.description: 5 is not of type "string", "null"'),
])
def test_a_run_or_evaluation_record_of_another_kind_is_refused_before_any_work(saved_model, tmp_path, file, path, value, match):
    """A hub model's records were read by the card alone, unchecked: a field of another kind ended export, tune (after
    answering every question) or train --init-from in a traceback, and a date held markup the card showed as it is."""
    run, evaluation = (_edited(RUN_RECORD, path, value), EVAL_RECORD) if file == "run" else (RUN_RECORD, _edited(EVAL_RECORD, path, value))
    error = refused(with_records(copy_of(saved_model, tmp_path), run, evaluation), match)
    assert "a record bio_mrc did not write as it is: delete it" in str(error) and "\n" not in str(error)


def test_an_evaluation_record_of_a_plug_in_decoding_of_any_name_loads_and_its_card_shows_the_name_as_code(saved_model, tmp_path):
    """A comparison records each decoding's scores under its registered name, and the registry takes any name: one
    such as ``décodage`` or ``span k=5`` made every later load of the model refused as a record bio_mrc did not
    write, the comparison's next run included. The card shows the name as code, on its own row."""
    from bio_mrc.evaluation_record import save_evaluation
    from bio_mrc.model_card import write_model_card

    folder = with_records(copy_of(saved_model, tmp_path))
    evaluated = {"description": "dev.json", "questions": 1, "question_hash": "cd"}
    names = ["décodage", "span k=5", "a|b `c`\nd"]
    save_evaluation(folder, [{"decoding": name, "em": [100.0], "f1": [100.0]} for name in names], {"eval": evaluated})
    TrainedModel.load(folder)
    card = write_model_card(folder).read_text(encoding="utf-8")
    assert "| `décodage` | 100.00 |" in card and "| `span k=5` | 100.00 |" in card
    assert "| ``a\\|b `c`\\nd`` | 100.00 |" in card  # one row: the pipe escaped, the backticks fenced, the break written as Python writes it


def test_a_run_record_that_is_no_json_is_refused_in_one_line(saved_model, tmp_path):
    folder = with_records(copy_of(saved_model, tmp_path))
    (folder / "bio_mrc_run.json").write_text("{\"train\": ")
    assert "\n" not in str(refused(folder, r"bio_mrc_run.json: cannot be read as JSON \(JSONDecodeError: "))


BOUNDED_THRESHOLD = r"must be a number in \[-1e\+06, 1e\+06\] or ±Infinity, got "


@pytest.mark.parametrize("value, match", [
    ("high", rf'calibration.joint.no_answer_threshold {BOUNDED_THRESHOLD}"high"'),
    ({"__float__": "NaN"}, rf"calibration.joint.no_answer_threshold {BOUNDED_THRESHOLD}NaN"),  # as config.json saves it
    (1e308, rf"calibration.joint.no_answer_threshold {BOUNDED_THRESHOLD}1e\+308"),
])
def test_a_calibrators_threshold_that_is_no_number_is_refused(saved_model, tmp_path, value, match):
    """A calibrator's own no-answer threshold went unchecked: a string ended the first answer in a numpy traceback, NaN
    gave every answer a probability of NaN."""
    calibrator = {"method": "beta", "a": 1.0, "b": 1.0, "c": 0.0, "no_answer_threshold": value}
    refused(edit_config(copy_of(saved_model, tmp_path), calibration={"joint": calibrator}), match)
    calibrator["no_answer_threshold"] = {"__float__": "-Infinity"}  # always abstain, as the saved thresholds may be
    TrainedModel.load(edit_config(copy_of(saved_model, tmp_path), calibration={"joint": calibrator}))


@pytest.mark.parametrize("method, match", [
    ("isotonic", r"calibration.joint.method must be 'beta' \(a, b and c are read as beta calibration\), got \"isotonic\""),
    (7, r"calibration.joint.method must be 'beta' .*, got 7"),
    (None, r"calibration.joint.method must be 'beta' .*, got null"),
])
def test_a_calibrator_of_another_method_is_refused_when_the_folder_loads(saved_model, tmp_path, method, match):
    """A calibrator whose numbers were whole but whose method was not 'beta' (or missing) loaded, and the first answer
    ended in calibrate()'s ValueError traceback."""
    calibrator = {"a": 1.0, "b": 1.0, "c": 0.0} | ({} if method is None else {"method": method})
    refused(edit_config(copy_of(saved_model, tmp_path), calibration={"joint": calibrator}), match)


def test_an_earlier_isotonic_calibrator_is_refused_with_what_to_do(saved_model, tmp_path):
    """Models tuned before beta calibration saved isotonic knots without a method; they were refused as lacking a, b
    and c, a line that named neither the method nor a way on (tune loads the folder too, and is refused alike)."""
    calibrator = {"x": [0.1, 0.5, 0.9], "y": [0.0, 0.4, 0.8], "correct_if": "f1 > 0.5"}  # the earlier layout
    refused(edit_config(copy_of(saved_model, tmp_path), calibration={"span": calibrator}),
            r"calibration.span.method must be 'beta' .*, got null: delete 'calibration' from config.json, then bio-mrc tune")


@pytest.mark.parametrize("a, b", [(-0.5, 1.0), (1.0, -2.0)])
def test_a_calibrator_that_would_reverse_the_ranking_is_refused(saved_model, tmp_path, a, b):
    """Beta calibration with a negative a or b is not monotone: a higher raw confidence could get a lower probability,
    against what every fitted calibrator promises (fitting drops a negative weight)."""
    calibrator = {"method": "beta", "a": a, "b": b, "c": 0.0}
    refused(edit_config(copy_of(saved_model, tmp_path), calibration={"joint": calibrator}),
            rf"calibration.joint: a and b must be 0 or more .*, got a={a}, b={b}")
    calibrator.update(a=0.0, b=0.0)  # a constant map, as a degenerate fit saves it, still loads
    TrainedModel.load(edit_config(copy_of(saved_model, tmp_path), calibration={"joint": calibrator}))


@pytest.mark.parametrize("value, match", [
    ("512", r"tokenizer_config.json: model_max_length must be a number of tokens \(0 or more\), got \"512\""),
    ([512], r"tokenizer_config.json: model_max_length must be a number of tokens \(0 or more\), got \[512\]"),
    (-1, r"tokenizer_config.json: model_max_length must be a number of tokens \(0 or more\), got -1"),
])
def test_a_tokenizer_length_that_is_no_number_is_refused(saved_model, tmp_path, value, match):
    """transformers compares each text's token count with model_max_length: a string there ended the first question
    in a TypeError traceback."""
    folder = copy_of(saved_model, tmp_path)
    path = folder / "tokenizer_config.json"
    settings = json.loads(path.read_text()) if path.is_file() else {}
    path.write_text(json.dumps(settings | {"model_max_length": value}))
    refused(folder, match)
    path.write_text(json.dumps(settings | {"model_max_length": 1000000000000000019884624838656}))  # transformers' "none"
    TrainedModel.load(folder)


def test_pickled_checkpoints_are_refused_with_the_packages_own_line(saved_model, tmp_path):
    import torch

    folder = copy_of(saved_model, tmp_path)
    (folder / "model.safetensors").unlink()
    torch.save({"weight": torch.zeros(2)}, folder / "pytorch_model.bin")  # harmless tensors: still never unpickled
    refused(folder, r"pytorch_model.bin: pickled weights are never loaded \(unpickling can run code\)")


def test_weights_a_flipped_exponent_bit_made_huge_are_refused(saved_model, tmp_path):
    from safetensors.torch import load_file, save_file

    folder = copy_of(saved_model, tmp_path)
    weights = load_file(folder / "model.safetensors")
    weights["bio_head.classifier.weight"][0, 0] = 3e37
    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})
    refused(folder, r"values beyond ±1e\+06 \(bio_head.classifier.weight\).*a corrupt file")



def _with_header(path: Path, edit) -> None:
    """Rewrite a safetensors file's JSON header with ``edit`` (the tensors' bytes stay where they are)."""
    data = path.read_bytes()
    length = int.from_bytes(data[:8], "little")
    header = json.loads(data[8 : 8 + length])
    edit(header)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(len(text).to_bytes(8, "little") + text + data[8 + length :])


@pytest.mark.parametrize("metadata", [{"format": 5}, "pt", ["pt"]])
def test_a_weights_header_whose_metadata_safetensors_cannot_read_is_one_error(saved_model, tmp_path, metadata):
    folder = copy_of(saved_model, tmp_path)
    _with_header(folder / "model.safetensors", lambda header: header.update(__metadata__=metadata))
    refused(folder, r"model.safetensors: its header's __metadata__ is not an object of text values")


@pytest.mark.parametrize("dtype, name", [("bool", "BOOL"), ("uint8", "U8"), ("int32", "I32")])
def test_floating_point_weights_saved_as_integers_or_booleans_are_refused_not_cast(saved_model, tmp_path, dtype, name):
    import torch
    from safetensors.torch import load_file, save_file

    folder = copy_of(saved_model, tmp_path)
    weights = load_file(folder / "model.safetensors")
    weights["bio_head.classifier.bias"] = weights["bio_head.classifier.bias"].to(getattr(torch, dtype))  # small: all 0
    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})
    refused(folder, rf"model.safetensors: 1 tensor holds {name} values where the model has floating point weights "
                    r"\(e.g. bio_head.classifier.bias\)")


def test_weights_saved_in_half_precision_still_load(saved_model, tmp_path):
    from safetensors.torch import load_file, save_file

    folder = copy_of(saved_model, tmp_path)
    weights = {name: tensor.half() for name, tensor in load_file(folder / "model.safetensors").items()}
    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})
    assert TrainedModel.load(folder).model.config.heads

# --- the tokenizer and the windows -----------------------------------------------------------------

@pytest.mark.parametrize("damage, match", [
    (lambda p: p.unlink(), "tokenizer.json: missing: a model folder carries its fast tokenizer's file"),
    (lambda p: p.write_text("garbage"), "tokenizer.json: not a tokenizer file tokenizers can read"),
    (lambda p: _truncate(p, 300), "tokenizer.json: not a tokenizer file tokenizers can read .*EOF"),
    (lambda p: p.write_text("[" * 100_000 + "]" * 100_000), "tokenizer.json: not a tokenizer file"),
])
def test_a_missing_or_broken_tokenizer_is_one_error_never_a_five_token_stand_in(saved_model, tmp_path, damage, match):
    folder = copy_of(saved_model, tmp_path)
    damage(folder / "tokenizer.json")
    refused(folder, match)


def test_a_model_with_windows_that_do_not_overlap_loads_and_answers_past_its_first_window(saved_model, tmp_path):
    """``train --doc-stride 0`` (its documented minimum) saves windows without overlap; every loader takes them."""
    folder = edit_config(copy_of(saved_model, tmp_path), doc_stride=0)
    context = " ".join(["the normans were in normandy"] * 40)  # some 200 tokens: several windows of 64
    trained = TrainedModel.load(folder)
    assert trained.features.doc_stride == 0 and len(trained.windows([_example(context)]).example_index) > 2
    answer = AnswerExtractor(trained)("where were the normans?", context)
    assert context[answer.spans[0].start:answer.spans[0].end] == answer.spans[0].text
    for value, match in ((-1, r"doc_stride must be an integer in \[0, 131,072\], got -1"),
                         (0.5, r"doc_stride must be an integer in \[0, 131,072\], got 0.5")):
        refused(edit_config(copy_of(saved_model, tmp_path), doc_stride=value), match)
    refused(edit_config(copy_of(saved_model, tmp_path), max_query_length=0), r"max_query_length must be an integer in \[1, 131,072\], got 0")


def _example(context: str):
    from bio_mrc.types import Example

    return Example("q", "where were the normans?", context, None)


def test_a_tokenizer_beyond_the_vocabulary_and_windows_beyond_the_positions_are_refused(saved_model, tmp_path):
    from safetensors.torch import load_file, save_file

    folder = edit_config(copy_of(saved_model, tmp_path), encoder=True, vocab_size=100)
    weights = load_file(folder / "model.safetensors")  # weights that fit the smaller vocabulary: only the tokenizer does not
    weights["encoder.embeddings.word_embeddings.weight"] = weights["encoder.embeddings.word_embeddings.weight"][:100].clone()
    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})
    refused(folder, r"tokenizer.json: maps tokens to ids up to 223, past the encoder's vocab_size 100")
    folder = edit_config(copy_of(saved_model, tmp_path), max_seq_length=256)
    refused(folder, "max_position_embeddings 128 is less than max_seq_length 256: the encoder cannot read its own windows")


def test_a_special_token_outside_the_vocabulary_is_refused_not_added_past_the_embeddings(saved_model, tmp_path):
    folder = copy_of(saved_model, tmp_path)
    settings = json.loads((folder / "tokenizer_config.json").read_text())
    (folder / "tokenizer_config.json").write_text(json.dumps({**settings, "cls_token": "[ALS]"}))  # one flipped bit
    refused(folder, r"tokenizer_config.json: cls_token \"\[ALS\]\" is not in tokenizer.json's vocabulary")


def _with_special(folder: Path, key: str, value, file: str = "tokenizer_config.json") -> Path:
    settings = json.loads((folder / file).read_text()) if (folder / file).is_file() else {}
    (folder / file).write_text(json.dumps({**settings, key: value}))
    return folder


def test_a_cls_token_of_null_is_refused_not_loaded_with_another_token_at_the_no_answer_position(saved_model, tmp_path):
    from bio_mrc.encoders import load_tokenizer

    folder = _with_special(copy_of(saved_model, tmp_path), "cls_token", None)
    # transformers rebuilds BERT's template from the file's cls_token, not tokenizer.json's: it loses its [CLS] and
    # puts the fallback id 2 at the no-answer position (all-MiniLM-L6-v2's [unused1]; the tiny vocabulary's [CLS])
    assert load_tokenizer(str(folder)).cls_token_id is None
    refused(folder, r"tokenizer_config.json: cls_token null is not one of the special tokens tokenizer.json puts in every "
                    r"window \(\[CLS\], \[SEP\]\)")


def test_cls_and_sep_tokens_swapped_are_refused_not_loaded_with_the_frame_reversed(saved_model, tmp_path):
    """Each swapped token is still one of the frame's, so only the frame the tokenizer builds tells them apart."""
    folder = copy_of(saved_model, tmp_path)
    settings = json.loads((folder / "tokenizer_config.json").read_text())
    _with_special(_with_special(folder, "cls_token", settings["sep_token"]), "sep_token", settings["cls_token"])
    refused(folder, r'^tokenizer_config.json: its special tokens frame a question and a context as "\[SEP\] .* \[CLS\] .* '
                    r'\[CLS\]", where tokenizer.json, which the model was trained with, frames them as '
                    r'"\[CLS\] .* \[SEP\] .* \[SEP\]" \(cls_token and sep_token swapped or changed\?\)')
    _with_special(_with_special(folder, "cls_token", settings["cls_token"]), "sep_token", settings["sep_token"])
    assert TrainedModel.load(folder).tokenizer("a", "b")["input_ids"][0] == TrainedModel.load(saved_model).tokenizer.cls_token_id


@pytest.mark.parametrize("file", ["tokenizer_config.json", "special_tokens_map.json"])
@pytest.mark.parametrize("key, value, problem", [
    ("cls_token", {}, "cls_token must be a token's text or an added token's object with its 'content', got {}"),
    ("sep_token", None, "sep_token null is not one of the special tokens"),
    ("cls_token", "[MASK]", 'cls_token "\\[MASK\\]" is not one of the special tokens'),
    ("pad_token", {}, "pad_token must be a token's text"),
    ("unk_token", 5, "unk_token must be a token's text or an added token's object with its 'content', got 5"),
    ("mask_token", {"special": True}, "mask_token must be a token's text"),
])
def test_special_tokens_other_than_the_trained_ones_are_refused_naming_the_file_and_key(saved_model, tmp_path, file, key,
                                                                                         value, problem):
    from bio_mrc.model_folder import check_tokenizer

    folder = _with_special(copy_of(saved_model, tmp_path), key, value, file)
    with pytest.raises(ModelFormatError, match=f"^{file}: {problem}"):
        check_tokenizer(folder, 1000)


@pytest.mark.parametrize("key, value", [("pad_token", None), ("mask_token", None), ("unk_token", None),
                                        ("bos_token", None), ("cls_token", {"content": "[CLS]", "special": True})])
def test_special_tokens_hub_tokenizers_save_still_load(saved_model, tmp_path, key, value):
    from bio_mrc.model_folder import check_tokenizer

    folder = _with_special(copy_of(saved_model, tmp_path), key, value)
    check_tokenizer(_with_special(folder, key, value, "special_tokens_map.json"), 1000)


@pytest.mark.parametrize("which", ["tiny_bpe_tokenizer", "metaspace_tokenizer", "without special tokens"])
def test_roberta_sentencepiece_and_plain_tokenizers_still_load(which, request, tmp_path):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    from bio_mrc.model_folder import check_tokenizer

    if which == "without special tokens":  # no post-processor: a null cls_token is what it is trained with
        plain = Tokenizer(models.WordLevel({"a": 0, "b": 1, "<unk>": 2}, unk_token="<unk>"))
        plain.pre_tokenizer = pre_tokenizers.Whitespace()
        tokenizer = PreTrainedTokenizerFast(tokenizer_object=plain, unk_token="<unk>")
    else:
        tokenizer = request.getfixturevalue(which)
    tokenizer.save_pretrained(str(tmp_path))
    if which == "without special tokens":
        _with_special(tmp_path, "cls_token", None)
    check_tokenizer(tmp_path, len(tokenizer))


def test_tokenizer_files_transformers_cannot_read_are_one_error(saved_model, tmp_path, monkeypatch):
    import transformers

    from bio_mrc.encoders import load_tokenizer

    def unreadable(*args, **kwargs):
        raise ValueError("Tokenizer class BertTokenizes does not exist or is not currently imported.")

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", unreadable)
    with pytest.raises(ModelFormatError, match="its tokenizer files cannot be loaded: Tokenizer class BertTokenizes"):
        load_tokenizer(str(saved_model))


def test_a_tokenizer_class_needing_a_missing_package_is_one_error(saved_model, monkeypatch):
    """XLM's and FlauBERT's tokenizers import sacremoses when they are made: where it is not installed, one line."""
    import transformers

    from bio_mrc.encoders import load_tokenizer

    def needs_sacremoses(*args, **kwargs):
        raise ImportError("You need to install sacremoses to use XLMTokenizer.")

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", needs_sacremoses)
    with pytest.raises(ModelFormatError, match="its tokenizer files cannot be loaded: You need to install sacremoses to use XLMTokenizer"):
        load_tokenizer(str(saved_model))


def test_a_model_whose_tokenizer_transformers_cannot_build_is_refused_before_its_weights_load(saved_model, tmp_path, monkeypatch):
    from bio_mrc.model import BioMrcForQuestionAnswering

    folder = _with_special(copy_of(saved_model, tmp_path), "tokenizer_class", "XLNetTokenizer")

    def no_weights(*args, **kwargs):
        raise AssertionError("weights loaded before the tokenizer was checked")

    monkeypatch.setattr(BioMrcForQuestionAnswering, "from_pretrained", no_weights)
    with pytest.raises(ModelFormatError, match="its tokenizer files cannot be loaded"):
        TrainedModel.load(folder, device="cpu")


@pytest.mark.parametrize("name", ["config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"])
@pytest.mark.parametrize("kind, words", [("folder", "is a folder, not a file"), ("fifo", r"is a named pipe \(FIFO\), not a file")])
def test_a_model_file_that_is_no_regular_file_is_named_as_what_it_is(saved_model, tmp_path, name, kind, words):
    """Not "missing" (nor, for tokenizer_config.json, passed over): the line says what stands under the file's name."""
    import os

    folder = copy_of(saved_model, tmp_path)
    (folder / name).unlink()
    if kind == "folder":
        (folder / name).mkdir()
    elif hasattr(os, "mkfifo"):
        os.mkfifo(folder / name)
    else:
        pytest.skip("no FIFOs here")
    with pytest.raises(ModelFormatError, match=f"^{name}: {words} \\(in "):
        TrainedModel.load(folder, device="cpu")


def test_the_pipeline_refuses_a_folder_without_its_tokenizer(saved_model, tmp_path):
    from transformers import pipeline

    folder = copy_of(saved_model, tmp_path)
    (folder / "tokenizer.json").unlink()
    with pytest.raises(ModelFormatError, match="tokenizer.json: missing"):
        pipeline("bio-mrc-qa", model=str(folder), device="cpu")


def test_the_cli_names_a_broken_model_in_one_line_with_exit_2(saved_model, tmp_path, capsys):
    from .conftest import SAMPLE_V1

    folder = edit_config(copy_of(saved_model, tmp_path), encoder=True, num_hidden_layers=3)
    code = main(["predict", "--model", str(folder), "--data", str(SAMPLE_V1), "--output", str(tmp_path / "p.json")])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and str(folder) in err and "lacks 16 tensors" in err
    assert len(err.strip().splitlines()) == 1


# --- ONNX --------------------------------------------------------------------------------------------

def onnx_folder(tmp_path: Path, saved_model: Path, graph_outputs=(("start_logits", 2), ("end_logits", 2), ("bio_logits", 3)),
                location: str | None = None, values=(0.0,)) -> Path:
    """A folder with the model's config and tokenizer and a small hand-made graph of the given outputs (its one
    initializer ``w`` holds ``values``)."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    folder = copy_of(saved_model, tmp_path)
    (folder / "model.safetensors").unlink()
    ids = helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "sequence"])
    outputs = [helper.make_tensor_value_info(name, TensorProto.FLOAT, ["batch", "sequence", *([3] if rank == 3 else [])])
               for name, rank in graph_outputs]
    weight = numpy_helper.from_array(np.array(values, dtype=np.float32), "w")
    if location is not None:
        weight.data_location = TensorProto.EXTERNAL
        weight.external_data.add(key="location", value=location)
        weight.ClearField("raw_data")
    nodes = [helper.make_node("Identity", ["input_ids"], [out.name]) for out in outputs]
    onnx.save(helper.make_model(helper.make_graph(nodes, "g", [ids], outputs, [weight])), str(folder / "model.onnx"))
    return folder


def test_onnx_models_are_checked_before_a_session_opens(saved_model, tmp_path):
    check_model_folder(onnx_folder(tmp_path, saved_model), onnx=True)  # a graph of the right signature passes
    folder = onnx_folder(tmp_path, saved_model, location="../outside.bin")
    with pytest.raises(ModelFormatError, match=r"model.onnx: its external data '../outside.bin' lies outside the folder"):
        check_model_folder(folder, onnx=True)
    folder = onnx_folder(tmp_path, saved_model, graph_outputs=(("start_logits", 2), ("end_logits", 2)))
    with pytest.raises(ModelFormatError, match="model.onnx: lacks the output 'bio_logits' of its bio head"):
        check_model_folder(folder, onnx=True)
    folder = onnx_folder(tmp_path, saved_model, graph_outputs=(("start_logits", 3), ("end_logits", 2), ("bio_logits", 3)))
    with pytest.raises(ModelFormatError, match=r"output 'start_logits' has shape \['batch', 'sequence', 3\], not \(batch, sequence\)"):
        check_model_folder(folder, onnx=True)
    _truncate(folder / "model.onnx", 40)
    with pytest.raises(ModelFormatError, match="model.onnx: not an ONNX model"):
        check_model_folder(folder, onnx=True)


@pytest.mark.parametrize("values, held", [((0.5, float("nan"), 1.0), "holds 1 NaN and 0 infinite values of 3"),
                                          ((0.5, float("inf"), -float("inf")), "holds 0 NaN and 2 infinite values of 3")])
@pytest.mark.parametrize("external", [False, True])
def test_an_onnx_initializer_holding_nan_or_infinity_is_refused_at_load(saved_model, tmp_path, capsys, values, held, external):
    """Non-finite weights in an export were found only once its scores came out; its initializers (their external
    data too) are read at load, and one that is not finite is one line naming it."""
    import numpy as np
    import onnx

    folder = onnx_folder(tmp_path, saved_model, values=values)
    if external:  # the export's weights in model.onnx.data beside it, as a large model's are
        onnx.save(onnx.load(str(folder / "model.onnx")), str(folder / "model.onnx"), save_as_external_data=True,
                  all_tensors_to_one_file=True, location="model.onnx.data", size_threshold=0)
        assert (folder / "model.onnx.data").read_bytes() == np.array(values, dtype=np.float32).tobytes()
    problem = f"model.onnx: its initializer 'w' ({len(values)}) {held}"
    with pytest.raises(ModelFormatError, match=re.escape(problem)):
        check_model_folder(folder, onnx=True)
    assert main(["extract", "--model", str(folder), "--question", "Who?", "--context", "Ada wrote it."]) == 2
    assert capsys.readouterr().err.splitlines() == [f"error: {problem}: the model's weights were not finite when it was "
                                                    f"exported (a diverged training run or a corrupt file) (in {folder})"]


@pytest.mark.parametrize("values", [(-float("inf"),), (0.0, -float("inf"), 0.0, -float("inf")), (float("inf"), -float("inf"))])
def test_an_onnx_attention_masks_infinities_pass_the_check(saved_model, tmp_path, values):
    """A lone fill value, or a mask of zeros and infinities alone, is a mask's: no weight holds it."""
    check_model_folder(onnx_folder(tmp_path / "m", saved_model, values=values), onnx=True)


# --- texts that tokenize to nothing ------------------------------------------------------------------

@pytest.mark.parametrize("text", ["\u0000", "\u200b\u200b", " \u00ad ", "\ufeff\n\t", "\u0301"])
def test_a_question_or_context_that_tokenizes_to_nothing_is_refused_everywhere(saved_model, tmp_path, text):
    from bio_mrc.data.squad import load_squad

    extractor = AnswerExtractor(TrainedModel.load(saved_model, precision="fp32"))
    with pytest.raises(DataFormatError, match=r"the question holds no readable text.*\(record 'input 0'\)"):
        extractor(text, "Paris is the capital of France.")
    with pytest.raises(DataFormatError, match="the context holds no readable text"):
        extractor("Where?", text)
    data = tmp_path / "data.json"
    qa = {"id": "q1", "question": text, "answers": [{"text": "Paris", "answer_start": 0}]}
    data.write_text(json.dumps({"data": [{"title": "t", "paragraphs": [{"context": "Paris is here.", "qas": [qa]}]}]}))
    with pytest.raises(DataFormatError, match=r"the question holds no readable text.*record 'q1'"):
        load_squad(data)
    assert extractor("Where?\u200b", "Paris\u00ad is here.").spans  # invisible characters beside text are read as ever


def test_the_pipeline_and_the_cli_refuse_a_question_of_zero_width_spaces_in_one_line(saved_model, capsys):
    from transformers import pipeline

    qa = pipeline("bio-mrc-qa", model=str(saved_model), device="cpu")
    with pytest.raises(DataFormatError, match="the question holds no readable text"):
        qa(question="\u200b\u00ad", context="Paris is here.")
    code = main(["extract", "--model", str(saved_model), "--question", "\u200b", "--context", "Paris is here."])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and "the question holds no readable text" in err.strip().splitlines()[-1]


def test_serve_answers_422_for_a_question_of_zero_width_spaces(saved_model):
    from fastapi.testclient import TestClient

    from bio_mrc.serving.app import create_app
    from bio_mrc.serving.config import ServeConfig

    app = create_app(AnswerExtractor(TrainedModel.load(saved_model, precision="fp32")), ServeConfig())
    with TestClient(app) as client:
        response = client.post("/answer", json={"question": "\u200b\u200b", "context": "Paris is here."})
    assert response.status_code == 422 and "no readable text" in response.json()["detail"]


# --- report numbers read back --------------------------------------------------------------------

CELL = {"run": "joint", "decoding": "span", "seed": 1, "model_dir": "m", "answers": ["a", "b"], "decode_seconds": 0.5,
        "em": [100.0, 0.0], "f1": [100.0, 50.0]}


@pytest.mark.parametrize("field, value, match", [
    ("f1", [-500.0, 50.0], r"field 'f1' holds -500.0 at position 0, outside \[0, 100\]"),
    ("f1", [100.0, 250.0], r"field 'f1' holds 250.0 at position 1, outside \[0, 100\]"),
    ("em", [math.nan, 0.0], r"field 'em' holds NaN at position 0"),
    ("f1", "high", r'field \'f1\' must be a list of per-question scores, got "high"'),
    ("seed", "one", r'field \'seed\' must be an integer, got "one"'),
    ("decode_seconds", -1, r"field 'decode_seconds' must be a number of seconds >= 0"),
    ("answers", [1, 2], "field 'answers' must be a list of answer strings"),
])
def test_impossible_numbers_in_a_cell_read_back_are_refused_naming_the_field(field, value, match):
    from bio_mrc.harness.results import Cell

    with pytest.raises(ConfigError, match=r"^cells/m.json: cell 0: " + match):
        Cell.from_json({**CELL, field: value}, "cells/m.json: cell 0")
    assert Cell.from_json(CELL, "cells/m.json: cell 0").f1.tolist() == [100.0, 50.0]


# --- the property: any corruption ends in a model or ModelFormatError ------------------------------

FILES = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json")
VALUES = (lambda r: 10 ** r.randint(3, 12), lambda r: -r.randint(1, 100), lambda r: 0, lambda r: "x", lambda r: r.random() * 100,
          lambda r: None, lambda r: [1, 2], lambda r: {"a": 1}, lambda r: True, lambda r: 1e308, lambda r: r.randint(1, 300))


def corrupt(folder: Path, rng: random.Random) -> str:
    """One random corruption: truncate or flip bytes of a file, edit one config field, or remove a file."""
    kind, name = rng.choice(("truncate", "flip", "edit", "remove")), rng.choice(FILES)
    path = folder / name
    if kind == "truncate":
        _truncate(path, rng.randrange(path.stat().st_size))
    elif kind == "flip":
        data = bytearray(path.read_bytes())
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        path.write_bytes(bytes(data))
    elif kind == "remove":
        path.unlink()
    else:
        config = json.loads((folder / "config.json").read_text())
        target = config if rng.random() < 0.5 else config["encoder"]
        name = rng.choice(sorted(target))
        target[name] = rng.choice(VALUES)(rng)
        (folder / "config.json").write_text(json.dumps(config))
        return f"edit {name} = {target[name]!r}"
    return f"{kind} {name}"


def _took_too_long(*_):
    raise TimeoutError("one load took over 20 s")


def run_corruptions(saved_model: Path, tmp_path: Path, cases: int, seed: int) -> dict[str, int]:
    """Each corrupted copy loads and answers, or is one ModelFormatError; anything else (a TimeoutError past
    20 s included) fails the test, naming the corruption."""
    rng, outcomes = random.Random(seed), {"answered": 0, "refused": 0}
    previous = signal.signal(signal.SIGALRM, _took_too_long)
    try:
        for case in range(cases):
            folder = copy_of(saved_model, tmp_path)
            what = corrupt(folder, rng)
            signal.alarm(20)
            try:
                AnswerExtractor(TrainedModel.load(folder, precision="fp32"))("Where is Paris?", "Paris is the capital of France.")
                outcomes["answered"] += 1
            except ModelFormatError:
                outcomes["refused"] += 1
            except BaseException as err:
                raise AssertionError(f"case {case} ({what}) ended in {type(err).__name__}: {err}") from err
            finally:
                signal.alarm(0)
    finally:
        signal.signal(signal.SIGALRM, previous)
    return outcomes


def test_twenty_random_corruptions_each_end_in_a_model_or_a_model_format_error(saved_model, tmp_path):
    outcomes = run_corruptions(saved_model, tmp_path, 20, seed=7)
    assert sum(outcomes.values()) == 20 and outcomes["refused"] > 0


@pytest.mark.slow
def test_two_hundred_random_corruptions_each_end_in_a_model_or_a_model_format_error(saved_model, tmp_path):
    outcomes = run_corruptions(saved_model, tmp_path, 200, seed=2026)
    assert sum(outcomes.values()) == 200 and outcomes["refused"] > 100 and outcomes["answered"] > 0


def test_a_replaced_model_loses_only_the_model_files_the_new_one_does_not_write(tmp_path):
    from bio_mrc.model_folder import remove_replaced_model_files

    old = ["model.onnx", "model.onnx.data", "bio_mrc_export.json", "model-00001-of-00002.safetensors", "model.safetensors",
           "bio_mrc_eval.json", "config.json", "notes.txt", "model.onnx.bak", "my-model.safetensors"]
    for name in old:
        (tmp_path / name).write_text("old")
    (tmp_path / "elsewhere.txt").write_text("theirs")
    (tmp_path / "pytorch_model.bin").symlink_to(tmp_path / "elsewhere.txt")  # a link is never removed
    removed = remove_replaced_model_files(tmp_path, ["model.safetensors", "config.json", "tokenizer.json"])
    assert removed == ["bio_mrc_eval.json", "bio_mrc_export.json", "model-00001-of-00002.safetensors", "model.onnx",
                       "model.onnx.data"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.json", "elsewhere.txt", "model.onnx.bak", "model.safetensors",
                                                          "my-model.safetensors", "notes.txt", "pytorch_model.bin"]


def test_a_tuned_setting_of_no_registered_decoding_loads_with_one_warning_line(saved_model, tmp_path, monkeypatch, capsys):
    """A misspelt threshold key ("bio" for "bio/ratio") held nothing back and said nothing; a plug-in decoding's key
    is no error: its model loads where the plug-in is registered, silently, and elsewhere with the warning."""
    import dataclasses
    import warnings

    from bio_mrc import registry
    from bio_mrc.model_folder import UnusedSettingWarning

    folder = edit_config(copy_of(saved_model, tmp_path), no_answer_thresholds={"bio": 0.5, "span": 1.0})
    with pytest.warns(UnusedSettingWarning) as caught:
        TrainedModel.load(folder)
    assert [str(w.message) for w in caught] == [
        f"{folder / 'config.json'}: no_answer_thresholds key \"bio\" is the no-answer score of no registered decoding "
        "(bio/ratio, joint, span), so nothing uses it: a misspelt key, or a plug-in decoding's not imported here?"]
    monkeypatch.setitem(registry.DECODINGS, "plugged", dataclasses.replace(registry.decoding("span"), name="plugged", threshold_key="bio"))
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnusedSettingWarning)
        TrainedModel.load(folder)
        monkeypatch.delitem(registry.DECODINGS, "plugged")
        TrainedModel.load(folder)  # warned of once
    edit_config(folder, calibration={"jiont": {"method": "beta", "a": 1.0, "b": 1.0, "c": 0.0}})
    capsys.readouterr()
    assert main(["extract", "--model", str(folder), "--question", "who?", "--context", "the normans ruled."]) == 0
    assert [line for line in capsys.readouterr().err.splitlines() if "jiont" in line or "Warning" in line] == [
        f"warning: {folder / 'config.json'}: calibration key \"jiont\" names no registered decoding (bio, joint, span), so "
        "nothing uses it: a misspelt key, or a plug-in decoding's not imported here?"]


@pytest.mark.parametrize("export_format, problem", [
    (2, r"export_format: written by a newer bio_mrc \(export format 2\); this bio_mrc .* reads formats up to 1: upgrade bio_mrc"),
    (True, "export_format: export format true is not one bio_mrc writes"),
    (0, "export_format: export format 0 is not one bio_mrc writes"),
    (-3, "export_format: export format -3 is not one bio_mrc writes"),
])
def test_an_export_marker_holds_a_format_bio_mrc_has_written(tmp_path, export_format, problem):
    from bio_mrc.inference.onnx_runner import EXPORT_FILE, check_export_marker

    (tmp_path / EXPORT_FILE).write_text(json.dumps({"format": "onnx", "export_format": 1}))
    assert check_export_marker(tmp_path)["export_format"] == 1
    (tmp_path / EXPORT_FILE).write_text(json.dumps({"format": "onnx", "export_format": export_format}))
    with pytest.raises(ModelFormatError, match=f"^{EXPORT_FILE}: {problem}"):
        check_export_marker(tmp_path)


@pytest.mark.slow
def test_a_non_ascii_model_folder_loads_under_an_ascii_locale(tiny_tokenizer, tmp_path):
    """Under LC_ALL=C the folder's name reaches Python as surrogates; tokenizers, handed it as a name, cannot encode
    it (and under Latin-1 opens another name): ``tokenizer.json`` is read by Python instead."""
    folder = tmp_path / "modèle-ü"
    tiny_tokenizer.save_pretrained(str(folder))
    code = ("import sys\nfrom transformers import AutoTokenizer\nfrom bio_mrc.model_folder import check_window_frame\n"
            "check_window_frame(sys.argv[1], AutoTokenizer.from_pretrained(sys.argv[1]))\nprint('checked')")
    run = ascii_locale_run(code, str(folder))
    assert (run.returncode, run.stdout.strip()) == (0, "checked"), run.stderr[-2000:]


def test_an_encoder_without_the_vocabulary_its_named_tokenizer_reads_is_told_which_files_are_missing(tiny_encoder_dir,
                                                                                                     tmp_path):
    """tokenizer_config.json names BertTokenizer, which reads vocab.txt or tokenizer.json: the line names those files
    as missing, not BertTokenizer as a tokenizer without a vocabulary (what Canine is)."""
    from bio_mrc.model_folder import check_encoder_folder

    for name in ("config.json", "model.safetensors", "tokenizer_config.json"):
        shutil.copy(tiny_encoder_dir / name, tmp_path / name)
    assert json.loads((tmp_path / "tokenizer_config.json").read_text(encoding="utf-8"))["tokenizer_class"] == "BertTokenizer"
    with pytest.raises(ModelFormatError) as refused:
        check_encoder_folder(tmp_path)
    assert str(refused.value) == (
        "no tokenizer vocabulary (tokenizer.json, vocab.txt, vocab.json or a SentencePiece .model file): its "
        "tokenizer_config.json names BertTokenizer, whose vocabulary file is missing (it looks for vocab.txt, "
        f"tokenizer.json): copy the encoder's tokenizer files into it (in {tmp_path})")


@pytest.mark.parametrize(("key", "value", "problem"), [
    ("use_cache", "x", "describes no model this version can build: Validation error for field 'use_cache': TypeError: "
                       "Field 'use_cache' expected bool, got str (value: 'x')"),
    ("num_hidden_layers", -1, "num_hidden_layers must be an integer in [1, 96], got -1"),
    ("hidden_size", 10**9, "hidden_size must be an integer in [1, 16,384], got 1000000000"),
    ("hidden_act", "nope", "hidden_act must be one of transformers' activations (gelu, gelu_10, gelu_accurate, gelu_fast, "
                           "gelu_new, gelu_python, …), got \"nope\""),
])
def test_an_encoder_whose_config_transformers_rejects_is_one_line(tiny_encoder_dir, tmp_path, key, value, problem):
    """Checked as an init_from model's encoder is (sizes, then a build on the meta device): a negative layer count
    trained a model of no layers, the others ended in a traceback once the encoder loaded."""
    from bio_mrc.model_folder import check_encoder_folder

    shutil.copytree(tiny_encoder_dir, tmp_path / "encoder")
    config = json.loads((tmp_path / "encoder" / "config.json").read_text(encoding="utf-8"))
    (tmp_path / "encoder" / "config.json").write_text(json.dumps({**config, key: value}), encoding="utf-8")
    with pytest.raises(ModelFormatError) as refused:
        check_encoder_folder(tmp_path / "encoder")
    assert str(refused.value) == f"config.json: {problem} (in {tmp_path / 'encoder'})"


def test_train_refuses_an_encoder_whose_config_transformers_rejects_before_any_work(tiny_encoder_dir, tmp_path, capsys):
    from .conftest import SAMPLE_V1

    shutil.copytree(tiny_encoder_dir, tmp_path / "encoder")
    config = json.loads((tmp_path / "encoder" / "config.json").read_text(encoding="utf-8"))
    (tmp_path / "encoder" / "config.json").write_text(json.dumps({**config, "use_cache": "x"}), encoding="utf-8")
    code = main(["train", "--train", str(SAMPLE_V1), "--output-dir", str(tmp_path / "out"), "--encoder",
                 str(tmp_path / "encoder"), "--precision", "auto"])
    assert code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith("error: config.json: describes no model this version")
    assert not (tmp_path / "out").exists()


LATIN1_NAME_LINE = ("its name holds the byte \\xe8, which is not UTF-8 and which safetensors and tokenizers cannot name a "
                    "file by (a name written in Latin-1?): rename the folder in UTF-8")


def _latin1_named(folder: Path) -> Path:
    """``folder`` renamed with an ``è`` spelled in Latin-1 (the byte 0xe8), as an archive made on another system unpacks
    it."""
    renamed = Path(os.fsdecode(os.fsencode(folder) + b"-mod\xe8le"))
    try:
        os.rename(folder, renamed)
    except OSError:
        pytest.skip("this file system takes UTF-8 names alone")
    return renamed


def test_a_model_folder_whose_name_is_not_utf8_is_refused_in_one_line_at_every_door(saved_model, tiny_encoder_dir,
                                                                                        tmp_path):
    """safetensors and tokenizers open a file by a UTF-8 name alone: a model, encoder or QA model folder named in
    Latin-1 is one line naming the byte, and an output folder so named is refused saying to rename it."""
    from bio_mrc.io import check_library_path
    from bio_mrc.model_folder import check_encoder_folder
    from bio_mrc.qa_checkpoints import check_qa_folder

    folder = _latin1_named(copy_of(saved_model, tmp_path))
    refused(folder, re.escape(LATIN1_NAME_LINE))
    for check, copied in ((check_encoder_folder, tiny_encoder_dir), (check_qa_folder, saved_model)):
        with pytest.raises(ModelFormatError, match=re.escape(LATIN1_NAME_LINE)):
            check(_latin1_named(shutil.copytree(copied, tmp_path / check.__name__)))
    with pytest.raises(ConfigError, match=r"this name holds the byte \\xe8, which is not UTF-8 .*; give a name spelled in UTF-8"):
        check_library_path(str(folder) + "-export")


@pytest.mark.slow
def test_the_cli_refuses_a_model_folder_whose_name_is_not_utf8_in_one_line(saved_model, tmp_path):
    """The command line's refusal is that line alone, naming the folder as Python shows an undecodable name."""
    folder = _latin1_named(copy_of(saved_model, tmp_path))
    run = subprocess.run([sys.executable, "-m", "bio_mrc", "extract", "--model", str(folder), "--question", "Who?",
                          "--context", "Ada wrote it."], capture_output=True, text=True, encoding="utf-8", errors="replace")
    assert (run.returncode, run.stderr.splitlines()) == (2, [f"error: {LATIN1_NAME_LINE} (in {tmp_path}/copy-mod\\udce8le)"])


@pytest.mark.parametrize("value, shown", [(1e308, r"1e\+308"), (-2e6, r"-2000000\.0"), ("0.5", r'"0\.5"')])
def test_a_saved_threshold_past_its_bounds_is_refused_naming_them(saved_model, tmp_path, value, shown):
    """A finite threshold past ±1e6 was refused as no number at all ("must be a number, got 1e+308")."""
    refused(edit_config(copy_of(saved_model, tmp_path), no_answer_thresholds={"span": value}),
            rf"config.json: no_answer_thresholds.span {BOUNDED_THRESHOLD}{shown} \(in ")
