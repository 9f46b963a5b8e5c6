"""The package's tables: every head, decoding and task, with what the rest of the code asks of each.

Code asks these tables and never compares a head's, decoding's or task's name (tests/test_registry.py
greps for such comparisons). An entry names its functions as ``"module:attribute"`` strings, resolved
when called, so the tables sit in the core layer while the functions live in the layers above;
an entry registered from outside the package (a test, a plugin) may hold the callables themselves.
docs/layout.md shows how to add a head, a decoding and a task.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace
from importlib import import_module
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from .errors import BioMrcError, DataFormatError
from .json_syntax import json_value
from .plurals import number_form

TAG_SEQUENCE = "tag sequence"  # multi-span answers: one tag sequence, the spans its decoder chose by their posteriors
NBEST_SPANS = "n-best spans"  # multi-span answers: the non-overlapping n-best single spans
TAGS_OR_NBEST = "tag sequence or n-best spans"  # multi-span answers: the tagger's spans where it holds several likely ones, else the n-best
POSITION_TARGET = "position"  # a label per window: an integer position, or a distribution over positions
TOKEN_TARGET = "token"  # a label per token: a distribution over tags, (seq,) integer tags, or (seq, K) integer tags of K annotators


def resolve(target: str | Callable[..., Any]) -> Callable[..., Any]:
    """A callable (or any object), or the attribute a ``"module:attribute"`` string names."""
    if not isinstance(target, str):
        return target
    module, _, attribute = target.partition(":")
    return getattr(import_module(module), attribute)


@dataclass(frozen=True, kw_only=True)
class HeadEntry:
    """A head, declared once: everything the model, the windows, the collator, the forward pass and the ONNX
    export ask of it.

    ``attribute`` is the model's attribute holding it (so its weights' names, ``span_head.*``);
    ``build(model_config, hidden_size)`` makes it (a :class:`bio_mrc.heads.Head`: logits and their loss);
    ``targets`` maps each label it trains on to how batches pad it (:data:`POSITION_TARGET`, :data:`TOKEN_TARGET`),
    and ``build_targets(window, feature_config)`` makes those labels for one training window
    (:class:`bio_mrc.features.targets.Window`: its token offsets, masks and the question's answer spans);
    ``outputs`` names its logits, in the order ``forward`` returns them, as the model's output, the window outputs
    and the ONNX export name them, ``output_dims`` gives their dimensions after (batch, seq) and ``pad`` fills them
    past a window's end; ``loss_weight`` weights its loss: the model config's attribute of that name, or the
    number itself; ``needs_tag_mask``: its loss is scored on the tagged tokens; ``description`` says what it is (model
    cards), ``short_description`` the same in a few words, as ``bio-mrc train --help`` lists it (None: ``description``)."""

    name: str
    attribute: str
    build: str | Callable[..., Any]
    targets: Mapping[str, str]
    build_targets: str | Callable[..., Any]
    outputs: tuple[str, ...]
    output_dims: tuple[tuple[int, ...], ...]
    pad: float
    loss_weight: str | float
    needs_tag_mask: bool
    description: str
    short_description: str | None = None

    @property
    def help_text(self) -> str:
        """What ``bio-mrc train --help`` says of it: its short description, else its description."""
        return self.description if self.short_description is None else self.short_description

    def weight(self, model_config: Any) -> float:
        """The weight of its loss in the model's total loss."""
        return getattr(model_config, self.loss_weight) if isinstance(self.loss_weight, str) else float(self.loss_weight)

    def named_outputs(self, logits: Any) -> dict[str, Any]:
        """What the head's ``forward`` returned (a tensor, or a tuple of them), by ``outputs``' names."""
        named = logits if isinstance(logits, tuple) else (logits,)
        if len(named) != len(self.outputs):
            raise ValueError(f"head {self.name!r} returned {len(named)} tensors; its entry names {len(self.outputs)}: {self.outputs}")
        return dict(zip(self.outputs, named))

    def check_tag_mask(self, tag_mask: Any) -> None:
        """Refuse its labels without a tag mask when its loss is scored on the tagged tokens (``needs_tag_mask``)."""
        if self.needs_tag_mask and tag_mask is None:
            raise ValueError(f"{', '.join(self.targets)} need a tag_mask (or paragraph_mask) saying which tokens carry a tag")

    def window_targets(self, window: Any, feature_config: Any) -> dict[str, Any]:
        """Its labels of one training window, each of ``targets`` (a missing or extra one is refused)."""
        made = resolve(self.build_targets)(window, feature_config)
        if set(made) != set(self.targets):
            raise ValueError(f"head {self.name!r}: build_targets made {sorted(made)}, its entry names {sorted(self.targets)}")
        return made


@dataclass(frozen=True, kw_only=True)
class DecodingEntry:
    """A decoding: the heads it reads, ``function(outputs, examples, decode_config) -> predictions``, whether
    the BIO span-length prior applies, the key its no-answer threshold is saved under, how it gives several
    answers (:data:`TAG_SEQUENCE`, :data:`NBEST_SPANS` or :data:`TAGS_OR_NBEST`), ``auto_rank`` (``auto`` picks the available
    decoding of lowest rank, for one answer and several alike), and its span-count rule:
    a span after the first joins a multi-span answer only with a probability of at least ``min_span_probability``
    (this default until one is tuned on multi-span questions; ``span_probability`` says what that probability is).
    A tag-sequence decoding also names ``merge_tags(outputs, n_questions)`` (its tag log-probabilities, windows
    merged into one row per question) and ``decode_tags(merged, examples, decode_config) -> predictions``, so
    its answers and its tag-level scores come from one merge (the length prior's tuning passes ``kept_spans``, the
    single answers' spans each prediction keeps, where the task's answer reads its first span alone:
    :meth:`decode_merged`). ``rank_windows(outputs)``, for a decoding whose no-answer
    score is the minimum over a question's windows of each window's own null (the [CLS] rule), gives the windows as
    questions of their own, so over several documents each span is measured against the null of the window it was
    read in (:mod:`bio_mrc.inference.documents`). ``span_starts(outputs)``, for a decoding that reads spans from windows
    one by one, gives the outputs with the tokens its spans may start on and their first ends marked (BERT's
    maximum-context rule: a span is read only in the window where its first token has the most context among the
    windows holding the whole span), before it decodes them or ranks their windows."""

    name: str
    heads: frozenset[str]
    function: str | Callable[..., Any]
    uses_length_prior: bool
    threshold_key: str
    multi_span: str
    auto_rank: int
    description: str
    min_span_probability: float = 0.1
    span_probability: str = "its share of the probability of the question's n-best spans"
    merge_tags: str | Callable[..., Any] | None = None
    decode_tags: str | Callable[..., Any] | None = None
    rank_windows: str | Callable[..., Any] | None = None
    span_starts: str | Callable[..., Any] | None = None

    @property
    def decodes_tags(self) -> bool:
        """Whether its multi-span answers are the tag sequence's spans (so the tag-level scores apply)."""
        return self.multi_span == TAG_SEQUENCE

    def decode(self, outputs: Any, examples: Any, config: Any) -> list[Any]:
        return resolve(self.function)(self.starting(outputs), examples, config)

    def starting(self, outputs: Any) -> Any:
        """``outputs`` with the tokens its spans may start on marked (``span_starts``); as they are where it names none."""
        return outputs if self.span_starts is None else resolve(self.span_starts)(outputs)

    def ranking_windows(self, outputs: Any) -> Any:
        """The windows whose spans rank across documents, each as a question of its own (``rank_windows``), their spans
        starting where the whole question's would (:meth:`starting`), or None where the question's null is not a
        window's (then each document's own spans rank)."""
        return None if self.rank_windows is None else resolve(self.rank_windows)(self.starting(outputs))

    def merged_tags(self, outputs: Any, n_questions: int) -> Any:
        """The tag sequence of each question (``merge_tags``), or None for a decoding that reads none."""
        return None if self.merge_tags is None else resolve(self.merge_tags)(outputs, n_questions)

    def decode_merged(self, merged: Any, examples: Any, config: Any, kept_spans: int | None = None) -> list[Any]:
        """Predictions from :meth:`merged_tags` (merge once, decode many ways). ``kept_spans``: the single answers' spans
        each prediction keeps, best first, of the n-best found (a grid of decodings whose scoring reads fewer); None:
        as many as ``config`` asks (``decode_tags`` is then called with the three arguments alone)."""
        kept = {} if kept_spans is None else {"kept_spans": kept_spans}
        return resolve(self.decode_tags)(merged, examples, config, **kept)

    def keep_spans(self, predictions: Any, min_probability: float, n_best: int | None = None) -> list[Any]:
        """Its multi-span answers under the span-count rule with ``min_probability``, from its decoded predictions
        (of n-best spans, the first ``n_best`` the candidates: all with None)."""
        (kept,) = resolve(SPAN_COUNT_RULES[self.multi_span])(predictions, (min_probability,), n_best)
        return kept

    def keep_spans_at(self, predictions: Any, thresholds: Sequence[float], n_best: int | None = None) -> Iterator[list[Any]]:
        """:meth:`keep_spans` at each of ``thresholds`` in turn (a tuning's grid), what the rule reads of a prediction
        whatever the threshold (its spans grouped by text, their texts normalised) read once."""
        return resolve(SPAN_COUNT_RULES[self.multi_span])(predictions, thresholds, n_best)

    def with_nbest(self, predictions: Any, wider: Callable[[], list[Any]]) -> list[Any]:
        """Its multi-span ``predictions`` with the n-best spans of ``wider()`` (the same questions decoded with more
        n-best spans) where its answers read the n-best spans' shares; a tag sequence's as they are."""
        return resolve(NBEST_SOURCES[self.multi_span])(predictions, wider)

    def single_nbest(self, predictions: Any, single: Callable[[], list[Any]]) -> list[Any]:
        """The single answers' n-best spans of the questions of its multi-span ``predictions`` (as :meth:`with_nbest`
        left them), which a multi-span answer's confidence is read from: ``predictions`` themselves where their spans
        are those n-best spans, ``single()`` (the questions decoded for single answers) where they are a tag sequence's."""
        return resolve(SINGLE_NBEST_SOURCES[self.multi_span])(predictions, single)

    def length_prior(self, prior: float | None) -> float | None:
        """The BIO span-length prior it decodes with when the options hold ``prior`` (None: the prior does not apply)."""
        return prior if self.uses_length_prior else None


# How a comparison summarises a task's cells (bio_mrc.harness.summary.SUMMARIES), and its question groups (QUESTION_GROUPS).
SQUAD_TRAINING_SCORES = {"f1": ("f1",), "exact": ("exact_match", "exact")}  # the official scripts' v1.1 and v2.0 names
MEAN_OVER_QUESTIONS = "mean over questions"  # the main statistic is the mean of a per-question column (SQuAD's F1)
SUMMED_SPAN_COUNTS = "summed span counts"  # the main statistic is a ratio of summed span counts (MultiSpanQA's EM F1)
LENGTHS_AND_QUESTION_WORDS = "lengths and question words"
# The question subsets a task whose questions may have no answer scores apart (SQuAD 2.0's official script's, which
# bio_mrc.metrics.squad_official reads here too), each with whether its questions have an answer; and the comparison of
# every cell with the reader that always abstains.
NO_ANSWER_SUBSETS = {"HasAns": True, "NoAns": False}
ABSTAINING_SCORES = "bio_mrc.metrics.task_scores:abstain_f1"

# How each kind of multi-span answer keeps its spans under the span-count rule, at each of several thresholds in turn:
# ``rule(predictions, thresholds, n_best) -> the answers at each threshold`` (one threshold: DecodingEntry.keep_spans).
SPAN_COUNT_RULES = {TAG_SEQUENCE: "bio_mrc.decoding.nbest_spans:keep_probable_spans_at",
                    NBEST_SPANS: "bio_mrc.decoding.nbest_spans:nbest_multi_span_at",
                    TAGS_OR_NBEST: "bio_mrc.decoding.nbest_spans:tagged_or_nbest_spans_at"}
# Where each kind of multi-span answer takes the n-best spans its shares are of, given them decoded more widely.
NBEST_SOURCES = {TAG_SEQUENCE: "bio_mrc.decoding.nbest_spans:as_decoded",
                 NBEST_SPANS: "bio_mrc.decoding.nbest_spans:wider_nbest",
                 TAGS_OR_NBEST: "bio_mrc.decoding.nbest_spans:wider_nbest"}
# Where each kind of multi-span answer takes the single answers' n-best spans its confidence is read from.
SINGLE_NBEST_SOURCES = {TAG_SEQUENCE: "bio_mrc.decoding.nbest_spans:single_answers",
                        NBEST_SPANS: "bio_mrc.decoding.nbest_spans:as_decoded",
                        TAGS_OR_NBEST: "bio_mrc.decoding.nbest_spans:as_decoded"}


@dataclass(frozen=True, kw_only=True)
class TaskEntry:
    """A task: its data ``format`` (the comparison config's) and the official ``scorer`` that names it for
    ``bio-mrc evaluate --metric`` and ``bio-mrc tune --metric``; ``load(path)`` for data the format table
    (:mod:`bio_mrc.data.formats`) does not read (None: :func:`bio_mrc.data.squad.load_squad` reads it);
    ``examples_as(examples, source)`` for a task that reads any SQuAD-shaped form but means something else by its answers
    (the listed spans as the parts of one answer), what the read questions of the file ``source`` become (None: they
    stay as read);
    ``gold(examples)`` (each question's gold texts); whether questions may have no answer (``no_answer``: SQuAD
    2.0's no-answer thresholds are tuned); whether its answers are span lists (``multi_span_answers``: every span
    of a question, scored as a set) or one text per question; how it scores, each a function:

    - ``score(task, gold, answers, ids) -> {column: per-question array}``: what a comparison's cell keeps per
      question (SQuAD's ``em``/``f1``, MultiSpanQA's span ``counts``, or columns of its own);
    - ``aggregate(task, columns) -> {metric: value}``: the metrics of those columns (a summary row's; ``statistic``
      is the one the tuning maximises);
    - ``official(task, gold, answers, na_probs) -> metrics``: what ``bio-mrc evaluate`` prints;
    - ``right(task, predictions, gold) -> 0/1 per question``: whether each single answer is right, what its
      confidence is calibrated against (None: no single answer to be right, no calibrator);
    - ``summary``: how a comparison summarises its cells, an entry of :data:`bio_mrc.harness.summary.SUMMARIES`
      (:data:`MEAN_OVER_QUESTIONS`: the statistic is a mean of a per-question column; :data:`SUMMED_SPAN_COUNTS`);
    - ``groups``: the question groups of its breakdowns, an entry of :data:`bio_mrc.harness.summary.QUESTION_GROUPS`
      (None: none); the summary and the groups are named, not imported, so what scores a cell never depends on
      how a report summarises it;
    - ``tuning_steps``: what is tuned on its held-out questions after the BIO length prior, each
      ``step(tuned, outputs, examples, decodings, task, data_sets)`` (``data_sets``: the question ids of each data set
      the questions come from, each weighed alike);

    the ``metrics`` of a summary row and their ``metric_titles``, the main ``statistic`` (``statistic_title``,
    what it is computed over: ``statistic_detail``), the ``squad_version`` of SQuAD's official scorer (None:
    another scorer; the default SQuAD scoring fields then score by :attr:`squad_rules`), whether a predictions file
    must answer every question (``complete_predictions``), how reports name it (``title``), and how cross-validation
    draws its folds (``folds(examples, k, seed=)``: by question, or by article where questions of one article share its
    paragraphs, as SQuAD's do); what the evaluation during training logs of each decoding (``training_scores``: a
    score's name, ``<decoding>_<name>``, and the keys of ``official``'s metrics it is,
    the first one given; None: each of ``metrics`` under its own name); the metrics the report's table of each data set
    of an evaluation shows (``data_set_metrics``); and what the report's BIO tag scores take as each question's gold
    spans (``tag_gold``: SQuAD's first annotator's; every part of a multi-span answer)."""

    name: str
    format: str
    scorer: str
    load: str | Callable[..., Any] | None
    gold: str | Callable[..., Any]
    no_answer: bool
    metrics: tuple[str, ...]
    statistic: str
    statistic_title: str
    title: str
    score: str | Callable[..., Any] = "bio_mrc.metrics.task_scores:squad_question_scores"
    aggregate: str | Callable[..., Any] = "bio_mrc.metrics.task_scores:column_means"
    official: str | Callable[..., Any] = "bio_mrc.metrics.task_scores:aggregated_official"
    summary: str = MEAN_OVER_QUESTIONS
    right: str | Callable[..., Any] | None = None
    groups: str | None = None
    tuning_steps: tuple[str | Callable[..., Any], ...] = ()
    multi_span_answers: bool = False
    complete_predictions: bool = False
    squad_version: str | None = None
    metric_titles: Mapping[str, str] = field(default_factory=dict, compare=False)
    statistic_detail: str = ""
    data_set_metrics: tuple[str, ...] = ("em", "f1")  # the metrics a report's table of each evaluation data set shows
    tag_gold: str = "the first annotator's spans"  # what a report's BIO tag scores take as gold
    folds: str | Callable[..., Any] = "bio_mrc.data.article_splits:kfold_by_question"
    examples_as: str | Callable[..., Any] | None = None
    training_scores: Mapping[str, tuple[str, ...]] | None = field(default=None, compare=False)

    @property
    def layout(self) -> str | None:
        """The layout :func:`bio_mrc.data.squad.load_squad` must find its data in (None: any SQuAD-shaped form)."""
        return None if self.format == SQUAD_FORMAT or self.examples_as is not None else self.format

    def load_questions(self, path: Any) -> list[Any]:
        """The questions of ``path`` as its own ``load`` reads them. A loader's failure other than a
        :class:`~bio_mrc.errors.BioMrcError` (which says its own line) is one line naming the task and the file:
        a plug-in's loader meeting a record it cannot read raises what Python raises there (a KeyError, …)."""
        load = resolve(self.load)
        try:
            return list(load(path))
        except BioMrcError:
            raise
        except Exception as error:
            raise DataFormatError(f"the loader of task {self.name!r} could not read it: {type(error).__name__}: {error}",
                                  source=str(path)) from None

    def task_examples(self, examples: Any, source: str = "") -> list[Any]:
        """The questions ``load_squad`` read from ``source``, as this task means them (``examples_as``)."""
        return list(examples) if self.examples_as is None else resolve(self.examples_as)(examples, source)

    def format_of_read(self, read_format: str) -> str:
        """The format of questions ``load_squad`` read as ``read_format`` for this task: its own where it means their
        answers its way (``examples_as``), else the one read (MultiSpanQA's layout, or a SQuAD-shaped form)."""
        return read_format if self.examples_as is None else self.format

    def scores_during_training(self) -> dict[str, tuple[str, ...]]:
        """What the evaluation during training logs of each decoding: ``training_scores``, or (None) each of its
        ``metrics`` under its own name, the key ``official``'s default (the metrics of its columns) gives it."""
        return {metric: (metric,) for metric in self.metrics} if self.training_scores is None else dict(self.training_scores)

    def training_score(self, name: str, official: Mapping[str, float]) -> float:
        """The training score ``name`` of :meth:`scores_during_training` from ``official``'s metrics: the first of its keys
        they hold (none: refused, naming the task, the score and the metrics there are)."""
        from .errors import ConfigError

        keys = self.scores_during_training()[name]
        found = next((official[key] for key in keys if key in official), None)
        if found is None:
            raise ConfigError(f"task {self.name!r}: its training score {name!r} reads {list(keys)}, which its official metrics "
                             f"lack (they are {sorted(official)}); name them in its entry's training_scores")
        return found

    def metric_title(self, metric: str) -> str:
        """How reports title a metric: its entry in ``metric_titles``, else its name."""
        return self.metric_titles.get(metric, metric)

    def answer(self, prediction: Any) -> Any:
        """A prediction's answer as the task scores it: the list of its span texts, or its one text."""
        return list(prediction.answers) if self.multi_span_answers else prediction.answer

    def answer_spans(self) -> int | None:
        """How many of a prediction's spans, best first, :meth:`answer` reads: its first alone where the answer is one
        text, every one (None) where it is the list of their texts."""
        return None if self.multi_span_answers else 1

    def answer_text(self, prediction: Any) -> str:
        """A prediction's answer as one line of text (a multi-span answer's texts sorted, one per line: a line break
        inside a span becomes a space, so the lines are the spans)."""
        return "\n".join(sorted(text.replace("\n", " ") for text in prediction.answers)) if self.multi_span_answers else prediction.answer

    def answer_key(self, answer_text: str) -> str:
        """An :meth:`answer_text` as two answers agree by: a span list's set of normalised span texts (the order of its
        spans and a repeated text are no difference, as for the metrics), else the normalised text."""
        from .answer_text import normalize_answer  # text and array code, loaded where answers are compared, not with the tables

        if not self.multi_span_answers:
            return normalize_answer(answer_text)
        return "\n".join(sorted({normalize_answer(line) for line in answer_text.split("\n")}))

    def answers_as_span_lists(self, asked: bool = False) -> bool:
        """Whether answers are written as span lists: ``asked`` for (``--multi-span``), or the task's own."""
        return asked or self.multi_span_answers

    def strict_predictions(self, asked: bool = False) -> bool:
        """Whether a question a predictions file leaves out is an error: ``asked`` (``--strict``), or the task's rule."""
        return asked or self.complete_predictions

    def decode_config(self, config: Any) -> Any:
        """``config`` (a :class:`~bio_mrc.decoding.postprocess.DecodeConfig`) as this task's questions decode:
        an answer required unless questions may have none, span lists where answers are span lists."""
        return replace(config, require_answer=not self.no_answer, multi_span=self.multi_span_answers)

    def scored_alike(self, other: "TaskEntry") -> bool:
        """Whether ``other``'s questions are scored as this task's (one evaluation may join them)."""
        return other.scorer == self.scorer and other.no_answer == self.no_answer

    def tuning_split_problem(self, tune: "TaskEntry | None") -> str | None:
        """What is wrong with tuning an evaluation of this task on questions of ``tune`` (None: nothing)."""
        if self.no_answer and tune is None:
            return (f"eval: its questions may have no answer ({self.title}), so each decoding's no-answer threshold is tuned: "
                    "give a 'tune' split (other articles) some of whose questions have no answer")
        if self.no_answer and not tune.no_answer:
            return (f"tune: every question has an answer ({tune.title}), so no no-answer threshold can be tuned on it for an "
                    f"evaluation whose questions may have none ({self.title}); tune on other articles some of whose "
                    "questions have no answer")
        if tune is not None and tune.no_answer and not self.no_answer:
            return (f"tune: its questions may have no answer ({tune.title}), so it tunes a no-answer threshold, which would make "
                    f"the models abstain on an evaluation whose every question has an answer ({self.title}); tune on answerable "
                    "questions, or evaluate on SQuAD 2.0 questions")
        return None

    @property
    def squad_rules(self) -> str:
        """The SQuAD scorer's version its SQuAD-scored fields apply (the default ``score``, ``official`` and ``right``):
        its official scorer's (``squad_version``), else v2.0's where questions may have no answer, v1.1's where not."""
        return self.squad_version or ("2.0" if self.no_answer else "1.1")

    def no_answer_probabilities_problem(self) -> str | None:
        """Why no-answer probabilities cannot be scored with this task's official metrics (None: they can: SQuAD's
        official scorer reads them)."""
        if self.squad_version is None:
            return f"no-answer probabilities are for SQuAD's official scorer, and these questions are scored with {self.title}, which take none"
        return None

    def question_subsets(self) -> dict[str, bool]:
        """The question subsets its summary rows score apart, each with whether its questions have an answer: SQuAD 2.0's
        ``HasAns`` and ``NoAns`` where questions may have no answer, else none."""
        return dict(NO_ANSWER_SUBSETS) if self.no_answer else {}

    @staticmethod
    def subset_metric(subset: str, metric: str) -> str:
        """The name of ``metric`` over the questions of ``subset`` (``HasAns_f1``, as the official SQuAD 2.0 script names it)."""
        return f"{subset}_{metric}"

    def subset_metrics(self) -> list[str]:
        """Every :meth:`subset_metric` of its ``metrics`` over its :meth:`question_subsets`, subset by subset."""
        return [self.subset_metric(subset, metric) for subset in self.question_subsets() for metric in self.metrics]

    def threshold_columns(self) -> tuple[str, ...]:
        """A score table's column of the no-answer thresholds tuned for each seed: one where they are tuned (questions
        may have no answer), else none."""
        return ("threshold",) if self.no_answer else ()

    def abstaining_scores(self, examples: Any) -> Any:
        """Each question's statistic for the reader that always abstains, which a comparison measures every cell against
        where questions may have no answer; None where every question has one."""
        return resolve(ABSTAINING_SCORES)(self, examples) if self.no_answer else None

    def scores(self, gold: Any, predictions: Any, ids: Sequence[str]) -> dict[str, Any]:
        """Per-question columns (``score``) of ``predictions`` (each question's :class:`~bio_mrc.types.Prediction`)."""
        by_id = {p.id: p for p in predictions}
        return resolve(self.score)(self, gold, {qid: self.answer(by_id[qid]) for qid in ids}, list(ids))

    def metrics_of(self, columns: Mapping[str, Any]) -> dict[str, float]:
        """The metrics of per-question columns, by the entry's ``aggregate``."""
        return resolve(self.aggregate)(self, columns)


HEADS: dict[str, HeadEntry] = {}
DECODINGS: dict[str, DecodingEntry] = {}
TASKS: dict[str, TaskEntry] = {}


def _register(table: dict[str, Any], kind: str, entry: Any, title: Callable[[Any], str], replace: bool) -> Any:
    """``entry`` added to ``table`` under its name; a name registered already for another entry is refused unless
    ``replace`` (a notebook cell run again builds new callables, so an equal entry is rare), so a head, decoding or
    task of one's own never replaces a built-in one or another's by accident (the same entry again is no change)."""
    registered = table.get(entry.name)
    if registered is not None and registered != entry and not replace:
        raise ValueError(f"a {kind} named {entry.name!r} is registered already ({title(registered)}); give yours another "
                         "name, or pass replace=True to put yours in its place")
    table[entry.name] = entry
    return entry


def _check_entry(entry: Any, entry_class: type) -> None:
    """``entry`` an ``entry_class``: a dict or another kind of entry is refused here, not as an AttributeError later."""
    if not isinstance(entry, entry_class):
        raise TypeError(f"register a bio_mrc.registry.{entry_class.__name__}, got {type(entry).__name__}")


def register_head(entry: HeadEntry, *, replace: bool = False) -> HeadEntry:
    """Add a head to the table every layer reads; a name registered already for another entry is refused unless
    ``replace``, and so is an ``attribute`` another head holds or that is no identifier. Returns the entry."""
    _check_entry(entry, HeadEntry)
    # every model sets each registered head's attribute (None where it lacks the head): a shared one would unset another's
    shared = next((other.name for other in HEADS.values() if other.attribute == entry.attribute and other.name != entry.name), None)
    if not (isinstance(entry.attribute, str) and entry.attribute.isidentifier()) or shared is not None:
        held = f"holds the {shared!r} head already" if shared is not None else "is no Python identifier"
        raise ValueError(f"head {entry.name!r}: its attribute {entry.attribute!r} {held}; give it another attribute")
    return _register(HEADS, "head", entry, lambda e: e.description, replace)


def register_decoding(entry: DecodingEntry, *, replace: bool = False) -> DecodingEntry:
    """Add a decoding to the table every layer reads; a name registered already for another entry (or ``auto``) is
    refused unless ``replace``, and so is a malformed entry. Returns the entry."""
    _check_entry(entry, DecodingEntry)
    if not isinstance(entry.heads, (set, frozenset)) or not all(isinstance(name, str) for name in entry.heads):
        raise ValueError(f"decoding {entry.name!r}: heads must be a frozenset of head names, got {entry.heads!r}")
    if entry.multi_span not in SPAN_COUNT_RULES:
        raise ValueError(f"decoding {entry.name!r}: multi_span must be one of {tuple(SPAN_COUNT_RULES)}, got {entry.multi_span!r}")
    if (entry.merge_tags is None) != (entry.decode_tags is None):  # rows merged by one are decoded by the other
        given, missing = ("merge_tags", "decode_tags") if entry.decode_tags is None else ("decode_tags", "merge_tags")
        raise ValueError(f"decoding {entry.name!r}: names {given} without {missing}; a tag-sequence decoding names both "
                         "(its windows merged, then decoded), any other neither")
    if entry.name == AUTO_DECODING:  # "auto" picks among the decodings, so one of that name could never be asked for
        raise ValueError(f"a decoding cannot be named {AUTO_DECODING!r}: it asks for the best decoding a model's heads allow; "
                         "give yours another name")
    return _register(DECODINGS, "decoding", entry, lambda e: e.description, replace)


def register_task(entry: TaskEntry, *, replace: bool = False) -> TaskEntry:
    """Add a task to the table every layer reads; a name registered already for another entry is refused unless
    ``replace``. Returns the entry."""
    _check_entry(entry, TaskEntry)
    return _register(TASKS, "task", entry, lambda e: e.title, replace)


def _plugins_for(names: Iterable[Any], table: Mapping[str, Any]) -> None:
    """Load the installed plug-ins (:func:`bio_mrc.plugins.load_plugins`) where one of ``names`` is not in ``table``: a model folder or
    a call naming a plug-in's entry reads it without importing its code first."""
    if any(isinstance(name, str) and name not in table for name in names):
        from .plugins import load_plugins

        load_plugins()


def _lookup(table: Mapping[str, Any], kind: str, name: str) -> Any:
    if name not in table:
        raise ValueError(f"{kind} must be one of {tuple(table)}, got {json_value(name)}")
    return table[name]


def head(name: str) -> HeadEntry:
    return _lookup(HEADS, "head", name)


def decoding(name: str) -> DecodingEntry:
    return _lookup(DECODINGS, "decoding", name)


def task(name: str) -> TaskEntry:
    return _lookup(TASKS, "task", name)


class EntryNames(tuple):
    """The names a table offers (a command's choices), as a tuple, with what one's own entry there is (``own``): the
    command line's refusal of a name not among them says how a plug-in adds one (:mod:`bio_mrc.argument_parser`)."""

    own: str

    def __new__(cls, names: Iterable[str], own: str) -> "EntryNames":
        made = super().__new__(cls, names)
        made.own = own
        return made


def head_choices() -> EntryNames:
    """Every set of registered heads a model can carry, as ``heads`` spells it (registry order, ``+``-joined); a set
    of two heads naming the same logits is none (:func:`head_names` refuses it)."""
    names = list(HEADS)
    combos = (combo for size in range(1, len(names) + 1) for combo in itertools.combinations(names, size))
    return EntryNames(("+".join(combo) for combo in combos if len(set(head_outputs(combo))) == len(head_outputs(combo))),
                      "a head of your own")


def head_help() -> str:
    """What ``--heads`` offers, in words: every registered head's :attr:`HeadEntry.help_text`, then the first set of
    several heads (built when the help is, so a plug-in's head is listed in its own words)."""
    words = [f"{entry.name}: {entry.help_text}" for entry in HEADS.values()]
    joined = [choice for choice in head_choices() if "+" in choice]
    if joined:
        more = " (any set the choices list, joined by +)" if len(joined) > 1 else ""
        words.append(f"{joined[0]}: both on one encoder{more}")
    return "; ".join(words)


def head_names(heads: str) -> list[str]:
    """The heads ``heads`` (``"span+bio"``) names, in registry order; an unknown or repeated name is refused."""
    names = heads.split("+")
    _plugins_for(names, HEADS)
    unknown = [name for name in names if name not in HEADS]
    if unknown:  # a head of one's own is registered in this process before a model naming it is built or loaded
        raise ValueError(f"heads must be one of {head_choices()}, got {json_value(heads)}: no head named {', '.join(map(json_value, unknown))} "
                         "is registered (a head of your own: install the package whose bio_mrc.plugins entry point registers it, or import the code that "
                         "calls bio_mrc.registry.register_head first)")
    if len(set(names)) != len(names):
        raise ValueError(f"heads must be one of {head_choices()}, got {json_value(heads)}")
    outputs = head_outputs(names)  # a model's output holds one tensor a name: a second head's would replace the first's
    if shared := sorted({name for name in outputs if outputs.count(name) > 1}):
        raise ValueError(f"heads {json_value(heads)} name the same logits {shared}: a model carries one head of each output name")
    return [name for name in HEADS if name in names]


def head_outputs(heads: Iterable[str] | None = None) -> list[str]:
    """The logits of these heads (None: of every registered head), in registry order (the exported graph's outputs)."""
    chosen = set(HEADS if heads is None else heads)
    return [output for name in HEADS if name in chosen for output in HEADS[name].outputs]


def head_labels() -> dict[str, str]:
    """Every registered head's labels (the model's ``forward`` takes them by name), each with how batches pad it."""
    return {label: kind for entry in HEADS.values() for label, kind in entry.targets.items()}


def decoding_names() -> tuple[str, ...]:
    """Every registered decoding, in registry order."""
    return tuple(DECODINGS)


def decoding_choices() -> EntryNames:
    """``auto`` and every registered decoding: what a command or a request may ask for."""
    return EntryNames((AUTO_DECODING, *DECODINGS), "a decoding of your own")


def decodings_for(heads: str | Iterable[str]) -> list[str]:
    """Every decoding a model with these heads supports, in registry order."""
    have = set(heads.split("+") if isinstance(heads, str) else heads)
    return [name for name, entry in DECODINGS.items() if entry.heads <= have]


def length_prior_decodings() -> tuple[str, ...]:
    """The decodings that score the BIO head's spans, so its length prior applies."""
    return tuple(name for name, entry in DECODINGS.items() if entry.uses_length_prior)


def preferred_decoding(available: Iterable[str]) -> str:
    """``auto``'s choice among ``available``: the lowest ``auto_rank``, for one answer and several alike (the joint
    decoding gave the best multi-span answers out of domain: docs/multispan.md)."""
    return min(available, key=lambda name: DECODINGS[name].auto_rank)


# The default decoding of every command and API: the best one the model's heads allow (joint with both heads).
AUTO_DECODING = "auto"


def resolve_decoding(available: Sequence[str], decoding: str, heads: str | Iterable[str] | None = None) -> str:
    """``auto`` -> :func:`preferred_decoding` of the model's decodings; a decoding the heads cannot do is refused
    (one line naming it, the heads it lacks and what the model offers) rather than silently replaced. ``heads``: the
    model's (``"span+bio"`` or names; None: those its ``available`` decodings read)."""
    from .errors import ConfigError

    if decoding == AUTO_DECODING:
        return preferred_decoding(available)
    _plugins_for([decoding], DECODINGS)
    if not isinstance(decoding, str) or decoding not in DECODINGS:
        raise ConfigError(f"decoding must be one of {[AUTO_DECODING, *DECODINGS]}, got {json_value(decoding)}")
    if decoding not in available:
        missing = _missing_heads(decoding, available, heads)
        raise ConfigError(f"decoding {json_value(decoding)} needs the {' and '.join(missing)} "
                          f"{number_form(len(missing), 'head')}, which this model lacks; it offers {list(available)}")
    return decoding


def _missing_heads(decoding: str, available: Sequence[str], heads: str | Iterable[str] | None) -> list[str]:
    """The heads ``decoding`` reads that a model of ``heads`` (None: of those its ``available`` decodings read) lacks,
    in registry order; a name no head has (a plug-in's not loaded) after them."""
    if heads is None:
        have = {name for offered in available if offered in DECODINGS for name in DECODINGS[offered].heads}
    else:
        have = set(heads.split("+") if isinstance(heads, str) else heads)
    needed = DECODINGS[decoding].heads - have
    return [name for name in HEADS if name in needed] + sorted(needed - set(HEADS))


def task_for(format: str, has_unanswerable: bool) -> TaskEntry:
    """The task of questions in a data ``format``: the one task of that format, or, of several (SQuAD's
    versions), the one whose ``no_answer`` matches whether some question has no answer."""
    matching = [entry for entry in TASKS.values() if entry.format == format]
    if not matching:
        raise ValueError(f"format must be one of {tuple(dict.fromkeys(e.format for e in TASKS.values()))}, got {json_value(format)}")
    return next((e for e in matching if e.no_answer == has_unanswerable), matching[0]) if len(matching) > 1 else matching[0]


def squad_task(version: str) -> TaskEntry:
    """The SQuAD task the official scorer of ``version`` ("1.1", "2.0") scores: the first registered, the package's own,
    so that a plug-in's task scored by that scorer is reached by its own name, never in SQuAD's place."""
    versions: dict[str, TaskEntry] = {}
    for entry in TASKS.values():
        if entry.squad_version:
            versions.setdefault(entry.squad_version, entry)
    return _lookup(versions, "SQuAD version", version)


SQUAD_FORMAT = "squad"  # the format of every SQuAD-shaped form the data format table reads


def task_of_data(data_format: str, has_unanswerable: bool) -> TaskEntry:
    """The task of questions that :mod:`bio_mrc.data.formats` read as ``data_format``: the task of that format
    where one has it (MultiSpanQA's layout), else SQuAD's (JSON Lines, tables, MRQA and the rest are SQuAD-shaped)."""
    return task_for(data_format if data_format in data_formats() else SQUAD_FORMAT, has_unanswerable)


def data_formats() -> EntryNames:
    return EntryNames(dict.fromkeys(entry.format for entry in TASKS.values()), "a data format of your own (a task's)")


def scorers() -> EntryNames:
    """The official scorers ``bio-mrc evaluate --metric`` offers."""
    return EntryNames(dict.fromkeys(entry.scorer for entry in TASKS.values()), "a scorer of your own (a task's)")


def scorer(name: str, has_unanswerable: bool | None = None) -> TaskEntry:
    """The task scored by the official scorer ``name``: the first one, or of several (SQuAD's versions) the one whose
    ``no_answer`` matches ``has_unanswerable`` where that is known."""
    matching = [entry for entry in TASKS.values() if entry.scorer == _lookup({s: s for s in scorers()}, "metric", name)]
    return next((e for e in matching if e.no_answer == has_unanswerable), matching[0])


def tag_decoding() -> DecodingEntry:
    """The decoding whose tag sequence the BIO span-length prior is tuned on: the first tag-sequence decoding it applies to."""
    return next(entry for entry in DECODINGS.values() if entry.uses_length_prior and entry.merge_tags is not None)


def decodes_tag_sequences(decodings: Iterable[str]) -> bool:
    """Whether some of ``decodings`` gives multi-span answers as the spans of its tag sequence."""
    return any(DECODINGS[name].decodes_tags for name in decodings)


def tags_tokens(heads: Iterable[str]) -> bool:
    """Whether some of ``heads`` is scored on tagged tokens (``needs_tag_mask``), so a model of them has a tag level."""
    return any(head(name).needs_tag_mask for name in heads)


def tags_alone(heads: Iterable[str]) -> bool:
    """Whether every one of ``heads`` is scored on tagged tokens: a tagger with no head of another kind (a BIO-only model)."""
    return all(head(name).needs_tag_mask for name in heads)


register_head(HeadEntry(
    name="span", attribute="span_head", build="bio_mrc.heads.span:build_span_head",
    targets={"start_positions": POSITION_TARGET, "end_positions": POSITION_TARGET},
    build_targets="bio_mrc.features.targets:span_targets", outputs=("start_logits", "end_logits"), output_dims=((), ()), pad=float("-inf"),
    loss_weight="span_loss_weight", needs_tag_mask=False, short_description="start/end head",
    description="a start/end span head (one answer span, an n-best list, a no-answer score from the window's first token, `[CLS]` or `<s>`)",
))
register_head(HeadEntry(
    name="bio", attribute="bio_head", build="bio_mrc.heads.bio:build_bio_head",
    targets={"bio_targets": TOKEN_TARGET}, build_targets="bio_mrc.features.targets:bio_window_targets",
    outputs=("bio_logits",), output_dims=((3,),), pad=0.0,
    loss_weight="bio_loss_weight", needs_tag_mask=True, short_description="B/I/O tagging head",
    description="a BIO tagging head (B/I/O per paragraph token: one or several answer spans)",
))
EACH_WINDOW = "bio_mrc.decoding.window_outputs:each_window"  # every window a question of its own
MAX_CONTEXT_STARTS = "bio_mrc.decoding.window_outputs:max_context_starts"  # BERT's rule, among the windows holding the whole span
register_decoding(DecodingEntry(
    name="span", heads=frozenset({"span"}), function="bio_mrc.decoding.postprocess:decode_span",
    uses_length_prior=False, threshold_key="span", multi_span=NBEST_SPANS, auto_rank=1, rank_windows=EACH_WINDOW,
    span_starts=MAX_CONTEXT_STARTS,
    description="BERT's n-best start/end spans",
))
register_decoding(DecodingEntry(
    name="bio", heads=frozenset({"bio"}), function="bio_mrc.decoding.postprocess:decode_bio_predictions",
    uses_length_prior=True, threshold_key="bio/ratio", multi_span=TAG_SEQUENCE, auto_rank=2,
    description="the BIO head's tag log-likelihood ratios", min_span_probability=0.0,
    span_probability="its posterior: the probability, over every tag sequence, that the tags hold exactly that span",
    merge_tags="bio_mrc.decoding.postprocess:merge_tag_log_probs", decode_tags="bio_mrc.decoding.postprocess:decode_merged_tags",
))
register_decoding(DecodingEntry(
    name="joint", heads=frozenset({"span", "bio"}), function="bio_mrc.decoding.postprocess:decode_joint",
    uses_length_prior=True, threshold_key="joint", multi_span=TAGS_OR_NBEST, auto_rank=0, rank_windows=EACH_WINDOW,
    span_starts=MAX_CONTEXT_STARTS,
    description="the span and BIO heads as a product of experts",
    span_probability="where the BIO decoding's multi-span answer holds two or more spans each more likely than not, "
                     "those spans (the threshold is not asked); else its share of the probability of the question's n-best spans",
))
SQUAD_METRICS = ("em", "f1")
SQUAD_TITLES = {"em": "EM", "f1": "F1"}
SQUAD_TITLES |= {TaskEntry.subset_metric(subset, metric): f"{subset} {title}" for subset in NO_ANSWER_SUBSETS
                 for metric, title in SQUAD_TITLES.items()}
SQUAD_SCORING = dict(
    score="bio_mrc.metrics.task_scores:squad_question_scores", aggregate="bio_mrc.metrics.task_scores:column_means",
    official="bio_mrc.metrics.task_scores:squad_official", summary=MEAN_OVER_QUESTIONS,
    right="bio_mrc.metrics.task_scores:squad_right", groups=LENGTHS_AND_QUESTION_WORDS,
    metrics=SQUAD_METRICS, metric_titles=SQUAD_TITLES, statistic="f1", statistic_title="F1", training_scores=SQUAD_TRAINING_SCORES,
    folds="bio_mrc.data.article_splits:kfold_by_article",  # an article's questions share its paragraphs: held out together
)
MULTISPAN_METRICS = ("em_precision", "em_recall", "em_f1", "pm_precision", "pm_recall", "pm_f1")
MULTISPAN_SCORING = dict(
    score="bio_mrc.metrics.task_scores:span_count_scores", aggregate="bio_mrc.metrics.task_scores:span_count_metrics",
    official="bio_mrc.metrics.task_scores:multispan_official", summary=SUMMED_SPAN_COUNTS,
    tuning_steps=("bio_mrc.inference.tuning:tune_span_count_rules",), multi_span_answers=True, complete_predictions=True,
    gold="bio_mrc.data.multispanqa:multispan_gold_texts", metrics=MULTISPAN_METRICS, statistic="em_f1", statistic_title="EM F1",
    metric_titles={"em_precision": "EM P", "em_recall": "EM R", "em_f1": "EM F1", "pm_precision": "PM P", "pm_recall": "PM R",
                   "pm_f1": "PM F1"}, statistic_detail=" of the summed span counts",
    training_scores={"em_f1": ("em_f1",), "pm_f1": ("pm_f1",)}, data_set_metrics=("em_f1", "pm_f1"),
    tag_gold="each question's answer spans (all its parts)",  # one answer of several parts, not several annotators
)
register_task(TaskEntry(
    name="squad-v1.1", format="squad", scorer="squad", load=None, gold="bio_mrc.data.squad:gold_texts",
    squad_version="1.1", no_answer=False, title="SQuAD v1.1 official metrics", **SQUAD_SCORING,
))
register_task(TaskEntry(
    name="squad-v2.0", format="squad", scorer="squad", load=None, gold="bio_mrc.data.squad:gold_texts",
    squad_version="2.0", no_answer=True, title="SQuAD v2.0 official metrics", **SQUAD_SCORING,
))
register_task(TaskEntry(
    name="multispanqa", format="multispanqa", scorer="multispan", load=None, no_answer=False,
    title="MultiSpanQA official metrics (micro-averaged over spans)", **MULTISPAN_SCORING,
    folds="bio_mrc.data.article_splits:kfold_by_article",  # no title: the questions of one context are held out together
))
# SQuAD-shaped files whose listed spans are one answer's parts: read by load_squad, scored as MultiSpanQA, folded by article
ANSWER_PARTS = dict(scorer="multispan", load=None, examples_as="bio_mrc.data.answer_parts:as_answer_parts", no_answer=False,
                    folds="bio_mrc.data.article_splits:kfold_by_article", **MULTISPAN_SCORING)
register_task(TaskEntry(
    name="quoref", format="quoref", title="Quoref (listed spans form one answer), MultiSpanQA official metrics", **ANSWER_PARTS,
))
register_task(TaskEntry(
    name="drop", format="drop", scorer="multispan", load=None, no_answer=False, folds="bio_mrc.data.article_splits:kfold_by_article",
    title="DROP's span questions (an answer's spans its parts), MultiSpanQA official metrics", **MULTISPAN_SCORING,
))
register_task(TaskEntry(
    name="mash-qa", format="mash-qa", scorer="multispan", load=None, no_answer=False,
    folds="bio_mrc.data.article_splits:kfold_by_article",
    title="MASH-QA (an answer's sentences its parts), MultiSpanQA official metrics", **MULTISPAN_SCORING,
))
register_task(TaskEntry(
    name="answer-parts", format="answer-parts",
    title="SQuAD-shaped questions whose listed answers are the parts of one answer, MultiSpanQA official metrics", **ANSWER_PARTS,
))
