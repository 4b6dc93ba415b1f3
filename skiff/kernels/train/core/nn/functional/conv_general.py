"""``conv2d``'s torch arguments beyond the fused node: ``dilation`` (the kernel spread with
zeros, a differentiable write into a zero weight), ``groups`` (one convolution per group of
channels, concatenated; ``groups == channels`` is a depthwise convolution, one node of
:mod:`.conv_depthwise`) and ``padding``
``"same"``/``"valid"`` (torch's split of an odd total: the extra on the right). The plain case
stays on :class:`.conv.Conv2dFn`. tests/kernels/train/core/test_torch_gaps_r26.py compares
values and gradients with torch in float64.
"""

from __future__ import annotations

from ... import tensor as T
from .pad_modes import pad_copying


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def dilate(weight, dilation):
    dh, dw = dilation
    if (dh, dw) == (1, 1):
        return weight
    o, i, kh, kw = weight.shape
    zeros = T.zeros(o, i, (kh - 1) * dh + 1, (kw - 1) * dw + 1, dtype=weight.dtype,
                    device=weight.device)
    zeros[:, :, ::dh, ::dw] = weight
    return zeros


def same_padding(weight_shape, dilation, stride):
    """torch's ``padding="same"``: (left, right, top, bottom) for ``F.pad``."""
    if _pair(stride) != (1, 1):
        raise ValueError("padding='same' is not supported for strided convolutions (torch's "
                         "rule): give the padding as numbers")
    kh, kw = weight_shape[-2:]
    th, tw = dilation[0] * (kh - 1), dilation[1] * (kw - 1)
    return (tw // 2, tw - tw // 2, th // 2, th - th // 2)


def conv2d_general(x, weight, bias, stride, padding, dilation, groups, plain):
    """``plain(x, w, b, stride, padding)`` is the fused node's conv2d."""
    dilation = _pair(dilation)
    if isinstance(padding, str):
        if padding == "valid":
            padding = 0
        elif padding == "same":
            lr_tb = same_padding(weight.shape, dilation, stride)
            if any(lr_tb):
                from .extra import pad

                x = pad(x, lr_tb)
            padding = 0
        else:
            raise ValueError(f"conv2d padding {padding!r}: a number, a pair, 'same' or 'valid'")
    w = dilate(weight, dilation)
    if groups == 1:
        return plain(x, w, bias, stride, padding)
    c, o = x.shape[1], weight.shape[0]
    if c % groups or o % groups or weight.shape[1] * groups != c:
        raise ValueError(f"conv2d groups={groups}: input channels {c} and out channels {o} "
                         f"must divide by it, and the weight {tuple(weight.shape)} must have "
                         f"{c // groups if c % groups == 0 else '?'} input channels per group")
    ci, co = c // groups, o // groups
    if ci == 1 and x.ndim == 4:  # depthwise (a channel multiplier included): one node
        from .conv_depthwise import depthwise_conv2d

        return depthwise_conv2d(x, w, bias, _pair(stride), _pair(padding))
    outs = [plain(x[:, g * ci:(g + 1) * ci], w[g * co:(g + 1) * co],
                  None if bias is None else bias[g * co:(g + 1) * co], stride, padding)
            for g in range(groups)]
    return T.cat(outs, axis=1)


def pad_for_mode(x, padding, mode, kernel=None, dilation=(1, 1)):
    """``Conv2d(padding_mode=...)``: the input padded by ``mode`` (then convolved unpadded).
    ``padding="same"`` pads ``dilation * (k - 1)`` per axis, the smaller half first (torch's
    ``_reversed_padding_repeated_twice``); ``"valid"`` pads nothing."""
    if padding == "valid":
        return x
    if padding == "same":
        (kh, kw), (dh, dw) = _pair(kernel), _pair(dilation)
        th, tw = dh * (kh - 1), dw * (kw - 1)
        return pad_copying(x, (tw // 2, tw - tw // 2, th // 2, th - th // 2), mode)
    ph, pw = _pair(padding)
    return pad_copying(x, (pw, pw, ph, ph), mode)
