"""torch's memory-format rules for results (round 45 h7): an op on a channels-last tensor
returns a channels-last result where torch's does (pooling, ``batch_norm``, ``group_norm``,
``interpolate``, ``pad``, ``dropout``, ``conv_transpose2d``; elementwise ops and ``conv2d``
already did), and the ``*_like`` creators keep a dense input's strides (torch's
``preserve_format``) or take ``memory_format=channels_last``. Values never change: skiff's
kernels compute row-major, the result is then copied into the layout (one copy, only when the
input is channels-last).
"""

from __future__ import annotations

import functools
import inspect

import numpy as np

from .top_names_r43 import _LAST_ORDER, _check_format, _dense_order, is_contiguous

__all__ = ["keeps_channels_last", "like_layout"]

_FORMATS: dict = {}


def _format(name):
    if not _FORMATS:
        from . import top_names_r43 as t

        _FORMATS.update(channels_last=t.channels_last, channels_last_3d=t.channels_last_3d)
    return _FORMATS[name]


def format_of(x):
    """``channels_last``/``channels_last_3d`` when tensor ``x`` is laid out so (and not also
    row-major: one channel, or a 1x1 plane); else None. torch's ``suggest_memory_format``."""
    if getattr(x, "_batched", False):  # (a batched vmap tensor refuses ``_data``)
        return None
    a = getattr(x, "_data", None)
    flags = getattr(a, "flags", None)
    if flags is None or flags.c_contiguous:
        return None
    if a.ndim == 4 and a.shape[1] > 1:
        fmt = _format("channels_last")
    elif a.ndim == 5 and a.shape[1] > 1:
        fmt = _format("channels_last_3d")
    else:
        return None
    return fmt if is_contiguous(x, fmt) else None


def _relay(out, fmt):
    if type(out) is tuple:  # (values, indices): both laid out, as torch's
        return tuple(_relay(o, fmt) for o in out)
    if getattr(out, "_batched", False):
        return out
    a = getattr(out, "_data", None)
    if a is None or a.ndim != _LAST_ORDER[fmt._name][0] or is_contiguous(out, fmt):
        return out
    return out.contiguous(memory_format=fmt)


def keeps_channels_last(fn):
    """``fn(x, ...)`` whose result is laid out channels-last when ``x`` is (torch's rule for
    the ops it is put on); the first argument may be given by name."""
    first = next(iter(inspect.signature(fn).parameters))

    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        out = fn(*args, **kwargs)
        x = args[0] if args else kwargs.get(first)
        fmt = format_of(x)
        return out if fmt is None else _relay(out, fmt)

    return wrapped


def like_layout(fn):
    """A ``*_like`` creator taking torch's ``memory_format=``: ``preserve_format`` (the
    default) keeps a dense input's strides (channels-last, transposed), ``channels_last[_3d]``
    lays the result out so, ``contiguous_format`` row-major."""
    first = next(iter(inspect.signature(fn).parameters))

    @functools.wraps(fn)
    def wrapped(*args, memory_format=None, **kwargs):
        _check_format(memory_format)
        out = fn(*args, **kwargs)
        name = getattr(memory_format, "_name", "preserve_format")
        if getattr(out, "_batched", False):
            return out
        a = getattr(out, "_data", None)
        flags = getattr(a, "flags", None)
        if flags is None:
            return out
        if name == "contiguous_format":
            if not flags.c_contiguous:
                out._data = (np if isinstance(a, np.ndarray) else out.xp).ascontiguousarray(a)
            return out
        if name == "preserve_format":
            x = args[0] if args else kwargs.get(first)
            if getattr(x, "_batched", False):
                return out
            perm = _dense_order(getattr(x, "_data", None))
            if perm is None or a.ndim != len(perm):
                return out
        else:
            rank, _ = _LAST_ORDER[name]
            if a.ndim != rank:
                raise RuntimeError(f"required rank {rank} tensor to use {name} format")
            perm = (0, *range(2, rank), 1)
        xp = np if isinstance(a, np.ndarray) else out.xp
        out._data = xp.ascontiguousarray(a.transpose(perm)).transpose(np.argsort(perm))
        return out

    return wrapped
