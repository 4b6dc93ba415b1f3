"""A regression MLP trained by hand, no optimizer: the update is written on .grad/.data as
torch tutorials do (``p -= lr * p.grad`` under no_grad, ``p.grad.zero_()``), with a weight
norm kept by ``p.data``, gradient norms logged, and momentum kept in plain dicts of tensors."""

import torch
import torch.nn.functional as F
from torch import nn


class MLP(nn.Module):
    def __init__(self, n_in, hidden=16):
        super().__init__()
        self.fc1 = nn.Linear(n_in, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, 1)

    def forward(self, x):
        x = F.relu(self.fc1(x))
        x = torch.tanh(self.fc2(x))
        return self.out(x).squeeze(-1)


def main(X, y, init=None, epochs=4, batch=16, lr=0.05, mu=0.9):
    X = torch.tensor(X)
    y = torch.tensor(y)
    model = MLP(X.shape[1]).double()
    if init is not None:
        model.load_state_dict(init)
    velocity = {name: torch.zeros_like(p) for name, p in model.named_parameters()}
    losses, norms = [], []
    for _epoch in range(epochs):
        for i in range(0, len(X), batch):
            xb, yb = X[i:i + batch], y[i:i + batch]
            loss = F.mse_loss(model(xb), yb)
            for p in model.parameters():
                p.grad = None
            loss.backward()
            total = torch.sqrt(sum((p.grad ** 2).sum() for p in model.parameters()))
            norms.append(total.item())
            with torch.no_grad():
                for name, p in model.named_parameters():
                    if p.grad is None:
                        continue
                    v = velocity[name]
                    v.mul_(mu).add_(p.grad)
                    p -= lr * v
            losses.append(loss.item())
        # a max-norm constraint on the first layer's rows, through .data
        w = model.fc1.weight.data
        row = w.norm(dim=1, keepdim=True).clamp(min=1.0)
        model.fc1.weight.data = w / row
        for p in model.parameters():
            if p.grad is not None:
                p.grad.zero_()
    return model, losses, norms
