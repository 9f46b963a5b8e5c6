"""Inputs that would cost unbounded memory or time, and options no run needs, are refused in one line
(exit 2) before any work; a reader that stops early ends a command quietly."""

from __future__ import annotations

import gzip
import json
import os
import sys

import pytest
from transformers import AutoTokenizer

from bio_mrc import cli
from bio_mrc.cli import main
from bio_mrc.data.squad import load_squad, stream_squad
from bio_mrc.errors import BioMrcError, DataFormatError
from bio_mrc.inference.streaming import resume_point
from bio_mrc.model import BioMrcForQuestionAnswering

from .conftest import SAMPLE_V1, untrained_model_folder

WINDOWS = {"max_seq_length": 48, "doc_stride": 16, "max_query_length": 12}


@pytest.fixture(scope="module")
def model_dir(tiny_encoder_dir, tmp_path_factory):
    """An untrained tiny joint model: enough to run the commands."""
    return untrained_model_folder(tiny_encoder_dir, tmp_path_factory.mktemp("bounded") / "model", heads="span+bio", **WINDOWS)


def one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    return err


# --- absurd numbers in options ---------------------------------------------------------------------

@pytest.mark.parametrize("value, words", [("nan", "error: --min-span-probability must be a finite number, got nan"),
                                          ("2", "min_span_probability: 2.0 is greater than the maximum of 1.0")])
def test_a_multi_span_threshold_out_of_range_is_refused_before_the_data_is_read(tmp_path, capsys, value, words):
    missing = tmp_path / "no-such-file.json"  # never read: the option is refused first
    assert main(["predict", "--min-span-probability", value, "--model", "m", "--data", str(missing), "--output", str(tmp_path / "o.json")]) == 2
    assert words in one_line_error(capsys)


@pytest.mark.parametrize("option, value, words", [
    ("--epochs", "1e308", "epochs: 1e+308 is greater than the maximum of 1000"),
    ("--epochs", "nan", "error: --epochs must be a finite number, got nan"),
    ("--epochs", "Infinity", "error: --epochs must be a finite number, got Infinity"),  # not "greater than the maximum"
    ("--learning-rate", "inf", "error: --learning-rate must be a finite number, got inf"),
    ("--batch-size", "100000", "batch_size: 100000 is greater than the maximum of 65536"),
    ("--weight-decay", "1e308", "weight_decay: 1e+308 is greater than the maximum of 1"),
    # a weight of 1e308 made the loss infinite, refused only once training had diverged
    ("--span-loss-weight", "1e308", "span_loss_weight: 1e+308 is greater than the maximum of 1000000.0"),
    ("--bio-loss-weight", "2e6", "bio_loss_weight: 2000000.0 is greater than the maximum of 1000000.0"),
])
def test_absurd_training_numbers_are_one_line_and_exit_2(tmp_path, capsys, option, value, words):
    assert main(["train", "--train", str(SAMPLE_V1), "--output-dir", str(tmp_path / "out"), option, value]) == 2
    assert words in one_line_error(capsys)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("values, words", [(["0.2", "NaN", "0.7"], "error: --bio-prior must be a finite number, got NaN"),
                                           (["1", "1", "Infinity"], "error: --bio-prior must be a finite number, got Infinity")])
def test_a_non_finite_number_in_a_tuple_option_is_named_as_typed(tmp_path, capsys, values, words):
    """The flag and the text as the command line gave it: float("NaN") would print as nan, and JSON spells neither."""
    assert main(["train", "--train", str(SAMPLE_V1), "--output-dir", str(tmp_path / "out"), "--bio-prior", *values]) == 2
    assert one_line_error(capsys) == words
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("argv, words", [
    (["predict", "--batch-size", "1e308"], "argument --batch-size: a whole number from 1 to 1,000,000,000, not '1e308'"),
    (["predict", "--limit", "99999999999"], "argument --limit: at most 1,000,000,000"),
    (["tune", "--batch-size", "0"], "argument --batch-size: a positive number, not 0"),
])
def test_absurd_counts_are_refused_by_the_parser(capsys, argv, words):
    with pytest.raises(SystemExit) as stopped:
        main([*argv, "--model", "m", "--data", "d", "--output", "o"])
    assert stopped.value.code == 2 and words in capsys.readouterr().err


