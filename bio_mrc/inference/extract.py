"""``AnswerExtractor``: question + context in, answer spans out (the QA pipeline transformers removed).

The ``bio-mrc-qa`` transformers pipeline (:mod:`.pipeline`) is a front end to the same object:
both turn inputs into examples with :meth:`AnswerExtractor.asked`, run the windows with
:meth:`TrainedModel.windows` and decode with :meth:`AnswerExtractor.predict`.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Set, ValuesView
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterator, Sequence, overload

from .. import registry
from ..arguments import check_flag, count_at_most
from ..data.text import check_context_length, check_text
from ..config_schema import whole_number
from ..decoding.postprocess import DecodeConfig
from ..features.config import FeatureConfig, estimated_windows
from ..features.pair_windows import ContextsAlone
from ..decoding.window_outputs import WindowOutputs, check_examples_of, check_finite_scores
from ..errors import ConfigError, DataFormatError, a_type
from ..types import Example, Prediction, RankedAnswers
from ..plurals import counted
from ..progress import WindowBars, window_bars
from .abstention import check_abstention
from .answers import decode_answers
from . import defaults
from .defaults import DEFAULT_CHUNK_SIZE
from .documents import DocumentRanking, document_names, rank_chunk
from .loading import TrainedModel, check_batch_size, check_length_prior
from .long_questions import warn_long_questions
from .text_inputs import TextBatch, text_input


def asks_over_documents(question: Any, context: Any) -> bool:
    """One question (a string) with a list of contexts: the question is asked of each document, and the answers
    are ranked across them (:func:`~bio_mrc.inference.documents.rank_across_documents`)."""
    return isinstance(question, str) and isinstance(context, (list, tuple))


def question_context_examples(question, context, first: int = 0) -> tuple[list[Example], bool]:
    """Questions and contexts (strings, or lists; one context may serve several questions; one question may ask
    several documents, see :func:`asks_over_documents`) -> one :class:`Example` per question and context (id = its
    position), and whether a single string was asked. A tuple, a pandas Series, a numpy array of strings or an
    iterator is read as its list (:func:`~bio_mrc.inference.text_inputs.text_input`). Every text is checked here,
    once, for every front end; an error names the input by its place (``first`` numbers the first: a chunk of a stream)."""
    question, context = text_input(question, "question"), text_input(context, "context")
    single = isinstance(question, str)
    questions, contexts = (_texts(value, name) for value, name in ((question, "question"), (context, "context")))
    if asks_over_documents(question, context):
        if not contexts:
            raise DataFormatError("no documents to answer the question from: the list of contexts is empty")
        questions = questions * len(contexts)
    if len(contexts) == 1:  # one context serves every question of the list, none where the list is empty
        contexts = contexts * len(questions)
    if len(questions) != len(contexts):
        raise DataFormatError(f"got {counted(len(questions), 'question')} but {counted(len(contexts), 'context')}")
    for i, (q, c) in enumerate(zip(questions, contexts), start=first):
        if isinstance(c, (list, tuple)):  # several documents inside a batch of questions
            raise DataFormatError("the context is a list of documents: one question over several documents is asked on its "
                                  "own (question=\"...\", context=[...]); in a batch each question has one context",
                                  f"input {i}")
        check_context_length(check_text(c, "context", record=f"input {i}"), record=f"input {i}")
        check_text(q, "question", record=f"input {i}")
    return [Example(str(i), q, c, None) for i, (q, c) in enumerate(zip(questions, contexts))], single  # unlabelled


def question_chunks(examples: Sequence[Example], size: int) -> Iterator[Sequence[Example]]:
    """``examples`` in slices of ``size``, in order (none for no examples); ``size``, an extractor's ``chunk_size``,
    checked as the command line's ``--chunk-size``."""
    if not whole_number(size) or size < 1:
        raise ConfigError(f"chunk_size is a positive number of questions (or documents) at a time, got {size!r}")
    count_at_most(size, "chunk_size")
    return (examples[begin : begin + size] for begin in range(0, len(examples), size))


