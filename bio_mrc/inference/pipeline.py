"""``pipeline("bio-mrc-qa", model=DIR)``: transformers' pipeline front end to :class:`AnswerExtractor`.

The call shape is the question-answering pipeline's that transformers 5.3 removed (``question=``,
``context=``, ``top_k=``, ``handle_impossible_answer=``, ``max_answer_len=``, ``batch_size=``,
``device=``), plus ``decoding=`` and ``multi_span=``. Nothing is decoded here: inputs become
examples through :meth:`AnswerExtractor.asked`, ``_forward`` runs the stride windows through
:meth:`TrainedModel.windows`, and ``postprocess`` decodes with :meth:`AnswerExtractor.predict`
(the saved thresholds and tuned settings), then only formats the answers as dicts.

``import bio_mrc`` makes transformers know the task and import this module the first time it is asked
for (:mod:`bio_mrc.transformers_registration`); importing this module registers it, and so does
``bio_mrc.register_pipeline()``.

``score`` (uncalibrated; each decoding ranks spans by its own score and these only rescale it; the
best answer's equals :func:`bio_mrc.inference.calibrators.raw_confidence`):

* every decoding: the softmax of the decoding's span scores over the question's n-best spans
  (``s_i + e_j`` for span, ``log P_start + log P_end + r`` for joint, ``r`` for bio, the tag
  log-likelihood ratio of the sequence holding only that span against all-O, with the tuned length
  prior), as transformers' ``run_qa`` example post-processes (the old pipeline scored P(start)·P(end)),
  always over the best 20 spans whatever ``top_k`` is
  (:func:`~bio_mrc.decoding.shares.nbest_shares`: a span past them gets ``exp(score)`` over the same sum),
  so asking for more alternatives changes no answer's ``score`` or ``probability``; with ``multi_span``,
  span and joint: each kept non-overlapping n-best span's probability (:func:`nbest_multi_span`, the same shares);
* ``bio`` with ``multi_span``: the spans of one tag sequence are not rivals, so each
  one's own probability: its posterior, the probability over every tag sequence that the tags hold exactly
  that span (the probability the span-count rule keeps it by).
* the empty answer (``handle_impossible_answer=True``, given when ``Prediction.abstain``: the
  decoding's ``no_answer_score`` exceeds the threshold saved with the model for that decoding, never
  when none is saved): ``sigmoid(no_answer_score)``, the probability of "no answer" against the best
  answer. With ``multi_span`` the result's top-level fields are its best span's.

One question over several documents (``question="...", context=[doc, doc, ...]``): the ``top_k`` best spans
across the documents, each with ``document`` (its index), ranked by the span's score above its own document's
no-answer score (:mod:`bio_mrc.inference.documents`), which needs no softmax over one document's rivals and so
compares across documents; ``score`` is its sigmoid, the probability of the span against no answer in its document.
With ``multi_span``, every document's own multi-span answer's spans (none of one that abstains), ranked alike, a list
(``top_k`` cuts it), each with its own ``probability`` too.
"""

from __future__ import annotations

import bisect
import contextlib
import contextvars
import functools
import inspect
import itertools
import threading
import unicodedata
import warnings
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Iterable, Iterator

import numpy as np
import torch
from transformers import AutoModelForQuestionAnswering, Pipeline
from transformers.pipelines import PIPELINE_REGISTRY

from .. import registry
from ..answer_text import TakenCharacters, trimmed_span
from ..arguments import check_flag
from ..config_schema import whole_number
from ..decoding.shares import nbest_shares
from ..decoding.window_outputs import WindowOutputs
from ..encoders import right_sided
from ..errors import ConfigError, DataFormatError, ModelFormatError, a_type
from ..features.pair_windows import ContextsAlone
from ..hub import local_folder, named_as_given
from ..model import BioMrcForQuestionAnswering
from ..model_folder import check_tokenizer, warn_export_beside_weights
from ..precision import pipeline_device
from ..progress import progress_bars
from ..qa_checkpoints import check_qa_folder, is_qa_model, span_model_from_qa_model
from ..types import AnswerSpan, Example, Prediction
from .abstention import NeverAbstainsWarning, never_abstains_line
from .answers import no_answer_probability
from .documents import DocumentRanking, rank_chunk
from .extract import AnswerExtractor, asks_over_documents, check_batch_size, check_top_k
from .loading import TrainedModel, check_folder_to_load, check_onnx_device, forward_precision, model_backend, window_settings
from .onnx_runner import OnnxModel
from .pipeline_keywords import LOADER_KEYWORDS, check_attention_kernel, check_model_kwargs, dtype_precision
from .pipeline_keywords import checked_keywords  # noqa: F401 (read by pipeline())
from .text_inputs import text_input

