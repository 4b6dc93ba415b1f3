"""Round 44 (h12): a torch user's calls, each against torch 2.13 on the CPU (float64 unless
said): double backward of ``cumprod`` and of ``special``'s ``i0``/``i0e``/``i1``/``i1e``/
``log_ndtr``/``ndtri``/``erfcx``/``entr``; ``adaptive_max_pool1d/2d/3d(return_indices=True)``;
``x.untyped_storage()``; ``clone()`` keeping a dense tensor's strides and ``conv2d`` a
channels-last layout; ``grid_sample`` on 5-D volumes; a learned attention mask through
``MultiheadAttention(add_bias_kv, add_zero_attn)``; ``cdist(p=0)`` in the graph; ``xlogy``
promoting before its log (``Gamma.log_prob`` of a float32 value); ``linalg.lstsq``'s drivers;
KL of ``LogNormal``/``HalfCauchy``/``LogisticNormal`` pairs and ``Binomial.entropy``."""

from __future__ import annotations

import numpy as np
import pytest

import skiff

torch = pytest.importorskip("torch")

R = np.random.default_rng(4412)


def _np(t):
    return np.asarray(t.detach().numpy())


def _close(a, b, rtol=1e-10, atol=1e-12):
    np.testing.assert_allclose(_np(a), _np(b), rtol=rtol, atol=atol)


# ---- double backward ---------------------------------------------------------------------------
def _three(lib, fn, vals):
    """The first three derivatives of sum(fn(a)) (the second of sum(g^2), the third its sum)."""
    a = lib.tensor(np.asarray(vals), requires_grad=True)
    (g,) = lib.autograd.grad(fn(lib, a).sum(), a, create_graph=True)
    (h,) = lib.autograd.grad((g * g).sum(), a, create_graph=True)
    (k,) = lib.autograd.grad(h.sum(), a)
    return g, h, k


VALS = [0.3, -0.5, 0.9, 1.7, -2.2, 0.0]
SPECIAL = {
    "i0": VALS, "i0e": VALS, "i1": VALS, "i1e": VALS[:-1], "log_ndtr": VALS, "erfcx": VALS,
    "ndtri": [0.05, 0.2, 0.5, 0.7, 0.95], "entr": [0.1, 0.6, 1.0, 2.7],
}


@pytest.mark.parametrize("name", sorted(SPECIAL))
def test_double_backward_of_special(name):
    def fn(lib, a):
        return getattr(lib.special, name)(a)

    for mine, ref in zip(_three(skiff, fn, SPECIAL[name]), _three(torch, fn, SPECIAL[name])):
        _close(mine, ref, rtol=1e-9)


@pytest.mark.parametrize("vals", [VALS[:-1] + [1.1], VALS, [0.0, 1.5, 0.0, -0.7, 2.0, 0.4]])
def test_double_backward_of_cumprod(vals):
    def fn(lib, a):  # along each axis of a (2, 3), weighted so the lanes differ
        m = a.reshape(2, 3)
        w = lib.tensor(np.arange(1.0, 7.0).reshape(2, 3))
        return (lib.cumprod(m, 1) * w).sum() + (lib.cumprod(m, 0) * w).sum()

    for mine, ref in zip(_three(skiff, fn, vals), _three(torch, fn, vals)):
        _close(mine, ref, rtol=1e-9)


@pytest.mark.parametrize("f, a, b", [
    (lambda lib, a, b: lib.atan2(a, b), [0.3, -0.5, 0.7, 2.0], [1.0, 0.2, -0.4, -1.5]),
    (lambda lib, a, b: lib.atan2(a.reshape(2, 2), b.reshape(2, 2)[:1]), [0.3, -0.5, 0.7, 2.0],
     [1.0, 0.2, 0.4, -1.5]),
    (lambda lib, a, b: lib.atan2(a, lib.tensor(2.0, dtype=lib.float64)) * b,
     [0.3, -0.5, 0.0, 2.0], [1.0, 0.2, 0.0, -1.5]),
])
def test_double_backward_of_atan2(f, a, b):
    def run(lib):
        at = lib.tensor(np.asarray(a), requires_grad=True)
        bt = lib.tensor(np.asarray(b), requires_grad=True)
        ga, gb = lib.autograd.grad(f(lib, at, bt).sum(), (at, bt), create_graph=True)
        h = (ga * ga).sum() + (ga * gb).sum() + (gb ** 3).sum()
        ha, hb = lib.autograd.grad(h, (at, bt), create_graph=True)
        return (ga, gb, ha, hb) + lib.autograd.grad(ha.sum() + hb.sum(), (at, bt))

    for mine, ref in zip(run(skiff), run(torch)):
        _close(mine, ref, rtol=1e-12)
    # at a = b = 0 the first derivatives are 0 (torch's); the higher ones 0 too (torch's nan)
    z = skiff.tensor(np.zeros(2), requires_grad=True)
    (g,) = skiff.autograd.grad(skiff.atan2(z, z * 0).sum(), z, create_graph=True)
    (h,) = skiff.autograd.grad((g * g).sum() + g.sum(), z)
    assert np.isfinite(h.numpy()).all()


