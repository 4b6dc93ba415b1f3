"""Round 34 (h4): what a torch user's UNet / ViT / CNN+LSTM autocast programs met, against
torch 2.13 on CPU: unbatched (C, H, W) convolutions and pooling, ``ConvTranspose2d(x,
output_size=...)``, batch norm on bfloat16 input, ``Module.bfloat16()``."""

import numpy as np
import pytest

import skiff
import skiff.nn.functional as SF

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def _s(t, grad=False):
    s = skiff.tensor(t.detach().numpy())
    return s.requires_grad_() if grad else s


def _copy(tm, sm):
    sm.load_state_dict({k: _s(v) for k, v in tm.state_dict().items()})


UNBATCHED = {
    "conv2d": (lambda F, x, w: F.conv2d(x, w, padding=1, stride=2), (4, 9, 9), (6, 4, 3, 3)),
    "conv2d_dw": (lambda F, x, w: F.conv2d(x, w, padding=1, groups=4), (4, 8, 8), (4, 1, 3, 3)),
    "conv2d_3x3": (lambda F, x, w: F.conv2d(x, w, padding=1), (16, 6, 6), (16, 16, 3, 3)),
    "conv_transpose2d": (lambda F, x, w: F.conv_transpose2d(x, w, stride=2, padding=1,
                                                            output_padding=1), (4, 5, 5),
                         (4, 3, 3, 3)),
    "conv_transpose1d": (lambda F, x, w: F.conv_transpose1d(x, w, stride=2), (4, 7), (4, 3, 3)),
    "max_pool2d": (lambda F, x, w: F.max_pool2d(x * w.sum(), 2), (3, 6, 6), (1,)),
}


@pytest.mark.parametrize("name", sorted(UNBATCHED))
def test_unbatched_input_values_and_gradients(name):
    f, xs, ws = UNBATCHED[name]
    g = torch.Generator().manual_seed(0)
    x = torch.randn(*xs, dtype=torch.float64, generator=g, requires_grad=True)
    w = torch.randn(*ws, dtype=torch.float64, generator=g, requires_grad=True)
    sx, sw = _s(x, True), _s(w, True)
    t = f(TF, x, w)
    s = f(SF, sx, sw)
    assert tuple(s.shape) == tuple(t.shape)
    np.testing.assert_allclose(s.detach().numpy(), t.detach().numpy(), rtol=1e-12, atol=1e-12)
    gw = torch.randn(t.shape, dtype=torch.float64, generator=g)
    (t * gw).sum().backward()
    (s * _s(gw)).sum().backward()
    np.testing.assert_allclose(sx.grad.numpy(), x.grad.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(sw.grad.numpy(), w.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_conv2d_bad_rank_message():
    with pytest.raises(ValueError, match="3D \\(unbatched\\) or 4D"):
        SF.conv2d(skiff.zeros(2, 3), skiff.zeros(1, 1, 1, 1))


def _convt_pair(**kw):
    torch.manual_seed(0)
    t = torch.nn.ConvTranspose2d(4, 3, 3, **kw).double()
    s = skiff.nn.ConvTranspose2d(4, 3, 3, dtype=skiff.float64, **kw)
    _copy(t, s)
    return t, s


@pytest.mark.parametrize("size", [None, (9, 9), (10, 10), [2, 3, 10, 9]])
def test_conv_transpose2d_output_size(size):
    t, s = _convt_pair(stride=2, padding=1)
    x = torch.randn(2, 4, 5, 5, dtype=torch.float64)
    a, b = t(x, output_size=size), s(_s(x), output_size=size)
    assert tuple(b.shape) == tuple(a.shape)
    np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=1e-12, atol=1e-13)
    if size is not None and len(size) == 4:
        with pytest.raises(ValueError, match="must have 2 or 3 elements"):
            t(x[0], output_size=size)
        with pytest.raises(ValueError, match="must have 2 or 3 elements"):
            s(_s(x[0]), output_size=size)
        return
    a, b = t(x[0], output_size=size), s(_s(x[0]), output_size=size)  # unbatched
    np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=1e-12, atol=1e-13)


