"""Where the flow solver's linear solves run (issue 12): the unsteady cases' stepper takes a
device (its three solves go through skiff's Solver, which runs on cupy); the steady cases'
sparse direct Newton solves are CPU only, refused on a GPU with one line."""

import pytest

from skiff.kernels.solve.flow import MIN_RESOLUTION, run_case
from skiff.kinds.solve import _cylinder_config


def _config(case, device=None):
    # what the grammar hands over (it has already checked that the device exists here)
    values = {"problem": "cylinder", "case": case}
    if device is not None:
        values["device"] = device
    return _cylinder_config(values)


def test_a_steady_case_on_a_gpu_is_refused_with_one_line():
    with pytest.raises(ValueError, match=r"case 2d-1 is steady: .* CPU only"):
        run_case("2d-1", resolution=MIN_RESOLUTION, device="cuda:0")
    with pytest.raises(ValueError, match=r"case 2d-1 is steady: .* CPU only"):
        _config("2d-1", "cuda")


def test_the_device_reaches_the_unsteady_config():
    assert _config("2d-2", "cuda:0")["device"] == "cuda:0"
    assert _config("2d-2", "cpu")["device"] == "cpu"
    assert _config("2d-2")["device"] == "cpu"        # auto: assembly is on the CPU anyway
    assert _config("2d-3", "auto")["device"] == "cpu"


def test_the_stepper_on_the_cpu_names_its_device():
    res = run_case("2d-2", resolution=MIN_RESOLUTION, dt=0.02, t_end=0.06, keep_fields=False,
                   device="cpu")
    assert res.steps == 3
    assert res.method.endswith("on cpu")


@pytest.mark.gpu
def test_unsteady_steps_on_the_gpu_equal_the_cpu_twin():
    """The same short march of DFG 2D-2 with the linear solves on the GPU and on the CPU: the
    drag and lift histories agree to the solves' tolerance."""
    import numpy as np

    kw = dict(resolution=MIN_RESOLUTION, dt=0.01, t_end=0.1, keep_fields=False)
    cpu = run_case("2d-2", device="cpu", **kw)
    gpu = run_case("2d-2", device="cuda:0", **kw)
    assert gpu.method.endswith("cuda:0") or "cuda" in gpu.method
    for key in ("cd", "cl"):
        np.testing.assert_allclose(gpu.history[key], cpu.history[key], rtol=1e-5, atol=1e-7)
