"""``LBFGS``: limited-memory BFGS with torch.optim.LBFGS's interface and iterates.

A quasi-Newton method: the step direction is the inverse-Hessian estimate built from the last
``history_size`` pairs (s = step taken, y = change of gradient) applied to the gradient by the
two-loop recursion (Nocedal & Wright, Numerical Optimization, algorithm 7.4), scaled by
``gamma = s'y / y'y`` (their eq. 7.20). The step length is ``lr`` (the first iteration's is
``min(1, 1/|g|_1) * lr``), or with ``line_search_fn="strong_wolfe"`` the line search of their
algorithms 3.5/3.6 (bracketing, then zoom by cubic interpolation, eq. 3.59; c1 = 1e-4,
c2 = 0.9, at most 25 evaluations). The stopping tests, the ``max_eval`` default and which
numbers survive between ``step`` calls follow torch's, so a float64 run agrees with torch's
step for step (tests/kernels/train/core/test_lbfgs.py).

``step(closure)`` needs the closure: it zeroes the gradients, evaluates the loss, calls
``backward`` and returns the loss; LBFGS calls it several times a step. All parameters form one
flat vector (one parameter group). Plain ``xp`` arrays, so the same body runs on numpy and cupy.
"""

from __future__ import annotations

import math

import numpy as np

from skiff.kernels.backend import to_device, to_numpy

from .optim import Optimizer, _check_hyper

__all__ = ["LBFGS"]

_LIST_KEYS = ("old_dirs", "old_stps", "ro", "al")


def _real_view(a):
    """A complex array's float view (torch's ``view_as_real``, made contiguous first); a real
    array as it is."""
    if a.dtype.kind != "c":
        return a
    if not a.flags.c_contiguous:
        a = a.copy()
    return a.view(a.real.dtype)


def cubic_minimum(x1, f1, g1, x2, f2, g2, bounds=None):
    """The minimiser of the cubic through ``(x1, f1)``, ``(x2, f2)`` with slopes ``g1``,
    ``g2`` (Nocedal & Wright eq. 3.59), clipped to ``bounds`` (default: between x1 and x2);
    the middle of the bounds when the cubic has no minimum."""
    lo, hi = bounds if bounds is not None else (min(x1, x2), max(x1, x2))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    disc = d1 * d1 - g1 * g2
    if disc < 0:
        return (lo + hi) / 2.0
    d2 = math.sqrt(disc)
    if x1 <= x2:
        t = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        t = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(t, lo), hi)


