"""Heads: hidden states -> logits, and their losses. No data or training code here.

Each works on any encoder's (batch, seq, hidden) states::

    bio, span = BIOHead(hidden), SpanHead(hidden)
    loss = bio.loss(bio(states), bio_targets, tag_mask) + span.loss(span(states), start_positions, end_positions)
"""

from .base import Head, soft_cross_entropy
from .bio import BIOHead
from .span import SpanHead

__all__ = ["BIOHead", "Head", "SpanHead", "soft_cross_entropy"]
