"""skiff: train models, solve PDEs and read documents on GPUs from Jupyter notebooks.

``%load_ext skiff`` registers the magics. The library parts import on first use::

    import skiff
    trainer = skiff.Trainer(model, strategy="auto")
    sol = skiff.solve(A, b, method="cg", precond="amg")
    result = skiff.ocr("page.png")

The public names are in :mod:`skiff.api` and the re-export modules ``skiff.nn``,
``skiff.optim``, ``skiff.autograd``, ``skiff.data``, ``skiff.models`` and ``skiff.utils``; each
loads when first used, and loads only its own home: ``import skiff`` itself is cheap, and
``skiff.solve`` or ``skiff.ocr`` does not load the training core (``skiff.Trainer`` does).
"""

from __future__ import annotations

import importlib
import os

# OpenBLAS's idle workers spin for ~0.1 s after every GEMM (its THREAD_TIMEOUT, 2^28 cycles),
# holding the cores that skiff's elementwise passes split over (skiff.kernels.backend.split).
# 2^20 cycles (~0.4 ms): they still spin across back-to-back GEMMs but sleep through a pass
# of milliseconds. Measured on 2 cores: an OCR fine-tuning step 9% faster, a GPT-mini step
# 2.5% slower (2^4, sleeping at once: the same gain, GPT-mini 7% slower), less CPU time for
# both. OpenBLAS reads it when it loads, so it counts where skiff is imported before numpy
# (the CLI, job processes, `make lab`'s kernels).
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "20")

from skiff.extension import load_ipython_extension, unload_ipython_extension

__version__ = "0.1.0"

# the public submodules (plain re-export modules); every other public name is in skiff.api
SUBMODULES = ("nn", "optim", "autograd", "data", "models", "api", "utils", "linalg", "cuda",
              "cpu", "distributions", "testing", "special", "amp", "random", "fft", "sparse")


def __getattr__(name: str):
    """PEP 562: ``skiff.nn`` imports the submodule, ``skiff.solve`` asks skiff.api (which loads
    skiff.kernels.solve only; ``skiff.Trainer`` loads the training core)."""
    # jobs, grammar, kernels: attributes once any public name was used, when skiff.api imported
    # them all at once (before round 27); still there, and in dir(skiff)
    if name in SUBMODULES or name in ("jobs", "grammar", "kernels"):
        return importlib.import_module(f"skiff.{name}")
    if name.startswith("__"):
        raise AttributeError(f"module 'skiff' has no attribute {name!r}")
    if name.startswith("_foreach_"):  # torch._foreach_mul_ & co (round 38)
        from skiff.kernels.train.core import foreach_r38

        return getattr(foreach_r38, name)
    from skiff import api

    if name not in api.NAMES and name not in api.__all__:  # __all__: the training core's names
        from skiff.kernels.train.core import ops_stats  # torch's median, unique, ... (round 26)

        if name in ops_stats.__all__:
            return getattr(ops_stats, name)
        if name in ("det", "inverse", "logdet", "slogdet", "cdist"):  # torch.det, ... (linalg's)
            return getattr(importlib.import_module("skiff.linalg"), name)
        raise AttributeError(f"module 'skiff' has no attribute {name!r}")
    value = getattr(api, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    from skiff import api

    public = api.dir_names()  # the names, not their modules (the training core: ~0.5 s)
    return sorted({*globals(), *SUBMODULES, "jobs", "grammar", "kernels", *public,
                   *api.FALLBACK_NAMES})


__all__ = ["load_ipython_extension", "unload_ipython_extension", "__version__"]
