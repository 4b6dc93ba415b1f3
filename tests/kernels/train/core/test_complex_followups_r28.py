"""Complex tensors' loose ends (round 28): a user's ``autograd.Function`` on complex values
gets torch's gradient (the engine conjugated it as for a real-written rule), the gradient
norm of complex parameters is real as torch's, and gradients of gradients through complex
values are refused by name (their rules are not conjugated yet: they were silently wrong).
Oracle: torch 2.13."""
from __future__ import annotations

import numpy as np
import torch

import skiff

C = np.array([1 + 2j, 3 - 1j, -0.5 + 0.25j])
X = np.array([0.5 - 1j, 2 + 0.25j, -1 + 1j])


def test_custom_function_on_complex_gets_torchs_gradient():
    class TMul(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * torch.tensor(C)

        @staticmethod
        def backward(ctx, g):
            return g * torch.tensor(C).conj()

    class SMul(skiff.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * skiff.tensor(C)

        @staticmethod
        def backward(ctx, g):
            return g * skiff.tensor(C).conj()

    tx = torch.tensor(X, requires_grad=True)
    (TMul.apply(tx).abs() ** 2).sum().backward()
    sx = skiff.tensor(X, requires_grad=True)
    (SMul.apply(sx).abs() ** 2).sum().backward()
    np.testing.assert_allclose(sx.grad.numpy(), tx.grad.numpy(), rtol=1e-12)


def test_clip_grad_norm_of_complex_parameters_is_real():
    g = np.array([3 + 4j, 1j, -2.0], np.complex64)
    tp = torch.nn.Parameter(torch.tensor(np.ones(3, np.complex64)))
    tp.grad = torch.tensor(g)
    want = torch.nn.utils.clip_grad_norm_([tp], 2.0)
    sp = skiff.nn.Parameter(skiff.tensor(np.ones(3, np.complex64)))
    sp.grad = skiff.tensor(g)
    got = skiff.nn.utils.clip_grad_norm_([sp], 2.0)
    assert str(got.dtype) == str(want.dtype).replace("torch.", "")
    np.testing.assert_allclose(float(got), float(want), rtol=1e-6)
    np.testing.assert_allclose(sp.grad.numpy(), tp.grad.numpy(), rtol=1e-6)


def test_create_graph_through_complex_values_follows_torch():
    # round 35: was refused (NoDoubleBackward); now torch's second derivative
    out = []
    for lib in (skiff, torch):
        x = lib.tensor(X, requires_grad=True)
        y = (x * lib.tensor(C)).abs().sum() + ((x * lib.tensor(C)) ** 3).real.sum()
        (g,) = lib.autograd.grad(y, x, create_graph=True)
        (g.abs() ** 2).sum().backward()
        out.append((np.asarray(g.detach()), np.asarray(x.grad)))
    np.testing.assert_allclose(out[0][0], out[1][0], rtol=1e-12)
    np.testing.assert_allclose(out[0][1], out[1][1], rtol=1e-12)
