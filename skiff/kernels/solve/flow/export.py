"""A flow solve written for ParaView and spreadsheets: ``NoseFlow.save`` and
``FlowResult.save``.

``.vtu``: a VTK XML unstructured grid (ParaView's own format; base64 binary inline, or ASCII
with ``format='vtu-ascii'``); ``.vtk``: the legacy unstructured grid (binary big-endian, or
``format='vtk-ascii'``, which gmsh also reads); both hold the triangles on the mesh vertices
with the vertex values (the P2 velocity's and P1 pressure's nodal values there) as point
data and the coefficients as field data. ``.npz``: the same arrays and the record as JSON.
``.csv``: the body's surface (a nose's ``s, x, y, cp``; a cylinder's ``theta, cp``);
``.history.csv`` or ``format='csv-history'``: an unsteady run's coefficients at every time
step (2D-2 / 2D-3's ``t, cd, cl, dp``: the curves the benchmark's papers plot; round 45,
before which they could be drawn but not written); a time-averaged nose's ``t, cd, cl``.
``.json``: the numbers (the result's record: coefficients, bands, errors, settings; round
47: ``--save run.json`` was refused though ``result.json`` holds the same), NaN as null.
A job's ``--save`` (:func:`save_in_job`) never fails the job: a history CSV of a run that ended
steady is one row, and a file that cannot be written is a warning (round 47, h19).
"""

from __future__ import annotations

import base64
import json
import warnings
from pathlib import Path

import numpy as np

__all__ = ["save_flow", "save_in_job", "write_vtu", "write_vtk_unstructured", "FORMATS"]

FORMATS = ("vtu", "vtu-ascii", "vtk", "vtk-ascii", "npz", "csv", "csv-history", "json")
_SUFFIX = {".vtu": "vtu", ".vtk": "vtk", ".npz": "npz", ".csv": "csv", ".json": "json"}
# what a steady cylinder's history CSV is refused with (a nose passes its own words)
NO_HISTORY = ("this result has no time history (a steady solve): its coefficients are single "
              "numbers (result.values); the history CSV is for the unsteady cases 2d-2 and "
              "2d-3")
VTK_TRIANGLE = 5


def _format(path: Path, format: str | None) -> str:
    if format is not None:
        if format not in FORMATS:
            raise ValueError(f"unknown format {format!r}: choose from {', '.join(FORMATS)}")
        return format
    if path.name.lower().endswith(".history.csv"):
        return "csv-history"
    fmt = _SUFFIX.get(path.suffix.lower())
    if fmt is None:
        raise ValueError(f"cannot tell the format of {path.name!r} from its suffix: name a "
                         ".vtu or .vtk file (ParaView), .npz (numpy), .csv (the surface's "
                         "cp), .history.csv (an unsteady run's cd, cl, dp in time) or .json "
                         "(the numbers), or pass "
                         "format= one of " + ", ".join(FORMATS))
    return fmt


def _points3(p) -> np.ndarray:
    p = np.asarray(p, float)
    return np.column_stack([p[0], p[1], np.zeros(p.shape[1])])


def _arrays(point_data: dict, n: int) -> dict:
    """Each array as (n,) or (n, 3) float64 (2-vectors get a zero z)."""
    out = {}
    for name, v in point_data.items():
        v = np.asarray(v, float)
        if v.shape[0] != n:
            raise ValueError(f"point data {name!r} has {v.shape[0]} values for {n} points")
        if v.ndim == 2 and v.shape[1] == 2:
            v = np.column_stack([v, np.zeros(n)])
        out[name] = v
    return out


def _b64(a: np.ndarray) -> str:
    data = np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<"), copy=False).tobytes()
    return base64.b64encode(np.uint64(len(data)).astype("<u8").tobytes() + data).decode()


def _vtu_array(name, a: np.ndarray, binary: bool, vtype: str, comps: int = 1) -> str:
    attrs = f'type="{vtype}"' + (f' Name="{name}"' if name else "")
    if comps > 1:
        attrs += f' NumberOfComponents="{comps}"'
    if binary:
        return f'<DataArray {attrs} format="binary">{_b64(a)}</DataArray>\n'
    flat = np.asarray(a).ravel()
    text = " ".join(repr(float(v)) if vtype.startswith("Float") else str(int(v)) for v in flat)
    return f'<DataArray {attrs} format="ascii">{text}</DataArray>\n'


