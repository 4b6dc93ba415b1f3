"""Round 47 (h5): one sweep of first, second and third derivatives, op by op, against torch 2.13
on the CPU (float64). Each case is one line: a name, ``f(L, x)`` written for ``L`` = skiff or
torch (one differentiable input ``x``; a second operand is built from ``x``), and the input.
Each order is ``autograd.grad(sum(v_k * d), x, create_graph=True)`` of the previous one, ``v_k``
a fixed random tensor, so a linear reduction: the op's own derivatives, whether each order is
still a function of ``x`` (``requires_grad``, as torch's) and its value are compared.

Where torch's gradient no longer requires grad, torch's next ``grad`` raises; skiff's next
derivative, if it has one, must then be zeros. Where torch itself raises at order k >= 2 (no
derivative of that order in torch), skiff's may differ: its order k, if it has one, is checked
against central differences of torch's order k - 1 (``check(name, d)`` fills the dict ``d``
with those cases and what each library does). Where torch's third derivative is wrong
(``{"fd3": True}``), the same differences are the reference.
"""

from __future__ import annotations

import numpy as np
import pytest

import skiff

torch = pytest.importorskip("torch")

_RNG = np.random.default_rng(47)


def _away(shape, lo=0.2, hi=1.5):
    """Values away from 0 (kinks of relu & co. at 0), both signs."""
    return _RNG.uniform(lo, hi, shape) * _RNG.choice([-1.0, 1.0], shape)


N = _away((2, 3))  # general
P = _RNG.uniform(0.5, 1.5, (2, 3))  # positive
U = _RNG.uniform(-0.8, 0.8, (2, 3))  # inside (-1, 1)
G1 = 1.2 + P  # > 1
H = _RNG.uniform(0.1, 0.9, (2, 3))  # inside (0, 1)
W = _away((2, 3), 0.3, 3.5)  # wide (past +-3, hardswish's, hardtanh's, softshrink's corners)
M = _RNG.standard_normal((3, 3)) + 3 * np.eye(3)
_B = _RNG.standard_normal((3, 3))
S = _B @ _B.T + 3 * np.eye(3)  # symmetric positive definite
R = _RNG.standard_normal((4, 3))
V4 = _RNG.uniform(0.5, 1.5, (2, 2, 3))
SEQ = _RNG.standard_normal((1, 2, 6))
IMG = _RNG.standard_normal((1, 2, 4, 4))
VOL = _RNG.standard_normal((1, 2, 3, 3, 3))
V8 = _RNG.standard_normal(8)


def F(L):
    return L.nn.functional


def _ab(x):
    """Two operands (2, 3) -> (3,), (3,) from one input."""
    return x[0], x[1]


def _img_w(x, o=2):
    """A conv weight built from the input itself, so both of conv's operands get derivatives."""
    return x[0, :, :2, :2].unsqueeze(0).expand(o, -1, -1, -1) * 0.5


def _setitem(y, v, index=1):
    y[index] = v
    return y * y


def _cp(L, y):  # cube: a linear op's derivatives past the second
    return y * y * y


