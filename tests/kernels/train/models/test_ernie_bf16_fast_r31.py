"""Round 31: a model loaded with ``dtype="bfloat16"`` runs the inference path without a graph
(``ernie_infer``), its weights kept 16-bit and widened to float32 as they are read. Before,
bfloat16 took the graph path through ml_dtypes' matmul: 1.3 s a prefill and 1.2 s a decode
step on the 0.3B's shape with 2 layers, where transformers' bf16 takes 0.07 s and 0.03 s
(``/work/round31/h5/speed1.py bf16``).

The oracle: transformers' bfloat16 model of the same checkpoint. The fast path rounds where
it holds bf16 tensors (each projection's output, the rotated q and k, the attention's
unnormalised probabilities and output, the norms, the MLP's activations, the MoE's weighted
expert outputs and their sum, the residual stream) and gave its logits bit for bit on these
checkpoints; the tests allow a tenth of transformers' own bf16-against-float32 spread (the
graph path is at 0.6-1.0 of it), and ask for its greedy tokens."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.backend import numba_available
from skiff.kernels.backend.testing import check_op
from skiff.kernels.train.core.tensor import no_grad
from skiff.kernels.train.models import ernie_infer, ernie_kernels
from skiff.kernels.train.models.ernie import KVCache
from skiff.kernels.train.models.hf_checkpoint import from_pretrained

from .ernie_reference import make_checkpoint, random_ids, torch

ml_dtypes = pytest.importorskip("ml_dtypes")


def _widen(w16):
    """bfloat16 -> float64 by the bits (independent of ml_dtypes' cast)."""
    bits = w16.view(np.uint16).astype(np.uint32) << 16
    return bits.view(np.float32).astype(np.float64)


@pytest.mark.parametrize("rows", [1, 2, 5, 16, 17, 40, 300])
def test_bf16_rows_matmul_against_float64(rows):
    rng = np.random.default_rng(rows)
    x = rng.standard_normal((rows, 24)).astype(np.float32)
    w = rng.standard_normal((37, 24)).astype(ml_dtypes.bfloat16)  # an odd row count
    got = ernie_kernels.bf16_rows_matmul(x, w)
    want = x.astype(np.float64) @ _widen(w).T
    assert got.dtype == np.float32 and got.shape == (rows, 37)
    # a float32 dot of 24 terms errs by at most 25 u sum|x w| in any summation order (Higham's
    # bound, each product rounded too; u = eps32 / 2), so 24 eps32 (1.9x that) holds on every
    # CPU; round 48 h9: rtol = atol = 1e-5 kept 7x over the 1.4e-6 seen with OpenBLAS
    # Sandybridge, ATen default and numpy without AVX2; this bound is 10.6x over it
    bound = 24 * np.finfo(np.float32).eps * (np.abs(x.astype(np.float64)) @ np.abs(_widen(w)).T)
    assert np.all(np.abs(got - want) <= bound)
    check_op(ernie_kernels.bf16_rows_matmul, x, w, rtol=1e-5, atol=1e-5,
             require_fast=numba_available())


@pytest.fixture(scope="module", params=["dense-gqa-tied", "dense-mha-untied-bias",
                                        "moe-shared", "moe-interval"])
def bf16_pair(request, tmp_path_factory):
    """(name, transformers' bf16 model, its float32 twin on the same bf16 checkpoint,
    skiff's bf16 model)."""
    f32 = tmp_path_factory.mktemp(request.param)
    _, ref = make_checkpoint(f32, request.param)
    f16 = tmp_path_factory.mktemp(request.param + "-bf16")
    ref.to(torch.bfloat16).save_pretrained(f16)
    oracle = type(ref).from_pretrained(f16, dtype=torch.bfloat16).eval()
    wide = type(ref).from_pretrained(f16, dtype=torch.float32).eval()
    model = from_pretrained(f16, dtype="bfloat16")
    assert model.model.layers[0].self_attn.q_proj.weight._data.dtype.name == "bfloat16"
    return request.param, oracle, wide, model


def _exact_oracle():
    """Skip unless torch runs its AVX-512 kernels: transformers' bf16 logits are the oracle to
    a tenth of the spread only there. Its CPU attention (``scaled_dot_product_attention``)
    rounds its bf16 probabilities after a vector exp whose last float32 bits follow the
    vector width: under ``ATEN_CPU_CAPABILITY=avx2`` its own logits moved 0.52, 0.57 and
    0.86 of the spread (dense-gqa-tied, dense-mha-untied-bias, moe-interval) and one beam
    search's tokens changed (round 48 h9), as an AVX2-only CI runner would give."""
    if torch.backends.cpu.get_cpu_capability() != "AVX512":
        pytest.skip("transformers' bf16 logits follow torch's AVX-512 kernels only; torch "
                    f"runs {torch.backends.cpu.get_cpu_capability()} here")


def _near(got, want, spread, what, part=0.1):
    """Within a tenth of transformers' own bf16-against-float32 spread (decode steps, and the
    MoE prompts: a quarter; their few-row GEMMs sum in another order than the prompt's, and a
    last bit of float32 moves a bf16 rounding now and then, as transformers' own steps differ
    from its full forward; on an Intel AVX-512 Xeon the MoE prompt's logits came 0.1006 of
    the spread away, one bf16 rounding moved by BLAS's order, where the AMD EPYC was bit for
    bit)."""
    assert np.abs(got - want).max() <= part * spread, what


def test_bf16_logits_and_cache_steps(bf16_pair):
    name, oracle, wide, model = bf16_pair
    assert ernie_infer.fast_path(model) is not None, name
    ids = random_ids(model.config.vocab_size, (2, 11), seed=4)
    with torch.no_grad():
        want = oracle(torch.tensor(ids)).logits.float().numpy()
        spread = np.abs(wide(torch.tensor(ids)).logits.numpy() - want).max()
    assert spread > 0.01  # bf16 rounding is visible in these logits
    with no_grad():
        got = model(ids).numpy()
        assert got.dtype == np.float32
        _exact_oracle()
        prompt = 0.25 if name.startswith("moe") else 0.1
        _near(got, want, spread, name, prompt)
        cache = KVCache(len(model.model.layers), 11)
        _near(model(ids[:, :7], cache, last_only=True).numpy()[:, 0], want[:, 6], spread,
              name, prompt)
        for t in range(7, 11):
            _near(model(ids[:, t:t + 1], cache).numpy()[:, 0], want[:, t], spread, name,
                  0.25)


def test_bf16_generate_batch_and_padded_generate(bf16_pair):
    """Greedy tokens of prompts of three lengths: packed (``generate_batch``) and a
    left-padded ``generate`` with its cache, each equal transformers' bf16 ``generate`` of
    that prompt alone."""
    name, oracle, _, model = bf16_pair
    V = model.config.vocab_size
    prompts = [random_ids(V, (n,), seed=n) for n in (5, 9, 3)]
    want = []
    for p in prompts:
        with torch.no_grad():
            out = oracle.generate(torch.tensor(p[None]), max_new_tokens=6, do_sample=False,
                                  eos_token_id=None, pad_token_id=0)
        want.append(out.numpy()[0, len(p):])
    rows = model.generate_batch(prompts, max_new_tokens=6, eos_token_id=None)
    for p, r, w in zip(prompts, rows, want):
        np.testing.assert_array_equal(np.asarray(r)[len(p):], w, err_msg=name)
    T = max(len(p) for p in prompts)
    ids = np.zeros((3, T), dtype=np.int64)
    mask = np.zeros_like(ids)
    for i, p in enumerate(prompts):
        ids[i, T - len(p):], mask[i, T - len(p):] = p, 1
    out = model.generate(ids, attention_mask=mask, max_new_tokens=6, eos_token_id=None,
                         pad_token_id=0, return_dict_in_generate=True)
    np.testing.assert_array_equal(np.asarray(out.sequences)[:, T:], np.stack(want),
                                  err_msg=name)


def test_bf16_weights_edited_in_place_are_seen(tmp_path):
    """The fused bf16 matrix is the parameters' storage: an in-place edit after a first
    inference call shows in the next one (as transformers' bf16 model edited the same way)."""
    _, ref = make_checkpoint(tmp_path / "f32", "dense-gqa-tied")
    ref.to(torch.bfloat16).save_pretrained(tmp_path / "bf16")
    oracle = type(ref).from_pretrained(tmp_path / "bf16", dtype=torch.bfloat16).eval()
    model = from_pretrained(tmp_path / "bf16", dtype="bfloat16")
    ids = random_ids(model.config.vocab_size, (1, 6), seed=2)
    with no_grad():
        before = model(ids).numpy()
        w = model.model.layers[1].self_attn.k_proj.weight
        w._data[...] = (w._data.astype(np.float32) * 2).astype(w._data.dtype)
        got = model(ids).numpy()
    with torch.no_grad():
        oracle.model.layers[1].self_attn.k_proj.weight.mul_(2)
        want = oracle(torch.tensor(ids)).logits.float().numpy()
    spread = np.abs(before - want).max()
    assert spread > 0.01
    assert np.abs(got - want).max() <= 0.1 * spread


@pytest.mark.parametrize("options", [dict(num_beams=3, repetition_penalty=1.3),
                                     dict(do_sample=True, top_p=0.9, temperature=0.8)])
def test_bf16_beams_and_sampling_on_a_padded_batch(bf16_pair, options):
    """A left-padded batch with beam search and a repetition penalty, or top-p sampling
    under a torch generator: transformers' bf16 tokens (round 31 user check)."""
    name, oracle, _, model = bf16_pair
    V = model.config.vocab_size
    prompts = [random_ids(V, (n,), seed=n) for n in (5, 9, 3)]
    ids = np.zeros((3, 9), dtype=np.int64)
    mask = np.zeros_like(ids)
    for i, p in enumerate(prompts):
        ids[i, 9 - len(p):], mask[i, 9 - len(p):] = p, 1
    kw = dict(options, max_new_tokens=8, eos_token_id=None, pad_token_id=0)
    if not options.get("do_sample"):
        _exact_oracle()  # beams rank bf16 scores a rounding apart (sampling's draws do not)
    torch.manual_seed(5)
    with torch.no_grad():
        want = oracle.generate(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask),
                               **({"do_sample": False} | kw)).numpy()
    if options.get("do_sample"):
        kw["generator"] = torch.Generator().manual_seed(5)
    got = model.generate(ids, attention_mask=mask, **kw)
    np.testing.assert_array_equal(np.asarray(got), want, err_msg=name)
