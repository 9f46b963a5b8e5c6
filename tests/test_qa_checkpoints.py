"""transformers' extractive QA models (``...ForQuestionAnswering``: an encoder and one ``qa_outputs`` layer of start and
end logits) answer through bio_mrc as span-only models: the logits transformers computes, the answers its
question-answering pipeline gives, through every door; ``convert`` saves one as a bio_mrc model folder, which ``tune``
then reads; a QA model of another form is refused with one line."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from huggingface_hub import ModelCard
import torch
import transformers
from transformers import AutoModelForQuestionAnswering, AutoTokenizer, BertConfig, BertForQuestionAnswering

from bio_mrc import AnswerExtractor
from bio_mrc.cli import main
from bio_mrc.data.squad import load_squad
from bio_mrc.decoding.postprocess import DecodeConfig
from bio_mrc.errors import ConfigError, ModelFormatError, OutputError
from bio_mrc.inference import TrainedModel
from bio_mrc.inference.conversion import convert_qa_checkpoint, export_qa_checkpoint
from bio_mrc.model import BioMrcForQuestionAnswering
from bio_mrc.qa_checkpoints import qa_architecture, qa_windows, span_model_from_qa_checkpoint

from .conftest import SAMPLE_V1, offline_hub, untrained_model_folder
from .test_encoder_families import FAMILIES
from .test_model_folder import package_opens

QA_FAMILIES = ["distilbert", "roberta", "xlm-roberta", "albert", "electra", "deberta-v2", "mpnet"]
CONTEXT = "Rollo ruled Normandy. Later, William ruled England and Normandy."


def random_qa_model(family: str, tokenizer_dir: Path, folder: Path) -> Path:
    """A tiny random ``...ForQuestionAnswering`` of ``family`` saved with the tests' WordPiece tokenizer."""
    config_class, options, token_types = FAMILIES[family]
    tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir), use_fast=True)
    torch.manual_seed(0)
    config = getattr(transformers, config_class)(vocab_size=len(tokenizer), **options)
    AutoModelForQuestionAnswering.from_config(config).save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    names = ["input_ids", "attention_mask", *(["token_type_ids"] if token_types else [])]
    settings = folder / "tokenizer_config.json"
    settings.write_text(json.dumps({**json.loads(settings.read_text()), "model_input_names": names}))
    return folder


@pytest.fixture(scope="module")
def trained_qa_dir(trained_dir, tmp_path_factory) -> Path:  # noqa: F811
    """The tests' trained joint model's encoder and span head saved as a BertForQuestionAnswering, as transformers
    trains and saves one: a QA model that answers the sample's questions."""
    model = BioMrcForQuestionAnswering.from_pretrained(str(trained_dir))
    qa = BertForQuestionAnswering(BertConfig(**model.config.encoder.to_dict()))
    qa.bert.load_state_dict(model.encoder.state_dict(), strict=True)
    qa.qa_outputs.load_state_dict(model.span_head.qa_outputs.state_dict())
    folder = tmp_path_factory.mktemp("bert-qa")
    qa.save_pretrained(str(folder))
    AutoTokenizer.from_pretrained(str(trained_dir)).save_pretrained(str(folder))
    return folder


def test_loading_a_qa_model_reads_its_weights_header_once(tiny_encoder_dir, tmp_path, monkeypatch):
    """The checks of a QA model's folder read its safetensors header twice (the weights fitted to its class, then the
    files convert checks); once now, handed on."""
    folder = random_qa_model("distilbert", tiny_encoder_dir, tmp_path / "qa")
    before = TrainedModel.load(folder, device="cpu").model.state_dict()
    opened = package_opens(monkeypatch, folder, ("model.safetensors",))
    after = TrainedModel.load(folder, device="cpu").model.state_dict()
    monkeypatch.undo()
    assert opened == {"model.safetensors": 1}
    assert after.keys() == before.keys() and all(after[name].equal(tensor) for name, tensor in before.items())


@pytest.mark.parametrize("family", QA_FAMILIES)
def test_the_span_model_computes_the_qa_models_logits(family, tiny_encoder_dir, tmp_path):
    folder = random_qa_model(family, tiny_encoder_dir, tmp_path / "qa")
    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    model, _ = span_model_from_qa_checkpoint(folder, max_seq_length=48)  # RoBERTa's offset positions: 64 of 66
    assert model.config.heads == "span" and qa_architecture(folder).endswith("ForQuestionAnswering")
    batch = tokenizer(["who ruled normandy?", "who"], [CONTEXT.lower(), "rollo ruled"], padding=True, return_tensors="pt")
    source = AutoModelForQuestionAnswering.from_pretrained(str(folder)).eval()
    with torch.no_grad():
        expected, got = source(**batch), model(**batch)
    real = batch["attention_mask"].bool()
    torch.testing.assert_close(got.start_logits[real], expected.start_logits[real])
    torch.testing.assert_close(got.end_logits[real], expected.end_logits[real])


