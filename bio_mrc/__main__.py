"""``python -m bio_mrc`` and the ``bio-mrc`` command: the command line as a process of its own."""

from .stop_signals import say_interrupted, stops_as_status, stops_until_the_process_ends


def command() -> int:
    """The ``bio-mrc`` process's status. Ctrl-C and SIGTERM are taken before the command line's modules load (a stop
    during their import, in a command's first half second, is one ``interrupted`` line and its status, not a traceback
    or a silent death) and set aside once the command has ended, while the interpreter exits."""
    with stops_until_the_process_ends():
        return stops_as_status(_main, say_interrupted)


def _main() -> int:
    from .cli import main

    return main()


if __name__ == "__main__":
    raise SystemExit(command())
