"""Prediction files: the official ``{id: answer}`` file, the n-best file and the ``na_prob`` file."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence, TextIO

from ..errors import DataFormatError
from ..io import atomic_writers, home_expanded, printable_json, remove_file, sole_writer
from ..json_syntax import json_value
from ..types import Prediction
from .answers import no_answer_probability

STREAM_SUFFIX = ".answers.jsonl"  # predict's answers stream, beside the official file (bio_mrc.inference.streaming)
RUN_SUFFIX = ".answers.run.json"  # the options and data the stream was made with, checked by --resume
# A run's stream and record until its files are all written, then renamed to the two above with them (one set).
PARTIAL_SUFFIX, PARTIAL_RUN_SUFFIX = ".answers.partial.jsonl", ".answers.partial.run.json"
# The decoding files the latest run wrote, each with its SHA-256: a rerun removes those of them it does not write.
FILE_LIST_SUFFIX = ".answers.files.json"


@dataclass(frozen=True)
class DecodingFiles:
    """One decoding's files: the official ``predictions``, the ``nbest`` and the ``na_probs`` files (None where
    :func:`write_prediction_files` writes none)."""

    predictions: Path
    nbest: Path
    na_probs: Path | None = None

    def to_dict(self) -> dict[str, str]:
        """Each file's path by its kind, the files written only."""
        named = {"predictions": self.predictions, "nbest": self.nbest, "na_probs": self.na_probs}
        return {name: str(path) for name, path in named.items() if path is not None}

    def paths(self) -> list[Path]:
        """The files, in the order of :meth:`to_dict`."""
        return [path for path in (self.predictions, self.nbest, self.na_probs) if path is not None]


def write_prediction_files(
    predictions: Sequence[Prediction], output: str | Path, with_na_probs: bool = True, multi_span: bool = False
) -> DecodingFiles:
    """Write ``output`` (official ``{id: answer}``, or MultiSpanQA's ``{id: [span texts]}`` with
    ``multi_span``), its :func:`side_file` ``.nbest.json`` (every span with offsets and scores) and, when asked,
    ``.na_probs.json``; together (all new, or all as they were). Returns their paths."""
    output = Path(home_expanded(output))
    output.parent.mkdir(parents=True, exist_ok=True)
    files = DecodingFiles(output, side_file(output, ".nbest.json"), side_file(output, ".na_probs.json") if with_na_probs else None)
    answers = {p.id: p.answers if multi_span else p.answer for p in predictions}
    # No indent for the n-best: json's C encoder only runs without one (3x faster on a full dev set's n-best lists).
    texts = [printable_json(answers, indent=1), printable_json({p.id: p.to_dict() for p in predictions})]
    if with_na_probs:
        texts.append(json.dumps({p.id: no_answer_probability(p.no_answer_score) for p in predictions}))
    with atomic_writers(files.paths()) as handles:  # the files agree: all new, or all as they were
        for handle, text in zip(handles, texts):
            handle.write(text)
    return files


# The n-best file's entry of a question: Prediction.to_dict()'s keys; an answer line adds the others.
NBEST_KEYS = ("id", "answer", "abstain", "no_answer_score", "confidence", "probability", "spans")


def answer_record(prediction: Prediction, decoding: str, multi_span: bool = False) -> dict[str, Any]:
    """One line of the answers stream: the question's id, its decoding, the answer with its character offsets
    (``None`` when there is no answer), confidence, probability and every span (with ``multi_span``, every
    answer span, and ``answers``, their texts)."""
    entry = prediction.to_dict()
    best = prediction.spans[0] if prediction.spans and not prediction.abstain else None
    record = {"id": entry.pop("id"), "decoding": decoding, "answer": entry.pop("answer"),
              "start": best.start if best else None, "end": best.end if best else None}
    if multi_span:
        record["answers"] = prediction.answers
    return {**record, **entry}


_NUMBER = (int, float)
# The fields of an answers line the files are made from, and the types each may have (a resumed stream is read back).
ANSWER_FIELDS = {"id": (str,), "decoding": (str,), "answer": (str,), "abstain": (bool,), "no_answer_score": (*_NUMBER, type(None)),
                 "confidence": (*_NUMBER, type(None)), "probability": (*_NUMBER, type(None)), "spans": (list,)}


