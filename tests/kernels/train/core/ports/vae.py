# ruff: noqa  (written as the torch tutorials write it)
"""A classic torch tutorial program, small; test_torch_ports.py runs it with torch and, with
"torch" replaced by "skiff" in its text, with skiff."""

import torch
from torch import nn, optim
from torch.nn import functional as F


class VAE(nn.Module):
    def __init__(self, d=64, h=32, z=4):
        super(VAE, self).__init__()
        self.d = d
        self.fc1 = nn.Linear(d, h)
        self.fc21 = nn.Linear(h, z)
        self.fc22 = nn.Linear(h, z)
        self.fc3 = nn.Linear(z, h)
        self.fc4 = nn.Linear(h, d)

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu, logvar):
        std = torch.exp(0.5 * logvar)
        eps = torch.randn_like(std)
        return mu + eps * std

    def decode(self, z):
        h3 = F.relu(self.fc3(z))
        return torch.sigmoid(self.fc4(h3))

    def forward(self, x):
        mu, logvar = self.encode(x.view(-1, self.d))
        z = self.reparameterize(mu, logvar)
        return self.decode(z), mu, logvar


def loss_function(recon_x, x, mu, logvar, d):
    BCE = F.binary_cross_entropy(recon_x, x.view(-1, d), reduction='sum')
    KLD = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return BCE + KLD


def main(X, init=None, epochs=2, batch_size=16):
    torch.manual_seed(1)
    model = VAE().double()
    if init is not None:
        model.load_state_dict(init)
    optimizer = optim.Adam(model.parameters(), lr=1e-3)
    data = torch.from_numpy(X)
    losses = []
    for epoch in range(epochs):
        model.train()
        train_loss = 0
        for i in range(0, len(data), batch_size):
            x = data[i:i + batch_size]
            optimizer.zero_grad()
            recon_batch, mu, logvar = model(x)
            loss = loss_function(recon_batch, x, mu, logvar, model.d)
            loss.backward()
            train_loss += loss.item()
            optimizer.step()
            losses.append(loss.item() / len(x))
    with torch.no_grad():
        sample = torch.randn(8, 4, dtype=torch.float64)
        sample = model.decode(sample).cpu()
    return model, losses, tuple(sample.shape)
