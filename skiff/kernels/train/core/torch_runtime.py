"""torch's process-wide switches that training scripts call in their first lines:
``set_num_threads``/``get_num_threads`` (skiff's elementwise threads; BLAS keeps the
``OPENBLAS_NUM_THREADS`` it started with), ``use_deterministic_algorithms`` (skiff's CPU ops
are deterministic; on a GPU, atomics-based scatters may not be: recorded, nothing refused),
``set_printoptions`` (numpy's, which a tensor's repr uses), ``set_float32_matmul_precision``
(recorded), ``get_rng_state``/``set_rng_state`` (skiff's generator state as a uint8 tensor, as
torch's, but of skiff's bytes), and ``skiff.cuda``'s ``is_available``, ``device_count``,
``manual_seed``, ...
"""

from __future__ import annotations

import json
import types

import numpy as np

from skiff.kernels.backend import split as _split
from skiff.kernels.backend.devices import gpu_available

from .random import get_state, set_state
from .random import seed as _seed

__all__ = ["set_num_threads", "get_num_threads", "use_deterministic_algorithms",
           "are_deterministic_algorithms_enabled", "set_printoptions",
           "set_float32_matmul_precision", "get_float32_matmul_precision", "get_rng_state",
           "set_rng_state", "cuda", "Generator"]

_STATE = {"deterministic": False, "matmul_precision": "highest"}
PRINT = {"precision": 4}  # a tensor's repr (torch's default); the rest is numpy's


def set_num_threads(n: int) -> None:
    """torch's ``set_num_threads``: the threads skiff splits elementwise work over."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"set_num_threads needs a positive integer, got {n!r}")
    _split.set_work_threads(int(n))


def get_num_threads() -> int:
    return _split.work_threads()


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Recorded (skiff's CPU ops give the same bits run to run)."""
    _STATE["deterministic"] = bool(mode)


def are_deterministic_algorithms_enabled() -> bool:
    return _STATE["deterministic"]


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     profile=None, sci_mode=None) -> None:
    """torch's ``set_printoptions`` through numpy's (``profile``: "default", "short", "full")."""
    opts = {"default": dict(precision=4, threshold=1000, edgeitems=3, linewidth=80),
            "short": dict(precision=2, threshold=1000, edgeitems=2, linewidth=80),
            "full": dict(precision=4, threshold=np.inf, edgeitems=3, linewidth=80)}
    kw = dict(opts[profile]) if profile is not None else {}
    for k, v in (("precision", precision), ("threshold", threshold),
                 ("edgeitems", edgeitems), ("linewidth", linewidth)):
        if v is not None:
            kw[k] = v
    if sci_mode is not None:
        kw["suppress"] = not sci_mode
    if "precision" in kw:
        PRINT["precision"] = int(kw["precision"])
    np.set_printoptions(**kw)


def set_float32_matmul_precision(precision: str) -> None:
    """Recorded ("highest", "high", "medium"); skiff's float32 GEMMs are full float32."""
    if precision not in ("highest", "high", "medium"):
        raise ValueError(f"precision must be 'highest', 'high' or 'medium', got {precision!r}")
    _STATE["matmul_precision"] = precision


def get_float32_matmul_precision() -> str:
    return _STATE["matmul_precision"]


_RNG_MAGIC = b"skiff-rng-state:"  # then the generator's state as JSON (numpy arrays tagged)


def _jsonable(value):
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        return {"__ndarray__": value.tolist(), "dtype": str(value.dtype)}
    return value


def _from_jsonable(value):
    if isinstance(value, dict):
        if "__ndarray__" in value:
            return np.asarray(value["__ndarray__"], dtype=value["dtype"])
        return {k: _from_jsonable(v) for k, v in value.items()}
    return value


def get_rng_state():
    """torch's ``get_rng_state``: skiff's generator state as a uint8 tensor (a copy; give it
    to :func:`set_rng_state`). Its bytes are skiff's (numpy's generator), not torch's."""
    from .autograd import _tensor_class  # tensor.py imports this module: the class, looked up

    raw = _RNG_MAGIC + json.dumps(_jsonable(get_state())).encode()
    return _tensor_class()(np.frombuffer(raw, dtype=np.uint8).copy())


