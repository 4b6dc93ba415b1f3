"""Round 39 (h13): torch's ``geqrf`` and ``ormqr`` (and ``Tensor.geqrf``/``Tensor.ormqr``)
against torch 2.13 in float64 / complex128: LAPACK's factors, the four ``left``/``transpose``
products (tall, wide, batched, complex), ``ormqr``'s gradients to ``input``, ``tau`` and
``other``, ``geqrf``'s missing derivative, and torch's error words for bad shapes/dtypes."""

import numpy as np
import pytest

import skiff
from skiff.kernels.train.core import linalg_qr_r39 as qr39

torch = pytest.importorskip("torch")

R = np.random.default_rng(3913)


def _arr(shape, cplx=False):
    a = R.standard_normal(shape)
    return a + 1j * R.standard_normal(shape) if cplx else a


def _close(s, t, tol=1e-12):
    s = s.detach().numpy() if hasattr(s, "detach") else np.asarray(s)
    t = t.detach().numpy()
    assert s.shape == t.shape, (s.shape, t.shape)
    assert s.dtype == t.dtype, (s.dtype, t.dtype)
    if s.size:
        scale = max(1.0, float(np.abs(t).max()))
        assert np.abs(s - t).max() <= tol * scale, np.abs(s - t).max()


@pytest.mark.parametrize("shape,cplx", [((5, 3), False), ((3, 5), False), ((2, 4, 4), True),
                                        ((2, 6, 3), True), ((0, 3), False), ((2, 3, 0), False)])
def test_geqrf_is_lapacks(shape, cplx):
    a = _arr(shape, cplx)
    sa, st = qr39.geqrf(skiff.tensor(a))
    ta, tt = torch.geqrf(torch.tensor(a))
    _close(sa, ta)
    _close(st, tt)
    assert qr39.geqrf(skiff.tensor(a))._fields == ("a", "tau")


def test_geqrf_has_no_derivative_as_torch():
    sa, st = qr39.geqrf(skiff.tensor(_arr((4, 3)), requires_grad=True))
    assert sa.requires_grad
    with pytest.raises(RuntimeError, match="the derivative for 'geqrf' is not implemented"):
        sa.sum().backward()


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("transpose", [True, False])
@pytest.mark.parametrize("shape,cplx", [((5, 3), False), ((3, 5), False), ((2, 4, 3), True)])
def test_ormqr_values_and_gradients(shape, cplx, left, transpose):
    m = shape[-2]
    qa, qt = torch.geqrf(torch.tensor(_arr(shape, cplx)))
    c = _arr(shape[:-2] + ((m, 2) if left else (2, m)), cplx)
    w = _arr(c.shape, cplx)
    # values without a graph: LAPACK's ormqr/unmqr
    s0 = qr39.ormqr(skiff.tensor(qa.numpy()), skiff.tensor(qt.numpy()), skiff.tensor(c),
                    left, transpose)
    t0 = torch.ormqr(qa, qt, torch.tensor(c), left=left, transpose=transpose)
    _close(s0, t0)
    # with a graph: the same values and torch's gradients
    ta, tt, tc = (torch.tensor(x.numpy() if hasattr(x, "numpy") else x, requires_grad=True)
                  for x in (qa, qt, c))
    sa, st, sc = (skiff.tensor(x.detach().numpy(), requires_grad=True) for x in (ta, tt, tc))
    tr = torch.ormqr(ta, tt, tc, left=left, transpose=transpose)
    sr = qr39.ormqr(sa, st, sc, left=left, transpose=transpose)
    _close(sr, tr)
    (tr * torch.tensor(w)).real.sum().backward()
    (sr * skiff.tensor(w)).real.sum().backward()
    for s, t in ((sa, ta), (st, tt), (sc, tc)):
        _close(s.grad, t.grad, 1e-10)


def test_tensor_methods_and_float32():
    qr39.install(type(skiff.tensor([1.0])))
    a = _arr((4, 3)).astype(np.float32)
    sa, st = skiff.tensor(a).geqrf()
    ta, tt = torch.tensor(a).geqrf()
    _close(sa, ta, 1e-5)
    c = _arr((2, 4)).astype(np.float32)
    _close(sa.ormqr(st, skiff.tensor(c), False, True),
           ta.ormqr(tt, torch.tensor(c), False, True), 1e-5)


def test_ormqr_without_reflectors_is_a_new_tensor():
    c = skiff.tensor(_arr((3, 2)), requires_grad=True)
    r = qr39.ormqr(skiff.tensor(_arr((3, 0))), skiff.tensor(np.zeros(0)), c)
    t = torch.ormqr(torch.tensor(_arr((3, 0))), torch.zeros(0, dtype=torch.float64),
                    torch.tensor(c.detach().numpy()))
    assert r is not c
    _close(r, t)
    r.sum().backward()
    np.testing.assert_array_equal(c.grad.numpy(), np.ones((3, 2)))


def _errors(fn_s, fn_t):
    with pytest.raises(Exception) as es:
        fn_s()
    with pytest.raises(Exception) as et:
        fn_t()
    assert type(es.value).__name__ == type(et.value).__name__
    assert str(es.value) == str(et.value)


@pytest.mark.parametrize("case", range(11))
def test_errors_as_torch(case):
    qa, qt = torch.geqrf(torch.tensor(_arr((5, 3))))
    c = torch.tensor(_arr((5, 2)))
    cases = [
        (qa, qt, torch.tensor(_arr((4, 2))), {}),
        (qa, qt[:2], c, {}),
        (qa, qt[:2], torch.tensor(_arr((2, 5))), {"left": False}),
        (qa, qt, torch.tensor(_arr((2, 4))), {"left": False}),
        (qa, qt, c.float(), {}),
        (qa, qt.float(), c, {}),
        (qa, qt, torch.tensor(_arr((3, 5, 2))), {}),
        (qa, qt.unsqueeze(0).expand(2, 3), c, {}),
        (qa[0], qt, c, {}),
        (qa, qt, c[:, 0], {}),
        (torch.tensor(_arr((2, 5, 3))), torch.tensor(_arr((3, 3))), torch.tensor(_arr((2, 5, 2))),
         {}),
    ]
    a, t, o, kw = cases[case]
    _errors(lambda: qr39.ormqr(*(skiff.tensor(x.numpy().copy()) for x in (a, t, o)), **kw),
            lambda: torch.ormqr(a, t, o, **kw))


def test_geqrf_errors_as_torch():
    _errors(lambda: qr39.geqrf(skiff.tensor(_arr((3,)))),
            lambda: torch.geqrf(torch.tensor(_arr((3,)))))
    _errors(lambda: qr39.geqrf(skiff.tensor(np.ones((3, 3), np.int64))),
            lambda: torch.geqrf(torch.ones(3, 3, dtype=torch.int64)))