def reference_answer(model, tokenizer, question: str, context: str, max_answer_length: int) -> tuple[str, int, int]:
    """The best span of transformers' own logits on one window, by hand: the largest start + end logit over context
    tokens, the end at most ``max_answer_length`` tokens after the start, mapped to characters by the offsets."""
    batch = tokenizer(question, context, return_offsets_mapping=True, return_tensors="pt")
    offsets, in_context = batch.pop("offset_mapping")[0], torch.tensor([part == 1 for part in batch.sequence_ids(0)])
    with torch.no_grad():
        out = model(**batch)
    scores = out.start_logits[0][:, None] + out.end_logits[0][None, :]
    length = torch.arange(len(offsets))[None, :] - torch.arange(len(offsets))[:, None]
    allowed = in_context[:, None] & in_context[None, :] & (length >= 0) & (length < max_answer_length)
    start, end = divmod(int(scores.masked_fill(~allowed, -torch.inf).argmax()), len(offsets))
    first, last = int(offsets[start][0]), int(offsets[end][1])
    return context[first:last], first, last


def test_answers_are_the_best_spans_of_transformers_own_logits(trained_qa_dir, sample_v1):
    """The reference is the QA model run by transformers and decoded by hand, on the sample's one-window contexts."""
    model = AutoModelForQuestionAnswering.from_pretrained(str(trained_qa_dir)).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(trained_qa_dir))
    trained = TrainedModel.load(trained_qa_dir, precision="fp32")
    assert trained.decodings == ["span"]
    assert {k: getattr(trained.features, k) for k in ("max_seq_length", "doc_stride", "max_query_length")} == {
        "max_seq_length": 128, "doc_stride": 46, "max_query_length": 32}
    extractor = AnswerExtractor(trained, decoding="span", decode_config=DecodeConfig(max_answer_length=15))
    answers = []
    for example in sample_v1.examples:
        assert len(tokenizer(example.question, example.context)["input_ids"]) <= 128  # one window
        got = extractor(example.question, example.context)
        answers.append((got.answer, got.spans[0].start, got.spans[0].end))
        assert answers[-1] == reference_answer(model, tokenizer, example.question, example.context, 15)
    right = sum([answer] in example.answer_texts() for (answer, *_), example in zip(answers, sample_v1.examples))
    assert right >= len(answers) // 2  # the trained model's answers: a reference that decodes real logits


def test_every_door_answers_with_a_qa_model(trained_qa_dir, sample_v1, tmp_path, capsys):
    example = sample_v1.examples[0]
    expected = AnswerExtractor.from_pretrained(str(trained_qa_dir))(example.question, example.context).answer
    assert main(["extract", "--model", str(trained_qa_dir), "--question", example.question, "--context", example.context]) == 0
    assert json.loads(capsys.readouterr().out)["answer"] == expected
    qa = transformers.pipeline("bio-mrc-qa", model=str(trained_qa_dir))
    assert qa(question=example.question, context=example.context)["answer"] == expected
    assert main(["predict", "--model", str(trained_qa_dir), "--data", str(SAMPLE_V1), "--output", str(tmp_path / "p.json")]) == 0
    assert json.loads((tmp_path / "p.json").read_text())[example.id] == expected


def test_convert_saves_a_bio_mrc_model_that_tune_reads(trained_qa_dir, sample_v1, tmp_path, capsys):
    output = tmp_path / "converted"
    assert main(["convert", "--model", str(trained_qa_dir), "--output", str(output), "--max-seq-length", "96"]) == 0
    written = json.loads(capsys.readouterr().out)
    assert written["architecture"] == "BertForQuestionAnswering" and written["windows"] == {
        "max_seq_length": 96, "doc_stride": 34, "max_query_length": 24}
    assert json.loads((output / "config.json").read_text())["model_type"] == "bio_mrc" and (output / "README.md").is_file()
    example = sample_v1.examples[0]
    converted = AnswerExtractor.from_pretrained(str(output))(example.question, example.context)
    assert converted.answer == AnswerExtractor.from_pretrained(str(trained_qa_dir))(example.question, example.context).answer
    assert main(["tune", "--model", str(output), "--data", str(SAMPLE_V1), "--no-calibration"]) == 0
    assert json.loads((output / "config.json").read_text())["tuned_on"]["questions"] == len(sample_v1.examples)


