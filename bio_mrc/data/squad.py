"""SQuAD v1.1 / v2.0 into the package's data model: the official JSON layout and the Hugging Face
columns (JSON Lines, datasets), through one per-question validation."""

from __future__ import annotations

import bisect
import contextlib
import hashlib
import re
import unicodedata
import warnings
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Sequence

from ..answer_text import cut_character, mentions
from ..arguments import check_flag, checked_limit, warn_limit_past
from ..errors import InputNote, argument
from ..json_syntax import json_value
from ..plurals import counted
from ..types import Example
from .json_reader import DataFormatError
from .formats import detect_format
from .json_stream import FOUND_ARRAY, NOT_SQUAD_OBJECT, Paragraph
from .sources import answer_like_key, foreign_layout, near_miss
from .mrqa import MISPLACED_SPANS
from .one_answer import read_as_parts
from .text import carries_text, check_context_length, check_text


@dataclass(repr=False)
class SquadFile:
    """The examples of one file, in file order, its declared version ("1.1" or "2.0") and the format it was read as
    (a name in :data:`bio_mrc.data.formats.FORMATS`).

    ``skipped`` holds the error of every question left out under ``skip_invalid``
    and ``fixed_offsets`` the ids whose ``answer_start`` was relocated under ``fix_offsets``, or found where an answer
    has none (``found_offsets`` lists those too).
    """

    examples: list[Example]
    version: str
    source: str = ""
    format: str = ""
    skipped: list[DataFormatError] = field(default_factory=list)
    fixed_offsets: list[str] = field(default_factory=list)
    found_offsets: list[str] = field(default_factory=list)

    def __repr__(self) -> str:
        """The file, its number of questions and how they were read, not the questions (a file may hold millions of
        characters of context): ``SquadFile('dev.json', 10570 questions, version='1.1', format='squad')``. It never
        raises, whatever the fields hold (one built by hand, half made in a debugger): a field of no length is shown
        as its ``repr``, one missing or whose ``repr`` raises as a stand-in (``<no examples>``)."""
        left = "".join(f", {name}={shown}" for name in ("skipped", "fixed_offsets", "found_offsets")
                       if (shown := _shown_size(self, name)) not in ("0", ""))
        return (f"SquadFile({_shown_field(self, 'source')}, {_shown_size(self, 'examples', 'question')}, "
                f"version={_shown_field(self, 'version')}, format={_shown_field(self, 'format')}{left})")

    def gold_texts(self) -> dict[str, list[str]]:
        """``{id: [answer text of each annotator]}``, the gold the official metrics score against."""
        return gold_texts(self.examples)

    @property
    def is_v2(self) -> bool:
        """Whether the questions are SQuAD 2.0's (some may have no answer)."""
        return self.version == "2.0"


_MISSING = object()  # a field a half-made object lacks


def _shown_field(owner: object, name: str) -> str:
    """The field ``name`` of ``owner`` as a repr shows it: its ``repr``; ``<no NAME>`` where it is missing, and its
    type's name where its ``repr`` raises."""
    value = getattr(owner, name, _MISSING)
    if value is _MISSING:
        return f"<no {name}>"
    try:
        return repr(value)
    except Exception:  # noqa: BLE001 (a repr never raises, whatever the value's own repr does)
        return f"<{type(value).__name__}>"


def _shown_size(owner: object, name: str, noun: str | None = None) -> str:
    """The field ``name`` of ``owner`` by its length (``3``; with ``noun``, ``3 questions``); one of no length as
    :func:`_shown_field` shows it; a missing one as ``<no NAME>`` with ``noun``, else ``""``."""
    value = getattr(owner, name, _MISSING)
    if value is _MISSING:
        return f"<no {name}>" if noun else ""
    try:
        size = len(value)
    except Exception:  # noqa: BLE001 (None, a number, or a length that raises)
        return _shown_field(owner, name)
    return counted(size, noun) if noun else str(size)


def gold_texts(examples: Iterable[Example]) -> dict[str, list[str]]:
    """``{id: [texts]}`` with one text per alternative (multi-span alternatives are joined by a space)."""
    return {ex.id: [" ".join(texts) for texts in ex.answer_texts()] for ex in examples}