def test_categorical_mean_is_nan():
    for lib in (skiff, torch):
        d = lib.distributions.Categorical(lib.tensor(np.array([[0.3, 0.7], [0.5, 0.5]])))
        assert tuple(d.mean.shape) == tuple(d.variance.shape) == (2,)
        assert np.isnan(_np(d.mean)).all() and np.isnan(_np(d.stddev)).all()
        assert str(d.mean.dtype).endswith("float64")


# ---- adaptive max pooling with indices -----------------------------------------------------------
@pytest.mark.parametrize("fn, shape, out", [
    ("adaptive_max_pool1d", (2, 3, 7), 3),
    ("adaptive_max_pool2d", (2, 3, 7, 5), (3, 2)),
    ("adaptive_max_pool2d", (3, 6, 4), (4, None)),
    ("adaptive_max_pool3d", (1, 2, 5, 4, 6), (2, 3, 4)),
])
def test_adaptive_max_pool_indices(fn, shape, out):
    x = R.standard_normal(shape)
    x[..., 0] = x[..., 1]  # ties: the first one, as torch's
    w = None
    res = []
    for lib in (skiff, torch):
        xt = lib.tensor(x, requires_grad=True)
        v, i = getattr(lib.nn.functional, fn)(xt, out, return_indices=True)
        w = R.standard_normal(tuple(v.shape)) if w is None else w
        (v * lib.tensor(w)).sum().backward()
        res.append((v, i, xt.grad))
    (v, i, g), (tv, ti, tg) = res
    _close(v, tv)
    _close(g, tg)
    np.testing.assert_array_equal(i.numpy(), ti.numpy())
    assert str(i.dtype) == "int64"
    dims = int(fn[-2])
    _, mi = getattr(skiff.nn, f"AdaptiveMaxPool{dims}d")(out, return_indices=True)(
        skiff.tensor(x))
    np.testing.assert_array_equal(mi.numpy(), ti.numpy())


# ---- storage and layouts -------------------------------------------------------------------------
def test_untyped_storage():
    x = np.arange(12.0).reshape(3, 4)
    s, ts = skiff.tensor(x).untyped_storage(), torch.tensor(x).untyped_storage()
    assert s.nbytes() == ts.nbytes() == s.size() == len(s) == 96 and s.element_size() == 1
    assert s.tolist() == ts.tolist() and s[9] == ts[9] and s.device == "cpu"
    t = skiff.tensor(x)
    ptr = t.untyped_storage().data_ptr()
    assert t[1:].untyped_storage().data_ptr() == t.t().untyped_storage().data_ptr() == ptr
    assert t.clone().untyped_storage().data_ptr() != ptr
    assert isinstance(t.untyped_storage(), skiff.UntypedStorage)


@pytest.mark.parametrize("make", [
    lambda lib, a: a.contiguous(memory_format=lib.channels_last),
    lambda lib, a: a.transpose(1, 3),
    lambda lib, a: a.permute(3, 1, 2, 0),
    lambda lib, a: a[:, ::2],  # not dense: row-major, as torch's
])
def test_clone_keeps_dense_strides(make):
    x = R.standard_normal((2, 3, 4, 5))
    out = []
    for lib in (skiff, torch):
        xt = lib.tensor(x, requires_grad=True)
        c = make(lib, xt).clone()
        (c * lib.tensor(np.arange(120.0)[:c.numel()].reshape(tuple(c.shape)))).sum().backward()
        out.append((c.stride(), c, xt.grad))
    assert out[0][0] == out[1][0]
    _close(out[0][1], out[1][1])
    _close(out[0][2], out[1][2])


