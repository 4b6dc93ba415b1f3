"""ERNIE-4.5 fine-tuning under every strategy (DP, ZeRO-1/2, TP, PP, EP, auto) on 2 MPI
ranks against the same fine-tune on one rank: loss trajectories, trained weights and the
saved Hugging Face folders (merged model and LoRA adapter) equal within float32 rounding,
the checkpoints the ranks write in pieces loading on one process and resuming as one
process resumes; and the plans and errors for these models, in one process.

The one-rank run is skiff's own single-device training, which test_ernie_train.py holds
equal to transformers + torch (and test_lora.py to peft): equal to it, the parallel runs are
equal to the reference too.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from skiff.kernels.train.models.ernie import ErnieConfig, ErnieForCausalLM
from skiff.kernels.train.models.hf_checkpoint import from_pretrained
from skiff.kernels.train.models.safetensors_io import open_folder
from skiff.kernels.train.parallel import strategy_from_plan
from skiff.kernels.train.parallel.hybrid import TensorParallel
from skiff.kernels.train.parallel.moe import ExpertParallel
from skiff.kernels.train.parallel.pipeline import PipelineParallel
from skiff.kernels.train.plan import model_spec, resolve
from skiff.kernels.train.plan.planner import runs_in_skiff

from .mpi_util import run_mpi

# strategy:shape:mode (shapes in scripts/ernie_parallel_check.py: "dense" has grouped-query
# attention with 2 k/v heads and a tied head; "dense-kv1" one k/v head, kept whole on both tp
# ranks, an untied head and biases; "moe" a dense first layer, 4 experts top-2, a shared one,
# "moe-aux" the same with the reference's load-balancing loss on (over the whole batch);
# ":chat": packed sequences of different lengths through the varlen attention (":ragged": with
# different numbers of learned tokens, so that the ranks' shares hold different numbers of
# them); ":resume": one more step from the job's last checkpoint, against one process
# resuming from its own)
GROUPS = {
    "dense": ["dp:dense:lora:ragged", "zero1:dense:full", "zero2:dense:lora", "tp:dense:full",
              "tp:dense-kv1:lora:resume", "tp:dense-kv1:lora:chat", "pp:dense:full",
              "pp:dense-kv1:lora:ragged", "auto:dense:full"],
    "moe": ["ep:moe-aux:full", "ep:moe:lora:ragged:resume", "tp:moe:lora", "tp:moe:full:ragged",
            "pp:moe:full:ragged", "zero2:moe-aux:lora:ragged", "auto:moe:full"],
}
# AdamW at lr 1e-2: a wrong gradient anywhere moves a weight by ~1e-2 in one step; float32
# reductions in another order move them by < 1e-4 (Adam divides small gradients by their size)
WEIGHT_TOL = 2e-4


def _tensors(folder: Path) -> dict:
    if (folder / "adapter_model.safetensors").is_file():
        from skiff.kernels.train.models.safetensors_io import SafetensorsFile

        f = SafetensorsFile(folder / "adapter_model.safetensors")
        return {k: f.get(k) for k in f.keys()}
    ckpt = open_folder(folder)
    return {k: ckpt.get(k) for k in ckpt.keys()}


@pytest.fixture(scope="module")
def both_groups(tmp_path_factory):
    """Every case of both groups in one 2-rank launch (round 46 h3: mpiexec's start and the
    imports of 2 ranks paid once, not once a group); each group's test checks its cases."""
    cases = [case for group in sorted(GROUPS) for case in GROUPS[group]]
    work = tmp_path_factory.mktemp("ernie")
    with pytest.MonkeyPatch.context() as mp:
        # the calibrations the cases keep (round 47 h8: a case of a model and batch measured
        # before reads it), in this launch's own folder, never the user's cache
        mp.setenv("SKIFF_CALIBRATION_CACHE", str(work / "calibration"))
        mp.delenv("SKIFF_RECALIBRATE", raising=False)
        [root, _] = run_mpi(2, "ernie_parallel_check.py", work, *cases, timeout=420)
    return root


@pytest.mark.mpi
@pytest.mark.slow
@pytest.mark.parametrize("group", sorted(GROUPS))
def test_two_ranks_train_and_save_like_one(both_groups, group):
    cases = GROUPS[group]
    root = both_groups
    for case in cases:
        got = root["cases"][case]
        kind = case.split(":")[0]
        assert got["strategy"] == kind or kind == "auto", (case, got["strategy"])
        np.testing.assert_allclose(got["losses"], got["ref"], rtol=2e-6, atol=0, err_msg=case)
        assert got["losses"][-1] != got["losses"][0]  # it trained
        assert got["same_keys"] and got["weight_diff"] <= WEIGHT_TOL, (case, got)
        # the checkpoint the ranks wrote in pieces loads on one process as the job ended
        assert got["reshard_diff"] == 0.0, (case, got["reshard_diff"])
        if "resume" in case:
            np.testing.assert_allclose(got["resumed"], got["resumed_ref"], rtol=2e-6)
            assert len(got["resumed"]) == len(got["losses"]) + 1
            assert got["resumed_diff"] <= WEIGHT_TOL, (case, got["resumed_diff"])
        run = Path(got["run"])
        outputs = ["hf-model"] + (["hf-adapter"] if case.endswith("lora") else [])
        for out in outputs:
            mine, one = _tensors(run / "ranks" / out), _tensors(run / "one" / out)
            assert sorted(mine) == sorted(one), (case, out)
            for k in one:
                assert np.abs(mine[k] - one[k]).max() <= WEIGHT_TOL, (case, out, k)
            cfg = json.loads((run / "ranks" / out / next(
                p.name for p in (run / "ranks" / out).glob("*config.json"))).read_text())
            assert cfg  # the folder is complete: config next to the weights
        # the merged folder reloads and computes what the one-rank result computes
        ids = np.arange(3, 11)[None, :]
        a = from_pretrained(run / "ranks" / "hf-model")(ids).numpy()
        b = from_pretrained(run / "one" / "hf-model")(ids).numpy()
        assert np.abs(a - b).max() <= 1e-3 * np.abs(b).max(), case


