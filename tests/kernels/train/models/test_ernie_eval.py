"""Held-out evaluation during fine-tuning: ``%train ernie --from DIR --data chat.jsonl
--eval heldout.jsonl --eval-every 2`` reports eval loss, perplexity, exact match and
multiple-choice accuracy as metrics at steps 0, 2, 4 (and a table in the result), each equal
to what ``evaluate.py`` gives on the checkpoint the job wrote at that step, a model loaded
independently; a bad held-out file is one clear error before any run folder exists."""

from __future__ import annotations

import contextlib
import io
import json

import numpy as np
import pytest

from skiff.kernels.train.checkpoint import load_checkpoint
from skiff.kernels.train.models import from_pretrained
from skiff.kernels.train.models.evaluate import (
    EvalTable,
    chat_loss,
    exact_match,
    multiple_choice,
    perplexity,
)

from .ernie_reference import make_sentencepiece_checkpoint

PLAIN = ("{%- for m in messages %}{{ m['role'] + ': ' + m['content'] }}"
         "{%- if m['role'] == 'assistant' %}{{ eos_token }}{%- endif %}\n{%- endfor %}"
         "{%- if add_generation_prompt %}assistant:{%- endif %}")


def _chat(q, a):
    return {"messages": [{"role": "user", "content": q}, {"role": "assistant", "content": a}]}


TRAIN = [_chat("What is two plus two?", "Four."), _chat("Hello world", "Hello skiff!"),
         _chat("Name a small boat.", "A skiff."), _chat("Where is the sea?", "East.")]
HELD = [dict(_chat("What is two plus three?", "Five."), answer="Five."),
        {"text": "The quick brown fox jumps over the lazy dog."},
        dict(_chat("Name a boat.", "A skiff."), choices=["A skiff.", "A dog.", "Five."],
             answer=0),
        {"text": "hello world", "prompt": "Hello", "answer": "world"}]
BLOCK = 64


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("ernie-eval")
    make_sentencepiece_checkpoint(root / "ckpt", seed=3, chat_template=PLAIN)
    # the last row's answer is what the base model says (exact match 1/2 at step 0)
    base = from_pretrained(root / "ckpt")
    ids = base.tokenizer.encode("Hello")
    eos = base.generation_config.get("eos_token_id", base.config.eos_token_id)
    out = [t for t in base.generate(ids[None], max_new_tokens=32)[0, len(ids):] if t != eos]
    HELD[-1]["answer"] = base.tokenizer.decode(out).strip().split("\n")[0].strip()
    for name, rows in (("chat.jsonl", TRAIN), ("heldout.jsonl", HELD)):
        (root / name).write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root


@pytest.fixture(scope="module")
def base_metrics(files):
    """evaluate.py on the base checkpoint (step 0 of every job here), computed once (round
    43: each test computed it again)."""
    base = from_pretrained(files / "ckpt")
    return _independent(base, base.tokenizer)


def _independent(model, tok) -> dict:
    """evaluate.py on ``model``, the rows and prompts composed here from HELD."""
    chats = [r for r in HELD if "messages" in r]
    got = chat_loss(model, chats, block_size=BLOCK)
    total, count = got["loss"] * got["tokens"], got["tokens"]
    for r in HELD:
        if "text" in r:
            p = perplexity(model, r["text"], block_size=BLOCK)
            total, count = total + p["loss"] * p["tokens"], count + p["tokens"]

    def prompt(r):
        if "prompt" in r:
            return r["prompt"]
        return tok.apply_chat_template(r["messages"][:-1], add_generation_prompt=True)

    em = exact_match(model, [{"prompt": prompt(r), "answer": r["answer"]} for r in HELD
                             if "answer" in r and "choices" not in r])
    mc = multiple_choice(model, [{"prompt": prompt(r), "choices": r["choices"],
                                  "answer": r["answer"]} for r in HELD if "choices" in r])
    return {"eval_loss": total / count, "eval_perplexity": float(np.exp(total / count)),
            "eval_exact_match": em["exact_match"], "eval_choice_accuracy": mc["accuracy"]}


