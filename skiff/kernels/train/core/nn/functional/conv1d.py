"""torch's 1-D functional forms, on the 2-D nodes with a height of one: ``conv1d``,
``max_pool1d``, ``avg_pool1d`` ((N, C, L) or unbatched (C, L)), and ``pairwise_distance``.
``dilation`` and ``groups`` other than 1 are refused with a message (the 2-D node has
neither). tests/kernels/train/core/test_torch_gaps_r26.py compares each with torch.
"""

from __future__ import annotations

from ...tensor import Tensor
from .conv import avg_pool2d, conv2d, max_pool2d

__all__ = ["conv1d", "max_pool1d", "avg_pool1d", "pairwise_distance"]


def _one(v, what):
    v = v[0] if isinstance(v, (tuple, list)) and len(v) == 1 else v
    if not isinstance(v, int):
        raise ValueError(f"{what} takes one int for a 1-D op, got {v!r}")
    return v


def _batched(x, what):
    if x.ndim == 2:
        return x.reshape(1, *x.shape), True
    if x.ndim != 3:
        raise ValueError(f"{what} expects (N, C, L) or (C, L), got {tuple(x.shape)}")
    return x, False


def _plain(dilation, groups, what):
    if _one(dilation, "dilation") != 1 or groups != 1:
        raise ValueError(f"{what}: dilation and groups other than 1 are not here (the 2-D "
                         "node has neither): compose from slices or use groups=1")


def conv1d(input: Tensor, weight: Tensor, bias=None, stride=1, padding=0,  # noqa: A002
           dilation=1, groups=1) -> Tensor:
    _plain(dilation, groups, "conv1d")
    x, single = _batched(input, "conv1d")
    k = weight.shape[-1]
    if padding == "valid":
        padding = 0
    elif padding == "same":
        if _one(stride, "stride") != 1 or k % 2 == 0:
            raise ValueError("conv1d padding='same' is here for stride 1 and an odd kernel")
        padding = k // 2
    n, c, length = x.shape
    w = weight.reshape(weight.shape[0], weight.shape[1], 1, k)
    y = conv2d(x.reshape(n, c, 1, length), w, bias, (1, _one(stride, "stride")),
               (0, _one(padding, "padding")))
    y = y.reshape(n, weight.shape[0], y.shape[-1])
    return y[0] if single else y


def max_pool1d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,  # noqa: A002
               ceil_mode=False, return_indices=False) -> Tensor:
    if ceil_mode or return_indices or _one(dilation, "dilation") != 1:
        from .pool_nd import max_pool_nd, nd_pool_args

        x, single = _batched(input, "max_pool1d")
        out = max_pool_nd(x, *nd_pool_args(x, 1, kernel_size, stride, padding, dilation,
                                           "max_pool1d"), ceil_mode, return_indices)
        if not single:
            return out
        return (out[0][0], out[1][0]) if return_indices else out[0]
    x, single = _batched(input, "max_pool1d")
    k = _one(kernel_size, "kernel_size")
    s = k if stride is None else _one(stride, "stride")
    y = max_pool2d(x.reshape(x.shape[0], x.shape[1], 1, x.shape[2]), (1, k), (1, s),
                   (0, _one(padding, "padding")))
    y = y.reshape(x.shape[0], x.shape[1], y.shape[-1])
    return y[0] if single else y


def avg_pool1d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode=False,  # noqa: A002
               count_include_pad=True) -> Tensor:
    if ceil_mode or _one(padding, "padding"):
        from .pool_nd import avg_pool_nd

        return avg_pool_nd(input, 1, kernel_size, stride, padding, ceil_mode,
                           count_include_pad, None, "avg_pool1d")
    x, single = _batched(input, "avg_pool1d")
    k = _one(kernel_size, "kernel_size")
    s = k if stride is None else _one(stride, "stride")
    y = avg_pool2d(x.reshape(x.shape[0], x.shape[1], 1, x.shape[2]), (1, k), (1, s))
    y = y.reshape(x.shape[0], x.shape[1], y.shape[-1])
    return y[0] if single else y


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6,
                      keepdim: bool = False) -> Tensor:
    """``||x1 - x2 + eps||_p`` over the last axis (torch's eps inside the norm)."""
    d = (x1 - x2 + eps).abs()
    if p == 2:
        return (d * d).sum(-1, keepdim=keepdim).sqrt()
    return (d ** p).sum(-1, keepdim=keepdim) ** (1.0 / p)


def pdist(input: Tensor, p: float = 2.0) -> Tensor:  # noqa: A002 - torch's name
    """torch's ``pdist``: the p-norm distances between the rows of ``input`` (N, M), pairs
    ``i < j`` in row-major order, N (N - 1) / 2 of them; a zero distance has gradient 0."""
    import numpy as np

    from ...ops_linalg import cdist

    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    i, j = np.triu_indices(input.shape[0], 1)
    rows = input.xp.asarray(i), input.xp.asarray(j)
    return cdist(input[rows[0]].unsqueeze(-2), input[rows[1]].unsqueeze(-2), p=p).reshape(-1)
