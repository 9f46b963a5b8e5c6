"""Only what the package wrote is removed or replaced: bookkeeping files are untrusted input, symbolic links are
never followed to delete or write, and no output replaces an input or a model being read."""

import concurrent.futures
import contextlib
import hashlib
import json
import os
from pathlib import Path

import pytest

from bio_mrc import io
from bio_mrc.cli import main
from bio_mrc.errors import BioMrcError
from bio_mrc.model_card import ForeignCardWarning

from .conftest import SAMPLE_V1, hub_answering
from .test_bad_input import saved_model  # noqa: F401  (module-scoped fixture: an untrained saved model)
from .test_python_doors import DOORS, place  # noqa: F401  (the Python calls as doors, and the files they are given)


def _victim(tmp_path):
    """A folder of the user's, outside every output folder, with one file."""
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious.txt").write_text("keep me")
    return victim


def _untouched(victim):
    return sorted(p.name for p in victim.iterdir()) == ["precious.txt"] and (victim / "precious.txt").read_text() == "keep me"


# --- the report set's bookkeeping ------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["ABSOLUTE", "../victim/precious.txt", "sub/x", "..", "", 7])
def test_a_report_list_naming_no_plain_file_is_refused_and_deletes_nothing(tmp_path, name):
    victim, out = _victim(tmp_path), tmp_path / "out"
    (out / ".report-complete").mkdir(parents=True)
    (out / ".report-complete" / ".files.json").write_text("[]")
    listed = str(victim / "precious.txt") if name == "ABSOLUTE" else name
    (out / ".report-files.json").write_text(json.dumps([listed]))
    with pytest.raises(io.UnsafePathError, match="not a plain file name"):
        io.finish_file_set(out, "report")
    assert _untouched(victim)


def test_a_set_being_written_holds_its_folder_so_a_second_writer_or_finisher_waits(tmp_path, monkeypatch):
    """A second comparison into the same folder removed the first one's ``.report-writing`` (its finishing step at the
    start, or its own set): the first ended in a FileNotFoundError traceback, or the two wrote one staging folder and a
    mixture of their reports moved in. Writing and finishing a set take one lock in the folder, which the other waits for."""
    fcntl = pytest.importorskip("fcntl")
    out = tmp_path / "out"
    alias = tmp_path / "alias"  # a link the user chose: the lock is in the folder it reaches
    out.mkdir()
    alias.symlink_to(out)
    descriptor = os.open(out / io.SETS_LOCK, os.O_RDONLY | os.O_CREAT)
    try:
        with io.replaced_together(alias, "report") as staging:
            (staging / "report.md").write_text("the first set's")
            with pytest.raises(BlockingIOError):  # another process asking now would wait
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)  # released once the set is in
    finally:
        os.close(descriptor)
    assert (out / "report.md").read_text() == "the first set's"
    taken = []
    monkeypatch.setattr(io.file_sets, "sole_writer", lambda path, what, wait: taken.append((Path(path), wait)) or contextlib.nullcontext())
    (out / ".report-complete").mkdir()  # a set waiting to move in: finished under the lock
    (out / ".report-complete" / ".files.json").write_text("{}")
    io.finish_file_set(alias, "report")
    assert taken == [(Path(os.path.realpath(out)) / io.SETS_LOCK, True)]  # the same lock, waited for


def test_a_listed_file_the_user_changed_or_that_predates_digests_is_kept(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    with io.replaced_together(out, "report") as staging:
        (staging / "old.png").write_text("the set's")
        (staging / "report.md").write_text("r")
    (out / "old.png").write_text("edited by the user")
    (out / "mine.txt").write_text("the user's")
    listed = json.loads((out / ".report-files.json").read_text())
    (out / ".report-files.json").write_text(json.dumps({**listed, "mine.txt": None}))  # a name without a digest
    with io.replaced_together(out, "report") as staging:
        (staging / "report.md").write_text("r2")
    assert (out / "old.png").read_text() == "edited by the user" and (out / "mine.txt").read_text() == "the user's"


def test_a_complete_folder_without_its_list_is_refused_in_one_line(tmp_path):
    (tmp_path / ".report-complete").mkdir()
    (tmp_path / "report.md").write_text("the user's")
    with pytest.raises(io.UnsafePathError, match="no list of its files"):
        io.finish_file_set(tmp_path, "report")
    assert (tmp_path / "report.md").read_text() == "the user's"


@pytest.mark.parametrize("bookkeeping", [".report-complete", ".report-writing", ".report-files.json"])
def test_a_symbolically_linked_bookkeeping_entry_is_refused_and_its_target_kept(tmp_path, bookkeeping):
    victim, out = _victim(tmp_path), tmp_path / "out"
    out.mkdir()
    (victim / ".files.json").write_text(json.dumps(["precious.txt"]))
    target = victim / ".files.json" if bookkeeping.endswith(".json") else victim
    (out / bookkeeping).symlink_to(target)
    with pytest.raises(io.UnsafePathError, match="symbolic link"):
        io.finish_file_set(out, "report")
    with pytest.raises(io.UnsafePathError, match="symbolic link"):  # every later run says the same, no traceback
        io.finish_file_set(out, "report")
    assert sorted(p.name for p in victim.iterdir()) == [".files.json", "precious.txt"]
    assert (victim / "precious.txt").read_text() == "keep me"


def test_the_helpers_refuse_paths_outside_the_folder_or_through_links(tmp_path):
    victim, out = _victim(tmp_path), tmp_path / "out"
    out.mkdir()
    (out / "link").symlink_to(victim)
    for call in (lambda: io.remove_file(victim / "precious.txt", out), lambda: io.remove_file(out / "../victim/precious.txt", out),
                 lambda: io.remove_file(out / "link" / "precious.txt", out), lambda: io.remove_tree(out / "link", out),
                 lambda: io.replace_file(out / "link" / "precious.txt", out / "stolen", out)):
        with pytest.raises(io.UnsafePathError):
            call()
    assert _untouched(victim)
    (out / "own.txt").write_text("x")
    assert io.remove_file(out / "own.txt", out) and not io.remove_file(out / "own.txt", out)
    linked_root = tmp_path / "linked-out"
    linked_root.symlink_to(out)  # the folder the user gave may itself be a link
    (out / "own.txt").write_text("x")
    assert io.remove_file(linked_root / "own.txt", linked_root)


def test_an_output_folder_reached_through_dot_dot_is_the_users_choice(tmp_path, monkeypatch):
    """An output folder given as ../out was refused as if each file inside it went up a folder (export --output ../x)."""
    out, work = tmp_path / "out", tmp_path / "work"
    out.mkdir(), work.mkdir()
    monkeypatch.chdir(work)
    (out / "own.txt").write_text("x")
    root = Path("..") / "out"
    assert io.remove_file(root / "own.txt", root) and not (out / "own.txt").exists()
    with pytest.raises(io.UnsafePathError, match="goes up a folder"):
        io.remove_file(root / ".." / "work" / "x", root)


def test_a_listed_name_that_is_a_folder_here_is_refused_not_replaced(tmp_path):
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "kept.bin").write_text("a model")
    complete = tmp_path / ".report-complete"
    complete.mkdir()
    (complete / "models").write_text("a file from a crafted set")
    (complete / ".files.json").write_text(json.dumps(["models"]))
    with pytest.raises(io.UnsafePathError, match="is a folder"):
        io.finish_file_set(tmp_path, "report")
    assert (tmp_path / "models" / "kept.bin").read_text() == "a model"


