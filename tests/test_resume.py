"""A killed training run resumes from its last checkpoint and ends with the uninterrupted run's weights."""

import dataclasses
import json
import shutil

import pytest
import torch
from safetensors.torch import load_file
from transformers.trainer import TRAINER_STATE_NAME

from bio_mrc.features.windows import build_features
from bio_mrc.training.checkpoints import CHECKPOINT_DIGESTS, TRAIN_CONFIG_FILE, TrainingClock
from bio_mrc.training.train import (
    CHECKPOINT_DIR, ResumeError, TrainConfig, load_run_record, scan_checkpoints, train_model,
)

from .training_kill import Killed, KillAtStep

# 23 windows of 32 tokens, 6 steps an epoch, 18 in all; a checkpoint every 3 steps.
EVERY = 3
KILL_AT = 17  # in the third epoch, two steps after checkpoint-15


def _config(encoder):
    return TrainConfig(
        encoder=str(encoder), heads="span+bio", max_seq_length=32, doc_stride=8, max_query_length=12,
        epochs=3, batch_size=4, learning_rate=1e-3, seed=3,
    )


@pytest.fixture
def config(tiny_encoder_dir):
    return _config(tiny_encoder_dir)


@pytest.fixture
def examples(sample_v1):
    return sample_v1.examples


@pytest.fixture(scope="module")
def killed_once(tmp_path_factory, tiny_encoder_dir, sample_v1):
    """A run killed after step KILL_AT, trained once a module: its checkpoints are there, its model is not."""
    out = tmp_path_factory.mktemp("killed-once") / "killed"
    with pytest.raises(Killed):
        train_model(sample_v1.examples, _config(tiny_encoder_dir), out, progress=False, checkpoint_steps=EVERY, callbacks=[KillAtStep(KILL_AT)])
    return out


@pytest.fixture
def killed_dir(tmp_path, killed_once):
    """A copy of the killed run's folder of the test's own: the tests resume it, edit and cut its checkpoint files."""
    out = shutil.copytree(killed_once, tmp_path / "killed")
    assert load_run_record(out) is None and not (out / "model.safetensors").exists()
    assert [p.name for p in scan_checkpoints(out / CHECKPOINT_DIR)[0]] == ["checkpoint-15"]
    return out


def _weights(model_dir):
    return load_file(str(model_dir / "model.safetensors"))


def _assert_same_weights(a, b):
    if torch.cuda.is_available():  # train_model trains there when it can
        pytest.skip("bit-identical weights are a CPU promise: CUDA kernels with atomic adds are not bitwise deterministic")
    assert a.keys() == b.keys()
    different = [name for name in a if not torch.equal(a[name], b[name])]
    assert not different, different


@pytest.mark.slow
def test_resumed_run_ends_with_the_uninterrupted_weights(tmp_path, config, examples, killed_dir, capsys):
    uninterrupted = train_model(examples, config, tmp_path / "a", progress=False, checkpoint_steps=EVERY)
    # A kill while checkpoint-18 was being written: no trainer_state.json yet, so it is not resumed from.
    (killed_dir / CHECKPOINT_DIR / "checkpoint-18").mkdir()
    (killed_dir / CHECKPOINT_DIR / "checkpoint-18" / "model.safetensors").write_bytes(b"\0" * 10)

    resumed = train_model(examples, config, killed_dir, progress=True, checkpoint_steps=EVERY, resume=True)

    assert "resuming training from" in capsys.readouterr().err
    _assert_same_weights(_weights(uninterrupted.model_dir), _weights(resumed.model_dir))  # bit for bit
    record = load_run_record(killed_dir)
    assert record["resumed_from"] == "checkpoint-15" and record["train"] == config.with_resolved_precision().to_dict()
    # every question of the run, as the uninterrupted run records them
    assert record["training_questions"] == load_run_record(uninterrupted.model_dir)["training_questions"]
    assert record["training_questions"]["questions"] == len({(ex.question, ex.context) for ex in examples})
    assert not (killed_dir / CHECKPOINT_DIR).exists()  # the model is complete: nothing is left to resume


@pytest.mark.slow
def test_a_resumed_run_records_the_time_of_every_sitting(config, examples, killed_dir):
    checkpoint = killed_dir / CHECKPOINT_DIR / "checkpoint-15"
    first_sitting = TrainingClock.seconds_saved_in(checkpoint)
    assert first_sitting > 0
    resumed = train_model(examples, config, killed_dir, progress=False, checkpoint_steps=EVERY, resume=True)
    record = load_run_record(killed_dir)
    assert record["earlier_seconds"] == first_sitting
    assert record["seconds"] == resumed.seconds > first_sitting  # both sittings


