"""torch's ``torch.random.fork_rng``: a block whose draws leave skiff's generator state as it
was (saved on entry, restored on exit, also after an exception). ``devices`` and
``device_type`` are accepted for torch's code: skiff's one generator serves every device."""

from __future__ import annotations

import contextlib

from .torch_runtime import get_rng_state, set_rng_state

__all__ = ["fork_rng"]


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices",
             device_type="cuda"):
    if not enabled:
        yield
        return
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)