def load_squad(
    data: Any, limit: int | None = None, fix_offsets: bool = False, skip_invalid: bool = False, split: str | None = None,
    data_format: str | None = None, needs_gold: str | None = None,
) -> SquadFile:
    """Read questions from any form users have them in, validating every record the same way.

    ``data`` is an official SQuAD JSON file; a JSON Lines file (``.jsonl``, ``.jsonl.gz``, or by content) with
    the Hugging Face SQuAD columns, one question per line; a CSV, TSV or Parquet file with those columns (read
    through ``datasets``; a CSV's ``answers`` as JSON text); a ``datasets.Dataset`` or ``DatasetDict`` with those
    columns, or a folder one was saved to with ``save_to_disk``; a pandas DataFrame or a list of dicts with them;
    an MRQA shared-task file (``.jsonl`` or ``.jsonl.gz``); a MultiSpanQA, DROP, Quoref or MASH-QA JSON file (each
    question's spans the parts of one answer); or a hub dataset id.
    ``split`` (or a ``:SPLIT`` suffix on a string) picks a DatasetDict's or a hub dataset's split; a
    DatasetDict with one split needs none. The form is recognised by :func:`bio_mrc.data.formats.detect_format`;
    ``data_format`` (a name of :data:`~bio_mrc.data.formats.FORMATS`) refuses any other.

    Each annotator's answer becomes one alternative with one span. A bad record
    (no id, an empty context or question, an ``answer_start`` that does not point
    at its ``text``, a text absent from the context, ``is_impossible`` that
    contradicts the answers, a repeated id) raises :class:`DataFormatError` naming
    the file and the record (and the line of a JSON Lines file, the row of a table),
    the format it was read as and what that format expects: nothing is dropped silently.

    ``fix_offsets`` relocates an ``answer_start`` that misses its text to the
    occurrence of the text nearest to it, a whole word before a piece of a longer one (the ids are listed in
    ``fixed_offsets``), and gives an answer without one (no key, null, an empty string) the place of its text where
    the text occurs exactly once in the context (listed in ``fixed_offsets`` and ``found_offsets``); a text that occurs
    several times or never is refused, with its count.
    ``skip_invalid`` leaves bad questions out instead of raising, and lists their
    errors in ``skipped`` (a bad MRQA span, a table's ``answers`` text that is not JSON and a bad MultiSpanQA record
    too); a malformed file, line or article still raises. ``limit`` keeps the first ``limit`` questions in file
    order (a fixed, reproducible slice); a ``limit`` past them takes them all, which a
    :class:`~bio_mrc.errors.LimitPastDataWarning` says (``limit=9: FILE has 8 questions; all 8 are used``).

    Questions to predict need neither answers nor ids: a question with no ``answers`` (and no ``is_impossible``)
    is *unlabelled* (``Example.answers is None``: neither answerable nor unanswerable, so such a file never
    becomes SQuAD 2.0), and one with no ``id`` (or an empty one) gets :func:`generated_id`. ``needs_gold``
    (what needs the answers, e.g. ``"training"``) refuses an unlabelled question instead, naming it.
    """
    check_reading(limit, fix_offsets, skip_invalid)
    result = read_squad(data, limit, fix_offsets, skip_invalid, split, data_format, needs_gold)
    warn_limit_past(limit, len(result.examples), result.source, len(result.skipped))
    return result


def read_squad(
    data: Any, limit: int | None = None, fix_offsets: bool = False, skip_invalid: bool = False, split: str | None = None,
    data_format: str | None = None, needs_gold: str | None = None,
) -> SquadFile:
    """What :func:`load_squad` reads, a ``limit`` past the questions unsaid: for a caller that says it in its own words."""
    detected = detect_format(data, split, data_format)
    with detected.errors_described(), contextlib.ExitStack() as reading:
        records = detected.read()
        reading.callback(records.close)  # a question refused part-way: the file is let go with the call
        if records.examples is not None:
            result = _whole_layout(records.examples, SquadFile([], "1.1", records.name), limit, skip_invalid, needs_gold)
        elif records.rows is not None:
            result = parse_rows(records.rows, records.name, limit, fix_offsets, skip_invalid, needs_gold)
        else:
            result = parse_squad(records.squad, records.name, limit, fix_offsets, skip_invalid, needs_gold)
    if records.parts:
        result.examples = list(read_as_parts(result.examples, result.source))
    result.format = detected.format
    return result


