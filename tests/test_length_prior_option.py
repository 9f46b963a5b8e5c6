"""A BIO length prior given where no decoding that reads it runs (the span decoding, a span-only model) is refused in
one line, before the model loads where the options or the model folder's config.json settle the decodings."""

import json

import pytest

from bio_mrc.cli import main
from bio_mrc.decoding.postprocess import DecodeConfig
from bio_mrc.errors import ConfigError
from bio_mrc.inference import AnswerExtractor, TrainedModel

from .conftest import SAMPLE_V1, offline_hub, untrained_model_folder

WINDOWS = {"max_seq_length": 48, "doc_stride": 16, "max_query_length": 12}
SPAN_ONLY = "sets the length prior of the BIO head's spans, which the span decoding never reads; "
LEAVE_IT_OUT = "the model has no BIO head: leave it out"
DECODE_WITH = "decode with bio or joint, or leave it out"


@pytest.fixture(scope="module")
def models(tiny_encoder_dir, tmp_path_factory):
    folder = tmp_path_factory.mktemp("prior-models")
    return {heads: untrained_model_folder(tiny_encoder_dir, folder / heads, heads=heads, **WINDOWS)
            for heads in ("span", "span+bio")}


def _no_load(monkeypatch):
    monkeypatch.setattr(TrainedModel, "load", lambda *args, **kwargs: pytest.fail("the model loaded"))


def _predict(model, output, *options) -> int:
    return main(["predict", "--model", str(model), "--data", str(SAMPLE_V1), "--output", str(output), "--precision", "fp32",
                 "--bio-length-prior", "0.5", *options])


def _extract(model, *options) -> int:
    return main(["extract", "--model", str(model), "--question", "Who?", "--context", "Ada wrote it.", "--precision", "fp32",
                 "--bio-length-prior", "0.5", *options])


@pytest.mark.parametrize("heads, decoding, fix", [("span+bio", "span", DECODE_WITH), ("span", "auto", LEAVE_IT_OUT),
                                                  ("span", "span", LEAVE_IT_OUT)])
def test_predict_and_extract_refuse_a_prior_no_decoding_reads_before_the_model_loads(models, tmp_path, capsys, monkeypatch,
                                                                                     heads, decoding, fix):
    _no_load(monkeypatch)
    assert _predict(models[heads], tmp_path / "p.json", "--decoding", decoding) == 2
    assert capsys.readouterr().err == f"error: --bio-length-prior {SPAN_ONLY}{fix}\n"
    assert list(tmp_path.iterdir()) == []
    assert _extract(models[heads], "--decoding", decoding) == 2
    assert capsys.readouterr().err == f"error: --bio-length-prior {SPAN_ONLY}{fix}\n"


def test_a_named_span_decoding_is_refused_without_reading_the_model(tmp_path, capsys, monkeypatch):
    _no_load(monkeypatch)
    assert _predict("org/not-cached", tmp_path / "p.json", "--decoding", "span") == 2
    assert capsys.readouterr().err == f"error: --bio-length-prior {SPAN_ONLY}{DECODE_WITH}\n"


def test_a_hub_models_decodings_are_settled_once_it_loads_before_any_answer(models, tmp_path, capsys, monkeypatch):
    from bio_mrc.inference import streaming

    offline_hub(monkeypatch, tmp_path / "hub", {"org/tiny": models["span"]})
    monkeypatch.setattr(streaming, "chunk_lines", lambda *args, **kwargs: pytest.fail("a question was answered"))
    assert _predict("org/tiny", tmp_path / "out" / "p.json") == 2
    assert capsys.readouterr().err.splitlines()[-1] == f"error: --bio-length-prior {SPAN_ONLY}{LEAVE_IT_OUT}"
    assert not (tmp_path / "out").exists()
    assert _extract("org/tiny") == 2
    assert capsys.readouterr().err.splitlines()[-1] == f"error: --bio-length-prior {SPAN_ONLY}{LEAVE_IT_OUT}"


def test_a_prior_some_decoding_reads_is_taken(models, tmp_path, capsys):
    assert _predict(models["span+bio"], tmp_path / "p.json", "--decoding", "span", "bio", "--limit", "2") == 0
    record = json.loads((tmp_path / "p.answers.run.json").read_text(encoding="utf-8"))
    assert record["bio_length_prior"] == 0.5 and record["decodings"] == ["span", "bio"]
    capsys.readouterr()
    assert _extract(models["span+bio"], "--decoding", "auto") == 0


def test_answer_extractor_refuses_a_prior_its_decoding_never_reads(models):
    trained = {heads: TrainedModel.load(folder, precision="fp32", device="cpu") for heads, folder in models.items()}
    prior = DecodeConfig(bio_length_prior=0.5)
    with pytest.raises(ConfigError) as refused:
        AnswerExtractor(trained["span+bio"], decoding="span", decode_config=prior)
    assert str(refused.value) == f"bio_length_prior {SPAN_ONLY}{DECODE_WITH}"
    with pytest.raises(ConfigError) as refused:
        AnswerExtractor(trained["span"], decode_config=prior)
    assert str(refused.value) == f"bio_length_prior {SPAN_ONLY}{LEAVE_IT_OUT}"
    assert AnswerExtractor(trained["span+bio"], decode_config=prior).decode_config.bio_length_prior == 0.5
    assert AnswerExtractor(trained["span"], decode_config=DecodeConfig(bio_length_prior=None)).decoding == "auto"


