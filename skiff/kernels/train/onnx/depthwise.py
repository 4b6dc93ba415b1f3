"""Depthwise convolution kernels on channels-first (C, N, H, W) arrays for the imported
graphs: the training core's custom ops (:mod:`..core.nn.functional.conv_depthwise`, a numba
pass with a plain-``xp`` reference twin), under the names the ONNX ops use.

* ``depthwise_fwd(xt, w, sh, sw, ho, wo) -> out``: ``xt`` the padded input (C, N, Hp, Wp),
  ``w`` (C, kh, kw).
* ``depthwise_bwd(gt, xt, w, sh, sw, need_x, need_w) -> (gpad, gw)``: the padded input
  gradient and the weight gradient in one pass over the output gradient.

The 5x5 depthwise layers of PP-OCRv4 (240 and 480 channels) took ~60% of a training step
with the reference passes. Until round 33 this file held its own copy of the kernels; the
core's depthwise ``conv2d`` node (round 33) has them now, and the ONNX package depends on the
core, not the other way round.
"""

from __future__ import annotations

from ..core.nn.functional.conv_depthwise import depthwise_conv_bwd as depthwise_bwd
from ..core.nn.functional.conv_depthwise import depthwise_conv_fwd as depthwise_fwd

__all__ = ["depthwise_fwd", "depthwise_bwd"]
