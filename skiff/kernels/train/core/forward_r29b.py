"""Forward mode as ported code writes it: torch's ``func.jvp``, ``func.jacfwd``,
``func.linearize`` and ``autograd.forward_ad`` (``dual_level``, ``make_dual``,
``unpack_dual``).

How, and what differs from torch: skiff has no forward-mode rules. A Jacobian-vector product
is taken by the double-vjp trick: with ``u`` a stand-in cotangent, ``g(u) = J^T u`` is linear
in ``u``, so the gradient of ``<g(u), v>`` with respect to ``u`` is ``J v``. That is two
reverse passes (the first with ``create_graph``), so it works wherever gradients of gradients
do (:mod:`.double_backward`) and gives torch's values; it costs about two backward passes
where torch's costs one forward. ``jacfwd`` returns ``jacrev``'s Jacobian (the same matrix,
built row by row). Under ``forward_ad``, ``make_dual`` returns a stand-in for the primal
recorded with its tangent in the open level, and ``unpack_dual`` of any tensor computed from
stand-ins gives the tangent by the trick above; a tensor that depends on no dual of the level
has tangent ``None``, as torch's.
"""

from __future__ import annotations

import contextlib
from collections import namedtuple

from .autograd import _tensor_class, enable_grad, is_grad_enabled
from .func_r29 import _leaves, _map, _stand_in, jacrev

__all__ = ["jvp", "jacfwd", "linearize"]
FORWARD_AD = ["dual_level", "enter_dual_level", "exit_dual_level", "make_dual",
              "unpack_dual", "UnpackedDualTensor"]


def _tangent_of(outs, ins, tangents, create_graph):
    """``J v`` for each output tensor in ``outs`` (inputs ``ins``, tangents ``tangents``, one
    per input); ``None`` where an output depends on no input."""
    from .tensor import zeros_like
    from .torch_autograd import grad as autograd_grad

    Tensor = _tensor_class()
    live = [k for k, o in enumerate(outs) if isinstance(o, Tensor) and o.requires_grad]
    res = [None] * len(outs)
    if not live or not ins:
        return res
    us = [zeros_like(outs[k].detach()).requires_grad_(True) for k in live]
    with enable_grad():
        gs = autograd_grad([outs[k] for k in live], ins, grad_outputs=us, create_graph=True,
                           allow_unused=True)
        pairs = [(g, t) for g, t in zip(gs, tangents) if g is not None and g.requires_grad]
        if not pairs:
            return res
        tg = autograd_grad([g for g, _ in pairs], us, grad_outputs=[t for _, t in pairs],
                           create_graph=create_graph, allow_unused=True)
    for k, t in zip(live, tg):
        if t is None:
            t = outs[k].detach() * 0
        res[k] = t if create_graph else t.detach()
    return res


def _check_tangents(primals, tangents):
    lp, lt = _leaves(primals), _leaves(tangents)
    if len(lp) != len(lt):
        raise ValueError(f"jvp: {len(lt)} tangents for {len(lp)} primal tensors (the tangents "
                         "must have the primals' structure)")
    for p, t in zip(lp, lt):
        if tuple(p.shape) != tuple(t.shape):
            raise ValueError(f"jvp: a tangent of shape {tuple(t.shape)} for a primal of shape "
                             f"{tuple(p.shape)} (they must match)")
    return lp, lt


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """torch's ``func.jvp``: ``(func(*primals), J @ tangents)``; ``primals`` and ``tangents``
    are tuples of pytrees of the same structure (with ``has_aux``, ``aux`` comes third)."""
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise ValueError("jvp: primals and tangents must be tuples, e.g. jvp(f, (x,), (v,))")
    _, lt = _check_tangents(tuple(primals), tuple(tangents))
    outer = is_grad_enabled() and any(t.requires_grad for t in _leaves((primals, tangents)))
    prim = [_map(_stand_in, p) for p in primals]
    with enable_grad():
        out = func(*prim)
    aux = None
    if has_aux:
        if not (isinstance(out, tuple) and len(out) == 2):
            raise ValueError("jvp(has_aux=True): the function must return (output, aux)")
        out, aux = out
    outs = _leaves(out)
    tans = _tangent_of(outs, [t for p in prim for t in _leaves(p)], lt, outer)
    tans = [t if t is not None else o.detach() * 0 for t, o in zip(tans, outs)]
    it = iter(tans)
    tangent_out = _map(lambda _t: next(it), out)
    shown = out if outer else _map(lambda t: t.detach(), out)
    if has_aux:
        return shown, tangent_out, (aux if outer else _map(lambda t: t.detach(), aux))
    return shown, tangent_out