def parse_squad(
    raw: Any, source: str = "", limit: int | None = None, fix_offsets: bool = False, skip_invalid: bool = False,
    needs_gold: str | None = None,
) -> SquadFile:
    """Validate an already-parsed SQuAD object (see :func:`load_squad`)."""
    if not isinstance(raw, dict) or not isinstance(raw.get("data"), list):
        raise DataFormatError(NOT_SQUAD_OBJECT + (FOUND_ARRAY if isinstance(raw, list) else ""), source=source)
    questions = _article_questions(raw["data"], source)
    result = SquadFile([], str(raw.get("version", "1.1")).lstrip("v"), source)
    return _collect(questions, result, limit, fix_offsets, skip_invalid, needs_gold)


def parse_rows(
    rows: Iterable[tuple[str, Any]], source: str = "", limit: int | None = None, fix_offsets: bool = False,
    skip_invalid: bool = False, needs_gold: str | None = None,
) -> SquadFile:
    """Validate ``(where, row)`` records in the Hugging Face SQuAD columns (see :func:`load_squad`).

    ``where`` (``line 3``, ``row 2``) joins the source in errors, so a record without an id is still found.
    """
    questions = (_row_question(row, f"{source}, {where}") for where, row in rows)
    return _collect(questions, SquadFile([], "1.1", source), limit, fix_offsets, skip_invalid, needs_gold)


def _row_question(row: Any, source: str) -> tuple[Any, Any, str, str]:
    """A row as ``(qa, context, title, source)``: in the Hugging Face layout the row is its own qa."""
    fields = row if isinstance(row, dict) else {}
    title = fields.get("title")
    if hint := foreign_layout(fields):
        row = DataFormatError(hint, None, source)
    elif near := near_miss(fields):  # {"Question": ...} would read as a question missing, {"ID": ...} as none given
        row = DataFormatError(f"the record has the key {json_value(near[0])}, which is not {json_value(near[1])} as "
                              f"spelt, so its value would be ignored; rename it {json_value(near[1])}", None, source)
    return row, fields.get("context"), "" if title is None else title, source


def _collect(
    questions: Iterable[tuple[Any, Any, str, str]], result: SquadFile, limit: int | None, fix_offsets: bool, skip_invalid: bool,
    needs_gold: str | None = None,
) -> SquadFile:
    """Every question that :func:`validated` keeps, into ``result``."""
    result.examples.extend(validated(questions, result, limit, fix_offsets, skip_invalid, needs_gold))
    return result


def validated(
    questions: Iterable[tuple[Any, Any, str, str]], result: SquadFile, limit: int | None, fix_offsets: bool, skip_invalid: bool,
    needs_gold: str | None = None,
) -> Iterator[Example]:
    """The one pass every form goes through: parse each question (numbered from 1 in source order, for
    :func:`generated_id`), refuse a repeated id, raise or skip (into ``result.skipped``), stop at ``limit``;
    ``result.version`` becomes 2.0 at the first unanswerable question (never at an unlabelled one)."""
    checked_limit(limit)
    seen: set[str] = set()
    checked: Any = None  # the context last read whole: a paragraph's questions share it (one string)
    places, noted = _AnswerPlaces(), False
    for position, (qa, context, title, source, *place) in enumerate(questions, 1):
        try:
            example = _parse_question(qa, context, title, source, result if fix_offsets else None, position,
                                      context_checked=checked is not None and context is checked, places=places,
                                      place=place[0] if place else None)
            checked = context
            if example.id in seen:
                raise DataFormatError("duplicate question id", example.id, source)
            if not example.is_labelled:
                noted = _check_unlabelled(qa, example.id, source, needs_gold, noted)
        except DataFormatError as error:
            if not skip_invalid:
                raise
            result.skipped.append(error)
            continue
        seen.add(example.id)
        if example.is_labelled and (qa.get("is_impossible") is not None or not example.is_answerable):
            result.version = "2.0"  # only v2.0 data has unanswerable questions (or the field), whatever a header says
        yield example
        if limit is not None and len(seen) >= limit:
            return


class AnswersElsewhereNote(InputNote):
    """Questions read without answers that hold a key named as answers are (``answer``, ``answer_text``, ``label``),
    which the reader does not read: said in one note a file, naming the first such question and its key."""


# Where the reader reads a question's answers: a key of another name is not read.
_ANSWERS_READ = "a question's answers are read from 'answers' ({text: [...], answer_start: [...]}, or a list of {text, answer_start})"