def strong_wolfe(evaluate, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9,
                 max_ls=25):
    """A step length ``t`` along ``d`` meeting the strong Wolfe conditions, from loss ``f``,
    flat gradient ``g`` and slope ``gtd = g.d`` at t = 0. ``evaluate(t)`` returns the loss and
    flat gradient at ``x + t d``. Returns ``(f_t, g_t, t, evaluations)``."""
    d_scale = float(abs(d).max())
    f_new, g_new = evaluate(t)
    evals, tries = 1, 0
    gtd_new = float(g_new @ d)
    t_prev, f_prev, g_prev, gtd_prev = 0.0, f, g, gtd
    done = False
    # bracketing (N&W algorithm 3.5): grow the step until an interval holds an acceptable one
    while tries < max_ls:
        if f_new > f + c1 * t * gtd or (tries > 1 and f_new >= f_prev):
            pts, fs, gs, slopes = [t_prev, t], [f_prev, f_new], [g_prev, g_new], [gtd_prev,
                                                                                gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            pts, fs, gs, slopes = [t], [f_new], [g_new], [gtd_new]
            done = True
            break
        if gtd_new >= 0:
            pts, fs, gs, slopes = [t_prev, t], [f_prev, f_new], [g_prev, g_new], [gtd_prev,
                                                                                gtd_new]
            break
        bounds = (t + 0.01 * (t - t_prev), t * 10)
        t_next = cubic_minimum(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, bounds)
        t_prev, f_prev, g_prev, gtd_prev = t, f_new, g_new, gtd_new
        t = t_next
        f_new, g_new = evaluate(t)
        evals += 1
        gtd_new = float(g_new @ d)
        tries += 1
    if tries == max_ls:
        pts, fs, gs, slopes = [0.0, t], [f, f_new], [g, g_new], [gtd, gtd_new]
    # zoom (N&W algorithm 3.6) by safeguarded cubic interpolation
    low, high = (0, 1) if fs[0] <= fs[-1] else (1, 0)
    stalled = False
    while not done and tries < max_ls:
        if abs(pts[1] - pts[0]) * d_scale < tolerance_change:
            break
        t = cubic_minimum(pts[0], fs[0], slopes[0], pts[1], fs[1], slopes[1])
        a, b = min(pts), max(pts)
        margin = 0.1 * (b - a)
        if min(b - t, t - a) < margin:  # too near an end: move inside unless it just did
            if stalled or t >= b or t <= a:
                t = b - margin if abs(t - b) < abs(t - a) else a + margin
                stalled = False
            else:
                stalled = True
        else:
            stalled = False
        f_new, g_new = evaluate(t)
        evals += 1
        gtd_new = float(g_new @ d)
        tries += 1
        if f_new > f + c1 * t * gtd or f_new >= fs[low]:
            pts[high], fs[high], gs[high], slopes[high] = t, f_new, g_new, gtd_new
            low, high = (0, 1) if fs[0] <= fs[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (pts[high] - pts[low]) >= 0:
                pts[high], fs[high], gs[high], slopes[high] = (pts[low], fs[low], gs[low],
                                                               slopes[low])
            pts[low], fs[low], gs[low], slopes[low] = t, f_new, g_new, gtd_new
    return fs[low], gs[low], pts[low], evals


class LBFGS(Optimizer):
    """torch.optim.LBFGS: ``LBFGS(params, lr=1, max_iter=20, max_eval=None,
    tolerance_grad=1e-7, tolerance_change=1e-9, history_size=100, line_search_fn=None)``;
    ``line_search_fn`` is None (fixed step ``lr``) or ``"strong_wolfe"``. ``step(closure)``
    runs up to ``max_iter`` iterations (``max_eval`` closure calls, default
    ``max_iter * 5 // 4``) and returns the closure's first loss."""

    def __init__(self, params, lr=1.0, max_iter=20, max_eval=None, tolerance_grad=1e-7,
                 tolerance_change=1e-9, history_size=100, line_search_fn=None):
        _check_hyper("lr", lr)
        if int(max_iter) < 1:
            raise ValueError(f"max_iter must be a positive integer, got {max_iter!r}")
        if max_eval is None:
            max_eval = int(max_iter) * 5 // 4
        if int(history_size) < 1:
            raise ValueError(f"history_size must be a positive integer, got {history_size!r}")
        if line_search_fn not in (None, "strong_wolfe"):
            raise ValueError(f"line_search_fn must be None or 'strong_wolfe' (the only line "
                             f"search torch's LBFGS has), got {line_search_fn!r}")
        super().__init__(params, lr=lr, max_iter=int(max_iter), max_eval=int(max_eval),
                         tolerance_grad=tolerance_grad, tolerance_change=tolerance_change,
                         history_size=int(history_size), line_search_fn=line_search_fn)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS takes one parameter group (all parameters are one vector); "
                             "pass a plain list of parameters")
        self._plist = self.param_groups[0]["params"]

    def add_param_group(self, param_group: dict) -> None:
        raise ValueError("LBFGS takes one parameter group (all parameters are one vector)")

    # ---- the parameters as one flat vector ----
    def _flat_grad(self):
        """All gradients as one real vector (a complex one as its float view, torch's
        ``view_as_real``: real and imaginary parts interleaved)."""
        ps = self._plist
        xp = ps[0].xp
        parts = [_real_view(p._grad).reshape(-1) if p._grad is not None
                 else xp.zeros(_real_view(p._data).size, dtype=_real_view(p._data).dtype)
                 for p in ps]
        return xp.concatenate(parts) if len(parts) > 1 else parts[0].copy()

    def _move(self, t, d):
        """Parameters += t * d (d flat; a complex parameter moves on its float view)."""
        at = 0
        for p in self._plist:
            n = p._data.size * (2 if p._data.dtype.kind == "c" else 1)
            step = t * d[at:at + n]
            if p._data.dtype.kind == "c":
                step = step.astype(p._data.real.dtype, copy=False).view(p._data.dtype)
            p._data += step.reshape(p._data.shape)
            at += n

    def _evaluate(self, closure):
        return float(self._closure(closure)), self._flat_grad()

    # ---- one call: up to max_iter iterations ----
    def step(self, closure=None):
        if closure is None:
            raise ValueError("LBFGS.step needs a closure: a function that zeroes the "
                             "gradients, computes the loss, calls loss.backward() and returns "
                             "the loss (LBFGS evaluates it several times a step)")
        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tol_grad, tol_change = group["tolerance_grad"], group["tolerance_change"]
        history = group["history_size"]
        st = self.state[self._plist[0]]  # torch keeps LBFGS's state under the first parameter
        st.setdefault("func_evals", 0)
        st.setdefault("n_iter", 0)

        first_loss = self._closure(closure)
        loss = float(first_loss)
        evals = 1
        st["func_evals"] += 1
        g = self._flat_grad()
        if float(abs(g).max()) <= tol_grad:  # already stationary
            return first_loss

        d, t = st.get("d"), st.get("t")
        dirs, stps, ro = st.get("old_dirs"), st.get("old_stps"), st.get("ro")
        h_diag, g_prev, loss_prev = st.get("H_diag"), st.get("prev_flat_grad"), \
            st.get("prev_loss")
        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            st["n_iter"] += 1
            if st["n_iter"] == 1:
                d = -g
                dirs, stps, ro = [], [], []
                h_diag = 1.0
            else:
                y = g - g_prev
                s = d * t
                ys = float(y @ s)
                if ys > 1e-10:  # keep the pair only when the curvature is positive
                    if len(dirs) == history:
                        dirs.pop(0)
                        stps.pop(0)
                        ro.pop(0)
                    dirs.append(y)
                    stps.append(s)
                    ro.append(1.0 / ys)
                    h_diag = ys / float(y @ y)
                d = self._two_loop(g, dirs, stps, ro, h_diag, st)
            g_prev = g.copy()
            loss_prev = loss
            if st["n_iter"] == 1:
                t = min(1.0, 1.0 / float(abs(g).sum())) * lr
            else:
                t = lr
            gtd = float(g @ d)
            if gtd > -tol_change:  # not a descent direction any more
                break

            if group["line_search_fn"] == "strong_wolfe":
                start = [p._data.copy() for p in self._plist]

                def evaluate(step_len, start=start, d=d):
                    self._move(step_len, d)
                    out = self._evaluate(closure)
                    for p, x in zip(self._plist, start):
                        p._data[...] = x
                    return out

                loss, g, t, used = strong_wolfe(evaluate, t, d, loss, g, gtd)
                self._move(t, d)
                stationary = float(abs(g).max()) <= tol_grad
            else:
                self._move(t, d)
                used = 0
                stationary = False
                if n_iter != max_iter:  # the next iteration's loss and gradient
                    loss, g = self._evaluate(closure)
                    stationary = float(abs(g).max()) <= tol_grad
                    used = 1
            evals += used
            st["func_evals"] += used

            if n_iter == max_iter or evals >= max_eval or stationary:
                break
            if float(abs(d).max()) * abs(t) <= tol_change:  # the step no longer moves
                break
            if abs(loss - loss_prev) < tol_change:  # the loss no longer changes
                break

        st.update(d=d, t=t, old_dirs=dirs, old_stps=stps, ro=ro, H_diag=h_diag,
                  prev_flat_grad=g_prev, prev_loss=loss_prev)
        return first_loss

    @staticmethod
    def _two_loop(g, dirs, stps, ro, h_diag, st):
        """The L-BFGS direction ``-H g`` (N&W algorithm 7.4), H the inverse-Hessian estimate
        from the stored pairs and the initial scaling ``h_diag``."""
        q = -g
        al = st["al"] = [None] * len(dirs)
        for i in range(len(dirs) - 1, -1, -1):
            al[i] = float(stps[i] @ q) * ro[i]
            q -= al[i] * dirs[i]
        r = q * h_diag
        for i in range(len(dirs)):
            be = float(dirs[i] @ r) * ro[i]
            r += (al[i] - be) * stps[i]
        return r

    # ---- state: torch's keys; the history lists as lists of host arrays ----
    def state_dict(self) -> dict:
        out = super().state_dict()
        for st in out["state"].values():
            for k in _LIST_KEYS:
                if st.get(k) is not None:
                    st[k] = [np.array(to_numpy(v), copy=True) if hasattr(v, "shape") else v
                             for v in st[k]]
        return out

    def load_state_dict(self, state_dict: dict) -> None:
        super().load_state_dict(state_dict)
        p = self._plist[0]
        fdt = _real_view(p._data).dtype
        for st in self.state.values():
            for k in _LIST_KEYS:
                if st.get(k) is not None:
                    st[k] = [to_device(np.asarray(v), p.device).astype(fdt, copy=True)
                             if hasattr(v, "shape") and np.ndim(v) > 0 else
                             (float(v) if v is not None else None) for v in st[k]]
            for k in ("t", "H_diag", "prev_loss"):
                if k in st and st[k] is not None:
                    st[k] = float(st[k])
