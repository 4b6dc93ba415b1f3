"""``%train ernie DATA --from ADAPTER_DIR`` with a peft adapter folder (adapter_config.json +
adapter weights): the base named by ``base_model_name_or_path`` is loaded with the adapter on
it, and training goes on with that adapter (before: refused, "no config.json"). The oracle:
the base weights stay the checkpoint's, the model starts from the adapter's logits, and the
adapter's weights move."""

from __future__ import annotations

import numpy as np
from IPython.core.interactiveshell import InteractiveShell

from skiff.kernels.train.models import from_pretrained
from skiff.kernels.train.models.lora import apply_lora, lora_modules, save_adapter
from tests.kernels.train.models.ernie_reference import add_tokenizer, make_checkpoint

TEXT = ("The small boat sailed across the quiet bay at dawn. "
        "Wind came from the west and the sailors reefed the sail. " * 4)


def test_train_goes_on_with_an_adapter_folder(tmp_path, runs_dir):
    make_checkpoint(tmp_path / "base", "dense-gqa-tied")
    add_tokenizer(tmp_path / "base", TEXT, vocab_size=96)
    model = from_pretrained(tmp_path / "base")
    apply_lora(model, r=2, alpha=4, target_modules=("q_proj", "v_proj"))
    rng = np.random.default_rng(3)
    for _, m in lora_modules(model):  # a trained adapter: B not zero
        m.lora_B.weight.data[...] = rng.normal(0, 0.2, m.lora_B.weight.shape)
    save_adapter(model, tmp_path / "adapter", base_model_name_or_path=str(tmp_path / "base"))
    (tmp_path / "my.txt").write_text(TEXT)
    ids = model.tokenizer.encode("the small boat")[None, :]
    start = model(ids).numpy()

    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "skiff")
    job = shell.run_line_magic(
        "train", f"ernie {tmp_path / 'my.txt'} --from {tmp_path / 'adapter'} --steps 2 "
                 "--block-size 16 --batch-size 4 --lr 1e-2 --wait")
    assert job.status == "done", job.error
    assert job.config["from"] == str(tmp_path / "adapter")
    trained = job.value.model
    base = from_pretrained(tmp_path / "base")
    weights = dict(trained.named_parameters())
    for name, p in base.named_parameters():  # the base frozen: the checkpoint's weights
        assert np.array_equal(weights[name].numpy(), p.numpy()), name
    before = {n: m.lora_B.weight.numpy().copy() for n, m in lora_modules(model)}
    after = {n: m.lora_B.weight.numpy() for n, m in lora_modules(trained)}
    assert set(after) == set(before)
    assert any(np.abs(after[n] - before[n]).max() > 1e-4 for n in before)
    # the model trained on is the adapter's (the logits it began with), now moved on
    assert np.abs(from_pretrained(tmp_path / "adapter")(ids).numpy() - start).max() == 0
    assert np.abs(trained(ids).numpy() - start).max() > 0
