"""nn layers against PyTorch (CPU, float64): forward and every gradient, rel. error <= 1e-6."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import skiff
from skiff.kernels.train.core import nn
from skiff.kernels.train.core.nn import functional as F
from skiff.kernels.train.core.random import seed
from skiff.kernels.train.core.tensor import Tensor

RTOL = 1e-6


def rel_err(a, b) -> float:
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    assert a.shape == b.shape, (a.shape, b.shape)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))


def copy_to_torch(ours: nn.Module, theirs: torch.nn.Module, rename=None):
    """Load our parameters into the torch module (float64)."""
    theirs.double()
    sd = ours.state_dict()
    if rename:
        sd = {rename.get(k, k): v for k, v in sd.items()}
    missing, unexpected = theirs.load_state_dict({k: torch.from_numpy(v) for k, v in sd.items()},
                                                 strict=False)
    assert not unexpected, unexpected
    return theirs


def compare(ours, theirs, x_np, *, float_input=True, rename=None, upstream_seed=3):
    """Forward both, backward with the same random upstream gradient, compare all."""
    ours.to("float64")
    copy_to_torch(ours, theirs, rename)
    if float_input:
        x = Tensor(x_np, dtype="float64", requires_grad=True)
        xt = torch.tensor(x_np, dtype=torch.float64, requires_grad=True)
    else:
        x = Tensor(x_np)
        xt = torch.tensor(x_np)
    y = ours(x)
    yt = theirs(xt)
    assert rel_err(y.numpy(), yt.detach().numpy()) <= RTOL
    g = np.random.default_rng(upstream_seed).standard_normal(yt.shape)
    y.backward(g)
    yt.backward(torch.from_numpy(g))
    if float_input:
        assert rel_err(x.grad, xt.grad.numpy()) <= RTOL
    tparams = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        tname = (rename or {}).get(name, name)
        assert rel_err(p.grad, tparams[tname].grad.numpy()) <= RTOL, name
    return y, yt


@pytest.fixture(autouse=True)
def _seeded():
    seed(0)
    torch.manual_seed(0)


def rnd(*shape, s=0):
    return np.random.default_rng(s).standard_normal(shape)


def test_linear():
    compare(nn.Linear(4, 3), torch.nn.Linear(4, 3), rnd(2, 5, 4))
    compare(nn.Linear(4, 3, bias=False), torch.nn.Linear(4, 3, bias=False), rnd(6, 4))


def test_embedding():
    idx = np.random.default_rng(1).integers(0, 10, size=(3, 4))
    idx[0, :2] = 7  # repeated rows accumulate
    compare(nn.Embedding(10, 5), torch.nn.Embedding(10, 5), idx, float_input=False)


def test_layer_norm_and_rms_norm():
    ln = nn.LayerNorm(6)
    ln.weight.data[:] = np.linspace(0.5, 1.5, 6)
    ln.bias.data[:] = np.linspace(-0.2, 0.3, 6)
    compare(ln, torch.nn.LayerNorm(6), rnd(2, 3, 6))
    rms = nn.RMSNorm(6)
    rms.weight.data[:] = np.linspace(0.5, 1.5, 6)
    compare(rms, torch.nn.RMSNorm(6, eps=1e-6), rnd(4, 6))


@pytest.mark.parametrize("approximate", ["tanh", "none"])
def test_gelu(approximate):
    compare(nn.GELU(approximate), torch.nn.GELU(approximate=approximate), rnd(3, 7))


def test_silu_relu_sequential():
    ours = nn.Sequential(nn.Linear(5, 8), nn.SiLU(), nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2))
    theirs = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.SiLU(), torch.nn.Linear(8, 8),
                                 torch.nn.ReLU(), torch.nn.Linear(8, 2))
    compare(ours, theirs, rnd(4, 5))


@pytest.mark.parametrize("stride,padding", [(1, 0), (2, 1)])
def test_conv2d(stride, padding):
    compare(nn.Conv2d(3, 4, 3, stride=stride, padding=padding),
            torch.nn.Conv2d(3, 4, 3, stride=stride, padding=padding), rnd(2, 3, 7, 6))


def test_batchnorm2d_train_and_eval():
    ours, theirs = nn.BatchNorm2d(3), torch.nn.BatchNorm2d(3)
    ours.weight.data[:] = [0.5, 1.0, 2.0]
    ours.bias.data[:] = [0.1, -0.1, 0.3]
    compare(ours, theirs, rnd(4, 3, 5, 5) * 2 + 1)
    # running statistics after one training step (unbiased variance, momentum 0.1)
    assert rel_err(ours.running_mean.numpy(), theirs.running_mean.numpy()) <= RTOL
    assert rel_err(ours.running_var.numpy(), theirs.running_var.numpy()) <= RTOL
    ours.eval()
    theirs.eval()
    for p in ours.parameters():
        p.grad = None
    theirs.zero_grad()
    x = rnd(2, 3, 4, 4, s=5)
    xs = Tensor(x, dtype="float64", requires_grad=True)
    xt = torch.tensor(x, requires_grad=True)
    y, yt = ours(xs), theirs(xt)
    assert rel_err(y.numpy(), yt.detach().numpy()) <= RTOL
    g = rnd(*y.shape, s=6)
    y.backward(g)
    yt.backward(torch.from_numpy(g))
    assert rel_err(xs.grad, xt.grad.numpy()) <= RTOL
    assert rel_err(ours.weight.grad, theirs.weight.grad.numpy()) <= RTOL


@pytest.mark.parametrize("kind,k,s", [("max", 2, None), ("max", 3, 2), ("avg", 2, None),
                                      ("avg", 3, 2)])
def test_pools(kind, k, s):
    ours = (nn.MaxPool2d if kind == "max" else nn.AvgPool2d)(k, s)
    theirs = (torch.nn.MaxPool2d if kind == "max" else torch.nn.AvgPool2d)(k, s)
    compare(ours, theirs, rnd(2, 3, 7, 7))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_with_ignore_index(reduction):
    x = rnd(8, 5)
    t = np.random.default_rng(2).integers(0, 5, size=8)
    t[[1, 4]] = -100
    xs = Tensor(x, dtype="float64", requires_grad=True)
    xt = torch.tensor(x, requires_grad=True)
    loss = F.cross_entropy(xs, t, reduction=reduction)
    lt = torch.nn.functional.cross_entropy(xt, torch.from_numpy(t), reduction=reduction)
    assert rel_err(loss.numpy(), lt.detach().numpy()) <= RTOL
    g = rnd(*lt.shape, s=4) if reduction == "none" else None
    loss.backward(g)
    lt.backward(None if g is None else torch.from_numpy(g))
    assert rel_err(xs.grad, xt.grad.numpy()) <= RTOL


def test_cross_entropy_extreme_logits_are_finite():
    x = Tensor(np.array([[1000.0, -1000.0, 0.0]]), dtype="float32", requires_grad=True)
    loss = F.cross_entropy(x, np.array([1]))
    loss.backward()
    assert np.isfinite(loss.item()) and np.all(np.isfinite(x.grad.numpy()))


def test_softmax_and_log_softmax():
    x = rnd(3, 6)
    for ours, theirs in [(F.softmax, torch.softmax), (F.log_softmax, torch.log_softmax)]:
        xs = Tensor(x, dtype="float64", requires_grad=True)
        xt = torch.tensor(x, requires_grad=True)
        y, yt = ours(xs, axis=-1), theirs(xt, dim=-1)
        assert rel_err(y.numpy(), yt.detach().numpy()) <= RTOL
        g = rnd(3, 6, s=1)
        y.backward(g)
        yt.backward(torch.from_numpy(g))
        assert rel_err(xs.grad, xt.grad.numpy()) <= RTOL


class TorchCausalSelfAttention(torch.nn.Module):
    """nanoGPT's layout, written here as the oracle."""

    def __init__(self, d, h):
        super().__init__()
        self.h = h
        self.c_attn = torch.nn.Linear(d, 3 * d)
        self.c_proj = torch.nn.Linear(d, d)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.c_attn(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.h, c // self.h).transpose(1, 2) for z in (q, k, v))
        y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.c_proj(y.transpose(1, 2).contiguous().view(b, t, c))


def test_causal_self_attention_matches_torch():
    compare(nn.CausalSelfAttention(16, 4), TorchCausalSelfAttention(16, 4), rnd(2, 6, 16))


class TorchTransformerBlock(torch.nn.Module):
    def __init__(self, c, h):
        super().__init__()
        self.ln_1, self.ln_2 = torch.nn.LayerNorm(c), torch.nn.LayerNorm(c)
        self.attn = TorchCausalSelfAttention(c, h)
        self.mlp = torch.nn.Module()
        self.mlp.c_fc, self.mlp.c_proj = torch.nn.Linear(c, 4 * c), torch.nn.Linear(4 * c, c)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        h = torch.nn.functional.gelu(self.mlp.c_fc(self.ln_2(x)), approximate="tanh")
        return x + self.mlp.c_proj(h)


def test_transformer_block_trains_end_to_end():
    """Twenty AdamW steps of a block regressing a fixed target, against the same block in
    torch: the loss of every step and the final weights agree, and the loss falls by half."""
    from skiff.kernels.train.core.optim import AdamW

    seed(0)
    blk = nn.TransformerBlock(8, 2).to("float64")
    theirs = copy_to_torch(blk, TorchTransformerBlock(8, 2))
    x, target = rnd(4, 5, 8, s=1), rnd(4, 5, 8, s=2)
    opt = AdamW(blk.parameters(), lr=1e-2, weight_decay=0.1)
    topt = torch.optim.AdamW(theirs.parameters(), lr=1e-2, weight_decay=0.1)
    ours_losses, their_losses = [], []
    for _ in range(20):
        loss = ((blk(Tensor(x, dtype="float64")) - Tensor(target, dtype="float64")) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        ours_losses.append(float(loss.numpy()))
        tloss = ((theirs(torch.tensor(x)) - torch.tensor(target)) ** 2).mean()
        topt.zero_grad()
        tloss.backward()
        topt.step()
        their_losses.append(float(tloss.detach()))
    np.testing.assert_allclose(ours_losses, their_losses, rtol=1e-8)
    assert ours_losses[-1] < 0.5 * ours_losses[0]
    tparams = dict(theirs.named_parameters())
    for name, p in blk.named_parameters():
        assert rel_err(p.data, tparams[name].detach().numpy()) <= RTOL, name


def test_state_dict_roundtrip_and_errors():
    seed(1)
    a = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm2d(4))
    seed(2)
    b = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm2d(4))
    sd = a.state_dict()
    assert list(sd) == ["0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean",
                        "1.running_var", "1.num_batches_tracked"]  # torch's keys
    assert all(isinstance(v, np.ndarray) for v in sd.values())
    w_before = b[0].weight
    b.load_state_dict(sd)
    assert b[0].weight is w_before  # loaded in place
    for k, v in b.state_dict().items():
        np.testing.assert_array_equal(v, sd[k])
    bad = dict(sd)
    bad["0.weight"] = np.zeros((5, 3))
    del bad["0.bias"]
    bad["extra"] = np.zeros(1)
    with pytest.raises(ValueError) as e:
        b.load_state_dict(bad)
    msg = str(e.value)
    assert "0.bias" in msg and "extra" in msg and "(5, 3)" in msg and "(4, 3)" in msg
    out = b.load_state_dict({k: v for k, v in sd.items() if k != "0.bias"}, strict=False)
    assert out["missing"] == ["0.bias"]