def test_conv2d_keeps_channels_last():
    x, w = R.standard_normal((2, 3, 6, 5)), R.standard_normal((4, 3, 3, 3))
    out = []
    for lib in (skiff, torch):
        xt, wt = lib.tensor(x, requires_grad=True), lib.tensor(w, requires_grad=True)
        xc = xt.contiguous(memory_format=lib.channels_last)
        y = lib.nn.functional.conv2d(xc, wt, padding=1)
        y2 = lib.nn.functional.conv2d(xc, wt, dilation=2, padding=2)
        (y * y).sum().backward()
        out.append((y.stride(), y2.is_contiguous(memory_format=lib.channels_last), y,
                    xt.grad, wt.grad))
    assert out[0][:2] == out[1][:2] == (out[1][0], True)
    for a, b in zip(out[0][2:], out[1][2:]):
        _close(a, b)


# ---- grid_sample on volumes ----------------------------------------------------------------------
@pytest.mark.parametrize("mode, pad, align", [
    ("bilinear", "zeros", False), ("bilinear", "border", True),
    ("bilinear", "reflection", False), ("nearest", "reflection", True),
])
def test_grid_sample_volume(mode, pad, align):
    x = R.standard_normal((2, 3, 4, 5, 6))
    g = R.uniform(-1.3, 1.3, (2, 3, 2, 4, 3))
    w = R.standard_normal((2, 3, 3, 2, 4))
    out = []
    for lib in (skiff, torch):
        xt, gt = lib.tensor(x, requires_grad=True), lib.tensor(g, requires_grad=True)
        y = lib.nn.functional.grid_sample(xt, gt, mode=mode, padding_mode=pad,
                                          align_corners=align)
        (y * lib.tensor(w)).sum().backward()
        out.append((y, xt.grad, gt.grad))
    for a, b in zip(*out):
        _close(a, b)


def test_spatial_transformer_3d():
    th = R.standard_normal((2, 3, 4)) * 0.3 + np.concatenate([np.eye(3), np.zeros((3, 1))], 1)
    x = R.standard_normal((2, 3, 4, 5, 6))
    out = []
    for lib in (skiff, torch):
        tt, xt = lib.tensor(th, requires_grad=True), lib.tensor(x, requires_grad=True)
        grid = lib.nn.functional.affine_grid(tt, (2, 3, 3, 4, 5), align_corners=False)
        y = lib.nn.functional.grid_sample(xt, grid, align_corners=False)
        (y ** 2).sum().backward()
        out.append((y, tt.grad, xt.grad))
    for a, b in zip(*out):
        _close(a, b)
    with pytest.raises(ValueError, match="bicubic"):
        skiff.nn.functional.grid_sample(skiff.tensor(x), skiff.tensor(np.zeros((2, 1, 1, 1, 3))),
                                        mode="bicubic")


# ---- attention -----------------------------------------------------------------------------------
@pytest.mark.parametrize("bias_kv, zero_attn, mask_shape", [
    (True, False, (3, 4)), (False, True, (4, 3, 4)), (True, True, (3, 4)),
])
def test_learned_mask_through_extra_keys(bias_kv, zero_attn, mask_shape):
    E, h, L, S, N = 8, 2, 3, 4, 2
    q, k, v = (R.standard_normal((n, N, E)) for n in (L, S, S))
    mask = R.standard_normal(mask_shape)
    out, state = [], None
    for lib in (skiff, torch):
        m = lib.nn.MultiheadAttention(E, h, add_bias_kv=bias_kv, add_zero_attn=zero_attn,
                                      dtype=lib.float64)
        if state is None:
            state = {n: _np(p) for n, p in m.state_dict().items()}
        else:
            m.load_state_dict({n: torch.tensor(p) for n, p in state.items()})
        mt = lib.tensor(mask, requires_grad=True)
        y, w = m(lib.tensor(q), lib.tensor(k), lib.tensor(v), attn_mask=mt)
        (y ** 2).sum().backward()
        out.append((y, w, mt.grad))
    assert out[0][2] is not None
    for a, b in zip(*out):
        _close(a, b)


# ---- numerics ------------------------------------------------------------------------------------
def test_cdist_p0_is_in_the_graph():
    a, b = R.standard_normal((2, 4, 3)), R.standard_normal((2, 5, 3))
    a[0, 0] = b[0, 1]
    out = []
    for lib in (skiff, torch):
        at, bt = lib.tensor(a, requires_grad=True), lib.tensor(b, requires_grad=True)
        d = lib.cdist(at, bt, p=0)
        d.sum().backward()
        out.append((d, at.grad, bt.grad))
    for x, y in zip(*out):
        _close(x, y)


