"""Define-by-run reverse-mode autograd: :class:`Function` nodes and the backward engine.

An op is a :class:`Function` with ``forward(*arrays)`` and ``backward(*grad_outputs)`` on raw
``xp`` arrays (numpy or cupy). Its forward declares what backward needs with
:meth:`Function.save_for_backward`; nothing else is kept. The graph holds no input arrays: a
node remembers, per input, only the node that produced it (or the leaf tensor itself), so an
intermediate array is freed as soon as no tensor and no saved slot refers to it.

The engine (:func:`run_backward`) visits nodes in reverse creation order with dependency
counts, so a node runs once all of its consumers have delivered their gradients, and a leaf's
``grad_ready`` hooks fire as soon as its gradient is complete (the distributed data-parallel
engine starts all-reducing that gradient while backward carries on).
"""

from __future__ import annotations

import functools
import heapq
import itertools
import threading
import warnings
import weakref

import numpy as np

from skiff.kernels.backend import cupy, get_array_module

__all__ = [
    "Function",
    "no_grad",
    "enable_grad",
    "set_grad_enabled",
    "is_grad_enabled",
    "run_backward",
    "xp_of",
    "note_write",
    "version_of",
    "quiet_fp",
]

_seq = itertools.count()


# why a tensor has no graph to go back through (tensor.backward, autograd.grad/backward)
NO_GRAD_MESSAGE = ("element 0 of tensors does not require grad and does not have a grad_fn "
                   "(no input had requires_grad=True, it was computed "
                   "under no_grad, it is a gradient taken without create_graph=True (pass "
                   "create_graph=True to the grad or backward that made it, to differentiate "
                   "it again), or its derivative is a constant)")


# ---- torch's silence: numpy warns on log(-1), sqrt(-1), 1/0, inf - inf, exp overflow, a cast
# of nan to int, ...; torch gives the same nan/inf quietly. Every op's forward (Function.apply)
# and every backward (run_backward) runs with numpy's floating-point errors ignored: a
# context-local setting, as np.errstate(all="ignore"), not a warnings filter. numpy 2 keeps it in a
# context variable: setting that costs 0.13 us an op where np.errstate costs 0.87 (skiff's log
# of 10 floats is 2 us); where that variable is missing, np.errstate itself.
def _fp_quiet_state():
    try:
        from numpy._core._ufunc_config import _extobj_contextvar as var
        with np.errstate(all="ignore"):
            quiet = var.get()
        token = var.set(quiet)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                np.log(np.zeros(1))
        finally:
            var.reset(token)
    except Exception:  # another numpy: np.errstate
        return None, None
    return var, quiet


_fp_var, _FP_QUIET = _fp_quiet_state()


class quiet_fp:
    """``with quiet_fp():`` numpy's floating-point warnings off (np.errstate(all="ignore"),
    cheaper), for array code that torch runs silently (optimizer steps, casts)."""

    __slots__ = ("_token", "_state")

    def __enter__(self):
        if _fp_var is not None:
            self._token = _fp_var.set(_FP_QUIET)
        else:
            self._state = np.errstate(all="ignore")
            self._state.__enter__()
        return self

    def __exit__(self, *exc):
        if _fp_var is not None:
            _fp_var.reset(self._token)
        else:
            self._state.__exit__(*exc)
        return False


class _GradMode(threading.local):
    enabled = True


_mode = _GradMode()


def is_grad_enabled() -> bool:
    """Whether new ops record a graph (False inside :class:`no_grad`)."""
    return _mode.enabled


