"""Round 26's second batch of torch gaps against torch 2.13 in float64 (values and gradients):
``skiff.linalg``, ``median``/``kthvalue``/``quantile``/``unique``/``bincount``/``index_put_``,
the recurrent cells, ``PixelShuffle``/``PixelUnshuffle`` and ``AdaptiveMaxPool2d``."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import skiff  # noqa: E402
import skiff.linalg as SL  # noqa: E402
from skiff.kernels.train.core import tensor as T  # noqa: E402

RTOL = 1e-7


def _pair(a):
    a = np.asarray(a, dtype=np.float64)
    return (T.tensor(a.copy(), dtype=np.float64, requires_grad=True),
            torch.tensor(a.copy(), dtype=torch.float64, requires_grad=True))


def _close(s, t, rtol=RTOL, atol=1e-9):
    s = s.numpy() if hasattr(s, "numpy") and not isinstance(s, np.ndarray) else np.asarray(s)
    t = t.detach().numpy() if hasattr(t, "detach") else np.asarray(t)
    np.testing.assert_allclose(np.asarray(s, dtype=np.float64), t, rtol=rtol, atol=atol)


def _spd(n, seed, batch=()):
    r = np.random.default_rng(seed)
    m = r.standard_normal(batch + (n, n))
    return m @ np.swapaxes(m, -1, -2) + n * np.eye(n)


def _grad_check(sfn, tfn, *arrays, seed=0):
    """Forward values and every input's gradient under a random upstream gradient."""
    pairs = [_pair(a) for a in arrays]
    so = sfn(*[p[0] for p in pairs])
    to = tfn(*[p[1] for p in pairs])
    _close(so.detach(), to)
    w = np.random.default_rng(seed).standard_normal(to.shape)
    (so * T.tensor(w, dtype=np.float64)).sum().backward()
    (to * torch.tensor(w)).sum().backward()
    for s, t in pairs:
        _close(s.grad, t.grad)


R = np.random.default_rng(26)


@pytest.mark.parametrize("name", ["solve", "solve_vec", "inv", "det", "logabsdet", "cholesky",
                                  "eigvalsh", "svdvals"])
def test_linalg_values_and_grads(name):
    A = _spd(4, 1, (2,)) + 0.3 * R.standard_normal((2, 4, 4)) * (name not in (
        "cholesky", "eigvalsh"))
    cases = {
        "solve": (lambda a, b: SL.solve(a, b), lambda a, b: torch.linalg.solve(a, b),
                  (A, R.standard_normal((2, 4, 3)))),
        "solve_vec": (lambda a, b: SL.solve(a, b), lambda a, b: torch.linalg.solve(a, b),
                      (A[0], R.standard_normal(4))),
        "inv": (SL.inv, torch.linalg.inv, (A,)),
        "det": (SL.det, torch.linalg.det, (A,)),
        "logabsdet": (lambda a: SL.slogdet(a).logabsdet,
                      lambda a: torch.linalg.slogdet(a).logabsdet, (A,)),
        "cholesky": (SL.cholesky, torch.linalg.cholesky, (A,)),
        "eigvalsh": (SL.eigvalsh, torch.linalg.eigvalsh, (A,)),
        "svdvals": (SL.svdvals, torch.linalg.svdvals, (R.standard_normal((2, 4, 3)),)),
    }
    sfn, tfn, arrays = cases[name]
    _grad_check(sfn, tfn, *arrays)


def test_eigh_vectors_grad_sign_invariant():
    """A loss invariant to each eigenvector's sign: sum of w_i * (v_i . c)^2."""
    A = _spd(4, 3)
    c = R.standard_normal(4)
    (sa, ta) = _pair(A)
    sw, sv = SL.eigh(sa)
    tw, tv = torch.linalg.eigh(ta)
    _close(sw.detach(), tw)
    sl = (sw * ((sv * T.tensor(c[:, None], dtype=np.float64)).sum(0) ** 2)).sum()
    tl = (tw * ((tv * torch.tensor(c[:, None])).sum(0) ** 2)).sum()
    sl.backward()
    tl.backward()
    _close(sl.detach(), tl)
    _close(sa.grad, ta.grad)


