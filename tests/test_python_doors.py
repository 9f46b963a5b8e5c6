"""The public Python calls a command runs (evaluate_predictions, tune_model, predict_to_files, export_onnx,
export_qa_checkpoint, convert_qa_checkpoint, train_model) meet bad arguments as the commands meet bad options: one
line naming the call and the argument (a TypeError for a wrong type, a BioMrcError for a wrong value), before any
work, with nothing written and no input changed."""

import hashlib
import json
import re

import pytest

from bio_mrc.data.squad import load_squad
from bio_mrc.errors import BioMrcError, ConfigError

from .conftest import SAMPLE_V1
from .test_bad_input import saved_model  # noqa: F401  (module-scoped fixture: an untrained saved model)


@pytest.fixture
def place(saved_model, tmp_path):  # noqa: F811
    """A model, a data file and a predictions file of the user's, and the folder every output goes to."""
    data = tmp_path / "data.json"
    data.write_bytes(SAMPLE_V1.read_bytes())
    predictions = tmp_path / "preds.json"
    predictions.write_text(json.dumps({ex.id: "x" for ex in load_squad(SAMPLE_V1).examples}))
    return {"model": saved_model, "data": data, "predictions": predictions, "out": tmp_path / "out"}


def _evaluate(place, **given):
    from bio_mrc.inference import evaluate_predictions

    return evaluate_predictions(**{"data": place["data"], "predictions": place["predictions"], **given})


def _tune(place, **given):
    from bio_mrc.inference import tune_model

    return tune_model(**{"model": place["model"], "data": place["data"], "output_dir": place["out"], "calibrate": False,
                         **given})


def _predict(place, **given):
    from bio_mrc.inference import TrainedModel
    from bio_mrc.inference.streaming import StreamPlan, predict_to_files

    arguments = {"trained": None, "questions": load_squad(place["data"]).examples, "plan": StreamPlan(("span",)),
                 "output": place["out"] / "preds.json", **given}
    if arguments["trained"] is None:
        arguments["trained"] = TrainedModel.load(place["model"])
    return predict_to_files(**arguments)


def _onnx(place, **given):
    from bio_mrc.inference import export_onnx

    return export_onnx(**{"model_dir": place["model"], "output_dir": place["out"], **given})


def _transformers(place, **given):
    from bio_mrc.inference import export_qa_checkpoint

    return export_qa_checkpoint(**{"model_dir": place["model"], "output_dir": place["out"], **given})


def _convert(place, **given):
    from bio_mrc.inference import convert_qa_checkpoint

    return convert_qa_checkpoint(**{"model": place["model"], "output_dir": place["out"], **given})


def _train(place, **given):
    from bio_mrc.training.train import TrainConfig, train_model

    config = TrainConfig(encoder=str(place["model"]), epochs=1)
    return train_model(**{"examples": load_squad(place["data"]).examples, "config": config,
                          "output_dir": place["out"], **given})


DOORS = {"evaluate_predictions": _evaluate, "tune_model": _tune, "predict_to_files": _predict, "export_onnx": _onnx,
         "export_qa_checkpoint": _transformers, "convert_qa_checkpoint": _convert, "train_model": _train}

PATHS = [("evaluate_predictions", "data"), ("evaluate_predictions", "predictions"), ("tune_model", "model"),
         ("tune_model", "data"), ("predict_to_files", "output"), ("export_onnx", "model_dir"), ("export_onnx", "output_dir"),
         ("export_qa_checkpoint", "model_dir"), ("export_qa_checkpoint", "output_dir"), ("convert_qa_checkpoint", "model"),
         ("convert_qa_checkpoint", "output_dir"), ("train_model", "output_dir")]


def _contents(folder):
    return {path.relative_to(folder).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None
            for path in sorted(folder.rglob("*"))}


def _refused(place, call, error, match, **given):
    """``call`` with ``given`` raises ``error`` in one line matching ``match``; no file is written or changed."""
    folders = [place["data"].parent, place["model"]]
    before = [_contents(folder) for folder in folders]
    with pytest.raises(error, match=match) as info:
        DOORS[call](place, **given)
    assert "\n" not in str(info.value)
    assert [_contents(folder) for folder in folders] == before
    assert not place["out"].exists()


@pytest.mark.parametrize("call, argument", PATHS)
@pytest.mark.parametrize("value, shown", [({"a": 1}, "a dict"), (None, "None"), (3, "an int")])
def test_a_path_of_the_wrong_type_is_a_type_error_naming_the_call_and_argument(place, call, argument, value, shown):
    _refused(place, call, TypeError, re.escape(f"{call}: {argument} is a path (a str or os.PathLike), got {shown}"),
             **{argument: value})


