"""``generate`` answers in the type it was asked in, as transformers does for its users.

A transformers script passes torch ids (``tok(..., return_tensors="pt")``) and goes on with
torch: ``torch.cat([ids, out], -1)``, ``out[0].tolist()``, ``tok.batch_decode(out)``. skiff
generates on host arrays; :func:`torch_like_output` wraps ``generate`` so that torch input
(``input_ids``, ``inputs``, a list of torch rows, or ``inputs_embeds``) gives torch output
on the input's device: the ids, and in a :class:`~.ernie_generate_options.GenerateOutput`
every array (scores, logits, hidden states, attentions, beam scores) in its tuples. numpy
or list input keeps numpy output. The key/value cache is returned as it is.
"""

from __future__ import annotations

import functools

import numpy as np

__all__ = ["torch_like_output", "is_torch_tensor"]


def is_torch_tensor(x) -> bool:
    return type(x).__module__.startswith("torch") and hasattr(x, "numpy") \
        and hasattr(x, "device")


def _torch_input(input_ids, options):
    """The torch tensor the prompt was given as (its device decides the output's), or None."""
    x = input_ids if input_ids is not None else options.get("inputs")
    if x is None:
        x = options.get("inputs_embeds")
    if isinstance(x, (list, tuple)) and x:
        x = x[0]
    return x if is_torch_tensor(x) else None


def _to_torch(x, device):
    from .ernie_generate_options import GenerateOutput

    if isinstance(x, np.ndarray):
        import torch

        return torch.from_numpy(np.ascontiguousarray(x)).to(device)
    if isinstance(x, GenerateOutput):
        return GenerateOutput({k: _to_torch(v, device) for k, v in x.items()})
    if isinstance(x, tuple):
        return tuple(_to_torch(v, device) for v in x)
    if isinstance(x, list):
        return [_to_torch(v, device) for v in x]
    return x


def torch_like_output(generate):
    """Wrap a ``generate(self, input_ids=None, ...)`` method: torch in, torch out."""

    @functools.wraps(generate)
    def wrapped(self, input_ids=None, *args, **options):
        out = generate(self, input_ids, *args, **options)
        like = _torch_input(input_ids, options)
        return out if like is None else _to_torch(out, like.device)

    return wrapped