def test_slogdet_sign_qr_svd_values():
    A = R.standard_normal((3, 5, 4))
    sign = SL.slogdet(T.tensor(A[:, :4, :], dtype=np.float64)).sign
    _close(sign, torch.linalg.slogdet(torch.tensor(A[:, :4, :])).sign)
    for mode in ("reduced", "complete"):
        q, r = SL.qr(T.tensor(A, dtype=np.float64), mode=mode)
        tq, tr = torch.linalg.qr(torch.tensor(A), mode=mode)
        _close(q, tq)
        _close(r, tr)
    u, s, vh = SL.svd(T.tensor(A, dtype=np.float64), full_matrices=False)
    tu, ts, tvh = torch.linalg.svd(torch.tensor(A), full_matrices=False)
    _close(s, ts)
    _close((u.numpy() * s.numpy()[..., None, :]) @ vh.numpy(), A)
    with pytest.raises(NotImplementedError, match="detach"):
        SL.qr(T.tensor(A, dtype=np.float64, requires_grad=True), mode="complete")


@pytest.mark.parametrize("ord_", [None, 2, 1, 3.5, float("inf"), -float("inf"), 0])
@pytest.mark.parametrize("dim", [None, 1, (0, 1)])
def test_vector_norms(ord_, dim):
    x = R.standard_normal((3, 5))
    if ord_ is None:
        _grad_check(lambda a: SL.norm(a, dim=dim), lambda a: torch.linalg.norm(a, dim=dim), x)
    elif ord_ != 0:
        _grad_check(lambda a: SL.vector_norm(a, ord_, dim=dim),
                    lambda a: torch.linalg.vector_norm(a, ord_, dim=dim), x)
    else:
        _close(SL.vector_norm(T.tensor(x, dtype=np.float64), 0, dim),
               torch.linalg.vector_norm(torch.tensor(x), 0, dim=dim))


@pytest.mark.parametrize("ord_", ["fro", "nuc", 2, -2, 1, -1, float("inf"), -float("inf")])
@pytest.mark.parametrize("keepdim", [False, True])
def test_matrix_norms(ord_, keepdim):
    x = R.standard_normal((2, 4, 3))
    _grad_check(lambda a: SL.matrix_norm(a, ord_, keepdim=keepdim),
                lambda a: torch.linalg.matrix_norm(a, ord_, keepdim=keepdim), x)
    _grad_check(lambda a: SL.norm(a[0], ord_), lambda a: torch.linalg.norm(a[0], ord_), x)


def test_linalg_errors_name_the_fix():
    with pytest.raises(ValueError, match="square"):
        SL.inv(T.tensor(np.ones((2, 3))))
    with pytest.raises(ValueError, match="positive-definite"):
        SL.cholesky(T.tensor(-np.eye(3)))


# ---- order statistics and counting (ops_stats.py) ----------------------------------------------

def test_median_kthvalue_values_indices_grads():
    x = R.permutation(24).reshape(4, 6).astype(np.float64) + R.random((4, 6)) * 0.1
    _grad_check(lambda a: skiff.median(a), torch.median, x)
    for dim, keep in ((0, False), (1, True), (-1, False)):
        _grad_check(lambda a, d=dim, kd=keep: a.median(d, kd).values,
                    lambda a, d=dim, kd=keep: a.median(d, kd).values, x)
        _close(T.tensor(x).median(dim, keep).indices, torch.tensor(x).median(dim, keep).indices)
        for k in (1, 3):
            _grad_check(lambda a, k=k, d=dim, kd=keep: a.kthvalue(k, d, kd).values,
                        lambda a, k=k, d=dim, kd=keep: a.kthvalue(k, d, kd).values, x)
            _close(skiff.kthvalue(T.tensor(x), k, dim, keep).indices,
                   torch.kthvalue(torch.tensor(x), k, dim, keep).indices)
    with pytest.raises(ValueError, match="k must be in"):
        T.tensor(x).kthvalue(7, 1)


