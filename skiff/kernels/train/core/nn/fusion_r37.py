"""torch's ``nn.utils.fuse_conv_bn_eval``/``fuse_conv_bn_weights``/``fuse_linear_bn_eval``/
``fuse_linear_bn_weights``: an eval-mode batch norm folded into the layer before it (a
deployment step of ported inference code), torch's formulas and checks."""

from __future__ import annotations

import copy

from .module import Parameter

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval",
           "fuse_linear_bn_weights"]


def _ones_or(t, like, value):
    return t if t is not None else (like * 0 + value).detach()


def fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, transpose=False):
    """The folded ``(weight, bias)`` Parameters: ``w * gamma / sqrt(var + eps)`` per output
    channel (dim 1 of a transposed convolution's weight) and ``(b - mean) gamma / sqrt(var +
    eps) + beta``."""
    w_dtype = conv_w.dtype
    b_dtype = conv_b.dtype if conv_b is not None else w_dtype
    conv_b, bn_w, bn_b = (_ones_or(conv_b, bn_rm, 0.0), _ones_or(bn_w, bn_rm, 1.0),
                          _ones_or(bn_b, bn_rm, 0.0))
    rsqrt = (bn_rv + bn_eps).rsqrt()
    shape = [1, -1] if transpose else [-1, 1]
    shape += [1] * (len(conv_w.shape) - 2)
    w = (conv_w * (bn_w * rsqrt).reshape(shape)).to(dtype=w_dtype)
    b = ((conv_b - bn_rm) * rsqrt * bn_w + bn_b).to(dtype=b_dtype)
    return (Parameter(w.detach(), requires_grad=conv_w.requires_grad),
            Parameter(b.detach(), requires_grad=conv_b.requires_grad))


def fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b):
    w_dtype = linear_w.dtype
    b_dtype = linear_b.dtype if linear_b is not None else w_dtype
    linear_b = _ones_or(linear_b, bn_rm, 0.0)
    scale = bn_w * (bn_rv + bn_eps).rsqrt()
    w = linear_w * scale.unsqueeze(-1).to(dtype=w_dtype)
    b = ((linear_b - bn_rm) * scale + bn_b).to(dtype=b_dtype)
    return (Parameter(w.detach(), requires_grad=linear_w.requires_grad),
            Parameter(b.detach(), requires_grad=linear_b.requires_grad))


def _check(layer, bn):
    if layer.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    if getattr(bn, "running_mean", None) is None or getattr(bn, "running_var", None) is None:
        raise AssertionError("bn.running_mean and bn.running_var must not be None")


def fuse_conv_bn_eval(conv, bn, transpose=False):
    """A copy of ``conv`` with ``bn`` (both in eval mode) folded in."""
    _check(conv, bn)
    fused = copy.deepcopy(conv)
    fused.weight, fused.bias = fuse_conv_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias,
        transpose)
    return fused


def fuse_linear_bn_eval(linear, bn):
    """A copy of ``linear`` with ``bn`` (both in eval mode) folded in."""
    _check(linear, bn)
    if linear.out_features != bn.num_features and bn.num_features != 1:
        raise AssertionError(
            f"To fuse, linear.out_features == bn.num_features or bn.num_features == 1, got "
            f"linear.out_features={linear.out_features} and bn.num_features={bn.num_features}")
    fused = copy.deepcopy(linear)
    fused.weight, fused.bias = fuse_linear_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias)
    return fused


