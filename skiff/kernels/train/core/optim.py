"""Optimizers (SGD, AdamW, Adam), gradient clipping and learning-rate schedules.

Semantics follow ``torch.optim`` exactly (AdamW's decoupled weight decay and bias correction,
SGD's momentum buffer and Nesterov form), so a run can be checked step for step against it.
The AdamW update is one fused custom op, ``train.adamw_update``: the plain-``xp`` reference
twin, a numba loop on the CPU (one pass over memory instead of ~10 numpy temporaries) and a
cupy ElementwiseKernel on the GPU.
"""

from __future__ import annotations

import collections
import collections.abc
import functools
import math

import numpy as np

from skiff.kernels.backend import cupy, custom_op, numba_available, to_device, to_numpy

from .autograd import quiet_fp, xp_of
from .nn.fused import scale_many, sum_squares

__all__ = [
    "Optimizer",
    "SGD",
    "AdamW",
    "Adam",
    "StepLR",
    "adamw_update",
    "clip_grad_norm_",
    "LRSchedule",
    "WarmupCosine",
    "ConstantLR",
]


# ---- the fused AdamW update -----------------------------------------------------------------
@custom_op("train.adamw_update")
def adamw_update(p, g, m, v, lr, beta1, beta2, eps, weight_decay, step):
    """One AdamW step, in place on ``p``, ``m``, ``v`` (torch.optim.AdamW's formula);
    returns ``(p, m, v)``."""
    xp = xp_of(p)
    p *= 1 - lr * weight_decay
    m *= beta1
    m += (1 - beta1) * g
    v *= beta2
    v += (1 - beta2) * (g * g)
    bc1 = 1 - beta1**step
    bc2_sqrt = math.sqrt(1 - beta2**step)
    denom = xp.sqrt(v)
    denom /= bc2_sqrt
    denom += eps
    p -= (lr / bc1) * (m / denom)
    return p, m, v