@pytest.mark.parametrize("interp", ["linear", "lower", "higher", "midpoint", "nearest"])
def test_quantile(interp):
    x = R.standard_normal((5, 7))
    for q in (0.3, [0.0, 0.25, 0.5, 0.9, 1.0]):
        for dim, keep in ((None, False), (None, True), (1, False), (0, True)):
            _grad_check(lambda a, q=q, d=dim, kd=keep: skiff.quantile(
                            a, q, d, kd, interpolation=interp),
                        lambda a, q=q, d=dim, kd=keep: torch.quantile(
                            a, torch.tensor(q, dtype=torch.float64), d, kd,
                            interpolation=interp), x)
    xn = x.copy()
    xn[1, 2] = np.nan
    _close(T.tensor(xn).quantile(0.4, 1), torch.tensor(xn).quantile(0.4, 1))
    _close(T.tensor(xn).nanquantile(0.4, 1), torch.tensor(xn).nanquantile(0.4, 1))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        skiff.quantile(T.tensor(x), 1.5)


def test_unique_bincount():
    x = R.integers(0, 6, (4, 5))
    got = skiff.unique(T.tensor(x), return_inverse=True, return_counts=True)
    want = torch.unique(torch.tensor(x), return_inverse=True, return_counts=True)
    for s, t in zip(got, want):
        np.testing.assert_array_equal(s.numpy(), t.numpy())
        assert s.numpy().dtype == np.int64
    rows = T.tensor(np.array([[1, 2], [0, 1], [1, 2]])).unique(dim=0, return_counts=True)
    trows = torch.tensor([[1, 2], [0, 1], [1, 2]]).unique(dim=0, return_counts=True)
    for s, t in zip(rows, trows):
        np.testing.assert_array_equal(s.numpy(), t.numpy())
    v = R.integers(0, 5, 9)
    w = R.random(9)
    np.testing.assert_array_equal(skiff.bincount(T.tensor(v), minlength=7).numpy(),
                                  torch.bincount(torch.tensor(v), minlength=7).numpy())
    _close(T.tensor(v).bincount(T.tensor(w, dtype=np.float64)),
           torch.tensor(v).bincount(torch.tensor(w)))
    with pytest.raises(ValueError, match="1-D integer"):
        skiff.bincount(T.tensor(w))


@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put(accumulate):
    x = R.standard_normal((4, 5))
    v = R.standard_normal(3)
    rows, cols = np.array([0, 2, 0]), np.array([1, 3, 1] if accumulate else [1, 3, 4])

    def sk(a, b):
        return skiff.index_put(a * 1.0, (T.tensor(rows), T.tensor(cols)), b, accumulate)

    def th(a, b):
        return (a * 1.0).index_put((torch.tensor(rows), torch.tensor(cols)), b, accumulate)

    _grad_check(sk, th, x, v)
    # in place, on a computed tensor (the graph follows) and on a leaf under no_grad
    (sa, ta), (sv, tv) = _pair(x), _pair(v)
    sy, ty = sa * 2.0, ta * 2.0
    sy.index_put_((T.tensor(rows), T.tensor(cols)), sv, accumulate=accumulate)
    ty.index_put_((torch.tensor(rows), torch.tensor(cols)), tv, accumulate=accumulate)
    _close(sy.detach(), ty)
    (sy * sy).sum().backward()
    (ty * ty).sum().backward()
    _close(sa.grad, ta.grad)
    _close(sv.grad, tv.grad)
    with pytest.raises(RuntimeError, match="no_grad"):
        sa.index_put_((T.tensor(rows), T.tensor(cols)), sv)
    with skiff.no_grad():
        sa.index_put_((T.tensor(rows), T.tensor(cols)), sv.detach(), accumulate=accumulate)
    with torch.no_grad():
        ta.index_put_((torch.tensor(rows), torch.tensor(cols)), tv.detach(),
                      accumulate=accumulate)
    _close(sa.detach(), ta)


def test_default_dtype():
    assert skiff.get_default_dtype() == np.float32
    assert str(torch.get_default_dtype()).endswith(str(skiff.get_default_dtype()))
    skiff.set_default_dtype(np.float32)
    with pytest.raises(TypeError, match="float32 and float64"):  # float64: test_porter_r27*
        skiff.set_default_dtype(np.int64)