# --- training's checkpoints folder -----------------------------------------------------------------------------

def test_train_into_a_folder_whose_checkpoints_are_a_symbolic_link_is_refused(tiny_encoder_dir, tmp_path, capsys):
    victim, out = _victim(tmp_path), tmp_path / "out"
    (victim / "checkpoint-3").mkdir()  # looks like an incomplete checkpoint: removed by the old code
    out.mkdir()
    (out / "checkpoints").symlink_to(victim)
    code = main(["train", "--train", str(SAMPLE_V1), "--output-dir", str(out), "--encoder", str(tiny_encoder_dir),
                 "--epochs", "1", "--max-seq-length", "48", "--doc-stride", "16", "--max-query-length", "12"])
    assert code == 2
    assert "symbolic link" in capsys.readouterr().err
    assert sorted(p.name for p in victim.iterdir()) == ["checkpoint-3", "precious.txt"]


def test_scanning_checkpoints_refuses_a_linked_folder(tmp_path):
    from bio_mrc.training.checkpoints import ResumeError, scan_checkpoints

    victim = _victim(tmp_path)
    (tmp_path / "checkpoints").symlink_to(victim)
    with pytest.raises(ResumeError, match="symbolic link"):
        scan_checkpoints(tmp_path / "checkpoints")


# --- predict's outputs -----------------------------------------------------------------------------------------

def _predict(model, data, output, *extra):
    return main(["predict", "--model", str(model), "--data", str(data), "--output", str(output), *extra])


@pytest.mark.parametrize("resume", [False, True])
def test_predict_never_writes_through_a_linked_answers_stream(saved_model, tmp_path, capsys, resume):  # noqa: F811
    victim = _victim(tmp_path)
    (tmp_path / "preds.answers.jsonl").symlink_to(victim / "precious.txt")
    code = _predict(saved_model, SAMPLE_V1, tmp_path / "preds.json", *(["--resume"] if resume else []))
    assert code == 2
    assert "symbolic link" in capsys.readouterr().err
    assert _untouched(victim) and not (tmp_path / "preds.json").exists()


def test_the_answers_stream_opens_no_link_even_unchecked(tmp_path):
    from bio_mrc.inference.streaming import resume_point

    victim = _victim(tmp_path)
    (tmp_path / "s.jsonl").symlink_to(victim / "precious.txt")
    for mode in ("w", "a"):
        with pytest.raises(io.UnsafePathError, match="symbolic link"):
            io.open_no_follow(tmp_path / "s.jsonl", mode)
    with pytest.raises(io.UnsafePathError, match="symbolic link"):
        resume_point(tmp_path / "s.jsonl", ["span"], 1)
    assert _untouched(victim)


def test_predict_refuses_to_replace_its_input_or_the_model(saved_model, tmp_path, capsys):  # noqa: F811
    data = tmp_path / "data.json"
    data.write_bytes(SAMPLE_V1.read_bytes())
    config = (saved_model / "config.json").read_bytes()
    for output, says in ((data, "is the input"), (saved_model / "config.json", "model folder"),
                         (saved_model / "preds.json", "model folder")):
        assert _predict(saved_model, data, output) == 2
        assert says in capsys.readouterr().err
    assert data.read_bytes() == SAMPLE_V1.read_bytes() and (saved_model / "config.json").read_bytes() == config
    assert not (saved_model / "preds.answers.jsonl").exists()
    stream_input = tmp_path / "x.answers.jsonl"  # the answers stream beside the output is an output too
    stream_input.write_bytes(SAMPLE_V1.read_bytes())
    assert _predict(saved_model, stream_input, tmp_path / "x.json") == 2
    assert stream_input.read_bytes() == SAMPLE_V1.read_bytes()


