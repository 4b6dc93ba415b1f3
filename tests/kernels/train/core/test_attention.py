"""Packed variable-length attention against padded masked attention and torch's sdpa."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest
import torch

from skiff.kernels.backend import to_numpy
from skiff.kernels.backend.testing import check_op
from skiff.kernels.train.core import nn
from skiff.kernels.train.core import packed_attention as PA
from skiff.kernels.train.core.nn import functional as F
from skiff.kernels.train.core.random import seed
from skiff.kernels.train.core.tensor import Tensor

LENS = [5, 1, 3, 7, 4]
H, D = 2, 4


def _packed_inputs(xp, dtype="float64", lens=LENS, s=0):
    rng = np.random.default_rng(s)
    total = sum(lens)
    arrs = [rng.standard_normal((total, H, D)) for _ in range(3)]
    cu = np.concatenate([[0], np.cumsum(lens)])
    ts = [Tensor(xp.asarray(a), dtype=dtype, requires_grad=True) for a in arrs]
    return ts, cu, rng.standard_normal((total, H, D))


def _pad(x, lens, cu, tmax):
    """(T, H, D) packed -> (B, H, Tmax, D) zero-padded (right padding)."""
    out = np.zeros((len(lens), H, tmax, D))
    for i, n in enumerate(lens):
        out[i, :, :n] = np.transpose(x[cu[i] : cu[i + 1]], (1, 0, 2))
    return out


def _unpad(x, lens, cu):
    return np.concatenate([np.transpose(x[i, :, :n], (1, 0, 2)) for i, n in enumerate(lens)])


def test_packed_equals_padded_masked_attention_with_grads(xp):
    (q, k, v), cu, g = _packed_inputs(xp)
    o = F.packed_causal_attention(q, k, v, cu)
    o.backward(xp.asarray(g))
    tmax = max(LENS)
    # the same sequences, padded on the right: causal masking alone keeps real queries off
    # the padding (pads come after every real key), and padded queries get zero upstream grad
    pq, pk, pv = (Tensor(_pad(t.numpy(), LENS, cu, tmax), dtype="float64", requires_grad=True)
                  for t in (q, k, v))
    po = F.scaled_dot_product_attention(pq, pk, pv, causal=True)
    po.backward(_pad(g, LENS, cu, tmax))
    np.testing.assert_allclose(o.numpy(), _unpad(po.numpy(), LENS, cu), rtol=1e-10, atol=1e-12)
    for packed, padded in ((q, pq), (k, pk), (v, pv)):
        np.testing.assert_allclose(to_numpy(packed.grad), _unpad(padded.grad, LENS, cu),
                                   rtol=1e-9, atol=1e-11)


def test_packed_matches_torch_sdpa_per_sequence():
    (q, k, v), cu, g = _packed_inputs(np, lens=[6, 2, 9])
    o = F.packed_causal_attention(q, k, v, cu)
    o.backward(g)
    for i in range(len(cu) - 1):
        a, b = cu[i], cu[i + 1]
        qt, kt, vt = (torch.tensor(t.numpy()[a:b].transpose(1, 0, 2), requires_grad=True)
                      for t in (q, k, v))
        ot = torch.nn.functional.scaled_dot_product_attention(qt, kt, vt, is_causal=True)
        ot.backward(torch.from_numpy(g[a:b].transpose(1, 0, 2).copy()))
        np.testing.assert_allclose(o.numpy()[a:b], ot.detach().numpy().transpose(1, 0, 2),
                                   rtol=1e-10, atol=1e-12)
        for ours, theirs in ((q, qt), (k, kt), (v, vt)):
            np.testing.assert_allclose(ours.grad[a:b], theirs.grad.numpy().transpose(1, 0, 2),
                                       rtol=1e-9, atol=1e-11)


def test_attention_never_crosses_a_sequence_boundary():
    (q, k, v), cu, _ = _packed_inputs(np, lens=[4, 4])
    o1 = F.packed_causal_attention(q, k, v, cu).numpy()
    v2 = v._data.copy()
    v2[:4] += 100.0  # change only the first sequence's values
    o2 = F.packed_causal_attention(q, k, Tensor(v2, dtype="float64"), cu).numpy()
    np.testing.assert_array_equal(o1[4:], o2[4:])
    assert not np.allclose(o1[:4], o2[:4])


def test_forward_packed_equals_forward_per_sequence():
    seed(0)
    attn = nn.CausalSelfAttention(8, 2).to("float64")
    lens = [3, 6, 2]
    cu = np.concatenate([[0], np.cumsum(lens)])
    x = np.random.default_rng(1).standard_normal((sum(lens), 8))
    xs = Tensor(x, dtype="float64", requires_grad=True)
    y = attn.forward_packed(xs, cu)
    y.sum().backward()
    packed_wgrad = attn.c_attn.weight._grad.copy()
    attn.zero_grad()
    for i in range(len(lens)):
        xi = Tensor(x[None, cu[i] : cu[i + 1]], dtype="float64")
        yi = attn(xi)
        np.testing.assert_allclose(y.numpy()[cu[i] : cu[i + 1]], yi.numpy()[0], rtol=1e-10)
        yi.sum().backward()
    total_wgrad = attn.c_attn.weight.grad
    np.testing.assert_allclose(packed_wgrad, total_wgrad, rtol=1e-9)


def test_empty_sequences_and_bad_cu_seqlens():
    (q, k, v), _, _ = _packed_inputs(np, lens=[3, 2])
    out = F.packed_causal_attention(q, k, v, [0, 3, 3, 5])  # an empty sequence is allowed
    ref = F.packed_causal_attention(q, k, v, [0, 3, 5])
    np.testing.assert_array_equal(out.numpy(), ref.numpy())
    with pytest.raises(ValueError, match=r"rise from 0 .* 5"):
        F.packed_causal_attention(q, k, v, [0, 3, 4])
    with pytest.raises(ValueError, match="1-D"):
        F.packed_causal_attention(q, k, v, [5])
    with pytest.raises(ValueError, match="one shape"):
        F.packed_causal_attention(q, k[:, :1], v, [0, 5])


def test_packed_keeps_less_for_backward_than_padded():
    from skiff.kernels.train.core.memory import measure_saved_bytes

    lens = [32, 8, 16, 8]
    (q, k, v), cu, _ = _packed_inputs(np, "float32", lens=lens)
    packed = measure_saved_bytes(lambda: F.packed_causal_attention(q, k, v, cu).sum())
    pads = [Tensor(_pad(t.numpy(), lens, cu, 32), requires_grad=True) for t in (q, k, v)]
    padded = measure_saved_bytes(lambda: F.scaled_dot_product_attention(*pads).sum())
    assert packed < padded


def test_packed_attention_twins_on_cpu_match_torch_per_sequence():
    """On the CPU the op runs its reference twin (check_op finds no fast CPU implementation to
    compare, so it is asserted empty); the twin's o, lse and dq, dk, dv are compared with
    torch's autograd of dense causal attention, sequence by sequence."""
    (q, k, v), cu, g = _packed_inputs(np)
    scale = 0.5
    assert check_op(PA.packed_attention_fwd, q._data, k._data, v._data, cu, scale) == []
    o, lse = PA.packed_attention_fwd(q._data, k._data, v._data, cu, scale)
    dq, dk, dv = PA.packed_attention_bwd(q._data, k._data, v._data, o, lse, g, cu, scale)
    for a, b in zip(cu[:-1], cu[1:]):
        qt, kt, vt = (torch.tensor(t._data[a:b].transpose(1, 0, 2), requires_grad=True)
                      for t in (q, k, v))  # (H, n, D)
        n = b - a
        mask = torch.triu(torch.full((n, n), float("-inf"), dtype=torch.float64), 1)
        scores = qt @ kt.transpose(1, 2) * scale + mask
        want_lse = torch.logsumexp(scores, -1)  # (H, n)
        want_o = torch.softmax(scores, -1) @ vt
        want_o.backward(torch.tensor(g[a:b].transpose(1, 0, 2)))
        np.testing.assert_allclose(o[a:b], want_o.detach().numpy().transpose(1, 0, 2),
                                   rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(lse[a:b], want_lse.detach().numpy().T, rtol=1e-10)
        for got, t in ((dq, qt), (dk, kt), (dv, vt)):
            np.testing.assert_allclose(got[a:b], t.grad.numpy().transpose(1, 0, 2),
                                       rtol=1e-9, atol=1e-11)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype,tol", [("float32", 1e-4), ("float64", 1e-10)])
def test_gpu_rawkernels_match_reference(dtype, tol):
    from skiff.kernels.backend import cupy

    cp = cupy()
    (q, k, v), cu, g = _packed_inputs(cp, dtype)
    args = (q._data, k._data, v._data, cu, 0.5)
    assert check_op(PA.packed_attention_fwd, *args, rtol=tol, atol=tol, require_fast=True)
    o, lse = PA.packed_attention_fwd.reference(*args)
    gd = cp.asarray(g, dtype=dtype)
    assert check_op(PA.packed_attention_bwd, q._data, k._data, v._data, o, lse, gd, cu, 0.5,
                    rtol=tol, atol=tol, require_fast=True)


@pytest.mark.skipif(shutil.which("nvcc") is None and not __import__("os").path.exists(
    "/usr/local/bin/nvcc"), reason="nvcc not installed")
def test_cuda_source_compiles_with_nvcc(tmp_path):
    nvcc = shutil.which("nvcc") or "/usr/local/bin/nvcc"
    out = tmp_path / "packed_attention.ptx"
    res = subprocess.run([nvcc, "-ptx", "-std=c++14", str(PA.CUDA_SOURCE), "-o", str(out)],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    ptx = out.read_text()
    for name in ("packed_attn_fwd_f32", "packed_attn_bwd_dq_f32", "packed_attn_bwd_dkdv_f64"):
        assert f".entry {name}" in ptx
