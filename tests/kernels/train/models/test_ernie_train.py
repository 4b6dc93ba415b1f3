"""Fine-tuning ERNIE-4.5 in skiff: the Trainer's AdamW steps against torch's AdamW on the
transformers model (same batch, same hyper-parameters), and ``%train ernie DATA --from DIR``
on a user's text through the checkpoint's own tokenizer, whose result folder transformers
loads back with equal logits.
"""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.train.data import ArrayDataset
from skiff.kernels.train.models import from_pretrained, get
from skiff.kernels.train.trainer import Trainer

from .ernie_reference import add_tokenizer, make_checkpoint, torch, transformers

TEXT = ("The sea was calm and the small boat drifted east. " * 3
        + "A skiff is a small boat; it carries one or two people across a calm sea. " * 3
        + "Wind came from the west and the sailors reefed the sail. " * 3)


@pytest.mark.parametrize("shape", ["dense-gqa-tied", "moe-shared"])
def test_adamw_steps_equal_torch(tmp_path, shape):
    _, ref = make_checkpoint(tmp_path, shape)
    model = get("ernie", path=tmp_path)
    ids = np.random.default_rng(4).integers(3, model.config.vocab_size, (4, 9))
    x, y = ids[:, :-1], ids[:, 1:]
    steps, lr = 4, 2e-3
    result = Trainer(model, lr=lr, batch_size=4, schedule="constant", clip=None,
                     shuffle=False).train(ArrayDataset(x, y), steps=steps)
    opt = torch.optim.AdamW([p for p in ref.parameters() if p.requires_grad], lr=lr,
                            weight_decay=0.01)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        logits = ref(torch.tensor(x)).logits
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                                 torch.tensor(y).reshape(-1))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    mine = [h["loss"] for h in result.history]
    assert np.allclose(mine, losses, rtol=1e-4), (mine, losses)
    assert losses[-1] < losses[0]
    theirs = dict(ref.named_parameters())
    for name, p in model.named_parameters():
        if ".experts." in name:
            continue  # fused in transformers' memory; their effect is in the losses above
        want = theirs[name].detach().numpy()
        diff = np.abs(p.numpy() - want)
        tight = diff <= 1e-4 * np.abs(want).max()
        # AdamW moves a weight whose gradient is near zero by up to lr a step whatever the
        # gradient's size (m / sqrt(v)), so float32 summation order (AVX2 against AVX-512
        # BLAS) can move one such weight by a part of lr: seen once in 512 (0.09 lr on an
        # AMD EPYC), every other weight within 1e-3 lr. A wrong update moves most weights.
        assert tight.mean() >= 0.99, (name, tight.mean())
        assert diff.max() <= 0.25 * lr, (name, diff.max() / lr)


def test_train_magic_on_own_text_with_checkpoint_tokenizer(tmp_path):
    from IPython.core.interactiveshell import InteractiveShell

    make_checkpoint(tmp_path / "ckpt", "dense-gqa-tied")
    add_tokenizer(tmp_path / "ckpt", TEXT, vocab_size=96)
    (tmp_path / "my.txt").write_text(TEXT)
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "skiff")
    job = shell.run_line_magic(
        "train", f"ernie --data {tmp_path / 'my.txt'} --from {tmp_path / 'ckpt'} --steps 12 "
                 "--block-size 16 --batch-size 4 --lr 3e-3 --wait")
    assert job.status == "done", job.error
    assert job.config["from"] == str(tmp_path / "ckpt")
    losses = [h["loss"] for h in job.result["history"]]
    assert len(losses) == 12 and np.mean(losses[-3:]) < np.mean(losses[:3])
    # the trained weights come back in the Hugging Face layout, tokenizer included
    folder = job.run_dir / "hf-model"
    assert (folder / "tokenizer.json").is_file()
    trained = job.value.model
    back = transformers.AutoModelForCausalLM.from_pretrained(folder).eval()
    ids = trained.tokenizer.encode("the small boat")[None, :]
    with torch.no_grad():
        want = back(torch.tensor(ids)).logits.numpy()
    got = trained(ids).numpy()
    assert np.abs(got - want).max() <= 1e-4 * np.abs(want).max()
    assert np.abs(from_pretrained(folder)(ids).numpy() - got).max() == 0


