"""Round 29: parameters that some ranks' graphs do not reach, under data parallelism.

Found as a user, against torch DDP (gloo, 2 processes, ``find_unused_parameters=True``) on a
model whose branch is taken only when a rank's half-batch sums above zero, and with a layer
it never uses: with one gradient bucket per parameter (``bucket_mb`` small, or any model
larger than a bucket) the ranks launched the buckets' all-reduces in the order their own
backward completed them, so rank 0 summed its branch's gradient with rank 1's first layer:
a gradient norm of inf on one rank and a hang. With one bucket the values were reduced right
but a parameter no rank reached got a zero gradient instead of none, so AdamW decayed it and
SGD kept moving it by its momentum (0.016 off torch DDP after 8 SGD steps). Now buckets go
in index order on every rank (as DDP launches them), the end of each backward pass launches
the ones it left, and a flag per parameter says whether any rank had its gradient (none:
the optimizer skips it, as on one device and in DDP). The oracle is torch: DDP's rule done
by hand in one process (each rank's half of the batch through its own graph, gradients
averaged with zeros for a rank that did not reach the parameter, none for a parameter no
rank reached; then torch's AdamW).
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

from .mpi_util import HERE, run_mpi

sys.path.insert(0, str(HERE / "scripts"))
import unused_params_r29_check as check  # noqa: E402

torch = pytest.importorskip("torch")


def _torch_ddp_by_hand(grad_accum):
    import skiff

    skiff.seed(0)
    first = check.Branchy().state_dict()

    class Branchy(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = torch.nn.Linear(3, 16), torch.nn.Linear(16, 1)
            self.extra, self.side = torch.nn.Linear(16, 1), torch.nn.Linear(3, 1)

        def forward(self, x):
            out = self.b(self.a(x).relu())
            return out + self.side(x) if float(x.sum()) > 0 else out

    net = Branchy()
    net.load_state_dict({k: torch.tensor(np.asarray(v)) for k, v in first.items()})
    params = dict(net.named_parameters())
    opt = torch.optim.AdamW(net.parameters(), lr=0.01, weight_decay=0.01)
    x, y = map(torch.tensor, check.arrays())
    losses, batch = [], 0
    for _ in range(check.STEPS):
        total = {n: None for n in params}
        loss_sum = 0.0
        for _ in range(grad_accum):
            start = batch * check.BATCH
            batch += 1
            for rank in range(2):
                rows = list(range(start + rank, start + check.BATCH, 2))
                net.zero_grad(set_to_none=True)
                loss = torch.nn.functional.mse_loss(net(x[rows]), y[rows]) / grad_accum
                loss.backward()
                loss_sum += float(loss.detach()) / 2
                for n, p in params.items():
                    if p.grad is not None:
                        g = p.grad / 2
                        total[n] = g if total[n] is None else total[n] + g
        for n, p in params.items():
            p.grad = total[n]  # None: no rank reached it in any micro-batch
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        opt.step()
        losses.append(loss_sum)
    return losses, {k: v.detach().numpy() for k, v in net.state_dict().items()}


@pytest.mark.mpi
def test_unreached_parameters_reduce_as_torch_ddp():
    results = run_mpi(2, "unused_params_r29_check.py", timeout=120)
    for case, accum in (("dp", 1), ("small", 1), ("accum", 2)):
        losses, weights = _torch_ddp_by_hand(accum)
        for r in results:
            got = r[case]
            np.testing.assert_allclose(got["losses"], losses, rtol=1e-5, err_msg=case)
            for k, v in weights.items():
                np.testing.assert_allclose(np.asarray(got["weights"][k]), v, rtol=1e-5,
                                           atol=1e-6, err_msg=f"{case} {k}")