def test_same_seed_same_weights_and_module_api():
    seed(5)
    a = nn.Linear(4, 4)
    seed(5)
    b = nn.Linear(4, 4)
    np.testing.assert_array_equal(a.weight.data, b.weight.data)
    m = nn.Sequential(nn.Linear(2, 3), nn.Dropout(0.5), nn.Linear(3, 1))
    assert m.num_parameters() == 2 * 3 + 3 + 3 + 1
    assert len(list(m.children())) == 3 and len(list(m.modules())) == 4
    m.eval()
    assert not m[1].training
    x = skiff.tensor(np.ones((2, 2), np.float32))
    np.testing.assert_array_equal(m(x).numpy(), m(x).numpy())  # dropout off in eval
    m.to("float64")
    assert all(p.dtype == np.float64 for p in m.parameters())
    m.to("cpu")
    # tied weights appear once in parameters() but under both names in state_dict()
    emb, head = nn.Embedding(5, 3), nn.Linear(3, 5, bias=False)
    head.weight = emb.weight
    tied = nn.ModuleList([emb, head])
    assert len(list(tied.parameters())) == 1
    assert set(tied.state_dict()) == {"0.weight", "1.weight"}


def test_layer_argument_errors():
    with pytest.raises(ValueError, match="got 0"):
        nn.Linear(0, 3)
    with pytest.raises(ValueError, match=r"\(3, 5\).*\(2, 4\)"):
        F.linear(skiff.tensor(np.ones((3, 5))), skiff.tensor(np.ones((2, 4))))
    with pytest.raises(TypeError, match="integer"):
        F.cross_entropy(skiff.tensor(np.ones((2, 3))), np.array([0.0, 1.0]))
    with pytest.raises(ValueError, match=r"\(2, 3\).*\(3,\)"):
        F.cross_entropy(skiff.tensor(np.ones((2, 3))), np.array([0, 1, 2]))
    with pytest.raises(ValueError, match="approximate"):
        nn.GELU("fast")
    with pytest.raises(ValueError, match="divisible"):
        nn.CausalSelfAttention(10, 3)


def test_save_writes_weights_that_load_back_and_torch_reads(tmp_path):
    seed(3)
    a = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    path = a.save(tmp_path / "weights")          # the suffix is added
    assert path.endswith("weights.npz") and not (tmp_path / "weights.npz.tmp").exists()
    seed(4)
    b = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    b.load_state_dict(path)
    for k, v in a.state_dict().items():
        np.testing.assert_array_equal(b.state_dict()[k], v)
    theirs = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    with np.load(path) as z:   # the file is plain npz: PyTorch takes it as it is
        theirs.load_state_dict({k: torch.from_numpy(z[k]) for k in z.files})
    x = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    np.testing.assert_allclose(theirs(torch.from_numpy(x)).detach().numpy(),
                               a(x).numpy(), rtol=1e-5, atol=1e-6)
