"""Body-fitted triangle meshes of a channel around a cylinder (gmsh), as scikit-fem meshes.

The DFG channel is ``[0, 2.2] x [0, 0.41]`` with a cylinder of diameter 0.1 centred at
``(0.2, 0.2)``. gmsh meshes the channel minus the disk with a size field: ``h_body`` on the
cylinder (``resolution`` edges around it), growing linearly to ``h_far`` over a ring, and
``h_wake`` in a box behind the cylinder. The cylinder is a polygon of ``resolution`` straight
edges whose vertices lie on the circle: the geometric error is ``R (1 - cos(pi / N))``, second
order in the edge length, so at 128 edges and more it is far below the benchmark's bands.

Boundaries are tagged by position after meshing (``inlet``, ``outlet``, ``walls``,
``cylinder``), so a mesh from elsewhere (a scikit-fem refinement) is tagged the same way.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

import numpy as np

__all__ = ["Channel", "DFG_CHANNEL", "channel_mesh", "tag_boundaries", "MIN_RESOLUTION"]

MIN_RESOLUTION = 16      # edges around the cylinder below which the body is not held
GMSH_LOCK = threading.Lock()    # gmsh keeps one global model per process


def gmsh_start(gmsh) -> None:
    """``gmsh.initialize`` without its side effect on the process: it gives SIGPIPE its
    default action (death) where Python ignores it, so a notebook kernel that had meshed a
    flow died without a word at its next write into a closed pipe (a pager quit early, a
    ``tail -n 0`` fed from Python; found as silent test-worker deaths, round 34). The
    disposition SIGPIPE had is put back."""
    import signal

    before = signal.getsignal(signal.SIGPIPE) if hasattr(signal, "SIGPIPE") else None
    gmsh.initialize(interruptible=False)
    if before is not None and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGPIPE, before)
    elif before == signal.SIG_IGN:   # not the main thread (a thread job), where Python's
        import ctypes  # signal module refuses: the C call

        libc = ctypes.CDLL(None, use_errno=True)
        libc.signal.restype = ctypes.c_void_p
        libc.signal.argtypes = (ctypes.c_int, ctypes.c_void_p)
        libc.signal(int(signal.SIGPIPE), 1)   # SIG_IGN


@dataclass(frozen=True)
class Channel:
    """The channel and its cylinder (lengths in metres)."""

    length: float = 2.2
    height: float = 0.41
    centre: tuple = (0.2, 0.2)
    radius: float = 0.05

    @property
    def front(self) -> tuple:
        """The cylinder's front (upstream) point, where the benchmark reads the pressure."""
        return (self.centre[0] - self.radius, self.centre[1])

    @property
    def back(self) -> tuple:
        return (self.centre[0] + self.radius, self.centre[1])


DFG_CHANNEL = Channel()


def _sizes(channel: Channel, resolution: int, wake: float):
    h_body = 2 * np.pi * channel.radius / resolution
    h_far = min(0.05, 12 * h_body)
    h_wake = min(h_far, wake * h_body) if wake > 0 else h_far
    return h_body, h_wake, h_far