def test_convert_takes_windows_that_do_not_overlap_as_train_does(trained_qa_dir, tmp_path, capsys):
    output = tmp_path / "converted"
    assert main(["convert", "--model", str(trained_qa_dir), "--output", str(output), "--doc-stride", "0"]) == 0
    assert json.loads(capsys.readouterr().out)["windows"]["doc_stride"] == 0
    assert json.loads((output / "config.json").read_text())["doc_stride"] == 0
    with pytest.raises(SystemExit) as refused:
        main(["convert", "--model", str(trained_qa_dir), "--output", str(tmp_path / "other"), "--doc-stride", "-1"])
    assert refused.value.code == 2 and "at least 0, not -1" in capsys.readouterr().err


@pytest.mark.parametrize("options, line", [
    (["--max-seq-length", "66"], "max_seq_length 66 exceeds the 65 positions the encoder's windows may fill"),
    (["--max-seq-length", "48", "--max-query-length", "47"], "max_query_length 47 leaves no context in a window of "
                                                             "max_seq_length 48"),
    (["--doc-stride", "60"], "doc_stride 60 leaves no new context in a window of max_seq_length 65 after max_query_length 16 "
                             "(it must be < max_seq_length - max_query_length - 3)"),
])
def test_convert_refuses_windows_the_model_cannot_take_before_its_weights_load(tiny_encoder_dir, tmp_path, capsys,
                                                                                monkeypatch, options, line):
    """A RoBERTa of 66 positions numbered after its padding id fills windows of 65 tokens: settings past them are one
    line before the weights are read and before the output folder is made; windows that fit still convert."""
    from bio_mrc.inference import conversion

    folder = random_qa_model("roberta", tiny_encoder_dir, tmp_path / "qa")
    capsys.readouterr()  # the bars of its saving
    load = conversion.span_model_from_qa_checkpoint
    monkeypatch.setattr(conversion, "span_model_from_qa_checkpoint", lambda *a, **k: pytest.fail("the weights were read"))
    assert main(["convert", "--model", str(folder), "--output", str(tmp_path / "out"), *options]) == 2
    assert capsys.readouterr().err.splitlines() == [f"error: {line}"]
    assert not (tmp_path / "out").exists()
    monkeypatch.setattr(conversion, "span_model_from_qa_checkpoint", load)
    assert main(["convert", "--model", str(folder), "--output", str(tmp_path / "out"), "--max-seq-length", "65"]) == 0
    assert json.loads(capsys.readouterr().out)["windows"]["max_seq_length"] == 65


def test_tune_and_convert_refuse_what_they_cannot_write(trained_qa_dir, trained_dir, tmp_path, capsys):
    before = sorted(p.name for p in trained_qa_dir.iterdir())
    assert main(["tune", "--model", str(trained_qa_dir), "--data", str(SAMPLE_V1)]) == 2
    assert "BertForQuestionAnswering, which tune cannot save settings into; convert it" in capsys.readouterr().err
    assert sorted(p.name for p in trained_qa_dir.iterdir()) == before
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "notes.txt").write_text("mine")
    for model, output, message in ((trained_qa_dir, tmp_path / "full", "the folder is not empty"),
                                   (trained_dir, tmp_path / "new", "already a bio_mrc model"),
                                   (trained_qa_dir, trained_qa_dir / "inside", "lies in the model folder")):
        assert main(["convert", "--model", str(model), "--output", str(output)]) == 2
        assert message in capsys.readouterr().err
    assert not (tmp_path / "new").exists() and (tmp_path / "full" / "notes.txt").read_text() == "mine"


@pytest.mark.parametrize("config, kind", [({"model_type": "bio_mrc"}, "already a bio_mrc model"),
                                          ({"model_type": "bert"}, "not an extractive question-answering model")])