@custom_op("train.adamw_many")
def adamw_many(*arrays, lr, beta1, beta2, eps, weight_decay, steps):
    """:func:`adamw_update` on many tensors: ``arrays`` is ``p0, g0, m0, v0, p1, g1, ...`` and
    ``steps[i]`` tensor i's step count; in place; returns every ``(p, m, v)`` in order. On a
    GPU one launch updates them all (the per-tensor updates were ~50 launches a step)."""
    out = []
    for i in range(0, len(arrays), 4):
        p, g, m, v = arrays[i:i + 4]
        out += adamw_update(p, g, m, v, lr, beta1, beta2, eps, weight_decay, steps[i // 4])
    return tuple(out)


adamw_many.implement_in("gpu", "skiff.kernels.train.core.nn.fused_gpu")


@functools.lru_cache(maxsize=1)
def _numba_adamw():
    import numba

    @numba.njit(cache=True, fastmath=False, nogil=True)
    def kernel(p, g, m, v, decay, beta1, beta2, eps, step_size, bc2_sqrt):  # pragma: no cover
        for i in range(p.size):
            gi = g[i]
            mi = beta1 * m[i] + (1.0 - beta1) * gi
            vi = beta2 * v[i] + (1.0 - beta2) * gi * gi
            m[i] = mi
            v[i] = vi
            # the moments as stored (rounded to the parameter's type, as torch's float32
            # arithmetic and the reference have them): a 1e30 float32 gradient's square is
            # inf there, its step 0; kept in float64 it moved the weight by lr
            p[i] = p[i] * decay - step_size * m[i] / (math.sqrt(v[i]) / bc2_sqrt + eps)

    return kernel


@adamw_update.implement("cpu", "numba", available=numba_available)
def _adamw_numba(p, g, m, v, lr, beta1, beta2, eps, weight_decay, step):
    if not (p.flags.c_contiguous and m.flags.c_contiguous and v.flags.c_contiguous):
        return adamw_update.reference(p, g, m, v, lr, beta1, beta2, eps, weight_decay, step)
    from skiff.kernels.backend.split import split_range

    gf, pf, mf, vf = np.ascontiguousarray(g).reshape(-1), p.reshape(-1), m.reshape(-1), \
        v.reshape(-1)
    kernel, scalars = _numba_adamw(), (1.0 - lr * weight_decay, beta1, beta2, eps,
                                       lr / (1 - beta1**step), math.sqrt(1 - beta2**step))
    # elementwise, no fastmath: pieces on the elementwise threads give the same bits
    split_range(lambda lo, hi: kernel(pf[lo:hi], gf[lo:hi], mf[lo:hi], vf[lo:hi], *scalars),
                pf.size, align=512)
    return p, m, v


@functools.lru_cache(maxsize=1)
def _cupy_adamw():  # pragma: no cover - GPU
    cp = cupy()
    return cp.ElementwiseKernel(
        "T g, float64 decay, float64 b1, float64 b2, float64 eps, float64 step_size, "
        "float64 bc2_sqrt",
        "T p, T m, T v",
        """
        double mi = b1 * (double)m + (1.0 - b1) * (double)g;
        double vi = b2 * (double)v + (1.0 - b2) * (double)g * (double)g;
        m = (T)mi;
        v = (T)vi;
        p = (T)((double)p * decay - step_size * mi / (sqrt(vi) / bc2_sqrt + eps));
        """,
        "skiff_adamw_update",
    )


@adamw_update.implement("gpu", "cupy-elementwise", available=lambda: cupy() is not None)
def _adamw_cupy(p, g, m, v, lr, beta1, beta2, eps, weight_decay, step):  # pragma: no cover
    # the kernel's one type T covers p, g, m and v: cupy raises TypeError on a mismatch
    if m.dtype != p.dtype or v.dtype != p.dtype:
        return adamw_update.reference(p, g, m, v, lr, beta1, beta2, eps, weight_decay, step)
    if g.dtype != p.dtype:
        g = g.astype(p.dtype)
    _cupy_adamw()(g, 1.0 - lr * weight_decay, beta1, beta2, eps, lr / (1 - beta1**step),
                  math.sqrt(1 - beta2**step), p, m, v)
    return p, m, v


# ---- optimizers -----------------------------------------------------------------------------
def _quiet_step(step):
    """A step with numpy's floating-point warnings off, as torch's (an inf gradient gives nan
    or inf parameters quietly; numpy warned in SGD's and RMSprop's arithmetic)."""

    @functools.wraps(step)
    def quiet(self, *args, **kwargs):
        with float_lrs(self):
            return _quiet(self, *args, **kwargs)

    def _quiet(self, *args, **kwargs):
        if self.__dict__.get("_stepping") or not (_GLOBAL_STEP_HOOKS["pre"] or _GLOBAL_STEP_HOOKS[
                "post"] or self.__dict__.get("_step_pre_hooks")
                or self.__dict__.get("_step_post_hooks")):
            with quiet_fp():
                return step(self, *args, **kwargs)
        # torch's step hooks (pre: global then this optimizer's; post: this optimizer's then
        # global), given step's args with the optimizer first, as torch's; pre-hooks may give
        # new (args, kwargs); a subclass's super().step() runs them once
        args = (self, *args)
        for hook in [*_GLOBAL_STEP_HOOKS["pre"].values(),
                     *self.__dict__.get("_step_pre_hooks", {}).values()]:
            got = hook(self, args, kwargs)
            if got is not None:
                if not (isinstance(got, tuple) and len(got) == 2):
                    raise RuntimeError("optimizer step pre-hook must return None or a tuple "
                                       f"of (new_args, new_kwargs), but got {got!r}")
                args, kwargs = got
        self.__dict__["_stepping"] = True
        try:
            with quiet_fp():
                out = step(*args, **kwargs)
        finally:
            self.__dict__["_stepping"] = False
        for hook in [*self.__dict__.get("_step_post_hooks", {}).values(),
                     *_GLOBAL_STEP_HOOKS["post"].values()]:
            hook(self, args, kwargs)
        return out

    quiet._quiet_fp = True
    return quiet


_GLOBAL_STEP_HOOKS: dict = {"pre": {}, "post": {}}


def _add_hook(table: dict, hook):
    from .nn.hooks import RemovableHandle, _ids

    key = next(_ids)
    table[key] = hook
    return RemovableHandle(table, key)


def register_optimizer_step_pre_hook(hook):
    """torch's ``optim.optimizer.register_optimizer_step_pre_hook``: ``hook(optimizer, args,
    kwargs)`` before every optimizer's step."""
    return _add_hook(_GLOBAL_STEP_HOOKS["pre"], hook)


def register_optimizer_step_post_hook(hook):
    """torch's ``optim.optimizer.register_optimizer_step_post_hook``."""
    return _add_hook(_GLOBAL_STEP_HOOKS["post"], hook)


_F, _C, _D, _U = ("foreach", None), ("capturable", False), ("differentiable", False), (
    "fused", None)
# torch 2.13's implementation flags in each param group (skiff runs one implementation; they
# are there for code and checkpoints that read them, as torch's state_dict has them)
_TORCH_FLAGS = {
    "SGD": dict([_F, _D, _U]), "Adagrad": dict([_F, _D, _U]),
    "Adam": dict([_F, _C, _D, _U, ("decoupled_weight_decay", False)]),
    "AdamW": dict([_F, _C, _D, _U, ("decoupled_weight_decay", True)]),
    **{name: dict([_F, _C, _D]) for name in ("Adamax", "NAdam", "RAdam", "RMSprop",
                                             "Adadelta", "Rprop", "ASGD")},
}


def _impl_flags(foreach=None, fused=None, differentiable=False, **more) -> dict:
    """torch's refusals of the implementation flags of the optimizers that have ``fused``
    (Adam, AdamW, SGD, Adagrad), and the flags as given, kept in the param groups as torch
    keeps them (skiff runs one implementation whatever they say)."""
    if fused:
        if differentiable:
            raise RuntimeError("`fused` does not support `differentiable`")
        if foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
    return {"foreach": foreach, "fused": fused, "differentiable": differentiable, **more}


def _torch_flags(cls) -> dict:
    for klass in cls.__mro__:
        if klass.__name__ in _TORCH_FLAGS and klass.__module__.startswith("skiff."):
            return _TORCH_FLAGS[klass.__name__]
    return {}


class Optimizer:
    """Base class: ``Optimizer(params, lr, **hyper)``; ``param_groups`` (list of dicts with
    ``params`` and hyper-parameters; ``params`` may also be such a list of group dicts),
    per-parameter ``state``, ``step()``, ``zero_grad()``, ``state_dict()``."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "_quiet_fp", False):
            cls.step = _quiet_step(step)

    def __init__(self, params, lr: float = 1e-3, **defaults):
        if isinstance(lr, dict):  # torch's form: Optimizer.__init__(params, defaults)
            defaults = {**lr, **defaults}
        else:
            defaults = {"lr": lr, **defaults}
        if "lr" in defaults:
            _lr_number(defaults["lr"])  # checked; a tensor lr is kept, as torch's
        if hasattr(params, "requires_grad"):  # torch refuses one tensor as the params
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            f"Tensors or dicts, but got {type(params).__name__}")
        params = list(params)
        if not params:
            raise ValueError("optimizer got an empty parameter list")
        groups = params if isinstance(params[0], dict) else [{"params": params}]
        self.defaults = {**dict(defaults), **{k: v for k, v in _torch_flags(type(self)).items()
                                              if k not in defaults}}
        self.param_groups = []
        for g in groups:
            ps = g["params"]  # a group's params may be one tensor (torch's)
            group = {**self.defaults, **g,
                     "params": [ps] if hasattr(ps, "requires_grad") else list(ps)}
            if "lr" in group:
                _lr_number(group["lr"])
            for p in group["params"]:
                # a frozen tensor (requires_grad=False) is kept and skipped while it has no
                # gradient, as torch's optimizers do; a tensor computed from others is refused
                if not hasattr(p, "requires_grad") or not hasattr(p, "grad"):
                    raise TypeError(f"an optimizer takes tensors, got {type(p).__name__}")
                if not p.is_leaf:
                    raise ValueError("an optimizer takes leaf tensors (parameters), got one "
                                     "computed from others")
            self.param_groups.append(group)
        self.state: dict = collections.defaultdict(dict)  # torch's: self.state[p] is {} at first

    def _params(self):
        for group in self.param_groups:
            yield from group["params"]

    def register_step_pre_hook(self, hook):
        """torch's: ``hook(optimizer, args, kwargs)`` before each ``step``, returning None or
        new ``(args, kwargs)``; a handle with ``remove()``."""
        return _add_hook(self.__dict__.setdefault("_step_pre_hooks", {}), hook)

    def register_step_post_hook(self, hook):
        """torch's: ``hook(optimizer, args, kwargs)`` after each ``step``."""
        return _add_hook(self.__dict__.setdefault("_step_post_hooks", {}), hook)

    def add_param_group(self, param_group: dict) -> None:
        """torch's: a new group with its own hyper-parameters (the defaults fill the rest); a
        parameter already in a group is refused."""
        params = param_group["params"]
        params = [params] if hasattr(params, "requires_grad") else list(params)
        seen = {id(p) for p in self._params()}
        if any(id(p) in seen for p in params):
            raise ValueError("some parameters appear in more than one parameter group")
        group = {**self.defaults, **param_group, "params": params}
        if "lr" in group:
            _lr_number(group["lr"])
        self.param_groups.append(group)

    @staticmethod
    def _closure(closure):
        """``step(closure)``: torch's optimizers call it with grad on and return its loss."""
        if closure is None:
            return None
        from .autograd import enable_grad

        with enable_grad():
            return closure()

    def _each(self, group, init=None):
        """torch's per-parameter prologue, for the single-tensor updates: each parameter of
        ``group`` that has a gradient, with that gradient (negated under ``maximize``; plus
        ``weight_decay * x`` (L2), or ``x`` shrunk by ``1 - lr * weight_decay`` first under
        ``decoupled_weight_decay``) and its state (``{"step": 0, **init(xp, x, group)}`` on
        first use), its step counted."""
        maximize, wd = group.get("maximize"), group.get("weight_decay", 0.0)
        decoupled = group.get("decoupled_weight_decay")
        for p in group["params"]:
            if p._grad is None:
                continue
            g = -p._grad if maximize else p._grad
            st = self.state.get(p)
            if not st:
                st = self.state[p] = {"step": StepCount(0),
                                      **(_init(init, p, group) if init else {})}
            st["step"] += 1
            if wd:
                if decoupled:
                    p._data *= 1 - group["lr"] * wd
                else:
                    g = g + wd * p._data
            if p._data.dtype.kind == "c":  # torch's view_as_real of a complex parameter
                yield _RealParts(p), _real_view(g), _RealState(st)
            else:
                yield p, g, st

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self._params():
            if set_to_none or p._grad is None:
                p._grad = None
            else:
                p._grad[...] = 0

    def step(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    @property
    def lr(self) -> float:
        return self.param_groups[0]["lr"]

    def state_dict(self) -> dict:
        """``{"state": {index: {name: numpy array or number}}, "param_groups": [...]}``."""
        index = {id(p): i for i, p in enumerate(self._params())}
        state = {}
        for p in self._params():
            st = self.state.get(p)
            if st:
                state[index[id(p)]] = {
                    k: (np.array(to_numpy(v), copy=True) if hasattr(v, "shape") else
                        int(v) if type(v) is StepCount else v)  # a plain int: skiff.load's
                    for k, v in st.items()
                }
        groups = []
        for g in self.param_groups:
            hyper = {k: v for k, v in g.items() if k != "params"}
            groups.append({**hyper, "params": [index[id(p)] for p in g["params"]]})
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict) -> None:
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups) or any(
            len(a["params"]) != len(b["params"]) for a, b in zip(groups, self.param_groups)
        ):
            raise ValueError(  # torch's words, then the sizes
                ("loaded state dict has a different number of parameter groups"
                 if len(groups) != len(self.param_groups) else
                 "loaded state dict contains a parameter group that doesn't match the size "
                 "of optimizer's group")
                + " (optimizer state does not fit: groups of sizes "
                f"{[len(g['params']) for g in groups]} vs "
                f"{[len(g['params']) for g in self.param_groups]})"
            )
        params = list(self._params())
        for g, saved in zip(self.param_groups, groups):
            for k, v in saved.items():
                if k != "params":  # a tensor (a tensor lr) copied, as torch's deepcopy
                    g[k] = v.detach().clone() if _is_tensor_lr(v) else v
        self.state = collections.defaultdict(dict)
        for i, st in state_dict["state"].items():
            p = params[int(i)]
            self.state[p] = {
                k: (to_device(np.asarray(v), p.device).astype(p.dtype, copy=True)
                    if hasattr(v, "shape") and np.ndim(v) > 0 else v)
                for k, v in st.items()
            }
            step = self.state[p].get("step")
            if step is not None and not isinstance(step, bool):  # torch's float32 tensor too
                try:
                    value = float(step.item() if hasattr(step, "item") else step)
                except (TypeError, ValueError):
                    continue
                if value == int(value):
                    self.state[p]["step"] = StepCount(int(value))


class StepCount(int):
    """An optimizer state's ``step``: an int (exact in the bias corrections) with torch's
    ``.item()`` (torch's is a float32 0-d tensor: ``state["step"].item()`` gives ``5.0``)."""

    __slots__ = ()

    def item(self) -> float:
        return float(self)

    def __add__(self, other):
        r = int.__add__(self, other)
        return r if r is NotImplemented else StepCount(r)

    __radd__ = __add__

    def __reduce__(self):  # pickles (and checkpoints) as the plain int
        return (int, (int(self),))


def _is_tensor_lr(value) -> bool:
    return hasattr(value, "requires_grad") and hasattr(value, "shape")


def _lr_number(value):
    """torch's ``lr=torch.tensor(1e-3)`` (one element): its float, which the updates and the
    schedules use (``param_groups`` keeps the tensor itself, as torch's: see
    :func:`float_lrs`)."""
    if _is_tensor_lr(value):
        if int(np.prod(value.shape)) != 1:
            raise ValueError("Tensor lr must be 1-element")
        return float(to_numpy(value._data).reshape(-1)[0])
    return value


class float_lrs:  # noqa: N801 - a context manager, named as a function
    """Inside: each group's tensor ``lr`` (torch's ``lr=torch.tensor(...)``, kept in
    ``param_groups`` as torch keeps it) and ``initial_lr`` read as floats, so the updates and
    the schedules do plain arithmetic (and an in-place change of the user's tensor between
    steps is seen, as torch's); on the way out a new lr is written into the tensor in place
    (torch's schedulers ``fill_`` it; float32 rounding as torch's) and the tensors put back. A
    schedule that adds ``initial_lr`` to a tensor-lr group gets a tensor copy, as torch's.
    Nested uses (a subclass's ``super().step()``) find floats and do nothing."""

    def __init__(self, optimizer, tensor_initial: bool = True):
        self.groups = getattr(optimizer, "param_groups", None) or []
        self.tensor_initial = tensor_initial  # OneCycleLR's own initial_lr is a float

    def __enter__(self):
        self.held = []
        for g in self.groups:
            lr, init = g.get("lr"), g.get("initial_lr")
            t_lr, t_init = _is_tensor_lr(lr), _is_tensor_lr(init)
            if t_lr or t_init:
                self.held.append((g, lr if t_lr else None, init if t_init else None,
                                  "initial_lr" in g))
                if t_lr:
                    g["lr"] = _lr_number(lr)
                if t_init:
                    g["initial_lr"] = _lr_number(init)
        return self

    def __exit__(self, *exc):
        for g, lr, init, had_init in self.held:
            if lr is not None:
                new = g.get("lr")
                if not _is_tensor_lr(new) and isinstance(new, (int, float, np.floating)):
                    if float(new) != _lr_number(lr):
                        lr._data[...] = new
                    g["lr"] = lr
            if init is not None:
                if not _is_tensor_lr(g.get("initial_lr")):
                    g["initial_lr"] = init
            elif lr is not None and not had_init and "initial_lr" in g and not _is_tensor_lr(
                    g["initial_lr"]) and self.tensor_initial:
                copy = lr.detach().clone()  # a plain tensor, as torch's ``lr.clone()``
                copy._data[...] = g["initial_lr"]
                g["initial_lr"] = copy
        return False


def with_float_lrs(method):
    """A schedule's method run under :func:`float_lrs` of its optimizer (``self.optimizer``,
    or the constructor's optimizer argument)."""
    if getattr(method, "_float_lrs", False):
        return method

    @functools.wraps(method)
    def run(self, *args, **kwargs):
        opt = self.__dict__.get("optimizer")
        if opt is None:
            opt = next((a for a in (*args, *kwargs.values()) if hasattr(a, "param_groups")),
                       None)
        with float_lrs(opt, not getattr(self, "_float_initial_lr", False)):
            return method(self, *args, **kwargs)

    run._float_lrs = True
    return run


def group_lrs(optimizer, values=None) -> list:
    """torch's ``get_last_lr``: each group's lr (or ``values``), a copy of the tensor where
    the group's lr is a tensor (as torch's clones)."""
    groups = optimizer.param_groups
    values = [g["lr"] for g in groups] if values is None else list(values)
    out = []
    for k, v in enumerate(values):
        lr = groups[k].get("lr") if k < len(groups) else None
        if _is_tensor_lr(lr):
            c = lr.detach().clone()
            c._data[...] = _lr_number(v)
            v = c
        out.append(v)
    return out


def _check_hyper(name, value, low=0.0, high=None):
    if name == "lr":
        value = _lr_number(value)
    if not isinstance(value, (int, float)) or value < low or (high is not None and value >= high):
        rng = f"[{low}, {high})" if high is not None else f">= {low}"
        raise ValueError(f"{name} must be a number {rng}, got {value!r}")


class SGD(Optimizer):
    """Stochastic gradient descent with optional momentum, Nesterov and L2 weight decay
    (torch.optim.SGD with dampening 0)."""

    def __init__(self, params, lr=1e-2, momentum=0.0, dampening=0.0, weight_decay=0.0,
                 nesterov=False, *, maximize=False, foreach=None, differentiable=False,
                 fused=None):
        if isinstance(dampening, bool):  # skiff's older positional order: (momentum, nesterov)
            dampening, nesterov = 0.0, dampening
        _check_hyper("lr", lr)
        _check_hyper("momentum", momentum)
        _check_hyper("dampening", dampening)
        _check_hyper("weight_decay", weight_decay)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("nesterov needs momentum > 0 and zero dampening (as torch's), got "
                             f"momentum={momentum!r}, dampening={dampening!r}")
        super().__init__(params, lr=lr, momentum=momentum, dampening=dampening,
                         nesterov=nesterov, weight_decay=weight_decay, maximize=bool(maximize),
                         **_impl_flags(foreach, fused, differentiable))

    def step(self, closure=None):
        loss = self._closure(closure)
        for group in self.param_groups:
            lr, mom, wd = group["lr"], group["momentum"], group["weight_decay"]
            damp = group.get("dampening", 0.0)
            for p in group["params"]:
                if p._grad is None:
                    continue
                d = -p._grad if group.get("maximize") else p._grad
                if wd:
                    d = d + wd * p._data
                if mom:
                    st = self.state.setdefault(p, {})
                    buf = st.get("momentum_buffer")
                    if buf is None:  # an array even for a 0-d parameter (d: a numpy scalar)
                        buf = st["momentum_buffer"] = np.array(d) if isinstance(
                            d, np.generic) else d.copy()
                    else:
                        buf *= mom
                        buf += d if not damp else (1 - damp) * d
                    d = d + mom * buf if group["nesterov"] else buf
                p._data -= lr * d
        return loss


class AdamW(Optimizer):
    """Adam with decoupled weight decay (torch.optim.AdamW), one fused update per tensor."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01,
                 amsgrad=False, *, maximize=False, foreach=None, capturable=False,
                 differentiable=False, fused=None):
        _check_hyper("lr", lr)
        if _is_tensor_lr(lr) and foreach and not capturable:  # torch's refusal
            raise ValueError("lr as a Tensor is not supported for capturable=False and "
                             "foreach=True")
        _check_hyper("beta1", betas[0], 0.0, 1.0)
        _check_hyper("beta2", betas[1], 0.0, 1.0)
        _check_hyper("eps", eps)
        _check_hyper("weight_decay", weight_decay)
        super().__init__(params, lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                         amsgrad=bool(amsgrad), maximize=bool(maximize),
                         **_impl_flags(foreach, fused, differentiable, capturable=capturable))

    def step(self, closure=None):
        loss = self._closure(closure)
        for group in self.param_groups:
            b1, b2 = group["betas"]
            arrays, steps = [], []
            for p in group["params"]:
                if p._grad is None:
                    continue
                st = self.state.get(p)
                if st is None:
                    xp = p.xp
                    st = self.state[p] = {"step": StepCount(0),
                                          "exp_avg": xp.zeros_like(p._data),
                                          "exp_avg_sq": xp.zeros_like(p._data)}
                    if group.get("amsgrad"):
                        st["max_exp_avg_sq"] = xp.zeros_like(p._data)
                st["step"] += 1
                if group.get("amsgrad") or group.get("maximize"):
                    self._plain_step(p, group, st)
                    continue
                arrays += [_real_view(a) for a in (p._data, self._grad(p, group),
                                                   st["exp_avg"], st["exp_avg_sq"])]
                steps.append(st["step"])
            if arrays:
                adamw_many(*arrays, lr=group["lr"], beta1=b1, beta2=b2, eps=group["eps"],
                           weight_decay=self._decoupled(group), steps=tuple(steps))
        return loss

    def _grad(self, p, group):
        return -p._grad if group.get("maximize") else p._grad

    def _decoupled(self, group) -> float:
        return group["weight_decay"]

    def _plain_step(self, p, group, st) -> None:
        """torch's single-tensor Adam(W) in whole-array expressions, for ``amsgrad`` (the max
        of the second moments in the denominator) and ``maximize``."""
        xp, x, lr = p.xp, _real_view(p._data), group["lr"]
        b1, b2 = group["betas"]
        g = _real_view(self._grad(p, group))
        if x.dtype != p._data.dtype:  # a complex parameter: its moments as real views too
            keys = ("exp_avg", "exp_avg_sq") + (("max_exp_avg_sq",) if group.get("amsgrad")
                                                else ())
            for k in keys:
                st.setdefault(k, xp.zeros_like(p._data))
            st = {**st, **{k: _real_view(st[k]) for k in keys}}
        wd = self._decoupled(group)
        if wd:
            x *= 1 - lr * wd
        m, v, step = st["exp_avg"], st["exp_avg_sq"], st["step"]
        m += (1 - b1) * (g - m)  # torch's lerp_ (weight 1 - beta1 < 0.5)
        v *= b2
        v += (1 - b2) * g * g
        step_size = lr / (1 - b1 ** step)
        bc2_sqrt = (1 - b2 ** step) ** 0.5
        if group.get("amsgrad"):
            top = st.setdefault("max_exp_avg_sq", xp.zeros_like(x))
            xp.maximum(top, v, out=top)
            v = top
        denom = xp.sqrt(v) / bc2_sqrt
        denom += group["eps"]
        x += -step_size * m / denom


def _init(init, p, group) -> dict:
    """A parameter's first state; a complex one's made on its float view (Rprop's step sizes
    start at ``lr`` for both parts, as torch's) and kept as complex arrays of its shape."""
    x = p._data
    if x.dtype.kind != "c":
        return init(p.xp, x, group)
    real = _real_view(x)
    return {k: v.view(x.dtype) if getattr(v, "shape", None) == real.shape else v
            for k, v in init(p.xp, real, group).items()}


class _RealParts:
    """A complex parameter as the single-tensor updates see it: ``_data`` its float view."""

    def __init__(self, p):
        self.xp, self._data = p.xp, _real_view(p._data)


class _RealState(collections.abc.MutableMapping):
    """A complex parameter's state (kept complex, torch's shapes) read as float views; what
    an update stores goes to the state itself."""

    def __init__(self, st):
        self.st = st

    def __getitem__(self, k):
        v = self.st[k]
        return _real_view(v) if getattr(getattr(v, "dtype", None), "kind", "") == "c" else v

    def __setitem__(self, k, v):
        self.st[k] = v

    def __delitem__(self, k):
        del self.st[k]

    def __iter__(self):
        return iter(self.st)

    def __len__(self):
        return len(self.st)


def _real_view(a):
    """A complex array as the float array of its real and imaginary parts side by side,
    sharing its memory (torch's ``view_as_real``, which its Adam(W) applies to a complex
    parameter, its gradient and its moments); a real array as it is."""
    if a.dtype.kind != "c":
        return a
    if not a.flags.c_contiguous:
        raise ValueError("Adam on a complex parameter needs it contiguous: make it with "
                         "nn.Parameter(t.contiguous())")
    return a.view(a.real.dtype)


class Adam(AdamW):
    """torch.optim.Adam: ``weight_decay`` (default 0) is L2, added to the gradient before
    the moments (AdamW decays the weights apart from them)."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                 amsgrad=False, *, decoupled_weight_decay=False, **kw):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                         amsgrad=amsgrad, **kw)
        if decoupled_weight_decay:  # torch 2.13's Adam(decoupled_weight_decay=True): AdamW
            self.defaults["decoupled_weight_decay"] = True
            for group in self.param_groups:
                group["decoupled_weight_decay"] = True

    def _grad(self, p, group):
        wd = 0.0 if group.get("decoupled_weight_decay") else group["weight_decay"]
        g = -p._grad if group.get("maximize") else p._grad
        return g + wd * p._data if wd else g

    def _decoupled(self, group) -> float:
        return group["weight_decay"] if group.get("decoupled_weight_decay") else 0.0


def clip_grad_norm_(params, max_norm: float, eps: float = 1e-6) -> float:
    """Scale all gradients so their global L2 norm is at most ``max_norm``; returns the norm
    before clipping (inf/nan when a gradient is not finite; then nothing is scaled)."""
    _check_hyper("max_norm", max_norm)
    grads = [p._grad for p in params if p._grad is not None]
    if not grads:
        return 0.0
    total = float(math.sqrt(float(sum_squares(*grads))))  # one device sync
    if not math.isfinite(total):
        return total
    coef = max_norm / (total + eps)
    if coef < 1.0:
        scale_many(*grads, coef=coef)
    return total


# ---- schedules ------------------------------------------------------------------------------
class LRSchedule:
    """Base: sets each group's lr from ``lr_at(step)``; ``step()`` advances by one.

    The base lr of a group is the lr it had when the first schedule was attached (kept in
    the group as ``initial_lr``, as torch does), so a second closed-form schedule on the same
    optimizer (``WarmupCosine`` when ``Trainer.train`` is called again) starts from the peak,
    not from where the last one ended. torch's chainable schedules (``_chainable``) start from
    and scale the group's current lr instead, as torch's do.
    """

    # torch's chainable schedules (StepLR, MultiStepLR, ConstantLR, LinearLR, ExponentialLR,
    # CosineAnnealingLR) step by torch's recursive form, ``lr_after``: from the group's current
    # lr, so two of them stepped on one optimizer compose (the second scales what the first set)
    # as torch's do; the closed form ``lr_at`` serves SequentialLR's restarts
    _chainable = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for name in ("__init__", "step", "load_state_dict"):  # tensor lrs: see float_lrs
            method = cls.__dict__.get(name)
            if method is not None:
                setattr(cls, name, with_float_lrs(method))

    @with_float_lrs
    def __init__(self, optimizer: Optimizer, last_epoch: int = -1, verbose=None):
        self.optimizer = optimizer
        self.base_lrs = [g.setdefault("initial_lr", g["lr"]) for g in optimizer.param_groups]
        self.last_step = last_epoch + 1  # torch's last_epoch=-1: the first step is step 0
        if self._chainable and last_epoch == -1:
            self._chain(initial=True)
        else:
            self._apply()

    def lr_after(self, step: int, lr: float, base: float, initial: bool) -> float:
        """A chainable schedule's lr at ``step`` from the group's lr ``lr`` (torch's
        ``get_lr``; ``initial`` on the step the constructor takes)."""
        raise NotImplementedError  # pragma: no cover - abstract

    # torch's recursive forms scale every group's lr, one added after the schedule was made
    # too (add_param_group); CosineAnnealingLR's reads base_lrs and stops at those groups
    _chain_all = True

    def _chain(self, initial: bool = False) -> None:
        groups = self.optimizer.param_groups
        if not self._chain_all:
            self._same_groups()
        for k, g in enumerate(groups):
            b = self.base_lrs[k] if k < len(self.base_lrs) else g.get("initial_lr", g["lr"])
            g["lr"] = self.lr_after(self.last_step, g["lr"], b, initial)
        self._last_lr = [g["lr"] for g in self.optimizer.param_groups]

    def lr_at(self, step: int, base: float) -> float:  # pragma: no cover - abstract
        raise NotImplementedError

    def get_lr(self) -> list[float]:
        return [self.lr_at(self.last_step, b) for b in self.base_lrs]

    def get_last_lr(self) -> list[float]:
        """torch's: the lrs this schedule set at its last step (a schedule stepped after it
        on the same optimizer does not change them)."""
        last = self.__dict__.get("_last_lr")
        return group_lrs(self.optimizer, last)

    @property
    def last_epoch(self) -> int:
        """torch's name for the steps taken."""
        return self.last_step

    _strict_groups = True  # torch's schedules; skiff's own WarmupCosine keeps the old zip

    def _same_groups(self) -> None:
        n, m = len(self.optimizer.param_groups), len(self.base_lrs)
        if n != m and self._strict_groups:  # torch's zip(..., strict=True) raises too
            raise ValueError(f"{type(self).__name__}: the optimizer has {n} param groups, the "
                             f"schedule was made for {m} (a group added with add_param_group "
                             "after it); make the scheduler after adding the group (torch "
                             "raises here too)")

    def _apply(self):
        self._same_groups()
        for g, lr in zip(self.optimizer.param_groups, self.get_lr()):
            g["lr"] = lr
        self._last_lr = [g["lr"] for g in self.optimizer.param_groups]

    @with_float_lrs
    def step(self) -> None:
        self.last_step += 1
        if self._chainable:
            self._chain()
        else:
            self._apply()

    # skiff's attribute -> torch's state key, where they are named otherwise
    _TORCH_KEYS: dict = {}

    def _torch_state_extra(self, state: dict) -> None:
        """A schedule's own entries (torch's) beyond its plain settings."""

    def state_dict(self) -> dict:
        """torch's state: the schedule's settings under torch's names (``step_size``,
        ``gamma``, ``T_max``, ...), ``base_lrs``, ``last_epoch`` (the steps taken),
        ``_step_count``, ``_is_initial``, ``_get_lr_called_within_step`` and ``_last_lr``,
        so torch's ``load_state_dict`` reads it and skiff's reads torch's."""
        state = {}
        for k, v in self.__dict__.items():
            if k in ("optimizer", "last_step") or callable(v) or (
                    k.startswith("_") and k not in self._TORCH_KEYS):
                continue
            state[self._TORCH_KEYS.get(k, k)] = v
        state.update({"base_lrs": list(self.base_lrs), "last_epoch": self.last_step,
                      "_step_count": self.last_step + 1, "_is_initial": False,
                      "_get_lr_called_within_step": False, "_last_lr": self.get_last_lr()})
        self._torch_state_extra(state)
        return state

    @with_float_lrs
    def load_state_dict(self, state: dict) -> None:
        """Restore the step count (``last_epoch``; a state saved before round 26 has
        ``last_step``), the base lrs and the scalar settings a torch state carries under this
        schedule's names (``step_size``, ``gamma``, ``T_max``, ...); a closed-form schedule sets
        its lr, a chainable one leaves the lr to the optimizer's state dict (torch's)."""
        if "last_epoch" not in state and "last_step" not in state:
            raise KeyError("an LR scheduler state needs 'last_epoch' (torch's and skiff's) or "
                           f"'last_step' (skiff's before round 26); got keys {sorted(state)}")
        self.last_step = int(state["last_epoch"] if "last_epoch" in state
                             else state["last_step"])
        self.base_lrs = [_lr_number(b) for b in state.get("base_lrs", self.base_lrs)]
        back = {v: k for k, v in self._TORCH_KEYS.items()}
        for key, value in state.items():
            key = back.get(key, key)
            here = self.__dict__.get(key)
            if (key not in ("last_step", "base_lrs", "optimizer") and not key.startswith("_")
                    and isinstance(here, (int, float)) and not isinstance(here, bool)
                    and isinstance(value, (int, float)) and not isinstance(value, bool)):
                setattr(self, key, type(here)(value))
        if state.get("_last_lr") is not None:  # torch's: the lrs of the saved last step
            self._last_lr = [_lr_number(v) for v in state["_last_lr"]]
        if not self._chainable:
            self._apply()


