"""Round 38 (h4): torch's top-level names of ``torch_toplevel_r38`` (aliases of Tensor
methods and ``nn.functional``, and ``frexp``, ``nextafter``, ``rsub``, ``dsplit``,
``cholesky_solve``, ``cholesky_inverse``, ``chain_matmul``, ``result_type``,
``promote_types``, ``can_cast``, ``concat``, ``asarray``) against torch 2.13."""

import numpy as np
import pytest

import skiff
from skiff.kernels.train.core import torch_toplevel_r38 as T

torch = pytest.importorskip("torch")

R = np.random.default_rng(38)
A, B = R.normal(size=(3, 4)), R.normal(size=(3, 4))


def _np(x):
    return x.detach().numpy() if hasattr(x, "detach") else np.asarray(x)


@pytest.mark.filterwarnings("ignore:torch.chain_matmul is deprecated")
@pytest.mark.parametrize("name,call", [
    ("le", lambda m, L, a, b: m.le(a, b)), ("greater", lambda m, L, a, b: m.greater(a, b)),
    ("not_equal", lambda m, L, a, b: m.not_equal(a, b)),
    ("multiply", lambda m, L, a, b: m.multiply(a, b)),
    ("subtract", lambda m, L, a, b: m.subtract(a, b, alpha=2)),
    ("arctan2", lambda m, L, a, b: m.arctan2(a, b)),
    ("addr", lambda m, L, a, b: m.addr(a, b[0, :3], b[1], beta=0.5)),
    ("rsub", lambda m, L, a, b: m.rsub(a, b, alpha=3)),
    ("dsplit", lambda m, L, a, b: m.dsplit(a.reshape(1, 3, 4), [1, 3])[1]),
    ("frexp", lambda m, L, a, b: m.frexp(a)[0] + m.frexp(a)[1]),
    ("nextafter", lambda m, L, a, b: (m.nextafter(a, b) - a) * 1e16),
    ("cholesky_solve", lambda m, L, a, b: m.cholesky_solve(
        b[:, :2], L.linalg.cholesky(a[:, :3] @ a[:, :3].T + L.eye(3, dtype=L.float64)))),
    ("cholesky_inverse", lambda m, L, a, b: m.cholesky_inverse(
        L.linalg.cholesky(a[:, :3] @ a[:, :3].T + L.eye(3, dtype=L.float64)).T, upper=True)),
    ("chain_matmul", lambda m, L, a, b: m.chain_matmul(a, b.T, a)),
    ("concat", lambda m, L, a, b: m.concat([a, b], dim=1)),
    ("concatenate", lambda m, L, a, b: m.concatenate([a, b], axis=0)),
    ("layer_norm", lambda m, L, a, b: m.layer_norm(a, (4,), b[0], b[1], 1e-5)),
    ("conv1d", lambda m, L, a, b: m.conv1d(a.reshape(1, 3, 4), b[:, :2].reshape(2, 3, 1))),
    ("max_pool1d", lambda m, L, a, b: m.max_pool1d(a.reshape(1, 3, 4), 2, 1)),
    ("pixel_shuffle", lambda m, L, a, b: m.pixel_shuffle(a.reshape(1, 4, 3, 1), 2)),
    ("adaptive_avg_pool1d", lambda m, L, a, b: m.adaptive_avg_pool1d(a.reshape(1, 3, 4), 3)),
    ("asarray", lambda m, L, a, b: m.asarray([[1.0, 2.0]], dtype=L.float64) + a[:1, :2])])
def test_toplevel_names_are_torchs(name, call):
    outs = []
    for lib, mod in ((skiff, T), (torch, torch)):
        a, b = lib.tensor(A, requires_grad=True), lib.tensor(B, requires_grad=True)
        y = call(mod, lib, a, b)
        if y.dtype in (lib.float64,) and y.requires_grad:
            y.sum().backward()
            outs.append([_np(y), _np(a.grad) if a.grad is not None else 0,
                         _np(b.grad) if b.grad is not None else 0])
        else:
            outs.append([_np(y)])
    for u, v in zip(*outs):
        np.testing.assert_allclose(u, v, rtol=1e-10, atol=1e-12)


def test_dtype_rules_are_torchs():
    s, t = skiff, torch
    cases = [(lambda L: L.ones(2, dtype=L.int32), lambda L: 2.5),
             (lambda L: L.ones(2, dtype=L.int32), lambda L: L.tensor(2.5, dtype=L.float64)),
             (lambda L: L.ones(2, dtype=L.float32), lambda L: L.tensor(2.5, dtype=L.float64)),
             (lambda L: L.ones(2, dtype=L.float32), lambda L: L.ones(2, dtype=L.float64)),
             (lambda L: L.ones(2, dtype=L.int64), lambda L: True),
             (lambda L: L.tensor(1, dtype=L.int32), lambda L: 7),
             (lambda L: L.ones(2, dtype=L.bool), lambda L: 3),
             (lambda L: L.ones(2, dtype=L.float64), lambda L: 1j),
             (lambda L: L.ones(2, dtype=L.int64), lambda L: 1j),
             (lambda L: L.ones(2, dtype=L.uint8), lambda L: L.ones(2, dtype=L.int8))]
    for x, y in cases:
        ours = T.result_type(x(s), y(s))
        theirs = torch.result_type(x(t), y(t))
        assert str(np.dtype(ours)) == str(theirs).replace("torch.", "")
    for a, b in (("float32", "int64"), ("uint8", "int8"), ("bool", "float16"),
                 ("int32", "float32"), ("complex64", "float64")):
        assert str(T.promote_types(a, b)) == str(torch.promote_types(
            getattr(torch, a), getattr(torch, b))).replace("torch.", "")
    for a, b in (("float32", "int64"), ("int64", "float32"), ("complex64", "float64"),
                 ("bool", "int8"), ("int8", "bool")):
        assert T.can_cast(a, b) == torch.can_cast(getattr(torch, a), getattr(torch, b))
    assert T.is_same_size(skiff.ones(2, 3), skiff.zeros(2, 3))
