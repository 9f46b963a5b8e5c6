"""Any TrainingArguments field passes through ``training_args``; the package's own are refused by name."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest
from transformers import TrainerCallback, TrainingArguments
from transformers.training_args import OptimizerNames

from bio_mrc.cli import build_parser
from bio_mrc.cli.options import train_config
from bio_mrc.errors import ConfigError
from bio_mrc.harness.config import parse_config
from bio_mrc.harness.models import model_key
from bio_mrc.harness.comparison_splits import Split
from bio_mrc.inference.during_training import TrainingEvaluator
from bio_mrc.training.config import TrainConfig
from bio_mrc.training.training_args import OWNED_TRAINING_ARGS
from bio_mrc.training.train import train_model
from bio_mrc.training.trainer import training_arguments

TRAIN = ["train", "--train", "t.json", "--output-dir", "out"]


def test_a_misspelled_field_is_refused_with_the_field_it_misspells():
    with pytest.raises(ConfigError, match='"gradient_acumulation_steps" is not a TrainingArguments field '
                                          r'\(did you mean "gradient_accumulation_steps"\?\)'):
        TrainConfig(training_args={"gradient_acumulation_steps": 2})


@pytest.mark.parametrize("name, option", [("learning_rate", "set learning_rate;"), ("num_train_epochs", "set epochs$"),
                                          ("per_device_train_batch_size", "set batch_size$"), ("seed", "set seed;"),
                                          ("bf16", "set precision:"), ("save_steps", "set checkpoint_steps$"),
                                          ("fp16_full_eval", "set precision:"), ("bf16_full_eval", "set precision:"),
                                          ("resume_from_checkpoint", "pass resume=True:"), ("label_smoothing_factor", "bio_targets")])
def test_a_field_the_package_owns_is_refused_naming_its_option(name, option):
    """From Python the option is TrainConfig's field (the command line's flag: tests/test_argument_names.py)."""
    with pytest.raises(ConfigError, match=f'"{name}" is the package\'s own: .*{option}') as refused:
        TrainConfig(training_args={name: 1})
    assert "--" not in str(refused.value)


def test_every_owned_name_is_a_training_arguments_field():
    assert set(OWNED_TRAINING_ARGS) <= {f.name for f in dataclasses.fields(TrainingArguments)}


def test_a_value_transformers_refuses_is_refused_before_training():
    with pytest.raises(ConfigError, match="bogus is not a valid SchedulerType"):
        TrainConfig(training_args={"lr_scheduler_type": "bogus"})


@pytest.mark.parametrize("name, value", [("gradient_accumulation_steps", 0), ("gradient_accumulation_steps", -2),
                                         ("dataloader_num_workers", -1), ("per_device_eval_batch_size", 0),
                                         ("gradient_accumulation_steps", "x"), ("per_device_eval_batch_size", 2.5),
                                         ("gradient_accumulation_steps", True)])
def test_a_count_transformers_takes_but_trainer_cannot_use_is_refused_before_training(name, value):
    """TrainingArguments takes these; Trainer then divides by them or hands them to a DataLoader, a traceback once the
    model is built (gradient_accumulation_steps 0: ZeroDivisionError), with a checkpoints/ folder left behind."""
    with pytest.raises(ConfigError, match=rf"training_args: {name} is a count of at least [01], got {re.escape(json.dumps(value))}"):
        TrainConfig(training_args={name: value})
    assert TrainConfig(training_args={name: 2}).training_args == {name: 2}


@pytest.mark.parametrize("value", [0, -2])
def test_a_step_count_that_trains_other_steps_than_asked_is_refused_before_training(value):
    """max_steps 0 trained one step; below -1 it trained the epochs, as -1 (unset) does."""
    with pytest.raises(ConfigError, match=rf"^training_args: max_steps is a number of optimizer steps from 1, or -1 \(the epochs decide\), got {value}$"):
        TrainConfig(training_args={"max_steps": value})
    assert TrainConfig(training_args={"max_steps": -1}).training_args == {"max_steps": -1}
    assert TrainConfig(training_args={"max_steps": 1}).training_args == {"max_steps": 1}


@pytest.mark.parametrize("name, value, what", [("max_grad_norm", "x", "a number"), ("max_grad_norm", True, "a number"),
                                               ("eval_steps", "3", "a number"), ("max_steps", 1.5, "a whole number"),
                                               ("torch_compile", 1, "true or false"), ("run_name", 5, "a string")])
def test_a_value_of_the_wrong_type_is_refused_before_training(name, value, what):
    """TrainingArguments keeps these unchecked; max_grad_norm "x" ends in a TypeError traceback at the first step."""
    with pytest.raises(ConfigError, match=rf"training_args: {name} is {what}, got {re.escape(json.dumps(value))}$"):
        TrainConfig(training_args={name: value})
    assert TrainConfig(training_args={"max_grad_norm": 1, "eval_steps": None}).training_args == {"max_grad_norm": 1, "eval_steps": None}


@pytest.mark.parametrize("name, value, what", [("adam_beta1", 2, "from 0 up to, not including, 1"),
                                               ("adam_beta2", 1.0, "from 0 up to, not including, 1"),
                                               ("adam_beta1", -0.1, "from 0 up to, not including, 1"),
                                               ("adam_epsilon", -1e-8, "at least 0")])
def test_an_optimizer_setting_adamw_refuses_is_refused_before_training(name, value, what):
    """TrainingArguments keeps these unchecked; torch's AdamW refused adam_beta1 2 once the model was built, a ValueError
    traceback with the model's checkpoints/ folder begun."""
    with pytest.raises(ConfigError, match=rf"training_args: {name} is {what}, got {re.escape(json.dumps(value))}$"):
        TrainConfig(training_args={name: value})
    assert TrainConfig(training_args={"adam_beta1": 0.0, "adam_beta2": 0.5, "adam_epsilon": 0}).training_args["adam_beta1"] == 0.0


