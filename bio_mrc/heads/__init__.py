"""Heads: hidden states -> logits, and their losses. No data or training code here."""

from .base import Head, soft_cross_entropy
from .bio import BIOHead
from .span import SpanHead

__all__ = ["BIOHead", "Head", "SpanHead", "soft_cross_entropy"]