def _check_unlabelled(qa: dict[str, Any], qid: str, source: str, needs_gold: str | None, noted: bool) -> bool:
    """A question without answers refused where ``needs_gold`` says what needs them; one holding its answers under a
    key the reader does not read names the key, in the refusal or (once a file: ``noted``) in an
    :class:`AnswersElsewhereNote`. Whether the file's note is said, now or before."""
    key = answer_like_key(qa)
    unread = f"the key {json_value(key)} is not read: {_ANSWERS_READ}" if key is not None else None
    if needs_gold:
        raise DataFormatError(f"question without answers: {unread + '; ' if unread else ''}{needs_gold} needs labelled "
                              "questions ('answers', or 'is_impossible': true for an unanswerable one)", qid, source)
    if unread and not noted:
        warnings.warn(AnswersElsewhereNote(f"{unread}, so a question without them is read as one to predict, with no gold "
                                           f"(in {source}, record {qid!r}, and any like it)"), stacklevel=4)
    return noted or unread is not None


@dataclass
class SquadStream:
    """SQuAD questions read lazily, in file order: each iteration reads the source again, holding one question
    (one paragraph of an official JSON file; an article with no title before its paragraphs, whole) at a time, and
    validates every question as :func:`load_squad` does.

    After an iteration, ``version``, ``skipped``, ``fixed_offsets`` and ``found_offsets`` describe what it read (see
    :class:`SquadFile`).
    The first iteration to read every question says a ``limit`` past them, as :func:`load_squad` does; ``limit_noted``
    (True once said) keeps the later ones, or every one where a caller says it in its own words, from saying it again.
    """

    data: Any
    limit: int | None = None
    fix_offsets: bool = False
    skip_invalid: bool = False
    split: str | None = None
    data_format: str | None = None
    needs_gold: str | None = None
    version: str = "1.1"
    source: str = ""
    format: str = ""
    skipped: list[DataFormatError] = field(default_factory=list)
    fixed_offsets: list[str] = field(default_factory=list)
    found_offsets: list[str] = field(default_factory=list)
    limit_noted: bool = False

    def __iter__(self) -> Iterator[Example]:
        count = 0
        for example in self._read():
            count += 1
            yield example
        if not self.limit_noted:  # every question read: a limit past them is known now
            self.limit_noted = True
            warn_limit_past(self.limit, count, self.source, len(self.skipped))

    def _read(self) -> Iterator[Example]:
        detected = detect_format(self.data, self.split, self.data_format)
        with detected.errors_described(), contextlib.ExitStack() as reading:
            records = detected.read(stream=True)
            reading.callback(records.close)  # a question refused part-way, or a stream closed: the file is let go now
            result = SquadFile([], "1.1", records.name)
            self.source, self.format = records.name, detected.format
            self.skipped, self.fixed_offsets, self.found_offsets = result.skipped, result.fixed_offsets, result.found_offsets
            if records.examples is not None:  # a layout validated whole (MultiSpanQA)
                yield from _whole_layout(records.examples, result, self.limit, self.skip_invalid, self.needs_gold).examples
                self.version = result.version
                return
            if records.rows is not None:
                questions = (_row_question(row, f"{records.name}, {where}") for where, row in records.rows)
            else:
                questions = _article_questions(records.squad, records.name)
            reading.callback(questions.close)  # the stream's parser and file, which only this generator holds
            examples = validated(questions, result, self.limit, self.fix_offsets, self.skip_invalid, self.needs_gold)
            yield from (read_as_parts(examples, records.name) if records.parts else examples)
        header = str(getattr(records.squad, "version", None) or "1.1").lstrip("v")
        self.version = "2.0" if result.version == "2.0" else header

    @property
    def is_v2(self) -> bool:
        """Whether the questions are SQuAD 2.0's (some may have no answer)."""
        return self.version == "2.0"


def stream_squad(
    data: Any, limit: int | None = None, fix_offsets: bool = False, skip_invalid: bool = False, split: str | None = None,
    data_format: str | None = None, needs_gold: str | None = None,
) -> SquadStream:
    """The questions :func:`load_squad` reads, as a :class:`SquadStream`: memory stays flat in their number
    (official JSON is read one paragraph at a time where an article's ``paragraphs`` follow its ``title``, else one
    article at a time; JSON Lines one line at a time), and ``limit`` stops reading the source at the ``limit``-th question."""
    check_reading(limit, fix_offsets, skip_invalid)
    return SquadStream(data, limit, fix_offsets, skip_invalid, split, data_format, needs_gold)


