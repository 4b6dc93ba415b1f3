"""The training core's newer pieces on :mod:`.strictcupy` device arrays: sdpa, layer norm and
GELU, gather/scatter and index-add, in-place ops, ``.grad``/``.data`` arithmetic, raw device
arrays meeting tensors through numpy's operators, losses, recurrent/conv layers, and the
double-backward programs (PINN, WGAN-GP, HVP/Hessian/Jacobian). Each program runs in torch
(the oracle), in skiff on the CPU and in skiff on the strict fake ``cuda:0``: see
:mod:`.test_strict_device_training` for the comparison."""

from __future__ import annotations

import math
import types

import numpy as np
import pytest
import torch

import skiff
from skiff.kernels.backend import get_array_module
from skiff.kernels.train.core.nn import functional as F

from . import strictcupy
from .test_strict_device_training import SKIFF, TORCH, host, run_three, twin

for ns, mod in ((SKIFF, skiff), (TORCH, torch)):
    ns.mod = mod


def arr(lib, dev, a, grad=False):
    t = lib.tensor(np.asarray(a, dtype=np.float64), dtype=lib.f64).to(dev)
    return t.requires_grad_() if grad else t


def idx(lib, dev, a):
    return lib.tensor(np.asarray(a)).to(dev)


def test_sdpa_masks_and_causal(monkeypatch):
    def program(lib, dev):
        rng = np.random.default_rng(1)
        q, k, v = (arr(lib, dev, rng.standard_normal((2, 2, 4, 3)), True) for _ in range(3))
        mask = lib.tensor(rng.random((4, 4)) > 0.3).to(dev)
        o = (lib.F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
             + lib.F.scaled_dot_product_attention(q, k, v, is_causal=True))
        (o * o).sum().backward()
        return [o, q.grad, k.grad, v.grad]

    run_three(program, monkeypatch)


def test_layer_norm_and_gelu(monkeypatch):
    def program(lib, dev):
        rng = np.random.default_rng(2)
        x = arr(lib, dev, rng.standard_normal((3, 4, 5)), True)
        w = arr(lib, dev, rng.standard_normal((4, 5)), True)
        y = lib.F.layer_norm(x, (4, 5), w, None, 1e-5)
        y2 = lib.F.gelu(y, approximate="tanh") + lib.F.gelu(y)
        (y2 ** 2).sum().backward()
        return [y2, x.grad, w.grad]

    run_three(program, monkeypatch)


@pytest.mark.filterwarnings("ignore:The reduce argument of torch.scatter")
def test_gather_scatter_and_index_add(monkeypatch):
    def program(lib, dev):
        rng = np.random.default_rng(3)
        x = arr(lib, dev, rng.standard_normal((4, 5)), True)
        i = idx(lib, dev, rng.integers(0, 4, (3, 5)))
        g = x.gather(0, i)
        z = lib.mod.zeros(4, 5, dtype=lib.f64).to(dev).scatter(0, i, g.detach(), reduce="add")
        z2 = lib.mod.zeros(4, 5, dtype=lib.f64).to(dev).scatter(0, i[:1], g[:1].detach())
        acc = lib.mod.zeros(6, dtype=lib.f64).to(dev)
        acc[idx(lib, dev, [0, 2, 2])] += x[:3, 0]  # repeated indices: one of them lands
        (g.sum() * z.sum() + z2.sum() + (acc ** 2).sum() + x[i[0]].sum()).backward()
        return [z, z2, acc, x.grad]

    run_three(program, monkeypatch)


def test_in_place_ops_and_grad_data_arithmetic(monkeypatch):
    def program(lib, dev):
        x = arr(lib, dev, np.arange(6.0).reshape(2, 3), True)
        y = x * 2
        y.add_(1)
        y.mul_(3)
        y[0, 1] = 7.0
        y.clamp_(max=20.0)
        y.masked_fill_(y > 15, 0.0)
        y.sum().backward()
        with lib.mod.no_grad():
            x.sub_(0.1 * x.grad)
        x.data.mul_(0.5)
        g = x.grad * 2 + 1
        x.grad.zero_()
        return [y, x, g, x.grad]

    run_three(program, monkeypatch)


