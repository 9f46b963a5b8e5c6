"""The command-line options come from the config dataclasses: same names, defaults, help and choices."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import re

import pytest

from bio_mrc.cli import build_parser
from bio_mrc.cli.options import decode_config, train_config
from bio_mrc.config_options import add_config_options, config_from_args
from bio_mrc.config_schema import field_help
from bio_mrc.decoding.postprocess import DecodeConfig
from bio_mrc.features.windows import BIO_TARGET_KINDS, TAG_LEVELS, TARGET_KINDS
from bio_mrc.heads import BIOHead
from bio_mrc.registry import head_choices
from bio_mrc.training.train import TrainConfig

from .conftest import SAMPLE_V1, ascii_locale_run

TRAIN = ["train", "--train", "t.json", "--output-dir", "out"]
COMMANDS = {  # command line up to the options, config class, fields the command does not take
    "train": (TRAIN, TrainConfig, ()),
    "predict": (["predict", "--model", "m", "--data", "d", "--output", "o"], DecodeConfig, ("require_answer",)),
    "tune": (["tune", "--model", "m", "--data", "d"], DecodeConfig, ("multi_span", "require_answer")),
    "extract": (["extract", "--model", "m", "--question", "q"], DecodeConfig, ("require_answer",)),
}


def _help(command: str) -> str:
    """``bio-mrc COMMAND --help``, squeezed."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        build_parser().parse_args([command, "--help"])
    return _squeezed(out.getvalue())


def _default(field: dataclasses.Field):
    return field.default_factory() if field.default_factory is not dataclasses.MISSING else field.default


def _squeezed(text: str) -> str:
    """Without whitespace: the formatter wraps lines, also at hyphens."""
    return re.sub(r"\s+", "", text)


@pytest.mark.parametrize("command", COMMANDS)
def test_every_field_is_an_option_with_its_default_and_help(command):
    argv, cls, excluded = COMMANDS[command]
    args = build_parser().parse_args(argv)
    help_text = _help(command)
    for field in dataclasses.fields(cls):
        option = "--" + field.name.replace("_", "-")
        if field.name in excluded:
            assert not hasattr(args, field.name) and option not in help_text, field.name
            continue
        assert getattr(args, field.name) == _default(field), field.name
        assert field_help(field.metadata), f"{cls.__name__}.{field.name} has no help"
        shown = " ".join(map(str, _default(field))) if isinstance(_default(field), tuple) else _default(field)  # as typed
        assert _squeezed(f'{field_help(field.metadata)} (default: {shown})') in help_text, field.name


def test_defaults_build_the_default_configs():
    assert train_config(build_parser().parse_args(TRAIN)) == TrainConfig()
    for argv, _, _ in list(COMMANDS.values())[1:]:
        assert decode_config(build_parser().parse_args(argv)) == DecodeConfig()


def test_round_trip_train_options():
    argv = TRAIN + [
        "--encoder", "some/encoder", "--heads", "bio", "--span-loss-weight", "0.5", "--bio-loss-weight", "3",
        "--bio-targets", "marginal", "--span-targets", "soft", "--bio-loss-reduction", "sum",
        "--bio-prior", "0.1", "0.2", "0.7", "--bio-class-weights", "5", "5", "1", "--tag-level", "subword",
        "--tag-mentions", "annotated", "--attention-dropout", "0.2", "--hidden-dropout", "none", "--max-seq-length", "256", "--doc-stride", "96",
        "--max-query-length", "32", "--epochs", "0.5",
        "--learning-rate", "3e-5", "--head-learning-rate", "1e-3", "--batch-size", "8", "--warmup-ratio", "0",
        "--weight-decay", "0", "--seed", "7", "--init-from", "trained", "--revision", "v1.0", "--precision", "bf16",
        "--training-args", '{"gradient_accumulation_steps": 2}',
    ]
    expected = TrainConfig(
        encoder="some/encoder", heads="bio", span_loss_weight=0.5, bio_loss_weight=3.0, bio_targets="marginal",
        span_targets="soft", bio_loss_reduction="sum", bio_prior=(0.1, 0.2, 0.7), bio_class_weights=(5.0, 5.0, 1.0),
        tag_level="subword", tag_mentions="annotated", attention_dropout=0.2, hidden_dropout=None, max_seq_length=256,
        doc_stride=96, max_query_length=32, epochs=0.5, learning_rate=3e-5,
        head_learning_rate=1e-3, batch_size=8, warmup_ratio=0.0, weight_decay=0.0, seed=7, init_from="trained",
        revision="v1.0", precision="bf16", training_args={"gradient_accumulation_steps": 2},
    )
    # every field is set away from its default, so a field the round trip drops shows up
    assert all(getattr(expected, f.name) != _default(f) for f in dataclasses.fields(TrainConfig))
    config = train_config(build_parser().parse_args(argv))
    assert config == expected
    assert isinstance(config.bio_prior, tuple) and isinstance(config.bio_class_weights, tuple)


