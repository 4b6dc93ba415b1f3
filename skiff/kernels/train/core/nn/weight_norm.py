"""torch's weight normalisation, ``w = g * v / ||v||`` (the norm over every axis but ``dim``):
the old ``nn.utils.weight_norm`` / ``remove_weight_norm`` (parameters ``weight_g`` and
``weight_v``; ``weight`` recomputed before each forward) and
``nn.utils.parametrizations.weight_norm`` (``parametrizations.weight.original0`` (g) and
``original1`` (v), state-dict names as torch's; ``module.weight`` computed on each access, as
torch's parametrized attribute)."""

from __future__ import annotations

from .module import Module, ModuleDict, Parameter

__all__ = ["weight_norm", "remove_weight_norm", "parametrized_weight_norm"]


def _norm_except(v, dim):
    if dim is None:
        return (v * v).sum().sqrt()
    d = dim % v.ndim
    axes = tuple(k for k in range(v.ndim) if k != d)
    return (v * v).sum(axes, keepdim=True).sqrt() if axes else v.abs()


def _compose(g, v, dim):
    return v * (g / _norm_except(v, dim))


class _WeightNormHook:
    def __init__(self, name, dim):
        self.name, self.dim = name, dim

    def __call__(self, module, args):
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        object.__setattr__(module, self.name, _compose(g, v, self.dim))


def _magnitude_direction(w, dim):
    """torch's ``dim`` (negative counted from the end; -1 or None: the whole tensor), and the
    two new parameters: the norm ``g`` over every axis but ``dim``, the direction ``v``."""
    if dim is not None and dim < -1:
        dim += w.ndim
    if dim == -1:
        dim = None
    g = Parameter(_norm_except(w.detach(), dim)._data.copy(), dtype=w.dtype)
    v = Parameter(w.detach()._data.copy(), dtype=w.dtype)
    return dim, g, v


def weight_norm(module, name="weight", dim=0):
    """torch's (old) ``nn.utils.weight_norm``: ``name`` becomes ``name_g`` and ``name_v``."""
    dim, g, v = _magnitude_direction(getattr(module, name), dim)
    delattr(module, name)
    setattr(module, name + "_g", g)
    setattr(module, name + "_v", v)
    hook = _WeightNormHook(name, dim)
    hook(module, ())
    handle = module.register_forward_pre_hook(hook)
    module.__dict__.setdefault("_weight_norm_handles", {})[name] = (handle, hook)
    return module


def remove_weight_norm(module, name="weight"):
    handles = module.__dict__.get("_weight_norm_handles", {})
    if name not in handles:
        raise ValueError(f"weight_norm of '{name}' not found in {type(module).__name__}")
    handle, hook = handles.pop(name)
    w = _compose(getattr(module, name + "_g"), getattr(module, name + "_v"), hook.dim).detach()
    handle.remove()
    delattr(module, name + "_g")
    delattr(module, name + "_v")
    if name in module.__dict__:
        object.__delattr__(module, name)
    setattr(module, name, Parameter(w._data.copy(), dtype=w.dtype))
    return module


class _WeightNorm(Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, g, v):
        return _compose(g, v, self.dim)


class _ParametrizationList(Module):
    """``original0`` (g), ``original1`` (v) and the parametrization at ``0``."""

    # parametrize.remove_parametrizations reads these (torch's ParametrizationList's):
    # two originals, not one tensor (round 44: remove_parametrizations raised AttributeError)
    is_tensor, ntensors = False, 2

    def __init__(self, fn, g, v):
        super().__init__()
        self.original0, self.original1 = g, v
        self.add_module("0", fn)

    def forward(self):
        return self._modules["0"](self.original0, self.original1)


def parametrized_weight_norm(module, name="weight", dim=0):
    """torch's ``nn.utils.parametrizations.weight_norm``."""
    dim, g, v = _magnitude_direction(getattr(module, name), dim)
    delattr(module, name)
    if "parametrizations" not in module._modules:
        module.parametrizations = ModuleDict()
    module.parametrizations[name] = _ParametrizationList(_WeightNorm(dim), g, v)
    cls = type(module)
    if not getattr(cls, "_skiff_parametrized", False):
        cls = type(f"Parametrized{cls.__name__}", (cls,), {"_skiff_parametrized": True})
        module.__class__ = cls
    setattr(cls, name, property(lambda self, n=name: self.parametrizations[n]()))
    return module
