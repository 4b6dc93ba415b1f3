"""torch's ``nn.utils.parametrize``: ``register_parametrization(module, "weight", P)`` makes
``module.weight`` a value computed on each access, ``P(original)`` (several registrations on
one name chain in order), with the trainable tensor kept as
``module.parametrizations.weight.original`` (``original0``, ``original1``, ... when ``P``'s
``right_inverse`` returns a tuple): the state-dict names are torch's. Assigning
``module.weight = X`` stores ``right_inverse(X)`` (or ``X`` itself) in the originals.
``remove_parametrizations`` puts a plain parameter back; ``cached()`` computes each
parametrized value once inside its block (torch's context manager)."""

from __future__ import annotations

import contextlib

from ..tensor import Tensor
from .module import Module, ModuleDict, ModuleList, Parameter

__all__ = ["register_parametrization", "remove_parametrizations", "is_parametrized",
           "cached", "ParametrizationList", "type_before_parametrizations"]

_CACHE: dict | None = None


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor (``self[0]``, ``self[1]``, ...) and its originals."""

    def __init__(self, modules, original, unsafe=False):
        super().__init__(modules)
        self.unsafe = unsafe
        first = modules[0]
        new = original
        if hasattr(first, "right_inverse"):
            try:
                new = first.right_inverse(original)
            except NotImplementedError:  # torch's: the inverse is then taken as the identity
                pass
        self.is_tensor = isinstance(new, Tensor)
        if self.is_tensor:
            self.ntensors = 1
            if new is not original:
                _copy_into(original, new)
            if isinstance(original, Parameter):
                self.original = original
            else:
                self.register_buffer("original", original)
        else:
            self.ntensors = len(new)
            for i, t in enumerate(new):
                setattr(self, f"original{i}", _as_parameter(t, original))
        if not unsafe:
            out = self()
            if not isinstance(out, Tensor):
                raise ValueError(f"a parametrization must return a tensor, got "
                                 f"{type(out).__name__}")
            if tuple(out.shape) != tuple(original.shape) or out.dtype != original.dtype:
                raise ValueError(f"the parametrization changes the tensor's shape or dtype "
                                 f"({tuple(original.shape)} {original.dtype} -> "
                                 f"{tuple(out.shape)} {out.dtype}); pass unsafe=True if "
                                 "that is meant")

    def right_inverse(self, value):
        """``module.name = value``: the originals from ``value`` through the inverses."""
        for m in reversed(list(self)):
            if not hasattr(m, "right_inverse"):
                raise RuntimeError(f"parametrization {type(m).__name__} does not implement "
                                   "right_inverse: give it one to assign to the tensor")
            value = m.right_inverse(value)
        if self.is_tensor:
            _copy_into(self.original, value)
        else:
            for i, t in enumerate(value):
                _copy_into(getattr(self, f"original{i}"), t)

    def forward(self):
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for m in list(self)[1:]:
            x = m(x)
        return x


def _as_parameter(t, like):
    if isinstance(t, Parameter):
        return t
    requires = getattr(like, "requires_grad", True)
    p = Parameter(t.detach()._data.copy(), dtype=t.dtype)
    p.requires_grad = requires
    return p


def _copy_into(param, value):
    data = value.detach()._data if isinstance(value, Tensor) else value
    if tuple(data.shape) != tuple(param.shape) or data.dtype != param._data.dtype:
        param._data = data.copy()  # unsafe: torch's ``set_``
    else:
        param._data[...] = data


def _value(module, name):
    plist = module.parametrizations[name]
    if _CACHE is None:
        return plist()
    key = (id(module), name)
    if key not in _CACHE:
        _CACHE[key] = plist()
    return _CACHE[key]


def _setter(module, name, value):
    module.parametrizations[name].right_inverse(value)


def _make_parametrized_class(module):
    cls = type(module)
    if getattr(cls, "_skiff_parametrized", False):
        return cls
    new = type(f"Parametrized{cls.__name__}", (cls,),
               {"_skiff_parametrized": True, "_skiff_original_class": cls})
    module.__class__ = new
    return new


def register_parametrization(module, tensor_name, parametrization, *, unsafe=False):
    """torch's ``parametrize.register_parametrization``; returns ``module``."""
    if not isinstance(parametrization, Module):
        raise TypeError(f"the parametrization must be an nn.Module, got "
                        f"{type(parametrization).__name__}")
    parametrization.train(module.training)
    plists = module._modules.get("parametrizations")
    if plists is not None and tensor_name in plists._modules:
        plist = plists[tensor_name]
        if not unsafe:
            now = plist()
            out = parametrization(now)
            if tuple(out.shape) != tuple(now.shape) or out.dtype != now.dtype:
                raise ValueError(f"the parametrization changes {tensor_name}'s shape or dtype "
                                 f"({tuple(now.shape)} {now.dtype} -> {tuple(out.shape)} "
                                 f"{out.dtype}); pass unsafe=True if that is meant")
        plist.append(parametrization)
        return module
    if tensor_name not in module._parameters and tensor_name not in module._buffers:
        raise ValueError(f"Module '{type(module).__name__}' has no parameter or buffer with "
                         f"name '{tensor_name}'")
    original = getattr(module, tensor_name)
    plist = ParametrizationList([parametrization], original, unsafe=unsafe)
    delattr(module, tensor_name)
    if plists is None:
        module.parametrizations = ModuleDict()
    module.parametrizations[tensor_name] = plist
    cls = _make_parametrized_class(module)
    setattr(cls, tensor_name, property(lambda self, n=tensor_name: _value(self, n),
                                       lambda self, v, n=tensor_name: _setter(self, n, v)))
    return module


def is_parametrized(module, tensor_name=None):
    plists = module._modules.get("parametrizations")
    if plists is None or not isinstance(plists, ModuleDict):
        return False
    return bool(plists._modules) if tensor_name is None else tensor_name in plists._modules


def remove_parametrizations(module, tensor_name, leave_parametrized=True):
    """The parametrized tensor becomes a plain parameter again: its current value
    (``leave_parametrized=True``) or the original (one original only)."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {type(module).__name__} does not have a parametrization on "
                         f"{tensor_name}")
    plist = module.parametrizations[tensor_name]
    if leave_parametrized:
        value = plist().detach()
        if plist.is_tensor:  # torch keeps the original's identity (``set_``)
            p = plist.original
            p._data = value._data.copy()
        else:
            p = Parameter(value._data.copy(), dtype=value.dtype)
    else:
        if not plist.is_tensor:
            raise ValueError("leave_parametrized=False needs a parametrization with one "
                             "original tensor")
        p = plist.original
    cls = type(module)
    if isinstance(getattr(cls, tensor_name, None), property):
        delattr(cls, tensor_name)
    del module.parametrizations._modules[tensor_name]
    if hasattr(module.parametrizations, tensor_name):
        object.__delattr__(module.parametrizations, tensor_name)
    setattr(module, tensor_name, p)
    if not module.parametrizations._modules:
        delattr(module, "parametrizations")
        module.__class__ = getattr(cls, "_skiff_original_class", cls.__mro__[1])
    return module


def type_before_parametrizations(module):
    return getattr(type(module), "_skiff_original_class", type(module))


@contextlib.contextmanager
def cached():
    """Each parametrized tensor computed once inside the block (torch's ``cached``)."""
    global _CACHE
    outer = _CACHE
    if outer is None:
        _CACHE = {}
    try:
        yield
    finally:
        if outer is None:
            _CACHE = None
