"""Round 28: a torch AMP training loop (``autocast`` + ``amp.GradScaler``: scale, backward,
``unscale_``, ``clip_grad_norm_``, ``step``, ``update``; an inf step skipped and the scale
backed off) ported to skiff, against torch 2.13 on the CPU in float64 (torch's CPU autocast
leaves float64 alone, and so does skiff's since round 33: the same run)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import skiff
import skiff.amp


def _loop(lib, amp, w0, data):
    ps = [lib.tensor(w, requires_grad=True) for w in w0]
    opt = lib.optim.SGD(ps, lr=0.1, momentum=0.9)
    scaler = amp.GradScaler("cpu", init_scale=2.0 ** 10, growth_interval=2)
    out = []
    for step, (x, y) in enumerate(data):
        opt.zero_grad()
        with amp.autocast(device_type="cpu", dtype=lib.bfloat16):
            pred = lib.tensor(x) @ ps[0] + ps[1]
            loss = ((pred - lib.tensor(y)) ** 2).mean()
            if step == 3:
                loss = loss * float("inf")  # an overflow: the step is skipped
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        lib.nn.utils.clip_grad_norm_(ps, 1.0)
        ran = scaler.step(opt)
        scaler.update()
        out.append((float(loss.item()), scaler.get_scale(), ran is None,
                    [np.array(p.detach().numpy()) for p in ps]))
    return out


@pytest.mark.filterwarnings("ignore:skiff.autocast")
def test_amp_loop_against_torch():
    rng = np.random.default_rng(288)
    w0 = [rng.standard_normal((3, 2)), rng.standard_normal(2)]
    data = [(rng.standard_normal((5, 3)), rng.standard_normal((5, 2))) for _ in range(7)]
    ours = _loop(skiff, skiff.amp, w0, data)
    theirs = _loop(torch, torch.amp, w0, data)
    for (la, sa, na, pa), (lb, sb, nb, pb) in zip(ours, theirs):
        assert (sa, na) == (sb, nb)
        if np.isfinite(lb):
            assert abs(la - lb) <= 1e-12 * abs(lb)
        for a, b in zip(pa, pb):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-13)
    assert [s for _, s, _, _ in ours] != [2.0 ** 10] * 7  # the scale moved


def test_autocast_forms_and_errors(monkeypatch):
    from skiff.kernels.train.core import amp_torch

    monkeypatch.setitem(amp_torch._STATE, "warned", False)
    if not torch.cuda.is_available() and not skiff.cuda.is_available():
        # torch's (round 33): without CUDA the block runs with autocast disabled, warned
        for lib in (torch, skiff):
            with pytest.warns(UserWarning, match="CUDA is not available") as rec:
                with lib.amp.autocast("cuda", dtype=lib.float16):
                    assert not (torch.is_autocast_enabled("cuda") if lib is torch
                                else skiff.amp.is_autocast_enabled("cuda"))
            assert str(rec[0].message) == ("CUDA is not available or torch_xla is imported. "
                                           "Disabling autocast.")
    assert not skiff.amp.is_autocast_enabled()

    @skiff.amp.autocast("cpu", enabled=False)
    def f(x):
        return skiff.amp.is_autocast_enabled() or x

    assert f(3) == 3
    if skiff.cuda.is_available():
        with pytest.raises(ValueError, match="float16 or bfloat16"):
            skiff.amp.autocast("cuda", dtype=skiff.float64)
    elif not torch.cuda.is_available():  # torch's: disabled (warned) before the dtype check
        for lib in (torch, skiff):
            with pytest.warns(UserWarning, match="CUDA is not available"):
                lib.amp.autocast("cuda", dtype=lib.float64)
    with pytest.raises(TypeError, match="init_scale="):
        skiff.amp.GradScaler(1024.0)
    s = skiff.amp.GradScaler("cpu")
    s.update(new_scale=8.0)
    assert s.get_scale() == 8.0 and s.is_enabled()