def test_xlogy_promotes_before_the_log():
    out = []
    for lib in (skiff, torch):
        a = lib.tensor(np.array([1.0, -0.3, 0.0]), requires_grad=True)
        y = lib.tensor([0.5, 2.0, 3.0], requires_grad=True)  # float32
        r = lib.xlogy(a, y)
        r.sum().backward()
        g = lib.distributions.Gamma(lib.tensor(np.array([2.0, 0.7])),
                                    lib.tensor(np.array([1.5, 3.0])))
        out.append((r, a.grad, y.grad, g.log_prob(lib.tensor([0.5, 2.0]))))
        assert str(r.dtype).endswith("float64") and str(y.grad.dtype).endswith("float32")
    for x, y in zip(*out):
        _close(x, y, rtol=1e-13)


@pytest.mark.parametrize("driver", ["gels", "gelsy", "gelsd", "gelss"])
def test_lstsq_drivers(driver):
    cases = [R.standard_normal((2, 6, 3)), R.standard_normal((3, 5)), R.standard_normal((6, 3))]
    rhs = [R.standard_normal((2, 6, 2)), R.standard_normal((3, 2)), R.standard_normal(6)]
    for a, b in zip(cases, rhs):
        out = []
        for lib in (skiff, torch):
            at = lib.tensor(a, requires_grad=True)
            r = lib.linalg.lstsq(at, lib.tensor(b), driver=driver)
            loss = r.solution.abs().sum() + (r.residuals.sum() if r.residuals.numel() else 0)
            loss.backward()
            out.append((r.solution, r.residuals, r.rank, r.singular_values, at.grad))
        for x, y in zip(*out):
            assert tuple(x.shape) == tuple(y.shape)
            _close(x, y)
    with pytest.raises(RuntimeError, match="should be one of"):
        skiff.linalg.lstsq(skiff.tensor(cases[0]), skiff.tensor(rhs[0]), driver="gelsx")


def test_kl_of_transformed_pairs_and_binomial_entropy():
    def pairs(lib):
        D = lib.distributions

        def t(v):
            return lib.tensor(np.array(v), requires_grad=True)

        p1 = [t([0.3, -1.0]), t([1.5, 0.4])]
        p2 = [t([1.5, 0.4])]
        p3 = [t([0.3, -1.0]), t([1.5, 0.4])]
        kls = [D.kl_divergence(D.LogNormal(*p1), D.LogNormal(t([0.0, 1.0]), t([1.0, 2.0]))),
               D.kl_divergence(D.HalfCauchy(*p2), D.HalfCauchy(t([1.0, 2.0]))),
               D.kl_divergence(D.LogisticNormal(*p3),
                               D.LogisticNormal(t([0.0, 1.0]), t([1.0, 2.0])))]
        pb = t([0.3, 0.6])
        lg = t([0.3, -0.6])
        ent = [D.Binomial(5, pb).entropy(),
               D.Binomial(lib.tensor(np.array([[3.0], [3.0]])), logits=lg).entropy()]
        total = sum(k.sum() for k in kls + ent)
        total.backward()
        return kls + ent + [x.grad for x in p1 + p2 + p3 + [pb, lg]]

    for a, b in zip(pairs(skiff), pairs(torch)):
        assert tuple(a.shape) == tuple(b.shape)
        _close(a, b)
    with pytest.raises(NotImplementedError, match="Inhomogeneous"):
        skiff.distributions.Binomial(skiff.tensor([2.0, 3.0]), skiff.tensor([0.3, 0.6])).entropy()


