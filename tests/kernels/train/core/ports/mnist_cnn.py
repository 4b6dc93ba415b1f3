# ruff: noqa  (written as the torch tutorials write it)
"""A classic torch tutorial program, small; test_torch_ports.py runs it with torch and, with
"torch" replaced by "skiff" in its text, with skiff."""

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.optim.lr_scheduler import StepLR


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, 1)
        self.conv2 = nn.Conv2d(4, 8, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(8 * 5 * 5, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        x = self.conv1(x)
        x = F.relu(x)
        x = self.conv2(x)
        x = F.relu(x)
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.dropout2(x)
        x = self.fc2(x)
        output = F.log_softmax(x, dim=1)
        return output


def train(model, device, train_loader, optimizer, epoch, losses):
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())


def test(model, device, test_loader):
    model.eval()
    test_loss = 0
    correct = 0
    with torch.no_grad():
        for data, target in test_loader:
            data, target = data.to(device), target.to(device)
            output = model(data)
            test_loss += F.nll_loss(output, target, reduction='sum').item()
            pred = output.argmax(dim=1, keepdim=True)
            correct += pred.eq(target.view_as(pred)).sum().item()
    n = sum(len(t) for _, t in test_loader)
    return test_loss / n, correct / n


def main(X, y, Xt, yt, init=None, dropout=True, epochs=2, path="mnist_cnn.pt"):
    torch.manual_seed(1)
    device = torch.device("cpu")
    train_loader = [(torch.tensor(X[i:i + 16]), torch.tensor(y[i:i + 16]))
                    for i in range(0, len(X), 16)]
    test_loader = [(torch.tensor(Xt[i:i + 32]), torch.tensor(yt[i:i + 32]))
                   for i in range(0, len(Xt), 32)]
    model = Net().to(device).double()
    if init is not None:
        model.load_state_dict(init)
    if not dropout:
        model.dropout1.p = model.dropout2.p = 0.0
    optimizer = optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    scheduler = StepLR(optimizer, step_size=1, gamma=0.7)
    losses, tests = [], []
    for epoch in range(1, epochs + 1):
        train(model, device, train_loader, optimizer, epoch, losses)
        tests.append(test(model, device, test_loader))
        scheduler.step()
    torch.save(model.state_dict(), path)
    model2 = Net().double()
    model2.load_state_dict(torch.load(path))
    model2.eval()
    with torch.no_grad():
        same = torch.equal(model2(torch.tensor(Xt[:4])), model(torch.tensor(Xt[:4])))
    return model, losses, tests, same
