"""Keep freed array buffers in the process heap instead of returning them to the OS.

A training step allocates and frees the same few-MB temporaries hundreds of times. glibc
serves blocks above its mmap threshold with fresh ``mmap`` pages and unmaps them on free, so
every temporary pays ~1000 page faults on first touch; that doubled the time of a numpy
GELU backward (measured: 5.1 ms -> 1.6 ms for 1 M float32 elements). Raising the mmap
threshold and the trim threshold makes glibc reuse the memory, the way PyTorch's CPU
allocator caches blocks. Linux/glibc only; ``SKIFF_MALLOC_TUNE=0`` turns it off.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD = -1, -2, -3
_done = False


def tune_allocator(mmap_threshold=32 << 20, trim_threshold=512 << 20, top_pad=64 << 20) -> bool:
    """Apply the glibc settings once per process; returns whether they were applied."""
    global _done
    if _done:
        return True
    if os.environ.get("SKIFF_MALLOC_TUNE", "1") == "0" or not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        ok = (libc.mallopt(M_MMAP_THRESHOLD, mmap_threshold)
              and libc.mallopt(M_TRIM_THRESHOLD, trim_threshold)
              and libc.mallopt(M_TOP_PAD, top_pad))
    except (OSError, AttributeError):
        return False
    _done = bool(ok)
    return _done
