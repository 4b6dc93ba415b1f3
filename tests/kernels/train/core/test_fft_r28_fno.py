"""Complex tensors (round 28) against torch 2.13 in float64: a Fourier Neural Operator written
for torch (rfft2, complex weights, einsum over the kept modes, irfft2 with s=) trains under
``import skiff as torch`` to torch's losses, weights copied, 20 Adam/AdamW steps; and the
complex ops' gradients (real, imag, abs, conj, view_as_real, complex, einsum, slicing)."""

import numpy as np
import pytest

import skiff
import skiff.nn as snn
import skiff.nn.functional as sF
from skiff import fft as sfft

torch = pytest.importorskip("torch")


def _fno(lib, nn, F, cd, width=5, modes=3):
    """Li et al.'s FNO-2d as written for torch (SpectralConv2d, 1x1 Conv2d, gelu)."""

    class SpectralConv2d(nn.Module):
        def __init__(self, cin, cout, m1, m2):
            super().__init__()
            self.cout, self.m1, self.m2 = cout, m1, m2
            scale = 1 / (cin * cout)
            self.weights1 = nn.Parameter(scale * lib.rand(cin, cout, m1, m2, dtype=cd))
            self.weights2 = nn.Parameter(scale * lib.rand(cin, cout, m1, m2, dtype=cd))

        def forward(self, x):
            b, m1, m2 = x.shape[0], self.m1, self.m2
            x_ft = lib.fft.rfft2(x)
            out_ft = lib.zeros(b, self.cout, x.size(-2), x.size(-1) // 2 + 1, dtype=cd)
            out_ft[:, :, :m1, :m2] = lib.einsum("bixy,ioxy->boxy", x_ft[:, :, :m1, :m2],
                                                self.weights1)
            out_ft[:, :, -m1:, :m2] = lib.einsum("bixy,ioxy->boxy", x_ft[:, :, -m1:, :m2],
                                                 self.weights2)
            return lib.fft.irfft2(out_ft, s=(x.size(-2), x.size(-1)))

    class FNO2d(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc0 = nn.Linear(3, width)
            self.conv0 = SpectralConv2d(width, width, modes, modes)
            self.conv1 = SpectralConv2d(width, width, modes, modes)
            self.w0 = nn.Conv2d(width, width, 1)
            self.w1 = nn.Conv2d(width, width, 1)
            self.fc1 = nn.Linear(width, 8)
            self.fc2 = nn.Linear(8, 1)

        def forward(self, x):
            x = self.fc0(x).permute(0, 3, 1, 2)
            x = F.gelu(self.conv0(x) + self.w0(x))
            x = self.conv1(x) + self.w1(x)
            return self.fc2(F.gelu(self.fc1(x.permute(0, 2, 3, 1))))

    return FNO2d()


def _data(b=3, n=10):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((b, n, n, 1))
    grid = np.stack(np.meshgrid(np.linspace(0, 1, n), np.linspace(0, 1, n), indexing="ij"), -1)
    return np.concatenate([a, np.broadcast_to(grid, (b, n, n, 2))], -1), np.sin(a) + 0.1 * a * a


def _train(lib, model, opt, steps=12):
    x, y = _data()
    o = getattr(lib.optim, opt)(model.parameters(), lr=1e-2)
    xt, yt = lib.tensor(x), lib.tensor(y)
    losses = []
    for _ in range(steps):
        o.zero_grad()
        loss = ((model(xt) - yt) ** 2).mean()
        loss.backward()
        o.step()
        losses.append(loss.item())
    return np.array(losses), {k: np.asarray(v.detach().numpy() if hasattr(v, "detach") else v)
                              for k, v in model.state_dict().items()}


@pytest.mark.parametrize("opt", ["Adam", "AdamW"])
def test_fno2d_trains_to_torchs_losses(opt):
    torch.manual_seed(0)
    tm = _fno(torch, torch.nn, torch.nn.functional, torch.cdouble).double()
    sm = _fno(skiff, snn, sF, sfft.cdouble).double()
    sm.load_state_dict({k: skiff.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    assert sm.conv0.weights1.dtype == np.complex128
    lt, wt = _train(torch, tm, opt)
    ls, ws = _train(skiff, sm, opt)
    assert lt[-1] < 0.7 * lt[0]  # it learns (torch's run)
    np.testing.assert_allclose(ls, lt, rtol=1e-9)
    for k in wt:
        np.testing.assert_allclose(np.asarray(ws[k]), wt[k], rtol=1e-8, atol=1e-10)


def _grads(fs, ft, *arrays):
    """Input gradients of the real loss f(*inputs) in skiff and torch."""
    ss = [skiff.tensor(a, requires_grad=True) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    ls, lt = fs(*ss), ft(*ts)
    np.testing.assert_allclose(ls.item(), lt.item(), rtol=1e-12)
    ls.backward()
    lt.backward()
    for s, t in zip(ss, ts):
        tg = t.grad.resolve_conj().numpy()
        assert s.grad.dtype == tg.dtype
        np.testing.assert_allclose(np.asarray(s.grad._data), tg, rtol=1e-10,
                                   atol=1e-12)


RNG = np.random.default_rng(1)
Z = RNG.standard_normal((3, 4)) + 1j * RNG.standard_normal((3, 4))
W = RNG.standard_normal((4, 2)) + 1j * RNG.standard_normal((4, 2))
R = RNG.standard_normal((3, 4))


def test_real_imag_abs_conj_gradients_match_torch():
    _grads(lambda z: (z.real * z.imag).sum() + (z.abs() ** 3).sum(),
           lambda z: (z.real * z.imag).sum() + (z.abs() ** 3).sum(), Z)
    _grads(lambda z: (sfft.view_as_real(z.conj().resolve_conj()) ** 3).sum(),
           lambda z: (torch.view_as_real(z.conj().resolve_conj()) ** 3).sum(), Z)


def test_holomorphic_ops_of_the_core_conjugate_as_torch():
    """mul, div, pow, exp, matmul, sum: rules written for real arrays, run conjugated by the
    engine (torch's g * conj(f'(z)))."""
    def f(lib, vr):
        def g(z, w, r):
            h = (z * (0.5 - 2j) / (z + 3.0)) ** 2 + (0.1 * z).exp() * r
            return (vr(h @ w) ** 2).sum() + (vr(h.sum(0)) ** 3).sum()
        return g
    _grads(f(skiff, sfft.view_as_real), f(torch, torch.view_as_real), Z, W, R)


def test_complex_and_view_as_complex_gradients_match_torch():
    _grads(lambda a, b: sfft.complex(a, b).abs().sum(),
           lambda a, b: torch.complex(a, b).abs().sum(), R, R[::-1].copy())
    rr = RNG.standard_normal((3, 2))
    _grads(lambda a: (sfft.view_as_complex(a) ** 2).real.sum(),
           lambda a: (torch.view_as_complex(a) ** 2).real.sum(), rr)


def test_einsum_slicing_and_setitem_of_complex_match_torch():
    def f(lib, vr):
        def g(z, w, r):
            out = lib.zeros(3, 3, dtype=z.dtype)
            out[:, :2] = lib.einsum("ij,jk->ik", z[:, :] * 1, w)  # complex x complex
            y = lib.einsum("ij,jk->ik", r * (1 + 0j), w)  # r's gradient: the real part
            return (vr(out) ** 2).sum() + (vr(y) ** 3).sum()
        return g
    _grads(f(skiff, sfft.view_as_real), f(torch, torch.view_as_real), Z, W, R)


def test_adam_treats_a_complex_parameter_as_torch():
    """torch's Adam on a complex parameter is Adam on its view_as_real (second moments of
    the real and imaginary parts apart), amsgrad and maximize included."""
    for kw in ({}, {"amsgrad": True}, {"maximize": True, "weight_decay": 0.1}):
        ps, pt = snn.Parameter(skiff.tensor(W.copy())), torch.nn.Parameter(torch.tensor(W))
        os_, ot = skiff.optim.Adam([ps], lr=0.1, **kw), torch.optim.Adam([pt], lr=0.1, **kw)
        for _ in range(3):
            for p, o, vr in ((ps, os_, sfft.view_as_real), (pt, ot, torch.view_as_real)):
                o.zero_grad()
                (vr(p) ** 3).sum().backward()
                o.step()
        np.testing.assert_allclose(np.asarray(ps._data), pt.detach().numpy(), rtol=1e-12)


def test_angle_gradient_matches_torch():
    _grads(lambda z: (z.angle() ** 2).sum(), lambda z: (z.angle() ** 2).sum(), Z)
    _grads(lambda r: (r.angle() + r).sum(), lambda r: (r.angle() + r).sum(), R)


def test_rand_and_randn_of_complex_dtypes_draw_both_parts_as_torch():
    """torch's complex rand: real and imaginary parts uniform on [0, 1); randn: each part
    N(0, 1/2). Moments of 40,000 draws against torch's own draws."""
    torch.manual_seed(0)
    skiff.manual_seed(0)
    n = 40_000
    for name in ("rand", "randn"):
        zs = np.asarray(getattr(skiff, name)(n, dtype=sfft.cdouble)._data)
        zt = getattr(torch, name)(n, dtype=torch.cdouble).numpy()
        assert zs.dtype == zt.dtype
        for part in (np.real, np.imag):
            for moment in (1, 2):
                np.testing.assert_allclose((part(zs) ** moment).mean(),
                                           (part(zt) ** moment).mean(), atol=0.02)


def test_sgn_mh_adjoint_of_complex_match_torch():
    """sgn's gradient on complex (it was sign's zero), the conjugate transposes (mH was
    missing, and a 2-D transpose(-2, -1) was numpy's identity permutation)."""
    _grads(lambda z: (z.sgn() * z * z).real.sum(), lambda z: (z.sgn() * z * z).real.sum(), Z)
    _grads(lambda z: (z @ z.mH).real.sum() + (z.H @ z).imag.pow(2).sum()
           + (z.adjoint() @ z.mT.mT).abs().sum(),
           lambda z: (z @ z.mH).real.sum() + (z.H @ z).imag.pow(2).sum()
           + (z.adjoint() @ z.mT.mT).abs().sum(), Z)
    r = skiff.tensor(R)
    assert tuple(r.transpose(-2, -1).shape) == (4, 3) and tuple(r.mT.shape) == (4, 3)


def test_real_layers_feeding_complex_ops_match_torch():
    """Complex gradients flowing back into real layers (gelu, tanh, softmax, layer_norm,
    matmul): each real input keeps the real part, as torch's."""
    x0 = RNG.standard_normal((3, 4))
    w0 = RNG.standard_normal((4, 4))

    def f(lib, F):
        def g(x, w, c):
            h = F.layer_norm(F.gelu(x @ w).tanh().softmax(-1), (4,))
            y = (h * c).exp() + h.sum() * c
            return y.abs().mean() + (y.real * h).sum()
        return g
    _grads(f(skiff, sF), f(torch, torch.nn.functional), x0, w0, Z)


def test_writes_through_real_and_imag_views_as_torch():
    out = []
    for lib, cd in ((torch, torch.cdouble), (skiff, sfft.cdouble)):
        z = lib.zeros(2, 3, dtype=cd)
        z.real[0] = 1.5
        z.imag[:, 1] = 2.0
        z.real[1, 2:] += 5
        z.imag.mul_(3)
        out.append(np.asarray(z.numpy() if lib is torch else z._data))
    np.testing.assert_array_equal(out[1], out[0])


def test_a_torch_tensor_with_its_conj_bit_set_converts():
    zt = torch.tensor(Z).conj()
    np.testing.assert_array_equal(np.asarray(skiff.tensor(zt)._data), zt.resolve_conj().numpy())


def test_imag_of_a_real_tensor_names_the_fix():
    with pytest.raises(TypeError, match="complex"):
        _ = skiff.tensor(R).imag


@pytest.mark.parametrize("name,kw", [
    ("SGD", {"momentum": 0.9, "nesterov": True}), ("RMSprop", {"momentum": 0.5}),
    ("RMSprop", {"centered": True}),
    ("Adagrad", {"lr_decay": 0.01, "initial_accumulator_value": 0.1}),
    ("Adamax", {}),
    ("NAdam", {}), ("RAdam", {}), ("Adadelta", {"lr": 1.0}), ("Rprop", {}), ("ASGD", {}),
    ("AdamW", {"weight_decay": 0.1})])
def test_other_optimizers_treat_a_complex_parameter_as_torch(name, kw):
    """torch's single-tensor optimizers run on view_as_real of a complex parameter (each
    part its own second moments, signs, step sizes)."""
    kw = {"lr": 0.05, **kw}
    ps, pt = snn.Parameter(skiff.tensor(W.copy())), torch.nn.Parameter(torch.tensor(W))
    os_ = getattr(skiff.optim, name)([ps], **kw)
    ot = getattr(torch.optim, name)([pt], foreach=False, **kw)
    for _ in range(4):
        for p, o, vr in ((ps, os_, sfft.view_as_real), (pt, ot, torch.view_as_real)):
            o.zero_grad()
            ((vr(p) - 0.3) ** 3).sum().backward()
            o.step()
    np.testing.assert_allclose(np.asarray(ps._data), pt.detach().numpy(), rtol=1e-10)
