"""report.html's question browser, piece by piece: the per-word BIO probabilities (decoding), each model's
browser data (cached beside its cells), the page's compact payload, the Markdown converter, the page."""

import base64
import json
import re

import numpy as np
import pytest

from bio_mrc.decoding.postprocess import word_tag_probabilities
from bio_mrc.decoding.window_outputs import MergedTokens, WindowOutputs
from bio_mrc.harness.browser_data import (
    NO_ANSWER, ModelBrowserData, load_browser_data, model_browser_data, pool_browser_data, quantise, save_browser_data,
)
from bio_mrc.harness.browser_payload import (
    BrowserCell, WordTables, answer_key, browser_payload, encode_zero_runs, payload_json, unsigned, utf16_positions,
)
from bio_mrc.harness.html_report import render_page
from bio_mrc.harness.markdown_html import inline_html, markdown_to_html
from bio_mrc.types import AnswerSpan, Example, Prediction

HOSTILE = "</script><script>alert(1)</script>"


def array(entry) -> np.ndarray:
    """A payload's typed array, as the page decodes it."""
    return np.frombuffer(base64.b64decode(entry["base64"]), dtype=np.dtype(entry["type"]).newbyteorder("<"))


def decode_zero_runs(code: np.ndarray, start: int, end: int) -> list[int]:
    """The reference decoder of :func:`encode_zero_runs` (browser.js's tagBytes, in Python)."""
    out, i = [], start
    while i < end:
        if code[i] == 0:
            out += [0] * int(code[i + 1])
            i += 2
        else:
            out.append(int(code[i]))
            i += 1
    return out


def utf16_slice(text: str, start: int, end: int) -> str:
    """What JavaScript's ``text.slice(start, end)`` returns."""
    return text.encode("utf-16-le")[2 * start:2 * end].decode("utf-16-le")


# --- per-word probabilities and each model's data ------------------------------------------------

