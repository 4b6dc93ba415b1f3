"""One LSTM (or GRU) layer's recurrence as one graph node (round 31): ``LSTMSeqFn``,
``GRUSeqFn``.

``nn.LSTM`` ran each time step as a dozen recorded ops (a linear, four gate slices, three
sigmoids, two tanhs, products and sums), each a node with its own small arrays: for 32 steps
of 64x256 that was ~500 nodes per layer and the bookkeeping cost as much as the arithmetic
(skiff 2.3x torch's time, forward + backward). Here the input projection stays an ordinary
``linear`` over every step at once; the recurrence runs as plain array code, keeping each
step's gate activations, and its backward walks the steps back once and makes the
recurrent weight's gradient one matrix product over all steps.

Outputs ``(hs, cs)``: every step's hidden and cell state, (T, N, H) each (the layer's output
and, from the last processed step, its final ``(h, c)``). Packed sequences (round 33) pass
``mask`` (T, N, 1) booleans: past a sequence's end its state is carried unchanged (so the last
step holds each sequence's final state) and the gradient passes the carried steps straight
back; the caller zeroes the outputs there (torch's padding). Before, a packed batch ran the
per-step ops (1.7x torch's time on a seq2seq encoder). Gradients of gradients
(``create_graph``, ``jvp``/``jacfwd``/``hessian`` through an LSTM): ``backward_t`` runs the
recurrence again as recorded ops (:func:`cell_loop`) and differentiates that.
"""

from __future__ import annotations

from ..autograd import Function, xp_of

__all__ = ["LSTMSeqFn", "cell_loop", "GRUSeqFn", "gru_cell_loop"]


def _gate_consts(xp, hsz, dtype):
    """Per gate column: the scale and shift of ``sigmoid(x) = 0.5 tanh(0.5 x) + 0.5`` (the
    g gate's tanh: 1 and 0), so one ``tanh`` pass over all four gates gives them all (numpy's
    tanh is vectorised; its exp-based sigmoid takes ~20 passes)."""
    scale = xp.full(4 * hsz, 0.5, dtype=dtype)
    scale[2 * hsz:3 * hsz] = 1
    shift = xp.full(4 * hsz, 0.5, dtype=dtype)
    shift[2 * hsz:3 * hsz] = 0
    return scale, shift


