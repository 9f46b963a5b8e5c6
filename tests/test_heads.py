"""The heads' arithmetic, pinned with numbers computed by hand, and their input checks.

Each loss is also pinned to the exact float32 value the heads gave before they took
logits tensors directly (when ``loss`` read a dict): the refactor changed no number.
"""

import copy
import math

import pytest
import torch
from hypothesis import given, settings, strategies as st

from bio_mrc import BIOHead, SpanHead, registry
from bio_mrc.heads import Head
from bio_mrc.tags import TAG_B, TAG_I, TAG_O

from .conftest import property_examples

LN2 = math.log(2)


def bio_logits(*rows):
    return torch.tensor([rows], dtype=torch.float32)


def test_three_annotators_soft_target():
    # Annotators said B, B and O for one token: t = (2/3, 0, 1/3).
    # Logits (ln 2, 0, 0) give p = (1/2, 1/4, 1/4), so
    # L = -(2/3 ln 1/2 + 1/3 ln 1/4) = 2/3 ln 2 + 2/3 ln 2 = 4/3 ln 2.
    tags = torch.tensor([TAG_B, TAG_B, TAG_O])
    target = torch.nn.functional.one_hot(tags, 3).float().mean(0)
    assert torch.allclose(target, torch.tensor([2 / 3, 0.0, 1 / 3]))
    loss = BIOHead(4).loss(bio_logits([LN2, 0.0, 0.0]), target.view(1, 1, 3), torch.ones(1, 1))
    assert loss.item() == pytest.approx(4 / 3 * LN2, rel=1e-6)
    assert loss.item() == 0.9241962432861328


def test_one_hot_soft_targets_equal_integer_tags():
    torch.manual_seed(0)
    logits = torch.randn(2, 5, 3)
    tags = torch.randint(0, 3, (2, 5))
    mask = torch.tensor([[0, 1, 1, 1, 0], [0, 0, 1, 1, 1]])
    head = BIOHead(4, reduction="mean")
    soft = head.loss(logits, torch.nn.functional.one_hot(tags, 3).float(), mask)
    hard = head.loss(logits, tags, mask)
    # -Σ_i log p_{i,r(i)} per example, averaged over the batch.
    log_p = torch.log_softmax(logits, -1).gather(-1, tags.unsqueeze(-1)).squeeze(-1)
    expected = -(log_p * mask).sum(-1).mean()
    assert soft.item() == pytest.approx(hard.item(), rel=1e-6)
    assert hard.item() == pytest.approx(expected.item(), rel=1e-6)


def test_masked_tokens_never_contribute():
    torch.manual_seed(1)
    logits = torch.randn(1, 6, 3, requires_grad=True)
    targets = torch.softmax(torch.randn(1, 6, 3), -1)
    mask = torch.tensor([[0, 0, 1, 1, 0, 0]])
    head = BIOHead(4)
    loss = head.loss(logits, targets, mask)
    loss.backward()
    assert torch.all(logits.grad[0, [0, 1, 4, 5]] == 0)
    # Changing masked logits and targets changes nothing.
    other_logits = logits.detach().clone()
    other_logits[0, [0, 1, 4, 5]] = 100.0
    other_targets = targets.clone()
    other_targets[0, [0, 1, 4, 5]] = torch.tensor([1.0, 0.0, 0.0])
    assert head.loss(other_logits, other_targets, mask).item() == pytest.approx(loss.item())


@pytest.mark.parametrize(
    "reduction, by_hand, pinned",
    [("sum", 3 * math.log(3), 3.295836925506592), ("mean", 1.5 * math.log(3), 1.647918462753296),
     ("token_mean", math.log(3), 1.0986123085021973)],
)
def test_bio_reductions(reduction, by_hand, pinned):
    # Uniform p = 1/3 on three tagged tokens (two in the first example, one in the second).
    logits = bio_logits([0.0, 0.0, 0.0], [0.0, 0.0, 0.0]).repeat(2, 1, 1)
    tags = torch.full((2, 2), TAG_I)
    mask = torch.tensor([[1, 1], [1, 0]])
    loss = BIOHead(4, reduction=reduction).loss(logits, tags, mask)
    assert loss.item() == pytest.approx(by_hand, rel=1e-6)
    assert loss.item() == pinned


def test_unknown_reduction_is_named():
    with pytest.raises(ValueError, match="reduction"):
        BIOHead(4, reduction="max")