def write_vtu(path, p, t, point_data: dict, field_data: dict | None = None, *,
              binary: bool = True) -> Path:
    """A VTK XML ``UnstructuredGrid`` of triangles: ``p`` (2, n) vertices, ``t`` (3, E)
    their indices, ``point_data`` ``{name: (n,) or (n, 2|3)}``, ``field_data`` ``{name:
    number}`` (the coefficients)."""
    path = Path(path)
    pts = _points3(p)
    tri = np.asarray(t, np.int64).T
    n, e = len(pts), len(tri)
    data = _arrays(point_data, n)
    out = ['<?xml version="1.0"?>\n<VTKFile type="UnstructuredGrid" version="1.0" '
           'byte_order="LittleEndian" header_type="UInt64">\n<UnstructuredGrid>\n']
    if field_data:
        out.append("<FieldData>\n")
        for name, v in field_data.items():
            out.append(f'<DataArray type="Float64" Name="{name}" NumberOfTuples="1" '
                       f'format="ascii">{float(v)!r}</DataArray>\n')
        out.append("</FieldData>\n")
    scalars = next((k for k, v in data.items() if v.ndim == 1), None)
    vectors = next((k for k, v in data.items() if v.ndim == 2), None)
    head = "".join(f' {a}="{k}"' for a, k in (("Scalars", scalars), ("Vectors", vectors)) if k)
    out.append(f'<Piece NumberOfPoints="{n}" NumberOfCells="{e}">\n<PointData{head}>\n')
    for name, v in data.items():
        out.append(_vtu_array(name, v, binary, "Float64", 1 if v.ndim == 1 else v.shape[1]))
    out.append("</PointData>\n<Points>\n")
    out.append(_vtu_array("", pts, binary, "Float64", 3))
    out.append("</Points>\n<Cells>\n")
    out.append(_vtu_array("connectivity", tri.ravel(), binary, "Int64"))
    out.append(_vtu_array("offsets", 3 * np.arange(1, e + 1, dtype=np.int64), binary, "Int64"))
    out.append(_vtu_array("types", np.full(e, VTK_TRIANGLE, np.uint8), binary, "UInt8"))
    out.append("</Cells>\n</Piece>\n</UnstructuredGrid>\n</VTKFile>\n")
    path.write_text("".join(out))
    return path


def write_vtk_unstructured(path, p, t, point_data: dict, field_data: dict | None = None, *,
                           binary: bool = True, title: str = "skiff flow") -> Path:
    """The legacy VTK ``UNSTRUCTURED_GRID`` of triangles (binary: big-endian, as the format
    asks; ASCII: readable by gmsh too)."""
    path = Path(path)
    pts = _points3(p)
    tri = np.asarray(t, np.int64).T
    n, e = len(pts), len(tri)
    data = _arrays(point_data, n)
    chunks: list = []

    def put(text):
        chunks.append(text.encode("ascii"))

    def block(a, dtype):
        a = np.asarray(a)
        if binary:
            chunks.append(a.astype(dtype).tobytes())
            put("\n")
        else:
            rows = a.reshape(len(a), -1)
            fmt = repr if dtype[-2] == "f" else (lambda v: str(int(v)))
            put("\n".join(" ".join(fmt(float(x)) if dtype[-2] == "f" else fmt(x) for x in r)
                          for r in rows) + "\n")

    put(f"# vtk DataFile Version 3.0\n{title.replace(chr(10), ' ')[:250]}\n"
        f"{'BINARY' if binary else 'ASCII'}\nDATASET UNSTRUCTURED_GRID\n")
    put(f"POINTS {n} double\n")
    block(pts, ">f8")
    put(f"CELLS {e} {4 * e}\n")
    block(np.column_stack([np.full(e, 3), tri]), ">i4")
    put(f"CELL_TYPES {e}\n")
    block(np.full((e, 1), VTK_TRIANGLE), ">i4")
    if field_data:      # after the cells (VTK reads it there; gmsh stops before it)
        put(f"FIELD FieldData {len(field_data)}\n")
        for name, v in field_data.items():
            put(f"{name} 1 1 double\n")
            block(np.array([float(v)]), ">f8")
    put(f"POINT_DATA {n}\n")
    for name, v in data.items():
        if v.ndim == 1:
            put(f"SCALARS {name} double 1\nLOOKUP_TABLE default\n")
            block(v[:, None], ">f8")
        else:
            put(f"VECTORS {name} double\n")
            block(v, ">f8")
    path.write_bytes(b"".join(chunks))
    return path


