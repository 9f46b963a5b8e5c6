"""``python -m bio_mrc.cli``: the ``bio-mrc`` command."""

from . import main

if __name__ == "__main__":
    raise SystemExit(main())