@pytest.mark.parametrize("linked, resume", [("model.safetensors", False), ("config.json", True)])
def test_predict_refuses_an_answers_stream_hard_linked_to_a_model_file(saved_model, tmp_path, capsys, linked, resume):  # noqa: F811
    """The answers stream is written in place (emptied, or appended to under --resume), so a hard link there to the
    model's weights emptied them as the model was read (the command died of SIGBUS) or wrote answers into its config."""
    import shutil

    model = tmp_path / "model"
    shutil.copytree(saved_model, model)
    before = {p.name: p.read_bytes() for p in model.iterdir()}
    os.link(model / linked, tmp_path / "p.answers.jsonl")
    assert _predict(model, SAMPLE_V1, tmp_path / "p.json", *(["--resume"] if resume else [])) == 2
    err = capsys.readouterr().err
    assert f"is the file {model / linked} of the model folder" in err and len(err.strip().splitlines()) == 1
    assert {p.name: p.read_bytes() for p in model.iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model", "p.answers.jsonl"]


def test_check_outputs_apart_refuses_a_hard_link_into_a_model_folder_and_accepts_other_links(saved_model, tmp_path):  # noqa: F811
    os.link(saved_model / "tokenizer.json", tmp_path / "stream.jsonl")
    with pytest.raises(io.UnsafePathError, match="a hard link: it is the file .*tokenizer.json of the model folder"):
        io.check_outputs_apart([tmp_path / "out.json", tmp_path / "stream.jsonl"], model_dirs=[saved_model])
    other = tmp_path / "mine.txt"
    other.write_text("x")
    os.link(other, tmp_path / "elsewhere.jsonl")  # a hard link to a file no command reads: the user's to replace
    io.check_outputs_apart([tmp_path / "elsewhere.jsonl"], model_dirs=[saved_model])


def test_other_commands_refuse_outputs_over_inputs_or_inside_the_model(saved_model, tmp_path, capsys):  # noqa: F811
    context = tmp_path / "context.txt"
    context.write_text("Paris is the capital of France.")
    calls = [
        ["extract", "--model", str(saved_model), "--question", "What?", "--context-file", str(context), "--html", str(context)],
        ["extract", "--model", str(saved_model), "--question", "What?", "--context", "x", "--html", str(saved_model / "p.html")],
        ["tune", "--model", str(saved_model), "--data", str(SAMPLE_V1), "--plot-dir", str(saved_model / "plots")],
        ["export", "--model", str(saved_model), "--output", str(saved_model / "onnx")],
    ]
    for argv in calls:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert "model folder" in err or "is the input" in err
    assert context.read_text() == "Paris is the capital of France."
    dataset = tmp_path / "saved-dataset"
    dataset.mkdir()
    assert main(["train", "--train", str(dataset), "--output-dir", str(dataset), "--overwrite"]) == 2
    assert "is the input" in capsys.readouterr().err
    assert not (saved_model / "plots").exists() and not (saved_model / "onnx").exists()


@pytest.mark.parametrize("within", [False, True])
@pytest.mark.parametrize("call, argument", [("tune_model", "output_dir"), ("predict_to_files", "output"),
                                            ("export_onnx", "output_dir"), ("export_qa_checkpoint", "output_dir"),
                                            ("train_model", "output_dir")])
def test_python_calls_refuse_outputs_over_the_model_they_read(place, call, argument, within):  # noqa: F811
    model = place["model"]
    before = {p.name: p.read_bytes() for p in model.iterdir()}
    target = model / ("preds.json" if argument == "output" else "sub") if within or argument == "output" else model
    with pytest.raises(BioMrcError, match="model folder|the model's own|is not empty|holds a bio_mrc model that no training"):
        DOORS[call](place, **{argument: target})
    assert {p.name: p.read_bytes() for p in model.iterdir()} == before


@pytest.mark.parametrize("call, argument", [("tune_model", "output_dir"), ("predict_to_files", "output"),
                                            ("train_model", "output_dir")])
def test_python_calls_refuse_the_data_file_as_their_output(place, call, argument):  # noqa: F811
    named = {"source": str(place["data"])} if call == "predict_to_files" else {}
    with pytest.raises(BioMrcError, match="is the input|a file has this name"):
        DOORS[call](place, **{argument: place["data"]}, **named)
    assert place["data"].read_bytes() == SAMPLE_V1.read_bytes()
    assert sorted(p.name for p in place["data"].parent.iterdir()) == ["data.json", "preds.json"]


def test_check_outputs_apart_accepts_outputs_elsewhere(saved_model, tmp_path):  # noqa: F811
    io.check_outputs_apart([tmp_path / "preds.json", tmp_path / "out"], [SAMPLE_V1, "rajpurkar/squad:validation"], [saved_model])
    (tmp_path / "link.json").symlink_to(tmp_path / "nowhere.json")
    with pytest.raises(BioMrcError, match="symbolic link"):
        io.check_outputs_apart([tmp_path / "link.json"])
    assert os.path.islink(tmp_path / "link.json")


# --- nothing leaves the machine unless the command line asks --------------------------------------------------

@pytest.mark.parametrize("values, keyword, flag", [
    ({"push_to_hub": True, "hub_model_id": "someone/model"}, "push_to_hub=True", "--push-to-hub"),
    ({"hub_model_id": "someone/model"}, "hub_model_id", "--hub-model-id"),
    ({"hub_token": "hf_x"}, "push_to_hub=True", "--push-to-hub"),
    ({"hub_strategy": "every_save"}, "hub_strategy", "--hub-strategy"),
    ({"report_to": "wandb"}, "report_to='wandb'", "--report-to wandb"),
    ({"report_to": ["tensorboard", "mlflow"]}, "report_to='mlflow'", "--report-to mlflow"),
    ({"report_to": "all"}, "report_to='all'", "--report-to all"),
])
def test_options_that_send_data_off_the_machine_are_refused_in_configs(tmp_path, capsys, values, keyword, flag):
    from bio_mrc.errors import ConfigError
    from bio_mrc.harness.config import load_config
    from bio_mrc.training.config import TrainConfig

    asked = "only a training's network options ask for (no comparison does): "
    with pytest.raises(ConfigError) as refused:
        TrainConfig(training_args=values)
    assert asked + keyword in str(refused.value)
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"name": "c", "train": {"path": "squad-v1.1/train.json"}, "eval": {"path": "squad-v1.1/dev.json"},
                                  "runs": [{"name": "joint", "training_args": values}]}))
    with pytest.raises(BioMrcError) as refused:
        load_config(config)
    assert asked + keyword in str(refused.value)
    argv = ["train", "--train", str(SAMPLE_V1), "--output-dir", str(tmp_path / "out"), "--training-args", json.dumps(values)]
    assert main(argv) == 2 and asked + flag in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_local_trackers_stay_allowed_in_configs():
    from bio_mrc.training.config import TrainConfig

    assert TrainConfig(training_args={"report_to": ["tensorboard"]}).training_args == {"report_to": ["tensorboard"]}
    assert TrainConfig(training_args={"report_to": "none"}).training_args == {"report_to": "none"}