def test_span_loss_small_tensor():
    # start logits (0, ln 3, 0): softmax (1/5, 3/5, 1/5), gold 1 -> ln(5/3)
    # end logits (ln 4, 0, 0):   softmax (4/6, 1/6, 1/6), gold 2 -> ln 6
    # loss = (ln(5/3) + ln 6) / 2 = ln(10) / 2
    logits = torch.tensor([[0.0, math.log(3), 0.0]]), torch.tensor([[math.log(4), 0.0, 0.0]])
    loss = SpanHead(4).loss(logits, torch.tensor([1]), torch.tensor([2]))
    assert loss.item() == pytest.approx(math.log(10) / 2, rel=1e-6)
    assert loss.item() == 1.1512925624847412


def test_a_negative_span_position_is_left_out_of_the_loss_as_transformers_ignore_index():
    # row 0 as in test_span_loss_small_tensor: ln(5/3) and ln 6; row 1's start is -100 (no label), its end 0: ln 3
    logits = (torch.tensor([[0.0, math.log(3), 0.0], [0.0, 0.0, 0.0]]),
              torch.tensor([[math.log(4), 0.0, 0.0], [0.0, 0.0, 0.0]]))
    loss = SpanHead(4).loss(logits, torch.tensor([1, -100]), torch.tensor([2, 0]))
    assert loss.item() == pytest.approx((math.log(5 / 3) + (math.log(6) + math.log(3)) / 2) / 2, rel=1e-6)
    none = SpanHead(4).loss(logits, torch.tensor([-100, -100]), torch.tensor([-100, -100]))
    assert none.item() == 0.0 and none.requires_grad is False  # no label at all: nothing to learn, no nan
    logits[0].requires_grad_(True)
    SpanHead(4).loss(logits, torch.tensor([-100, -100]), torch.tensor([2, 0])).backward()
    assert torch.equal(logits[0].grad, torch.zeros_like(logits[0]))  # an ignored start gives no gradient


def test_span_loss_ignores_padding_and_accepts_soft_targets():
    logits = torch.tensor([[0.0, math.log(3), 0.0, 50.0]]), torch.tensor([[math.log(4), 0.0, 0.0, 50.0]])
    attention = torch.tensor([[1, 1, 1, 0]])
    hard = SpanHead(4).loss(logits, torch.tensor([1]), torch.tensor([2]), attention)
    assert hard.item() == pytest.approx(math.log(10) / 2, rel=1e-6)
    assert hard.item() == 1.1512925624847412
    # Two annotators, starts 1 and 2: -(1/2 ln 3/5 + 1/2 ln 1/5); one end at 2: ln 6.
    soft_start = torch.tensor([[0.0, 0.5, 0.5, 0.0]])
    soft_end = torch.tensor([[0.0, 0.0, 1.0, 0.0]])
    soft = SpanHead(4).loss(logits, soft_start, soft_end, attention)
    expected = (-(0.5 * math.log(3 / 5) + 0.5 * math.log(1 / 5)) + math.log(6)) / 2
    assert soft.item() == pytest.approx(expected, rel=1e-6)
    assert soft.item() == 1.425945520401001


def test_prior_initialises_the_bias():
    head = BIOHead(4, prior=(0.01, 0.02, 0.97))
    probs = torch.softmax(head(torch.zeros(1, 1, 4)), -1)
    assert probs[0, 0].tolist() == pytest.approx([0.01, 0.02, 0.97], rel=1e-5)
    assert torch.all(BIOHead(4).classifier.bias == 0)
    head.classifier.bias.data.zero_()
    head.reset_bias()
    assert torch.softmax(head(torch.zeros(1, 1, 4)), -1)[0, 0].tolist() == pytest.approx([0.01, 0.02, 0.97], rel=1e-5)


def test_the_bias_starts_at_log_prior_with_or_without_class_weights():
    # Weights (10, 10, 1) and prior (0.01, 0.02, 0.97): the weighted loss's own q = softmax(W h + b) starts at the
    # prior, and the output W h + b - log w at prior / w normalised = (0.001, 0.002, 0.97) / 0.973.
    prior, weights = (0.01, 0.02, 0.97), (10.0, 10.0, 1.0)
    zeros = torch.zeros(1, 1, 4)
    head = BIOHead(4, reduction="sum", prior=prior, class_weights=weights)
    assert torch.softmax(head.classifier(zeros), -1)[0, 0].tolist() == pytest.approx(list(prior), rel=1e-5)
    assert torch.softmax(head(zeros), -1)[0, 0].tolist() == pytest.approx([0.001 / 0.973, 0.002 / 0.973, 0.97 / 0.973], rel=1e-5)
    assert torch.softmax(BIOHead(4, prior=prior)(zeros), -1)[0, 0].tolist() == pytest.approx(list(prior), rel=1e-5)
    # no prior: a zero bias, so the weighted loss starts uniform and the output at 1 / w normalised
    assert torch.softmax(BIOHead(4, class_weights=weights)(zeros), -1)[0, 0].tolist() == pytest.approx([0.1 / 1.2, 0.1 / 1.2, 1 / 1.2], rel=1e-5)


