"""Round 39 (h4): torch's ``linalg.lu``, ``lu_factor(_ex)``, ``lu_solve``, ``lu_unpack``,
``ldl_factor(_ex)``, ``ldl_solve``, ``householder_product`` and ``linalg.solve(left=False)``
against torch 2.13 in float64: the factors, torch's 1-based int32 pivots, values and
gradients (square, wide, tall, batched), and torch's error words."""

import numpy as np
import pytest

import skiff
from skiff.kernels.train.core import linalg_r39

torch = pytest.importorskip("torch")

R = np.random.default_rng(39)


def _close(a, b, tol=1e-10):
    a = a.detach().numpy() if hasattr(a, "detach") else np.asarray(a)
    b = np.asarray(b.detach().numpy())
    assert a.shape == b.shape
    scale = max(1.0, float(np.abs(a).max()))
    assert np.abs(a - b).max() <= tol * scale, np.abs(a - b).max()


def _pair(a):
    return torch.tensor(a, requires_grad=True), skiff.tensor(a, requires_grad=True)


@pytest.mark.parametrize("shape", [(4, 4), (3, 5), (5, 3), (2, 4, 4), (2, 3, 6), (2, 6, 3)])
def test_lu_and_lu_factor_values_pivots_and_gradients(shape):
    a = R.normal(size=shape)
    ta, sa = _pair(a)
    tP, tL, tU = torch.linalg.lu(ta)
    sP, sL, sU = skiff.linalg.lu(sa)
    w1, w2 = R.normal(size=tuple(tL.shape)), R.normal(size=tuple(tU.shape))
    ((tL * torch.tensor(w1)).sum() + (tU * torch.tensor(w2)).sum()).backward()
    ((sL * skiff.tensor(w1)).sum() + (sU * skiff.tensor(w2)).sum()).backward()
    for t, s in ((tP, sP), (tL, sL), (tU, sU), (ta.grad, sa.grad)):
        _close(t, s)
    ta, sa = _pair(a)
    tLU, tpiv = torch.linalg.lu_factor(ta)
    sLU, spiv = skiff.linalg.lu_factor(sa)
    assert spiv.dtype == np.int32 and np.array_equal(tpiv.numpy(), spiv.numpy())
    w = R.normal(size=tuple(tLU.shape))
    (tLU * torch.tensor(w)).sum().backward()
    (sLU * skiff.tensor(w)).sum().backward()
    _close(tLU, sLU)
    _close(ta.grad, sa.grad)
    # lu_unpack (torch's top-level name): P exactly, L and U's gradients back to LU
    tl, sl = _pair(tLU.detach().numpy())
    tP, tL, tU = torch.lu_unpack(tl, tpiv)
    sP, sL, sU = linalg_r39.lu_unpack(sl, spiv)
    ((tL ** 2).sum() + (tU ** 3).sum()).backward()
    ((sL ** 2).sum() + (sU ** 3).sum()).backward()
    for t, s in ((tP, sP), (tL, sL), (tU, sU), (tl.grad, sl.grad)):
        _close(t, s)


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("adjoint", [False, True])
def test_lu_solve_every_side_with_gradients(left, adjoint):
    a = R.normal(size=(2, 5, 5)) + 3 * np.eye(5)
    b = R.normal(size=(2, 5, 3) if left else (2, 3, 5))
    tLU, tpiv = torch.linalg.lu_factor(torch.tensor(a))
    tl, sl = _pair(tLU.numpy())
    tb, sb = _pair(b)
    tx = torch.linalg.lu_solve(tl, tpiv, tb, left=left, adjoint=adjoint)
    sx = skiff.linalg.lu_solve(sl, skiff.tensor(tpiv.numpy()), sb, left=left, adjoint=adjoint)
    w = R.normal(size=tuple(tx.shape))
    (tx * torch.tensor(w)).sum().backward()
    (sx * skiff.tensor(w)).sum().backward()
    for t, s in ((tx, sx), (tl.grad, sl.grad), (tb.grad, sb.grad)):
        _close(t, s)


