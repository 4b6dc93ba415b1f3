"""A GAN training loop as the tutorials write it: two models and two Adam optimizers
(betas=(0.5, 0.999)), the discriminator stepped on real and detached fake samples, frozen with
requires_grad_(False) while the generator steps, BCEWithLogitsLoss with label tensors made by
torch.full, and the noise handed in (skiff's random numbers are not torch's)."""

import torch
from torch import nn


class G(nn.Module):
    def __init__(self, nz=4, out=6):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(nz, 16), nn.LeakyReLU(0.2), nn.Linear(16, out))

    def forward(self, z):
        return self.net(z)


class D(nn.Module):
    def __init__(self, n=6):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(n, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))

    def forward(self, x):
        return self.net(x).view(-1)


def set_requires_grad(model, flag):
    for p in model.parameters():
        p.requires_grad_(flag)


def main(real, noise, init_g=None, init_d=None, batch=8):
    real = torch.tensor(real)
    noise = torch.tensor(noise)
    netG, netD = G().double(), D().double()
    if init_g is not None:
        netG.load_state_dict(init_g)
        netD.load_state_dict(init_d)
    criterion = nn.BCEWithLogitsLoss()
    optD = torch.optim.Adam(netD.parameters(), lr=2e-3, betas=(0.5, 0.999))
    optG = torch.optim.Adam(netG.parameters(), lr=2e-3, betas=(0.5, 0.999))
    d_losses, g_losses, d_x, d_gz = [], [], [], []
    for i in range(0, len(real), batch):
        x = real[i:i + batch]
        z = noise[i:i + batch]
        b = x.size(0)
        # (1) discriminator: maximise log D(x) + log(1 - D(G(z)))
        set_requires_grad(netD, True)
        netD.zero_grad()
        label = torch.full((b,), 1.0, dtype=torch.float64)
        out = netD(x)
        err_real = criterion(out, label)
        err_real.backward()
        d_x.append(torch.sigmoid(out).mean().item())
        fake = netG(z)
        label.fill_(0.0)
        out = netD(fake.detach())
        err_fake = criterion(out, label)
        err_fake.backward()
        optD.step()
        d_losses.append((err_real + err_fake).item())
        # (2) generator: maximise log D(G(z)), the discriminator frozen
        set_requires_grad(netD, False)
        netG.zero_grad()
        label.fill_(1.0)
        out = netD(fake)
        errG = criterion(out, label)
        errG.backward()
        d_gz.append(torch.sigmoid(out).mean().item())
        optG.step()
        g_losses.append(errG.item())
    grads_left = sum(p.grad is not None and bool(p.grad.abs().sum() > 0)
                     for p in netD.parameters())
    return d_losses, g_losses, d_x, d_gz, grads_left
