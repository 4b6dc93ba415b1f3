"""The keywords a transformers user passes to ``from_pretrained`` (round 41, h6), read for
skiff's ``from_pretrained(path, dtype, device)``:

* ``torch_dtype`` (transformers 4's name of ``dtype``; a torch dtype or its name): the
  dtype; both given and different is one error;
* ``device_map``: ``"auto"`` / ``"cpu"`` / a device name or index, or ``{"": device}`` (the
  whole model on one device) is the device; a map that splits the layers (offloading) is
  one error: skiff holds a model on one device;
* ``trust_remote_code``, ``low_cpu_mem_usage``, ``use_safetensors``, ``local_files_only``,
  ``attn_implementation`` (``eager`` / ``sdpa`` / ``flash_attention_2`` /
  ``flex_attention``: the same attention, computed here one way), ``revision``,
  ``cache_dir``, ``force_download``, ``token``: nothing to do for a local folder read by
  skiff's own model;
* ``quantization_config``, ``load_in_8bit``, ``load_in_4bit`` (bitsandbytes' int8 /
  4-bit weights, QLoRA's base): one error saying why. skiff's models compute in numpy /
  cupy, which have no int8 or 4-bit matrix product; weights stored in 8 or 4 bits would
  be widened to float32 for every product (each decode step reading and converting every
  weight once more: slower than float32, the memory saved only at rest), and there is no
  oracle here to hold them to (bitsandbytes runs on CUDA only). ``dtype="bfloat16"``
  halves the memory of float32 and LoRA trains on it.

Any other keyword is a ``TypeError`` naming it, as an unknown argument is.
"""

from __future__ import annotations

__all__ = ["read_keywords"]

HARMLESS = ("trust_remote_code", "low_cpu_mem_usage", "use_safetensors", "local_files_only",
            "revision", "cache_dir", "force_download", "token", "attn_implementation")
ATTENTION = (None, "eager", "sdpa", "flash_attention_2", "flex_attention")
LOW_BIT = ("quantization_config", "load_in_8bit", "load_in_4bit")


def _device_of(device_map):
    if device_map is None:
        return None
    if isinstance(device_map, dict):
        places = set(device_map.values())
        if list(device_map) == [""] or len(places) == 1:
            return _device_of(places.pop())
        raise ValueError(f"device_map splits the model over {sorted(map(str, places))}: "
                         "skiff holds a model on one device (device='cuda:0', 'cpu' or "
                         "'auto')")
    if isinstance(device_map, int) and not isinstance(device_map, bool):
        return f"cuda:{device_map}"
    name = str(device_map)
    if name in ("balanced", "balanced_low_0", "sequential"):
        return "auto"
    return name


def read_keywords(kwargs: dict, dtype, device):
    """``(dtype, device)`` with transformers' keywords of ``kwargs`` applied (module
    docstring)."""
    kwargs = dict(kwargs)
    low = [k for k in LOW_BIT if kwargs.get(k) not in (None, False)]
    if low:
        raise ValueError(
            f"from_pretrained: {', '.join(low)} (bitsandbytes' 8-bit / 4-bit weights) is not "
            "supported: skiff computes in numpy / cupy, which have no int8 or 4-bit matrix "
            "product, so such weights would be widened to float32 for every product "
            "(slower, the memory saved only at rest). Load with dtype='bfloat16' to halve "
            "the memory; LoRA trains on it")
    for k in LOW_BIT:
        kwargs.pop(k, None)
    if "torch_dtype" in kwargs:
        alias = kwargs.pop("torch_dtype")
        if dtype is not None and alias is not None and str(alias) != str(dtype):
            raise ValueError(f"from_pretrained: dtype={dtype!r} and torch_dtype={alias!r} "
                             "differ (torch_dtype is transformers' older name of dtype)")
        dtype = alias if dtype is None else dtype
    if "device_map" in kwargs:
        place = _device_of(kwargs.pop("device_map"))
        if place is not None:
            if device not in (None, "cpu") and str(device) != place:
                raise ValueError(f"from_pretrained: device={device!r} and device_map="
                                 f"{place!r} differ")
            device = place
    attn = kwargs.get("attn_implementation")
    if attn not in ATTENTION:
        raise ValueError(f"attn_implementation must be one of {ATTENTION[1:]} (skiff computes "
                         f"each the same way), got {attn!r}")
    unknown = sorted(k for k in kwargs if k not in HARMLESS)
    if unknown:
        raise TypeError(f"from_pretrained() got unexpected keyword arguments: "
                        f"{', '.join(unknown)}")
    return dtype, device
