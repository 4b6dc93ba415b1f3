"""``einsum`` as an autograd node (torch's ``torch.einsum``, as ``skiff.einsum``).

The equation is written out first (``...`` as letters of its own, the implicit output of an
equation without ``->`` made explicit); operand i's gradient is then one more einsum, of the
output gradient with the other operands into operand i's letters, broadcast over the letters
that only operand i has (each summed over in the forward). Keeps the operands.

>>> import skiff
>>> a = skiff.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
>>> skiff.einsum("ij,jk->ik", a, a).tolist()
[[7.0, 10.0], [15.0, 22.0]]
"""

from __future__ import annotations

import string
from collections import Counter

from .autograd import Function, xp_of
from .shape_error import check_einsum_dtypes

__all__ = ["einsum", "EinsumFn"]


def _explicit(equation: str, shapes) -> tuple[list[str], str]:
    """Each operand's letters and the output's, ``...`` replaced by unused capitals."""
    eq = equation.replace(" ", "")
    lhs, arrow, out = eq.partition("->")
    ins = lhs.split(",")
    if len(ins) != len(shapes):
        raise ValueError(f"einsum {equation!r} names {len(ins)} operands, got {len(shapes)}")
    spare = [c for c in string.ascii_uppercase if c not in eq]
    ell = max((len(s) - len(t.replace("...", "")) for t, s in zip(ins, shapes) if "..." in t),
              default=0)
    dots = "".join(spare[:ell])
    ins = [t.replace("...", dots[len(dots) - (len(s) - len(t.replace("...", ""))):])
           if "..." in t else t for t, s in zip(ins, shapes)]
    for t, s in zip(ins, shapes):
        if len(t) != len(s):
            raise ValueError(f"einsum {equation!r}: {t!r} does not fit an operand of shape {s}")
    if not arrow:
        counts = Counter("".join(ins))
        out = dots + "".join(sorted(c for c in counts if counts[c] == 1 and c not in dots))
    else:
        out = out.replace("...", dots)
    return ins, out


def _f32(a):
    return a.astype("float32") if a.dtype.name == "bfloat16" else a


class EinsumFn(Function):
    complex_aware = True  # conjugates the other operands itself

    def forward(self, *arrays, ins=None, out=None):
        self.ins, self.out = ins, out
        self.save_for_backward(*arrays)
        low = arrays[0].dtype if arrays[0].dtype.name == "bfloat16" else None
        if low is not None or any(a.dtype.name == "bfloat16" for a in arrays):
            # numpy's einsum has no bfloat16: the rounded values in float32, the result
            # rounded back (torch's bf16 einsum accumulates in float32 too)
            res = xp_of(arrays[0]).einsum(",".join(ins) + "->" + out,
                                          *[_f32(a) for a in arrays])
            return res.astype(low) if low is not None and all(
                a.dtype == low for a in arrays) else res
        return xp_of(arrays[0]).einsum(",".join(ins) + "->" + out, *arrays)

    def backward(self, g):
        arrays = self.saved
        xp = xp_of(g)
        if g.dtype.name == "bfloat16" or any(a.dtype.name == "bfloat16" for a in arrays):
            g, arrays = _f32(g), [_f32(a) for a in arrays]
            want = [a.dtype for a in self.saved]
            grads = self._grads(g, arrays, xp)
            return tuple(None if gi is None else gi.astype(d) for gi, d in zip(grads, want))
        return self._grads(g, arrays, xp)

    def _grads(self, g, arrays, xp):
        grads = []
        for i, (sub, a) in enumerate(zip(self.ins, arrays)):
            if not self.needs_input_grad[i]:
                grads.append(None)
                continue
            others = [(s, b) for j, (s, b) in enumerate(zip(self.ins, arrays)) if j != i]
            seen = set(self.out).union(*(set(s) for s, _ in others))
            uniq = "".join(dict.fromkeys(sub))  # a repeated letter ('ii', 'bii') is a diagonal
            kept = "".join(c for c in uniq if c in seen)
            # complex operands: the gradient takes the others' conjugates (torch's convention)
            gi = xp.einsum(",".join([self.out] + [s for s, _ in others]) + "->" + kept, g,
                           *[b.conj() if b.dtype.kind == "c" else b for _, b in others])
            if gi.dtype.kind == "c" and a.dtype.kind != "c":
                gi = gi.real
            sizes = dict(zip(sub, a.shape))
            spread = tuple(k for k, c in enumerate(kept) if sizes[c] == 1 and gi.shape[k] != 1)
            if spread:  # a length-1 axis broadcast against the others': summed back
                gi = gi.sum(axis=spread, keepdims=True)
            ushape = tuple(sizes[c] for c in uniq)
            got = dict(zip(kept, gi.shape))  # (a letter of length 1 in the others: spread)
            gu = xp.broadcast_to(gi.reshape(tuple(got.get(c, 1) for c in uniq)),
                                 ushape).astype(a.dtype, copy=False)
            if uniq == sub:
                grads.append(gu)
                continue
            grid = sparse_grid(xp, ushape)  # the diagonal's places, zeros elsewhere
            full = xp.zeros(a.shape, dtype=a.dtype)
            full[tuple(grid[uniq.index(c)] for c in sub)] = gu
            grads.append(full)
        return tuple(grads)


def sparse_grid(xp, shape) -> list:
    """``np.indices(shape, sparse=True)``: axis ``j``'s positions shaped to broadcast along
    the other axes (cupy's ``indices`` has no ``sparse=``)."""
    nd = len(shape)
    return [xp.arange(n).reshape((1,) * j + (n,) + (1,) * (nd - j - 1))
            for j, n in enumerate(shape)]


def _sublist_equation(args) -> tuple[str, tuple]:
    """torch's (and numpy's) sublist form ``einsum(a, [0, 1], b, [1, 2], [0, 2])``: the
    equation with letters for the ints (``...`` for ``Ellipsis``) and the operands."""
    letters = string.ascii_letters

    def sub(ids) -> str:
        out = []
        for i in ids:
            if i is Ellipsis:
                out.append("...")
                continue
            if not 0 <= int(i) < len(letters):
                raise ValueError(f"einsum(): subscript in subscript list is not within the "
                                 f"valid range [0, 52), got {i}")
            out.append(letters[int(i)])
        return "".join(out)

    pairs = len(args) // 2  # operand, sublist, ...; an odd count ends with the output's
    ops = tuple(args[0:2 * pairs:2])
    eq = ",".join(sub(ids) for ids in args[1:2 * pairs:2])
    if len(args) % 2:
        eq += "->" + sub(args[-1])
    return eq, ops


def einsum(equation: str, *operands):
    """torch's ``einsum(equation, *tensors)`` (operands also as one list, or torch's sublist
    form ``einsum(a, [0, 1], b, [1, 2], [0, 2])``), differentiable."""
    if not isinstance(equation, str):
        equation, operands = _sublist_equation((equation, *operands))
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    ins, out = _explicit(equation, [tuple(t.shape) for t in operands])
    from . import autocast_ops as _ac
    if _ac.LOW is not None:  # autocast("cpu"): torch's lower-precision op
        operands = _ac.low(*operands)
    check_einsum_dtypes(operands)
    return EinsumFn.apply(*operands, ins=ins, out=out)