TASK = "bio-mrc-qa"
# The window options of transformers' question-answering pipeline: a bio_mrc model reads the windows it was trained with, from its config.
WINDOW_OPTIONS = ("doc_stride", "max_seq_len", "max_question_len")
# The old pipeline's spellings that transformers 5 dropped or that change no answer here, each with what to give.
_OLD_INPUTS = ("{name}= is transformers 4's spelling of the inputs, which transformers 5 dropped: give them first, "
               "qa(inputs), or as question= and context=")
DROPPED_OPTIONS = {
    "X": _OLD_INPUTS.format(name="X"),
    "data": _OLD_INPUTS.format(name="data"),
    "topk": "topk is transformers 4's spelling of top_k, which transformers 5 dropped: give top_k={value!r}",
    "padding": "padding changes no answer: a bio_mrc model pads each batch of windows itself; leave it out",
}
# Options of loading the model, which transformers' pipeline() hands to the constructor too: a call that gives one is refused.
LOADING_OPTIONS = {
    "local_files_only": ("local_files_only reads the Hugging Face cache alone where the model loads: give it to "
                         "pipeline(\"bio-mrc-qa\", model=..., local_files_only=True); a call reads no model files"),
}
_WARNING_ONCE = threading.Lock()  # calls from several threads warn of a constructor's default once between them