def check_reading(limit: Any, fix_offsets: Any, skip_invalid: Any) -> None:
    """:func:`load_squad`'s and :func:`stream_squad`'s options, refused before any reading: a string such as ``"no"``
    is true, and would leave bad questions out unsaid."""
    checked_limit(limit)
    check_flag(fix_offsets, "fix_offsets")
    check_flag(skip_invalid, "skip_invalid")


def _article_questions(articles: Iterable[Any], source: str) -> Iterator[tuple[Any, Any, str, str, str]]:
    """``(qa, context, title, source, place)`` of every question of ``articles``: whole articles, or the paragraphs (:class:`Paragraph`)
    of an article the stream reads one at a time (each names its article's place)."""
    number = 0
    for article in articles:
        if isinstance(article, Paragraph):
            number = article.article
            title = "" if article.title is None else article.title
            questions = _paragraph_questions(article.value, article.index, title, _article_name(title, number), source)
        else:
            number += 1
            questions = _questions_of(article, number, source)
        for qa, context, title, place in questions:
            yield qa, context, title, source, place


def _version_of(examples: Sequence[Example]) -> str:
    """The version of questions a layout validated whole (MultiSpanQA): 2.0 when one has no answer (no span tagged),
    as in every other form, so that SQuAD's scorer, which needs an answer for each v1.1 question, scores it."""
    return "2.0" if any(example.is_labelled and not example.is_answerable for example in examples) else "1.1"


def _whole_layout(
    questions: list[Example | DataFormatError], result: SquadFile, limit: int | None, skip_invalid: bool, needs_gold: str | None,
) -> SquadFile:
    """The questions of a layout validated whole (MultiSpanQA), a bad record's error in its place, into ``result`` as
    :func:`validated` takes them: each error raised, or skipped under ``skip_invalid``; where ``needs_gold`` says what
    needs the answers, a question without them (a record with no ``label``) is one; the first ``limit`` kept."""
    checked_limit(limit)
    for question in questions:
        if limit is not None and len(result.examples) >= limit:
            break
        if isinstance(question, Example) and needs_gold and not question.is_labelled:
            question = DataFormatError(f"question without answers: {needs_gold} needs labelled questions (a 'label' of B/I/O "
                                       "per context word)", question.id, result.source)
        if isinstance(question, DataFormatError):
            if not skip_invalid:
                raise question
            result.skipped.append(question)
            continue
        result.examples.append(question)
    result.version = _version_of(result.examples)
    return result


def _questions_of(article: Any, number: int, source: str) -> Iterator[tuple[Any, Any, str, str]]:
    """``(qa, context, title, place)`` of every question of one article; a malformed article or paragraph raises."""
    title = article.get("title") if isinstance(article, dict) else None
    title = "" if title is None else title
    name = _article_name(title, number)
    paragraphs = article.get("paragraphs") if isinstance(article, dict) else None
    if not isinstance(paragraphs, list):
        raise DataFormatError("article without a 'paragraphs' list", name, source)
    for index, paragraph in enumerate(paragraphs):
        yield from _paragraph_questions(paragraph, index, title, name, source)


def _article_name(title: Any, number: int) -> str:
    return title if isinstance(title, str) and title else f"article #{number}"


def _paragraph_questions(paragraph: Any, index: int, title: Any, name: str, source: str) -> Iterator[tuple[Any, Any, str, str]]:
    """``(qa, context, title, place)`` of every question of one paragraph (the ``index``-th of the article ``name``);
    ``place`` (``article #2, paragraph 0, question 1``) names a question whose id and title cannot."""
    qas = paragraph.get("qas") if isinstance(paragraph, dict) else None
    if not isinstance(qas, list):
        raise DataFormatError(f"paragraph {index} has no 'qas' list", name, source)
    for number, qa in enumerate(qas):
        yield qa, paragraph.get("context"), title, f"{name}, paragraph {index}, question {number}"


def generated_id(position: int, question: str, context: str) -> str:
    """The id of a question given without one: ``q<position>-<hash>``, its position in the source (1 for the first
    question, every record counted) and the first 8 hex digits of the SHA-256 of its question, a newline and its
    context (UTF-8). The same file gives the same ids, and another file's predictions do not match them by accident."""
    digest = hashlib.sha256(f"{question}\n{context}".encode("utf-8")).hexdigest()
    return f"q{position}-{digest[:8]}"


