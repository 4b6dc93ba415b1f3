"""Gradient accumulation over micro-batches (the loss divided by their number), clipping
of the accumulated gradient, RMSprop with a OneCycleLR schedule stepped per optimizer step,
and set_to_none zeroing; logs the lr and the gradient norm as torch scripts do."""

import torch
from torch import nn


def make_model(n_in, n_out):
    return nn.Sequential(nn.Linear(n_in, 24), nn.GELU(), nn.LayerNorm(24), nn.Linear(24, n_out))


def main(X, y, n_out, init=None, accum=3, micro=8, epochs=3, max_norm=0.5):
    X = torch.tensor(X)
    y = torch.tensor(y)
    model = make_model(X.shape[1], n_out).double()
    if init is not None:
        model.load_state_dict(init)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.RMSprop(model.parameters(), lr=1e-3, momentum=0.9, centered=True,
                                    weight_decay=1e-4)
    steps_per_epoch = len(X) // (micro * accum)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(
        optimizer, max_lr=0.01, epochs=epochs, steps_per_epoch=steps_per_epoch)
    losses, lrs, norms = [], [], []
    optimizer.zero_grad(set_to_none=True)
    for _epoch in range(epochs):
        model.train()
        for i in range(steps_per_epoch * accum):
            xb = X[i * micro:(i + 1) * micro]
            yb = y[i * micro:(i + 1) * micro]
            loss = criterion(model(xb), yb) / accum
            loss.backward()
            if (i + 1) % accum == 0:
                norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
                norms.append(float(norm))
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad(set_to_none=True)
                lrs.append(scheduler.get_last_lr()[0])
            losses.append(loss.item() * accum)
    return model, losses, lrs, norms
