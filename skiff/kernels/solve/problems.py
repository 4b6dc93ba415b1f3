"""PDE problems on structured grids: Poisson, variable-coefficient diffusion ``-div(k grad u) = f``
and convection-diffusion, in 2D and 3D, with Dirichlet/Neumann sides and masked cells.

The discretisation is cell-centred finite volumes on a box ``[0, L0] x [0, L1] (x [0, L2])``
split into ``shape`` cells: unknowns at cell centres, face coefficients from the harmonic mean
of the two cells (or from ``k(x, y[, z])`` evaluated at the face), Dirichlet sides through a
ghost value at half a cell (second order), Neumann sides as a prescribed flux. Cells masked
out (``mask`` False, or ``sdf < 0``: inside an embedded body) drop out with zero-flux walls,
which is what a pressure equation around a solid body needs.

>>> p = poisson((32, 32))
>>> p.shape, p.unknowns, p.singular
((32, 32), 1024, False)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from skiff.kernels.backend.devices import host_free_memory

from .estimate import check_problem_fits
from .stencil import ConstStencil, VarStencil, to_3d_shape

__all__ = ["GridProblem", "grid_problem", "poisson", "diffusion", "convection_diffusion",
           "SIDES", "BC_KINDS"]

BC_KINDS = ("dirichlet", "neumann", "periodic")
SIDES = ("x-", "x+", "y-", "y+", "z-", "z+")
_AXES = {"x": 0, "y": 1, "z": 2}
_ALIASES = {"left": "x-", "right": "x+", "bottom": "y-", "top": "y+", "front": "z-",
            "back": "z+", "west": "x-", "east": "x+", "south": "y-", "north": "y+"}


@dataclass
class GridProblem:
    """A discretised problem ``A u = rhs`` on a structured grid (arrays are 3D internally).

    Attributes: ``shape`` (user grid), ``h`` (spacing per user axis), ``stencil`` (diffusion part),
    ``source`` and ``bterm`` (volume and boundary parts of ``rhs``), ``signs`` (ghost factors per
    side for interpolation), ``velocity`` (constant convection or None), ``mask`` (active cells,
    3D, or None), ``exact`` (the exact solution at cell centres when known).
    """

    shape: tuple[int, ...]
    h: tuple[float, ...]
    stencil: ConstStencil | VarStencil
    source: np.ndarray
    bterm: np.ndarray
    signs: np.ndarray
    velocity: tuple[float, ...] | None = None
    conv_rhs: np.ndarray | None = None
    mask: np.ndarray | None = None
    exact: np.ndarray | None = None
    name: str = "problem"
    dirichlet: bool = True
    info: dict = field(default_factory=dict)

    @property
    def shape3(self) -> tuple[int, int, int]:
        return to_3d_shape(self.shape)

    @property
    def unknowns(self) -> int:
        return int(np.prod(self.shape))

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def symmetric(self) -> bool:
        return self.velocity is None

    @property
    def convection_dominated(self) -> bool:
        """Upwind convection outweighs diffusion on this grid: its part of the diagonal
        (``sum |v_i| / h_i``) is above a quarter of the diffusion part (median cell), a cell
        Peclet number ``|v| h / k`` above 1 on a uniform 2D grid. Geometric multigrid, built on
        the diffusion alone, then preconditions poorly (128x128, velocity (1000, 0): BiCGStab
        + MG broke down, GMRES + MG took 711 iterations; AMG on the assembled matrix 5-9)."""
        if self.velocity is None:
            return False
        conv = sum(abs(v) / h for v, h in zip(self.velocity, self.h))
        diag = np.asarray(self.stencil.diag)
        return bool(conv > 0.25 * float(np.median(diag)))

    @property
    def singular(self) -> bool:
        """True when no side is Dirichlet and nothing else pins the solution (pure Neumann,
    periodic, or the two mixed): the constants are the null space."""
        if self.dirichlet:
            return False
        # convection keeps the constants the null space from both sides only when every side
        # wraps (the upwind operator is then circulant: its columns sum to zero too)
        return self.velocity is None or set(self.info.get("bc", {}).values()) == {"periodic"}

    @property
    def rhs(self) -> np.ndarray:
        r = self.source + self.bterm
        return r if self.conv_rhs is None else r + self.conv_rhs

    def convect(self, u, out):
        """out += (v . grad) u, first-order upwind, ghosts from the side conditions."""
        if self.velocity is None:
            return out
        from skiff.kernels.backend import get_array_module

        xp = get_array_module(u)
        hs = (1.0,) * (3 - self.ndim) + tuple(self.h)
        vel = (0.0,) * (3 - self.ndim) + tuple(self.velocity)
        for ax in range(3):
            v = vel[ax]
            if v == 0.0 or u.shape[ax] < 2:
                continue
            um = xp.moveaxis(u, ax, 0)
            om = xp.moveaxis(out, ax, 0)
            wrap = self.stencil.periodic[ax]
            if v > 0:   # backward difference, ghost below (the last cell when periodic)
                om[1:] += v / hs[ax] * (um[1:] - um[:-1])
                if wrap:
                    om[0] += v / hs[ax] * (um[0] - um[-1])
                else:
                    om[0] += v / hs[ax] * (1.0 - self.signs[2 * ax]) * um[0]
            else:       # forward difference, ghost above (the first cell when periodic)
                om[:-1] += v / hs[ax] * (um[1:] - um[:-1])
                if wrap:
                    om[-1] += v / hs[ax] * (um[0] - um[-1])
                else:
                    om[-1] += v / hs[ax] * (self.signs[2 * ax + 1] - 1.0) * um[-1]
        return out

    def matrix(self) -> sp.csr_matrix:
        """The assembled matrix (diffusion plus convection) in C order of the grid."""
        A = self.stencil.to_csr()
        if self.velocity is not None:
            A = (A + _convection_matrix(self)).tocsr()
        return A

    def to_grid(self, v):
        """A flat or user-shaped array as the internal 3D grid (a view when possible)."""
        return v.reshape(self.shape3)

    def to_user(self, v):
        return v.reshape(self.shape)

    def coords(self) -> list[np.ndarray]:
        """Cell-centre coordinates per user axis, broadcastable to ``shape``."""
        d = self.ndim
        out = []
        for a, (n, h) in enumerate(zip(self.shape, self.h)):
            x = (np.arange(n) + 0.5) * h
            out.append(x.reshape([n if b == a else 1 for b in range(d)]))
        return out

    def __repr__(self) -> str:
        grid = "x".join(map(str, self.shape))
        return f"<GridProblem {self.name} {grid} ({self.unknowns} unknowns)>"


def _convection_matrix(p: GridProblem) -> sp.csr_matrix:
    """The upwind convection operator of ``p.convect`` assembled as Kronecker sums."""
    shape3 = p.shape3
    hs = (1.0,) * (3 - p.ndim) + tuple(p.h)
    vel = (0.0,) * (3 - p.ndim) + tuple(p.velocity)
    n = int(np.prod(shape3))
    C = sp.csr_matrix((n, n))
    for ax in range(3):
        v, m = vel[ax], shape3[ax]
        if v == 0.0 or m < 2:
            continue
        w = v / hs[ax]
        if v > 0:
            D = sp.diags([np.full(m, w), np.full(m - 1, -w)], [0, -1], format="lil")
            D[0, 0] = w * (1.0 - p.signs[2 * ax])
            if p.stencil.periodic[ax]:   # the upwind neighbour of the first cell: the last
                D[0, 0], D[0, m - 1] = w, -w
        else:
            D = sp.diags([np.full(m, -w), np.full(m - 1, w)], [0, 1], format="lil")
            D[m - 1, m - 1] = w * (p.signs[2 * ax + 1] - 1.0)
            if p.stencil.periodic[ax]:
                D[m - 1, m - 1], D[m - 1, 0] = -w, w
        before = int(np.prod(shape3[:ax]))
        after = int(np.prod(shape3[ax + 1:]))
        C = C + sp.kron(sp.kron(sp.identity(before), D.tocsr()), sp.identity(after))
    return C.tocsr()


def _side(name: str) -> str:
    key = _ALIASES.get(name, name)
    if key not in SIDES:
        valid = ", ".join(SIDES + tuple(_ALIASES))
        raise ValueError(f"unknown side {name!r}: choose from {valid}")
    return key


def _parse_bc(bc, ndim: int) -> dict[str, tuple[str, object]]:
    sides = SIDES[: 2 * ndim]
    if isinstance(bc, str) or (isinstance(bc, tuple) and isinstance(bc[0], str)):
        bc = dict.fromkeys(sides, bc)
    elif not isinstance(bc, dict):
        raise ValueError(f"bc must be 'dirichlet', 'neumann', 'periodic' or a dict of sides, "
                         f"got {bc!r}")
    out = dict.fromkeys(sides, ("dirichlet", 0.0))
    for name, spec in bc.items():
        if name in _AXES:   # {'x': 'periodic'}: both sides of the axis
            if _AXES[name] >= ndim:
                raise ValueError(f"axis {name!r} does not exist on a {ndim}D grid")
            names = (f"{name}-", f"{name}+")
        else:
            names = (name,)
        for one in names:
            side = _side(one)
            if side not in sides:
                raise ValueError(f"side {one!r} does not exist on a {ndim}D grid: "
                                 f"choose from {', '.join(sides)}")
            kind, value = (spec, 0.0) if isinstance(spec, str) else spec
            kind = str(kind).lower()
            if kind not in BC_KINDS:
                raise ValueError(f"unknown boundary condition {kind!r} on side {one!r}: "
                                 f"choose from {', '.join(BC_KINDS)}")
            if kind == "periodic" and (callable(value) or np.ndim(value) != 0
                                       or float(value) != 0.0):
                raise ValueError(f"side {one!r}: a periodic side takes no value (got "
                                 f"{value!r}); it wraps around to the opposite side")
            out[side] = (kind, value)
    for a in range(ndim):
        lo, hi = out[SIDES[2 * a]][0], out[SIDES[2 * a + 1]][0]
        if (lo == "periodic") != (hi == "periodic"):
            ax = "xyz"[a]
            raise ValueError(f"axis {ax} is periodic on one side only ({SIDES[2 * a]}={lo}, "
                             f"{SIDES[2 * a + 1]}={hi}): a periodic axis wraps both its sides, "
                             f"bc={{'{ax}': 'periodic', ...}}")
    return out


def _field(value, coords, shape, what: str) -> np.ndarray:
    """A scalar, array of ``shape`` or callable of the coordinates, as a float array."""
    raw = np.asarray(value(*coords) if callable(value) else value)
    if np.iscomplexobj(raw):   # numpy dropped the imaginary part with a warning: 1j*x was 0
        raise ValueError(f"{what} must be real, got complex values (first "
                         f"{raw.ravel()[0]!r}); split a complex problem into its real and "
                         "imaginary parts")
    if callable(value):
        out = raw.astype(np.float64)
        return np.broadcast_to(out, shape).copy()
    arr = raw.astype(np.float64)
    if arr.ndim == 0:
        return np.full(shape, float(arr))
    if arr.shape != tuple(shape):
        raise ValueError(f"{what} has shape {arr.shape}, expected {tuple(shape)} (the grid)")
    return arr.copy()


class FieldError(ValueError):
    """A coefficient or source whose values make no problem: not finite, or a conductivity
    that is not positive (the message says where)."""


def _at(bad: np.ndarray, coords, values: np.ndarray) -> str:
    """'VALUE at x=.., y=..' for the first True of ``bad`` (coordinates broadcast to it)."""
    idx = tuple(np.argwhere(bad)[0])
    where = ", ".join(f"{n}={float(np.broadcast_to(c, bad.shape)[idx]):.4g}"
                      for n, c in zip("xyz", coords))
    return f"{float(values[idx]):.4g} at {where}"


def _body_bc(body_bc):
    """``(kind, value)`` of the condition on an embedded body's surface."""
    if body_bc is None:
        return "neumann", 0.0
    kind, value = (body_bc, 0.0) if isinstance(body_bc, str) else tuple(body_bc)
    if kind not in ("neumann", "dirichlet"):
        raise ValueError(f"body_bc must be 'neumann', 'dirichlet' or ('dirichlet', value), "
                         f"got {body_bc!r}")
    if kind == "neumann" and not (np.ndim(value) == 0 and float(value) == 0.0):
        raise ValueError(f"body_bc: only a zero-flux (no-penetration) Neumann wall is "
                         f"supported on a body, got {body_bc!r}")
    return kind, value