class WarmupCosine(LRSchedule):
    """Linear warmup from ``base/warmup_steps`` to ``base`` over ``warmup_steps`` steps, then a
    cosine decay to ``base * min_lr_ratio`` at ``total_steps`` (held there afterwards)."""

    _strict_groups = False

    def __init__(self, optimizer, warmup_steps: int, total_steps: int, min_lr_ratio=0.1):
        if warmup_steps < 0 or total_steps <= 0 or warmup_steps > total_steps:
            raise ValueError(
                f"need 0 <= warmup_steps <= total_steps and total_steps > 0, got "
                f"warmup_steps={warmup_steps!r}, total_steps={total_steps!r}"
            )
        _check_hyper("min_lr_ratio", min_lr_ratio)
        self.warmup_steps, self.total_steps, self.min_lr_ratio = (
            int(warmup_steps), int(total_steps), float(min_lr_ratio))
        super().__init__(optimizer)

    def lr_at(self, step, base):
        if step < self.warmup_steps:
            return base * (step + 1) / self.warmup_steps
        span = max(1, self.total_steps - self.warmup_steps)
        progress = min(1.0, (step - self.warmup_steps) / span)
        low = base * self.min_lr_ratio
        return low + (base - low) * self.fall(progress)

    def fall(self, progress: float) -> float:
        """The share of the way from the floor to the base lr at ``progress`` (0 to 1) past
        the warm-up: a half cosine (a subclass gives another shape)."""
        return 0.5 * (1 + math.cos(math.pi * progress))