def test_convert_names_the_models_it_reads(tmp_path, config, kind):
    """It said ``already a bio_mrc model; convert reads such models only``, as if it read bio_mrc models alone."""
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    with pytest.raises(ModelFormatError, match=rf"^{kind}.*; convert reads transformers' extractive question-answering "
                                               rf"models only \(in {re.escape(str(folder))}\)$"):
        convert_qa_checkpoint(folder, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_qa_model_of_another_form_is_refused_in_one_line(tiny_encoder_dir, tmp_path):
    """ModernBERT's QA model puts an MLP between the encoder and its start/end layer: not a span head."""
    folder = tmp_path / "modernbert-qa"
    config_class, options, _ = FAMILIES["modernbert"]
    tokenizer = AutoTokenizer.from_pretrained(str(tiny_encoder_dir), use_fast=True)
    AutoModelForQuestionAnswering.from_config(getattr(transformers, config_class)(vocab_size=len(tokenizer), **options)) \
        .save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    with pytest.raises(ModelFormatError, match=r"^a ModernBertForQuestionAnswering, whose start and end logits are not one "
                                               r"qa_outputs layer.*\(in .*modernbert-qa\)$"):
        TrainedModel.load(folder)


def test_a_qa_model_that_computes_its_logits_otherwise_is_refused(trained_qa_dir, tmp_path, monkeypatch):
    """A QA class whose own forward pass changes the logits (as Longformer's sets global attention itself) would answer
    otherwise through bio_mrc: the logits are compared on a real question before the model is used."""
    forward = BertForQuestionAnswering.forward

    def shifted(self, *args, **kwargs):
        out = forward(self, *args, **kwargs)
        out.start_logits = out.start_logits + torch.arange(out.start_logits.shape[-1])
        return out

    monkeypatch.setattr(BertForQuestionAnswering, "forward", shifted)
    with pytest.raises(ModelFormatError, match=r"its own forward pass computes them otherwise"):
        TrainedModel.load(trained_qa_dir)


def test_windows_fit_the_encoder_and_bad_ones_are_refused():
    assert qa_windows(BertConfig()) == {"max_seq_length": 384, "doc_stride": 128, "max_query_length": 64}
    assert qa_windows(BertConfig(max_position_embeddings=128)) == {"max_seq_length": 128, "doc_stride": 46, "max_query_length": 32}
    assert qa_windows(BertConfig(), tokenizer_max_length=256)["max_seq_length"] == 256
    for bad, message in (({"max_seq_length": 600}, "exceeds the 512 positions"),
                         ({"max_seq_length": 64, "doc_stride": 64}, "leaves no new context"),
                         ({"doc_stride": -1}, "positive integers"), ({"doc_stride": 1.5}, "positive integers")):
        with pytest.raises(ConfigError, match=message):
            qa_windows(BertConfig(), **bad)


def test_only_question_answering_architectures_are_read_as_qa_models(trained_dir, tiny_encoder_dir, tmp_path):
    assert qa_architecture(trained_dir) is None and qa_architecture(tiny_encoder_dir) is None
    assert qa_architecture(tmp_path) is None  # no config.json
    (tmp_path / "config.json").write_text('{"architectures": "BertForQuestionAnswering"}')
    assert qa_architecture(tmp_path) is None


def test_a_converted_model_loads_through_the_checked_path(trained_qa_dir, tmp_path):
    convert_qa_checkpoint(trained_qa_dir, tmp_path / "converted")
    trained = TrainedModel.load(tmp_path / "converted")
    assert trained.decodings == ["span"] and load_squad(SAMPLE_V1).examples


def test_a_qa_model_by_hub_id_answers_and_converts_from_the_cache_offline(trained_qa_dir, sample_v1, tmp_path, monkeypatch, capsys):
    offline_hub(monkeypatch, tmp_path / "hub", {"org/bert-qa": trained_qa_dir})
    example = sample_v1.examples[0]
    by_id = AnswerExtractor.from_pretrained("org/bert-qa")(example.question, example.context)
    assert by_id.answer == AnswerExtractor.from_pretrained(str(trained_qa_dir))(example.question, example.context).answer
    assert main(["convert", "--model", "org/bert-qa", "--output", str(tmp_path / "converted")]) == 0
    card = (tmp_path / "converted" / "README.md").read_text()
    assert "| encoder | `org/bert-qa` at commit `0123abcd` |" in card and json.loads(capsys.readouterr().out)["source"] == "org/bert-qa"
    assert "base_model: org/bert-qa" in card  # the hub's model tree links the converted model to its source


def test_a_model_converted_from_a_relative_local_folder_claims_no_base_model(trained_qa_dir, tmp_path, monkeypatch):
    """A folder named ``org/qa`` has a hub id's form: recorded as given, the card rewritten from another working
    folder would name it as the model's base model on the hub."""
    import shutil

    from bio_mrc.model_card import write_model_card

    shutil.copytree(trained_qa_dir, tmp_path / "org" / "qa")
    monkeypatch.chdir(tmp_path)
    assert main(["convert", "--model", "org/qa", "--output", "converted"]) == 0
    monkeypatch.chdir(tmp_path / "org")
    write_model_card(tmp_path / "converted")
    assert "base_model" not in (tmp_path / "converted" / "README.md").read_text()


def test_serve_answers_with_a_qa_model_and_describes_it(trained_qa_dir, sample_v1):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from bio_mrc.serving.app import create_app

    extractor = AnswerExtractor.from_pretrained(str(trained_qa_dir))
    example = sample_v1.examples[0]
    with TestClient(create_app(extractor)) as client:
        card = client.get("/health").json()["card"]
        answer = client.post("/answer", json={"question": example.question, "context": example.context}).json()
    assert card["heads"] == "span" and card["decodings"] == ["span"] and card["windows"]["max_seq_length"] == 128
    assert answer["decoding"] == "span" and answer["results"][0]["answer"] == extractor(example.question, example.context).answer


@pytest.mark.slow
def test_a_qa_model_exports_to_onnx_with_the_same_answers(trained_qa_dir, sample_v1, tmp_path):
    pytest.importorskip("onnxruntime")
    from bio_mrc.inference.onnx import export_onnx

    export_onnx(trained_qa_dir, tmp_path / "exported")
    for example in sample_v1.examples:
        spans = [AnswerExtractor.from_pretrained(str(folder))(example.question, example.context).spans[0]
                 for folder in (trained_qa_dir, tmp_path / "exported")]
        assert (spans[0].start, spans[0].end) == (spans[1].start, spans[1].end)


def test_the_exported_cards_usage_runs_and_finds_the_span_decodings_best_span(trained_dir, tmp_path, capsys, monkeypatch):
    """The card of `export --format transformers` runs as written with transformers' own classes (it called
    `pipeline("question-answering")`, which transformers 5 no longer has: a KeyError) and prints the best span the
    bio_mrc model's span decoding gives on the same question in one window."""
    assert main(["export", "--model", str(trained_dir), "--format", "transformers", "--output", str(tmp_path / "bert-qa")]) == 0
    capsys.readouterr()
    code = re.search(r"```python\n(.*?)```", (tmp_path / "bert-qa" / "README.md").read_text(), re.S).group(1)
    monkeypatch.chdir(tmp_path)
    exec(code, {})
    question = "Which countries did the Norse come from?"
    context = "The Normans were descended from Norse raiders from Denmark, Iceland and Norway."
    expected = AnswerExtractor.from_pretrained(str(trained_dir), decoding="span")(question, context).spans[0].text
    assert capsys.readouterr().out.strip() == expected


def test_export_to_transformers_gives_its_qa_model_the_span_heads_logits_and_back(trained_dir, sample_v1, tmp_path, capsys):
    """bio_mrc → transformers → bio_mrc: the exported BertForQuestionAnswering computes the span head's logits in
    transformers, and read back (at the model's own windows) it answers as the bio_mrc model's span decoding does."""
    output = tmp_path / "bert-qa"
    assert main(["export", "--model", str(trained_dir), "--format", "transformers", "--output", str(output)]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["architecture"] == "BertForQuestionAnswering" and record["left_out"] == ["bio"]
    assert not (output / "bio_mrc_export.json").exists() and qa_architecture(output) == "BertForQuestionAnswering"
    card = ModelCard.load(output / "README.md")  # the folder describes itself on the hub
    assert card.data.library_name == "transformers" and card.data.pipeline_tag == "question-answering"
    assert "Left out: the bio head" in card.text and f"max_length={json.loads((trained_dir / 'config.json').read_text())['max_seq_length']}" in card.text
    ours = BioMrcForQuestionAnswering.from_pretrained(str(trained_dir)).eval()
    theirs = AutoModelForQuestionAnswering.from_pretrained(str(output)).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(output))
    batch = tokenizer([e.question for e in sample_v1.examples], [e.context for e in sample_v1.examples], padding=True,
                      truncation="only_second", max_length=48, return_tensors="pt")
    with torch.no_grad():
        expected, got = ours(**batch), theirs(**batch)
    torch.testing.assert_close(got.start_logits, expected.start_logits)
    windows = {k: getattr(ours.config, k) for k in ("max_seq_length", "doc_stride", "max_query_length")}
    back = TrainedModel.from_qa_checkpoint(output, str(output), precision="fp32")
    back.features = TrainedModel.load(trained_dir).features
    assert {k: getattr(back.features, k) for k in windows} == windows
    original = AnswerExtractor.from_pretrained(str(trained_dir), decoding="span")
    again = AnswerExtractor(back, decoding="span")
    assert [original(e.question, e.context).answer for e in sample_v1.examples] == \
        [again(e.question, e.context).answer for e in sample_v1.examples]


def test_export_to_transformers_of_a_single_type_encoder_makes_no_token_types(tiny_encoder_dir, tmp_path, capsys):
    """A BERT encoder of one token type (type_vocab_size 1) with its BERT tokenizer, which makes type 1 for the context:
    bio_mrc's model leaves the types out, and the export saves a tokenizer that makes none, so transformers' QA model
    reads the windows as the bio_mrc model does (before: the export's logit check ran type 1 into the type embedding
    of one row, and the export was refused with an IndexError)."""
    encoder = tmp_path / "encoder"
    tokenizer = AutoTokenizer.from_pretrained(str(tiny_encoder_dir))
    tokenizer.save_pretrained(str(encoder))
    torch.manual_seed(0)
    transformers.BertModel(BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                      intermediate_size=64, max_position_embeddings=128, type_vocab_size=1)).save_pretrained(str(encoder))
    model = BioMrcForQuestionAnswering.from_encoder(str(encoder), heads="span+bio", max_seq_length=48, doc_stride=16,
                                                    max_query_length=12)
    model.save_pretrained(str(tmp_path / "model"))
    tokenizer.save_pretrained(str(tmp_path / "model"))
    assert main(["export", "--model", str(tmp_path / "model"), "--format", "transformers", "--output", str(tmp_path / "qa")]) == 0
    saved = AutoTokenizer.from_pretrained(str(tmp_path / "qa"))
    batch = saved("who ruled?", "rollo ruled normandy", return_tensors="pt")
    assert list(batch) == ["input_ids", "attention_mask"] and "token_type_ids" in tokenizer("who?", "rollo")
    with torch.no_grad():
        got = AutoModelForQuestionAnswering.from_pretrained(str(tmp_path / "qa")).eval()(**batch)
        expected = model.eval()(**batch)
    torch.testing.assert_close(got.start_logits, expected.start_logits)


