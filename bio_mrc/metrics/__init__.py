"""Metrics: official SQuAD v1.1/v2.0, MultiSpanQA, and entity-level tag scores. Pure functions."""