def test_the_command_line_flags_are_the_way_to_push_or_report(tmp_path, monkeypatch):
    import huggingface_hub

    from bio_mrc.cli import build_parser
    from bio_mrc.cli.options import network_args
    from bio_mrc.errors import ConfigError
    from bio_mrc.training.config import TrainConfig
    from bio_mrc.training.trainer import training_arguments

    base = ["train", "--train", "t.json", "--output-dir", "out"]
    assert network_args(build_parser().parse_args(base)) == {}
    args = build_parser().parse_args([*base, "--push-to-hub", "--hub-model-id", "me/m", "--report-to", "wandb"])
    network = network_args(args)
    assert network == {"push_to_hub": True, "hub_model_id": "me/m", "report_to": ["wandb"]}
    config = TrainConfig(training_args={"report_to": ["tensorboard"]})
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(huggingface_hub, "get_token", lambda: "hf_x")  # a logged-in user
    hub_answering(monkeypatch, 200)
    built = training_arguments(config, tmp_path, False, False, None, network)
    assert built.push_to_hub and built.hub_model_id == "me/m" and built.report_to == ["tensorboard", "wandb"]
    hub_answering(monkeypatch, 429)  # the check's own request rate-limited: says nothing of the push, which goes ahead
    assert training_arguments(config, tmp_path, False, False, None, network).push_to_hub
    plain = training_arguments(config, tmp_path, False, False, None)
    assert not plain.push_to_hub and plain.report_to == ["tensorboard"]
    with pytest.raises(ConfigError, match="hub_model_id needs push_to_hub=True"):
        training_arguments(config, tmp_path, False, False, None, {"hub_model_id": "me/m"})


def test_a_push_without_a_repository_named_goes_to_one_named_as_the_model_folder(tmp_path, monkeypatch):
    """Trainer names the repository after its own output folder, which is the model's checkpoints/: every model would
    push to a repository called checkpoints."""
    import huggingface_hub

    from bio_mrc.training.config import TrainConfig
    from bio_mrc.training.trainer import training_arguments

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(huggingface_hub, "get_token", lambda: "hf_x")
    hub_answering(monkeypatch, 200)
    built = training_arguments(TrainConfig(), tmp_path / "squad-bio", False, False, None, {"push_to_hub": True})
    assert built.hub_model_id == "squad-bio"



@pytest.mark.parametrize("offline, token, hub, problem", [
    (True, "hf_x", None, "offline mode"),
    (False, None, None, "needs a Hugging Face token"),
    (False, "hf_x", ConnectionRefusedError(111, "Connection refused"),  # no network
     "needs the Hugging Face Hub, which cannot be reached at http://127.0.0.1:9 (ConnectionRefusedError: [Errno 111] "
     "Connection refused); check the network"),
    (False, "hf_x", 401, "needs a Hugging Face token the hub accepts, and http://127.0.0.1:9 refuses this one (HTTP 401)"),
    (False, "hf_x", 503, "needs the Hugging Face Hub, and http://127.0.0.1:9 answers HTTP 503"),
])
def test_a_push_that_cannot_happen_is_refused_before_training(tiny_encoder_dir, tmp_path, capsys, monkeypatch,
                                                                 offline, token, hub, problem):
    import huggingface_hub

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", offline)
    monkeypatch.setattr(huggingface_hub.constants, "ENDPOINT", "http://127.0.0.1:9")  # nothing listens: never the real hub
    monkeypatch.setattr(huggingface_hub, "get_token", lambda: token)
    asked = hub_answering(monkeypatch, AssertionError("the hub is asked") if hub is None else hub)
    out = tmp_path / "out"
    code = main(["train", "--train", str(SAMPLE_V1), "--limit", "4", "--output-dir", str(out), "--encoder", str(tiny_encoder_dir),
                 "--epochs", "1", "--batch-size", "4", "--push-to-hub", "--max-seq-length", "48", "--doc-stride", "16",
                 "--max-query-length", "12"])
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1]
    assert code == 2 and "Traceback" not in err and err.count("error:") == 1
    assert last.startswith("error: --push-to-hub needs") and problem in last
    assert "training on" not in err  # before the training questions are read
    assert not out.exists()  # the folder is not begun
    assert asked == ([] if hub is None else ["http://127.0.0.1:9/api/whoami-v2"])  # offline or no token: not asked

def _recording_hub(monkeypatch, uploads):
    """A hub that is never reached: each upload is recorded as the files huggingface_hub would send, its patterns and
    default exclusions applied to the folder as it stands when the upload starts."""
    import huggingface_hub
    import transformers.trainer
    from huggingface_hub.utils import DEFAULT_IGNORE_PATTERNS, filter_repo_objects

    class Hub:
        def create_repo(self, name, **kwargs):
            return type("Repo", (), {"repo_id": name})()

        def upload_folder(self, folder_path=None, repo_id=None, allow_patterns=None, ignore_patterns=None, **kwargs):
            folder = Path(folder_path)
            present = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
            ignored = [*(ignore_patterns or []), *DEFAULT_IGNORE_PATTERNS]
            sent = filter_repo_objects(present, allow_patterns=allow_patterns, ignore_patterns=ignored)
            uploads.append((repo_id, {name: (folder / name).read_bytes() for name in sent}))
            if kwargs.get("run_as_future"):  # Trainer's pushes during training: an upload already done
                done = concurrent.futures.Future()
                done.set_result(None)
                return done

    monkeypatch.setattr(transformers.trainer, "hf_api", Hub)
    monkeypatch.setattr(huggingface_hub, "HfApi", Hub)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(huggingface_hub, "get_token", lambda: "hf_x")  # a logged-in user
    hub_answering(monkeypatch, 200)


@pytest.mark.slow
def test_a_push_over_another_folder_uploads_the_model_alone(tiny_encoder_dir, sample_v1, tmp_path, monkeypatch):
    """--overwrite leaves the folder's other files where they are; the push sends the files of the model it saved, never
    those (a .env, the data, another run's logs, a README.md of the user's) nor anything the folder held before."""
    from bio_mrc.training.config import TrainConfig
    from bio_mrc.training.train import train_model

    uploads = []
    _recording_hub(monkeypatch, uploads)
    out = tmp_path / "project"
    (out / "logs").mkdir(parents=True)
    (out / "logs" / "events.out.tfevents.1.other-host").write_text("another run's log")
    (out / ".env").write_text("HF_TOKEN=hf_secret")
    (out / "train.json").write_text("{}")
    (out / "README.md").write_text("# my project\n")
    config = TrainConfig(encoder=str(tiny_encoder_dir), heads="span+bio", max_seq_length=48, doc_stride=16,
                         max_query_length=12, epochs=1, batch_size=4, seed=1)
    with pytest.warns(ForeignCardWarning, match="README.md was not written by bio_mrc .*: left as it is"):
        train_model(sample_v1.examples, config, out, save_checkpoints=False, overwrite=True,
                    network_args={"push_to_hub": True, "hub_model_id": "me/m"})
    assert [repo for repo, _ in uploads] == ["me/m"]
    sent = set(uploads[0][1])
    assert sent == {"bio_mrc_run.json", "config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
                    "training_args.bin", "training_log.json"}  # the README.md is the user's: no card was written over it
    assert (out / ".env").read_text() == "HF_TOKEN=hf_secret" and (out / "README.md").read_text() == "# my project\n"