# ---- cells and shape layers (nn/rnn_cells.py, nn/pixel_pool.py) ------------------------------

def _twin(name, *args, **kw):
    """The skiff layer and torch's, skiff's weights copied from torch's (float64)."""
    theirs = getattr(torch.nn, name)(*args, **kw).double()
    ours = getattr(skiff.nn, name)(*args, dtype=np.float64, **kw)
    assert sorted(ours.state_dict()) == sorted(theirs.state_dict())
    for k, v in theirs.state_dict().items():
        assert ours.state_dict()[k].shape == tuple(v.shape), k
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    return ours, theirs


def _params_close(ours, theirs):
    grads = {k: p.grad for k, p in ours.named_parameters()}
    for k, p in theirs.named_parameters():
        _close(grads[k], p.grad)


@pytest.mark.parametrize("name,kw", [("RNNCell", {}), ("RNNCell", {"nonlinearity": "relu"}),
                                     ("RNNCell", {"bias": False}), ("LSTMCell", {}),
                                     ("GRUCell", {}), ("GRUCell", {"bias": False})])
@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("with_state", [True, False])
def test_cells_match_torch(name, kw, batched, with_state):
    ours, theirs = _twin(name, 5, 4, **kw)
    shape = (3, 5) if batched else (5,)
    hshape = (3, 4) if batched else (4,)
    (sx, tx) = _pair(R.standard_normal(shape))
    state = None
    if with_state:
        pairs = [_pair(R.standard_normal(hshape)) for _ in range(2 if name == "LSTMCell" else 1)]
        state = pairs
    # two steps (the state feeds back), as a loop over time does
    sh = th = None
    if state is not None:
        sh = tuple(p[0] for p in state) if name == "LSTMCell" else state[0][0]
        th = tuple(p[1] for p in state) if name == "LSTMCell" else state[0][1]
    for _ in range(2):
        sh, th = ours(sx, sh), theirs(tx, th)
    so = sh[0] * sh[1] if name == "LSTMCell" else sh
    to = th[0] * th[1] if name == "LSTMCell" else th
    _close(so.detach(), to)
    w = R.standard_normal(tuple(to.shape))
    (so * T.tensor(w, dtype=np.float64)).sum().backward()
    (to * torch.tensor(w)).sum().backward()
    _close(sx.grad, tx.grad)
    _params_close(ours, theirs)
    for s, t in state or ():
        _close(s.grad, t.grad)


def test_cell_init_and_errors():
    cell = skiff.nn.LSTMCell(6, 8)
    bound = 1 / np.sqrt(8)
    for k, p in cell.named_parameters():
        assert np.abs(p.numpy()).max() <= bound, k
        assert np.abs(p.numpy()).max() > bound / 2, k  # spread over the range, not zeros
    with pytest.raises(ValueError, match=r"expects input \(N, 6\)"):
        cell(T.tensor(np.ones((2, 5))))
    with pytest.raises(ValueError, match="pair"):
        cell(T.tensor(np.ones((2, 6))), T.tensor(np.ones((2, 8))))
    with pytest.raises(ValueError, match="nonlinearity"):
        skiff.nn.RNNCell(2, 3, nonlinearity="gelu")


@pytest.mark.parametrize("shape,r", [((2, 12, 3, 4), 2), ((8 * 9, 2, 3), 3), ((2, 1, 4, 4, 5), 2)])
def test_pixel_shuffle_roundtrip(shape, r):
    x = R.standard_normal(shape)
    _grad_check(lambda a: skiff.nn.PixelShuffle(r)(a), torch.nn.PixelShuffle(r), x)
    y = torch.nn.PixelShuffle(r)(torch.tensor(x)).numpy()
    _grad_check(lambda a: skiff.nn.PixelUnshuffle(r)(a), torch.nn.PixelUnshuffle(r), y)
    with pytest.raises(ValueError, match="divisible"):
        skiff.nn.PixelShuffle(5)(T.tensor(x))