def grid_problem(shape, *, k=1.0, source=0.0, bc="dirichlet", extent=1.0, mask=None, sdf=None,
                 velocity=None, exact: Callable | None = None, name: str = "diffusion",
                 body_bc=None) -> GridProblem:
    """Build ``-div(k grad u) + v . grad u = source`` on a ``shape`` grid of cells.

    Parameters
    ----------
    shape : tuple of 2 or 3 ints
        Cells per axis (x, y[, z]).
    k : float, array of ``shape``, or callable ``k(x, y[, z])``
        Diffusion coefficient: cell values (harmonic mean at faces) or a function evaluated at
        the face centres.
    source : float, array or callable ``f(x, y[, z])`` at cell centres.
    bc : 'dirichlet', 'neumann', or ``{side: kind | (kind, value)}``
        Sides ``x-, x+, y-, y+, z-, z+`` (or left, right, bottom, top, front, back); a value is
        a number or a callable of the face coordinates. Neumann values are ``du/dn`` (outward).
    extent : float or tuple
        Length of the box per axis.
    mask, sdf : array of ``shape``
        Active cells (``mask`` True) or a signed distance (active where ``sdf >= 0``).
    velocity : tuple of floats
        Constant convection velocity (first-order upwind); makes the problem non-symmetric.
    exact : callable ``u(x, y[, z])``
        The exact solution, when known (the Solution then reports the discretisation error).
    body_bc : None, 'neumann', 'dirichlet' or ('dirichlet', value)
        Condition on the surface of the masked cells (the body): 'neumann' (default) is a
        zero-flux wall (no penetration); 'dirichlet' prescribes ``value`` (a number or a
        callable of the wall point's coordinates). With ``sdf`` the wall sits where the signed
        distance, interpolated between an active cell and its masked neighbour, is zero
        (fraction ``theta`` of the spacing, at least 0.1), else on the face between them; the
        active cell gets the coupling ``k / (theta h^2)`` on its diagonal only, so the operator
        stays symmetric positive definite.
    """
    shape = tuple(int(n) for n in shape)
    d = len(shape)
    if d not in (2, 3) or min(shape) < 2:
        raise ValueError(f"grid shape must be 2 or 3 sizes of at least 2, got {shape!r}")
    check_problem_fits(shape, host_free_memory())
    ext = (float(extent),) * d if np.ndim(extent) == 0 else tuple(float(e) for e in extent)
    if len(ext) != d or min(ext) <= 0:
        raise ValueError(f"extent must be positive, one per axis, got {extent!r}")
    h = tuple(e / n for e, n in zip(ext, shape))
    sides = _parse_bc(bc, d)
    periodic = tuple(sides[SIDES[2 * a]][0] == "periodic" for a in range(d))
    centres = [((np.arange(n) + 0.5) * hh).reshape([n if b == a else 1 for b in range(d)])
               for a, (n, hh) in enumerate(zip(shape, h))]
    if sdf is not None:
        if mask is not None:
            raise ValueError("give either mask or sdf, not both")
        sdf_bad = ~np.isfinite(np.asarray(sdf, dtype=np.float64))
        if sdf_bad.any():   # NaN >= 0 is False: NaN cells became the body without a word
            raise FieldError(f"the body's signed distance must be finite: it is "
                             f"{_at(sdf_bad, centres, np.asarray(sdf, dtype=np.float64))}")
        mask = np.asarray(sdf) >= 0
    body_kind, body_value = _body_bc(body_bc)
    sdf_arr = None if sdf is None else np.asarray(sdf, dtype=np.float64)
    if body_kind == "dirichlet" and mask is None:
        raise ValueError("body_bc='dirichlet' needs a body: give mask= or sdf=")
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)
        if mask.shape != shape:
            raise ValueError(f"mask has shape {mask.shape}, expected {shape} (the grid)")
        if not mask.any():
            raise ValueError("the mask leaves no active cell")
        for a in range(d):
            mk = np.moveaxis(mask, a, 0)
            if body_kind == "dirichlet" and periodic[a] and (mk[0] != mk[-1]).any():
                raise ValueError(f"body_bc='dirichlet': the body crosses the periodic seam of "
                                 f"axis {'xyz'[a]} (a wall there is not built yet); shift the "
                                 f"body (or the grid) so that it does not touch x_{a}=0")
    if velocity is not None:
        velocity = tuple(float(v) for v in velocity)
        if len(velocity) != d:
            raise ValueError(f"velocity needs {d} components, got {velocity!r}")
        if mask is not None:
            raise ValueError("convection on masked domains is not supported yet")
        kinds = {kind for kind, _ in sides.values()}
        if "dirichlet" not in kinds and kinds != {"periodic"}:
            what = "Neumann" if kinds == {"neumann"} else (
                "periodic" if kinds == {"periodic"} else "Neumann and periodic")
            # the constants are its null space and b = 1 is outside its range: BiCGStab broke
            # down after 1600 iterations, GMRES stagnated, stationary MG diverged to 1e121
            raise ValueError(f"convection with {what} on every side has no unique "
                             "solution "
                             "(u + c solves it too) and, for most sources, none at all: "
                             "make at least one side Dirichlet (bc='dirichlet', or "
                             "{'x-': 'dirichlet', ...})")
    f = _field(source, centres, shape, "source")
    if mask is not None:
        f[~mask] = 0.0
    if not np.isfinite(f).all():
        raise FieldError(f"the source must be finite on the grid: it is "
                         f"{_at(~np.isfinite(f), centres, f)}")
    bterm = np.zeros(shape)
    conv_rhs = np.zeros(shape) if velocity is not None else None
    signs = np.ones(6)
    uniform = np.ndim(k) == 0 and not callable(k) and mask is None
    faces = []
    consts = ([0.0] * (3 - d), [0.0] * (3 - d), [0.0] * (3 - d))
    kcell = None if callable(k) else _field(k, centres, shape, "k")
    if kcell is not None and mask is not None:
        kcell[~mask] = 0.0
    if kcell is not None:
        bad = ~((kcell > 0) & np.isfinite(kcell))
        if mask is not None:
            bad &= mask
        if bad.any():
            raise FieldError(f"the coefficient k must be positive and finite on active cells: "
                             f"it is {_at(bad, centres, kcell)}")
    extra = np.zeros(shape) if body_kind == "dirichlet" else None
    for a in range(d):
        n, hh = shape[a], h[a]
        fshape = list(shape)
        fshape[a] = n + 1
        if extra is not None:
            _body_wall(a, hh, mask, sdf_arr, k, kcell, centres, shape, body_value, extra, bterm)
        if callable(k):
            fc = [c for c in centres]
            fc[a] = (np.arange(n + 1) * hh).reshape([n + 1 if b == a else 1 for b in range(d)])
            kf = _field(k, fc, fshape, "k")
            both = np.ones(fshape, dtype=bool)
            if mask is not None:
                mk = np.moveaxis(mask, a, 0)
                bm = np.ones((n + 1,) + mk.shape[1:], dtype=bool)
                bm[:-1] &= mk
                bm[1:] &= mk
                both = np.moveaxis(bm, 0, a)
            bad = ~((kf > 0) & np.isfinite(kf)) & both
            if bad.any():  # a negative or zero conductivity makes no diffusion problem
                raise FieldError(f"the coefficient k must be positive and finite: it is "
                                 f"{_at(bad, fc, kf)} (a face centre)")
            if periodic[a]:   # one face: k at the low end, the body cut if either end is
                kfm = np.moveaxis(kf, a, 0)
                kfm[-1] = kfm[0]
                if mask is not None:
                    bm = np.moveaxis(both, a, 0)
                    bm[0] = bm[-1] = mk[0] & mk[-1]
            if mask is not None:
                kf = kf * both
        else:
            km = np.moveaxis(kcell, a, 0)
            kf = np.empty((n + 1,) + km.shape[1:])
            lo, hi = km[:-1], km[1:]
            with np.errstate(divide="ignore", invalid="ignore"):
                kf[1:-1] = np.where(lo * hi > 0, 2 * lo * hi / (lo + hi), 0.0)
            kf[0], kf[-1] = km[0], km[-1]
            if periodic[a]:   # the wrap face: harmonic mean of the two end cells
                lo, hi = km[-1], km[0]
                with np.errstate(divide="ignore", invalid="ignore"):
                    kf[0] = kf[-1] = np.where(lo * hi > 0, 2 * lo * hi / (lo + hi), 0.0)
            kf = np.moveaxis(kf, 0, a)
        c = kf / hh**2
        cm = np.moveaxis(c, a, 0)
        for end, side in ((0, SIDES[2 * a]), (-1, SIDES[2 * a + 1])):
            kind, value = sides[side]
            face_k = np.moveaxis(kf, a, 0)[end]
            fcoords = [np.moveaxis(np.broadcast_to(x, shape), a, 0)[end] for x in centres]
            fcoords[a] = np.full_like(fcoords[a], 0.0 if end == 0 else ext[a])
            g = _field(value, fcoords, face_k.shape, f"value on side {side}")
            if not np.isfinite(g).all():  # it reached the solver as "b contains NaN"
                raise FieldError(f"the value on side {side} must be finite: it is "
                                 f"{_at(~np.isfinite(g), fcoords, g)}")
            bslab = np.moveaxis(bterm, a, 0)
            ia = 2 * (3 - d + a) + (0 if end == 0 else 1)
            if kind == "periodic":   # the wrap coupling stays in the face (counted in diag)
                signs[ia] = 1.0
            elif kind == "dirichlet":
                cm[end] = 2 * face_k / hh**2
                bslab[end] += 2 * face_k * g / hh**2
                signs[ia] = -1.0
            else:
                cm[end] = 0.0
                bslab[end] += face_k * g / hh
                signs[ia] = 1.0
            if velocity is not None and kind == "dirichlet":
                v = velocity[a]
                cslab = np.moveaxis(conv_rhs, a, 0)
                if end == 0 and v > 0:
                    cslab[0] += 2 * v * g / hh
                elif end == -1 and v < 0:
                    cslab[-1] += -2 * v * g / hh
            if uniform:
                (consts[1] if end == 0 else consts[2]).append(float(cm[end].flat[0]))
        if uniform:
            consts[0].append(float(k) / hh**2)
        faces.append(c)
    dirichlet = bool((signs < 0).any()) or (extra is not None and bool((extra > 0).any()))
    shape3 = to_3d_shape(shape)
    per3 = (False,) * (3 - d) + periodic
    if uniform:
        stencil = ConstStencil(shape3, tuple(consts[0]), tuple(consts[1]), tuple(consts[2]),
                               per3)
    else:
        faces3 = faces if d == 3 else [np.zeros((2,) + shape)] + [c[None] for c in faces]
        stencil = VarStencil.from_faces(
            *faces3, extra=None if extra is None else extra.reshape(shape3), periodic=per3)
    ex = None
    if exact is not None:
        ex = _field(exact, centres, shape, "exact")
        if mask is not None:
            ex[~mask] = 0.0
    return GridProblem(
        shape=shape, h=h, stencil=stencil, source=f.reshape(shape3),
        bterm=bterm.reshape(shape3), signs=signs, velocity=velocity,
        conv_rhs=None if conv_rhs is None else conv_rhs.reshape(shape3),
        mask=None if mask is None else mask.reshape(shape3), exact=ex, name=name,
        dirichlet=dirichlet, info={"extent": ext, "bc": {s: v[0] for s, v in sides.items()},
              "periodic": per3})


