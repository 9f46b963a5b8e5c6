"""Exact character offsets under hostile Unicode, at every door.

Seeded random contexts mix characters an uncased normalizer changes in length (``İ``, ``ß``, ``ﬁ``, ``Ⅻ``, full-width
forms, decomposed accents), zero-width joiners and spaces, byte-order marks and soft hyphens inside text,
right-to-left text with bidirectional controls, emoji sequences, CJK and Thai without spaces, control characters,
CRLF and tabs, Unicode spaces, characters past the Basic Multilingual Plane, Hangul as syllables and as jamo,
Devanagari conjuncts, keycaps, tag-sequence flags, half-width kana with their voicing marks and words longer than a
window. Random untrained models of five tokenizers (uncased and cased WordPiece, byte-level BPE, SentencePiece Unigram
under NFKC and under ALBERT's NFKD, accent stripping and lower-casing), tagging words or sub-words, answer them, as any
model may:
every answer is the context's own characters at its offsets (``context[start:end] == text``, ``start < end``),
starts and ends on user-perceived characters (grapheme clusters), has a readable character in its first and last
cluster (no whitespace, zero-width or bidirectional control alone at either end), and a multi-span answer's spans
share no character. ``AnswerExtractor``, the ``bio-mrc-qa`` pipeline, ``bio-mrc extract``, ``bio-mrc predict`` and
``serve`` give the same spans.
"""

from __future__ import annotations

import json
import random
import string
import unicodedata

import pytest
import regex
import torch

from bio_mrc.data.text import carries_text
from bio_mrc.inference import AnswerExtractor, TrainedModel

from .conftest import TOKENIZER_FAMILIES, family_params, _vocabulary, untrained_model_folder

WINDOWS = {"max_seq_length": 48, "doc_stride": 16, "max_query_length": 12}
# QUESTION whole in every tokenizer here (byte-level BPE: 27 tokens). A byte-level BPE window holds 17 context tokens,
# 5 of them new (a stride of 16 left 1): windows still start inside clusters of many bytes, in a fifth of the passes.
QUESTION_WINDOWS = {**WINDOWS, "max_query_length": 27, "doc_stride": 12}
QUESTION = "What is the ﬁrst Straße in İstanbul?"
PIECES = [
    "İstanbul", "Straße", "ﬁnal", "Ⅻ", "ＡＢＣ１２３", "e\u0301te\u0301", "cafe\u0301", "a\u0308\u0323", "Ǆ", "ﬃ", "ŉ", "ᾳ",
    "zero\u200dwidth", "non\u200cjoiner", "\ufeffmark", "mid\ufeffdle", "soft\u00adhyphen", "\u00ad", "\u200b", "word\u200b",
    "\u2060joined", "\u202bשלום עולם\u202c", "\u200fمرحبا\u200e", "\u2067עברית\u2069", "\u202eevil\u202c",
    "👨\u200d👩\u200d👧\u200d👦", "👍🏽", "🇫🇷🇩🇪", "❤\ufe0f", "東京は日本の首都です", "ภาษาไทยง่ายมาก", "\x01ctl\x07", "\x7f",
    "line\r\nbreak", "tab\there", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "𠜎𠜱", "the", "river", "Normandy", "1066", "x" * 120, "ACGT" * 40,
    "한국어를", "\u1112\u1161\u11ab\u1100\u116e\u11a8", "क्षत्रिय", "हिन्दी", "٢٠٢٤م", "1\ufe0f\u20e3", "👩🏿\u200d🔬",
    "🏴\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f", "ｶﾞｷﾞ", "Ἀθῆναι", "para\u2029graph",
]
SEPARATORS = [" ", " ", " ", "\n", "\r\n", "\t", "\u00a0", "\u2009", "\u3000", "\u202f", "", "\u200b", "\u2028", "\u0085",
              " \u200d ", " \u0301 "]
DECODINGS = ("span", "bio", "joint")
# A cluster holding only these is blank: whitespace, controls, format characters, marks on no letter.
BLANK = {"Cc", "Cf", "Zs", "Zl", "Zp", "Mn", "Mc", "Me"}