@pytest.mark.parametrize("size", [(7, 5), (1, 1), 3, (4, None), (2, 3), (10, 12)])
def test_adaptive_max_pool2d(size):
    x = R.standard_normal((2, 3, 10, 12))
    _grad_check(lambda a: skiff.nn.AdaptiveMaxPool2d(size)(a),
                torch.nn.AdaptiveMaxPool2d(size), x)
    _grad_check(lambda a: skiff.nn.AdaptiveMaxPool2d(size)(a[0]),
                lambda a: torch.nn.AdaptiveMaxPool2d(size)(a[0]), x)


@pytest.mark.parametrize("kw", [{}, {"nonlinearity": "relu", "num_layers": 2},
                                {"bidirectional": True, "batch_first": True}])
def test_rnn_layer_matches_torch(kw):
    ours, theirs = _twin("RNN", 3, 4, **kw)
    (sx, tx) = _pair(R.standard_normal((2, 5, 3)))
    layers = kw.get("num_layers", 1) * (2 if kw.get("bidirectional") else 1)
    (sh, th) = _pair(R.standard_normal((layers, 2 if kw.get("batch_first") else 5, 4)))
    so, sn = ours(sx, sh)
    to, tn = theirs(tx, th)
    _close(so.detach(), to)
    _close(sn.detach(), tn)
    ((so * so).sum() + sn.sum()).backward()
    ((to * to).sum() + tn.sum()).backward()
    _close(sx.grad, tx.grad)
    _close(sh.grad, th.grad)
    _params_close(ours, theirs)


# ---- found as a user: broadcasting solve, nan medians, linalg's smaller names --------------

def test_solve_broadcasts_a_over_b_batches():
    A = _spd(4, 5)
    _grad_check(SL.solve, torch.linalg.solve, A, R.standard_normal((3, 4, 2)))
    _grad_check(SL.solve, torch.linalg.solve, R.standard_normal((3, 1, 4, 4)) + 4 * np.eye(4),
                R.standard_normal((2, 4, 2)))


def test_median_of_nan_is_nan():
    x = R.standard_normal((3, 5))
    x[1, 2] = x[2, 0] = x[2, 4] = np.nan
    _close(skiff.median(T.tensor(x, dtype=np.float64)), torch.median(torch.tensor(x)))
    s, t = T.tensor(x, dtype=np.float64).median(1), torch.tensor(x).median(1)
    _close(s.values, t.values)
    _close(s.indices, t.indices)


def test_linalg_compositions():
    A = R.standard_normal((2, 4, 4))
    _grad_check(lambda a: SL.matrix_power(a, 3), lambda a: torch.linalg.matrix_power(a, 3), A)
    _grad_check(lambda a: SL.matrix_power(a, -2), lambda a: torch.linalg.matrix_power(a, -2), A)
    _close(SL.matrix_power(T.tensor(A, dtype=np.float64), 0),
           torch.linalg.matrix_power(torch.tensor(A), 0))
    v = R.standard_normal(4)
    _grad_check(lambda a, b: SL.multi_dot([b, a[0], a[1], b]),
                lambda a, b: torch.linalg.multi_dot([b, a[0], a[1], b]), A, v)
    _grad_check(SL.vecdot, torch.linalg.vecdot, A, A[::-1].copy())
    x3, y3 = R.standard_normal((5, 3)), R.standard_normal((5, 3))
    _grad_check(SL.cross, torch.linalg.cross, x3, y3)
    low = A.copy()
    low[0, 3] = low[0, 2]  # rank 3
    _close(SL.matrix_rank(T.tensor(low, dtype=np.float64)), torch.linalg.matrix_rank(
        torch.tensor(low)))
    rect = R.standard_normal((5, 3))
    _close(SL.pinv(T.tensor(rect, dtype=np.float64)), torch.linalg.pinv(torch.tensor(rect)))
    _close(SL.pinv(T.tensor(low, dtype=np.float64)), torch.linalg.pinv(torch.tensor(low)),
           rtol=1e-6, atol=1e-8)
    spd = _spd(3, 9)
    _grad_check(lambda a: a.det(), lambda a: a.det(), A)
    _grad_check(lambda a: skiff.inverse(a), torch.inverse, A)
    _grad_check(lambda a: a.logdet(), lambda a: a.logdet(), spd)
    _close(skiff.logdet(T.tensor(-spd, dtype=np.float64)), torch.logdet(torch.tensor(-spd)))


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("unit", [False, True])
@pytest.mark.parametrize("left", [True, False])
def test_solve_triangular(upper, unit, left):
    A = R.standard_normal((2, 4, 4)) + 3 * np.eye(4)
    B = R.standard_normal((2, 4, 3) if left else (2, 3, 4))
    kw = {"upper": upper, "unitriangular": unit, "left": left}
    _grad_check(lambda a, b: SL.solve_triangular(a, b, **kw),
                lambda a, b: torch.linalg.solve_triangular(a, b, **kw), A, B)


