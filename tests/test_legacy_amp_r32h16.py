"""Round 32 (h16): torch's old AMP spellings ``torch.cuda.amp.GradScaler`` /
``torch.cuda.amp.autocast`` / ``torch.cpu.amp.autocast`` / ``torch.cpu.amp.GradScaler`` reach
skiff as ``skiff.cuda.amp.*`` / ``skiff.cpu.amp.*`` (and ``from skiff.cuda.amp import ...``),
each warning a FutureWarning and acting as the new spelling, as torch 2.13 does (this
machine has no CUDA: torch and skiff both disable the cuda ones)."""

import warnings

import pytest

import skiff

torch = pytest.importorskip("torch")


def _caught(make):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        obj = make()
    return obj, [x.category for x in w]


def test_cuda_amp_grad_scaler_as_torch():
    from skiff.cuda.amp import GradScaler

    ours, ours_w = _caught(lambda: GradScaler(init_scale=8.0, growth_interval=3))
    theirs, theirs_w = _caught(lambda: torch.cuda.amp.GradScaler(init_scale=8.0,
                                                                 growth_interval=3))
    assert FutureWarning in ours_w and FutureWarning in theirs_w
    assert isinstance(ours, skiff.amp.GradScaler) and ours.device == "cuda"
    assert ours.is_enabled() == theirs.is_enabled()
    assert ours.state_dict() == theirs.state_dict()
    assert skiff.cuda.amp.GradScaler is GradScaler


def test_cpu_amp_grad_scaler_as_torch():
    ours, ours_w = _caught(lambda: skiff.cpu.amp.GradScaler(init_scale=8.0, growth_interval=3))
    theirs, theirs_w = _caught(lambda: torch.cpu.amp.GradScaler(init_scale=8.0,
                                                                growth_interval=3))
    assert FutureWarning in ours_w and FutureWarning in theirs_w
    assert ours.is_enabled() == theirs.is_enabled() is True
    assert ours.get_scale() == theirs.get_scale() == 8.0
    assert ours.state_dict() == theirs.state_dict()


def test_cpu_amp_autocast_as_torch():
    from skiff.cpu.amp import autocast

    ours, ours_w = _caught(lambda: autocast())
    theirs, theirs_w = _caught(lambda: torch.cpu.amp.autocast())
    assert FutureWarning in ours_w and FutureWarning in theirs_w
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with ours, theirs:
            assert skiff.is_autocast_enabled("cpu") == torch.is_autocast_enabled("cpu") is True
            assert str(skiff.get_autocast_dtype("cpu")).split(".")[-1] == \
                str(torch.get_autocast_dtype("cpu")).split(".")[-1] == "bfloat16"
        with autocast(dtype=skiff.float16), torch.cpu.amp.autocast(dtype=torch.float16):
            assert str(skiff.get_autocast_dtype("cpu")).split(".")[-1] == "float16"
        assert skiff.is_autocast_enabled("cpu") == torch.is_autocast_enabled("cpu") is False


def test_cuda_amp_autocast_warns_and_is_skiffs():
    ours, ours_w = _caught(lambda: skiff.cuda.amp.autocast(dtype=skiff.bfloat16))
    _, theirs_w = _caught(lambda: torch.cuda.amp.autocast(dtype=torch.bfloat16))
    assert FutureWarning in ours_w and FutureWarning in theirs_w
    assert isinstance(ours, skiff.amp.autocast) and ours.device_type == "cuda"
    assert ours.fast_dtype == "bfloat16"


def test_cpu_module_calls_as_torch():
    assert skiff.cpu.is_available() == torch.cpu.is_available()
    assert skiff.cpu.device_count() == torch.cpu.device_count()
    assert skiff.cpu.current_device() == torch.cpu.current_device()
    assert "cpu" in dir(skiff)
