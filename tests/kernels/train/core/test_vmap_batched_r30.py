"""Round 30: the batched ``vmap`` (``vmap_r30``) against torch 2.13's ``torch.func`` in float64:
per-sample gradients (torch's tutorial: ``vmap(grad(loss), in_dims=(None, 0, 0))`` over
``functional_call``; an MLP and a small CNN with ``nll_loss``/``cross_entropy``), ensembles by
``stack_module_state``, the elementwise, reduction, indexing, joining and matmul rules,
``in_dims``/``out_dims``, nesting, and the fall back to the loop where a function reads an
array. ``LOOPED`` tells which path ran: each test checks that too."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.func as tf

import skiff
import skiff.func as sf
from skiff.kernels.train.core import vmap_r30

RNG = np.random.default_rng(3001)


@pytest.fixture(autouse=True)
def _float64():
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    skiff.set_default_dtype(skiff.float64)
    vmap_r30.LOOPED.clear()
    yield
    torch.set_default_dtype(old)
    skiff.set_default_dtype(skiff.float32)


def _np(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t.detach())


def _close(a, b, tol=1e-12):
    if isinstance(b, dict):
        assert set(a) == set(b)
        for k in b:
            _close(a[k], b[k], tol)
    elif isinstance(b, (tuple, list)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _close(x, y, tol)
    else:
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(_np(a), _np(b), rtol=tol, atol=tol)


def _copy(s, t):
    s.load_state_dict({k: skiff.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    return s


def _mlp(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(6, 8), nn.GELU(), nn.Linear(8, 8), nn.Tanh(), nn.LayerNorm(8),
                         nn.Linear(8, 3))


def test_per_sample_gradients_run_once_and_equal_torch():
    t = _mlp(torch)
    s = _copy(_mlp(skiff), t)
    X, Y = RNG.standard_normal((9, 6)), RNG.standard_normal((9, 3))
    res = []
    for lib, fn, m in ((skiff, sf, s), (torch, tf, t)):
        F = lib.nn.functional

        def loss(p, x, y, m=m, fn=fn, F=F):
            out = fn.functional_call(m, p, (x.unsqueeze(0),))
            return F.mse_loss(out, y.unsqueeze(0)) + 0.1 * out.pow(2).sum()

        p = {k: v.detach() for k, v in m.named_parameters()}
        res.append(fn.vmap(fn.grad(loss), in_dims=(None, 0, 0))(p, lib.tensor(X), lib.tensor(Y)))
    _close(res[0], res[1])
    assert not vmap_r30.LOOPED, dict(vmap_r30.LOOPED)  # every op by a rule: one call


def _cnn(lib):
    nn = lib.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(1, 3, 3, stride=(1, 2), padding=1)
            self.fc = nn.Linear(3 * 4 * 2, 4)

        def forward(self, x):
            F = lib.nn.functional
            x = F.max_pool2d(F.relu(self.conv(x)), 2)
            return F.log_softmax(self.fc(x.flatten(1)), dim=1)
    return Net()


@pytest.mark.parametrize("which", ["nll_loss", "cross_entropy"])
def test_per_sample_gradients_of_a_cnn_equal_torch(which):
    t = _cnn(torch)
    s = _copy(_cnn(skiff), t)
    X, Y = RNG.standard_normal((5, 1, 8, 8)), RNG.integers(0, 4, 5)
    res = []
    for lib, fn, m in ((skiff, sf, s), (torch, tf, t)):
        lossf = getattr(lib.nn.functional, which)

        def loss(p, b, x, y, m=m, fn=fn, lossf=lossf):
            return lossf(fn.functional_call(m, (p, b), (x.unsqueeze(0),)), y.unsqueeze(0))

        p = {k: v.detach() for k, v in m.named_parameters()}
        g = fn.vmap(fn.grad(loss), in_dims=(None, None, 0, 0))
        res.append(g(p, {}, lib.tensor(X), lib.tensor(Y)))
    _close(res[0], res[1])
    # the convolution with a per-sample weight too: one im2col and a batched matmul
    assert not vmap_r30.LOOPED, dict(vmap_r30.LOOPED)


def test_class_losses_of_batched_targets_equal_torch():
    L = RNG.standard_normal((4, 3, 5))
    T = RNG.integers(0, 5, (4, 3))
    T[1, 2] = -100
    W = RNG.uniform(0.5, 2.0, 5)
    for red in ("mean", "sum", "none"):
        res = []
        for lib, fn in ((skiff, sf), (torch, tf)):
            F = lib.nn.functional
            w = lib.tensor(W)

            def f(x, y, F=F, w=w, red=red):
                return (F.cross_entropy(x, y, w, reduction=red),
                        F.nll_loss(F.log_softmax(x, dim=-1), y, reduction=red),
                        F.cross_entropy(x, y, reduction=red, label_smoothing=0.2))
            res.append(fn.vmap(f)(lib.tensor(L), lib.tensor(T)))
        _close(res[0], res[1])
    assert "<whole call>" not in vmap_r30.LOOPED


def test_ensemble_by_stack_module_state_equals_torch():
    ts = [_mlp(torch) for _ in range(3)]
    ss = [_copy(_mlp(skiff), t) for t in ts]
    X = RNG.standard_normal((5, 6))
    res = []
    for lib, fn, ms in ((skiff, sf, ss), (torch, tf, ts)):
        params, buffers = fn.stack_module_state(ms)
        base = ms[0]

        def run(p, b, x, base=base, fn=fn):
            return fn.functional_call(base, (p, b), (x,))
        res.append(fn.vmap(run, in_dims=(0, 0, None))(params, buffers, lib.tensor(X)))
        res.append(fn.vmap(run)(params, buffers, lib.tensor(RNG.standard_normal((3, 5, 6)))))
    _close(res[0], res[2])
    assert not vmap_r30.LOOPED, dict(vmap_r30.LOOPED)


def _zoo(lib, x, y, w, idx):
    """Ops a mapped function uses: broadcasting with an unbatched tensor, reductions over
    logical axes, softmax, slicing and integer-array indexing, cat/stack with an unbatched
    part, transposes, 1-D @ 2-D, expand, clamp, maximum, where of a comparison."""
    a = (x * w[0] + y.sum(0)).tanh()                      # (5,)
    b = lib.softmax(w @ a, dim=0)                         # (4,)
    c = lib.cat([a[1:], w[:, 0], a[idx]])                # (4 + 4 + 3,)
    d = lib.stack([a, w[1]], dim=1).transpose(0, 1)       # (2, 5)
    e = lib.where(a > 0, a.clamp(min=-0.2, max=0.3), lib.maximum(a, y[0]))
    f = y.unsqueeze(0).expand(2, 3, 5).mean(dim=(0, 1)) * d[1]
    return (b.cumsum(0), c.exp().max(), d.var(dim=1), e - f, (y @ a.t()).reshape(3, 1))


def test_elementwise_shape_and_matmul_rules_equal_torch():
    X, Y = RNG.standard_normal((5, 6)), RNG.standard_normal((6, 3, 5))
    W, I = RNG.standard_normal((4, 5)), np.array([0, 3, 3])
    res = []
    for lib, fn in ((skiff, sf), (torch, tf)):
        w, idx = lib.tensor(W), lib.tensor(I)

        def f(x, y, lib=lib, w=w, idx=idx):
            return _zoo(lib, x, y, w, idx)
        res.append(fn.vmap(f, in_dims=(1, 0), out_dims=(0, 0, 1, 0, 2))(lib.tensor(X),
                                                                        lib.tensor(Y)))
    _close(res[0], res[1])
    assert not vmap_r30.LOOPED, dict(vmap_r30.LOOPED)


def test_nested_vmap_and_grad_of_a_batched_argument_equal_torch():
    A, B = RNG.standard_normal((3, 4)), RNG.standard_normal((2, 4))
    res = []
    for lib, fn in ((skiff, sf), (torch, tf)):
        def f(a, b, lib=lib):
            return (a * b).sum() * a.sin().sum()
        pair = fn.vmap(fn.vmap(f, in_dims=(None, 0)), in_dims=(0, None))
        res.append(pair(lib.tensor(A), lib.tensor(B)))
        res.append(fn.vmap(fn.grad(f, argnums=(0, 1)))(lib.tensor(A[:2]), lib.tensor(B)))
    _close(res[:2], res[2:])
    assert "<whole call>" not in vmap_r30.LOOPED


def test_a_function_that_reads_an_array_falls_back_to_the_loop():
    X = RNG.standard_normal((4, 3))

    def f(x, lib):  # a data-dependent branch: torch's vmap refuses it, skiff loops
        return x * 2 if float(x.sum()) > 0 else x.exp()

    got = sf.vmap(lambda x: f(x, skiff))(skiff.tensor(X))
    want = torch.stack([f(torch.tensor(r), torch) for r in X])
    _close(got, want)
    assert vmap_r30.LOOPED["<whole call>"] == 1
    j = sf.vmap(sf.jacrev(lambda x: x.tanh() * x.sum()))(skiff.tensor(X))
    _close(j, tf.vmap(tf.jacrev(lambda x: x.tanh() * x.sum()))(torch.tensor(X)))


def test_randomness_same_draws_once_and_different_draws_per_sample():
    X = np.ones((4, 50))
    same = sf.vmap(lambda x: skiff.nn.functional.dropout(x, 0.5), randomness="same")(
        skiff.tensor(X))
    diff = sf.vmap(lambda x: skiff.nn.functional.dropout(x, 0.5), randomness="different")(
        skiff.tensor(X))
    s, d = _np(same), _np(diff)
    assert (s == s[0]).all() and not (d == d[0]).all()
    assert set(np.unique(s)) <= {0.0, 2.0} and set(np.unique(d)) <= {0.0, 2.0}


def _activations(lib, x, y):
    """The activations and losses that built masks from raw arrays (leaky_relu, elu,
    softplus, smooth_l1/huber, masked_fill, sign, norm), each batched now."""
    F = lib.nn.functional
    a = F.leaky_relu(x, 0.1) + F.elu(x) + F.softplus(x, beta=2.0) + lib.sign(x) * x.abs()
    b = a.masked_fill(x > 0.3, -1.0).masked_fill(y.unsqueeze(0) < 0, 2.0)
    return (b, F.smooth_l1_loss(x[0], y, beta=0.5), F.huber_loss(x[1], y, delta=0.7),
            x.norm(dim=1) + y.norm(), lib.flip(x, dims=(1,)), x.new_zeros(2) + x[0, :2])


def test_activations_masks_and_norms_are_batched_and_equal_torch():
    X, Y = RNG.standard_normal((4, 3, 5)), RNG.standard_normal((4, 5))
    X[0, 0, 0] = 0.0
    res = [fn.vmap(lambda x, y, lib=lib: _activations(lib, x, y))(lib.tensor(X), lib.tensor(Y))
           for lib, fn in ((skiff, sf), (torch, tf))]
    _close(res[0], res[1])
    assert not vmap_r30.LOOPED, dict(vmap_r30.LOOPED)


def _indexed(lib, q, a, y):
    """gather by a batched index (a DQN's chosen actions), sort/topk/argsort, tril/triu,
    binary cross-entropy of batched targets with pos_weight."""
    F = lib.nn.functional
    picked = q.gather(1, a.unsqueeze(1)).squeeze(1)                       # (3,)
    vals, idx = lib.sort(q, dim=1, descending=True)
    top = lib.topk(q, 2, dim=0).values.sum() + q.argsort(dim=1).double().sum()
    tri = lib.tril(q[:, :3] @ q[:, :3].t(), diagonal=-1) + lib.triu(q[:, :3].t() @ q[:, :3])
    hot = q * 2.0
    bce = F.binary_cross_entropy_with_logits(q, y, pos_weight=lib.tensor([1.0, 2.0, 0.5, 3.0]))
    return picked, vals * idx, top, tri, hot, bce + F.binary_cross_entropy(q.sigmoid(), y)


def test_index_valued_ops_and_binary_losses_are_batched_and_equal_torch():
    Q, A = RNG.standard_normal((5, 3, 4)), RNG.integers(0, 4, (5, 3))
    Y = (RNG.random((5, 3, 4)) > 0.5).astype(np.float64)
    res = []
    for lib, fn in ((skiff, sf), (torch, tf)):
        args = (lib.tensor(Q), lib.tensor(A), lib.tensor(Y))
        res.append(fn.vmap(lambda q, a, y, lib=lib: _indexed(lib, q, a, y))(*args))

        def loss(q, a, y, lib=lib):
            return sum(t.sum() for t in _indexed(lib, q, a, y) if t.dtype == lib.float64)
        res.append(fn.vmap(fn.grad(loss))(*args))
    _close(res[:2], res[2:])
    # one_hot of batched ids (torch's vmap refuses it: its whole-tensor result is the oracle)
    hot = sf.vmap(lambda a: skiff.nn.functional.one_hot(a, num_classes=4))(skiff.tensor(A))
    _close(hot, torch.nn.functional.one_hot(torch.tensor(A), num_classes=4))
    assert not vmap_r30.LOOPED, dict(vmap_r30.LOOPED)


def _bag_of_words(lib):
    nn = lib.nn

    class Text(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(9, 4, padding_idx=0)
            self.fc = nn.Linear(4, 2)

        def forward(self, ids):
            return self.fc(self.emb(ids).mean(dim=1))
    return Text()


def test_per_sample_gradients_of_a_text_model_with_embedding_equal_torch():
    t = _bag_of_words(torch)
    s = _copy(_bag_of_words(skiff), t)
    ids, y = RNG.integers(0, 9, (6, 5)), RNG.integers(0, 2, 6)
    ids[2, 3:] = 0
    TABLE = RNG.standard_normal((9, 3))
    res = []
    for lib, fn, m in ((skiff, sf, s), (torch, tf, t)):
        F = lib.nn.functional

        def loss(p, x, y, m=m, fn=fn, F=F):
            return F.cross_entropy(fn.functional_call(m, p, (x.unsqueeze(0),)), y.unsqueeze(0))

        p = {k: v.detach() for k, v in m.named_parameters()}
        res.append(fn.vmap(fn.grad(loss), in_dims=(None, 0, 0))(p, lib.tensor(ids),
                                                                lib.tensor(y)))
        table = lib.tensor(TABLE)  # batched ids, one shared table
        res.append(fn.vmap(lambda i, table=table, F=F: F.embedding(i, table))(lib.tensor(ids)))
    _close(res[:2], res[2:])
    assert not vmap_r30.LOOPED, dict(vmap_r30.LOOPED)


def _attention_block(lib):
    nn = lib.nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = nn.Linear(4, 12)
            self.bn = nn.BatchNorm1d(5)

        def forward(self, x):  # x (5 tokens, 4)
            F = lib.nn.functional
            q, k, v = self.qkv(x).reshape(5, 3, 2, 2).permute(1, 2, 0, 3)  # (heads 2, 5, 2)
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            mix = lib.einsum("hti,hsi->ts", a, k) @ x                    # (5, 4)
            return self.bn(mix.unsqueeze(0)).squeeze(0)
    return Block()


def test_attention_einsum_and_eval_batch_norm_are_batched_and_equal_torch():
    t = _attention_block(torch)
    with torch.no_grad():
        t.bn.running_mean.uniform_(-0.5, 0.5)
        t.bn.running_var.uniform_(0.5, 1.5)
    t.eval()
    s = _copy(_attention_block(skiff), t)
    s.eval()
    X = RNG.standard_normal((3, 5, 4))
    res = []
    for lib, fn, m in ((skiff, sf, s), (torch, tf, t)):
        p = {k: v.detach() for k, v in m.named_parameters()}
        b = {k: v.detach() for k, v in m.named_buffers()}

        def loss(p, x, m=m, fn=fn, b=b):
            return (fn.functional_call(m, (p, b), (x,)) ** 2).sum()
        res.append(fn.vmap(lambda x, m=m: m(x))(lib.tensor(X)))
        res.append(fn.vmap(fn.grad(loss), in_dims=(None, 0))(p, lib.tensor(X)))
    _close(res[:2], res[2:])
    assert not vmap_r30.LOOPED, dict(vmap_r30.LOOPED)


def _in_place(lib, x):
    """In-place ops on batched tensors: ``+=``, ``add_(alpha=)``, ``mul_``, ``clamp_``,
    item assignment of a number and of a batched slice."""
    z = x * 1.0
    z += x.sin()
    z.add_(x, alpha=2.0).mul_(x)
    z.clamp_(min=-1.0)
    z[0] = 5.0
    z[1:3] = x[:2] * 3
    return z


def test_in_place_ops_on_batched_tensors_equal_torch():
    X = RNG.standard_normal((4, 5))
    res = []
    for lib, fn in ((skiff, sf), (torch, tf)):
        res.append(fn.vmap(lambda x, lib=lib: _in_place(lib, x))(lib.tensor(X)))
        res.append(fn.vmap(fn.grad(lambda x, lib=lib: _in_place(lib, x).sum()))(lib.tensor(X)))
    _close(res[:2], res[2:])
    assert set(vmap_r30.LOOPED) <= {"_SetItem"}, dict(vmap_r30.LOOPED)  # the writes: per op
