"""Prediction at any scale: questions read, run and decoded a chunk at a time, answers appended as JSON Lines.

The answers stream (``<stem>.answers.jsonl``) holds one line per question and decoding, in the order of the
questions (:func:`~bio_mrc.inference.files.answer_record`); the official, n-best and ``na_prob`` files are
written from it at the end. Memory stays flat in the number of questions: one chunk is held at a time, and of its
windows and logits one slice (:func:`~bio_mrc.inference.extract.window_slices`: long contexts' questions a few at a
time, each slice's windows let go once its answers are decoded).

Chunks are fixed slices of the questions (``chunk_size`` each, in order), and a chunk's answers depend only
on its own questions (its slices are read from it alone): so a resumed run, which restarts at the first chunk the
stream lacks in full, and a sharded run (:class:`~bio_mrc.inference.sharding.Shard`: rank ``r`` of ``W`` answers chunks ``r``, ``r + W``, ...)
write the same bytes as one uninterrupted process.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import json
import os
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TextIO

import numpy as np
from tqdm.auto import tqdm

from ..decoding.postprocess import DecodeConfig, question_outputs, with_saved_settings
from ..arguments import (checked_limit, count_argument, given_type, instance_argument, names_argument, path_argument,
                         warn_limit_past)
from ..errors import ConfigError, DataFormatError, OutputError, argument
from ..io import (atomic_write_json, atomic_writer, check_file_target, check_outputs_apart, home_expanded, open_no_follow,
                  printable_json, remove_temporaries_of, writes_named)
from ..json_syntax import json_value
from ..precision import DEFAULT_PRECISION
from ..encoders import answering_digest
from ..hub import cached_folder
from ..registry import AUTO_DECODING, preferred_decoding, resolve_decoding
from ..features.pair_windows import ContextsAlone
from ..progress import WindowBars, inference_bar, open_window_bars, questions_done, stream_bars
from ..types import Example
from .abstention import check_abstention, warn_untuned_abstention
from .extract import SINGLE_SPANS_ANSWER, AnswerExtractor, window_slices
from .file_list import check_files_apart, read_file_list, remove_earlier_files
from .kept_lines import line_written_now, write_kept_lines
from .files import (DecodingFiles, answer_record, answer_record_problem, answers_claimed, answers_stream_path, claimed_before,
                    file_list_path, partial_paths, prediction_outputs, run_record_path, write_files_from_stream)
from .defaults import DECODE_BLOCK_QUESTIONS, DEFAULT_CHUNK_SIZE
from .loading import TrainedModel, check_length_prior, saved_settings
from .long_questions import warn_long_questions
from .sharding import Shard, SINGLE_PROCESS


@dataclass(frozen=True)
class StreamPlan:
    """What each chunk is answered with: the decodings (each writes a line per question, in this order)
    and the options :class:`~bio_mrc.inference.extract.AnswerExtractor` takes (``min_span_probability``
    None: the decoding's tuned or default span-count threshold)."""

    decodings: tuple[str, ...]
    config: DecodeConfig = DecodeConfig()
    multi_span: bool = False
    min_span_probability: float | None = None
    chunk_size: int = DEFAULT_CHUNK_SIZE
    batch_size: int | None = None  # windows a forward pass (None: the model's device's default)

    def __post_init__(self) -> None:
        names_argument(self.decodings, "decodings", "StreamPlan", optional=False)  # a lone string would be read letter by letter
        object.__setattr__(self, "decodings", tuple(self.decodings))
        count_argument(self.chunk_size, "chunk_size", "StreamPlan", optional=False)
        count_argument(self.batch_size, "batch_size", "StreamPlan")  # here, not at the first chunk, after files are begun
        if isinstance(self.config, DecodeConfig) and not self.config.require_answer and not self.multi_span:
            raise ConfigError(SINGLE_SPANS_ANSWER)  # single spans never read it: refused, not dropped unread


@dataclass(frozen=True)
class PredictionFiles:
    """What :func:`predict_to_files` wrote: the answers ``stream`` and its ``run_record``, each decoding's
    :class:`DecodingFiles` in ``files``, in the plan's order, and ``file_list``, the list of those files with their
    SHA-256 (None and none where the answers went to standard output, and on ranks other than 0). :meth:`to_dict`
    gives each decoding's paths as ``bio-mrc predict`` prints them."""

    stream: Path | None = None
    run_record: Path | None = None
    files: dict[str, DecodingFiles] = dataclasses.field(default_factory=dict)
    file_list: Path | None = None

    def to_dict(self) -> dict[str, dict[str, str]]:
        """Each decoding's file paths, as ``bio-mrc predict`` prints them."""
        return {decoding: written.to_dict() for decoding, written in self.files.items()}


def run_record(trained: TrainedModel, plan: StreamPlan, source: str | None) -> dict:
    """What a stream's answers depend on: the model, its precision as given and as it resolves here, the kind of device
    it runs on, the data and every option of ``plan`` (the chunk and batch sizes too: a batch's padding moves the last
    bits of a reduced-precision pass), with the model's tuned settings where ``plan`` leaves them open."""
    answering = trained.answering_settings()
    resolved = {RESOLVED_PRECISION: answering["precision"], DEVICE: answering["device"]}
    return _record(trained.path, trained.precision, replace(plan, config=trained.decode_config(plan.config)), source, resolved)


def given_run_record(model: str, precision: str, plan: StreamPlan, source: str | None, revision: str | None = None) -> dict:
    """The part of :func:`run_record` settled before any weight loads (``model`` and ``precision`` as given, ``plan``
    with the decodings as given): the model's ``config.json``, in its folder or a hub id's snapshot already in the
    local cache, settles an ``auto`` decoding, the tuned BIO length prior and the answer-length limit. What no file at hand settles (a hub id
    not cached yet, a config load refuses) is left out, for the check once the model has loaded. ``revision``: the hub
    id's."""
    folder = cached_folder(model, revision)
    settings = saved_settings(folder) if folder is not None and folder.is_dir() else None
    if settings is not None:
        resolved = tuple(dict.fromkeys(preferred_decoding(settings.decodings) if d == AUTO_DECODING else d for d in plan.decodings))
        config = with_saved_settings(plan.config, settings.bio_length_prior, settings.max_answer_length)
        plan = replace(plan, decodings=resolved, config=config)
    explicit = (precision or DEFAULT_PRECISION) != "auto"  # honoured on every device; auto resolves once the model has loaded
    record = _record(str(folder) if folder is not None else model, precision, plan, source,
                     {RESOLVED_PRECISION: precision} if explicit else {})
    unsettled = {"decodings"} if AUTO_DECODING in plan.decodings else set()
    unsettled |= {name for name in ("bio_length_prior", "max_answer_length") if getattr(plan.config, name) is None}
    unsettled |= set() if folder is not None else {"model", MODEL_FILES}
    return {key: value for key, value in record.items() if key not in unsettled}


def _record(model: str, precision: str, plan: StreamPlan, source: str | None, resolved: dict) -> dict:
    options = dataclasses.asdict(plan)
    decode = options.pop("config")  # by the names of predict's options: a refusal names the one that differs
    options = {**options, **{name: options.get(name) or value for name, value in decode.items()}}
    folder = Path(model).expanduser()
    model = str(folder.resolve()) if folder.exists() else model  # a hub id as it was given
    record = {"model": model, MODEL_FILES: answering_digest(folder), "precision": precision, **resolved, "data": source, **options}
    return json.loads(json.dumps(record))


MODEL_FILES = "model_files"  # the digest of the model folder's files: one tuned or retrained in place is another model
# What the forward passes ran in and on: auto resolves by the machine, so the precision as given says too little.
RESOLVED_PRECISION, DEVICE = "resolved_precision", "device"
_LATER_KEYS = {MODEL_FILES, RESOLVED_PRECISION, DEVICE}  # kept in a record since a later release: one without it is checked on the rest


def _changed(key: str, then: object, value: object, recorded: dict, wanted: dict) -> str:
    """The first words of the refusal of a resumed stream whose record (``recorded``) had ``then`` at ``key`` where this
    run's (``wanted``) has ``value``."""
    if key == MODEL_FILES:  # the same folder, other files: no option differs
        return (f"the model {wanted.get('model')} changed since the answers stream was made (its weights, tokenizer or "
                "config.json, which holds its tuned settings, differ); resume with the model it was made with")
    if key == RESOLVED_PRECISION and then in ("fp32", "bf16"):
        return (f"the answers stream was answered in {then} ({argument('precision', recorded.get('precision'))}), this run "
                f"answers in {value} ({argument('precision', wanted.get('precision'))}); resume with {argument('precision', then)}")
    if key == DEVICE and isinstance(then, str):
        return f"the answers stream was answered on {then}, this run answers on {value}; resume with {argument('device', then)}"
    then, value = (json_value(v, whole=True) for v in (then, value))
    return f"the answers stream was made with {argument(key)} {then}, this run has {value}; resume with the same options and data"


def check_run_record(record_path: Path, wanted: dict) -> None:
    """A resumed stream's recorded options are this run's; the first one that differs is refused in one line."""
    if not record_path.is_file():  # a stream copied without its record: its lines are still checked one by one
        return
    try:
        recorded = json.loads(record_path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as error:  # RecursionError: nested past the parser's stack
        raise DataFormatError(f"cannot read the record of the answers stream's options ({error}); start again without "
                              f"{argument('resume', True)}", source=str(record_path)) from None
    recorded = recorded if isinstance(recorded, dict) else {"": recorded}  # no object: differs in every key
    for key, value in wanted.items():
        if key in _LATER_KEYS and key not in recorded:  # a record written before it was kept
            continue
        if key == "precision" and RESOLVED_PRECISION in recorded:  # what it resolved to must match, not how it was asked
            continue
        then = recorded.get(key)
        if then != value:  # a model's or data file's path whole, as the record spells it
            raise DataFormatError(f"{_changed(key, then, value, recorded, wanted)}, or start again without {argument('resume', True)}",
                                  source=str(record_path))


def check_resumed_options(output: str | Path, given: dict) -> None:
    """Before the model loads: the record of the stream a ``--resume`` continues against ``given``
    (:func:`given_run_record`), so other options or data are refused before any weight loads."""
    output = home_expanded(output)
    if str(output) != "-" and (resumed := resumed_stream(output)) is not None:
        check_run_record(resumed[1], given)


def resumed_stream(output: str | Path) -> tuple[Path, Path] | None:
    """The answers stream a ``--resume`` into ``output`` continues, and its record: a run's that has not ended
    (:func:`~bio_mrc.inference.files.partial_paths`), else the stream of the files in place; None where there is none."""
    partial = partial_paths(output)
    if partial[0].is_file():
        return partial
    stream = answers_stream_path(output)
    return (stream, run_record_path(output)) if stream_there(stream) else None


def stream_there(stream: Path) -> bool:
    """Whether the answers ``stream`` holds a run to resume: a file there before ``bio-mrc predict`` claimed it (the claim
    makes an empty one), else a file there now."""
    before = claimed_before(stream)
    return stream.is_file() if before is None else before


def chunk_lines(trained: TrainedModel, chunk: Sequence[Example], plan: StreamPlan) -> list[str]:
    """The answer lines of one chunk of questions: for each question, one per decoding. Inside a
    :func:`~bio_mrc.progress.stream_bars` block, its question bar advances as each block of a slice is decoded and its window bars
    count the windows run."""
    if not chunk:
        return []
    warn_long_questions(trained, chunk, lambda position: f"question {chunk[position].id!r}")
    # AnswerExtractor's decoding, so predict answers as extract, serve and the pipeline do
    extractor = AnswerExtractor(trained, multi_span=plan.multi_span, decode_config=plan.config,
                                min_span_probability=plan.min_span_probability, batch_size=plan.batch_size)
    decoded: list[list] = [[] for _ in plan.decodings]
    alone, bars = ContextsAlone(), open_window_bars()  # a context consecutive slices share is tokenized once
    for asked in window_slices(chunk, trained.features):  # one slice's windows held at a time
        for rows, predictions in zip(decoded, _slice_answers(extractor, asked, plan, alone, bars)):
            rows += predictions
    return [printable_json(answer_record(predictions[row], decoding, plan.multi_span)) + "\n"
            for row in range(len(chunk)) for decoding, predictions in zip(plan.decodings, decoded)]


def _slice_answers(extractor: AnswerExtractor, asked: Sequence[Example], plan: StreamPlan, alone: ContextsAlone,
                   bars: WindowBars | None) -> list[list]:
    """One slice of a chunk run, then decoded with each of the plan's decodings :data:`DECODE_BLOCK_QUESTIONS` questions
    at a time (a question's answer reads its own windows alone), each block advancing the open question bar; its
    windows go when this returns."""
    outputs = extractor.trained.windows(asked, batch_size=plan.batch_size, progress=False, bars=bars, alone=alone)
    answers: list[list] = [[] for _ in plan.decodings]
    for begin in range(0, len(asked), DECODE_BLOCK_QUESTIONS):
        block = np.arange(begin, min(begin + DECODE_BLOCK_QUESTIONS, len(asked)))
        windows = outputs if len(block) == len(asked) else question_outputs(outputs, block)
        for rows, predictions in zip(answers, extractor.predict_each(windows, asked[begin : block[-1] + 1], plan.decodings)):
            rows += predictions
        questions_done(len(block))
    return answers


def chunked(items: Iterable, size: int) -> Iterator[list]:
    iterator = iter(items)
    while chunk := list(itertools.islice(iterator, size)):
        yield chunk


def stream_answers(
    trained: TrainedModel, questions: Iterable[Example], plan: StreamPlan, sink: TextIO | None,
    shard: Shard = SINGLE_PROCESS, done: Sequence[str] = (), bar: tqdm | None = None, bars: WindowBars | None = None,
) -> None:
    """Answer ``questions`` chunk by chunk into ``sink`` (rank 0's; other ranks pass None), each chunk flushed
    as it is written. ``done``: the ids of the leading whole chunks already in the sink (see :func:`resume_point`);
    they are skipped, once checked to be these questions. ``bar`` counts the questions answered, this rank's a slice at
    a time, the others' as they are written; ``bars`` count the windows this rank runs."""
    done_chunks, seen = len(done) // plan.chunk_size, 0
    with stream_bars(bar, bars):
        for round_ in chunked(enumerate(chunked(questions, plan.chunk_size)), shard.world):
            seen += len(round_)
            own, mine = round_[shard.rank] if shard.rank < len(round_) else (done_chunks, [])
            gathered = shard.gather(chunk_lines(trained, mine, plan) if own >= done_chunks else [])
            if not shard.writes:
                continue
            for (index, chunk), lines in zip(round_, gathered):
                if index < done_chunks:
                    _check_answered(chunk, done[index * plan.chunk_size : (index + 1) * plan.chunk_size])
                sink.write("".join(lines))
                if index != own or index < done_chunks:  # this rank's own chunk counted itself, a block at a time
                    questions_done(len(chunk))
            sink.flush()
    if seen < done_chunks:
        _check_answered([], done[seen * plan.chunk_size :])


def _check_answered(chunk: Sequence[Example], answered: Sequence[str]) -> None:
    """The answered ids are the chunk's questions (an id past the data's last question is not)."""
    for example, qid in itertools.zip_longest(chunk, answered):
        if example is None or qid is None or example.id != qid:
            asks = "no more questions" if example is None else f"asks {json_value(example.id)}"
            raise DataFormatError(f"the answers stream answers {json_value(qid)} where the data {asks}: it was made for other "
                                  f"questions or options; resume with the same ones, or start again without {argument('resume', True)}")


def resume_point(stream: Path, decodings: Sequence[str], chunk_size: int, multi_span: bool = False) -> list[str]:
    """The ids of the leading whole chunks that ``stream`` answers, in order; the file is cut back to them
    (a line cut short by a kill, or a chunk half written, is answered again), each line as this version writes it
    (:mod:`~bio_mrc.inference.kept_lines`: an earlier version's written anew, the file replaced whole). A whole line
    that is no answer line of these options (a field missing, of the wrong type, another decoding) is refused."""
    ids, end, earlier = whole_chunks(stream, decodings, chunk_size, multi_span)
    if earlier:
        open_no_follow(stream, "r+b").close()  # never written through a link
        with atomic_writer(stream) as handle:
            write_kept_lines(stream, handle, end)
        return ids
    with open_no_follow(stream, "r+b") as handle:
        handle.truncate(end)
        handle.flush()
        os.fsync(handle.fileno())
    return ids


def whole_chunks(stream: Path, decodings: Sequence[str], chunk_size: int, multi_span: bool = False) -> tuple[list[str], int, bool]:
    """:func:`resume_point` read alone, the file left as it is: the ids of the leading whole chunks, the number of
    bytes of their lines, and whether one of those lines is not as this version writes it (an earlier version's:
    :func:`~bio_mrc.inference.kept_lines.line_written_now`)."""
    ids, ends, group, position, first_earlier = [], [0], [], 0, None
    with open(stream, "rb") as handle:
        for raw in handle:
            line = len(ids) * len(decodings) + len(group) + 1
            if (record := _whole_record(raw, line, stream)) is None:
                break
            if multi_span and "answers" not in record and not answer_record_problem(record, False):
                raise DataFormatError(f"line {line} was written without {argument('multi_span', True)} (it lists no span texts), this run "
                                      "has it; resume with the same options", source=str(stream))
            if problem := answer_record_problem(record, multi_span):
                raise DataFormatError(f"line {line} {problem}: it is no answers line bio-mrc predict wrote; start again "
                                      f"without {argument('resume', True)}", source=str(stream))
            if not multi_span and "answers" in record:  # only a --multi-span run writes each answer's span texts
                raise DataFormatError(f"line {line} was written with {argument('multi_span', True)} (it lists the answer's span texts), this "
                                      "run has none; resume with the same options", source=str(stream))
            if record.get("decoding") != decodings[len(group)] or (group and record.get("id") != group[0]):
                raise DataFormatError(f"line {line} answers {json_value(record.get('id'))} with decoding {json_value(record.get('decoding'))}, "
                                      f"not what these options write (decodings {list(decodings)}); resume with the same "
                                      "options", source=str(stream))
            if line_written_now(record, line, stream).encode("utf-8") != raw and first_earlier is None:
                first_earlier = position
            group.append(record.get("id"))
            position += len(raw)
            if len(group) == len(decodings):
                ids.append(group[0])
                ends.append(position)
                group = []
    keep = len(ids) // chunk_size * chunk_size
    return ids[:keep], ends[keep], first_earlier is not None and first_earlier < ends[keep]


def _whole_record(raw: bytes, line: int, stream: Path) -> dict | None:
    """Line ``line`` of the stream read back: None where it is cut short by a kill (no newline yet) or nested past the
    parser's stack, both answered again; a whole line that is no JSON object is no line predict wrote, refused."""
    if not raw.endswith(b"\n"):
        return None
    try:
        record = json.loads(raw)
    except RecursionError:
        return None
    except ValueError:
        record = None
    if not isinstance(record, dict):  # the file is not ours: kept as it is, never cut back and written over
        raise DataFormatError(f"line {line} is not a JSON object: it is no answers line bio-mrc predict wrote; start again "
                              f"without {argument('resume', True)}", source=str(stream))
    return record


def predict_to_files(
    trained: TrainedModel, questions: Iterable[Example], plan: StreamPlan, output: str | Path, resume: bool = False,
    shard: Shard = SINGLE_PROCESS, total: int | None = None, progress: bool = False, source: str | None = None, *,
    name: str | None = None, limit: int | None = None, unanswerable: int | None = None,
) -> PredictionFiles:
    """Answer ``questions`` with ``trained`` into the answers stream beside ``output``, then write each decoding's
    official, n-best and ``na_prob`` files from it (rank 0; every rank of ``shard`` calls this), as ``bio-mrc predict`` does.
    ``plan``'s decodings are settled first (:func:`answering_plan`: ``auto`` is the model's preferred one), and
    questions without an answer that a decoding with no tuned no-answer threshold answers are a
    :class:`~bio_mrc.inference.abstention.NeverAbstainsWarning`. ``output`` ``-``: the stream goes to standard output
    and no file is written. ``resume``: the questions the stream answers already are skipped. ``source`` names the
    data in the stream's record of its options (``<stem>.answers.run.json``), which a resume must match; ``name``
    names it in the warning. ``limit``: the first questions alone. ``total``: the number of questions (None: a
    list's length), and ``unanswerable`` how many have no answer (None: counted in a list; questions read once, an
    iterator's, are not counted, so give it for the warning). ``progress``: bars for the questions answered and the
    windows run, on stderr. Returns the files written (:class:`PredictionFiles`:
    none for ``-``, nor on ranks other than 0)."""
    questions = _check_arguments(trained, questions, plan, output, limit)
    if resume and str(home_expanded(output)) == "-":  # before the plan is settled and its warnings said
        raise ConfigError("predict_to_files: resume continues the answers file beside output; output '-' (standard "
                          "output) holds none")
    plan = answering_plan(trained, plan)  # before any file is written
    output = home_expanded(output)
    stream = None if str(output) == "-" else answers_stream_path(output)
    outputs = [check_file_target(path) for path in prediction_outputs(output, plan.decodings)]  # no FIFO or device
    check_outputs_apart(outputs, [p for p in (source, name) if isinstance(p, (str, os.PathLike))], [trained.path])
    if stream is not None:
        read_file_list(output, [source, name])  # the earlier run's list, refused before any work where predict did not write it
        check_files_apart(output, outputs)  # no file another output's list names written over
    with contextlib.ExitStack() as held:  # rank 0 holds the stream, alone, from here until the official files are written
        if stream is not None:  # before anything is said or read, as bio-mrc predict holds it (then it is held already)
            shard.broadcast_result(lambda: None if claimed_before(stream) is not None else held.enter_context(answers_claimed(output)))
        questions, total = _limited(questions, limit, total)
        if shard.writes:
            if total is not None:  # a stream of no count given is not counted before the work
                warn_limit_past(limit, total, name or "the data")
            warn_untuned_abstention(trained, plan.decodings, _unanswerable(questions, unanswerable), total, name, limit)
        resumed = resumed_stream(output) if resume else None

        def claim() -> list[str]:
            if stream is None:
                return []
            _remove_temporaries(outputs)
            return _begin_partial(output, plan, run_record(trained, plan, source), resumed)

        done = shard.broadcast_result(claim)
        return _predict_into(trained, questions, plan, output, stream, shard, done, total, progress)


def _check_arguments(trained: object, questions: object, plan: object, output: object, limit: object) -> Iterable[Example]:
    """Before any file is written: each argument of :func:`predict_to_files` of a type it takes; returns the questions
    to read (an iterator's first question checked, then put back)."""
    call = "predict_to_files"
    instance_argument(trained, TrainedModel, "trained", call, hint=" (load a model folder with TrainedModel.load(path))")
    instance_argument(plan, StreamPlan, "plan", call, hint=" (e.g. StreamPlan(('span',)))")
    path_argument(output, "output", call)
    checked_limit(limit)
    wrong = (str, bytes, os.PathLike, Mapping)
    if isinstance(questions, wrong) or not isinstance(questions, Iterable):
        raise TypeError(f"{call}: questions is a list or iterator of Example (a loaded file's .examples, e.g. "
                        f"load_squad(path).examples), got {given_type(questions)}")
    if isinstance(questions, Sequence):
        stray = next((question for question in questions if not isinstance(question, Example)), _NONE)
    else:
        iterator = iter(questions)
        first = next(iterator, _NONE)
        questions = iterator if first is _NONE else itertools.chain([first], iterator)
        stray = _NONE if first is _NONE or isinstance(first, Example) else first
    if stray is not _NONE:
        raise TypeError(f"{call}: questions holds {given_type(stray)}, not an Example (a loaded file's .examples)")
    return questions


_NONE = object()  # no question that is not an Example (None may be one), or an iterator's first where it holds none


def answering_plan(trained: TrainedModel, plan: StreamPlan) -> StreamPlan:
    """``plan`` as ``trained`` answers it, each decoding once (``auto``: the model's preferred), once the model may
    abstain by the thresholds it holds (:func:`~bio_mrc.inference.abstention.check_abstention`) and a BIO length
    prior that none of the decodings reads is refused in one line."""
    check_abstention(trained)
    check_length_prior(trained.decodings, plan.decodings, plan.config.bio_length_prior)
    return replace(plan, decodings=tuple(dict.fromkeys(resolve_decoding(trained.decodings, d, heads=trained.heads) for d in plan.decodings)))


def _unanswerable(questions: Iterable[Example], given: int | None) -> int | None:
    """``given``, else the number of a list's questions labelled as having no answer (None for questions read once)."""
    if given is not None or not isinstance(questions, Sequence):
        return given
    return sum(example.is_labelled and not example.is_answerable for example in questions)


def _limited(questions: Iterable[Example], limit: int | None, total: int | None) -> tuple[Iterable[Example], int | None]:
    """The first ``limit`` questions (all for None) and their number: ``total``, else a list's length."""
    if limit is not None:
        questions = list(itertools.islice(questions, limit)) if isinstance(questions, Sequence) else itertools.islice(questions, limit)
        total = min(total, limit) if total is not None else None
    if total is None and isinstance(questions, Sequence):
        total = len(questions)
    return questions, total


def _remove_temporaries(outputs: Sequence[Path]) -> None:
    """The temporary files an earlier run killed while it wrote one of ``outputs`` left beside it: this run writes them
    anew, and the folder ends as an uninterrupted run leaves it."""
    for folder in {path.parent for path in outputs}:
        remove_temporaries_of(folder, [path.name for path in outputs if path.parent == folder])


def _begin_partial(output: Path, plan: StreamPlan, wanted: dict, resumed: tuple[Path, Path] | None) -> list[str]:
    """Begin the stream this run writes beside the files in place (:func:`~bio_mrc.inference.files.partial_paths`), which
    stay as they are until its files are all written: empty, or ``resumed`` (a stream and its record, checked against
    this run's record ``wanted``) continued; the stream in place is continued in a copy of its whole chunks. Its record
    is written after its lines, so a record never stands beside another run's lines. Returns the ids answered."""
    partial, record = partial_paths(output)
    done: list[str] = []
    if resumed is None:
        open_no_follow(partial, "w").close()
    elif resumed[0] == partial:
        check_run_record(resumed[1], wanted)
        done = resume_point(partial, plan.decodings, plan.chunk_size, plan.multi_span)
    else:
        check_run_record(resumed[1], wanted)
        done, end, earlier = whole_chunks(resumed[0], plan.decodings, plan.chunk_size, plan.multi_span)
        _copy_start(resumed[0], partial, end, earlier)
    atomic_write_json(record, wanted, indent=1)
    return done


def _copy_start(source: Path, target: Path, size: int, earlier: bool = False) -> None:
    """The first ``size`` bytes of ``source`` written to ``target`` (emptied first, never through a link), a block at a
    time; ``earlier``: where one of their lines is an earlier version's, each line as this version writes it."""
    if earlier:
        with open_no_follow(target, "w") as writing:
            write_kept_lines(source, writing, size)
        return
    with open(source, "rb") as reading, open_no_follow(target, "w") as writing:
        while size > 0 and (block := reading.read(min(size, 1 << 20))):
            writing.buffer.write(block)
            size -= len(block)


def _predict_into(
    trained: TrainedModel, questions: Iterable[Example], plan: StreamPlan, output: str | Path, stream: Path | None,
    shard: Shard, done: list[str], total: int | None, progress: bool,
) -> PredictionFiles:
    """:func:`predict_to_files` once the questions ``done`` are known: the run's stream grown, then the files written
    from it and moved in with it and its record, one set."""
    to_stdout = stream is None
    partial, partial_record = partial_paths(output) if stream is not None else (None, None)
    sink = None if not shard.writes else sys.stdout if to_stdout else open_no_follow(partial, "a" if done else "w")
    # a full disk while the stream grows is one line naming its folder; the lines written stay for --resume
    with writes_named(stream.parent) if stream is not None else contextlib.nullcontext():
        try:
            shown = progress and shard.writes
            with tqdm(total=total, desc="questions", unit="question", disable=not shown) as bar, inference_bar(shown) as bars:
                stream_answers(trained, questions, plan, sink, shard, done, bar, bars)
        finally:
            if sink is not None and sink is not sys.stdout:
                sink.close()
    if not shard.writes or stream is None:
        return PredictionFiles()
    if not partial.is_file():  # removed meanwhile, its lines written on into the removed file: no answers to read back
        gone = "it was" if partial.parent.is_dir() else "the output folder was"
        raise OutputError(f"{gone} removed while the answers were written to it; run predict again", str(partial))
    written = write_files_from_stream(partial, Path(output), plan.decodings, plan.multi_span, earlier=read_file_list(output),
                                      moved_in=[(partial_record, run_record_path(output)), (partial, stream)])
    remove_earlier_files(output, [path.name for files in written.values() for path in files.paths()])  # once the new set is in
    return PredictionFiles(stream, run_record_path(output), written, file_list_path(output))
