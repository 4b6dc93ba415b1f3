"""torch's Tensor methods and nn.functional calls as skiff has them (tensor_more.py,
functional/extra.py): each against torch in float64, value and gradient of the input."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

from skiff.kernels.train.core import nn
from skiff.kernels.train.core.nn import functional as F
from skiff.kernels.train.core.tensor import Tensor, no_grad

TOL = {"rtol": 1e-9, "atol": 1e-11}
rng = np.random.default_rng(0)
X = rng.standard_normal((4, 6))
P = 1 / (1 + np.exp(-rng.standard_normal((4, 6))))  # probabilities
Y = rng.standard_normal((4, 6))
Y01 = (rng.random((4, 6)) < 0.5).astype(float)
IMG = rng.standard_normal((2, 4, 3, 5))
T4 = np.array([1, 0, 5, -100])
YS = Tensor(Y, dtype=np.float64)

CASES = {  # name: (input, skiff, torch)
    "clamp": (X, lambda x: x.clamp(min=-0.5, max=0.7), lambda x: x.clamp(min=-0.5, max=0.7)),
    "clip-min": (X, lambda x: x.clip(min=0.1), lambda x: x.clip(min=0.1)),
    "softmax": (X, lambda x: x.softmax(dim=1), lambda x: x.softmax(dim=1)),
    "log_softmax": (X, lambda x: x.log_softmax(-1), lambda x: x.log_softmax(-1)),
    "chunk": (X, lambda x: x.chunk(4, dim=1)[1], lambda x: x.chunk(4, dim=1)[1]),
    "repeat": (X, lambda x: x.repeat(2, 1, 3), lambda x: x.repeat(2, 1, 3)),
    "std": (X, lambda x: x.std(dim=0), lambda x: x.std(dim=0)),
    "std-all": (X, lambda x: x.std(), lambda x: x.std()),
    "maximum": (X, lambda x: x.maximum(x * 0.3 + 0.1), lambda x: x.maximum(x * 0.3 + 0.1)),
    "minimum": (X, lambda x: x.minimum(YS), lambda x: x.minimum(torch.tensor(Y))),
    "square": (X, lambda x: x.square(), lambda x: x.square()),
    "rsqrt": (P, lambda x: x.rsqrt(), lambda x: x.rsqrt()),
    "sin": (X, lambda x: x.sin(), lambda x: x.sin()),
    "cos": (X, lambda x: x.cos(), lambda x: x.cos()),
    "index_select": (X, lambda x: x.index_select(1, np.array([4, 0, 4])),
                     lambda x: x.index_select(1, torch.tensor([4, 0, 4]))),
    "t": (X, lambda x: x.t(), lambda x: x.t()),
    "tanh": (X, F.tanh, TF.tanh),
    "leaky_relu": (X, lambda x: F.leaky_relu(x, 0.2), lambda x: TF.leaky_relu(x, 0.2)),
    "elu": (X, lambda x: F.elu(x, 1.5), lambda x: TF.elu(x, 1.5)),
    "softplus": (X * 8, lambda x: F.softplus(x, 2.0, 5.0), lambda x: TF.softplus(x, 2.0, 5.0)),
    "l1_loss": (X, lambda x: F.l1_loss(x, YS), lambda x: TF.l1_loss(x, torch.tensor(Y))),
    "smooth_l1": (X, lambda x: F.smooth_l1_loss(x, YS, beta=0.5),
                  lambda x: TF.smooth_l1_loss(x, torch.tensor(Y), beta=0.5)),
    "huber": (X, lambda x: F.huber_loss(x, YS, reduction="sum", delta=0.7),
              lambda x: TF.huber_loss(x, torch.tensor(Y), reduction="sum", delta=0.7)),
    "nll_loss": (X, lambda x: F.nll_loss(x.log_softmax(-1), T4),
                 lambda x: TF.nll_loss(x.log_softmax(-1), torch.tensor(T4))),
    "bce": (P, lambda x: F.binary_cross_entropy(x, Y01),
            lambda x: TF.binary_cross_entropy(x, torch.tensor(Y01))),
    "bce_logits": (X * 5, lambda x: F.binary_cross_entropy_with_logits(
        x, Y01, pos_weight=np.linspace(0.5, 2, 6)),
        lambda x: TF.binary_cross_entropy_with_logits(
            x, torch.tensor(Y01), pos_weight=torch.tensor(np.linspace(0.5, 2, 6)))),
    "kl_div": (X, lambda x: F.kl_div(x.log_softmax(-1), P / P.sum(1, keepdims=True),
                                     reduction="batchmean"),
               lambda x: TF.kl_div(x.log_softmax(-1), torch.tensor(P / P.sum(1, keepdims=True)),
                                   reduction="batchmean")),
    "pad": (IMG, lambda x: F.pad(x, (1, 2, -1, 3), value=0.5),
            lambda x: TF.pad(x, (1, 2, -1, 3), value=0.5)),
    "normalize": (X, lambda x: F.normalize(x, dim=1), lambda x: TF.normalize(x, dim=1)),
    "cosine": (X, lambda x: F.cosine_similarity(x, YS),
               lambda x: TF.cosine_similarity(x, torch.tensor(Y))),
    "adaptive_pool": (IMG, lambda x: F.adaptive_avg_pool2d(x, 1),
                      lambda x: TF.adaptive_avg_pool2d(x, 1)),
    "interpolate": (IMG, lambda x: F.interpolate(x, scale_factor=2),
                    lambda x: TF.interpolate(x, scale_factor=2)),
    "group_norm": (IMG, lambda x: F.group_norm(x, 2), lambda x: TF.group_norm(x, 2)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_equal_to_torch(name):
    x, ours, theirs = CASES[name]
    xs = Tensor(x, requires_grad=True, dtype=np.float64)
    xt = torch.tensor(x, requires_grad=True)
    got, want = ours(xs), theirs(xt)
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), **TOL)
    w = np.random.default_rng(1).standard_normal(want.shape)
    (got * Tensor(w, dtype=np.float64)).sum().backward()
    (want * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(xs.grad, xt.grad.numpy(), **TOL)


def test_modules_values_without_gradient_and_in_place_fills():
    torch.manual_seed(0)
    gn, tgn = nn.GroupNorm(2, 4, dtype=np.float64), torch.nn.GroupNorm(2, 4).double()
    assert list(gn.state_dict()) == list(tgn.state_dict())
    got = gn(Tensor(IMG, dtype=np.float64)).numpy()
    np.testing.assert_allclose(got, tgn(torch.tensor(IMG)).detach().numpy(), **TOL)
    np.testing.assert_allclose(nn.ELU(0.5)(Tensor(X, dtype=np.float64)).numpy(),
                               torch.nn.ELU(0.5)(torch.tensor(X)).numpy(), **TOL)
    x = Tensor(X * 3, requires_grad=True, dtype=np.float64)
    for name in ("floor", "round", "sign"):
        v = getattr(x, name)()
        assert v.requires_grad  # torch's: a zero gradient (round 37; it did not record)
        np.testing.assert_array_equal(v.numpy(), getattr(torch.tensor(X * 3), name)().numpy())
    oh = F.one_hot(np.array([2, 0, 1]), 4)
    np.testing.assert_array_equal(oh.numpy(), TF.one_hot(torch.tensor([2, 0, 1]), 4).numpy())
    p = nn.Linear(3, 2).weight
    with pytest.raises(RuntimeError, match="under no_grad"):
        p.fill_(1.0)
    with no_grad():
        p.fill_(0.5).mul_(2.0).add_(1.0)
    np.testing.assert_array_equal(p.data, np.full((2, 3), 2.0, np.float32))
    assert x.dim() == 2 and x.numel() == 24 and x.long().dtype == np.int64


@pytest.mark.parametrize("ours,theirs", [
    (lambda: nn.MaxPool1d(3, 2), lambda: torch.nn.MaxPool1d(3, 2)),
    (lambda: nn.AvgPool1d(2), lambda: torch.nn.AvgPool1d(2)),
])
def test_one_dimensional_pooling_equals_torch(ours, theirs):
    x = np.random.default_rng(3).standard_normal((2, 3, 11))
    xs, xt = Tensor(x, requires_grad=True, dtype=np.float64), torch.tensor(x, requires_grad=True)
    got, want = ours()(xs), theirs()(xt)
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), **TOL)
    (got * got).sum().backward()
    (want * want).sum().backward()
    np.testing.assert_allclose(xs.grad, xt.grad.numpy(), **TOL)


def test_embedding_padding_row_starts_at_zero_and_learns_nothing():
    emb = nn.Embedding(5, 3, padding_idx=0, dtype=np.float64)
    temb = torch.nn.Embedding(5, 3, padding_idx=0).double()
    np.testing.assert_array_equal(emb.weight.data[0], 0)
    emb.load_state_dict({"weight": temb.weight.detach().numpy()})
    idx = np.array([[0, 2, 4], [1, 0, 0]])
    out, want = emb(idx), temb(torch.tensor(idx))
    np.testing.assert_allclose(out.numpy(), want.detach().numpy(), **TOL)
    (out * out).sum().backward()
    (want * want).sum().backward()
    np.testing.assert_allclose(emb.weight.grad, temb.weight.grad.numpy(), **TOL)
    assert not emb.weight.grad[0].any()
    with pytest.raises(ValueError, match="outside the table"):
        nn.Embedding(5, 3, padding_idx=5)


def test_torch_keywords_and_shapes():
    import skiff

    x = np.random.default_rng(4).standard_normal((2, 3, 4))
    xs, xt = Tensor(x, dtype=np.float64), torch.tensor(x)
    assert xs.transpose(1, 2).shape == tuple(xt.transpose(1, 2).shape)  # two axes: swapped
    np.testing.assert_array_equal(xs.transpose(1, 2).numpy(), xt.transpose(1, 2).numpy())
    assert xs.transpose((2, 0, 1)).shape == (4, 2, 3)  # a tuple: numpy's permutation
    m = Tensor(x[0], dtype=np.float64)
    np.testing.assert_array_equal(m.transpose(0, 1).numpy(), x[0].T)
    assert xs.size() == (2, 3, 4) and xs.size(1) == 3 and xs.size == 24
    got, want = xs.max(dim=1), xt.max(dim=1)
    np.testing.assert_array_equal(got.values.numpy(), want.values.numpy())
    np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy())
    np.testing.assert_allclose(xs.sum(dim=2, keepdim=True).numpy(),
                               xt.sum(dim=2, keepdim=True).numpy(), **TOL)
    np.testing.assert_allclose(xs.var(dim=1).numpy(), xt.var(dim=1).numpy(), **TOL)
    np.testing.assert_allclose(F.softmax(xs, dim=1).numpy(), TF.softmax(xt, dim=1).numpy(),
                               **TOL)
    assert skiff.cat([xs, xs], dim=2).shape == (2, 3, 8)
    assert skiff.stack([xs, xs], dim=1).shape == (2, 2, 3, 4)
    assert skiff.zeros(2, 3).shape == (2, 3) and xs.argmax(dim=2, keepdim=True).shape == (2, 3, 1)


def test_load_state_dict_of_another_model_says_so_in_a_short_line():
    """Resuming gpt-mini from an mlp job's checkpoints printed all 54 + 6 names (3 KB of one
    line); now it says the weights are another model's, with a few names of each."""
    from skiff.kernels.train import models

    gpt = models.get("gpt-mini")
    mlp = models.get("mlp", in_features=4, out_features=2)
    with pytest.raises(ValueError) as err:
        gpt.load_state_dict(mlp.state_dict())
    msg = str(err.value)
    assert msg.startswith("load_state_dict into GPT: none of the 6 weights given is one of "
                          "this model's: they are of another model (theirs: net.0.weight")
    assert len(msg) < 400 and "more" in msg
    state = gpt.state_dict()
    state.pop("wte.weight")
    state.update({f"extra{k}": np.zeros(1) for k in range(20)})
    with pytest.raises(ValueError, match=r"missing keys: wte.weight \| unexpected keys: "
                                         r"extra0, .*extra7 \.\.\. and 12 more"):
        gpt.load_state_dict(state)
