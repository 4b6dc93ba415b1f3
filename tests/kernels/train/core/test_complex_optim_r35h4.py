"""Round 35 (h4): LBFGS on complex parameters (torch's: on the ``view_as_real`` of every
parameter; skiff's did not move a complex parameter and warned on ``float(g @ d)``), the
norm ``clip_grad_norm_`` returns for complex gradients and a user's ``autograd.Function`` on
complex tensors, against torch 2.13 in float64/complex128."""

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import skiff  # noqa: E402
import skiff.nn as snn  # noqa: E402

R = np.random.default_rng(351)


def _run(lib, z0, r0, tgt, line_search, steps=3, reload=False):
    if lib is torch:
        pz = torch.nn.Parameter(torch.tensor(z0))
        pr = torch.nn.Parameter(torch.tensor(r0))
        optim = torch.optim
    else:
        pz, pr = snn.Parameter(skiff.tensor(z0)), snn.Parameter(skiff.tensor(r0))
        optim = skiff.optim
    opt = optim.LBFGS([pr, pz], lr=0.7, max_iter=6, history_size=4,
                      line_search_fn=line_search)
    t = lib.tensor(tgt)

    def closure():
        opt.zero_grad()
        loss = ((pz - t).abs() ** 2).sum() + 0.1 * (pz.abs() ** 4).sum() \
            + ((pr - 0.3) ** 2).sum() + (pr[:3] ** 2 * (pz[:3] * pz[:3].conj()).real).sum()
        loss.backward()
        return loss

    losses = []
    for i in range(steps):
        losses.append(float(opt.step(closure).detach()))
        if reload and i == 0:  # state_dict round trip mid-run
            sd = opt.state_dict()
            opt = optim.LBFGS([pr, pz], lr=0.7, max_iter=6, history_size=4,
                              line_search_fn=line_search)
            opt.load_state_dict(sd)
    return losses, np.asarray(pz.detach()), np.asarray(pr.detach())


@pytest.mark.parametrize("line_search", [None, "strong_wolfe"])
@pytest.mark.parametrize("reload", [False, True])
def test_lbfgs_complex_parameters(line_search, reload):
    z0 = R.standard_normal(5) + 1j * R.standard_normal(5)
    r0 = R.standard_normal(4)
    tgt = R.standard_normal(5) + 1j * R.standard_normal(5)
    with warnings.catch_warnings():
        warnings.simplefilter("error", np.exceptions.ComplexWarning)
        ls, zs, rs = _run(skiff, z0, r0, tgt, line_search, reload=reload)
    lt, zt, rt = _run(torch, z0, r0, tgt, line_search, reload=reload)
    np.testing.assert_allclose(ls, lt, rtol=1e-10)
    assert ls[-1] < 0.5 * ls[0]  # it moved
    np.testing.assert_allclose(zs, zt, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(rs, rt, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf")])
def test_clip_grad_norm_complex_first(norm_type):
    z = R.standard_normal((3, 3)) + 1j * R.standard_normal((3, 3))
    r = R.standard_normal(4)
    out = []
    for lib, nn_ in ((skiff, snn), (torch, torch.nn)):
        pz, pr = nn_.Parameter(lib.tensor(z)), nn_.Parameter(lib.tensor(r))
        ((pz.abs() ** 3).sum() + (pr ** 2).sum() * 2).backward()
        n = nn_.utils.clip_grad_norm_([pz, pr], 1.0, norm_type=norm_type)
        out.append((n, np.asarray(pz.grad), np.asarray(pr.grad)))
    (ns, gzs, grs), (nt, gzt, grt) = out
    assert np.asarray(ns).dtype == np.float64 and nt.dtype == torch.float64  # real, as torch's
    np.testing.assert_allclose(float(np.asarray(ns)), float(nt), rtol=1e-12)
    np.testing.assert_allclose(gzs, gzt, rtol=1e-12)
    np.testing.assert_allclose(grs, grt, rtol=1e-12)


def test_user_function_on_complex():
    """A user's Function follows torch's convention: its backward returns ``g * conj(f')``
    for a holomorphic f; skiff must not conjugate it again."""
    def make(lib):
        class Cube(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, y):
                ctx.save_for_backward(x, y)
                return x * x * x + y

            @staticmethod
            def backward(ctx, g):
                x, y = ctx.saved_tensors
                return g * (3 * x * x).conj(), g
        return Cube

    z = R.standard_normal(4) + 1j * R.standard_normal(4)
    y = R.standard_normal(4) + 1j * R.standard_normal(4)
    w = R.standard_normal(4)
    got = []
    for lib in (skiff, torch):
        a, b = lib.tensor(z, requires_grad=True), lib.tensor(y, requires_grad=True)
        out = make(lib).apply(a, b)
        ((out.abs() ** 2) * lib.tensor(w)).sum().backward()
        got.append((np.asarray(a.grad), np.asarray(b.grad)))
    np.testing.assert_allclose(got[0][0], got[1][0], rtol=1e-12)
    np.testing.assert_allclose(got[0][1], got[1][1], rtol=1e-12)


def test_conj_bit_names():
    """torch's lazy-conjugate API on skiff's eager conj: ``resolve_conj`` is the tensor,
    ``conj_physical`` the conjugate, ``is_conj`` True only for ``conj()``'s result (torch's
    lazy conj view; round 44: marked so), which ``resolve_conj`` clears; ``chalf`` has no
    numpy dtype and says so."""
    from skiff.kernels.train.core import functions as F

    z = R.standard_normal(3) + 1j * R.standard_normal(3)
    s, t = skiff.tensor(z), torch.tensor(z)
    assert not s.is_conj() and not F.is_conj(s)
    assert s.conj().is_conj() is t.conj().is_conj() is True
    assert t.conj().resolve_conj().is_conj() is s.conj().resolve_conj().is_conj() is False
    np.testing.assert_array_equal(np.asarray(s.conj_physical()), t.conj_physical().numpy())
    np.testing.assert_array_equal(np.asarray(F.conj_physical(s)), torch.conj_physical(t).numpy())
    np.testing.assert_array_equal(np.asarray(F.resolve_conj(s.conj())),
                                  torch.resolve_conj(t.conj()).numpy())
    assert s.resolve_conj() is s and not s.is_neg()
    with pytest.raises(TypeError, match="complex32"):
        s.chalf()
