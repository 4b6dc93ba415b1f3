"""Imported by the MPI test scripts: an uncaught error on one rank aborts every rank at once
(instead of leaving the others waiting in a collective until the test's timeout)."""

import sys
import traceback


def _hook(exc_type, exc, tb):
    traceback.print_exception(exc_type, exc, tb)
    sys.stderr.flush()
    try:
        from mpi4py import MPI

        if MPI.COMM_WORLD.Get_size() > 1:
            MPI.COMM_WORLD.Abort(1)
    except Exception:
        pass


sys.excepthook = _hook
