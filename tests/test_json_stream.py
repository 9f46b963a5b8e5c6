"""The streamed official-JSON reader refuses what the whole-file reader refuses, and reads the same questions."""

from __future__ import annotations

import io
import itertools
import json
import re

import pytest

from bio_mrc.data.json_reader import lone_surrogate_escape
from bio_mrc.data.json_stream import SquadJsonStream, _SurrogateCheckedReader
from bio_mrc.data.squad import load_squad, stream_squad
from bio_mrc.errors import DataFormatError

from .conftest import SAMPLE_V1

ARTICLE = ('{"title": "t", "paragraphs": [{"context": "Ada wrote it.", "qas": [{"id": "q", "question": "Who?", '
           '"answers": [{"text": "Ada", "answer_start": 0}]}]}]}')
HOSTILE = {  # file text -> what the error says, both readers
    '{"data": [' + ARTICLE.replace('"answer_start": 0', '"answer_start": NaN') + "]}": "JSON",  # NaN is no JSON number
    '{"data": [' + ARTICLE.replace('"title": "t"', '"title": "t", "title": "u"') + "]}": "appears twice",
    '{"data": [' + ARTICLE + '], "data": []}': "appears twice",
    '{"data": [' + ARTICLE.replace('"title": "t"', '"title": "\\ud800t"') + "]}": "half of a UTF-16 surrogate pair",
    '{"data": [' + ARTICLE.replace("Ada wrote", "Ada \\udc00wrote") + "]}": "half of a UTF-16 surrogate pair",
    '{"data": [' + ARTICLE[:60]: "ends early",
    '[' + ARTICLE + "]": "expected an object with a 'data' list",
    '{"version": "1.1"}': "expected an object with a 'data' list",
    '{"data": {}}': "expected an object with a 'data' list",
}


@pytest.mark.parametrize("text", list(HOSTILE))
def test_every_hostile_file_is_refused_by_both_readers_naming_the_file(tmp_path, text):
    path = tmp_path / "hostile.json"
    path.write_text(text, encoding="utf-8")
    for read in (load_squad, lambda p: list(stream_squad(p))):
        with pytest.raises(DataFormatError, match=HOSTILE[text]) as caught:
            read(path)
        assert str(path) in str(caught.value)


@pytest.mark.parametrize("text", ["", "  \n\t\n", "\ufeff", "\ufeff \n"])
def test_an_empty_file_is_named_empty_by_both_readers(tmp_path, text):
    """The streamed reader (predict's) called it `the JSON ends early (a truncated file?): parse error: premature EOF`."""
    path = tmp_path / "empty.json"
    path.write_text(text, encoding="utf-8")
    for read in (load_squad, lambda p: list(stream_squad(p))):
        with pytest.raises(DataFormatError, match=r"^the file is empty: it holds no JSON value; read as squad"):
            read(path)


