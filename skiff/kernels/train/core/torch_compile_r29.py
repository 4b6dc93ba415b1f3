"""The first lines of many torch scripts, made to run: ``torch.compile(model)`` (and
``@torch.compile(...)``) returns the model or function unchanged (skiff has no graph
compiler: its fused nodes already run), ``torch.jit.script``/``trace``/``ignore``/``unused``
likewise (``jit.save``/``load`` say what to use instead), and ``torch.backends``: the flags
scripts set (``cudnn.benchmark``, ``cudnn.deterministic``, ``cuda.matmul.allow_tf32``, ...)
are recorded and change nothing; ``cudnn.is_available()``/``cuda.is_built()`` tell whether
skiff sees a GPU, ``mps.is_available()`` is False."""

from __future__ import annotations

import types

__all__ = ["compile", "jit", "backends"]


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor",  # noqa: A001
            mode=None, options=None, disable=False):
    """torch's ``compile``: the model or function itself (a decorator when called without)."""
    if model is None:
        return lambda m: m
    if not callable(model):
        raise TypeError(f"compile: expected a module or a function, got {type(model).__name__}")
    return model


def _identity(obj=None, *args, **kwargs):
    if obj is None:
        return lambda o: o
    return obj


def _trace(func, example_inputs=None, *args, **kwargs):
    return func


def _refuse(what):
    def fn(*args, **kwargs):
        raise NotImplementedError(f"torch.jit.{what}: skiff has no TorchScript; save the weights "
                                  "with skiff.save(model.state_dict(), path) and rebuild the "
                                  "model in Python")
    return fn


jit = types.SimpleNamespace(script=_identity, trace=_trace, ignore=_identity,
                            unused=_identity, export=_identity, is_scripting=lambda: False,
                            is_tracing=lambda: False, save=_refuse("save"), load=_refuse("load"),
                            ScriptModule=type("ScriptModule", (), {}))


def _gpu():
    try:
        from skiff.kernels.backend.devices import gpu_available

        return bool(gpu_available())
    except Exception:  # noqa: BLE001 - no device layer: no GPU
        return False


backends = types.SimpleNamespace(
    cudnn=types.SimpleNamespace(enabled=True, benchmark=False, deterministic=False,
                                allow_tf32=True, is_available=_gpu, version=lambda: None),
    cuda=types.SimpleNamespace(matmul=types.SimpleNamespace(allow_tf32=False,
                                                            allow_fp16_reduced_precision_reduction=True,
                                                            allow_bf16_reduced_precision_reduction=True),
                               is_built=_gpu, enable_flash_sdp=lambda enabled: None,
                               enable_mem_efficient_sdp=lambda enabled: None,
                               enable_math_sdp=lambda enabled: None),
    mps=types.SimpleNamespace(is_available=lambda: False, is_built=lambda: False),
    mkldnn=types.SimpleNamespace(enabled=True, is_available=lambda: False),
    opt_einsum=types.SimpleNamespace(enabled=True, strategy="auto",
                                     is_available=lambda: True),
)
