"""Heads: hidden states -> logits, and their losses. No data or training code here."""

from .base import Head, soft_cross_entropy
from .bio import BIOHead
from .span import SpanHead

HEADS: dict[str, type[Head]] = {"span": SpanHead, "bio": BIOHead}

__all__ = ["HEADS", "BIOHead", "Head", "SpanHead", "soft_cross_entropy"]
