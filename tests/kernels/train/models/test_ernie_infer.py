"""ERNIE-4.5's inference fast path (``ernie_infer``): fused weights and fused kernels.

* each numba kernel and the onnxruntime GEMM against its numpy reference twin
  (``check_op``), over shapes that hit the kernels' remainders (an odd number of weight
  rows, rows not a multiple of four);
* the fast path's logits (a packed prefill, ``last_only``, decode steps on the key/value
  cache, rows at different positions) against transformers on the same checkpoint, for
  every shape of the equality tests (dense and MoE, biases, tied or untied head);
* the fused weights follow the parameters: an in-place edit (an optimizer step), a
  replaced ``.data`` (``load_state_dict``), and a parameter that is a view of another
  buffer (not re-pointed) all give the graph path's logits.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

from skiff.kernels.backend import numba_available
from skiff.kernels.backend.testing import check_op
from skiff.kernels.train.core.tensor import no_grad
from skiff.kernels.train.models import ernie_infer, ernie_kernels
from skiff.kernels.train.models.ernie import KVCache
from skiff.kernels.train.models.ernie_generate import PackedKVCache
from skiff.kernels.train.models.hf_checkpoint import from_pretrained

from .ernie_reference import make_checkpoint, shape_pair, torch
from .ernie_reference import random_ids as _ids

pair = shape_pair  # the fixture (each of the SHAPES), under the name the tests use


def _close(got, want, name):
    scale = np.abs(want).max()
    assert np.abs(got - want).max() <= 1e-4 * scale, name


@pytest.mark.parametrize("rows,n,c", [(1, 7, 16), (3, 9, 32), (8, 64, 40), (5, 1, 8)])
def test_kernels_equal_their_numpy_twins(rows, n, c):
    rng = np.random.default_rng(rows + n)
    x = rng.standard_normal((rows, c)).astype(np.float32)
    w = rng.standard_normal((n, c)).astype(np.float32)
    fast = numba_available()
    check_op(ernie_kernels.few_rows_matmul, x, w, rtol=1e-5, atol=1e-5, require_fast=fast)
    check_op(ernie_kernels.rms_norm_rows, x, w[0] + 1.5, 1e-5, rtol=1e-5, atol=1e-6,
             require_fast=fast)
    check_op(ernie_kernels.swiglu_rows, rng.standard_normal((rows, 2 * c)).astype(np.float32),
             rtol=1e-5, atol=1e-6, require_fast=fast)
    D = 8
    buf = rng.standard_normal((rows, 5 * D)).astype(np.float32)
    ang = rng.uniform(0, 6, (rows, D // 2)).astype(np.float32)
    check_op(ernie_kernels.rotary_rows_, buf, np.cos(ang), np.sin(ang), 3, D, rtol=1e-5,
             atol=1e-6, require_fast=fast)
    many = rng.standard_normal((rows * 9, c)).astype(np.float32)  # 9..72 rows
    check_op(ernie_kernels.mid_rows_matmul, many, w, rtol=1e-4, atol=1e-4)
    # the untouched heads stay as they were
    out = ernie_kernels.rotary_rows_(buf.copy(), np.cos(ang), np.sin(ang), 3, D)
    assert np.array_equal(out[:, 3 * D:], buf[:, 3 * D:])


def test_fast_path_logits_equal_transformers(pair):
    """Full logits and last-only logits of a prefill, then decode steps on the cache."""
    name, ref, model = pair
    assert ernie_infer.fast_path(model) is not None, name
    ids = _ids(model.config.vocab_size, (2, 11), seed=4)
    with torch.no_grad():
        want = ref(torch.tensor(ids)).logits.numpy()
    with no_grad():
        _close(model(ids).numpy(), want, name)
        _close(model(ids[:, :7], last_only=True).numpy()[:, 0], want[:, 6], name)
        cache = KVCache(len(model.model.layers), 11)
        _close(model(ids[:, :7], cache, last_only=True).numpy()[:, 0], want[:, 6], name)
        for t in range(7, 11):  # one position per step, every row at the same position
            _close(model(ids[:, t:t + 1], cache).numpy()[:, 0], want[:, t], name)
        assert cache.length == 11


def test_packed_prefill_and_ragged_steps_equal_transformers(pair):
    """Prompts of different lengths: one packed prefill (last-only and full), then steps
    with rows at their own positions, and steps for a subset of rows."""
    name, ref, model = pair
    seqs = [_ids(model.config.vocab_size, (n,), seed=n) for n in (6, 3, 9)]
    want = []
    for s in seqs:
        with torch.no_grad():
            want.append(ref(torch.tensor(s[None])).logits.numpy()[0])
    prompts = [s[:-2] for s in seqs]
    lengths = np.array([len(p) for p in prompts])
    cu = np.concatenate([[0], np.cumsum(lengths)])
    pos = np.concatenate([np.arange(n) for n in lengths])
    with no_grad():
        full = model.forward_packed(np.concatenate(prompts), cu, pos).numpy()
        for b, p in enumerate(prompts):
            _close(full[cu[b]:cu[b + 1]], want[b][:len(p)], name)
        cache = PackedKVCache(len(model.model.layers), lengths, int(lengths.max()) + 2)
        last = model.forward_packed(np.concatenate(prompts), cu, pos, cache=cache,
                                    last_only=True).numpy()
        for b, p in enumerate(prompts):
            _close(last[b], want[b][len(p) - 1], name)
        step = model.forward_step(np.array([s[len(p)] for s, p in zip(seqs, prompts)]),
                                  cache).numpy()
        for b, p in enumerate(prompts):
            _close(step[b], want[b][len(p)], name)
        rows = np.array([2, 0])  # rows 0 and 2 go on, row 1 has stopped
        step = model.forward_step(np.array([seqs[b][len(prompts[b]) + 1] for b in rows]),
                                  cache, rows).numpy()
        for i, b in enumerate(rows):
            _close(step[i], want[b][len(prompts[b]) + 1], name)


def _graph_logits(model, ids):
    with no_grad():
        import os

        os.environ["SKIFF_REFERENCE_OPS"] = "1"  # the graph path, for comparison
        try:
            return model(ids).numpy()
        finally:
            del os.environ["SKIFF_REFERENCE_OPS"]


def test_fused_weights_follow_the_parameters(tmp_path):
    _, ref = make_checkpoint(tmp_path, "dense-gqa-tied")
    model = from_pretrained(tmp_path)
    ids = _ids(model.config.vocab_size, (1, 9), seed=5)
    with no_grad():
        model(ids)  # fuses
    attn = model.model.layers[0].self_attn
    group = ernie_infer.fast_path(model).layers[0].qkv
    assert group.fused is not None and attn.q_proj.weight._data.base is group.fused
    # the parameters still hold the checkpoint's values
    with torch.no_grad():
        assert np.array_equal(attn.k_proj.weight._data, ref.model.layers[0].self_attn.k_proj
                              .weight.numpy())

    def fast():
        with no_grad():
            return model(ids).numpy()

    # an in-place edit (what an optimizer step does) is seen at once
    attn.k_proj.weight._data *= 1.7
    model.model.layers[1].mlp.up_proj.weight._data[3] += 0.5
    assert np.abs(fast() - _graph_logits(model, ids)).max() < 1e-4
    # a replaced array (load_state_dict, a cast) is noticed and fused again
    before = fast()
    attn.v_proj.weight._data = attn.v_proj.weight._data * 0.5
    after = fast()
    assert not np.allclose(before, after)
    assert np.abs(after - _graph_logits(model, ids)).max() < 1e-4
    assert attn.v_proj.weight._data.base is ernie_infer.fast_path(model).layers[0].qkv.fused
    # a view of someone else's buffer is never re-pointed: that group runs unfused
    flat = np.concatenate([p._data.ravel() for p in (attn.q_proj.weight, attn.k_proj.weight,
                                                     attn.v_proj.weight)])
    start = 0
    for p in (attn.q_proj.weight, attn.k_proj.weight, attn.v_proj.weight):
        p._data = flat[start:start + p._data.size].reshape(p._data.shape)
        start += p._data.size
    out = fast()
    assert attn.q_proj.weight._data.base is flat
    assert ernie_infer.fast_path(model).layers[0].qkv.fused is None
    assert np.abs(out - _graph_logits(model, ids)).max() < 1e-4
    flat[:] *= 1.1  # the owner's in-place update is seen too
    assert np.abs(fast() - _graph_logits(model, ids)).max() < 1e-4
    # a copy of the model fuses its own weights
    twin = copy.deepcopy(model)
    twin.model.layers[1].self_attn.q_proj.weight._data *= 0.8
    with no_grad():
        got = twin(ids).numpy()
    assert np.abs(got - _graph_logits(twin, ids)).max() < 1e-4
    assert not np.allclose(got, fast())


def test_training_after_inference_keeps_its_numbers(tmp_path):
    """The graph path's loss and gradients are the same before and after the weights were
    fused (the parameters are views of the fused matrices then)."""
    make_checkpoint(tmp_path, "dense-mha-untied-bias")
    a, b = from_pretrained(tmp_path), from_pretrained(tmp_path)
    ids = _ids(a.config.vocab_size, (2, 8), seed=6)
    b.generate(ids[:, :3], max_new_tokens=2, eos_token_id=None)  # b's weights fused
    assert ernie_infer.fast_path(b).layers[0].gu.fused is not None
    grads = []
    for m in (a, b):
        loss = m.loss((ids[:, :-1], ids[:, 1:]))
        m.zero_grad()
        loss.backward()
        grads.append((loss.item(), {n: p._grad.copy() for n, p in m.named_parameters()}))
    assert abs(grads[0][0] - grads[1][0]) <= 1e-6 * abs(grads[0][0])
    for n, g in grads[0][1].items():  # equal up to the BLAS's rounding on other addresses
        assert np.abs(g - grads[1][1][n]).max() <= 1e-5 * np.abs(g).max() + 1e-8, n


def test_packed_attention_with_large_scores():
    """Scores far beyond float32's exp range (~88): the softmax must still be the float64
    reference's (the packed prefill's chunks and the last-row attention)."""
    from skiff.kernels.train.models.ernie_generate import packed_attention_gqa

    rng = np.random.default_rng(8)
    K, R, D = 2, 3, 8
    lengths = [5, 140, 1]  # one prompt spans two chunks of 128
    cu = np.concatenate([[0], np.cumsum(lengths)])
    N = cu[-1]
    q = (rng.standard_normal((N, K * R, D)) * 10).astype(np.float32)
    k = (rng.standard_normal((N, K, D)) * 10).astype(np.float32)
    v = rng.standard_normal((N, K, D)).astype(np.float32)
    want = np.empty((N, K * R, D))
    for b in range(len(lengths)):
        s, e = cu[b], cu[b + 1]
        for h in range(K * R):
            att = q[s:e, h].astype(np.float64) @ k[s:e, h // R].T.astype(np.float64) * 0.3
            att[np.triu(np.ones((e - s, e - s), dtype=bool), k=1)] = -np.inf
            att = np.exp(att - att.max(axis=1, keepdims=True))
            want[s:e, h] = (att / att.sum(axis=1, keepdims=True)) @ v[s:e, h // R]
    got = packed_attention_gqa(q, k, v, cu, 0.3)
    assert np.abs(q[:, 0] @ k[:, 0].T * 0.3).max() > 200  # exp would overflow
    assert np.isfinite(got).all()
    assert np.abs(got - want).max() < 1e-3
    last = ernie_infer._attention_last(q[cu[1:] - 1], k, v, cu, 0.3)
    assert np.abs(last - want[cu[1:] - 1]).max() < 1e-3
