"""``from skiff.autograd import Function`` as a porter writes ``from torch.autograd import
Function``: a ctx-style function's value and gradient equal torch's in float64."""

import numpy as np
import torch


def _clamp_grad_function(autograd_module):
    class ClampedSquare(autograd_module.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return (2 * x * g).clamp(-1.0, 1.0)

    return ClampedSquare


def test_function_imported_from_skiff_autograd_equals_torch():
    import skiff
    from skiff import autograd
    from skiff.autograd import Function, no_grad

    assert autograd.Function is Function and skiff.autograd is autograd
    x0 = np.linspace(-2.0, 2.0, 9)
    xs = skiff.tensor(x0, requires_grad=True)
    xt = torch.tensor(x0, requires_grad=True)
    ys = _clamp_grad_function(autograd).apply(xs)
    yt = _clamp_grad_function(torch.autograd).apply(xt)
    (ys * skiff.tensor(x0)).sum().backward()
    (yt * torch.tensor(x0)).sum().backward()
    np.testing.assert_allclose(ys.detach().numpy(), yt.detach().numpy(), rtol=0, atol=1e-15)
    np.testing.assert_allclose(xs.grad.numpy(), xt.grad.numpy(), rtol=0, atol=1e-15)
    with no_grad():
        assert not (xs * 2).requires_grad