@pytest.mark.parametrize("name, value", [("torch_compile_mode", "bogus"), ("torch_compile_backend", "no-such-backend")])
def test_a_compile_mode_or_backend_torch_does_not_know_is_refused_before_training(name, value):
    """torch.compile refused torch_compile_mode 'bogus' at the first step, a RuntimeError traceback."""
    with pytest.raises(ConfigError, match=rf"training_args: {name} is one of .*, got {json.dumps(value)}$"):
        TrainConfig(training_args={name: value})
    known = TrainConfig(training_args={"torch_compile_mode": "max-autotune", "torch_compile_backend": "inductor"})
    assert known.training_args["torch_compile_backend"] == "inductor" and known.training_args["torch_compile_mode"] == "max-autotune"


# transformers renamed the checkpointing settings (activation_checkpointing, its _kwargs); these tests give the older
# names, which the package still reads, and TrainingArguments says they are deprecated as it reads them.
OLDER_CHECKPOINTING_NAMES = pytest.mark.filterwarnings(
    r"ignore:`gradient_checkpointing(_kwargs)?` is deprecated:FutureWarning:transformers\.training_args")


@OLDER_CHECKPOINTING_NAMES
@pytest.mark.parametrize("given, problem", [
    ({"lr_scheduler_kwargs": {"num_cycle": 2}}, 'lr_scheduler_type "linear" with lr_scheduler_kwargs {"num_cycle": 2}: '
                                                ".*unexpected keyword argument 'num_cycle'"),
    ({"lr_scheduler_kwargs": '{"power": 2}'}, 'lr_scheduler_type "linear" with lr_scheduler_kwargs {"power": 2}: .*\'power\''),
    ({"lr_scheduler_type": "cosine", "lr_scheduler_kwargs": {"num_cycles": "x"}}, "could not convert string to float: 'x'"),
    ({"lr_scheduler_type": "cosine_with_min_lr"}, "One of min_lr or min_lr_rate should be set"),
    ({"lr_scheduler_type": "warmup_stable_decay"}, "missing 1 required positional argument: 'num_decay_steps'"),
    ({"lr_scheduler_kwargs": [1]}, 'lr_scheduler_kwargs is an object of the "linear" schedule\'s keyword arguments, got \\[1\\]'),
    ({"gradient_checkpointing": True, "gradient_checkpointing_kwargs": {"use_reentrent": False}},
     'gradient_checkpointing_kwargs: "use_reentrent" is no option of the checkpointing \\(did you mean "use_reentrant"\\?\\)'),
    ({"gradient_checkpointing_kwargs": "x"}, "gradient_checkpointing_kwargs is an object of the checkpointing's options"),
    ({"dataloader_persistent_workers": True}, "dataloader_persistent_workers keeps worker processes, which need dataloader_num_workers above 0"),
])
def test_a_schedule_checkpointing_or_loader_setting_trainer_fails_on_is_refused_before_training(given, problem):
    """TrainingArguments keeps these unchecked; Trainer built the schedule, torch checkpointed a layer and the DataLoader
    started once the model was built, each a TypeError or ValueError traceback with the model's folder begun."""
    with pytest.raises(ConfigError, match=f"^training_args: .*{problem}"):
        TrainConfig(training_args=given)