def linearize(func, *primals):
    """torch's ``func.linearize``: ``(func(*primals), jvp_fn)`` with ``jvp_fn(*tangents)``
    the Jacobian-vector product at the primals (here each call re-runs ``func``)."""
    out, _ = jvp(func, primals, tuple(_map(lambda t: t.detach() * 0, p) for p in primals))

    def jvp_fn(*tangents):
        return jvp(func, primals, tangents)[1]
    return out, jvp_fn


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """torch's ``func.jacfwd``: the Jacobian shaped ``output.shape + input.shape`` (the same
    matrix as ``jacrev``'s, which builds it here)."""
    del randomness
    return jacrev(func, argnums, has_aux)


# ---- autograd.forward_ad ------------------------------------------------------------------

UnpackedDualTensor = namedtuple("UnpackedDualTensor", ["primal", "tangent"])
_levels: list[dict] = []


def enter_dual_level():
    """Opens a forward-AD level (torch allows one at a time); returns its index."""
    if _levels:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    _levels.append({"duals": [], "grad": False})
    return len(_levels) - 1


def exit_dual_level(*, level=None):
    """Closes the open level; its dual tensors become plain tensors."""
    if not _levels:
        raise RuntimeError("exit_dual_level: no forward-AD level is open")
    _levels.pop()


@contextlib.contextmanager
def dual_level():
    """torch's ``with forward_ad.dual_level():``."""
    level = enter_dual_level()
    try:
        yield level
    finally:
        exit_dual_level(level=level)


def make_dual(tensor, tangent, *, level=None):
    """A tensor equal to ``tensor`` whose tangent is ``tangent`` in the open level."""
    if not _levels:
        raise RuntimeError("make_dual: To create a dual Tensor, you must enter a dual level "
                           "first (with torch.autograd.forward_ad.dual_level(): ...)")
    if tuple(tensor.shape) != tuple(tangent.shape):
        raise RuntimeError(f"make_dual: the tangent's shape {tuple(tangent.shape)} is not the "
                           f"primal's {tuple(tensor.shape)}")
    lv = _levels[-1]
    if tensor.requires_grad and is_grad_enabled():
        lv["grad"] = True
        dual = tensor.reshape(tuple(tensor.shape))
    else:
        dual = tensor.detach().requires_grad_(True)
    lv["grad"] = lv["grad"] or tangent.requires_grad
    lv["duals"].append((dual, tangent))
    return dual


def unpack_dual(tensor, *, level=None):
    """``(primal, tangent)`` of ``tensor`` in the open level; ``tangent`` is ``None`` when it
    depends on no dual tensor (or no level is open)."""
    if not _levels:
        return UnpackedDualTensor(tensor, None)
    lv = _levels[-1]
    for d, t in lv["duals"]:
        if d is tensor:
            return UnpackedDualTensor(d if lv["grad"] else d.detach(), t)
    duals = [d for d, _ in lv["duals"]]
    (tan,) = _tangent_of([tensor], duals, [t for _, t in lv["duals"]], lv["grad"])
    return UnpackedDualTensor(tensor if lv["grad"] else tensor.detach(), tan)