@pytest.mark.slow
def test_a_checkpoint_saved_without_the_clock_still_resumes_and_says_its_time_is_partial(
    tmp_path, config, examples, killed_dir
):
    uninterrupted = train_model(examples, config, tmp_path / "a", progress=False, save_checkpoints=False)
    state_file = killed_dir / CHECKPOINT_DIR / "checkpoint-15" / TRAINER_STATE_NAME
    state = json.loads(state_file.read_text())
    del state["stateful_callbacks"]["TrainingClock"]  # as an older bio_mrc saved it, without its files' digests
    state_file.write_text(json.dumps(state))
    (state_file.parent / CHECKPOINT_DIGESTS).unlink()
    # Saves checkpoint-18 into a state that had no slot for the clock.
    resumed = train_model(examples, config, killed_dir, progress=False, checkpoint_steps=EVERY, resume=True)
    _assert_same_weights(_weights(uninterrupted.model_dir), _weights(resumed.model_dir))
    record = load_run_record(killed_dir)
    assert record["earlier_seconds"] is None and record["resumed_from"] == "checkpoint-15"


@pytest.mark.slow
def test_resume_with_nothing_to_resume_trains_from_the_start(tmp_path, config, examples, capsys):
    first = train_model(examples, config, tmp_path / "a", progress=False, save_checkpoints=False)
    second = train_model(examples, config, tmp_path / "b", progress=True, checkpoint_steps=EVERY, resume=True)
    assert "nothing to resume" in capsys.readouterr().err
    _assert_same_weights(_weights(first.model_dir), _weights(second.model_dir))
    assert load_run_record(second.model_dir)["resumed_from"] is None
    assert load_run_record(second.model_dir)["earlier_seconds"] == 0.0


class _KillAtTrainEnd(KillAtStep):
    """A kill once training has ended, its last checkpoint saved, while the final model is being saved."""

    def on_train_end(self, args, state, control, **kwargs):
        raise Killed("killed while saving the model")


@pytest.mark.slow
def test_a_run_resumed_at_its_last_step_records_no_loss_rather_than_zero(config, examples, tmp_path):
    """Resumed from the final step's checkpoint, the sitting trains no steps and Trainer reports a mean loss of 0.0,
    which the record and the card gave as the run's final training loss."""
    out = tmp_path / "killed-at-the-end"
    with pytest.raises(Killed):
        train_model(examples, config, out, progress=False, checkpoint_steps=EVERY, callbacks=[_KillAtTrainEnd(-1)])
    assert [p.name for p in scan_checkpoints(out / CHECKPOINT_DIR)[0]] == ["checkpoint-18"]  # 18 steps in all
    resumed = train_model(examples, config, out, progress=False, checkpoint_steps=EVERY, resume=True)
    record = load_run_record(out)
    assert resumed.final_loss is None and record["final_loss"] is None and record["resumed_from"] == "checkpoint-18"
    assert "training loss not measured" in (out / "README.md").read_text()


def test_resume_refuses_other_training_options(config, examples, killed_dir):
    changed = dataclasses.replace(config, learning_rate=2e-3, epochs=4)
    with pytest.raises(ResumeError, match=r"epochs: 3 then, 4 now; learning_rate: 0\.001 then, 0\.002 now"):
        train_model(examples, changed, killed_dir, progress=False, checkpoint_steps=EVERY, resume=True)
    with pytest.raises(ResumeError, match="other questions"):
        train_model(examples[:-1], config, killed_dir, progress=False, checkpoint_steps=EVERY, resume=True)
    (killed_dir / CHECKPOINT_DIR / TRAIN_CONFIG_FILE).unlink()
    with pytest.raises(ResumeError, match="training options are unknown"):
        train_model(examples, config, killed_dir, progress=False, checkpoint_steps=EVERY, resume=True)


