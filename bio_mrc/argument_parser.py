"""The command line's parser: transformers' ``run_qa.py`` option names read as the package's, and an unknown
option answered in one line with the option most like it (argparse alone prints its usage and no guess)."""

from __future__ import annotations

import argparse
import difflib
import numbers
import sys
from typing import Any, Callable, Mapping, Sequence

from .plugins import PLUGIN_GROUP

# run_qa.py's names whose meaning here has another name; the rest (--max_seq_length, --doc_stride,
# --max_answer_length, --learning_rate, ...) are the package's own with hyphens. A dict maps by command
# (None: every other command).
RUN_QA_NAMES: Mapping[str, str | Mapping[str | None, str]] = {
    "--model_name_or_path": {"train": "--encoder", "compare": "--encoder", None: "--model"},
    "--per_device_train_batch_size": "--batch-size",
    "--per_device_eval_batch_size": "--batch-size",
    "--num_train_epochs": "--epochs",
    "--n_best_size": "--n-best",
    "--train_file": "--train",
    "--validation_file": "--eval",
}
# An option of the other commands that means one of two here: the line names both rather than a guess by spelling.
AMBIGUOUS_NAMES: Mapping[tuple[str, str], str] = {
    ("train", "--model"): "the encoder to start from is --encoder, a trained bio_mrc model to continue --init-from",
}
# How a name no table holds gets there: said after argparse's "invalid choice" where the choices are a table's names.
OWN_ENTRY_HINT = f"install a package with a {PLUGIN_GROUP} entry point (docs/layout.md, your entries in the bio-mrc command)"
# How a number option's text is to be written: int() and float() read the decimal digits of every script (``٣`` and a
# fullwidth ``４`` as 3 and 4) and Unicode's spaces, which no option takes as a number.
ASCII_NUMBER = "write the number in ASCII digits (0-9)"
RUN_QA_NOTE = ("transformers' run_qa.py names (--model_name_or_path, --max_seq_length, --doc_stride, --n_best_size, "
               "--max_answer_length, --per_device_train_batch_size, --num_train_epochs, --learning_rate, ...) are read "
               "as the options they correspond to")


def _package_name(name: str, command: str | None) -> str:
    """The package's option for an option name as run_qa.py (or a user's habit) spells it."""
    target = RUN_QA_NAMES.get(name)
    if isinstance(target, Mapping):
        target = target.get(command, target[None])
    return target or name.replace("_", "-")


def _values_taken(action: argparse.Action) -> int:
    """How many values an option takes after it (``nargs``; as many as follow for ``+`` and ``*``)."""
    return 1 if action.nargs in (None, "?") else action.nargs if isinstance(action.nargs, int) else sys.maxsize


def _reads_numbers(value_type: Any) -> bool:
    """Whether an option's ``type`` reads its text as a number: ``int``, ``float`` and every count, seed and range of
    the commands, told by what it makes of ``1`` (a text, a JSON object or no type at all is no number)."""
    if value_type is None:
        return False
    try:
        value = value_type("1")
    except (TypeError, ValueError, argparse.ArgumentTypeError):
        return False
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _value_read_as_an_option(argv: Sequence[str], command: str | None, subparser: argparse.ArgumentParser | None) -> str | None:
    """One line for the first value that begins with ``-`` where an option takes its first value (``--data -q.json``,
    a file's name): argparse reads it as an option and answers with its usage and "expected one argument", which says
    neither which value nor how to give it. A negative number (as this Python's argparse reads one), a text holding a
    space and an option are as argparse reads them; a number is told to be given with ``=`` alone."""
    if subparser is None:
        return None
    options, taking = subparser._option_string_actions, None
    for token in argv[argv.index(command) + 1:]:
        if token == "--":
            return None
        name = token.partition("=")[0]  # an option, its prefix or either with =VALUE: an option, its value missing
        matches = [name] if name in options else [o for o in options if name.startswith("--") and o.startswith(name)]
        if taking is not None and not matches and token.startswith("-") and token != "-" and " " not in token \
                and not _negative_number(subparser, token):
            option = max(taking.option_strings, key=len)
            file = "" if _reads_numbers(taking.type) else f", or ./{token} for a file"
            return f"{token!r} begins with '-', so it reads as an option, not as the value of {option}: write {option}={token}{file}"
        action = options[matches[0]] if len(matches) == 1 and "=" not in token else None
        taking = action if action is not None and action.nargs not in (0, "?", "*") else None
    return None


