"""The transformers ``TrainingArguments`` a run may set (``training_args``), checked before any work: the fields the
package owns or that send data off the machine refused with the option to use instead, and values ``TrainingArguments``
takes unchecked (types, counts, ranges, compile settings, optimizers and trackers whose packages are missing) refused
in one line, where ``Trainer`` would fail once the model is built.

Light on purpose, as ``config`` is: transformers and torch load inside the checks that need them.
"""

from __future__ import annotations

import difflib
import inspect
import math
import re
import types
import typing
from dataclasses import fields
from pathlib import Path
from typing import Any

from ..errors import ConfigError, argument, as_keywords
from ..hub import hub_failure
from ..json_syntax import json_value


# The TrainingArguments fields the package sets from its own options (or owns outright), each with why: the arguments
# it names marked, so a refusal reads each door's form (OWNED_TRAINING_ARGS is the table as a Python caller reads it).
_OWNED = {
    "output_dir": f"the model folder is the output folder ({argument('output_dir')}); checkpoints go to its checkpoints/ folder",
    "num_train_epochs": f"set {argument('epochs')}",
    "learning_rate": f"set {argument('learning_rate')}; the heads' own rate is {argument('head_learning_rate')}",
    "per_device_train_batch_size": f"set {argument('batch_size')}",
    "warmup_steps": f"set {argument('warmup_ratio')}, the fraction of the steps",
    "weight_decay": f"set {argument('weight_decay')}",
    "seed": f"set {argument('seed')}; data_seed may differ from it",
    "bf16": f"set {argument('precision')}: fp32, bf16 or auto",
    "fp16": f"set {argument('precision')}: fp32, bf16 or auto (no fp16 training: it needs a loss scaler the package does not tune)",
    "fp16_full_eval": f"set {argument('precision')}: evaluation during training answers in the run's precision, fp32 or bf16 (no fp16)",
    "bf16_full_eval": f"set {argument('precision')}: evaluation during training answers in the run's precision, fp32 or bf16",
    "use_cpu": "the device follows precision and the machine; hide the GPUs (CUDA_VISIBLE_DEVICES='') to train on the CPU",
    "save_strategy": f"checkpoints are the package's (save_checkpoints, {argument('checkpoint_steps')}): resuming relies on them",
    "save_steps": f"set {argument('checkpoint_steps')}",
    "resume_from_checkpoint": f"pass {argument('resume', True)}: it checks the checkpoint is this run's",
    "remove_unused_columns": "the windows hold only the model's inputs and targets, which forward takes by name",
    "label_names": "each head names its own targets",
    "label_smoothing_factor": "Trainer smooths a 'labels' input, which the model has none of: each head computes its own loss "
                              "(bio_targets and span_targets soften the targets)",
    "disable_tqdm": "set progress (train_model(progress=...); the CLI shows bars)",
}
OWNED_TRAINING_ARGS = {name: as_keywords(why) for name, why in _OWNED.items()}


_PUSH = argument("push_to_hub", True)  # as a refusal names the push: network_args' key, train's flag
# The TrainingArguments fields that send data off the machine (a hub push, an uploading tracker), each with the network
# argument that alone turns it on (train_model's network_args, train's flag): a config never does. Marked, as _OWNED is.
_NETWORK = {
    "push_to_hub": _PUSH, "hub_model_id": argument("hub_model_id"), "hub_strategy": argument("hub_strategy"),
    "hub_private_repo": argument("hub_private_repo", True), "hub_always_push": _PUSH,
    "hub_token": f"{_PUSH}, with the token of `hf auth login` or HF_TOKEN",
    "report_to": argument("report_to"),
}
NETWORK_TRAINING_ARGS = {name: as_keywords(asks) for name, asks in _NETWORK.items()}
# The network arguments a run takes, each one of train's flags; the token is the login's, and Trainer's
# hub_always_push is no choice of bio_mrc's push, which uploads the finished model whatever the strategy.
_TAKEN = ("push_to_hub", "hub_model_id", "hub_strategy", "hub_private_repo", "report_to")
ASKED_FOR = "which only a training's network options ask for (no comparison does)"
LOCAL_REPORTERS = ("none", "tensorboard")  # report_to values that keep everything in the model folder
TRACKER_EXTRAS = {"tensorboard": "bio_mrc[tensorboard]"}  # the package's extra that installs a tracker