class BioMrcQuestionAnsweringPipeline(Pipeline):
    """Extractive QA with a saved bio_mrc model; see the module docstring for the options and scores.

    >>> from transformers import pipeline
    >>> qa = pipeline("bio-mrc-qa", model="runs/quick/models/joint-seed42-…", device="cpu")  # doctest: +SKIP
    >>> qa(question="Who wrote it?", context="It was written by Ada Lovelace.")  # doctest: +SKIP
    {'score': 0.93, 'start': 18, 'end': 30, 'answer': 'Ada Lovelace'}

    (The example needs a trained model folder, so doctest skips it.)

    ``model``: a bio_mrc model (:class:`~bio_mrc.model.BioMrcForQuestionAnswering`), an ONNX export of one, or
    transformers' extractive QA model (``...ForQuestionAnswering``, its encoder and span head run as a bio_mrc model);
    ``pipeline()`` loads it from the folder or hub id given as its ``model``. ``tokenizer``: the model's fast tokenizer,
    required (``pipeline()`` loads the folder's). ``precision``: of the forward pass, auto (default: fp32 where bf16 is
    not native; bf16 on a GPU with native bf16; on such a CPU the faster of the two for this model, measured once and
    cached: :mod:`bio_mrc.precision`), fp32 or bf16; ``dtype`` (``pipeline(dtype=...)``, ``torch_dtype=``):
    ``torch.float32`` is fp32, ``torch.bfloat16`` bf16. The other keywords (``device``, ``batch_size``) are
    transformers' ``Pipeline``'s, ``device`` checked first (:func:`bio_mrc.precision.pipeline_device`: a GPU's
    number, a name or a ``torch.device``).
    """

    _load_tokenizer = True
    _load_processor = _load_image_processor = _load_video_processor = _load_feature_extractor = False

    def __init__(self, model, tokenizer=None, precision: str | None = None, dtype: Any = None, **kwargs) -> None:
        """The pipeline of ``model`` and ``tokenizer`` (the class names each parameter)."""
        precision = dtype_precision(dtype, precision)  # refused before the model is read further
        if isinstance(model, ModelToLoad):  # transformers' loading step handed the path on: checked, then loaded here
            precision = dtype_precision(model.dtype, precision, model.dtype_name)
            model = model.load(kwargs.get("device"))
        device = kwargs.get("device")
        if isinstance(model, OnnxModel) and (device is None or (isinstance(device, str) and device.strip().lower() == "auto")):
            kwargs["device"] = "cpu"  # transformers' default is GPU 0 where there is one; the export runs on the CPU provider
        if kwargs.get("device") is not None:  # checked as every door checks it, before transformers parses it
            kwargs["device"] = export_device(kwargs["device"], isinstance(model, OnnxModel), str(getattr(model, "name_or_path", "")))
        if tokenizer is None:
            raise ModelFormatError(f"the {TASK} pipeline needs the model's (fast) tokenizer", str(getattr(model, "name_or_path", "")))
        if is_qa_model(model):  # transformers' own extractive QA model: its encoder and span head, as a bio_mrc model
            if Path(str(model.name_or_path)).is_dir():  # the checks its folder gets through every other door
                check_qa_folder(Path(str(model.name_or_path)))
            model = span_model_from_qa_model(model, tokenizer).to(model.device)
        if not isinstance(model, (BioMrcForQuestionAnswering, OnnxModel)):
            raise ModelFormatError(
                f"the {TASK} pipeline runs bio_mrc models and transformers' extractive QA models, got {a_type(model)}",
                str(getattr(model, "name_or_path", "")),
            )
        self.extractor = AnswerExtractor(trained_model(model, tokenizer, precision))  # before the options are checked
        self._defaults_warned: set[str] = set()  # decodings warned of for the constructor's handle_impossible_answer
        super().__init__(model, tokenizer, **kwargs)  # moves the model (in place) to `device`
        if self._batch_size is not None:
            check_batch_size(self._batch_size)

    def _sanitize_parameters(
        self, top_k=None, handle_impossible_answer=None, max_answer_len=None, decoding=None, multi_span=None,
        align_to_words=None, local_files_only=None, **unknown,
    ):
        """Every option is a decoding option: all go to ``postprocess``; the old window options are refused."""
        windows = [name for name in WINDOW_OPTIONS if name in unknown]
        if windows:
            raise ConfigError(f"{windows}: a bio_mrc model reads the windows it was trained with, from its config.json")
        for name, line in DROPPED_OPTIONS.items():
            if name in unknown:
                raise ConfigError(line.format(value=unknown[name]))
        if unknown:
            raise TypeError(f"unknown {TASK} options: {sorted(unknown)}")
        top_k = check_top_k(top_k, False)  # AnswerExtractor's line for the same value; with multi_span, _answer's
        if max_answer_len is not None and (not whole_number(max_answer_len) or max_answer_len < 1):
            raise ConfigError(f"max_answer_len must be a positive integer, got {max_answer_len!r}")
        max_answer_len = None if max_answer_len is None else int(max_answer_len)
        flags = {"align_to_words": align_to_words, "multi_span": multi_span, "handle_impossible_answer": handle_impossible_answer}
        align_to_words, multi_span, handle_impossible_answer = (None if flags[name] is None else check_flag(flags[name], name)
                                                                for name in flags)
        if decoding is not None:
            self.extractor.checked_decodings([decoding])  # one the heads can do, and reads a prior the extractor holds
        options = dict(top_k=top_k, handle_impossible_answer=handle_impossible_answer, max_answer_len=max_answer_len,
                       decoding=decoding, multi_span=multi_span, align_to_words=align_to_words)
        return {}, {}, {name: value for name, value in options.items() if value is not None}

    def _warn_never_abstains(self, asked: dict[str, Any]) -> None:
        """``handle_impossible_answer=True`` of a decoding without a tuned no-answer threshold returns no empty answer:
        one warning naming the caller's line, each call that asks for it (``asked``: the call's options), once for the
        constructor's (a standing default, said at the first call it applies to)."""
        options = {**self._postprocess_params, **asked}
        if not options.get("handle_impossible_answer"):
            return
        trained = self.extractor.trained
        chosen = registry.resolve_decoding(trained.decodings, options.get("decoding") or self.extractor.decoding,
                                          heads=trained.heads)
        default = "handle_impossible_answer" not in asked
        with _WARNING_ONCE:
            if default and chosen in self._defaults_warned:
                return
            if line := never_abstains_line(trained, [chosen], "handle_impossible_answer=True asks for no answer where there is none"):
                if default:
                    self._defaults_warned.add(chosen)
                warnings.warn(line, NeverAbstainsWarning, stacklevel=3)

    def __call__(self, *args, batch_size: int | None = None, num_workers: int | None = None, **kwargs):
        """``qa(question=..., context=...)``, ``qa(question, context)``, ``qa({"question": ..., "context": ...})``
        or a list of such dicts. One string (or dict) in, one result out; lists in, a list out.
        ``batch_size`` is the number of windows per forward pass (a list is run and decoded the extractor's ``chunk_size``
        questions at a time, long contexts' in slices: :meth:`AnswerExtractor.slices`).
        A ``datasets.Dataset``, a ``KeyDataset`` or a generator of such dicts in: an iterator of results out,
        answered ``batch_size`` questions at a time, as transformers pipelines stream them. ``num_workers`` is taken
        as every transformers pipeline takes it and changes nothing: the windows are cut in this process."""
        if num_workers is not None:
            check_num_workers(num_workers)
        if loading := sorted(LOADING_OPTIONS.keys() & kwargs.keys()):
            raise ConfigError(LOADING_OPTIONS[loading[0]])
        # refused now (for a stream, not at the first next()); transformers checks them again for each chunk
        options = {name: value for name, value in kwargs.items() if name not in ("question", "context")}
        self._warn_never_abstains(self._sanitize_parameters(**options)[2])
        if len(args) == 1 and is_stream(args[0]):
            size = check_batch_size(batch_size) if batch_size is not None else self._batch_size or self.extractor.trained.batch_size
            return self._stream(args[0], size, kwargs)
        return self._answer(args, kwargs, batch_size, ContextsAlone())

    def _answer(self, args: tuple, kwargs: dict[str, Any], batch_size: int | None, alone: ContextsAlone, first: int = 0):
        """One call's questions answered together; ``first`` numbers the records of a stream's chunk (``input N``).
        ``alone``: the contexts tokenized alone, kept across the call's slices (and a stream's chunks), so a context
        they share is tokenized once."""
        question, context = question_and_context(args, kwargs.pop("question", None), kwargs.pop("context", None), first)
        question, context = text_input(question, "question"), text_input(context, "context")  # an iterator read once, before it is looked at
        examples, single = self.extractor.asked(question, context, first=first)
        if not examples:
            return []
        options = {**self._postprocess_params, **self._sanitize_parameters(**kwargs)[2]}  # checked before the forward pass
        documents = asks_over_documents(question, context)
        if options.get("multi_span") and options.get("top_k", 1) > 1 and not documents:  # over documents: a cut of every span
            raise ConfigError("top_k > 1 asks for alternative answers, multi_span for one answer of several spans: pick one")
        batch_size = check_batch_size(batch_size) if batch_size is not None else self._batch_size or self.extractor.trained.batch_size
        if documents:
            multi_span = bool(options.get("multi_span"))
            top_k = options.get("top_k", None if multi_span else 1)
            return self._answer_documents(examples, batch_size, top_k, multi_span, kwargs, alone)
        if single:
            return super().__call__(_Questions(examples, single, batch_size, alone), **kwargs)
        answers, calls = [], self.call_count
        for asked in self.extractor.slices(examples):  # one slice's windows held at a time
            answers += super().__call__(_Questions(list(asked), False, batch_size, alone), **kwargs)
        self.call_count = calls + 1  # one call, whatever its chunks, toward transformers' warning of sequential calls
        return answers

    def _answer_documents(self, examples: list[Example], batch_size: int, top_k: int | None, multi_span: bool,
                          kwargs: dict[str, Any], alone: ContextsAlone):
        """One question's documents run and decoded a slice of the extractor's chunks at a time into one ranking (its
        ``top_k`` spans, None: all), which the last chunk's ``postprocess`` formats."""
        ranking, calls, answers = DocumentRanking(top_k, multi_span), self.call_count, None
        chunks = list(self.extractor.slices(examples))
        for k, chunk in enumerate(chunks):  # one slice's windows held at a time
            last = k == len(chunks) - 1
            answers = super().__call__(_Questions(list(chunk), False, batch_size, alone, ranking, last), **kwargs)
        self.call_count = calls + 1  # one call, whatever its chunks, toward transformers' warning of sequential calls
        return answers

    def _stream(self, inputs: Iterable[Any], batch_size: int, options: dict[str, Any]) -> Iterator[Any]:
        items = (inputs[i] for i in range(len(inputs))) if not isinstance(inputs, Iterable) else iter(inputs)
        first, alone = 0, ContextsAlone()  # an error names the record by its place in the whole stream
        while chunk := list(itertools.islice(items, batch_size)):
            yield from self._answer((chunk,), dict(options), batch_size, alone, first)
            first += len(chunk)

    def preprocess(self, inputs: "_Questions") -> dict[str, Any]:
        """The questions as read by the call, handed on to the forward step whole."""
        return {"questions": inputs}

    def _forward(self, model_inputs: dict[str, Any]) -> dict[str, Any]:
        questions = model_inputs["questions"]
        windows = self.extractor.trained.windows(questions.examples, batch_size=questions.batch_size, progress=False,
                                                 alone=questions.alone)
        return {"questions": questions, "windows": windows}

    def postprocess(self, model_outputs, top_k=1, handle_impossible_answer=False, max_answer_len=None,
                    decoding="auto", multi_span=False, align_to_words=False):
        """Decode (AnswerExtractor's code) and format: a dict per question, a list of ``top_k`` dicts when ``top_k > 1``.

        ``model_outputs``: the forward step's questions and their windows' outputs. ``handle_impossible_answer``: the
        empty answer where the decoding abstains (its no-answer score past the threshold saved with the model).
        ``max_answer_len``: the longest span in tokens (None: the limit saved with the model, else the default). ``decoding``: span, bio, joint or
        auto (the best the model's heads allow). ``multi_span``: every span of the answer, not the single best.
        ``align_to_words``: each span widened to whole words (:func:`word_aligned`)."""
        decoding = registry.resolve_decoding(self.extractor.trained.decodings, decoding, heads=self.extractor.trained.heads)
        questions = model_outputs["questions"]
        n_best = max(1 if multi_span else top_k, self.extractor.decode_config.n_best)  # with multi_span top_k cuts the ranking

        def decoded(windows: WindowOutputs, examples: list[Example], several: bool = multi_span) -> list[Prediction]:
            predictions = self.extractor.predict(windows, examples, several, decoding, max_answer_length=max_answer_len, n_best=n_best)
            if align_to_words:
                predictions = [word_aligned(p, example.context, several) for p, example in zip(predictions, examples)]
            return predictions

        if (ranking := questions.documents) is not None:  # a chunk of one question's documents: formatted after the last
            windows, asked = model_outputs["windows"], questions.examples
            single = functools.partial(decoded, several=False)  # the scores that rank spans across documents
            rank_chunk(ranking, windows, asked, decoding, single, decoded)
            return document_answer_dicts(asked[0].question, ranking, handle_impossible_answer) if questions.last else None
        predictions = decoded(model_outputs["windows"], questions.examples)
        results = [answer_dicts(p, decoding, top_k, multi_span, handle_impossible_answer) for p in predictions]
        return results[0] if questions.single else results

    def save_pretrained(self, save_directory, **kwargs) -> None:
        """The model and tokenizer only: the pipeline's code is bio_mrc's, so nothing custom is written into
        the config (which would make ``pipeline()`` ask for ``trust_remote_code``)."""
        self.model.save_pretrained(save_directory, **kwargs)
        self.tokenizer.save_pretrained(save_directory, **kwargs)


