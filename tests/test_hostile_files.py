"""Hostile input files: a stream that reads less than the whole file, pipes, devices and sockets where files belong,
tables whose rows do not fit their header, values of the wrong kind; each is refused before any work, in one line
naming the file, the record and the problem."""

import gzip
import json
import os
import re
import socket
import stat

import pytest

from bio_mrc.cli import main
from bio_mrc.data.multispanqa import load_multispanqa
from bio_mrc.data.squad import load_squad, stream_squad
from bio_mrc.errors import DataFormatError, OutputError
from bio_mrc.io import check_file_target
from bio_mrc.training.config import json_object_argument

from .conftest import SAMPLE_V1, saved_model_files
from .test_bad_input import saved_model  # noqa: F401  (module-scoped fixture: an untrained saved model)

CONTEXT = "Alpha beta gamma delta."
OFFICIAL = {"version": "1.1", "data": [{"title": "Greek", "paragraphs": [{"context": CONTEXT, "qas": [
    {"id": "q1", "question": "Which letter?", "answers": [{"text": "beta", "answer_start": 6}]}]}]}]}


def written(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def error_of(path, **options):
    with pytest.raises(DataFormatError) as info:
        load_squad(path, **options)
    return str(info.value)


# --- official JSON read as a stream ----------------------------------------------------------------

@pytest.mark.parametrize("after", [json.dumps({**OFFICIAL, "data": [{**OFFICIAL["data"][0], "title": "Other"}]}), " garbage", "\x00"])
def test_anything_after_the_official_object_is_refused_when_streamed_as_when_loaded(tmp_path, after):
    path = written(tmp_path / "dev.json", json.dumps(OFFICIAL) + after)
    with pytest.raises(DataFormatError, match="not valid JSON"):
        load_squad(path)
    with pytest.raises(DataFormatError, match="not valid JSON") as info:
        list(stream_squad(path))
    assert str(path) in str(info.value)


def test_predict_refuses_a_second_object_before_loading_the_model(tmp_path, capsys):
    data = written(tmp_path / "dev.json", json.dumps(OFFICIAL) * 2)
    assert main(["predict", "--model", str(tmp_path / "no-model"), "--data", str(data), "--output", str(tmp_path / "p.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: not valid JSON") and str(data) in err and len(err.strip().splitlines()) == 1


# --- pipes, devices and sockets ----------------------------------------------------------------------

@pytest.fixture
def unix_socket(tmp_path):
    path = tmp_path / "s.sock"
    with socket.socket(socket.AF_UNIX) as bound:
        bound.bind(str(path))
        yield path


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "pipe.json"
    os.mkfifo(path)
    return path


def test_a_named_pipe_given_as_data_is_named_as_one_not_as_missing(fifo):
    assert "expected a file or a folder, found a named pipe (FIFO)" in error_of(fifo)


@pytest.mark.parametrize("argv", [
    ["evaluate", "--data", str(SAMPLE_V1), "--predictions", "{socket}"],
    ["compare", "--config", "{socket}"],
])
def test_a_socket_where_a_json_file_belongs_is_one_line(unix_socket, tmp_path, capsys, argv):
    argv = [arg.replace("{socket}", str(unix_socket)) for arg in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err == f"error: expected a JSON file, found a socket (in {unix_socket})\n"


def test_a_socket_as_a_context_file_is_one_line(saved_model, unix_socket, capsys):  # noqa: F811
    assert main(["extract", "--model", str(saved_model), "--question", "What?", "--context-file", str(unix_socket)]) == 2
    assert capsys.readouterr().err == f"error: expected a text file, found a socket (in {unix_socket})\n"


def test_a_pipe_is_never_replaced_by_an_output(saved_model, tmp_path, capsys):  # noqa: F811
    pipe = tmp_path / "p.nbest.json"
    os.mkfifo(pipe)
    with pytest.raises(OutputError, match="named pipe"):
        check_file_target(pipe)
    assert main(["predict", "--model", str(saved_model), "--data", str(SAMPLE_V1), "--limit", "1",
                 "--output", str(tmp_path / "p.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: this is a named pipe (FIFO), not a file") and f"(in {pipe})" in err
    assert stat.S_ISFIFO(os.lstat(pipe).st_mode) and not (tmp_path / "p.json").exists()


def test_a_pipe_given_as_the_html_page_is_kept(saved_model, fifo, capsys):  # noqa: F811
    assert main(["extract", "--model", str(saved_model), "--question", "What?", "--context", CONTEXT, "--html", str(fifo)]) == 2
    assert "named pipe (FIFO), not a file" in capsys.readouterr().err and stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_training_args_from_a_socket_or_with_a_repeated_key_are_refused(unix_socket):
    import argparse

    with pytest.raises(argparse.ArgumentTypeError, match="is a socket, not a JSON file"):
        json_object_argument(str(unix_socket))
    with pytest.raises(argparse.ArgumentTypeError, match="appears twice"):
        json_object_argument('{"max_grad_norm": 1, "max_grad_norm": 2}')
    with pytest.raises(argparse.ArgumentTypeError, match="NaN is not a JSON number"):
        json_object_argument('{"max_grad_norm": NaN}')


# --- CSV and TSV rows that do not fit their header -----------------------------------------------

@pytest.mark.parametrize("name, text, words", [
    ("shifted.csv", "id,context,question\nc1,Alpha beta,What?,extra\n", r"the row has 4 fields, the header row names 3.*line 2\)"),
    ("shifted.tsv", "id\tcontext\tquestion\nc1\tAlpha\tWhat?\nc2\tBeta\tWho?\tx\n", r"the row has 4 fields.*line 3\)"),
    ("short.csv", "id,context,question,answers\nc1,Alpha beta\n", r"the row has 2 fields, the header row names 4"),
    ("open.csv", 'id,context,question\nc1,Alpha,What?\nc2,"Beta,Who?\nc3,Gamma,Why?\n', r"a quoted field is never closed.*line 3\)"),
    ("twice.csv", "id,context,question,context\nc1,Alpha,What?,Beta\n", r"the header row names 'context' twice"),
    ("blank.csv", "id,,context,question\nc1,x,Alpha,What?\n", r"column 2 of the header row has no name"),
])
def test_a_table_row_that_does_not_fit_the_header_is_refused_naming_its_line(tmp_path, name, text, words):
    with pytest.raises(DataFormatError, match=words):
        load_squad(written(tmp_path / name, text))


@pytest.mark.parametrize("name, raw, line", [
    ("mac.csv", b"id,context,question\rc1,Alpha beta,What?\rc2,Gamma,Who?\r", 1),  # old Mac line endings: one line
    ("mac.tsv", b"id\tcontext\tquestion\rc1\tAlpha\tWhat?\r", 1),
    ("inner.csv", b"id,context,question\nc1,Alpha\rbeta,What?\n", 2),  # a bare carriage return inside a row
])
def test_a_bare_carriage_return_is_one_line_naming_it_not_a_traceback(tmp_path, capsys, name, raw, line):
    path = tmp_path / name
    path.write_bytes(raw)
    with pytest.raises(DataFormatError, match=rf"a carriage return \(\\r\) outside quotes.*{name}, line {line}\)"):
        load_squad(path)
    assert main(["evaluate", "--data", str(path), "--predictions", str(tmp_path / "p.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: a carriage return") and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("name, joined", [("two.csv", ","), ("two.tsv", "\t"), ("two.csv.gz", ",")])
def test_a_byte_order_mark_starting_a_later_row_is_refused_naming_its_line(tmp_path, name, joined):
    """Two files joined (cat a.csv b.csv) put the second's byte-order mark at the start of a row: it was read as part
    of that row's first cell, an id '\ufeffq2' no other file names."""
    import csv
    import io

    text = io.StringIO()
    writer = csv.writer(text, delimiter=joined, lineterminator="\n")
    writer.writerows([["id", "question", "context", "answers"], ["q1", "Who?", "Ada wrote.", '{"text": ["Ada"], "answer_start": [0]}'],
                      ["\ufeffq2", "Who?", "Bob wrote.", '{"text": ["Bob"], "answer_start": [0]}']])
    raw = ("\ufeff" + text.getvalue()).encode()
    path = tmp_path / name
    path.write_bytes(gzip.compress(raw) if name.endswith(".gz") else raw)
    with pytest.raises(DataFormatError, match=rf"^the row's first cell starts with a byte-order mark \(U\+FEFF\).*"
                                              rf"\(in {re.escape(str(path))}, line 3\)$"):
        load_squad(path)


def test_a_byte_order_mark_inside_a_quoted_cell_of_a_later_line_still_reads(tmp_path):
    path = written(tmp_path / "inner.csv", 'id,question,context,answers\nq1,Who?,"Ada\n\ufeffwrote.",'
                                           '"{""text"": [""Ada""], ""answer_start"": [0]}"\n')
    assert [example.context for example in load_squad(path).examples] == ["Ada\n\ufeffwrote."]


def test_a_quoted_newline_and_a_gzip_table_still_read(tmp_path):
    text = 'id,context,question,answers\nc1,"Alpha\nbeta",What?,"{""text"": [""beta""], ""answer_start"": [6]}"\n'
    path = tmp_path / "dev.csv.gz"
    path.write_bytes(gzip.compress(text.encode()))
    assert [ex.answer_texts() for ex in load_squad(path).examples] == [[["beta"]]]


def test_a_damaged_gzip_table_is_one_line_naming_it(tmp_path):
    """A broken deflate stream raises zlib.error, no OSError: the header row's reader let it out as a traceback."""
    path = tmp_path / "q.csv.gz"
    raw = bytearray(gzip.compress(("id,context,question,answers\n" + "q,Alpha beta.,Which?,\n" * 2_000).encode()))
    raw[30:40] = b"\xff" * 10
    path.write_bytes(bytes(raw))
    assert error_of(path).startswith("could not read the header row: Error -3 while decompressing data")
    assert f"(in {path})" in error_of(path)


def test_a_csv_line_not_in_utf8_is_named_in_one_line(tmp_path, capsys):
    path = tmp_path / "latin1.csv"
    path.write_bytes("id,context,question\nc1,café,What?\n".encode("latin-1"))
    assert main(["evaluate", "--data", str(path), "--predictions", str(tmp_path / "p.json")]) == 2
    err = capsys.readouterr().err
    assert "not UTF-8 text (invalid continuation byte at line 2, byte 6)" in err and len(err.strip().splitlines()) == 1


def test_tables_without_rows_have_no_questions(tmp_path, capsys):
    import pyarrow as pa
    import pyarrow.parquet as pq

    header_only = written(tmp_path / "empty.csv", "id,context,question\n")
    assert load_squad(header_only).examples == []
    empty = tmp_path / "empty.parquet"
    pq.write_table(pa.table({"context": pa.array([], pa.string()), "question": pa.array([], pa.string())}), empty)
    assert load_squad(empty).examples == []
    assert main(["evaluate", "--data", str(empty), "--predictions", str(tmp_path / "p.json")]) == 2
    assert capsys.readouterr().err == f"error: no questions to use in {empty}\n"


# --- values of the wrong kind ------------------------------------------------------------------------

def test_a_title_that_is_no_string_is_refused_never_kept_or_dropped(tmp_path):
    raw = {**OFFICIAL, "data": [{**OFFICIAL["data"][0], "title": ["Greek"]}]}
    assert '\'title\' must be a string, got ["Greek"]' in error_of(written(tmp_path / "dev.json", json.dumps(raw)))
    row = {"id": "r1", "title": 7, "context": CONTEXT, "question": "Which?", "answers": {"text": ["beta"], "answer_start": [6]}}
    message = error_of(written(tmp_path / "dev.jsonl", json.dumps(row) + "\n"))
    assert "'title' must be a string, got 7" in message and "line 1" in message and "'r1'" in message
    untitled = {k: v for k, v in row.items() if k != "title"}
    assert load_squad(written(tmp_path / "ok.jsonl", json.dumps({**untitled, "title": None}) + "\n")).examples[0].title == ""


def test_an_answer_of_only_whitespace_is_refused(tmp_path):
    qas = [{"id": "q1", "question": "Which?", "answers": [{"text": " ", "answer_start": 5}]}]
    raw = {**OFFICIAL, "data": [{"title": "Greek", "paragraphs": [{"context": CONTEXT, "qas": qas}]}]}
    assert 'answer text " " holds no readable text' in error_of(written(tmp_path / "dev.json", json.dumps(raw)))


def multispanqa(tmp_path, **record):
    raw = {"id": "m1", "question": ["Which", "?"], "context": ["Alpha", "beta", "gamma"], "label": ["O", "B", "O"], **record}
    return written(tmp_path / "msqa.json", json.dumps({"data": [raw]}))


def test_multispanqa_tags_on_empty_words_are_refused_not_read_as_an_empty_answer(tmp_path):
    path = multispanqa(tmp_path, context=["", "beta"], label=["B", "O"])
    with pytest.raises(DataFormatError, match=r"tagged words at characters 0-0 hold no readable text") as info:
        load_multispanqa(path)
    assert info.value.record == "m1" and info.value.source == str(path)


def test_a_multispanqa_context_over_the_limit_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("BIO_MRC_MAX_CONTEXT_CHARS", "10")
    with pytest.raises(DataFormatError, match=r"the context has 16 characters, more than the limit of 10"):
        load_squad(multispanqa(tmp_path))


def test_a_context_file_keeps_its_line_endings_so_offsets_count_its_own_characters(tmp_path):
    from bio_mrc.data.text import read_text_file

    for ending in ("\r\n", "\r", "\n"):
        path = tmp_path / "doc.txt"
        path.write_bytes(f"Isaac{ending}Newton wrote.".encode())
        assert read_text_file(path) == f"Isaac{ending}Newton wrote."
    path.write_bytes("\ufeffIsaac\r\nNewton".encode())
    assert read_text_file(path) == "Isaac\r\nNewton"  # the byte-order mark is no character of the text


def test_an_undecodable_byte_is_named_as_such(tmp_path):
    from bio_mrc.data.text import check_text

    with pytest.raises(DataFormatError, match="undecodable byte"):
        check_text(b"\xff".decode("utf-8", "surrogateescape"), "question")


def test_extract_refuses_a_question_of_no_text_before_loading_the_model(tmp_path, capsys):
    model = saved_model_files(tmp_path / "model")  # past the checks before torch loads; never loaded: the question is refused first
    assert main(["extract", "--model", str(model), "--question", "\u200b", "--context", "Newton wrote."]) != 0
    assert "the question holds no readable text" in capsys.readouterr().err


def test_the_library_refuses_a_device_as_a_prediction_output(trained_dir, tmp_path):
    from bio_mrc.inference.loading import TrainedModel
    from bio_mrc.inference.streaming import StreamPlan, predict_to_files

    fifo = tmp_path / "preds.json"
    os.mkfifo(fifo)
    with pytest.raises(OutputError, match="named pipe"):
        predict_to_files(TrainedModel.load(trained_dir), [], StreamPlan(("span",)), fifo)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_a_second_predict_into_the_answers_another_is_writing_is_refused_and_leaves_them(trained_dir, tmp_path):
    from bio_mrc.inference.loading import TrainedModel
    from bio_mrc.inference.streaming import StreamPlan, predict_to_files
    from bio_mrc.io import sole_writer

    output, stream = tmp_path / "p.json", tmp_path / "p.answers.jsonl"
    stream.write_text('{"id": "first"}\n', encoding="utf-8")
    trained = TrainedModel.load(trained_dir)
    with sole_writer(stream, "answers"):  # another run holds it (flock: another open file, as another process's)
        with pytest.raises(OutputError, match="another process is writing answers into this file now"):
            predict_to_files(trained, [], StreamPlan(("span",)), output)
        assert stream.read_text(encoding="utf-8") == '{"id": "first"}\n' and not output.exists()
    predict_to_files(trained, [], StreamPlan(("span",)), output)  # once it ends, the file is free again
    assert stream.read_text(encoding="utf-8") == "" and json.loads(output.read_text(encoding="utf-8")) == {}


@pytest.mark.parametrize("resume", [[], ["--resume"]])
def test_a_second_predict_command_is_refused_before_it_reads_its_data_or_loads_its_model(saved_model, tmp_path, monkeypatch,  # noqa: F811
                                                                                        capsys, resume):
    """Another process writing the answers (a real one, holding the stream as predict does): the second is refused at
    once, its data unread and its model unloaded (it loaded the model first, then was refused), the answers as they were."""
    pytest.importorskip("fcntl")
    import subprocess
    import sys

    import bio_mrc.cli.answer_commands as answer_commands
    from bio_mrc.inference.loading import TrainedModel

    output, stream = tmp_path / "p.json", tmp_path / "p.answers.jsonl"
    stream.write_text('{"id": "first"}\n', encoding="utf-8")
    monkeypatch.setattr(TrainedModel, "load", classmethod(lambda cls, *args, **kwargs: pytest.fail("the model was loaded")))
    monkeypatch.setattr(answer_commands, "prediction_questions", lambda *args, **kwargs: pytest.fail("the data was read"))
    holder = ("import sys; from bio_mrc.io import sole_writer\n"
              f"with sole_writer({str(stream)!r}, 'answers'):\n    print('held', flush=True); sys.stdin.read()")
    other = subprocess.Popen([sys.executable, "-c", holder], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert other.stdout.readline() == "held\n"
        assert main(["predict", "--model", str(saved_model), "--data", str(SAMPLE_V1), "--output", str(output), *resume]) == 2
    finally:
        other.communicate("")
    assert capsys.readouterr().err.strip() == ("error: another process is writing answers into this file now; wait for it "
                                               f"to end or choose another output (in {stream})")
    assert stream.read_text(encoding="utf-8") == '{"id": "first"}\n' and sorted(os.listdir(tmp_path)) == ["p.answers.jsonl"]


def test_a_predict_refused_after_its_claim_leaves_no_answers_file_of_its_making(saved_model, tmp_path, capsys):  # noqa: F811
    """The answers file is claimed before the data is read: a refusal of the data then leaves neither it nor its folder."""
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n", encoding="utf-8")
    assert main(["predict", "--model", str(saved_model), "--data", str(bad), "--output", str(tmp_path / "new" / "p.json")]) == 2
    assert sorted(os.listdir(tmp_path)) == ["bad.jsonl"]


def test_train_warns_when_its_held_out_questions_are_training_questions(tiny_encoder_dir, tmp_path, capsys, monkeypatch):
    from bio_mrc.training import train

    def no_training(*_args, **_kwargs):  # the warning comes before any training
        raise SystemExit(0)

    monkeypatch.setattr(train, "train_model", no_training)
    with pytest.raises(SystemExit):
        main(["train", "--train", str(SAMPLE_V1), "--eval", str(SAMPLE_V1), "--output-dir", str(tmp_path / "m"),
              "--encoder", str(tiny_encoder_dir), "--training-args", '{"eval_strategy": "epoch"}'])
    examples = load_squad(SAMPLE_V1).examples
    assert (f"warning: the --eval questions share {len(examples)} questions and {len({ex.context for ex in examples})} "
            "contexts (under any id or spacing) with the training questions") in capsys.readouterr().err


@pytest.mark.parametrize("suffix", [".json", ".jsonl", ".csv", ".txt"])
def test_a_utf16_file_is_named_as_such_with_how_to_convert_it(tmp_path, suffix):
    from bio_mrc.data.text import read_text_file

    text = {".json": '{"version": "1.1", "data": []}', ".jsonl": '{"question": "Who?", "context": "Newton."}',
            ".csv": "question,context\nWho?,Newton.\n", ".txt": "Newton wrote."}[suffix]
    path = tmp_path / f"f{suffix}"
    path.write_text(text, encoding="utf-16")  # with its byte-order mark, as Windows editors save "Unicode" text
    with pytest.raises(DataFormatError, match="it looks like UTF-16: convert it first, e.g. iconv -f UTF-16 -t UTF-8"):
        read_text_file(path) if suffix == ".txt" else load_squad(path)


@pytest.mark.parametrize("suffix", [".json", ".jsonl", ".csv", ".txt"])
def test_a_gzip_file_without_gz_in_its_name_is_named_as_such(tmp_path, suffix):
    from bio_mrc.data.text import read_text_file

    path = tmp_path / f"f{suffix}"
    path.write_bytes(gzip.compress(SAMPLE_V1.read_bytes()))
    if suffix == ".txt":
        with pytest.raises(DataFormatError, match=r"not UTF-8 text \(invalid start byte .*byte 1\); it is gzip-compressed: "
                                                  r"decompress it first \(gunzip\), or, for JSON Lines, CSV or TSV, name it with .gz"):
            read_text_file(path)
        return
    with pytest.raises(DataFormatError) as refused:  # a data file: named as gzip, not as the format its name suggests
        load_squad(path)
    assert str(refused.value) == ("it is gzip-compressed: decompress it first (gunzip), or, for JSON Lines, CSV or TSV, name "
                                  f"it with .gz at the end (.jsonl.gz), which is read decompressed (in {path})")


def test_predict_names_a_gzip_data_file_without_gz_in_its_name_before_any_work(tmp_path, capsys):
    path = tmp_path / "x.json"  # it read: "not UTF-8 text (...); it is gzip-compressed: ...; read as squad: official SQuAD JSON ..."
    path.write_bytes(gzip.compress(SAMPLE_V1.read_bytes()))
    assert main(["predict", "--model", str(tmp_path / "model"), "--data", str(path), "--output", str(tmp_path / "p.json")]) == 2
    assert capsys.readouterr().err == ("error: it is gzip-compressed: decompress it first (gunzip), or, for JSON Lines, CSV "
                                       f"or TSV, name it with .gz at the end (.jsonl.gz), which is read decompressed (in {path})\n")


WIDE = [("utf-16-le", "UTF-16LE", 1), ("utf-16-be", "UTF-16BE", 0), ("utf-32-le", "UTF-32LE", 1), ("utf-32-be", "UTF-32BE", 0)]
WIDE_TEXTS = {".json": json.dumps(OFFICIAL), ".jsonl": '{"question": "Who?", "context": "Newton."}\n',
              ".csv": "question,context\nWho?,Newton.\n", ".txt": "Newton wrote."}


@pytest.mark.parametrize("suffix", list(WIDE_TEXTS))
@pytest.mark.parametrize("encoding, name, at", WIDE)
def test_a_utf16_or_utf32_file_without_a_byte_order_mark_is_named_as_such(tmp_path, suffix, encoding, name, at):
    """Its ASCII characters are UTF-8 bytes with NULs between: JSON was `Expecting property name ... (line 1, column 2)`,
    a table's columns were named with NULs, and a context file was answered as text of NULs between letters."""
    from bio_mrc.data.text import read_text_file

    path = tmp_path / f"f{suffix}"
    path.write_bytes(WIDE_TEXTS[suffix].encode(encoding))
    says = (f"not UTF-8 text (a NUL byte at byte {at}); it looks like {name} without a byte-order mark: convert it "
            f"first, e.g. iconv -f {name} -t UTF-8")
    reads = [read_text_file] if suffix == ".txt" else [load_squad, lambda p: list(stream_squad(p))]
    for read in reads:
        with pytest.raises(DataFormatError, match=re.escape(says)):
            read(path)


def test_a_predictions_file_without_a_byte_order_mark_is_named_as_utf16(tmp_path, capsys):
    data = written(tmp_path / "d.json", json.dumps(OFFICIAL))
    preds = tmp_path / "p.json"
    preds.write_bytes(json.dumps({"q1": "beta"}).encode("utf-16-le"))
    assert main(["evaluate", "--data", str(data), "--predictions", str(preds)]) == 2
    assert capsys.readouterr().err == (f"error: not UTF-8 text (a NUL byte at byte 1); it looks like UTF-16LE without a "
                                       f"byte-order mark: convert it first, e.g. iconv -f UTF-16LE -t UTF-8 (in {preds})\n")


def _zip(data: bytes) -> bytes:
    import io
    import zipfile

    packed = io.BytesIO()
    with zipfile.ZipFile(packed, "w") as archive:
        archive.writestr("dev.json", data)
    return packed.getvalue()


COMPRESSED = [
    (lambda data: __import__("lzma").compress(data), "it is xz-compressed: decompress it first (unxz)"),
    (lambda data: __import__("bz2").compress(data), "it is bzip2-compressed: decompress it first (bunzip2)"),
    (lambda data: b"\x28\xb5\x2f\xfd\x24\x00\x81\x9c" + data, "it is zstd-compressed: decompress it first (unzstd)"),
    (_zip, "it is a zip archive: extract its file first (unzip)"),
]


@pytest.mark.parametrize("suffix", [".json", ".jsonl", ".txt"])
@pytest.mark.parametrize("compress, hint", COMPRESSED, ids=["xz", "bzip2", "zstd", "zip"])
def test_a_file_compressed_by_another_tool_is_named_as_such(tmp_path, suffix, compress, hint):
    """xz's and zstd's bytes were called Latin-1 (`iconv -f latin1`), bzip2's (`BZh`) and a zip archive's (`PK`) plain
    text no format claims."""
    from bio_mrc.data.text import read_text_file

    path = tmp_path / f"dev{suffix}"
    path.write_bytes(compress(SAMPLE_V1.read_bytes()))
    if suffix == ".txt":
        with pytest.raises(DataFormatError, match=rf"^not UTF-8 text \(invalid .*byte \d+\); {re.escape(hint)}"):
            read_text_file(path)
        return
    for read in (load_squad, lambda p: list(stream_squad(p))):
        with pytest.raises(DataFormatError) as refused:
            read(path)
        assert str(refused.value) == f"{hint}{COMPRESSED_TAIL} (in {path})"


# What a data file compressed by another tool than gzip is told: read as no format (it was "read as squad: official
# SQuAD JSON …", for a .jsonl.bz2 file too).
COMPRESSED_TAIL = "; data files are read uncompressed, or gzip-compressed under a .gz name (.jsonl.gz, .csv.gz, .tsv.gz)"


@pytest.mark.parametrize("name, compress, hint", [("x.json.bz2", *COMPRESSED[1]), ("x.json.xz", *COMPRESSED[0]),
                                                  ("x.csv.xz", *COMPRESSED[0]), ("x.jsonl.bz2", *COMPRESSED[1])])
def test_predict_and_train_name_a_bzip2_or_xz_data_file_and_what_to_do(tmp_path, capsys, name, compress, hint):
    path = tmp_path / name
    path.write_bytes(compress(b'{"question": "Who?", "context": "Ada."}\n'))
    for argv in (["predict", "--model", str(tmp_path / "model"), "--data", str(path), "--output", str(tmp_path / "p.json")],
                 ["train", "--train", str(path), "--output-dir", str(tmp_path / "out")]):
        assert main(argv) == 2
        assert capsys.readouterr().err == f"error: {hint.removeprefix('; ')}{COMPRESSED_TAIL} (in {path})\n"


def test_official_json_on_many_lines_gzipped_as_json_gz_names_gunzip(tmp_path):
    """A .gz file is read as JSON Lines; an official file on many lines said `Expecting property name enclosed in
    double quotes (line 1, column 1)` alone (the file on one line was named as official JSON already)."""
    path = tmp_path / "dev.json.gz"
    path.write_bytes(gzip.compress(json.dumps(OFFICIAL, indent=2).encode()))
    with pytest.raises(DataFormatError, match=r"^not valid JSON: Expecting property name enclosed in double quotes \(line 1, "
                                              r"column 1\); a .gz file is read as JSON Lines, one question a line, and official "
                                              r"SQuAD JSON is read uncompressed: decompress it first \(gunzip\); read as jsonl"):
        load_squad(path)


@pytest.mark.parametrize("argv", [["export", "--model", "m", "--output", ""], ["convert", "--model", "m", "--output", ""]])
def test_an_empty_output_path_is_one_line(argv, capsys):
    assert main(argv) == 2
    assert capsys.readouterr().err.strip() == "error: an empty path names no file or folder; give one (in '')"


def test_a_leading_tilde_is_the_home_folder_in_every_path_option(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "d.json").write_bytes(SAMPLE_V1.read_bytes())
    (tmp_path / "p.json").write_text('{"n1": ""}')  # one question answered, with nothing
    monkeypatch.chdir(tmp_path.parent)
    # --data=~/x is not expanded by the shell (nor is a quoted "~/x"): it was "file not found" beside an existing file
    assert main(["evaluate", "--data=~/d.json", "--predictions", "~/p.json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"exact_match": 0.0, "f1": 0.0}  # one empty answer, the rest missing: all wrong
    assert not (tmp_path.parent / "~").exists()


def test_a_lone_surrogate_on_a_json_lines_line_is_named_by_that_line_alone(tmp_path):
    """The third line's escape is at line 3 of the file, column 38 (its backslash follows the 37 characters of
    `{"context": "Newton.", "question": "x`): one position, never the line's own "line 1" beside the file's line."""
    ok = json.dumps({"question": "Who?", "context": "Newton."})
    bad = '{"context": "Newton.", "question": "x\\ud800"}'
    path = written(tmp_path / "dev.jsonl", f"{ok}\n{ok}\n{bad}\n")
    with pytest.raises(DataFormatError) as caught:
        load_squad(path)
    assert caught.value.problem.startswith("\\ud800 is half of a UTF-16 surrogate pair, no character (line 3, column 38)")
    assert "line 1" not in str(caught.value)


# --- paths the system will not open ----------------------------------------------------------------

def test_a_loop_of_links_given_as_an_input_is_one_line_naming_it(tmp_path, capsys):
    loop = tmp_path / "loop.json"
    loop.symlink_to(tmp_path / "other.json")
    (tmp_path / "other.json").symlink_to(loop)
    for argv in (["evaluate", "--data", str(SAMPLE_V1), "--predictions", str(loop)],
                 ["extract", "--model", "m", "--question", "Which?", "--context-file", str(loop)]):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert err == f"error: cannot open it: Too many levels of symbolic links (in {loop})", err


def test_an_input_without_read_permission_is_one_line_naming_it(tmp_path, monkeypatch, capsys):
    import bio_mrc.data.text

    def refuse(path, *args, **kwargs):  # what open answers a user without read permission (root reads anyway)
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(bio_mrc.data.text, "open", refuse, raising=False)
    document = written(tmp_path / "doc.txt", CONTEXT)
    assert main(["extract", "--model", "m", "--question", "Which?", "--context-file", str(document)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"error: cannot open it: Permission denied; check its permissions (in {document})", err


# --- encodings and line endings ----------------------------------------------------------------------

ROWS = [{"id": "q1", "context": CONTEXT, "question": "Which letter?", "answers": {"text": ["beta"], "answer_start": [6]}},
        {"id": "q2", "context": CONTEXT, "question": "Which other?", "answers": {"text": ["gamma"], "answer_start": [11]}}]


@pytest.mark.parametrize("name, lines", [("dev.jsonl", [json.dumps(row) for row in ROWS]),
                                         ("mrqa.jsonl", [json.dumps({"header": {"dataset": "SQuAD"}}),
                                                         json.dumps({"context": CONTEXT, "qas": []})])])
def test_json_lines_ended_by_lone_carriage_returns_name_the_line_endings(tmp_path, name, lines):
    """Old Mac line endings (\\r alone) read as one line of several values: `Extra data (line 1, column 60)` said no
    more, where a CSV file of such lines is named as what it is."""
    path = tmp_path / name
    path.write_bytes("\r".join(lines).encode() + b"\r")
    with pytest.raises(DataFormatError, match=r"^not valid JSON: Extra data \(line 1, column \d+\); a carriage return \(\\r\) "
                                              r"ends a line \(old Mac line endings\?\), which JSON Lines does not: end the lines "
                                              r"with \\n or \\r\\n, e.g. tr '\\r' '\\n' < IN > OUT; read as"):
        load_squad(path)


def test_a_gzipped_drop_file_named_json_gz_names_gunzip(tmp_path):
    """A .gz file is read as JSON Lines; DROP's object on its first line was read as a question, `empty or missing
    context (in FILE, line 1)`, as if the file were JSON Lines with a bad record."""
    drop = {"p1": {"passage": CONTEXT, "qa_pairs": [{"query_id": "d1", "question": "Which?", "answer": {"spans": ["beta"]}}]}}
    path = tmp_path / "drop_dataset_dev.json.gz"
    path.write_bytes(gzip.compress(json.dumps(drop).encode()))
    with pytest.raises(DataFormatError, match=r"^line 1 is a JSON object with no question in the SQuAD columns \(context, "
                                              r"question\); a .gz file is read as JSON Lines, one question a line, and JSON "
                                              r"of other layouts is read uncompressed: decompress it first \(gunzip\); read as jsonl"):
        load_squad(path)


WINDOWS_TEXT = "Alpha \u2019beta\u2019 gamma \u2013 delta."  # curly quotes and a dash: bytes 0x92 and 0x96 in Windows-1252


@pytest.mark.parametrize("name, text", [("doc.txt", WINDOWS_TEXT), ("dev.json", json.dumps(OFFICIAL, ensure_ascii=False)),
                                        ("dev.jsonl", json.dumps(ROWS[0], ensure_ascii=False)),
                                        ("dev.csv", f'context,question\n"{WINDOWS_TEXT}",Which?\n')])
def test_text_saved_in_windows_1252_is_named_with_the_encoding_that_reads_it_back(tmp_path, name, text):
    """The conversion a refusal names gives the text back: Latin-1 read Windows' curly quotes and dashes as invisible
    control characters (U+0092), so a file converted as told held them in place of its quotes."""
    from bio_mrc.data.text import read_text_file

    text = text.replace("Alpha beta", "Alpha \u2019beta\u2019")
    path = tmp_path / name
    path.write_bytes(text.encode("cp1252"))
    with pytest.raises(DataFormatError) as caught:
        (read_text_file if name.endswith(".txt") else load_squad)(path)
    codec = re.search(r"iconv -f (\S+) -t utf-8", str(caught.value))
    assert codec and path.read_bytes().decode(codec[1]) == text, str(caught.value)


@pytest.mark.parametrize("read", [load_squad, lambda path: list(stream_squad(path))], ids=["whole", "streamed"])
def test_a_json_array_of_questions_is_named_with_the_layout_that_reads_it(tmp_path, read):
    """pandas' to_json(orient="records") writes a JSON array of rows; `expected an object with a 'data' list` did not
    say what the file held instead, nor which layout reads its questions."""
    path = tmp_path / "dev.json"
    path.write_text(json.dumps(ROWS), encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"^expected an object with a 'data' list \(official SQuAD layout\), found a "
                                              r"JSON array: SQuAD's articles are read inside \{\"data\": \[\.\.\.\]\}, and questions in the "
                                              r"SQuAD columns as JSON Lines, one object "
                                              r"a line \(\.jsonl; jq -c '\.\[\]' FILE writes them\); read as squad"):
        read(path)


@pytest.mark.parametrize("name, header, delimiter", [("dev.csv", "context;question", ";"), ("dev.tsv", "context,question", ","),
                                                     ("dev.csv", "context|question", "|")])
def test_a_table_separated_by_another_delimiter_names_it(tmp_path, name, header, delimiter):
    """A CSV saved with `;` (as spreadsheets write it where `,` is the decimal mark) read as one column, which the
    refusal showed without saying why."""
    path = written(tmp_path / name, f"{header}\nAlpha beta{delimiter}Which?\n")
    expected = "','" if name.endswith(".csv") else "a tab"
    with pytest.raises(DataFormatError, match=rf"^the header row reads as one column, \"{re.escape(header)}\": its names are "
                                              rf"separated by '{re.escape(delimiter)}', and a {name[-3:]} file's by {expected} "
                                              r"\(\.csv comma-separated, \.tsv and \.tab tab-separated\): write it with that "
                                              r"delimiter; read as"):
        load_squad(path)


@pytest.mark.parametrize("content", [b"", b"context,question\nAlpha beta,Which?\n", gzip.compress(b"PAR1")],
                         ids=["empty", "csv", "gzip"])
def test_a_file_named_parquet_is_read_as_parquet_whatever_it_holds(tmp_path, content):
    """A .parquet name without Parquet's bytes was read as SQuAD JSON: `the file is empty: it holds no JSON value` or
    `not JSON, and its name has no suffix of another format`, of a name that has one."""
    path = tmp_path / "dev.parquet"
    path.write_bytes(content)
    with pytest.raises(DataFormatError, match=r"^could not read it as parquet: ArrowInvalid: .*; read as parquet: "):
        load_squad(path)


@pytest.mark.parametrize("read", [load_squad, lambda path: list(stream_squad(path))], ids=["whole", "streamed"])
def test_a_repeated_key_in_official_json_names_its_line_and_column(tmp_path, read):
    """JSON Lines named the line of a repeated key; official JSON, a file of one object holding every question, named
    the key alone, and a file of thousands of questions has it thousands of times."""
    raw = json.loads(json.dumps(OFFICIAL))
    raw["data"][0]["paragraphs"].append({"context": "Key: \"id\": a { [ text.", "qas": [{"id": "q2", "question": "Which \\\"?"}]})
    text = json.dumps(raw, indent=1).replace('"id": "q2"', '"id": "q2", "id": "q3"')
    path = written(tmp_path / "dev.json", text)
    line = next(number for number, row in enumerate(text.split("\n"), 1) if '"q3"' in row)
    column = text.split("\n")[line - 1].index('"id": "q3"') + 1
    with pytest.raises(DataFormatError, match=rf'^the key "id" appears twice in one object \(JSON keeps only the last, losing '
                                              rf'the other\) \(line {line}, column {column}\); read as squad'):
        read(path)


def test_a_repeated_key_is_placed_alike_however_the_text_is_cut():
    """The streamed reader scans the file a piece at a time: a string, an escape or a key cut between pieces is placed
    as in the whole text, at the second mention's opening quote."""
    from bio_mrc.data.json_reader import repeated_key_index

    text = '{"a": {"k\\"": "x\\\\", "t": ["{", "]:"]}, "k\\"": 1, "b": [{"k": 1}, {"k": 2}], "k\\u0022": 2}'
    at = repeated_key_index([text])
    assert at == text.rindex('"k\\u0022"')
    assert [repeated_key_index([text[i : i + size] for i in range(0, len(text), size)]) for size in range(1, len(text) + 1)] == [at] * len(text)
    assert repeated_key_index([text.replace('"k\\u0022"', '"m"')]) is None


def test_a_second_predict_to_files_is_refused_before_it_says_or_reads_anything(trained_dir, tmp_path):
    """From Python the answers were claimed once the call had read its questions' count and said its warnings: the
    second call said them (a limit past its questions) and then was refused. It is refused first, as predict is."""
    import warnings

    from bio_mrc.inference.loading import TrainedModel
    from bio_mrc.inference.streaming import StreamPlan, predict_to_files
    from bio_mrc.io import sole_writer

    output, stream = tmp_path / "p.json", tmp_path / "p.answers.jsonl"
    trained = TrainedModel.load(trained_dir)
    with sole_writer(stream, "answers"), warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        with pytest.raises(OutputError) as refused:
            predict_to_files(trained, [], StreamPlan(("span",)), output, limit=5)
    assert str(refused.value) == ("another process is writing answers into this file now; wait for it to end or choose "
                                  f"another output (in {stream})")
    assert [str(warning.message) for warning in said] == [] and sorted(os.listdir(tmp_path)) == ["p.answers.jsonl"]