@pytest.mark.slow
def test_a_push_during_training_sends_the_model_files_alone(tiny_encoder_dir, sample_v1, tmp_path, monkeypatch):
    """--hub-strategy every_save: Trainer's push at each checkpoint uploaded its own output folder, the run's
    checkpoints/, so the run's options record (bio_mrc_train_config.json) went up beside the checkpoint's config and
    weights, and no tokenizer; each push now sends the model's files, as the final push does."""
    from bio_mrc.training.config import TrainConfig
    from bio_mrc.training.train import train_model

    uploads = []
    _recording_hub(monkeypatch, uploads)
    out = tmp_path / "model"
    config = TrainConfig(encoder=str(tiny_encoder_dir), heads="span", max_seq_length=48, doc_stride=16,
                         max_query_length=12, epochs=1, batch_size=4, seed=1)
    train_model(sample_v1.examples, config, out, checkpoint_steps=1,
                network_args={"push_to_hub": True, "hub_model_id": "me/m", "hub_strategy": "every_save"})
    *during, (_, final) = uploads
    assert during and {repo for repo, _ in uploads} == {"me/m"}  # one push a checkpoint, then the final one
    model_files = {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "training_args.bin"}
    assert all(set(sent) == model_files for _, sent in during)
    assert set(final) == model_files | {"README.md", "bio_mrc_run.json", "training_log.json"}
    assert during[0][1]["tokenizer.json"] == final["tokenizer.json"]
    assert not (out / "checkpoints").exists()


@pytest.mark.slow
def test_a_checkpoints_upload_holds_its_file_digests(tiny_encoder_dir, sample_v1, tmp_path, monkeypatch):
    """--hub-strategy checkpoint uploads the checkpoint itself: with the SHA-256 of its files that --resume checks,
    recorded before the upload starts (once Trainer had saved the checkpoint, after it, so an upload held them or not)."""
    from bio_mrc.training.checkpoints import CHECKPOINT_DIGESTS
    from bio_mrc.training.config import TrainConfig
    from bio_mrc.training.train import train_model

    uploads = []
    _recording_hub(monkeypatch, uploads)
    config = TrainConfig(encoder=str(tiny_encoder_dir), heads="span", max_seq_length=48, doc_stride=16,
                         max_query_length=12, epochs=1, batch_size=4, seed=1)
    train_model(sample_v1.examples, config, tmp_path / "model", checkpoint_steps=1,
                network_args={"push_to_hub": True, "hub_model_id": "me/m", "hub_strategy": "checkpoint"})
    checkpoints = [sent for _, sent in uploads if "trainer_state.json" in sent]
    assert checkpoints and all(CHECKPOINT_DIGESTS in sent for sent in checkpoints)
    digests = json.loads(checkpoints[-1][CHECKPOINT_DIGESTS])["sha256"]
    assert digests["optimizer.pt"] == hashlib.sha256(checkpoints[-1]["optimizer.pt"]).hexdigest()


def test_a_hub_token_given_to_the_push_is_refused_not_saved_with_the_model(tmp_path, monkeypatch):
    """TrainingArguments keep a hub_token, and Trainer pickles them into the model's training_args.bin, which the push
    uploads: the token would be published with the model."""
    import huggingface_hub

    from bio_mrc.errors import ConfigError
    from bio_mrc.training.config import TrainConfig
    from bio_mrc.training.trainer import training_arguments

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(huggingface_hub, "get_token", lambda: "hf_x")
    hub_answering(monkeypatch, 200)
    with pytest.raises(ConfigError) as refused:
        training_arguments(TrainConfig(), tmp_path / "out", False, False, None, {"push_to_hub": True, "hub_token": "hf_secret"})
    assert str(refused.value) == ("'hub_token' is no option of the hub push bio_mrc makes, which takes hub_model_id, "
                                  "hub_strategy and hub_private_repo=True beside push_to_hub=True; it pushes with the token "
                                  "of `hf auth login` or HF_TOKEN")
    assert "hf_secret" not in str(refused.value) and not (tmp_path / "out").exists()


