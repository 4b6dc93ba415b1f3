"""torch's top-level anomaly flags (``torch.is_anomaly_enabled``,
``torch.is_anomaly_check_nan_enabled``) read the same as skiff's through torch's ways of
setting them: the default, ``set_detect_anomaly(True, check_nan=False)`` and
``detect_anomaly()``. The oracle is torch itself, read the same way."""
import warnings

import torch

import skiff


def _flags(lib):
    seen = [lib.is_anomaly_enabled(), lib.is_anomaly_check_nan_enabled()]
    with lib.autograd.set_detect_anomaly(True, check_nan=False):
        seen += [lib.is_anomaly_enabled(), lib.is_anomaly_check_nan_enabled()]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with lib.autograd.detect_anomaly():
            seen += [lib.is_anomaly_enabled(), lib.is_anomaly_check_nan_enabled()]
    return seen + [lib.is_anomaly_enabled(), lib.is_anomaly_check_nan_enabled()]


def test_top_level_anomaly_flags_read_as_torch():
    assert _flags(skiff) == _flags(torch)
