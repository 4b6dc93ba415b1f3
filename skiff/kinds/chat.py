"""Kinds ``chat`` and ``generate``: answers from a checkpoint, streamed while they are written.

``%chat DIR "prompt" [--system TEXT] [--max-new-tokens N] [--temperature X] [--top-k K]
[--top-p P] [--repetition-penalty R] [--no-repeat-ngram-size N] [--num-beams N]
[--history FILE|VAR] [--stop TEXT ...] [--seed N] [--no-thinking] [--device DEV] [--wait]
[-o NAME]``;
``%%chat DIR [options]`` takes the cell as the user's message. DIR is a checkpoint folder
in the Hugging Face layout, or (in a notebook) a variable holding a loaded model. ``chat``
renders the prompt with the checkpoint's chat template; ``generate`` continues the text as
it is (``--chat`` to use the template).
``python -m skiff generate DIR --prompt TEXT --json`` prints the result: ``text``,
``thinking``, ``tokens``, ``tokens_per_s`` (and ``raw``, ``prompt_tokens``, ``stop``,
``messages``: the conversation with the answer, what the next turn's ``--history`` reads).
``--prompts FILE`` answers a batch (a prompt a line, or a JSONL of strings, ``{"prompt"}``
rows or ``{"messages"}`` conversations ending with the user's turn) as one left-padded
batch, as transformers' ``generate`` (greedy, sampled: a
``--seed`` draws as ``torch.manual_seed(seed)`` then its ``generate``, or beams): the
result's ``replies`` (one per prompt, as above).
``--num-beams N`` (transformers' beam search, ``num_beams``): the answer comes whole at the
end, not streamed (transformers refuses a streamer with beams).

The job view shows the answer while it is written, the thinking collapsed above it
(:func:`skiff.kernels.train.models.chat_reply.reply_html`).
"""

from __future__ import annotations

import os
import shlex

from skiff.grammar.common import (
    Command,
    device_option,
    launch_options,
    nonneg_float,
    nonneg_int,
    positive_float,
    positive_int,
)
from skiff.kernels.backend.devices import DEFAULT_DEVICE

from .base import JobRequest, Kind, figure

__all__ = ["CHAT", "GENERATE", "KIND", "GENERATE_KIND", "to_config", "is_language_model",
           "trained_job", "run"]


@launch_options
@device_option
def _arguments(p):
    p.add_argument("model", metavar="JOB|DIR",
                   help="a train job (its id, --name or run folder: gpt-* or an open "
                        "model's fine-tune), a checkpoint folder (Hugging Face layout), or in "
                        "a notebook a variable holding a loaded model")
    p.add_argument("prompt", nargs="?", default=None, metavar="PROMPT",
                   help="the text to answer (%%%%chat: the cell)")
    p.add_argument("--prompt", dest="prompt_opt", default=None, metavar="TEXT",
                   help="the same as PROMPT")
    p.add_argument("--prompts", default=None, metavar="FILE",
                   help="a batch: a text file of prompts, one a line, or a .jsonl of "
                        "strings, {\"prompt\": ...} rows or {\"messages\": [...]} "
                        "conversations; answered as one batch (--json: the result's replies, "
                        "one per prompt)")
    p.add_argument("--system", default=None, metavar="TEXT", help="a system message first")
    p.add_argument("--max-new-tokens", type=positive_int, default=None, metavar="N",
                   help="stop after N new tokens (default 256; a gpt-* job past its "
                        "context reads the last block_size tokens)")
    p.add_argument("--temperature", type=nonneg_float, default=0.0, metavar="X",
                   help="0 (default): greedy; > 0: sample at this temperature")
    p.add_argument("--top-k", type=positive_int, default=None, metavar="K",
                   help="sample from the K most likely tokens (default: the checkpoint's "
                        "generation_config.json, else 50, as transformers)")
    p.add_argument("--top-p", type=positive_float, default=None, metavar="P",
                   help="sample from the smallest set of tokens holding probability P "
                        "(default: the checkpoint's, else 1)")
    p.add_argument("--repetition-penalty", type=positive_float, default=None, metavar="R",
                   help="discourage tokens already in the text (> 1), as transformers does "
                        "(default: the checkpoint's, else 1)")
    p.add_argument("--no-repeat-ngram-size", type=positive_int, default=None, metavar="N",
                   help="never repeat an N-token sequence of the text (transformers' "
                        "no_repeat_ngram_size)")
    p.add_argument("--num-beams", type=positive_int, default=None, metavar="N",
                   help="beam search over N beams (transformers' num_beams; with "
                        "--temperature > 0 beam sampling): the answer comes whole at the "
                        "end, not streamed")
    p.add_argument("--history", default=None, metavar="FILE|VAR",
                   help="the earlier turns: a JSON file of {role, content} messages, or "
                        "a chat --json output (its messages: the conversation with its "
                        "answer); in a notebook a variable holding either, or a reply")
    p.add_argument("--stop", action="append", default=None, metavar="TEXT",
                   help="stop when the answer reaches TEXT (repeatable)")
    p.add_argument("--seed", type=nonneg_int, default=None, metavar="N",
                   help="sampling seed (an integer >= 0)")
    p.add_argument("--no-thinking", action="store_true",
                   help="ask the chat template to skip the thinking part (enable_thinking)")
    p.add_argument("--chat", dest="use_template", action="store_true", default=None,
                   help="render the prompt with the chat template (chat's default)")
    p.add_argument("--raw", dest="use_template", action="store_false",
                   help="continue the prompt as plain text (generate's default)")


