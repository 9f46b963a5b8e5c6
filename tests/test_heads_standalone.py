"""The heads on someone else's encoder: forward, loss and backward with no bio_mrc model around them."""

import pickle

import numpy as np
import pytest
import torch
from torch import nn

from bio_mrc import BIOHead, SpanHead


def labels(batch, seq):
    """Answers at tokens 3-4 and 2; tags only on the paragraph tokens 2..seq-2."""
    tag_mask = torch.zeros(batch, seq, dtype=torch.long)
    tag_mask[:, 2:-1] = 1
    tags = torch.full((batch, seq), 2)
    tags[0, 3], tags[0, 4], tags[1, 2] = 0, 1, 0
    return tags, tag_mask, torch.tensor([3, 2]), torch.tensor([4, 2])


def train_step(encoder_params, hidden, bio, span, attention_mask):
    tags, tag_mask, starts, ends = labels(*hidden.shape[:2])
    loss = bio.loss(bio(hidden), tags, tag_mask) + span.loss(span(hidden), starts, ends, attention_mask)
    loss.backward()
    for parameter in [*encoder_params, *bio.parameters(), *span.parameters()]:
        assert parameter.grad is not None and torch.isfinite(parameter.grad).all()
    return loss


def test_heads_on_a_plain_torch_encoder():
    torch.manual_seed(0)
    hidden_size = 16
    encoder = nn.Sequential(nn.Embedding(50, hidden_size), nn.Linear(hidden_size, hidden_size), nn.Tanh())
    bio, span = BIOHead(hidden_size), SpanHead(hidden_size)
    optimizer = torch.optim.SGD([*encoder.parameters(), *bio.parameters(), *span.parameters()], lr=0.5)
    ids = torch.randint(0, 50, (2, 7))
    losses = []
    for _ in range(5):
        optimizer.zero_grad()
        losses.append(train_step(list(encoder.parameters()), encoder(ids), bio, span, None).item())
        optimizer.step()
    assert losses[-1] < losses[0]


def test_heads_on_a_transformers_bert():
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(vocab_size=50, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=16)
    encoder = BertModel(config, add_pooling_layer=False)
    bio, span = BIOHead(config.hidden_size, dropout=0.1), SpanHead(config.hidden_size, dropout=0.1)
    ids = torch.randint(5, 50, (2, 8))
    attention_mask = torch.ones(2, 8, dtype=torch.long)
    attention_mask[1, 7:] = 0  # padding; the tags (tokens 2..6) stay inside the text
    hidden = encoder(input_ids=ids, attention_mask=attention_mask).last_hidden_state
    loss = train_step(list(encoder.parameters()), hidden, bio, span, attention_mask)
    assert loss.dim() == 0 and torch.isfinite(loss)
    start_logits, end_logits = span(hidden)
    assert bio(hidden).shape == (2, 8, 3) and start_logits.shape == end_logits.shape == (2, 8)


@pytest.mark.parametrize(
    "build, error, message",
    [
        (lambda: BIOHead(0), ValueError, r"hidden_size must be a positive integer, got 0"),
        (lambda: SpanHead(-1), ValueError, r"hidden_size must be a positive integer, got -1"),
        (lambda: SpanHead(8.0), TypeError, r"hidden_size must be a positive integer, got 8.0"),
        (lambda: BIOHead(True), TypeError, r"hidden_size must be a positive integer, got True"),
        (lambda: BIOHead(8, dropout=float("nan")), ValueError, r"dropout must be a probability in \[0, 1\], got nan"),
        (lambda: SpanHead(8, dropout="0.1"), TypeError, r"dropout must be a probability in \[0, 1\], got '0.1'"),
        (lambda: BIOHead(8, class_weights=(float("nan"), 1, 1)), ValueError, r"class_weights must be three positive"),
        (lambda: BIOHead(8, class_weights=(float("inf"), 1, 1)), ValueError, r"class_weights must be three positive"),
        (lambda: BIOHead(8, class_weights=2.0), ValueError, r"class_weights must be three positive numbers \(B, I, O\), got 2.0"),
        (lambda: BIOHead(8, prior="abc"), ValueError, r"prior must be three positive numbers \(B, I, O\), got 'abc'"),
        (lambda: BIOHead(8, prior="118"), ValueError, r"prior must be three positive numbers \(B, I, O\), got '118'"),
    ],
)
def test_head_arguments_are_refused_when_the_head_is_built(build, error, message):
    # H = 0 built a head whose logits are all 0, a NaN dropout failed at the first training step, a NaN or infinite
    # class weight made every logit NaN; the others failed with torch's or Python's words for something else.
    with pytest.raises(error, match=message) as raised:
        build()
    assert "\n" not in str(raised.value)


