"""Round 38 (h4): torch names ports reach for that skiff lacked, against torch 2.13:
``linalg.LinAlgError`` (a RuntimeError, with torch's words) from ``cholesky``/``inv``/``solve``
(GP code catches it to add jitter), ``linalg.matmul``/``vander``/``solve_ex``/``tensorinv``/
``tensorsolve`` (values and gradients), the legacy ``autograd.Variable``,
``autograd.inference_mode``, ``swa_utils.get_swa_avg_fn``/``get_swa_multi_avg_fn``."""

import copy

import numpy as np
import pytest

import skiff

torch = pytest.importorskip("torch")

R = np.random.default_rng(38)
XS = R.normal(size=(4, 8, 3))


@pytest.mark.parametrize("fn,a", [("cholesky", [[1.0, 2.0], [2.0, 1.0]]),
                                  ("inv", [[1.0, 2.0], [2.0, 4.0]]),
                                  ("solve", [[1.0, 2.0], [2.0, 4.0]])])
def test_linalg_errors_are_torchs(fn, a):
    msgs = []
    for lib in (torch, skiff):
        args = (lib.tensor(a, dtype=lib.float64),) + ((lib.ones(2, dtype=lib.float64),)
                                                      if fn == "solve" else ())
        with pytest.raises(lib.linalg.LinAlgError) as e:
            getattr(lib.linalg, fn)(*args)
        assert isinstance(e.value, RuntimeError)
        msgs.append(str(e.value))
    assert msgs[1] == msgs[0]


def test_gp_jitter_loop_as_torch_users_write_it():
    K = np.ones((3, 3))  # rank one: cholesky fails until jitter is added
    for lib in (torch, skiff):
        k, jitter, tries = lib.tensor(K), 1e-6, 0
        while True:
            try:
                L = lib.linalg.cholesky(k + jitter * lib.eye(3, dtype=lib.float64))
                break
            except lib.linalg.LinAlgError:
                jitter, tries = jitter * 10, tries + 1
        assert tries == 0 and np.isfinite(L.numpy()).all()
    with pytest.raises(skiff.linalg.LinAlgError, match="leading minor of order 2"):
        skiff.linalg.cholesky(skiff.tensor(K) - 1e-3 * skiff.eye(3, dtype=skiff.float64))


def _pair(x):
    return skiff.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)


@pytest.mark.parametrize("case", ["matmul", "vander", "solve_ex", "tensorinv", "tensorsolve",
                                  "tensorsolve_dims"])
def test_linalg_extras_are_torchs(case):
    a = R.normal(size=(6, 2, 3)) + 3 * np.eye(6).reshape(6, 2, 3)
    b = R.normal(size=(6,))
    x = {"matmul": R.normal(size=(2, 3, 4)), "vander": R.uniform(0.5, 2, size=(2, 4)),
         "solve_ex": R.normal(size=(3, 3)) + 3 * np.eye(3), "tensorinv": a}.get(case, a)
    outs = []
    for lib, (xs, bs) in ((skiff, _pair(x)), (torch, (torch.tensor(x, requires_grad=True),
                                                      torch.tensor(b)))):
        if lib is skiff:
            bs = skiff.tensor(b)
        L = lib.linalg
        if case == "matmul":
            y = L.matmul(xs, xs.transpose(-1, -2))
        elif case == "vander":
            y = L.vander(xs, N=5)
        elif case == "solve_ex":
            y, info = L.solve_ex(xs, bs[:3])
            assert int(info) == 0
        elif case == "tensorinv":
            y = L.tensorinv(xs, ind=1)
        elif case == "tensorsolve":
            y = L.tensorsolve(xs, bs)
        else:
            y = L.tensorsolve(xs.permute(1, 0, 2), bs, dims=(0,))
        (y * y).sum().backward()
        outs.append((y.detach().numpy(), xs.grad.numpy()))
    for u, v in zip(*outs):
        np.testing.assert_allclose(u, v, rtol=1e-10, atol=1e-12)


def test_solve_ex_of_a_singular_matrix_is_torchs():
    for lib in (torch, skiff):
        y, info = lib.linalg.solve_ex(lib.tensor([[1.0, 2.0], [2.0, 4.0]]), lib.ones(2))
        assert int(info) == 2 and y.shape == (2,)
        with pytest.raises(lib.linalg.LinAlgError):
            lib.linalg.solve_ex(lib.tensor([[1.0, 2.0], [2.0, 4.0]]), lib.ones(2),
                                check_errors=True)
        with pytest.raises(RuntimeError, match="N must be greater than 1"):
            lib.linalg.vander(lib.ones(3), N=1)


def test_variable_and_inference_mode_are_torchs():
    for lib in (torch, skiff):
        Variable = lib.autograd.Variable
        x = lib.ones(2)
        v = Variable(x, requires_grad=True)
        assert v is not x and v.requires_grad and v.is_leaf and not x.requires_grad
        assert isinstance(x, Variable) and not isinstance(np.ones(2), Variable)
        (v * 3).sum().backward()
        assert v.grad.tolist() == [3.0, 3.0]
        assert not Variable(v * 2).requires_grad
        with pytest.raises(TypeError, match="has to be a tensor"):
            Variable([1.0, 2.0])
        with lib.autograd.inference_mode():
            assert not (v * 2).requires_grad


def test_swa_avg_fns_are_torchs():
    runs, init = [], {}
    for lib in (torch, skiff):
        lib.manual_seed(0)
        m = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.BatchNorm1d(4)).double()
        if lib is torch:
            init.update(copy.deepcopy(m.state_dict()))
        else:
            m.load_state_dict({k: skiff.tensor(v.numpy().copy()) for k, v in init.items()})
        su = lib.optim.swa_utils
        single = su.AveragedModel(m, avg_fn=su.get_swa_avg_fn(), use_buffers=True)
        # (torch's multi_avg_fn raises on an integer buffer: its addcdiv refuses integers)
        multi = su.AveragedModel(m, multi_avg_fn=su.get_swa_multi_avg_fn())
        opt = lib.optim.SGD(m.parameters(), lr=0.1)
        for i in range(4):
            loss = m(lib.tensor(XS[i])).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            single.update_parameters(m)
            multi.update_parameters(m)
        runs.append([t.detach().numpy().copy() for a in (single, multi)
                     for t in list(a.module.parameters()) + list(a.module.buffers())])
    for u, v in zip(*runs):  # torch's multi_avg_fn lerps by float32(1 / (n + 1)) (its
        # integer n_averaged divided), 3e-8 off the exact weight skiff uses
        np.testing.assert_allclose(u, v, rtol=1e-8, atol=1e-15)