def answer_record_problem(record: dict[str, Any], multi_span: bool = False) -> str | None:
    """What makes ``record`` no answers line this package writes (a field missing or of the wrong type), or None."""
    wanted = {**ANSWER_FIELDS, **({"answers": (list,)} if multi_span else {})}
    missing = [name for name in wanted if name not in record]
    if missing:
        return f"lacks the field{'s' if len(missing) > 1 else ''} {', '.join(missing)}"
    for name, types in wanted.items():
        value = record[name]
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            return f"has {name} {json_value(value)}, which is no {' or '.join(t.__name__ for t in types)}"
    return None


def _json_stem(output: Path) -> tuple[str, str]:
    """``output``'s name split before a ``.json`` suffix (any case): ``("preds", ".json")``; ``("run.v1", "")``."""
    name = output.name
    return (name[: -len(".json")], name[-len(".json"):]) if name.lower().endswith(".json") else (name, "")


def side_file(output: Path, suffix: str) -> Path:
    """A file beside ``output`` named after it: ``preds.json`` -> ``preds<suffix>``; an output of another or no
    suffix keeps its whole name (``run.v1`` -> ``run.v1<suffix>``), so that two outputs never share a side file."""
    return output.with_name(_json_stem(output)[0] + suffix)


def prediction_paths(output: Path, decoding: str, several: bool) -> DecodingFiles:
    """Where one decoding's files go: ``output`` itself for a single decoding; for several, ``preds.<decoding>.json``
    (``preds.<decoding>`` for an output without ``.json``); each one's n-best and ``na_prob`` files its
    :func:`side_file`s, so that no two decodings share a file."""
    stem, json_suffix = _json_stem(output)
    path = output.with_name(f"{stem}.{decoding}{json_suffix}") if several else output
    return DecodingFiles(path, side_file(path, ".nbest.json"), side_file(path, ".na_probs.json"))


def answers_stream_path(output: str | Path) -> Path:
    """``preds.json`` -> ``preds.answers.jsonl``, beside the official file (:func:`side_file`)."""
    return side_file(Path(output), STREAM_SUFFIX)


_CLAIMED = threading.local()  # the answers streams this thread holds (answers_claimed): path -> whether it was there


@contextlib.contextmanager
def answers_claimed(output: str | Path) -> Iterator[None]:
    """Hold the answers stream beside ``output`` (:func:`~bio_mrc.io.sole_writer`) from before any work, so a second
    ``predict`` into it is refused before it reads its data or loads its model; ``predict_to_files`` in this thread
    takes it as held (:func:`claimed_before`). A stream, and folders, made here and left empty by a failure are removed."""
    stream = answers_stream_path(home_expanded(output))
    made = [path for path in stream.parents if not path.exists()]
    existed, taken = stream.exists(), False
    claimed = _CLAIMED.__dict__.setdefault("streams", {})
    stream.parent.mkdir(parents=True, exist_ok=True)
    try:
        with sole_writer(stream, "answers"):
            taken, claimed[os.path.abspath(stream)] = True, existed
            try:
                yield
            finally:
                claimed.pop(os.path.abspath(stream), None)
    except BaseException:
        if taken and not existed and stream.is_file() and stream.stat().st_size == 0:  # refused: the file is the other's
            remove_file(stream, stream.parent)
        for path in made:
            if path.is_dir() and not any(path.iterdir()):
                path.rmdir()
        raise


def claimed_before(stream: Path) -> bool | None:
    """Whether ``stream``, which this thread holds by :func:`answers_claimed`, was there before the claim; None where
    this thread does not hold it."""
    return _CLAIMED.__dict__.get("streams", {}).get(os.path.abspath(stream))


def run_record_path(output: str | Path) -> Path:
    """``preds.json`` -> ``preds.answers.run.json``: what the answers stream beside it was made with."""
    return side_file(Path(output), RUN_SUFFIX)


def partial_paths(output: str | Path) -> tuple[Path, Path]:
    """``preds.json`` -> ``preds.answers.partial.jsonl`` and ``preds.answers.partial.run.json``: the answers stream a run
    writes and its record, until its official files are written too and the three kinds replace the earlier run's
    together (``--resume`` continues them)."""
    return side_file(Path(output), PARTIAL_SUFFIX), side_file(Path(output), PARTIAL_RUN_SUFFIX)


def file_list_path(output: str | Path) -> Path:
    """``preds.json`` -> ``preds.answers.files.json``: the decoding files the latest run into ``output`` wrote, each
    with its SHA-256 (:mod:`~bio_mrc.inference.file_list`)."""
    return side_file(Path(output), FILE_LIST_SUFFIX)


