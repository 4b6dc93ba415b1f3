"""torch's ``autograd.functional`` for ported code (``skiff.autograd.functional``): ``vjp``,
``jvp``, ``jacobian``, ``hessian``, ``vhp`` and ``hvp`` of a function of tensors, built on
:func:`.torch_autograd.grad` (``jvp``, ``hessian``, ``vhp`` and ``hvp`` differentiate a
gradient again: :mod:`.double_backward`). Reverse mode only, one output row at a time (no
``vectorize``); checked against torch in tests/kernels/train/core/test_double_backward_api.py.
"""

from __future__ import annotations

from .tensor import Tensor
from .torch_autograd import enable_grad, grad

__all__ = ["vjp", "jvp", "jacobian", "hessian", "vhp", "hvp"]


def _tuple(x):
    return (x,) if isinstance(x, Tensor) else tuple(x)


def _prepare(inputs, create_graph):
    """Each input as a tensor that requires grad: the input itself when ``create_graph`` keeps
    the graph to it, else a fresh leaf on the same array (torch's)."""
    out = []
    for t in _tuple(inputs):
        if not isinstance(t, Tensor):
            raise TypeError(f"inputs must be tensors, got {type(t).__name__}")
        if create_graph and t.requires_grad:
            out.append(t)
        else:
            out.append(Tensor._make(t._data, True, None, 0))
    return tuple(out)


def _finish(ts, create_graph):
    return tuple(t if t is None or create_graph else t.detach() for t in ts)


def _grads(outputs, inputs, vs, create_graph, strict=None, graphless=True):
    """d(outputs)/d(inputs) weighted by ``vs``, zeros where an input is unused; with
    ``strict`` (a function of the input's index giving torch's message) an unused input is
    torch's RuntimeError instead, and so is, with ``create_graph``, a gradient that does not
    depend on the inputs, where ``graphless`` asks it (round 45 h7: ``strict`` was taken and
    ignored). A second derivative of a quadratic is no function of the inputs here, while
    torch's graph keeps it one: the check is made only where torch's is sure to fail."""
    live = [(o, v) for o, v in zip(outputs, vs) if o.requires_grad]
    if not live:
        got = (None,) * len(inputs)
    else:
        got = grad([o for o, _ in live], list(inputs), [v for _, v in live], retain_graph=True,
                   create_graph=create_graph, allow_unused=True)
    if strict is not None:
        for i, g in enumerate(got):
            if g is None:
                raise RuntimeError(strict(i, False))
            if graphless and create_graph and not g.requires_grad:
                raise RuntimeError(strict(i, True))
    return tuple(Tensor._make(t.xp.zeros(t.shape, dtype=t.dtype), False, None, 0) if g is None
                 else g for g, t in zip(got, inputs))


def _check_outputs(outs, strict):
    """torch's strict-mode check that each output of the function is differentiable."""
    if strict:
        for i, o in enumerate(outs):
            if not o.requires_grad:
                raise RuntimeError(
                    f"Output {i} of the user-provided function does not require gradients. The "
                    "outputs must be computed in a differentiable manner from the input when "
                    "running in strict mode.")


def _strict_msg(stage):
    """torch's strict-mode messages (``_fill_in_zeros``), per stage, for an input ``i``; the
    second argument says the gradient exists but does not depend on the inputs."""
    if not stage:
        return None

    def msg(i, graphless):
        what = "hessian" if "double" in stage else "jacobian"
        if graphless:
            return (f"The {what} of the user-provided function is independent of input {i}. "
                    "This is not allowed in strict mode when create_graph=True.")
        if stage == "back":
            return ("The output of the user-provided function is independent of input "
                    f"{i}. This is not allowed in strict mode.")
        if stage == "back_trick":
            return (f"The gradient with respect to the input is independent of entry {i} in "
                    "the grad_outputs when using the double backward trick to compute forward "
                    "mode gradients. This is not allowed in strict mode.")
        return ("The jacobian of the user-provided function is independent of input "
                f"{i}. This is not allowed in strict mode.")
    return msg