def test_export_to_transformers_needs_a_span_head(tiny_encoder_dir, tmp_path, capsys):
    bio_only = untrained_model_folder(tiny_encoder_dir, tmp_path / "bio-only", heads="bio", max_seq_length=48,
                                      doc_stride=16, max_query_length=12)
    assert main(["export", "--model", str(bio_only), "--format", "transformers", "--output", str(tmp_path / "out")]) == 2
    assert "has no span head (heads 'bio')" in capsys.readouterr().err and not (tmp_path / "out").exists()



@pytest.mark.parametrize(("given", "named"), [(["--atol", "nan", "--opset", "-1"], "--opset and --atol are"),
                                              (["--atol", "-1"], "--atol is"), (["--opset", "18"], "--opset is")])
def test_export_to_transformers_refuses_the_onnx_options(tmp_path, capsys, given, named):
    """--opset and --atol are the ONNX export's: given with --format transformers (even at their ONNX defaults) they
    are refused in one line before the model is read, not ignored."""
    code = main(["export", "--model", str(tmp_path / "absent"), "--format", "transformers", "--output",
                 str(tmp_path / "out"), *given])
    err = capsys.readouterr().err
    assert code == 2 and not (tmp_path / "out").exists()
    assert err == f"error: {named} read by the onnx export alone, not by --format transformers: leave " \
                  f"{'them' if ' and ' in named else 'it'} out\n"