@pytest.mark.parametrize("lora", [False, True], ids=["full", "lora"])
def test_eval_metrics_during_training_equal_evaluate_on_the_saved_model(files, lora,
                                                                      base_metrics):
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "skiff")
    line = (f"ernie --data {files / 'chat.jsonl'} --from {files / 'ckpt'} --eval "
            f"{files / 'heldout.jsonl'} --eval-every 2 --steps 4 --checkpoint-every 2 "
            f"--batch-size 2 --lr 2e-2 --block-size {BLOCK} --wait"
            + (" --lora-r 4 --lora-targets q_proj,v_proj,down_proj" if lora else ""))
    job = shell.run_line_magic("train", line)
    assert job.status == "done", job.error
    names = ("eval_loss", "eval_perplexity", "eval_exact_match", "eval_choice_accuracy")
    seen = {}
    for e in job.events():
        if e["type"] == "metric" and e["name"] in names:
            seen.setdefault(e["step"], {})[e["name"]] = e["value"]
    assert sorted(seen) == [0, 2, 4] and all(set(v) == set(names) for v in seen.values())
    assert [r["step"] for r in job.result["evaluation"]] == [0, 2, 4]
    assert seen[4]["eval_loss"] < seen[0]["eval_loss"]  # fine-tuning lowered it
    assert seen[0]["eval_exact_match"] == 0.5  # the base model's own answer (fixture)

    base = from_pretrained(files / "ckpt")
    for step, metrics in seen.items():
        if not step:
            want = base_metrics
            for name in names:
                assert metrics[name] == pytest.approx(want[name], rel=1e-6, abs=1e-12), name
            continue
        model = from_pretrained(files / "ckpt")
        if lora:
            from skiff.kernels.train.models.lora import apply_lora

            apply_lora(model, r=4, alpha=8.0, target_modules=["q_proj", "v_proj", "down_proj"])
        state = load_checkpoint(job.run_dir / "checkpoints" / f"step-{step:08d}.npz")
        model.load_state_dict(state)  # a LoRA run's holds the adapters, not the base
        want = _independent(model, base.tokenizer)
        for name in names:
            assert metrics[name] == pytest.approx(want[name], rel=1e-6, abs=1e-12), \
                (step, name)

    # the result's table, in the view and in the terminal's summary
    from skiff.kinds import KINDS

    html = KINDS["train"].result_html(job)
    assert "held-out" in html and "step 4" in html and "eval_perplexity" in html
    assert any(s.startswith("held-out at step 4: loss") for s in
               KINDS["train"].summary(job.result))
    table = EvalTable.from_history(job.result["evaluation"])
    assert table.value("step 4", "eval_loss") == seen[4]["eval_loss"]
    if not lora:  # the job's widget: the table once done, the eval curves in its chart
        from skiff.widgets.chart import metric_groups
        from skiff.widgets.job_view import JobView

        view = JobView(job, start=False)
        try:
            view.update(force=True)
            assert "held-out" in view.result_view.value and view.chart.value
            assert ["eval_loss", "loss"] in metric_groups(job.refresh().metrics)
        finally:
            view.close()


def test_without_eval_nothing_changes():
    from skiff.kinds.train import KIND

    config = KIND.to_config(vars(KIND.command.parse(["gpt-mini", "--steps", "2"])))
    assert config["eval"] is None and config["eval_every"] is None


def test_evaluator_runs_at_the_right_steps():
    """The Trainer's hook: before the first step, every N steps, after the last; once each."""
    from skiff.kernels.train.core import nn
    from skiff.kernels.train.trainer import Trainer

    x = np.random.default_rng(0).standard_normal((16, 3)).astype("f4")
    y = (x[:, 0] > 0).astype("i8")
    steps = []
    result = Trainer(nn.Linear(3, 2), batch_size=4, evaluator=lambda m: steps.append(1) or
                     {"eval_n": float(len(steps))}, eval_every=2).train((x, y), steps=5)
    assert [r["step"] for r in result.evaluation] == [0, 2, 4, 5]
    assert result.to_json()["evaluation"][-1] == {"step": 5, "eval_n": 4.0}
    with pytest.raises(ValueError, match="eval_every must be a positive integer"):
        Trainer(nn.Linear(3, 2), eval_every=0)


