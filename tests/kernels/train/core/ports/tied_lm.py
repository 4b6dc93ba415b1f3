"""A small word-level language model with tied input and output embeddings (the decoder's
weight *is* the encoder's), a gradient hook that scales the embedding gradient, AdamW with a
CyclicLR schedule, and perplexity from the mean loss."""

import math

import torch
import torch.nn.functional as F
from torch import nn


class TiedLM(nn.Module):
    def __init__(self, vocab, dim=12):
        super().__init__()
        self.encoder = nn.Embedding(vocab, dim)
        self.rnn = nn.GRU(dim, dim, batch_first=True)
        self.decoder = nn.Linear(dim, vocab)
        self.decoder.weight = self.encoder.weight  # weight tying

    def forward(self, ids, h=None):
        out, h = self.rnn(self.encoder(ids), h)
        return self.decoder(out), h


def main(tokens, vocab, init=None, seq=8, batch=4, epochs=2):
    data = torch.tensor(tokens).long()
    model = TiedLM(vocab).double()
    if init is not None:
        model.load_state_dict(init)
    assert model.decoder.weight is model.encoder.weight
    n_params = len(list(model.parameters()))
    model.encoder.weight.register_hook(lambda g: g * 0.5)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    scheduler = torch.optim.lr_scheduler.CyclicLR(optimizer, base_lr=1e-3, max_lr=1e-2,
                                                  step_size_up=3, mode="triangular2")
    n = (len(data) - 1) // (seq * batch) * (seq * batch)
    xs = data[:n].view(batch, -1)
    ys = data[1:n + 1].view(batch, -1)
    losses = []
    for _epoch in range(epochs):
        h = None
        for i in range(0, xs.size(1), seq):
            x, y = xs[:, i:i + seq], ys[:, i:i + seq]
            logits, h = model(x, h)
            h = h.detach()
            loss = F.cross_entropy(logits.reshape(-1, vocab), y.reshape(-1))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            scheduler.step()
            losses.append(loss.item())
    ppl = math.exp(sum(losses[-3:]) / 3)
    return model, losses, ppl, n_params