def test_conv_transpose2d_output_size_out_of_range():
    t, s = _convt_pair(stride=2, padding=1)
    x = torch.randn(2, 4, 5, 5, dtype=torch.float64)
    with pytest.raises(ValueError, match="valid sizes range"):
        t(x, output_size=(11, 11))
    with pytest.raises(ValueError, match="valid sizes range from 9 to 10"):
        s(_s(x), output_size=(11, 11))


@pytest.mark.parametrize("shape,kind", [((8, 4, 16), "BatchNorm1d"), ((4, 4, 5, 5), "BatchNorm2d")])
def test_batch_norm_bfloat16_input_as_torch(shape, kind):
    """A bf16 conv's output under autocast meets a float32 BatchNorm: torch computes in
    float32 and gives bf16 back; gradients in each leaf's dtype, running stats float32."""
    torch.manual_seed(0)
    x = torch.randn(*shape).bfloat16().requires_grad_()
    tb, sb = getattr(torch.nn, kind)(4), getattr(skiff.nn, kind)(4)
    with torch.no_grad():
        tb.weight.uniform_(0.5, 1.5)
        tb.bias.uniform_(-1, 1)
    _copy(tb, sb)
    sx = skiff.tensor(x.detach().float().numpy()).to(skiff.bfloat16).requires_grad_()
    outs = []
    for m, xx in ((tb, x), (sb, sx)):
        y = m(xx)
        (y.float() ** 2).sum().backward()
        outs.append(y)
    assert str(outs[1].dtype) == "bfloat16" and str(sx.grad.dtype) == "bfloat16"
    assert str(sb.weight.grad.dtype) == "float32" and str(sb.running_mean.dtype) == "float32"
    np.testing.assert_array_equal(outs[1].detach().float().numpy(),
                                  outs[0].detach().float().numpy())
    np.testing.assert_allclose(sx.grad.float().numpy(), x.grad.float().numpy(), atol=2e-3)
    np.testing.assert_allclose(sb.weight.grad.numpy(), tb.weight.grad.numpy(), rtol=1e-4)
    np.testing.assert_allclose(sb.bias.grad.numpy(), tb.bias.grad.numpy(), rtol=1e-4)
    np.testing.assert_allclose(sb.running_var.numpy(), tb.running_var.numpy(), rtol=1e-6)
    tb.eval()
    sb.eval()
    np.testing.assert_array_equal(sb(sx).detach().float().numpy(),
                                  tb(x).detach().float().numpy())


def test_module_bfloat16_and_back():
    torch.manual_seed(0)
    t = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3))
    s = skiff.nn.Sequential(skiff.nn.Linear(4, 3), skiff.nn.BatchNorm1d(3))
    _copy(t, s)
    assert s.bfloat16() is s
    t.bfloat16()
    for (k, a), (k2, b) in zip(t.state_dict().items(), s.state_dict().items()):
        assert k == k2 and str(b.dtype) == str(a.dtype).replace("torch.", "")
        np.testing.assert_array_equal(b.float().numpy(), a.float().numpy())
    s.float()
    assert all(str(p.dtype) == "float32" for p in s.parameters())
    assert str(s[1].num_batches_tracked.dtype) == "int64"


@pytest.mark.parametrize("case", ["conv3d", "conv2d_unbatched", "conv3d_grad",
                                  "conv3d_ensemble"])