# name: (f(L, x), input)
CASES = {
    # --- elementwise, tensor methods and top-level functions
    "abs": (lambda L, x: x.abs(), N),
    "abs_cubed": (lambda L, x: x.abs() ** 3, N),
    "neg_cubed": (lambda L, x: _cp(L, -x), N),
    "exp": (lambda L, x: x.exp(), N),
    "exp2": (lambda L, x: L.exp2(x), N),
    "expm1": (lambda L, x: x.expm1(), N),
    "log": (lambda L, x: x.log(), P),
    "log2": (lambda L, x: x.log2(), P),
    "log10": (lambda L, x: x.log10(), P),
    "log1p": (lambda L, x: x.log1p(), P),
    "sqrt": (lambda L, x: x.sqrt(), P),
    "rsqrt": (lambda L, x: x.rsqrt(), P),
    "reciprocal": (lambda L, x: x.reciprocal(), P),
    "square": (lambda L, x: x.square(), N),
    "sin": (lambda L, x: x.sin(), N),
    "cos": (lambda L, x: x.cos(), N),
    "tan": (lambda L, x: x.tan(), U),
    "asin": (lambda L, x: x.asin(), U),
    "acos": (lambda L, x: x.acos(), U),
    "atan": (lambda L, x: x.atan(), N),
    "sinh": (lambda L, x: x.sinh(), N),
    "cosh": (lambda L, x: x.cosh(), N),
    "tanh": (lambda L, x: x.tanh(), N),
    "asinh": (lambda L, x: x.asinh(), N),
    "acosh": (lambda L, x: x.acosh(), G1),
    "atanh": (lambda L, x: x.atanh(), U),
    "sigmoid": (lambda L, x: x.sigmoid(), N),
    "erf": (lambda L, x: x.erf(), N),
    "erfc": (lambda L, x: x.erfc(), N),
    "erfinv": (lambda L, x: x.erfinv(), U),
    "lgamma": (lambda L, x: x.lgamma(), P),
    "digamma": (lambda L, x: x.digamma(), P),
    "polygamma1": (lambda L, x: L.polygamma(1, x), P),
    "mvlgamma": (lambda L, x: L.mvlgamma(x + 1, 2), P),
    "sinc": (lambda L, x: L.sinc(x), N),
    "logit": (lambda L, x: L.logit(x), H),
    "i0": (lambda L, x: L.i0(x), N),
    "deg2rad_cubed": (lambda L, x: _cp(L, L.deg2rad(x)), N),
    "rad2deg_cubed": (lambda L, x: _cp(L, L.rad2deg(x)), N),
    "sign_times": (lambda L, x: x.sign() * x ** 3, N),
    "sgn_times": (lambda L, x: x.sgn() * x ** 3, N),
    "floor_plus": (lambda L, x: x.floor() + x ** 3, N),
    "round_plus": (lambda L, x: x.round() + x ** 3, N),
    "trunc_plus": (lambda L, x: x.trunc() + x ** 3, N),
    "frac": (lambda L, x: x.frac() ** 3, N),
    "relu": (lambda L, x: x.relu(), N, {"none3": True}),
    "relu_cubed": (lambda L, x: x.relu() ** 3, N),
    "clamp": (lambda L, x: x.clamp(-0.5, 0.6), N),
    "clamp_cubed": (lambda L, x: x.clamp(-0.5, 0.6) ** 3, N),
    "clamp_min": (lambda L, x: x.clamp(min=0.3), N),
    "clamp_tensor": (lambda L, x: L.clamp(x, min=x.flip(0) * 0.5), N),
    "clip": (lambda L, x: L.clip(x, -0.5, 0.6) ** 3, N),
    "nan_to_num": (lambda L, x: L.nan_to_num(x) ** 3, N),
    "pow_scalar": (lambda L, x: x ** 3.5, P),
    "pow_int": (lambda L, x: x ** 2, N),
    "pow_tensor": (lambda L, x: x[0] ** x[1], P),
    "rpow": (lambda L, x: 2.0 ** x, N),
    "float_power": (lambda L, x: L.float_power(x, 2.5), P),
    # --- binary
    "add": (lambda L, x: _cp(L, x[0] + 2 * x[1]), N),
    "sub": (lambda L, x: _cp(L, x[0] - x[1]), N),
    "mul": (lambda L, x: x[0] * x[1] * x[0], N),
    "div": (lambda L, x: x[0] / x[1], P),
    "rdiv": (lambda L, x: 2 / x, P),
    "true_divide": (lambda L, x: L.true_divide(x[0], x[1]), P),
    "atan2": (lambda L, x: L.atan2(x[0], x[1]), N),
    "hypot": (lambda L, x: L.hypot(x[0], x[1]), N),
    "maximum": (lambda L, x: L.maximum(x[0], x[1]) ** 3, N),
    "minimum": (lambda L, x: L.minimum(x[0], x[1]) ** 3, N),
    "maximum_plain": (lambda L, x: L.maximum(x[0], x[1]), N),
    "fmax": (lambda L, x: L.fmax(x[0], x[1]) ** 3, N),
    "fmin": (lambda L, x: L.fmin(x[0], x[1]) ** 3, N),
    "fmod": (lambda L, x: L.fmod(x * 3, 0.7) ** 3, P),
    "remainder": (lambda L, x: L.remainder(x * 3, 0.7) ** 3, N),
    "fmod_tensor": (lambda L, x: L.fmod(x[0] * 3, x[1]) ** 3, P),
    "xlogy": (lambda L, x: L.xlogy(x[0], x[1]), P),
    "xlog1py": (lambda L, x: L.special.xlog1py(x[0], x[1]), P),
    "copysign": (lambda L, x: L.copysign(x[0], x[1]) ** 3, N),
    "lerp": (lambda L, x: L.lerp(x[0], x[1], 0.3) ** 3, N),
    "lerp_tensor": (lambda L, x: L.lerp(x[0], x[1], x[0].sigmoid()), N),
    "addcmul": (lambda L, x: L.addcmul(x[0], x[1], x[0], value=0.5), N),
    "addcdiv": (lambda L, x: L.addcdiv(x[0], x[1], x[0], value=0.5), P),
    "logaddexp": (lambda L, x: L.logaddexp(x[0], x[1]), N),
    "logaddexp2": (lambda L, x: L.logaddexp2(x[0], x[1]), N),
    "where": (lambda L, x: L.where(x > 0, x ** 2, x.sin()), N),
    "where_linear": (lambda L, x: L.where(x > 0, x, x * 0.1), N),
    "masked_fill": (lambda L, x: (x ** 3).masked_fill(x > 0.5, 1.0), N),
    "dist": (lambda L, x: L.dist(x[0], x[1], 3), N),
    # --- reductions and scans
    "sum_dim": (lambda L, x: _cp(L, x.sum(1)), N),
    "mean": (lambda L, x: _cp(L, x.mean(0, keepdim=True)), N),
    "prod": (lambda L, x: x.prod(1), N),
    "prod_all": (lambda L, x: x.prod(), N),
    "var": (lambda L, x: x.var(1), N),
    "std": (lambda L, x: x.std(0), N),
    "var_mean": (lambda L, x: L.var_mean(x, 1)[0] * L.var_mean(x, 1)[1], N),
    "std_mean": (lambda L, x: L.std_mean(x, 1)[0] * L.std_mean(x, 1)[1], N),
    "norm": (lambda L, x: x.norm(), N),
    "norm_p3": (lambda L, x: x.norm(p=3, dim=1), N),
    "logsumexp": (lambda L, x: x.logsumexp(1), N),
    "amax": (lambda L, x: x.amax(1) ** 3, N),
    "max_dim": (lambda L, x: x.max(1)[0] ** 3, N),
    "min_all": (lambda L, x: x.min() ** 3, N),
    "median": (lambda L, x: x.median(1)[0] ** 3, N),
    "kthvalue": (lambda L, x: x.kthvalue(2, 1)[0] ** 3, N),
    "sort": (lambda L, x: x.sort(1)[0] ** 3, N),
    "topk": (lambda L, x: x.topk(2, 1)[0] ** 3, N),
    "cumsum": (lambda L, x: _cp(L, x.cumsum(1)), N),
    "cumprod": (lambda L, x: x.cumprod(1), N),
    "cummax": (lambda L, x: x.cummax(1)[0] ** 3, N),
    "cummin": (lambda L, x: x.cummin(1)[0] ** 3, N),
    "logcumsumexp": (lambda L, x: x.logcumsumexp(1), N, {"fd3": True}),  # torch's 3rd: nan
    "nansum": (lambda L, x: _cp(L, x.nansum(1)), N),
    "nanmean": (lambda L, x: _cp(L, x.nanmean(1)), N),
    "trace": (lambda L, x: _cp(L, x.trace()), M),
    "diff": (lambda L, x: _cp(L, x.diff(dim=1)), N),
    "softmax": (lambda L, x: x.softmax(1), N),
    "log_softmax": (lambda L, x: x.log_softmax(0), N),
    "cov": (lambda L, x: L.cov(x), N),
    "corrcoef": (lambda L, x: L.corrcoef(x), N),
    "trapezoid": (lambda L, x: _cp(L, L.trapezoid(x, dim=1)), N),
    "renorm": (lambda L, x: x.renorm(2, 0, 1.0), N),
    # --- shapes and indexing (cubed: linear ops)
    "reshape": (lambda L, x: _cp(L, x.reshape(3, 2)), N),
    "transpose": (lambda L, x: _cp(L, x.t()), N),
    "permute": (lambda L, x: _cp(L, x.permute(2, 0, 1)), V4),
    "flip": (lambda L, x: _cp(L, x.flip(1)) * x, N),
    "roll": (lambda L, x: _cp(L, x.roll(1, 1)) * x, N),
    "repeat": (lambda L, x: _cp(L, x.repeat(2, 1)), N),
    "tile": (lambda L, x: _cp(L, x.tile((1, 2))), N),
    "expand": (lambda L, x: _cp(L, x[:1].expand(3, 3)), N),
    "repeat_interleave": (lambda L, x: _cp(L, x.repeat_interleave(2, dim=1)), N),
    "squeeze_unsqueeze": (lambda L, x: _cp(L, x.unsqueeze(0).squeeze(0)), N),
    "narrow": (lambda L, x: _cp(L, x.narrow(1, 1, 2)), N),
    "select": (lambda L, x: _cp(L, x.select(1, 2)), N),
    "getitem_adv": (lambda L, x: _cp(L, x[:, [0, 2, 2]]), N),
    "getitem_mask": (lambda L, x: _cp(L, x[x > 0]), N),
    "gather": (lambda L, x: _cp(L, x.gather(1, L.tensor([[0, 2], [1, 1]]))), N),
    "take_along_dim": (lambda L, x: _cp(L, L.take_along_dim(x, L.tensor([[2], [0]]), 1)), N),
    "take": (lambda L, x: _cp(L, L.take(x, L.tensor([0, 4, 4]))), N),
    "index_select": (lambda L, x: _cp(L, x.index_select(1, L.tensor([2, 0]))), N),
    "masked_select": (lambda L, x: _cp(L, x.masked_select(x > 0)), N),
    "diag": (lambda L, x: _cp(L, L.diag(x[0])), N),
    "diagonal": (lambda L, x: _cp(L, x.diagonal()), M),
    "diag_embed": (lambda L, x: _cp(L, L.diag_embed(x)), N),
    "tril": (lambda L, x: _cp(L, x.tril()), M),
    "triu": (lambda L, x: _cp(L, x.triu(1)), M),
    "cat": (lambda L, x: _cp(L, L.cat([x, x[:1] * 2], 0)), N),
    "stack": (lambda L, x: _cp(L, L.stack([x, x.sin()], 1)), N),
    "split": (lambda L, x: _cp(L, x.split([1, 2], 1)[1]), N),
    "chunk": (lambda L, x: _cp(L, x.chunk(3, 1)[2]), N),
    "unbind": (lambda L, x: _cp(L, x.unbind(0)[1]) * x[0], N),
    "movedim": (lambda L, x: _cp(L, x.movedim(0, 2)), V4),
    "flatten": (lambda L, x: _cp(L, x.flatten()), V4),
    "unflatten": (lambda L, x: _cp(L, x.unflatten(1, (3, 1))), N),
    "rot90": (lambda L, x: _cp(L, x.rot90(1, (0, 1))), N),
    "scatter": (lambda L, x: _cp(L, L.zeros(2, 4, dtype=x.dtype).scatter(
        1, L.tensor([[0, 3, 1], [2, 1, 0]]), x)), N),
    "scatter_add": (lambda L, x: _cp(L, x.scatter_add(1, L.tensor([[0, 0, 2], [1, 1, 1]]),
                                                      x * x)), N),
    "index_add": (lambda L, x: _cp(L, x.index_add(1, L.tensor([0, 0, 2]), x * 2)), N),
    "index_copy": (lambda L, x: _cp(L, x.index_copy(1, L.tensor([2, 0, 1]), x.flip(1))), N),
    "index_fill": (lambda L, x: _cp(L, x.index_fill(1, L.tensor([1]), 0.5)), N),
    "kron": (lambda L, x: L.kron(x[:, :2], x[:, 1:]), N),
    "outer": (lambda L, x: L.outer(x[0], x[1]) ** 2, N),
    "cross": (lambda L, x: L.linalg.cross(x[0], x[1]) ** 2, N),
    "tensordot": (lambda L, x: L.tensordot(x, x.t().sin(), 1), N),
    "einsum": (lambda L, x: L.einsum("ij,kj->ik", x, x.cos()), N),
    "einsum_three": (lambda L, x: L.einsum("bij,bjk,k->bi", x, x.exp(), x[0, 0]), V4[:, :, :2]),
    "einsum_complex": (lambda L, x: L.einsum("ij,kj->ik", L.complex(x, x.flip(0)),
                                             L.complex(x.cos(), x)).abs(), N),
    "einsum_diagonal": (lambda L, x: L.einsum("ii,ij->ij", x, x.exp()), M),
    "einsum_trace_batch": (lambda L, x: L.einsum("bii->b", x.exp()) ** 2, V4[:, :, :2].copy()),
    "einsum_broadcast": (lambda L, x: L.einsum("...j,j->...", x, x[0, 0].sin()) ** 2, V4),
    "matmul": (lambda L, x: (x @ x.t()) ** 2, N),
    "mm": (lambda L, x: L.mm(x, x.t().exp()), N),
    "bmm": (lambda L, x: L.bmm(x, x.transpose(1, 2).exp()), V4),
    "mv": (lambda L, x: L.mv(x, x[0].exp()), N),
    "dot": (lambda L, x: L.dot(x[0], x[1].exp()), N),
    "inner": (lambda L, x: L.inner(x, x.exp()), N),
    "addmm": (lambda L, x: L.addmm(x[:2, :2], x[:2], x.t().exp()[:, :2], beta=0.5), M),
    "baddbmm": (lambda L, x: L.baddbmm(x, x, x.exp(), alpha=0.5), V4[:, :, :2].copy()),
    "addmv": (lambda L, x: L.addmv(x[0], x, x[1].exp()), M),
    "addr": (lambda L, x: L.addr(x, x[0], x[1].exp()), M),
    "cdist": (lambda L, x: L.cdist(x[:2], x[2:]), R),
    "cosine_similarity": (lambda L, x: F(L).cosine_similarity(x[:2], x[2:]), R),
    "pairwise_distance": (lambda L, x: F(L).pairwise_distance(x[:2], x[2:]), R),
    "pdist": (lambda L, x: F(L).pdist(x), R),
    # --- nn.functional activations
    "leaky_relu": (lambda L, x: F(L).leaky_relu(x, 0.1), N),
    "leaky_relu_cubed": (lambda L, x: F(L).leaky_relu(x, 0.1) ** 3, N),
    "relu6": (lambda L, x: F(L).relu6(x * 4), N),
    "hardtanh": (lambda L, x: F(L).hardtanh(x, -0.5, 0.6), N),
    "hardtanh_cubed": (lambda L, x: F(L).hardtanh(x, -0.5, 0.6) ** 3, N),
    "elu": (lambda L, x: F(L).elu(x, 0.7), N),
    "celu": (lambda L, x: F(L).celu(x, 0.7), N, {"rtol": 1e-7}),  # torch's alpha a float
    "selu": (lambda L, x: F(L).selu(x), N),
    "gelu": (lambda L, x: F(L).gelu(x), N),
    "gelu_tanh": (lambda L, x: F(L).gelu(x, approximate="tanh"), N),
    "silu": (lambda L, x: F(L).silu(x), N),
    "mish": (lambda L, x: F(L).mish(x), N),
    "softplus": (lambda L, x: F(L).softplus(x, beta=2.0), N),
    "softplus_threshold": (lambda L, x: F(L).softplus(x * 5, threshold=3.0), N),
    "softsign": (lambda L, x: F(L).softsign(x), N),
    "tanhshrink": (lambda L, x: F(L).tanhshrink(x), N),
    "logsigmoid": (lambda L, x: F(L).logsigmoid(x), N),
    "hardsigmoid": (lambda L, x: F(L).hardsigmoid(x), W, {"rtol": 1e-7}),  # torch's 1/6 a float
    "hardsigmoid_cubed": (lambda L, x: F(L).hardsigmoid(x) ** 3, W, {"rtol": 1e-7}),
    "hardswish": (lambda L, x: F(L).hardswish(x), W),
    "hardshrink": (lambda L, x: F(L).hardshrink(x, 0.5), N),
    "hardshrink_cubed": (lambda L, x: F(L).hardshrink(x, 0.5) ** 3, N),
    "softshrink": (lambda L, x: F(L).softshrink(x, 0.5), N),
    "softshrink_cubed": (lambda L, x: F(L).softshrink(x, 0.5) ** 3, N),
    "threshold": (lambda L, x: F(L).threshold(x, 0.1, -2.0), N),
    "threshold_cubed": (lambda L, x: F(L).threshold(x, 0.1, -2.0) ** 3, N),
    "rrelu_eval": (lambda L, x: F(L).rrelu(x, training=False), N),
    "leaky_relu_module": (lambda L, x: L.nn.LeakyReLU(0.2)(x), N),
    "leaky_relu_module_at_0": (lambda L, x: L.nn.LeakyReLU(0.2)(x - x.detach()), N,
                               {"none3": True}),
    "leaky_relu_at_0": (lambda L, x: F(L).leaky_relu(x - x.detach(), 0.2), N, {"none3": True}),
    "hardshrink_top": (lambda L, x: L.hardshrink(x, 0.5), N),
    "prelu": (lambda L, x: F(L).prelu(x, x[0, :1].abs() * 0.3), N, {"none3": True}),
    "glu": (lambda L, x: F(L).glu(x, 0), V4),
    "softmin": (lambda L, x: F(L).softmin(x, 1), N),
    "normalize": (lambda L, x: F(L).normalize(x, dim=1), N),
    "dropout_eval": (lambda L, x: F(L).dropout(x, 0.5, training=False) ** 3, N),
    # --- normalisation, linear, conv, pooling
    "layer_norm": (lambda L, x: F(L).layer_norm(x, (3,), x[0].exp(), x[1]), N, {"fd3": True}),
    "rms_norm": (lambda L, x: F(L).rms_norm(x, (3,), x[0].exp()), N),
    "group_norm": (lambda L, x: F(L).group_norm(x, 1, x[0, :, 0, 0].exp()), IMG),
    "batch_norm": (lambda L, x: F(L).batch_norm(x, None, None, x[0, :, 0, 0].exp(),
                                                training=True), IMG[:, :, :2], {"fd3": True}),
    "instance_norm": (lambda L, x: F(L).instance_norm(x), IMG[:, :, :2], {"fd3": True}),
    "local_response_norm": (lambda L, x: F(L).local_response_norm(x, 2), IMG),
    "linear": (lambda L, x: F(L).linear(x, x.exp(), x[0].sin()), M),
    "bilinear": (lambda L, x: F(L).bilinear(x, x.sin(), x.reshape(1, 3, 3).cos()), M),
    "conv1d": (lambda L, x: F(L).conv1d(x, x[0, :, :3].unsqueeze(0).repeat(2, 1, 1),
                                         padding=1) ** 2, SEQ),
    "conv2d": (lambda L, x: F(L).conv2d(x, _img_w(x), stride=2, padding=1) ** 2, IMG),
    "conv3d": (lambda L, x: F(L).conv3d(x, x[:, :, :2, :2, :2] * 0.5) ** 2, VOL),
    "conv3d_groups": (lambda L, x: F(L).conv3d(x, x[0, :, :2, :2, :2].unsqueeze(1) * 0.5,
                                               stride=(1, 2, 1), padding=1, dilation=(2, 1, 1),
                                               groups=2) ** 2, VOL),
    "conv_transpose1d": (lambda L, x: F(L).conv_transpose1d(x, x[0, :, :3].unsqueeze(1),
                                                             stride=2) ** 2, SEQ),
    "conv_transpose2d": (lambda L, x: F(L).conv_transpose2d(x, _img_w(x).transpose(0, 1),
                                                             padding=1) ** 2, IMG),
    "conv_transpose3d": (lambda L, x: F(L).conv_transpose3d(
        x, x[0, :, :2, :2, :2].unsqueeze(1) * 0.5) ** 2, VOL),
    "conv3d_const_weight": (lambda L, x: F(L).conv3d(x, L.tensor(VOL[0, :, :2, :2, :2])
                                                     .unsqueeze(0), padding=1) ** 2, VOL),
    "conv3d_const_input": (lambda L, x: F(L).conv3d(L.tensor(VOL), x[0, :, :2, :2, :2]
                                                    .unsqueeze(0)) ** 2, VOL),
    "conv_transpose3d_const_weight": (lambda L, x: F(L).conv_transpose3d(
        x, L.tensor(VOL[0, :, :2, :2, :2]).unsqueeze(1), stride=2) ** 2, VOL),
    "conv_transpose3d_const_input": (lambda L, x: F(L).conv_transpose3d(
        L.tensor(VOL), x[0, :, :2, :2, :2].unsqueeze(1), padding=1) ** 2, VOL),
    "conv_transpose3d_groups": (lambda L, x: F(L).conv_transpose3d(
        x, x[0, :, :2, :2, :2].unsqueeze(1) * 0.5, stride=2, padding=1, groups=2) ** 2, VOL),
    "conv_transpose3d_output_padding": (lambda L, x: F(L).conv_transpose3d(  # torch: 3rd raises
        x, x[0, :, :2, :2, :2].unsqueeze(1) * 0.5, stride=2, output_padding=1) ** 2,
        VOL[:, :, :2, :2, :2], {"fd3": True}),
    "conv_transpose2d_dilated": (lambda L, x: F(L).conv_transpose2d(
        x, _img_w(x).transpose(0, 1), stride=2, dilation=2, padding=1) ** 2, IMG),
    "max_pool1d": (lambda L, x: F(L).max_pool1d(x, 2) ** 3, SEQ),
    "max_pool2d": (lambda L, x: F(L).max_pool2d(x, 2, 1) ** 3, IMG),
    "max_pool3d": (lambda L, x: F(L).max_pool3d(x, 2) ** 3, VOL),
    "max_pool3d_plain": (lambda L, x: F(L).max_pool3d(x, 2, 1, ceil_mode=True), VOL),
    "max_pool2d_plain": (lambda L, x: F(L).max_pool2d(x, 2), IMG),
    "avg_pool1d": (lambda L, x: F(L).avg_pool1d(x, 2) ** 3, SEQ),
    "avg_pool2d": (lambda L, x: F(L).avg_pool2d(x, 3, 1, 1) ** 3, IMG),
    "avg_pool3d": (lambda L, x: F(L).avg_pool3d(x, 2, 1) ** 3, VOL),
    "avg_pool3d_plain": (lambda L, x: F(L).avg_pool3d(x, 2, 2, 1, ceil_mode=True,
                                                      count_include_pad=False), VOL),
    "avg_pool2d_plain": (lambda L, x: F(L).avg_pool2d(x, 2), IMG),
    "adaptive_avg_pool1d": (lambda L, x: F(L).adaptive_avg_pool1d(x, 4) ** 3, SEQ),
    "adaptive_avg_pool2d": (lambda L, x: F(L).adaptive_avg_pool2d(x, 3) ** 3, IMG),
    "adaptive_avg_pool3d": (lambda L, x: F(L).adaptive_avg_pool3d(x, 2) ** 3, VOL),
    "adaptive_max_pool1d": (lambda L, x: F(L).adaptive_max_pool1d(x, 4) ** 3, SEQ),
    "adaptive_max_pool2d": (lambda L, x: F(L).adaptive_max_pool2d(x, 3) ** 3, IMG),
    "adaptive_max_pool3d": (lambda L, x: F(L).adaptive_max_pool3d(x, 2) ** 3, VOL),
    "lp_pool1d": (lambda L, x: F(L).lp_pool1d(x.abs() + 0.1, 2, 2), SEQ),
    "lp_pool2d": (lambda L, x: F(L).lp_pool2d(x.abs() + 0.1, 3, 2), IMG),
    "unfold": (lambda L, x: F(L).unfold(x, 2, stride=1) ** 3, IMG),
    "fold": (lambda L, x: F(L).fold(x.reshape(1, 8, 4), (3, 3), 2) ** 3, IMG),
    "pad_constant": (lambda L, x: F(L).pad(x, (1, 2), value=0.5) ** 3, SEQ),
    "pad_reflect": (lambda L, x: F(L).pad(x, (2, 1, 1, 2), mode="reflect") ** 3, IMG),
    "pad_replicate": (lambda L, x: F(L).pad(x, (2, 1, 1, 2), mode="replicate") ** 3, IMG),
    "pad_circular": (lambda L, x: F(L).pad(x, (2, 1, 1, 2), mode="circular") ** 3, IMG),
    "interp_nearest": (lambda L, x: F(L).interpolate(x, scale_factor=2) ** 3, IMG),
    "interp_linear": (lambda L, x: F(L).interpolate(x, size=9, mode="linear") ** 3, SEQ),
    "interp_bilinear": (lambda L, x: F(L).interpolate(x, size=(5, 7), mode="bilinear",
                                                      align_corners=True) ** 3, IMG),
    "interp_bicubic": (lambda L, x: F(L).interpolate(x, size=(5, 3), mode="bicubic") ** 3, IMG),
    "interp_trilinear": (lambda L, x: F(L).interpolate(x, size=(4, 2, 5),
                                                       mode="trilinear") ** 3, VOL),
    "interp_area": (lambda L, x: F(L).interpolate(x, size=(2, 3), mode="area") ** 3, IMG),
    "pixel_shuffle": (lambda L, x: F(L).pixel_shuffle(x.reshape(1, 4, 2, 4), 2) ** 3, IMG),
    "pixel_unshuffle": (lambda L, x: F(L).pixel_unshuffle(x, 2) ** 3, IMG),
    "channel_shuffle": (lambda L, x: F(L).channel_shuffle(x, 2) ** 3, IMG),
    "grid_sample": (lambda L, x: F(L).grid_sample(
        x, x[:, :, :3, :2].permute(0, 2, 3, 1).tanh() * 0.8, align_corners=False) ** 2, IMG),
    "grid_sample_nearest": (lambda L, x: F(L).grid_sample(
        x.exp(), x[:, :, :3, :2].permute(0, 2, 3, 1) * 1.1, mode="nearest",
        align_corners=False) ** 2, IMG),
    "grid_sample_3d": (lambda L, x: F(L).grid_sample(
        x, x[:, :, :2, :2, :2].permute(0, 2, 3, 4, 1)[..., :1].expand(1, 2, 2, 2, 3).tanh()
        * 1.1, align_corners=False) ** 2, VOL[:, :1]),
    "grid_sample_3d_border": (lambda L, x: F(L).grid_sample(
        x.exp(), x[0, :, :2, :2].reshape(1, 2, 2, 1, 3) * 1.4, padding_mode="border",
        align_corners=True), VOL[:, :1]),
    "grid_sample_3d_nearest": (lambda L, x: F(L).grid_sample(
        x.exp(), x[0, :, :2, :2].reshape(1, 2, 2, 1, 3) * 0.9, mode="nearest",
        align_corners=False) ** 2, VOL[:, :1]),
    "grid_sample_zeros_outside": (lambda L, x: F(L).grid_sample(
        x, x[:, :, :3, :2].permute(0, 2, 3, 1) * 1.3, align_corners=True), IMG),
    "grid_sample_border": (lambda L, x: F(L).grid_sample(
        x, x[:, :, :3, :2].permute(0, 2, 3, 1) * 1.3, padding_mode="border",
        align_corners=False) ** 2, IMG),
    "grid_sample_reflection": (lambda L, x: F(L).grid_sample(
        x.exp(), x[:, :, 1:, 2:].permute(0, 2, 3, 1) * 1.6, padding_mode="reflection",
        align_corners=True), IMG),
    "affine_grid": (lambda L, x: F(L).affine_grid(x.reshape(-1)[:6].sin().reshape(1, 2, 3),
                                                  (1, 1, 2, 3), align_corners=False) ** 3, V4),
    "embedding": (lambda L, x: F(L).embedding(L.tensor([[0, 2, 2]]), x) ** 3, M),
    "embedding_bag": (lambda L, x: F(L).embedding_bag(L.tensor([0, 2, 2, 1]), x,
                                                      L.tensor([0, 1]), mode="mean") ** 3, M),
    "one_hot_matmul": (lambda L, x: F(L).one_hot(L.tensor([0, 2]), 3).to(x.dtype) @ x ** 3, M),
    "sdpa": (lambda L, x: F(L).scaled_dot_product_attention(x, x.sin(), x.cos()), V4),
    "sdpa_causal": (lambda L, x: F(L).scaled_dot_product_attention(
        x, x.sin(), x.cos(), is_causal=True), V4),
    # --- losses
    "mse_loss": (lambda L, x: F(L).mse_loss(x[0], x[1].sin()), N),
    "l1_loss": (lambda L, x: F(L).l1_loss(x[0] ** 3, x[1]), N),
    "smooth_l1_loss": (lambda L, x: F(L).smooth_l1_loss(x[0], x[1], beta=0.5), N),
    "huber_loss": (lambda L, x: F(L).huber_loss(x[0], x[1], delta=0.5), N),
    "bce": (lambda L, x: F(L).binary_cross_entropy(x[0].sigmoid(), x[1].sigmoid()), N),
    "bce_logits": (lambda L, x: F(L).binary_cross_entropy_with_logits(
        x[0], x[1].sigmoid(), pos_weight=x[1].exp().detach()), N),
    "cross_entropy": (lambda L, x: F(L).cross_entropy(x, L.tensor([2, 0])), N),
    "cross_entropy_soft": (lambda L, x: F(L).cross_entropy(x, x.flip(0).softmax(1),
                                                           label_smoothing=0.1), N),
    "nll_loss": (lambda L, x: F(L).nll_loss(x.log_softmax(1), L.tensor([1, 2]),
                                            weight=x[0].exp().detach()), N),
    "kl_div": (lambda L, x: F(L).kl_div(x[0].log_softmax(0), x[1].softmax(0),
                                        reduction="batchmean"), N),
    "kl_div_log_target": (lambda L, x: F(L).kl_div(x[0], x[1], reduction="sum",
                                                   log_target=True), N),
    "poisson_nll": (lambda L, x: F(L).poisson_nll_loss(x[0], x[1].exp()), N),
    "poisson_nll_full": (lambda L, x: F(L).poisson_nll_loss(x[0].exp(), x[1] * 3,
                                                            log_input=False, full=True), P),
    "gaussian_nll": (lambda L, x: F(L).gaussian_nll_loss(x[0], x[1] ** 2, x[0].exp()), N),
    "soft_margin": (lambda L, x: F(L).soft_margin_loss(x[0] * x[1], L.tensor([1., -1, 1],
                                                                            dtype=x.dtype)), N),
    "margin_ranking": (lambda L, x: F(L).margin_ranking_loss(
        x[0], x[1], L.tensor([1., -1, 1], dtype=x.dtype), margin=0.1) ** 3, N),
    "hinge_embedding": (lambda L, x: F(L).hinge_embedding_loss(
        x[0] * x[1], L.tensor([1., -1, 1], dtype=x.dtype)) ** 3, N),
    "cosine_embedding": (lambda L, x: F(L).cosine_embedding_loss(
        x[:2], x[2:], L.tensor([1, -1])), R),
    "triplet_margin": (lambda L, x: F(L).triplet_margin_loss(x[:1], x[1:2], x[2:3],
                                                             margin=5.0), R),
    "multi_margin": (lambda L, x: F(L).multi_margin_loss(x ** 3, L.tensor([1, 0])), N),
    "multilabel_soft_margin": (lambda L, x: F(L).multilabel_soft_margin_loss(
        x, L.tensor([[1., 0, 1], [0, 1, 1]], dtype=x.dtype)), N),
    "multilabel_margin": (lambda L, x: F(L).multilabel_margin_loss(
        x ** 3, L.tensor([[2, -1, 0], [1, 0, -1]])), N),
    "ctc_loss": (lambda L, x: F(L).ctc_loss(x.reshape(4, 1, 3).log_softmax(2),
                                            L.tensor([[1, 2]]), L.tensor([4]), L.tensor([2])),
                 R),
    # --- linalg
    "det": (lambda L, x: L.linalg.det(x), M),
    "slogdet": (lambda L, x: L.linalg.slogdet(x)[1], M),
    "logdet": (lambda L, x: L.logdet(x), S),
    "inv": (lambda L, x: L.linalg.inv(x), M),
    "inv_ex": (lambda L, x: L.linalg.inv_ex(x)[0], M),
    "solve": (lambda L, x: L.linalg.solve(x, x[:, :2].sin()), M),
    "solve_ex": (lambda L, x: L.linalg.solve_ex(x, x[0])[0], M),
    "solve_triangular": (lambda L, x: L.linalg.solve_triangular(x.triu(), x[:, :2].exp(),
                                                                upper=True), M),
    "cholesky": (lambda L, x: L.linalg.cholesky(x), S),
    "cholesky_ex": (lambda L, x: L.linalg.cholesky_ex(x)[0], S),
    "cholesky_solve": (lambda L, x: L.cholesky_solve(x[:, :2].exp(),
                                                     L.linalg.cholesky(x)), S),
    "cholesky_inverse": (lambda L, x: L.cholesky_inverse(L.linalg.cholesky(x)), S),
    "qr_q": (lambda L, x: L.linalg.qr(x)[0], R),
    "qr_r": (lambda L, x: L.linalg.qr(x)[1], R),
    "eigh": (lambda L, x: L.linalg.eigh(x)[0] + L.linalg.eigh(x)[1].abs().sum(0), S),
    "eigvalsh": (lambda L, x: L.linalg.eigvalsh(x), S),
    "svdvals": (lambda L, x: L.linalg.svdvals(x), R),
    "svd_u": (lambda L, x: L.linalg.svd(x, full_matrices=False)[0] ** 2, R),
    "pinv": (lambda L, x: L.linalg.pinv(x), R),
    "matrix_exp": (lambda L, x: L.linalg.matrix_exp(x * 0.3), M),
    "matrix_power": (lambda L, x: L.linalg.matrix_power(x, 3), M),
    "matrix_power_neg": (lambda L, x: L.linalg.matrix_power(x, -2), M),
    "matrix_norm_fro": (lambda L, x: L.linalg.matrix_norm(x), M),
    "matrix_norm_nuc": (lambda L, x: L.linalg.matrix_norm(x, "nuc"), M),
    "matrix_norm_2": (lambda L, x: L.linalg.matrix_norm(x, 2), M),
    "vector_norm": (lambda L, x: L.linalg.vector_norm(x, 3, dim=1), N),
    "vector_norm_inf": (lambda L, x: L.linalg.vector_norm(x, float("inf"), dim=1) ** 3, N),
    "linalg_norm": (lambda L, x: L.linalg.norm(x), M),
    "cond": (lambda L, x: L.linalg.cond(x), M),
    "multi_dot": (lambda L, x: L.linalg.multi_dot([x, x.sin(), x.cos()]), M),
    "vecdot": (lambda L, x: L.linalg.vecdot(x, x.exp()), N),
    "vander": (lambda L, x: L.linalg.vander(x[0], N=4), N),
    "lstsq": (lambda L, x: L.linalg.lstsq(x, x[:, :2].exp()).solution, R),
    "lu_factor_solve": (lambda L, x: L.linalg.lu_solve(*L.linalg.lu_factor(x), x[:, :2].exp()),
                        M),
    "lu": (lambda L, x: L.linalg.lu(x)[2] + L.linalg.lu(x)[1], M),
    "lu_tall": (lambda L, x: L.linalg.lu(x)[1].sum(1) + L.linalg.lu(x)[2].sum(0).sin()[0], R),
    "lu_wide": (lambda L, x: L.linalg.lu(x.mT)[1].sum(0).exp().sum() + L.linalg.lu(x.mT)[2][0], R),
    "lu_factor_tall": (lambda L, x: L.linalg.lu_factor(x)[0], R),
    "tensorinv": (lambda L, x: L.linalg.tensorinv(x.reshape(3, 3), 1), M),
    "tensorsolve": (lambda L, x: L.linalg.tensorsolve(x, x[0].exp()), M),
    "householder_product": (lambda L, x: L.linalg.householder_product(x, x[0, :2].tanh()), R),
    "eig_values": (lambda L, x: L.linalg.eigvals(x).real, M),
    # --- complex values and the fft (a real input, a real result)
    "complex_exp_abs": (lambda L, x: L.complex(x[0], x[1]).exp().abs(), N),
    "complex_mul_div": (lambda L, x: L.view_as_real(L.complex(x[0], x[1]) ** 2
                                                    / L.complex(x[1], x[0] + 3)), N),
    "complex_angle": (lambda L, x: L.complex(x[0], x[1]).angle(), N),
    "complex_log_sqrt": (lambda L, x: L.complex(x[0], x[1]).log().imag
                         + L.complex(x[0], x[1]).sqrt().real, N),
    "complex_conj_matmul": (lambda L, x: (L.complex(x, x.flip(0)) @ L.complex(x, x).mT.conj()
                                          ).real, N),
    "complex_sgn": (lambda L, x: L.complex(x[0], x[1]).sgn().imag * x[0], N),
    "fft_rfft": (lambda L, x: L.fft.rfft(x ** 2).abs(), N),
    "fft_fft2_ifft": (lambda L, x: L.fft.ifft(L.fft.fft2(x.exp())).real * x, N),
    "fft_irfft": (lambda L, x: L.fft.irfft(L.fft.rfft(x) * x[:, :2], n=3) ** 2, N),
    # --- in place (on a copy)
    "mul_": (lambda L, x: (x * 1).mul_(x).exp_(), N),
    "add_clamp_": (lambda L, x: (x * 2).add_(x ** 2).clamp_(-1.0, 2.0) ** 3, N),
    "setitem": (lambda L, x: _setitem(x * 1, x[0] ** 2), N),
    "setitem_broadcast": (lambda L, x: _setitem(x.exp() * 1, x[0, 0] ** 2, (slice(None), 1)), N),
    "setitem_advanced": (lambda L, x: _setitem(x.sin(), x[0, :2] ** 3,
                                               (1, L.tensor([2, 0]))), N),
    "masked_fill_": (lambda L, x: (x ** 3).masked_fill_(x > 0.5, 1.0), N),
    "index_put_": (lambda L, x: (x * 1).index_put_((L.tensor([1, 0]),), x[0].sin() * x[1]), N),
    # --- more torch idioms
    "polar": (lambda L, x: L.view_as_real(L.polar(x[0].abs() + 0.5, x[1])), N),
    "aminmax": (lambda L, x: L.aminmax(x, dim=1)[0] ** 3 + L.aminmax(x, dim=1)[1] ** 2, N),
    "std_correction": (lambda L, x: x.std(dim=1, correction=0), N),
    "mha_forward": (lambda L, x: L.nn.functional.multi_head_attention_forward(
        x, x.sin(), x.cos(), 3, 1, L.eye(9, 3, dtype=x.dtype).reshape(9, 3) + 0.1,
        None, None, None, False, 0.0, L.eye(3, dtype=x.dtype), None, training=False)[0],
        V4.reshape(2, 2, 3)),
    "cross_entropy_ignore": (lambda L, x: F(L).cross_entropy(x, L.tensor([2, -100])), N),
    "nll_loss_2d": (lambda L, x: F(L).nll_loss(x.log_softmax(1), L.tensor([[[0, 1, 1, 0]] * 4]
                                                                           * 1)), IMG),
    "interp_scale": (lambda L, x: F(L).interpolate(x, scale_factor=1.5, mode="bilinear")
                     ** 3, IMG),
    "tensor_unfold": (lambda L, x: x.unfold(1, 2, 1) ** 3, N),
    "cummax_values_grad": (lambda L, x: x.cumsum(1).cummax(1).values.exp(), N),
    "sum_to_size": (lambda L, x: (x ** 3).sum_to_size(1, 3), N),
    "atleast_flatten": (lambda L, x: L.flatten(L.atleast_3d(x ** 3), 1), N),
    "block_diag": (lambda L, x: L.block_diag(x, x.t()) ** 3, N),
    "cartesian_prod": (lambda L, x: L.cartesian_prod(x[0], x[1]) ** 3, N),
    "triu_indices_gather": (lambda L, x: x[tuple(L.triu_indices(3, 3))] ** 3, M),
    "bucketize_where": (lambda L, x: L.where(L.bucketize(x, L.tensor([0.0])) > 0, x ** 2,
                                             x ** 3), N),
    "embedding_max_norm": (lambda L, x: F(L).embedding(L.tensor([0, 2]), x * 1,
                                                       max_norm=1.0) ** 3, M),
    "group_norm_affine": (lambda L, x: F(L).group_norm(x, 2, x[0, :, 0, 0].exp(),
                                                       x[0, :, 1, 1]), IMG),
    "layer_norm_2d": (lambda L, x: F(L).layer_norm(x, (2, 4)), IMG[:, :, :2],
                      {"fd3": True}),
    "logsumexp_dims": (lambda L, x: x.logsumexp((0, 2)), V4),
    "softmax_dim0": (lambda L, x: (x.softmax(0) * x).sum(1), V4),
    "hardswish_cubed": (lambda L, x: F(L).hardswish(x) ** 3, W),
    "addbmm": (lambda L, x: L.addbmm(x[0], x, x.transpose(1, 2).exp()[:, :, :2]),
               V4[:, :, :2].copy()),
    "chain_matmul": (lambda L, x: L.linalg.multi_dot([x, x.t(), x]), N),
    # --- special
    "special_entr": (lambda L, x: L.special.entr(x), P),
    "special_erfcx": (lambda L, x: L.special.erfcx(x), N),
    "special_ndtr": (lambda L, x: L.special.ndtr(x), N),
    "special_ndtri": (lambda L, x: L.special.ndtri(x), H),
    "special_log_ndtr": (lambda L, x: L.special.log_ndtr(x), N),
    "special_i0e": (lambda L, x: L.special.i0e(x), N),
    "special_i1": (lambda L, x: L.special.i1(x), N),
    "special_i1e": (lambda L, x: L.special.i1e(x), N),
    "special_xlogy": (lambda L, x: L.special.xlogy(x[0], x[1]), P),
    "special_logit_eps": (lambda L, x: L.special.logit(x, eps=0.2), H),
    "special_sinc": (lambda L, x: L.special.sinc(x), N),
    "special_expit": (lambda L, x: L.special.expit(x), N),
    "special_exp2": (lambda L, x: L.special.exp2(x), N),
    "special_gammaln": (lambda L, x: L.special.gammaln(x), P),
    "special_psi": (lambda L, x: L.special.psi(x), P),
    "special_polygamma2": (lambda L, x: L.special.polygamma(2, x), P),
    "special_multigammaln": (lambda L, x: L.special.multigammaln(x + 2, 3), P),
    "special_zeta": (lambda L, x: L.special.zeta(x + 1.5, 2.0), P),  # torch raises
    "special_zeta_q": (lambda L, x: L.special.zeta(2.5, x + 1), P),
    "special_zeta_q_tensor": (lambda L, x: L.special.zeta(x[0].detach() + 2, x[1]), P),
    "special_gammainc": (lambda L, x: L.special.gammainc(x[0].detach() + 1, x[1]), P),
    "special_gammaincc": (lambda L, x: L.special.gammaincc(x[0].detach() + 1, x[1]), P),
    "special_gammainc_a": (lambda L, x: L.special.gammainc(x[0], x[1]), P),  # torch raises
    "special_logsumexp": (lambda L, x: L.special.logsumexp(x, 1), N),
    "special_softmax": (lambda L, x: L.special.softmax(x, 1), N),
    "special_log_softmax": (lambda L, x: L.special.log_softmax(x, 1), N),
    "special_bessel_j0": (lambda L, x: L.special.bessel_j0(x), N),
    "special_bessel_j1": (lambda L, x: L.special.bessel_j1(x), N),
    "special_round_plus": (lambda L, x: L.special.round(x) + x ** 3, N),
}

