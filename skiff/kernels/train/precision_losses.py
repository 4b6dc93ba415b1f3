"""Mixed precision's cast policy for losses: skiff's loss functions take 16-bit inputs in
float32 while a mixed-precision Trainer computes a loss, as ``torch.autocast`` runs
cross_entropy, nll_loss, log_softmax, mse_loss, l1_loss, kl_div, the BCEs and the other
``*_loss`` functions in float32 whoever calls them.

The Trainer's float32 cast of the model's outputs (:meth:`.precision.MixedTraining.float32_loss`)
reaches a loss the Trainer computes; a model that computes its loss itself, inside ``forward``
(HF style, ``model(x, labels=y)``) or in a helper, took it in 16 bits: its backward seeded the
fp16 loss scale 2^16 in float16 (inf), so every fp16-mixed run skipped its first step. Under
:class:`Float32Losses` each loss function bound in a loaded module (``F.cross_entropy``,
``nn.CrossEntropyLoss`` through it, ``x.log_softmax()``, a user's
``from skiff.nn.functional import mse_loss``) casts its 16-bit Tensor arguments to float32
first (a differentiable cast: the gradient flows back into the 16-bit activations).
"""

from __future__ import annotations

import sys
import sysconfig
import threading

__all__ = ["Float32Losses", "float32_loss_names"]

# where installed packages and the standard library live (their modules are not the user's)
_INSTALLED = tuple({p for key in ("stdlib", "platstdlib", "purelib", "platlib")
                    if (p := sysconfig.get_paths().get(key))} | {sys.base_prefix, sys.prefix})

# torch.autocast's float32 list, the loss part (log_softmax: what cross-entropy is made of)
_NAMES = ("cross_entropy", "nll_loss", "log_softmax", "kl_div", "binary_cross_entropy",
          "binary_cross_entropy_with_logits")


def float32_loss_names() -> tuple:
    """The names in skiff's ``nn.functional`` that run in float32 under the policy."""
    from .core.nn import functional as F

    extra = sorted(n for n in dir(F) if n.endswith("_loss") and callable(getattr(F, n)))
    return tuple(n for n in _NAMES if callable(getattr(F, n, None))) + tuple(
        n for n in extra if n not in _NAMES)


def _is_16_bit_tensor(value) -> bool:
    # precision.is_16_bit's test, kept here (precision.py imports this file)
    return hasattr(value, "_data") and hasattr(value, "astype") and \
        str(getattr(value.dtype, "name", value.dtype)) in ("float16", "bfloat16")


def _float32(value):
    return value.astype("float32") if _is_16_bit_tensor(value) else value


def _in_float32(fn):
    def float32_fn(*args, **kwargs):
        return fn(*(_float32(a) for a in args), **{k: _float32(v) for k, v in kwargs.items()})

    float32_fn.__wrapped__ = fn
    float32_fn.__name__ = getattr(fn, "__name__", "loss")
    float32_fn.__doc__ = getattr(fn, "__doc__", None)
    return float32_fn


class Float32Losses:
    """``with policy:`` every loaded module's binding of a loss function (the very function
    skiff's ``nn.functional`` holds) is its float32 version; restored on exit. The bindings
    are found when the policy is made (a Trainer makes one per ``train``/``evaluate``, so a
    notebook's later ``from ... import`` is seen at the next run). Re-entrant and shared by
    threads: the first ``with`` in patches, the last out restores."""

    _lock = threading.RLock()
    _depth = 0
    _active: list = []

    def __init__(self):
        from .core.nn import functional as F

        originals = {n: getattr(F, n) for n in float32_loss_names()}
        by_id = {id(f): n for n, f in originals.items()}
        self.slots = []  # (module dict, name, original, float32 version)
        wrapped = {n: _in_float32(f) for n, f in originals.items()}
        for module_name, module in list(sys.modules.items()):
            space = getattr(module, "__dict__", None)
            if not isinstance(space, dict):
                continue
            # skiff's modules and the user's (a notebook, a script, its own modules): any
            # name (an alias, "as ce"); installed packages (torch, transformers, ...: 1,400
            # modules, 170 ms read whole): the functions' own names only (3 ms)
            whole = module_name.startswith("skiff") or not str(
                getattr(module, "__file__", None) or "").startswith(_INSTALLED)
            keys = list(space) if whole else [n for n in originals if n in space]
            for key in keys:
                value = space.get(key)
                name = by_id.get(id(value))
                if name is not None and value is originals[name]:
                    self.slots.append((space, key, value, wrapped[name]))

    def __enter__(self):
        cls = type(self)
        with cls._lock:  # held for the patching only: a loss on another thread may wait on this
            if cls._depth == 0:
                for space, key, original, float32_fn in self.slots:
                    if space.get(key) is original:
                        space[key] = float32_fn
                cls._active = self.slots
            cls._depth += 1
        return self

    def __exit__(self, *exc):
        cls = type(self)
        with cls._lock:
            cls._depth -= 1
            if cls._depth == 0:
                for space, key, original, float32_fn in cls._active:
                    if space.get(key) is float32_fn:
                        space[key] = original
                cls._active = []
        return False
