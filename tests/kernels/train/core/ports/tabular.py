# ruff: noqa  (written as the torch tutorials write it)
"""A classic torch tutorial program, small; test_torch_ports.py runs it with torch and, with
"torch" replaced by "skiff" in its text, with skiff."""

import copy
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def make_model(d, p=0.1):
    return nn.Sequential(nn.Linear(d, 32), nn.ReLU(), nn.Dropout(p), nn.Linear(32, 1))


def main(X, y, Xv, yv, init=None, epochs=30, patience=3, shuffle=True, p=0.1):
    torch.manual_seed(0)
    model = make_model(X.shape[1], p).double()
    if init is not None:
        model.load_state_dict(init)
    train_ds = TensorDataset(torch.tensor(X), torch.tensor(y).unsqueeze(1))
    loader = DataLoader(train_ds, batch_size=16, shuffle=shuffle)
    val_loader = DataLoader(TensorDataset(torch.tensor(Xv), torch.tensor(yv).view(-1, 1)),
                            batch_size=32)
    loss_fn = nn.MSELoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    best, best_state, bad = float("inf"), None, 0
    train_losses, val_losses = [], []
    for epoch in range(epochs):
        model.train()
        for xb, yb in loader:
            pred = model(xb)
            loss = loss_fn(pred, yb)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            train_losses.append(loss.item())
        model.eval()
        with torch.no_grad():
            val = sum(loss_fn(model(xb), yb).item() * len(xb) for xb, yb in val_loader)
            val /= len(val_loader.dataset)
        val_losses.append(val)
        if val < best - 1e-6:
            best, bad = val, 0
            best_state = copy.deepcopy(model.state_dict())
        else:
            bad += 1
            if bad >= patience:
                break
    model.load_state_dict(best_state)
    return model, train_losses, val_losses, best
