"""The planner's cost model against hand-computed figures; search, explicit strategies, CLI."""

from __future__ import annotations

import json

import pytest

from skiff.kernels.train.plan import (
    PRESETS,
    Choice,
    ClusterSpec,
    ModelSpec,
    estimate,
    parse_strategy,
    plan,
    resolve,
)

TINY = ModelSpec("tiny", n_layers=2, d_model=8, n_heads=2, vocab=10, seq_len=4)
CLUSTER = ClusterSpec(devices=2, memory=10**6, flops=1e12, intra_bw=1e9, mem_bw=1e11)


def test_parameter_count_by_hand():
    # embeddings: token 10x8 and output 10x8 (untied), positions 4x8
    emb = 10 * 8 * 2 + 4 * 8
    # per layer: qkv+proj 4 (8x8) + biases 4x8, two layer norms 4x8, MLP 8x32 + 32x8 + biases
    layer = 4 * 64 + 4 * 8 + 4 * 8 + 2 * 8 * 32 + 32 + 8
    assert TINY.n_params == emb + 2 * layer + 2 * 8  # + final layer norm
    # the presets of runnable models count what the real models hold
    from skiff.kernels.train.models import get

    for name in ("gpt-mini", "gpt-small"):
        assert PRESETS[name].n_params == get(name).num_parameters(), name
    # the public figure for a LLaMA-7B-shaped model is 6.74 B (ours adds learned positions)
    assert abs(PRESETS["7b"].n_params - 6.74e9) / 6.74e9 < 0.01
    # 21B-A3B: ~21-22 B in total, ~3 B active
    moe = PRESETS["gpt-moe"]
    assert 20e9 < moe.n_params < 23e9 and 2.5e9 < moe.active_params < 3.5e9


def test_memory_by_hand():
    n = TINY.n_params
    e = estimate(TINY, CLUSTER, Choice(dp=2, zero=1), global_batch=2, weight_bytes=4)
    assert e.memory["params"] == n * 4
    assert e.memory["grads"] == n * 4
    assert e.memory["optimizer"] == n * 8 / 2  # AdamW moments, sharded over 2 ranks
    # activations: s b h (10 + 24 + 5 a s / h) * e/2 per layer, fp32 (e = 4)
    per_layer = 4 * 1 * 8 * (10 + 24 + 5 * 2 * 4 / 8) * 4 / 2
    logits = 4 * 1 * 10 * 4
    assert e.memory["activations"] == pytest.approx(2 * per_layer + logits)
    z2 = estimate(TINY, CLUSTER, Choice(dp=2, zero=2), global_batch=2, weight_bytes=4)
    assert z2.memory["grads"] == n * 4 / 2
    rc = estimate(TINY, CLUSTER, Choice(dp=2, recompute=True), global_batch=2, weight_bytes=4)
    assert rc.memory["activations"] == pytest.approx(2 * (4 * 8 * 4) + per_layer + logits)
    # bf16 weights keep a fp32 master copy: 2 + 2 + 12 bytes per parameter
    bf = estimate(TINY, CLUSTER, Choice(), global_batch=1, weight_bytes=2)
    assert bf.memory["params"] + bf.memory["grads"] + bf.memory["optimizer"] == 16 * n
    # tensor parallel halves the weights and the 24/t and attention terms
    tp = estimate(TINY, CLUSTER, Choice(tp=2), global_batch=1, weight_bytes=4)
    assert tp.memory["params"] == n * 4 / 2
    per_layer_tp = 4 * 8 * (10 + 12 + 5 * 2 * 4 / 16) * 2
    assert tp.memory["activations"] == pytest.approx(2 * per_layer_tp + logits / 2)


def test_step_time_by_hand():
    n = TINY.n_params
    e = estimate(TINY, CLUSTER, Choice(dp=2), global_batch=4, weight_bytes=4, overlap=False)
    flops = (6 * n + 12 * 2 * 8 * 4) * 4 * 4  # per token x (4 sequences x 4 tokens)
    assert e.time["compute"] == pytest.approx(flops / (2 * 1e12))
    assert e.time["dp_comm"] == pytest.approx(2 * 0.5 * n * 4 / 1e9)
    opt = n * (4 + 4 + 2 * 8) / 1e11
    assert e.step_time == pytest.approx(e.time["compute"] + e.time["dp_comm"] + opt)
    overlapped = estimate(TINY, CLUSTER, Choice(dp=2), global_batch=4, weight_bytes=4)
    assert overlapped.time["dp_exposed"] <= e.time["dp_exposed"]
    # the pipeline bubble: (pp - 1) / micro-batches
    pp = estimate(TINY, CLUSTER, Choice(pp=2), global_batch=4, weight_bytes=4)
    assert pp.time["bubble"] == pytest.approx(1 + 1 / 4)


