"""``Module`` and ``Parameter``: the containers every layer and model is built from."""

from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Iterator

import numpy as np

from skiff.kernels.backend import resolve_device, to_device, to_numpy

from .. import meta_r41 as _meta
from ..tensor import _FLOATS, Tensor, _as_dtype
from . import hooks as _hooks
from .state_array_r29b import state_array

__all__ = ["Parameter", "Module", "ModuleList", "Sequential", "ModuleDict"]


class StateDictError(ValueError, RuntimeError):
    """``load_state_dict``'s refusal: skiff's ``ValueError`` and torch's ``RuntimeError``."""


def _tensor_like(value) -> bool:
    """torch's ``is_tensor_like`` for a state-dict entry: skiff also loads arrays (numpy,
    cupy, torch tensors) and numpy scalars; a list, a Python number, a string or None is
    refused as torch refuses it."""
    if isinstance(value, np.generic):
        return True
    return value is not None and not isinstance(value, (list, tuple, dict, str, bytes, int,
                                                        float, complex))


def _torch_size(shape) -> str:
    return f"torch.Size({list(shape)})"


class IncompatibleKeys(tuple):
    """torch's ``load_state_dict`` result ``(missing_keys, unexpected_keys)`` (unpacks as a
    pair, ``repr`` as torch's); ``["missing"]``/``["unexpected"]`` as skiff's dict was."""

    def __new__(cls, missing, unexpected):
        return super().__new__(cls, (list(missing), list(unexpected)))

    missing_keys = property(lambda self: tuple.__getitem__(self, 0))
    unexpected_keys = property(lambda self: tuple.__getitem__(self, 1))

    def __getitem__(self, key):
        if key == "missing":
            return self.missing_keys
        if key == "unexpected":
            return self.unexpected_keys
        return super().__getitem__(key)

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return (f"_IncompatibleKeys(missing_keys={self.missing_keys}, "
                f"unexpected_keys={self.unexpected_keys})")


def _factory_init(init):
    """A module class's ``__init__`` taking torch's factory keywords when it does not name
    them itself: ``device="meta"`` builds it with meta tensors (torch's), another device
    moves it there, ``dtype`` casts its float tensors; and a module built under
    ``with torch.device("meta"):`` has every tensor meta when its outermost constructor
    returns."""
    import functools
    import inspect

    try:
        names = inspect.signature(init).parameters
    except (TypeError, ValueError):
        return init
    # an init of its own **kwargs gets them as given (a user's module reading its own
    # "device" keyword keeps it); torch's factory keywords are taken only where unnamed
    free = any(p.kind is p.VAR_KEYWORD for p in names.values())
    takes_device, takes_dtype = "device" in names or free, "dtype" in names or free

    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        device = None if takes_device else kwargs.pop("device", None)
        dtype = None if takes_dtype else kwargs.pop("dtype", None)
        meta = _meta.is_meta_spec(device)
        outer = _meta._DEPTH[0] == 0 and not meta
        if meta:
            _meta._DEPTH[0] += 1
        try:
            init(self, *args, **kwargs)
        finally:
            if meta:
                _meta._DEPTH[0] -= 1
        if meta or (_meta._DEPTH[0] and not outer):
            for t in list(self.parameters()) + list(self.buffers()):
                _meta.make_meta(t)
        if dtype is not None:
            self.to(dtype=dtype)
        if device is not None and not meta:
            self.to(device)

    __init__._skiff_factory = True
    return __init__


def _torch_order(model, targets: dict) -> dict:
    """``targets`` in torch's order of ``load_state_dict``'s lists: module by module (each
    before its children), its parameters then its buffers; names it does not reach last."""
    order = {}
    for mname, m in model.named_modules():
        for n in list(m._parameters) + list(m._buffers):
            order.setdefault(f"{mname}.{n}" if mname else n, len(order))
    return dict(sorted(targets.items(), key=lambda kv: order.get(kv[0], len(order))))


def _torch_unexpected(model, state, targets) -> list:
    """torch's unexpected keys in its order: each module (before its children) names the
    keys under its prefix whose first part is neither its own tensor nor a child of it."""
    children = {mname: set(m._modules) for mname, m in model.named_modules(remove_duplicate=False)}
    at = {}
    for k in state:
        if k in targets:
            continue
        parts, owner = k.split("."), ""
        for i in range(len(parts) - 1):  # the deepest module on the key's path
            sub = ".".join(parts[: i + 1])
            if parts[i] not in children.get(owner, ()) or sub not in children:
                break
            owner = sub
        at.setdefault(owner, []).append(k)
    return [k for mname in children for k in at.get(mname, [])] + [
        k for owner, ks in at.items() if owner not in children for k in ks]


class Parameter(Tensor):
    """A leaf tensor that a :class:`Module` registers as trainable (requires_grad=True)."""

    def __init__(self, data, requires_grad=True, dtype=None):
        if dtype is None and (isinstance(data, Tensor) or getattr(
                getattr(data, "dtype", None), "kind", "") == "f"):
            dtype = data.dtype  # torch's Parameter keeps its tensor's dtype (float64 stays;
            # a numpy float array as well, as torch's from a from_numpy tensor)
        super().__init__(data, requires_grad=requires_grad, dtype=dtype)

    def __repr__(self) -> str:
        return "Parameter(" + super().__repr__() + ")"