@pytest.mark.parametrize("offset,d1,d2", [(0, 0, 1), (1, 0, 1), (-1, 1, 2), (2, 0, 2),
                                          (0, 2, 0), (-1, -1, -2)])
def test_diagonal(offset, d1, d2):
    x = R.standard_normal((3, 4, 5))
    _grad_check(lambda a: a.diagonal(offset, d1, d2), lambda a: a.diagonal(offset, d1, d2), x)
    _grad_check(lambda a: SL.diagonal(a, offset=offset, dim1=d1, dim2=d2),
                lambda a: torch.linalg.diagonal(a, offset=offset, dim1=d1, dim2=d2), x)


def test_gaussian_process_marginal_likelihood():
    """A GP port: RBF kernel, cholesky, solve_triangular, log of the diagonal; the loss and the
    hyper-parameters' gradients equal torch's."""
    r = np.random.default_rng(1)
    X = r.uniform(-2, 2, (30, 1))
    y = np.sin(2 * X[:, 0]) + 0.1 * r.standard_normal(30)

    def nll(L):
        ls = L.tensor(np.array(0.5), dtype=L.float64, requires_grad=True)
        noise = L.tensor(np.array(0.1), dtype=L.float64, requires_grad=True)
        Xt, yt = L.tensor(X, dtype=L.float64), L.tensor(y, dtype=L.float64)
        d2 = ((Xt[:, None, :] - Xt[None, :, :]) ** 2).sum(-1)
        K = (-d2 / (2 * ls ** 2)).exp() + noise * L.eye(30, dtype=L.float64)
        C = L.linalg.cholesky(K)
        a = L.linalg.solve_triangular(C, yt[:, None], upper=False)
        loss = 0.5 * (a * a).sum() + C.diagonal().log().sum()
        loss.backward()
        return [float(loss.detach()), float(ls.grad.detach()), float(noise.grad.detach())]

    np.testing.assert_allclose(nll(skiff), nll(torch), rtol=1e-9)


@pytest.mark.parametrize("shape", [(4, 4), (2, 6, 3), (3, 5)])
def test_reduced_svd_gradient(shape):
    """A loss of S, of U and of Vh that each column's sign leaves alone (U_ij^2, Vh_ij^2)."""
    A = R.standard_normal(shape)
    k = min(shape[-2:])
    wu = R.standard_normal(shape[:-1] + (k,))
    wv = R.standard_normal(shape[:-2] + (k, shape[-1]))

    def loss(lib, u, s, vh):
        return (s * s).sum() + (u * u * lib.tensor(wu)).sum() + (vh * vh * lib.tensor(wv)).sum()

    (sa, ta) = _pair(A)
    su, ss, svh = SL.svd(sa, full_matrices=False)
    tu, ts, tvh = torch.linalg.svd(ta, full_matrices=False)
    _close(ss.detach(), ts)
    sl, tl = loss(T, su, ss, svh), loss(torch, tu, ts, tvh)
    _close(sl.detach(), tl)
    sl.backward()
    tl.backward()
    _close(sa.grad, ta.grad, rtol=1e-6)
    # full_matrices=True (round 35: was values only): the columns past k leave the gradient
    m, n = shape[-2:]
    wuf, wvf = R.standard_normal(shape[:-1] + (m,)), R.standard_normal(shape[:-2] + (n, n))
    (sa, ta) = _pair(A)
    grads = []
    for lib, a in ((T, sa), (torch, ta)):
        u, s, vh = (SL if lib is T else torch.linalg).svd(a)
        assert tuple(u.shape) == shape[:-1] + (m,) and tuple(vh.shape) == shape[:-2] + (n, n)
        ((s * s).sum() + (u * u * lib.tensor(wuf)).sum() + (vh * vh * lib.tensor(wvf)).sum()
         ).backward()
        grads.append(a.grad)
    _close(grads[0], grads[1], rtol=1e-6)


