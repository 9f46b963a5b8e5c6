"""The heads on someone else's encoder: forward, loss and backward with no bio_mrc model around them."""

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