def _csv(path: Path, columns: dict) -> Path:
    """Column names on the first line, then the rows: what ParaView's CSV reader (headers on,
    no comment lines before VTK 9.5), a spreadsheet and ``csv.DictReader`` take. Round 45:
    a ``# title`` line came first, which ParaView read as the column names (and the real
    names as a row of data); the title is in the ``.npz`` / ``.vtu`` files' record."""
    names = list(columns)
    rows = np.column_stack([np.asarray(columns[k], float) for k in names])
    lines = [",".join(names)]
    lines += [",".join(f"{v:.9g}" for v in r) for r in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


def _finite(v):
    """``v`` with every NaN or infinity as None (JSON has no NaN: ``json.dumps`` writes a
    ``NaN`` that ``JSON.parse`` and strict readers refuse)."""
    if isinstance(v, dict):
        return {str(k): _finite(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_finite(x) for x in v]
    if isinstance(v, np.ndarray):
        return _finite(v.tolist())
    if isinstance(v, (float, np.floating)):
        return float(v) if np.isfinite(v) else None
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.bool_):
        return bool(v)
    return v


def save_flow(path, *, mesh, point_data: dict, field_data: dict, surface: dict,
              record: dict, title: str, format: str | None = None,
              history: dict | None = None, no_history: str = NO_HISTORY) -> Path:
    """Write one flow solve to ``path`` in the format its suffix (or ``format``) names;
    ``history`` (``{name: (steps,) array}``, ``t`` first) is what ``csv-history`` writes and
    ``.npz`` holds as ``history_<name>``."""
    path = Path(path)
    fmt = _format(path, format)
    if fmt == "csv-history":
        if not history or len(np.asarray(history.get("t", ()))) == 0:
            raise ValueError(no_history)
        return _csv(path, history)
    if fmt == "json":
        if path.parent and not path.parent.exists():
            raise FileNotFoundError(f"no folder {str(path.parent)!r} to write {path.name!r} in")
        path.write_text(json.dumps(_finite(record), indent=1, allow_nan=False) + "\n")
        return path
    if fmt == "csv":
        if not surface:
            raise ValueError("this result has no surface values to write as CSV")
        return _csv(path, surface)
    if mesh is None or not point_data:
        raise ValueError("this result kept no fields (solved with keep=False or "
                         "keep_fields=False): solve it again keeping them to save the flow; "
                         "its surface is still written to a .csv")
    p, t = mesh
    if path.parent and not path.parent.exists():
        raise FileNotFoundError(f"no folder {str(path.parent)!r} to write {path.name!r} in")
    if fmt == "npz":
        np.savez(path, points=np.asarray(p, float), triangles=np.asarray(t, np.int64),
                 **{k: np.asarray(v, float) for k, v in point_data.items()},
                 **{f"history_{k}": np.asarray(v, float) for k, v in (history or {}).items()},
                 record=np.array(json.dumps(record)))
        return path if path.suffix == ".npz" else path.with_name(path.name + ".npz")
    if fmt.startswith("vtu"):
        return write_vtu(path, p, t, point_data, field_data, binary=fmt == "vtu")
    return write_vtk_unstructured(path, p, t, point_data, field_data, binary=fmt == "vtk",
                                  title=title)


def _steady_row(result) -> dict:
    """What a steady end has for a history CSV: one row, ``t`` NaN (no time was marched),
    the steady ``cd, cl`` (and a cylinder's ``dp``), the unsteady files' columns."""
    values = getattr(result, "values", None) or {"cd": result.cd, "cl": result.cl}
    return {"t": np.array([np.nan]),
            **{k: np.array([float(values[k])]) for k in ("cd", "cl", "dp") if k in values}}


def _say(note: str, reporter) -> None:
    """The save's problem in the job's log, its record and as a warning (the CLI's
    ``skiff: warning:`` line; a notebook's warning)."""
    reporter.log(note, level="warning")
    reporter.info(save_warning=note)
    warnings.warn(note, UserWarning, stacklevel=3)


def save_in_job(result, path, reporter) -> Path | None:
    """A job's ``--save``: ``result.save(path)`` kept as the artifact ``flow``. The solve's
    result is never lost to it (round 47, h19: ``--flow auto`` that ended steady with
    ``--save x.history.csv`` failed the job after the solve): a history CSV of a run that
    ended steady is one row (:func:`_steady_row`), said as a warning; a file that cannot be
    written (a folder gone since the launch, a full disk, a format this result lacks) is a
    warning in the log and the record (``save_warning``), and the job goes on. Returns the
    path written, or None (the problem said in the log, the record and a warning)."""
    import dataclasses

    try:
        note = None
        if not getattr(result, "history", None) and \
                _format(Path(path), None) == "csv-history":
            row = _steady_row(result)
            what = (f"case {result.case}" if hasattr(result, "case") else
                    "the nose (Newton converged: --flow auto marches in time only where it "
                    "does not; --flow unsteady always does)")
            note = (f"--save {path}: {what} ended steady (no time history): wrote its "
                    "steady values as one row, t nan (no time was marched), "
                    + ", ".join(f"{k} {v[0]:.6g}" for k, v in row.items() if k != "t"))
            result = dataclasses.replace(result, history=row)
        written = result.save(path)
    except (ValueError, OSError) as exc:
        note = (f"--save {path} not written: {exc}. The solve's result is kept (the run's "
                "record and plots); save it again from the result (result.save(...))")
        _say(note, reporter)
        return None
    if note:
        _say(note, reporter)
    reporter.artifact("flow", written, kind="file")
    return written
