"""One multi-span decoding, one answer through every door: predict, extract, serve, the pipeline and
AnswerExtractor give the same spans, and none leaves an answerable question empty, even on a model whose
BIO head tags every token O (its most probable tag sequence has no span)."""

from __future__ import annotations

import json

import pytest
import torch
from fastapi.testclient import TestClient
from transformers import AutoTokenizer, pipeline

from bio_mrc.cli import main
from bio_mrc.data.squad import load_squad
from bio_mrc.inference import AnswerExtractor, TrainedModel
from bio_mrc.model import BioMrcForQuestionAnswering
from bio_mrc.serving.app import create_app
from bio_mrc.tags import TAG_O

from .conftest import SAMPLE_V1

WINDOWS = {"max_seq_length": 48, "doc_stride": 16, "max_query_length": 20}  # the odd-text question whole (19 tokens)
DECODINGS = ("bio", "joint", "span")
# CRLF line ends, tabs, a no-break space, letters outside ASCII and an emoji, over several windows: offsets count
# these characters as they are in every door
ODD_CONTEXT = ("In 1066\tthe fleet sailed\r\nfrom Ærøskøbing to Café Zürich 🙂 with\u00a0Harald and Tostig.\r\n"
               "The crew of\tthe ships were Normans, Danes and Saxons; they landed at dawn.\r\n") * 3


@pytest.fixture(scope="module")
def all_o_model(tiny_encoder_dir, tmp_path_factory):
    """A random joint model whose BIO head gives every token P(O) ≈ 1 (its bias makes O dominate)."""
    folder = tmp_path_factory.mktemp("all-o") / "model"
    torch.manual_seed(0)  # its span head drawn alike whatever ran before in this worker: the spans every door gives
    model = BioMrcForQuestionAnswering.from_encoder(str(tiny_encoder_dir), heads="span+bio", **WINDOWS)
    with torch.no_grad():
        model.bio_head.classifier.weight.zero_()
        bias = torch.full((3,), -8.0)
        bias[TAG_O] = 8.0
        model.bio_head.classifier.bias.copy_(bias)
    model.save_pretrained(str(folder))
    AutoTokenizer.from_pretrained(str(tiny_encoder_dir)).save_pretrained(str(folder))
    return folder


@pytest.fixture(scope="module")
def squad_v2_questions(tmp_path_factory):
    """The sample's questions as a SQuAD 2.0 file with one unanswerable question: data that once turned the
    multi-span BIO decoding's fallback off in predict alone, and one context of CRLF line ends, tabs and non-ASCII
    text over several windows."""
    raw = json.loads(SAMPLE_V1.read_text(encoding="utf-8"))
    paragraph = raw["data"][0]["paragraphs"][0]
    paragraph["qas"].append({"id": "no-answer", "question": "Who painted it?", "answers": [], "is_impossible": True})
    raw["data"][0]["paragraphs"].append({"context": ODD_CONTEXT, "qas": [{
        "id": "odd-text", "question": "Who sailed to Café Zürich?",
        "answers": [{"text": "Ærøskøbing", "answer_start": ODD_CONTEXT.index("Ærøskøbing")}]}]})
    path = tmp_path_factory.mktemp("v2") / "questions.json"
    path.write_text(json.dumps({**raw, "version": "v2.0"}), encoding="utf-8")
    return path


def spans_of(answers) -> list[tuple[str, int, int]]:
    return [(s["text"] if "text" in s else s["answer"], s["start"], s["end"]) for s in answers]


def test_the_all_o_model_tags_nothing(all_o_model):
    from bio_mrc.decoding.postprocess import DecodeConfig

    extractor = AnswerExtractor.from_pretrained(all_o_model, precision="fp32", decoding="bio", multi_span=True,
                                                decode_config=DecodeConfig(require_answer=False))
    examples = load_squad(SAMPLE_V1).examples
    assert all(not p.spans for p in extractor([e.question for e in examples], [e.context for e in examples]))


@pytest.mark.slow
@pytest.mark.parametrize("decoding", DECODINGS)
def test_every_door_gives_the_same_nonempty_spans(all_o_model, squad_v2_questions, tmp_path, capsys, decoding):
    examples = load_squad(squad_v2_questions).examples
    extractor = AnswerExtractor(TrainedModel.load(all_o_model, precision="fp32"), decoding=decoding, multi_span=True)
    want = {ex.id: spans_of(p.to_dict()["spans"]) for ex, p in
            zip(examples, extractor([e.question for e in examples], [e.context for e in examples]))}
    assert all(want.values()), "an answerable question left without a span"
    contexts = {ex.id: ex.context for ex in examples}
    assert contexts["odd-text"] == ODD_CONTEXT  # read as written: CRLF and tabs kept
    assert all(contexts[id_][start:end] == text for id_, spans in want.items() for text, start, end in spans)

    output = tmp_path / "preds.json"
    assert main(["predict", "--model", str(all_o_model), "--data", str(squad_v2_questions), "--output", str(output),
                 "--precision", "fp32", "--decoding", decoding, "--multi-span"]) == 0
    records = [json.loads(line) for line in output.with_suffix(".answers.jsonl").read_text().splitlines()]
    assert {r["id"]: spans_of(r["spans"]) for r in records} == want

    qa = pipeline("bio-mrc-qa", model=str(all_o_model), device="cpu", precision="fp32")
    with TestClient(create_app(extractor)) as client:
        for ex in examples:
            body = {"question": ex.question, "context": ex.context, "decoding": decoding, "multi_span": True}
            assert spans_of(client.post("/answer", json=body).json()["results"][0]["spans"]) == want[ex.id]
            assert spans_of(qa(question=ex.question, context=ex.context, decoding=decoding, multi_span=True)["spans"]) == want[ex.id]
    ex = examples[0]
    capsys.readouterr()
    assert main(["extract", "--model", str(all_o_model), "--precision", "fp32", "--question", ex.question,
                 "--context", ex.context, "--decoding", decoding, "--multi-span"]) == 0
    assert spans_of(json.loads(capsys.readouterr().out)["spans"]) == want[ex.id]
    odd = tmp_path / "odd.txt"
    odd.write_bytes(ODD_CONTEXT.encode("utf-8"))  # the bytes as written: CRLF kept
    assert main(["extract", "--model", str(all_o_model), "--precision", "fp32", "--question", "Who sailed to Café Zürich?",
                 "--context-file", str(odd), "--decoding", decoding, "--multi-span"]) == 0
    assert spans_of(json.loads(capsys.readouterr().out)["spans"]) == want["odd-text"]