_V = {}


def _vec(shape, k):
    key = (tuple(shape), k)
    if key not in _V:
        _V[key] = np.random.default_rng(100 + k).standard_normal(tuple(shape))
    return _V[key]


def _np(L, g):
    if L is torch and g._is_zerotensor():  # torch's abs'' (force=True imports torch._dynamo)
        return np.zeros(tuple(g.shape))
    return g.detach().numpy().copy()


def _orders(L, f, x0):
    """For orders 1-3: ``('val', value, requires_grad)``, ``('raise', message)``, ``('const',)``
    (the previous derivative does not require grad) or ``('none',)`` (no path to ``x``)."""
    x = L.tensor(x0, requires_grad=True)
    y = f(L, x)
    cur = (y * L.tensor(_vec(y.shape, 0))).sum()
    out = []
    for k in range(3):
        if not cur.requires_grad:
            out.append(("const",))
            break
        try:
            (g,) = L.autograd.grad(cur, x, create_graph=k < 2, allow_unused=True)
        except Exception as e:  # noqa: BLE001  (recorded, compared below)
            out.append(("raise", f"{type(e).__name__}: {e}"))
            break
        if g is None:
            out.append(("none",))
            break
        out.append(("val", _np(L, g), g.requires_grad))
        cur = (g * L.tensor(_vec(x.shape, k + 1))).sum()
    return out


