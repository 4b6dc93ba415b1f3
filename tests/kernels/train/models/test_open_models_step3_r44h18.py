"""Open models, round 44 (h18): what a user fine-tuning ERNIE-4.5 checkpoints met.

- ``train ernie TEXT --from MOE --strategy pp --np 2`` on an MoE whose config trains its
  load-balancing loss (``output_router_logits``) was refused in the ranks, after a run
  folder, saying "ErnieForCausalLM is neither" a GPT nor an ERNIE-4.5 model: now refused at
  submit, naming the balancing loss (the planner says the same of a live model).
- ``--monitor val_nll`` (the NLL an MoE's validation gives beside ``val_loss``) on a dense
  checkpoint failed after its first validation, a run folder made: a dense model's
  ``val_loss`` is its NLL, so one command runs over dense and MoE checkpoints.
- A full fine-tune of a bfloat16 checkpoint was written back (``hf-model``) in float32;
  transformers' ``dtype="auto"`` loaded a float32 model of twice the size. Now in bfloat16
  (the router float32, as transformers keeps it), as transformers saves its own model
  loaded with its default dtype: checked against torch's bfloat16 rounding of the trained
  weights, loaded by transformers.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from .ernie_reference import add_tokenizer, build_reference, make_checkpoint, torch, transformers

TEXT = ("The sea was calm and the small boat drifted east. " * 3
        + "A skiff is a small boat; it carries one or two people across a calm sea. " * 3)


def _checkpoint(folder, shape, *, bf16=False, **config):
    model = build_reference(shape, seed=3)
    (model.to(torch.bfloat16) if bf16 else model).save_pretrained(folder)
    add_tokenizer(folder, TEXT, vocab_size=model.config.vocab_size)
    if config:
        cfg = json.loads((folder / "config.json").read_text())
        (folder / "config.json").write_text(json.dumps({**cfg, **config}))
    return folder


def test_pp_on_an_moe_training_its_balancing_loss_names_the_reason(tmp_path, runs_dir):
    from skiff.jobs import submit
    from skiff.jobs.launch import dry_run
    from skiff.kernels.train.models import from_pretrained
    from skiff.kernels.train.plan.planner import resolve

    moe = _checkpoint(tmp_path / "moe", "moe-shared", output_router_logits=True)
    (tmp_path / "sea.txt").write_text(TEXT)
    line = (f"ernie {tmp_path / 'sea.txt'} --from {moe} --steps 1 --block-size 8 "
            "--batch-size 2 --np 2 --strategy pp")
    with pytest.raises(ValueError, match="load-balancing loss") as err:
        submit("train", line)
    assert "is neither" not in str(err.value) and "output_router_logits" in str(err.value)
    assert not runs_dir.exists() or not any(runs_dir.iterdir())  # refused before a folder
    with pytest.raises(ValueError, match="load-balancing loss"):
        dry_run("train", line)
    # a layout's pp too; tp, ep and a dense-router config run on
    with pytest.raises(ValueError, match="load-balancing loss"):
        dry_run("train", line.replace("--strategy pp", "--strategy dp=1,pp=2"))
    assert dry_run("train", line.replace("--strategy pp", "--strategy tp"))["np"] == 2
    cfg = json.loads((moe / "config.json").read_text())
    (moe / "config.json").write_text(json.dumps({**cfg, "output_router_logits": False}))
    assert dry_run("train", line)["np"] == 2
    # the planner, for a live model (the ranks' own check)
    (moe / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match="load-balancing loss") as err:
        resolve("pp", from_pretrained(moe), world_size=2)
    assert "is neither" not in str(err.value)


def test_monitor_val_nll_on_a_dense_checkpoint_watches_its_val_loss(tmp_path):
    from skiff.jobs import submit

    dense = _checkpoint(tmp_path / "dense", "dense-gqa-tied")
    (tmp_path / "sea.txt").write_text(TEXT)
    job, _ = submit("train", f"ernie {tmp_path / 'sea.txt'} --from {dense} --steps 4 "
                             "--block-size 8 --batch-size 2 --val-split 0.25 --eval-every 2 "
                             "--early-stop 2 --monitor val_nll --lr 1e-3")
    assert job.wait(120) and job.status == "done", job.error
    rows = job.result["val_history"]
    assert [r["step"] for r in rows] == [2, 4] and all("val_nll" not in r for r in rows), rows
    assert all(np.isfinite(r["val_loss"]) for r in rows), rows
    # early stopping watched val_loss (the dense model's NLL): its best is the smaller one
    best = min(rows, key=lambda r: r["val_loss"])
    assert job.result["best_step"] == best["step"]
    assert job.result["best_val_loss"] == pytest.approx(best["val_loss"])
    said = (job.run_dir / "events.jsonl").read_text()
    assert "val_loss is its NLL" in said


def test_full_fine_tune_of_a_bf16_checkpoint_is_written_back_in_bf16(tmp_path):
    from safetensors import safe_open

    from skiff.jobs import submit
    from skiff.kernels.train.models import from_pretrained, save_pretrained

    base = _checkpoint(tmp_path / "bf16", "moe-shared", bf16=True)
    (tmp_path / "sea.txt").write_text(TEXT)
    job, _ = submit("train", f"ernie {tmp_path / 'sea.txt'} --from {base} --steps 2 "
                             "--block-size 8 --batch-size 2 --lr 1e-2")
    assert job.wait(120) and job.status == "done", job.error
    folder = job.run_dir / "hf-model"
    assert json.loads((folder / "config.json").read_text())["dtype"] == "bfloat16"
    with np.load(job.run_dir / "model.npz") as z:
        trained = {k: z[k] for k in z.files}  # float32: what the job trained
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        back = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype="auto")
    assert back.dtype == torch.bfloat16
    theirs = back.state_dict()
    compared = 0
    for name, value in trained.items():
        if name not in theirs or ".experts." in name:
            continue  # transformers fuses the experts' weights (checked below, as stored)
        want = torch.from_numpy(np.asarray(value, np.float32))
        keep32 = name.endswith(("mlp.gate.weight", "e_score_correction_bias"))
        want = want if keep32 else want.to(torch.bfloat16)
        assert theirs[name].dtype == want.dtype and torch.equal(theirs[name], want), name
        compared += 1
    assert compared >= 10
    with safe_open(str(folder / "model.safetensors"), "pt") as f:
        key = next(k for k in f.keys() if ".experts.0.up_proj.weight" in k)
        got = f.get_tensor(key)
    assert got.dtype == torch.bfloat16
    assert torch.equal(got, torch.from_numpy(trained[key]).to(torch.bfloat16))
    # the weights moved (the float32 training was not rounded away)
    first = from_pretrained(base, dtype="float32")
    assert not np.array_equal(first.state_dict()["model.layers.0.mlp.up_proj.weight"],
                              trained["model.layers.0.mlp.up_proj.weight"])
    # a model asked for in float32 is saved as asked (as transformers' dtype=float32 model)
    save_pretrained(first, tmp_path / "f32")
    assert json.loads((tmp_path / "f32" / "config.json").read_text())["dtype"] == "float32"


def test_make_checkpoint_still_float32(tmp_path):
    """A float32 checkpoint's fine-tune stays float32 (only 16-bit stored ones go back)."""
    from skiff.kernels.train.models import from_pretrained, save_pretrained

    make_checkpoint(tmp_path / "ckpt", "dense-gqa-tied")
    save_pretrained(from_pretrained(tmp_path / "ckpt"), tmp_path / "out")
    assert json.loads((tmp_path / "out" / "config.json").read_text())["dtype"] == "float32"


