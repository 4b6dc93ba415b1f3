"""Elementwise work split over threads (skiff.kernels.backend.split): the pieces cover the
range once, errors come back, nesting runs inline, and every kernel that splits gives on two
threads what it gives on one (the same bits for numpy passes, to 1 ulp for numba loops)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from skiff.kernels.backend import split
from skiff.kernels.backend.split import pieces, set_work_threads, split_range, work_threads


@pytest.fixture
def threads():
    """Set the elementwise thread count for one test, from the environment's before (an
    earlier test in the same process may have set it: ``skiff.set_num_threads``), restored
    after."""
    set_work_threads(None)
    yield set_work_threads
    set_work_threads(None)


@pytest.mark.parametrize("n,parts,align", [(10, 3, 1), (1000, 2, 512), (1025, 4, 512),
                                           (7, 5, 4), (0, 2, 1), (513, 2, 512)])
def test_pieces_cover_the_range_once_on_aligned_bounds(n, parts, align):
    spans = pieces(n, parts, align)
    covered = [i for lo, hi in spans for i in range(lo, hi)]
    assert covered == list(range(n))
    assert len(spans) <= parts
    assert all(lo % align == 0 for lo, _ in spans)


def test_split_range_visits_each_index_once_on_several_threads():
    seen = np.zeros(1000, dtype=np.int64)
    names = set()

    def fn(lo, hi):
        seen[lo:hi] += 1
        names.add(threading.current_thread().name)

    split_range(fn, 1000, min_size=100, threads=3)
    assert (seen == 1).all()
    assert threading.current_thread().name in names  # the caller takes the first piece
    assert any(name.startswith("skiff-split") for name in names)


def test_small_work_runs_inline_and_a_piece_error_comes_back():
    calls = []
    split_range(lambda lo, hi: calls.append((lo, hi)), 50, min_size=100, threads=4)
    assert calls == [(0, 50)]

    def fail(lo, hi):
        if lo > 0:
            raise ValueError(f"piece {lo}")

    with pytest.raises(ValueError, match="piece"):
        split_range(fail, 400, min_size=100, threads=2)


def test_a_split_inside_a_pool_piece_runs_inline():
    inner = []

    def outer(lo, hi):
        mine = threading.current_thread().name
        split_range(lambda a, b: inner.append((mine, threading.current_thread().name, a, b)),
                    1000, min_size=10, threads=2)

    split_range(outer, 1000, min_size=10, threads=2)
    from_pool = [t for t in inner if t[0].startswith("skiff-split")]
    assert from_pool == [(from_pool[0][0], from_pool[0][0], 0, 1000)]
    from_caller = sorted(t[2:] for t in inner if not t[0].startswith("skiff-split"))
    assert from_caller == [(0, 500), (500, 1000)]  # the caller's own split still splits


def test_thread_count_follows_the_environment_and_the_override(monkeypatch, threads):
    monkeypatch.setattr(split, "cpu_count", lambda: 4)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert work_threads() == 1
    monkeypatch.delenv("OMP_NUM_THREADS")
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "16")
    assert work_threads() == 4  # never more than the cores
    monkeypatch.delenv("OPENBLAS_NUM_THREADS")
    assert work_threads() == 4
    threads(2)
    assert work_threads() == 2


def _one_and_two(threads, fn):
    threads(1)
    one = fn()
    threads(2)
    two = fn()
    return one, two


def _same(one, two, ulp=0):
    """Equal bits (``ulp=0``: numpy passes), or within ``ulp`` units in the last place (numba
    loops under fastmath round by the arrays' alignment, split or not)."""
    one = one if isinstance(one, tuple) else (one,)
    two = two if isinstance(two, tuple) else (two,)
    for a, b in zip(one, two):
        if a is None:
            continue
        assert a.dtype == b.dtype and a.shape == b.shape
        if ulp:
            # ulps of the array's scale: fastmath's alignment-dependent rounding of a tiny
            # value (a GELU tail of 1e-19) counts thousands of ulps of that value (CI saw
            # 5040) while it is 1e-26 away, far below the last bit of anything near it
            eps = np.finfo(a.dtype).eps
            np.testing.assert_allclose(a, b, rtol=ulp * eps,
                                       atol=ulp * eps * float(np.abs(a).max(initial=0.0)))
        else:
            assert np.array_equal(a, b), np.abs(a - b).max()


def test_onnx_activations_split_to_the_last_bit(threads):
    pytest.importorskip("numba")
    from skiff.kernels.train.onnx.activations import (
        affine_hswish_bwd,
        affine_hswish_fwd,
        gelu_erf_bwd,
        gelu_erf_fwd,
    )

    rng = np.random.default_rng(0)
    x = (rng.standard_normal(300_001) * 3).astype(np.float32)  # not a multiple of any block
    g = rng.standard_normal(x.size).astype(np.float32)
    for fn in (lambda: gelu_erf_fwd(x), lambda: gelu_erf_bwd(g, x),
               lambda: affine_hswish_fwd(x, 0.8, 0.3, 1.2, -0.1),
               lambda: affine_hswish_bwd(g, x, 0.96)):
        _same(*_one_and_two(threads, fn), ulp=1)


def test_log_softmax_and_conv_split_bit_for_bit(threads):
    from skiff.kernels.train.core.nn.functional import conv2d, log_softmax
    from skiff.kernels.train.core.tensor import Tensor

    rng = np.random.default_rng(1)
    logits = rng.standard_normal((8, 40, 700)).astype(np.float32)
    x = rng.standard_normal((4, 24, 40, 80)).astype(np.float32)
    w = rng.standard_normal((16, 24, 3, 3)).astype(np.float32)

    def run_log_softmax():
        t = Tensor(logits, requires_grad=True)
        y = log_softmax(t, axis=-1)
        (y * Tensor(np.linspace(-1, 1, 700, dtype=np.float32))).sum().backward()
        return y.data, t.grad

    def run_conv():
        tx, tw = Tensor(x, requires_grad=True), Tensor(w, requires_grad=True)
        y = conv2d(tx, tw, None, stride=1, padding=1)
        (y * y).sum().backward()
        return np.ascontiguousarray(y.data), tx.grad, tw.grad

    for fn in (run_log_softmax, run_conv):
        _same(*_one_and_two(threads, fn))


def test_depthwise_split_to_the_last_bit(threads):
    pytest.importorskip("numba")
    from skiff.kernels.train.onnx.depthwise import depthwise_bwd, depthwise_fwd

    rng = np.random.default_rng(2)
    xt = rng.standard_normal((48, 4, 24, 84)).astype(np.float32)
    w = rng.standard_normal((48, 5, 5)).astype(np.float32)
    out = depthwise_fwd(xt, w, 1, 1, 20, 80)
    g = rng.standard_normal(out.shape).astype(np.float32)
    for fn in (lambda: depthwise_fwd(xt, w, 1, 1, 20, 80),
               lambda: depthwise_bwd(g, xt, w, 1, 1, True, True)):
        _same(*_one_and_two(threads, fn), ulp=1)


def test_adamw_update_splits_bit_for_bit(threads):
    pytest.importorskip("numba")
    from skiff.kernels.train.core.optim import adamw_update

    rng = np.random.default_rng(4)
    p0, g = (rng.standard_normal(400_003).astype(np.float32) for _ in range(2))

    def step():
        p, m, v = p0.copy(), np.full_like(p0, 0.01), np.full_like(p0, 0.02)
        return adamw_update(p, g, m, v, 1e-3, 0.9, 0.999, 1e-8, 0.01, 3)

    _same(*_one_and_two(threads, step))


def test_split_rows_gives_each_piece_at_least_min_size_elements(threads):
    from skiff.kernels.backend.split import MIN_SIZE, split_rows

    threads(2)
    calls = []
    split_rows(lambda lo, hi: calls.append((lo, hi)), 10, MIN_SIZE + 1)
    assert calls == [(0, 10)]  # the whole pass is under two pieces' worth: one call
    calls.clear()
    split_rows(lambda lo, hi: calls.append((lo, hi)), 10, 10 * MIN_SIZE)
    assert sorted(calls) == [(0, 5), (5, 10)]


def test_import_skiff_shortens_openblas_spin_unless_the_user_set_it():
    """`import skiff` sets OPENBLAS_THREAD_TIMEOUT (read by OpenBLAS when it loads) only
    where nothing set it, so job processes and the CLI inherit it and a user's value wins."""
    import os
    import subprocess
    import sys

    code = "import os, skiff; print(os.environ['OPENBLAS_THREAD_TIMEOUT'])"
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True)
    assert out.stdout.strip() == "20"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={**env, "OPENBLAS_THREAD_TIMEOUT": "7"})
    assert out.stdout.strip() == "7"