class ConstantLR(LRSchedule):
    """The base lr times ``factor`` for the first ``total_iters`` steps, then the base lr;
    torch's defaults (a third for 5 steps)."""

    def __init__(self, optimizer, factor: float = 1.0 / 3, total_iters: int = 5):
        if not 0 <= factor <= 1:
            raise ValueError("Constant multiplicative factor expected to be between 0 and 1.")
        self.factor, self.total_iters = float(factor), int(total_iters)
        super().__init__(optimizer)

    def lr_at(self, step, base):
        return base * self.factor if step < self.total_iters else base

    _chainable = True

    def lr_after(self, step, lr, base, initial):
        if step == 0:
            return lr * self.factor
        return lr if step != self.total_iters else lr * (1.0 / self.factor)


class StepLR(LRSchedule):
    """torch's StepLR: the base lr times ``gamma`` once every ``step_size`` steps."""

    def __init__(self, optimizer, step_size: int, gamma: float = 0.1):
        if int(step_size) < 1:
            raise ValueError(f"step_size must be a positive integer, got {step_size!r}")
        self.step_size, self.gamma = int(step_size), float(gamma)
        super().__init__(optimizer)

    def lr_at(self, step, base):
        return base * self.gamma ** (step // self.step_size)

    _chainable = True

    def lr_after(self, step, lr, base, initial):
        return lr if step == 0 or step % self.step_size else lr * self.gamma