def test_losses_of_double_logits_are_exact_and_pass_gradcheck():
    # Three annotators B, B, O on token 1; token 0 is [CLS] and token 3 padding, neither scored.
    torch.manual_seed(0)
    bio, span = torch.randn(1, 4, 3, dtype=torch.float64), torch.randn(2, 1, 4, dtype=torch.float64)
    mask = torch.tensor([[0, 1, 1, 0]])
    targets = torch.tensor([[[0.0, 0.0, 1.0], [2 / 3, 0.0, 1 / 3], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]], dtype=torch.float64)
    log_p = torch.log_softmax(bio, -1)
    by_hand = -(2 / 3 * log_p[0, 1, TAG_B] + 1 / 3 * log_p[0, 1, TAG_O] + log_p[0, 2, TAG_I]) / 2
    head = BIOHead(4)
    loss = head.loss(bio, targets, mask)
    assert loss.dtype == torch.float64 and abs(loss.item() - by_hand.item()) < 1e-12
    assert torch.autograd.gradcheck(lambda x: head.loss(x, targets, mask), (bio.clone().requires_grad_(),))
    weighted = BIOHead(4, class_weights=(2.0, 3.0, 1.0))
    assert torch.autograd.gradcheck(lambda x: weighted.loss(x, targets, mask), (bio.clone().requires_grad_(),))
    attention, start, end = torch.tensor([[1, 1, 1, 0]]), torch.tensor([1]), torch.tensor([2])
    log_s, log_e = (torch.log_softmax(x[0, :3], -1) for x in span)
    span_loss = SpanHead(4).loss((span[0], span[1]), start, end, attention)
    assert span_loss.dtype == torch.float64 and abs(span_loss.item() + (log_s[1] + log_e[2]).item() / 2) < 1e-12
    assert torch.autograd.gradcheck(lambda s, e: SpanHead(4).loss((s, e), start, end, attention),
                                    (span[0].clone().requires_grad_(), span[1].clone().requires_grad_()))


def test_heads_map_hidden_states_to_logits():
    hidden = torch.randn(2, 7, 16)
    assert BIOHead(16)(hidden).shape == (2, 7, 3)
    start, end = SpanHead(16)(hidden)
    assert start.shape == end.shape == (2, 7)


def test_every_head_is_called_the_same_way():
    """What the model does: one call for every head, the labels it names, both masks."""
    torch.manual_seed(0)
    hidden = torch.randn(2, 5, 8)
    mask = torch.ones(2, 5, dtype=torch.long)
    labels = {"start_positions": torch.tensor([1, 0]), "end_positions": torch.tensor([2, 0]),
              "bio_targets": torch.randint(0, 3, (2, 5))}
    for head, entry in ((SpanHead(8), registry.head("span")), (BIOHead(8), registry.head("bio"))):
        assert isinstance(head, Head)
        logits = head(hidden)
        assert list(entry.named_outputs(logits)) == list(entry.outputs)
        loss = head.loss(logits, attention_mask=mask, tag_mask=mask, **{name: labels[name] for name in entry.targets})
        assert loss.dim() == 0 and torch.isfinite(loss)


@pytest.mark.slow
def test_heads_import_without_training_code():
    import subprocess
    import sys

    code = "import sys; from bio_mrc import BIOHead, SpanHead; BIOHead; SpanHead; " \
           "bad = [m for m in sys.modules if m.startswith(('bio_mrc.training', 'datasets', 'transformers'))]; print(bad)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_marginal_likelihood_of_two_annotators_by_hand():
    # Two tokens, p = (1/2, 1/4, 1/4) on each. Annotator 1 tags "B I", annotator 2 "O B".
    # P(B I) = 1/2 * 1/4 = 1/8, P(O B) = 1/4 * 1/2 = 1/8, so L = -log(1/8 + 1/8) = 2 log 2.
    # The soft average (1/2 B, 0 I, 1/2 O | 1/2 B, 1/2 I, 0 O) would give -(½ln½ + ½ln¼)·2 = 3 ln 2.
    logits = bio_logits([LN2, 0.0, 0.0], [LN2, 0.0, 0.0])
    annotators = torch.tensor([[[TAG_B, TAG_O], [TAG_I, TAG_B]]])  # (batch, seq, K)
    head = BIOHead(4, reduction="mean")
    marginal = head.loss(logits, annotators, torch.ones(1, 2)).item()
    assert marginal == pytest.approx(2 * LN2, rel=1e-6)
    assert marginal == 1.3862943649291992
    soft = torch.nn.functional.one_hot(annotators[0].T, 3).float().mean(0).unsqueeze(0)
    assert head.loss(logits, soft, torch.ones(1, 2)).item() == pytest.approx(3 * LN2, rel=1e-6)


