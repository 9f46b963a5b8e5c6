"""A sub-word tagger tags every token, a newline or a zero-width space alone too: where its n-best single spans are
all of such tokens, the BIO decoding answers with its best spans that begin and end on readable tokens, single and
multi-span; a question that had an answer keeps it."""

from __future__ import annotations

import numpy as np
import pytest

from bio_mrc.decoding import postprocess
from bio_mrc.decoding.bio_spans import best_tag_spans
from bio_mrc.decoding.postprocess import DecodeConfig, decode
from bio_mrc.decoding.window_outputs import WindowOutputs
from bio_mrc.types import Example

BLANK = " \n\u200b"


def one_window(context: str, tokens: list[tuple[int, int]], bio: np.ndarray) -> WindowOutputs:
    """One window of ``tokens`` (character spans) after a ``[CLS]`` slot, every token tagged (sub-word level)."""
    offsets = np.full((1, len(tokens) + 1, 2), -1)
    offsets[0, 1:] = tokens
    return WindowOutputs(np.zeros(1, dtype=np.int64), offsets, offsets[..., 0] >= 0, bio_logits=bio[None])


def tokens_of(context: str) -> list[tuple[int, int]]:
    """Each run of letters a token, and each other character but a space a token of its own."""
    tokens, start = [], None
    for i, character in enumerate(context + " "):
        if character.isalpha():
            start = i if start is None else start
            continue
        if start is not None:
            tokens.append((start, i))
            start = None
        if character != " " and i < len(context):
            tokens.append((i, i + 1))
    return tokens


@pytest.mark.parametrize("context", ["the " + "\u200b " * 500, "the " + "\n \n " * 300])
@pytest.mark.parametrize("multi_span", [False, True])
def test_runs_of_blank_tokens_never_leave_a_bio_answer_empty(context, multi_span):
    """Every blank token is likelier B than O, "the" likelier O: the 20 best single spans and the most probable tag
    sequence's spans are blank tokens alone, and trimming dropped them all, leaving no answer."""
    tokens = tokens_of(context)
    bio = np.zeros((len(tokens) + 1, 3))
    bio[2:] = [6.0, 6.0, 0.0]  # B, I, O logits of each blank token
    bio[1] = [0.0, 0.0, 1.0]  # "the": r = log p_B - log p_O = -1
    config = DecodeConfig(multi_span=multi_span, bio_length_prior=0.0)
    (prediction,) = decode(one_window(context, tokens, bio), [Example("q", "which?", context, None)], "bio", config)
    assert [(s.text, s.start, s.end) for s in prediction.spans] == [("the", 0, 3)]
    assert prediction.spans[0].score == pytest.approx(-1.0)
    assert prediction.no_answer_score == pytest.approx(1.0)  # -r of the best span shown


@pytest.mark.parametrize("n_best", [1, 3, 20])
def test_blank_spans_take_no_candidates_place_in_a_multi_span_bio_answer(n_best):
    """Each newline is likelier O than B but less so than "the": the best single spans are newlines, "the" comes sixth
    and the most probable tag sequence is all O. A multi-span answer's ``n_best`` candidates are spans with text, as the
    single answer's are: blank spans taking the first places left the answer of a small ``n_best`` empty."""
    context = "the" + " \n" * 5
    tokens = tokens_of(context)
    bio = np.zeros((len(tokens) + 1, 3))
    bio[2:] = [0.0, -9.0, 0.5]  # each newline: r = -0.5
    bio[1] = [0.0, -9.0, 1.0]  # "the": r = -1
    config = DecodeConfig(multi_span=True, n_best=n_best, bio_length_prior=0.0)
    (prediction,) = decode(one_window(context, tokens, bio), [Example("q", "which?", context, None)], "bio", config)
    assert [(s.text, s.start, s.end) for s in prediction.spans] == [("the", 0, 3)]


def old_tag_spans(log_probs, merged, examples, max_length, n_best):
    return best_tag_spans(log_probs, merged.mask, max_length, n_best)