def _tiny(**kw) -> ErnieForCausalLM:
    cfg = dict(vocab_size=64, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
               num_attention_heads=4, num_key_value_heads=2, head_dim=8, block_size=8)
    return ErnieForCausalLM(ErnieConfig(**(cfg | kw)))


def test_planner_knows_live_ernie_models_and_maps_them_to_strategies():
    dense = _tiny()
    moe = _tiny(num_hidden_layers=3, moe_num_experts=4, moe_k=2, moe_intermediate_size=16,
                moe_layer_start_index=1)
    spec = model_spec(moe)
    assert (spec.n_layers, spec.d_model, spec.n_heads, spec.n_kv_heads) == (3, 32, 4, 2)
    assert (spec.n_experts, spec.top_k, spec.expert_hidden, spec.moe_layers) == (4, 2, 16, 2)
    assert spec.n_params == moe.num_parameters()
    for name, model, cls in [("tp", dense, TensorParallel), ("pp", dense, PipelineParallel),
                             ("ep", moe, ExpertParallel)]:
        plan = resolve(name, model, world_size=2, global_batch=4)
        assert type(strategy_from_plan(plan)) is cls, name
    # auto searches the splits these models allow, among the layouts skiff runs (no pp
    # for a model that trains the balancing loss: the stages do not add it)
    aux = _tiny(num_hidden_layers=3, moe_num_experts=4, moe_k=2, moe_intermediate_size=16,
                output_router_logits=True)
    for model in (dense, moe, aux):
        plan = resolve("auto", model, world_size=4, global_batch=8)
        assert plan.table and all(runs_in_skiff(e.choice) for e in plan.table)
        assert model is not aux or all(e.choice.pp == 1 for e in plan.table)
        assert strategy_from_plan(plan).name in ("dp", "zero1", "zero2", "tp", "pp", "ep",
                                                 "hybrid")


def test_a_strategy_that_cannot_apply_says_what_to_use():
    dense = _tiny()
    with pytest.raises(ValueError, match="mixture-of-experts.*use"):
        resolve("ep", dense, world_size=2, global_batch=4)
    with pytest.raises(ValueError, match="tp=3 does not divide the 4 attention heads .*or dp"):
        resolve("tp", dense, world_size=3, global_batch=3)
    with pytest.raises(ValueError, match="key/value heads.*or dp"):
        resolve("tp", _tiny(num_attention_heads=6, num_key_value_heads=3, head_dim=4),
                world_size=2, global_batch=4)


def test_expert_parallel_refuses_a_dense_model():
    from skiff.kernels.train.core.optim import SGD
    from skiff.kernels.train.parallel import SelfComm

    with pytest.raises(ValueError, match="dense: use strategy='dp'"):
        ExpertParallel(SelfComm()).bind(device="cpu").setup(_tiny(), lambda ps: SGD(ps, 0.1))


@pytest.mark.mpi
@pytest.mark.slow
def test_train_magic_runs_ernie_tensor_parallel_on_two_processes(tmp_path):
    """``%train ernie --from DIR --np 2 --strategy tp``: the job's own launcher, ranks and
    result folder, against the same job on one process."""
    from IPython.core.interactiveshell import InteractiveShell
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    from skiff.kernels.train.core import random as train_random
    from skiff.kernels.train.models.hf_checkpoint import save_pretrained

    train_random.seed(5)
    model = _tiny(num_hidden_layers=3, moe_num_experts=4, moe_k=2, moe_intermediate_size=16,
                  moe_num_shared_experts=1, moe_layer_start_index=1)
    save_pretrained(model, tmp_path / "ckpt")
    text = "the small boat drifted east on a calm sea; the sailors reefed the sail. " * 4
    tok = Tokenizer(models.BPE(unk_token="<unk>"))  # the checkpoint's own tokenizer.json
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.train_from_iterator([text], trainers.BpeTrainer(
        vocab_size=64, special_tokens=["<pad>", "<s>", "</s>", "<unk>"]))
    tok.save(str(tmp_path / "ckpt" / "tokenizer.json"))
    (tmp_path / "my.txt").write_text(text)
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "skiff")
    jobs = {}
    for ranks in ("--np 2 --strategy tp", "--np 1"):
        jobs[ranks] = shell.run_line_magic(
            "train", f"ernie --data {tmp_path / 'my.txt'} --from {tmp_path / 'ckpt'} "
                     f"--steps 3 --block-size 8 --batch-size 4 --lr 1e-2 {ranks} --wait")
        assert jobs[ranks].status == "done", jobs[ranks].error
    two, one = jobs["--np 2 --strategy tp"], jobs["--np 1"]
    assert two.result["strategy"]["strategy"] == "tp"
    np.testing.assert_allclose([h["loss"] for h in two.result["history"]],
                               [h["loss"] for h in one.result["history"]], rtol=2e-6)
    a, b = _tensors(two.run_dir / "hf-model"), _tensors(one.run_dir / "hf-model")
    assert sorted(a) == sorted(b)
    assert max(float(np.abs(a[k] - b[k]).max()) for k in b) <= WEIGHT_TOL
