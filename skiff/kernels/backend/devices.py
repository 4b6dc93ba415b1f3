"""Device discovery and the ``--device`` grammar shared by every job kind.

A :class:`Device` names one place arrays can live: the host CPU, or one GPU seen through cupy
(CUDA or ROCm builds alike). cupy is imported lazily and only asked about GPUs when
``cupy.cuda.is_available()`` says there are any.
"""

from __future__ import annotations

import functools
import os
import re
import sys
from dataclasses import asdict, dataclass, field

from .launch_env import local_rank

__all__ = ["Device", "DeviceError", "list_devices", "resolve_device", "gpu_available", "cupy",
           "host_free_memory",
           "local_rank", "DEFAULT_DEVICE", "launch_device"]

# what --device means when nobody says: the first GPU (each rank its own), else the CPU.
# Written here once; fronts resolve it once, at launch (launch_device), and carry the answer.
DEFAULT_DEVICE = "auto"


class DeviceError(ValueError):
    """A device spec that names no device on this machine."""


@dataclass(frozen=True)
class Device:
    """One compute device.

    ``name`` is what the grammar accepts (``cpu``, ``cuda:0``); ``kind`` is ``cpu`` or ``gpu``.
    Memory figures are bytes; ``free_memory`` is read at discovery time.
    """

    name: str
    kind: str
    vendor: str
    model: str
    index: int
    total_memory: int
    # read at discovery, so two lookups of one device differ in it: not part of its identity
    # (a tensor's device compared with a fresh lookup of the same device must be equal)
    free_memory: int = field(compare=False)
    cores: int

    @property
    def is_gpu(self) -> bool:
        return self.kind == "gpu"

    @property
    def type(self) -> str:
        """torch's ``device.type``: ``"cuda"`` for a GPU, ``"cpu"`` for the host."""
        return "cuda" if self.kind == "gpu" else "cpu"

    def to_json(self) -> dict:
        return asdict(self)

    def __str__(self) -> str:
        return self.name


def cupy():
    """The cupy module, or None when it is missing or sees no GPU."""
    return _cupy()


# device files a GPU driver makes: NVIDIA (and its container runtime), AMD ROCm, WSL
GPU_DEVICE_FILES = ("/dev/nvidiactl", "/dev/nvidia0", "/dev/kfd", "/dev/dxg")


def gpu_device_files(paths=None) -> bool:
    """Whether a GPU driver's device files exist here (checked before importing cupy, which
    takes a second or more only to find no GPU). Off Linux nothing can be said: True."""
    if not sys.platform.startswith("linux"):
        return True
    return any(os.path.exists(p) for p in (GPU_DEVICE_FILES if paths is None else paths))


@functools.lru_cache(maxsize=1)
def _cupy():
    if os.environ.get("SKIFF_DISABLE_GPU"):
        return None
    if not os.environ.get("SKIFF_PROBE_GPU") and not gpu_device_files():
        return None  # no driver: no GPU cupy could see (SKIFF_PROBE_GPU=1 asks cupy anyway)
    try:
        import cupy as cp  # noqa: PLC0415  (lazy on purpose)
    except Exception:
        return None
    try:
        if not cp.cuda.is_available():
            return None
    except Exception:
        return None
    return cp


def gpu_available() -> bool:
    return cupy() is not None


def host_free_memory() -> int:
    """Bytes of host memory available now (``MemAvailable``), read at each call; 0 when
    unknown."""
    return _cpu_memory()[1]


def _cpu_memory() -> tuple[int, int]:
    total = free = 0
    try:
        with open("/proc/meminfo") as fh:
            info = dict(line.split(":", 1) for line in fh if ":" in line)
        total = int(info["MemTotal"].split()[0]) * 1024
        free = int(info.get("MemAvailable", info["MemFree"]).split()[0]) * 1024
    except (OSError, KeyError, ValueError):
        try:
            pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
            total = free = int(pages)
        except (ValueError, OSError, AttributeError):
            pass
    return total, free


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or platform.machine()


def cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