@OLDER_CHECKPOINTING_NAMES
def test_a_schedule_checkpointing_or_loader_setting_trainer_takes_is_kept():
    for given in ({"lr_scheduler_type": "cosine", "lr_scheduler_kwargs": {"num_cycles": 0.25}},
                  {"lr_scheduler_type": "cosine_with_min_lr", "lr_scheduler_kwargs": {"min_lr": 1e-6}},
                  {"lr_scheduler_type": "warmup_stable_decay", "lr_scheduler_kwargs": {"num_decay_steps": 2}},
                  {"lr_scheduler_type": "reduce_lr_on_plateau", "lr_scheduler_kwargs": {"patience": 2}, "eval_strategy": "steps", "eval_steps": 5},
                  {"gradient_checkpointing": True, "gradient_checkpointing_kwargs": {"use_reentrant": False, "every_n_layers": 2}},
                  {"dataloader_persistent_workers": True, "dataloader_num_workers": 1}):
        assert TrainConfig(training_args=given).training_args == given


def test_a_comparison_run_whose_schedule_trainer_fails_on_is_refused_with_its_key_path():
    with pytest.raises(ConfigError, match=r'^runs\[1\]: training_args: lr_scheduler_type "linear" with lr_scheduler_kwargs \{"a": 1\}'):
        parse_config({"train": {"path": "t.json"}, "eval": {"path": "e.json"},
                      "runs": [{"name": "a"}, {"name": "b", "training_args": {"lr_scheduler_kwargs": {"a": 1}}}]})


def test_liger_kernels_without_the_package_are_refused_before_training(monkeypatch):
    """Trainer raised an ImportError traceback once the model was built."""
    import transformers.utils

    monkeypatch.setattr(transformers.utils, "is_liger_kernel_available", lambda: False)
    with pytest.raises(ConfigError, match=r"^training_args: use_liger_kernel needs the liger-kernel package, which is not installed$"):
        TrainConfig(training_args={"use_liger_kernel": True})
    assert TrainConfig(training_args={"use_liger_kernel": False}).training_args == {"use_liger_kernel": False}


def test_an_optimizer_whose_package_is_not_installed_is_refused_before_training():
    """Trainer raised ImportError for optim adamw_bnb_8bit without bitsandbytes once the model was built."""
    import importlib.util

    if importlib.util.find_spec("bitsandbytes") is not None:
        pytest.skip("bitsandbytes is installed here")
    with pytest.raises(ConfigError, match=r'^training_args: optim "adamw_bnb_8bit": You need to install `bitsandbytes`'):
        TrainConfig(training_args={"optim": "adamw_bnb_8bit"})
    assert TrainConfig(training_args={"optim": "sgd"}).training_args == {"optim": "sgd"}


@pytest.mark.parametrize("optim", [name.value for name in OptimizerNames])
def test_every_optimizer_trainingarguments_takes_trains_or_is_refused_in_one_line(optim):
    """An optimizer TrainConfig takes is built by Trainer's own lookup and takes a step on a tiny model; any other is one
    ConfigError line (adamw_anyprecision, grokadamw, adamw_torch_xla ended in Trainer's ValueError traceback)."""
    import torch
    from transformers import Trainer

    try:
        config = TrainConfig(training_args={"optim": optim})
    except ConfigError as err:
        assert str(err).startswith(f"training_args: optim {json.dumps(optim)}: ") and "\n" not in str(err)
        return
    layer = torch.nn.Linear(4, 2)
    arguments = TrainingArguments(output_dir="unused", report_to="none", **config.training_args)
    optimizer_class, settings = Trainer.get_optimizer_cls_and_kwargs(arguments, layer)
    optimizer = optimizer_class(layer.parameters(), **settings)
    before = layer.weight.detach().clone()
    layer(torch.ones(3, 4)).sum().backward()
    optimizer.step()
    assert not torch.equal(before, layer.weight)