def _save_weights(folder: Path, change) -> None:
    from safetensors.torch import load_file, save_file

    save_file(change(load_file(str(folder / "model.safetensors"))), str(folder / "model.safetensors"), metadata={"format": "pt"})


def _tokenizer_past_the_vocabulary(folder: Path) -> None:
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "vocab_size": config["vocab_size"] - 5}))
    _save_weights(folder, lambda tensors: {k: v[:-5] if "word_embeddings" in k else v for k, v in tensors.items()})


@pytest.mark.parametrize("spoil, message", [
    (lambda folder: (folder / "config.json").write_text(json.dumps(
        {**json.loads((folder / "config.json").read_text()), "num_hidden_layers": 10**9})),
     r"config.json: num_hidden_layers must be an integer in \[1, "),
    (lambda folder: (folder / "model.safetensors").write_bytes((folder / "model.safetensors").read_bytes()[:100]),
     r"model.safetensors: "),
    (lambda folder: (folder / "config.json").write_text("{"), r"config.json: not valid JSON"),
    (lambda folder: (folder / "config.json").write_text(json.dumps(  # two layers saved, four named: two would be random
        {**json.loads((folder / "config.json").read_text()), "num_hidden_layers": 4})), r"lacks 32 tensors the config implies"),
    (lambda folder: _save_weights(folder, lambda tensors: {k: v for k, v in tensors.items() if "qa_outputs" not in k}),
     r"lacks 2 tensors the config implies \(qa_outputs.bias, qa_outputs.weight\)"),
    (lambda folder: _save_weights(folder, lambda tensors: {**tensors, "qa_outputs.weight": tensors["qa_outputs.weight"] * float("nan")}),
     r"its weights hold NaN or infinite values \(span_head.qa_outputs.weight\)"),
    (lambda folder: _save_weights(folder, lambda tensors: {**tensors, "qa_outputs.weight": tensors["qa_outputs.weight"].int()}),
     r"1 tensor holds I32 values where the model has floating point weights \(e.g. qa_outputs.weight\)"),
    (lambda folder: [(folder / name).unlink() for name in ("tokenizer.json", "tokenizer_config.json")],
     r"no tokenizer \(tokenizer.json, vocab.txt"),
    (lambda folder: _tokenizer_past_the_vocabulary(folder), r"maps tokens to ids up to \d+, past the encoder's vocab_size"),
])
def test_a_broken_qa_model_folder_is_one_error_before_anything_is_built(trained_qa_dir, tmp_path, spoil, message):
    import shutil

    folder = tmp_path / "qa"
    shutil.copytree(trained_qa_dir, folder)
    spoil(folder)
    with pytest.raises(ModelFormatError, match=message):
        span_model_from_qa_checkpoint(folder)