def test_a_refused_resume_is_refused_before_the_model_loads(config, examples, killed_dir, monkeypatch, capsys):
    from bio_mrc.cli import main, train_command
    from bio_mrc.training import train

    from .conftest import SAMPLE_V1

    def fail(*args, **kwargs):
        raise AssertionError("the model loaded")

    monkeypatch.setattr(train, "fresh_model_and_tokenizer", fail)
    with pytest.raises(ResumeError, match=r"learning_rate: 0\.001 then, 0\.002 now"):
        train_model(examples, dataclasses.replace(config, learning_rate=2e-3), killed_dir, checkpoint_steps=EVERY, resume=True)
    with pytest.raises(ResumeError, match=r"unfinished run.*; resume it \(resume=True\) or delete"):
        train_model(examples, config, killed_dir, checkpoint_steps=EVERY)
    monkeypatch.setattr(train_command, "load_task_data", fail)  # without --resume, before the data is read
    assert main(["train", "--train", str(SAMPLE_V1), "--output-dir", str(killed_dir), "--encoder", config.encoder,
                 "--max-seq-length", "32", "--doc-stride", "8", "--max-query-length", "12"]) == 2
    assert capsys.readouterr().err == (f"error: {killed_dir / CHECKPOINT_DIR} holds the checkpoints of an unfinished run "
                                       "(last: checkpoint-15); resume it (--resume) or delete that folder to start over\n")


@pytest.mark.slow
def test_a_fresh_run_does_not_overwrite_an_unfinished_one(config, examples, killed_dir):
    with pytest.raises(ResumeError, match="unfinished run.*resume"):
        train_model(examples, config, killed_dir, progress=False, checkpoint_steps=EVERY)
    assert scan_checkpoints(killed_dir / CHECKPOINT_DIR)[0]  # still there to resume from


def test_checkpoint_steps_must_be_positive(config, examples, tmp_path):
    with pytest.raises(ValueError, match="checkpoint_steps"):
        train_model(examples, config, tmp_path, progress=False, checkpoint_steps=0)


@pytest.mark.slow
def test_the_train_command_resumes_and_never_overwrites_a_finished_model(tiny_encoder_dir, tmp_path, capsys):
    from bio_mrc.cli import main

    from .conftest import SAMPLE_V1

    command = ["train", "--train", str(SAMPLE_V1), "--output-dir", str(tmp_path), "--encoder", str(tiny_encoder_dir),
               "--epochs", "1", "--batch-size", "4", "--max-seq-length", "48", "--doc-stride", "16", "--max-query-length", "12"]
    assert main([*command, "--resume"]) == 0
    assert "nothing to resume" in capsys.readouterr().err
    assert main(command) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (f"error: {tmp_path} holds a finished model; choose another output "
                                                        "folder or pass --overwrite")
    assert main([*command, "--overwrite"]) == 0


@pytest.mark.parametrize("saved", ['{"train": {"epochs": 3', "[1]", '{"train": "x"}'])
def test_a_damaged_record_of_the_checkpoints_options_is_one_line(tmp_path, saved):
    """--resume compares the checkpoints' saved options with the run's: a cut or foreign file was a JSONDecodeError
    or AttributeError traceback; now one BioMrcError naming the file or what it lacks."""
    from bio_mrc.errors import BioMrcError
    from bio_mrc.training.checkpoints import checkpoint_to_resume

    folder = tmp_path / CHECKPOINT_DIR
    (folder / "checkpoint-3").mkdir(parents=True)
    (folder / "checkpoint-3" / TRAINER_STATE_NAME).write_text("{}")
    (folder / TRAIN_CONFIG_FILE).write_text(saved)
    with pytest.raises(BioMrcError, match=rf"{TRAIN_CONFIG_FILE}") as info:
        checkpoint_to_resume(folder, {"train": {}, "questions": "h"}, True, True, True, False)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("state", ["[1]", "5", "[" * 100_000 + "]" * 100_000])
def test_a_trainer_state_that_is_no_json_object_is_no_complete_checkpoint(tmp_path, state):
    """A state of another shape, or nested past the parser's stack, was an AttributeError or RecursionError traceback
    on every later --resume; it is a checkpoint cut short, as a state that does not parse."""
    for step, text in ((3, "{}"), (6, state)):
        (tmp_path / f"checkpoint-{step}").mkdir()
        (tmp_path / f"checkpoint-{step}" / TRAINER_STATE_NAME).write_text(text)
    assert [[p.name for p in found] for found in scan_checkpoints(tmp_path)] == [["checkpoint-3"], ["checkpoint-6"]]


