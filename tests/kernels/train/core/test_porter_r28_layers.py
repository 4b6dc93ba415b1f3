"""Round 28: nn/layers_r28.py (``RReLU``, ``MultiMarginLoss``, ``CTCLoss``, ``LazyLinear``,
``gumbel_softmax``), ``InstanceNorm``'s running statistics and ``InstanceNorm3d``, and the
``inplace=`` arguments torch code passes (``nn.ReLU(inplace=True)``), against torch 2.13 in
float64: values and the gradients of inputs and parameters."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import skiff

RNG = np.random.default_rng(281)


def _np(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t.detach())


def _close(a, b, tol=1e-10):
    a, b = _np(a), _np(b)
    assert a.shape == b.shape
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def _both(fn, *arrays, grad=True):
    """``fn(lib, *tensors)`` in skiff and torch: outputs and input gradients, pairwise."""
    res = []
    for lib in (skiff, torch):
        ts = [lib.tensor(a, requires_grad=grad and a.dtype.kind == "f") for a in arrays]
        out = fn(lib, *ts)
        if grad:
            G = np.cos(np.arange(out.numel())).reshape(tuple(out.shape))
            (out * lib.tensor(G)).sum().backward()
        res.append([out] + [t.grad for t in ts if grad and t.requires_grad])
    for a, b in zip(*res):
        _close(a, b)


@pytest.mark.parametrize("p,margin,weighted,reduction", [
    (1, 1.0, False, "mean"), (2, 0.5, False, "sum"), (1, 2.0, True, "none"),
    (2, 1.0, True, "mean")])
def test_multi_margin_loss(p, margin, weighted, reduction):
    x = RNG.standard_normal((6, 5))
    y = RNG.integers(0, 5, 6)
    w = RNG.uniform(0.5, 2.0, 5)

    def fn(lib, x):
        kw = {"weight": lib.tensor(w)} if weighted else {}
        return lib.nn.MultiMarginLoss(p=p, margin=margin, reduction=reduction, **kw)(
            x, lib.tensor(y))

    _both(fn, x)
    _both(lambda lib, x: lib.nn.functional.multi_margin_loss(x, lib.tensor(y[:1])[0]), x[0])


def test_rrelu_eval_and_training_law():
    x = RNG.standard_normal((4, 7))
    _both(lambda lib, x: lib.nn.RReLU(0.1, 0.4).eval()(x), x)
    _both(lambda lib, x: lib.nn.functional.rrelu(x, training=False), x)
    t = skiff.tensor(x, requires_grad=True)
    y = skiff.nn.RReLU(0.1, 0.4)(t)  # training: a slope per element in [0.1, 0.4]
    y.sum().backward()
    neg = x < 0
    slope = _np(y)[neg] / x[neg]
    assert (slope >= 0.1).all() and (slope <= 0.4).all() and np.ptp(slope) > 0
    np.testing.assert_allclose(_np(t.grad)[neg], slope)
    np.testing.assert_array_equal(_np(y)[~neg], x[~neg])


@pytest.mark.parametrize("reduction,zero_inf", [("mean", False), ("sum", True), ("none", True)])
def test_ctc_loss_module(reduction, zero_inf):
    T, N, C = 9, 3, 5
    logits = RNG.standard_normal((T, N, C))
    tl = np.array([3, 2, 5])
    tg = np.array([[1, 2, 2, 0, 0], [3, 4, 0, 0, 0], [1, 1, 1, 1, 1]])
    # five repeated labels need 9 frames: the third sample is impossible in 8 (zero_infinity
    # makes it 0; without it torch's gradient is nan there and skiff's 0, so it gets 9)
    il = np.array([9, 7, 8 if zero_inf else 9])

    def fn(lib, z):
        lp = z.log_softmax(-1)
        return lib.nn.CTCLoss(blank=0, reduction=reduction, zero_infinity=zero_inf)(
            lp, lib.tensor(tg), lib.tensor(il), lib.tensor(tl))

    _both(fn, logits)


@pytest.mark.parametrize("cls,shape", [("InstanceNorm1d", (3, 2, 7)),
                                       ("InstanceNorm2d", (2, 3, 4, 5)),
                                       ("InstanceNorm3d", (2, 2, 3, 4, 3))])
def test_instance_norm_running_stats(cls, shape):
    c = shape[1]
    ms = {lib: getattr(lib.nn, cls)(c, affine=True, track_running_stats=True, momentum=0.3)
          .double() for lib in (skiff, torch)}
    assert sorted(ms[skiff].state_dict()) == sorted(ms[torch].state_dict())
    with torch.no_grad():
        ms[torch].weight.add_(torch.tensor(RNG.standard_normal(c)))
    ms[skiff].load_state_dict({k: skiff.tensor(v.numpy()) for k, v in
                               ms[torch].state_dict().items()})
    for _step in range(3):
        x = RNG.standard_normal(shape) * 2 + 1
        _both(lambda lib, x: ms[lib](x), x)
        _close(ms[skiff].running_mean, ms[torch].running_mean)
        _close(ms[skiff].running_var, ms[torch].running_var)
    for lib in ms:
        ms[lib].eval()
    _both(lambda lib, x: ms[lib](x), RNG.standard_normal(shape))
    _close(ms[skiff].weight.grad, ms[torch].weight.grad)
    _both(lambda lib, x: lib.nn.InstanceNorm3d(2)(x), RNG.standard_normal((2, 2, 3, 3, 3)))


def test_lazy_linear_materialises_and_loads_torchs_state():
    lz = skiff.nn.LazyLinear(4).double()
    assert lz.has_uninitialized_params() and list(lz.parameters()) == []
    x = RNG.standard_normal((3, 6))
    lz(skiff.tensor(x))
    assert tuple(lz.weight.shape) == (4, 6) and lz.in_features == 6
    bound = 1 / np.sqrt(6)
    assert np.abs(_np(lz.weight)).max() <= bound
    torch.manual_seed(0)
    tl = torch.nn.LazyLinear(4).double()
    tl(torch.tensor(x))
    sl = skiff.nn.LazyLinear(4)
    sl.load_state_dict({k: skiff.tensor(v.numpy()) for k, v in tl.state_dict().items()})
    _both(lambda lib, x: (sl if lib is skiff else tl)(x), x)
    _close(sl.weight.grad, tl.weight.grad)


def test_gumbel_softmax_law_and_straight_through():
    logits = np.log(np.array([0.1, 0.2, 0.3, 0.4]))
    skiff.manual_seed(3)
    z = skiff.tensor(np.tile(logits, (4000, 1)))
    y = skiff.nn.functional.gumbel_softmax(z, tau=0.5, hard=True)
    counts = _np(y).sum(0) / 4000
    assert set(np.unique(_np(y))) == {0.0, 1.0} and (_np(y).sum(1) == 1).all()
    want = torch.softmax(torch.tensor(logits), 0).numpy()  # the Gumbel-max law
    assert np.abs(counts - want).max() < 0.03
    G = RNG.standard_normal((5, 4))
    grads, base = [], RNG.standard_normal((5, 4))
    for hard in (False, True):
        skiff.manual_seed(4)
        t = skiff.tensor(base, requires_grad=True)
        out = skiff.nn.functional.gumbel_softmax(t, tau=0.7, hard=hard)
        (out * skiff.tensor(G)).sum().backward()
        grads.append(_np(t.grad))
        if not hard:
            soft = _np(out)
            # the soft sample's gradient is softmax's, through torch's softmax at its input
            tt = torch.tensor(np.log(soft) * 1.0, requires_grad=True)
            (torch.softmax(tt, -1) * torch.tensor(G)).sum().backward()
            np.testing.assert_allclose(grads[0], tt.grad.numpy() / 0.7, atol=1e-12)
    np.testing.assert_allclose(grads[1], grads[0], atol=1e-12)


@pytest.mark.parametrize("name,kw", [("ReLU", {"inplace": True}), ("SiLU", {"inplace": True}),
                                     ("LeakyReLU", {"negative_slope": 0.2, "inplace": True}),
                                     ("ELU", {"alpha": 0.5, "inplace": True})])
def test_inplace_arguments_are_accepted(name, kw):
    _both(lambda lib, x: getattr(lib.nn, name)(**kw)(x * 1.0), RNG.standard_normal((3, 4)))


def test_dropout_inplace_positional():
    d = skiff.nn.Dropout(0.5, True)
    assert d.inplace and d.generator is None
    d.eval()
    x = RNG.standard_normal((2, 3))
    _close(d(skiff.tensor(x)), torch.tensor(x))


def test_transformer_encoder_takes_torchs_fast_path_switches():
    """``TransformerEncoder(layer, n, enable_nested_tensor=False)`` (a ViT port's line) was a
    TypeError; the stack computes what torch's does."""
    skiff.manual_seed(0)
    layer = skiff.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True,
                                             norm_first=True).double()
    ours = skiff.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False, mask_check=False)
    tl = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True,
                                          norm_first=True).double()
    theirs = torch.nn.TransformerEncoder(tl, 2, enable_nested_tensor=False).double()
    theirs.load_state_dict({k: torch.tensor(np.asarray(v)) for k, v in
                            ours.state_dict().items()})
    _both(lambda lib, x: (ours if lib is skiff else theirs)(x), RNG.standard_normal((2, 5, 8)))