def _parse_question(
    qa: Any, context: Any, title: str, source: str, fixed: SquadFile | None, position: int = 1, context_checked: bool = False,
    places: _AnswerPlaces | None = None, place: str | None = None,
) -> Example:
    """One question as an :class:`Example`, checked; ``context_checked``: the context (this very string) passed the
    checks with an earlier question of its paragraph, which are not made again: they read it whole, so 10,000 questions
    of one 5,000,000-character context took minutes to read (a paragraph's questions share its one string).
    ``places``: where the answer texts of the questions read before occur in their context, if any. ``place``: where
    an official file holds the question, its name in an error where neither an id nor a title names it. ``fixed``
    (``fix_offsets``): where a relocated or found answer start is listed."""
    if isinstance(qa, DataFormatError):  # a question its reader could not make a row of (a bad MRQA span)
        raise qa
    unnamed = (title if isinstance(title, str) else None) or place  # a row's source already names its line or row
    if not isinstance(qa, dict):
        raise DataFormatError("question is not an object", unnamed, source)
    given = qa.get("id")
    if not isinstance(title, str):
        raise DataFormatError(f"'title' must be a string, got {json_value(title)}", given if isinstance(given, str) and given.strip() else place,
                              source)
    if given not in (None, "") and not isinstance(given, str):
        raise DataFormatError(f"'id' must be a string, got {json_value(given)}", unnamed, source)
    named = check_text(given, "id", unnamed, source) if given else None
    if not context_checked:
        check_context_length(check_text(context, "context", named or unnamed, source), named or unnamed, source)
    question = check_text(qa.get("question"), "question", named or unnamed, source)
    qid = named or generated_id(position, question, context)
    answers, impossible = _answers_of(qa, qid, source)
    if answers is None:
        return Example(qid, question, context, None, title)
    if not isinstance(impossible, bool):
        raise DataFormatError(f"'is_impossible' must be true or false, got {json_value(impossible)}", qid, source)
    if impossible and answers:
        raise DataFormatError("question marked is_impossible has answers", qid, source)
    if not answers and not impossible:
        raise DataFormatError("question has no answers and is not marked is_impossible", qid, source)
    places = _AnswerPlaces() if places is None else places
    alternatives = tuple((_answer_span(answer, context, qid, source, fixed, places),) for answer in answers)
    _misplaced_occurrences(qa.get(MISPLACED_SPANS), qid, source, None if fixed is None else fixed.fixed_offsets)
    return Example(qid, question, context, alternatives, title)


# What a refusal of a misplaced answer advises, its arguments marked; a reader that takes no fix_offsets (a comparison)
# advises correcting the file instead (:func:`as_written`).
_RELOCATES = f"{argument('fix_offsets', True)} relocates it there: the nearest occurrence, a whole word before one inside a word"
_PASSES_OVER = f"{argument('fix_offsets', True)} reads the answer where its text is and passes over a misplaced occurrence"
_FINDS = f"{argument('fix_offsets', True)} finds it there"


def as_written(problem: str) -> str:
    """``problem`` (a refusal's, its arguments marked) as a comparison, which takes no ``fix_offsets``, says it: the
    misplaced answer is corrected in the file."""
    return (problem.replace(_RELOCATES, "correct the answer's start in the file: a comparison reads its data as written")
            .replace(_PASSES_OVER, "correct or remove that char span in the file: a comparison reads its data as written")
            .replace(_FINDS, "give its answer_start in the file: a comparison reads its data as written"))


def _misplaced_occurrences(misplaced: list[str] | None, qid: str, source: str, fixed: list[str] | None) -> None:
    """An MRQA answer's later occurrences (its other char spans) that miss its text: refused, naming the first; with
    ``fixed`` (``fix_offsets``) passed over, the question noted as relocated: the answer is read at its first span,
    or at its text's nearest occurrence as any answer_start is."""
    if not misplaced:
        return
    if fixed is None:
        more = f" (and {len(misplaced) - 1} more)" if len(misplaced) > 1 else ""
        raise DataFormatError(f"{misplaced[0]}{more}; {_PASSES_OVER}", qid, source)
    if qid not in fixed:
        fixed.append(qid)