def hostile_context(rng: random.Random) -> str:
    while True:
        context = "".join(rng.choice(PIECES) + rng.choice(SEPARATORS) for _ in range(rng.randint(2, 24)))
        if carries_text(context):
            return context


def hostile_contexts(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    return [hostile_context(rng) for _ in range(n)]


def check_spans(context: str, spans: list[tuple[str, int, int]], several: bool) -> None:
    """What every answer holds (see the module docstring); ``spans``: (text, start, end), ``several``: one answer's."""
    bounds = {0, *(m.end() for m in regex.finditer(r"\X", context))}
    for text, start, end in spans:
        assert 0 <= start < end <= len(context) and context[start:end] == text, (text, start, end, context)
        assert start in bounds and end in bounds, f"{text!r} splits a user-perceived character of {context!r}"
        clusters = regex.findall(r"\X", text)
        for edge in (clusters[0], clusters[-1]):
            assert any(unicodedata.category(c) not in BLANK for c in edge), f"{text!r} begins or ends with {edge!r}"
    if several:
        ordered = sorted((start, end) for _, start, end in spans)
        assert all(a[1] <= b[0] for a, b in zip(ordered, ordered[1:])), ordered


def spans_of(dicts) -> list[tuple[str, int, int]]:
    return [(d["text"] if "text" in d else d["answer"], d["start"], d["end"]) for d in dicts]


@pytest.fixture(scope="module")
def hostile_models(tiny_encoder_dir, tiny_bpe_tokenizer, tmp_path_factory) -> dict:
    """Untrained joint models (random heads answer as well as any): the tests' uncased WordPiece, a cased WordPiece
    whose vocabulary holds every character of the pieces, and a RoBERTa of the byte-level BPE tokenizer."""
    from transformers import AutoModel, BertConfig, BertModel, BertTokenizer, RobertaConfig

    folder = tmp_path_factory.mktemp("hostile-models")
    cased, bpe = folder / "cased-encoder", folder / "bpe-encoder"
    characters = sorted(set("".join(PIECES)) - set(_vocabulary()) - set(string.whitespace))
    tokenizer = BertTokenizer(vocab={w: i for i, w in enumerate(dict.fromkeys(_vocabulary() + characters))}, do_lower_case=False)
    tokenizer.save_pretrained(str(cased))
    small = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64}
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=len(tokenizer), max_position_embeddings=128, **small)).save_pretrained(str(cased))
    tiny_bpe_tokenizer.save_pretrained(str(bpe))
    AutoModel.from_config(RobertaConfig(vocab_size=len(tiny_bpe_tokenizer), max_position_embeddings=66, type_vocab_size=1,
                                        pad_token_id=1, **small)).save_pretrained(str(bpe))
    encoders = {"uncased WordPiece": tiny_encoder_dir, "cased WordPiece": cased, "byte-level BPE": bpe}
    return {name: untrained_model_folder(encoder, folder / name.replace(" ", "-"), heads="span+bio", **QUESTION_WINDOWS)
            for name, encoder in encoders.items()}


@pytest.mark.parametrize("which", ["uncased WordPiece", "cased WordPiece", "byte-level BPE"])
def test_every_answer_is_the_contexts_own_readable_characters(hostile_models, which):
    extractor = AnswerExtractor(TrainedModel.load(hostile_models[which], precision="fp32"))
    contexts = hostile_contexts(seed=len(which), n=6)
    for decoding in DECODINGS:
        for predictions, several in ((extractor([QUESTION] * len(contexts), contexts, decoding=decoding, top_k=5), False),
                                     (extractor([QUESTION] * len(contexts), contexts, decoding=decoding, multi_span=True), True)):
            assert len(predictions) == len(contexts)
            for context, prediction in zip(contexts, predictions):
                assert prediction.spans
                check_spans(context, spans_of(s.to_dict() for s in prediction.spans), several)
        ranked = extractor(QUESTION, contexts, decoding=decoding, top_k=10)
        assert ranked.answers
        for answer in ranked.answers:
            check_spans(contexts[answer.document], [(answer.text, answer.start, answer.end)], False)