@dataclass(frozen=True)
class _Questions:
    """A chunk of one call's examples as a single pipeline input, so all their windows are batched by length together."""

    examples: list[Example]
    single: bool
    batch_size: int
    alone: ContextsAlone  # the call's contexts tokenized alone, kept from chunk to chunk
    documents: DocumentRanking | None = None  # one question over several documents: their ranking so far
    last: bool = True  # the last chunk of them


def checked_model_folder(name: str, revision: str | None = None, device: Any = None, attention: Any = None, **hub: Any) -> Path:
    """The local folder of the model ``name`` (a folder, or a hub id's snapshot at ``revision``, the cache first) as
    ``pipeline("bio-mrc-qa", model=name)`` reads it, refused in the line every other door gives before transformers
    reads a file of it (:func:`~bio_mrc.inference.loading.check_folder_to_load`); a refusal names it as given.
    ``device`` is checked first (:func:`~bio_mrc.precision.pipeline_device`), as every door checks its options first.
    ``attention``: ``model_kwargs``' ``attn_implementation``, a kernel the encoder runs here (:func:`check_attention_kernel`).
    ``hub``: the pipeline's ``token``, ``cache_dir`` and ``local_files_only``, as :func:`~bio_mrc.hub.local_folder` takes them."""
    pipeline_device(device)
    hub["local_files_only"] = check_flag(hub.get("local_files_only", False), "local_files_only")
    folder = local_folder(name, revision=revision, **hub)
    export_device(device, model_backend(folder) == "onnx", name)
    with named_as_given(name, folder):
        check_folder_to_load(folder)
        check_attention_kernel(attention, folder, name)
    warn_export_beside_weights(folder, "auto", name)
    return folder