class set_grad_enabled:
    """Context manager (and decorator) that turns graph recording on or off."""

    def __init__(self, mode: bool):
        self.mode = bool(mode)
        self._set_at_init = type(self) is set_grad_enabled
        if self._set_at_init:  # torch's: a plain call ``set_grad_enabled(False)`` takes effect
            self.prev = _mode.enabled
            _mode.enabled = self.mode

    def __enter__(self):
        if not self._set_at_init:
            self.prev = _mode.enabled
        _mode.enabled = self.mode
        return self

    def __exit__(self, *exc):
        _mode.enabled = self.prev
        return False

    def __call__(self, fn):
        if self._set_at_init:  # used as a decorator: the mode it set at once goes back
            _mode.enabled = self.prev
        def wrapper(*args, **kwargs):
            with set_grad_enabled(self.mode):
                return fn(*args, **kwargs)

        wrapper.__name__ = getattr(fn, "__name__", "wrapper")
        wrapper.__doc__ = getattr(fn, "__doc__", None)
        return wrapper


class no_grad(set_grad_enabled):
    """Context manager: ops inside record no graph and keep nothing for backward.

    >>> import skiff
    >>> w = skiff.tensor([1.0, 2.0], requires_grad=True)
    >>> with skiff.no_grad():
    ...     y = w * 2
    >>> y.requires_grad
    False
    """

    def __init__(self):
        super().__init__(False)


class enable_grad(set_grad_enabled):
    """Context manager: record a graph even inside :class:`no_grad`."""

    def __init__(self):
        super().__init__(True)


def xp_of(a):
    """numpy for numpy arrays (fast path), else the array module of ``a``."""
    if type(a) is np.ndarray:
        return np
    return get_array_module(a)


@functools.cache
def _tensor_class():
    """The :class:`~.tensor.Tensor` class. tensor.py builds on this module, so the class is
    looked up when the first op runs rather than imported at module level."""
    from .tensor import Tensor

    return Tensor


def _same_device(arrays: list) -> None:
    """When a cupy array meets a host numpy array in one op (a mask, a constant or an index
    built with numpy), move the host one to the GPU: cupy refuses numpy operands."""
    cp = cupy()
    if cp is None:
        return
    if any(isinstance(a, cp.ndarray) for a in arrays):
        for i, a in enumerate(arrays):
            if type(a) is np.ndarray:
                arrays[i] = cp.asarray(a)


_batch_hook = None  # vmap_r30.dispatch while a batched vmap call runs
SAVED_HOOKS: list = []  # the open saved_tensors_hooks contexts (saved_hooks_r33), innermost last


