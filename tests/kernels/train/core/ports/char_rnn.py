# ruff: noqa  (written as the torch tutorials write it)
"""A classic torch tutorial program, small; test_torch_ports.py runs it with torch and, with
"torch" replaced by "skiff" in its text, with skiff."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class CharLM(nn.Module):
    def __init__(self, vocab, emb=8, hidden=16, layers=2, cell="lstm"):
        super().__init__()
        self.embed = nn.Embedding(vocab, emb)
        rnn = nn.LSTM if cell == "lstm" else nn.GRU
        self.rnn = rnn(emb, hidden, num_layers=layers, batch_first=True)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, x, hidden=None):
        out, hidden = self.rnn(self.embed(x), hidden)
        return self.head(out), hidden


def detach(h):
    if isinstance(h, tuple):
        return tuple(v.detach() for v in h)
    return h.detach()


def main(text_ids, vocab, init=None, cell="lstm", steps=20, bptt=6, batch=4):
    torch.manual_seed(0)
    model = CharLM(vocab, cell=cell).double()
    if init is not None:
        model.load_state_dict(init)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    data = torch.tensor(text_ids, dtype=torch.long)
    n = data.size(0) // batch
    data = data[:n * batch].view(batch, n)
    hidden = None
    losses = []
    model.train()
    for step in range(steps):
        i = (step * bptt) % (n - bptt - 1)
        x, y = data[:, i:i + bptt], data[:, i + 1:i + 1 + bptt]
        if hidden is not None:
            hidden = detach(hidden)
        optimizer.zero_grad(set_to_none=True)
        logits, hidden = model(x, hidden)
        loss = F.cross_entropy(logits.reshape(-1, vocab), y.reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        optimizer.step()
        losses.append(loss.item())
    # sampling
    model.eval()
    out = [0]
    with torch.no_grad():
        h = None
        x = torch.tensor([[0]])
        for _ in range(20):
            logits, h = model(x, h)
            probs = F.softmax(logits[0, -1] / 0.8, dim=-1)
            nxt = torch.multinomial(probs, num_samples=1).item()
            out.append(nxt)
            x = torch.tensor([[nxt]])
    return model, losses, out