def window_slices(examples: Sequence[Example], features: FeatureConfig, bound: int | None = None) -> Iterator[Sequence[Example]]:
    """A chunk's ``examples`` in consecutive slices, each the most questions whose windows, estimated from their
    contexts' lengths (:func:`~bio_mrc.features.config.estimated_windows`), number at most ``bound`` (None:
    :data:`~bio_mrc.inference.defaults.SLICE_WINDOWS`); a question estimated past it is a slice alone. A chunk under the
    bound (SQuAD's 1,000 questions) is one slice, the chunk itself. A question's answer reads its own windows alone, so
    the slices' answers are the chunk's (a score in float32's last bits aside: windows are batched by length within a
    slice), and the slices, read from the chunk alone, are the same on every run."""
    bound = defaults.SLICE_WINDOWS if bound is None else bound
    begin, held = 0, 0
    for end, example in enumerate(examples):
        windows = estimated_windows(len(example.context), features)
        if end > begin and held + windows > bound:
            yield examples[begin:end]
            begin, held = end, 0
        held += windows
    if begin < len(examples):
        yield examples if begin == 0 else examples[begin:]


def _texts(value: Any, name: str) -> list[Any]:
    """One text, or a list or tuple of texts, as a list (a bytes value or a number is no list of texts)."""
    if isinstance(value, (str, bytes, bytearray)):
        return [value]
    if isinstance(value, (Set, Mapping, ValuesView)):  # answers come back in the order asked, which these have none of
        raise DataFormatError(f"the {name} is a string or a list of strings; got {a_type(value)}, which has no order to "
                              "answer in: give a list (sorted(...), or list(...) in the order wanted)")
    if not isinstance(value, (list, tuple)):
        raise DataFormatError(f"the {name} is a string or a list of strings; got {a_type(value)}")
    return list(value)


def _model_source(given: Any) -> str | Path:
    """A model folder or hub id as given to :class:`AnswerExtractor`, or a TypeError naming what it takes."""
    if isinstance(given, (str, Path)):
        return given
    raise TypeError(f"AnswerExtractor takes a TrainedModel, a model folder or a hub id, got {type(given).__name__}")


def _loaded(trained: Any, revision: str | None) -> TrainedModel:
    """The model given to :class:`AnswerExtractor`: a loaded one as it is, a folder or hub id loaded at ``revision``. A
    revision with a loaded model is refused: it was read at its own, which the revision would be passed over for."""
    if not isinstance(trained, TrainedModel):
        return TrainedModel.load(_model_source(trained), revision=revision)
    if revision is not None:
        raise ConfigError(f"revision {revision!r} picks the version of a hub id to load, but this model is loaded already "
                          f"({trained.path}): give the hub id itself, or load it with TrainedModel.load(..., revision=)")
    return trained