CHAT = Command("chat", "Answer a prompt with a checkpoint (its chat template), streamed while "
                       "written; %%chat takes the cell as the message.",
               _arguments, list(reversed(_arguments.__skiff_groups__)))
GENERATE = Command("generate", "Continue a text with a checkpoint (or --chat: answer it), "
                               "streamed while written; --json prints text and thinking.",
                   _arguments, list(reversed(_arguments.__skiff_groups__)))


def is_language_model(obj) -> bool:
    """A loaded model ``%chat`` can use: one with ``generate`` and a tokenizer."""
    return callable(getattr(obj, "generate", None)) and getattr(obj, "tokenizer", None) is not None


def trained_job(folder) -> dict | None:
    """The train config of a skiff run folder (a ``train gpt-mini ...`` job's), else None."""
    import json

    try:
        with open(os.path.join(os.path.expanduser(str(folder)), "config.json"),
                  encoding="utf-8") as fh:
            meta = json.load(fh)
    except (OSError, ValueError):
        return None
    if isinstance(meta, dict) and meta.get("kind") == "train" and isinstance(
            meta.get("config"), dict):
        return meta["config"]
    return None


def run(config: dict, reporter, model=None):
    """Job entry of ``chat``/``generate``: a checkpoint folder's model, a notebook's, or the
    model a skiff train job trained (its run folder: built as the job built it, with its
    ``model.npz``; byte-level text, no chat template)."""
    from skiff.kernels.train.models import chat_reply

    job = trained_job(config["model"]) if model is None else None
    if job is None:
        return chat_reply.run(config, reporter, model=model)
    import time

    from skiff.kernels.backend.report import JobCancelled
    from skiff.kernels.train.entry import load_trained_model

    reporter.log(f"loading the model of the train job {config['model']}")
    net = load_trained_model(config["model"], job)
    prompt, name = config["prompt"], str(job.get("model"))
    total = config.get("max_new_tokens")
    total = fits(name, prompt, None if total is None else int(total),
                 net.config.block_size)
    temperature = float(config.get("temperature") or 0.0)
    stops = [s for s in config.get("stop") or [] if s]
    # a stop string may begin in the prompt (as transformers' stop_strings match)
    before = prompt[-max((len(s) for s in stops), default=0):] if stops else ""
    last, state = [0.0], {"text": "", "n": 0}

    def on_token(text, n):
        state["text"], state["n"] = text, n
        if reporter.should_stop():  # what was generated so far is the job's result
            exc = JobCancelled("cancelled by request")
            exc.partial = {"text": _cut(text, stops, before), "thinking": "", "tokens": n,
                           "stop": "cancelled", "model": name}
            raise exc
        reporter.progress(n, total, unit="token")
        now = time.monotonic()
        if now - last[0] >= 0.1:
            last[0] = now
            reporter.info(thinking="", text=_cut(text, stops, before), tokens=n)
        return bool(stops) and _cut(text, stops, before) != text

    start = time.perf_counter()
    top_k = config.get("top_k")  # past the vocabulary: all of it (transformers, the
    top_k = None if top_k is None else min(int(top_k), net.config.vocab_size)  # checkpoints)
    full = net.generate_text(prompt, total, temperature=temperature, top_k=top_k,
                             seed=config.get("seed"),
                             on_token=on_token)
    seconds = time.perf_counter() - start
    n = state["n"]  # the whole text: a last unfinished character too (as generate_text)
    raw = full[len(prompt):] if full.startswith(prompt) else state["text"]
    new = _cut(raw, stops, before)
    result = chat_reply.ChatReply(text=new, thinking="", raw=raw, tokens=n,
                                  prompt_tokens=len(prompt.encode("utf-8")),
                                  seconds=round(seconds, 4),
                                  tokens_per_s=round(n / seconds, 2) if seconds > 0 else 0.0,
                                  stop="stop string" if new != raw else "length", model=name)
    reporter.info(thinking="", text=new, tokens=n)
    reporter.progress(n, n, unit="token")
    reporter.metric("tokens_per_s", result.tokens_per_s)
    reporter.log(f"{n} tokens in {result.seconds:.2f} s ({result.tokens_per_s:.1f} "
                 f"tokens/s), stopped by {result.stop}")
    return result


