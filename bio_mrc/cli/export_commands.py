"""``bio-mrc export`` and ``convert``: a model written in another format."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..config_options import refuse_non_finite
from ..errors import ConfigError
from ..io import check_folder_free, check_folder_target, check_library_path, check_outputs_apart
from .options import check_model_at_hand


def _export_onnx(args: argparse.Namespace) -> dict:
    from ..inference.onnx import export_onnx

    given = {name: getattr(args, name) for name in EXPORT_OPTIONS if getattr(args, name) is not None}
    # the others: export_onnx's defaults
    return export_onnx(args.model, args.output, overwrite=args.overwrite, progress=True, revision=args.revision,
                       **given).to_dict()


def _export_transformers(args: argparse.Namespace) -> dict:
    from ..inference.conversion import export_qa_checkpoint

    return export_qa_checkpoint(args.model, args.output, overwrite=args.overwrite, progress=True,
                                revision=args.revision).to_dict()


EXPORT_FORMATS = {"onnx": _export_onnx, "transformers": _export_transformers}  # --format: how each is written
# The options of one format alone (unset by default): another format would ignore them, so given to it they are refused.
EXPORT_OPTIONS = {"opset": "onnx", "atol": "onnx"}


def check_output_folder(args: argparse.Namespace, model_folder: Path | None, staging_dir: str) -> None:
    """What the writer refuses of ``--output`` once torch has loaded, refused before it loads: a folder inside (or the
    same as) the model's folder, and one holding files without ``--overwrite`` (its staging folder ``staging_dir``,
    a killed run's, aside)."""
    check_outputs_apart([args.output], model_dirs=[model_folder])
    check_folder_free(Path(args.output), args.overwrite, staging_dir)


def cmd_export(args: argparse.Namespace) -> int:
    from ..model_folder import EXPORT_STAGING_DIR, check_exportable  # the folder's checks, read as the command runs (--help reads none)

    unread = [name for name, owner in EXPORT_OPTIONS.items() if getattr(args, name) is not None and owner != args.format]
    if unread:
        named, one = " and ".join(f"--{name}" for name in unread), len(unread) == 1
        raise ConfigError(f"{named} {'is' if one else 'are'} read by the {EXPORT_OPTIONS[unread[0]]} export alone, not by "
                          f"--format {args.format}: leave {'it' if one else 'them'} out")
    if given := {name: getattr(args, name) for name in EXPORT_OPTIONS if getattr(args, name) is not None}:
        _check_export_options(given)
    check_library_path(check_folder_target(args.output))  # both formats save a tokenizer
    folder = check_model_at_hand(args.model, args.revision, lambda folder: check_exportable(folder, args.model))  # before torch loads
    check_output_folder(args, folder, EXPORT_STAGING_DIR)
    record = EXPORT_FORMATS[args.format](args)
    print(json.dumps({"output": str(args.output), **record}, indent=2))
    return 0


def _check_export_options(given: dict) -> None:
    """The ONNX options given refused before torch loads, as export_onnx refuses them (a NaN or an infinity as typed)."""
    from ..inference.export_options import DEFAULT_OPSET, TOLERANCE, check_export_options

    for name, value in given.items():
        refuse_non_finite(name, value)
    check_export_options(**{"opset": DEFAULT_OPSET, "atol": TOLERANCE, **given})


def cmd_convert(args: argparse.Namespace) -> int:
    from ..model_folder import CONVERT_STAGING_DIR, check_convertible  # the folder's checks, read as the command runs (--help reads none)

    check_library_path(check_folder_target(args.output))  # as the conversion checks them, before torch loads
    folder = check_model_at_hand(args.model, args.revision, lambda folder: check_convertible(folder, args.model))
    check_output_folder(args, folder, CONVERT_STAGING_DIR)
    from ..inference.conversion import convert_qa_checkpoint

    written = convert_qa_checkpoint(args.model, args.output, progress=True, overwrite=args.overwrite, revision=args.revision,
                                    max_seq_length=args.max_seq_length, doc_stride=args.doc_stride,
                                    max_query_length=args.max_query_length)
    print(json.dumps(written.to_dict(), indent=2))
    return 0
