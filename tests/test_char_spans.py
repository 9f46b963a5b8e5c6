"""The heads' outputs of one's own model decoded alone: start/end logits or B/I/O tags with the tokenizer's offsets
in, character spans out, on a hand-computed 6-token example."""

import numpy as np
import pytest
import torch

from bio_mrc.decoding.char_spans import best_char_spans, tag_char_spans
from bio_mrc.tags import TAG_B, TAG_I, TAG_O, spans_to_tags

# "Ada met Charles Babbage": [CLS] Ada met Charles Babbage [SEP]; only the context's tokens may answer.
OFFSETS = np.array([[[0, 0], [0, 3], [4, 7], [8, 15], [16, 23], [0, 0]]])
MASK = np.array([[0, 1, 1, 1, 1, 0]])
START = np.array([[5.0, 1.0, 0.0, 3.0, 0.0, 9.0]])
END = np.array([[5.0, 0.0, 0.0, 1.0, 2.0, 9.0]])


def test_best_span_by_hand():
    # s_3 + e_4 = 5 beats s_3 + e_3 = 4, s_1 + e_1 = 1; [CLS] and [SEP] (9 + 9) are masked out.
    assert best_char_spans(START, END, OFFSETS, MASK) == [[(8, 23, 5.0)]]
    assert best_char_spans(START, END, OFFSETS, MASK, max_answer_length=1) == [[(8, 15, 4.0)]]
    # then s_1 + e_4 = 3: "Ada met Charles Babbage"
    assert best_char_spans(START, END, OFFSETS, MASK, n_best=3) == [[(8, 23, 5.0), (8, 15, 4.0), (0, 23, 3.0)]]


def test_best_span_reads_tensors_of_any_float_dtype_with_gradients():
    start = torch.tensor(START, dtype=torch.bfloat16, requires_grad=True)
    end = torch.tensor(END, dtype=torch.bfloat16)
    assert best_char_spans(start, end, torch.tensor(OFFSETS), torch.tensor(MASK)) == [[(8, 23, 5.0)]]


def test_best_span_without_a_mask_reads_every_token_and_a_row_with_no_token_has_none():
    assert best_char_spans(START, END, OFFSETS) == [[(0, 0, 18.0)]]  # [SEP] alone: s_5 + e_5
    assert best_char_spans(START, END, OFFSETS, np.zeros_like(MASK)) == [[]]


def test_tags_to_character_spans_by_hand():
    assert tag_char_spans(np.array([[TAG_O, TAG_B, TAG_O, TAG_B, TAG_I, TAG_O]]), OFFSETS, MASK) == [[(0, 3), (8, 23)]]
    # an I after O opens a span, as seqeval reads it; a tag on a masked token is never read
    assert tag_char_spans(np.array([[TAG_B, TAG_I, TAG_I, TAG_O, TAG_B, TAG_B]]), OFFSETS, MASK) == [[(0, 7), (16, 23)]]


def test_tags_from_the_bio_heads_logits_read_back_the_spans_they_were_made_from():
    spans = [(0, 3), (8, 23)]
    tags = spans_to_tags(OFFSETS[0], MASK[0], spans)
    logits = torch.nn.functional.one_hot(torch.as_tensor(tags), 3).float()[None] * 4
    assert tag_char_spans(logits.argmax(-1), torch.tensor(OFFSETS), torch.tensor(MASK)) == [spans]


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: best_char_spans(START, END[:, :5], OFFSETS, MASK),
         r"^end_logits must have the shape of start_logits \(1, 6\), got \(1, 5\)$"),
        (lambda: best_char_spans(START[0], END[0], OFFSETS, MASK),
         r"^start_logits must have shape \(batch, seq\), got \(6,\)$"),
        (lambda: best_char_spans(START, END, OFFSETS[0], MASK),
         r"^offsets must have shape \(batch, seq, 2\) = \(1, 6, 2\), got \(6, 2\)$"),
        (lambda: best_char_spans(START, END, OFFSETS, MASK[:, :5]),
         r"^mask must have shape \(batch, seq\) = \(1, 6\), got \(1, 5\)$"),
        (lambda: best_char_spans(START, END, OFFSETS, MASK, max_answer_length=0),
         r"^max_answer_length must be a positive integer, got 0$"),
        (lambda: best_char_spans(START, END, OFFSETS, MASK, n_best=0), r"^n_best must be a positive integer, got 0$"),
        (lambda: tag_char_spans(np.array([[TAG_O, TAG_B, 3, TAG_O, TAG_O, TAG_O]]), OFFSETS, MASK),
         r"^tags\[0, 2\] is 3, not a tag \(B = 0, I = 1, O = 2\)$"),
        (lambda: tag_char_spans(np.zeros((1, 6, 3)), OFFSETS, MASK),
         r"^tags must have shape \(batch, seq\) of integer tags \(the BIO logits' argmax\), got \(1, 6, 3\) float64$"),
    ],
)
def test_wrong_inputs_are_refused_in_one_line_naming_the_argument(call, message):
    with pytest.raises(ValueError, match=message):
        call()