def _cut(text: str, stops, before: str = "") -> str:
    """``text`` ended before the first of the ``stops`` it holds, one that begins in
    ``before`` (the prompt's end) too (as the checkpoint path)."""
    from skiff.kernels.train.models.chat_reply import stop_cut

    return stop_cut(text, stops, before)


def fits(name: str, prompt: str, max_new_tokens: int | None, block_size: int) -> int:
    """The new-token count of a gpt-* job's generation: ``max_new_tokens``, or 256 when none
    is given. Not bounded by the model's ``block_size``: past it each new token sees the
    last ``block_size`` tokens (a sliding window, as ``GPT.generate`` and nanoGPT's sampler
    do; a long prompt is read from its end), and a cancel stops the loop at the next token,
    so a large count is the user's to stop, not an error."""
    del name, prompt, block_size  # kept in the signature: the callers say what they have
    return DEFAULT_NEW_TOKENS if max_new_tokens is None else int(max_new_tokens)


DEFAULT_NEW_TOKENS = 256


def to_config(values: dict, *, chat_default: bool = True, check_folder: bool = True) -> dict:
    """The ``chat`` kernel config from parsed values (one clear error for a bad value)."""
    prompt = values.get("prompt_opt") or values.get("prompt")
    if values.get("prompt_opt") and values.get("prompt"):
        raise ValueError("give the prompt once: as PROMPT or as --prompt")
    prompts = None
    if values.get("prompts") is not None:
        if prompt:
            raise ValueError("give PROMPT (or --prompt) or --prompts FILE, not both")
        if values.get("history") is not None:
            raise ValueError("--history carries one conversation on: give one PROMPT with "
                             "it, not --prompts")
        prompts = read_prompts(values["prompts"])
        prompt = prompts[0]
    model = values.get("model")
    kind = "chat" if chat_default else "generate"
    if not prompt or not str(prompt).strip():
        lone = model is not None and check_folder and not os.path.isdir(
            os.path.expanduser(str(model)))
        first = (f"{model!r} is no checkpoint folder: the checkpoint comes first, then the "
                 "prompt" if lone else "give a prompt")
        raise ValueError(f"{first}: {kind} DIR \"text\" (or --prompt TEXT; in a notebook "
                         f"%{kind} DIR \"text\" or the cell of %%{kind} DIR)")
    job_total = None  # a gpt-* train job's: what its context holds (or what was asked)
    checkpoint = None  # a checkpoint folder (or adapter): its prompts measured at the end
    if check_folder:
        path = os.path.expanduser(str(model))
        if not os.path.isdir(path):
            raise ValueError(f"DIR: no such folder, got {model!r} (a checkpoint folder with "
                             "config.json, a train gpt-* job's id or --name, or in a notebook "
                             "a variable holding a model)")
        adapter = not os.path.isfile(os.path.join(path, "config.json")) and os.path.isfile(
            os.path.join(path, "adapter_config.json"))  # a peft adapter: its base + it
        if not adapter and not os.path.isfile(os.path.join(path, "config.json")):
            raise ValueError(f"DIR {model!r} is not a checkpoint folder: it has no config.json")
        job = None if adapter else trained_job(path)
        if job is not None and not str(job.get("model")).startswith("gpt") and \
                os.path.isfile(os.path.join(path, "hf-model", "config.json")):
            # a train job from a checkpoint (ernie, LoRA merged): the folder it wrote back
            path, job = os.path.join(path, "hf-model"), None
        if adapter:
            from skiff.kernels.train.models.hf_checkpoint import adapter_base

            adapter_base(path)  # the base it names must be a checkpoint folder here
            checkpoint = path
        elif job is not None:  # a skiff train job's run folder: the model it trained
            built = str(job.get("model"))
            if not built.startswith("gpt"):
                raise ValueError(f"{model!r} is the run folder of a train job of "
                                 f"{built!r}, which writes no text: "
                                 + ("chat answers" if kind == "chat" else
                                    "generate continues text")
                                 + " from a gpt-* job or a checkpoint folder (predict JOB "
                                 "FILE uses an mlp or cnn job)")
            if not os.path.isfile(os.path.join(path, "model.npz")):
                raise ValueError(f"DIR {model!r}: the train job wrote no trained weights "
                                 "(model.npz): it has not finished, or it failed")
            if chat_default or values.get("use_template"):
                raise ValueError(f"{built} has no chat template: continue the text with "
                                 f"python -m skiff generate {shlex.quote(str(model))} "
                                 f"\"text\" (%generate {shlex.quote(str(model))} \"text\" in a "
                                 "notebook; no --chat)")
            for flag, given in (("--system", values.get("system") is not None),
                                ("--no-thinking", bool(values.get("no_thinking"))),
                                ("--history", values.get("history") is not None)):
                if given:  # (the words for a checkpoint, "add --chat", do not hold here)
                    raise ValueError(f"{flag} goes into a chat template, which {built} "
                                     f"has not: drop {flag}")
            if prompts:
                raise ValueError(f"--prompts answers a checkpoint's batch; a {built} job "
                                 "continues one PROMPT: give it one at a time")
            for flag, key in (("--top-p", "top_p"), ("--repetition-penalty",
                                                     "repetition_penalty"),
                              ("--no-repeat-ngram-size", "no_repeat_ngram_size"),
                              ("--num-beams", "num_beams")):
                if values.get(key) is not None:  # before: taken, and used nowhere
                    raise ValueError(f"{flag} is not taken by a {built} job's sampling "
                                     "(--temperature, --top-k, --seed, --stop): drop it")
            from skiff.kernels.train import models
            from skiff.kernels.train.core import random as train_random

            with train_random.using(train_random.new_generator(0)):  # a notebook's draws
                block = models.get(built).config.block_size  # left as they were
            job_total = fits(built, str(prompt), values.get("max_new_tokens"), block)
        else:
            from skiff.kernels.train.models.hf_checkpoint import read_config
            from skiff.kernels.train.models.safetensors_io import open_folder

            limit = read_config(path).max_position_embeddings  # another architecture:
            # said here, before a run folder exists; so is a length past the context
            if (values.get("max_new_tokens") or 0) >= limit:
                raise ValueError(f"--max-new-tokens {values['max_new_tokens']} passes the "
                                 f"model's context of {limit} positions (the prompt's tokens "
                                 "and the new ones)")
            open_folder(path)  # no weights, a missing shard: the same (the index only)
            checkpoint = path
        model = os.path.abspath(path)
    empty = [s for s in values.get("stop") or [] if not s]
    if empty:  # before: the job began and failed ("stop strings must be non-empty")
        raise ValueError("--stop takes a non-empty text, got ''")
    top_p = values.get("top_p")
    if top_p is not None and not 0 < top_p <= 1:
        raise ValueError(f"--top-p must be in (0, 1], got {top_p!r}")
    temperature = float(values.get("temperature") or 0.0)
    if 0 < temperature < 1e-30:  # logits / it overflow: "Probabilities contain NaN" in a job
        raise ValueError(f"--temperature {temperature!r} is too small to sample with (the "
                         "logits divided by it overflow): give 0 for greedy, or 1e-30 or more")
    if temperature == 0 and (values.get("top_k") or top_p is not None):
        raise ValueError("--top-k and --top-p sample: give --temperature > 0 too")
    if temperature == 0 and values.get("seed") is not None:  # greedy: the seed did nothing
        raise ValueError("--seed seeds the sampling: give --temperature > 0 too (at 0 the "
                         "answer is greedy, the same every time)")
    use = values.get("use_template")
    chat = chat_default if use is None else bool(use)
    if not chat:  # the plain text goes in as it is: these went nowhere, without a word
        for flag, given in (("--system", values.get("system") is not None),
                            ("--no-thinking", bool(values.get("no_thinking"))),
                            ("--history", values.get("history") is not None)):
            if given:
                raise ValueError(f"{flag} goes into the chat template, which "
                                 f"{'--raw' if use is False else 'generate'} leaves out: "
                                 f"add --chat, or drop {flag}")
    history = _history(values.get("history"), values.get("system")) if chat else None
    if checkpoint is not None:  # a prompt past the context: said here, before a run folder
        from skiff.kernels.train.models.chat_fits import check_folder_fits  # (round 45 h16)

        check_folder_fits(checkpoint, prompts or [str(prompt)],
                          max_new_tokens=int(values.get("max_new_tokens") or 256),
                          given=values.get("max_new_tokens") is not None, chat=chat,
                          system=values.get("system"), history=history,
                          thinking=False if values.get("no_thinking") else None)
    return {
        "model": str(model),
        "prompt": str(prompt),
        **({"prompts": prompts} if prompts else {}),
        "chat": chat,
        "system": values.get("system"),
        "history": history,
        "thinking": False if values.get("no_thinking") else None,
        "max_new_tokens": job_total or int(values.get("max_new_tokens") or 256),
        "temperature": temperature,
        "top_k": values.get("top_k"),
        "top_p": top_p,
        "repetition_penalty": values.get("repetition_penalty"),
        "no_repeat_ngram_size": values.get("no_repeat_ngram_size"),
        "num_beams": values.get("num_beams"),
        "stop": list(values.get("stop") or []),
        "seed": values.get("seed"),
        "device": values.get("device") or DEFAULT_DEVICE,
    }


