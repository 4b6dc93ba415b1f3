"""Round 48 (h13): a user porting a torch program to skiff, each against torch 2.13 on the CPU:
``skiff.load`` reads the files ``torch.save`` wrote (the zip format and the legacy one), their
tensors bit for bit and a checkpoint resumed to torch's next step; ``load_state_dict`` lists
missing and unexpected keys in torch's order (module by module, parameters then buffers)."""

import io
import pickle

import numpy as np
import pytest

import skiff

torch = pytest.importorskip("torch")


def _model(L):
    nn = L.nn
    # no bias before the batch norm: its gradient would be rounding noise, which Adam's first
    # step turns into +-lr (a sign of noise, not a port's error)
    return nn.Sequential(nn.Conv1d(2, 3, 1, bias=False, dtype=L.float64),
                         nn.BatchNorm1d(3, dtype=L.float64),
                         nn.Sequential(nn.Linear(3, 3, dtype=L.float64),
                                       nn.LayerNorm(3, dtype=L.float64)),
                         nn.Flatten(), nn.Linear(9, 2, dtype=L.float64))


def _loss(L, m, x):
    return (m(x) ** 2).sum()


@pytest.fixture(scope="module")
def checkpoint():
    """torch trains two Adam steps and saves a checkpoint with what torch programs keep."""
    g = torch.Generator().manual_seed(0)
    m = _model(torch)
    opt = torch.optim.Adam(m.parameters(), lr=1e-2, amsgrad=True)
    x = torch.randn(4, 2, 3, generator=g, dtype=torch.float64)
    for _ in range(2):
        opt.zero_grad()
        _loss(torch, m, x).backward()
        opt.step()
    base = torch.arange(12.0).reshape(3, 4)
    ckpt = {"model": m.state_dict(), "opt": opt.state_dict(), "epoch": 2, "name": "run",
            "shape": torch.Size([3, 4]), "dtype": torch.float16, "param": m[0].weight,
            "half": torch.randn(5, generator=g).half(), "bf16": torch.randn(5).bfloat16(),
            "mask": torch.tensor([True, False]), "ids": torch.arange(4, dtype=torch.int32),
            "column": base[:, 1], "transposed": base.t(), "shares": base[1:]}
    return m, opt, x, ckpt


def _same(ours, theirs):
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert str(ours.dtype) == str(theirs.dtype).replace("torch.", "")
    want = theirs.detach().float().numpy() if theirs.dtype == torch.bfloat16 else \
        theirs.detach().numpy()
    got = ours.detach().float().numpy() if str(ours.dtype) == "bfloat16" else ours.numpy()
    np.testing.assert_array_equal(got, want)  # a copy of the bytes: exact


@pytest.mark.parametrize("zipped", [True, False])
def test_torch_save_files_are_read_and_resume_to_torchs_step(checkpoint, zipped, tmp_path):
    m, opt, x, ckpt = checkpoint
    path = tmp_path / "ckpt.pt"
    torch.save(ckpt, path, _use_new_zipfile_serialization=zipped)
    got = skiff.load(path, map_location="cpu", weights_only=True)
    assert list(got) == list(ckpt)
    assert list(got["model"]) == list(ckpt["model"])
    for k, v in ckpt["model"].items():
        _same(got["model"][k], v)
    for k in ("half", "bf16", "mask", "ids", "column", "transposed", "shares", "param"):
        _same(got[k], ckpt[k])
    assert isinstance(got["param"], skiff.nn.Parameter) and got["param"].requires_grad
    assert (got["epoch"], got["name"], tuple(got["shape"])) == (2, "run", (3, 4))
    assert got["dtype"] == skiff.float16
    assert got["opt"]["param_groups"][0]["betas"] == ckpt["opt"]["param_groups"][0]["betas"]

    # resume: skiff's model and optimizer from torch's file take torch's next step
    sm = _model(skiff)
    sm.load_state_dict(got["model"])
    torch.save(ckpt["model"], tmp_path / "model.pt", _use_new_zipfile_serialization=zipped)
    _model(skiff).load_state_dict(tmp_path / "model.pt")  # a path, as skiff's own files
    sopt = skiff.optim.Adam(sm.parameters(), lr=1e-2, amsgrad=True)
    sopt.load_state_dict(got["opt"])
    tm = _model(torch)
    tm.load_state_dict(ckpt["model"])
    topt = torch.optim.Adam(tm.parameters(), lr=1e-2, amsgrad=True)
    topt.load_state_dict(ckpt["opt"])
    for L, mm, o, xx in ((torch, tm, topt, x), (skiff, sm, sopt, skiff.tensor(x.numpy()))):
        o.zero_grad()
        _loss(L, mm, xx).backward()
        o.step()
    for (n, p), (n2, q) in zip(tm.named_parameters(), sm.named_parameters()):
        assert n == n2
        # float64 parameters of size ~1 after one Adam step of lr 1e-2: 1e-10 is far above
        # the rounding seen (<1e-16) and far below a step taken from other state (~1e-3)
        np.testing.assert_allclose(q.detach().numpy(), p.detach().numpy(), rtol=0, atol=1e-10)


def test_a_whole_module_saved_is_refused_in_words(tmp_path):
    path = tmp_path / "model.pt"
    torch.save(torch.nn.Linear(2, 2), path)
    with pytest.raises(pickle.UnpicklingError, match=r"torch\.nn\.modules\.linear\.Linear.*"
                                                      r"save model\.state_dict\(\)"):
        skiff.load(path)
    buf = io.BytesIO()
    torch.save({"w": torch.ones(2)}, buf)
    buf.seek(0)
    _same(skiff.load(buf)["w"], torch.ones(2))  # a file object as well as a path


def _state_with_errors(sd):
    sd = dict(sd)
    for k in ("2.0.bias", "1.running_mean", "2.1.weight", "1.weight"):
        del sd[k]
    zeros = torch.zeros(1, dtype=torch.float64)
    return {"zz": zeros, **sd, "2.0.extra": zeros, "5.weight": zeros, "1.extra": zeros,
            "2.1.weight.x": zeros}


def test_missing_and_unexpected_keys_in_torchs_order():
    tm, sm = _model(torch), _model(skiff)
    sd = _state_with_errors(tm.state_dict())
    with pytest.raises(RuntimeError) as theirs:
        tm.load_state_dict(sd)
    with pytest.raises(RuntimeError) as ours:
        sm.load_state_dict(sd)
    assert str(ours.value).partition("\n(load_state_dict into")[0] == str(theirs.value)
    assert sm.load_state_dict(sd, strict=False) == tm.load_state_dict(sd, strict=False)