class Function:
    """One differentiable op: subclass it and define ``forward`` and ``backward``.

    On complex arrays the engine calls a rule as ``conj(backward(conj(g)))`` (torch's
    conjugate convention for a holomorphic op's ``g * f'(a)``) unless the class sets
    ``complex_aware = True`` (it returns torch's complex gradient itself).

    ``forward(self, *arrays, **kw)`` receives raw arrays (tensors are unwrapped; other
    arguments pass through unchanged) and returns an array or a tuple of arrays.
    ``backward(self, *grad_outputs)`` receives one gradient array per output and returns one
    gradient (array or None) per positional input, shaped like that input.
    ``self.needs_input_grad`` tells backward which gradients are wanted.

    Example
    -------
    >>> import numpy as np, skiff
    >>> class Square(Function):
    ...     def forward(self, x):
    ...         self.save_for_backward(x)
    ...         return x * x
    ...     def backward(self, g):
    ...         (x,) = self.saved
    ...         return 2 * x * g
    >>> x = skiff.tensor([3.0], requires_grad=True)
    >>> Square.apply(x).sum().backward()
    >>> x.grad
    tensor([6.], dtype=float32)
    """

    # set on every instance by apply(); declared here for readers and type checkers
    saved: tuple = ()
    needs_input_grad: tuple = ()
    _tracing = False
    complex_aware = False  # see above: True where backward conjugates itself
    materialize = True  # False: a multi-output node's missing output gradients stay None
    _parents: tuple = ()
    _pidx: tuple = ()
    _nout = 1
    _out_meta = None
    _in_dtypes = None
    _seq = 0

    def forward(self, *arrays, **kwargs):  # pragma: no cover - abstract
        raise NotImplementedError(f"{type(self).__name__}.forward is not defined")

    def backward(self, *grad_outputs):  # pragma: no cover - abstract
        raise NotImplementedError(f"{type(self).__name__}.backward is not defined")

    # torch's grad_fn names where skiff's op class is called otherwise
    _TORCH_NAMES = {"MatMul": "Mm", "LinearFn": "Addmm", "Reshape": "View", "Transpose": "T",
                    "GetItem": "Select", "SoftmaxFn": "Softmax", "LogSoftmaxFn": "LogSoftmax",
                    "CrossEntropyFn": "NllLoss", "LayerNormFn": "NativeLayerNorm",
                    "DropoutFn": "Mul"}

    def name(self) -> str:
        """torch's ``grad_fn.name()``: ``"SumBackward0"``; a custom ``autograd.Function``'s
        node: its class name plus ``"Backward"``."""
        fn = getattr(self, "fn", None)
        if isinstance(fn, type) and type(self).__name__ == "_Bridge":
            return fn.__name__ + "Backward"
        cls = type(self).__name__
        return self._TORCH_NAMES.get(cls, cls.removesuffix("Fn")) + "Backward0"

    def save_for_backward(self, *arrays):
        """Keep ``arrays`` for backward (a no-op when no graph is being recorded); inside
        torch's ``autograd.graph.saved_tensors_hooks`` each array is packed now and unpacked
        when backward reads it (``saved_hooks_r33``)."""
        if self._tracing:
            self.saved = arrays if not SAVED_HOOKS else SAVED_HOOKS[-1].pack_all(arrays)

    @classmethod
    def apply(cls, *inputs, **kwargs):
        """Run the op on tensors (or plain values) and record it in the graph."""
        if _fp_var is None:
            with np.errstate(all="ignore"):
                return cls._apply(inputs, kwargs)
        token = _fp_var.set(_FP_QUIET)
        try:
            return cls._apply(inputs, kwargs)
        finally:
            _fp_var.reset(token)

    @classmethod
    def _apply(cls, inputs, kwargs):
        if _batch_hook is not None:  # a batched vmap call runs (vmap_r30): its rule or loop
            out = _batch_hook(cls, inputs, kwargs)
            if out is not NotImplemented:
                return out
        Tensor = _tensor_class()
        fn = cls()
        arrays = []
        needs = []
        any_grad = False
        for a in inputs:
            if isinstance(a, Tensor):
                arrays.append(a._data)
                r = a.requires_grad
                needs.append(r)
                any_grad = any_grad or r
            else:
                arrays.append(a)
                needs.append(False)
        _same_device(arrays)
        tracing = any_grad and _mode.enabled
        fn._tracing = tracing
        fn.needs_input_grad = tuple(needs) if tracing else (False,) * len(needs)
        try:
            out = fn.forward(*arrays, **kwargs)
        except ValueError as e:  # numpy's broadcast failure: torch's RuntimeError and words
            shapes = [a.shape for a in arrays if hasattr(a, "shape")]
            if type(e) is ValueError and "could not be broadcast" in str(e) and len(shapes) > 1:
                from .shape_error import broadcast_error

                raise broadcast_error(shapes[0], shapes[1]) from e
            raise
        if not tracing:
            fn.saved = ()
            if isinstance(out, tuple):
                return tuple(Tensor._make(o, False, None, 0) for o in out)
            return Tensor._make(out, False, None, 0)
        parents = []
        pidx = []
        for a, need in zip(inputs, needs):
            if need:
                node = a._node
                if node is None:
                    parents.append(a)
                    pidx.append(0)
                else:
                    parents.append(node)
                    pidx.append(a._idx)
            else:
                parents.append(None)
                pidx.append(0)
        fn._parents = tuple(parents)
        fn._pidx = tuple(pidx)
        fn._seq = next(_seq)
        if (out[0] if isinstance(out, tuple) else out).dtype.kind == "c":
            # the inputs' dtypes, for a create_graph pass that keeps the real part of a
            # complex gradient bound for a real input (double_backward._parent_dtype)
            fn._in_dtypes = tuple(a.dtype if isinstance(a, Tensor) else None for a in inputs)
        if isinstance(out, tuple):
            fn._nout = len(out)
            fn._out_meta = tuple((o.shape, o.dtype) for o in out)
            return tuple(Tensor._make(o, True, fn, i) for i, o in enumerate(out))
        return Tensor._make(out, True, fn, 0)

    def __lt__(self, other):  # heap tie-breaker; seq numbers are unique anyway
        return self._seq < other._seq


