"""Every op case of the training core's gradient tests (tests/kernels/train/core/op_cases.py),
run on :mod:`.strictcupy` device arrays: the backward equals float64 finite differences (the
oracle, through ``gradcheck`` on the device) and the forward and the gradients equal the CPU
run's, with no array moved to numpy on the way. Those tests' own GPU rows run only where a GPU
is lent; this runs the same cases everywhere."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.train.core.gradcheck import gradcheck
from tests.kernels.train.core.op_cases import CASES
from tests.kernels.train.core.test_ops_grad import _inputs

from . import strictcupy


def _run(case, xp):
    inputs = _inputs(case, xp, "float64")
    out = case["fn"](*inputs)
    outs = out if isinstance(out, tuple) else (out,)
    total = None
    rng = np.random.default_rng(1)
    for o in outs:
        w = xp.asarray(rng.standard_normal(o.shape))
        term = (o * w).sum()
        total = term if total is None else total + term
    total.backward()
    return [o._data for o in outs] + [t._grad for t in inputs if t.requires_grad]


def _host(a):
    return a.get() if isinstance(a, strictcupy.StrictArray) else np.asarray(a)


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_op_case_on_strict_device_arrays(monkeypatch, case):
    if case["name"].startswith("dropout"):  # the device draws its own mask (cupy's generator)
        pytest.skip("random: the device's mask differs from the host's by design")
    want = _run(case, np)
    cp = strictcupy.install(monkeypatch)
    got = _run(case, cp)
    for g, w in zip(got, want, strict=True):
        assert g is None or isinstance(g, cp.ndarray)
        np.testing.assert_allclose(_host(g), _host(w), rtol=1e-12, atol=1e-14)
    assert gradcheck(case["fn"], _inputs(case, cp, "float64"), eps=1e-6, rtol=1e-5, atol=1e-6)