def _shape_like(single, ts):
    return ts[0] if single else ts


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(*inputs), v^T J)``; ``v`` may be left out for a one-element output."""
    single = isinstance(inputs, Tensor)
    with enable_grad():
        xs = _prepare(inputs, create_graph)
        out = func(*xs)
        outs = _tuple(out)
        vs = _tuple(v) if v is not None else (None,) * len(outs)
        for o, w in zip(outs, vs):
            if w is None and o.numel() != 1:
                raise RuntimeError("vjp: v is needed for an output of more than one element")
        _check_outputs(outs, strict)
        res = _grads(outs, xs, vs, create_graph, _strict_msg(strict and "back"))
    return (_finish(outs, create_graph)[0] if isinstance(out, Tensor) else
            _finish(outs, create_graph)), _shape_like(single, _finish(res, create_graph))


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(*inputs), J v)`` by the double-vjp trick: u -> (u^T J) is linear in u, so its
    vjp with ``v`` is ``J v``."""
    single = isinstance(inputs, Tensor)
    with enable_grad():
        xs = _prepare(inputs, create_graph)
        out = func(*xs)
        outs = _tuple(out)
        vs = _tuple(v) if v is not None else (None,) * len(xs)
        _check_outputs(outs, strict)
        us = tuple(Tensor._make(o.xp.zeros(o.shape, dtype=o.dtype), True, None, 0) for o in outs)
        gs = _grads(outs, xs, us, True, _strict_msg(strict and "back"))
        if strict:
            for i, g in enumerate(gs):
                if not g.requires_grad:
                    raise RuntimeError(
                        f"The gradient with respect to input {i} is independent of the inputs "
                        "of the user-provided function. This is not allowed in strict mode.")
        res = _grads(gs, us, vs, create_graph, _strict_msg(strict and "back_trick"))
    del single  # J v is shaped like the output
    return (_finish(outs, create_graph)[0] if isinstance(out, Tensor) else
            _finish(outs, create_graph)), _shape_like(isinstance(out, Tensor),
                                                      _finish(res, create_graph))


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False,
             strategy="reverse-mode"):
    """The Jacobian: for one input and one output a tensor of shape out.shape + in.shape; for
    tuples, a tuple (per output) of tuples (per input), as torch's; ``strict`` torch's errors
    for an output that is no function of an input."""
    return _jacobian(func, inputs, create_graph, strict, vectorize, True)


def _jacobian(func, inputs, create_graph, strict, vectorize, graphless):
    from .tensor import stack

    single_in = isinstance(inputs, Tensor)
    with enable_grad():
        xs = _prepare(inputs, create_graph)
        out = func(*xs)
        outs = _tuple(out)
        _check_outputs(outs, strict)
        if strict and vectorize:
            raise RuntimeError(
                "torch.autograd.functional.jacobian: `strict=True` and `vectorized=True` are "
                "not supported together. Please either set `strict=False` or "
                "`vectorize=False`.")
        rows = []
        for oi, o in enumerate(outs):
            flat = o.reshape(-1)
            per_input = [[] for _ in xs]
            for i in range(flat.shape[0]):
                e = o.xp.zeros(flat.shape, dtype=o.dtype)
                e[i] = 1
                gs = _grads((flat,), xs, (Tensor._make(e, False, None, 0),), create_graph,
                            _jac_msg(oi) if strict else None, graphless)
                for k, g in enumerate(gs):
                    per_input[k].append(g)
            rows.append(tuple(
                stack(ps, 0).reshape(tuple(o.shape) + tuple(x.shape)) if ps else
                Tensor._make(o.xp.zeros(tuple(o.shape) + tuple(x.shape), dtype=o.dtype), False,
                             None, 0)
                for ps, x in zip(per_input, xs)))
    rows = [_finish(r, create_graph) for r in rows]
    if isinstance(out, Tensor):
        return rows[0][0] if single_in else rows[0]
    return tuple(r[0] if single_in else r for r in rows)


def _jac_msg(oi):
    def msg(i, graphless):
        if graphless:
            return (f"The jacobian of the user-provided function is independent of input {oi}. "
                    "This is not allowed in strict mode when create_graph=True.")
        return (f"Output {oi} of the user-provided function is independent of input {i}. This "
                "is not allowed in strict mode.")
    return msg


def _twice_differentiable(grads) -> None:
    """strict mode's check (torch's words): each first gradient must depend on the inputs."""
    for i, g in enumerate(grads):
        if not g.requires_grad:
            raise RuntimeError(
                "While computing the hessian, found that the jacobian of the "
                f"user-provided function with respect to input {i} is independent of "
                "the input. This is not allowed in strict mode. You should ensure that "
                "your function is twice differentiable and that the jacobian depends "
                "on the inputs (this would be violated by a linear function for "
                "example).")


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a function with one-element output: in.shape + in.shape for one input, a
    tuple of tuples for several."""
    single = isinstance(inputs, Tensor)

    def gradient(*xs):
        out = func(*xs)
        if isinstance(out, Tensor):
            _check_outputs((out,), strict)
        if not isinstance(out, Tensor) or out.numel() != 1:
            raise RuntimeError("hessian: the function must return a tensor of one element")
        jac = _grads((out,), xs, (None,), True)
        if strict:
            _twice_differentiable(jac)
        return jac

    got = _jacobian(gradient, tuple(_tuple(inputs)), create_graph, strict, vectorize, False)
    return got[0][0] if single else got


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(*inputs), v^T H)`` for a function with one-element output."""
    single = isinstance(inputs, Tensor)
    with enable_grad():
        xs = _prepare(inputs, create_graph)
        out = func(*xs)
        if not isinstance(out, Tensor) or out.numel() != 1:
            raise RuntimeError("vhp: the function must return a tensor of one element")
        _check_outputs((out,), strict)
        gs = _grads((out,), xs, (None,), True, _strict_msg(strict and "back"), False)
        if strict:
            _twice_differentiable(gs)
        res = _grads(gs, xs, _tuple(v), create_graph, _strict_msg(strict and "double_back"),
                     False)
    return _finish((out,), create_graph)[0], _shape_like(single, _finish(res, create_graph))


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(*inputs), H v)``: the Hessian of a twice-differentiable function is symmetric,
    so this is :func:`vhp`."""
    return vhp(func, inputs, v, create_graph, strict)