def test_prompts_file_is_answered_as_one_left_padded_batch(tmp_path):
    """``%chat DIR --prompts FILE``: the prompts answered in one greedy batch (they were
    answered one after another), each answer equal to transformers' left-padded batch's
    (the oracle: its ``generate`` on the padded ids and attention mask)."""
    from IPython.core.interactiveshell import InteractiveShell

    from .ernie_reference import make_sentencepiece_checkpoint

    plain = ("{%- for m in messages %}{{ '<|im_start|>' + m['role'] + '\n' + m['content'] }}"
             "<|end_of_sentence|>{{ '\n' }}{%- endfor %}"
             "{%- if add_generation_prompt %}<|im_start|>assistant\n{%- endif %}")
    ref, tok = make_sentencepiece_checkpoint(tmp_path / "ckpt", seed=6, chat_template=plain)
    ref = ref.eval()
    asked = ["Hello world", "The quick brown fox jumps over the lazy dog", "Two plus two?"]
    (tmp_path / "p.jsonl").write_text("".join(json.dumps(q) + "\n" for q in asked))
    rows = [tok.apply_chat_template([{"role": "user", "content": q}],
                                    add_generation_prompt=True, tokenize=True,
                                    return_dict=False) for q in asked]
    rows = [list(r["input_ids"] if isinstance(r, dict) else r) for r in rows]
    width = max(map(len, rows))
    assert len({len(r) for r in rows}) == 3  # premise: padding is needed
    pad = tok.pad_token_id if tok.pad_token_id is not None else 0
    ids = torch.tensor([[pad] * (width - len(r)) + r for r in rows])
    mask = torch.tensor([[0] * (width - len(r)) + [1] * len(r) for r in rows])
    with torch.no_grad():
        out = ref.generate(ids, attention_mask=mask, max_new_tokens=8, do_sample=False)
    eos = ref.generation_config.eos_token_id
    eos = set(eos if isinstance(eos, list) else [eos])
    want = []
    for row in out[:, width:].tolist():
        cut = next((i + 1 for i, t in enumerate(row) if t in eos), len(row))
        want.append((tok.decode(row[:cut], skip_special_tokens=True), cut))
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "skiff")
    job = shell.run_line_magic("chat", f"{tmp_path / 'ckpt'} --prompts {tmp_path / 'p.jsonl'} "
                                       "--max-new-tokens 8 --wait")
    assert job.status == "done", job.error
    got = [(r["text"], r["tokens"]) for r in job.result["replies"]]
    assert got == want and any(t for t, _ in want), want
    assert "answered as one batch" in str(job.logs), str(job.logs)
