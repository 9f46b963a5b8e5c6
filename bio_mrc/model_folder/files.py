"""A model folder's files: their names, kinds, the temporaries of its atomic writes, and those a new model replaces;
:func:`fail`, the one error naming the folder, the file and the problem."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from ..errors import ModelFormatError
from ..evaluation_record import EVAL_FILE
from ..io import is_temporary_of, non_utf8_byte, remove_file, remove_temporaries_of, special_file_kind
from ..model_records import RUN_FILE


TOKENIZER_FILE = "tokenizer.json"

TOKENIZER_JSON_FILES = ("tokenizer_config.json", "special_tokens_map.json", "added_tokens.json")
PICKLED_WEIGHTS = ("pytorch_model.bin", "pytorch_model.bin.index.json")
SAFETENSORS_FILE, SAFETENSORS_INDEX = "model.safetensors", "model.safetensors.index.json"
ONNX_FILE = "model.onnx"
EXPORT_FILE = "bio_mrc_export.json"  # an ONNX export's format marker, written last: an export without it is unfinished
CARD_FILE = "README.md"  # the model card (bio_mrc.model_card)
# Written last into a model folder by training (provenance: options, data, time); its presence marks a complete model.
TRAINING_LOG_FILE = "training_log.json"  # Trainer's log history: loss, learning rate and evaluations by step
# The names of a saved model's files, as train, export, convert and transformers' save_pretrained write them: weights in
# every layout, an ONNX graph, the tokenizer, bio_mrc's records (run, evaluations, training log). A model replacing
# another removes those of them it does not write itself (replaced_model_files), and no other file.
MODEL_FILE_NAMES = (SAFETENSORS_FILE, SAFETENSORS_INDEX, "model-?????-of-?????.safetensors", *PICKLED_WEIGHTS,
                    "pytorch_model-?????-of-?????.bin", ONNX_FILE, f"{ONNX_FILE}.data", EXPORT_FILE, RUN_FILE,
                    EVAL_FILE, TRAINING_LOG_FILE, "training_args.bin", TOKENIZER_FILE, *TOKENIZER_JSON_FILES,
                    "vocab.txt", "vocab.json", "merges.txt")
# The folders an export and a conversion write a model in before it moves into their output folder: a killed run's is
# none of the user's files, so the output folder's emptiness is checked without it.
EXPORT_STAGING_DIR = ".export-staging"
CONVERT_STAGING_DIR = ".convert-staging"

# The files bio_mrc writes atomically in a model folder, each through a temporary file beside it (bio_mrc.io): a kill
# mid-write leaves that file, which no door reads, copies or uploads, and the folder's next training removes.
ATOMIC_MODEL_FILES = (RUN_FILE, CARD_FILE, EVAL_FILE, TRAINING_LOG_FILE, "config.json", EXPORT_FILE)


def is_model_temporary(name: str) -> bool:
    """Whether ``name`` is the temporary file of an atomic write of one of :data:`ATOMIC_MODEL_FILES`."""
    return any(is_temporary_of(name, target) for target in ATOMIC_MODEL_FILES)


def remove_model_temporaries(folder: str | Path) -> None:
    """Remove from ``folder`` the temporary files of its atomic writes that a kill left (plain files alone)."""
    remove_temporaries_of(folder, ATOMIC_MODEL_FILES)


# The files loading a model or an encoder reads, each a regular file (or a link to one) where present.
READ_FILES = ("config.json", SAFETENSORS_FILE, SAFETENSORS_INDEX, *PICKLED_WEIGHTS, ONNX_FILE, EXPORT_FILE, TOKENIZER_FILE,
              *TOKENIZER_JSON_FILES, "vocab.txt", "vocab.json", "merges.txt")


def check_file_kinds(folder: str | Path) -> None:
    """A folder, FIFO, socket or device under the name of a file loading reads is named as what it is, not reported
    missing or passed over (nor opened: reading a FIFO waits for a writer); a folder whose name is not UTF-8 is
    refused, as safetensors and tokenizers open its files by a UTF-8 name alone."""
    folder = Path(folder)
    if byte := non_utf8_byte(folder):
        raise fail(folder, None, f"its name holds the byte {byte}, which is not UTF-8 and which safetensors and tokenizers "
                                 "cannot name a file by (a name written in Latin-1?): rename the folder in UTF-8")
    for name in READ_FILES:
        if problem := not_a_file(folder / name):
            raise fail(folder, name, problem)


def not_a_file(path: Path) -> str | None:
    """What ``path`` is where it is there but not a regular file (``is a folder, not a file``); else None."""
    kind = "a folder" if path.is_dir() else special_file_kind(path)
    return f"is {kind}, not a file" if kind else None


def remove_replaced_model_files(folder: str | Path, new_files: Iterable[str]) -> list[str]:
    """Before a new model's files (``new_files``: their names) move into ``folder``, remove the files of
    :data:`MODEL_FILE_NAMES` there that the new model does not write, which would otherwise sit beside it and be read
    as part of it (an old ``model.onnx`` beside new weights, old weights beside a new export, which loading prefers).
    Any other file stays, and so does a link. Returns the names removed."""
    folder, kept = Path(folder), set(new_files)
    stale = sorted({path.name for pattern in MODEL_FILE_NAMES for path in folder.glob(pattern)} - kept)
    return [name for name in stale if (folder / name).is_file() and not (folder / name).is_symlink()
            and remove_file(folder / name, folder)]


WEIGHT_FILES = (SAFETENSORS_FILE, SAFETENSORS_INDEX, *PICKLED_WEIGHTS)


def fail(folder: Path, file: str | None, problem: str) -> ModelFormatError:
    return ModelFormatError(f"{file}: {problem}" if file else problem, str(folder))