# ---- in-place writes: torch's version-counter check, kept per storage ----------------------------
# Every in-place write that skiff's tensor ops make to an array (``+=``, ``add_``, ``copy_``,
# ``zero_``, ``x[i] = v``, ... where autograd records nothing) notes the array's storage (its
# ``base``, so views share it, as torch's counter is per storage) with a fresh sequence number
# from the same counter that numbers the nodes. A node saved before that write (a smaller
# ``_seq``) whose saved array lives in that storage refuses to run backward. Nothing is kept per
# node and nothing is done in ``apply``: backward compares one integer per node (the node's
# ``_seq`` with the latest write's) and looks further only at nodes older than a write.
_writes: dict = {}  # id(storage) -> [writes so far, seq of the latest, weakref to the storage]
_last_write = [0]
# torch's anomaly mode (``autograd.detect_anomaly``/``set_detect_anomaly``): [enabled,
# check_nan]; when both are on, a node whose backward returns a nan gradient raises
_anomaly = [False, True]


def _nan_check(n, grads) -> None:
    """torch's anomaly-mode check of one node's gradients (its words)."""
    for i, g in enumerate(grads):
        if g is None or getattr(getattr(g, "dtype", None), "kind", "") not in "fc":
            continue
        if bool(get_array_module(g).isnan(g).any()):
            raise RuntimeError(f"Function '{n.name()}' returned nan values in its {i}th "
                               "output.")


def _storage(a):
    base = getattr(a, "base", None)
    return a if base is None else base


def _forget(key):
    return lambda _ref: _writes.pop(key, None)


def note_write(t) -> None:
    """Record that tensor ``t``'s array was just written in place (not for ``p.data``'s tensors,
    whose writes torch's version counter does not see either)."""
    if t._untracked:
        return
    view = getattr(t, "__dict__", {}).get("_view_of")
    if view is not None and not isinstance(view, tuple):  # views_r31: a copy reaches its base
        view.write_back(t)
    owner = _storage(t._data)
    key = id(owner)
    seq = next(_seq)
    entry = _writes.get(key)
    if entry is None:
        try:
            ref = weakref.ref(owner, _forget(key))
        except TypeError:  # a storage without weak references: bounded by a cap instead
            ref = None
            if len(_writes) > 4096:
                for k in [k for k, e in _writes.items() if e[2] is None]:
                    del _writes[k]
        _writes[key] = [1, seq, ref]
    else:
        entry[0] += 1
        entry[1] = seq
    _last_write[0] = seq


def version_of(arr) -> int:
    """How many in-place writes skiff's tensor ops made to ``arr``'s storage (torch's
    ``t._version``)."""
    entry = _writes.get(id(_storage(arr)))
    return entry[0] if entry is not None else 0


def _check_saved(n) -> None:
    for a in n.saved:
        if not hasattr(a, "shape") or not hasattr(a, "dtype"):
            continue
        entry = _writes.get(id(_storage(a)))
        if entry is not None and entry[1] > n._seq:
            raise RuntimeError(
                "one of the variables needed for gradient computation has been modified by an "
                f"inplace operation: an array of shape {tuple(a.shape)} and dtype {a.dtype} that "
                f"{type(n).__name__} saved for backward was written in place after the forward "
                f"(version {entry[0]}). Hint: make the in-place change on a .clone(), or after "
                "backward.")


