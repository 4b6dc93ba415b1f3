"""torch's ``nn.AdaptiveLogSoftmaxWithLoss`` (Grave et al., "Efficient softmax approximation
for GPUs"): a head over the ``cutoffs[0]`` frequent classes plus one logit per tail cluster,
each cluster a two-layer projection (``in_features // div_value**(i+1)`` wide) to its classes.
``forward(input, target)`` gives ``(output, loss)`` (each row's target log-probability, their
negated mean), ``log_prob(input)`` every class's, ``predict(input)`` the most likely class;
torch's parameter names (``head.weight``, ``tail.0.0.weight``, ...) and checks.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from . import functional as F
from .layers import Linear
from .module import Module, ModuleList, Sequential

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


def _T():
    from ..tensor import Tensor, cat, tensor
    return Tensor, cat, tensor


class AdaptiveLogSoftmaxWithLoss(Module):
    def __init__(self, in_features, n_classes, cutoffs, div_value=4.0, head_bias=False,
                 device=None, dtype=None):
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
            raise ValueError("cutoffs should be a sequence of unique, positive integers sorted "
                             "in an increasing order, where each value is between 1 and "
                             "n_classes-1")
        self.in_features, self.n_classes = int(in_features), int(n_classes)
        self.cutoffs = [int(c) for c in cutoffs] + [self.n_classes]
        self.div_value = float(div_value)
        self.head_bias = bool(head_bias)
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        kw = {k: v for k, v in (("device", device), ("dtype", dtype)) if v is not None}
        self.head = Linear(self.in_features, self.head_size, bias=self.head_bias, **kw)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hsz = int(self.in_features // (self.div_value ** (i + 1)))
            osz = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(Linear(self.in_features, hsz, bias=False, **kw),
                                        Linear(hsz, osz, bias=False, **kw)))

    def reset_parameters(self) -> None:
        self.head.reset_parameters()
        for seq in self.tail:
            for lin in seq:
                lin.reset_parameters()

    def forward(self, input, target):  # noqa: A002 - torch's name
        Tensor, cat, tensor = _T()
        tgt = target if isinstance(target, Tensor) else tensor(np.asarray(target))
        batched = input.ndim == 2
        if tgt.ndim == 1:
            if input.ndim != 2:
                raise RuntimeError("1D target tensor expects 2D input tensors, but found "
                                   f"inputs with size {tuple(input.shape)}")
            if input.shape[0] != tgt.shape[0]:
                raise RuntimeError("Input and target should have the same size in the batch "
                                   "dimension.")
        elif tgt.ndim == 0:
            if input.ndim != 1:
                raise RuntimeError("0D target tensor expects 1D input tensors, but found "
                                   f"inputs with size {tuple(input.shape)}")
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        if not batched:
            input = input.unsqueeze(0)  # noqa: A001
            tgt = tgt.unsqueeze(0)
        t = np.asarray(tgt.detach()._data if hasattr(tgt, "_data") else tgt).astype(np.int64)
        if t.size and (t.min() < 0 or t.max() > self.n_classes - 1):
            raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but "
                               f"values in range [{t.min()}, {t.max()}] were found. ")
        xp_int = tensor  # index tensors
        n = t.shape[0]
        gather = np.where(t < self.shortlist_size, t, 0)
        output = None
        for i in range(1, self.n_clusters + 1):
            lo, hi = self.cutoffs[i - 1], self.cutoffs[i]
            rows = np.flatnonzero((t >= lo) & (t < hi))
            if rows.size == 0:
                continue
            gather[rows] = self.shortlist_size + i - 1
            rows_t = xp_int(rows)
            sub = input.index_select(0, rows_t)
            lp = F.log_softmax(self.tail[i - 1](sub), dim=1)
            local = lp.gather(1, xp_int((t[rows] - lo)[:, None])).squeeze(1)
            part = input.new_zeros((n,)).index_add(0, rows_t, local)
            output = part if output is None else output + part
        head_lp = F.log_softmax(self.head(input), dim=1)
        out = head_lp.gather(1, xp_int(gather[:, None])).squeeze(1)
        if output is not None:
            out = out + output
        loss = (-out).mean()
        if not batched:
            out = out.squeeze(0)
        return _ASMoutput(out, loss)

    def _full_log_prob(self, input, head_output):  # noqa: A002
        _, cat, _ = _T()
        head_lp = F.log_softmax(head_output, dim=1)
        parts = [head_lp[:, :self.shortlist_size]]
        for i in range(self.n_clusters):
            lp = F.log_softmax(self.tail[i](input), dim=1)
            parts.append(lp + head_lp[:, self.shortlist_size + i].unsqueeze(1))
        return cat(parts, 1)

    def log_prob(self, input):  # noqa: A002
        """Every class's log-probability, ``(N, n_classes)`` (or ``(n_classes,)``)."""
        batched = input.ndim == 2
        x = input if batched else input.unsqueeze(0)
        out = self._full_log_prob(x, self.head(x))
        return out if batched else out.squeeze(0)

    def predict(self, input):  # noqa: A002
        """The most likely class of each row (torch's: the head's argmax where it is in the
        shortlist, else the argmax of the full log-probabilities)."""
        _, _, tensor = _T()
        batched = input.ndim == 2
        x = input if batched else input.unsqueeze(0)
        head = self.head(x)
        out = np.asarray(head.detach().argmax(1)._data).astype(np.int64)
        tail = out >= self.shortlist_size
        if tail.any():
            rows = np.flatnonzero(tail)
            idx = tensor(rows)
            lp = self._full_log_prob(x.index_select(0, idx), head.index_select(0, idx))
            out[rows] = np.asarray(lp.detach().argmax(1)._data)
        res = tensor(out)
        return res if batched else res.squeeze(0)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, n_classes={self.n_classes}, "
                f"cutoffs={self.cutoffs[:-1]}, div_value={self.div_value}")