def read_prompts(path) -> list:
    """The prompts of ``--prompts FILE``: a JSONL file's (``.jsonl``: each row a string or
    ``{"prompt": text}``; a ``{"messages"}`` row: its list of messages), else one a line
    (blank lines left out); one clear error naming
    the line for a bad row, and for a file with none."""
    import json

    name = os.path.expanduser(str(path))
    if not os.path.isfile(name):
        raise ValueError(f"--prompts {path!r}: no such file (a text file of prompts, one a "
                         "line, or a .jsonl of strings or {\"prompt\": ...} rows)")
    out = []
    with open(name, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            if not name.endswith(".jsonl"):
                out.append(line.rstrip("\r\n"))
                continue
            try:
                row = json.loads(line)
            except ValueError as exc:
                raise ValueError(f"--prompts {path!r} line {n} is not JSON ({exc})") from None
            if isinstance(row, dict) and "messages" in row:  # a conversation (round 47 h10)
                out.append(_conversation_row(row["messages"], f"--prompts {path!r} line {n}"))
                continue
            text = row.get("prompt") if isinstance(row, dict) else row
            if not isinstance(text, str) or not text.strip():
                raise ValueError(f"--prompts {path!r} line {n}: a string, {{\"prompt\": "
                                 f"text}} or {{\"messages\": [...]}} row, got "
                                 f"{line.strip()[:60]!r}")
            out.append(text)
    if not out:
        raise ValueError(f"--prompts {path!r} holds no prompt")
    return out


def _conversation_row(messages, where: str) -> list[dict]:
    """A ``--prompts`` JSONL row's ``"messages"``: the turns up to the user's message to
    answer (each row of the batch its own conversation, as a transformers user hands its
    pipeline a list of chats); one error naming the line."""
    from skiff.kernels.train.models.chat_reply import asked_messages

    if not isinstance(messages, list) or not messages:
        raise ValueError(f"{where}: 'messages' must be a non-empty list of {{\"role\", "
                         "\"content\"} messages")
    try:
        return asked_messages([], messages)
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None


def asked_text(prompt) -> str:
    """A prompt as the job's view and summary name it: a conversation by its last message."""
    if isinstance(prompt, list) and prompt and isinstance(prompt[-1], dict):
        return str(prompt[-1].get("content", ""))
    return str(prompt)


def _history(value, system=None) -> list[dict] | None:
    """``--history``'s messages (None: none given): a JSON file's (a list of messages, or a
    ``chat --json`` document: its result's ``messages``), or what a notebook variable held
    (a list, a reply, a ``%chat`` job); checked here, before a run folder (one clear error)."""
    import json

    from skiff.kernels.train.models.chat_reply import conversation

    if value is None:
        return None
    if not isinstance(value, (str, list, tuple, dict)) and isinstance(
            getattr(value, "result", None), dict):  # a notebook's %chat job: its result
        value = value.result
    if isinstance(value, str):
        path = os.path.expanduser(value)
        if not os.path.isfile(path):
            raise ValueError(f"--history {value!r}: no such file (a JSON file of "
                             "{role, content} messages, or a chat --json output; in a "
                             "notebook a variable holding them)")
        try:
            with open(path, encoding="utf-8") as fh:
                value = json.load(fh)
        except ValueError as exc:
            raise ValueError(f"--history {value!r} is not JSON ({exc})") from None
    try:
        messages = conversation(value)
    except ValueError as exc:
        raise ValueError(f"--history: {str(exc).removeprefix('history: ')}") from None
    if system and any(m["role"] == "system" for m in messages):
        raise ValueError("--system: the history has a system message already (give it once)")
    return messages


class ChatKind(Kind):
    name = "chat"
    command = CHAT
    entry = "skiff.kinds.chat:run"
    cell = True
    show_value = True
    chat_default = True

    def to_config(self, values: dict) -> dict:
        return to_config(values, chat_default=self.chat_default)

    def trusted_folders(self, config: dict) -> list[str]:
        folder = config.get("model")
        return [folder] if isinstance(folder, str) and trained_job(folder) is not None else []

    def prepare(self, values: dict, *, cell: str | None = None, user_ns: dict | None = None,
                where: str = "thread") -> JobRequest:
        if cell is not None:
            if values.get("prompt") or values.get("prompt_opt"):
                raise ValueError(f"%%{self.name} takes the message from the cell: give no "
                                 "PROMPT on the line")
            values["prompt"] = cell.strip()
        held = values.get("history")  # a notebook variable: its messages go in the config
        if isinstance(held, str) and held.isidentifier() and held in (user_ns or {}):
            values["history"] = _history(user_ns[held], values.get("system"))
        name = values.get("model")
        obj = (user_ns or {}).get(name) if isinstance(name, str) and name.isidentifier() \
            else None
        label = f"%{self.name} {name}"
        if obj is None or isinstance(obj, (str, os.PathLike)):
            if obj is not None:
                values["model"] = os.fspath(obj)
            return JobRequest(self.name, self.to_config(values), label=label)
        if not is_language_model(obj):
            raise TypeError(f"variable {name!r} holds a {type(obj).__name__}: expected a "
                            "checkpoint folder or a model loaded with from_pretrained")
        config = to_config(values, chat_default=self.chat_default, check_folder=False)
        limit = getattr(getattr(obj, "config", None), "max_position_embeddings", None)
        if isinstance(limit, int):  # its prompts past its context: said before the job
            from skiff.kernels.train.models.chat_fits import check_fits

            check_fits(obj.tokenizer, limit, config.get("prompts") or [config["prompt"]],
                       max_new_tokens=config["max_new_tokens"],
                       given=values.get("max_new_tokens") is not None, chat=config["chat"],
                       system=config["system"], history=config["history"],
                       thinking=config["thinking"])
        config["model"] = f"<notebook {name}>"

        def job(cfg, reporter):
            from skiff.kernels.train.models.chat_reply import run

            return run(cfg, reporter, model=obj)

        return JobRequest(self.name, config, fn=job, label=label,
                          local_only="a model held in a notebook variable answers on a "
                                     "thread of this kernel; drop --np/--runner process")

    def check_launch(self, config: dict, *, ranks: int) -> None:
        if ranks > 1:
            raise ValueError(f"{self.name} runs on one rank, got --np {ranks}")

    def live_html(self, job, state) -> str | None:
        """The answer so far (the thinking collapsed), while the job runs."""
        from skiff.kernels.train.models.chat_reply import reply_html

        info = state.info
        if not isinstance(info.get("text"), str):
            return None
        return reply_html(str(info.get("thinking") or ""), info["text"], writing=True)

    def result_html(self, job) -> str | None:
        import html

        from skiff.kernels.train.models.chat_reply import reply_html

        r = job.result or {}
        if isinstance(r.get("replies"), list):  # a --prompts batch: each answer in turn
            parts = []
            for i, one in enumerate(r["replies"]):
                asked = html.escape(asked_text(one.get("prompt", "")))
                parts.append(f"<div style='color:#888'>{i + 1}. {asked}</div>" + reply_html(
                    str(one.get("thinking") or ""), str(one.get("text", ""))))
            return "".join(parts)
        if not isinstance(r.get("text"), str):
            return None
        return reply_html(str(r.get("thinking") or ""), r["text"], footer=(
            f"{r.get('tokens', 0)} tokens · {figure(r.get('tokens_per_s', 0.0))} tokens/s · "
            f"{r.get('stop', '')}"))

    def summary(self, result: dict) -> list[str]:
        if isinstance(result.get("replies"), list):  # a --prompts batch
            lines = []
            for i, one in enumerate(result["replies"]):
                lines.append(f"[{i + 1}] {asked_text(one.get('prompt', ''))}")
                lines.extend("  " + t for t in ChatKind.summary(self, one))
            return lines
        lines = []
        if result.get("thinking"):  # a line each (a literal backslash-n in the terminal before)
            lines.extend(f"thinking: {result['thinking']}".split("\n"))
        lines.extend(str(result.get("text", "")).split("\n"))
        lines.append(f"{figure(result.get('tokens', 0))} tokens, "
                     f"{figure(result.get('tokens_per_s', 0.0))} tokens/s "
                     f"(stopped by {result.get('stop', '?')})")
        return lines


class GenerateKind(ChatKind):
    name = "generate"
    command = GENERATE
    chat_default = False


KIND = ChatKind()
GENERATE_KIND = GenerateKind()