@pytest.mark.parametrize("shape", [(4, 4), (2, 6, 3)])
def test_reduced_qr_gradient(shape):
    A = R.standard_normal(shape)
    wq, wr = R.standard_normal(shape), R.standard_normal(shape[:-2] + (shape[-1],) * 2)
    _grad_check(lambda a: (SL.qr(a).Q * T.tensor(wq)).sum((-2, -1)) + (SL.qr(a).R * T.tensor(
        wr)).sum((-2, -1)), lambda a: (torch.linalg.qr(a).Q * torch.tensor(wq)).sum((-2, -1)) + (
        torch.linalg.qr(a).R * torch.tensor(wr)).sum((-2, -1)), A)


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, float("inf")])
def test_cdist_with_zero_distances(p):
    x = R.standard_normal((2, 5, 3))
    y = np.concatenate([x[:, :2], R.standard_normal((2, 4, 3))], axis=1)  # two zero distances
    _grad_check(lambda a, b: skiff.cdist(a, b, p), lambda a, b: torch.cdist(a, b, p), x, y)
    _grad_check(lambda a: skiff.cdist(a, a, p), lambda a: torch.cdist(a, a, p), x)


def test_norms_of_zero_have_zero_gradient():
    x = R.standard_normal((3, 4))
    x[1] = 0.0
    for ord_ in (2, 3.0):
        _grad_check(lambda a, o=ord_: SL.vector_norm(a, o, dim=1),
                    lambda a, o=ord_: torch.linalg.vector_norm(a, o, dim=1), x)
    _grad_check(lambda a: SL.norm(a * 0.0), lambda a: torch.linalg.norm(a * 0.0), x)
    _grad_check(lambda a: SL.matrix_norm(a[None] * 0.0), lambda a: torch.linalg.matrix_norm(
        a[None] * 0.0), x)


@pytest.mark.parametrize("shape,bshape", [((6, 3), (6, 2)), ((2, 3, 5), (2, 3, 4))])
def test_lstsq_full_rank(shape, bshape):
    A, B = R.standard_normal(shape), R.standard_normal(bshape)
    _grad_check(lambda a, b: SL.lstsq(a, b).solution,
                lambda a, b: torch.linalg.lstsq(a, b, driver="gelsd").solution, A, B)
    assert SL.lstsq(T.tensor(A), T.tensor(B)).rank.numpy().tolist() == torch.linalg.lstsq(
        torch.tensor(A), torch.tensor(B)).rank.numpy().tolist()
    low = A.copy()
    if shape[-2] >= shape[-1]:
        low[..., -1] = low[..., 0]  # two equal columns
    else:
        low[..., -1, :] = low[..., 0, :]  # two equal rows
    with pytest.raises(ValueError, match="pinv"):
        SL.lstsq(T.tensor(low), T.tensor(B))


def test_pixel_and_adaptive_max_functions_are_under_F():
    """``F.pixel_shuffle`` / ``F.pixel_unshuffle`` / ``F.adaptive_max_pool2d``, as torch's."""
    import torch

    import skiff.nn.functional as F

    x = np.random.default_rng(3).standard_normal((2, 8, 4, 5))
    tx = torch.tensor(x)
    np.testing.assert_allclose(F.pixel_shuffle(skiff.tensor(x), 2).numpy(),
                               torch.nn.functional.pixel_shuffle(tx, 2).numpy())
    np.testing.assert_allclose(F.pixel_unshuffle(skiff.tensor(x[..., :4]), 2).numpy(),
                               torch.nn.functional.pixel_unshuffle(tx[..., :4], 2).numpy())
    np.testing.assert_allclose(F.adaptive_max_pool2d(skiff.tensor(x), (2, 3)).numpy(),
                               torch.nn.functional.adaptive_max_pool2d(tx, (2, 3)).numpy())
