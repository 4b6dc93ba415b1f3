"""The public API of ``skiff``: ``skiff.Trainer``, ``skiff.solve``, ... come from here
(``skiff/__init__.py`` asks this module on the first such name, so that ``import skiff``
stays light).

Each name loads its own home on first use (PEP 562): ``skiff.solve`` loads
:mod:`skiff.kernels.solve` only, ``skiff.ocr`` :mod:`skiff.kernels.ocr`, ``skiff.Job``
:mod:`skiff.jobs`; a script that solves never pays for the training core (its tensors,
torch's top-level names and ml_dtypes: about 1 s). Any training name (``skiff.Trainer``,
``skiff.tensor``, ``skiff.float64``, ...) or ``__all__`` loads the whole training group at once,
as a plain import of all of it did.
"""


def _jobs():
    from skiff.jobs import Job, launch

    return {"Job": Job, "launch": launch}


def _devices():
    from skiff.kernels.backend import list_devices, resolve_device

    return {"list_devices": list_devices, "resolve_device": resolve_device}


def _ocr():
    from skiff.kernels.ocr import ocr

    return {"ocr": ocr}


def _solve():
    from skiff.kernels.solve import Solver, solve

    return {"Solver": Solver, "solve": solve}


# the names that load only their own module (not the training core)
_LIGHT = {"Job": _jobs, "launch": _jobs, "list_devices": _devices,
          "resolve_device": _devices, "ocr": _ocr, "Solver": _solve, "solve": _solve}

# skiff's own names; torch's other top-level names (from the training core) follow in __all__
NAMES = ["Job", "Solver", "Tensor", "Trainer", "launch", "list_devices", "no_grad", "ocr",
         "panel", "plan", "resolve_device", "seed", "solve", "tensor",
         # tensors as torch makes them (skiff.cat(..., dim=1), skiff.zeros(2, 3), ...)
         "arange", "cat", "einsum", "full", "ones", "ones_like", "rand", "randn", "stack",
         "where", "zeros", "zeros_like"]


def _training():
    """The training names, torch's other top-level names (skiff.manual_seed, skiff.float64,
    skiff.save/load, skiff.flatten(x, 1), skiff.max(x, 1), ...) and ``__all__``."""
    from skiff.kernels.train.core import functions
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

    found = {"Tensor": Tensor, "Trainer": Trainer, "no_grad": no_grad, "plan": plan,
             "seed": seed, "tensor": tensor, "arange": arange, "cat": cat, "einsum": einsum,
             "full": full, "ones": ones, "ones_like": ones_like, "rand": rand, "randn": randn,
             "stack": stack, "where": where, "zeros": zeros, "zeros_like": zeros_like}
    torch_names = [n for n in functions.__all__ if n not in NAMES]
    # bfloat16 stays lazy (its ml_dtypes costs ~0.6 s): asked for by name below
    found.update({n: getattr(functions, n) for n in torch_names if n not in _LAZY_DTYPES})
    found["__all__"] = [*NAMES, *torch_names]
    return found


_LAZY_DTYPES = ("bfloat16",)


def __getattr__(name: str):
    if name in _LAZY_DTYPES:
        from skiff.kernels.train.core import functions

        value = getattr(functions, name)
        globals()[name] = value
        return value
    load = _LIGHT.get(name)
    if load is None and (name == "__all__" or not name.startswith("_")):
        load = _training
    found = load() if load is not None else {}
    if name not in found:
        raise AttributeError(f"module 'skiff.api' has no attribute {name!r}")
    globals().update(found)
    return found[name]


def __dir__() -> list[str]:
    return sorted({*globals(), *__getattr__("__all__")})


def panel(tab: str | None = None):
    """The skiff panel (forms for train, solve and OCR, and the job monitor) on ``tab``."""
    from skiff.widgets.panels import panel as make_panel

    return make_panel(tab)
