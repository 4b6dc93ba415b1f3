"""Round 44 (h7): a torch user's calls, each against torch 2.13 on the CPU (float64):
``x.size()`` a ``torch.Size``, ``is_contiguous(memory_format=)`` read from the strides
(``contiguous``/``clone``/``to`` with ``channels_last`` lay the data out so), ``contiguous()``
of a strided view a row-major copy, ``torch.layout``/``strided``/``x.layout``, ``is_conj()``
after ``conj()``, the other legacy tensor types, ``einsum``'s sublist form and a length-1
axis broadcast in its gradient, ``masked_fill`` with a value tensor that needs a gradient,
``remove_parametrizations`` of a parametrized ``weight_norm``."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import skiff

torch = pytest.importorskip("torch")

R = np.random.default_rng(4407)
X = R.standard_normal((2, 3, 4, 5))


def test_size_is_a_torch_size():
    s, ts = skiff.tensor(X).size(), torch.tensor(X).size()
    assert type(s).__name__ == type(ts).__name__ == "Size"
    assert repr(s) == repr(ts) == "torch.Size([2, 3, 4, 5])"
    assert repr(s[1:]) == repr(ts[1:]) and type(s[1:]) is skiff.Size
    assert s.numel() == ts.numel() == 120 and s == ts == (2, 3, 4, 5) and hash(s) == hash(ts)
    assert s[-1] == ts[-1] == skiff.tensor(X).size(-1) == 5
    assert pickle.loads(pickle.dumps(s)) == s
    assert skiff.zeros(s).shape == (2, 3, 4, 5) and skiff.ones(s[2:]).shape == (4, 5)


# each: a tensor's strides (from a permuted/transposed/sliced array) and the format asked
LAYOUTS = [
    ("contiguous", lambda a: a),
    ("nhwc view", lambda a: a.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2)),
    ("transposed", lambda a: a.transpose(2, 3)),
    ("one channel", lambda a: a[:, :1]),
    ("1x1 spatial", lambda a: a[:, :, :1, :1]),
    ("sliced", lambda a: a[:, :, ::2]),
    ("3-D", lambda a: a[0]),
    ("5-D", lambda a: a[:, :, None].expand(2, 3, 2, 4, 5).contiguous()),
    ("5-D ndhwc", lambda a: a[:, :, None].expand(2, 3, 2, 4, 5).permute(0, 2, 3, 4, 1)
     .contiguous().permute(0, 4, 1, 2, 3)),
]
FORMATS = ["contiguous_format", "channels_last", "channels_last_3d", "preserve_format"]


@pytest.mark.parametrize("case", [c[0] for c in LAYOUTS])
def test_is_contiguous_reads_the_strides_as_torchs(case):
    make = dict(LAYOUTS)[case]
    a, b = make(skiff.tensor(X)), make(torch.tensor(X))
    assert a.stride() == b.stride()
    assert a.is_contiguous() == b.is_contiguous()
    for fmt in FORMATS:
        assert a.is_contiguous(memory_format=getattr(skiff, fmt)) == b.is_contiguous(
            memory_format=getattr(torch, fmt)), fmt


def test_contiguous_clone_to_lay_out_channels_last_as_torchs():
    w = R.standard_normal(X.shape)
    got = {}
    for lib in (skiff, torch):
        x = lib.tensor(X, requires_grad=True)
        cl = x.contiguous(memory_format=lib.channels_last)
        outs = {"contiguous": cl, "clone": x.clone(memory_format=lib.channels_last),
                "to": x.to(memory_format=lib.channels_last),
                "back": cl.contiguous(), "t": x.transpose(1, 2).contiguous(),
                "cl3d": x[:, :, None].contiguous(memory_format=lib.channels_last_3d)}
        (cl * lib.tensor(w)).sum().backward()
        got[lib] = ({k: (v.stride(), v.is_contiguous(),
                         v.is_contiguous(memory_format=lib.channels_last),
                         v.detach().numpy().copy()) for k, v in outs.items()},
                    x.grad.numpy().copy())
        with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last"):
            x[0].contiguous(memory_format=lib.channels_last)
    (ours, og), (theirs, tg) = got[skiff], got[torch]
    for k in theirs:
        assert ours[k][:3] == theirs[k][:3], k
        np.testing.assert_array_equal(ours[k][3], theirs[k][3])
    np.testing.assert_array_equal(og, tg)


def test_layouts_are_torchs():
    x, t = skiff.tensor(X), torch.tensor(X)
    assert repr(x.layout) == repr(t.layout) == "torch.strided" and x.layout is skiff.strided
    assert isinstance(skiff.strided, skiff.layout) and x.layout != skiff.sparse_coo
    for name in ("sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc"):
        assert repr(getattr(skiff, name)) == repr(getattr(torch, name))
    i, v = [[0, 1], [1, 0]], [1.0, 2.0]
    sp, tsp = skiff.sparse_coo_tensor(i, v, (2, 2)), torch.sparse_coo_tensor(
        i, v, (2, 2), check_invariants=True)
    assert repr(sp.layout) == repr(tsp.layout) == "torch.sparse_coo"
    assert sp.layout is skiff.sparse_coo
    assert pickle.loads(pickle.dumps(skiff.strided)) is skiff.strided


def test_conj_marks_as_torchs_lazy_conj():
    z = R.standard_normal(3) + 1j * R.standard_normal(3)
    for lib in (skiff, torch):
        s = lib.tensor(z)
        got = (s.conj().is_conj(), s.conj().conj().is_conj(), s.conj_physical().is_conj(),
               lib.conj_physical(s).is_conj(), s.conj().resolve_conj().is_conj(),
               lib.resolve_conj(s.conj()).is_conj(), lib.is_conj(s.conj()), s.is_conj(),
               lib.tensor(z.real).conj().is_conj(), s.conj().is_neg())
        assert got == (True, False, False, False, False, False, True, False, False, False), lib
        np.testing.assert_array_equal(s.conj().resolve_conj().numpy(), z.conj())
        np.testing.assert_array_equal(s.conj().conj().numpy(), z)
    a = skiff.tensor(z, requires_grad=True)
    (a.conj().resolve_conj() * skiff.tensor(z)).abs().sum().backward()
    b = torch.tensor(z, requires_grad=True)
    (b.conj().resolve_conj() * torch.tensor(z)).abs().sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), b.grad.resolve_conj().numpy(), rtol=1e-12)


@pytest.mark.parametrize("name", ["IntTensor", "ShortTensor", "CharTensor", "ByteTensor",
                                  "BoolTensor", "HalfTensor", "BFloat16Tensor"])
def test_the_other_legacy_types_are_torchs(name):
    ours, theirs = getattr(skiff, name), getattr(torch, name)
    data = [1, 0, 3]
    a, b = ours(data), theirs(data)
    assert str(a.dtype).replace("bool_", "bool") == str(b.dtype).removeprefix("torch.")
    assert isinstance(a, ours) and not isinstance(skiff.zeros(2, dtype=skiff.float64), ours)
    np.testing.assert_array_equal(np.asarray(a.float().numpy()), b.float().numpy())
    assert ours(2, 3).shape == tuple(theirs(2, 3).shape) and ours().shape == (0,)
    assert ours(skiff.zeros(2, 3).size()).shape == (2, 3)


def test_einsum_sublist_form_and_broadcast_gradient():
    a, b = R.standard_normal((2, 3, 4)), R.standard_normal((2, 4, 5))
    p, q = R.standard_normal((2, 1, 4)), R.standard_normal((3, 4))
    got = []
    for lib in (skiff, torch):
        ta, tb = lib.tensor(a, requires_grad=True), lib.tensor(b, requires_grad=True)
        tp, tq = lib.tensor(p, requires_grad=True), lib.tensor(q, requires_grad=True)
        y = lib.einsum(ta, [0, 1, 2], tb, [0, 2, 3], [0, 1, 3])
        z = lib.einsum(ta, [Ellipsis, 2], [Ellipsis])  # no output list: ... then the rest
        u = lib.einsum("...i,...i->...", tp, tq)  # (2, 1) against (3,): broadcast to (2, 3)
        w = lib.einsum(tp, [0, 1, 2], tq, [1, 2])  # implicit output, a length-1 'b'
        (y.sum() + (z * z).sum() + (u * u).sum() + (w ** 3).sum()).backward()
        got.append([v.detach().numpy() for v in (y, z, u, w, ta.grad, tb.grad, tp.grad,
                                                 tq.grad)])
    for ours, theirs in zip(*got):
        assert ours.shape == theirs.shape
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)


def test_masked_fill_differentiates_a_value_tensor():
    x = R.standard_normal((3, 4))
    got = []
    for lib in (skiff, torch):
        t, v = lib.tensor(x, requires_grad=True), lib.tensor(0.7, requires_grad=True)
        mask = lib.tensor([True, False, True, False])
        y = t.masked_fill(mask, v) * lib.tensor(x)
        y2 = lib.masked_fill(t, lib.tensor(x) > 0, v * 2)
        (y.sum() + y2.pow(2).sum()).backward()
        got.append([a.detach().numpy() for a in (y, y2, t.grad, v.grad)])
        with pytest.raises(RuntimeError, match="only supports a 0-dimensional value tensor"):
            t.masked_fill(mask, lib.tensor([1.0], requires_grad=True))
    for ours, theirs in zip(*got):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12)


def test_weight_norm_parametrization_removed_as_torchs():
    w = R.standard_normal((4, 3))
    got = []
    for lib in (skiff, torch):
        lin = lib.nn.Linear(3, 4).double()
        with lib.no_grad():
            lin.weight.copy_(lib.tensor(w))
        lin = lib.nn.utils.parametrizations.weight_norm(lin, dim=1)
        with lib.no_grad():
            lin.parametrizations.weight.original0.mul_(2.0)
        lin = lib.nn.utils.parametrize.remove_parametrizations(lin, "weight")
        assert sorted(n for n, _ in lin.named_parameters()) == ["bias", "weight"]
        got.append(lin.weight.detach().numpy())
    np.testing.assert_allclose(got[0], got[1], rtol=1e-12)


def test_prod_differentiates_to_any_order_as_torchs():
    """``autograd.functional.hvp`` of a product (and a third derivative through a zero)."""
    x0 = np.array([[0.7, -1.2, 0.0, 2.0], [0.5, 1.5, -0.3, 0.9]])
    w = np.arange(8.0).reshape(2, 4)
    got = []
    for lib in (skiff, torch):
        x = lib.tensor(x0, requires_grad=True)
        y = (x ** 3).prod(dim=1).sum() + x.prod() + x[1].prod(0, keepdim=True).sum()
        g, = lib.autograd.grad(y, x, create_graph=True)
        h, = lib.autograd.grad((g * lib.tensor(w)).sum(), x, create_graph=True)
        k, = lib.autograd.grad(h.pow(2).sum(), x)
        hv = lib.autograd.functional.hvp(lambda v: (v ** 3).prod(), lib.tensor(x0[1]),
                                         lib.ones(4))[1]
        got.append([t.detach().numpy() for t in (g, h, k, hv)])
    for ours, theirs in zip(*got):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)


def test_module_get_buffer_set_submodule_and_to_keywords_as_torchs():
    got = []
    for lib in (skiff, torch):
        m = lib.nn.Sequential(lib.nn.Conv2d(3, 4, 3), lib.nn.BatchNorm2d(4), lib.nn.Linear(2, 2))
        out = [tuple(m.get_buffer("1.running_var").shape)]
        for target in ("1.weight", "1.nope"):
            with pytest.raises(AttributeError) as err:
                m.get_buffer(target)
            out.append(str(err.value))
        m.set_submodule("2", lib.nn.Identity())
        out.append(type(m[2]).__name__)
        # torch's usual keywords: non_blocking, a tensor's dtype, channels-last weights
        m.to("cpu", non_blocking=True)
        m.to(lib.zeros(1, dtype=lib.float64))
        out.append(str(m[0].weight.dtype).removeprefix("torch."))
        m.to(memory_format=lib.channels_last)
        w = m[0].weight
        out += [w.stride(), w.is_contiguous(memory_format=lib.channels_last),
                m[1].weight.stride()]
        got.append(out)
    assert got[0] == got[1]


def test_state_dict_post_hooks_as_torchs():
    got = []
    for lib in (skiff, torch):
        m = lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.Sequential(lib.nn.Linear(2, 1)))
        seen = []
        m.register_state_dict_post_hook(
            lambda mod, sd, prefix, meta, seen=seen: seen.append((type(mod).__name__, prefix)))
        m[1].register_state_dict_post_hook(
            lambda mod, sd, prefix, meta, seen=seen: seen.append((type(mod).__name__, prefix)))
        h = m[0].register_state_dict_post_hook(
            lambda mod, sd, prefix, meta: [sd.pop("0.bias")] and None)
        keys = list(m.state_dict())
        h.remove()
        m[1]._register_state_dict_hook(lambda mod, sd, prefix, meta: {"only": 1})
        legacy = list(m.state_dict())
        bad = m.register_state_dict_post_hook(lambda mod, sd, prefix, meta: {})
        with pytest.raises(RuntimeError, match="state_dict post-hook must return None"):
            m.state_dict()
        bad.remove()
        got.append((seen, keys, legacy))
    assert got[0] == got[1]


def test_storage_offset_data_ptr_dim_order_frombuffer_as_torchs():
    got = []
    for lib in (skiff, torch):
        x = lib.tensor(X)
        views = [x, x[1], x[:, 1:], x.reshape(-1)[7:], x[1, 2].t(), x.transpose(1, 3)[0],
                 x.contiguous(memory_format=lib.channels_last)[1:]]
        out = [(v.storage_offset(), v.dim_order(),
                (v.data_ptr() - x.data_ptr()) // 8 if i < 6 else None)
               for i, v in enumerate(views)]
        e = x.new_empty_strided((2, 3), (3, 1))
        out.append((tuple(e.shape), str(e.dtype).removeprefix("torch.")))
        buf = bytearray(np.arange(6, dtype=np.int16).tobytes())
        t = lib.frombuffer(buf, dtype=lib.int16, count=4, offset=2)
        t[0] = 40  # torch's shares the buffer's memory
        out.append((t.tolist(), np.frombuffer(buf, dtype=np.int16).tolist()))
        got.append(out)
    assert got[0] == got[1]


@pytest.mark.parametrize("name", ["erf", "asin", "acos", "atan", "sinh", "cosh", "asinh",
                                  "acosh", "atanh"])
def test_unary_ops_differentiate_to_third_order_as_torchs(name):
    x0 = np.array([0.3, -0.7, 0.5, 0.9]) + (1.2 if name == "acosh" else 0.0)
    got = []
    for lib in (skiff, torch):
        x = lib.tensor(x0, requires_grad=True)
        g, = lib.autograd.grad(getattr(x, name)().sum(), x, create_graph=True)
        h, = lib.autograd.grad((g ** 2).sum(), x, create_graph=True)
        k, = lib.autograd.grad(h.sum(), x)
        got.append([t.detach().numpy() for t in (g, h, k)])
    for ours, theirs in zip(*got):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10)


@pytest.mark.parametrize("name", ["lgamma", "digamma", "erfinv", "polygamma"])
def test_special_ops_differentiate_to_third_order_as_torchs(name):
    x0 = np.array([0.3, 1.7, 2.5, 0.9]) * (0.36 if name == "erfinv" else 1.0)
    got = []
    for lib in (skiff, torch):
        x = lib.tensor(x0, requires_grad=True)
        y = x.polygamma(2) if name == "polygamma" else getattr(x, name)()
        g, = lib.autograd.grad(y.sum(), x, create_graph=True)
        h, = lib.autograd.grad((g ** 2).sum(), x, create_graph=True)
        k, = lib.autograd.grad(h.sum(), x)
        got.append([t.detach().numpy() for t in (g, h, k)])
    for ours, theirs in zip(*got):  # (scipy's and torch's polygamma(3) differ by ~2e-9)
        np.testing.assert_allclose(ours, theirs, rtol=1e-8)


def test_attention_float_mask_gets_its_gradient_as_torchs():
    """A learned relative-position bias passed as ``attn_mask`` (T5/ALiBi style)."""
    q, k, v = (R.standard_normal((2, 3, 4, 8)) for _ in range(3))
    bias0 = R.standard_normal((3, 4, 4))
    x0 = R.standard_normal((2, 4, 6))
    got = []
    for lib in (skiff, torch):
        tq, tk, tv = (lib.tensor(a, requires_grad=True) for a in (q, k, v))
        bias = lib.tensor(bias0, requires_grad=True)
        out = lib.nn.functional.scaled_dot_product_attention(tq, tk, tv, attn_mask=bias)
        mha = lib.nn.MultiheadAttention(6, 2, batch_first=True).double()
        with lib.no_grad():
            for i, p in enumerate(mha.parameters()):
                p.copy_(lib.tensor(np.linspace(-0.5, 0.5, p.numel()).reshape(tuple(p.shape))
                                   * (i + 1)))
        m2 = lib.tensor(bias0[:2].repeat(2, 0), requires_grad=True)  # (N * heads, T, S)
        x = lib.tensor(x0)
        y, _ = mha(x, x, x, attn_mask=m2, need_weights=False)
        (out.pow(2).sum() + y.pow(2).sum()).backward()
        got.append([a.detach().numpy() for a in (out, y, bias.grad, m2.grad, tq.grad)])
    for ours, theirs in zip(*got):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)


def test_device_type_is_torchs():
    x, t = skiff.zeros(2), torch.zeros(2)
    assert x.device.type == t.device.type == "cpu"
    assert skiff.device("cpu").type == torch.device("cpu").type