def test_cov_weights_complex_and_one_variable():
    x = R.standard_normal((3, 5))
    xc = x + 1j * R.standard_normal((3, 5))
    fw, aw = [1, 2, 1, 3, 2], np.array([0.5, 1.0, 2.0, 1.0, 0.3])
    res = []
    for lib in (skiff, torch):
        out = []
        for kw in ({}, dict(fweights=lib.tensor(fw)), dict(aweights=lib.tensor(aw), correction=2),
                   dict(fweights=lib.tensor(fw), aweights=lib.tensor(aw)),
                   dict(fweights=lib.tensor(fw), aweights=lib.tensor(aw), correction=0)):
            xt = lib.tensor(x, requires_grad=True)
            c = lib.cov(xt, **kw)
            (c * lib.tensor(np.arange(9.0).reshape(3, 3))).sum().backward()
            out += [c, xt.grad, lib.cov(lib.tensor(xc), **kw)]
        v = lib.tensor(np.array([1.0, 2.0, 4.0, 7.0]))
        out += [lib.cov(v), lib.corrcoef(v), lib.cov(v[None]), lib.corrcoef(lib.tensor(xc))]
        res.append(out)
    for a, b in zip(*res):
        assert tuple(a.shape) == tuple(b.shape)
        _close(a, b)
    with pytest.raises(RuntimeError, match="fweights to have integral dtype"):
        skiff.cov(skiff.tensor(x), fweights=skiff.tensor([1.5, 1, 1, 1, 1]))
    with pytest.raises(RuntimeError, match="aweights cannot be negative"):
        skiff.cov(skiff.tensor(x), aweights=skiff.tensor([1.0, -1, 1, 1, 1]))


def test_histogramdd():
    x = R.standard_normal((40, 3))
    x[0] = [0.0, 0.5, -0.5]  # on interior edges
    res = []
    for lib in (skiff, torch):
        xt = lib.tensor(x)
        out = []
        for kw in (dict(bins=[3, 2, 4], range=[-2.0, 2.0, -2.0, 2.0, -1.0, 1.0]),
                   dict(bins=2, weight=lib.tensor(np.arange(40.0)), density=True),
                   dict(bins=[lib.tensor(np.array([-1.0, 0.0, 1.0, 3.0])),
                              lib.tensor(np.array([-2.0, 0.5, 2.0])),
                              lib.tensor(np.array([-3.0, 3.0]))])):
            r = lib.histogramdd(xt, **kw)
            out += [r.hist, *r.bin_edges]
        r = lib.histogramdd(lib.tensor(x.reshape(4, 10, 3)), bins=3)
        res.append(out + [r.hist, *r.bin_edges])
    for a, b in zip(*res):
        assert tuple(a.shape) == tuple(b.shape) and str(a.dtype) == str(b.dtype).split(".")[-1]
        _close(a, b)


def test_module_odds_and_ends():
    res = []
    for lib in (skiff, torch):
        ident = lib.nn.Identity(54, unused_argument1=0.1, unused_argument2=False)
        x = lib.tensor(R.standard_normal((2, 3)))
        pd = lib.nn.ParameterDict({"x": lib.nn.Parameter(lib.ones(1))})
        pd.update({"y": lib.zeros(2)})
        pd.update([("z", lib.ones(3))])
        popped = pd.pop("x")
        pd.setdefault("w", lib.zeros(1))
        key, _ = pd.popitem()
        res.append((ident(x) is x, list(pd), type(pd["y"]).__name__, key, pd.get("nope", 5),
                    list(pd.copy()), list(reversed(pd)), len(list(pd.parameters())),
                    type(popped).__name__, callable(lib.nn.utils.fusion.fuse_conv_bn_eval)))
    assert res[0] == res[1]
    conv = skiff.nn.Conv2d(3, 4, 3, dtype=skiff.float64).eval()
    bn = skiff.nn.BatchNorm2d(4, dtype=skiff.float64).eval()
    bn.running_mean.data[:] = skiff.tensor([0.1, -0.2, 0.3, 0.0], dtype=skiff.float64)
    fused = skiff.nn.utils.fusion.fuse_conv_bn_eval(conv, bn)
    x = skiff.tensor(R.standard_normal((1, 3, 6, 6)))
    _close(fused(x), bn(conv(x)))


def test_views_of_a_conj_keep_its_mark():
    def marks(lib):
        z = lib.tensor([1 + 2j, 3j, -1.0 + 0.5j])
        c = z.conj()
        return [c.is_conj(), c[0:2].is_conj(), c.detach().is_conj(), c.reshape(3, 1).is_conj(),
                c.view(3).is_conj(), c.unsqueeze(0).is_conj(), c.expand(2, 3).is_conj(),
                c.clone().is_conj(), (c + 1).is_conj(), c.resolve_conj().is_conj(),
                c.conj().is_conj(), c[0:2].conj().is_conj(), c[0:2].resolve_conj().is_conj(),
                z[0:2].is_conj(), lib.tensor([1.0, 2.0]).conj().is_conj()]

    assert marks(skiff) == marks(torch)
    c = skiff.tensor([1 + 2j, 3j]).conj()
    np.testing.assert_array_equal(c[0:1].resolve_conj().numpy(), [1 - 2j])