def test_train_line_errors():
    from skiff.kinds.train import KIND

    def config(line):
        return KIND.to_config(vars(KIND.command.parse(line.split())))

    with pytest.raises(ValueError, match="give --from DIR"):
        config("ernie")
    with pytest.raises(ValueError, match="not a checkpoint folder"):
        config("ernie --from /nonexistent")
    with pytest.raises(ValueError, match="--from DIR is for models loaded from a checkpoint"):
        config("gpt-mini --from /tmp")
    with pytest.raises(ValueError, match="DATA given twice"):
        config("gpt-mini sonnets --data prose")
    with pytest.raises(ValueError, match="--lora-alpha needs --lora-r R"):
        config("gpt-mini --lora-alpha 4")


def test_train_magic_lora(tmp_path):
    """``--lora-r``: only the adapters train (the base weights are the checkpoint's after
    the run); the job writes the adapter in peft's layout, which peft loads on the base with
    the trained model's logits."""
    peft = pytest.importorskip("peft")
    from IPython.core.interactiveshell import InteractiveShell

    make_checkpoint(tmp_path / "ckpt", "dense-gqa-tied")
    add_tokenizer(tmp_path / "ckpt", TEXT, vocab_size=96)
    (tmp_path / "my.txt").write_text(TEXT)
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "skiff")
    job = shell.run_line_magic(
        "train", f"ernie {tmp_path / 'my.txt'} --from {tmp_path / 'ckpt'} --lora-r 4 "
                 "--lora-targets q_proj,v_proj,down_proj --steps 10 --block-size 16 "
                 "--batch-size 4 --lr 1e-2 --wait")
    assert job.status == "done", job.error
    assert job.config["lora"] == {"r": 4, "alpha": 8.0,
                                  "targets": ["q_proj", "v_proj", "down_proj"]}
    losses = [h["loss"] for h in job.result["history"]]
    assert np.mean(losses[-3:]) < np.mean(losses[:3])
    trained = job.value.model
    base = from_pretrained(tmp_path / "ckpt")
    for name, p in base.named_parameters():
        assert np.array_equal(dict(trained.named_parameters())[name].numpy(), p.numpy()), name
    ref = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "ckpt")
    loaded = peft.PeftModel.from_pretrained(ref, job.run_dir / "hf-adapter").eval()
    ids = trained.tokenizer.encode("the small boat")[None, :]
    with torch.no_grad():
        want = loaded(torch.tensor(ids)).logits.numpy()
    got = trained(ids).numpy()
    assert np.abs(got - want).max() <= 1e-4 * np.abs(want).max()
    assert np.abs(got - base(ids).numpy()).max() > 1e-3  # the adapters did change it


def test_moe_load_balancing_loss_equals_transformers(tmp_path):
    """With ``output_router_logits`` the reference adds ``router_aux_loss_coef`` times its
    load-balancing loss; skiff's loss and its gradients (router included) match."""
    from .ernie_reference import build_reference

    ref = build_reference("moe-interval")
    ref.config.output_router_logits = True
    ref.config.router_aux_loss_coef = 0.5  # large, so the term shows in the gradients
    ref.save_pretrained(tmp_path)
    model = from_pretrained(tmp_path)
    assert model.config.output_router_logits
    ids = np.random.default_rng(8).integers(3, model.config.vocab_size, (2, 12))
    x, y = ids[:, :-1], ids[:, 1:]
    loss = model.loss((x, y))
    loss.backward()
    out = ref(torch.tensor(x))
    logits = out.logits
    tloss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                              torch.tensor(y).reshape(-1))
    assert out.aux_loss is not None
    assert abs(model.load_balancing_loss().item() - out.aux_loss.item()) <= \
        1e-5 * out.aux_loss.item()
    tloss = tloss + 0.5 * out.aux_loss
    tloss.backward()
    assert abs(loss.item() - tloss.item()) <= 1e-5 * tloss.item()
    theirs = dict(ref.named_parameters())
    for name in ("model.layers.1.mlp.gate.weight", "model.layers.3.mlp.gate.weight",
                 "model.layers.0.self_attn.q_proj.weight"):
        g, tg = dict(model.named_parameters())[name].grad.numpy(), theirs[name].grad.numpy()
        assert np.abs(g - tg).max() <= 1e-4 * np.abs(tg).max(), name
