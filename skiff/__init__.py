"""skiff: train models, solve PDEs and read documents on GPUs from Jupyter notebooks.

``%load_ext skiff`` registers the magics. The library parts import on first use::

    import skiff
    trainer = skiff.Trainer(model, strategy="auto")
    sol = skiff.solve(A, b, method="cg", precond="amg")
    result = skiff.ocr("page.png")
"""

from __future__ import annotations

import importlib

from skiff.extension import load_ipython_extension, unload_ipython_extension
from skiff.kernels.train.aliases import install as _install_aliases

__version__ = "0.1.0"

# public name -> "module:attribute" (attribute empty: the module itself); imported lazily
_LAZY = {
    "Tensor": "skiff.kernels.train.core.tensor:Tensor",
    "no_grad": "skiff.kernels.train.core.tensor:no_grad",
    "tensor": "skiff.kernels.train.core.tensor:tensor",
    "nn": "skiff.kernels.train.core.nn:",
    "optim": "skiff.kernels.train.core.optim:",
    "data": "skiff.kernels.train.data:",
    "models": "skiff.kernels.train.models:",
    "Trainer": "skiff.kernels.train.trainer:Trainer",
    "seed": "skiff.kernels.train.core.random:seed",
    "plan": "skiff.kernels.train.plan:plan",
    "solve": "skiff.kernels.solve:solve",
    "ocr": "skiff.kernels.ocr:ocr",
    "panel": "skiff.widgets.panels:panel",
    "launch": "skiff.jobs:launch",
    "Job": "skiff.jobs:Job",
    "list_devices": "skiff.kernels.backend:list_devices",
    "resolve_device": "skiff.kernels.backend:resolve_device",
}

_install_aliases()  # `import skiff.nn`, `from skiff.optim import AdamW` (see that module)

__all__ = ["load_ipython_extension", "unload_ipython_extension", "__version__", *_LAZY]


def __getattr__(name: str):
    spec = _LAZY.get(name)
    if spec is None:
        raise AttributeError(f"module 'skiff' has no attribute {name!r}")
    module, _, attr = spec.partition(":")
    mod = importlib.import_module(module)
    value = getattr(mod, attr) if attr else mod
    globals()[name] = value
    return value