class Module:
    """Base class: assign Parameters, Modules and buffers as attributes; define ``forward``.

    Example
    -------
    >>> import skiff
    >>> class Affine(Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.w = Parameter([2.0])
    ...     def forward(self, x):
    ...         return x * self.w
    >>> m = Affine()
    >>> [name for name, _ in m.named_parameters()]
    ['w']
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "__init__" in cls.__dict__:
            cls.__init__ = _factory_init(cls.__dict__["__init__"])

    def __init__(self):
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "training", True)

    # ---- registration -------------------------------------------------------------------
    def __setattr__(self, name, value):
        if "_parameters" not in self.__dict__:
            raise RuntimeError(f"call Module.__init__() in {type(self).__name__}.__init__ first")
        if _meta._DEPTH[0] and isinstance(value, Tensor):  # built under torch.device("meta")
            _meta.make_meta(value)
        if getattr(type(value), "_is_nn_buffer", False):  # torch's nn.Buffer: a buffer
            self.register_buffer(name, Tensor._make(value._data, False, None, 0),
                                 persistent=value.persistent)
            return
        if name in self._buffers and (value is None or isinstance(value, Tensor)) and not \
                isinstance(value, Parameter):
            self._buffers[name] = value  # a buffer given a new tensor stays a buffer (torch)
            object.__setattr__(self, name, value)
            return
        # a parameter or child given anew keeps its place (torch): the order of _modules is
        # the order a Sequential runs and state_dict lists (LoRA wraps a layer in place)
        keep = (self._parameters if isinstance(value, Parameter) else
                self._modules if isinstance(value, Module) else None)
        for store in (self._parameters, self._buffers, self._modules):
            if store is not keep:
                store.pop(name, None)
        if keep is not None:
            keep[name] = value
        object.__setattr__(self, name, value)

    def __delattr__(self, name):
        for store in (self._parameters, self._buffers, self._modules):
            store.pop(name, None)
        object.__delattr__(self, name)

    def register_buffer(self, name: str, value, persistent: bool = True) -> None:
        """A non-trainable state tensor (e.g. running mean) moved and cast with the module,
        saved in ``state_dict`` unless ``persistent=False``."""
        t = value if isinstance(value, Tensor) or value is None else Tensor(value)
        if _meta._DEPTH[0]:
            _meta.make_meta(t)
        for store in (self._parameters, self._modules):
            store.pop(name, None)
        object.__setattr__(self, name, t)
        self._buffers[name] = t
        skip = self.__dict__.setdefault("_non_persistent", set())
        (skip.discard if persistent else skip.add)(name)

    def register_parameter(self, name: str, value) -> None:
        if value is not None and not isinstance(value, Parameter):
            raise TypeError(f"{name} must be a Parameter or None, got {type(value).__name__}")
        if _meta._DEPTH[0]:
            _meta.make_meta(value)
        self._parameters[name] = value
        object.__setattr__(self, name, value)

    def add_module(self, name: str, module) -> None:
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {type(name).__name__}")
        self.__setattr__(name, module)

    register_module = add_module  # torch's other name

    def share_memory(self) -> Module:
        """torch's (for worker processes); skiff loads in this process: returns self."""
        return self

    # ---- forward ------------------------------------------------------------------------
    def forward(self, *args, **kwargs):  # pragma: no cover - abstract
        raise NotImplementedError(f"{type(self).__name__} does not define forward")

    _has_hooks = False  # set by the first register_*_hook (nn/hooks.py)

    def __call__(self, *args, **kwargs):
        if not self._has_hooks:
            return self.forward(*args, **kwargs)
        return _hooks.call(self, args, kwargs)

    # ---- hooks (torch's; each returns a handle with remove()) ------------------------------
    def register_forward_pre_hook(self, hook, *, prepend: bool = False,
                                  with_kwargs: bool = False):
        """``hook(module, args)`` before ``forward``; what it returns replaces the args
        (``with_kwargs``: ``hook(module, args, kwargs)`` returning ``(args, kwargs)``)."""
        return _hooks.register(self, "_forward_pre_hooks", hook, prepend, with_kwargs)

    def register_forward_hook(self, hook, *, prepend: bool = False, with_kwargs: bool = False,
                              always_call: bool = False):
        """``hook(module, args, output)`` after ``forward``; what it returns replaces the
        output (``with_kwargs``: ``hook(module, args, kwargs, output)``)."""
        return _hooks.register(self, "_forward_hooks", hook, prepend, with_kwargs)

    def register_full_backward_hook(self, hook, prepend: bool = False):
        """``hook(module, grad_input, grad_output)`` when the gradients of the module's tensor
        inputs are computed (tuples of tensors or None); what it returns replaces
        ``grad_input``."""
        return _hooks.register(self, "_backward_hooks", hook, prepend)

    def register_full_backward_pre_hook(self, hook, prepend: bool = False):
        """``hook(module, grad_output)`` when the gradients of the module's outputs are known,
        before those of its inputs; what it returns replaces ``grad_output``."""
        return _hooks.register(self, "_backward_pre_hooks", hook, prepend)

    # ---- traversal ----------------------------------------------------------------------
    def named_modules(self, prefix: str = "", _seen=None, *, memo=None,
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Module]]:
        """Every module below (and this one) with its dotted name, a shared one once (all
        its names with ``remove_duplicate=False``, torch's)."""
        seen = (set() if memo is None else memo) if _seen is None else _seen
        if remove_duplicate:
            if id(self) in seen:
                return
            seen.add(id(self))
        yield prefix, self
        for name, m in self._modules.items():
            if m is not None:
                yield from m.named_modules(f"{prefix}.{name}" if prefix else name, seen,
                                           remove_duplicate=remove_duplicate)

    def modules(self) -> Iterator[Module]:
        for _, m in self.named_modules():
            yield m

    def named_children(self) -> Iterator[tuple[str, Module]]:
        for name, m in self._modules.items():
            if m is not None:
                yield name, m

    def children(self) -> Iterator[Module]:
        for _, m in self.named_children():
            yield m

    def _named(self, kind: str, remove_duplicate: bool, prefix: str = "",
               recurse: bool = True):
        seen = set()
        mods = (self.named_modules(prefix, remove_duplicate=remove_duplicate) if recurse
                else iter([(prefix, self)]))
        for mname, m in mods:
            for name, t in getattr(m, kind).items():
                if t is None or (remove_duplicate and id(t) in seen):
                    continue
                seen.add(id(t))
                yield (f"{mname}.{name}" if mname else name), t

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple[str, Parameter]]:
        """(dotted name, parameter) in registration order; a tied parameter appears once
        (torch's ``prefix``, ``recurse``: False for this module's own ones only)."""
        if isinstance(prefix, bool):  # skiff's old first argument: remove_duplicate
            prefix, remove_duplicate = "", prefix
        yield from self._named("_parameters", remove_duplicate, prefix, recurse)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        yield from self._named("_buffers", remove_duplicate, prefix, recurse)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def num_parameters(self) -> int:
        return int(sum(p.size for p in self.parameters()))

    # ---- state --------------------------------------------------------------------------
    def state_dict(self, *, destination=None, prefix="", keep_vars=False):
        """Host numpy copies of every parameter and buffer (tied ones under each name), and
        torch's ``_extra_state`` of modules that define ``get_extra_state``. The copies also
        answer ``clone()``/``cpu()``/``detach()``/``to()``/``float()``/``numel()``/``copy_``
        (:mod:`.state_array_r29b`), as torch programs call on a state dict's values.
        torch's keywords: ``prefix`` before every key, ``keep_vars=True`` the parameter and
        buffer tensors themselves (not copies), ``destination`` a dict filled and returned."""
        extra = self._extra_state_modules()
        for mname, m in self.named_modules():
            for hook in m.__dict__.get("_state_dict_pre_hooks", ()):
                hook(m, prefix + (f"{mname}." if mname else ""), keep_vars)
        values = {name: t for name, t in self._named("_parameters", False)}
        values.update(self._persistent_buffers())
        out = self._state_values(values, extra, keep_vars)
        if prefix:
            out = {prefix + k: v for k, v in out.items()}
        out = self._run_state_dict_post_hooks(out, prefix)
        if destination is None:
            return out
        destination.update(out)
        return destination

    def _state_values(self, values, extra, keep_vars):
        def value(t):
            if keep_vars:
                return t
            if _meta.is_meta(t._data):  # torch's: a meta tensor (there is nothing to copy)
                return Tensor._make(t._data, False, None, 0)
            return state_array(np.array(to_numpy(t._data), copy=True), t)

        out = {}
        # torch's order: module by module, its parameters, then its buffers, then its extra
        # state (a top-level buffer comes before the children's parameters); a module held
        # under two names is written under both, as torch's
        for mname, m in self.named_modules(remove_duplicate=False):
            pre = f"{mname}." if mname else ""
            for name in list(m._parameters) + list(m._buffers):
                key = pre + name
                if key in values and key not in out:
                    out[key] = value(values[key])
            if pre + "_extra_state" in extra:
                out[pre + "_extra_state"] = extra[pre + "_extra_state"].get_extra_state()
        for key, t in values.items():  # a tied tensor under a name no walk above reached
            if key not in out:
                out[key] = value(t)
        return out

    def _extra_state_modules(self):
        """``{"prefix._extra_state": module}`` for modules overriding ``get_extra_state``."""
        return {(f"{n}._extra_state" if n else "_extra_state"): m
                for n, m in self.named_modules()
                if type(m).get_extra_state is not Module.get_extra_state}

    def get_extra_state(self):
        """torch's hook for state beyond tensors: override it (and ``set_extra_state``)."""
        raise RuntimeError("get_extra_state is not implemented by this module: override it "
                           "to save extra state in state_dict")

    def set_extra_state(self, state):
        raise RuntimeError("set_extra_state is not implemented by this module: override it "
                           "to load the extra state get_extra_state saved")

    def _run_state_dict_post_hooks(self, out, prefix):
        """torch's state-dict post hooks, each module after its children (torch's order):
        ``register_state_dict_post_hook``'s must return None; the older
        ``_register_state_dict_hook``'s may return a dict that replaces it (the called
        module's own hook only, as torch's). Each sees the
        whole dict (torch's child hooks see the keys gathered so far)."""
        def walk(m, pre):
            nonlocal out
            for name, child in m._modules.items():
                if child is not None:
                    walk(child, f"{pre}{name}.")
            for hook, legacy in m.__dict__.get("_state_dict_post_hooks", ()):
                res = hook(m, out, pre, {"version": 1})
                if legacy and res is not None:
                    if m is self:  # a child's new dict is dropped (torch's parent keeps
                        out = res  # the dict it handed down)
                elif not legacy and res is not None:
                    raise RuntimeError("state_dict post-hook must return None")

        if any("_state_dict_post_hooks" in m.__dict__ for m in self.modules()):
            walk(self, prefix)
        return out

    def register_state_dict_post_hook(self, hook):
        """torch's: ``hook(module, state_dict, prefix, local_metadata)`` runs after
        ``state_dict`` collects (it may change the dict in place; it must return None)."""
        return self._add_state_dict_post_hook(hook, False)

    def _register_state_dict_hook(self, hook):
        """torch's older form: the hook may return a new state dict."""
        return self._add_state_dict_post_hook(hook, True)

    def _add_state_dict_post_hook(self, hook, legacy):
        hooks = self.__dict__.setdefault("_state_dict_post_hooks", [])
        entry = (hook, legacy)
        hooks.append(entry)

        class _Handle:
            def remove(self_inner):
                if entry in hooks:
                    hooks.remove(entry)

        return _Handle()

    def register_state_dict_pre_hook(self, hook):
        """torch's: ``hook(module, prefix, keep_vars)`` runs before ``state_dict`` collects."""
        hooks = self.__dict__.setdefault("_state_dict_pre_hooks", [])
        hooks.append(hook)

        class _Handle:
            def remove(self_inner):
                if hook in hooks:
                    hooks.remove(hook)

        return _Handle()

    def to_empty(self, *, device=None, recurse=True) -> Module:
        """torch's: the tensors moved to ``device``, a meta tensor as new memory of its shape
        and dtype (uninitialised, as torch's: fill it by a ``load_state_dict`` or an init); a
        tensor with values keeps them. ``to_empty(device="meta")`` frees them all."""
        if device is None:
            return self
        if _meta.is_meta_spec(device):
            return self.to(device)
        dev = resolve_device(device)
        xp = np if not dev.is_gpu else None
        tensors = {id(t): t for _, t in self._named("_parameters", False)}
        tensors.update({id(t): t for _, t in self._named("_buffers", False)})
        for t in tensors.values():
            if _meta.is_meta(t._data):
                shape, dtype = t._data.shape, t._data.dtype
                t._data = np.empty(shape, dtype) if xp is np else to_device(
                    np.empty(shape, dtype), dev)
                t._grad = None
        return self.to(dev)

    def _persistent_buffers(self):
        for mname, m in self.named_modules(remove_duplicate=False):
            skip = m.__dict__.get("_non_persistent", ())
            for name, t in m._buffers.items():
                if t is not None and name not in skip:
                    yield (f"{mname}.{name}" if mname else name), t

    def save(self, path) -> str:
        """Write :meth:`state_dict` to ``path`` as an ``.npz`` (the suffix is added when
        missing), through a temporary file so a crash leaves no half-written weights;
        returns the path. ``load_state_dict(path)`` reads it back."""
        import os

        path = os.fspath(path)
        if not path.endswith(".npz"):
            path += ".npz"
        tmp = f"{path}.tmp"
        with open(tmp, "wb") as fh:
            np.savez(fh, **self.state_dict())
        os.replace(tmp, path)
        return path

    def load_state_dict(self, state: dict, strict: bool = True, assign: bool = False) -> dict:
        """Copy arrays into the existing parameters and buffers (in place, on their device).

        With ``strict`` a missing or unexpected key raises; a shape mismatch always raises.
        ``state`` may also be a path: an ``.npz`` of ``np.savez(path, **model.state_dict())``,
        a job's ``model.npz``, or a Trainer checkpoint ``step-....npz`` (its model weights);
        a loaded checkpoint state (with a ``"model"`` entry) works as well.
        Returns torch's ``(missing_keys, unexpected_keys)`` named pair, which also answers
        ``["missing"]``/``["unexpected"]``; a mismatch raises :class:`StateDictError` (a
        ``ValueError`` and torch's ``RuntimeError``) in torch's words ("Error(s) in loading
        state_dict for ...", "Missing key(s) in state_dict", "size mismatch for ...") followed
        by skiff's one-line summary. ``assign=True`` (torch's): the module keeps the given
        tensors themselves (wrapped as parameters where they were), not copies into its own.
        """
        state = _weights_of(state)
        for mname, m in list(self.named_modules()):  # lazy layers: shaped by the state first
            if mname and getattr(m, "has_uninitialized_params", lambda: False)():
                m._materialize_from({k[len(mname) + 1:]: v for k, v in state.items()
                                     if k.startswith(mname + ".")})
        kept_base = ()
        if isinstance(state, _TrainedWeights):  # the base must be the one it trained on
            from ...trainer_frozen import check_frozen, frozen_names

            check_frozen(self, state.frozen, where="this checkpoint")
            # a split layout's checkpoint (tp, pp, ep) records no prints: the model's frozen
            # names are the base it leaves out (it said they were missing)
            kept_base = set(state.frozen.get("fingerprints") or frozen_names(self))
        extra = self._extra_state_modules()
        if any(k in state for k in extra):
            state = dict(state)
            for key, m in extra.items():
                if key in state:
                    m.set_extra_state(state.pop(key))
        targets = dict(self._named("_parameters", False))
        targets.update(self._persistent_buffers())
        # torch's BatchNorm state dicts before 0.4.1, and skiff's before it kept the count,
        # have no num_batches_tracked: it stays as it is (torch's rule)
        # a module held under a second name: its keys there (written since round 32, as
        # torch's) may be absent, as in the state dicts skiff wrote before
        first = {(f"{mname}.{n}" if mname else n) for mname, m in self.named_modules()
                 for n in list(m._parameters) + list(m._buffers)}
        targets = _torch_order(self, targets)  # round 48 (h13): listed in torch's order
        missing = [k for k in targets if k not in state and k not in kept_base and k in first
                   and k.rsplit(".", 1)[-1] != "num_batches_tracked"]
        unexpected = _torch_unexpected(self, state, targets)
        bad, torch_bad = [], []
        for k, t in targets.items():
            if k in state:
                if not _tensor_like(state[k]):
                    bad.append(f"{k}: not an array ({type(state[k]).__name__})")
                    torch_bad.append(f'While copying the parameter named "{k}", expected '
                                     "torch.Tensor or Tensor-like object from checkpoint but "
                                     f"received {type(state[k])}")
                    continue
                shape = tuple(np.shape(state[k]))
                if shape != tuple(t.shape):
                    bad.append(f"{k}: checkpoint {shape} vs model {tuple(t.shape)}")
                    torch_bad.append(f"size mismatch for {k}: copying a param with shape "
                                     f"{_torch_size(shape)} from checkpoint, the shape in "
                                     f"current model is {_torch_size(t.shape)}.")
        def some(names, sep=", ", k=8):  # a few, then how many more: one readable line
            return sep.join(names[:k]) + (f" ... and {len(names) - k} more"
                                          if len(names) > k else "")

        problems = []
        if strict and missing and unexpected and len(missing) == len(targets):
            # not one name in common: the weights of another model (a checkpoint folder of
            # another job), said so instead of listing every name of both
            raise StateDictError(f"load_state_dict into {type(self).__name__}: none of the "
                             f"{len(unexpected)} weights given is one of this model's: they "
                             f"are of another model (theirs: {some(unexpected, k=4)}; this "
                             f"model's: {some(missing, k=4)})")
        if strict and missing:
            problems.append("missing keys: " + some(missing))
        if strict and unexpected:
            problems.append("unexpected keys: " + some(unexpected))
        if bad:
            problems.append("shape mismatch: " + some(bad, "; "))
        if problems:
            torch_msgs = list(torch_bad)
            if strict and unexpected:
                torch_msgs.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected)))
            if strict and missing:
                torch_msgs.insert(0, "Missing key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in missing)))
            raise StateDictError(f"Error(s) in loading state_dict for {type(self).__name__}:"
                                 "\n\t" + "\n\t".join(torch_msgs)
                                 + f"\n(load_state_dict into {type(self).__name__}: "
                                 + " | ".join(problems) + ")")
        if assign:
            self._assign_state(targets, state)
            return IncompatibleKeys(missing, unexpected)
        self._warn_meta_copy(targets, state)
        for k, t in targets.items():
            if k in state and _meta.is_meta(t._data):  # torch's no-op (warned above)
                continue
            if k in state:
                value = state[k]._data if isinstance(state[k], Tensor) else state[k]
                xp = t.xp
                t._data[...] = xp.asarray(to_device(value, t.device) if xp is not np
                                         else to_numpy(value)).astype(t.dtype, copy=False)
        return IncompatibleKeys(missing, unexpected)

    def _warn_meta_copy(self, targets, state):
        """torch's warning for each meta tensor a plain load leaves as it is (in torch's
        order: module by module, its parameters then its buffers)."""
        if not any(_meta.is_meta(t._data) for t in targets.values()):
            return
        import warnings

        for mname, m in self.named_modules():
            for name in list(m._parameters) + list(m._buffers):
                k = f"{mname}.{name}" if mname else name
                if k in targets and k in state and _meta.is_meta(targets[k]._data) and not \
                        _meta.is_meta(getattr(state[k], "_data", None)):
                    warnings.warn(
                        f"for {k}: copying from a non-meta parameter in the checkpoint to a meta "
                        "parameter in the current model, which is a no-op. (Did you mean to pass "
                        "`assign=True` to assign items in the state dictionary to their "
                        "corresponding key in the module instead of copying them in place?)",
                        UserWarning, stacklevel=3)

    def _assign_state(self, targets, state):
        """``load_state_dict(assign=True)``: each named tensor of ``state`` becomes the
        module's own (a parameter stays a parameter, with its ``requires_grad``)."""
        owners = {}
        for mname, m in self.named_modules(remove_duplicate=False):
            for kind in ("_parameters", "_buffers"):
                for name in getattr(m, kind):
                    owners.setdefault(f"{mname}.{name}" if mname else name, []).append(
                        (m, kind, name))
        for k, t in targets.items():
            if k not in state:
                continue
            value = state[k]
            if not isinstance(value, Tensor):  # an array: its own dtype (not the default)
                arr = to_numpy(value) if t.xp is np else value
                value = Tensor(arr, dtype=arr.dtype if arr.dtype.kind in "fc" else None)
            for m, kind, name in owners.get(k, ()):
                if kind == "_parameters" and not isinstance(value, Parameter):
                    p = Parameter(value.detach(), requires_grad=t.requires_grad)
                    p._data = value._data  # the given tensor's memory, as torch's
                    value = p
                elif kind == "_parameters":
                    value.requires_grad_(t.requires_grad)
                getattr(m, kind)[name] = value
                if name in m.__dict__:
                    object.__setattr__(m, name, value)

    # ---- modes, devices, grads ----------------------------------------------------------
    def train(self, mode: bool = True) -> Module:
        for m in self.modules():
            object.__setattr__(m, "training", bool(mode))
        return self

    def eval(self) -> Module:
        return self.train(False)

    def apply(self, fn) -> Module:
        """``fn(m)`` for every sub-module, children first, then this one (torch's order)."""
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def get_submodule(self, target: str) -> Module:
        m = self
        for part in filter(None, target.split(".")):
            if part not in m._modules:
                raise AttributeError(f"{type(m).__name__} has no sub-module {part!r}")
            m = m._modules[part]
        return m

    def get_parameter(self, target: str) -> Parameter:
        mod, _, name = target.rpartition(".")
        m = self.get_submodule(mod)
        if name not in m._parameters:
            raise AttributeError(f"{type(m).__name__} has no parameter {name!r}")
        return m._parameters[name]

    def get_buffer(self, target: str):
        """torch's ``get_buffer("block.bn.running_mean")`` (round 44: was missing)."""
        mod, _, name = target.rpartition(".")
        m = self.get_submodule(mod)
        if name not in m._buffers:
            if name in m._parameters or name in m._modules:
                raise AttributeError(f"`{name}` is not a buffer")
            raise AttributeError(f"{type(m).__name__} has no attribute `{name}`")
        return m._buffers[name]

    def set_submodule(self, target: str, module: Module, strict: bool = False) -> None:
        """torch's ``set_submodule("body.2", nn.Identity())``: the parent must exist."""
        if not target:
            raise ValueError("Cannot set the submodule without a target name!")
        mod, _, name = target.rpartition(".")
        parent = self.get_submodule(mod)
        if strict and name not in parent._modules:
            raise AttributeError(f"{type(parent).__name__} has no attribute `{name}`")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        setattr(parent, name, module)

    def cpu(self) -> Module:
        return self.to("cpu")

    def cuda(self, device=None) -> Module:
        return self.to("cuda" if device is None else f"cuda:{device}")

    def to(self, device=None, dtype=None, non_blocking=False, memory_format=None) -> Module:
        """Move (and/or cast float) parameters, grads and buffers in place; returns self.

        ``m.to("cuda:0")``, ``m.to(dtype="float64")``, ``m.to("float64")``, ``m.to(tensor)``
        (its device and dtype); torch's ``non_blocking`` (copies here are synchronous) and
        ``memory_format=channels_last`` (the 4-D parameters laid out so) are taken.
        """
        if memory_format is not None:
            _channels_last_params(self, memory_format)
            if device is None and dtype is None:
                return self
        if hasattr(device, "_data") and hasattr(device, "device"):  # torch's to(tensor)
            device, dtype = device.device, device.dtype
        if isinstance(device, str) and device in _FLOATS or (
            device is not None and not isinstance(device, str) and _is_dtype(device)
        ):
            device, dtype = None, device
        to_meta = _meta.is_meta_spec(device)  # torch's shapes-only device: memory freed
        dev = resolve_device(device) if device is not None and not to_meta else None
        dt = _as_dtype(dtype)
        tensors = {id(t): t for _, t in self._named("_parameters", False)}
        tensors.update({id(t): t for _, t in self._named("_buffers", False)})
        if dev is not None and any(_meta.is_meta(t._data) for t in tensors.values()):
            raise NotImplementedError(
                f"{_meta.NO_DATA} Please use torch.nn.Module.to_empty() instead of "
                "torch.nn.Module.to() when moving module from meta to a different device.")
        for t in tensors.values():
            if to_meta:
                _meta.make_meta(t)
            for attr in ("_data", "_grad"):
                arr = getattr(t, attr)
                if arr is None:
                    continue
                if _meta.is_meta(arr):  # a meta tensor's dtype: still no memory
                    if dt is not None and arr.dtype.kind == "f":
                        t._data = _meta.meta_array(arr.shape, dt)
                    continue
                if dev is not None:
                    arr = to_device(arr, dev)
                if dt is not None and (arr.dtype.kind == "f" or arr.dtype.name == "bfloat16"):
                    arr = arr.astype(dt)
                setattr(t, attr, arr)
        if dt is not None:  # a lazy layer (no parameters yet) is built in that dtype, as torch's
            for m in self.modules():
                if getattr(m, "has_uninitialized_params", lambda: False)():
                    object.__setattr__(m, "_lazy_dtype", dt)
        return self

    def double(self) -> Module:
        """Cast float parameters and buffers to float64 in place; returns self."""
        return self.to(dtype="float64")

    def float(self) -> Module:
        """Cast float parameters and buffers to float32 in place; returns self."""
        return self.to(dtype="float32")

    def half(self) -> Module:
        """Cast float parameters and buffers to float16 in place; returns self."""
        return self.to(dtype="float16")

    def bfloat16(self) -> Module:
        """Cast float parameters and buffers to bfloat16 in place; returns self (torch's)."""
        import ml_dtypes

        return self.to(dtype=ml_dtypes.bfloat16)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Drop every parameter's gradient (torch's ``set_to_none=False``: zero it)."""
        for p in self.parameters():
            if set_to_none or p._grad is None:
                p._grad = None
            else:
                p._grad[...] = 0

    # ---- repr ---------------------------------------------------------------------------
    def extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__}({self.extra_repr()}"]
        hidden = getattr(type(self), "_REPR_HIDDEN", ())  # skiff's own submodules
        for name, m in self._modules.items():
            if name in hidden:
                continue
            sub = repr(m).replace("\n", "\n  ")
            lines.append(f"  ({name}): {sub}")
        return lines[0] + ")" if len(lines) == 1 else "\n".join(lines) + "\n)"


def _is_dtype(x) -> bool:
    if type(x).__module__ == "torch" and type(x).__name__ == "dtype":  # model.to(torch.bfloat16)
        return True
    try:
        np.dtype(x)
        return True
    except TypeError:
        return False


class ModuleList(Module):
    """A list of modules, registered as ``0``, ``1``, ...; torch's list methods (``append``,
    ``extend``, ``insert``, ``pop``, ``del``, ``[i] = m``, ``+``, ``+=``) renumber as torch's."""

    def __init__(self, modules=None):
        super().__init__()
        for m in modules or ():
            self.append(m)

    def _index(self, i) -> int:
        n = len(self._modules)
        i = operator.index(i)
        if not -n <= i < n:
            raise IndexError(f"index {i} is out of range")
        return i + n if i < 0 else i

    def _reset(self, items) -> None:
        """Hold exactly ``items`` (name, module) in order."""
        for k in list(self._modules):
            delattr(self, k)
        for k, m in items:
            self.add_module(k, m)

    def append(self, module: Module):
        self.add_module(str(len(self._modules)), module)
        return self

    def extend(self, modules):
        for m in modules:
            self.append(m)
        return self

    def __repr__(self) -> str:
        """torch's: runs of equal entries shown once, ``(0-5): 6 x Block(...)``."""
        reprs = [repr(m) for m in self._modules.values()]
        if not reprs:
            return type(self).__name__ + "()"
        runs = []  # [start, end, repr]
        for i, r in enumerate(reprs):
            if runs and runs[-1][2] == r:
                runs[-1][1] = i
            else:
                runs.append([i, i, r])
        lines = []
        for a, b, r in runs:
            head = f"({a}): " if a == b else f"({a}-{b}): {b - a + 1} x "
            lines.append((head + r).replace("\n", "\n  "))
        return type(self).__name__ + "(\n  " + "\n  ".join(lines) + "\n)"

    def insert(self, index: int, module: Module) -> None:
        """torch's: the numbered entries from ``index`` on move up one (a named one stays)."""
        n = len(self._modules)
        index = operator.index(index)
        if not -n <= index <= n:
            raise IndexError(f"Index out of range: {index}")
        index += n if index < 0 else 0
        for i in range(n, index, -1):
            self.add_module(str(i), self._modules[str(i - 1)])
        self.add_module(str(index), module)

    def pop(self, key=-1):
        v = self[key]
        del self[key]
        return v

    def __getitem__(self, i):
        if isinstance(i, slice):
            return type(self)(list(self._modules.values())[i])
        return list(self._modules.values())[self._index(i)]

    def __setitem__(self, i, module) -> None:
        self.add_module(list(self._modules)[self._index(i)], module)

    def __delitem__(self, i) -> None:
        mods = list(self._modules.values())
        if isinstance(i, slice):
            del mods[i]
        else:
            del mods[self._index(i)]
        self._reset((str(k), m) for k, m in enumerate(mods))

    def __add__(self, other):
        return type(self)([*self, *other])

    def __iadd__(self, other):
        return self.extend(other)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())


