"""Differentiating a gradient taken without ``create_graph=True`` is refused as torch refuses
it, and the message says what to pass (it spoke of no_grad and of inputs without
requires_grad, which a PINN user had set)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import skiff


def _first_derivative(lib):
    x = lib.tensor(np.linspace(0.0, 1.0, 5), requires_grad=True)
    (du,) = lib.autograd.grad((x ** 3).sum(), x)   # no create_graph
    return x, du


@pytest.mark.parametrize("how", ["grad", "grad-create", "backward"])
def test_a_second_derivative_without_create_graph_says_so(how):
    tx, tdu = _first_derivative(torch)
    x, du = _first_derivative(skiff)
    calls = {"grad": lambda lib, d, v: lib.autograd.grad(d.sum(), v),
             "grad-create": lambda lib, d, v: lib.autograd.grad(d.sum(), v, create_graph=True),
             "backward": lambda lib, d, v: d.sum().backward()}
    with pytest.raises(RuntimeError):   # the oracle refuses it too
        calls[how](torch, tdu, tx)
    with pytest.raises(RuntimeError, match="create_graph=True"):
        calls[how](skiff, du, x)
    # and with create_graph the second derivative is torch's (6 x)
    (d1,) = skiff.autograd.grad((x ** 3).sum(), x, create_graph=True)
    (d2,) = skiff.autograd.grad(d1.sum(), x)
    np.testing.assert_allclose(np.asarray(d2.numpy()), 6 * np.linspace(0.0, 1.0, 5), atol=1e-12)
