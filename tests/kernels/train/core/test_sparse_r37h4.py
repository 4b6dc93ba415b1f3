"""Round 37 (h4): torch's sparse COO matrices as a GCN port uses them
(``sparse_coo_tensor``, ``spmm``/``sparse.mm``/``@``, ``to_dense``, ``coalesce``,
``Tensor.to_sparse``, learned edge values), against torch 2.13 in float64."""

import copy

import numpy as np
import pytest

import skiff
import skiff.sparse

torch = pytest.importorskip("torch")

R = np.random.default_rng(37)
N, FD, C = 20, 6, 3
A = (R.random((N, N)) < 0.15).astype(float)
A = np.maximum(A, A.T) + np.eye(N)
A = A / A.sum(1, keepdims=True)
ROW, COL = np.nonzero(A)
X, Y = R.random((N, FD)), R.integers(0, C, N)


def _coo(lib, values):
    idx = lib.tensor(np.vstack([ROW, COL]).astype(np.int64))
    make = torch.sparse_coo_tensor if lib is torch else skiff.sparse.sparse_coo_tensor
    return make(idx, values, (N, N))


def test_gcn_trains_as_torchs():
    init, runs = {}, []
    for lib in (torch, skiff):
        nn, F = lib.nn, lib.nn.functional
        lib.manual_seed(0)
        m = nn.ModuleList([nn.Linear(FD, 16, bias=False), nn.Linear(16, C)]).double()
        if lib is torch:
            init.update(copy.deepcopy(m.state_dict()))
        else:
            m.load_state_dict({k: skiff.tensor(v.numpy().copy()) for k, v in init.items()})
        adj = _coo(lib, lib.tensor(A[ROW, COL]))
        spmm = torch.spmm if lib is torch else skiff.sparse.spmm
        opt = lib.optim.Adam(m.parameters(), lr=0.01, weight_decay=5e-4)
        losses = []
        for _ in range(4):
            h = F.relu(spmm(adj, m[0](lib.tensor(X))))
            out = F.log_softmax(lib.sparse.mm(adj, h @ m[1].weight.T) + m[1].bias, dim=1)
            loss = F.nll_loss(out[:12], lib.tensor(Y[:12]))
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        runs.append((losses, [p.detach().numpy().copy() for p in m.parameters()]))
    np.testing.assert_allclose(runs[1][0], runs[0][0], rtol=1e-12)
    for a, b in zip(runs[1][1], runs[0][1]):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-14)


def test_values_gradient_and_helpers_follow_torch():
    got = []
    for lib in (torch, skiff):
        w = lib.tensor(A[ROW, COL]).requires_grad_(True)
        x = lib.tensor(X).requires_grad_(True)
        s = _coo(lib, w)
        h = (s @ x).pow(2).sum() + (s.t() @ x).sum() + s.to_dense().pow(3).sum() + \
            lib.mm(s, x).sum()
        h.backward()
        make = torch.sparse_coo_tensor if lib is torch else skiff.sparse.sparse_coo_tensor
        dup = make(lib.tensor([[0, 1, 0], [2, 0, 2]]), lib.tensor([1.0, 2.0, 3.0]), (2, 3))
        c = dup.coalesce()
        d = lib.tensor(A[:4, :4]).to_sparse()
        got.append([h.detach(), w.grad, x.grad, c.indices(), c.values(), dup.to_dense(),
                    lib.sparse.sum(s).detach(), d.indices(), d.values(),
                    (s @ lib.tensor(X[:, 0])).detach()])
    for a, b in zip(got[1], got[0]):
        np.testing.assert_allclose(np.asarray(a.numpy(), dtype=np.float64),
                                   np.asarray(b.numpy(), dtype=np.float64), rtol=1e-12)
    assert dup._nnz() == 3 and not dup.is_coalesced() and c.is_coalesced() and dup.is_sparse


def test_errors_follow_torch():
    idx = [[0, 1], [2, 5]]
    for lib in (torch, skiff):
        make = torch.sparse_coo_tensor if lib is torch else skiff.sparse.sparse_coo_tensor
        with pytest.raises(RuntimeError):  # index 5 past size 3 (skiff checks always)
            make(lib.tensor(idx), lib.tensor([1.0, 2.0]), (2, 3), check_invariants=True)
        with pytest.raises(RuntimeError):
            make(lib.tensor([[0, 1], [0, 1]]), lib.tensor([1.0, 2.0]), (2, 2)) @ \
                lib.ones(3, 2, dtype=lib.float64)
        with pytest.raises(RuntimeError):
            make(lib.tensor([[0, 1, 1], [0, 1, 0]]), lib.tensor([1.0, 2.0, 3.0]),
                 (2, 2)).values()  # uncoalesced