def set_rng_state(new_state) -> None:
    """Restore a state :func:`get_rng_state` returned (the uint8 tensor; the dict of skiff
    before round 32 is taken too)."""
    if isinstance(new_state, dict):
        set_state(new_state)
        return
    wrong = TypeError("set_rng_state takes the state skiff.get_rng_state() returned (a uint8 "
                      "tensor of skiff's generator); a torch ByteTensor state does not apply "
                      "to skiff's generator")
    if type(new_state).__module__.startswith("torch"):
        raise wrong
    raw = np.asarray(new_state.numpy() if hasattr(new_state, "numpy") else new_state)
    if raw.dtype != np.uint8 or raw.ndim != 1:
        raise TypeError(f"set_rng_state needs a 1-D uint8 tensor (skiff.get_rng_state()), got "
                        f"{raw.dtype} of shape {raw.shape}")
    raw = raw.tobytes()
    if not raw.startswith(_RNG_MAGIC):
        raise wrong
    try:
        state = _from_jsonable(json.loads(raw[len(_RNG_MAGIC):].decode()))
    except ValueError as exc:
        raise ValueError("set_rng_state: the state tensor is damaged (not the bytes "
                         "skiff.get_rng_state() returned)") from exc
    set_state(state)


class Generator(np.random.Generator):
    """torch's ``Generator``: ``skiff.Generator().manual_seed(42)`` for ``random_split``,
    ``DataLoader``, ``randn``, ``multinomial``, ... (a numpy Generator underneath, so every
    ``generator=`` of skiff takes it; ``manual_seed(n)`` draws as ``numpy.random.default_rng(n)``,
    not torch's numbers)."""

    def __init__(self, device="cpu"):
        self._initial = 67280421310721  # torch's default seed
        super().__init__(np.random.PCG64(self._initial))
        self.device = device

    def manual_seed(self, seed):
        self._initial = int(seed)
        self.bit_generator.state = np.random.PCG64(self._initial).state
        return self

    def seed(self) -> int:
        """A fresh seed from the OS's entropy (returned, as torch's)."""
        s = int(np.random.SeedSequence().entropy % (2 ** 63))
        self.manual_seed(s)
        return s

    def initial_seed(self) -> int:
        return self._initial

    def get_state(self):
        return self.bit_generator.state

    def set_state(self, state) -> None:
        self.bit_generator.state = state


def _device_count() -> int:
    if not gpu_available():
        return 0
    from skiff.kernels.backend.devices import cupy

    return int(cupy().cuda.runtime.getDeviceCount())


def _current_device() -> int:
    if not gpu_available():
        raise RuntimeError("no GPU: skiff.cuda.is_available() is False (use device='cpu')")
    from skiff.kernels.backend.devices import cupy

    return int(cupy().cuda.Device().id)


def _device_name(device=None) -> str:
    from skiff.kernels.backend import resolve_device

    index = 0 if device is None else getattr(device, "index", device)
    return resolve_device(f"cuda:{int(index)}").model


def _synchronize(device=None) -> None:
    if gpu_available():
        from skiff.kernels.backend.devices import cupy

        cupy().cuda.Device().synchronize()


def _empty_cache() -> None:
    if gpu_available():
        from skiff.kernels.backend.devices import cupy

        cupy().get_default_memory_pool().free_all_blocks()


def _cuda_seed(seed) -> None:
    """skiff has one generator (a GPU's numbers are drawn on the host): seeds it."""
    _seed(seed)


cuda = types.SimpleNamespace(
    is_available=gpu_available,
    device_count=_device_count,
    current_device=_current_device,
    get_device_name=_device_name,
    synchronize=_synchronize,
    empty_cache=_empty_cache,
    manual_seed=lambda seed: _cuda_seed(seed),
    manual_seed_all=lambda seed: _cuda_seed(seed),
    is_bf16_supported=lambda *a, **k: gpu_available(),
)
cuda.__doc__ = ("torch.cuda's common calls: is_available(), device_count(), current_device(), "
                "get_device_name(), synchronize(), empty_cache(), manual_seed(_all) (skiff's "
                "one generator: GPU draws are made on the host).")