@pytest.fixture(scope="module")
def sentencepiece_encoders(metaspace_tokenizer, tmp_path_factory) -> dict:
    """Tiny random encoders of SentencePiece tokenizers built offline: the tests' Unigram (NFKC, Metaspace) under an
    XLM-R, and ALBERT's own tokenizer of that vocabulary (NFKD, accents stripped, lower-cased) under an ALBERT."""
    from transformers import AlbertConfig, AlbertTokenizer, AutoModel, XLMRobertaConfig

    folder = tmp_path_factory.mktemp("sentencepiece-encoders")
    vocab = [tuple(entry) for entry in json.loads(metaspace_tokenizer.backend_tokenizer.to_str())["model"]["vocab"]]
    small = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64}
    encoders = {"SentencePiece NFKC": (metaspace_tokenizer, XLMRobertaConfig, {"max_position_embeddings": 66, "type_vocab_size": 1,
                                                                               "pad_token_id": 0}),
                "ALBERT": (AlbertTokenizer(vocab=vocab, do_lower_case=True, keep_accents=False), AlbertConfig,
                           {"embedding_size": 16, "max_position_embeddings": 64})}
    for name, (tokenizer, config, options) in encoders.items():
        tokenizer.save_pretrained(str(folder / name))
        torch.manual_seed(0)
        AutoModel.from_config(config(vocab_size=len(tokenizer), **small, **options)).save_pretrained(str(folder / name))
    return {name: folder / name for name in encoders}


@pytest.mark.parametrize("which, units", [("SentencePiece NFKC", {"tag_level": "word", "word_units": "punctuation"}),
                                          ("ALBERT", {"tag_level": "word", "word_units": "tokenizer"}),
                                          ("ALBERT", {"tag_level": "subword"}),
                                          ("byte-level BPE", {"tag_level": "subword"})])
def test_every_answer_of_a_sentencepiece_or_subword_tagger_is_the_contexts_own_characters(
        which, units, sentencepiece_encoders, hostile_models, tmp_path):
    """SentencePiece normalizers change text in length (``ﬁ`` to ``fi``, ``㍻`` to ``平成``, ``é`` to ``e``) and its
    tokens hold the space before their word; a tagger of the tokenizer's own words or of every piece answers whole
    characters of the context as written, as one of words split at punctuation does."""
    encoder = sentencepiece_encoders.get(which) or hostile_models[which].parent / "bpe-encoder"
    folder = untrained_model_folder(encoder, tmp_path / "model", heads="span+bio", **QUESTION_WINDOWS, **units)
    extractor = AnswerExtractor(TrainedModel.load(folder, precision="fp32"))
    contexts = [*hostile_contexts(seed=11, n=5), "  ﬁnal ㍻ ＡＢＣ\u3000Café\u00a0naïve\t東京は首都  "]
    for decoding in DECODINGS:
        for several in (False, True):
            options = {"multi_span": True} if several else {"top_k": 5}
            for context, prediction in zip(contexts, extractor([QUESTION] * len(contexts), contexts, decoding=decoding, **options)):
                assert prediction.spans and all(type(s.start) is int and type(s.end) is int for s in prediction.spans)
                check_spans(context, spans_of(s.to_dict() for s in prediction.spans), several)

FAMILY_CONTEXTS = ["   Rollo  ruled normandy, (911). It is <s> here [SEP] too.  ",
                   "东京是日本的首都。Rollo came\n\nto cafe\u0301 👍🏽 👨\u200d👩\u200d👧 ok",
                   "He met the U.S. envoy (Rollo), with 1,000 ships!\tThe   end", "ﬁnal Ⅻ ＡＢＣ straße İstanbul"]