@functools.lru_cache(maxsize=1)
def _gpu_properties() -> tuple[dict, ...]:
    """Each GPU's properties, asked of the driver once per process (they do not change; free
    memory does, and is read at each :func:`list_devices`)."""
    cp = cupy()
    return tuple(cp.cuda.runtime.getDeviceProperties(i)
                 for i in range(cp.cuda.runtime.getDeviceCount()))


def _gpu_devices() -> list[Device]:
    cp = cupy()
    if cp is None:
        return []
    rocm = bool(getattr(cp.cuda.runtime, "is_hip", False))
    out = []
    for i, props in enumerate(_gpu_properties()):
        name = props.get("name", b"gpu")
        name = name.decode() if isinstance(name, bytes) else str(name)
        with cp.cuda.Device(i):
            free, total = cp.cuda.runtime.memGetInfo()
        out.append(
            Device(
                name=f"cuda:{i}",
                kind="gpu",
                vendor="AMD" if rocm else "NVIDIA",
                model=name,
                index=i,
                total_memory=int(total),
                free_memory=int(free),
                cores=int(props.get("multiProcessorCount", 0)),
            )
        )
    return out


def list_devices() -> list[Device]:
    """Every device on this machine: the CPU first, then each GPU."""
    total, free = _cpu_memory()
    cpu = Device("cpu", "cpu", _cpu_vendor(), _cpu_model(), 0, total, free, cpu_count())
    return [cpu, *_gpu_devices()]


def _cpu_vendor() -> str:
    model = _cpu_model().lower()
    for key, vendor in (("intel", "Intel"), ("amd", "AMD"), ("arm", "Arm")):
        if key in model:
            return vendor
    return "unknown"


_SPEC = re.compile(r"^(auto|cpu|(?:cuda|gpu|rocm)(?::(\d+|local))?)$")


def resolve_device(spec: str | Device | None = DEFAULT_DEVICE) -> Device:
    """Turn a device spec into a :class:`Device`.

    Accepts ``auto`` (a GPU, else the CPU: the first GPU, or under mpiexec/srun GPU
    ``local_rank % count`` so the ranks of a node do not share one), ``cpu``,
    ``cuda``/``gpu`` (GPU 0), ``cuda:N`` and ``cuda:local`` (GPU ``local_rank % count``:
    what ``auto`` resolves to for a job of several ranks). An unknown or missing device raises
    :class:`DeviceError` naming the devices that exist.
    """
    if isinstance(spec, Device):
        return spec
    text = DEFAULT_DEVICE if spec is None else str(spec).strip().lower()
    devices = list_devices()
    names = ", ".join(d.name for d in devices)
    m = _SPEC.match(text)
    if not m:
        raise DeviceError(
            f"unknown device {spec!r}: use auto, cpu or cuda:N (devices here: {names})"
        )
    if text == DEFAULT_DEVICE:
        gpus = devices[1:]
        return gpus[local_rank() % len(gpus)] if gpus else devices[0]
    if text == "cpu":
        return devices[0]
    gpus = [d for d in devices if d.is_gpu]
    if m.group(2) == "local":
        if not gpus:
            raise DeviceError(f"no GPU for {text!r} on this machine (devices here: {names})")
        return gpus[local_rank() % len(gpus)]
    index = int(m.group(2) or 0)
    if index >= len(gpus):
        raise DeviceError(f"no device {text!r} on this machine (devices here: {names})")
    return gpus[index]


def launch_device(spec: str | None, *, ranks: int = 1, gpus: int | None = None) -> str:
    """The device a job is launched with, resolved once and carried in its config.

    ``auto`` becomes ``cpu`` where this machine has no GPU, else ``cuda:0`` for a job in
    this process and ``cuda:local`` (each rank the GPU of its local rank) for several ranks.
    ``gpus`` (GPUs per node of a cluster launch) overrides what this machine has. An
    explicit choice is checked (where the job runs here) and kept.
    """
    text = DEFAULT_DEVICE if spec is None else str(spec).strip().lower()
    if text != DEFAULT_DEVICE:
        if gpus is None and ranks == 1:
            return resolve_device(text).name
        return text
    have_gpu = gpu_available() if gpus is None else gpus > 0
    if not have_gpu:
        return "cpu"
    return "cuda:local" if ranks > 1 or gpus is not None else resolve_device(text).name