@pytest.mark.parametrize(("optim", "package"), [("adamw_anyprecision", "torchdistx"), ("grokadamw", "grokadamw")])
def test_an_optimizer_trainer_refuses_with_a_valueerror_when_missing_is_refused_before_training(optim, package):
    import importlib.util

    if importlib.util.find_spec(package) is not None:
        pytest.skip(f"{package} is installed here")
    with pytest.raises(ConfigError, match=rf'^training_args: optim "{optim}": Please install .*{package}'):
        TrainConfig(training_args={"optim": optim})


def test_training_args_go_over_the_package_defaults_and_leave_its_own_values(tmp_path):
    config = TrainConfig(epochs=2, training_args={"gradient_accumulation_steps": 4, "lr_scheduler_type": "cosine", "logging_steps": 3})
    args = training_arguments(config, tmp_path, save_checkpoints=True, progress=False, checkpoint_steps=None)
    assert (args.gradient_accumulation_steps, args.lr_scheduler_type.value, args.logging_steps) == (4, "cosine", 3)
    assert (args.num_train_epochs, args.learning_rate, args.seed) == (2, config.learning_rate, config.seed)
    plain = training_arguments(TrainConfig(), tmp_path, save_checkpoints=True, progress=False, checkpoint_steps=None)
    assert (plain.gradient_accumulation_steps, plain.lr_scheduler_type.value, plain.logging_steps) == (1, "linear", 25)


def test_no_training_args_leave_the_record_and_the_model_key_as_they_were(sample_v1):
    split = Split(sample_v1.examples, "1.1", "sample")
    plain, default_arguments = TrainConfig(), TrainConfig(training_args={})
    assert "training_args" not in plain.to_dict()  # the records of models trained before the field existed
    assert model_key(plain, split) == model_key(default_arguments, split)
    assert TrainConfig.from_dict(plain.to_dict()) == plain
    accumulated = TrainConfig(training_args={"gradient_accumulation_steps": 2})
    assert model_key(accumulated, split) != model_key(plain, split)
    assert TrainConfig.from_dict(accumulated.to_dict()) == accumulated


def test_the_command_line_takes_a_json_object_or_a_json_file(tmp_path):
    written = train_config(build_parser().parse_args(TRAIN + ["--training-args", '{"max_steps": 7}']))
    path = tmp_path / "args.json"
    path.write_text(json.dumps({"max_steps": 7}))
    assert written.training_args == train_config(build_parser().parse_args(TRAIN + ["--training-args", str(path)])).training_args \
        == {"max_steps": 7}