def test_marginal_likelihood_ignores_missing_annotators_and_masked_tokens():
    torch.manual_seed(1)
    logits = torch.randn(1, 4, 3)
    tags = torch.tensor([[TAG_O, TAG_B, TAG_I, TAG_O]])
    mask = torch.tensor([[0, 1, 1, 1]])
    head = BIOHead(4, reduction="mean")
    one_hot = head.loss(logits, tags, mask)
    padded = torch.stack([tags, torch.full_like(tags, -1)], dim=-1)  # a second, missing annotator
    assert head.loss(logits, padded, mask).item() == pytest.approx(one_hot.item(), rel=1e-6)
    # The same sequence twice is one member of the gold set: P, not 2P (which put the loss below 0 once P > 1/2).
    twice = torch.stack([tags, tags], dim=-1)
    assert head.loss(logits, twice, mask).item() == pytest.approx(one_hot.item(), rel=1e-6)


def test_marginal_likelihood_counts_each_distinct_sequence_once_by_hand():
    # Two tokens, p = (1/2, 1/4, 1/4) on each. Annotators 1 and 3 tag "B O", annotator 2 "O B" (a third column
    # repeating the first, as SQuAD's annotators often agree): S = {B O, O B}, P(B O) = 1/2 * 1/4 = 1/8,
    # P(O B) = 1/8, L = -log(1/4) = 2 log 2; counting "B O" twice gave -log(3/8).
    logits = bio_logits([LN2, 0.0, 0.0], [LN2, 0.0, 0.0])
    annotators = torch.tensor([[[TAG_B, TAG_O, TAG_B], [TAG_O, TAG_B, TAG_O]]])
    assert BIOHead(4, reduction="sum").loss(logits, annotators, torch.ones(1, 2)).item() == pytest.approx(2 * LN2, rel=1e-6)
    # A sequence repeated only on a token the mask leaves out is the same sequence.
    masked = torch.tensor([[[TAG_B, TAG_B], [TAG_O, TAG_I]]])
    assert BIOHead(4, reduction="sum").loss(logits, masked, torch.tensor([[1, 0]])).item() == pytest.approx(LN2, rel=1e-6)


@settings(max_examples=property_examples(60), deadline=None)
@given(st.integers(1, 3), st.integers(1, 5), st.integers(1, 4), st.integers(0, 2**31 - 1))
def test_marginal_likelihood_is_the_negative_log_of_a_probability(batch, seq, annotators, seed):
    # Annotators who each tag every token (or none: a missing annotator), however many repeat one another, give
    # disjoint whole sequences: the gold set's probability is at most 1, the loss never below 0, and it equals -log of
    # the summed probability of the distinct sequences, enumerated here.
    generator = torch.Generator().manual_seed(seed)
    logits = torch.randn(batch, seq, 3, generator=generator) * 3
    tags = torch.randint(0, 3, (batch, seq, annotators), generator=generator)
    tags[:, :, -1] = tags[:, :, 0]  # at least one repeat where K > 1
    missing = torch.rand(batch, 1, annotators, generator=generator) < 0.25
    tags = tags.masked_fill(missing, -1)
    mask = torch.ones(batch, seq)
    per_example = BIOHead(4, reduction="sum").loss(logits, tags, mask)
    assert per_example.item() >= -1e-6
    probabilities = torch.softmax(logits.double(), -1)
    expected = 0.0
    for b in range(batch):
        gold = {tuple(tags[b, :, k].tolist()) for k in range(annotators) if (tags[b, :, k] >= 0).any()}
        if gold:
            total = sum(math.prod(float(probabilities[b, i, t]) for i, t in enumerate(s) if t >= 0) for s in gold)
            expected -= math.log(total)
    assert per_example.item() == pytest.approx(expected, rel=1e-4, abs=1e-4)