@pytest.mark.parametrize("command", ["predict", "tune", "extract"])
@pytest.mark.parametrize("option", ["n_best", "max_answer_length"])
def test_decoding_counts_are_held_to_every_counts_bound(model_dir, tmp_path, capsys, command, option):
    """--n-best and --max-answer-length took 99999999999 where --top-k, --limit and --batch-size stop at 10**9; the
    bound is DecodeConfig's own, so AnswerExtractor and a comparison config's decode hold to it as well."""
    from bio_mrc.decoding.postprocess import DecodeConfig

    where = ["--question", "q", "--context", "c"] if command == "extract" else ["--data", str(tmp_path / "no-such-file.json")]
    argv = [command, "--model", str(model_dir), *where, f"--{option.replace('_', '-')}", "99999999999"]
    output = {"predict": ["--output", str(tmp_path / "o.json")], "tune": ["--output-dir", str(tmp_path / "tuned")]}
    assert main(argv + output.get(command, [])) == 2
    assert f"DecodeConfig: {option}: 99999999999 is greater than the maximum of 1000000000" in one_line_error(capsys)
    assert getattr(DecodeConfig(**{option: 10**9}), option) == 10**9


# --- outputs that cannot be written, found before the work -----------------------------------------

def test_tune_on_a_read_only_model_folder_stops_before_reading_the_data(model_dir, monkeypatch, capsys):
    import bio_mrc.io

    def refuse(*_args, **_kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(bio_mrc.io.paths.tempfile, "TemporaryFile", refuse)  # what a read-only folder answers
    monkeypatch.setattr(cli.command_data, "_load_squad", lambda *a, **k: pytest.fail("the data was read before the check"))
    assert main(["tune", "--model", str(model_dir), "--data", str(SAMPLE_V1)]) == 2
    err = one_line_error(capsys)
    assert "the folder is not writable (Permission denied)" in err and "--output-dir" in err and str(model_dir) in err


def test_an_output_name_over_the_file_systems_limit_is_refused_before_predicting(model_dir, tmp_path, monkeypatch, capsys):
    from bio_mrc.inference import TrainedModel

    monkeypatch.setattr(TrainedModel, "load", lambda *a, **k: pytest.fail("the model was loaded before the check"))
    name = "é" * 120 + ".json"  # 245 bytes: a file system takes it, its atomic write's temporary name not
    assert main(["predict", "--model", str(model_dir), "--data", str(SAMPLE_V1), "--output", str(tmp_path / name)]) == 2
    assert "is 245 bytes long; file names here may have at most 233 bytes" in one_line_error(capsys)
    assert main(["predict", "--model", str(model_dir), "--data", str(SAMPLE_V1),
                 "--output", str(tmp_path / ("d" * 300) / "p.json")]) == 2
    assert "is 300 bytes long" in one_line_error(capsys)


# --- resumed answer lines --------------------------------------------------------------------------

GOOD_LINE = {"id": "q1", "decoding": "span", "answer": "Newton", "start": 0, "end": 6, "abstain": False,
             "no_answer_score": -3.0, "confidence": 0.9, "probability": None, "spans": []}


@pytest.mark.parametrize("edit, words", [
    (lambda r: r.pop("answer"), "line 2 lacks the field answer"),
    (lambda r: [r.pop("spans"), r.pop("abstain")], "line 2 lacks the fields abstain, spans"),
    (lambda r: r.update(no_answer_score="high"), 'line 2 has no_answer_score "high", which is no int or float'),
    (lambda r: r.update(abstain=0), "line 2 has abstain 0, which is no bool"),
    (lambda r: r.update(id=7), "line 2 has id 7, which is no str"),
])
def test_resumed_answer_lines_missing_or_mistyped_fields_are_refused_naming_the_line(tmp_path, edit, words):
    second = dict(GOOD_LINE, id="q2")
    edit(second)
    stream = tmp_path / "preds.answers.jsonl"
    stream.write_text(json.dumps(GOOD_LINE) + "\n" + json.dumps(second) + "\n")
    with pytest.raises(DataFormatError, match=words):
        resume_point(stream, ["span"], chunk_size=1)
    assert resume_point(_rewrite(stream, [GOOD_LINE]), ["span"], chunk_size=1) == ["q1"]


def _rewrite(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


# --- a reader that stops early ---------------------------------------------------------------------

def test_a_reader_that_stops_early_ends_the_command_quietly(monkeypatch, capsys):
    def writes_to_a_closed_pipe(_args):
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(cli.parser, "cmd_evaluate", writes_to_a_closed_pipe)
    read, write = os.pipe()
    stdout = os.fdopen(write, "w")
    monkeypatch.setattr(sys, "stdout", stdout)
    try:
        assert main(["evaluate", "--data", "d", "--predictions", "p"]) == 141  # as a tool ended by SIGPIPE
        assert os.path.samefile(f"/proc/self/fd/{stdout.fileno()}", os.devnull)  # nothing left to report at exit
    finally:
        stdout.close()
        os.close(read)
    assert capsys.readouterr().err == ""


# --- data: lines, contexts, headers --------------------------------------------------------------------

def test_a_gzip_mrqa_context_of_250_million_characters_is_refused_unread(tmp_path):
    path = tmp_path / "bomb.jsonl.gz"
    piece = "The Normans built castles. " * 40_000  # about a million characters
    with gzip.open(path, "wt", compresslevel=1) as handle:
        handle.write(json.dumps({"header": {"dataset": "bomb"}}) + "\n" + '{"context": "')
        for _ in range(250):
            handle.write(piece)
        handle.write('", "qas": []}\n')
    assert path.stat().st_size < 3_000_000
    with pytest.raises(DataFormatError, match=r"line 2 is longer than 67,108,864 bytes decompressed \(BIO_MRC_MAX_LINE_BYTES"):
        load_squad(path)


ROW = {"id": "q1", "context": "Newton wrote it.", "question": "Who?", "answers": {"text": ["Newton"], "answer_start": [0]}}
MRQA_CONTEXT = {"context": "Newton wrote it.", "qas": [{"qid": "q1", "question": "Who?", "detected_answers": [
    {"text": "Newton", "char_spans": [[0, 5]]}]}]}
_CSV_HEAD = "id,context,question,answers\n"
_CSV_ROW = 'q1,Newton wrote it.,Who?,"{""text"": [""Newton""], ""answer_start"": [0]}"\n'


@pytest.mark.parametrize("name, head, last", [
    ("rows.jsonl.gz", json.dumps(ROW) + "\n", "not JSON\n"),
    ("rows.json.gz", json.dumps(ROW) + "\n", "not JSON\n"),  # any .gz of questions is read as JSON Lines
    ("mrqa.jsonl.gz", json.dumps({"header": {"dataset": "bomb"}}) + "\n" + json.dumps(MRQA_CONTEXT) + "\n", "not JSON\n"),
    ("table.csv.gz", _CSV_HEAD + _CSV_ROW, "a,b\n"),
    ("table.tsv.gz", _CSV_HEAD.replace(",", "\t") + "q1\tNewton wrote it.\tWho?\t\n", "a\tb\n"),
], ids=["jsonl", "json", "mrqa", "csv", "tsv"])
def test_a_compressed_data_file_over_the_limit_is_refused_unread_past_it(tmp_path, monkeypatch, name, head, last):
    """100,000 newlines compress to a few hundred bytes: past BIO_MRC_MAX_DATA_BYTES the reading stops, so the bad
    last line is never reached (it was read, and the whole file with it, whatever its size)."""
    path = tmp_path / name
    with gzip.open(path, "wt") as handle:
        handle.write(head + "\n" * 100_000 + last)
    assert path.stat().st_size < 2_000
    monkeypatch.setenv("BIO_MRC_MAX_DATA_BYTES", "30000")
    with pytest.raises(DataFormatError, match=r"^the file is larger than 30,000 bytes decompressed "
                                              r"\(BIO_MRC_MAX_DATA_BYTES raises the limit\); read as .*\(in "):
        load_squad(path)
    with pytest.raises(DataFormatError, match="larger than 30,000 bytes decompressed"):
        list(stream_squad(path))
    monkeypatch.setenv("BIO_MRC_MAX_DATA_BYTES", "140000")  # within it: on to the bad last line
    with pytest.raises(DataFormatError) as caught:
        load_squad(path)
    assert "BIO_MRC_MAX_DATA_BYTES" not in str(caught.value)


def test_a_compressed_data_file_exactly_at_the_limit_is_read(tmp_path, monkeypatch):
    path = tmp_path / "rows.jsonl.gz"
    text = json.dumps(ROW) + "\n"
    with gzip.open(path, "wt") as handle:
        handle.write(text)
    monkeypatch.setenv("BIO_MRC_MAX_DATA_BYTES", str(len(text)))
    assert [e.id for e in load_squad(path).examples] == ["q1"]
    monkeypatch.setenv("BIO_MRC_MAX_DATA_BYTES", str(len(text) - 1))
    with pytest.raises(DataFormatError, match=f"larger than {len(text) - 1:,} bytes decompressed"):
        load_squad(path)
    plain = tmp_path / "rows.jsonl"  # a plain file is read whatever the limit: no decompression makes it larger
    plain.write_text(text + json.dumps(dict(ROW, id="q2")) + "\n")
    assert [e.id for e in load_squad(plain).examples] == ["q1", "q2"]


def test_train_on_a_compressed_data_file_over_the_limit_is_one_line_before_any_work(tmp_path, monkeypatch, capsys):
    path = tmp_path / "bomb.jsonl.gz"
    with gzip.open(path, "wt") as handle:
        handle.write(json.dumps(ROW) + "\n" + "\n" * 300_000)
    monkeypatch.setenv("BIO_MRC_MAX_DATA_BYTES", "100000")
    assert main(["train", "--train", str(path), "--output-dir", str(tmp_path / "out")]) == 2
    err = one_line_error(capsys)
    assert err.startswith("error: the file is larger than 100,000 bytes decompressed (BIO_MRC_MAX_DATA_BYTES raises the limit)")
    assert err.endswith(f"(in {path})") and not (tmp_path / "out").exists()


def _parquet(path, rows):
    import pyarrow
    import pyarrow.parquet

    pyarrow.parquet.write_table(pyarrow.Table.from_pylist(rows), path)
    return pyarrow.parquet.ParquetFile(path).metadata.row_group(0).total_byte_size


def test_a_parquet_file_its_footer_states_over_the_limit_is_refused_undecoded(tmp_path, monkeypatch):
    """300 distinct contexts of 4,000 characters: 1.2 MB as the footer states it, over a limit of 1 MB, so no value is decoded."""
    import pyarrow.parquet

    path = tmp_path / "big.parquet"
    rows = [dict(ROW, id=f"q{n}", context=f"{n:04d}" * 1_000) for n in range(300)]
    assert _parquet(path, rows) > 1_200_000
    monkeypatch.setenv("BIO_MRC_MAX_DATA_BYTES", "1000000")
    monkeypatch.setattr(pyarrow.parquet.ParquetFile, "iter_batches", lambda *a, **k: pytest.fail("decoded"))
    with pytest.raises(DataFormatError, match=r"^the file is larger than 1,000,000 bytes decoded "
                                              r"\(BIO_MRC_MAX_DATA_BYTES raises the limit\); read as parquet: .*\(in "):
        load_squad(path)


def _refused_decoded_past_a_million(path, monkeypatch):
    """``path`` (3,000,000 bytes of contexts decoded) is refused under a limit of 1,000,000 and read under 4,000,000."""
    monkeypatch.setenv("BIO_MRC_MAX_DATA_BYTES", "1000000")
    with pytest.raises(DataFormatError, match=r"^the file is larger than 1,000,000 bytes decoded "
                                              r"\(BIO_MRC_MAX_DATA_BYTES raises the limit\); read as parquet: .*\(in "):
        load_squad(path)
    monkeypatch.setenv("BIO_MRC_MAX_DATA_BYTES", "4000000")  # within it: read as before
    assert [e.id for e in load_squad(path).examples][:2] == ["q0", "q1"]


def test_a_parquet_file_of_one_value_repeated_is_refused_by_its_decoded_size(tmp_path, monkeypatch):
    """Dictionary encoding stores a context repeated 300 times once: the footer states some 13 KB, decoded it is
    300 x 10,000 = 3,000,000 bytes of text, found in the batches before datasets reads the table."""
    path = tmp_path / "bomb.parquet"
    rows = [dict(ROW, id=f"q{n}", context="Newton wrote it. " + "x" * 9_983) for n in range(300)]
    assert _parquet(path, rows) < 20_000
    _refused_decoded_past_a_million(path, monkeypatch)


def test_a_parquet_file_whose_repeated_value_reads_back_as_a_dictionary_is_refused_by_its_decoded_size(tmp_path, monkeypatch):
    """pandas' categories and Arrow's dictionary arrays are written with their Arrow type, so the batches read them back
    as a dictionary: its one context of 10,000 bytes held once a batch, not 300 times. Decoded, as datasets reads it,
    the contexts are 300 x 10,000 = 3,000,000 bytes, over a limit of 1,000,000."""
    import pyarrow
    import pyarrow.parquet

    path = tmp_path / "categories.parquet"
    rows = [dict(ROW, id=f"q{n}", context="Newton wrote it. " + "x" * 9_983) for n in range(300)]
    table = pyarrow.Table.from_pylist(rows)
    table = table.set_column(table.schema.get_field_index("context"), "context", table["context"].dictionary_encode())
    pyarrow.parquet.write_table(table, path)
    assert pyarrow.types.is_dictionary(pyarrow.parquet.ParquetFile(path).schema_arrow.field("context").type)
    _refused_decoded_past_a_million(path, monkeypatch)


def test_predict_on_a_parquet_file_over_the_limit_is_one_line_before_any_work(tmp_path, monkeypatch, capsys, model_dir):
    path = tmp_path / "bomb.parquet"
    _parquet(path, [dict(ROW, id=f"q{n}", context="Newton wrote it. " + "x" * 9_983) for n in range(300)])
    monkeypatch.setenv("BIO_MRC_MAX_DATA_BYTES", "1000000")
    out = tmp_path / "out" / "preds.json"
    assert main(["predict", "--model", str(model_dir), "--data", str(path), "--output", str(out)]) == 2
    err = one_line_error(capsys)
    assert err.startswith("error: the file is larger than 1,000,000 bytes decoded (BIO_MRC_MAX_DATA_BYTES raises the limit)")
    assert err.endswith(f"(in {path})") and not (tmp_path / "out").exists()


def test_a_context_over_the_limit_is_refused_naming_its_record(tmp_path, monkeypatch):
    row = {"id": "long-one", "context": "Newton wrote it. " * 100, "question": "Who?",
           "answers": {"text": ["Newton"], "answer_start": [0]}}
    path = tmp_path / "q.jsonl"
    path.write_text(json.dumps(row) + "\n")
    monkeypatch.setenv("BIO_MRC_MAX_CONTEXT_CHARS", "1000")
    with pytest.raises(DataFormatError, match="the context has 1,700 characters, more than the limit of 1,000.*line 1, record .long-one."):
        load_squad(path)
    monkeypatch.setenv("BIO_MRC_MAX_CONTEXT_CHARS", "2000")
    assert len(load_squad(path).examples) == 1
    monkeypatch.setenv("BIO_MRC_MAX_CONTEXT_CHARS", "lots")
    with pytest.raises(BioMrcError, match="BIO_MRC_MAX_CONTEXT_CHARS='lots': a positive whole number"):
        load_squad(path)
    monkeypatch.setenv("BIO_MRC_MAX_CONTEXT_CHARS", "2²")  # a digit to str.isdigit() that int() refuses (a ValueError traceback)
    with pytest.raises(BioMrcError, match="BIO_MRC_MAX_CONTEXT_CHARS='2²': a positive whole number"):
        load_squad(path)


def test_a_csv_header_of_a_million_columns_or_over_a_megabyte_is_refused_at_once(tmp_path, monkeypatch):
    wide = tmp_path / "wide.csv"
    wide.write_text(",".join(f"c{i}" for i in range(1_000_000)) + "\n" + ",".join("x" * 1_000_000) + "\n")
    with pytest.raises(DataFormatError, match=r"the header row is longer than 1,048,576 bytes"):
        load_squad(wide)
    monkeypatch.setenv("BIO_MRC_MAX_HEADER_BYTES", str(16 << 20))
    with pytest.raises(DataFormatError, match=r"the header row names 1,000,000 columns, more than the limit of 1,000"):
        load_squad(wide)
    monkeypatch.delenv("BIO_MRC_MAX_HEADER_BYTES")
    long_name = tmp_path / "long.csv"
    long_name.write_text("id,context,question,answers," + "n" * 1_100_000 + "\n")
    with pytest.raises(DataFormatError, match="longer than 1,048,576 bytes"):  # not "lacks columns it has"
        load_squad(long_name)


# --- a lone surrogate in a one-line JSON file ---------------------------------------------------------

def test_a_lone_surrogate_in_a_one_line_file_is_named_by_its_position(tmp_path):
    text = SAMPLE_V1.read_text()
    one_line = json.dumps(json.loads(text))
    at = one_line.index('"question": "') + len('"question": "')
    path = tmp_path / "one-line.json"
    path.write_text(one_line[:at] + "\\ud800" + one_line[at:])
    with pytest.raises(DataFormatError, match=rf"half of a UTF-16 surrogate pair, no character \(line 1, column {at + 1}"):
        list(stream_squad(path))
    raw = tmp_path / "raw.json"
    raw.write_bytes(one_line[:at].encode() + b"\xed\xa0\x80" + one_line[at:].encode())
    with pytest.raises(DataFormatError, match=rf"not UTF-8 text \(invalid continuation byte at byte {at}\)"):
        list(stream_squad(raw))


# --- extract on a long context -------------------------------------------------------------------------

@pytest.mark.slow  # over 3 s alone on 2 cores
@pytest.mark.parametrize("documents", [1, 40])
def test_extract_shows_progress_on_long_contexts(model_dir, tmp_path, capsys, documents):
    """One long context or many documents of as much text in all: bars on standard error, the answer on stdout."""
    files = [tmp_path / f"doc{i}.txt" for i in range(documents)]
    for file in files:
        file.write_text("The Normans built castles across England and Wales. " * (2_000 // documents))  # 106,000 characters in all
    assert main(["extract", "--model", str(model_dir), "--question", "Who built castles?", "--context-file",
                 *map(str, files), "--precision", "fp32"]) == 0
    captured = capsys.readouterr()
    answer = json.loads(captured.out)
    assert "inference" in captured.err and (answer["spans"] if documents == 1 else answer["answers"])


@pytest.mark.parametrize("command", [
    ["extract", "--question", "Who?", "--context", "Ada wrote it."],
    ["predict", "--data", str(SAMPLE_V1), "--output", "-"],
])
def test_a_multi_span_threshold_without_multi_span_is_refused_not_ignored(command, tmp_path, capsys):
    """--min-span-probability only judges a multi-span answer's further spans: with single answers it is refused in
    one line before the model loads (the model folder does not exist), never silently dropped."""
    command = [*command, "--model", str(tmp_path / "no-model")]
    assert main([*command, "--min-span-probability", "0.5"]) == 2
    err = one_line_error(capsys)
    assert "--min-span-probability" in err and "add --multi-span" in err
    assert main([*command, "--min-span-probability", "0.5", "--multi-span"]) == 2  # with it: on to the model, missing here
    assert "no such model folder" in one_line_error(capsys)


def test_a_multi_span_threshold_with_multi_span_data_needs_no_flag(tmp_path, capsys):
    """MultiSpanQA-layout questions are answered as span lists without --multi-span, so the threshold applies there."""
    data = tmp_path / "msqa.json"
    data.write_text(json.dumps({"data": [{"id": "m1", "question": ["Who", "?"], "context": ["Ada", "and", "Bob", "."],
                                          "label": ["B", "O", "B", "O"]}]}))
    assert main(["predict", "--model", str(tmp_path / "no-model"), "--data", str(data), "--output", "-",
                 "--min-span-probability", "0.5"]) == 2
    assert "no such model folder" in one_line_error(capsys)  # past the check: it fails at the model, which is missing


def test_a_class_weight_past_the_bound_is_refused_naming_its_place():
    from bio_mrc.errors import ConfigError
    from bio_mrc.training.train import TrainConfig

    with pytest.raises(ConfigError, match=r"bio_class_weights\[2\]: 1000000000.0 is greater than the maximum of 1000000.0"):
        TrainConfig(bio_class_weights=(1.0, 1.0, 1e9))
    assert TrainConfig(bio_class_weights=(1.0, 1.0, 1e6)).bio_class_weights == (1.0, 1.0, 1e6)


def test_a_context_file_over_the_limit_is_refused_naming_it_and_never_held_whole(tmp_path, monkeypatch, capsys):
    # extract read the whole file, then refused "the context has N characters ... (record 'input 1')": no file named,
    # and a file of gigabytes held in memory first.
    import builtins

    from bio_mrc.data import text

    reads: list[int] = []

    def counted_open(*args, **kwargs):
        handle = builtins.open(*args, **kwargs)
        read = handle.read
        handle.read = lambda size=-1: reads.append(len(chunk := read(size))) or chunk
        return handle

    monkeypatch.setattr(text, "open", counted_open, raising=False)
    monkeypatch.setenv("BIO_MRC_MAX_CONTEXT_CHARS", "1000")
    (tmp_path / "short.txt").write_text("Newton wrote it.")
    (tmp_path / "long.txt").write_text("Newton wrote it. " * 100)  # 1,700 characters
    code = main(["extract", "--model", str(tmp_path / "no-model"), "--question", "Who?",
                 "--context-file", str(tmp_path / "short.txt"), str(tmp_path / "long.txt")])
    assert code == 2 and one_line_error(capsys) == (
        f"error: the context has 1,700 characters, more than the limit of 1,000 (BIO_MRC_MAX_CONTEXT_CHARS raises it) "
        f"(in {tmp_path / 'long.txt'})")
    assert max(reads) <= 1_001  # no more than the limit (and one) held at once