@pytest.mark.parametrize("callbacks, seconds", [
    ({"TrainingClock": {"attributes": {"trained_seconds": 12.5}}}, 12.5), ([1], None), ({"TrainingClock": [1]}, None),
    ({"TrainingClock": {"attributes": 5}}, None), ({"TrainingClock": {"attributes": {"trained_seconds": "12"}}}, None),
    ({"TrainingClock": {"attributes": {"trained_seconds": -3}}}, None), ({"TrainingClock": {"attributes": {"trained_seconds": True}}}, None),
])
def test_a_checkpoints_clock_of_another_shape_is_time_unknown(tmp_path, callbacks, seconds):
    """An edited clock is the time of a checkpoint saved without it (the run's time then says partial), never a traceback
    or a sum with a string."""
    (tmp_path / TRAINER_STATE_NAME).write_text(json.dumps({"stateful_callbacks": callbacks}))
    assert TrainingClock.seconds_saved_in(tmp_path) == seconds


def test_a_refused_resume_names_an_option_left_out_of_the_record_by_its_value(tmp_path):
    """tag_mentions 'annotated' is left out of a run's options (its value before the option existed): the refusal
    names it, not None."""
    from bio_mrc.training.checkpoints import _check_same_run

    (tmp_path / TRAIN_CONFIG_FILE).write_text(json.dumps({"train": {"tag_mentions": "every"}, "questions": "h"}))
    with pytest.raises(ResumeError) as refused:
        _check_same_run(tmp_path, {"train": {}, "questions": "h"}, tmp_path / "checkpoint-5")
    assert '(tag_mentions: "every" then, "annotated" now)' in str(refused.value)


def test_a_refused_resume_says_what_to_do(tmp_path):
    """A checkpoint of other options or questions is refused saying how to continue it or start over; one saved by an
    earlier version before an option existed, whose value then no option gives (the encoder's own dropout), says the
    run cannot be continued and how to start over."""
    from bio_mrc.training.checkpoints import _check_same_run

    record = tmp_path / TRAIN_CONFIG_FILE
    record.write_text(json.dumps({"train": {"epochs": 3.0}, "questions": "h"}))
    with pytest.raises(ResumeError) as refused:
        _check_same_run(tmp_path, {"train": {"epochs": 4.0}, "questions": "h"}, tmp_path / "checkpoint-5")
    assert str(refused.value).endswith(f"(epochs: 3.0 then, 4.0 now); give the options it was trained with to resume it, "
                                       f"or delete {tmp_path} to start over")
    with pytest.raises(ResumeError) as refused:
        _check_same_run(tmp_path, {"train": {"epochs": 3.0}, "questions": "other"}, tmp_path / "checkpoint-5")
    assert str(refused.value).endswith(f"give the questions it was trained on to resume it, or delete {tmp_path} to start over")
    # as an earlier version wrote it: no dropout, precision or tag_mentions, the dropout its encoder's own
    record.write_text(json.dumps({"train": {"epochs": 3.0}, "questions": "h"}))
    now = {"epochs": 3.0, "attention_dropout": 0.0, "hidden_dropout": 0.0, "tag_mentions": "every"}
    with pytest.raises(ResumeError) as refused:
        _check_same_run(tmp_path, {"train": now, "questions": "h"}, tmp_path / "checkpoint-5")
    message = str(refused.value)
    assert "\n" not in message and "attention_dropout: null then, 0.0 now" in message
    assert message.endswith(f"it was saved before attention_dropout and hidden_dropout existed, by a version this one "
                            f"cannot continue exactly: delete {tmp_path} to start over")


@pytest.mark.parametrize("option", [[], ["--resume"], ["--overwrite"], ["--resume", "--overwrite"]])
def test_a_second_train_into_a_folder_another_is_training_is_refused_and_leaves_it(tmp_path, capsys, monkeypatch, option):
    import bio_mrc.cli.train_command
    from bio_mrc.cli import main
    from bio_mrc.io import sole_process_in

    from .conftest import SAMPLE_V1

    out = tmp_path / "out"
    (out / "checkpoints").mkdir(parents=True)
    (out / "checkpoints" / "theirs.txt").write_text("the first run's")
    monkeypatch.setattr(bio_mrc.cli.train_command, "_train_into", lambda args: pytest.fail("the second run went on"))
    command = ["train", "--train", str(SAMPLE_V1), "--output-dir", str(out), "--encoder", "e", *option]
    with sole_process_in(out, "held"):  # the first run, training there now
        assert main(command) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("error: another process is writing into this folder now (a train, tune, export or convert of a model "
                   f"there); wait for it to end, or choose another --output-dir (in {out})"), err
    assert (out / "checkpoints" / "theirs.txt").read_text() == "the first run's"


