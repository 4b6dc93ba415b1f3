"""Round 37 (h7): a cancel lands inside an AMG setup (``cancel.checking`` / ``checkpoint``),
not after it (docs/solve.md "Round 37")."""

import traceback

import numpy as np
import pytest
import scipy.sparse as sp

import skiff
from skiff.kernels.backend.report import JobCancelled, Reporter
from skiff.kernels.solve import Solver
from skiff.kernels.solve.cancel import checking, checkpoint
from skiff.kernels.solve.entry import solve_system


class StopAt(Reporter):
    """Asked to stop from its ``after``-th check on; counts the checks."""

    def __init__(self, after):
        self.after, self.checks = after, 0

    def should_stop(self):
        self.checks += 1
        return self.checks >= self.after


def _poisson3(n=24):
    e = np.ones(n)
    D = sp.diags([-e, 2 * e, -e], [-1, 0, 1], (n, n))
    I = sp.identity(n)
    return (sp.kron(sp.kron(D, I), I) + sp.kron(sp.kron(I, D), I)
            + sp.kron(sp.kron(I, I), D)).tocsr()


def _raised_in(exc_info, name):
    return any(f.filename.endswith(name) for f in traceback.extract_tb(exc_info.tb))


@pytest.mark.parametrize("amg, where", [("sa", "amg.py"), ("classical", "amg_rs.py")])
def test_a_cancel_during_the_setup_stops_it_there(amg, where):
    A = _poisson3()
    b = np.ones(A.shape[0])
    r = StopAt(2)   # the setup's second checkpoint
    with pytest.raises(JobCancelled) as exc:
        skiff.solve(A, b, method="cg", precond="amg", amg=amg, reporter=r)
    assert _raised_in(exc, where) and r.checks == 2
    assert getattr(exc.value, "x", None) is None   # no iterate yet: nothing kept
    r = StopAt(3)   # the job's path (entry.solve_system) too
    with pytest.raises(JobCancelled) as exc:
        solve_system(A, b, {"method": "cg", "precond": "amg", "amg": amg}, r)
    assert _raised_in(exc, where)


def test_without_a_cancel_the_solve_is_unchanged_and_checkpoints_outside_do_nothing():
    A = _poisson3(12)
    b = np.ones(A.shape[0])
    r = StopAt(10 ** 9)
    sol = skiff.solve(A, b, method="cg", precond="amg", amg="sa", reporter=r)
    ref = Solver(A, method="cg", precond="amg", amg="sa").solve(b)
    assert sol.converged and np.array_equal(sol.x, ref.x) and r.checks > sol.iterations
    checkpoint()   # no checking() block: nothing to call
    with checking(None):
        checkpoint()