def _windows_fail(monkeypatch, trained):
    monkeypatch.setattr(trained, "windows", lambda *args, **kwargs: pytest.fail("a forward pass ran"))


def test_a_calls_decoding_that_never_reads_the_extractors_prior_is_refused_before_the_forward_pass(models, monkeypatch):
    trained = TrainedModel.load(models["span+bio"], precision="fp32", device="cpu")
    extractor = AnswerExtractor(trained, decoding="bio", decode_config=DecodeConfig(bio_length_prior=0.5))
    _windows_fail(monkeypatch, trained)
    for call in (lambda: extractor("Who?", "Ada wrote it.", decoding="span"),
                 lambda: extractor("Who?", ["Ada wrote it.", "Bo read it."], decoding="span"),
                 lambda: extractor.answer_documents("Who?", ["Ada wrote it."], decoding="span")):
        with pytest.raises(ConfigError) as refused:
            call()
        assert str(refused.value) == f"bio_length_prior {SPAN_ONLY}{DECODE_WITH}"


def test_predict_refuses_a_prior_its_decoding_never_reads_given_there_or_held(models):
    trained = TrainedModel.load(models["span+bio"], precision="fp32", device="cpu")
    examples, _ = AnswerExtractor.examples("Who?", "Ada wrote it.")
    outputs = trained.windows(examples)
    held = AnswerExtractor(trained, decode_config=DecodeConfig(bio_length_prior=0.5))
    plain = AnswerExtractor(trained, decoding="span")
    for call in (lambda: held.predict(outputs, examples, decoding="span"),
                 lambda: plain.predict(outputs, examples, bio_length_prior=0.5),
                 lambda: held.predict_each(outputs, examples, ["span"])):
        with pytest.raises(ConfigError) as refused:
            call()
        assert str(refused.value) == f"bio_length_prior {SPAN_ONLY}{DECODE_WITH}"
    span, bio = held.predict_each(outputs, examples, ["span", "bio"])  # one of them reads it
    assert span[0].spans == plain.predict(outputs, examples)[0].spans
    assert plain.predict(outputs, examples, decoding="bio", bio_length_prior=0.5)[0].spans == bio[0].spans


def test_the_pipeline_refuses_a_decoding_that_never_reads_its_extractors_prior_before_the_forward_pass(models, monkeypatch):
    from transformers import pipeline

    from bio_mrc.inference.pipeline import TASK

    qa = pipeline(TASK, model=str(models["span+bio"]), device="cpu", precision="fp32")
    qa.extractor.decode_config = DecodeConfig(bio_length_prior=0.5)
    _windows_fail(monkeypatch, qa.extractor.trained)
    with pytest.raises(ConfigError) as refused:
        qa(question="Who?", context="Ada wrote it.", decoding="span")
    assert str(refused.value) == f"bio_length_prior {SPAN_ONLY}{DECODE_WITH}"


def test_predict_to_files_refuses_a_plan_whose_decodings_never_read_its_prior_before_any_file(models, tmp_path, monkeypatch):
    from bio_mrc.inference.streaming import StreamPlan, predict_to_files

    trained = TrainedModel.load(models["span+bio"], precision="fp32", device="cpu")
    _windows_fail(monkeypatch, trained)
    plan = StreamPlan(("span",), DecodeConfig(bio_length_prior=0.5))
    with pytest.raises(ConfigError) as refused:
        predict_to_files(trained, AnswerExtractor.examples("Who?", "Ada wrote it.")[0], plan, tmp_path / "out" / "p.json")
    assert str(refused.value) == f"bio_length_prior {SPAN_ONLY}{DECODE_WITH}"
    assert list(tmp_path.iterdir()) == []


def _tune(model, output, *options) -> int:
    return main(["tune", "--model", str(model), "--data", str(SAMPLE_V1), "--output-dir", str(output), "--no-calibration",
                 "--precision", "fp32", "--bio-length-prior", "2.75", *options])


@pytest.mark.parametrize("heads, decoding, fix", [("span+bio", ["span"], DECODE_WITH), ("span", [], LEAVE_IT_OUT),
                                                  ("span", ["span"], LEAVE_IT_OUT)])
def test_tune_refuses_a_prior_no_tuned_decoding_reads_before_the_model_loads(models, tmp_path, capsys, monkeypatch,
                                                                             heads, decoding, fix):
    """It was saved with the model as "given; the other settings were fitted with it", though none read it (or, on a
    span-only model, dropped without a word)."""
    _no_load(monkeypatch)
    before = {path.name: path.read_bytes() for path in models[heads].iterdir()}
    decodings = ["--decoding", *decoding] if decoding else []
    assert _tune(models[heads], tmp_path / "tuned", *decodings) == 2
    assert capsys.readouterr().err == f"error: --bio-length-prior {SPAN_ONLY}{fix}\n"
    assert list(tmp_path.iterdir()) == []
    assert {path.name: path.read_bytes() for path in models[heads].iterdir()} == before


def test_tune_refuses_a_prior_a_hub_models_decodings_never_read_before_the_forward_pass(models, tmp_path, capsys, monkeypatch):
    offline_hub(monkeypatch, tmp_path / "hub", {"org/tiny": models["span"]})
    monkeypatch.setattr(TrainedModel, "windows", lambda *args, **kwargs: pytest.fail("a forward pass ran"))
    assert _tune("org/tiny", tmp_path / "tuned") == 2
    assert capsys.readouterr().err.splitlines()[-1] == f"error: --bio-length-prior {SPAN_ONLY}{LEAVE_IT_OUT}"
    assert not (tmp_path / "tuned").exists()