@pytest.mark.parametrize("seed", range(12))
def test_answers_that_had_a_span_are_unchanged(seed, monkeypatch):
    """Seeded random tag logits over ordinary text (words, punctuation, a newline now and then): every question that
    had an answer gets the same spans, scores and probabilities as before; one that had none (its best spans
    newlines alone) now has one."""
    rng = np.random.default_rng(seed)
    words = ["Ada", "wrote", "the", "first", "program", "in", "London", ",", ".", "\n"]
    contexts = [" ".join(rng.choice(words, size=int(rng.integers(3, 40)), p=[.11] * 8 + [.04, .08])) + " end" for _ in range(8)]
    examples = [Example(f"q{k}", "who?", context, None) for k, context in enumerate(contexts)]
    windows = [one_window(c, tokens_of(c), rng.normal(0.0, 3.0, (len(tokens_of(c)) + 1, 3))) for c in contexts]
    width = max(w.mask.shape[1] for w in windows)
    padded = {name: np.concatenate([np.pad(getattr(w, name), [(0, 0), (0, width - getattr(w, name).shape[1])]
                                           + [(0, 0)] * (getattr(w, name).ndim - 2), constant_values=fill) for w in windows])
              for name, fill in (("offsets", -1), ("mask", False), ("bio_logits", 0.0))}
    outputs = WindowOutputs(np.arange(len(windows)), **padded)
    for config in (DecodeConfig(n_best=1), DecodeConfig(n_best=3, max_answer_length=4), DecodeConfig(multi_span=True),
                   DecodeConfig(n_best=2, multi_span=True), DecodeConfig(multi_span=True, require_answer=False)):
        config = DecodeConfig(**{**config.__dict__, "bio_length_prior": float(rng.normal())})
        new = decode(outputs, examples, "bio", config)
        with monkeypatch.context() as patched:
            patched.setattr(postprocess, "_shown_tag_spans", old_tag_spans)
            old = decode(outputs, examples, "bio", config)
        for before, after in zip(old, new):
            if before.spans:
                assert after.spans == before.spans
                assert after.no_answer_score == before.no_answer_score or np.isinf(before.no_answer_score)
            elif config.require_answer:
                assert after.spans and all(s.text.strip(BLANK) == s.text for s in after.spans)


CONTEXTS = ["the " + "\u200b " * 500, "the " + "\n \n " * 300]


@pytest.fixture(scope="module")
def subword_tagger(tiny_bpe_tokenizer, tmp_path_factory):
    """A joint model of a byte-level BPE RoBERTa that tags every token (a newline, a zero-width space), its weights set
    by hand: each token's hidden state is its word embedding alone (no positions, every layer's residual branch zero),
    which is +-4 on two dimensions, and the BIO head reads the first: every blank token of the contexts below scores B and
    I at 4 and O at -4, every readable one the reverse, so their n-best single spans are all blank ones."""
    import torch
    from transformers import AutoModel, RobertaConfig

    from bio_mrc.model import BioMrcForQuestionAnswering

    folder = tmp_path_factory.mktemp("subword-tagger")
    tiny_bpe_tokenizer.save_pretrained(str(folder / "encoder"))
    encoder = AutoModel.from_config(RobertaConfig(vocab_size=len(tiny_bpe_tokenizer), max_position_embeddings=66, type_vocab_size=1,
                                                  pad_token_id=1, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                                  intermediate_size=64))
    tokens = [(token, not context[start:end].strip(BLANK)) for context in CONTEXTS
              for token, (start, end) in zip(*_tokens_and_offsets(tiny_bpe_tokenizer, context))]
    blank = sorted({token for token, is_blank in tokens if is_blank})
    assert blank and not set(blank) & {token for token, is_blank in tokens if not is_blank}  # no token both
    with torch.no_grad():
        for name, parameter in encoder.named_parameters():
            if name.endswith(("output.dense.weight", "output.dense.bias")) or "position_embeddings" in name or "token_type" in name:
                parameter.zero_()  # a layer adds nothing to its input: its LayerNorm keeps each token's state as it is
        words = encoder.embeddings.word_embeddings.weight
        words.zero_()
        words[:, :2] = torch.tensor([-1.0, 1.0])
        words[blank, :2] = torch.tensor([1.0, -1.0])
    encoder.save_pretrained(str(folder / "encoder"))
    model = BioMrcForQuestionAnswering.from_encoder(str(folder / "encoder"), heads="span+bio", tag_level="subword",
                                                    max_seq_length=48, doc_stride=16, max_query_length=12)
    with torch.no_grad():
        model.bio_head.classifier.weight.zero_()
        model.bio_head.classifier.weight[:, 0] = torch.tensor([1.0, 1.0, -1.0])  # B, I, O
        model.bio_head.classifier.bias.zero_()
    model.save_pretrained(str(folder / "model"))
    tiny_bpe_tokenizer.save_pretrained(str(folder / "model"))
    return folder / "model"


def _tokens_and_offsets(tokenizer, context: str) -> tuple[list[int], list[tuple[int, int]]]:
    encoded = tokenizer(context, add_special_tokens=False, return_offsets_mapping=True)
    return encoded["input_ids"], encoded["offset_mapping"]