def _answers_of(qa: dict[str, Any], qid: str, source: str) -> tuple[list[Any] | None, Any]:
    """``(answers, is_impossible)`` from either layout: the official list of ``{text, answer_start}``
    objects, or the Hugging Face columns ``{text: [...], answer_start: [...]}``, where empty lists
    are how an unanswerable question is written (an ``is_impossible`` value, if any, must agree).
    ``(None, None)`` for an unlabelled question: no ``answers`` (or null) and no ``is_impossible``."""
    if qa.get("answers") is None and qa.get("is_impossible") is None:
        return None, None
    answers = qa.get("answers", [] if qa.get("is_impossible") else None)
    if isinstance(answers, dict):
        texts, starts = answers.get("text"), answers.get("answer_start")
        if isinstance(texts, list) and texts and _missing(starts):  # none given: each answer's start is missing
            starts = [None] * len(texts)
        if not isinstance(texts, list) or not isinstance(starts, list) or len(texts) != len(starts):
            raise DataFormatError("'answers' needs lists 'text' and 'answer_start' of the same length", qid, source)
        answers = [{"text": text, "answer_start": start} for text, start in zip(texts, starts)]
        impossible = qa.get("is_impossible")  # a dataset column holds null where a row has no value
        return answers, not answers if impossible is None else impossible
    if not isinstance(answers, list):
        raise DataFormatError("'answers' must be a list (or the columns {text: [...], answer_start: [...]})", qid, source)
    return answers, qa.get("is_impossible", False)


def _answer_span(
    answer: Any, context: str, qid: str, source: str, fixed: SquadFile | None, places: _AnswerPlaces,
) -> tuple[int, int]:
    """The answer's character span; with ``fixed`` (``fix_offsets``) a start that misses the text is relocated, and
    a missing one found (:func:`_found_span`)."""
    text, start = (answer.get("text"), answer.get("answer_start")) if isinstance(answer, dict) else (None, None)
    if isinstance(text, str) and carries_text(text) and _missing(start):
        return _found_span(text, context, qid, source, fixed, places)
    if not isinstance(text, str) or not text or not isinstance(start, int) or isinstance(start, bool):
        raise DataFormatError("answer needs a non-empty 'text' and an integer 'answer_start'", qid, source)
    if not carries_text(text):  # the official scripts read such a gold answer as no answer
        raise DataFormatError(f"answer text {json_value(text)} holds no readable text, only whitespace or invisible characters", qid, source)
    if 0 <= start and context[start : start + len(text)] == text:
        return start, start + len(text)  # as written, even inside a character: the scorers read its text alone
    found = places.of(context, text)
    if not found:
        raise DataFormatError(f"answer text {json_value(text)} is not in the context{_other_normalisation(text, context)}", qid, source)
    nearest = _nearest(found, start)
    if fixed is None:
        raise DataFormatError(
            f"answer {json_value(text)} is not at answer_start {start}; the text does occur at {nearest} ({_RELOCATES})", qid, source,
        )
    _listed(fixed.fixed_offsets, qid)
    return nearest, nearest + len(text)


def _missing(start: Any) -> bool:
    """Whether an answer gives no ``answer_start``: null (or no key), an empty string (a table's empty cell), an empty
    list (the columns' starts left empty beside texts) or NaN."""
    return start is None or start == "" or (isinstance(start, list) and not start) or (isinstance(start, float) and start != start)


def _found_span(text: str, context: str, qid: str, source: str, fixed: SquadFile | None, places: _AnswerPlaces) -> tuple[int, int]:
    """The span of an answer given without a start, with ``fixed`` (``fix_offsets``): its text's place where the text
    occurs exactly once in the context as a whole word (else anywhere), as written (no other normalisation, no occurrence that cuts a letter's accent
    off); several places or none are refused with their count, since any guess would train on the wrong words. Without
    ``fixed``, the refusal names the one place ``fix_offsets`` would take."""
    found = places.every(context, text)
    words = set(places.words(context, text))  # its whole-word mentions, where it has any: "Paris" beside "Parisian"
    found = [at for at in found if at in words] or found
    if fixed is None:
        if len(found) != 1:
            raise DataFormatError("answer needs a non-empty 'text' and an integer 'answer_start'", qid, source)
        raise DataFormatError(f"answer {json_value(text)} has no answer_start; its text occurs once in the context, at "
                              f"{found[0]} ({_FINDS})", qid, source)
    if len(found) != 1:
        told = (f" (at {', '.join(map(str, found[:5]))}{', ...' if len(found) > 5 else ''}): give its answer_start" if found else
                _other_normalisation(text, context) or ": give the answer as the context writes it, with its answer_start")
        raise DataFormatError(f"answer {json_value(text)} has no answer_start and its text occurs "
                              f"{counted(len(found), 'time')} in the context{told}", qid, source)
    _listed(fixed.fixed_offsets, qid)
    _listed(fixed.found_offsets, qid)
    return found[0], found[0] + len(text)


