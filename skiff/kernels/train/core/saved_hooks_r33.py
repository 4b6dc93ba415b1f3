"""torch's ``autograd.graph.saved_tensors_hooks`` and ``save_on_cpu`` (round 33).

Inside ``with saved_tensors_hooks(pack, unpack):`` every array an op keeps for backward is
handed to ``pack`` as a tensor when the op runs, and what ``pack`` returned is handed to
``unpack`` when backward first reads it (the result, a tensor, stands for the array): the
tutorial's offloading to disk or to the host, compression, or counting what a model keeps.
Scalars and ``None`` pass untouched. ``save_on_cpu`` packs each array to the host and puts it
back on its device when unpacked (on the CPU a no-op). The innermost open context applies, as
torch's.
"""

from __future__ import annotations

from . import autograd as _ag

__all__ = ["saved_tensors_hooks", "save_on_cpu"]


class _Packed(tuple):
    """A node's saved arrays as packed objects; reading them (iteration, indexing) unpacks each
    once and keeps the arrays."""

    def __new__(cls, packed, unpack):
        self = super().__new__(cls, packed)
        self._unpack, self._arrays = unpack, None
        return self

    def _all(self):
        if self._arrays is None:
            from .tensor import Tensor

            out = []
            for kind, p in super().__iter__():
                if kind:
                    got = self._unpack(p)
                    out.append(got._data if isinstance(got, Tensor) else got)
                else:
                    out.append(p)
            self._arrays = tuple(out)
        return self._arrays

    def __iter__(self):
        return iter(self._all())

    def __getitem__(self, i):
        return self._all()[i]


class saved_tensors_hooks:
    """torch's ``autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook)``."""

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook, self.unpack_hook = pack_hook, unpack_hook

    def pack_all(self, arrays):
        from .tensor import Tensor

        packed = []
        for a in arrays:
            if type(a).__name__ == "ndarray":  # a numpy or cupy array (not a scalar)
                packed.append((True, self.pack_hook(Tensor._make(a, False, None, 0))))
            else:
                packed.append((False, a))
        return _Packed(packed, self.unpack_hook)

    def __enter__(self):
        _ag.SAVED_HOOKS.append(self)
        return self

    def __exit__(self, *exc):
        _ag.SAVED_HOOKS.remove(self)
        return False


class save_on_cpu(saved_tensors_hooks):
    """torch's ``autograd.graph.save_on_cpu(pin_memory=False, device_type="cuda")``: saved
    arrays wait on the host and go back to their device for backward."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda"):
        def pack(t):
            return t.device, t.cpu()

        def unpack(packed):
            device, t = packed
            return t.to(device)

        super().__init__(pack, unpack)