def test_device_arrays_meet_tensors_through_numpy_operators(monkeypatch):
    """``raw_array OP tensor`` is the tensor's op (cupy's operators defer to it as numpy's do);
    torch's side is the same program with a tensor for the raw array."""
    def program(lib, dev):
        x = arr(lib, dev, np.linspace(0.1, 1, 6).reshape(2, 3), True)
        if lib is TORCH:
            a, mul = torch.ones((2, 3), dtype=torch.float64), torch.mul
        else:
            a, mul = get_array_module(x._data).asarray(np.ones((2, 3))), np.multiply
        y = a * x + a + x * a + (a - x) + a / (x + 1) + mul(a, x)
        y.sum().backward()
        sin, exp = (torch.sin, torch.exp) if lib is TORCH else (np.sin, np.exp)
        z = sin(x.detach()) + exp(x.detach()) * a
        return [y, x.grad, z]

    run_three(program, monkeypatch)


def test_losses(monkeypatch):
    def program(lib, dev):
        rng = np.random.default_rng(7)
        x = arr(lib, dev, rng.standard_normal((6, 4)), True)
        t = idx(lib, dev, [0, 1, 3, 2, -100, 1])
        w = arr(lib, dev, [1.0, 2.0, 0.5, 1.5])
        F_ = lib.F
        loss = (F_.cross_entropy(x, t, weight=w, ignore_index=-100, label_smoothing=0.1)
                + F_.nll_loss(F_.log_softmax(x, dim=1), t, ignore_index=-100)
                + F_.binary_cross_entropy_with_logits(x, (x.detach() > 0).double(),
                                                      pos_weight=w)
                + F_.mse_loss(x, x.detach() * 0.5) + F_.smooth_l1_loss(x, x.detach() * 0.1)
                + F_.kl_div(F_.log_softmax(x, 1), F_.softmax(x.detach() * 2, 1),
                            reduction="batchmean")
                + F_.one_hot(t.clamp(min=0), 4).double().mul(x).sum())
        loss.backward()
        return [loss.item(), x.grad]

    run_three(program, monkeypatch)


def _layers(lib):
    m = lib.nn
    return types.SimpleNamespace(
        lstm=m.LSTM(3, 4, batch_first=True), gru=m.GRU(4, 2, batch_first=True),
        conv=m.Conv1d(3, 2, 3, padding=1), convt=m.ConvTranspose2d(1, 2, 3, stride=2),
        gn=m.GroupNorm(1, 2), bn=m.BatchNorm1d(2), emb=m.Embedding(5, 3, padding_idx=0))


def test_recurrent_conv_and_norm_layers(monkeypatch):
    def program(lib, dev):
        skiff.manual_seed(0)
        ours = _layers(SKIFF)
        if lib is SKIFF:
            L = types.SimpleNamespace(**{k: v.double().to(dev) for k, v in vars(ours).items()})
        else:
            L = types.SimpleNamespace(**{k: twin(v.double(), lambda k=k: getattr(
                _layers(TORCH), k)) for k, v in vars(ours).items()})
        rng = np.random.default_rng(8)
        x = arr(lib, dev, rng.standard_normal((2, 5, 3)))
        y, _ = L.lstm(x)
        z, _ = L.gru(y)
        c = L.conv(x.transpose(1, 2))
        im = L.convt(arr(lib, dev, rng.standard_normal((1, 1, 4, 4))))
        e = L.emb(idx(lib, dev, [[0, 1, 4]]))
        total = z.sum() + L.bn(c).pow(2).sum() + L.gn(im).pow(2).sum() + e.sum()
        total.backward()
        return [total.item(), L.bn.running_mean, L.emb.weight.grad, L.lstm.weight_hh_l0.grad,
                L.convt.weight.grad]

    run_three(program, monkeypatch)


def test_sorting_masks_and_reductions(monkeypatch):
    def program(lib, dev):
        x = arr(lib, dev, np.random.default_rng(9).standard_normal((4, 5)), True)
        v, i = x.topk(2, dim=1)
        s, si = x.sort(dim=0)
        mask = x > 0
        host_rows = x[np.array([0, 2])]  # a host index on a device tensor
        total = (v.sum() + s[0].sum() + x.cumsum(1).sum() + x[mask].sum()
                 + lib.mod.where(mask, x, 0.5).sum() + lib.mod.einsum("ij,kj->ik", x, x).sum()
                 + host_rows.sum() + x.std() + x.var(dim=0).sum() + x.logsumexp(1).sum()
                 + x.norm(dim=1).sum())
        total.backward()
        return [total.item(), i, si, x.argmax(dim=1), x.grad]

    run_three(program, monkeypatch)