def test_an_encoder_numbering_positions_after_its_padding_id_gets_windows_it_can_fill(tiny_encoder_dir, tmp_path):
    """RoBERTa's positions start after its padding id (0 here): of 66, a window fills 65. A long context answers."""
    folder = random_qa_model("roberta", tiny_encoder_dir, tmp_path / "qa")
    trained = TrainedModel.load(folder)
    assert trained.features.max_seq_length == 65
    answer = AnswerExtractor(trained)("who ruled normandy?", " ".join([CONTEXT] * 40))
    assert answer.spans and answer.spans[0].text


def test_windows_too_short_for_a_question_are_one_line(trained_qa_dir, tmp_path, capsys):
    assert main(["convert", "--model", str(trained_qa_dir), "--output", str(tmp_path / "out"), "--max-seq-length", "8"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error: ") and "Traceback" not in "".join(err) and not (tmp_path / "out").exists()


def test_the_pipeline_leaves_the_callers_model_as_it_was(trained_qa_dir):
    model = AutoModelForQuestionAnswering.from_pretrained(str(trained_qa_dir), dtype=torch.bfloat16).train()
    qa = transformers.pipeline("bio-mrc-qa", model=model, tokenizer=AutoTokenizer.from_pretrained(str(trained_qa_dir)))
    assert qa(question="who ruled normandy?", context=CONTEXT)["answer"]
    assert model.dtype == torch.bfloat16 and model.training


def test_library_conversions_print_nothing(trained_qa_dir, trained_dir, tmp_path, capfd):
    capfd.readouterr()
    convert_qa_checkpoint(trained_qa_dir, tmp_path / "converted")
    export_qa_checkpoint(trained_dir, tmp_path / "exported")
    assert capfd.readouterr() == ("", "")


def test_an_export_over_another_model_leaves_none_of_its_files(trained_dir, tmp_path):
    output = tmp_path / "out"
    output.mkdir()
    for name in ("model.onnx", "bio_mrc_export.json", "bio_mrc_run.json", "model-00001-of-00002.safetensors", "notes.txt"):
        (output / name).write_text("old")
    export_qa_checkpoint(trained_dir, output, overwrite=True)
    assert sorted(p.name for p in output.iterdir()) == ["README.md", "config.json", "model.safetensors", "notes.txt", "tokenizer.json",
                                                         "tokenizer_config.json"]


def test_an_onnx_export_is_not_exported_to_transformers(tmp_path):
    folder = tmp_path / "onnx"
    folder.mkdir()
    (folder / "model.onnx").write_bytes(b"graph")
    (folder / "config.json").write_text('{"model_type": "bio_mrc"}')
    with pytest.raises(ConfigError, match="is an ONNX export; export the PyTorch model it was made from"):
        export_qa_checkpoint(folder, tmp_path / "out")


def test_an_export_into_a_used_folder_is_refused_before_the_model_is_converted(trained_dir, tmp_path, monkeypatch):
    from bio_mrc.inference import conversion

    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "notes.txt").write_text("mine")
    monkeypatch.setattr(conversion, "qa_model_from_span_model", lambda *a: pytest.fail("converted before the refusal"))
    with pytest.raises(OutputError, match="the folder is not empty"):
        export_qa_checkpoint(trained_dir, tmp_path / "out")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["notes.txt"]


def test_convert_replaces_a_model_only_with_overwrite_and_only_its_files(trained_qa_dir, trained_dir, tmp_path, capsys):
    output = tmp_path / "exported"
    output.mkdir()
    for name in ("model.onnx", "bio_mrc_export.json", "bio_mrc_run.json", "notes.txt"):
        (output / name).write_text("old")
    command = ["convert", "--model", str(trained_qa_dir), "--output", str(output)]
    assert main(command) == 2
    err = capsys.readouterr().err
    assert "the folder is not empty (bio_mrc_export.json, bio_mrc_run.json, model.onnx, notes.txt); choose another folder " \
           "or pass --overwrite" in err and len(err.strip().splitlines()) == 1  # the refusal alone, before any work
    assert sorted(p.name for p in output.iterdir()) == ["bio_mrc_export.json", "bio_mrc_run.json", "model.onnx", "notes.txt"]
    assert main([*command, "--overwrite"]) == 0
    names = {p.name for p in output.iterdir()}
    assert not names & {"model.onnx", "bio_mrc_export.json"} and "model.safetensors" in names
    assert json.loads((output / "bio_mrc_run.json").read_text())["converted_from"]["model"] == str(trained_qa_dir.resolve())
    assert (output / "notes.txt").read_text() == "old" and TrainedModel.load(output).backend == "torch"


def test_a_decoder_only_qa_model_is_refused_before_it_is_converted(tiny_encoder_dir, tmp_path, capsys):
    """GPT-2's QA model has a qa_outputs layer on its causal transformer: convert saved it as a bio_mrc model whose
    tokens read only the tokens before them."""
    folder = tmp_path / "gpt2-qa"
    tokenizer = AutoTokenizer.from_pretrained(str(tiny_encoder_dir), use_fast=True)
    torch.manual_seed(0)
    transformers.GPT2ForQuestionAnswering(transformers.GPT2Config(
        vocab_size=len(tokenizer), n_embd=32, n_layer=1, n_head=2, n_positions=64)).save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    settings = folder / "tokenizer_config.json"  # no token types: GPT-2 would read them as words
    settings.write_text(json.dumps({**json.loads(settings.read_text()), "model_input_names": ["input_ids", "attention_mask"]}))
    capsys.readouterr()
    assert main(["convert", "--model", str(folder), "--output", str(tmp_path / "out")]) != 0
    assert capsys.readouterr().err.strip().splitlines() == [
        f"error: config.json: model_type \"gpt2\" builds GPT2Model, a decoder-only model whose tokens read only the tokens "
        f"before them; bio_mrc reads the tokens of a bidirectional encoder (BERT, RoBERTa, DeBERTa, ...) (in {folder})"]
    assert not (tmp_path / "out").exists()


def test_the_light_names_of_a_qa_model_are_the_classes_own():
    """model_folder reads a config.json without importing torch, so it names bio_mrc's class and heads as text."""
    from bio_mrc import model_folder, qa_checkpoints
    from bio_mrc.model import BioMrcForQuestionAnswering

    assert model_folder.BIO_MRC_QA_CLASS == BioMrcForQuestionAnswering.__name__
    assert qa_checkpoints.QA_HEADS == model_folder.QA_HEADS == "span"


def test_the_exported_card_describes_the_state_of_the_source_it_loaded(trained_dir, tmp_path, monkeypatch):
    """The card's run record and config were read from the source once the model was converted, after its load: a
    ``train --overwrite`` of the source landing between them gave the weights of one run a card of another."""
    import shutil

    from bio_mrc.inference import conversion
    from bio_mrc.model import RUN_FILE

    source = shutil.copytree(trained_dir, tmp_path / "source")
    converted, convert = [], conversion.qa_model_from_span_model

    def converted_then_a_new_run(*args):  # the model is loaded: the source is trained again
        config = json.loads((source / "config.json").read_text())
        (source / "config.json").write_text(json.dumps({**config, "max_seq_length": 40}))
        (source / RUN_FILE).write_text(json.dumps({"train": {"init_from": "org/later-run"}}))
        converted.append(source)
        return convert(*args)

    monkeypatch.setattr(conversion, "qa_model_from_span_model", converted_then_a_new_run)
    export_qa_checkpoint(source, tmp_path / "exported")
    card = ModelCard.load(tmp_path / "exported" / "README.md")
    assert converted == [source] and card.data.base_model is None  # the loaded run's: a local encoder
    assert "later-run" not in card.content and "`max_seq_length` 48" in card.content


def test_a_source_trained_again_while_it_loads_is_exported_with_the_card_of_the_state_loaded(trained_dir, tmp_path, monkeypatch):
    """A new run's record written mid-load: the load is read again, and the card is that state's."""
    import shutil

    import bio_mrc.inference.loading as loading
    from bio_mrc.model import RUN_FILE

    source = shutil.copytree(trained_dir, tmp_path / "source")
    read_tokenizer, written = loading.load_tokenizer, []

    def tokenizer_then_a_new_record(*args, **kwargs):
        if not written:
            (source / RUN_FILE).write_text(json.dumps({"train": {"init_from": "org/later-run"}}))
            written.append(source)
        return read_tokenizer(*args, **kwargs)

    monkeypatch.setattr(loading, "load_tokenizer", tokenizer_then_a_new_record)
    export_qa_checkpoint(source, tmp_path / "exported")
    assert written == [source] and ModelCard.load(tmp_path / "exported" / "README.md").data.base_model == "org/later-run"