@pytest.mark.parametrize("rows, words", [
    (None, "no such file"),
    ([HELD[0], {"prompt": "x", "answer": "y"}], "line 2 has neither 'messages' nor 'text'"),
    (["not a row"], "line 1 is a str"),
    ([{"messages": [{"role": "user", "content": "hi"}]}], "line 1 has no assistant message"),
    ([dict(HELD[2], answer=3)], "'answer' must be the index of the right choice (0..2)"),
    ([{"text": "x", "choices": ["a"], "answer": 0}], "'choices' must be a list of at least 2"),
    ("{oops\n", "line 1 is not JSON"),
    ([], "no rows"),
])
def test_bad_heldout_file_is_one_clear_error(files, tmp_path, rows, words):
    from skiff.cli import main

    path = tmp_path / "bad.jsonl"
    if isinstance(rows, str):
        path.write_text(rows)
    elif rows is not None:
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["train", "ernie", "--data", str(files / "chat.jsonl"), "--from",
                     str(files / "ckpt"), "--eval", str(path), "--steps", "1"])
    assert code == 2
    assert words in err.getvalue() and len(err.getvalue().strip().splitlines()) == 1


def test_eval_option_errors(files):
    from skiff.kinds.train import KIND

    def config(line):
        return KIND.to_config(vars(KIND.command.parse(line.split())))

    with pytest.raises(ValueError, match="--eval-every needs --eval FILE"):
        config("gpt-mini --eval-every 3")
    with pytest.raises(ValueError, match="--eval FILE is for models loaded from a checkpoint"):
        config(f"gpt-mini --eval {files / 'heldout.jsonl'}")
    got = config(f"ernie --from {files / 'ckpt'} --eval {files / 'heldout.jsonl'} "
                 "--eval-every 5")
    assert (got["eval"], got["eval_every"]) == (str(files / "heldout.jsonl"), 5)


def test_train_form_takes_the_same_words(files, tmp_path):
    """The panel's Train form offers --eval and --eval-every (from the grammar) and shows a
    bad held-out file next to its field, Launch disabled."""
    from skiff.widgets.panels import train_form

    form = train_form()
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"prompt": "x"}) + "\n")
    form.set(model="ernie", from_dir=str(files / "ckpt"), data="", eval=str(bad))
    assert "line 1 has neither 'messages' nor 'text'" in form.errors["eval"]
    assert form.launch_button.disabled
    form.set(eval=str(files / "heldout.jsonl"), eval_every="2", steps="4")
    assert not form.errors and not form.launch_button.disabled
    assert f"--eval {files / 'heldout.jsonl'} --eval-every 2" in form.magic


@pytest.fixture(scope="module")
def moe_files(files):
    """A ``moe-shared`` ERNIE-4.5 MoE of the same SentencePiece vocabulary and template,
    training its balancing loss (``output_router_logits``, coefficient 0.5)."""
    from .ernie_reference import SHAPES, torch, transformers, write_sentencepiece

    folder = files / "moe-ckpt"
    write_sentencepiece(folder, chat_template=PLAIN)
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    cfg = transformers.Ernie4_5_MoeConfig(**dict(
        SHAPES["moe-shared"][1], vocab_size=len(tok), output_router_logits=True,
        router_aux_loss_coef=0.5))
    ref = transformers.Ernie4_5_MoeForCausalLM(cfg)
    gen = torch.Generator().manual_seed(5)
    with torch.no_grad():
        for name, p in ref.named_parameters():
            p.copy_(torch.rand(p.shape, generator=gen) * 0.2 - 0.1
                    if "e_score_correction_bias" in name else
                    torch.rand(p.shape, generator=gen) + 0.5 if p.ndim == 1
                    else torch.randn(p.shape, generator=gen) * 0.3)
    ref.eval().save_pretrained(folder)
    return folder


def _adapter(run_dir) -> dict:
    from safetensors.numpy import load_file

    return load_file(str(run_dir / "hf-adapter" / "adapter_model.safetensors"))


