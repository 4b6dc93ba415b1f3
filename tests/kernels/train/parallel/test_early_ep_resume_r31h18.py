"""Round 31 (h18): early stopping's best weights survive a resume under expert parallelism,
as under tp and pp (``test_early_split_resume_r31.py``).

An ep run's checkpoints kept early stopping's count and best loss but not its best weights
(a rank holds the dense weights and its own experts only): an ERNIE-4.5 MoE run cut at step
12 and resumed stopped at step 18 as the whole run does, but kept step 18's weights where the
whole run put back step 6's (0.163 off). Each rank's checkpoint now keeps its part of them
(per-rank state, read back by the same layout). The oracle is one process running the whole
run: the same stopping step, best step and weights. With LoRA (a frozen base), each rank
wrote the whole base into every such checkpoint as part of the best weights; now only what
trains (the adapters, and buffers), the base filled from the model on resume; tp too.
"""

from __future__ import annotations

import pytest

from .mpi_util import run_mpi


@pytest.mark.mpi
@pytest.mark.slow
def test_ep_resumes_early_stopping_with_the_best_weights(tmp_path):
    for res in run_mpi(2, "early_ep_resume_r31h18_check.py", tmp_path, "ep", "tp",
                       timeout=300):
        for case in ("ep-full", "ep-lora", "tp-full", "tp-lora"):
            got_case = res[case]
            one = got_case["one"]  # one process, the whole run
            assert (one["steps"], one["best_step"]) == (18, 6), (case, one)
            for name in ("whole", "resumed"):
                got = got_case[name]
                assert (got["steps"], got["best_step"]) == (18, 6), (case, name, got)
                assert got["stopped"].startswith("early stopping"), (case, name, got)
                assert got["keys"], (case, name, got)
                assert got["weights"] < 1e-5, (case, name, got)
            kept, trained = set(got_case["kept"]), set(got_case["trained"])
            assert trained and trained <= kept, case  # this rank's part of the best weights
            assert not kept & set(got_case["frozen"]), case  # never the frozen base
        for kind in ("ep", "tp"):
            lora, full = res[f"{kind}-lora"], res[f"{kind}-full"]
            assert lora["frozen"] and len(lora["kept"]) < len(full["kept"]), kind