@pytest.mark.parametrize("name", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_are_named_alike_by_both_readers(tmp_path, name):
    """The streamed reader called them `not valid JSON: lexical error: invalid char in json text.` (`malformed number`
    for -Infinity)."""
    path = tmp_path / "special.json"
    path.write_text('{"data": [\n' + ARTICLE.replace('"answer_start": 0', f'"answer_start": {name}') + "]}", encoding="utf-8")
    column = ARTICLE.index('"answer_start": 0') + len('"answer_start": ') + 1
    says = (f"{name} is not a JSON number (Python writes it, the JSON standard and other readers refuse it) (line 2, "
            f"column {column}); read as squad")
    for read in (load_squad, lambda p: list(stream_squad(p))):
        with pytest.raises(DataFormatError, match=f"^{re.escape(says)}"):
            read(path)


def test_bytes_that_are_not_utf8_are_refused(tmp_path):
    path = tmp_path / "latin1.json"
    path.write_bytes(('{"data": [' + ARTICLE + "]}").replace("Ada wrote", "Adé wrote").encode("latin-1"))
    with pytest.raises(DataFormatError, match="not UTF-8"):
        list(stream_squad(path))


@pytest.mark.parametrize("encoding, says", [
    ("utf-16", "not UTF-8 text (invalid start byte at byte 0); it looks like UTF-16: convert it first, e.g. iconv -f UTF-16 -t UTF-8"),
    ("utf-32", "not UTF-8 text (invalid start byte at byte 0); it looks like UTF-32: convert it first, e.g. iconv -f UTF-32 -t UTF-8"),
    ("latin-1", "not UTF-8 text (invalid continuation byte at byte 55)"),  # the é of "Adé", 55 bytes in
])
def test_a_file_in_another_encoding_is_named_alike_by_both_readers(tmp_path, encoding, says):
    """Windows editors save "Unicode" as UTF-16: the streamed reader (predict's) called it invalid JSON."""
    path = tmp_path / f"{encoding}.json"
    path.write_bytes(('{"data": [' + ARTICLE.replace("Ada wrote", "Adé wrote") + "]}").encode(encoding))
    for read in (load_squad, lambda p: list(stream_squad(p))):
        with pytest.raises(DataFormatError) as caught:
            read(path)
        assert caught.value.problem.startswith(says) and caught.value.source == str(path)


@pytest.mark.parametrize("prefix", [b"", b"\xef\xbb\xbf"])
def test_the_streamed_questions_are_load_squads(tmp_path, prefix):
    path = tmp_path / "sample.json"
    path.write_bytes(prefix + SAMPLE_V1.read_bytes())
    questions = stream_squad(path)
    assert list(questions) == load_squad(path).examples and questions.version == "1.1"
    assert list(stream_squad(path, limit=3)) == load_squad(path, limit=3).examples


@pytest.mark.parametrize("number", [str(2**64), str(-2**63 - 1), "1" + "0" * 30])
@pytest.mark.parametrize("where", [0, 1])
def test_an_integer_past_64_bits_is_read_as_json_reads_it(tmp_path, number, where):
    """yajl refused such a number as "integer overflow", so predict refused a file train read; in the first article
    or after one already given."""
    articles = [ARTICLE.replace('"id": "q"', f'"id": "q{i}"') for i in range(2)]
    articles[where] = articles[where].replace('"title": "t"', f'"title": "t", "hash": {number}')
    path = tmp_path / "big.json"
    path.write_text('{"data": [' + ", ".join(articles) + "]}", encoding="utf-8")
    questions = list(stream_squad(path))
    assert [q.id for q in questions] == ["q0", "q1"] and questions[1].answer_texts() == [["Ada"]]
    assert questions == load_squad(path).examples



@pytest.mark.parametrize("number", ["1e400", "-1.5E+309", "1" + "0" * 400 + ".0"])
def test_a_number_too_large_for_a_float_is_refused_alike_by_both_readers(tmp_path, number):
    """In a field nothing reads: the whole-file reader read it as infinity, yajl refused it as a "numeric (floating
    point) overflow"; both refuse it in the same words, naming the file. A float that is merely small (1e-400, read
    as 0.0) and an integer of any size are read as json reads them."""
    path = tmp_path / "huge.json"
    path.write_text('{"data": [' + ARTICLE.replace('"title": "t"', f'"title": "t", "weight": {number}') + "]}",
                    encoding="utf-8")
    for read in (load_squad, lambda p: list(stream_squad(p))):
        with pytest.raises(DataFormatError) as caught:
            read(path)
        assert caught.value.problem.startswith("a number too large for a float (it would be read as infinity)")
        assert caught.value.source == str(path)
    path.write_text('{"data": [' + ARTICLE.replace('"title": "t"', '"title": "t", "weight": 1e-400') + "]}",
                    encoding="utf-8")
    assert list(stream_squad(path)) == load_squad(path).examples


@pytest.mark.parametrize("text", [
    '{"version": "1.1",\r\n "data": [\n  {"title": "\u00e9\u20ac", "paragraphs": [}]}]}',  # \r\n, 2 characters in 5 bytes
    '\ufeff{"data": [\n' + ARTICLE + '\n ' + ARTICLE + ']}',  # a byte-order mark; a missing comma
    '{"data": [' + ARTICLE.replace('"title": "t"', f'"title": "t", "hash": {2**64}') + ', }]}',  # the Python parser's
])
def test_a_syntax_error_is_located_alike_by_both_readers(tmp_path, text):
    """yajl's messages name no place: the streaming reader names the line and column the whole-file reader names."""
    path = tmp_path / "broken.json"
    path.write_text(text, encoding="utf-8")
    located = []
    for read in (load_squad, lambda p: list(stream_squad(p))):
        with pytest.raises(DataFormatError) as caught:
            read(path)
        located.append(re.search(r"\(line \d+, column \d+\)", caught.value.problem))
    assert located[0] is not None and located[1] is not None
    assert located[1].group() == located[0].group()


def test_a_file_cut_short_is_located_at_its_end_by_the_streaming_reader(tmp_path):
    path = tmp_path / "cut.json"
    path.write_text('{"data": [\n' + ARTICLE + ',\n' + ARTICLE[:70], encoding="utf-8")
    with pytest.raises(DataFormatError) as caught:
        list(stream_squad(path))
    assert caught.value.problem.startswith("the JSON ends early (a truncated file?): parse error: premature EOF "
                                           "(line 3, column 71);")


def test_a_control_character_after_an_integer_past_64_bits_is_one_line(tmp_path):
    """After such an integer the file is read by ijson's Python parser, whose strings json decodes: a raw control
    character in one raised json's own error, a traceback, where yajl's reading refuses it in one line."""
    articles = [ARTICLE.replace('"title": "t"', f'"title": "t", "hash": {2**64}'), ARTICLE.replace("Ada wrote", "Ada\x01 wrote")]
    path = tmp_path / "control.json"
    path.write_text('{"data": [' + ",\n".join(articles) + "]}", encoding="utf-8")
    with pytest.raises(DataFormatError) as caught:
        list(stream_squad(path))
    assert caught.value.problem.partition(";")[0] == "not valid JSON: Invalid control character at (line 2, column 47)"
    assert caught.value.source == str(path)


@pytest.mark.parametrize(("article", "column"), [
    (ARTICLE.replace("Ada wrote", "Ada\twrote"), 47),  # a raw tab: {"title": "t", "paragraphs": [{"context": "Ada is 46
    (ARTICLE.replace("Ada wrote", "Ada\x01wrote"), 47),
    (ARTICLE.replace('"title": "t"', '"title": "t\\"\\\\"').replace("Ada wrote", "Ada\x1fwrote"), 51),  # \" and \\ passed
])
def test_a_raw_control_character_in_a_string_is_located_alike_by_both_readers(tmp_path, article, column):
    """yajl says `invalid character inside string.` and no place; the streaming reader names the place the
    whole-file reader names, in its words."""
    path = tmp_path / "control.json"
    path.write_text('{"version": "1.1", "data": [\n' + article + "]}", encoding="utf-8")
    for read in (load_squad, lambda p: list(stream_squad(p))):
        with pytest.raises(DataFormatError) as caught:
            read(path)
        assert caught.value.problem.partition(";")[0] == f"not valid JSON: Invalid control character at (line 2, column {column})"
        assert caught.value.source == str(path)


@pytest.mark.parametrize("where", [
    '"version": {}, "data": [' + ARTICLE + "]",  # a key no reader uses: 1 level around it
    '"data": [' + ARTICLE.replace('"title": "t"', '"title": "t", "extra": {}') + "]",  # a key of an article: 3
    '"data": [' + ARTICLE.replace('"context"', '"extra": {}, "context"') + "]",  # of a paragraph, read on its own: 5
    '"data": [' + ARTICLE.replace('"id": "q"', '"id": "q", "extra": {}') + "]",  # of a question: 7
])
def test_nesting_past_256_levels_is_refused_alike_by_both_readers(tmp_path, where):
    """100,000 nested arrays under a key no reader uses stopped Python's parser, yet yajl read them; both readers now
    take 256 levels, the top object's included, and refuse 257."""
    before = where[: where.index("{}")]
    outer = 1 + sum(map(before.count, "[{")) - sum(map(before.count, "]}"))
    path = tmp_path / "deep.json"
    for inner, refused in ((256 - outer, False), (257 - outer, True)):
        path.write_text("{" + where.replace("{}", "[" * inner + "]" * inner, 1) + "}", encoding="utf-8")
        for read in (load_squad, lambda p: list(stream_squad(p))):
            if refused:
                with pytest.raises(DataFormatError) as caught:
                    read(path)
                assert caught.value.problem.partition(";")[0] == "arrays or objects nested deeper than 256 levels"
                assert caught.value.source == str(path)
            else:
                assert read(path)


PIECES = ["a", "ud800", "\\\\", "\\ud83d", "\\ude00", "\\ud800", '"', "\\u0041"]


@pytest.mark.parametrize("size", [1, 2, 5, 7, 13])
def test_lone_surrogates_are_found_wherever_the_reads_cut_the_text(size):
    """Every sequence of up to 4 pieces, read ``size`` bytes at a time: refused exactly when the whole text has one."""
    for pieces in itertools.chain.from_iterable(itertools.product(PIECES, repeat=n) for n in range(1, 5)):
        text = "".join(pieces)
        reader = _SurrogateCheckedReader(io.BytesIO(text.encode()), "t")
        try:
            while reader.read(size):
                pass
            refused = False
        except DataFormatError:
            refused = True
        assert refused == (lone_surrogate_escape(text) is not None), text


def test_a_valid_pair_is_one_character():
    assert json.loads('"\\ud83d\\ude00"') == "😀" and lone_surrogate_escape('"\\ud83d\\ude00"') is None


ESCAPED = ["a", "\\\\", "\\ud83d", "\\ude00", "\\ud800", "ud800", "\\u0041", "\\uDC00"]


def _holds_a_lone_surrogate(value: str) -> bool:
    try:
        value.encode("utf-8")
        return False
    except UnicodeEncodeError:
        return True


def test_lone_surrogates_are_exactly_those_json_reads_as_lone():
    """Every string of up to 4 pieces: refused exactly when Python's JSON reader gives a character of no pair
    (an escaped backslash before the letters ``ud800`` is no high half: the ``\\udc00`` after it is lone)."""
    for pieces in itertools.chain.from_iterable(itertools.product(ESCAPED, repeat=n) for n in range(1, 5)):
        text = '"' + "".join(pieces) + '"'
        assert (lone_surrogate_escape(text) is not None) == _holds_a_lone_surrogate(json.loads(text)), text
    assert lone_surrogate_escape('"\\\\ud800\\udc00"').start() == 8


class _CountedReads(io.BytesIO):
    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.reads = 0

    def read(self, size: int | None = -1) -> bytes:
        self.reads += 1
        return super().read(size)


@pytest.mark.parametrize("character", ["é", '"', "\\"])
def test_a_long_escaped_string_is_read_in_reads_that_double(character):
    # 500,000 characters json.dump writes as 3 MB of escapes (\u00e9, \", \\): yajl reads a string a read cuts again
    # from its start, so 46 reads of ijson's 64 KiB took time of the length squared (75 s for a 5,000,000-character
    # context); reads inside a string double: 64 KiB (where it begins), 64 KiB, 128 KiB, ... 2 MiB, then the end of the file.
    import ijson

    document = {"data": [{"title": "t", "paragraphs": [{"context": character * 500_000, "qas": []}]}], "version": "1.1"}
    raw = _CountedReads(json.dumps(document).encode())
    events = list(ijson.basic_parse(_SurrogateCheckedReader(raw, "f.json"), use_float=True))
    assert ("string", character * 500_000) in events
    assert raw.reads <= 10


def _one_article_file(path, paragraphs: int, title_first: bool = True):
    """One article of ``paragraphs`` paragraphs, four questions each (every question in the file in one article)."""
    context = " ".join(f"word{i}" for i in range(60))
    items = [{"context": context, "qas": [{"id": f"p{p}q{q}", "question": f"Which word {q}?",
                                           "answers": [{"text": f"word{q}", "answer_start": context.index(f"word{q}")}]}
                                          for q in range(4)]} for p in range(paragraphs)]
    article = {"title": "One", "paragraphs": items} if title_first else {"paragraphs": items, "title": "One"}
    path.write_text(json.dumps({"version": "1.1", "data": [article]}), encoding="utf-8")
    return path


def _streamed_peak(path) -> tuple[int, int]:
    """The items the official-JSON stream yields for ``path``, each dropped once read, and the most memory Python held
    meanwhile (tracemalloc's peak, in bytes)."""
    import tracemalloc

    tracemalloc.start()
    try:
        count = sum(1 for _ in SquadJsonStream(path))
        return count, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_file_of_one_article_streams_a_paragraph_at_a_time(tmp_path):
    """SQuAD's layout (a title, then the paragraphs): eight times the paragraphs of one article hold about the same
    memory while streamed, where the article was built whole (its peak eight times as large)."""
    small, small_peak = _streamed_peak(_one_article_file(tmp_path / "small.json", 100))
    large, large_peak = _streamed_peak(_one_article_file(tmp_path / "large.json", 800))
    assert large_peak < 2 * small_peak, (small_peak, large_peak)
    assert (small, large) == (100, 800)  # a paragraph at a time


@pytest.mark.parametrize("title_first", [True, False])
def test_an_article_read_a_paragraph_at_a_time_gives_what_the_whole_file_reader_gives(tmp_path, title_first):
    path = _one_article_file(tmp_path / "one.json", 3, title_first)
    streamed, whole = list(stream_squad(path)), load_squad(path).examples
    assert [(e.id, e.title, e.context, e.answers) for e in streamed] == [(e.id, e.title, e.context, e.answers) for e in whole]
    assert [e.id for e in streamed][:5] == ["p0q0", "p0q1", "p0q2", "p0q3", "p1q0"]


BAD_PARAGRAPHS = {  # articles -> the error both readers give (paragraphs streamed after a title, whole without one)
    '{"title": "A", "paragraphs": [{"context": "c", "qas": []}, {"context": "c"}]}': "paragraph 1 has no 'qas' list",
    '{"title": "A", "paragraphs": {}}': "article without a 'paragraphs' list",
    '{"title": "A", "paragraphs": [], "paragraphs": []}': "appears twice",
    '{"title": "A", "paragraphs": []}, {"paragraphs": [7]}': r"paragraph 0 has no 'qas' list.*record 'article #2'",
    '{"title": "A", "paragraphs": [{"context": "c", "qas": []}]}, {"title": "", "paragraphs": [{}]}': r"record 'article #2'",
}


@pytest.mark.parametrize("articles", list(BAD_PARAGRAPHS))
def test_a_bad_paragraph_is_named_alike_by_both_readers(tmp_path, articles):
    path = tmp_path / "bad.json"
    path.write_text('{"data": [' + articles + "]}", encoding="utf-8")
    for read in (load_squad, lambda p: list(stream_squad(p))):
        with pytest.raises(DataFormatError, match=BAD_PARAGRAPHS[articles]):
            read(path)
