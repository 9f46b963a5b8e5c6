"""The bundle's layout, which ``build_bundle.py`` writes and ``run.py`` reads: the names of its fixed files and
how its files are packed (xz, and fp16 weights as two byte planes under xz)."""

from __future__ import annotations

import hashlib
from pathlib import Path

MANIFEST = "manifest.json"  # every file's size and sha256, and each packed file's original sha256
WHEELS_ARCHIVE = "wheels.tar.xz"
PLANES_SUFFIX = ".planes2.xz"  # 16-bit words stored as two byte planes before xz: fp16 weights pack 5% smaller


def sha256_of(path: Path) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def byte_planes(data: bytes) -> bytes:
    """The even bytes, then the odd ones (an odd last byte stays last): fp16 exponents and mantissas apart."""
    even = len(data) // 2 * 2
    return bytes(data[0:even:2]) + bytes(data[1:even:2]) + data[even:]


def from_byte_planes(data: bytes) -> bytes:
    """The inverse of :func:`byte_planes`."""
    half = len(data) // 2
    words = bytearray(half * 2)
    words[0::2], words[1::2] = data[:half], data[half:half * 2]
    return bytes(words) + data[half * 2:]


def unpacked_name(packed: str) -> str:
    """Where a packed file of the bundle goes once unpacked (the same path without its packing suffix)."""
    return packed.removesuffix(PLANES_SUFFIX) if packed.endswith(PLANES_SUFFIX) else packed.removesuffix(".xz")
