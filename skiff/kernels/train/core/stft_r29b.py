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


def istft(input, n_fft, hop_length=None, win_length=None, window=None, center=True,  # noqa: A002
          normalized=False, onesided=None, length=None, return_complex=False):
    """torch's ``istft``: the inverse of :func:`stft` by overlap-add, divided by the summed
    squared window (torch's least-squares inverse); ``length`` trims or zero-pads."""
    from . import fft_r28 as fft
    from .tensor import Tensor

    spec = input
    if spec.ndim not in (2, 3):
        raise ValueError(f"istft: expected a 2-D or 3-D (batch, freq, frames) input, got "
                         f"{spec.ndim}-D")
    if return_complex:
        raise NotImplementedError("istft(return_complex=True) is not here: a real signal is "
                                  "returned (the usual case)")
    n_fft = int(n_fft)
    hop = int(hop_length) if hop_length is not None else n_fft // 4
    win = int(win_length) if win_length is not None else n_fft
    squeeze = spec.ndim == 2
    if squeeze:
        spec = spec.unsqueeze(0)
    b, n_freq, n_frames = (int(s) for s in spec.shape)
    one = (n_freq != n_fft) if onesided is None else bool(onesided)
    if one and n_freq != n_fft // 2 + 1:
        raise RuntimeError(f"istft: expected the frequency axis to be n_fft // 2 + 1 = "
                           f"{n_fft // 2 + 1} (one-sided), got {n_freq}")
    cols = spec.transpose(1, 2)
    frames = fft.irfft(cols, n=n_fft, dim=-1) if one else fft.ifft(cols, dim=-1).real
    if normalized:
        frames = frames * float(np.sqrt(n_fft))
    if window is None:
        w_np = np.ones(win)
        w = None
    else:
        w_np = np.asarray(getattr(window, "_data", window), np.float64)
        w = window
    left = (n_fft - win) // 2
    if left or n_fft - win - left:
        w_np = np.pad(w_np, (left, n_fft - win - left))
        w = None
    if w is None:
        w = Tensor._make(frames.xp.asarray(w_np, dtype=frames.dtype), False, None, 0)
    frames = frames * w
    total = n_fft + hop * (n_frames - 1)
    pos = (np.arange(n_frames)[:, None] * hop + np.arange(n_fft)[None, :]).reshape(-1)
    zeros = Tensor._make(frames.xp.zeros((b, total), dtype=frames.dtype), False, None, 0)
    y = zeros.index_add(1, Tensor._make(frames.xp.asarray(pos), False, None, 0),
                        frames.reshape(b, -1))
    env = np.zeros(total)
    np.add.at(env, pos, np.tile(w_np ** 2, n_frames))
    start = n_fft // 2 if center else 0
    end = total - (n_fft // 2 if center else 0) if length is None else start + int(length)
    stop = min(end, total)
    if np.abs(env[start:stop]).min(initial=1.0) < 1e-11:
        raise RuntimeError("istft: window overlap add min: the window's squared sum is zero "
                           "somewhere (use a window and hop_length that overlap, e.g. a Hann "
                           "window with hop_length <= n_fft // 2)")
    out = y[:, start:stop] / Tensor._make(frames.xp.asarray(env[start:stop], dtype=frames.dtype),
                                          False, None, 0)
    if end > stop:
        pad = Tensor._make(frames.xp.zeros((b, end - stop), dtype=frames.dtype), False, None, 0)
        from .tensor import cat

        out = cat([out, pad], dim=1)
    return out.squeeze(0) if squeeze else out
