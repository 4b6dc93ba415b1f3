"""Round 37 (h4): torch users' programs (a spatial transformer started at the identity, as
every STN tutorial does), against torch 2.13 in float64."""

import numpy as np
import pytest

import skiff

torch = pytest.importorskip("torch")

R = np.random.default_rng(37)
IMG = R.random((2, 1, 12, 12))


@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("shape", [(2, 1, 12, 12), (2, 1, 5, 9), (2, 1, 3, 4, 5)])
def test_affine_grid_rounds_as_torchs(shape, align):
    """torch's bmm rounds ``x t0 + y t1 + t2`` as plain multiply-adds on some CPUs and fused on
    others (an Intel AVX-512 Xeon): the grid is torch's within an ulp of its values, not bit-equal
    everywhere (bit equality held on the AMD EPYC of round 37 only)."""
    k = len(shape) - 2
    theta = R.normal(size=(2, k, k + 1))
    t = torch.nn.functional.affine_grid(torch.tensor(theta), shape, align_corners=align)
    s = skiff.nn.functional.affine_grid(skiff.tensor(theta), shape, align_corners=align)
    t = t.numpy()
    ulp = np.spacing(np.abs(t).max())
    np.testing.assert_allclose(s.numpy(), t, rtol=0, atol=2 * ulp)


@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_grid_gradient_at_pixel_centres_is_torchs(align, mode):
    """An identity grid lands on pixel centres, where the gradient of the grid jumps between
    the two neighbours' differences: torch's CPU kernel unnormalizes with one fused
    multiply-add, so its floor is the left pixel where ``((c + 1) W - 1) / 2`` gives the
    right one."""
    theta = np.array([[[1.0, 0, 0], [0, 1, 0]]] * 2)
    w = IMG[::-1].copy()
    out = []
    for lib in (torch, skiff):
        grid = lib.nn.functional.affine_grid(lib.tensor(theta), (2, 1, 12, 12),
                                             align_corners=align)
        g = lib.tensor(grid.detach().numpy(), requires_grad=True)
        y = lib.nn.functional.grid_sample(lib.tensor(IMG), g, mode=mode, align_corners=align)
        (y * lib.tensor(w)).sum().backward()
        out.append((y.detach().numpy(), g.grad.numpy()))
    np.testing.assert_allclose(out[1][0], out[0][0], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(out[1][1], out[0][1], rtol=1e-12, atol=1e-12)


def test_spatial_transformer_from_the_identity_trains_as_torchs():
    def build(lib):
        nn = lib.nn
        lib.manual_seed(0)
        loc = nn.Sequential(nn.Conv2d(1, 4, 5), nn.MaxPool2d(2, stride=2), nn.ReLU(True))
        fc = nn.Sequential(nn.Linear(64, 8), nn.ReLU(True), nn.Linear(8, 6))
        head = nn.Linear(144, 3)
        return nn.ModuleList([loc, fc, head])

    tm = build(torch).double()
    tm[1][2].weight.data.zero_()
    tm[1][2].bias.data.copy_(torch.tensor([1, 0, 0, 0, 1, 0], dtype=torch.float64))
    sm = build(skiff).double()
    sm.load_state_dict({k: skiff.tensor(v.numpy().copy()) for k, v in tm.state_dict().items()})
    losses = []
    for lib, m in ((torch, tm), (skiff, sm)):
        F = lib.nn.functional
        opt = lib.optim.SGD(m.parameters(), lr=0.05, momentum=0.9)
        run = []
        for _ in range(3):
            x = lib.tensor(IMG)
            theta = m[1](m[0](x).view(-1, 64)).view(-1, 2, 3)
            grid = F.affine_grid(theta, x.size(), align_corners=False)
            y = m[2](F.grid_sample(x, grid, align_corners=False).flatten(1))
            loss = F.cross_entropy(y, lib.tensor([0, 2])) + theta.pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            run.append(loss.item())
        losses.append((run, [p.detach().numpy().copy() for p in m.parameters()]))
    np.testing.assert_allclose(losses[1][0], losses[0][0], rtol=1e-12)
    for a, b in zip(losses[1][1], losses[0][1]):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-13)