def _body_wall(a, hh, mask, sdf, k, kcell, centres, shape, value, extra, bterm):
    """Add the Dirichlet wall couplings along axis ``a``: every active cell next to a masked
    one gets ``k / (theta h^2)`` on its diagonal and ``k g / (theta h^2)`` on its right-hand
    side (``theta``: the wall's distance from the cell centre in units of ``h``)."""
    for step in (1, -1):
        act = np.moveaxis(mask, a, 0)
        here = act[:-1] if step == 1 else act[1:]          # the active cell
        there = act[1:] if step == 1 else act[:-1]          # its neighbour in +/- a
        wall = here & ~there
        if not wall.any():
            continue
        if sdf is not None:
            s = np.moveaxis(sdf, a, 0)
            sh, st = (s[:-1], s[1:]) if step == 1 else (s[1:], s[:-1])
            with np.errstate(divide="ignore", invalid="ignore"):
                theta = np.where(wall, sh / (sh - st), 0.5)
            theta = np.clip(np.nan_to_num(theta, nan=0.5), 0.1, 1.0)
        else:
            theta = np.full(wall.shape, 0.5)
        idx = np.nonzero(wall)
        cells = (idx[0] + (0 if step == 1 else 1),) + idx[1:]
        cells_user = tuple(np.moveaxis(np.indices(shape), a + 1, 1)[b][cells]
                           for b in range(len(shape)))
        if kcell is not None:
            kk = kcell[cells_user]
        else:
            pts = [np.broadcast_to(c, shape)[cells_user] for c in centres]
            kk = np.asarray(k(*pts), dtype=np.float64) * np.ones(len(cells[0]))
        th = theta[idx]
        pts = [np.broadcast_to(c, shape)[cells_user].astype(np.float64) for c in centres]
        pts[a] = pts[a] + step * th * hh
        g = value(*pts) if callable(value) else value
        g = np.asarray(g, dtype=np.float64) * np.ones(len(th))
        if not np.isfinite(g).all():
            first = int(np.flatnonzero(~np.isfinite(g))[0])
            where = ", ".join(f"{n}={float(c[first]):.4g}" for n, c in zip("xyz", pts))
            raise FieldError(f"the body's Dirichlet value must be finite: it is "
                             f"{float(g[first]):.4g} at {where} (a wall point)")
        coup = kk / (th * hh**2)
        np.add.at(extra, cells_user, coup)
        np.add.at(bterm, cells_user, coup * g)