def family_encoder(tokenizer, folder):
    """A tiny random BERT saved with ``tokenizer``, as a fast tokenizer of its own backend where its class builds its
    pair template anew when loaded (BERT's): the saved folder encodes as ``tokenizer`` does."""
    from transformers import AutoTokenizer, BertConfig, BertModel, PreTrainedTokenizerFast

    def encoded(tok):
        batch = tok(QUESTION, FAMILY_CONTEXTS[0], return_offsets_mapping=True)
        return batch["input_ids"], batch["offset_mapping"], batch.get("token_type_ids")

    tokenizer.save_pretrained(str(folder))
    if encoded(AutoTokenizer.from_pretrained(str(folder))) != encoded(tokenizer):
        PreTrainedTokenizerFast(tokenizer_object=tokenizer.backend_tokenizer, model_input_names=tokenizer.model_input_names,
                                **tokenizer.special_tokens_map).save_pretrained(str(folder))
    assert encoded(AutoTokenizer.from_pretrained(str(folder))) == encoded(tokenizer)
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                         intermediate_size=64, max_position_embeddings=128)).save_pretrained(str(folder))
    return folder


@pytest.mark.parametrize("family", family_params(TOKENIZER_FAMILIES))
def test_every_tokenizer_familys_answers_are_the_contexts_own_readable_characters(family, request, tmp_path):
    """A random model on each tokenizer family answers, at every decoding, one span or several, in the first window
    and later ones: the context's own characters at their offsets, whole user-perceived characters, no blank at either
    end, and never a marker of the tokenizer's ("▁", "Ġ", "##") that the context lacks."""
    encoder = family_encoder(request.getfixturevalue(family), tmp_path / "encoder")
    folder = untrained_model_folder(encoder, tmp_path / "model", heads="span+bio", **WINDOWS)
    extractor = AnswerExtractor(TrainedModel.load(folder, precision="fp32"))
    contexts = [*FAMILY_CONTEXTS, *(context * 3 for context in FAMILY_CONTEXTS), *hostile_contexts(seed=5, n=3)]
    for decoding in DECODINGS:
        for several, options in ((False, {"top_k": 5}), (True, {"multi_span": True})):
            for context, prediction in zip(contexts, extractor(["Who ruled?"] * len(contexts), contexts, decoding=decoding,
                                                               **options)):
                spans = spans_of(s.to_dict() for s in prediction.spans)
                assert spans
                check_spans(context, spans, several)
                assert not [text for text, _, _ in spans if any(marker in text for marker in ("▁", "Ġ", "##"))]


@pytest.mark.slow
@pytest.mark.parametrize("which", ["uncased WordPiece", "byte-level BPE"])
def test_every_door_gives_the_same_spans_of_hostile_text(hostile_models, which, tmp_path, capsys):
    from fastapi.testclient import TestClient
    from transformers import pipeline

    from bio_mrc.cli import main
    from bio_mrc.serving.app import create_app

    model = str(hostile_models[which])
    contexts = hostile_contexts(seed=7, n=3)
    extractor = AnswerExtractor(TrainedModel.load(model, precision="fp32"))
    qa = pipeline("bio-mrc-qa", model=model, device="cpu", precision="fp32")
    data = tmp_path / "hostile.json"
    paragraphs = [{"context": c, "qas": [{"id": f"q{i}", "question": QUESTION, "answers": [], "is_impossible": True}]} for i, c in enumerate(contexts)]
    data.write_text(json.dumps({"version": "v2.0", "data": [{"title": "hostile", "paragraphs": paragraphs}]}), encoding="utf-8")
    with TestClient(create_app(extractor)) as client:
        for decoding in DECODINGS:
            for multi_span in (False, True):
                options = ["--decoding", decoding, *(["--multi-span"] if multi_span else [])]
                want = [spans_of(p.to_dict()["spans"]) for p in extractor([QUESTION] * 3, contexts, decoding=decoding,
                                                                         multi_span=multi_span)]
                output = tmp_path / f"{decoding}-{multi_span}.json"
                assert main(["predict", "--model", model, "--data", str(data), "--output", str(output), "--precision", "fp32",
                             *options]) == 0
                records = [json.loads(line) for line in output.with_suffix(".answers.jsonl").read_text(encoding="utf-8").splitlines()]
                assert [spans_of(r["spans"])[:len(w)] for r, w in zip(records, want)] == want
                for context, spans in zip(contexts, want):
                    check_spans(context, spans, multi_span)
                    body = {"question": QUESTION, "context": context, "decoding": decoding, "multi_span": multi_span}
                    assert spans_of(client.post("/answer", json=body).json()["results"][0]["spans"]) == spans
                    answer = qa(question=QUESTION, context=context, decoding=decoding, multi_span=multi_span)
                    assert spans_of(answer["spans"] if multi_span else [answer]) == spans
                    capsys.readouterr()
                    assert main(["extract", "--model", model, "--precision", "fp32", "--question", QUESTION,
                                 "--context", context, *options]) == 0
                    assert spans_of(json.loads(capsys.readouterr().out)["spans"]) == spans
            ranked = [(a.text, a.start, a.end, a.document) for a in extractor(QUESTION, contexts, decoding=decoding, top_k=3).answers]
            assert [(a["answer"], a["start"], a["end"], a["document"]) for a in qa(question=QUESTION, context=contexts,
                                                                                  decoding=decoding, top_k=3)] == ranked
            served = client.post("/answer", json={"question": QUESTION, "context": contexts, "decoding": decoding, "top_k": 3})
            assert [(s["text"], s["start"], s["end"], s["document"]) for s in served.json()["results"][0]["spans"]] == ranked


