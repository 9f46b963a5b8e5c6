"""``pipeline("bio-mrc-qa", model=...)``'s keywords that reach the model's loading, checked before any file is read.

transformers hands ``model_kwargs`` to the config, the tokenizer and every loader it tries: a key no bio_mrc model
reads fails in each loader, one traceback a loader in one error; one of ``pipeline()``'s own keywords given there
fails as ``got multiple values for keyword argument``; and a dtype there reaches no precision (the loader keeps the
weights in fp32). Here each key the pipeline reads is one entry of :data:`MODEL_KWARGS` with the check of its value,
any other is refused in one line, and a dtype given there is the forward pass's precision, as ``dtype=`` is.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Mapping

import torch

from ..errors import ConfigError, a_type
from ..transformers_registration import TASK

# The dtypes of pipeline() itself, in the order transformers reads them (its own default dtype is "auto").
DTYPE_KEYWORDS = ("dtype", "torch_dtype")
# pipeline()'s own keywords, which transformers hands the loaders beside model_kwargs: refused there, naming where to give them.
PIPELINE_KEYWORDS = ("revision", "token", "local_files_only", "trust_remote_code", "code_revision", "device")
# What transformers' pipeline() hands the model's loader besides model_kwargs: its own keywords and its bookkeeping.
LOADER_KEYWORDS = (*PIPELINE_KEYWORDS, "device_map", "_from_pipeline")


def dtype_precision(dtype: Any, precision: str | None, name: str = "dtype") -> str | None:
    """``pipeline(dtype=...)`` as the forward pass's precision: ``torch.float32`` (or ``"float32"``) is fp32,
    ``torch.bfloat16`` bf16; ``"auto"`` and None (transformers' default) leave ``precision``. A dtype bio_mrc does
    not compute in (float16) and a dtype that contradicts ``precision`` are refused (``name``: where it was given)."""
    if dtype is None or (isinstance(dtype, str) and dtype == "auto"):
        return precision
    found = getattr(torch, dtype, None) if isinstance(dtype, str) else dtype
    # a list or a dict would be looked up as a key, a TypeError: only a torch dtype names a precision
    chosen = {torch.float32: "fp32", torch.bfloat16: "bf16"}.get(found) if isinstance(found, torch.dtype) else None
    if chosen is None:
        raise ConfigError(f"{name} {dtype}: a bio_mrc model answers in torch.float32 or torch.bfloat16 "
                          "(precision fp32 or bf16; auto where the device computes bf16 natively)")
    if precision is not None and precision != chosen:
        raise ConfigError(f"{name} {dtype} asks for precision {chosen}, but precision={precision!r}: give one of them")
    return chosen


def _folder(name: str, value: Any) -> None:
    if not isinstance(value, (str, os.PathLike)):
        raise ConfigError(f"{name} is a folder (a str or a Path), got {value!r}")


def _attention(name: str, value: Any) -> None:
    """A kernel transformers knows by name, or a hub kernel (``org/repo``): whether the encoder has it, it says."""
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

    known = ["eager", *ALL_ATTENTION_FUNCTIONS.valid_keys()]
    if not isinstance(value, str) or not (value in known or value.startswith("paged|") or "/" in value):
        raise ConfigError(f"{name} is the name of an attention kernel ({', '.join(map(repr, known))}), got {value!r}")


def _dtype(name: str, value: Any) -> None:
    dtype_precision(value, None, name)


# The model_kwargs a bio_mrc model's loading reads, each with the check of its value.
MODEL_KWARGS: dict[str, Callable[[str, Any], None]] = {
    "attn_implementation": _attention,
    "cache_dir": _folder,
    "dtype": _dtype,
    "torch_dtype": _dtype,
}


def check_attention_kernel(kernel: Any, folder: Path, where: str, name: str = "model_kwargs['attn_implementation']") -> None:
    """``attn_implementation`` (None: the encoder's default; ``name``: where it was given) refused in one line, before
    any weight loads, where the encoder of the PyTorch model in ``folder`` (named ``where``) cannot run it on this
    machine, naming the kernels it can (:func:`bio_mrc.model.attention_kernels`); transformers' own refusal is an
    error of each loader tried. A hub kernel (``org/repo``) is the encoder's to judge; an ONNX export runs none."""
    from ..encoders import as_data
    from ..model import attention_kernels
    from ..model_folder import model_backend

    if not isinstance(kernel, str) or "/" in kernel or model_backend(folder) == "onnx":
        return
    from transformers import AutoConfig

    with as_data(str(folder)):
        config = AutoConfig.from_pretrained(str(folder), trust_remote_code=False)
    found, kernels = attention_kernels(getattr(config, "encoder", config))  # a bio_mrc model's encoder, or transformers' QA model
    if kernel not in kernels and kernel.removeprefix("paged|") not in kernels:  # transformers drops "paged|" but of eager
        shown = ", ".join(map(repr, kernels[:-1])) + f" and {kernels[-1]!r}" if len(kernels) > 1 else repr(kernels[0])
        raise ConfigError(f"{name} {kernel!r}: the model's encoder, {found.__name__}, runs {shown} on this "
                          f"machine: give one of them ({where})")


def checked_keywords(keywords: dict[str, Any]) -> dict[str, Any]:
    """``pipeline("bio-mrc-qa", ...)``'s ``keywords`` with ``model_kwargs`` and the dtypes checked; a dtype given in
    ``model_kwargs`` moved to ``dtype=``, the precision (the weights load in fp32 whatever it says), in a copy."""
    model_kwargs = _checked_model_kwargs(keywords.get("model_kwargs"))
    given = {name: keywords[name] for name in DTYPE_KEYWORDS if keywords.get(name) is not None and not _auto(keywords[name])}
    for name, value in given.items():  # model_kwargs' own dtypes were checked with its other keys
        dtype_precision(value, None, name)
    given |= {f"model_kwargs[{name!r}]": model_kwargs[name] for name in DTYPE_KEYWORDS if name in model_kwargs}
    if len(given) > 1:
        raise ConfigError(f"{' and '.join(given)} both name the precision: give one of them")
    inner = [name for name in DTYPE_KEYWORDS if name in model_kwargs]
    if not inner:
        return keywords
    rest = {name: value for name, value in model_kwargs.items() if name not in DTYPE_KEYWORDS}
    return {**keywords, "dtype": model_kwargs[inner[0]], "model_kwargs": rest}


def _auto(value: Any) -> bool:
    return isinstance(value, str) and value == "auto"


def check_model_kwargs(model_kwargs: Mapping[str, Any]) -> None:
    """``model_kwargs`` as the model's loader gets them (transformers' own keywords left out) checked as
    :func:`checked_keywords` checks them: a key no bio_mrc model reads, or a value of one that it reads, refused."""
    _checked_model_kwargs(model_kwargs)


def _checked_model_kwargs(model_kwargs: Any) -> Mapping[str, Any]:
    """``model_kwargs`` (None: none) whose every key is one of :data:`MODEL_KWARGS`, each value checked."""
    if model_kwargs is None:
        return {}
    if not isinstance(model_kwargs, Mapping):
        raise TypeError(f"model_kwargs is a dict of the model's loading options, got {a_type(model_kwargs)}")
    for key, value in model_kwargs.items():
        name = f"model_kwargs[{key!r}]"
        if key in PIPELINE_KEYWORDS:
            raise ConfigError(f"{name} is an option of pipeline() itself: give pipeline(\"{TASK}\", model=..., {key}=...)")
        if key not in MODEL_KWARGS:
            taken = sorted(MODEL_KWARGS)
            raise TypeError(f"{name}: the {TASK} pipeline loads a model with model_kwargs {', '.join(taken[:-1])} and "
                            f"{taken[-1]} alone (its windows, heads and settings are its config.json's)")
        MODEL_KWARGS[key](name, value)
    return model_kwargs