def export_device(device: Any, onnx: bool, where: str) -> str | None:
    """``device`` checked (:func:`~bio_mrc.precision.pipeline_device`); a GPU asked of an ONNX export is refused in
    the line every other door gives (:func:`~bio_mrc.inference.loading.check_onnx_device`)."""
    checked = pipeline_device(device)
    if checked not in (None, "cpu"):
        check_onnx_device(str(device), onnx, where)
    return checked


def trained_model(model: BioMrcForQuestionAnswering | OnnxModel, tokenizer, precision: str | None = None) -> TrainedModel:
    """The pipeline's model and tokenizer with the windows its config names (or its folder's run record)."""
    path = str(getattr(model, "name_or_path", "") or "")
    if path and Path(path).is_dir():  # transformers builds a stand-in tokenizer where the folder lacks tokenizer.json
        check_tokenizer(Path(path), model.config.encoder.vocab_size)
    precision = forward_precision(precision, isinstance(model, OnnxModel), path or "the model")
    return TrainedModel(model, right_sided(tokenizer), window_settings(model.config, Path(path)), path, precision)


def check_num_workers(num_workers: Any) -> int:
    """``num_workers`` if it is a whole number of processes, 0 or more (transformers' DataLoader's); else a ConfigError."""
    if not whole_number(num_workers) or num_workers < 0:
        raise ConfigError(f"num_workers is a number of processes, 0 or more, got {num_workers!r}")
    return int(num_workers)


