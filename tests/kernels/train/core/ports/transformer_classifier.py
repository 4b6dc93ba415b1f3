# ruff: noqa  (written as the torch tutorials write it)
"""A classic torch tutorial program, small; test_torch_ports.py runs it with torch and, with
"torch" replaced by "skiff" in its text, with skiff."""

import math
import torch
from torch import nn
import torch.nn.functional as F


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=64):
        super().__init__()
        position = torch.arange(max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, d_model)
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe)

    def forward(self, x):
        return x + self.pe[: x.size(1)]


class Classifier(nn.Module):
    def __init__(self, vocab, d_model=16, nhead=2, layers=2, classes=3, pad=0):
        super().__init__()
        self.pad = pad
        self.embed = nn.Embedding(vocab, d_model, padding_idx=pad)
        self.pos = PositionalEncoding(d_model)
        layer = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward=32, dropout=0.1,
                                           batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=layers)
        self.fc = nn.Linear(d_model, classes)

    def forward(self, x):
        mask = x == self.pad
        h = self.pos(self.embed(x) * math.sqrt(self.embed.embedding_dim))
        h = self.encoder(h, src_key_padding_mask=mask)
        keep = (~mask).unsqueeze(-1).type_as(h)
        pooled = (h * keep).sum(dim=1) / keep.sum(dim=1).clamp(min=1)
        return self.fc(pooled)


def main(X, y, init=None, steps=20, dropout=True, warmup=5):
    torch.manual_seed(0)
    model = Classifier(vocab=20).double()
    if init is not None:
        model.load_state_dict(init)
    if not dropout:
        model.eval()
    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: min(1.0, (step + 1) / warmup) * max(0.0, 1 - step / steps))
    xs, ys = torch.tensor(X), torch.tensor(y)
    losses, lrs = [], []
    for step in range(steps):
        i = (step * 8) % len(xs)
        xb, yb = xs[i:i + 8], ys[i:i + 8]
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
        lrs.append(scheduler.get_last_lr()[0])
    model.eval()
    with torch.no_grad():
        acc = (model(xs).argmax(dim=-1) == ys).float().mean().item()
    return model, losses, lrs, acc