class ModuleDict(Module):
    """A dict of named modules (torch's dict methods: ``update``, ``pop``, ``clear``, ``del``,
    iteration over the keys)."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def update(self, modules) -> None:
        items = modules.items() if hasattr(modules, "items") else modules
        for k, m in items:
            self.add_module(k, m)

    def __getitem__(self, k):
        return self._modules[k]

    def __setitem__(self, k, m):
        self.add_module(k, m)

    def __delitem__(self, k):
        if k not in self._modules:
            raise KeyError(k)
        delattr(self, k)

    def pop(self, k):
        v = self._modules[k]
        del self[k]
        return v

    def clear(self) -> None:
        for k in list(self._modules):
            delattr(self, k)

    def __contains__(self, k):
        return k in self._modules

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()


class Sequential(ModuleList):
    """Modules applied one after another: ``Sequential(m1, m2, ...)`` (named ``0``, ``1``,
    ...) or ``Sequential(OrderedDict(name=module, ...))`` (torch's named form)."""

    def __init__(self, *modules):
        Module.__init__(self)
        if len(modules) == 1 and isinstance(modules[0], dict):
            for k, m in modules[0].items():
                self.add_module(k, m)
            return
        if len(modules) == 1 and isinstance(modules[0], (list, tuple)):
            modules = modules[0]
        for m in modules:
            self.append(m)

    def __getitem__(self, i):
        if isinstance(i, slice):  # torch's: a Sequential of the slice (same modules and names)
            return Sequential(OrderedDict(list(self._modules.items())[i]))
        return super().__getitem__(i)

    def __add__(self, other):
        if not isinstance(other, Sequential):
            raise ValueError("add operator supports only objects of Sequential class, but "
                             f"{type(other)} is given.")
        return Sequential(*self, *other)

    def __mul__(self, n: int):
        if not isinstance(n, int) or n <= 0:
            raise ValueError(f"Non-positive multiplication factor {n!r} for Sequential")
        return Sequential(*(list(self) * n))

    __rmul__ = __mul__

    def forward(self, x):
        for m in self._modules.values():
            x = m(x)
        return x


def _weights_of(state):
    """A name -> array mapping from a mapping, an opened npz, a path, or a checkpoint state."""
    import os

    if isinstance(state, (str, os.PathLike)):
        path = os.fspath(state)
        if os.path.isdir(path) or (os.path.basename(path) == "latest"
                                   and os.path.isfile(path)):
            raise FileNotFoundError(
                f"{path!r} is a checkpoint folder or its 'latest' pointer, not a weights "
                f"file: read its weights with skiff.kernels.train.parallel.model_weights."
                f"model_weights({path!r}) and pass them here (a LoRA fine-tune's: "
                f"model_weights(path, model))")
        if not os.path.isfile(path):
            raise FileNotFoundError(f"no weights file at {path!r}")
        with open(path, "rb") as fh:
            head = fh.read(64)
        from .. import serialize_torch_r48 as torch_files

        if head[:2] == b"PK" and torch_files.is_torch_zip(path):  # round 48: torch.save's
            with open(path, "rb") as fh:
                return _weights_of(torch_files.load_torch_zip(fh.read()))
        if head[:2] != b"PK" and torch_files.is_torch_legacy(head):
            with open(path, "rb") as fh:
                return _weights_of(torch_files.load_torch_legacy(fh.read()))
        with np.load(path, allow_pickle=False) as npz:
            is_checkpoint = "__meta__" in npz.files
            arrays = None if is_checkpoint else {k: npz[k] for k in npz.files}
        if is_checkpoint:
            from ...checkpoint import load_checkpoint

            return _weights_of(load_checkpoint(path))
        return arrays
    if hasattr(state, "files") and hasattr(state, "__getitem__"):  # an open NpzFile
        return {k: state[k] for k in state.files}
    if not hasattr(state, "keys"):
        raise TypeError(f"load_state_dict takes a dict of arrays or a path, got "
                        f"{type(state).__name__}")
    if isinstance(state.get("model"), dict) and "optimizer" in state:  # a Trainer checkpoint
        if state.get("frozen"):  # a run whose base was frozen: its trained weights only
            return _TrainedWeights(state["model"], state["frozen"])
        return state["model"]
    return state


class _TrainedWeights(dict):
    """A frozen-base checkpoint's model weights (what trained) and the record of the base
    they go with: ``load_state_dict`` checks the base and counts its arrays as present."""

    def __init__(self, weights: dict, frozen: dict):
        super().__init__(weights)
        self.frozen = frozen


def _channels_last_params(module, memory_format) -> None:
    """``Module.to(memory_format=)``: torch's lays out each parameter (and its gradient) of
    the format's rank (4 for ``channels_last``, 5 for ``_3d``) so; others are left."""
    from ..autograd import xp_of
    from ..top_names_r43 import _LAST_ORDER, _check_format

    _check_format(memory_format)
    name = memory_format._name
    if name not in _LAST_ORDER:
        return
    rank = _LAST_ORDER[name][0]
    last, back = (0, *range(2, rank), 1), (0, rank - 1, *range(1, rank - 1))
    for p in module.parameters():
        for attr in ("_data", "_grad"):
            arr = getattr(p, attr)
            if arr is not None and getattr(arr, "ndim", 0) == rank and hasattr(arr, "strides"):
                setattr(p, attr, xp_of(arr).ascontiguousarray(arr.transpose(last))
                        .transpose(back))