def question_and_context(args: tuple, question, context, first: int = 0):
    """The old pipeline's input shapes -> (question, context) as :meth:`AnswerExtractor.examples` reads them
    (``first``: the number of the first input, within a stream). Several dicts one after another are their list."""
    if len(args) > 1 and all(isinstance(item, dict) for item in args):
        args = (list(args),)
    if len(args) == 2 and question is None and context is None:
        return args
    if len(args) == 1 and question is None and context is None:
        inputs = args[0]
        if isinstance(inputs, dict):
            check_input_keys(inputs, first)
            return _given(inputs, "question", first), _given(inputs, "context", first)
        if isinstance(inputs, (list, tuple)):
            for i, item in enumerate(inputs):
                if not isinstance(item, dict):
                    raise DataFormatError(f"input {first + i} is not a {{'question', 'context'}} dict", record=f"input {first + i}")
                check_input_keys(item, first + i)
            return [item.get("question") for item in inputs], [item.get("context") for item in inputs]
    if not args and question is not None and context is not None:
        return question, context
    raise DataFormatError(
        "give question= and context=, (question, context), a {'question', 'context'} dict or a list of them"
    )


def _given(item: dict, name: str, index: int) -> Any:
    """``item[name]``; where it is missing or None, the line an input of a list without it gets."""
    if item.get(name) is None:
        raise DataFormatError(f"empty or missing {name}", record=f"input {index}")
    return item[name]


@functools.cache  # read for every input: the signature is the class's, fixed once imported
def call_options() -> tuple[str, ...]:
    """The names a call takes as options (``_sanitize_parameters``'s but the loading options, the refused window
    options, ``batch_size`` and ``num_workers``)."""
    named = inspect.signature(BioMrcQuestionAnsweringPipeline._sanitize_parameters).parameters.values()
    taken = (p.name for p in named if p.kind is p.POSITIONAL_OR_KEYWORD and p.name not in ("self", *LOADING_OPTIONS))
    return (*taken, *WINDOW_OPTIONS, "batch_size", "num_workers")


def check_input_keys(item: dict, index: int) -> None:
    """Refuse an input dict that holds one of the call's options: the dict is read for its question and context
    alone, so the option would be dropped unread. Other keys (a data set's ``id``, ``title``, ``answers``) pass."""
    options = [name for name in call_options() if name in item]
    if options:
        raise DataFormatError(f"input {index} holds {options[0]!r}, an option of the call, not of one input: pass it as a "
                              f"keyword argument, qa(..., {options[0]}=...)", record=f"input {index}")


def is_stream(inputs: Any) -> bool:
    """A ``datasets.Dataset``, a torch ``Dataset`` (``KeyDataset``) or a generator: inputs transformers pipelines stream."""
    if isinstance(inputs, (str, bytes, dict, list, tuple)):
        return False
    return isinstance(inputs, Iterable) or (hasattr(inputs, "__getitem__") and hasattr(inputs, "__len__"))


def word_aligned(prediction: Prediction, context: str, multi_span: bool = False) -> Prediction:
    """``align_to_words``: each span widened to whole words (a start or an end inside a run of letters and
    digits moves to the run's edge; a combining mark on a space before it is no letter of it), as the old pipeline's
    option widened them to the tokenizer's words; an empty span stays empty. The parts of a multi-span answer never
    overlap: with ``multi_span``, a widened span that overlaps a better one's joins none. Each span is checked against
    the characters kept (:class:`TakenCharacters`) and a set of those kept, not against every kept span: a long
    document's multi-span answer may have tens of thousands of parts."""
    words = _WordRuns(context)
    widened = [(span, *_widened(words, span.start, span.end)) for span in prediction.spans]
    taken = TakenCharacters([(start, end) for _, start, end in widened]) if multi_span else None
    kept: set[tuple[int, int]] = set()
    spans = []
    for span, start, end in widened:
        if (taken is not None and taken.overlaps(start, end)) or (start, end) in kept:  # two pieces of one word: one answer
            continue
        kept.add((start, end))
        if taken is not None:
            taken.take(start, end)
        spans.append(replace(span, text=context[start:end], start=start, end=end))  # its score and probability kept
    return replace(prediction, spans=spans)


def _widened(words: _WordRuns, start: int, end: int) -> tuple[int, int]:
    """``(start, end)`` moved to the edges of the words it begins and ends in, trimmed; an empty span stays empty."""
    if start >= end:
        return start, end
    start, end = words.run(start)[0], words.run(end - 1)[1]
    return trimmed_span(words.context, start, end)  # a mark on a space before the word is no part of it


