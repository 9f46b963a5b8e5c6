"""``python -m bio_mrc.cli``: the ``bio-mrc`` command."""

from ..__main__ import command

if __name__ == "__main__":
    raise SystemExit(command())
