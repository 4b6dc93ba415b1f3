"""linalg.matrix_exp (values and gradients, batched), cholesky_ex, inv_ex, cond against
torch 2.13 in float64."""

import numpy as np
import pytest
import torch

import skiff
import skiff.linalg as SL


def _np(t):
    return np.asarray(t.detach().numpy())


RNG = np.random.default_rng(0)


@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4)])
def test_matrix_exp_values_and_gradients(shape):
    a = RNG.standard_normal(shape)
    w = RNG.standard_normal(shape)
    ta, sa = torch.tensor(a, requires_grad=True), skiff.tensor(a, requires_grad=True)
    to, so = torch.linalg.matrix_exp(ta), SL.matrix_exp(sa)
    # scaling and squaring errs relative to the matrix's norm, not to each entry: an entry of
    # -0.03 in a (2, 4, 4) exp of norm 15 came 1.1e-13 from torch's, 0.84 of a fixed atol
    # 1e-13 (round 48 h9, float64 on any BLAS path tried); an atol of 1e-12 of the largest
    # entry keeps 23x over it
    atol = 1e-12 * float(np.abs(_np(to)).max())
    np.testing.assert_allclose(_np(so), _np(to), rtol=1e-12, atol=atol)
    (to * torch.tensor(w)).sum().backward()
    (so * skiff.tensor(w)).sum().backward()
    np.testing.assert_allclose(_np(sa.grad), _np(ta.grad), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(_np(skiff.matrix_exp(sa)), _np(torch.matrix_exp(ta)), rtol=1e-12,
                               atol=atol)
    np.testing.assert_allclose(_np(sa.matrix_exp()), _np(ta.matrix_exp()), rtol=1e-12, atol=atol)


def test_matrix_exp_of_a_skew_matrix_is_orthogonal_like_torch():
    a = RNG.standard_normal((4, 4))
    k = a - a.T
    q = _np(SL.matrix_exp(skiff.tensor(k)))
    np.testing.assert_allclose(q @ q.T, np.eye(4), atol=1e-13)
    np.testing.assert_allclose(q, _np(torch.linalg.matrix_exp(torch.tensor(k))), atol=1e-13)


def test_cholesky_ex_inv_ex_and_cond():
    x = RNG.standard_normal((3, 3))
    spd = np.stack([x @ x.T + np.eye(3), -np.eye(3)])
    tl, ti = torch.linalg.cholesky_ex(torch.tensor(spd))
    sl, si = SL.cholesky_ex(skiff.tensor(spd))
    np.testing.assert_array_equal(_np(si), _np(ti))
    good = SL.cholesky_ex(skiff.tensor(spd[0]))
    np.testing.assert_allclose(_np(good.L), _np(torch.linalg.cholesky_ex(torch.tensor(spd[0])).L),
                               rtol=1e-13)
    assert int(good.info) == 0
    with pytest.raises(RuntimeError, match="positive-definite"):
        SL.cholesky_ex(skiff.tensor(spd[1]), check_errors=True)
    sing = np.array([[1.0, 2.0], [2.0, 4.0]])
    assert (int(SL.inv_ex(skiff.tensor(sing)).info) > 0) == (
        int(torch.linalg.inv_ex(torch.tensor(sing)).info) > 0)
    np.testing.assert_allclose(_np(SL.inv_ex(skiff.tensor(x)).inverse),
                               _np(torch.linalg.inv_ex(torch.tensor(x)).inverse), rtol=1e-12)
    for p in (None, 2, -2, "fro", "nuc", 1, float("inf")):
        np.testing.assert_allclose(float(SL.cond(skiff.tensor(x), p)),
                                   float(torch.linalg.cond(torch.tensor(x), p)), rtol=1e-11,
                                   err_msg=str(p))