def _negative_number(parser: argparse.ArgumentParser, token: str) -> bool:
    """Whether ``parser``'s argparse reads ``token`` as a negative number, a value (``--bio-length-prior -0.5``): by its
    own pattern, which Python versions widen (``-1e-3``), and only where no option of its looks like one."""
    return bool(parser._negative_number_matcher.match(token)) and not parser._has_negative_number_optionals


class EveryUse(argparse.Action):
    """A list option's values from every use of it, in order (``--context A --context B`` is two texts): argparse's
    default keeps the last use alone, dropping what came before without a word. The first use replaces the default."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        so_far = getattr(namespace, self.dest, None)
        setattr(namespace, self.dest, [*([] if so_far is None or so_far is self.default else so_far), *values])


class CommandLineParser(argparse.ArgumentParser):
    """A top-level parser with subcommands that reads ``--run_qa_names`` and guesses at unknown options.
    ``every_command`` builds the parser with every command's options, where this one has only some commands' (an
    unknown option's line names the commands that have it)."""

    def __init__(self, *args: Any, every_command: Callable[[], CommandLineParser] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._every_command = every_command

    def parse_args(self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None) -> argparse.Namespace:
        argv = list(sys.argv[1:] if args is None else args)
        command, subparser = self._command(argv)
        if subparser is not None:
            at = argv.index(command)
            argv = argv[: at + 1] + [self._translated(token, command, subparser) for token in argv[at + 1:]]
        unknown = self._first_unknown_option(argv, command, subparser)
        if unknown is not None:  # before argparse, which would first name a required option it then lacks
            self.exit(2, f"error: {self._unknown(unknown, command, subparser)}\n")
        if dashed := _value_read_as_an_option(argv, command, subparser):
            self.exit(2, f"error: {dashed}\n")
        parsed, extras = self.parse_known_args(argv, namespace)
        if extras:
            self.exit(2, f"error: {self._unknown(extras[0], command, subparser)}\n")
        return parsed

    def _get_value(self, action: argparse.Action, arg_string: str) -> Any:
        """argparse's reading of an option's text; the text of an option that reads numbers is refused first, in one
        line naming the option and the text as typed, where it holds more than ASCII: ``--epochs ٣`` is no 3 epochs."""
        if not arg_string.isascii() and _reads_numbers(action.type):
            option = max(action.option_strings, key=len, default=action.dest)
            self.exit(2, f"error: {option} {arg_string!r}: {ASCII_NUMBER}\n")
        return super()._get_value(action, arg_string)

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        """argparse's check of a choice; where the choices are a registry table's names, its refusal says in the same
        line how an entry of one's own joins them."""
        try:
            super()._check_value(action, value)
        except argparse.ArgumentError as error:
            own = getattr(action.choices, "own", None)
            if own is None:
                raise
            raise argparse.ArgumentError(action, f"{error.message}; {own}: {OWN_ENTRY_HINT}") from None

    def _first_unknown_option(self, argv: Sequence[str], command: str | None, subparser: argparse.ArgumentParser | None) -> str | None:
        """The first ``--name`` that is no option (nor the start of exactly one) of the parser it goes to; a token with
        a space where the option before takes a value is that value, as argparse reads it (a text ``-- The Normans``)."""
        parser, room = self, 0  # room: how many more values the option before takes
        for token in argv:
            if token == "--":
                return None
            if token == command and parser is self:
                parser, room = subparser, 0
                continue
            name = token.partition("=")[0]
            if parser is None:
                continue
            if not name.startswith("--") or (" " in token and room):
                room = max(room - 1, 0)
                continue
            known = parser._option_string_actions
            matches = [name] if name in known else [o for o in known if o.startswith(name)]
            if len(matches) != 1:
                return token
            room = 0 if "=" in token else _values_taken(known[matches[0]])
        return None

    def command_of(self, argv: Sequence[str]) -> str | None:
        """The command ``argv`` runs, None where it asks the top level alone (``--version``, ``--help``); a word that
        is no command is refused here, as parsing refuses it. A top-level option before the command is answered first."""
        command = self._command(argv)[0]
        before = argv[: argv.index(command)] if command is not None else argv
        own = [option for option in self._option_string_actions if option.startswith("--")]
        asked = any(token in self._option_string_actions or (token.startswith("--") and token != "--" and any(o.startswith(token) for o in own))
                    for token in before)
        return None if asked else command

    def command_named(self, argv: Sequence[str]) -> str | None:
        """The command ``argv`` names, where a top-level option before it is answered first too (``--help train``:
        the options after it are read as that command's before the help is given); None where it names none."""
        return self._command(argv)[0]

    def every_command(self) -> CommandLineParser:
        """This parser where it has every command's options, else the parser that has them."""
        return self if self._every_command is None else self._every_command()

    def command_parsers(self) -> Mapping[str, argparse.ArgumentParser]:
        """Each command's subparser, by name (none without commands)."""
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                return action.choices
        return {}

    def _command(self, argv: Sequence[str]) -> tuple[str | None, argparse.ArgumentParser | None]:
        subparsers = self.command_parsers()
        for token in argv:
            if token in subparsers:
                return token, subparsers[token]
            if not token.startswith("-"):
                guess = difflib.get_close_matches(token, list(subparsers), n=1)
                hint = f"did you mean {guess[0]}?" if guess else f"the commands: {', '.join(subparsers)}"
                self.exit(2, f"error: bio-mrc has no command {token!r}; {hint}\n")
        return None, None

    @staticmethod
    def _translated(token: str, command: str | None, subparser: argparse.ArgumentParser) -> str:
        """``--max_seq_length`` -> ``--max-seq-length`` where the command has that option; anything else as it is."""
        name, equals, value = token.partition("=")
        if not name.startswith("--") or name in subparser._option_string_actions:
            return token
        package_name = _package_name(name, command)
        return package_name + equals + value if package_name in subparser._option_string_actions else token

    def _unknown(self, token: str, command: str | None, subparser: argparse.ArgumentParser | None) -> str:
        """One line: what is not understood, and the option most like it (or which commands have it)."""
        name = token.partition("=")[0]
        where = f"bio-mrc {command}" if command else "bio-mrc"
        if not name.startswith("-"):
            return f"{where}: unexpected argument {token!r} ({where} --help lists what it takes)"
        options = [o for o in (subparser or self)._option_string_actions if o.startswith("--")]
        package_name = _package_name(name, command)
        elsewhere = [c for c, p in self.every_command().command_parsers().items() if package_name in p._option_string_actions]
        if package_name != name and elsewhere:
            return f"{where} has no option {name}: {package_name} is an option of {', '.join(elsewhere)} only ({where} --help lists its own)"
        if meaning := AMBIGUOUS_NAMES.get((command, package_name)):
            return f"{where} has no option {name}: {meaning}"
        # likeness of the names without their dashes, which every option shares (--lr is not like --help)
        names = {option.lstrip("-"): option for option in options}
        guess = difflib.get_close_matches(package_name.lstrip("-"), list(names), n=1, cutoff=0.6)
        hint = f"; did you mean {names[guess[0]]}?" if guess else f"; {where} --help lists its options"
        return f"{where} has no option {name}{hint}"


__all__ = ["CommandLineParser", "EveryUse", "RUN_QA_NAMES", "RUN_QA_NOTE"]