class AnswerExtractor:
    """Extract one or several answer spans from contexts of any length.

    >>> extractor = AnswerExtractor.from_pretrained("runs/quick/models/joint-seed42-…")  # doctest: +SKIP
    >>> extractor("Who wrote it?", "It was written by Ada Lovelace.").answer  # doctest: +SKIP
    'Ada Lovelace'

    (The example needs a trained model folder, so doctest skips it.)

    ``trained`` is a loaded :class:`TrainedModel`, or a model folder or hub id, loaded as
    :meth:`from_pretrained` loads it (which also takes ``precision`` and ``device``); ``revision``: a branch, tag or
    commit hash of the hub id, refused with a folder or a loaded model.

    Each result is a :class:`~bio_mrc.types.Prediction`: ``spans`` (text,
    character ``start``/``end`` into the context, ``score``; in a multi-span answer each span's
    ``probability``), best first; ``no_answer_score`` where the decoding has one; ``abstain`` when the
    no-answer threshold saved with the model fired; ``confidence`` and the calibrated ``probability``.
    One question over a list of documents gives a :class:`~bio_mrc.types.RankedAnswers`
    (:meth:`answer_documents`). Long contexts are split into stride windows and merged back.

    ``decoding``: ``"span"``, ``"bio"``, ``"joint"`` or ``"auto"`` (the best the
    model's heads allow, for one answer or several: joint with both heads, else
    the one head's). ``multi_span=False`` returns the single best span; ``True``
    returns, for BIO, the spans of highest posterior that maximise the expected
    exact-match F1 (never none with the default ``require_answer``: "no answer" is
    the saved no-answer threshold's decision), for span the non-overlapping n-best spans, and for joint
    the tagger's spans where it holds two or more more likely than not, else its n-best
    spans; a span after the first is kept by the decoding's span-count rule: its own probability at least
    ``min_span_probability`` (None: the value tuned for the model on multi-span questions, else the decoding's default).
    ``decode_config``: the other decoding options (:class:`~bio_mrc.decoding.postprocess.DecodeConfig`; None: its
    defaults; a ``bio_length_prior`` given with a ``decoding`` that never reads it, span's, is refused, here and at a call
    that chooses such a decoding). ``batch_size``:
    windows a forward pass (None: the model's, 16 on a CPU, 128 on a GPU). ``progress``:
    progress bars on stderr, one for the questions cut into windows and one for the windows run, each over a call's
    whole list of questions.
    ``bio-mrc predict``, ``extract``, ``serve`` and the pipeline all answer through :meth:`predict`.
    A list of questions is answered :attr:`chunk_size` questions at a time, as ``bio-mrc predict`` answers them, and
    one question over a list of documents :attr:`chunk_size` documents at a time, each chunk in its
    :func:`window_slices` where its contexts are long, so memory holds one slice's windows whatever the number of
    questions or documents and the length of their contexts.
    """

    chunk_size = DEFAULT_CHUNK_SIZE  # questions (or documents) answered together: bio-mrc predict's chunk

    def __init__(
        self,
        trained: TrainedModel | str | Path,
        decoding: str = "auto",
        multi_span: bool = False,
        decode_config: DecodeConfig | None = None,
        min_span_probability: float | None = None,
        batch_size: int | None = None,
        progress: bool = False,
        revision: str | None = None,
    ) -> None:
        # A folder or hub id loads as from_pretrained loads it (precision and device: auto).
        self.trained = _loaded(trained, revision)
        check_abstention(self.trained)  # a threshold on an untrained no-answer score, refused before any work
        self.progress = check_flag(progress, "progress")  # bars for the windows and forward passes (the command line's, on long contexts)
        self.decoding = decoding
        registry.resolve_decoding(self.trained.decodings, decoding, heads=self.trained.heads)  # one the heads can do, refused at once
        self.multi_span = check_flag(multi_span, "multi_span")
        if decode_config is not None and not isinstance(decode_config, DecodeConfig):
            raise TypeError(f"decode_config is a DecodeConfig, got {a_type(decode_config)}")
        self.decode_config = decode_config or DecodeConfig()
        self.checked_decodings([decoding])  # a prior no decoding of this extractor reads is refused, not ignored
        if min_span_probability is not None:  # refused as DecodeConfig refuses it: a probability
            replace(self.decode_config, min_span_probability=min_span_probability)
        self.min_span_probability = min_span_probability
        # windows a forward pass: 16 on a CPU, 128 on a GPU
        self.batch_size = self.trained.batch_size if batch_size is None else check_batch_size(batch_size)

    def __repr__(self) -> str:
        return (f"AnswerExtractor({self.trained.description()}, decoding={self.decoding!r}, multi_span={self.multi_span}, "
                f"batch_size={self.batch_size})")

    @classmethod
    def from_pretrained(cls, model_dir: str | Path, precision: str | None = None, device: str | None = None,
                        revision: str | None = None, **kwargs) -> "AnswerExtractor":
        """The extractor of ``model_dir``, a saved model folder or a hub id (read from the hub cache first), at ``revision`` (a branch,
        a tag or a commit hash; None: the default branch; refused with a folder); ``precision``: auto
        (default), fp32 or bf16 (:mod:`bio_mrc.precision`); ``device``: cpu, cuda, cuda:1, mps or auto (default); any other
        keyword (``decoding``, ``multi_span``, ...) is the constructor's: one it lacks (``multispan=``), and a decoding the
        model's heads lack, are refused before the weights load."""
        inspect.signature(cls).bind(None, **kwargs)  # a TypeError naming the keyword, as the constructor's own
        decodings = [kwargs["decoding"]] if isinstance(kwargs.get("decoding"), str) else []
        return cls(TrainedModel.load(model_dir, precision=precision, device=device, decodings=decodings, revision=revision),
                   **kwargs)

    examples = staticmethod(question_context_examples)

    def asked(self, question, context, first: int = 0) -> tuple[list[Example], bool]:
        """:meth:`examples` of one call's inputs, as the answering doors read them (the call, the pipeline; ``serve``
        marks each answer instead), and the questions past the model's ``max_query_length``, answered as their first
        tokens, said in one :class:`~bio_mrc.inference.long_questions.LongQuestionWarning` (in a batch, each named
        ``input N``)."""
        examples, single = question_context_examples(question, context, first)
        name = (lambda _: "the question") if single else (lambda position: f"input {first + position}")
        warn_long_questions(self.trained, examples, name)
        return examples, single

    def predict(
        self,
        outputs: WindowOutputs,
        examples: Sequence[Example],
        multi_span: bool | None = None,
        decoding: str | None = None,
        **decode_options,
    ) -> list[Prediction]:
        """Decode ``outputs``, the windows of ``examples`` (:meth:`TrainedModel.windows`), with the saved thresholds and
        tuned settings, keeping every n-best span. ``multi_span`` and ``decoding`` as in the constructor; ``None``
        options fall back to the extractor's own; ``decode_options``
        (``require_answer``, ``max_answer_length``, ``n_best``) override its :class:`DecodeConfig`. Scores no decoding
        can read (NaN, infinity) raise :class:`~bio_mrc.errors.ModelOutputError` naming the question; a
        ``bio_length_prior`` (given here or the extractor's) that the decoding never reads is refused."""
        return self.predict_each(outputs, examples, [self.decoding if decoding is None else decoding], multi_span,
                                 **decode_options)[0]

    def predict_each(
        self, outputs: WindowOutputs, examples: Sequence[Example], decodings: Sequence[str], multi_span: bool | None = None,
        **decode_options,
    ) -> list[list[Prediction]]:
        """:meth:`predict` with each of ``decodings`` in turn, one list of predictions each: a ``bio_length_prior``
        is refused only where none of them reads it (``bio-mrc predict --decoding span bio``)."""
        multi_span = self.multi_span if multi_span is None else multi_span
        overrides = {name: value for name, value in decode_options.items() if value is not None}
        given = replace(self.decode_config, **overrides)
        resolved = self.checked_decodings(decodings, given.bio_length_prior)  # before any decoding
        check_examples_of(outputs, examples)
        check_finite_scores(outputs, examples, self.trained.name or self.trained.path)
        config = self.trained.decode_config(given)
        return [decode_answers(outputs, examples, decoding, config, self.trained.thresholds, multi_span,
                               self.min_span_probability, calibrators=self.trained.calibrators,
                               span_count_rules=self.trained.span_count_rules) for decoding in resolved]

    def checked_decodings(self, decodings: Sequence[str], prior: float | None = None) -> list[str]:
        """``decodings`` resolved (``auto``: the model's preferred), each one the heads can do; a BIO length ``prior``
        (None: the extractor's) that none of them reads is refused in one line, as the constructor refuses it."""
        resolved = [registry.resolve_decoding(self.trained.decodings, decoding, heads=self.trained.heads) for decoding in decodings]
        prior = self.decode_config.bio_length_prior if prior is None else prior
        check_length_prior(self.trained.decodings, resolved, prior)
        return resolved

    # The options are spelt out, so a type checker catches a misspelt one (multispan=...) as the call itself does; one
    # question (a string) over several documents is RankedAnswers, before the batch of the last overload. A batch is
    # any TextBatch (a pandas Series, a numpy array, an iterator), as text_input reads it.
    @overload
    def __call__(self, question: str, context: str, multi_span: bool | None = None, decoding: str | None = None,  # type: ignore[overload-overlap]
                 require_answer: bool | None = None, top_k: int | None = None, names: None = None) -> Prediction: ...
    @overload
    def __call__(self, question: str, context: TextBatch, multi_span: bool | None = None,  # type: ignore[overload-overlap]
                 decoding: str | None = None, require_answer: bool | None = None, top_k: int | None = None,
                 names: Sequence[str | None] | None = None) -> RankedAnswers: ...
    @overload
    def __call__(self, question: TextBatch, context: TextBatch, multi_span: bool | None = None,
                 decoding: str | None = None, require_answer: bool | None = None, top_k: int | None = None,
                 names: None = None) -> list[Prediction]: ...

    def __call__(self, question, context, multi_span: bool | None = None, decoding: str | None = None,
                 require_answer: bool | None = None, top_k: int | None = None, names: Sequence[str | None] | None = None):
        """One ``question`` and one ``context``: a :class:`Prediction` (its ``top_k`` best spans, default 1, or with
        ``multi_span`` every answer span; ``multi_span`` and ``decoding``: None, the extractor's own). Lists of
        questions and contexts: a list of them (a pandas Series, a numpy array of strings, any other sequence or an
        iterator of texts answers as its list). One question and a list
        of documents: :meth:`answer_documents` (``names`` name the documents). ``require_answer=False`` shapes
        ``multi_span`` answers alone, and is refused where single spans answer."""
        question, context = text_input(question, "question"), text_input(context, "context")  # an iterator read once, before it is looked at
        multi_span = self.multi_span if multi_span is None else check_flag(multi_span, "multi_span")
        require_answer = None if require_answer is None else check_flag(require_answer, "require_answer")
        asked = self.decode_config.require_answer if require_answer is None else require_answer  # the call's, else the extractor's
        if not asked and not multi_span:
            raise ConfigError(SINGLE_SPANS_ANSWER)  # never dropped unread
        if asks_over_documents(question, context):
            return self.answer_documents(question, context, top_k, names, multi_span, decoding, require_answer)
        if names is not None:  # never dropped unread
            raise ConfigError("names name the documents of one question asked of a list of them; this call asks "
                              "no list of documents (one question, a string, and a list of contexts)")
        examples, single = self.asked(question, context)
        if not examples:
            return []
        self.checked_decodings([self.decoding if decoding is None else decoding])  # refused before the forward pass
        top_k = check_top_k(top_k, multi_span)
        n_best = None if top_k is None else max(top_k, self.decode_config.n_best)
        predictions, alone = [], ContextsAlone()  # a context consecutive slices share, tokenized once
        with window_bars(len(examples), self.progress) as bars:  # one bar a stage over the whole list, not one a chunk
            for asked in self.slices(examples):  # one slice's windows held at a time
                predictions += self._answered(asked, bars, alone, multi_span, decoding, require_answer, n_best)
        if not multi_span:
            for p in predictions:
                p.spans = p.spans[: top_k or 1]
        return predictions[0] if single else predictions

    def slices(self, examples: Sequence[Example]) -> Iterator[Sequence[Example]]:
        """``examples`` a chunk of :attr:`chunk_size` at a time, each chunk in its :func:`window_slices`: the questions (or
        documents) whose windows are held at once, in order."""
        for chunk in question_chunks(examples, self.chunk_size):
            yield from window_slices(chunk, self.trained.features)

    def _answered(self, asked: Sequence[Example], bars: WindowBars, alone: ContextsAlone, multi_span: bool,
                  decoding: str | None, require_answer: bool | None, n_best: int | None) -> list[Prediction]:
        """One slice's questions run and decoded; their windows go when this returns (``alone`` keeps the last batch's
        contexts tokenized alone, for the next slice)."""
        outputs = self.trained.windows(asked, batch_size=self.batch_size, bars=bars, alone=alone)
        return self.predict(outputs, asked, multi_span, decoding, require_answer=require_answer, n_best=n_best)

    def answer_documents(
        self, question: str, documents: TextBatch, top_k: int | None = None, names: Sequence[str | None] | None = None,
        multi_span: bool | None = None, decoding: str | None = None, require_answer: bool | None = None,
    ) -> RankedAnswers:
        """Ask ``question`` of every document; the ``top_k`` best single spans across them (None: 1), best first,
        each naming its document (index, and ``names[index]`` where given), scored comparably across documents (see
        :mod:`bio_mrc.inference.documents`). With ``multi_span``, each document's own multi-span answer (none from a
        document that abstains), every span of every document ranked across them by the same score (``top_k``: the
        best so many; None: all), each span's ``probability`` its own, as its document's answer gives it.
        ``decoding`` (None: the extractor's) as in the constructor; ``require_answer=False`` shapes multi-span answers
        and is refused for single spans, which abstain only by the saved no-answer threshold. The documents are run and
        decoded :attr:`chunk_size` at a time (long ones a :func:`window_slices` slice of a chunk at a time), each
        slice's windows let go once its spans are ranked, with the answers of one pass."""
        multi_span = self.multi_span if multi_span is None else check_flag(multi_span, "multi_span")
        asked = self.decode_config.require_answer if require_answer is None else check_flag(require_answer, "require_answer")
        if not asked and not multi_span:  # the call's, else the extractor's decode_config: never dropped unread
            raise ConfigError(SINGLE_SPANS_ANSWER)
        top_k = check_top_k(top_k, False)
        top_k = 1 if top_k is None and not multi_span else top_k
        documents = text_input(documents, "list of documents")
        if not isinstance(question, str) or not isinstance(documents, (list, tuple)):  # a text would be a document a character
            raise DataFormatError("answer_documents asks one question (a string) of a list of documents, got "
                                  f"{a_type(question)} and {a_type(documents)}")
        names = document_names(names, len(documents))  # refused before the forward pass, read once
        examples, _ = self.asked(question, list(documents))
        decoding = self.checked_decodings([self.decoding if decoding is None else decoding])[0]  # refused before the forward pass
        ranking, alone = DocumentRanking(top_k, multi_span), ContextsAlone()  # a document two slices share, tokenized once
        n_best = max(top_k or 1, self.decode_config.n_best) if not multi_span else self.decode_config.n_best
        with window_bars(len(examples), self.progress) as bars:  # one bar a stage over every document
            for asked in self.slices(examples):  # one slice's windows held at a time
                self._rank_chunk(ranking, list(asked), decoding, n_best, require_answer, bars, alone)
        return ranking.ranked(question, names)

    def _rank_chunk(self, ranking: DocumentRanking, documents: list[Example], decoding: str, n_best: int,
                    require_answer: bool | None, bars: WindowBars, alone: ContextsAlone) -> None:
        """Run and decode one chunk of documents into ``ranking`` (with its ``multi_span``, each document's
        multi-span answer too, scored by its single n-best); their windows go when this returns."""
        single_require = None if ranking.multi_span else require_answer

        def decoded(windows: WindowOutputs, asked: list[Example]) -> list[Prediction]:
            return self.predict(windows, asked, False, decoding, require_answer=single_require, n_best=n_best)

        def several(windows: WindowOutputs, asked: list[Example]) -> list[Prediction]:
            return self.predict(windows, asked, True, decoding, require_answer=require_answer, n_best=n_best)

        outputs = self.trained.windows(documents, batch_size=self.batch_size, bars=bars, alone=alone)
        rank_chunk(ranking, outputs, documents, decoding, decoded, several)


# require_answer=False leaves a multi-span BIO answer without spans where the likeliest tag sequence is all O;
# a single span (one document's, or one ranked over several) is the best span whatever it says.
SINGLE_SPANS_ANSWER = ("require_answer=False changes only multi_span answers (no BIO span where the likeliest tag "
                       "sequence is all O); single spans, several documents' included, abstain only by the no-answer "
                       "threshold saved with the model")


def check_top_k(top_k: Any, multi_span: bool) -> int | None:
    """``top_k`` as a Python int (None stays None), or a ConfigError."""
    if top_k is not None and (not whole_number(top_k) or top_k < 1):
        raise ConfigError(f"top_k is a positive number of answers, got {top_k!r}")
    count_at_most(top_k, "top_k")
    if multi_span and top_k not in (None, 1):
        raise ConfigError("top_k > 1 asks for alternative answers, multi_span for one answer of several spans: pick one")
    return None if top_k is None else int(top_k)
