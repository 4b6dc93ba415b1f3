"""Several cases of a 2-rank check in one launch (round 43 h5: a launch each cost two
interpreters' imports and mpiexec's start, ~3 CPU s): ``single`` runs on rank 0 alone while
the other rank sleeps in a polled barrier (MPI's own spins a core), the others on every rank.
Each rank writes ``DIR/rank<r>.json``: ``{"rank": r, CASE: what run(CASE) gave, ...}`` (long
lines of two ranks interleave on mpiexec's pipe), and prints a short ``RESULT`` line."""

import json
import time
from pathlib import Path

from skiff.kernels.train.parallel import world


def idle_barrier():
    from mpi4py import MPI

    req = MPI.COMM_WORLD.Ibarrier()
    while not req.Test():
        time.sleep(0.005)


def run_cases(run, cases, folder):
    comm = world()
    out = {"rank": comm.rank}
    for case in cases:  # each case's results name the rank that gave them
        if case == "single":
            if comm.rank == 0:
                out[case] = {**run(case), "rank": 0}
            idle_barrier()
        else:
            out[case] = {**run(case), "rank": comm.rank}
    (Path(folder) / f"rank{comm.rank}.json").write_text(json.dumps(out))
    print("RESULT " + json.dumps({"rank": comm.rank}), flush=True)


def read_cases(folder, ranks=2) -> list[dict]:
    """What each rank wrote, by rank (the test's side)."""
    return [json.loads((Path(folder) / f"rank{r}.json").read_text()) for r in range(ranks)]
