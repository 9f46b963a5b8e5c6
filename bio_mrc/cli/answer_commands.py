"""``bio-mrc predict``, ``extract`` and ``serve``: the commands that answer questions with a trained model."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from pathlib import Path

from .. import registry
from ..errors import ConfigError
from ..config_options import config_from_args
from ..data.text import check_not_questions, read_text_file
from ..io import check_file_target, check_outputs_apart, printable_json, printable_line
from ..serving.config import ServeConfig
from .command_data import check_span_count_option, data_source, format_task, prediction_questions
from .options import check_model_at_hand, decode_config

LONG_CONTEXT_CHARS = 100_000  # extract shows progress bars from this context length (about 100 windows)


def cmd_predict(args: argparse.Namespace) -> int:
    from ..inference.file_list import check_files_apart, read_file_list
    from ..inference.files import answers_claimed, prediction_outputs
    from ..inference.saved_settings import settled_decodings
    from ..inference.sharding import Shard

    if args.resume and args.output == "-":
        raise ConfigError("--resume continues PREDS.answers.jsonl; with --output - there is no such file")
    output = args.output if args.output == "-" else check_file_target(args.output)
    outputs = [check_file_target(path) for path in prediction_outputs(output, args.decoding)]
    check_outputs_apart(outputs, [args.data], [args.model])
    if output != "-":
        read_file_list(output, [args.data])  # an earlier run's list of its files: one predict did not write is refused before any work
        check_files_apart(output, prediction_outputs(output, settled_decodings(args.model, args.decoding)))  # another output's files
    decode = decode_config(args)  # its ranges checked before any work
    shard = Shard.from_environment()  # one process, or this one's share under torchrun / accelerate launch
    # rank 0 holds the answers file from here: a second predict into it is refused before it reads data or a model
    with answers_claimed(output) if shard.writes and output != "-" else contextlib.nullcontext():
        return _predict_into(args, output, decode, shard)


def _predict_into(args: argparse.Namespace, output, decode, shard) -> int:
    """``predict`` once its options are checked and its answers file held."""
    from ..inference.saved_settings import check_saved_decodings, check_saved_length_prior

    task = format_task(args)
    check_saved_decodings(args.model, args.decoding)  # before the data is read
    check_saved_length_prior(args.model, args.decoding, decode.bio_length_prior)
    questions, read_format, count, unanswerable = prediction_questions(args, task, quiet=not shard.writes)
    # MultiSpanQA's layout: {id: [span texts]}, what its metrics score
    multi_span = registry.task_of_data(read_format, False).answers_as_span_lists(args.multi_span)
    check_span_count_option(args, multi_span)
    check_model_at_hand(args.model, args.revision, _loadable(args))
    from ..inference import TrainedModel  # each check so far before torch loads
    from ..inference.loading import is_onnx_export
    from ..inference.streaming import StreamPlan, check_resumed_options, given_run_record, predict_to_files

    source = data_source(args.data)
    plan = StreamPlan(tuple(dict.fromkeys(args.decoding)), decode, multi_span, chunk_size=args.chunk_size, batch_size=args.batch_size)
    if args.resume:  # other options, data or model refused before the model loads; the rest once it has
        given = given_run_record(args.model, args.precision, plan, source, args.revision)
        shard.broadcast_result(lambda: check_resumed_options(output, given))
    device = args.device if is_onnx_export(args.model, args.revision) else shard.device_for(args.device)  # an export: on the CPU
    trained = TrainedModel.load(args.model, progress=shard.writes, precision=args.precision, device=device,
                                decodings=args.decoding, revision=args.revision)
    started = time.perf_counter()
    # it refuses a model that may not abstain and a hub id's unread prior, settles auto and warns of untuned abstention;
    # a limit past the questions is said as they are read, their skipped ones counted, so it is not passed on
    files = predict_to_files(trained, questions, plan, output, args.resume, shard, total=count, progress=True, source=source,
                             name=args.data, limit=args.limit if count == args.limit else None, unanswerable=unanswerable)
    report: dict[str, object] = {"questions": count, "seconds": round(time.perf_counter() - started, 1)}
    report.update(files.to_dict())
    if shard.writes:  # with --output -, standard output holds the answers only
        print(json.dumps(report, indent=2), file=sys.stderr if output == "-" else sys.stdout)
    shard.close()
    return 0


def cmd_extract(args: argparse.Namespace) -> int:
    if args.html:
        check_file_target(args.html)
        check_outputs_apart([args.html], list(args.context_file or []), [args.model])
    decode = decode_config(args)  # the options' ranges first, as predict and tune check them
    check_span_count_option(args, args.multi_span)
    texts, names = _extract_documents(args)
    check_model_at_hand(args.model, args.revision, _loadable(args))  # the checks so far before torch loads
    from ..data.squad import generated_id
    from ..inference import TrainedModel
    from ..inference.extract import AnswerExtractor, question_context_examples
    from ..inference.loading import check_length_prior, check_saved_length_prior

    question_context_examples(args.question, texts if len(texts) > 1 else texts[0])  # the texts checked before the model loads
    check_saved_length_prior(args.model, [args.decoding], decode.bio_length_prior)
    trained = TrainedModel.load(args.model, precision=args.precision, device=args.device, revision=args.revision)
    check_length_prior(trained.decodings, [args.decoding], decode.bio_length_prior)  # a hub id's, settled now
    extractor = AnswerExtractor(trained, decoding=args.decoding, multi_span=args.multi_span, decode_config=decode,
                                progress=sum(map(len, texts)) >= LONG_CONTEXT_CHARS)
    if len(texts) > 1:  # one question over several documents: answers ranked across them
        print(printable_json(extractor(args.question, texts, top_k=args.top_k, names=names).to_dict(), indent=2))
        return 0
    context = texts[0]
    answer = extractor(args.question, context, top_k=args.top_k)
    # the id predict gives this question alone in a file, where the extractor numbers its inputs from 0
    answer.id = generated_id(1, args.question, context)
    print(printable_json(answer.to_dict(), indent=2))
    if args.html:
        from ..harness.html_report import extraction_page
        from ..io import atomic_write_text

        page = Path(args.html)
        page.parent.mkdir(parents=True, exist_ok=True)  # as predict makes its --output's folder
        atomic_write_text(page, extraction_page(extractor, args.question, context))
        drawn = "best span (the page draws one span an answer)" if args.multi_span else "answer"
        print(printable_line(f"page: {args.html} (every decoding's {drawn} and the BIO head's word probabilities)"), file=sys.stderr)
    return 0


def _loadable(args: argparse.Namespace, model: str | None = None):
    """The check of a model folder (:func:`~bio_mrc.model_folder.check_loadable`) with the command's model, precision and
    device, as its loading makes it."""
    from ..model_folder import check_loadable  # the folder's checks, read as the command runs (--help reads none)

    return lambda folder: check_loadable(folder, model or args.model, precision=args.precision, device=args.device)


def _extract_documents(args: argparse.Namespace) -> tuple[list[str], list[str] | None]:
    """The texts ``extract`` answers from and their names (the files', or none for --context), checked before any work."""
    if bool(args.context_file) == bool(args.context):
        raise ConfigError("give --context-file FILE... or --context TEXT..., one of them")
    texts = [read_text_file(path) for path in args.context_file] if args.context_file else list(args.context)
    for path, text in zip(args.context_file or (), texts):
        check_not_questions(text, path)
    if len(texts) > 1 and args.html:
        raise ConfigError("--html takes one document; several are answered with spans ranked across them (--top-k, "
                          "--multi-span)")
    return texts, list(args.context_file) if args.context_file else None


def cmd_serve(args: argparse.Namespace) -> int:
    from ..serving.listening import check_servable

    if (args.model is None) == (args.model_option is None):
        raise ConfigError("serve takes the model once: --model MODEL (or MODEL alone)")
    model = args.model if args.model_option is None else args.model_option
    config = config_from_args(ServeConfig, args)
    check_servable(model, config)  # a port in use, a host that resolves to nothing: before torch and the model load
    check_model_at_hand(model, args.revision, _loadable(args, model))
    from ..serving.server import run_server

    run_server(model, config, precision=args.precision, device=args.device, revision=args.revision)
    return 0
