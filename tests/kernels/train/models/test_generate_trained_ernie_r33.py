"""`generate JOB "text"` on a train job that fine-tuned a checkpoint (ernie, LoRA merged)
reads the folder the job wrote back (`hf-model`); it was refused as "a train job of 'ernie',
which writes no text" (round 33, h12). And a reply's lines reach the terminal as lines, not
as a literal "\\n". Oracles: transformers' greedy continuation from the same folder, and
the text itself."""

from __future__ import annotations

import numpy as np
import pytest

from .ernie_reference import add_tokenizer, make_checkpoint, torch, transformers

TEXT = ("The sea was calm and the small boat drifted east. " * 3
        + "A skiff is a small boat; it carries one or two people across a calm sea. " * 3)


def test_generate_reads_a_trained_ernie_jobs_folder(tmp_path):
    from IPython.core.interactiveshell import InteractiveShell

    from skiff.kinds.chat import to_config

    make_checkpoint(tmp_path / "ckpt", "dense-gqa-tied")
    add_tokenizer(tmp_path / "ckpt", TEXT, vocab_size=96)
    (tmp_path / "my.txt").write_text(TEXT)
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "skiff")
    job = shell.run_line_magic(
        "train", f"ernie {tmp_path / 'my.txt'} --from {tmp_path / 'ckpt'} --lora-r 4 "
                 "--steps 4 --block-size 16 --batch-size 4 --lr 1e-2 --wait")
    assert job.status == "done", job.error
    config = to_config({"model": str(job.run_dir), "prompt": "the small boat",
                        "max_new_tokens": 4}, chat_default=False)
    folder = job.run_dir / "hf-model"
    assert config["model"] == str(folder)
    from skiff.kernels.train.models import from_pretrained

    model = from_pretrained(folder)
    ids = model.tokenizer.encode("the small boat")[None, :]
    ref = transformers.AutoModelForCausalLM.from_pretrained(folder).eval()
    with torch.no_grad():
        want = ref.generate(torch.tensor(ids), max_new_tokens=4, do_sample=False).numpy()
    got = np.asarray(model.generate(ids, max_new_tokens=4, do_sample=False))
    assert np.array_equal(got, want)


@pytest.mark.parametrize("thinking", [None, "first\nsecond"])
def test_reply_lines_are_lines(thinking):
    from skiff.kinds.chat import GenerateKind

    result = {"text": "a\nb", "tokens": 2, "tokens_per_s": 1.0, "stop": "length"}
    if thinking:
        result["thinking"] = thinking
    lines = GenerateKind().summary(result)
    head = ["thinking: first", "second"] if thinking else []
    assert lines[:len(head) + 2] == [*head, "a", "b"]
