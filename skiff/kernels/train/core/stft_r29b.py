"""torch's ``stft`` for ported audio code (spectrogram features and multi-resolution STFT
losses): frames by ``unfold``, the window, then ``fft.rfft`` (or ``fft.fft`` two-sided), all
differentiable; ``center`` pads by ``n_fft // 2`` with ``pad_mode`` first, as torch's."""

from __future__ import annotations

import numpy as np


def stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True,  # noqa: A002
         pad_mode="reflect", normalized=False, onesided=None, return_complex=None):
    """torch's ``stft``: ``(..., n_fft // 2 + 1, frames)`` complex (``onesided``), or the
    real view with a last axis of 2 for ``return_complex=False``."""
    from . import fft_r28 as fft
    from .nn import functional as F
    from .tensor import Tensor

    x = input
    if x.ndim not in (1, 2):
        raise ValueError(f"stft: expected a 1-D or 2-D (batch, time) input, got {x.ndim}-D")
    complex_in = x.dtype.kind == "c"
    if return_complex is None:
        if not complex_in:
            raise RuntimeError("stft requires the return_complex parameter be given for real "
                               "inputs, and will further require that return_complex=True in "
                               "a future PyTorch release.")
        return_complex = True
    n_fft = int(n_fft)
    hop = int(hop_length) if hop_length is not None else n_fft // 4
    win = int(win_length) if win_length is not None else n_fft
    if not 0 < win <= n_fft:
        raise RuntimeError(f"stft: expected 0 < win_length <= n_fft, but got win_length={win}")
    if hop <= 0:
        raise RuntimeError(f"stft: expected hop_length > 0, but got hop_length={hop}")
    squeeze = x.ndim == 1
    if squeeze:
        x = x.unsqueeze(0)
    if center:
        x = F.pad(x.unsqueeze(1), (n_fft // 2, n_fft // 2), mode=pad_mode).squeeze(1)
    if x.shape[-1] < n_fft:
        raise RuntimeError(f"stft: expected 0 < n_fft <= {x.shape[-1]} (the padded length), "
                           f"but got n_fft={n_fft}")
    if window is None:
        w = np.ones(win)
    else:
        if tuple(window.shape) != (win,):
            raise RuntimeError(f"stft: expected a 1-D window of win_length {win}, got shape "
                               f"{tuple(window.shape)}")
        w = window
    left = (n_fft - win) // 2
    if left or n_fft - win - left:
        w = np.asarray(getattr(w, "_data", w))
        w = np.pad(w, (left, n_fft - win - left))
    if not isinstance(w, Tensor):
        w = Tensor._make(x.xp.asarray(w, dtype=x.dtype if not complex_in else
                                      np.float64), False, None, 0)
    frames = x.unfold(-1, n_fft, hop) * w
    one = (not complex_in) if onesided is None else bool(onesided)
    spec = fft.rfft(frames, dim=-1) if one else fft.fft(frames, dim=-1)
    if normalized:
        spec = spec * (1.0 / np.sqrt(n_fft))
    spec = spec.transpose(-1, -2)
    if squeeze:
        spec = spec.squeeze(0)
    if not return_complex:
        from .complex_r28 import view_as_real

        return view_as_real(spec)
    return spec
