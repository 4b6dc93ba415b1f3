"""Round 44 (h26): ILUT's options from the command line and ``%solve`` (``--drop-tol``,
``--fill-factor``, ``--reorder rcm|none`` with ``--precond ilut``; SciPy spilu's names).
Oracles: ``spsolve`` for x; the drop tolerance must change the iterations the way SciPy's
``spilu`` + ``gmres`` do (a tighter one, fewer), and the job must run what
``precond=('ilut', {...})`` runs."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.io as sio
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from skiff.jobs import submit
from skiff.kinds.solve import KIND


def _anisotropic(m=30, eps=1e-3):
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(m, m))
    return (sp.kron(sp.identity(m), T) + eps * sp.kron(T, sp.identity(m))).tocsr()


def _spilu_iterations(A, b, drop_tol):
    M = spla.spilu(A.tocsc(), drop_tol=drop_tol)
    count = [0]
    spla.gmres(A, b, M=spla.LinearOperator(A.shape, M.solve), rtol=1e-10, restart=30,
               callback=lambda r: count.__setitem__(0, count[0] + 1), callback_type="pr_norm")
    return count[0]


def test_drop_tol_from_the_command_line_changes_the_iterations(runs_dir, tmp_path):
    A = _anisotropic()
    b = np.random.default_rng(3).standard_normal(A.shape[0])
    sio.mmwrite(str(tmp_path / "A.mtx"), A)
    np.save(tmp_path / "b.npy", b)
    ref = spla.spsolve(A.tocsc(), b)
    its = {}
    for tol in (1e-1, 1e-6):
        job, _ = submit("solve", f"{tmp_path / 'A.mtx'} {tmp_path / 'b.npy'} --method gmres "
                        f"--precond ilut --drop-tol {tol} --rtol 1e-10", front="cli")
        assert job.wait(120).status == "done", job.error
        assert job.config["ilut_options"] == {"drop_tol": tol}
        x = np.asarray(job.value.x).ravel()
        assert np.linalg.norm(x - ref) <= 1e-8 * np.linalg.norm(ref)
        its[tol] = job.value.iterations
        summary = "\n".join(KIND.summary_of(job, job.result))
        assert f"gmres + ilut on cpu (drop_tol {tol:g}, fill_factor 10, RCM order)" in summary
    # the peer: spilu's iterations fall as its drop tolerance tightens, and so must these
    assert _spilu_iterations(A, b, 1e-6) < _spilu_iterations(A, b, 1e-1)
    assert its[1e-6] < its[1e-1], its


def test_percent_solve_takes_them_with_reorder(runs_dir):
    from skiff.kernels.solve import Solver

    A = _anisotropic(20)
    b = np.ones(A.shape[0])
    job, _ = submit("solve", "A b --method gmres --precond ilut --drop-tol 0.05 "
                    "--fill-factor 2 --reorder none", user_ns={"A": A, "b": b}, front="magic")
    assert job.wait(120).status == "done", job.error
    assert job.config["ilut_options"] == {"drop_tol": 0.05, "fill_factor": 2.0,
                                          "reorder": None}
    want = Solver(A, method="gmres", precond=("ilut", {"drop_tol": 0.05, "fill_factor": 2,
                                                       "reorder": None})).solve(b)
    assert job.value.iterations == want.iterations
    x = np.asarray(job.value.x).ravel()
    ref = spla.spsolve(A.tocsc(), b)
    assert np.linalg.norm(x - ref) <= 1e-7 * np.linalg.norm(ref)


@pytest.mark.parametrize("words, needle", [
    ("{A} --precond ilu --drop-tol 1e-3", "--drop-tol is ILUT's (SciPy's spilu drop_tol), and "
                                          "the preconditioner is 'ilu': add --precond ilut"),
    ("{A} --fill-factor 5", "--fill-factor is ILUT's (SciPy's spilu fill_factor), and the "
                            "preconditioner is 'auto'"),
    ("{A} --precond ilut --fill-factor 0.5", "--precond ilut: ILUT's fill_factor must be >= 1"),
    ("{A} --precond ilut --drop-tol 2", "--precond ilut: ILUT's drop_tol must be in [0, 1)"),
])
def test_ilut_flags_elsewhere_are_one_line_before_a_job(words, needle, runs_dir, tmp_path):
    sp.save_npz(tmp_path / "A.npz", _anisotropic(6))
    with pytest.raises(ValueError) as err:
        submit("solve", words.format(A=tmp_path / "A.npz"), front="cli")
    assert needle in str(err.value) and "\n" not in str(err.value), str(err.value)
    assert not runs_dir.exists() or not any(runs_dir.rglob("job.json")), "a job was made"


def test_help_and_the_panel_show_them(runs_dir, tmp_path):
    from skiff.kinds.solve import COMMAND
    from skiff.widgets.panels import solve_form

    text = " ".join(COMMAND.parser().format_help().split())
    assert "--drop-tol" in text and "--fill-factor" in text and "--precond ilut" in text
    sp.save_npz(tmp_path / "A.npz", _anisotropic(6))
    form = solve_form()
    assert "drop_tol" in form.fields and "fill_factor" in form.fields, sorted(form.fields)
    form.set(problem=str(tmp_path / "A.npz"), precond="ilut", drop_tol="1e-6")
    assert form.errors == {} and not form.launch_button.disabled, form.errors
    assert "--precond ilut --drop-tol 1e-06" in form.magic_line.value, form.magic_line.value
    form.set(precond="ilu")   # the form says why, and will not launch
    assert "--drop-tol is ILUT's" in " ".join(form.errors.values()), form.errors
    assert form.launch_button.disabled


def test_with_the_users_own_m_it_names_m(runs_dir):
    A = _anisotropic(6)
    M = spla.spilu(A.tocsc())
    with pytest.raises(ValueError) as err:
        submit("solve", "A b --precond M --drop-tol 1e-3",
               user_ns={"A": A, "b": np.ones(A.shape[0]), "M": M})
    assert "--drop-tol is ILUT's (SciPy's spilu drop_tol), and the preconditioner is 'M'" \
        in str(err.value), str(err.value)
