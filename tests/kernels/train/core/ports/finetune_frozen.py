"""Fine-tuning: a "pretrained" backbone frozen with requires_grad_(False) except its last
block, parameter groups with their own learning rates (and Adagrad), features captured with
a forward hook, the trainable parameter count, then the whole model unfrozen with a lower lr
for the backbone, and an eval pass under no_grad."""

import torch
import torch.nn.functional as F
from torch import nn


class Backbone(nn.Module):
    def __init__(self, n_in):
        super().__init__()
        self.block1 = nn.Sequential(nn.Linear(n_in, 32), nn.ReLU())
        self.block2 = nn.Sequential(nn.Linear(32, 16), nn.Tanh())

    def forward(self, x):
        return self.block2(self.block1(x))


class Classifier(nn.Module):
    def __init__(self, n_in, n_classes):
        super().__init__()
        self.backbone = Backbone(n_in)
        self.head = nn.Linear(16, n_classes)

    def forward(self, x):
        return self.head(self.backbone(x))


def main(X, y, n_classes, init=None, epochs=3, batch=16):
    X = torch.tensor(X)
    y = torch.tensor(y)
    model = Classifier(X.shape[1], n_classes).double()
    if init is not None:
        model.load_state_dict(init)
    model.backbone.requires_grad_(False)
    for p in model.backbone.block2.parameters():
        p.requires_grad = True
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    optimizer = torch.optim.Adagrad([
        {"params": model.head.parameters(), "lr": 0.1},
        {"params": [p for p in model.backbone.parameters() if p.requires_grad], "lr": 0.02},
    ], lr_decay=0.01)
    feats = []
    handle = model.backbone.register_forward_hook(
        lambda module, inputs, output: feats.append(output.detach().abs().mean().item()))
    losses = []
    for epoch in range(epochs):
        if epoch == epochs - 1:  # unfreeze everything; the backbone learns slowly
            model.backbone.requires_grad_(True)
            optimizer = torch.optim.SGD([
                {"params": model.backbone.parameters(), "lr": 0.001},
                {"params": model.head.parameters()},
            ], lr=0.05, momentum=0.9, nesterov=True)
        model.train()
        for i in range(0, len(X), batch):
            optimizer.zero_grad()
            loss = F.cross_entropy(model(X[i:i + batch]), y[i:i + batch])
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    handle.remove()
    model.eval()
    with torch.no_grad():
        logits = model(X)
        acc = (logits.argmax(dim=1) == y).float().mean().item()
    frozen_grad = model.backbone.block1[0].weight.grad
    return model, losses, feats, trainable, acc, frozen_grad is None
