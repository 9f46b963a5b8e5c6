"""An ONNX export answers as the PyTorch model it was made from, at every door, and an export folder that cannot answer
so is refused or said before any work.

The export's spans are PyTorch's spans at PyTorch's offsets, its scores and probabilities within ``SCORE_TOLERANCE``
(the export's logits differ from PyTorch's by at most its 1e-4 tolerance; a score adds a few logits), over hostile
documents (CRLF, zero-width and bidirectional characters, combining marks, CJK, emoji), a question past the model's
``max_query_length``, a context over many windows and batches whose windows pad to different lengths. The folder checks
run on hand-made graphs of an export's signature, so they need no export of their own.
"""

from __future__ import annotations

import json
import re
import shutil
import warnings

import numpy as np
import pytest

from bio_mrc.cli import main
from bio_mrc.errors import ModelFormatError
from bio_mrc.inference import AnswerExtractor, TrainedModel
from bio_mrc.model import BioMrcForQuestionAnswering
from bio_mrc.model_folder import EXPORT_FILE, ONNX_FILE

from .conftest import NEEDS_ONNX_EXTRA
from .test_unicode_offsets import QUESTION, hostile_contexts

pytestmark = NEEDS_ONNX_EXTRA

SCORE_TOLERANCE = 1e-4
DECODINGS = ("span", "bio", "joint")
INPUTS = ("input_ids", "attention_mask", "token_type_ids")
CONTEXT = "The letters were written by Ada Lovelace in 1843."


