"""An MoE fine-tune's job as a user reads it (round 42, h17), on a tiny ERNIE-4.5 MoE with
the router's balancing loss on (``output_router_logits``, coefficient 0.5):

* ``--lora-targets`` an expression of the shared experts' linears: the adapter peft reads
  otherwise (round 42 h12's warning) is said in the job's summary lines, not only on the
  CLI's stderr.
* The held-out losses against transformers: ``val_loss`` (``--val-split``) is the loss with
  the balancing term, as transformers' ``eval_loss``; ``--eval``'s figure is the NLL alone
  and is named ``eval_nll`` (it was ``eval_loss``, read as transformers' ``eval_loss``)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from skiff.kernels.backend.report import NullReporter
from skiff.kernels.train import entry
from skiff.kernels.train.models import from_pretrained

from .ernie_reference import add_tokenizer, make_checkpoint, torch, transformers

TEXT = ("The sea was calm and the small boat drifted east. " * 3
        + "A gull cried over the harbour wall. ") * 4


@pytest.fixture(scope="module")
def moe(tmp_path_factory):
    """``(folder, text file, transformers model)``: the balancing loss on, coefficient 0.5."""
    folder = tmp_path_factory.mktemp("r42h17") / "ckpt"
    _, ref = make_checkpoint(folder, "moe-shared")
    add_tokenizer(folder, TEXT, vocab_size=80)
    cfg = json.loads((folder / "config.json").read_text())
    cfg.update(output_router_logits=True, router_aux_loss_coef=0.5)
    (folder / "config.json").write_text(json.dumps(cfg))
    text = folder.parent / "sea.txt"
    text.write_text(TEXT)
    return folder, text, transformers.AutoModelForCausalLM.from_pretrained(folder).eval()


class _Run(NullReporter):
    def __init__(self, run_dir):
        self.run_dir = run_dir


def test_the_adapter_peft_reads_otherwise_is_in_the_jobs_summary(moe, tmp_path):
    from skiff.kinds.train import KIND

    folder, text, _ = moe
    config = {"model": "ernie", "from": str(folder), "data": str(text), "steps": 1,
              "block_size": 16, "batch_size": 2, "val_split": 0.2,
              "lora": {"r": 2, "alpha": 4.0,
                       "targets": r".*shared_experts\.(gate|up|down)_proj"}}
    # (a regular expression: skiff's reading, the shared experts' linears; round 43 h13
    # reads a list of up_proj, gate_proj, down_proj as peft does, round 44 h6 all-linear
    # too: nothing to warn of then)
    with pytest.warns(UserWarning, match="routed experts' fused"):  # the CLI's, as before
        result = entry.run(config, _Run(tmp_path))
    lines = KIND.summary(json.loads(json.dumps(result.to_json())))
    said = [ln for ln in lines if "routed experts' fused" in ln]
    assert len(said) == 1 and "hf-adapter" in said[0] and "shared experts" in said[0], lines
    assert said[0].startswith("warning: hf-adapter: "), said  # a warning, not a data note
    # the held-out NLL beside the loss with the balancing term (round 43 h13), in the
    # validation rows and the summary; below it by the term (0.5 x aux, aux ~2 at top-2)
    val = result.val_history[-1]
    assert 0.4 < val["val_loss"] - val["val_nll"] < 2.0, val
    assert "(nll " in lines[0], lines


def test_held_out_losses_against_transformers(moe):
    from skiff.kernels.train.data import ArrayDataset
    from skiff.kernels.train.models.evaluate import HeldOut
    from skiff.kernels.train.trainer import Trainer

    folder, text, ref = moe
    model = from_pretrained(folder)
    x = np.asarray(model.tokenizer.encode(TEXT[:200]))[None, :32]
    y = np.concatenate([x[:, 1:], [[-100]]], axis=1)  # transformers' labels=x, shifted
    with torch.no_grad():
        theirs = ref(torch.tensor(x), labels=torch.tensor(x))  # (transformers shifts)
        nll = ref(torch.tensor(x), labels=torch.tensor(x), output_router_logits=False).loss
    assert theirs.loss.item() - nll.item() > 0.1  # the balancing term is in transformers'
    # --val-split's val_loss: transformers' eval_loss (the NLL and the balancing term)
    val = Trainer(model, batch_size=1).evaluate(ArrayDataset(x, y))
    got = val["val_loss"]
    assert abs(got - theirs.loss.item()) <= 2e-5 * theirs.loss.item(), (got, theirs.loss)
    # and its NLL beside it (round 43 h13): transformers' loss without the balancing term
    assert abs(val["val_nll"] - nll.item()) <= 2e-5 * nll.item(), (val, nll)
    # --eval's: the NLL alone, and named so
    full = torch.tensor(model.tokenizer.encode(TEXT[:200]))[None]  # one block: all of it
    with torch.no_grad():
        nll = ref(full, labels=full, output_router_logits=False).loss.item()
    held = HeldOut([{"text": TEXT[:200]}], model.tokenizer, block_size=full.shape[1])(model)
    assert "eval_loss" not in held, held
    assert abs(held["eval_nll"] - nll) <= 2e-5 * nll, (held, nll)
    assert np.isclose(held["eval_perplexity"], np.exp(held["eval_nll"]))
