"""Round 38: torch's ``nn.utils.skip_init``, the deprecated ``nn.utils.clip_grad_norm``,
``nn.utils.stateless.functional_call``, ``torch.func.replace_all_batch_norm_modules_``,
and ``nn.RNNBase``/``nn.RNNCellBase`` (the recurrent layers' and cells' bases, for
``isinstance`` checks in ported code)."""

from __future__ import annotations

import warnings
from types import SimpleNamespace

from .conv import BatchNorm2d
from .recurrent import _Recurrent as RNNBase
from .rnn_cells import _Cell as RNNCellBase
from .utils import clip_grad_norm_

__all__ = ["skip_init", "clip_grad_norm", "stateless", "replace_all_batch_norm_modules_",
           "RNNBase", "RNNCellBase"]


def skip_init(module_cls, *args, **kwargs):
    """torch's ``skip_init``: the module built without running its initialization in torch
    (its values unspecified); skiff builds it as usual (the same shapes and dtype)."""
    import inspect

    params = inspect.signature(module_cls.__init__).parameters
    device = kwargs.pop("device", None) if "device" not in params else None
    module = module_cls(*args, **kwargs)
    return module.to(device) if device is not None else module


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False,
                   foreach=None):
    """torch's deprecated ``clip_grad_norm`` (warns, then ``clip_grad_norm_``)."""
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`torch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def _functional_call(module, parameters_and_buffers, args=None, kwargs=None, *,
                     tie_weights=True, strict=False):
    """torch's deprecated ``nn.utils.stateless.functional_call`` (warns, then
    ``func.functional_call``)."""
    from ..func_r29 import functional_call

    warnings.warn("`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 "
                  "and will be removed in a future version of PyTorch. Please use "
                  "`torch.func.functional_call` instead which is a drop-in replacement.",
                  FutureWarning, stacklevel=2)

    return functional_call(module, parameters_and_buffers, args, kwargs,
                           tie_weights=tie_weights, strict=strict)


stateless = SimpleNamespace(functional_call=_functional_call)


def replace_all_batch_norm_modules_(root):
    """torch's: every batch norm in ``root`` without running statistics (``running_mean``,
    ``running_var``, ``num_batches_tracked`` None, ``track_running_stats`` False), so
    ``vmap`` over it uses each sample's batch statistics."""
    for m in root.modules():
        if isinstance(m, BatchNorm2d) and m.track_running_stats:
            m.running_mean = m.running_var = m.num_batches_tracked = None
            m.track_running_stats = False
    return root