def test_vmap_conv3d_and_unbatched_conv_batched_as_torch_func(case):
    from skiff.func import grad as sgrad
    from skiff.func import vmap as svmap
    from skiff.kernels.train.core import vmap_r30 as V

    g = torch.Generator().manual_seed(4)
    if case == "conv2d_unbatched":  # vmap hands the conv (C, H, W) samples
        x = torch.randn(5, 4, 6, 6, dtype=torch.float64, generator=g)
        w = torch.randn(3, 4, 3, 3, dtype=torch.float64, generator=g)

        def f(F):
            return lambda xx, ww: F.conv2d(xx, ww, padding=1)
        tf, sf = torch.func.vmap(f(TF), in_dims=(0, None)), svmap(f(SF), in_dims=(0, None))
        args = (x, w)
    else:
        x = torch.randn(4, 2, 2, 4, 4, 4, dtype=torch.float64, generator=g)
        w = torch.randn(3, 2, 3, 3, 3, dtype=torch.float64, generator=g)
        if case == "conv3d":
            def f(F):
                return lambda xx, ww: F.conv3d(xx, ww, padding=1)
            tf, sf = torch.func.vmap(f(TF), in_dims=(0, None)), svmap(f(SF), in_dims=(0, None))
            args = (x, w)
        elif case == "conv3d_ensemble":  # a weight, bias and input per model, 2 groups
            w = torch.randn(4, 4, 1, 3, 3, 3, dtype=torch.float64, generator=g)
            b = torch.randn(4, 4, dtype=torch.float64, generator=g)

            def f(F):
                return lambda xx, ww, bb: F.conv3d(xx, ww, bb, stride=(1, 2, 1), groups=2)
            tf, sf = torch.func.vmap(f(TF)), svmap(f(SF))
            args = (x, w, b)
        else:  # per-sample weight gradients
            def f(F):
                return lambda ww, xx: F.conv3d(xx, ww, padding=1).square().sum()
            tf = torch.func.vmap(torch.func.grad(f(TF)), in_dims=(None, 0))
            sf = svmap(sgrad(f(SF)), in_dims=(None, 0))
            args = (w, x)
    V.LOOPED.clear()
    s = sf(*(_s(a) for a in args))
    assert not V.LOOPED, dict(V.LOOPED)
    t = tf(*args)
    assert tuple(s.shape) == tuple(t.shape)
    np.testing.assert_allclose(s.numpy(), t.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("shape,axis,sort", [((4, 5, 6), 1, False), ((7, 3), 0, True),
                                             ((2, 3, 9), 2, False), ((5,), 0, True)])
def test_index_select_gradient_segment_sums_match_add_at(shape, axis, sort):
    from skiff.kernels.train.core.ops_shape import scatter_add

    rng = np.random.default_rng(5)
    n = shape[axis]
    idx = rng.integers(-n, n, 13)
    if sort:
        idx = np.sort(idx % n)
    vshape = list(shape)
    vshape[axis] = 13
    v = rng.standard_normal(vshape)
    index = (slice(None),) * axis + (idx,)
    want = np.zeros(shape)
    np.add.at(want, index, v)
    np.testing.assert_allclose(scatter_add(np.zeros(shape), index, v), want, atol=1e-14)
    x = torch.randn(shape, dtype=torch.float64, requires_grad=True)
    sx = _s(x, True)
    ti = torch.tensor(idx % n)
    (x.index_select(axis, ti) * torch.tensor(v)).sum().backward()
    (sx.index_select(axis, _s(ti)) * _s(torch.tensor(v))).sum().backward()
    np.testing.assert_allclose(sx.grad.numpy(), x.grad.numpy(), atol=1e-14)


@pytest.mark.parametrize("keep", [0, 8 << 20])
def test_small_conv_stack_with_kept_columns_matches_torch(keep, monkeypatch):
    from skiff.kernels.train.core.nn.functional import conv as C

    monkeypatch.setattr(C, "KEEP_COLS", keep)
    g = torch.Generator().manual_seed(6)
    x = torch.randn(2, 3, 9, 9, dtype=torch.float64, generator=g, requires_grad=True)
    ws = [torch.randn(8, 3, 3, 3, dtype=torch.float64, generator=g, requires_grad=True),
          torch.randn(4, 8, 5, 5, dtype=torch.float64, generator=g, requires_grad=True)]
    sx, sws = _s(x, True), [_s(w, True) for w in ws]
    for F, xx, (w1, w2) in ((TF, x, ws), (SF, sx, sws)):
        h = F.conv2d(xx, w1, padding=1).tanh()
        y = F.interpolate(F.conv2d(h, w2, stride=2, padding=2), scale_factor=2,
                          mode="bilinear", align_corners=False)
        (y * y).sum().backward()
    np.testing.assert_allclose(sx.grad.numpy(), x.grad.numpy(), rtol=1e-11, atol=1e-11)
    for s, t in zip(sws, ws):
        np.testing.assert_allclose(s.grad.numpy(), t.grad.numpy(), rtol=1e-11, atol=1e-11)


@pytest.mark.parametrize("cin,k,stride,dtype", [(1, 3, 1, "float64"), (3, 3, 2, "float64"),
                                                (1, 5, 1, "float32"), (3, 3, 1, "float32")])
def test_first_layer_chunked_products_match_torch(cin, k, stride, dtype):
    """Columns of <= SMALL_K rows multiply in CHUNK pieces (first layers on 1-3 channels)."""
    from skiff.kernels.train.core.nn.functional import conv as C

    g = torch.Generator().manual_seed(7)
    tdt = getattr(torch, dtype)
    x = torch.randn(9, cin, 40, 41, dtype=tdt, generator=g)
    w = torch.randn(6, cin, k, k, dtype=tdt, generator=g, requires_grad=True)
    b = torch.randn(6, dtype=tdt, generator=g, requires_grad=True)
    assert cin * k * k <= C.SMALL_K
    sw, sb = _s(w, True), _s(b, True)
    ty = TF.conv2d(x, w, b, stride=stride, padding=k // 2)
    sy = SF.conv2d(_s(x), sw, sb, stride=stride, padding=k // 2)
    assert sy.shape[0] * sy.shape[2] * sy.shape[3] > 2 * C.CHUNK  # the chunked path
    gy = torch.randn(ty.shape, dtype=tdt, generator=g)
    (ty * gy).sum().backward()
    (sy * _s(gy)).sum().backward()
    tol = 1e-12 if dtype == "float64" else 2e-5
    np.testing.assert_allclose(sy.detach().numpy(), ty.detach().numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(sw.grad.numpy(), w.grad.numpy(), rtol=tol,
                               atol=tol * float(w.grad.abs().max()))
    np.testing.assert_allclose(sb.grad.numpy(), b.grad.numpy(), rtol=tol,
                               atol=tol * float(b.grad.abs().max()))


SHAPE_MISTAKES = {
    "linear": (lambda L: L.nn.Linear(8, 6)(L.ones(4, 5)),
               r"mat1 and mat2 shapes cannot be multiplied \(4x5 and 8x6\)"),
    "matmul": (lambda L: L.ones(2, 3) @ L.ones(2, 3),
               r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 2x3\)"),
    "conv2d": (lambda L: L.nn.Conv2d(3, 4, 3)(L.ones(1, 4, 8, 8)),
               r"Given groups=1, weight of size \[4, 3, 3, 3\], expected input\[1, 4, 8, 8\] "
               r"to have 3 channels, but got 4 channels instead"),
    "reshape": (lambda L: L.ones(56).reshape(7, 1, 16),
                r"shape '\[7, 1, 16\]' is invalid for input of size 56"),
    "item": (lambda L: L.ones(2).item(), "a Tensor with 2 elements cannot be converted to Scalar"),
    "lstm": (lambda L: L.nn.LSTM(8, 4)(L.ones(5, 2, 7)),
             "input.size\\(-1\\) must be equal to input_size. Expected 8, got 7"),
    "cat": (lambda L: L.cat([L.ones(2, 3), L.ones(2, 4)], 0), ""),
    "batchnorm": (lambda L: L.nn.BatchNorm2d(3)(L.ones(2, 4, 5, 5)), ""),
    "mse": (lambda L: L.nn.functional.mse_loss(L.ones(3, 2), L.ones(3)), ""),
}


@pytest.mark.parametrize("name", sorted(SHAPE_MISTAKES))
def test_shape_mistakes_raise_torch_runtime_error_and_value_error(name):
    """A ported ``except RuntimeError`` catches skiff's shape errors (skiff's own code catches
    ValueError): torch's type and, where it has one, its wording."""
    f, msg = SHAPE_MISTAKES[name]
    with pytest.raises(RuntimeError, match=msg):
        f(torch)
    with pytest.raises(RuntimeError, match=msg) as info:
        f(skiff)
    assert isinstance(info.value, ValueError)
