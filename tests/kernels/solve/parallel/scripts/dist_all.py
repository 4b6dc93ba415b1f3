"""Run on 2 ranks: ``dist_solve.py``, ``dist_minres.py``, ``dist_gmres_cycles.py`` (on the 2
ranks, then on rank 0 alone as MPI.COMM_SELF) and, given a folder, ``rows_mpi.py``, in one
launch (round 43: four mpiexec runs and a one-rank one, each importing skiff on every rank,
took 16.5 CPU s); one ``RESULT {json}`` line per rank: ``{"rank", "solve", "minres",
"gmres", "gmres_one"}`` (the scripts' own results; ``gmres_one`` on rank 0 only)."""

import contextlib
import io
import json
import runpy
import sys
from pathlib import Path

from mpi4py import MPI

HERE = Path(__file__).parent
world = MPI.COMM_WORLD


ROWS = sys.argv[1:]
del sys.argv[1:]   # dist_solve.py reads its argv as the cases to run


def part(script, **init):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        runpy.run_path(str(HERE / script), init_globals=init, run_name="dist_part")
    text = buf.getvalue()
    return json.loads(text[text.index("RESULT ") + len("RESULT "):].splitlines()[0])


out = {"rank": world.Get_rank(), "solve": part("dist_solve.py"),
       "minres": part("dist_minres.py"), "gmres": part("dist_gmres_cycles.py")}
if ROWS:   # rows_mpi.py: each rank's x of the row split to ROWS[0]/rank<r>.npz
    sys.argv[1:] = ROWS
    runpy.run_path(str(HERE / "rows_mpi.py"), run_name="dist_part")
world.Barrier()
if world.Get_rank() == 0:
    out["gmres_one"] = part("dist_gmres_cycles.py", COMM=MPI.COMM_SELF)
print("RESULT " + json.dumps(out), flush=True)