def _by_differences(f, x0, order, eps=1e-5):
    """Derivative ``order`` as central differences of torch's derivative ``order - 1`` (where
    torch's own is wrong: ``layer_norm``'s, ``batch_norm``'s, ``instance_norm``'s third (their
    double-backward formula differentiated again), ``logcumsumexp``'s third (nan); or where
    torch has none: skiff's is checked against it)."""
    def below(xa):
        x = torch.tensor(xa, requires_grad=True)
        y = f(torch, x)
        cur = (y * torch.tensor(_vec(y.shape, 0))).sum()
        for k in range(order - 1):
            (g,) = torch.autograd.grad(cur, x, create_graph=k < order - 2)
            cur = (g * torch.tensor(_vec(x.shape, k + 1))).sum()
        return cur.item()
    out = np.zeros(x0.size)
    for i in range(x0.size):
        e = np.zeros(x0.size)
        e[i] = eps
        e = e.reshape(x0.shape)
        out[i] = (below(x0 + e) - below(x0 - e)) / (2 * eps)
    return out.reshape(x0.shape)


_NAMES = list(CASES)
_CHUNK = 25  # cases per test (one pytest item each cost ~3 ms of collection and setup)
_CHUNKS = {f"{_NAMES[i]}..{_NAMES[min(i + _CHUNK, len(_NAMES)) - 1]}": _NAMES[i:i + _CHUNK]
           for i in range(0, len(_NAMES), _CHUNK)}