@pytest.mark.parametrize("given", ["runs/out", "alias"])
def test_the_lock_refusal_names_the_output_folder_as_given(tmp_path, capsys, monkeypatch, given):
    """A relative path, or a link the user chose, is named as typed, as the other lines name it (not its real path)."""
    import bio_mrc.cli.train_command
    from bio_mrc.cli import main
    from bio_mrc.io import sole_process_in

    from .conftest import SAMPLE_V1

    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs" / "out").mkdir(parents=True)
    (tmp_path / "alias").symlink_to(tmp_path / "runs" / "out")
    monkeypatch.setattr(bio_mrc.cli.train_command, "_train_into", lambda args: pytest.fail("the second run went on"))
    with sole_process_in(tmp_path / "runs" / "out", "held"):
        assert main(["train", "--train", str(SAMPLE_V1), "--output-dir", given, "--encoder", "e"]) == 2
    assert capsys.readouterr().err.strip().endswith(f"choose another --output-dir (in {given})")


def test_a_train_that_fails_before_writing_leaves_no_folder_it_made(tiny_encoder_dir, tmp_path, capsys):
    from bio_mrc.cli import main

    out = tmp_path / "new" / "out"
    assert main(["train", "--train", str(tmp_path / "missing.json"), "--output-dir", str(out),
                 "--encoder", str(tiny_encoder_dir)]) == 2
    assert "file not found" in capsys.readouterr().err and not (tmp_path / "new").exists()


def _drop_word_units(checkpoint):
    """The checkpoint's config as a bio_mrc before ``word_units`` saved it: trained on the tokenizer's words (and
    without its files' digests, which came later)."""
    path = checkpoint / "config.json"
    saved = json.loads(path.read_text())
    assert saved.pop("word_units") == "punctuation"
    path.write_text(json.dumps(saved))
    (checkpoint / CHECKPOINT_DIGESTS).unlink()


def test_a_run_resumed_from_a_checkpoint_without_word_units_keeps_the_tokenizers_words(config, examples, killed_dir,
                                                                                       monkeypatch):
    """It trained its last steps on the punctuation words and saved a model saying so, on weights whose first steps
    learnt the tokenizer's words (sentencepiece's ``Paris.``)."""
    from bio_mrc.model import BioMrcConfig
    from bio_mrc.training import trainer

    _drop_word_units(killed_dir / CHECKPOINT_DIR / "checkpoint-15")
    built = []
    monkeypatch.setattr(trainer, "build_features", lambda examples, tokenizer, features, **kwargs: (
        built.append(features.word_units), build_features(examples, tokenizer, features, **kwargs))[1])
    train_model(examples, config, killed_dir, progress=False, checkpoint_steps=EVERY, resume=True)
    assert built == ["tokenizer"]
    assert BioMrcConfig.from_pretrained(killed_dir).word_units == "tokenizer"


@pytest.mark.parametrize("saved, problem", [
    ({"word_units": "letters"}, 'word_units is "letters", not one of ["punctuation", "tokenizer"]'),
    ([], "no model config (a JSON object)"),
    (None, "no config.json, so the words its BIO head was trained on are unknown"),
])
def test_a_checkpoints_words_that_read_as_none_are_refused_before_the_model_loads(config, examples, killed_dir, monkeypatch,
                                                                                  saved, problem):
    from bio_mrc.training import train

    monkeypatch.setattr(train, "fresh_model_and_tokenizer", lambda *args, **kwargs: pytest.fail("the model loaded"))
    checkpoint = killed_dir / CHECKPOINT_DIR / "checkpoint-15"
    (checkpoint / CHECKPOINT_DIGESTS).unlink()  # a checkpoint saved without them (an edit is refused as such: above)
    if saved is None:
        (checkpoint / "config.json").unlink()
    else:
        (checkpoint / "config.json").write_text(json.dumps(saved))
    with pytest.raises(ResumeError) as refused:
        train_model(examples, config, killed_dir, progress=False, checkpoint_steps=EVERY, resume=True)
    assert str(refused.value) == f"cannot resume from {checkpoint}: {problem}"