def test_marginal_likelihood_leaves_out_a_present_annotators_minus_100_token():
    # Two tokens, p = (1/2, 1/4, 1/4) on each. Annotator 1 tags "B -100" (the second token no tag), annotator 2
    # "O B": P_1 = 1/2 (the untagged token adds nothing), P_2 = 1/4 * 1/2 = 1/8, L = -log(5/8); read as B, the
    # -100 gave P_1 = 1/4 and L = -log(3/8). token_mean counts both tokens: annotator 2 tags the second.
    logits = bio_logits([LN2, 0.0, 0.0], [LN2, 0.0, 0.0])
    annotators = torch.tensor([[[TAG_B, TAG_O], [-100, TAG_B]]])
    assert BIOHead(4, reduction="sum").loss(logits, annotators, torch.ones(1, 2)).item() == pytest.approx(-math.log(5 / 8))
    assert BIOHead(4).loss(logits, annotators, torch.ones(1, 2)).item() == pytest.approx(-math.log(5 / 8) / 2)


def test_marginal_likelihood_of_an_example_no_annotator_tags_is_no_label_not_infinite():
    logits = bio_logits([LN2, 0.0, 0.0], [LN2, 0.0, 0.0]).repeat(2, 1, 1)
    tags = torch.tensor([[[TAG_B], [TAG_O]], [[-1], [-1]]])  # the second example: its one annotator missing
    loss = BIOHead(4, reduction="token_mean").loss(logits, tags, torch.ones(2, 2))
    assert loss.item() == pytest.approx(-(math.log(1 / 2) + math.log(1 / 4)) / 2)  # 2 tokens counted, not 4


@pytest.mark.parametrize("row, problem", [
    ([float("nan"), 0.0, 1.0], "nan"),  # was read as a row of zeros: no label, a loss of 0
    ([1.5, -0.5, 0.0], "-0.5"),  # a negative entry: the loss is unbounded below
    ([5.0, 0.0, 0.0], "5.0"),  # not summing to 1
])
def test_bio_soft_targets_that_are_no_distribution_are_refused_naming_the_token(row, problem):
    targets = torch.tensor([[[0.0, 0.0, 1.0], row]])
    with pytest.raises(ValueError, match=rf"bio_targets\[0, 1\] must be a distribution over B, I, O .*{problem}"):
        BIOHead(4).loss(torch.zeros(1, 2, 3), targets, torch.ones(1, 2))
    annotators = torch.tensor([[[2 / 3, 0.0, 1 / 3], [0.0, 0.0, 0.0]]])  # B, B, O: accepted, a row of zeros too
    assert BIOHead(4).loss(torch.zeros(1, 2, 3), annotators, torch.ones(1, 2)).item() == pytest.approx(math.log(3))


def test_span_soft_targets_a_zero_row_is_no_label_and_padding_or_negative_mass_is_refused():
    start, end = torch.zeros(2, 4), torch.zeros(2, 4)  # uniform over the 3 unpadded positions: -log(1/3) each
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 1, 0]])
    soft = torch.tensor([[0.0, 0.5, 0.5, 0.0], [0.0, 0.0, 0.0, 0.0]])
    assert SpanHead(4).loss((start, end), soft, soft, attention_mask=mask).item() == pytest.approx(math.log(3))
    integer = SpanHead(4).loss((start, end), torch.tensor([1, -100]), torch.tensor([2, -100]), attention_mask=mask)
    assert integer.item() == pytest.approx(math.log(3))  # the same mean as the -100 of integer positions
    on_padding = torch.tensor([[0.0, 0.0, 0.0, 1.0], [1.0, 0.0, 0.0, 0.0]])
    with pytest.raises(ValueError, match="start_positions puts probability on padding"):
        SpanHead(4).loss((start, end), on_padding, soft, attention_mask=mask)
    with pytest.raises(ValueError, match=r"end_positions\[1\] must be a distribution"):
        SpanHead(4).loss((start, end), soft, torch.tensor([[1.0, 0, 0, 0], [2.0, -1.0, 0, 0]]), attention_mask=mask)