def poisson(shape, *, source=None, bc="dirichlet", extent=1.0, **kw) -> GridProblem:
    """``-lap u = f``; without ``source``, the manufactured ``u = prod sin(pi x_a / L_a)`` whose
    exact solution is attached (so the discretisation error is reported)."""
    d = len(shape)
    if source is None and bc == "dirichlet":
        ext = (float(extent),) * d if np.ndim(extent) == 0 else tuple(extent)

        def exact(*x):
            out = 1.0
            for xa, la in zip(x, ext):
                out = out * np.sin(np.pi * xa / la)
            return out

        def source(*x):
            return sum((np.pi / la) ** 2 for la in ext) * exact(*x)

        return grid_problem(shape, k=1.0, source=source, bc=bc, extent=extent, exact=exact,
                            name="poisson", **kw)
    return grid_problem(shape, k=1.0, source=1.0 if source is None else source, bc=bc,
                        extent=extent, name="poisson", **kw)


def diffusion(shape, k, *, source=1.0, bc="dirichlet", **kw) -> GridProblem:
    """``-div(k grad u) = f`` with a cell (array) or face (callable) coefficient ``k``."""
    return grid_problem(shape, k=k, source=source, bc=bc, name=kw.pop("name", "diffusion"), **kw)


def convection_diffusion(shape, velocity, *, k=1.0, source=1.0, bc="dirichlet",
                         **kw) -> GridProblem:
    """``-div(k grad u) + v . grad u = f`` (upwind convection; non-symmetric)."""
    return grid_problem(shape, k=k, source=source, bc=bc, velocity=velocity,
                        name=kw.pop("name", "convection-diffusion"), **kw)
