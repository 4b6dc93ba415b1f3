"""Taylor-Hood P2/P1 on a triangle mesh: the matrices of incompressible flow.

scikit-fem gives the bases (quadratic velocity per component, linear pressure), the reference
data at the quadrature points and the fixed matrices (stiffness, mass, divergence). The
convection matrices change every Newton step or time step, so they are assembled here from
that data with one ``einsum`` and one scatter into a sparsity pattern fixed at setup (about
ten times faster than a general assembler, and the cost of a time step depends on it).

Velocity is stored per component (``ux``, ``uy``: coefficients of the scalar P2 basis), so the
Laplacian and the convection ``(w . grad) u`` are one scalar matrix applied to each component.

Shapes: ``E`` elements, ``Q`` quadrature points per element, ``L = 6`` local P2 functions.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["TaylorHood"]


class TaylorHood:
    """P2 velocity / P1 pressure on ``mesh`` (a scikit-fem ``MeshTri`` with named boundaries).

    Attributes
    ----------
    V, Q : scikit-fem bases (scalar P2, P1)
    K, M : P2 stiffness and mass, ``(nv, nv)``
    Bx, By : ``(np, nv)``, ``B_c[i, j] = int q_i d_c v_j`` (the discrete divergence per component)
    Kp : P1 stiffness ``(np, np)`` (the pressure-correction Laplacian)
    """

    def __init__(self, mesh, intorder: int = 4):
        from skfem import Basis, BilinearForm, ElementTriP1, ElementTriP2, asm

        self.mesh = mesh
        self.V = Basis(mesh, ElementTriP2(), intorder=intorder)
        self.Q = Basis(mesh, ElementTriP1(), intorder=intorder)
        self.nv, self.np = self.V.N, self.Q.N

        @BilinearForm
        def stiffness(u, v, w):
            return u.grad[0] * v.grad[0] + u.grad[1] * v.grad[1]

        @BilinearForm
        def mass(u, v, w):
            return u * v

        @BilinearForm
        def ddx(u, q, w):
            return u.grad[0] * q

        @BilinearForm
        def ddy(u, q, w):
            return u.grad[1] * q

        self.K = asm(stiffness, self.V).tocsr()
        self.M = asm(mass, self.V).tocsr()
        self.Kp = asm(stiffness, self.Q).tocsr()
        self.Mp_lumped = np.asarray(asm(mass, self.Q).sum(axis=1)).ravel()
        self.Bx = asm(ddx, self.V, self.Q).tocsr()          # (np, nv)
        self.By = asm(ddy, self.V, self.Q).tocsr()
        self._quadrature_data()

    # ------------------------------------------------------------------ quadrature data
    def _quadrature_data(self):
        V = self.V
        L = V.Nbfun
        self.phi = np.stack([np.asarray(V.basis[i][0]) for i in range(L)])       # (L, E, Q)
        self.dphi = np.stack([V.basis[i][0].grad for i in range(L)], 1)    # (2, L, E, Q)
        self.dx = np.asarray(V.dx)                                          # (E, Q)
        self.dofs = np.asarray(V.element_dofs)                              # (L, E)
        rows = np.broadcast_to(self.dofs[:, None, :], (L, L, self.dofs.shape[1])).ravel()
        cols = np.broadcast_to(self.dofs[None, :, :], (L, L, self.dofs.shape[1])).ravel()
        n = self.nv
        pattern = sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(n, n))
        pattern.sort_indices()
        self._indptr, self._indices = pattern.indptr, pattern.indices
        keys = np.repeat(np.arange(n, dtype=np.int64), np.diff(pattern.indptr)) * n + \
            pattern.indices
        self._slot = np.searchsorted(keys, rows.astype(np.int64) * n + cols)   # (L*L*E,)

    def at_quad(self, u):
        """Values of the P2 field ``u`` at the quadrature points, ``(E, Q)``."""
        return np.einsum("le,leq->eq", u[self.dofs], self.phi)

    def grad_at_quad(self, u):
        """Gradient of the P2 field ``u`` at the quadrature points, ``(2, E, Q)``."""
        return np.einsum("le,dleq->deq", u[self.dofs], self.dphi)

    def _matrix(self, local):
        """CSR matrix from local matrices ``(L, L, E)`` (row function, column function)."""
        return self.pattern_matrix(self.data(local))

    def data(self, local):
        """The entries of the matrix of local matrices ``(L, L, E)`` on the fixed pattern
        (``pattern_matrix(data)`` makes it a CSR matrix; data of several add up)."""
        return np.bincount(self._slot, weights=local.ravel(), minlength=self._indices.size)

    def pattern_matrix(self, data):
        return sp.csr_matrix((data, self._indices, self._indptr), shape=(self.nv, self.nv))

    def convection_data(self, wx, wy):
        """Pattern entries of ``C[i, j] = int (w . grad v_j) v_i``, ``w = (wx, wy)`` in P2."""
        w = np.stack([self.at_quad(wx), self.at_quad(wy)])                   # (2, E, Q)
        adv = np.einsum("deq,djeq->jeq", w, self.dphi) * self.dx             # (L, E, Q)
        return self.data(np.einsum("ieq,jeq->ije", self.phi, adv, optimize=True))

    def convection(self, wx, wy):
        """``C[i, j] = int (w . grad v_j) v_i`` for the P2 velocity ``w = (wx, wy)``."""
        return self.pattern_matrix(self.convection_data(wx, wy))

    def mass_data(self):
        return self.data(np.einsum("ieq,jeq,eq->ije", self.phi, self.phi, self.dx))

    def stiffness_data(self):
        return self.data(np.einsum("dieq,djeq,eq->ije", self.dphi, self.dphi, self.dx))

    def restriction(self, free):
        """A function ``data -> CSR`` of the rows and columns ``free`` of a pattern matrix (the
        Dirichlet dofs removed) without slicing a sparse matrix each time."""
        n = self.nv
        keep = np.zeros(n, dtype=bool)
        keep[free] = True
        renum = np.full(n, -1, dtype=np.int64)
        renum[free] = np.arange(len(free))
        rows = np.repeat(np.arange(n), np.diff(self._indptr))
        mask = keep[rows] & keep[self._indices]
        indices = renum[self._indices[mask]]
        counts = np.bincount(renum[rows[mask]], minlength=len(free))
        indptr = np.concatenate([[0], np.cumsum(counts)])
        shape = (len(free), len(free))

        def restrict(data):
            return sp.csr_matrix((data[mask], indices, indptr), shape=shape)

        return restrict

    def weighted_mass(self, f):
        """``W[i, j] = int f v_j v_i`` for ``f`` given at the quadrature points ``(E, Q)``."""
        fq = f * self.dx
        return self._matrix(np.einsum("ieq,jeq,eq->ije", self.phi, self.phi, fq))

    def convection_vector(self, ux, uy, elements=None):
        """``(int (u . grad u_x) v_i, int (u . grad u_y) v_i)``: the convection term as two
        P2 load vectors (integrated over ``elements`` only, when given)."""
        sel = slice(None) if elements is None else elements
        dofs, phi, dphi, dx = self.dofs[:, sel], self.phi[:, sel], self.dphi[:, :, sel], \
            self.dx[sel]
        w = [np.einsum("le,leq->eq", c[dofs], phi) for c in (ux, uy)]        # (E, Q) each
        out = []
        for u in (ux, uy):
            g = np.einsum("le,dleq->deq", u[dofs], dphi)                      # (2, E, Q)
            f = (w[0] * g[0] + w[1] * g[1]) * dx
            local = np.einsum("ieq,eq->ie", phi, f)
            out.append(np.bincount(dofs.ravel(), weights=local.ravel(), minlength=self.nv))
        return out

    def load(self, f):
        """``int f v_i`` for ``f(x, y)`` (a function of the coordinates), a P2 load vector."""
        xq = self.V.mapping.F(self.V.X)                                       # (2, E, Q)
        local = np.einsum("ieq,eq->ie", self.phi, f(xq[0], xq[1]) * self.dx)
        return np.bincount(self.dofs.ravel(), weights=local.ravel(), minlength=self.nv)

    # ------------------------------------------------------------------ boundaries
    def velocity_dofs(self, *names):
        """P2 dofs on the named boundaries (vertices and edge midpoints)."""
        idx = [self.V.get_dofs(name).all() for name in names]
        return np.unique(np.concatenate(idx)) if idx else np.zeros(0, dtype=np.int64)

    def pressure_dofs(self, *names):
        idx = [self.Q.get_dofs(name).all() for name in names]
        return np.unique(np.concatenate(idx)) if idx else np.zeros(0, dtype=np.int64)

    @property
    def velocity_points(self):
        """Coordinates of the P2 dofs, ``(2, nv)``."""
        return self.V.doflocs

    @property
    def pressure_points(self):
        return self.Q.doflocs

    @property
    def dofs_total(self) -> int:
        return 2 * self.nv + self.np