class _WordRuns:
    """The runs of one context's word characters (:func:`_joins`), each walked once and then found by bisection:
    the parts of an answer inside one long word (a DNA sequence, base64, a long identifier) cost its length once."""

    def __init__(self, context: str):
        self.context = context
        self.starts: list[int] = []  # the runs walked so far, in order; they never overlap
        self.ends: list[int] = []

    def run(self, at: int) -> tuple[int, int]:
        """The run holding character ``at``; ``(at, at + 1)`` where that character joins no word."""
        i = bisect.bisect_right(self.starts, at) - 1
        if i >= 0 and at < self.ends[i]:
            return self.starts[i], self.ends[i]
        context, start, end = self.context, at, at + 1
        if not _joins(context[at]):
            return start, end
        while start > 0 and _joins(context[start - 1]):
            start -= 1
        while end < len(context) and _joins(context[end]):
            end += 1
        self.starts.insert(i + 1, start)
        self.ends.insert(i + 1, end)
        return start, end


@functools.lru_cache(maxsize=65536)  # a long word repeats few characters
def _joins(character: str) -> bool:
    """Whether a character is of one word with a neighbour that also joins, for ``align_to_words``: letters, digits and
    the combining marks that belong to them (a Devanagari vowel sign, an Arabic haraka, a decomposed accent), except
    that a Han ideograph or a kana is a word of its own, as BERT's tokenizer reads text written without spaces."""
    return _word_character(character) and not _own_word(character)


def _word_character(character: str) -> bool:
    return character.isalnum() or unicodedata.category(character).startswith("M")


def _own_word(character: str) -> bool:
    """A Han ideograph, a hiragana or a katakana: a script written without spaces between its words."""
    return unicodedata.name(character, "").startswith(("CJK UNIFIED IDEOGRAPH", "CJK COMPATIBILITY IDEOGRAPH",
                                                       "HIRAGANA", "KATAKANA", "HALFWIDTH KATAKANA"))


def answer_dicts(prediction: Prediction, decoding: str, top_k: int, multi_span: bool, handle_impossible: bool):
    """One question's result in the old pipeline's shape (see the module docstring for ``score``)."""
    impossible = (handle_impossible and prediction.abstain) or not prediction.spans
    # The calibrated probability that the answer the model gives is right: the abstention's where it abstains, so
    # a span returned in its place (handle_impossible_answer=False) has none.
    calibrated = {} if prediction.probability is None else {"probability": prediction.probability}
    empty = {"score": _no_answer_score(prediction), "start": 0, "end": 0, "answer": ""} | (calibrated if prediction.abstain else {})
    span_calibrated = {} if prediction.abstain else calibrated
    if multi_span:
        spans = [_as_dict(s, p) for s, p in zip(prediction.spans, span_probabilities(prediction, decoding, True))]
        return dict(empty, spans=[]) if impossible else dict(spans[0], **span_calibrated, spans=spans)
    answers = [empty] if impossible else []  # "no answer" first, then the best spans
    scored = zip(prediction.spans, span_probabilities(prediction, decoding, False))
    answers += [_as_dict(s, p) for s, p in scored][: top_k - len(answers)]
    if not impossible and answers:
        answers[0].update(span_calibrated)
    return answers if top_k > 1 else answers[0]


def document_answer_dicts(question: str, ranking: DocumentRanking, handle_impossible: bool):
    """One question's answers over several documents, ranked across them (``ranking``: every document added, its
    ``top_k``, None: every span, a list): each answer's ``score`` is the sigmoid of its cross-document score, and
    ``document`` its document's index; a multi-span answer's span also has its own ``probability``."""
    ranked, predictions, top_k = ranking.ranked(question), ranking.predictions, ranking.top_k
    own = (lambda a: {"probability": a.probability}) if ranking.multi_span else (lambda a: {})
    answers = [{"score": _sigmoid(a.score), "start": a.start, "end": a.end, "answer": a.text, "document": a.document} | own(a)
               for a in ranked.answers]
    if (handle_impossible and not ranked.answer) or not answers:  # every document abstains (or none has a span)
        best = ranked.answers[0].document if ranked.answers else 0
        answers = [{"score": _no_answer_score(predictions[best]), "start": 0, "end": 0, "answer": "", "document": None},
                   *answers][:top_k]
    return answers if top_k is None or top_k > 1 else answers[0]


def _sigmoid(value: float) -> float:
    return float(1.0 / (1.0 + np.exp(-np.clip(value, -700.0, 700.0))))


def span_probabilities(prediction: Prediction, decoding: str, multi_span: bool) -> list[float]:
    """Each span's ``score`` as the module docstring defines it, from the decoder's own score."""
    if multi_span:  # each span's own probability: a tag sequence's posterior, or its n-best share
        return [s.score if s.probability is None else s.probability for s in prediction.spans]
    return nbest_shares([s.score for s in prediction.spans]).tolist()


