"""transformers' extractive QA model folders: their class named, their files checked before a conversion or a load."""

from __future__ import annotations

from pathlib import Path

from ..errors import ModelFormatError
from ..transformers_registration import MODEL_TYPE
from .config_reading import BIO_MRC_MODEL_TYPE, read_json_object, saved_config, special_floats
from .encoder_checks import SIZE_LIMITS, check_model_type_named, check_plain_direction, check_plain_sizes
from .files import check_file_kinds
from .tokenizer_checks import check_tokenizer
from .weights import check_weights_present, weight_shapes


QA_HEADS = "span"  # the heads of transformers' extractive QA model read as a bio_mrc model
BIO_MRC_QA_CLASS = "BioMrcForQuestionAnswering"  # bio_mrc's own class (tests/test_qa_checkpoints.py ties them)


def qa_model_architecture(folder: Path, name: str | Path) -> str:
    """The ``...ForQuestionAnswering`` class of transformers' extractive QA model in ``folder`` (``name``: as given), which
    a conversion reads; a bio_mrc model, or another kind of model, is refused."""
    if architecture := qa_architecture(folder):
        return architecture
    kind = "already a bio_mrc model" if saved_config(folder).get("model_type") == BIO_MRC_MODEL_TYPE else \
        "not an extractive question-answering model of transformers (its config.json names no ...ForQuestionAnswering class)"
    raise ModelFormatError(f"{kind}; convert reads transformers' extractive question-answering models only", str(name))


def check_convertible(folder: Path, name: str | Path) -> str:
    """What a conversion (``bio-mrc convert``) refuses in the QA model ``folder`` (``name``: as given) before torch is
    imported, in the conversion's words: a ``config.json`` that cannot be read, no ``...ForQuestionAnswering`` class,
    and what :func:`check_qa_files` finds. Returns the class."""
    check_file_kinds(folder)
    read_json_object(folder, "config.json")  # missing or broken: named as such, not as a model of another kind
    architecture = qa_model_architecture(folder, name)
    check_qa_files(folder)
    return architecture


# Files a QA model's tokenizer is read from (a fast one, or the vocabulary a fast one is built from).
QA_TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "vocab.json", "spiece.model", "sentencepiece.bpe.model", "tokenizer.model")


def check_qa_files(folder: Path, headers_read: bool = False) -> None:
    """A QA model folder holds the files a conversion reads, checked without torch: a ``config.json`` naming its
    ``model_type`` with sizes in bounds and reading both ways, safetensors weights whose headers parse, and a tokenizer of
    its own whose files parse (``tokenizer.json``'s ids within ``vocab_size``). ``headers_read``: the caller has read those
    headers already (:func:`weight_shapes`), which are then not read again."""
    config = special_floats(read_json_object(folder, "config.json"))
    check_model_type_named(config, folder, where="")
    check_plain_sizes({"encoder": config}, folder, where="")
    check_plain_direction(config, folder, where="")
    check_weights_present(folder)
    if not any((folder / name).is_file() for name in QA_TOKENIZER_FILES):
        raise ModelFormatError(f"no tokenizer ({', '.join(QA_TOKENIZER_FILES)}): a QA model is read with its own", str(folder))
    if not headers_read:
        weight_shapes(folder)
    check_tokenizer(folder, config.get("vocab_size", SIZE_LIMITS["vocab_size"]), required=False)


def qa_architecture(folder: Path) -> str | None:
    """The ``...ForQuestionAnswering`` class a model folder's ``config.json`` names, or None (a bio_mrc model,
    another kind of model, or no readable config)."""
    config = saved_config(folder)
    names = config.get("architectures")
    if config.get("model_type") == MODEL_TYPE or not isinstance(names, list):
        return None
    # bio_mrc's own class names a bio_mrc model whose model_type was edited: read as one, and refused as such
    return next((name for name in names if isinstance(name, str) and name.endswith("ForQuestionAnswering")
                 and name != BIO_MRC_QA_CLASS), None)
