"""Quantisation-aware training with a straight-through estimator: a custom
torch.autograd.Function rounds weights to a grid in forward and passes the gradient through
(clipped to the grid's range) in backward; a quantised Linear uses it, and the loop clips
gradient values and decays the lr by hand."""

import torch
import torch.nn.functional as F
from torch import nn


class RoundSTE(torch.autograd.Function):
    @staticmethod
    def forward(ctx, w, step, limit):
        ctx.save_for_backward(w)
        ctx.limit = limit
        return torch.clamp(torch.round(w / step) * step, -limit, limit)

    @staticmethod
    def backward(ctx, grad_out):
        (w,) = ctx.saved_tensors
        inside = (w.abs() <= ctx.limit).to(grad_out.dtype)
        return grad_out * inside, None, None


class QLinear(nn.Linear):
    def forward(self, x):
        wq = RoundSTE.apply(self.weight, 0.05, 0.5)
        return F.linear(x, wq, self.bias)


def main(X, y, init=None, epochs=3, batch=16, lr=0.05):
    X = torch.tensor(X)
    y = torch.tensor(y)
    model = nn.Sequential(QLinear(X.shape[1], 12), nn.ReLU(), QLinear(12, 3)).double()
    if init is not None:
        model.load_state_dict(init)
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    losses = []
    for _epoch in range(epochs):
        for i in range(0, len(X), batch):
            opt.zero_grad()
            loss = F.cross_entropy(model(X[i:i + batch]), y[i:i + batch])
            loss.backward()
            torch.nn.utils.clip_grad_value_(model.parameters(), 0.5)
            opt.step()
            losses.append(loss.item())
        for g in opt.param_groups:
            g["lr"] *= 0.7
    return model, losses