def _as_dict(span: AnswerSpan, score: float) -> dict[str, Any]:
    return {"score": float(score), "start": span.start, "end": span.end, "answer": span.text}


def _no_answer_score(prediction: Prediction) -> float:
    return 0.0 if prediction.no_answer_score is None else no_answer_probability(prediction.no_answer_score)


class QuietModelLoader:
    """What ``pipeline("bio-mrc-qa", model=DIR)`` loads a PyTorch model folder with: ``AutoModelForQuestionAnswering``
    without transformers' "Loading weights" bar (library calls are quiet; the caller's own setting is restored after),
    in fp32 whatever the folder holds, as every loader keeps the weights: ``dtype`` is the forward pass's precision
    (:func:`dtype_precision`), not the weights' (transformers' ``"auto"`` loads them as saved, bf16 or fp16)."""

    @classmethod
    def from_pretrained(cls, *args: Any, **kwargs: Any):
        kwargs.pop("torch_dtype", None)
        with progress_bars(False):
            return AutoModelForQuestionAnswering.from_pretrained(*args, **{**kwargs, "dtype": torch.float32})


# The folder pipeline() checked before transformers read it (where bio_mrc's pipeline() ran): not checked again.
_CHECKED_FOLDER: contextvars.ContextVar[str | None] = contextvars.ContextVar("checked_folder", default=None)


@contextlib.contextmanager
def folder_checked(folder: Path):
    """Within it, the pipeline's loading takes ``folder`` as checked (:func:`checked_model_folder` ran on it)."""
    token = _CHECKED_FOLDER.set(str(folder))
    try:
        yield
    finally:
        _CHECKED_FOLDER.reset(token)


class ModelToLoad:
    """What the task's loading step gives ``pipeline("bio-mrc-qa", model=PATH)``: the path and the keywords transformers
    hands a loader (``model_kwargs`` with its own), no file read. The pipeline's constructor loads it once they and the
    folder are checked: refusals are its own one line, not an error of each loader transformers tried, and they hold
    however ``pipeline`` was imported (transformers' own function, bound before ``import bio_mrc``, included)."""

    device = None  # read by pipeline() beside a device_map: the model's place is the constructor's to set

    def __init__(self, path: str, keywords: dict[str, Any]) -> None:
        self.path, self.keywords = path, keywords

    @classmethod
    def from_pretrained(cls, path: Any, **keywords: Any) -> "ModelToLoad":
        return cls(str(path), keywords)

    @property
    def dtype_name(self) -> str:
        """Where the precision was given: ``dtype`` (pipeline()'s, or model_kwargs' moved there) or ``torch_dtype``."""
        return "dtype" if self.keywords.get("dtype") not in (None, "auto") else "torch_dtype"

    @property
    def dtype(self) -> Any:
        return self.keywords.get(self.dtype_name)

    def load(self, device: Any) -> Any:
        """The model (bio_mrc's, its export, or transformers' extractive QA model), once ``model_kwargs``
        (:func:`check_model_kwargs`), ``device``, the folder and the attention kernel are checked, before any weight is
        read; a hub id is read from its cached snapshot."""
        rest = {name: value for name, value in self.keywords.items() if name not in LOADER_KEYWORDS}
        check_model_kwargs(rest)
        folder = Path(self.path)
        if _CHECKED_FOLDER.get() != self.path:
            hub = {name: self.keywords[name] for name in ("token", "local_files_only") if self.keywords.get(name) is not None}
            hub |= {"cache_dir": rest["cache_dir"]} if rest.get("cache_dir") is not None else {}
            folder = checked_model_folder(self.path, self.keywords.get("revision"), device, rest.get("attn_implementation"), **hub)
        keywords = {name: value for name, value in self.keywords.items() if name != "revision"}  # the folder is the revision
        with named_as_given(self.path, folder):
            if model_backend(folder) == "onnx":
                return OnnxModel.from_pretrained(folder)
            return QuietModelLoader.from_pretrained(str(folder), **keywords)


def register_pipeline() -> str:
    """Register the ``bio-mrc-qa`` task with transformers' pipeline registry (idempotent); returns its name.
    Importing this module calls it; after ``import bio_mrc``, ``pipeline("bio-mrc-qa", ...)`` imports this module."""
    if PIPELINE_REGISTRY.supported_tasks.get(TASK, {}).get("impl") is not BioMrcQuestionAnsweringPipeline:
        PIPELINE_REGISTRY.register_pipeline(
            # The constructor loads the model: a PyTorch folder as BioMrcForQuestionAnswering, an export as OnnxModel.
            TASK, pipeline_class=BioMrcQuestionAnsweringPipeline, pt_model=(ModelToLoad,), type="text"
        )
    return TASK


register_pipeline()
