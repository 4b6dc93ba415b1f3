import numpy as np
import pytest

from skiff.kernels.backend import (
    DeviceError,
    get_array_module,
    list_devices,
    resolve_device,
    to_device,
    to_numpy,
    xp_for,
)


def test_cpu_is_listed_with_memory_and_cores():
    devices = list_devices()
    cpu = devices[0]
    assert cpu.name == "cpu" and cpu.kind == "cpu"
    assert cpu.total_memory > 0 and 0 < cpu.free_memory <= cpu.total_memory
    assert cpu.cores >= 1
    assert all(d.is_gpu for d in devices[1:])


@pytest.mark.parametrize("spec", ["cpu", "CPU", " cpu "])
def test_cpu_spec(spec):
    assert resolve_device(spec).name == "cpu"


def test_auto_prefers_gpu():
    devices = list_devices()
    expected = devices[1] if len(devices) > 1 else devices[0]
    assert resolve_device("auto") == expected
    assert resolve_device(None) == expected


@pytest.mark.parametrize("spec", ["tpu", "cuda:x", "cuda:-1", ""])
def test_unknown_device_names_devices_here(spec):
    with pytest.raises(DeviceError, match=r"devices here: cpu"):
        resolve_device(spec)


def test_missing_gpu_index_is_one_line_error():
    n_gpus = len(list_devices()) - 1
    with pytest.raises(DeviceError) as err:
        resolve_device(f"cuda:{n_gpus + 3}")
    assert "\n" not in str(err.value) and "cuda:" in str(err.value)


def test_array_module_and_moves_on_cpu():
    x = np.arange(6.0).reshape(2, 3)
    assert get_array_module(x) is np
    assert xp_for("cpu") is np
    y = to_device(x, "cpu")
    np.testing.assert_array_equal(to_numpy(y), x)


@pytest.mark.gpu
def test_round_trip_through_gpu():
    x = np.random.default_rng(0).standard_normal((4, 5))
    g = to_device(x, "cuda:0")
    assert get_array_module(g) is not np
    np.testing.assert_array_equal(to_numpy(g), x)


def test_no_driver_files_means_no_cupy_import(tmp_path, monkeypatch):
    """Finding no GPU costs no cupy import where no driver made its device files."""
    import subprocess
    import sys

    from skiff.kernels.backend import devices as dev

    assert dev.gpu_device_files([str(tmp_path / "nvidiactl")]) is False
    (tmp_path / "nvidiactl").touch()
    assert dev.gpu_device_files([str(tmp_path / "nvidiactl")]) is True
    code = ("import sys; from skiff.kernels.backend import devices as d; "
            "d.GPU_DEVICE_FILES = ('/nonexistent/nvidiactl',); "
            "print(d.gpu_available(), 'cupy' in sys.modules)")
    env = {k: v for k, v in __import__("os").environ.items() if k != "SKIFF_PROBE_GPU"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env=env)
    assert out.stdout.split() == ["False", "False"]


def test_a_device_is_the_same_device_whatever_its_free_memory_was():
    """Free memory is read at each lookup; two lookups of the CPU are one device (a tensor
    made earlier stays on 'cpu': ``x.to('cpu') is x``; this compared unequal, now and then,
    when the machine's free memory moved between the two lookups)."""
    from dataclasses import replace

    import numpy as np

    from skiff.kernels.backend.devices import resolve_device
    from skiff.kernels.train.core.tensor import Tensor

    cpu = resolve_device("cpu")
    other = replace(cpu, free_memory=cpu.free_memory + 12345)
    assert other == cpu and hash(other) == hash(cpu)
    assert replace(cpu, name="cuda:0", kind="gpu") != cpu
    x = Tensor(np.ones(2, np.float32))
    assert x.to(other) is x


def test_device_of_asks_for_the_devices_once(monkeypatch):
    """A tensor asks its device at every step; on a virtualised GPU listing the devices costs
    ~13 ms (driver calls), so device_of answers from a cache after the first question."""
    import numpy as np

    from skiff.kernels.backend import arrays, devices

    calls = []
    real = devices.list_devices
    monkeypatch.setattr(devices, "list_devices", lambda: calls.append(1) or real())
    arrays._known_device.cache_clear()
    first = arrays.device_of(np.zeros(3))
    for _ in range(5):
        assert arrays.device_of(np.ones(2)) is first
    assert first.name == "cpu" and len(calls) == 1
    arrays._known_device.cache_clear()
