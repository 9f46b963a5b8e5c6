"""``python -m bio_mrc``: the ``bio-mrc`` command, for an environment whose scripts folder is not on the PATH."""

from .cli import main

if __name__ == "__main__":
    raise SystemExit(main())