@pytest.mark.parametrize("name", ["model.safetensors", "optimizer.pt", "scheduler.pt", "rng_state.pth"])
def test_a_checkpoint_file_cut_short_is_one_line_before_the_model_loads(config, examples, killed_dir, monkeypatch, name):
    """A weights or state file cut short or edited (a copy, a full disk) was a safetensors or torch traceback once the
    windows were built and training had begun."""
    from bio_mrc.training import train

    monkeypatch.setattr(train, "fresh_model_and_tokenizer", lambda *args, **kwargs: pytest.fail("the model loaded"))
    checkpoint = killed_dir / CHECKPOINT_DIR / "checkpoint-15"
    with open(checkpoint / name, "r+b") as file:
        file.truncate(10)
    with pytest.raises(ResumeError) as refused:
        train_model(examples, config, killed_dir, progress=False, checkpoint_steps=EVERY, resume=True)
    assert str(refused.value).startswith(f"cannot resume from {checkpoint}: {name} ") and "\n" not in str(refused.value)
    assert str(refused.value).endswith(f"delete {killed_dir / CHECKPOINT_DIR} to start over")


def test_a_temporary_file_of_the_options_record_left_by_a_kill_is_bio_mrcs_and_removed(tmp_path):
    """A kill while the options record was written left its temporary file, which every later run, --resume too,
    refused as a file bio_mrc did not write: the folder could neither be resumed nor trained into again."""
    from bio_mrc.training.checkpoints import checkpoint_to_resume
    from bio_mrc.training.output_folder import check_output_folder, checkpoint_strangers

    folder = tmp_path / CHECKPOINT_DIR
    folder.mkdir()
    (folder / f".{TRAIN_CONFIG_FILE}.4242.0a1b2c3d.tmp").write_text('{"tr')
    assert checkpoint_strangers(folder) == []
    check_output_folder(tmp_path, overwrite=False)
    checkpoint_to_resume(folder, {"train": {}, "questions": "h"}, True, True, True, False)
    assert sorted(p.name for p in folder.iterdir()) == [TRAIN_CONFIG_FILE]
    (folder / f".{TRAIN_CONFIG_FILE}.x.tmp").write_text("")  # no temporary name bio_mrc makes
    assert checkpoint_strangers(folder) == [f".{TRAIN_CONFIG_FILE}.x.tmp"]


def _flip_a_byte(path):
    """One byte of ``path`` changed, its length kept: no structure check of the file can see it."""
    data = bytearray(path.read_bytes())
    if path.name == TRAINER_STATE_NAME:  # still a JSON object (a complete checkpoint), one digit other
        at = data.index(b'"global_step": 15') + len(b'"global_step": 1')
        data[at] = ord("6")
    else:
        data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("name", ["model.safetensors", "optimizer.pt", "scheduler.pt", "rng_state.pth", TRAINER_STATE_NAME])
def test_a_checkpoint_file_whose_bytes_changed_is_one_line_before_the_model_loads(config, examples, killed_dir, monkeypatch,
                                                                                  name):
    """A byte changed inside a file of the right length (a copy, a disk, a hand) passed every structure check, and
    the run went on from a state it never saved."""
    from bio_mrc.training import train

    monkeypatch.setattr(train, "fresh_model_and_tokenizer", lambda *args, **kwargs: pytest.fail("the model loaded"))
    checkpoint = killed_dir / CHECKPOINT_DIR / "checkpoint-15"
    _flip_a_byte(checkpoint / name)
    with pytest.raises(ResumeError) as refused:
        train_model(examples, config, killed_dir, progress=False, checkpoint_steps=EVERY, resume=True)
    assert str(refused.value) == (f"{checkpoint / name}: its bytes changed since it was saved (SHA-256 differs), so "
                                  f"checkpoint-15 cannot be resumed; delete {killed_dir / CHECKPOINT_DIR} to start over")


def test_a_changed_checkpoint_points_to_the_runs_earlier_checkpoint(config, examples, killed_dir):
    import shutil

    from bio_mrc.training.checkpoints import check_resumable

    checkpoints = killed_dir / CHECKPOINT_DIR
    shutil.copytree(checkpoints / "checkpoint-15", checkpoints / "checkpoint-12")
    _flip_a_byte(checkpoints / "checkpoint-15" / "optimizer.pt")
    options = json.loads((checkpoints / TRAIN_CONFIG_FILE).read_text())  # the run's own
    with pytest.raises(ResumeError, match=rf"; delete {checkpoints / 'checkpoint-15'} to resume from checkpoint-12, or "
                                          rf"delete {checkpoints} to start over$"):
        check_resumable(checkpoints, options, True, True)
    (checkpoints / "checkpoint-15" / "optimizer.pt").unlink()
    with pytest.raises(ResumeError, match=r"optimizer\.pt: missing since it was saved, so checkpoint-15 cannot be resumed"):
        check_resumable(checkpoints, options, True, True)