@pytest.mark.parametrize("value, problem", [("[1, 2]", "not an object"), ("{nope", "not valid JSON"), ("missing.json", "readable JSON file")])
def test_the_command_line_refuses_what_is_no_json_object(value, problem, capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(TRAIN + ["--training-args", value])
    assert problem in capsys.readouterr().err


def test_a_run_adds_to_the_defaults_training_args():
    config = parse_config({
        "train": {"path": "t.json"}, "eval": {"path": "e.json"},
        "defaults": {"training_args": {"gradient_accumulation_steps": 2, "logging_steps": 5}},
        "runs": [{"name": "a"}, {"name": "b", "training_args": {"logging_steps": 1, "max_steps": 3}}],
    })
    assert config.runs[0].train.training_args == {"gradient_accumulation_steps": 2, "logging_steps": 5}
    assert config.runs[1].train.training_args == {"gradient_accumulation_steps": 2, "logging_steps": 1, "max_steps": 3}


def test_a_run_naming_an_owned_field_is_refused_with_its_key_path():
    with pytest.raises(ConfigError, match=r'runs\[0\]: training_args: "seed" is the package\'s own'):
        parse_config({"train": {"path": "t.json"}, "eval": {"path": "e.json"}, "runs": [{"name": "a", "training_args": {"seed": 1}}]})


class _Seen(TrainerCallback):
    def on_train_begin(self, args, state, control, **kwargs):
        self.accumulation, self.max_steps = args.gradient_accumulation_steps, state.max_steps


@pytest.mark.slow
def test_train_model_trains_with_the_training_args(tiny_encoder_dir, sample_v1, tmp_path):
    config = TrainConfig(encoder=str(tiny_encoder_dir), max_seq_length=48, doc_stride=16, max_query_length=12, batch_size=2,
                         training_args={"gradient_accumulation_steps": 2, "max_steps": 3, "logging_steps": 1})
    seen = _Seen()
    train_model(sample_v1.examples, config, tmp_path / "model", save_checkpoints=False, callbacks=[seen])
    assert (seen.accumulation, seen.max_steps) == (2, 3)


def test_training_args_that_clash_with_the_package_arguments_are_refused_before_training(tiny_encoder_dir, sample_v1, tmp_path):
    config = TrainConfig(encoder=str(tiny_encoder_dir), max_seq_length=48, doc_stride=16, max_query_length=12,
                         training_args={"load_best_model_at_end": True, "metric_for_best_model": "span_f1", "eval_strategy": "steps"})
    with pytest.raises(ConfigError, match="with the package's own arguments"):  # the best checkpoint needs checkpoints
        train_model(sample_v1.examples, config, tmp_path / "model", save_checkpoints=False)
    assert not (tmp_path / "model").exists()


@pytest.mark.parametrize("best, problem", [({}, '"loss"'), ({"metric_for_best_model": "f1"}, '"f1"')])
def test_the_best_checkpoint_by_a_score_the_evaluation_never_gives_is_refused_before_training(
        tiny_encoder_dir, sample_v1, tmp_path, best, problem):
    # Trainer would look for eval_loss (or eval_f1) at the first evaluation and end in a KeyError; the evaluation
    # during training gives each decoding's F1 and exact match, named here. The evaluator holds out an article of its own.
    normans = [example for example in sample_v1.examples if example.id.startswith("n")]
    physics = [example for example in sample_v1.examples if example.id.startswith("p")]
    config = TrainConfig(encoder=str(tiny_encoder_dir), max_seq_length=48, doc_stride=16, max_query_length=12,
                         training_args={"load_best_model_at_end": True, "eval_strategy": "steps", "eval_steps": 2, **best})
    with pytest.raises(ConfigError, match=f"metric_for_best_model {problem} is no score of the evaluation during "
                                          "training, which gives span_f1, span_exact, bio_f1, bio_exact, joint_f1, joint_exact"):
        train_model(normans, config, tmp_path / "model", checkpoint_steps=2, evaluator=TrainingEvaluator(physics))
    assert not (tmp_path / "model").exists()


def test_a_comparison_evaluating_during_training_needs_a_tune_split():
    raw = {"train": {"path": "t.json"}, "eval": {"path": "e.json"},
           "runs": [{"name": "a", "training_args": {"eval_strategy": "steps", "eval_steps": 10}}]}
    with pytest.raises(ConfigError, match=r'runs \["a"\] evaluate during training .* add a \'tune\' split'):
        parse_config(raw)
    assert parse_config({**raw, "tune": {"path": "t.json", "skip": 10}}).runs[0].train.training_args["eval_steps"] == 10


def test_an_optional_count_may_be_null():
    """eval_accumulation_steps and dataloader_prefetch_factor default to None in TrainingArguments: null stays allowed."""
    TrainConfig(training_args={"eval_accumulation_steps": None, "dataloader_prefetch_factor": None})


def test_train_init_from_a_missing_folder_is_one_line(tmp_path, capsys):
    """transformers took the missing path for a hub id and ended in an OSError traceback."""
    from bio_mrc.cli import main

    from .conftest import SAMPLE_V1

    missing = tmp_path / "no-such-model"
    assert main(["train", "--train", str(SAMPLE_V1), "--output-dir", str(tmp_path / "out"), "--init-from", str(missing)]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == f"error: no such model folder (and not a Hugging Face hub id) (in {missing})"


def test_train_init_from_with_an_encoder_is_refused_before_any_work(tmp_path, capsys):
    """--init-from trains the model's own encoder: an --encoder beside it was ignored, and the run record and model card
    named it as the encoder (a MiniLM model continued on its questions carded as a tiny BERT)."""
    from bio_mrc.cli import main

    from .conftest import SAMPLE_V1

    out, trained_dir, tiny_encoder_dir = tmp_path / "out", tmp_path / "first-model", tmp_path / "tiny-bert"
    assert main(["train", "--train", str(SAMPLE_V1), "--output-dir", str(out), "--init-from", str(trained_dir),
                 "--encoder", str(tiny_encoder_dir)]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"error: --encoder {tiny_encoder_dir} and --init-from {trained_dir} name two starting points: --init-from continues "
        "a trained model on its own encoder, so --encoder would be ignored (and named in the run record and model card as "
        "the encoder); give one of the two")
    assert not out.exists()