@pytest.mark.parametrize("name,args", [("relu", {"inplace": True}), ("silu", {"inplace": True}),
                                       ("leaky_relu", {"negative_slope": 0.1, "inplace": True}),
                                       ("elu", {"alpha": 0.7, "inplace": True})])
def test_functional_inplace_arguments(name, args):
    """``F.relu(out, inplace=True)`` (torchvision's ResNet blocks) was a TypeError."""
    _both(lambda lib, x: getattr(lib.nn.functional, name)(x * 1.0, **args),
          RNG.standard_normal((3, 4)))


def test_functional_dropout_inplace_and_softmax_dtype():
    x = RNG.standard_normal((3, 4))
    _both(lambda lib, x: lib.nn.functional.dropout(x, 0.3, False, True), x)
    for fn in ("softmax", "log_softmax"):
        a = getattr(skiff.nn.functional, fn)(skiff.tensor(x, dtype=skiff.float32), -1,
                                             dtype=skiff.float64)
        b = getattr(torch.nn.functional, fn)(torch.tensor(x, dtype=torch.float32), -1,
                                             dtype=torch.float64)
        assert str(a.dtype) == "float64"
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-12)


def test_embedding_torch_arguments():
    """``nn.Embedding(n, d, padding_idx)`` positional (skiff's third argument was the
    generator), ``max_norm``/``norm_type`` (rows renormalised in place as torch's),
    ``F.embedding(x, w, padding_idx=)`` (no gradient to that row), ``sparse`` accepted."""
    idx = np.array([[1, 0, 3], [3, 5, 0]])
    table = RNG.standard_normal((6, 4)) * 2
    for kw in ({"max_norm": 1.5}, {"max_norm": 2.0, "norm_type": 1.0}, {}):
        res = []
        for lib in (skiff, torch):
            emb = lib.nn.Embedding(6, 4, 0, sparse=False, **kw).double()
            with lib.no_grad():
                emb.weight.copy_(lib.tensor(table))
            out = emb(lib.tensor(idx))
            (out * lib.tensor(np.cos(np.arange(24.0)).reshape(2, 3, 4))).sum().backward()
            res.append([out, emb.weight.grad, emb.weight])
        for a, b in zip(*res):
            np.testing.assert_allclose(_np(a), _np(b), rtol=1e-12, atol=1e-12)
    _both(lambda lib, w: lib.nn.functional.embedding(lib.tensor(idx), w, padding_idx=3), table)
    # scale_grad_by_freq (refused before round 33): each row's gradient over its count
    _both(lambda lib, w: lib.nn.functional.embedding(lib.tensor(idx), w, padding_idx=3,
                                                     scale_grad_by_freq=True), table)