def check_trackers_installed(reporters: list[str]) -> None:
    """Refuse, before any work, a ``report_to`` tracker transformers does not know or cannot start here (its package
    is not installed): Trainer would raise it in a traceback once the model is built, leaving the output folder made."""
    from transformers.integrations import integration_utils as trackers

    available = trackers.get_available_reporting_integrations()
    for name in (r for r in reporters if r not in ("none", "all") and r not in available):
        callback = trackers.INTEGRATION_TO_CALLBACK.get(name)
        if callback is None:
            raise ConfigError(f"report_to {json_value(name)} is no tracker transformers knows (known: {', '.join(trackers.INTEGRATION_TO_CALLBACK)})")
        try:
            callback()
        except (ImportError, RuntimeError) as err:
            why = (str(err).strip().splitlines() or [type(err).__name__])[0]
            hint = f": pip install '{TRACKER_EXTRAS[name]}'" if name in TRACKER_EXTRAS else ""
            raise ConfigError(f"report_to {json_value(name)} cannot run here, its package is not installed ({why}){hint}") from None


def check_run_trackers(training_args: dict[str, Any], network_args: dict[str, Any] | None = None) -> None:
    """:func:`check_trackers_installed` on the trackers a run asks for, as given: its ``training_args`` and the command
    line's ``--report-to`` (``network_args``), so a caller refuses them before it reads data or makes a folder."""
    asked = [training_args.get("report_to"), (network_args or {}).get("report_to")]
    check_trackers_installed([name for value in asked if value is not None for name in ([value] if isinstance(value, str) else value)])


def check_stays_local(values: dict[str, Any], source: str = "training_args") -> None:
    """Refuse options in ``values`` (a config's training_args) that would send data off the machine, naming the
    network argument that asks for them (:data:`NETWORK_TRAINING_ARGS`)."""
    for name, value in values.items():
        if name == "report_to":
            reporters = [value] if isinstance(value, str) else value if isinstance(value, list) else [value]
            uploading = [r for r in reporters if r not in LOCAL_REPORTERS]
            if uploading:
                raise ConfigError(f"{source}: report_to {json_value(uploading[0])} can send the run off this machine, {ASKED_FOR}: "
                                  f"{argument('report_to', uploading[0])} (local here: {', '.join(LOCAL_REPORTERS)})")
        elif name in NETWORK_TRAINING_ARGS or name.startswith(("hub_", "push_to_hub")):
            raise ConfigError(f"{source}: {json_value(name)} publishes the model, {ASKED_FOR}: {_NETWORK.get(name, _PUSH)}")


def check_network_args(values: dict[str, Any], output_dir: Path) -> None:
    """The command line's off-machine options (see :data:`NETWORK_TRAINING_ARGS`): those ``train`` has a flag for, which
    TrainingArguments takes; a hub option other than the push itself needs the push, and the push a repository id the
    hub takes (without ``hub_model_id``, ``output_dir``'s name)."""
    unknown = sorted(set(values) - set(_TAKEN))
    if unknown and unknown[0].startswith(("hub_", "push_to_hub")):  # training_args refuses it too: no place to give it
        token = "; it pushes with the token of `hf auth login` or HF_TOKEN" if unknown[0] == "hub_token" else ""
        raise ConfigError(f"{unknown[0]!r} is no option of the hub push bio_mrc makes, which takes {argument('hub_model_id')}, "
                          f"{argument('hub_strategy')} and {argument('hub_private_repo', True)} beside {_PUSH}{token}")
    if unknown:
        raise ConfigError(f"{unknown[0]!r} is no option that sends data off the machine; give it in training_args")
    hub = [name for name in values if name.startswith("hub_")]
    if hub and not values.get("push_to_hub"):
        raise ConfigError(f"{' and '.join(argument(name) for name in hub)} need{'s' if len(hub) == 1 else ''} {_PUSH}")
    if values.get("push_to_hub"):
        _check_hub_id(values.get("hub_model_id"), output_dir)
        _check_hub_reachable()
    from transformers import TrainingArguments

    try:
        TrainingArguments(output_dir="network-args-check", **{"report_to": "none", **values})
    except (ValueError, TypeError, ImportError, RuntimeError) as err:
        raise ConfigError(f"{values}: {err}") from None