def file_list_text(listed: Mapping[str, str]) -> str:
    """The list of files ``{name: SHA-256}`` as :func:`file_list_path` holds it (ASCII: a name's other characters escaped)."""
    return json.dumps(dict(listed), indent=1)


def prediction_outputs(output: str | Path, decodings: Sequence[str]) -> list[Path]:
    """Every file :func:`~bio_mrc.inference.streaming.predict_to_files` writes for ``output`` (none for ``-``): the
    answers stream and its record of what it was made with, then each decoding's official, n-best and ``na_prob``
    files, then the stream and record a run writes until it ends (:func:`partial_paths`), then the list of the
    decoding files (:func:`file_list_path`)."""
    if str(output) == "-":
        return []
    decodings = tuple(dict.fromkeys(decodings))
    files = [path for decoding in decodings for path in prediction_paths(Path(output), decoding, len(decodings) > 1).paths()]
    return [answers_stream_path(output), run_record_path(output), *files, *partial_paths(output), file_list_path(output)]


_OFFICIAL_KINDS = {"predictions": "an official predictions file {id: answer}", "na_probs": "a no-answer probability file"}


def check_no_answers_stream(path: str | Path, kind: str = "predictions") -> None:
    """Refuse ``path`` where an official file is read (``kind``: ``predictions`` or ``na_probs``) when it is predict's
    answers stream, by its name or, renamed, by its first line, naming the file of that kind predict wrote beside it
    for each decoding (for a renamed stream, how predict names it)."""
    path = Path(path)
    if path.name.endswith(STREAM_SUFFIX):
        files, several = _files_beside_stream(path, kind)
        beside = f"{several}: {', '.join(map(str, files))}"
    elif _starts_with_an_answer_line(Path(home_expanded(path))):
        official, one_of_several = (getattr(prediction_paths(Path("PREDS.json"), "DECODING", several), kind) for several in (False, True))
        beside = f", as it writes {official} beside PREDS{STREAM_SUFFIX} ({one_of_several} for each of several decodings)"
    else:
        return
    raise DataFormatError(f"this is predict's answers stream (JSON Lines, one line per question and decoding), not "
                          f"{_OFFICIAL_KINDS[kind]}; give the one predict wrote beside it{beside}", source=str(path))


def _files_beside_stream(path: Path, kind: str) -> tuple[list[Path], str]:
    """The files of ``kind`` predict wrote beside the stream ``path``, one per decoding its record lists, and words
    saying which to give where there are several."""
    stem = path.name[: -len(STREAM_SUFFIX)]
    decodings = _recorded_decodings(path.with_name(stem + RUN_SUFFIX)) or [None]
    outputs = [path.with_name(stem + ".json"), path.with_name(stem)]  # predict --output preds.json, or run.v1 kept whole
    files = [[getattr(prediction_paths(output, decoding, len(decodings) > 1), kind) for decoding in decodings] for output in outputs]
    named = next((one for one in files if all(file.is_file() for file in one)), files[0])
    return named, " for the decoding to score" if len(decodings) > 1 else ""


_LONGEST_FIRST_LINE = 1 << 20  # past this a first line is no answers line: a one-line official file is not read whole


def _starts_with_an_answer_line(path: Path) -> bool:
    """Whether the regular file ``path`` begins with a line that is a JSON object holding an answers line's ``id``,
    ``decoding`` and ``answer`` (:func:`answer_record`), which no official file's first line is; anything unreadable
    is left to the reader that names its problem."""
    try:
        if not path.is_file():  # a FIFO or device is never opened here: reading one may wait for ever
            return False
        with open(path, encoding="utf-8-sig") as handle:
            record = json.loads(handle.readline(_LONGEST_FIRST_LINE))
    except (OSError, ValueError, RecursionError):
        return False
    return (isinstance(record, dict) and all(key in record for key in ("id", "decoding", "answer"))
            and isinstance(record["id"], str) and isinstance(record["decoding"], str))


def _recorded_decodings(record: Path) -> list[str]:
    """The decodings a stream's record of its options lists (none where it is missing or unreadable)."""
    try:
        decodings = json.loads(record.read_text(encoding="utf-8")).get("decodings")
    except (OSError, ValueError, RecursionError, AttributeError):
        return []
    return [decoding for decoding in decodings if isinstance(decoding, str)] if isinstance(decodings, list) else []


