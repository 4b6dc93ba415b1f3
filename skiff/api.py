"""The public API of ``skiff``, as plain imports: ``skiff.Trainer``, ``skiff.solve``, ... come
from here (``skiff/__init__.py`` loads this module on the first such name, so that
``import skiff`` stays light)."""

from skiff.jobs import Job, launch
from skiff.kernels.backend import list_devices, resolve_device
from skiff.kernels.ocr import ocr
from skiff.kernels.solve import Solver, solve
from skiff.kernels.train.core import functions as _torch_names
from skiff.kernels.train.core.ops_einsum import einsum
from skiff.kernels.train.core.random import seed
from skiff.kernels.train.core.tensor import (
    Tensor,
    arange,
    cat,
    full,
    no_grad,
    ones,
    ones_like,
    rand,
    randn,
    stack,
    tensor,
    where,
    zeros,
    zeros_like,
)
from skiff.kernels.train.plan import plan
from skiff.kernels.train.trainer import Trainer

__all__ = ["Job", "Solver", "Tensor", "Trainer", "launch", "list_devices", "no_grad", "ocr",
           "panel", "plan", "resolve_device", "seed", "solve", "tensor",
           # tensors as torch makes them (skiff.cat(..., dim=1), skiff.zeros(2, 3), ...)
           "arange", "cat", "einsum", "full", "ones", "ones_like", "rand", "randn", "stack",
           "where", "zeros", "zeros_like"]

# torch's other top-level names: skiff.manual_seed, skiff.float64, skiff.save/load,
# skiff.randn_like, skiff.multinomial, skiff.flatten(x, 1), skiff.max(x, 1), ...
_TORCH = [n for n in _torch_names.__all__ if n not in globals()]
globals().update({n: getattr(_torch_names, n) for n in _TORCH})
__all__ += _TORCH


def panel(tab: str | None = None):
    """The skiff panel (forms for train, solve and OCR, and the job monitor) on ``tab``."""
    from skiff.widgets.panels import panel as make_panel

    return make_panel(tab)