def test_word_tag_probabilities_by_hand():
    probabilities = np.array([[[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [1 / 3, 1 / 3, 1 / 3]],
                              [[0.05, 0.05, 0.9], [1 / 3, 1 / 3, 1 / 3], [1 / 3, 1 / 3, 1 / 3]]])
    offsets = np.array([[[0, 3], [4, 9], [-1, -1]], [[2, 5], [-1, -1], [-1, -1]]])
    mask = np.array([[True, True, False], [True, False, False]])
    counts, words, p = word_tag_probabilities(MergedTokens(np.log(probabilities), offsets, mask))
    np.testing.assert_array_equal(counts, [2, 1])
    np.testing.assert_array_equal(words, [[0, 3], [4, 9], [2, 5]])
    np.testing.assert_allclose(p, [[0.7, 0.2], [0.1, 0.8], [0.05, 0.05]])


def test_quantised_probabilities_are_within_half_a_step():
    p = np.linspace(0, 1, 1001)
    assert np.abs(quantise(p) / 255 - p).max() <= 0.5 / 255 + 1e-12
    assert quantise(np.array([0.0, 1.0, 0.5])).tolist() == [0, 255, 128]


def two_window_outputs() -> WindowOutputs:
    """Example 0 seen by two overlapping windows (words at chars 0, 2, 4, 6), example 1 by one."""
    offsets = np.full((3, 4, 2), -1)
    offsets[0, 1:4] = [[0, 1], [2, 3], [4, 5]]
    offsets[1, 1:4] = [[2, 3], [4, 5], [6, 7]]
    offsets[2, 1:3] = [[0, 2], [3, 5]]
    logits = np.zeros((3, 4, 3))
    logits[:, :, 0] = np.arange(12).reshape(3, 4) / 4  # a different P(B) everywhere
    return WindowOutputs(np.array([0, 0, 1]), offsets, offsets[..., 0] >= 0, bio_logits=logits)


def test_a_models_browser_data_holds_its_answers_and_merged_word_probabilities():
    examples = [Example("a", "q?", "w x y z"), Example("b", "q?", "aa bb")]
    answered = [Prediction("a", [AnswerSpan("x", 2, 3, 1.0)]), Prediction("b", [AnswerSpan("bb", 3, 5, 0.5)], abstain=True)]
    data = model_browser_data(two_window_outputs(), examples, {"bio": answered})
    assert data.ids == ["a", "b"] and data.decodings == ["bio"]
    np.testing.assert_array_equal(data.span_offsets[0], [[2, 3], [NO_ANSWER, NO_ANSWER]])  # an abstention has no offsets
    np.testing.assert_array_equal(data.word_counts, [4, 2])
    np.testing.assert_array_equal(data.word_offsets, [[0, 1], [2, 3], [4, 5], [6, 7], [0, 2], [3, 5]])
    # char 2 is central in window 0 (logits 0.5, 0, 0 there), char 4 in window 1 (logits 1.5, 0, 0): P(B), P(I) from those
    for word, logit in ((1, 0.5), (2, 1.5)):
        total = np.exp(logit) + 2
        assert data.tag_bytes[word].tolist() == [round(255 * np.exp(logit) / total), round(255 / total)]
    without_tags = model_browser_data(WindowOutputs(np.array([0]), np.zeros((1, 1, 2)), np.ones((1, 1), bool)), examples[:1], {})
    assert not without_tags.has_tags and without_tags.span_offsets.shape == (0, 1, 2)


def test_browser_data_survives_its_file(tmp_path):
    examples = [Example("a", "q?", "w x y z"), Example("b", "q?", "aa bb")]
    data = model_browser_data(two_window_outputs(), examples, {"span": [Prediction("a"), Prediction("b")]})
    back = load_browser_data(save_browser_data(data, tmp_path / "m.browser.npz"))
    assert back.ids == data.ids and back.decodings == ["span"]
    for name in ("span_offsets", "word_counts", "word_offsets", "tag_bytes"):
        np.testing.assert_array_equal(getattr(back, name), getattr(data, name))
    assert load_browser_data(tmp_path / "none.npz") is None


def test_folds_pool_into_the_evaluation_order():
    first = ModelBrowserData(["a", "c"], ["bio"], np.array([[[0, 1], [2, 3]]]), np.array([1, 2]),
                             np.array([[0, 1], [0, 4], [5, 6]]), np.array([[1, 1], [2, 2], [3, 3]], dtype=np.uint8))
    second = ModelBrowserData(["b"], ["bio"], np.array([[[7, 9]]]), np.array([3]),
                              np.array([[0, 1], [2, 3], [4, 5]]), np.array([[4, 4], [5, 5], [6, 6]], dtype=np.uint8))
    pooled = pool_browser_data([first, second], ["c", "a", "b"])
    assert pooled.ids == ["c", "a", "b"]
    np.testing.assert_array_equal(pooled.span_offsets[0], [[2, 3], [0, 1], [7, 9]])
    np.testing.assert_array_equal(pooled.word_counts, [2, 1, 3])
    np.testing.assert_array_equal(pooled.tag_bytes[:, 0], [2, 3, 1, 4, 5, 6])
    np.testing.assert_array_equal(pooled.word_offsets[:3], [[0, 4], [5, 6], [0, 1]])


# --- the payload's encodings -------------------------------------------------------------------

def test_zero_runs_by_hand():
    code, starts = encode_zero_runs(np.array([0, 0, 5, 0, 0, 7, 0], dtype=np.uint8), np.array([0, 4, 7]))
    assert code.tolist() == [0, 2, 5, 0, 1, 0, 1, 7, 0, 1]  # the run at 3-4 is cut at the segment start 4
    assert starts.tolist() == [0, 5, 10, 10]  # the empty last segment starts (and ends) at the end


@pytest.mark.parametrize("seed", range(5))
def test_zero_runs_decode_segment_by_segment(seed):
    rng = np.random.default_rng(seed)
    values = np.where(rng.random(3000) < 0.9, 0, rng.integers(1, 256, 3000)).astype(np.uint8)
    values[500:1200] = 0  # a run longer than one length byte
    segment_starts = np.unique(np.concatenate([[0], rng.integers(0, 3000, 40), [1200, 1200]]))
    code, starts = encode_zero_runs(values, segment_starts)
    bounds = np.append(segment_starts, len(values))
    for k in range(len(segment_starts)):
        assert decode_zero_runs(code, starts[k], starts[k + 1]) == values[bounds[k]:bounds[k + 1]].tolist()
    assert len(code) < len(values) / 3


def test_unsigned_arrays_take_the_smallest_type():
    assert [unsigned(v)["type"] for v in ([0, 255], [256], [70_000], [])] == ["uint8", "uint16", "uint32", "uint8"]
    assert array(unsigned([3, 70_000])).tolist() == [3, 70_000]
    with pytest.raises(ValueError, match=r"unsigned\(\) takes non-negative integers"):
        unsigned([-1])


def test_utf16_positions_count_characters_beyond_the_bmp_twice():
    assert utf16_positions("plain é text") is None
    assert utf16_positions("a😀b").tolist() == [0, 1, 3, 4]


def test_word_tables_are_stored_once_per_paragraph_as_gaps_and_lengths():
    tables = WordTables()
    assert tables.add(0, np.array([[0, 3], [4, 9]])) == 0
    assert tables.add(0, np.array([[0, 3], [4, 9]])) == 0  # another question of the same paragraph
    assert tables.add(1, np.array([[2, 5]])) == 1
    saved = tables.payload()
    assert array(saved["counts"]).tolist() == [2, 1]
    assert array(saved["gaps"]).tolist() == [0, 1, 2]  # each table starts from 0
    assert array(saved["lengths"]).tolist() == [3, 5, 3]


def test_answer_keys_agree_as_the_official_normalisation_does():
    assert answer_key("The Normans.") == answer_key("normans") != answer_key("Normandy")


def payload_examples() -> list[Example]:
    shared = "Rollo 😀 led the Normans to France."
    return [Example("q1", "Who led them?", shared, (((0, 5),), ((0, 5),))), Example("q2", "Where to?", shared, (((27, 33),),)),
            Example("q3", HOSTILE, f"A tag {HOSTILE} here.", (((6, 6 + len(HOSTILE)),),))]


def test_the_payload_stores_each_context_once_and_answers_as_utf16_offsets():
    examples = payload_examples()
    offsets = np.array([[0, 5], [27, 33], [NO_ANSWER, NO_ANSWER]])
    model = ModelBrowserData([ex.id for ex in examples], ["span"], offsets[None])
    cells = [BrowserCell("joint", 1, "span", ["Rollo", "France", ""], offsets, 0, np.array([100.0, 80.0, 0.0]),
                         np.array([100.0, 0.0, 0.0]), [0.5, 1.0, 0.0], None),
             BrowserCell("other", 1, "span", ["rollo", "Paris", "x"])]
    payload = browser_payload(examples, cells, [("joint", 1, model)], {"question word": ["who", "where", "what"]}, (0, 1), "t")
    assert len(payload["contexts"]) == 2 and array(payload["paragraph"]).tolist() == [0, 0, 1]
    joint, other = payload["cells"]
    start, end = array(joint["start"]), array(joint["end"])
    assert [utf16_slice(payload["contexts"][p], s, e) for p, s, e in zip([0, 0], start[:2], end[:2])] == ["Rollo", "France"]
    assert start.tolist()[1] == 28 and start.tolist()[2] == NO_ANSWER  # the emoji counts two units before "France"
    assert array(joint["confidence"]).tolist() == [128, 255, 0] and joint["probability"] is None
    assert array(joint["em"]).tolist() == [1, 0, 0] and other["texts"] == ["rollo", "Paris", "x"] and other["f1"] is None
    assert array(joint["keys"]).tolist()[0] == array(other["keys"]).tolist()[0]  # "Rollo" and "rollo" agree
    gold = array(payload["gold"]["offsets"]).reshape(-1, 2)
    assert array(payload["gold"]["counts"]).tolist() == [2, 1, 1]
    assert utf16_slice(payload["contexts"][1], *gold[3]) == HOSTILE and utf16_slice(payload["contexts"][0], *gold[2]) == "France"
    assert payload["groups"] == [{"name": "question word", "labels": ["what", "where", "who"], "codes": unsigned([2, 1, 0])}]


def test_the_payload_refuses_model_data_of_other_questions():
    model = ModelBrowserData(["x"], [], np.zeros((0, 1, 2)))
    with pytest.raises(ValueError, match="other questions"):
        browser_payload(payload_examples()[:1], [], [("m", None, model)], {})


def test_payload_json_cannot_close_its_script_element():
    payload = {"contexts": [HOSTILE, "a & b <!-- c -->", "line\u2028separator"]}
    text = payload_json(payload)
    assert not set("<>&") & set(text) and "\u2028" not in text
    assert json.loads(text) == payload


# --- Markdown and the page -----------------------------------------------------------------------

def test_markdown_subset_by_hand():
    markdown = ("# Report: *x*\n\nSome **bold** `code <b>` text\ngoes on & on.\n\n- one\n- two [docs](docs/a.md)\n\n"
                "| a | b |\n|---|---|\n| 1 | <i>2</i> |\n\n```json\n{\"a\": \"</script>\"}\n```\n![plot](p.png)\n")
    assert markdown_to_html(markdown, lambda src: f"data:image/png;base64,{src}") == "\n".join([
        '<h1 id="report-x">Report: <em>x</em></h1>',
        "<p>Some <strong>bold</strong> <code>code &lt;b&gt;</code> text goes on &amp; on.</p>",
        '<ul><li>one</li><li>two <a href="docs/a.md">docs</a></li></ul>',
        '<div class="table-scroll"><table><thead><tr><th>a</th><th>b</th></tr></thead>'
        '<tbody><tr><td>1</td><td>&lt;i&gt;2&lt;/i&gt;</td></tr></tbody></table></div>',
        '<pre><code class="language-json">{&quot;a&quot;: &quot;&lt;/script&gt;&quot;}</code></pre>',
        '<p><img src="data:image/png;base64,p.png" alt="plot"></p>',
    ])


def test_markdown_links_and_images_that_could_run_code_are_dropped():
    assert inline_html("[x](javascript:alert)") == "x"
    assert inline_html("![gone](missing.png)") == "<em>[gone: image not found]</em>"
    assert inline_html("a*b*c and 2 * 3 * 4") == "a*b*c and 2 * 3 * 4"  # no emphasis inside words or around spaces


def test_the_page_escapes_every_text_it_is_given():
    examples = payload_examples()
    cell = BrowserCell("run", None, "span", ["", "", HOSTILE])
    page = render_page(HOSTILE, "<p>report</p>", browser_payload(examples, [cell], [], {}, title=HOSTILE))
    assert page.count("<script") == 2 and page.count("</script>") == 2  # the data and the code, nothing else
    assert "<title>&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;</title>" in page
    data = re.search(r'<script type="application/json" id="browser-data">(.*?)</script>', page, re.S).group(1)
    assert json.loads(data)["contexts"][1] == examples[2].context
    assert '"data": null' not in page and "{{" not in page.split("<script>")[0]