def test_class_weights_become_a_tensor_once_per_device_and_dtype(monkeypatch):
    # On an accelerator a tensor made from Python numbers is a copy the host waits for: after the first step,
    # forward and loss read the weights made then, and give what the weights made afresh give.
    weighted = BIOHead(4, reduction="mean", class_weights=(4.0, 2.0, 1.0))
    hidden, tags, mask = torch.randn(2, 3, 4), torch.tensor([[TAG_B, TAG_I, TAG_O], [TAG_O, TAG_B, TAG_O]]), torch.ones(2, 3)
    first = weighted.loss(weighted(hidden), tags, mask)
    with torch.autocast("cpu", dtype=torch.bfloat16):  # as training in bf16 runs it
        first_bf16 = weighted(hidden)

    def refuse(*args, **kwargs):
        raise AssertionError("a tensor made from the class weights again")

    monkeypatch.setattr(torch.Tensor, "new_tensor", refuse)
    assert torch.equal(weighted.loss(weighted(hidden), tags, mask), first)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert torch.equal(weighted(hidden), first_bf16)
        raw = weighted.classifier(hidden)
    assert first_bf16.dtype == torch.bfloat16  # the log taken in the logits' own dtype, as before
    assert torch.equal(first_bf16, raw - torch.tensor([4.0, 2.0, 1.0], dtype=torch.bfloat16).log())


def test_class_weights_scale_each_gold_tag():
    # q = (1/2, 1/4, 1/4); a B token and an O token, weights (w_B, w_I, w_O) = (4, 2, 1):
    # L = -(4 ln 1/2 + 1 ln 1/4) = 6 ln 2 per example, and the plain loss 3 ln 2.
    logits = bio_logits([LN2, 0.0, 0.0], [LN2, 0.0, 0.0])
    tags = torch.tensor([[TAG_B, TAG_O]])
    weighted = BIOHead(4, reduction="mean", class_weights=(4.0, 2.0, 1.0))
    # The head outputs the prior-corrected logits W h + b - log w; the loss reads W h + b.
    corrected = logits - torch.log(torch.tensor([4.0, 2.0, 1.0]))
    loss = weighted.loss(corrected, tags, torch.ones(1, 2)).item()
    assert loss == pytest.approx(6 * LN2, rel=1e-6)
    assert loss == 4.158883094787598
    hidden = torch.randn(1, 2, 4)
    raw = weighted.classifier(hidden)
    assert torch.allclose(weighted(hidden), raw - torch.log(torch.tensor([4.0, 2.0, 1.0])))
    assert BIOHead(4, reduction="mean").loss(logits, tags, torch.ones(1, 2)).item() == pytest.approx(3 * LN2, rel=1e-6)
    with pytest.raises(ValueError, match="class_weights"):
        BIOHead(4, class_weights=(1.0, 0.0, 1.0))
    for prior in ((0.0, 0.1, 0.9), (0.1, float("nan"), 0.9), (0.1, 0.9)):  # log 0 = -inf: B never predicted, the bias not finite
        with pytest.raises(ValueError, match=r"prior must be three positive numbers \(B, I, O\)"):
            BIOHead(4, prior=prior)
    with pytest.raises(ValueError, match="marginal likelihood"):
        weighted.loss(corrected, tags.unsqueeze(-1), torch.ones(1, 2))


# Wrong inputs: the error names the argument and the expected shape, never a bare IndexError.
LOGITS, TAGS, MASK = torch.zeros(2, 5, 3), torch.zeros(2, 5, dtype=torch.long), torch.ones(2, 5)