def test_every_door_gives_the_same_multi_span_answers_over_hostile_documents(hostile_models, tmp_path, capsys):
    """One question over hostile documents (one of them repeated, one over many windows): each document's spans are
    the ones it gets asked alone, at its own offsets, and every door ranks the same spans across them."""
    from fastapi.testclient import TestClient
    from transformers import pipeline

    from bio_mrc.cli import main
    from bio_mrc.serving.app import create_app
    from bio_mrc.serving.config import ServeConfig

    model = str(hostile_models["uncased WordPiece"])
    # a file's leading byte-order mark is no character of its text, so no document starts with one
    documents = [d.lstrip("\ufeff") for d in hostile_contexts(seed=11, n=3)]
    documents += [documents[0], " ".join(documents[1:] * 4)]
    paths = []
    for k, document in enumerate(documents):
        paths.append(tmp_path / f"doc{k}.txt")
        paths[-1].write_bytes(document.encode("utf-8"))  # CRLF and every other character as written
    extractor = AnswerExtractor(TrainedModel.load(model, precision="fp32"))
    qa = pipeline("bio-mrc-qa", model=model, device="cpu", precision="fp32")
    with TestClient(create_app(extractor, ServeConfig(max_batch_size=len(documents)))) as client:
        for decoding in DECODINGS:
            ranked = extractor(QUESTION, tuple(documents), decoding=decoding, multi_span=True)
            want = [(a.text, a.start, a.end, a.document) for a in ranked.answers]
            for k, document in enumerate(documents):
                alone = extractor(QUESTION, document, decoding=decoding, multi_span=True)
                mine = [(text, start, end) for text, start, end, d in want if d == k]
                check_spans(document, mine, True)
                assert sorted(mine) == ([] if alone.abstain else sorted(spans_of(s.to_dict() for s in alone.spans)))
            assert [(a["answer"], a["start"], a["end"], a["document"])
                    for a in qa(question=QUESTION, context=iter(documents), decoding=decoding, multi_span=True)] == want
            served = client.post("/answer", json={"question": QUESTION, "context": documents, "decoding": decoding,
                                                  "multi_span": True}).json()["results"][0]["spans"]
            assert [(s["text"], s["start"], s["end"], s["document"]) for s in served] == want
            capsys.readouterr()
            assert main(["extract", "--model", model, "--precision", "fp32", "--question", QUESTION, "--context-file",
                         *map(str, paths), "--decoding", decoding, "--multi-span"]) == 0
            printed = json.loads(capsys.readouterr().out)["answers"]
            assert [(a["text"], a["start"], a["end"], a["document"]) for a in printed] == want