def channel_mesh(resolution: int = 64, *, channel: Channel = DFG_CHANNEL, wake: float = 0.0,
                 wake_length: float = 1.0, grading: float = 0.2):
    """A scikit-fem ``MeshTri`` of the channel around the cylinder, its boundaries tagged.

    Parameters
    ----------
    resolution : int
        Edges around the cylinder (>= 16); the mesh size on the body is ``2 pi R / resolution``.
    wake : float
        Mesh size behind the cylinder as a multiple of the body's (0: no wake refinement; a
        periodic flow wants 3-4) over ``wake_length`` downstream of the centre.
    """
    if not isinstance(resolution, (int, np.integer)) or resolution < MIN_RESOLUTION:
        raise ValueError(f"resolution {resolution!r} is too coarse to hold the cylinder: "
                         f"give at least {MIN_RESOLUTION} edges around it")
    if wake < 0:
        raise ValueError(f"wake must be >= 0 (a multiple of the body's mesh size), got {wake!r}")
    import gmsh

    h_body, h_wake, h_far = _sizes(channel, int(resolution), wake)
    cx, cy = channel.centre
    with GMSH_LOCK:
        gmsh_start(gmsh)
        try:
            gmsh.option.setNumber("General.Terminal", 0)
            gmsh.model.add("channel")
            occ = gmsh.model.occ
            # the outer rectangle and the circle as two arcs, so that the front and back
            # points (where the benchmark reads the pressure) are mesh nodes
            corners = [occ.addPoint(x, y, 0.0) for x, y in
                       ((0, 0), (channel.length, 0), (channel.length, channel.height),
                        (0, channel.height))]
            sides = [occ.addLine(corners[i], corners[(i + 1) % 4]) for i in range(4)]
            circle = [occ.addCircle(cx, cy, 0.0, channel.radius, angle1=a, angle2=a + np.pi)
                      for a in (0.0, np.pi)]
            outer = occ.addCurveLoop(sides)
            hole = occ.addCurveLoop(circle)
            occ.addPlaneSurface([outer, hole])
            occ.synchronize()
            field = gmsh.model.mesh.field
            dist = field.add("Distance")
            field.setNumbers(dist, "CurvesList", circle)
            field.setNumber(dist, "Sampling", 4 * int(resolution))
            for arc in circle:                      # exactly `resolution` edges on the body
                gmsh.model.mesh.setTransfiniteCurve(arc, int(resolution) // 2 + 1)
            ring = field.add("Threshold")
            field.setNumber(ring, "InField", dist)
            field.setNumber(ring, "SizeMin", h_body)
            field.setNumber(ring, "SizeMax", h_far)
            field.setNumber(ring, "DistMin", 0.0)
            field.setNumber(ring, "DistMax", (h_far - h_body) / grading)
            fields = [ring]
            if wake > 0:
                box = field.add("Box")
                field.setNumber(box, "VIn", h_wake)
                field.setNumber(box, "VOut", h_far)
                field.setNumber(box, "XMin", cx)
                field.setNumber(box, "XMax", min(channel.length, cx + wake_length))
                field.setNumber(box, "YMin", cy - 2.5 * channel.radius)
                field.setNumber(box, "YMax", cy + 2.5 * channel.radius)
                field.setNumber(box, "Thickness", 0.1)
                fields.append(box)
            low = field.add("Min")
            field.setNumbers(low, "FieldsList", fields)
            field.setAsBackgroundMesh(low)
            for name in ("MeshSizeExtendFromBoundary", "MeshSizeFromPoints",
                         "MeshSizeFromCurvature"):
                gmsh.option.setNumber(f"Mesh.{name}", 0)
            gmsh.option.setNumber("Mesh.Algorithm", 6)      # Frontal-Delaunay
            gmsh.model.mesh.generate(2)
            tags, coords, _ = gmsh.model.mesh.getNodes()
            _, elem_nodes = gmsh.model.mesh.getElementsByType(2)
        finally:
            gmsh.finalize()
    return tag_boundaries(gmsh_triangles(tags, coords, elem_nodes), channel)


def gmsh_triangles(tags, coords, elem_nodes):
    """scikit-fem's ``MeshTri`` of the triangles gmsh generated (its node tags renumbered,
    nodes no triangle uses dropped)."""
    from skfem import MeshTri

    index = np.zeros(int(tags.max()) + 1, dtype=np.int64)
    index[tags.astype(np.int64)] = np.arange(len(tags))
    p = coords.reshape(-1, 3)[:, :2].T.copy()
    t = index[elem_nodes.astype(np.int64)].reshape(-1, 3).T.copy()
    used = np.unique(t)
    if len(used) != p.shape[1]:                 # drop nodes no triangle uses
        renum = np.full(p.shape[1], -1, dtype=np.int64)
        renum[used] = np.arange(len(used))
        p, t = p[:, used], renum[t]
    quiet = logging.getLogger("skfem")     # skfem warns when it copies arrays it was given
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        return MeshTri(np.ascontiguousarray(p), np.ascontiguousarray(t))
    finally:
        quiet.setLevel(level)


def tag_boundaries(mesh, channel: Channel = DFG_CHANNEL):
    """``mesh`` with its boundary facets named ``inlet``, ``outlet``, ``walls``, ``cylinder``."""
    tol = 1e-8
    cx, cy = channel.centre

    def on_cylinder(x):
        return np.hypot(x[0] - cx, x[1] - cy) < channel.radius * (1 + 1e-3)

    return mesh.with_boundaries({
        "inlet": lambda x: x[0] < tol,
        "outlet": lambda x: x[0] > channel.length - tol,
        "walls": lambda x: (x[1] < tol) | (x[1] > channel.height - tol),
        "cylinder": on_cylinder,
    })