@pytest.mark.parametrize(
    "logits, targets, mask, error, message",
    [
        ({"bio_logits": LOGITS}, TAGS, MASK, TypeError, r"logits must be a tensor .*pass the tensor itself"),
        (torch.zeros(2, 5), TAGS, MASK, ValueError, r"logits must have shape \(batch, seq, 3\), got \(2, 5\)"),
        (torch.zeros(2, 5, 4), TAGS, MASK, ValueError, r"logits must have shape \(batch, seq, 3\)"),
        (LOGITS, TAGS[:, :4], MASK, ValueError, r"bio_targets must be \(batch, seq\) = \(2, 5\) integer tags"),
        (LOGITS, torch.zeros(2, 5, 2), MASK, ValueError, r"bio_targets .*\(batch, seq, 3\) distributions"),
        (LOGITS, torch.zeros(2), MASK, ValueError, r"bio_targets must have shape"),
        (LOGITS, TAGS.tolist(), MASK, TypeError, r"bio_targets must be a tensor"),
        (LOGITS, TAGS, MASK[:, :4], ValueError, r"tag_mask must have shape \(batch, seq\) = \(2, 5\), got \(2, 4\)"),
        (LOGITS, TAGS, None, TypeError, r"tag_mask must be a tensor"),
        # float tags were truncated by .long() (0.5 read as B, 1.7 as I), or failed inside one_hot (3.5)
        (LOGITS, torch.tensor([[0.5, 1.7, 2.0, 2.0, 3.5]] * 2), MASK, TypeError,
         r"bio_targets must be \(batch, seq\) = \(2, 5\) integer tags.*got \(2, 5\) torch.float32"),
        (LOGITS.to(torch.complex64), TAGS, MASK, TypeError, r"logits must be a real tensor .*got torch.complex64"),
        (LOGITS, torch.tensor([[2, 2, 3, 2, 2]] * 2), MASK, ValueError, r"bio_targets\[0, 2\] is 3, past the 3 tags"),
        (LOGITS, torch.full((2, 5, 2), 2).index_put_((torch.tensor(1), torch.tensor(4), torch.tensor(1)), torch.tensor(7)),
         MASK, ValueError, r"bio_targets\[1, 4, 1\] is 7, past the 3 tags \(B = 0, I = 1, O = 2\)"),
        # a boolean tensor (a mask passed as the tags) was read as B (False) and I (True)
        (LOGITS, TAGS > 0, MASK, TypeError, r"bio_targets must be \(batch, seq\) = \(2, 5\) integer tags.*torch.bool: True and False are no labels"),
        # a mask value other than 0 and 1 (NaN, 0.5) was read as 1: the token counted in full
        (LOGITS, TAGS, torch.tensor([[1.0, 0.5, 1.0, 0.0, 0.0]] * 2), ValueError, r"tag_mask\[0, 1\] is 0.5: a mask holds 0 and 1"),
        (LOGITS, TAGS, torch.tensor([[1.0, 1.0, math.nan, 0.0, 0.0]] * 2), ValueError, r"tag_mask\[0, 2\] is nan: a mask holds 0 and 1"),
    ],
)
def test_bio_loss_names_wrong_inputs(logits, targets, mask, error, message):
    with pytest.raises(error, match=message):
        BIOHead(4).loss(logits, targets, mask)


START, END, POS = torch.zeros(2, 5), torch.zeros(2, 5), torch.tensor([1, 0])


@pytest.mark.parametrize(
    "logits, start, mask, error, message",
    [
        ({"start_logits": START, "end_logits": END}, POS, None, TypeError, r"\(start_logits, end_logits\) pair"),
        (START, POS, None, TypeError, r"\(start_logits, end_logits\) pair .*got Tensor"),
        ((torch.zeros(2, 5, 1), END), POS, None, ValueError, r"start_logits must have shape \(batch, seq\)"),
        ((START, torch.zeros(2, 4)), POS, None, ValueError, r"end_logits must have shape \(batch, seq\) = \(2, 5\)"),
        ((START, END), POS.view(2, 1), None, ValueError, r"start_positions must be \(batch,\) = \(2,\) integer"),
        ((START, END), torch.zeros(2), None, ValueError, r"start_positions must be .*distributions"),
        ((START, END), torch.zeros(2, 4), None, ValueError, r"start_positions must be"),
        ((START, END), {"start": POS}, None, TypeError, r"start_positions must be a tensor"),
        ((START, END), POS, torch.ones(2, 4), ValueError, r"attention_mask must have shape \(batch, seq\) = \(2, 5\)"),
        ((START, END), torch.tensor([1, 5]), None, ValueError, r"start_positions\[1\] is 5, past the 5 positions of the window"),
        ((START, END), torch.tensor([1, 3]), torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]]), ValueError,
         r"start_positions\[1\] is 3, a padding position \(attention_mask 0\)"),
        ((START, END), POS.to(torch.complex64), None, TypeError, r"start_positions must be a real tensor"),
        # True and False were read as positions 1 and 0
        ((START, END), POS.bool(), None, TypeError, r"start_positions must be \(batch,\) = \(2,\) integer .*torch.bool: True and False are no labels"),
        ((START, END), POS, torch.tensor([[1.0, 1.0, 1.0, 0.0, 0.0], [1.0, 1.0, 2.0, 0.0, 0.0]]), ValueError,
         r"attention_mask\[1, 2\] is 2.0: a mask holds 0 and 1"),
    ],
)
def test_span_loss_names_wrong_inputs(logits, start, mask, error, message):
    with pytest.raises(error, match=message):
        SpanHead(4).loss(logits, start, POS, mask)