@pytest.mark.parametrize("chunk", list(_CHUNKS))
def test_derivatives_match_torch(chunk):
    """Every case of the chunk, each failure named (``check(name)`` runs one case)."""
    failed = []
    for name in _CHUNKS[chunk]:
        try:
            check(name)
        except AssertionError as e:
            failed.append(f"{name}: {e}")
    assert not failed, "\n".join(failed)


def check(name, torch_raises=None):
    """One case; ``torch_raises`` (a dict), if given, gets ``name: (order, torch's error,
    skiff's result)`` where torch has no derivative of that order."""
    f, x0, opts = (*CASES[name], {})[:3]
    want = _orders(torch, f, x0)
    got = _orders(skiff, f, x0)
    if opts.get("fd3"):
        want[2] = ("val", _by_differences(f, x0, 3), False)
    for k, w in enumerate(want):
        order, where = k + 1, f"{name} order {k + 1}"
        s = got[k] if k < len(got) else ("none",)
        if w[0] == "raise":
            if torch_raises is not None:
                torch_raises[name] = (order, w[1], s)
            if order > 1 and s[0] != "raise":  # skiff's has one: it must be right
                d = _by_differences(f, x0, order)
                v = s[1] if s[0] == "val" else np.zeros_like(d)
                np.testing.assert_allclose(v, d, rtol=1e-6, atol=1e-8 * max(
                    1.0, np.abs(d).max()), err_msg=f"{where} (torch's raises)")
            return
        if opts.get("none3") and order == 3 and s[0] == "none" and not np.any(w[1]):
            return  # a last grad without create_graph: see test_last_grad_... below
        if w[0] in ("const", "none"):  # torch's derivative is 0 here: skiff's is 0 or absent
            assert s[0] != "raise", f"{where}: {s[1]}"
            assert s[0] != "val" or not np.any(s[1]), f"{where}: torch's 0, skiff's {s[1]}"
            return
        assert s[0] == "val", f"{where}: torch's a value, skiff's {s}"
        rtol = 1e-6 if opts.get("fd3") and order == 3 else opts.get("rtol", 1e-9)
        np.testing.assert_allclose(s[1], w[1], rtol=rtol, atol=rtol * 1e-2 * max(
            1.0, np.abs(w[1]).max()), err_msg=where)
        assert s[2] or not w[2], (f"{where}: skiff's derivative is a constant, torch's a "
                                  "function of the input")


def test_last_grad_of_a_tied_derivative_is_zeros_as_torchs():
    """A ReLU's (PReLU's) second derivative is zeros tied to the input; a last ``grad`` of it
    without ``create_graph`` is torch's zeros (skiff's found no path: None, or "appears to not
    have been used in the graph" without ``allow_unused``). Needs the round-47 change to
    ``torch_autograd.grad`` (h5-requests.md)."""
    for name in ("relu", "prelu"):
        for L in (torch, skiff):
            third = _orders(L, *CASES[name][:2])[2]
            assert third[0] == "val" and not np.any(third[1]), (L.__name__, third)