@pytest.mark.parametrize("name", ["training_log.json", "config.json", "vocab.txt", ".bio_mrc-saving/train.json"])
def test_train_refuses_a_data_file_it_would_replace_in_its_output_folder(tiny_encoder_dir, tmp_path, capsys, name):
    """With --overwrite (or --resume), training writes its model's files over those of the same names and removes its
    checkpoints and staging folders: a data file there would be lost."""
    out = tmp_path / "out"
    data = out / name
    data.parent.mkdir(parents=True)
    data.write_bytes(SAMPLE_V1.read_bytes())
    code = main(["train", "--train", str(data), "--limit", "4", "--output-dir", str(out), "--overwrite", "--encoder",
                 str(tiny_encoder_dir), "--epochs", "1", "--batch-size", "4", "--max-seq-length", "48", "--doc-stride", "16",
                 "--max-query-length", "12"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and err.count("error:") == 1
    assert err.strip() == (f"error: training writes or removes {out / name} in its output folder, and it is the input "
                           f"{data}; move it out or choose another output folder (in {data})")
    assert data.read_bytes() == SAMPLE_V1.read_bytes()


@pytest.mark.parametrize("ours", [True, False])
def test_a_push_runs_copies_in_its_checkpoints_folder_leave_it_resumable(tmp_path, ours):
    """Trainer's push during training (--hub-strategy every_save, its default) copies the last checkpoint's weights,
    config and arguments, with the tokenizer, to the checkpoints folder's hub-push/; a run stopped then is resumed, not
    refused as a folder of another's files. Without the run's options record there, the folder is not bio_mrc's, and
    stays refused."""
    from bio_mrc.errors import ConfigError
    from bio_mrc.training.checkpoints import TRAIN_CONFIG_FILE
    from bio_mrc.training.saving import check_output_folder

    checkpoints = tmp_path / "out" / "checkpoints"
    (checkpoints / "checkpoint-2").mkdir(parents=True)
    (checkpoints / "hub-push").mkdir()
    for name in ("config.json", "model.safetensors", "training_args.bin", "tokenizer.json", "vocab.txt"):
        (checkpoints / "hub-push" / name).write_text("x")
    if ours:
        (checkpoints / TRAIN_CONFIG_FILE).write_text("{}")
        check_output_folder(tmp_path / "out", overwrite=False)
    else:
        with pytest.raises(ConfigError, match="holds files bio_mrc did not write"):
            check_output_folder(tmp_path / "out", overwrite=True)


@pytest.mark.parametrize("folder, hub_id, said", [
    ("out", "me/bad id!", "error: --hub-model-id 'me/bad id!' is no Hugging Face repository id: a hub repository id is "
                          "NAME or OWNER/NAME"),
    ("my model", None, "error: --push-to-hub names the hub repository after the output folder, 'my model', which is no "
                       "Hugging Face repository id (a hub repository id is NAME or OWNER/NAME"),
])
def test_a_push_to_a_repository_id_the_hub_refuses_is_refused_before_any_work(tiny_encoder_dir, tmp_path, capsys, monkeypatch,
                                                                              folder, hub_id, said):
    import huggingface_hub

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(huggingface_hub.constants, "ENDPOINT", "http://127.0.0.1:9")  # nothing listens: never the real hub
    monkeypatch.setattr(huggingface_hub, "get_token", lambda: "hf_x")
    hub_answering(monkeypatch, 200)
    out = tmp_path / folder
    code = main(["train", "--train", str(SAMPLE_V1), "--limit", "4", "--output-dir", str(out), "--encoder", str(tiny_encoder_dir),
                 "--epochs", "1", "--batch-size", "4", "--max-seq-length", "48", "--doc-stride", "16", "--max-query-length", "12",
                 "--push-to-hub", *(["--hub-model-id", hub_id] if hub_id else [])])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and err.count("error:") == 1
    assert err.strip().startswith(said) and "training on" not in err
    assert not out.exists()


@pytest.mark.slow
@pytest.mark.parametrize("refusing", ["create_repo", "upload_folder"])
def test_a_push_the_hub_refuses_is_one_line_and_the_model_is_kept(tiny_encoder_dir, tmp_path, capsys, monkeypatch, refusing):
    """The hub refusing the repository (another's namespace) when Trainer opens it, or the final upload: one line, no
    traceback; a refused upload comes after the model is saved, which stays complete."""
    import httpx
    import huggingface_hub
    import transformers.trainer
    from huggingface_hub.errors import HfHubHTTPError

    def refuse(*args, **kwargs):
        response = httpx.Response(403, request=httpx.Request("POST", "http://127.0.0.1:9/api/repos/create"))
        raise HfHubHTTPError("403 Forbidden: you may not write to the namespace 'google'.\nRequest ID: x", response=response)

    class Hub:
        def create_repo(self, name, **kwargs):
            return refuse() if refusing == "create_repo" else type("Repo", (), {"repo_id": name})()

        def upload_folder(self, **kwargs):
            refuse()

    monkeypatch.setattr(transformers.trainer, "hf_api", Hub)
    monkeypatch.setattr(huggingface_hub, "HfApi", Hub)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(huggingface_hub, "get_token", lambda: "hf_x")
    hub_answering(monkeypatch, 200)
    out = tmp_path / "out"
    code = main(["train", "--train", str(SAMPLE_V1), "--limit", "4", "--output-dir", str(out), "--encoder", str(tiny_encoder_dir),
                 "--epochs", "1", "--batch-size", "4", "--max-seq-length", "48", "--doc-stride", "16", "--max-query-length", "12",
                 "--push-to-hub", "--hub-model-id", "google/bert", "--hub-strategy", "end"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and err.count("error:") == 1
    last = err.strip().splitlines()[-1]
    reason = "(HfHubHTTPError: 403 Forbidden: you may not write to the namespace 'google'.)"
    if refusing == "create_repo":
        assert last == (f"error: --push-to-hub: the Hugging Face Hub would not create or open the repository 'google/bert' "
                        f"{reason}; check the id, and that your token may write there")
        assert not (out / "bio_mrc_run.json").exists()
    else:
        assert last == (f"error: the model is saved here and complete, but its upload to the hub repository 'google/bert' "
                        f"failed {reason}; only the upload is missing (in {out})")
        assert (out / "bio_mrc_run.json").is_file() and (out / "model.safetensors").is_file()


# --- a model whose weights are not finite is never saved as complete, nor read -----------------------------------

def test_a_diverged_training_run_saves_no_model(tiny_encoder_dir, tmp_path, capsys):
    from bio_mrc.model import RUN_FILE

    out = tmp_path / "out"
    code = main(["train", "--train", str(SAMPLE_V1), "--limit", "8", "--output-dir", str(out), "--encoder", str(tiny_encoder_dir),
                 "--epochs", "1", "--batch-size", "4", "--training-args", '{"adam_epsilon": 0}',
                 "--max-seq-length", "48", "--doc-stride", "16", "--max-query-length", "12"])
    err = capsys.readouterr().err
    assert code == 2 and "training diverged" in err and "NaN or infinity" in err
    assert not (out / RUN_FILE).exists() and not (out / "checkpoints").exists() and not (out / "config.json").exists()


def test_a_saved_model_with_non_finite_weights_is_refused_on_load(saved_model, tmp_path):  # noqa: F811
    import shutil

    import torch

    from bio_mrc.errors import ModelFormatError
    from bio_mrc.inference import TrainedModel
    from bio_mrc.model import BioMrcForQuestionAnswering

    folder = tmp_path / "nan-model"
    shutil.copytree(saved_model, folder)
    model = BioMrcForQuestionAnswering.from_pretrained(str(folder))
    with torch.no_grad():
        next(model.parameters()).fill_(float("nan"))
    model.save_pretrained(str(folder))
    with pytest.raises(ModelFormatError, match="weights hold NaN or infinite values"):
        TrainedModel.load(folder)


def test_compare_refuses_a_linked_report_set_or_harness_folder_before_any_work(tmp_path, capsys):
    victim = _victim(tmp_path)
    (victim / ".files.json").write_text(json.dumps(["precious.txt"]))
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"name": "c", "train": {"path": "squad-v1.1/train.json"}, "eval": {"path": "squad-v1.1/dev.json"},
                                  "runs": [{"name": "joint"}]}))
    for linked in (".report-complete", "models", "cells"):
        out = tmp_path / f"out-{linked}"
        out.mkdir()
        (out / linked).symlink_to(victim)
        for _ in range(2):  # every later run ends the same way
            assert main(["compare", "--config", str(config), "--data-dir", str(tmp_path), "--output-dir", str(out)]) == 2
            assert "symbolic link" in capsys.readouterr().err
        assert sorted(p.name for p in victim.iterdir()) == [".files.json", "precious.txt"]
        assert sorted(p.name for p in out.iterdir()) == [linked]


def test_compare_refuses_a_linked_cells_predictions_folder_before_any_work(tmp_path, capsys):
    victim = _victim(tmp_path)
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"name": "c", "train": {"path": "missing-train.json"}, "eval": {"path": "missing-eval.json"},
                                  "runs": [{"name": "joint"}]}))
    out = tmp_path / "out"
    (out / "cells").mkdir(parents=True)
    linked = out / "cells" / "joint-seed13-0123456789ab-0123456789ab.predictions"  # a cell's prediction files, kept
    linked.symlink_to(victim)  # scoring copied the cell's files through it, into the victim folder
    assert main(["compare", "--config", str(config), "--data-dir", str(tmp_path), "--output-dir", str(out)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"error: {linked} is a symbolic link, which bio_mrc did not make; it neither follows nor replaces it: remove the "
        f"link or choose another output folder (in {out})")
    assert _untouched(victim)


def test_extract_html_makes_the_folder_it_names(saved_model, tmp_path, capsys):  # noqa: F811
    """--html into a folder not made yet: the folder is made (as predict makes its --output's), not an error naming
    a hidden temporary file after the answer was printed."""
    page = tmp_path / "pages" / "deeper" / "q.html"
    argv = ["extract", "--model", str(saved_model), "--question", "What?", "--context", "Paris is the capital of France.",
            "--html", str(page)]
    assert main(argv) == 0, capsys.readouterr().err
    assert page.read_text(encoding="utf-8").lstrip().lower().startswith("<!doctype html")
    assert [p.name for p in page.parent.iterdir()] == ["q.html"]  # no temporary file left beside it


@pytest.mark.parametrize("damage", ["cut", "folder", "list"])
def test_a_damaged_run_record_in_the_output_folder_is_one_line_before_any_work(tmp_path, capsys, damage):
    """train reads --output-dir's bio_mrc_run.json to refuse overwriting a finished model: a damaged one was a
    JSONDecodeError (or IsADirectoryError) traceback; now one line naming it, and --overwrite goes past it."""
    from bio_mrc.cli import main

    out, record = tmp_path / "out", tmp_path / "out" / "bio_mrc_run.json"
    out.mkdir()
    if damage == "folder":
        record.mkdir()
    else:
        record.write_text('{"train": {"heads": "sp' if damage == "cut" else "[1, 2]")
    assert main(["train", "--train", str(SAMPLE_V1), "--output-dir", str(out)]) == 2  # refused before the data is read
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("error: ") and line.endswith(f"(in {record})")


def test_a_report_file_the_set_did_not_write_is_not_replaced(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "calibration.png").write_text("the user's")
    with pytest.raises(io.UnsafePathError, match=r"calibration.png was not written by bio_mrc \(it is not in .report-files.json\)"):
        with io.replaced_together(out, "report") as staging:
            (staging / "report.md").write_text("r")
            (staging / "calibration.png").write_text("the set's")
    assert (out / "calibration.png").read_text() == "the user's" and not (out / "report.md").exists()
    (out / "calibration.png").unlink()
    io.finish_file_set(out, "report")  # the set waiting to be moved in, once nothing of the user's is in its way
    assert (out / "report.md").read_text() == "r" and (out / "calibration.png").read_text() == "the set's"
    with io.replaced_together(out, "report") as staging:  # its own files are replaced by the next set
        (staging / "report.md").write_text("r2")
    assert (out / "report.md").read_text() == "r2" and not (out / "calibration.png").exists()


def test_compare_refuses_a_report_of_the_users_before_any_work(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "report.md").write_text("my notes")
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"name": "c", "train": {"path": "missing-train.json"}, "eval": {"path": "missing-eval.json"},
                                  "runs": [{"name": "a"}]}))
    assert main(["compare", "--config", str(config), "--data-dir", str(tmp_path), "--output-dir", str(out)]) == 2
    error = capsys.readouterr().err.strip()  # before the data are read (they do not exist)
    assert error == f"error: {out / 'report.md'} was not written by bio_mrc (it is not in .report-files.json), so it is " \
                    f"not replaced: move it or choose another output folder (in {out})"
    assert sorted(p.name for p in out.iterdir()) == ["report.md"] and (out / "report.md").read_text() == "my notes"