@pytest.mark.parametrize("model,devices,nodes", [("7b", 8, 1), ("70b", 64, 8),
                                                 ("gpt-moe", 16, 2)])
def test_hypothetical_clusters(model, devices, nodes):
    p = plan(model, devices=devices, device_memory="80GB", nodes=nodes)
    assert p.choice.world == devices
    usable = 80e9 * 0.9
    assert p.estimate.peak_memory <= usable
    # the chosen one is the fastest of everything that fits
    assert all(p.estimate.step_time <= e.step_time for e in p.table)
    assert p.fitting <= p.searched and len(p.table) <= 8
    assert "<table>" in p._repr_html_() and p.choice.label() in repr(p)
    json.dumps(p.to_json())
    if model != "7b":  # these never fit as plain data parallel
        assert any("plain data parallel does not fit" in r for r in p.reasons)


def test_does_not_fit_says_the_numbers():
    with pytest.raises(ValueError, match=r"does not fit on 8 x 40.0 GB.*needs [0-9.]+ GB per "
                       r"device \(params .*36.0 GB usable"):
        plan("70b", devices=8, device_memory="40GB")


def test_explicit_strategies_are_kept_or_rejected():
    spec = PRESETS["gpt-mini"]
    for name, choice in [("dp", Choice(dp=4)), ("zero2", Choice(dp=4, zero=2)),
                         ("dp=2,tp=2,pp=1", Choice(dp=2, tp=2)),
                         ("tp=2,pp=2", Choice(tp=2, pp=2))]:
        p = resolve(name, spec, world_size=4, global_batch=8)
        assert p.explicit and p.choice == choice, name
    # even when "auto" would choose otherwise, "dp" stays "dp"
    auto = resolve("auto", "7b", world_size=8, device_memory="80GB", global_batch=64,
                   devices=ClusterSpec(devices=8, memory=80 * 10**9))
    assert not auto.explicit
    with pytest.raises(ValueError, match="does not fit: needs"):
        resolve("dp", "7b", world_size=8, global_batch=64,
                devices=ClusterSpec(devices=8, memory=80 * 10**9))
    with pytest.raises(ValueError, match="impossible: dp=2 x tp=2 x pp=1 = 4 ranks, the job has 2"):
        resolve("dp=2,tp=2,pp=1", spec, world_size=2)
    with pytest.raises(ValueError, match="tp=3 does not divide the 4 attention heads"):
        resolve("dp=1,tp=3", spec, world_size=3, global_batch=3)
    with pytest.raises(ValueError, match="unknown strategy 'fdsp': choose from auto"):
        parse_strategy("fdsp", 2)
    # PyTorch's names: DDP is dp; FSDP (ZeRO-3) is not here, and what comes closest is said
    assert parse_strategy("ddp", 4) == parse_strategy("dp", 4) == Choice(dp=4)
    for name in ("fsdp", "zero3"):
        with pytest.raises(ValueError, match=rf"strategy '{name}': .*'zero2' shards gradients "
                                             r"and optimizer states"):
            parse_strategy(name, 2)
    from skiff.kinds.train import to_config

    assert to_config({"model": "mlp", "strategy": "DDP"})["strategy"] == "dp"
    with pytest.raises(ValueError, match="unknown strategy key 'xp'"):
        parse_strategy("xp=2", 2)


def test_cli_and_magic(capsys):
    from skiff.cli import main

    assert main(["plan", "7b", "--devices", "8", "--device-memory", "80GB", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["choice"]["dp"] * doc["choice"]["tp"] * doc["choice"]["pp"] == 8
    assert main(["plan", "70b", "--devices", "8", "--device-memory", "40GB"]) == 2
    assert "does not fit" in capsys.readouterr().err
    assert main(["plan", "nope"]) == 2
    capsys.readouterr()
    # a size without its unit meant GB, not 80 bytes ("does not fit on 8 x 0.0 MiB")
    assert main(["plan", "7b", "--devices", "8", "--device-memory", "80"]) == 2
    assert "'80' would be 80 bytes: give the unit, like 80GB" in capsys.readouterr().err

    from IPython.core.error import UsageError
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "skiff")
    p = shell.run_line_magic("plan", "gpt-moe --devices 16 --nodes 2 -o myplan")
    assert shell.user_ns["myplan"] is p and p.model.n_experts == 64
    with pytest.raises(UsageError, match="unknown model 'gpt-9'"):
        shell.run_line_magic("plan", "gpt-9")
    # a model object in the notebook is costed from its own parameter count
    from skiff.kernels.train.models import get

    shell.user_ns["mini"] = get("gpt-mini")
    p = shell.run_line_magic("plan", "mini --devices 2 --device-memory 1GB")
    assert p.model.n_params == shell.user_ns["mini"].num_parameters()