@pytest.mark.parametrize("call, argument, value, match", [
    ("evaluate_predictions", "na_probs", {"a": 1}, "na_probs is a path (a str or os.PathLike) or None, got a dict"),
    ("tune_model", "output_dir", 3, "output_dir is a path (a str or os.PathLike) or None, got an int"),
    ("tune_model", "options", {"bio_length_prior": 1}, "options is a DecodeConfig or None, got a dict"),
    ("tune_model", "decodings", "span", "decodings is a list of names (or None), got the string 'span': give ['span']"),
    ("evaluate_predictions", "task", 3, "task is a registry task entry or a scorer's name (squad, multispan), got an int"),
    ("predict_to_files", "trained", "MODEL", "trained is a TrainedModel, got a str (load a model folder with TrainedModel.load(path))"),
    ("predict_to_files", "plan", ["span"], "plan is a StreamPlan, got a list"),
    ("predict_to_files", "questions", {"id": "q"}, "questions is a list or iterator of Example"),
    ("predict_to_files", "questions", "DATA", "questions is a list or iterator of Example"),
    ("predict_to_files", "questions", [{"id": "q"}], "questions holds a dict, not an Example"),
    ("predict_to_files", "questions", iter([None]), "questions holds None, not an Example"),
    ("train_model", "config", {"encoder": "x"}, "config is a TrainConfig, got a dict"),
    ("train_model", "callbacks", "print", "callbacks is a list of TrainerCallback (instances or classes), got a str"),
    ("train_model", "callbacks", [print], "callbacks is a list of TrainerCallback (instances or classes), holding a builtin_function_or_method"),
    ("convert_qa_checkpoint", "max_seq_len", 64, "unknown window setting 'max_seq_len'; the window settings are max_seq_length"),
])
def test_an_argument_of_the_wrong_type_is_a_type_error_naming_it(place, call, argument, value, match):
    value = str(place["data"]) if value == "DATA" else str(place["model"]) if value == "MODEL" else value
    _refused(place, call, TypeError, re.escape(f"{call}: {match}"), **{argument: value})


@pytest.mark.parametrize("call", ["evaluate_predictions", "tune_model", "predict_to_files"])
@pytest.mark.parametrize("limit", [0, -1, "3", 2.5, True])
def test_a_limit_that_is_no_positive_count_is_refused_by_every_call(place, call, limit):
    _refused(place, call, ConfigError, re.escape(f"limit is a positive number of questions (or none for all); got {limit!r}"),
             limit=limit)


@pytest.mark.parametrize("call", ["evaluate_predictions", "tune_model"])
def test_an_unknown_scorer_is_one_line(place, call):
    _refused(place, call, ConfigError, re.escape(f"{call}: task 'sqaud' is no official scorer; choose one of squad, multispan"),
             task="sqaud")


@pytest.mark.parametrize("call, argument, value, match", [
    ("tune_model", "batch_size", "16", "tune_model: batch_size is a positive whole number (or None); got '16'"),
    ("tune_model", "min_calibration_questions", 0, "tune_model: min_calibration_questions is a positive whole number; got 0"),
    ("train_model", "checkpoint_steps", 0, "train_model: checkpoint_steps is a positive whole number (or None); got 0"),
])
def test_a_count_that_is_no_positive_number_is_refused(place, call, argument, value, match):
    _refused(place, call, ConfigError, re.escape(match), **{argument: value})


def test_a_plan_of_one_decoding_named_as_a_string_is_refused_not_read_letter_by_letter():
    from bio_mrc.inference.streaming import StreamPlan

    with pytest.raises(TypeError, match=re.escape("StreamPlan: decodings is a list of names, got the string 'span': give ['span']")):
        StreamPlan("span")
    with pytest.raises(ConfigError, match=re.escape("StreamPlan: chunk_size is a positive whole number; got 0")):
        StreamPlan(("span",), chunk_size=0)
    assert StreamPlan(["span", "bio"]).decodings == ("span", "bio")


@pytest.mark.parametrize(("batch_size", "match"), [
    (0, "StreamPlan: batch_size is a positive whole number (or None); got 0"),
    (-1, "StreamPlan: batch_size is a positive whole number (or None); got -1"),
    (2.5, "StreamPlan: batch_size is a positive whole number (or None); got 2.5"),
    ("8", "StreamPlan: batch_size is a positive whole number (or None); got '8'"),
    (True, "StreamPlan: batch_size is a positive whole number (or None); got True"),
    (10**10, "StreamPlan: batch_size: at most 1,000,000,000, not 10000000000"),
])
def test_a_plans_batch_size_is_checked_when_it_is_made(batch_size, match):
    """A plan took any ``batch_size``, which the first chunk refused only once ``predict_to_files`` had begun its answers
    file and run record in the output folder; it is refused when the plan is made, as ``chunk_size`` is."""
    from bio_mrc.inference.streaming import StreamPlan

    with pytest.raises(ConfigError, match=re.escape(match)):
        StreamPlan(("span",), batch_size=batch_size)
    assert StreamPlan(("span",), batch_size=8).batch_size == 8 and StreamPlan(("span",)).batch_size is None


def test_predict_to_files_refuses_to_resume_standard_output_naming_the_call(place):
    """It was a ValueError naming the command's --resume, once the plan was settled and its warnings said."""
    _refused(place, "predict_to_files", ConfigError, re.escape("predict_to_files: resume continues the answers file beside "
                                                               "output; output '-' (standard output) holds none"),
             output="-", resume=True)


def test_a_plan_of_single_spans_refuses_require_answer_off_rather_than_dropping_it():
    """Only multi-span answers read it (no BIO span where the tags are all O): single spans dropped it unread."""
    from bio_mrc.decoding.postprocess import DecodeConfig
    from bio_mrc.inference.streaming import StreamPlan

    with pytest.raises(ConfigError, match=r"^require_answer=False changes only multi_span answers"):
        StreamPlan(("bio",), DecodeConfig(require_answer=False))
    assert StreamPlan(("bio",), DecodeConfig(require_answer=False), multi_span=True).config.require_answer is False


def test_predict_to_files_refuses_to_write_over_the_data_file_it_names(place):
    """The command keeps its output off --data; the call keeps it off the file its ``source`` or ``name`` names."""
    for named in ({"source": str(place["data"])}, {"name": str(place["data"])}):
        with pytest.raises(BioMrcError, match="is the input"):
            _predict(place, output=place["data"], **named)
        assert place["data"].read_bytes() == SAMPLE_V1.read_bytes()
        assert sorted(p.name for p in place["data"].parent.iterdir()) == ["data.json", "preds.json"]