def test_every_door_answers_a_sub_word_tagger_on_runs_of_blank_tokens(subword_tagger):
    """"the" is the contexts' one readable word: AnswerExtractor, one question over several documents and the
    pipeline (words aligned or not) answered nothing from the BIO decoding."""
    from transformers import pipeline

    from bio_mrc.inference import AnswerExtractor, TrainedModel

    extractor = AnswerExtractor(TrainedModel.load(subword_tagger, precision="fp32"))
    for multi_span in (False, True):
        predictions = extractor(["what?"] * 2, CONTEXTS, decoding="bio", multi_span=multi_span)
        assert [[(s.text, s.start, s.end) for s in prediction.spans] for prediction in predictions] == [[("the", 0, 3)]] * 2
    ranked = extractor("what?", CONTEXTS, decoding="bio", top_k=2).answers
    assert sorted((a.text, a.document) for a in ranked) == [("the", 0), ("the", 1)]
    qa = pipeline("bio-mrc-qa", model=str(subword_tagger), device="cpu", precision="fp32")
    for align_to_words in (False, True):
        for context in CONTEXTS:
            answer = qa(question="what?", context=context, decoding="bio", align_to_words=align_to_words)
            assert (answer["answer"], answer["start"], answer["end"]) == ("the", 0, 3)


@pytest.mark.slow
def test_an_onnx_export_of_a_sub_word_tagger_answers_runs_of_blank_tokens(subword_tagger, tmp_path):
    pytest.importorskip("onnxruntime")
    from bio_mrc.inference import AnswerExtractor, TrainedModel
    from bio_mrc.inference.onnx import export_onnx

    export_onnx(subword_tagger, tmp_path / "exported")
    extractor = AnswerExtractor(TrainedModel.load(tmp_path / "exported"))
    for multi_span in (False, True):
        predictions = extractor(["what?"] * 2, CONTEXTS, decoding="bio", multi_span=multi_span)
        assert [[(s.text, s.start, s.end) for s in prediction.spans] for prediction in predictions] == [[("the", 0, 3)]] * 2


# B, I, O logits of a token tagged B (a blank one below) and of one tagged O
TAGGED_B, TAGGED_O = [4.0, 0.0, 0.0], [0.0, 0.0, 4.0]


@pytest.mark.parametrize("blank", ["\u200b", "\n", "\u200b \n"])
def test_a_likeliest_tag_sequence_of_blank_spans_alone_abstains_as_all_o_does(blank):
    """Without require_answer, the multi-span BIO answer of a tag sequence whose spans are blank characters alone
    (trimmed, nothing) is no answer, as all O is; with it, both answer with a readable span; a sequence that also tags
    a word answers with that word."""
    context = f"Ada {blank} wrote"
    tokens = tokens_of(context)  # Ada, each blank character, wrote
    example = [Example("q", "who?", context, None)]

    def spans(tags: list[list[float]], require_answer: bool) -> list[str]:
        bio = np.array([[0.0, 0.0, 0.0], *tags])  # [CLS] first
        config = DecodeConfig(multi_span=True, require_answer=require_answer, bio_length_prior=0.0)
        (prediction,) = decode(one_window(context, tokens, bio), example, "bio", config)
        return [s.text for s in prediction.spans]

    blanks = len(tokens) - 2
    blank_only, all_o = [TAGGED_O, *[TAGGED_B] * blanks, TAGGED_O], [TAGGED_O] * len(tokens)
    assert spans(blank_only, require_answer=False) == spans(all_o, require_answer=False) == []
    assert spans(blank_only, require_answer=True) and spans(all_o, require_answer=True)
    assert spans([TAGGED_B, *[TAGGED_B] * blanks, TAGGED_O], require_answer=False) == ["Ada"]


def test_every_door_without_require_answer_abstains_on_a_tag_sequence_of_blank_tokens(subword_tagger):
    """The sub-word tagger's most probable tag sequence of each context tags its blank tokens alone: AnswerExtractor
    (asked per call, or by its decode_config) and serve on such an extractor answer nothing, as for all O."""
    from fastapi.testclient import TestClient

    from bio_mrc.inference import AnswerExtractor, TrainedModel
    from bio_mrc.serving.app import create_app

    trained = TrainedModel.load(subword_tagger, precision="fp32")
    asked = AnswerExtractor(trained, decoding="bio", multi_span=True)
    assert [p.spans for p in asked(["what?"] * 2, CONTEXTS, require_answer=False)] == [[], []]
    assert [[s.text for s in p.spans] for p in asked(["what?"] * 2, CONTEXTS)] == [["the"], ["the"]]
    configured = AnswerExtractor(trained, decoding="bio", multi_span=True, decode_config=DecodeConfig(require_answer=False))
    assert [p.spans for p in configured(["what?"] * 2, CONTEXTS)] == [[], []]
    with TestClient(create_app(configured)) as client:
        body = {"question": ["what?"] * 2, "context": CONTEXTS, "decoding": "bio", "multi_span": True}
        assert [result["spans"] for result in client.post("/answer", json=body).json()["results"]] == [[], []]