@pytest.mark.mpi
@pytest.mark.parametrize("strategy", ["dp", "tp"])
def test_eval_on_two_ranks(files, strategy, base_metrics, request):
    """``--np 2 --strategy dp``: rank 0 evaluates (the model is whole on every rank); ``tp``:
    the ranks gather a whole copy for it (a model split over ranks evaluated on one alone
    would hang or read half the heads). The rows come at the same steps, step 0 is the base
    model's, and the last equals evaluate.py on the final weights the job wrote.

    ``tp`` runs an MoE that trains its balancing loss, with ``--lora-targets all-linear``
    (peft's reading: the attention, the experts' fused weights and the router's LoRA) and
    ``--val-split``: its adapter and its validation rows (``val_loss`` and the NLL alone,
    ``val_nll``) equal a one-process run's (round 44 h14: both were run by hand only)."""
    from skiff.jobs import submit

    ckpt, extra = files / "ckpt", ""
    if strategy == "tp":
        ckpt = request.getfixturevalue("moe_files")
        extra = " --lora-r 2 --lora-targets all-linear --val-split 0.25"
    line = (f"ernie --data {files / 'chat.jsonl'} --from {ckpt} --eval "
            f"{files / 'heldout.jsonl'} --eval-every 2 --steps 4 --batch-size 2 --lr 2e-2 "
            f"--block-size {BLOCK}{extra}")
    job, _ = submit("train", f"{line} --np 2 --strategy {strategy}")
    assert job.wait(300) and job.status == "done", job.error
    rows = job.result["evaluation"]
    assert [r["step"] for r in rows] == [0, 2, 4]
    base = from_pretrained(ckpt)
    want0 = base_metrics if strategy == "dp" else _independent(base, base.tokenizer)
    if strategy == "dp":
        model = from_pretrained(files / "ckpt")
        with np.load(job.run_dir / "model.npz") as z:
            model.load_state_dict({k: z[k] for k in z.files})
    else:  # the LoRA run's weights written back merged (Hugging Face layout)
        model = from_pretrained(job.run_dir / "hf-model")
    want4 = _independent(model, base.tokenizer)
    loss = "eval_loss" if strategy == "dp" else "eval_nll"  # an MoE's held-out NLL
    for name in ("eval_loss", "eval_exact_match", "eval_choice_accuracy"):
        got = loss if name == "eval_loss" else name
        assert rows[0][got] == pytest.approx(want0[name], rel=1e-6, abs=1e-12), name
        assert rows[-1][got] == pytest.approx(want4[name], rel=1e-6, abs=1e-12), name
    if strategy == "tp":
        one, _ = submit("train", line)  # the same run in one process
        assert one.wait(300) and one.status == "done", one.error
        vals, want = job.result["val_history"], one.result["val_history"]
        assert [v["step"] for v in vals] == [v["step"] for v in want] and len(vals) >= 2
        for got, ref in zip(vals, want):
            assert 0.05 < got["val_loss"] - got["val_nll"]  # the balancing term apart
            for name in ("val_loss", "val_nll"):
                assert got[name] == pytest.approx(ref[name], rel=2e-5), (got, ref)
        mine, theirs = _adapter(job.run_dir), _adapter(one.run_dir)
        assert mine.keys() == theirs.keys()
        router = [k for k in mine if ".mlp.gate.lora_B" in k]
        assert router and all(np.abs(mine[k]).max() > 1e-4 for k in router)  # trained
        for k in mine:
            assert np.abs(mine[k] - theirs[k]).max() <= 1e-4 * np.abs(theirs[k]).max(), k


def test_which_strategies_can_give_an_evaluation_model():
    """Whole on every rank: the model itself; split and unable to gather a copy: one error
    naming what to use (the Trainer asks before each evaluation, on every rank)."""
    from skiff.kernels.train.parallel.hybrid import TensorParallel
    from skiff.kernels.train.parallel.moe import ExpertParallel
    from skiff.kernels.train.parallel.pipeline import PipelineParallel
    from skiff.kernels.train.strategy import SingleDevice

    model = object()
    assert SingleDevice().evaluation_model(model) is model
    pp = PipelineParallel.__new__(PipelineParallel)
    pp.sync_for_evaluation = lambda m: None  # pp gathers its stages first (round 36)
    assert pp.evaluation_model(model) is model
    tp = TensorParallel.__new__(TensorParallel)
    tp.copies = None  # a GPT split by tp
    with pytest.raises(ValueError, match="tp needs an ERNIE"):
        tp.evaluation_model(model)
    with pytest.raises(ValueError, match="ep needs an ERNIE"):
        ExpertParallel.__new__(ExpertParallel).evaluation_model(model)