@pytest.mark.filterwarnings("ignore:torch.lu_solve is deprecated")
@pytest.mark.filterwarnings("ignore:torch.lu is deprecated")
def test_lu_of_a_complex_matrix_and_the_legacy_lu_solve():
    a = R.normal(size=(4, 4)) + 1j * R.normal(size=(4, 4))
    ta, sa = _pair(a)
    tP, tL, tU = torch.linalg.lu(ta)
    sP, sL, sU = skiff.linalg.lu(sa)
    (tL.abs().sum() + (tU * tU).real.sum()).backward()
    (sL.abs().sum() + (sU * sU).real.sum()).backward()
    for t, s in ((tL, sL), (tU, sU), (ta.grad, sa.grad)):
        _close(t, s)
    b = R.normal(size=(4, 2)) + 0j
    LU, piv = torch.linalg.lu_factor(torch.tensor(a))
    with pytest.warns(UserWarning, match="torch.lu_solve is deprecated"):
        x = linalg_r39.TOPLEVEL["lu_solve"](skiff.tensor(b), skiff.tensor(LU.numpy()),
                                            skiff.tensor(piv.numpy()))
    _close(torch.lu_solve(torch.tensor(b), LU, piv), x)
    tl = torch.lu(torch.tensor(a), get_infos=True)
    sl = linalg_r39.TOPLEVEL["lu"](skiff.tensor(a), get_infos=True)
    for t, s in zip(tl, sl):
        _close(t, s)


def test_lu_factor_of_a_singular_matrix_raises_torchs_error_and_ex_reports_info():
    msgs = []
    for lib, mod in ((torch, torch.linalg), (skiff, skiff.linalg)):
        with pytest.raises(RuntimeError) as e:  # torch's is a plain RuntimeError
            mod.lu_factor(lib.zeros(2, 3, 3, dtype=lib.float64))
        msgs.append(str(e.value))
        info = mod.lu_factor_ex(lib.zeros(2, 3, 3, dtype=lib.float64)).info
        assert info.numpy().tolist() == [1, 1]
    assert msgs[1] == msgs[0]
    with pytest.raises(RuntimeError, match="LU without pivoting is not implemented on the CPU"):
        skiff.linalg.lu(skiff.eye(3), pivot=False)


@pytest.mark.parametrize("hermitian,complex_", [(False, False), (False, True), (True, True)])
def test_ldl_factor_and_solve_are_lapacks_as_torchs(hermitian, complex_):
    a = R.normal(size=(3, 5, 5)) + (1j * R.normal(size=(3, 5, 5)) if complex_ else 0)
    a = a + (np.conj(np.swapaxes(a, -1, -2)) if hermitian else np.swapaxes(a, -1, -2))
    tld, tpiv = torch.linalg.ldl_factor(torch.tensor(a), hermitian=hermitian)
    sld, spiv = skiff.linalg.ldl_factor(skiff.tensor(a), hermitian=hermitian)
    _close(tld, sld)
    assert np.array_equal(tpiv.numpy(), spiv.numpy()) and spiv.dtype == np.int32
    b = R.normal(size=(3, 5, 2)) + (0j if complex_ else 0)
    _close(torch.linalg.ldl_solve(tld, tpiv, torch.tensor(b), hermitian=hermitian),
           skiff.linalg.ldl_solve(sld, spiv, skiff.tensor(b), hermitian=hermitian))
    with pytest.raises(RuntimeError, match="derivative for aten::linalg_ldl_factor_ex"):
        skiff.linalg.ldl_factor(skiff.tensor(a, requires_grad=True))


@pytest.mark.parametrize("shape,k", [((5, 3), 3), ((5, 3), 2), ((2, 4, 4), 3)])
def test_householder_product_values_and_gradients(shape, k):
    a, tau = R.normal(size=shape), R.normal(size=shape[:-2] + (k,))
    ta, sa = _pair(a)
    tt, st = _pair(tau)
    tq = torch.linalg.householder_product(ta, tt)
    sq = skiff.linalg.householder_product(sa, st)
    w = R.normal(size=tuple(tq.shape))
    (tq * torch.tensor(w)).sum().backward()
    (sq * skiff.tensor(w)).sum().backward()
    for t, s in ((tq, sq), (ta.grad, sa.grad), (tt.grad, st.grad)):
        _close(t, s)
    # with geqrf's reflectors it rebuilds Q of the QR, as torch's
    q = skiff.linalg.householder_product(*[skiff.tensor(v.numpy()) for v in torch.geqrf(
        torch.tensor(a))])
    _close(torch.linalg.qr(torch.tensor(a)).Q if k == shape[-1] else
           torch.linalg.householder_product(*torch.geqrf(torch.tensor(a))), q)


def test_solve_left_false_as_torchs():
    a, b = R.normal(size=(2, 4, 4)), R.normal(size=(2, 3, 4))
    ta, sa = _pair(a)
    tb, sb = _pair(b)
    tx = torch.linalg.solve(ta, tb, left=False)
    sx = skiff.linalg.solve(sa, sb, left=False)
    (tx ** 2).sum().backward()
    (sx ** 2).sum().backward()
    for t, s in ((tx, sx), (ta.grad, sa.grad), (tb.grad, sb.grad)):
        _close(t, s)