def test_prior_and_class_weights_are_kept_as_plain_numbers():
    head = BIOHead(4, prior=torch.tensor([1.0, 1.0, 2.0]), class_weights=np.array([4, 2, 1]))
    assert head.prior == (1.0, 1.0, 2.0) and head.class_weights == (4.0, 2.0, 1.0)
    assert all(type(value) is float for value in (*head.prior, *head.class_weights))
    assert torch.allclose(head.classifier.bias, torch.tensor([0.25, 0.25, 0.5]).log())


def test_repr_shows_what_changes_the_outputs_and_the_loss():
    assert "reduction='sum', prior=(0.1, 0.1, 0.8), class_weights=(10.0, 10.0, 1.0)" in repr(
        BIOHead(4, reduction="sum", prior=(0.1, 0.1, 0.8), class_weights=(10, 10, 1)))
    assert "reduction='token_mean'" in repr(BIOHead(4))


# The test is of tracing, which torch deprecates for torch.export; the tracer notes the input checks' shape tests,
# which hold for the traced shapes and are left out of the graph, as meant.
@pytest.mark.filterwarnings(r"ignore:`torch\.jit\.trace(_method)?` is deprecated:DeprecationWarning:torch\.jit",
                            "ignore:Converting a tensor to a Python boolean:torch.jit.TracerWarning")
def test_a_head_with_class_weights_traces():
    # torch.jit.trace checks that a second trace gives the same graph: the class weights made on the first call and
    # read from the cache on the second gave two graphs.
    torch.manual_seed(0)
    head = BIOHead(4, class_weights=(10.0, 10.0, 1.0)).eval()
    traced = torch.jit.trace(head, torch.randn(2, 3, 4))
    hidden = torch.randn(3, 5, 4)
    assert torch.equal(traced(hidden), head(hidden))


def test_losses_compile_into_one_graph_on_the_cpu():
    # The checks of label values branch on the data, which fullgraph=True refused; they are left out of compiled
    # code, as they are on an accelerator.
    torch.manual_seed(0)
    bio, span = BIOHead(4, class_weights=(10.0, 10.0, 1.0)), SpanHead(4)
    hidden = torch.randn(2, 7, 4)
    tags, tag_mask, starts, ends = labels(2, 7)
    attention_mask = torch.ones(2, 7, dtype=torch.long)
    soft = torch.nn.functional.one_hot(tags, 3).float()

    def step(hidden, tags, soft, tag_mask, starts, ends, attention_mask):
        start_end = span(hidden)
        return (bio.loss(bio(hidden), tags, tag_mask) + bio.loss(bio(hidden), soft, tag_mask)
                + span.loss(start_end, starts, ends, attention_mask)
                + span.loss(start_end, soft[..., 0], soft[..., 0], attention_mask))

    arguments = (hidden, tags, soft, tag_mask, starts, ends, attention_mask)
    torch._dynamo.reset()
    compiled = torch.compile(step, backend="eager", fullgraph=True)
    assert torch.allclose(compiled(*arguments), step(*arguments))


def test_heads_pickle_load_their_state_and_run_on_the_meta_device():
    torch.manual_seed(0)
    hidden = torch.randn(2, 7, 4)
    tags, tag_mask, starts, ends = labels(2, 7)
    for head in (BIOHead(4, class_weights=(2.0, 2.0, 1.0)), SpanHead(4)):
        head(hidden)  # the class weights' cached tensor travels too
        again = pickle.loads(pickle.dumps(head))
        fresh = type(head)(4, class_weights=(2.0, 2.0, 1.0)) if isinstance(head, BIOHead) else SpanHead(4)
        fresh.load_state_dict(head.state_dict())
        for other in (again, fresh):
            assert all(torch.equal(a, b) for a, b in zip(torch.atleast_1d(other(hidden)), torch.atleast_1d(head(hidden))))
    bio, span = BIOHead(4).to("meta"), SpanHead(4).to("meta")
    states = hidden.to("meta")
    assert bio.loss(bio(states), tags.to("meta"), tag_mask.to("meta")).shape == ()
    assert span.loss(span(states), starts.to("meta"), ends.to("meta"), torch.ones(2, 7, device="meta")).shape == ()


def test_a_batch_with_every_position_masked_adds_zero_with_finite_gradients():
    torch.manual_seed(0)
    hidden = torch.randn(2, 7, 4, requires_grad=True)
    tags, _, _, _ = labels(2, 7)
    none = torch.zeros(2, 7, dtype=torch.long)
    no_label = torch.full((2,), -100)
    for reduction in BIOHead.reductions:
        bio = BIOHead(4, reduction=reduction)
        loss = bio.loss(bio(hidden), tags, none)
        assert loss.item() == 0 and torch.isfinite(torch.autograd.grad(loss, hidden)[0]).all()
    span = SpanHead(4)
    loss = span.loss(span(hidden), no_label, no_label, none)
    assert loss.item() == 0 and torch.isfinite(torch.autograd.grad(loss, hidden)[0]).all()