def write_files_from_stream(stream: Path, output: Path, decodings: Sequence[str], multi_span: bool = False,
                            moved_in: Sequence[tuple[Path, Path]] = (),
                            earlier: Mapping[str, str] | None = None) -> dict[str, DecodingFiles]:
    """The official ``{id: answer}`` (MultiSpanQA's ``{id: [texts]}`` with ``multi_span``), n-best and ``na_prob``
    files of each decoding from an answers stream, one line at a time, every decoding's written together (all new, or
    all as they were: :func:`~bio_mrc.io.atomic_writers`). ``moved_in``: files beside them, each ``(source, target)``,
    renamed in with them, after them (a run's answers stream and its record). ``earlier``: where given (the earlier
    run's list, ``{}`` for none), the list of the files (:func:`file_list_path`) is written with them, before
    ``moved_in``: each file's name and SHA-256, then the files of ``earlier`` these are not, until they are removed
    (:func:`~bio_mrc.inference.file_list.remove_earlier_files`)."""
    written = {decoding: prediction_paths(output, decoding, len(decodings) > 1) for decoding in decodings}
    listing = [file_list_path(output)] if earlier is not None else []
    output.parent.mkdir(parents=True, exist_ok=True)
    digests: dict[str, str] = {}
    with atomic_writers([*(path for paths in written.values() for path in paths.paths()), *listing], moved_in=moved_in) as handles:
        for number, decoding in enumerate(decodings):
            answers, nbest, na_probs = handles[3 * number : 3 * number + 3]
            writers = (_JsonObjectWriter(answers, indent=1), _JsonObjectWriter(nbest), _JsonObjectWriter(na_probs, ensure_ascii=True))
            for record in read_stream(stream, decoding):
                writers[0].add(record["id"], record["answers"] if multi_span else record["answer"])
                writers[1].add(record["id"], {key: record[key] for key in NBEST_KEYS})
                writers[2].add(record["id"], _recorded_no_answer_probability(record))
            for writer, path in zip(writers, written[decoding].paths()):
                digests[path.name] = writer.close()
        if listing:
            handles[-1].write(file_list_text({**digests, **{name: sha for name, sha in (earlier or {}).items() if name not in digests}}))
    return written


def _recorded_no_answer_probability(record: dict[str, Any]) -> float:
    """The ``na_prob`` of an answers line: of its no-answer score; 1 where it has none because no span survived (an
    infinite score, written null: :meth:`~bio_mrc.types.Prediction.to_dict`)."""
    score = record["no_answer_score"]
    return 1.0 if score is None and not record["spans"] else no_answer_probability(score)


def read_stream(stream: Path, decoding: str | None = None) -> Iterator[dict[str, Any]]:
    """The records of an answers stream (of one decoding), one line at a time."""
    with open(stream, encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            if decoding is None or record["decoding"] == decoding:
                yield record


class _JsonObjectWriter:
    """A JSON object written one member at a time, byte for byte what ``json.dumps`` (:func:`printable_json` without
    ``ensure_ascii``) writes for the whole object (``indent=None`` or ``indent=1``), to a handle that writes UTF-8;
    :meth:`close` gives the SHA-256 of the bytes written."""

    def __init__(self, handle: TextIO, indent: int | None = None, ensure_ascii: bool = False) -> None:
        self.handle, self.indent, self.ensure_ascii, self.count = handle, indent, ensure_ascii, 0
        self.digest = hashlib.sha256()
        self._write("{")

    def add(self, key: str, value: Any) -> None:
        text = self._json(value, indent=self.indent)
        if self.indent is not None:
            text = text.replace("\n", "\n" + " " * self.indent)
            self._write(("," if self.count else "") + "\n" + " " * self.indent)
        elif self.count:
            self._write(", ")
        self._write(f"{self._json(key)}: {text}")
        self.count += 1

    def _write(self, text: str) -> None:
        self.handle.write(text)
        self.digest.update(text.encode("utf-8"))

    def _json(self, value: Any, indent: int | None = None) -> str:
        return json.dumps(value, indent=indent) if self.ensure_ascii else printable_json(value, indent=indent)

    def close(self) -> str:
        """End the object; returns the SHA-256 of the whole file, as hex."""
        self._write("\n}" if self.indent is not None and self.count else "}")
        return self.digest.hexdigest()
