"""An option the chosen problem does not read is refused, not dropped (round 22 probes:
``poisson --re 100`` solved Poisson, ``train-nose --grid 64x64 --method mg`` ignored both), and
a cylinder run's terminal summary gives its values against the published bands (it printed
"? : Newton ... + ? on ?", "not converged: ?")."""

from __future__ import annotations

import pytest

from skiff.kinds.solve import COMMAND, SolveKind
from skiff.kinds.solve import to_config as solve_config


def _config(line: str) -> dict:
    return solve_config(vars(COMMAND.parse(line)), memory=False)


@pytest.mark.parametrize("line,needle", [
    ("poisson --grid 32x32 --re 100", "--re is an option of cylinder and train-nose"),
    ("poisson --grid 32x32 --length 3.5", "--length is an option of train-nose"),
    ("diffusion --grid 32x32 --case 2d-2", "--case is an option of cylinder"),
    ("poisson --grid 32x32 --contrast 10", "--contrast is an option of jump"),
    ("cylinder --grid 64x64", "--grid is not an option of problem 'cylinder'"),
    ("cylinder --case 2d-2 --method gmres", "--method is not an option"),
    ("train-nose --method mg", "--method is not an option of problem 'train-nose'"),
    ("train-nose --rtol 1e-6", "--rtol is not an option"),
    ("poisson --grid 32x32 --dt 0.01", "--dt is an option of cylinder and train-nose"),
    ("cylinder --case 2d-1 --t-end 1", "case 2d-1 is steady"),
    ("cylinder --adapt graded", "--adapt is an option of train-nose"),
])
def test_an_option_the_problem_does_not_read_is_refused(line, needle):
    with pytest.raises(ValueError, match=needle):
        _config(line)


@pytest.mark.parametrize("line", [
    "poisson --grid 32x32 --method gmres --precond amg --rtol 1e-6",
    "jump --grid 32x32 --contrast 10",
    "cylinder --case 2d-2 --re 100 --dt 0.01 --t-end 0.5 --resolution 24",
    "train-nose --length 4 --re 500 --adapt graded --resolution 20",
    "train-nose --t-end 60 --dt 0.01",
    "poisson --grid 256x256 --method cg",  # a default written out is not "another option"
])
def test_the_options_a_problem_reads_pass(line):
    assert _config(line)["problem"] == line.split()[0]


def test_cylinder_summary_gives_values_against_their_bands():
    from skiff.kernels.solve.flow import run_case

    result = run_case("2d-1", resolution=16, keep_fields=False).to_json()
    lines = SolveKind().summary(result)
    text = "\n".join(lines)
    assert "?" not in text and "not converged" not in text
    assert lines[0].startswith(f"cylinder 2d-1, Re 20: {result['cells']} cells")
    assert f"cd {result['cd']:.5g} (DFG 5.57-5.59" in text
    # and against the refined value (Schafer-Turek's later figures, the result's reference)
    from skiff.kernels.solve.flow.dfg import REFINED

    ref = REFINED["2d-1"]["cd"]
    err = 100 * (result["cd"] - ref) / abs(ref)
    assert f"refined {ref:.6g}, {err:+.2g}%" in text
    out = [k for k, inside in result["in_bands"].items() if not inside]
    assert text.count(": outside") == len(out)
    assert ("finer --resolution" in text) == bool(out)


def test_a_periodic_run_too_short_to_shed_says_so():
    from skiff.kernels.solve.flow import run_case

    result = run_case("2d-2", resolution=16, t_end=0.2, keep_fields=False).to_json()
    assert result.get("st") is None  # no period in the run
    text = "\n".join(SolveKind().summary(result))
    assert "no shedding period found by t = 0.2" in text
    assert "--t-end 5" in text