def hand_made_export(trained_dir, folder, dims=("batch", "sequence"), opset=18):
    """A folder of an export's files whose ``model.onnx`` has the export's signature (input dims ``dims``, at ``opset``)
    and scores each token by its id."""
    import onnx
    from onnx import TensorProto, helper

    folder.mkdir()
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        shutil.copyfile(trained_dir / name, folder / name)
    logits = [helper.make_tensor_value_info(name, TensorProto.FLOAT, list(dims)) for name in ("start_logits", "end_logits")]
    nodes = [helper.make_node("Cast", ["input_ids"], ["ids"], to=TensorProto.FLOAT),
             helper.make_node("Identity", ["ids"], ["start_logits"]), helper.make_node("Identity", ["ids"], ["end_logits"]),
             helper.make_node("Unsqueeze", ["ids", "last"], ["tag"]),
             helper.make_node("Concat", ["tag", "tag", "tag"], ["bio_logits"], axis=-1)]
    graph = helper.make_graph(
        nodes, "hand-made", [helper.make_tensor_value_info(name, TensorProto.INT64, list(dims)) for name in INPUTS],
        [*logits, helper.make_tensor_value_info("bio_logits", TensorProto.FLOAT, [*dims, 3])],
        [helper.make_tensor("last", TensorProto.INT64, [1], [-1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.save(model, str(folder / ONNX_FILE))
    (folder / EXPORT_FILE).write_text(json.dumps({"format": "onnx", "export_format": 1, "opset": opset}), encoding="utf-8")
    return folder


def test_a_hand_made_graph_of_the_exports_signature_answers(trained_dir, tmp_path):
    """The hand-made graph the folder checks below break one way each runs as an export does."""
    trained = TrainedModel.load(hand_made_export(trained_dir, tmp_path / "made"))
    assert trained.backend == "onnx"
    assert AnswerExtractor(trained)("Who?", CONTEXT).spans


@pytest.mark.parametrize("dims", [(2, 48), ("batch", 48), (1, "sequence")])
def test_a_graph_of_fixed_window_shape_is_refused_before_a_session_opens(trained_dir, tmp_path, capsys, dims):
    """Windows are batched and padded to their batch's longest: a graph exported for one batch size or window length
    (the TorchScript exporter without dynamic axes) loaded, then ended each call in ONNX Runtime's traceback
    (``Got invalid dimensions for input: input_ids``)."""
    folder = hand_made_export(trained_dir, tmp_path / "fixed", dims)
    shape = str(list(dims)).replace("'", "")
    line = (f"{ONNX_FILE}: input 'input_ids' has the fixed shape {shape}: windows are batched and padded to their "
            "batch's longest, up to max_seq_length 48, so an export takes any number of windows of any length (dynamic "
            f"batch and sequence axes); export the PyTorch model again with bio-mrc export (in {folder})")
    with pytest.raises(ModelFormatError) as caught:
        TrainedModel.load(folder)
    assert str(caught.value) == line
    assert main(["extract", "--model", str(folder), "--question", "Who?", "--context", CONTEXT]) == 2
    assert capsys.readouterr().err == f"error: {line}\n"


def test_a_graph_at_an_opset_onnx_runtime_does_not_run_is_one_line(trained_dir, tmp_path, capsys):
    """An export made where onnx knows a newer opset than the ONNX Runtime that runs it: ONNX Runtime's traceback."""
    import onnxruntime

    folder = hand_made_export(trained_dir, tmp_path / "newer", opset=99)
    start = (f"{ONNX_FILE}: ONNX Runtime {onnxruntime.__version__} cannot run its graph (opset 99): export the PyTorch "
             "model again at an opset it runs (")
    with pytest.raises(ModelFormatError) as caught:
        TrainedModel.load(folder)
    assert str(caught.value).startswith(start) and "\n" not in str(caught.value)
    assert str(caught.value).endswith(f") (in {folder})")
    assert main(["extract", "--model", str(folder), "--question", "Who?", "--context", CONTEXT]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {start}") and err.count("\n") == 1


def test_weights_beside_an_export_answer_and_it_is_said(trained_dir, tmp_path, capsys):
    """A folder holding PyTorch weights and an export's model.onnx side by side ran the weights unsaid, at every door:
    they still answer (the reference), and a warning says so; a backend asked for by name runs unsaid."""
    from bio_mrc.model_folder import ExportBesideWeightsWarning

    folder = tmp_path / "both"
    shutil.copytree(trained_dir, folder)
    made = hand_made_export(trained_dir, tmp_path / "made")
    for name in (ONNX_FILE, EXPORT_FILE):
        shutil.copyfile(made / name, folder / name)
    line = (f"{folder} holds PyTorch weights and an ONNX export ({ONNX_FILE}) side by side: the PyTorch weights "
            "answer; an export answers from a folder of its own (the one bio-mrc export writes)")
    with pytest.warns(ExportBesideWeightsWarning) as caught:
        assert TrainedModel.load(folder).backend == "torch"
    assert [str(w.message) for w in caught] == [line]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert TrainedModel.load(folder, backend="torch").backend == "torch"
        assert TrainedModel.load(folder, backend="onnx").backend == "onnx"
    from transformers import pipeline

    with pytest.warns(ExportBesideWeightsWarning, match="side by side"):
        assert isinstance(pipeline("bio-mrc-qa", model=str(folder), device="cpu").model, BioMrcForQuestionAnswering)
    capsys.readouterr()
    assert main(["extract", "--model", str(folder), "--question", "Who?", "--context", CONTEXT]) == 0
    assert capsys.readouterr().err == f"warning: {line}\n"


def spans(answers, documents=False):
    return [(a.text, a.start, a.end, *([a.document] if documents else [])) for a in answers]


def assert_same_prediction(got, want):
    assert (spans(got.spans), got.abstain) == (spans(want.spans), want.abstain)
    assert [s.score for s in got.spans] == pytest.approx([s.score for s in want.spans], abs=SCORE_TOLERANCE)
    assert [s.probability for s in got.spans] == pytest.approx([s.probability for s in want.spans], abs=SCORE_TOLERANCE)
    assert got.confidence == pytest.approx(want.confidence, abs=SCORE_TOLERANCE)


def asked(sample_v1):
    """Questions and contexts: the sample's, a question past max_query_length, a context over many windows, and
    hostile documents; in one batch their windows pad to many lengths."""
    documents = [d.lstrip("\ufeff") for d in hostile_contexts(seed=11, n=3)]
    documents += [documents[0], " ".join(documents[1:] * 4)]
    examples = sample_v1.examples
    questions = [e.question for e in examples] + [" ".join(["which"] * 40) + " " + examples[0].question]
    contexts = [e.context for e in examples] + [examples[0].context]
    questions += [examples[1].question, *[QUESTION] * len(documents)]
    contexts += [" ".join(e.context for e in examples), *documents]
    return questions, contexts, documents


@pytest.mark.slow
def test_the_export_answers_as_pytorch_at_every_batch_size(onnx_dir, trained_dir, sample_v1):
    """Single spans (top_k 3) and multi-span answers, every decoding, one window a forward pass and many of different
    lengths, and one question over several documents: the same spans at the same offsets, scores within tolerance."""
    questions, contexts, documents = asked(sample_v1)
    ours, theirs = AnswerExtractor.from_pretrained(onnx_dir), AnswerExtractor.from_pretrained(trained_dir, precision="fp32")
    assert (ours.trained.backend, theirs.trained.backend) == ("onnx", "torch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the long questions, said at every door alike
        for batch_size in (1, 7, 64):  # the logits alone depend on it: one decoding is enough at the smaller ones
            ours.batch_size = theirs.batch_size = batch_size
            for decoding in DECODINGS if batch_size == 64 else ("joint",):
                for options in ({"top_k": 3}, {"multi_span": True}):
                    got = ours(questions, contexts, decoding=decoding, **options)
                    want = theirs(questions, contexts, decoding=decoding, **options)
                    assert len(got) == len(want) == len(questions)
                    for a, b in zip(got, want):
                        assert_same_prediction(a, b)
                    got, want = (e(QUESTION, documents, decoding=decoding, **options).answers for e in (ours, theirs))
                    assert spans(got, True) == spans(want, True)
                    assert [a.score for a in got] == pytest.approx([a.score for a in want], abs=SCORE_TOLERANCE)


@pytest.mark.slow
def test_every_door_of_the_export_gives_pytorchs_multi_span_answers_over_hostile_documents(onnx_dir, trained_dir,
                                                                                          sample_v1, tmp_path, capsys):
    """The pipeline and ``bio-mrc extract`` over files written byte for byte rank the export's spans as the PyTorch
    model's AnswerExtractor does."""
    from transformers import pipeline

    _, _, documents = asked(sample_v1)
    paths = []
    for k, document in enumerate(documents):
        paths.append(tmp_path / f"doc{k}.txt")
        paths[-1].write_bytes(document.encode("utf-8"))  # CRLF and every other character as written
    reference = AnswerExtractor.from_pretrained(trained_dir, precision="fp32")
    qa = pipeline("bio-mrc-qa", model=str(onnx_dir))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the long question, said at every door alike
        for decoding in DECODINGS:
            want = spans(reference(QUESTION, documents, decoding=decoding, multi_span=True).answers, True)
            assert want
            answered = qa(question=QUESTION, context=list(documents), decoding=decoding, multi_span=True)
            assert [(a["answer"], a["start"], a["end"], a["document"]) for a in answered] == want
            capsys.readouterr()
            assert main(["extract", "--model", str(onnx_dir), "--question", QUESTION, "--context-file", *map(str, paths),
                         "--decoding", decoding, "--multi-span"]) == 0
            printed = json.loads(capsys.readouterr().out)["answers"]
            assert [(a["text"], a["start"], a["end"], a["document"]) for a in printed] == want


@pytest.mark.slow
def test_the_exports_window_logits_are_pytorchs_on_windows_of_many_lengths(onnx_dir, trained_dir, sample_v1):
    """The logits behind the answers above, over every window of the mixed batch: within the export's own tolerance."""
    from bio_mrc.types import Example

    questions, contexts, _ = asked(sample_v1)
    examples = [Example(id=f"q{k}", question=q, context=c) for k, (q, c) in enumerate(zip(questions, contexts))]
    got = TrainedModel.load(onnx_dir).windows(examples, batch_size=5)
    want = TrainedModel.load(trained_dir, precision="fp32").windows(examples, batch_size=5)
    assert len(got.example_index) > len(examples)  # some question runs over several windows
    for name in ("example_index", "offsets", "mask"):
        np.testing.assert_array_equal(getattr(got, name), getattr(want, name), err_msg=name)
    for name in ("start_logits", "end_logits", "bio_logits"):
        np.testing.assert_allclose(getattr(got, name), getattr(want, name), atol=1e-4, rtol=0, err_msg=name)


@pytest.mark.slow
def test_the_export_gives_pytorchs_multi_span_answer_on_a_paragraph_repeated(onnx_dir, trained_dir, sample_v1):
    """Five copies of one paragraph hold every answer five times with posteriors and shares equal up to the backends'
    round-off: which copy stands for an answer (and so which overlapping answer survives) is the tie rule's, the
    earliest, never the last bits of either backend's arithmetic."""
    context = " ".join([sample_v1.examples[0].context] * 5)
    ours, theirs = AnswerExtractor.from_pretrained(onnx_dir), AnswerExtractor.from_pretrained(trained_dir, precision="fp32")
    for example in sample_v1.examples[:3]:
        for decoding in DECODINGS:
            got, want = (e(example.question, context, decoding=decoding, multi_span=True) for e in (ours, theirs))
            assert_same_prediction(got, want)


CHANGED_SOURCE = ("the model this export was made from ({}) has changed since it was exported (tuned or trained again): "
                  "the export answers with the weights and settings of its export; export it again to answer with the "
                  "model as it is now")
# The marker's fields (but its source) of a stand-in for the graph's check: the export's bookkeeping is what is tested.
STAND_IN_RECORD = {"format": "onnx", "export_format": 1, "file": ONNX_FILE, "inputs": INPUTS,
                   "outputs": ("start_logits", "end_logits", "bio_logits"), "dynamic_axes": {"batch": 0, "sequence": 1},
                   "opset": 18, "exporter": "a stand-in", "checked_shapes": (), "max_abs_logit_difference": {},
                   "tolerance": 1e-4, "versions": {}, "created": "2026-01-01T00:00:00Z"}


def export_of_a_copy(trained_dir, tmp_path, monkeypatch, source="source", exported_thresholds=None):
    """``trained_dir`` copied to ``tmp_path/source`` and exported by ``export_onnx`` to ``tmp_path/exported``, both named
    relative to ``tmp_path`` as the working folder (a ``source`` with no folder of its name there: a hub id); its graph
    the hand-made one (the exporter's own graph takes seconds). ``exported_thresholds``: a list given the thresholds of
    each model exported."""
    from bio_mrc.inference import onnx

    made = hand_made_export(trained_dir, tmp_path / "made")

    def export(trained, staging, opset, atol):
        if exported_thresholds is not None:
            exported_thresholds.append(trained.thresholds)
        for name in (ONNX_FILE, "config.json", "tokenizer.json", "tokenizer_config.json"):
            shutil.copyfile(made / name, staging / name)
        return STAND_IN_RECORD

    if source == "source":
        shutil.copytree(trained_dir, tmp_path / source)
    monkeypatch.setattr(onnx, "write_export", export)
    monkeypatch.chdir(tmp_path)
    onnx.export_onnx(source, "exported")
    monkeypatch.chdir(made)  # from here on, another working folder: the marker's source holds wherever the export is read
    return tmp_path / source, tmp_path / "exported"


def tune_in_place(folder, threshold=-15.0):
    """``bio-mrc tune``'s saving of a tuned setting into the model folder itself."""
    from bio_mrc.inference.tuning import save_tuned_settings
    from bio_mrc.model import BioMrcConfig

    assert save_tuned_settings(folder, BioMrcConfig.from_pretrained(folder), {"span": threshold}, {},
                               {"description": "dev.json", "questions": 40, "content_hash": "aaaa"})


def loads_unsaid(*folders):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for folder in folders:
            assert TrainedModel.load(folder).backend == "onnx"


def said(caught):
    from bio_mrc.inference.onnx_runner import ExportSourceChangedWarning

    return [str(w.message) for w in caught if issubclass(w.category, ExportSourceChangedWarning)]


def test_an_export_records_its_source_folder_in_full_and_what_it_answers_with(trained_dir, tmp_path, monkeypatch):
    """A source named relative to the working folder was recorded as given: read from another folder, it named another
    folder or none. The marker holds its full path and the digest of the files its answers depend on."""
    from bio_mrc.encoders import answering_digest

    source, exported = export_of_a_copy(trained_dir, tmp_path, monkeypatch)
    marker = json.loads((exported / EXPORT_FILE).read_text())
    assert marker["source"] == str(source) and marker["source_digest"] == answering_digest(source)
    assert list(marker)[-2:] == ["source", "source_digest"]


def test_a_source_tuned_while_it_loads_is_recorded_as_exported(trained_dir, tmp_path, monkeypatch):
    """A ``tune`` of the source between the digest and the load gave the export the tuned settings beside the digest of
    the untuned folder, so loading the export said its source had changed since, which it had not."""
    import bio_mrc.inference.loading as loading
    from bio_mrc.encoders import answering_digest

    read_tokenizer, tuned, exported_thresholds = loading.load_tokenizer, [], []

    def tokenizer_then_a_tune(*args, **kwargs):  # mid-load: the load reads the folder again, tuned
        if not tuned:
            tuned.append(tmp_path / "source")
            tune_in_place(tmp_path / "source")
        return read_tokenizer(*args, **kwargs)

    monkeypatch.setattr(loading, "load_tokenizer", tokenizer_then_a_tune)
    source, exported = export_of_a_copy(trained_dir, tmp_path, monkeypatch, exported_thresholds=exported_thresholds)
    assert tuned == [source] and exported_thresholds == [{"span": -15.0}]
    assert json.loads((exported / EXPORT_FILE).read_text())["source_digest"] == answering_digest(source)
    loads_unsaid(exported)


def test_a_source_tuned_after_each_load_is_refused_not_exported(trained_dir, tmp_path, monkeypatch):
    """Each load followed by a ``tune`` of the source before its digest is read again: no state of the folder is both
    the one recorded and the one exported, so nothing is exported."""
    import bio_mrc.inference.loading as loading

    load, turns = loading.TrainedModel.load.__func__, []

    def load_then_a_tune(cls, model_dir, *args, **kwargs):
        trained = load(cls, model_dir, *args, **kwargs)
        turns.append(len(turns))
        tune_in_place(tmp_path / "source", threshold=-15.0 - len(turns))
        return trained

    monkeypatch.setattr(loading.TrainedModel, "load", classmethod(load_then_a_tune))
    with pytest.raises(ModelFormatError, match="its files changed while they were exported, each of 3 times: another "
                                               "process is writing a model there") as refused:
        export_of_a_copy(trained_dir, tmp_path, monkeypatch)
    assert "(in source)" in str(refused.value) and len(turns) == 3
    assert not (tmp_path / "exported").exists()


def test_an_export_of_a_hub_model_records_no_digest(trained_dir, tmp_path, monkeypatch):
    from .conftest import offline_hub

    offline_hub(monkeypatch, tmp_path / "hub", {"org/tiny": trained_dir})
    _, exported = export_of_a_copy(trained_dir, tmp_path, monkeypatch, source="org/tiny")
    marker = json.loads((exported / EXPORT_FILE).read_text())
    assert marker["source"] == "org/tiny" and "source_digest" not in marker
    loads_unsaid(exported)


def test_an_export_whose_source_changed_says_so_at_every_door(trained_dir, tmp_path, monkeypatch, capsys):
    """An export whose source was tuned in place or trained again kept answering with the settings and weights of its
    export, unsaid."""
    import os

    from transformers import pipeline

    from bio_mrc.inference.onnx_runner import ExportSourceChangedWarning

    source, exported = export_of_a_copy(trained_dir, tmp_path, monkeypatch)
    loads_unsaid(exported)
    os.utime(source / "config.json", (1, 1))  # touched (copied over itself): its answers are the same
    loads_unsaid(exported)
    tune_in_place(source)
    line = CHANGED_SOURCE.format(source)
    with pytest.warns(ExportSourceChangedWarning) as caught:
        assert TrainedModel.load(exported).backend == "onnx"
    assert said(caught) == [line]
    with pytest.warns(ExportSourceChangedWarning) as caught:
        AnswerExtractor.from_pretrained(exported)
    assert said(caught) == [line]
    with pytest.warns(ExportSourceChangedWarning) as caught:
        pipeline("bio-mrc-qa", model=str(exported), device="cpu")
    assert said(caught) == [line]
    capsys.readouterr()
    assert main(["extract", "--model", str(exported), "--question", "Who?", "--context", CONTEXT]) == 0
    assert capsys.readouterr().err == f"warning: {line}\n"
    (tmp_path / "q.jsonl").write_text(json.dumps({"question": "Who?", "context": CONTEXT}) + "\n")
    assert main(["predict", "--model", str(exported), "--data", str(tmp_path / "q.jsonl"),
                 "--output", str(tmp_path / "preds.json")]) == 0
    assert capsys.readouterr().err.count(f"warning: {line}\n") == 1


def test_a_source_trained_again_is_said_too(trained_dir, tmp_path, monkeypatch):
    from bio_mrc.inference.onnx_runner import ExportSourceChangedWarning

    source, exported = export_of_a_copy(trained_dir, tmp_path, monkeypatch)
    (source / "model.safetensors").write_bytes((source / "model.safetensors").read_bytes()[:-1] + b" ")  # new weights
    with pytest.warns(ExportSourceChangedWarning, match=re.escape(CHANGED_SOURCE.format(source))):
        TrainedModel.load(exported)


def test_nothing_is_said_of_a_source_gone_a_hub_id_or_an_export_without_the_digest(trained_dir, tmp_path, monkeypatch):
    source, exported = export_of_a_copy(trained_dir, tmp_path, monkeypatch)
    tune_in_place(source)
    marker = json.loads((exported / EXPORT_FILE).read_text())
    earlier = {key: value for key, value in marker.items() if key != "source_digest"}  # an export made before it was kept
    (exported / EXPORT_FILE).write_text(json.dumps(earlier))
    loads_unsaid(exported)
    shutil.copytree(source, tmp_path / "made" / "org" / "tiny")  # a folder of the hub id's name in the working folder
    (exported / EXPORT_FILE).write_text(json.dumps({**marker, "source": "org/tiny"}))
    loads_unsaid(exported)
    (exported / EXPORT_FILE).write_text(json.dumps(marker))
    shutil.rmtree(source)  # moved away, or the export copied to another machine
    loads_unsaid(exported)


def test_tuning_the_export_itself_is_no_change_of_its_source(trained_dir, tmp_path, monkeypatch, capsys):
    """``tune`` on the export's own folder tunes the export (in place, or into a copy that keeps the marker)."""
    from .conftest import SAMPLE_V1

    _, exported = export_of_a_copy(trained_dir, tmp_path, monkeypatch)
    copy = tmp_path / "tuned-export"
    for where in ([], ["--output-dir", str(copy)]):
        assert main(["tune", "--model", str(exported), "--data", str(SAMPLE_V1), *where,
                     "--min-calibration-questions", "8"]) == 0
    assert "has changed since it was exported" not in capsys.readouterr().err
    assert json.loads((exported / "config.json").read_text())["tuned_on"]["questions"] == 8
    loads_unsaid(exported, copy)


def test_an_export_keeps_the_run_record_of_the_state_it_loaded(trained_dir, tmp_path, monkeypatch):
    """The run record and scores were copied once the graph was made, well after the load: a ``train --overwrite`` of
    the source landing between them gave the export the new run's record beside the old run's weights."""
    from bio_mrc.inference import onnx
    from bio_mrc.model import RUN_FILE

    made = hand_made_export(trained_dir, tmp_path / "made")
    shutil.copytree(trained_dir, tmp_path / "source")
    loaded_record = (tmp_path / "source" / RUN_FILE).read_bytes()

    def graph_then_a_new_run(module, inputs, path, opset):  # the model is loaded: the source is trained again
        (tmp_path / "source" / RUN_FILE).write_text(json.dumps({"a": "later run"}), encoding="utf-8")
        shutil.copyfile(made / ONNX_FILE, path)
        return {"exporter": "a stand-in"}

    monkeypatch.setattr(onnx, "export_graph", graph_then_a_new_run)
    monkeypatch.setattr(onnx, "checked_differences", lambda module, runner, config, names, shapes: {"start_logits": 0.0})
    onnx.export_onnx(tmp_path / "source", tmp_path / "exported")
    assert (tmp_path / "exported" / RUN_FILE).read_bytes() == loaded_record