class LSTMSeqFn(Function):
    """``(hs, cs) = LSTMSeqFn.apply(proj, h0, c0, w_hh, b_hh, reverse=False)``; ``proj`` is
    (T, N, 4H) (the input's projection with its bias), ``h0``/``c0`` (N, H) or None for
    zeros, ``b_hh`` (4H,) or None."""

    def forward(self, proj, h0, c0, w_hh, b_hh, reverse=False, mask=None):
        xp = xp_of(proj)
        steps, n, h4 = proj.shape
        hsz = h4 // 4
        dt = proj.dtype
        h = xp.zeros((n, hsz), dtype=dt) if h0 is None else h0
        c = xp.zeros((n, hsz), dtype=dt) if c0 is None else c0
        acts = xp.empty((steps, n, h4), dtype=dt)
        hs = xp.empty((steps, n, hsz), dtype=dt)
        cs = xp.empty((steps, n, hsz), dtype=dt)
        tcs = xp.empty((steps, n, hsz), dtype=dt)
        pb = proj if b_hh is None else proj + b_hh
        w_t = xp.ascontiguousarray(w_hh.T)
        scale, shift = _gate_consts(xp, hsz, dt)
        buf = xp.empty((n, h4), dtype=dt)
        tmp = xp.empty((n, hsz), dtype=dt)
        for t in (range(steps - 1, -1, -1) if reverse else range(steps)):
            xp.matmul(h, w_t, out=buf)
            buf += pb[t]
            a = acts[t]
            xp.multiply(buf, scale, out=a)
            xp.tanh(a, out=a)
            a *= scale
            a += shift
            i, f, g, o = a[:, :hsz], a[:, hsz:2 * hsz], a[:, 2 * hsz:3 * hsz], a[:, 3 * hsz:]
            xp.multiply(f, c, out=cs[t])
            xp.multiply(i, g, out=tmp)
            cs[t] += tmp
            xp.tanh(cs[t], out=tcs[t])
            xp.multiply(o, tcs[t], out=hs[t])
            if mask is not None:  # past a packed sequence's end: the state is carried
                keep = ~mask[t]
                xp.copyto(cs[t], c, where=keep)
                xp.copyto(hs[t], h, where=keep)
            h, c = hs[t], cs[t]
        self.reverse, self.mask = reverse, mask
        self.hsz = hsz
        self.save_for_backward(proj, h0, c0, w_hh, b_hh, acts, hs, cs, tcs)
        return hs, cs

    def backward(self, g_hs, g_cs):
        proj, h0, c0, w_hh, b_hh, acts, hs, cs, tcs = self.saved
        xp = xp_of(acts)
        steps, n, h4 = acts.shape
        hsz = self.hsz
        dt = acts.dtype
        zeros = xp.zeros((n, hsz), dtype=dt)
        h_init = zeros if h0 is None else h0
        c_init = zeros if c0 is None else c0
        order = range(steps) if self.reverse else range(steps - 1, -1, -1)
        step = 1 if self.reverse else -1
        w = xp.ascontiguousarray(w_hh)
        dgates = xp.empty_like(acts)
        deriv = xp.empty((n, h4), dtype=dt)
        dh, dc = xp.empty((n, hsz), dtype=dt), xp.empty((n, hsz), dtype=dt)
        dh_next, dc_next = zeros, zeros
        for t in order:
            p = t + step
            c_prev = c_init if p < 0 or p >= steps else cs[p]
            a = acts[t]
            i, f, g, o = a[:, :hsz], a[:, hsz:2 * hsz], a[:, 2 * hsz:3 * hsz], a[:, 3 * hsz:]
            tc = tcs[t]
            xp.add(g_hs[t], dh_next, out=dh)
            dc_in = g_cs[t] + dc_next
            if self.mask is not None:  # a carried step passes its gradient straight back
                m = self.mask[t]
                carry_h, carry_c = dh * ~m, dc_in * ~m
                dh *= m
                dc_in *= m
            xp.multiply(tc, tc, out=dc)  # dc = dh o (1 - tanh(c)^2) + g_c + dc_next
            xp.subtract(1, dc, out=dc)
            dc *= o
            dc *= dh
            dc += dc_in
            d = dgates[t]
            xp.multiply(dc, g, out=d[:, :hsz])
            xp.multiply(dc, c_prev, out=d[:, hsz:2 * hsz])
            xp.multiply(dc, i, out=d[:, 2 * hsz:3 * hsz])
            xp.multiply(dh, tc, out=d[:, 3 * hsz:])
            xp.subtract(1, a, out=deriv)  # s (1 - s) for the sigmoids, 1 - g^2 for g
            deriv *= a
            dg = deriv[:, 2 * hsz:3 * hsz]
            xp.multiply(g, g, out=dg)
            xp.subtract(1, dg, out=dg)
            d *= deriv
            dc_next = dc * f
            dh_next = xp.matmul(d, w)
            if self.mask is not None:
                dc_next += carry_c
                dh_next += carry_h
        want = self.needs_input_grad
        gw = gb = None
        if want[3]:
            if self.reverse:
                h_prev = xp.concatenate([hs[1:], h_init[None]], axis=0)
            else:
                h_prev = xp.concatenate([h_init[None], hs[:-1]], axis=0)
            gw = dgates.reshape(steps * n, h4).T @ h_prev.reshape(steps * n, hsz)
        if want[4]:
            gb = dgates.sum(axis=(0, 1))
        return (dgates if want[0] else None, dh_next if want[1] else None,
                dc_next if want[2] else None, gw, gb)

    def backward_t(self, want, g_hs, g_cs):
        from ..autograd import enable_grad
        from ..double_backward import grad_graph
        from ..double_helpers import input_t
        from ..tensor import Tensor

        proj, h0, c0, w_hh, b_hh = self.saved[:5]
        ins = [None if a is None else input_t(self, k, a)
               for k, a in enumerate((proj, h0, c0, w_hh, b_hh))]
        ins = [Tensor._make(a, False, None, 0) if a is not None and not isinstance(a, Tensor)
               else a for a in ins]
        with enable_grad():
            hs, cs = cell_loop(*ins, reverse=self.reverse, mask=self.mask)
        asked = [k for k in range(5) if want[k] and ins[k] is not None]
        got = grad_graph([hs, cs], [g_hs, g_cs], [ins[k] for k in asked])
        out = [None] * 5
        for k, gk in zip(asked, got):
            out[k] = gk
        return tuple(out)