def _conjugated_backward(node, gouts):
    """A rule written for real arrays (``g * f'(a)``), on complex ones: torch's convention
    wants ``g * conj(f'(a))``, which is ``conj(rule(conj(g)))`` for a holomorphic op and the
    same rule for one linear with real coefficients (sum, reshape, indexing). Ops that are
    neither (real, imag, fft, einsum) say ``complex_aware = True`` and do it themselves; abs
    gets a real ``g``, and its ``g * sign(a)`` (numpy's ``a / |a|``) is already torch's."""
    grads = node.backward(*(g.conj() if g is not None else g for g in gouts))
    if not isinstance(grads, (tuple, list)):
        grads = (grads,)
    return tuple(g.conj() if g is not None and g.dtype.kind == "c" else g for g in grads)


def _real_parts(dtypes, grads):
    """The gradients of a node with a complex result, each real input's the real part (torch's:
    ``dL/dx`` of a real ``x``); the imaginary part must not reach the rules upstream (a
    real-written rule conjugated around a complex gradient, as ``abs``'s, would be wrong)."""
    return tuple(g.real if g is not None and g.dtype.kind == "c" and dt is not None
                 and dt.kind != "c" else g for g, dt in zip(grads, dtypes))


def _fill_missing(node, grads):
    out = list(grads)
    for i, g in enumerate(out):
        if g is None:
            shape, dtype = node._out_meta[i]
            xp = next((xp_of(x) for x in out if x is not None), np)
            out[i] = xp.zeros(shape, dtype=dtype)
    return out


def _add_to_leaf(leaf, g):
    data = leaf._data
    if g.dtype != data.dtype:
        # a real leaf's part of a complex gradient is its real part (torch's)
        g = (g.real if g.dtype.kind == "c" and data.dtype.kind != "c" else g).astype(data.dtype)
    if g.shape != data.shape:
        raise RuntimeError(
            f"gradient of shape {g.shape} for a leaf of shape {data.shape} (an op's backward "
            "returned a wrongly shaped gradient)"
        )
    if leaf._grad is None:
        # own the array: backward may hand the same gradient to several inputs; a numpy
        # scalar (a 0-d op's result) becomes a 0-d array, which optimizers update in place
        leaf._grad = np.array(g) if isinstance(g, np.generic) else g.copy()
    else:
        leaf._grad += g


def watch_output(t, fn, first: bool = False) -> None:
    """Call ``fn(t, g)`` with the summed gradient ``g`` of the computed tensor ``t`` when
    backward reaches its node; what ``fn`` returns flows on (``register_hook``, ahead of
    ``retain_grad``, which keeps what the hooks made, as torch's). The node keeps the tensor
    weakly."""
    node = t._node
    watchers = node.__dict__.setdefault("_watch", [])
    watchers.insert(0 if first else len(watchers), (t._idx, weakref.ref(t), fn))


def _watched(n, gouts):
    gouts = list(gouts)
    for idx, ref, fn in n._watch:
        t = ref()
        if gouts[idx] is not None and (t._node is n if t is not None else
                                       getattr(fn, "strong", False)):
            gouts[idx] = fn(t, gouts[idx])
    return gouts


def _leaf_hooks(leaf, g):
    from .tensor import _run_grad_hooks

    return _run_grad_hooks(leaf, g)


def run_backward(root, grad, retain_graph: bool = False):
    """Propagate ``grad`` (an array shaped like ``root``) back to every leaf that needs it."""
    with quiet_fp():  # torch's silence (see quiet_fp)
        _run_backward(root, grad, retain_graph)


