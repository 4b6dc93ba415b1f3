"""A QDQ (int8) ONNX graph as a trainable skiff module: quantization-aware fine-tuning.

onnxruntime's static quantization writes a graph whose quantized nodes read
``DequantizeLinear(QuantizeLinear(x))`` activations and ``DequantizeLinear(int8 weight)``
weights. :func:`load_qdq` rewrites that graph for :class:`.graph.OnnxModule`:

* a weight's ``DequantizeLinear`` of an integer initializer becomes a float ``Parameter``
  (the dequantized values) through a ``FakeQuant`` node with the same scale, zero point and
  integer range (per channel along ``axis``): the forward is the int8 graph's, the gradient
  the straight-through one (:mod:`.fakequant`), so training moves the float weights and the
  forward always sees them on the int grid;
* an activation's ``QuantizeLinear`` becomes ``FakeQuant`` with the calibrated scale and
  zero point, its ``DequantizeLinear`` an ``Identity``.

Scales and zero points are fixed (the calibration's ranges). :func:`export_qdq` writes the
original QDQ file with each trained weight rounded back to its integers (same scales), so
onnxruntime runs it int8 (``QLinearConv``) as before.

>>> m = load_qdq("rec8.onnx")                               # doctest: +SKIP
>>> probs = m(skiff.tensor(batch))   # = onnxruntime's QDQ graph, optimizations off
>>> export_qdq(m, "rec8-qat.onnx")                          # doctest: +SKIP
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .graph import OnnxModule

__all__ = ["load_qdq", "export_qdq", "qdq_ranges"]

_RANGE = {2: (0, 255), 3: (-128, 127), 6: (-2**31, 2**31 - 1), 4: (0, 65535), 5: (-32768, 32767)}


def _initializers(graph) -> dict:
    from onnx import numpy_helper

    return {t.name: numpy_helper.to_array(t) for t in graph.initializer}


def _qparams(node, init: dict):
    if len(node.input) < 2 or node.input[1] not in init:
        raise ValueError(f"{node.op_type} {node.name!r}: its scale is not an initializer "
                         "(dynamic quantization is not supported: quantize statically)")
    scale = np.asarray(init[node.input[1]], np.float32).reshape(-1)
    if len(node.input) > 2 and node.input[2] in init:
        zp_arr = init[node.input[2]]
    else:
        zp_arr = np.zeros(scale.shape, np.uint8)
    axis = next((a.i for a in node.attribute if a.name == "axis"), 1)
    return scale, np.asarray(zp_arr).reshape(-1), axis, zp_arr.dtype


def qdq_ranges(model) -> dict:
    """Each activation ``QuantizeLinear`` input of ``model`` -> ``(scale, zero_point)``."""
    init = _initializers(model.graph)
    out = {}
    for n in model.graph.node:
        if n.op_type == "QuantizeLinear" and n.input[0] not in init:
            s, z, _, _ = _qparams(n, init)
            out[n.input[0]] = (float(s[0]), int(z[0]))
    return out


def _rewrite(model):
    """The float graph with ``FakeQuant`` nodes, and ``{float initializer: (int
    initializer, scale, zero_point, axis, dtype)}`` for the export."""
    import onnx
    from onnx import helper, numpy_helper
    from onnx.helper import tensor_dtype_to_np_dtype

    g = model.graph
    init = _initializers(g)
    weights: dict[str, tuple] = {}
    nodes, new_init = [], []
    quantized = set()
    for n in g.node:
        if n.op_type == "QuantizeLinear":
            if n.input[0] in init:
                raise ValueError(f"QuantizeLinear {n.name!r} of a constant: fold it first")
            s, z, axis, dt = _qparams(n, init)
            lo, hi = _RANGE.get(int(helper.np_dtype_to_tensor_dtype(np.dtype(dt))), (0, 255))
            quantized.add(n.output[0])
            nodes.append(helper.make_node("FakeQuant", [n.input[0]], [n.output[0]],
                                          name=n.name, scale=s.tolist(),
                                          zero_point=[int(v) for v in z], qmin=lo, qmax=hi,
                                          axis=int(axis)))
        elif n.op_type == "DequantizeLinear":
            if n.input[0] in quantized:
                nodes.append(helper.make_node("Identity", [n.input[0]], [n.output[0]],
                                              name=n.name))
                continue
            if n.input[0] not in init:
                raise ValueError(f"DequantizeLinear {n.name!r} reads {n.input[0]!r}, which is "
                                 "neither a QuantizeLinear output nor an initializer")
            q = init[n.input[0]]
            s, z, axis, _ = _qparams(n, init)
            tdt = next(t.data_type for t in g.initializer if t.name == n.input[0])
            lo, hi = _RANGE.get(tdt, (-128, 127))
            per = s.size > 1
            shape = [1] * q.ndim
            if per:
                shape[axis % q.ndim] = -1
            w = ((q.astype(np.float64) - z.reshape(shape)) * s.reshape(shape)).astype(np.float32)
            fname = n.input[0] + "_qat_float"
            new_init.append(numpy_helper.from_array(w, fname))
            weights[fname] = (n.input[0], s, z, axis, tensor_dtype_to_np_dtype(tdt))
            nodes.append(helper.make_node("FakeQuant", [fname], [n.output[0]], name=n.name,
                                          scale=s.tolist(), zero_point=[int(v) for v in z],
                                          qmin=lo, qmax=hi, axis=int(axis)))
        else:
            nodes.append(n)
    out = onnx.ModelProto()
    out.CopyFrom(model)
    del out.graph.node[:]
    out.graph.node.extend(nodes)
    out.graph.initializer.extend(new_init)
    return out, weights


def load_qdq(path_or_model, *, fuse: bool = True) -> OnnxModule:
    """A QDQ graph (path or ``onnx.ModelProto``) as a trainable :class:`OnnxModule` whose
    quantized weights are float ``Parameter``s seen through fake quantization. The module
    keeps the QDQ graph (``qdq_proto``) and the weights' integer tensors (``qdq_weights``)
    for :func:`export_qdq`."""
    import onnx

    model = path_or_model if isinstance(path_or_model, onnx.ModelProto) \
        else onnx.load(str(path_or_model))
    rewritten, weights = _rewrite(model)
    m = OnnxModule(rewritten, fuse=fuse)
    object.__setattr__(m, "qdq_proto", model)
    object.__setattr__(m, "qdq_weights", weights)
    return m


def export_qdq(module: OnnxModule, path: str | Path) -> Path:
    """Write ``module``'s QDQ graph with its trained weights: each quantized weight rounded
    to its integers with the file's scales and zero points (saturated to the type's range),
    every float weight (the ones left float32) as trained."""
    import onnx
    from onnx import numpy_helper

    if not hasattr(module, "qdq_weights"):
        raise ValueError("export_qdq needs a module from load_qdq (it holds the QDQ graph)")
    key_of = {v: k for k, v in module.onnx_names.items()}
    model = onnx.ModelProto()
    model.CopyFrom(module.qdq_proto)
    ints = {}
    for fname, (qname, s, z, axis, dt) in module.qdq_weights.items():
        w = getattr(module, key_of[fname]).numpy().astype(np.float64)
        shape = [1] * w.ndim
        if s.size > 1:
            shape[axis % w.ndim] = -1
        info = np.iinfo(dt)
        q = np.rint(w / s.reshape(shape).astype(np.float64)) + z.reshape(shape)
        ints[qname] = np.clip(q, info.min, info.max).astype(dt)
    for t in model.graph.initializer:
        if t.name in ints:
            t.CopyFrom(numpy_helper.from_array(ints[t.name], t.name))
        elif t.name in key_of and t.data_type == onnx.TensorProto.FLOAT:
            arr = getattr(module, key_of[t.name]).numpy().astype(np.float32)
            t.CopyFrom(numpy_helper.from_array(arr.reshape(tuple(t.dims)), t.name))
    path = Path(path)
    onnx.save(model, str(path))
    return path