def test_round_trip_decode_options():
    argv = COMMANDS["extract"][0] + ["--n-best", "5", "--max-answer-length", "12", "--bio-length-prior", "0.5", "--multi-span"]
    config = decode_config(build_parser().parse_args(argv), require_answer=False)
    assert config == DecodeConfig(n_best=5, max_answer_length=12, multi_span=True, require_answer=False, bio_length_prior=0.5)


def test_choices_come_from_the_library():
    for option, valid in [("--heads", head_choices()), ("--bio-targets", BIO_TARGET_KINDS), ("--span-targets", TARGET_KINDS),
                          ("--bio-loss-reduction", BIOHead.reductions), ("--tag-level", TAG_LEVELS)]:
        for value in valid:
            assert getattr(build_parser().parse_args(TRAIN + [option, value]), option[2:].replace("-", "_")) == value


@pytest.mark.parametrize("option, bad", [
    ("--heads", "both"), ("--bio-targets", "hard"), ("--span-targets", "marginal"),
    ("--bio-loss-reduction", "max"), ("--tag-level", "char"),
])
def test_choices_are_enforced(option, bad, capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(TRAIN + [option, bad])
    assert "invalid choice" in capsys.readouterr().err


def test_three_values_for_the_tag_triples(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(TRAIN + ["--bio-prior", "0.1", "0.9"])
    assert "expected 3 arguments" in capsys.readouterr().err
    assert _squeezed("--bio-prior B I O") in _help("train") and _squeezed("--bio-class-weights B I O") in _help("train")


@dataclasses.dataclass
class _Toy:
    name: str = "x"
    count: int = dataclasses.field(default=3, metadata={"help": "how many", "choices": (1, 2, 3)})
    scale: float | None = None
    pair: tuple[int, int] | None = (1, 2)
    verbose: bool = False
    cache: bool = True
    decided: str = "by the command"
    added: float = dataclasses.field(default=0.5, metadata={"help": "a field added later"})


def test_generic_options_from_any_dataclass():
    parser = argparse.ArgumentParser(formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    add_config_options(parser, _Toy, exclude=("decided",))
    assert config_from_args(_Toy, parser.parse_args([]), decided="set") == _Toy(decided="set")
    args = parser.parse_args(["--name", "y", "--count", "2", "--scale", "1.5", "--pair", "4", "5",
                              "--verbose", "--no-cache", "--added", "2"])
    assert config_from_args(_Toy, args) == _Toy("y", 2, 1.5, (4, 5), True, False, "by the command", 2.0)
    assert _squeezed("--added ADDED a field added later (default: 0.5)") in _squeezed(parser.format_help())
    assert "--decided" not in parser.format_help()
    with pytest.raises(SystemExit):
        parser.parse_args(["--count", "4"])
    with pytest.raises(TypeError, match=r"_Toy has no fields \['unknown'\]"):
        config_from_args(_Toy, args, unknown=1)


def test_unsupported_field_types_are_refused():
    @dataclasses.dataclass
    class Bad:
        either: int | str = 0

    with pytest.raises(TypeError, match=r"cannot make an option of int \| str \(one type, or one type \| None\)"):
        add_config_options(argparse.ArgumentParser(), Bad)


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    (commands,) = [action for action in parser._actions if isinstance(action, argparse._SubParsersAction)]
    return dict(commands.choices)


def test_every_option_of_every_command_says_what_it_is():
    bare = [f"{name} {action.option_strings[0] if action.option_strings else action.dest}"
            for name, parser in _subcommands().items() for action in parser._actions
            if action.help is not argparse.SUPPRESS and not (action.help or "").strip()]
    assert bare == []  # were: train --output-dir, predict --limit, evaluate --predictions and --na-probs, tune --limit, extract --question


@pytest.mark.parametrize("command, option, default", [("predict", "--batch-size", "(default: 16 on a CPU, 128 on a GPU)"),
                                                      ("compare", "--data-dir", "(default: $BIO_MRC_DATA or ../shared/data)"),
                                                      ("extract", "--top-k", "default: 1)"), ("tune", "--limit", "(default: all)")])
def test_an_option_whose_help_names_its_default_is_not_followed_by_argparses_none(command, option, default):
    entries = re.split(r"\n  (?=-)", _subcommands()[command].format_help())  # one per option, its help wrapped below it
    (own,) = [_squeezed(entry) for entry in entries if entry.startswith(option + " ")]
    assert _squeezed(default) in own and "(default:None)" not in own


def test_no_help_text_points_at_files_only_a_clone_of_the_repository_has():
    texts = {name: parser.format_help() for name, parser in _subcommands().items()}
    assert [name for name, text in texts.items() if re.search(r"\b(docs|benchmarks)/", text)] == []


def test_an_option_typed_is_told_from_its_default_of_the_same_value():
    from bio_mrc.config_options import options_given

    args = build_parser().parse_args([*TRAIN, "--max-seq-length", "384", "--bio-prior", "0.1", "0.2", "0.7"])
    assert options_given(args) == {"max_seq_length", "bio_prior"}
    assert options_given(build_parser().parse_args(TRAIN)) == set()


@pytest.mark.parametrize("given, expected", [
    ([], {"max_seq_length": 128, "doc_stride": 46, "max_query_length": 32}),  # the encoder's 128 positions: 384 fits not
    (["--max-seq-length", "100"], {"max_seq_length": 100, "doc_stride": 36, "max_query_length": 25}),  # 128 leaves no room
    (["--max-seq-length", "100", "--max-query-length", "20"], {"max_seq_length": 100, "doc_stride": 38, "max_query_length": 20}),
])
def test_train_fits_the_windows_it_was_not_given_to_the_encoder(given, expected, tiny_encoder_dir, tmp_path, capsys):
    """The tiny encoder holds 128 positions, fewer than the default window of 384: with no window given, train takes
    128 and a stride and question length that leave new context in each window (stride (length - question - 3) // 2,
    question a quarter of the window), and says so in one line."""
    from bio_mrc.cli import main
    from bio_mrc.training.train import load_run_record

    out = tmp_path / "m"
    assert main(["train", "--train", str(SAMPLE_V1), "--output-dir", str(out), "--encoder", str(tiny_encoder_dir),
                 "--epochs", "1", "--limit", "2", *given]) == 0
    notes = [line for line in capsys.readouterr().err.splitlines() if line.startswith("note:")]
    assert len(notes) == 1 and "--doc-stride" in notes[0], notes
    assert {name: load_run_record(out)["train"][name] for name in expected} == expected


def test_a_window_given_that_the_encoder_cannot_hold_stays_refused_naming_windows_that_fit(tiny_encoder_dir, tmp_path, capsys):
    from bio_mrc.cli import main

    assert main(["train", "--train", str(SAMPLE_V1), "--output-dir", str(tmp_path / "m"), "--encoder", str(tiny_encoder_dir),
                 "--epochs", "1", "--max-seq-length", "200"]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"error: max_seq_length 200 exceeds the 128 positions a window of encoder {tiny_encoder_dir} may fill: train with "
        "windows that fit, e.g. max_seq_length 128, doc_stride 46, max_query_length 32")


@pytest.mark.slow
def test_train_and_export_refuse_a_folder_tokenizers_cannot_name_under_an_ascii_locale(tmp_path):
    """Both save a tokenizer, which tokenizers writes by a UTF-8 name: under LC_ALL=C a non-ASCII output folder is
    refused in one line before any work, not left half written by a traceback."""
    code = ("import sys\nfrom bio_mrc.cli import main\n"
            "print(main(['train', '--train', sys.argv[1], '--output-dir', sys.argv[2], '--encoder', 'none']))\n"
            "print(main(['export', '--model', sys.argv[1], '--output', sys.argv[2], '--format', 'transformers']))")
    out = tmp_path / "sortie-é"
    run = ascii_locale_run(code, str(SAMPLE_V1), str(out))
    assert run.stdout.split() == ["2", "2"], run.stderr[-2000:]
    shown = f"{tmp_path}/sortie-\\udcc3\\udca9"  # stderr escapes what the locale could not decode
    assert run.stderr.splitlines() == [f"error: {shown}: this name is not spelled in UTF-8 under the locale's file-name "
                                       "encoding (ascii); set a UTF-8 locale, e.g. PYTHONUTF8=1"] * 2
    assert not out.exists()


def _entry(command: str, option: str) -> str:
    """``option``'s line and help in ``bio-mrc COMMAND --help``, squeezed."""
    entries = re.split(r"\n  (?=-)", _subcommands()[command].format_help())
    (own,) = [_squeezed(entry) for entry in entries if entry.startswith(option + " ")]
    return own


def test_a_required_option_shows_no_default():
    shown = [f"{name} {action.option_strings[0]}" for name, parser in _subcommands().items() for action in parser._actions
             if action.required and "(default:None)" in _entry(name, action.option_strings[0])]
    assert shown == []  # were: train --train and --output-dir, predict --model, --data and --output, ...


@pytest.mark.parametrize("command, option, default", [
    ("train", "--bio-prior", "(default: 0.01 0.02 0.97)"),  # as typed, not Python's (0.01, 0.02, 0.97)
    ("predict", "--decoding", "(default: auto)"),  # not ['auto']
    ("serve", "--allowed-hosts", "(default: empty)"),  # not a bare "(default: )"
    ("train", "--limit", "(default: all)"), ("evaluate", "--limit", "(default: all)"),
    ("train", "--hub-strategy", "(default: every_save"),  # Trainer's, which an unset option leaves
])
def test_a_default_is_shown_as_it_is_typed_or_as_what_it_means(command, option, default):
    own = _entry(command, option)
    assert _squeezed(default) in own and "(default:None)" not in own


def test_a_none_the_help_offers_is_a_value_the_option_takes():
    """Help that says what ``none`` means names a value typed on the command line: an option of three values cannot
    take it, and says what leaving it unset means instead."""
    for name, (argv, _, _) in COMMANDS.items():
        for action in _subcommands()[name]._actions:
            if re.search(r"(^|[(;] ?)none:", action.help or ""):
                args = build_parser().parse_args([*argv, action.option_strings[0], "none"])
                assert getattr(args, action.dest) is None, action.option_strings[0]


@pytest.mark.parametrize("option", ["--max-seq-length", "--doc-stride", "--max-query-length"])
def test_train_help_says_a_default_window_is_fitted_to_a_shorter_encoder(option):
    assert "encoder" in _entry("train", option)  # 384 and its stride and question are cut to a 128-position encoder


def test_extract_help_says_it_takes_the_context_one_way():
    assert "--context" in _entry("extract", "--context-file") and "--context-file" in _entry("extract", "--context")
    assert "oneofthetwo" in _entry("extract", "--context-file") + _entry("extract", "--context")


def test_the_overview_says_what_the_tool_does_and_that_train_reads_more_than_squad():
    overview = _squeezed(build_parser().format_help())
    assert "questionanswering" in overview and "thincommandline" not in overview  # was how the CLI is built
    assert "labelledquestions(SQuADJSON,JSONLines,CSV" in overview  # was "fine-tune a model on SQuAD-format data"


def test_tune_data_help_reads_as_one_sentence():
    own = _entry("tune", "--data")
    assert "held-out" in own and ".questions:" not in own  # was "...the final evaluation. questions: official SQuAD JSON; ..."


@pytest.mark.parametrize("command", ["extract", "tune"])
def test_n_best_help_says_what_it_is_where_no_n_best_file_is_written(command):
    own = _entry(command, "--n-best")
    assert "whatpredictwrites" not in own and "best" in own  # was "(what predict writes to its n-best file)"
