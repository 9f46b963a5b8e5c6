"""bio_mrc: extractive QA with a BIO tagging head and a start/end span head on one encoder."""

from importlib import import_module
from typing import Any

from .transformers_registration import install as _install_transformers_entries

__version__ = "0.1.0"

# transformers' Auto classes and pipeline("bio-mrc-qa", ...) know bio_mrc models from here on; the model and the
# pipeline themselves load when transformers first looks them up.
_install_transformers_entries()

# Heavy pieces load on first use, so `from bio_mrc import BIOHead` pulls in no training code.
_LAZY = {
    "BIOHead": "bio_mrc.heads",
    "SpanHead": "bio_mrc.heads",
    "Head": "bio_mrc.heads",
    "BioMrcConfig": "bio_mrc.model",
    "BioMrcForQuestionAnswering": "bio_mrc.model",
    # AutoConfig, AutoModel and AutoModelForQuestionAnswering: known from `import bio_mrc` on; this registers them at once
    "register_auto_classes": "bio_mrc.model",
    "Example": "bio_mrc.types",
    "Prediction": "bio_mrc.types",
    "AnswerSpan": "bio_mrc.types",
    "tag_scores": "bio_mrc.metrics.entity_scores",
    "AnswerExtractor": "bio_mrc.inference",
    "TrainedModel": "bio_mrc.inference",
    # transformers' pipeline("bio-mrc-qa", ...): known from `import bio_mrc` on; this registers it at once
    "register_pipeline": "bio_mrc.inference",
    "BioMrcQuestionAnsweringPipeline": "bio_mrc.inference",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'bio_mrc' has no attribute {name!r}")


__all__ = [*_LAZY, "__version__"]


def __dir__() -> list[str]:
    # the lazy names too: what help(bio_mrc) documents and a notebook completes after `bio_mrc.`
    return sorted({*globals(), *_LAZY})