def test_compare_refuses_a_file_of_the_users_at_a_prediction_files_name_before_any_work(tmp_path, capsys):
    out = tmp_path / "out"
    (out / "predictions").mkdir(parents=True)
    mine = out / "predictions" / "a-seed13-joint.nbest.json"
    mine.write_text("my answers")
    (out / "predictions" / "notes-seed13-joint.json").write_text("no run's name: left alone")
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"name": "c", "train": {"path": "missing-train.json"}, "eval": {"path": "missing-eval.json"},
                                  "seeds": [13], "runs": [{"name": "a"}]}))
    assert main(["compare", "--config", str(config), "--data-dir", str(tmp_path), "--output-dir", str(out)]) == 2
    error = capsys.readouterr().err.strip()  # before the data are read (they do not exist)
    assert error == f"error: {mine} was not written by bio_mrc (it is not in .predictions-files.json), so it is " \
                    f"not replaced: move it or choose another output folder (in {out / 'predictions'})"
    assert mine.read_text() == "my answers"


def test_files_listed_as_the_comparisons_own_are_replaced_others_refused(tmp_path):
    from bio_mrc.harness.prediction_set import PREDICTION_SET, note_prediction_files

    folder = note_prediction_files(tmp_path, [("a-seed1-", ["span"])])
    (folder / "a-seed1-span.json").write_text("{}")
    io.check_set_files(folder, PREDICTION_SET, ["a-seed1-span.json", "a-seed1-span.nbest.json"])  # listed: accepted
    (folder / "a-seed1-bio.json").write_text("the user's")
    with pytest.raises(io.UnsafePathError, match="a-seed1-bio.json was not written by bio_mrc"):
        io.check_set_files(folder, PREDICTION_SET, ["a-seed1-bio.json"])
    assert json.loads((folder / ".predictions-files.json").read_text()) == {
        "a-seed1-span.json": None, "a-seed1-span.nbest.json": None, "a-seed1-span.na_probs.json": None}