# ---- double backward ----------------------------------------------------------------------------
def _tanh_mlp(lib):
    m = lib.nn
    return m.Sequential(m.Linear(1, 8), m.Tanh(), m.Linear(8, 1))


def test_pinn_steps(monkeypatch):
    def program(lib, dev):
        skiff.manual_seed(0)
        ours = _tanh_mlp(SKIFF).double()
        net = ours.to(dev) if lib is SKIFF else twin(ours, lambda: _tanh_mlp(TORCH))
        x = arr(lib, dev, np.linspace(0, 1, 9)[:, None], True)
        f = math.pi ** 2 * lib.mod.sin(x.detach() * math.pi)
        opt = lib.optim.Adam(net.parameters(), lr=1e-2)
        out = []
        for _ in range(2):
            u = net(x)
            (ux,) = lib.mod.autograd.grad(u, x, lib.mod.ones_like(u), create_graph=True)
            (uxx,) = lib.mod.autograd.grad(ux, x, lib.mod.ones_like(ux), create_graph=True)
            loss = ((uxx + f) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            out.append(loss.item())
        return out + list(net.parameters())

    run_three(program, monkeypatch)


def _critic(lib):
    m = lib.nn
    return m.Sequential(m.Linear(3, 8), m.LeakyReLU(0.2), m.Linear(8, 1))


def test_wgan_gradient_penalty(monkeypatch):
    def program(lib, dev):
        skiff.manual_seed(0)
        ours = _critic(SKIFF).double()
        D = ours.to(dev) if lib is SKIFF else twin(ours, lambda: _critic(TORCH))
        rng = np.random.default_rng(5)
        real, fake = (arr(lib, dev, rng.standard_normal((4, 3))) for _ in range(2))
        a = arr(lib, dev, rng.random((4, 1)))
        xh = (a * real + (1 - a) * fake).requires_grad_()
        (g,) = lib.mod.autograd.grad(D(xh).sum(), xh, create_graph=True)
        gp = ((g.norm(2, dim=1) - 1) ** 2).mean()
        loss = D(fake).mean() - D(real).mean() + 10 * gp
        loss.backward()
        return [loss.item()] + [p.grad for p in D.parameters()]

    run_three(program, monkeypatch)


def test_hvp_hessian_jacobian_and_second_derivatives(monkeypatch):
    def program(lib, dev):
        rng = np.random.default_rng(6)
        x, v = arr(lib, dev, rng.standard_normal(4)), arr(lib, dev, rng.standard_normal(4))
        af = lib.mod.autograd.functional

        def f(t):
            return (t.sin() * t.exp()).sum() + (t ** 3).sum()

        _, h = af.hvp(f, x, v)
        H = af.hessian(f, x)
        J = af.jacobian(lambda t: t.tanh() * 2, x)
        y = arr(lib, dev, rng.standard_normal((3, 4)), True)
        F_ = lib.F
        s = (F_.softplus(y) + F_.log_softmax(y, 1) + F_.silu(y) + F_.gelu(y) + F_.elu(y)
             + y.sigmoid() + F_.softmax(y, 0) + y.abs() + y.clamp(-0.5, 0.5)
             + F_.layer_norm(y, (4,))).pow(2).sum()
        (g,) = lib.mod.autograd.grad(s, y, create_graph=True)
        (g * g).sum().backward()
        return [h, H, J, g, y.grad]

    run_three(program, monkeypatch)


# ---- the fake itself refuses what cupy refuses ---------------------------------------------------
def test_the_strict_fake_refuses_implicit_host_moves(monkeypatch):
    cp = strictcupy.install(monkeypatch)
    a = cp.asarray(np.arange(3.0))
    for move in (lambda: np.asarray(a), lambda: np.array(a), lambda: a + np.ones(3),
                 lambda: cp.add(a, np.ones(3)), lambda: np.add.at(np.zeros(3), [0], a)):
        with pytest.raises(TypeError):
            move()
    assert not isinstance(a, np.ndarray) and get_array_module(a) is cp
    assert float(a.sum()) == 3.0 and a.get().tolist() == [0.0, 1.0, 2.0]
    t = skiff.tensor(np.arange(3.0)).to("cuda:0")
    assert isinstance(t._data, cp.ndarray) and str(t.device) == "cuda:0"
    with pytest.raises(TypeError, match="Implicit conversion"):
        F.relu(t)._data.__array__()
    host_t = t.cpu()
    assert type(host_t._data) is np.ndarray and host(host_t).tolist() == [0.0, 1.0, 2.0]
