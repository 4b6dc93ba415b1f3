"""Round 38: torch's ``nn.utils.skip_init``, the deprecated ``nn.utils.clip_grad_norm``,
``nn.utils.stateless.functional_call``, and ``nn.RNNBase``/``nn.RNNCellBase`` (the recurrent
layers' and cells' bases, for ``isinstance`` checks in ported code)."""

from __future__ import annotations

import warnings
from types import SimpleNamespace

from .recurrent import _Recurrent as RNNBase
from .rnn_cells import _Cell as RNNCellBase
from .utils import clip_grad_norm_

__all__ = ["skip_init", "clip_grad_norm", "stateless", "RNNBase", "RNNCellBase"]


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
