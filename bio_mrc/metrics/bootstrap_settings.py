"""How every interval and p-value of a report, and of ``bio-mrc evaluate --baseline``, is drawn: the number of
bootstrap resamples and their seed (reports are reproducible). Apart from :mod:`bio_mrc.metrics.stats`, which
draws them, so the command line's help names them without numpy."""

BOOTSTRAP_RESAMPLES = 1000
BOOTSTRAP_SEED = 0

__all__ = ["BOOTSTRAP_RESAMPLES", "BOOTSTRAP_SEED"]
