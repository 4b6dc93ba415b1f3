"""torch's ``autograd.gradcheck`` and ``gradgradcheck`` for ported tests: the full Jacobian of
every (floating) output with respect to every input that requires grad, by central differences
and by backward passes, compared with ``|analytic - numeric| <= atol + rtol * |numeric|``.

Same arguments and defaults as torch (``eps=1e-6, atol=1e-5, rtol=1e-3,
raise_exception=True``); a mismatch raises :class:`GradcheckError` (a ``RuntimeError``, as
torch's) naming the output, the input and both Jacobians, or returns False with
``raise_exception=False``. Inputs that are not float64 are checked with a warning, as torch's.
The projected check skiff's own op tests use is :mod:`.gradcheck`.
"""

from __future__ import annotations

import warnings

import numpy as np

from skiff.kernels.backend import to_numpy

from .tensor import Tensor
from .torch_autograd import grad as _grad

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    """A Jacobian from backward differs from the finite-difference one."""


def _as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _outputs(func, inputs):
    return [o for o in _as_tuple(func(*inputs)) if isinstance(o, Tensor) and o.dtype.kind == "f"]


def _numerical(func, inputs, k, eps, n_out):
    """d(outputs)/d(inputs[k]) by central differences: one (out.size, in.size) per output."""
    x = inputs[k]
    flat = x._data.reshape(-1)  # a view: perturbed in place, restored after
    cols = [[] for _ in range(n_out)]
    for i in range(flat.size):  # with grad mode as it is: gradgradcheck's func needs it
        orig = flat[i].item()
        flat[i] = orig + eps
        plus = [to_numpy(o._data).astype(np.float64).ravel() for o in _outputs(func, inputs)]
        flat[i] = orig - eps
        minus = [to_numpy(o._data).astype(np.float64).ravel() for o in _outputs(func, inputs)]
        flat[i] = orig
        for j in range(n_out):
            cols[j].append((plus[j] - minus[j]) / (2 * eps))
    return [np.stack(c, axis=1) if c else np.zeros((0, 0)) for c in cols]


def _analytical(outs, diff, k):
    """d(outs[j])/d(diff[k]) by one backward pass per output element."""
    jac = []
    for o in outs:
        rows = np.zeros((o.size, diff[k].size))
        if o.requires_grad:
            for r in range(o.size):
                seed = np.zeros(o.size, dtype=o.dtype)
                seed[r] = 1
                g = _grad([o], [diff[k]], [Tensor(seed.reshape(o.shape), dtype=o.dtype)],
                          retain_graph=True, allow_unused=True)[0]
                if g is not None:
                    rows[r] = to_numpy(g._data).astype(np.float64).ravel()
        jac.append(rows)
    return jac


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              **_torch_options):
    """torch's ``gradcheck``: True when backward's Jacobians match finite differences.

    ``inputs`` is a tensor or a tuple of them (other values pass through to ``func``); torch's
    other options (``nondet_tol``, ``check_undefined_grad``, ``fast_mode``, ...) are accepted
    and change nothing here."""
    inputs = _as_tuple(inputs)
    diff = [t for t in inputs if isinstance(t, Tensor) and t.requires_grad]
    if not diff:
        raise ValueError("gradcheck expects at least one input tensor to require gradient "
                         "(requires_grad=True)")
    for k, t in enumerate(diff):
        if t.dtype != np.float64:
            warnings.warn(f"Input #{k} requires gradient and is not a double precision floating "
                          f"point (dtype {t.dtype}): gradcheck is likely to fail",
                          stacklevel=2)
    outs = _outputs(func, inputs)
    for k, x in enumerate(diff):
        pos = next(i for i, t in enumerate(inputs) if t is x)
        numeric = _numerical(func, inputs, pos, eps, len(outs))
        analytic = _analytical(outs, diff, k)
        for j, (a, n) in enumerate(zip(analytic, numeric)):
            if a.shape == n.shape and np.all(np.abs(a - n) <= atol + rtol * np.abs(n)):
                continue
            if not raise_exception:
                return False
            raise GradcheckError(
                f"Jacobian mismatch for output {j} with respect to input {pos},\n"
                f"numerical:{n}\nanalytical:{a}\n")
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, **_torch_options):
    """torch's ``gradgradcheck``: gradcheck of the gradient itself (backward with
    ``create_graph=True``), with respect to the inputs and to ``grad_outputs`` (random ones of
    the outputs' shapes when not given)."""
    inputs = _as_tuple(inputs)
    diff = [t for t in inputs if isinstance(t, Tensor) and t.requires_grad]
    outs = _outputs(func, inputs)
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        grad_outputs = tuple(Tensor(rng.standard_normal(o.shape), dtype=o.dtype,
                                    requires_grad=True) for o in outs)
    grad_outputs = _as_tuple(grad_outputs)
    n_in = len(inputs)

    def first_order(*args):
        xs, gs = args[:n_in], args[n_in:]
        ys = _outputs(func, xs)
        wanted = [t for t in xs if isinstance(t, Tensor) and t.requires_grad]
        got = _grad(ys, wanted, list(gs), create_graph=True, allow_unused=True)
        return tuple(g for g in got if g is not None)

    return gradcheck(first_order, (*inputs, *grad_outputs), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception) if diff else True