def _run_backward(root, grad, retain_graph):
    node = root._node
    if node is None:
        if root.requires_grad:
            if root._grad_hooks:
                grad = _leaf_hooks(root, grad)
            _add_to_leaf(root, grad)
            for hook in list(root._ready_hooks or ()):
                hook(root)
        return
    # 1. discover the graph: how many gradient contributions each node and leaf awaits
    deps: dict = {}
    leaf_deps: dict = {}
    stack = [node]
    seen = {node}
    while stack:
        n = stack.pop()
        for p in n._parents:
            if p is None:
                continue
            if isinstance(p, Function):
                deps[p] = deps.get(p, 0) + 1
                if p not in seen:
                    seen.add(p)
                    stack.append(p)
            else:
                k = id(p)
                leaf_deps[k] = leaf_deps.get(k, 0) + 1
    # 2. run nodes in reverse creation order once all their consumers are done
    last_write = _last_write[0]
    held: dict = {}
    pending = {node: [None] * node._nout}
    pending[node][root._idx] = grad
    heap = [(-node._seq, node)]
    while heap:
        _, n = heapq.heappop(heap)
        gouts = pending.pop(n, None)
        if gouts is None or all(g is None for g in gouts):
            grads = (None,) * len(n._parents)
        else:
            if n.saved is None:
                raise RuntimeError(
                    "Trying to backward through the graph a second time (or directly access "
                    "saved tensors after they have already been freed): the saved arrays of "
                    f"{type(n).__name__} were freed; call backward(retain_graph=True) the "
                    "first time"
                )
            if last_write > n._seq and n.saved:
                _check_saved(n)
            if "_watch" in n.__dict__:
                gouts = _watched(n, gouts)
            if n._nout > 1 and any(g is None for g in gouts) and n.materialize:
                gouts = _fill_missing(n, gouts)
            if not n.complex_aware and any(g is not None and g.dtype.kind == "c"
                                           for g in gouts):
                grads = _conjugated_backward(n, gouts)
            else:
                grads = n.backward(*gouts)
            if not isinstance(grads, (tuple, list)):
                grads = (grads,)
            if len(grads) != len(n._parents):
                raise RuntimeError(
                    f"{type(n).__name__}.backward returned {len(grads)} gradients for "
                    f"{len(n._parents)} inputs"
                )
            if not retain_graph:
                n.saved = None
            if _anomaly[0] and _anomaly[1]:
                _nan_check(n, grads)
        if n._in_dtypes is not None:  # a complex result: a real input keeps the real part
            grads = _real_parts(n._in_dtypes, grads)
        for p, idx, g in zip(n._parents, n._pidx, grads):
            if p is None:
                continue
            if isinstance(p, Function):
                if g is not None:
                    slot = pending.get(p)
                    if slot is None:
                        slot = pending[p] = [None] * p._nout
                    slot[idx] = g if slot[idx] is None else slot[idx] + g
                left = deps[p] - 1
                deps[p] = left
                if left == 0:
                    heapq.heappush(heap, (-p._seq, p))
            else:
                k = id(p)
                if g is not None:
                    if p._grad_hooks:  # hooks see this backward's sum: held back until then
                        held[k] = g if held.get(k) is None else held[k] + g
                    else:
                        _add_to_leaf(p, g)
                left = leaf_deps[k] - 1
                leaf_deps[k] = left
                if left == 0 and held.get(k) is not None:
                    _add_to_leaf(p, _leaf_hooks(p, held.pop(k)))
                if left == 0 and p._ready_hooks:
                    for hook in list(p._ready_hooks):
                        hook(p)


def graph_nodes(root) -> list:
    """Every node reachable from ``root`` (a tensor), in no particular order."""
    node = root._node
    if node is None:
        return []
    seen = {node}
    stack = [node]
    while stack:
        n = stack.pop()
        for p in n._parents:
            if isinstance(p, Function) and p not in seen:
                seen.add(p)
                stack.append(p)
    return list(seen)


def reaches(outputs, t) -> bool:
    """Whether the tensor ``t`` (a leaf, or a node's output) is in the graph of ``outputs``:
    a gradient that came back None from a first-order pass through such a graph is torch's
    zeros (round 47: a ReLU net's last ``grad`` of its constant second derivative, tied to
    the input with a zero derivative)."""
    node, leaf = t._node, None if t._node is not None else id(t)
    seen, stack = set(), [o._node for o in outputs if o._node is not None]
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        if n is node:
            return True
        seen.add(n)
        for p in n._parents:
            if isinstance(p, Function):
                stack.append(p)
            elif p is not None and id(p) == leaf:
                return True
    return False