def _listed(ids: list[str], qid: str) -> None:
    """``qid`` added to ``ids`` once: a question's answers are read together, so only the last id can be it (a search
    of the whole list made a file of many fixed questions quadratic)."""
    if not ids or ids[-1] != qid:
        ids.append(qid)


class _AnswerPlaces:
    """Where each answer text occurs in the context read last, found once a text (a paragraph's questions share its one
    string): 10,000 answers of a text at a wrong ``answer_start`` each searched a 5,000,000-character context again."""

    def __init__(self) -> None:
        self.context: str | None = None
        self.places: dict[str, list[int]] = {}
        self.all_places: dict[str, list[int]] = {}
        self.word_places: dict[str, list[int]] = {}

    def _read(self, context: str) -> None:
        if context is not self.context:
            self.context, self.places, self.all_places, self.word_places = context, {}, {}, {}

    def of(self, context: str, text: str) -> list[int]:
        """The starts of ``text`` in ``context``, ascending: its whole-word mentions, else every occurrence of whole
        user-perceived characters (none: not in it). A whole word first: "an" near "plan an" is the word, not the end
        of "plan" (whose tokens would become the target)."""
        self._read(context)
        if text not in self.places:
            occurrences = [m.start() for m in re.finditer(re.escape(text), context)
                           if cut_character(context, m.start(), m.end()) is None]
            self.places[text] = (occurrences and self.words(context, text)) or occurrences
        return self.places[text]

    def words(self, context: str, text: str) -> list[int]:
        """The starts of ``text``'s whole-word mentions in ``context`` (none: no whole word anywhere)."""
        self._read(context)
        if text not in self.word_places:
            self.word_places[text] = [at for at, _ in mentions(context, text)]
        return self.word_places[text]

    def every(self, context: str, text: str) -> list[int]:
        """Every start of ``text`` in ``context`` (overlapping ones too), ascending, but for one whose span would cut a
        user-perceived character: "cafe" is not in "café" written as "e" and U+0301, nor "👍" in "👍🏽"."""
        self._read(context)
        if text not in self.all_places:
            found, at = [], context.find(text)
            while at >= 0:
                if cut_character(context, at, at + len(text)) is None:
                    found.append(at)
                at = context.find(text, at + 1)
            self.all_places[text] = found
        return self.all_places[text]


def _nearest(places: list[int], start: int) -> int:
    """The place nearest to ``start``, the earlier of two as near (``places`` ascending, not empty)."""
    after = bisect.bisect_left(places, start)
    if after == len(places) or (after > 0 and start - places[after - 1] <= places[after] - start):
        return places[after - 1]
    return places[after]


def _other_normalisation(text: str, context: str) -> str:
    """Why a text the context does not hold whole is missing, where a reason shows: the same letters in other code
    points (an "é" as one character in one, as "e" and U+0301 in the other), which look alike and never match; or the
    text as written only inside a longer user-perceived character ("👍" of "👍🏽"), which an answer cannot cut."""
    if (unicodedata.normalize("NFC", text), unicodedata.normalize("NFC", context)) != (text, context) and \
            _AnswerPlaces().every(unicodedata.normalize("NFC", context), unicodedata.normalize("NFC", text)):
        return (" as written, though it is once both are in one Unicode normalisation form (an accent as its own code point in "
                "one, part of the letter in the other); normalise the file's texts alike, e.g. unicodedata.normalize('NFC', text)")
    at = context.find(text)
    if at < 0:
        return ""
    return (f" as a whole: it occurs only as part of a longer character (at {at}, inside "
            f"{json_value(cut_character(context, at, at + len(text)))}), which an answer cannot cut: give the whole character")


def examples_to_squad_json(examples: Sequence[Example], version: str = "1.1") -> dict[str, Any]:
    """The inverse of :func:`parse_squad`: official layout, one paragraph entry per example context run."""
    data: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for ex in examples:
        paragraphs = data.setdefault(ex.title, {})
        paragraphs.setdefault(ex.context, []).append(
            {
                "id": ex.id,
                "question": ex.question,
                "answers": [{"text": ex.context[s:e], "answer_start": s} for alt in ex.answers or () for s, e in alt[:1]],
                **({"is_impossible": not ex.is_answerable} if version == "2.0" else {}),
            }
        )
    return {
        "version": version,
        "data": [
            {"title": title, "paragraphs": [{"context": c, "qas": qas} for c, qas in paragraphs.items()]}
            for title, paragraphs in data.items()
        ],
    }