def cell_loop(proj, h, c, w_hh, b_hh, reverse=False, mask=None):
    """The recurrence of :class:`LSTMSeqFn` as recorded tensor ops: ``(hs, cs)``."""
    from .. import tensor as T
    from .functional import linear

    steps, n = proj.shape[0], proj.shape[1]
    hsz = proj.shape[2] // 4
    if h is None:
        h = T.zeros((n, hsz), dtype=proj.dtype)
    if c is None:
        c = T.zeros((n, hsz), dtype=proj.dtype)
    hs, cs = [None] * steps, [None] * steps
    for t in (range(steps - 1, -1, -1) if reverse else range(steps)):
        gates = proj[t] + linear(h, w_hh, b_hh)
        i, f, g, o = gates.split(hsz, axis=-1)
        c_new = f.sigmoid() * c + i.sigmoid() * g.tanh()
        h_new = o.sigmoid() * c_new.tanh()
        if mask is not None:
            c_new, h_new = T.where(mask[t], c_new, c), T.where(mask[t], h_new, h)
        h, c = h_new, c_new
        hs[t], cs[t] = h, c
    return T.stack(hs, axis=0), T.stack(cs, axis=0)


class GRUSeqFn(Function):
    """``hs = GRUSeqFn.apply(proj, h0, w_hh, b_hh, reverse=False)``: torch's GRU recurrence
    (``r, z = sigmoid(.)``, ``n = tanh(x_n + r (W_hn h + b_hn))``, ``h' = (1 - z) n + z h``)
    over ``proj`` (T, N, 3H) as one node, like :class:`LSTMSeqFn`; ``hs`` (T, N, H)."""

    def forward(self, proj, h0, w_hh, b_hh, reverse=False, mask=None):
        xp = xp_of(proj)
        steps, n, h3 = proj.shape
        hsz = h3 // 3
        dt = proj.dtype
        h = xp.zeros((n, hsz), dtype=dt) if h0 is None else h0
        acts = xp.empty((steps, n, h3), dtype=dt)  # r, z, n
        hns = xp.empty((steps, n, hsz), dtype=dt)  # W_hn h + b_hn
        hs = xp.empty((steps, n, hsz), dtype=dt)
        w_t = xp.ascontiguousarray(w_hh.T)
        buf = xp.empty((n, h3), dtype=dt)
        for t in (range(steps - 1, -1, -1) if reverse else range(steps)):
            xp.matmul(h, w_t, out=buf)
            if b_hh is not None:
                buf += b_hh
            a = acts[t]
            rz = a[:, :2 * hsz]
            xp.add(proj[t, :, :2 * hsz], buf[:, :2 * hsz], out=rz)
            rz *= 0.5  # sigmoid(x) = 0.5 tanh(0.5 x) + 0.5
            xp.tanh(rz, out=rz)
            rz *= 0.5
            rz += 0.5
            r, z, nn_ = a[:, :hsz], a[:, hsz:2 * hsz], a[:, 2 * hsz:]
            hns[t] = buf[:, 2 * hsz:]
            xp.multiply(r, hns[t], out=nn_)
            nn_ += proj[t, :, 2 * hsz:]
            xp.tanh(nn_, out=nn_)
            xp.subtract(h, nn_, out=hs[t])  # n + z (h - n)
            hs[t] *= z
            hs[t] += nn_
            if mask is not None:  # past a packed sequence's end: the state is carried
                xp.copyto(hs[t], h, where=~mask[t])
            h = hs[t]
        self.reverse, self.hsz, self.mask = reverse, hsz, mask
        self.save_for_backward(proj, h0, w_hh, b_hh, acts, hns, hs)
        return hs

    def backward(self, g_hs):
        proj, h0, w_hh, b_hh, acts, hns, hs = self.saved
        xp = xp_of(acts)
        steps, n, h3 = acts.shape
        hsz = self.hsz
        dt = acts.dtype
        h_init = xp.zeros((n, hsz), dtype=dt) if h0 is None else h0
        order = range(steps) if self.reverse else range(steps - 1, -1, -1)
        step = 1 if self.reverse else -1
        w = xp.ascontiguousarray(w_hh)
        dhh = xp.empty_like(acts)  # the gradient of W_hh h + b_hh
        dnp = xp.empty((steps, n, hsz), dtype=dt)  # of the n gate's input
        dh = xp.empty((n, hsz), dtype=dt)
        tmp = xp.empty((n, hsz), dtype=dt)
        dh_next = xp.zeros((n, hsz), dtype=dt)
        for t in order:
            p = t + step
            h_prev = h_init if p < 0 or p >= steps else hs[p]
            a = acts[t]
            r, z, nn_ = a[:, :hsz], a[:, hsz:2 * hsz], a[:, 2 * hsz:]
            xp.add(g_hs[t], dh_next, out=dh)
            if self.mask is not None:  # a carried step passes its gradient straight back
                carry = dh * ~self.mask[t]
                dh *= self.mask[t]
            d = dhh[t]
            dn = dnp[t]
            xp.subtract(1, z, out=dn)  # dn_pre = dh (1 - z) (1 - n^2)
            dn *= dh
            xp.multiply(nn_, nn_, out=tmp)
            xp.subtract(1, tmp, out=tmp)
            dn *= tmp
            dr = d[:, :hsz]  # dr_pre = dn_pre hn r (1 - r)
            xp.multiply(dn, hns[t], out=dr)
            xp.subtract(1, r, out=tmp)
            tmp *= r
            dr *= tmp
            dz = d[:, hsz:2 * hsz]  # dz_pre = dh (h - n) z (1 - z)
            xp.subtract(h_prev, nn_, out=dz)
            dz *= dh
            xp.subtract(1, z, out=tmp)
            tmp *= z
            dz *= tmp
            xp.multiply(dn, r, out=d[:, 2 * hsz:])  # d(W_hn h + b_hn) = dn_pre r
            dh_next = dh * z + d @ w
            if self.mask is not None:
                dh_next += carry
        want = self.needs_input_grad
        gproj = gw = gb = None
        if want[0]:
            gproj = dhh.copy()
            gproj[:, :, 2 * hsz:] = dnp
        if want[2]:
            if self.reverse:
                h_prev = xp.concatenate([hs[1:], h_init[None]], axis=0)
            else:
                h_prev = xp.concatenate([h_init[None], hs[:-1]], axis=0)
            gw = dhh.reshape(steps * n, h3).T @ h_prev.reshape(steps * n, hsz)
        if want[3]:
            gb = dhh.sum(axis=(0, 1))
        return gproj, (dh_next if want[1] else None), gw, gb

    def backward_t(self, want, g_hs):
        from ..autograd import enable_grad
        from ..double_backward import grad_graph
        from ..double_helpers import input_t
        from ..tensor import Tensor

        proj, h0, w_hh, b_hh = self.saved[:4]
        ins = [None if a is None else input_t(self, k, a)
               for k, a in enumerate((proj, h0, w_hh, b_hh))]
        ins = [Tensor._make(a, False, None, 0) if a is not None and not isinstance(a, Tensor)
               else a for a in ins]
        with enable_grad():
            hs = gru_cell_loop(*ins, reverse=self.reverse, mask=self.mask)
        asked = [k for k in range(4) if want[k] and ins[k] is not None]
        got = grad_graph([hs], [g_hs], [ins[k] for k in asked])
        out = [None] * 4
        for k, gk in zip(asked, got):
            out[k] = gk
        return tuple(out)


def gru_cell_loop(proj, h, w_hh, b_hh, reverse=False, mask=None):
    """The recurrence of :class:`GRUSeqFn` as recorded tensor ops: ``hs``."""
    from .. import tensor as T
    from .functional import linear

    steps, n = proj.shape[0], proj.shape[1]
    hsz = proj.shape[2] // 3
    if h is None:
        h = T.zeros((n, hsz), dtype=proj.dtype)
    hs = [None] * steps
    for t in (range(steps - 1, -1, -1) if reverse else range(steps)):
        xr, xz, xn = proj[t].split(hsz, axis=-1)
        hr, hz, hn = linear(h, w_hh, b_hh).split(hsz, axis=-1)
        r = (xr + hr).sigmoid()
        z = (xz + hz).sigmoid()
        cand = (xn + r * hn).tanh()
        h_new = cand + z * (h - cand)
        h = h_new if mask is None else T.where(mask[t], h_new, h)
        hs[t] = h
    return T.stack(hs, axis=0)