@pytest.mark.parametrize("head", [BIOHead(4), SpanHead(4)], ids=["bio", "span"])
@pytest.mark.parametrize(
    "hidden, error, message",
    [
        (torch.zeros(2, 5, 6), ValueError, r"hidden_states must have shape \(batch, seq, 4\), got \(2, 5, 6\)"),
        (torch.zeros(5, 4), ValueError, r"hidden_states must have shape \(batch, seq, 4\)"),
        ({"last_hidden_state": torch.zeros(2, 5, 4)}, TypeError, r"\.last_hidden_state"),
        (torch.zeros(2, 5, 4, dtype=torch.long), TypeError, r"hidden_states must be a floating-point tensor, got torch.int64"),
        # torch's "mat1 and mat2 must have the same dtype" named neither the argument nor the fix
        (torch.zeros(2, 5, 4, dtype=torch.bfloat16), TypeError,
         r"hidden_states are torch.bfloat16, the head's weights torch.float32: cast the head \(head.to\(torch.bfloat16\)\)"),
        (torch.zeros(2, 5, 4, dtype=torch.float64), TypeError, r"hidden_states are torch.float64, the head's weights torch.float32"),
        (torch.zeros(2, 5, 4, device="meta"), ValueError, r"hidden_states are on meta, the head's weights on cpu: move the head"),
    ],
)
def test_heads_name_wrong_hidden_states(head, hidden, error, message):
    with pytest.raises(error, match=message):
        head(hidden)


@pytest.mark.parametrize("head", [BIOHead(4), SpanHead(4)], ids=["bio", "span"])
def test_heads_read_other_float_states_under_autocast_and_in_their_own_dtype(head):
    states = torch.ones(2, 5, 4, dtype=torch.bfloat16)
    with torch.autocast("cpu", dtype=torch.bfloat16):  # autocast casts the fp32 weights
        under_autocast = head(states)
    own = copy.deepcopy(head).to(torch.bfloat16)(states)
    for logits in (under_autocast, own):
        assert all(t.dtype == torch.bfloat16 for t in (logits if isinstance(logits, tuple) else (logits,)))


def test_negative_integer_tags_are_left_out_of_the_bio_loss():
    """transformers' -100 on a tagged token: left out of the loss and of token_mean's count, as an untagged token is."""
    # Logits (ln 2, 0, 0) give p = (1/2, 1/4, 1/4); tags B, -100, O on three tagged tokens: (ln 2 + ln 4) / 2 = 1.5 ln 2.
    logits = bio_logits([LN2, 0.0, 0.0], [LN2, 0.0, 0.0], [LN2, 0.0, 0.0])
    loss = BIOHead(4).loss(logits, torch.tensor([[TAG_B, -100, TAG_O]]), torch.ones(1, 3))
    assert loss.item() == pytest.approx(1.5 * LN2, rel=1e-6)


def test_a_row_of_zeros_is_left_out_of_token_means_count():
    """A tagged token with no distribution (``--tag-mentions ignored``' other mentions) weighs nothing in the mean."""
    # p = (1/2, 1/4, 1/4) everywhere; targets B, zeros, O: (ln 2 + ln 4) / 2 = 1.5 ln 2, not 3 ln 2 / 3.
    logits = bio_logits([LN2, 0.0, 0.0], [LN2, 0.0, 0.0], [LN2, 0.0, 0.0])
    targets = torch.tensor([[[1.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 1.0]]])
    assert BIOHead(4).loss(logits, targets, torch.ones(1, 3)).item() == pytest.approx(1.5 * LN2, rel=1e-6)


def test_tags_past_b_i_o_outside_tag_mask_are_never_read():
    # uniform logits: each tagged token's loss is ln 3, whatever its tag; the untagged tokens hold 9, which tags nothing
    logits, mask = torch.zeros(1, 4, 3), torch.tensor([[1, 1, 0, 0]])
    assert BIOHead(4).loss(logits, torch.tensor([[0, 2, 9, 9]]), mask).item() == pytest.approx(math.log(3))
    annotators = torch.tensor([[[0, 2], [1, 2], [9, 9], [9, 9]]])  # two annotators: -log(2 / 9) over the two tokens
    assert BIOHead(4).loss(logits, annotators, mask).item() == pytest.approx(-math.log(2 / 9) / 2)
    with pytest.raises(ValueError, match=r"bio_targets\[0, 1, 1\] is 9, past the 3 tags"):
        BIOHead(4).loss(logits, annotators.index_put((torch.tensor(0), torch.tensor(1), torch.tensor(1)), torch.tensor(9)), mask)


@pytest.mark.parametrize("reduction", BIOHead.reductions)
def test_bio_loss_of_an_empty_batch_is_zero(reduction):
    # "mean" took the mean of no examples: nan
    loss = BIOHead(4, reduction=reduction).loss(torch.zeros(0, 5, 3), torch.zeros(0, 5, dtype=torch.long), torch.ones(0, 5))
    assert loss.item() == 0.0