def hub_repository_refused(repo_id: str | None, err: BaseException) -> ConfigError:
    """Trainer could not create or open the push's repository (another's namespace, a token that may not write)."""
    return ConfigError(f"{_PUSH}: the Hugging Face Hub would not create or open the repository {repo_id!r} "
                       f"({hub_failure(err)}); check the id, and that your token may write there")


def default_hub_id(output_dir: Path) -> str:
    """The repository a push without ``hub_model_id`` goes to: the model folder's name (Trainer would name it after its
    own output folder, the model's ``checkpoints/``)."""
    return output_dir.absolute().name


def _check_hub_id(given: str | None, output_dir: Path) -> None:
    """A repository id the hub refuses ends the run before any work, not in a traceback once the model is built."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    name = given if given is not None else default_hub_id(output_dir)
    try:
        validate_repo_id(name)
    except HFValidationError:
        rule = ("a hub repository id is NAME or OWNER/NAME, each of letters, digits, '-', '_' and '.', neither beginning "
                "nor ending with '-' or '.', at most 96 characters")
        if given is not None:
            raise ConfigError(f"{argument('hub_model_id')} {given!r} is no Hugging Face repository id: {rule}") from None
        raise ConfigError(f"{_PUSH} names the hub repository after the output folder, {name!r}, which is no Hugging Face "
                          f"repository id ({rule}); give one with {argument('hub_model_id', 'ID')}") from None


def _check_hub_reachable() -> None:
    """A push that cannot happen, refused before any work: Trainer creates the hub repository when it is built, and
    offline mode, a missing or refused token or no network would end there in a traceback, the output folder begun."""
    from huggingface_hub import constants, get_token

    if constants.HF_HUB_OFFLINE:
        raise ConfigError(f"{_PUSH} needs the Hugging Face Hub, which offline mode (HF_HUB_OFFLINE or "
                          f"TRANSFORMERS_OFFLINE) turns off; unset it or leave out {_PUSH}")
    token = get_token()
    if token is None:
        raise ConfigError(f"{_PUSH} needs a Hugging Face token: run `hf auth login` or set HF_TOKEN")
    _check_token_accepted(token)


HUB_CHECK_SECONDS = 10.0  # how long the check waits for the hub: without a network a request may hang for minutes


def _check_token_accepted(token: str) -> None:
    """Ask the hub who the token belongs to (the cheapest request that needs both the network and the token): no
    answer, or the token refused, ends the run here, not in a traceback from Trainer once the data and model are read."""
    from huggingface_hub import constants
    from huggingface_hub.errors import HfHubHTTPError
    from huggingface_hub.utils import build_hf_headers, get_session, hf_raise_for_status

    url = f"{constants.ENDPOINT}/api/whoami-v2"
    try:
        hf_raise_for_status(get_session().get(url, headers=build_hf_headers(token=token), timeout=HUB_CHECK_SECONDS))
    except HfHubHTTPError as err:
        status = getattr(err.response, "status_code", None)
        if status in (401, 403):
            raise ConfigError(f"{_PUSH} needs a Hugging Face token the hub accepts, and {constants.ENDPOINT} refuses "
                              f"this one (HTTP {status}): run `hf auth login` again or set HF_TOKEN") from None
        if status != 429:  # this request's own strict rate limit says nothing of the push
            raise ConfigError(f"{_PUSH} needs the Hugging Face Hub, and {constants.ENDPOINT} answers HTTP {status}: "
                              f"try again later, or leave out {_PUSH}") from None
    except Exception as err:  # no answer at all (no route, name lookup, proxy, TLS, timeout): the push would fail alike
        raise ConfigError(f"{_PUSH} needs the Hugging Face Hub, which cannot be reached at {constants.ENDPOINT} "
                          f"({hub_failure(err)}); check the network, or leave out {_PUSH}") from None


# Counts TrainingArguments takes unchecked that Trainer divides by or hands to a DataLoader: below these, a run
# would end in a ZeroDivisionError or ValueError traceback once the model is built, instead of one line first.
TRAINING_ARGS_MINIMUMS = {"gradient_accumulation_steps": 1, "eval_accumulation_steps": 1, "per_device_eval_batch_size": 1,
                          "dataloader_num_workers": 0, "dataloader_prefetch_factor": 1}

OPTIONAL_TRAINING_COUNTS = {"eval_accumulation_steps", "dataloader_prefetch_factor"}  # None: TrainingArguments' default


# The optimizer's own ranges (torch's AdamW refuses values outside them once the model is built and training begins):
# name -> (least, bound, whether the bound itself is allowed).
TRAINING_ARGS_RANGES = {"adam_beta1": (0.0, 1.0, False), "adam_beta2": (0.0, 1.0, False), "adam_epsilon": (0.0, math.inf, True)}


def _check_training_ranges(values: dict[str, Any]) -> None:
    for name, (least, bound, inclusive) in TRAINING_ARGS_RANGES.items():
        value = values.get(name, least)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and not (
                least <= value and (value <= bound if inclusive else value < bound)):
            span = f"at least {least:g}" if math.isinf(bound) else f"from {least:g} up to, not including, {bound:g}"
            raise ConfigError(f"training_args: {name} is {span}, got {json_value(value)}")


def _check_step_limit(max_steps: Any) -> None:
    """Trainer trains one step for a max_steps of 0, and the epochs for any below it, as for -1 (unset)."""
    if isinstance(max_steps, int) and max_steps != -1 and max_steps < 1:
        raise ConfigError(f"training_args: max_steps is a number of optimizer steps from 1, or -1 (the epochs decide), got {max_steps}")


def _check_compile_names(values: dict[str, Any]) -> None:
    """A compile mode or backend torch does not know, or kernels not installed, refused here: torch.compile and Trainer
    refuse them once training has begun."""
    if isinstance(mode := values.get("torch_compile_mode"), str):
        from torch._inductor import list_mode_options

        if mode not in list_mode_options():
            raise ConfigError(f"training_args: torch_compile_mode is one of {', '.join(list_mode_options())}, got {json_value(mode)}")
    if values.get("use_liger_kernel") is True:
        from transformers.utils import is_liger_kernel_available

        if not is_liger_kernel_available():  # Trainer raised ImportError once the model was built
            raise ConfigError("training_args: use_liger_kernel needs the liger-kernel package, which is not installed")
    if isinstance(backend := values.get("torch_compile_backend"), str):
        from torch._dynamo import list_backends

        if backend not in (known := list_backends(exclude_tags=())):
            raise ConfigError(f"training_args: torch_compile_backend is one of {', '.join(known)}, got {json_value(backend)}")


def _check_training_counts(values: dict[str, Any]) -> None:
    for name, least in TRAINING_ARGS_MINIMUMS.items():
        value = values.get(name, least)
        # TrainingArguments takes any type unchecked: a string or a fraction ends in a TypeError once a model has trained
        if value is None and name in OPTIONAL_TRAINING_COUNTS:
            continue
        if not isinstance(value, int) or isinstance(value, bool) or value < least:
            raise ConfigError(f"training_args: {name} is a count of at least {least}, got {json_value(value)}")


# TrainingArguments' plain field types and the JSON values each takes: it keeps any value unchecked, and a string
# for a number (max_grad_norm "1") ends in a TypeError traceback once the model is training.
_PLAIN_TYPES = {float: ((int, float), "a number"), int: ((int,), "a whole number"), bool: ((bool,), "true or false"),
                str: ((str,), "a string")}


def _check_training_types(values: dict[str, Any]) -> None:
    from transformers import TrainingArguments

    hints = typing.get_type_hints(TrainingArguments)
    for name, value in values.items():
        hint, optional = hints.get(name), False
        if typing.get_origin(hint) in (typing.Union, types.UnionType) and type(None) in typing.get_args(hint):
            inner = [arg for arg in typing.get_args(hint) if arg is not type(None)]
            hint, optional = (inner[0] if len(inner) == 1 else None), True
        if hint not in _PLAIN_TYPES or (value is None and optional):
            continue
        kinds, what = _PLAIN_TYPES[hint]
        if not isinstance(value, kinds) or (isinstance(value, bool) and hint is not bool):
            raise ConfigError(f"training_args: {name} is {what}, got {json_value(value)}")


def check_training_args(values: dict[str, Any]) -> None:
    """Refuse a name that is no TrainingArguments field (with the field it most likely misspells), one
    the package owns (with the option to use instead) or one that sends data off the machine (with the flag
    that asks for it), then values TrainingArguments itself refuses. The package's own names, counts and ranges come
    first, before transformers and torch load."""
    for name in values:
        if name in _OWNED:
            raise ConfigError(f"training_args: {json_value(name)} is the package's own: {_OWNED[name]}")
    _check_training_counts(values)
    _check_training_ranges(values)
    from transformers import TrainingArguments

    known = [f.name for f in fields(TrainingArguments) if f.init]
    check_stays_local({name: value for name, value in values.items() if name in known or name.startswith(("hub_", "push_to_hub"))})
    for name in values:
        if name not in known:
            guess = difflib.get_close_matches(name, known, n=1)
            hint = f" (did you mean {json_value(guess[0])}?)" if guess else ""
            raise ConfigError(f"training_args: {json_value(name)} is not a TrainingArguments field{hint}")
    _check_training_types(values)
    _check_step_limit(values.get("max_steps", -1))
    _check_compile_names(values)
    # save_steps is the run's checkpoint_steps, not known here: one that fits eval_steps leaves that pair to the run's check
    eval_steps = values.get("eval_steps")
    steps = {"save_steps": eval_steps} if isinstance(eval_steps, (int, float)) and not isinstance(eval_steps, bool) and eval_steps > 0 else {}
    try:
        arguments = TrainingArguments(output_dir="training-args-check", **{"report_to": "none", **steps, **values})
    except (ValueError, TypeError, ImportError, RuntimeError) as err:
        raise ConfigError(f"training_args {json_value(values)}: {err}") from None
    if "optim" in values:
        _check_optimizer_installed(arguments)
    if values.keys() & {"lr_scheduler_type", "lr_scheduler_kwargs"}:  # the default schedule needs no look
        _check_scheduler(arguments)
    _check_checkpointing_kwargs(values, arguments)
    if arguments.dataloader_persistent_workers and arguments.dataloader_num_workers == 0:  # the DataLoader refuses it
        raise ConfigError("training_args: dataloader_persistent_workers keeps worker processes, which need "
                          "dataloader_num_workers above 0")


def _check_scheduler(arguments: Any) -> None:
    """Build the learning-rate schedule as Trainer does, on a stand-in optimizer, and step it through: a keyword
    ``lr_scheduler_kwargs`` gives that the schedule does not take, one it needs and lacks, or a value it cannot use
    is refused here, not in a traceback once the model is built and training begins."""
    import torch
    from transformers import get_scheduler

    kwargs = arguments.lr_scheduler_kwargs if arguments.lr_scheduler_kwargs is not None else {}
    kind = getattr(arguments.lr_scheduler_type, "value", arguments.lr_scheduler_type)
    if not isinstance(kwargs, dict):
        raise ConfigError(f"training_args: lr_scheduler_kwargs is an object of the {json_value(kind)} schedule's keyword arguments, got {json_value(kwargs)}")
    optimizer = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=1e-3)
    try:
        schedule = get_scheduler(kind, optimizer, num_warmup_steps=2, num_training_steps=8, scheduler_specific_kwargs=dict(kwargs))
        if not isinstance(schedule, torch.optim.lr_scheduler.ReduceLROnPlateau):  # that one steps on a metric
            for _ in range(8):
                optimizer.step()
                schedule.step()
    except (TypeError, ValueError, ArithmeticError) as err:
        raise ConfigError(f"training_args: lr_scheduler_type {json_value(kind)} with lr_scheduler_kwargs {json_value(kwargs)}: {err}") from None


def _check_checkpointing_kwargs(values: dict[str, Any], arguments: Any) -> None:
    """The activation checkpointing's keyword arguments (``activation_checkpointing_kwargs``, or its older name
    ``gradient_checkpointing_kwargs``) are the model's own (``every_n_layers``, ``offload``) and options of
    ``torch.utils.checkpoint.checkpoint``: torch refuses any other name at the first forward pass, or hands it to a layer."""
    given = next((name for name in ("activation_checkpointing_kwargs", "gradient_checkpointing_kwargs") if values.get(name) is not None), None)
    if given is None:
        return
    from torch.utils.checkpoint import checkpoint
    from transformers import PreTrainedModel

    kwargs = getattr(arguments, "activation_checkpointing_kwargs", None) or getattr(arguments, given)  # a JSON string parsed
    enable = getattr(PreTrainedModel, "activation_checkpointing_enable", PreTrainedModel.gradient_checkpointing_enable)
    known = [p.name for p in inspect.signature(enable).parameters.values()
             if p.name != "self" and p.kind is not inspect.Parameter.VAR_KEYWORD and not p.name.endswith("_kwargs")]
    known += [p.name for p in inspect.signature(checkpoint).parameters.values() if p.kind is inspect.Parameter.KEYWORD_ONLY]
    if not isinstance(kwargs, dict):
        raise ConfigError(f"training_args: {given} is an object of the checkpointing's options ({', '.join(known)}), got {json_value(kwargs)}")
    for name in kwargs:
        if name not in known:
            guess = difflib.get_close_matches(name, known, n=1)
            raise ConfigError(f"training_args: {given}: {json_value(name)} is no option of the checkpointing"
                              f"{f' (did you mean {json_value(guess[0])}?)' if guess else ''}; its options are {', '.join(known)}")


def _check_optimizer_installed(arguments: Any) -> None:
    """An ``optim`` whose package is not installed (bitsandbytes, GaLore, torchdistx, grokadamw, torch_xla, ...):
    Trainer looks for it, and raises ImportError or ValueError, only once the model is built. An optimizer that
    needs the model itself (GaLore, LOMO, installed) is left to Trainer, which has it."""
    from transformers import Trainer

    try:
        Trainer.get_optimizer_cls_and_kwargs(arguments)
    except (ImportError, ValueError) as err:
        if isinstance(err, ValueError) and re.search(r"pass a `?model`?", str(err)):
            return
        why = (str(err).strip().splitlines() or [type(err).__name__])[0]
        raise ConfigError(f"training_args: optim {json_value(arguments.optim.value)}: {why}") from None


__all__ = ["LOCAL_REPORTERS", "NETWORK_TRAINING_ARGS", "OWNED_TRAINING_ARGS", "TRACKER_EXTRAS", "check_network_args",
           "check_run_trackers", "check_stays_local", "check_trackers_installed", "check_training_args", "default_hub_id",
           "hub_repository_refused"]