def _note_cells(output_dir, process, count):
    from bio_mrc.harness.prediction_set import note_prediction_files

    for n in range(count):
        note_prediction_files(output_dir, [(f"p{process}-", [f"d{n}"])])


def test_comparisons_listing_prediction_files_at_once_keep_every_entry(tmp_path):
    """Two comparisons into one output folder each read ``.predictions-files.json``, added their names and rewrote it:
    one rewrite dropped the other's names, and its files then read as the user's. Each update now holds the set's lock."""
    import multiprocessing

    from bio_mrc.harness.prediction_set import note_prediction_files  # noqa: F401  (imported once, before the processes start)

    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_note_cells, args=(tmp_path, process, 25)) for process in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert [worker.exitcode for worker in workers] == [0, 0]
    listed = json.loads((tmp_path / "predictions" / ".predictions-files.json").read_text())
    assert len(listed) == 2 * 25 * 3  # each cell's official, n-best and na_prob files, of both processes


def test_compare_refuses_an_output_folder_inside_a_runs_encoder_before_any_work(tmp_path, capsys):
    encoder = tmp_path / "encoder"
    encoder.mkdir()
    (encoder / "config.json").write_text("{}")
    out = encoder / "comparison"
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"name": "c", "train": {"path": "missing-train.json"}, "eval": {"path": "missing-eval.json"},
                                  "runs": [{"name": "a"}, {"name": "b", "encoder": str(encoder)}]}))
    assert main(["compare", "--config", str(config), "--data-dir", str(tmp_path), "--output-dir", str(out)]) == 2
    error = capsys.readouterr().err.strip()  # before the data are read, and before run a trains
    assert error == f"error: this output lies in the model folder {encoder}, which is being read; choose an output outside it (in {out})"
    assert sorted(p.name for p in encoder.iterdir()) == ["config.json"]


@pytest.mark.parametrize("inside", [False, True])
def test_train_overwrite_into_its_encoder_is_refused_before_the_training_code_loads(tiny_encoder_dir, tmp_path, capsys,
                                                                                   monkeypatch, inside):
    """With --overwrite the folder's emptiness no longer refused it, and the encoder was named only once torch and
    the training code had loaded."""
    import shutil

    from bio_mrc.training import run_checks

    encoder = tmp_path / "encoder"
    shutil.copytree(tiny_encoder_dir, encoder)
    before = {p.name: p.read_bytes() for p in encoder.iterdir()}
    out = encoder / "sub" if inside else encoder
    monkeypatch.setattr(run_checks, "check_windows_fit", lambda *args: pytest.fail("the run's options were checked"))
    assert main(["train", "--train", str(SAMPLE_V1), "--encoder", str(encoder), "--output-dir", str(out), "--overwrite",
                 "--max-seq-length", "48", "--doc-stride", "16", "--max-query-length", "12"]) == 2
    error = capsys.readouterr().err.strip()
    assert error == f"error: this output lies in the model folder {encoder}, which is being read; choose an output outside it (in {out})"
    assert {p.name: p.read_bytes() for p in encoder.iterdir()} == before


def test_prediction_files_a_comparison_wrote_before_it_listed_them_are_its_own(tmp_path):
    from bio_mrc.harness.compare import check_prediction_files
    from bio_mrc.harness.config import parse_config

    config = parse_config({"name": "c", "train": {"path": "t.json"}, "eval": {"path": "e.json"}, "seeds": [13],
                           "runs": [{"name": "a"}]})
    out = tmp_path / "out"
    (out / "predictions").mkdir(parents=True)
    kept = out / "cells" / "a-seed13-0123456789ab-0123456789ab.predictions"
    kept.mkdir(parents=True)
    (kept / "span.json").write_text('{"q1": "x"}')
    (out / "predictions" / "a-seed13-span.json").write_text('{"q1": "x"}')  # what the cell kept: the comparison's
    check_prediction_files(config, out)
    assert json.loads((out / "predictions" / ".predictions-files.json").read_text()) == {"a-seed13-span.json": None}
    (out / "predictions" / "a-seed13-bio.json").write_text('{"q1": "mine"}')  # no kept copy holds it: the user's
    with pytest.raises(io.UnsafePathError, match="a-seed13-bio.json was not written by bio_mrc"):
        check_prediction_files(config, out)


def test_the_librarys_paths_read_a_leading_tilde_as_home_as_the_command_line_does(tmp_path, monkeypatch):
    """``load_squad("~/dev.json")`` and the other readers find the file in the home folder, and the writers write
    there, not into a folder named ``~`` in the working folder."""
    import shutil

    from bio_mrc.data.json_reader import read_json
    from bio_mrc.data.predictions import load_predictions
    from bio_mrc.data.squad import load_squad, stream_squad
    from bio_mrc.data.text import read_text_file
    from bio_mrc.inference.files import write_prediction_files
    from bio_mrc.training.config import TrainConfig
    from bio_mrc.types import Prediction

    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir(), work.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(work)
    shutil.copy(SAMPLE_V1, home / "dev.json")
    (home / "preds.json").write_text(json.dumps({"q": "Ada"}), encoding="utf-8")
    assert load_squad("~/dev.json").examples == load_squad(SAMPLE_V1).examples
    assert list(stream_squad("~/dev.json", limit=2)) == load_squad(SAMPLE_V1, limit=2).examples
    assert read_json("~/preds.json") == {"q": "Ada"} and read_text_file("~/preds.json") == '{"q": "Ada"}'
    assert load_predictions("~/preds.json", ["q"]) == ({"q": "Ada"}, [])
    paths = write_prediction_files([Prediction("q", [])], "~/out/p.json", with_na_probs=False)
    assert paths.predictions == home / "out" / "p.json" and (home / "out" / "p.json").is_file()
    assert TrainConfig(init_from="~/model").init_from == str(home / "model")
    assert os.listdir(work) == []