def test_a_checkpoint_saved_without_its_digests_still_resumes(config, examples, killed_dir):
    from bio_mrc.training.checkpoints import check_resumable

    checkpoints = killed_dir / CHECKPOINT_DIR
    assert sorted(json.loads((checkpoints / "checkpoint-15" / CHECKPOINT_DIGESTS).read_text())["sha256"]) == [
        "config.json", "model.safetensors", "optimizer.pt", "rng_state.pth", "scheduler.pt", TRAINER_STATE_NAME,
        "training_args.bin"]
    (checkpoints / "checkpoint-15" / CHECKPOINT_DIGESTS).unlink()
    options = json.loads((checkpoints / TRAIN_CONFIG_FILE).read_text())  # the run's own
    assert check_resumable(checkpoints, options, True, True) == checkpoints / "checkpoint-15"


def test_a_resume_refuses_an_init_from_model_changed_since_the_run_began(tiny_encoder_dir, examples, tmp_path, monkeypatch):
    """``--init-from A`` killed, A retrained in place, then ``--resume``: the run went on from another starting point
    (A's decoding settings, tokenizer and earlier stages) without a word."""
    from safetensors.torch import save_file

    from bio_mrc.training import train

    from .conftest import untrained_model_folder

    first = untrained_model_folder(tiny_encoder_dir, tmp_path / "A", heads="span+bio")
    config = TrainConfig(init_from=str(first), heads="span+bio", max_seq_length=32, doc_stride=8, max_query_length=12,
                         epochs=1, batch_size=4, learning_rate=1e-3, seed=3)
    out = tmp_path / "B"
    with pytest.raises(Killed):
        train_model(examples, config, out, checkpoint_steps=EVERY, callbacks=[KillAtStep(4)])
    options = json.loads((out / CHECKPOINT_DIR / TRAIN_CONFIG_FILE).read_text())
    from bio_mrc.training.checkpoints import check_resumable

    assert check_resumable(out / CHECKPOINT_DIR, options, True, True) == out / CHECKPOINT_DIR / "checkpoint-3"
    weights = _weights(first)
    save_file({name: tensor + 1 for name, tensor in weights.items()}, str(first / "model.safetensors"), metadata={"format": "pt"})
    monkeypatch.setattr(train, "fresh_model_and_tokenizer", lambda *args, **kwargs: pytest.fail("the model loaded"))
    with pytest.raises(ResumeError) as refused:
        train_model(examples, config, out, checkpoint_steps=EVERY, resume=True)
    assert str(refused.value) == (
        f"cannot resume from {out / CHECKPOINT_DIR / 'checkpoint-3'}: the model it continues ({first}) changed since the "
        f"run began (its weights or tokenizer differ); train from it into a new folder, or delete {out / CHECKPOINT_DIR} "
        "to start over")


def test_train_model_into_a_folder_another_is_training_is_refused_before_any_work(tmp_path, monkeypatch):
    """From Python no lock was taken: a train_model into a folder a ``bio-mrc train`` was writing trained beside it."""
    import bio_mrc.training.train as train
    from bio_mrc.errors import OutputError
    from bio_mrc.io import sole_process_in
    from bio_mrc.training.train import TrainConfig, train_model

    out = tmp_path / "out"
    (out / "checkpoints").mkdir(parents=True)
    (out / "checkpoints" / "theirs.txt").write_text("the first run's")
    monkeypatch.setattr(train, "_finished_run", lambda *args: pytest.fail("the second run went on"))
    with sole_process_in(out, "held"), pytest.raises(OutputError) as refused:  # the first run, training there now
        train_model([], TrainConfig(encoder="e"), out)
    assert str(refused.value) == ("another process is writing into this folder now (a train, tune, export or convert of a "
                                  f"model there); wait for it to end, or choose another output_dir (in {out})")
    assert (out / "checkpoints" / "theirs.txt").read_text() == "the first run's"
