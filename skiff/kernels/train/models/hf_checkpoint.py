"""Hugging Face checkpoint folders in and out: ``from_pretrained`` and ``save_pretrained``.

A folder in the Hugging Face layout holds ``config.json`` (``architectures``, the sizes),
the weights as safetensors (one file, or shards with ``model.safetensors.index.json``),
optionally ``generation_config.json`` and the tokenizer files. Architectures read here:
``Ernie4_5ForCausalLM`` and ``Ernie4_5_MoeForCausalLM`` (:mod:`.ernie`). Weights are read
through memory maps (:mod:`.safetensors_io`, numpy only, never pickle) one tensor at a time
into the model, so peak memory stays near the weights' size.

>>> model = from_pretrained("path/to/ERNIE-4.5-0.3B-PT")          # doctest: +SKIP
>>> model.generate(ids, max_new_tokens=32)                         # doctest: +SKIP
>>> save_pretrained(model, "my-finetune")  # transformers loads it  # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import fields
from pathlib import Path

import numpy as np

from ..core import nn
from . import safetensors_io as st
from .ernie import ARCHITECTURES, ErnieConfig, ErnieForCausalLM
from .lora import has_lora, load_adapter, merged_state_dict
from .tokenizer import HFTokenizer, SentencePieceTokenizer, load_tokenizer
from .tokenizer_files import TOKENIZER_FILES

__all__ = ["from_pretrained", "save_pretrained", "read_config", "config_to_hf",
           "load_tokenizer", "token_blocks", "ernie_from_folder", "TOKENIZER_FILES",
           "read_training_rows", "check_val_split", "check_rows_render", "adapter_base",
           "HFTokenizer", "SentencePieceTokenizer"]

_FLOATS = {"float32": np.float32, "float64": np.float64, "float16": np.float16}
# checkpoint keys the reference ignores too (multi-token-prediction heads of the MoE models)
_IGNORED = re.compile(r"(^|\.)mtp")


_DENSE_DEFAULTS = dict(vocab_size=103424, hidden_size=1024, intermediate_size=3072,
                      num_hidden_layers=18, num_attention_heads=16, num_key_value_heads=2,
                      head_dim=128)
_MOE_DEFAULTS = dict(vocab_size=103424, hidden_size=2560, intermediate_size=12288,
                     num_hidden_layers=28, num_attention_heads=20, num_key_value_heads=4,
                     moe_num_experts=64, moe_k=6, moe_intermediate_size=1536,
                     moe_num_shared_experts=2, moe_layer_start_index=1,
                     moe_layer_end_index=-1, moe_layer_interval=1)


def read_config(folder: str | os.PathLike) -> ErnieConfig:
    """The :class:`ErnieConfig` of a checkpoint folder's ``config.json`` (any other
    architecture, an unsupported rotary scaling or activation is one clear error)."""
    path = Path(folder).expanduser() / "config.json"
    if not path.parent.exists():
        raise FileNotFoundError(f"no checkpoint folder at {str(Path(folder))!r}")
    if path.parent.is_file():
        raise FileNotFoundError(f"{str(Path(folder))!r} is a file; give the checkpoint's folder "
                                "(config.json and *.safetensors)")
    if not path.is_file():
        raise FileNotFoundError(f"{str(Path(folder))!r} is not a checkpoint folder: it has "
                                "no config.json")
    try:
        raw = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc})") from None
    return config_from_hf(raw, where=str(path))


def config_from_hf(raw: dict, where: str = "config.json") -> ErnieConfig:
    arch = (raw.get("architectures") or [None])[0]
    model_type = raw.get("model_type")
    if arch not in ARCHITECTURES and model_type not in ARCHITECTURES.values():
        raise ValueError(f"{where}: architecture {arch or model_type!r} is not supported; "
                         f"skiff reads {', '.join(ARCHITECTURES)}")
    if raw.get("hidden_act", "silu") != "silu":
        raise ValueError(f"{where}: hidden_act {raw['hidden_act']!r} is not supported (silu)")
    rope = raw.get("rope_parameters") or raw.get("rope_scaling") or {}
    rope_type = rope.get("rope_type", rope.get("type", "default"))
    if rope_type != "default":
        raise ValueError(f"{where}: rotary scaling {rope_type!r} is not supported (default)")
    theta = rope.get("rope_theta", raw.get("rope_theta", 500000.0))
    known = {f.name for f in fields(ErnieConfig)} - {"extra", "lr", "block_size", "rope_theta"}
    moe = model_type == "ernie4_5_moe" or arch == "Ernie4_5_MoeForCausalLM"
    # a key the file leaves out takes transformers' default for the architecture (the 0.3B's
    # sizes for the dense config, the 21B-A3B's for the MoE one), as transformers reads it
    values = dict(_MOE_DEFAULTS if moe else _DENSE_DEFAULTS)
    values.update({k: raw[k] for k in known if raw.get(k) is not None})
    if "num_key_value_heads" in raw and raw["num_key_value_heads"] is None:
        values["num_key_value_heads"] = values["num_attention_heads"]  # null: one per head
    if raw.get("head_dim") is None and (moe or "head_dim" in raw):
        # the MoE reference has no head_dim default; the dense one's null means the same
        values["head_dim"] = values["hidden_size"] // values["num_attention_heads"]
    if moe:
        if not values["moe_num_experts"]:
            raise ValueError(f"{where}: an MoE architecture with moe_num_experts = 0")
    else:
        values["moe_num_experts"] = 0
    return ErnieConfig(rope_theta=float(theta), extra=dict(raw), **values)


def config_to_hf(cfg: ErnieConfig, dtype: str = "float32") -> dict:
    """``config.json`` for ``cfg``: the original file's keys kept, the sizes written over."""
    out = dict(cfg.extra)
    d = cfg.to_dict()
    for k in ("lr", "block_size", "rope_theta"):
        d.pop(k)
    if not cfg.is_moe:
        d = {k: v for k, v in d.items() if not k.startswith("moe_") and k != "router_aux_loss_coef"}
    out.update(d)
    out.pop("rope_scaling", None)
    out.pop("torch_dtype", None)
    out.pop("rope_theta", None)
    out.update(architectures=[cfg.architecture], model_type=ARCHITECTURES[cfg.architecture],
               rope_parameters={"rope_theta": cfg.rope_theta, "rope_type": "default"},
               hidden_act="silu", dtype=dtype)
    return out


def _checkpoint_key_map(ckpt: st.Checkpoint) -> dict[str, str]:
    """{skiff name: checkpoint key} for keys that differ only by the reference's renames."""
    out = {}
    for key in ckpt.keys():
        if ".mlp.gate.moe_statics." in key:  # transformers' in-memory name
            out[key.replace(".mlp.gate.moe_statics.", ".mlp.moe_statics.")] = key
        else:
            out[key] = key
    return out


def load_weights(model: ErnieForCausalLM, ckpt: st.Checkpoint, dtype) -> None:
    """Copy the checkpoint's tensors into ``model``, one tensor at a time (the model's arrays
    are replaced, so nothing is held twice). Missing or unexpected keys, or a shape that
    differs, raise one error naming them."""
    targets = dict(model._named("_parameters", False))
    targets.update(model._named("_buffers", False))
    tied = model.config.tie_word_embeddings
    names = _checkpoint_key_map(ckpt)
    fused = {k for k in names if k.endswith(".mlp.experts.gate_up_proj")
             or k.endswith(".mlp.experts.down_proj")}
    missing, shape_errors = [], []
    for name, t in targets.items():
        if tied and name == "lm_head.weight":
            continue
        want = tuple(t.shape)
        as_dtype = np.float32 if name.endswith(("mlp.gate.weight", "e_score_correction_bias")) \
            else dtype  # the router stays float32, as in the reference
        arr = _fused_expert(ckpt, names, name) if fused else None
        if arr is not None:
            arr = np.array(arr, dtype=as_dtype)  # a slice of a mapped view: copy it out
        else:
            if name not in names:
                missing.append(name)
                continue
            arr = ckpt.get(names[name], as_dtype)
        if tuple(arr.shape) != want:
            shape_errors.append(f"{name}: checkpoint {tuple(arr.shape)} vs model {want}")
            continue
        t._data = t.xp.asarray(np.ascontiguousarray(arr))  # arr is new: the model owns it
    used = set(targets) | {n for n in names if n.endswith("lm_head.weight")} | fused
    unexpected = [names[n] for n in names if n not in used and not _IGNORED.search(n)]
    problems = []
    if missing:
        problems.append(f"missing {len(missing)} tensor(s): {', '.join(missing[:6])}"
                        + (" ..." if len(missing) > 6 else ""))
    if unexpected:
        problems.append(f"unexpected {len(unexpected)} tensor(s): {', '.join(unexpected[:6])}"
                        + (" ..." if len(unexpected) > 6 else ""))
    if shape_errors:
        problems.append("shape mismatch: " + "; ".join(shape_errors[:6]))
    if problems:
        raise st.CheckpointFormatError(f"checkpoint {str(ckpt.folder)!r} does not fit its "
                                       f"config.json: {' | '.join(problems)}")


def _fused_expert(ckpt, names, name):
    """An expert's weight from the fused (E, 2I, C) / (E, C, I) tensors, if stored so."""
    m = re.match(r"(.*\.mlp\.experts)\.(\d+)\.(gate_proj|up_proj|down_proj)\.weight$", name)
    if not m:
        return None
    prefix, e, part = m.group(1), int(m.group(2)), m.group(3)
    if part == "down_proj" and f"{prefix}.down_proj" in names:
        return ckpt.get(names[f"{prefix}.down_proj"])[e]
    if part != "down_proj" and f"{prefix}.gate_up_proj" in names:
        both = ckpt.get(names[f"{prefix}.gate_up_proj"])[e]
        half = both.shape[0] // 2
        return both[:half] if part == "gate_proj" else both[half:]
    return None


_STORED = {"BF16": "bfloat16", "F16": "float16", "F32": "float32", "F64": "float64"}


def _resolve_dtype(dtype, ckpt: st.Checkpoint | None):
    """float32 unless asked: numpy has no fast 16-bit math (``"bfloat16"`` / ``"float16"``
    keep 16-bit storage, as mixed precision uses it). ``"auto"``: the checkpoint's own
    dtype (its embedding's), as transformers reads ``dtype="auto"``. A torch dtype
    (``torch.bfloat16``) is read by its name."""
    if dtype is None:
        return np.float32
    name = str(dtype).removeprefix("torch.") if not isinstance(dtype, np.dtype) else dtype.name
    if name == "auto":
        if ckpt is None:
            return np.float32
        key = next((k for k in ckpt.keys() if k.endswith("embed_tokens.weight")), None)
        name = _STORED.get(ckpt.file(key).stored_dtype(key), "float32") if key else "float32"
    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    if name in _FLOATS:
        return np.dtype(_FLOATS[name])
    raise ValueError(f"dtype must be float32, float64, float16, bfloat16 or 'auto' (the "
                     f"checkpoint's), got {dtype!r}")


def from_pretrained(path: str | os.PathLike, dtype=None, device: str = "cpu", **kwargs
                    ) -> ErnieForCausalLM:
    """An ERNIE-4.5 model (dense or MoE) from a checkpoint folder in the Hugging Face layout.

    ``dtype``: None (float32), ``"bfloat16"``, ``"float16"``, ``"float64"``. ``device``:
    ``"cpu"``, ``"cuda:N"`` or ``"auto"``. The model's ``tokenizer`` is the folder's tokenizer
    (None when it has no tokenizer files) and ``generation_config`` its generation defaults.
    The model comes in evaluation mode, as transformers' ``from_pretrained`` gives it (a
    LoRA adapter's dropout is off until ``model.train()``; skiff's Trainer calls it).
    transformers' keywords (``torch_dtype``, ``device_map``, ``trust_remote_code``, ...;
    8-bit / 4-bit weights refused with the reason) are read by :mod:`.hf_load_options`.
    """
    if kwargs:
        from .hf_load_options import read_keywords

        dtype, device = read_keywords(kwargs, dtype, device)
    dev = None
    if device not in (None, "cpu"):  # a wrong device fails before anything is read
        from skiff.kernels.backend.devices import resolve_device

        dev = resolve_device(device)
    folder = Path(path).expanduser()
    if not (folder / "config.json").is_file() and (folder / "adapter_config.json").is_file():
        return _base_and_adapter(folder, dtype, device)
    cfg = read_config(folder)
    ckpt = st.open_folder(folder)
    dt = _resolve_dtype(dtype, ckpt)
    with nn.skip_init():  # every weight comes from the checkpoint: draw no random numbers
        model = ErnieForCausalLM(cfg, dtype=dt)
    load_weights(model, ckpt, dt)
    gen = folder / "generation_config.json"
    if gen.is_file():
        model.generation_config = json.loads(gen.read_text())
    model.source_folder = str(folder)
    model.loaded_dtype = dtype  # None / "auto": save_pretrained writes the stored dtype back
    model.tokenizer = load_tokenizer(folder)
    if dev is not None and dev.is_gpu:
        model.to(dev)
    return model.eval()


def _base_and_adapter(folder: Path, dtype, device) -> ErnieForCausalLM:
    """A peft adapter folder, as transformers loads one with peft installed: the base named
    by its ``base_model_name_or_path`` (a folder here) with the adapter on it."""
    model = from_pretrained(adapter_base(folder), dtype=dtype, device=device)
    return load_adapter(model, folder)


def adapter_base(folder: str | os.PathLike) -> Path:
    """The base checkpoint folder of a peft adapter folder (its ``base_model_name_or_path``,
    as given or relative to the adapter), or one error saying what to do."""
    folder = Path(folder).expanduser()
    try:
        base = json.loads((folder / "adapter_config.json").read_text()).get(
            "base_model_name_or_path")
    except json.JSONDecodeError as exc:
        raise ValueError(f"{folder / 'adapter_config.json'}: not valid JSON ({exc})") from None
    where = Path(str(base)).expanduser() if base else None
    if (where is not None and not where.is_absolute()
            and not (where / "config.json").is_file()):
        where = folder / where  # relative to the adapter (not a folder of that name here)
    if where is None or not (where / "config.json").is_file():
        raise FileNotFoundError(
            f"{str(folder)!r} is a LoRA adapter (peft) of {base!r}, which is no checkpoint "
            "folder here: load the base with from_pretrained(BASE_DIR), then "
            f"load_adapter(model, {str(folder)!r})")
    read_config(where)
    return where


def _merged_dtype(model, state: dict):
    """The dtype a LoRA model's merged weights are written in: its checkpoint's stored one
    when that is 16-bit and the weights are held in float32 (skiff computes in float32),
    as peft's ``merge_and_unload()`` of the base transformers loads (``dtype="auto"``: the
    stored one) is saved. Round 44 h14: a fine-tune of a bfloat16 checkpoint was written
    back in float32, twice the size, ``config.json`` saying float32 (transformers loaded it
    as a float32 model). None: as held."""
    source = getattr(model, "source_folder", None)
    if not source or not any(getattr(a, "dtype", None) == np.float32 for a in state.values()):
        return None
    try:
        stored = _resolve_dtype("auto", st.open_folder(source))
    except (OSError, ValueError):  # the base folder moved or went: as held
        return None
    return stored if stored.itemsize == 2 else None


def save_pretrained(model: ErnieForCausalLM, path: str | os.PathLike, *, dtype=None,
                    max_shard_bytes: int | None = 5 * 2**30, state: dict | None = None
                    ) -> list[str]:
    """Write ``model`` as a Hugging Face checkpoint folder that transformers loads:
    ``config.json``, safetensors weights (sharded above ``max_shard_bytes``),
    ``generation_config.json`` and the tokenizer files of the folder it came from.
    ``dtype``: None (as the model holds them; a model loaded without a dtype (or
    ``"auto"``) and a LoRA model, written merged: in the 16-bit dtype its checkpoint was
    stored in, as transformers saves its ``dtype="auto"`` model, see :func:`_merged_dtype`)
    or ``"bfloat16"`` /
    ``"float32"``. ``state``: the weights to write, when not the model's own (gathered
    from ranks)."""
    if not isinstance(model, ErnieForCausalLM):
        raise TypeError(f"save_pretrained writes ERNIE-4.5 models, got {type(model).__name__}")
    folder = Path(path).expanduser()
    folder.mkdir(parents=True, exist_ok=True)
    cfg = model.config
    if has_lora(model):  # a LoRA fine-tune is written merged (the adapter: save_adapter)
        state = merged_state_dict(model)
        if dtype is None:
            dtype = _merged_dtype(model, state)
    state = dict(model.state_dict() if state is None else state)
    if dtype is None and str(getattr(model, "loaded_dtype", None)) in ("None", "auto"):
        # round 44 h18: a full fine-tune of a bfloat16 checkpoint loaded as skiff's default
        # (float32 held for the math) went back in float32, as transformers' save of a
        # model loaded by its default dtype ("auto": the stored one) does not
        dtype = _merged_dtype(model, state)
    if cfg.tie_word_embeddings:
        state.pop("lm_head.weight", None)
    target = _resolve_dtype(dtype, None) if dtype is not None else None
    for name, arr in state.items():
        keep32 = name.endswith(("mlp.gate.weight", "e_score_correction_bias"))
        if target is not None and arr.dtype.kind == "f" and not keep32:
            state[name] = arr.astype(target)
    sample = next(a for n, a in state.items() if n.endswith("embed_tokens.weight"))
    dtype_name = "bfloat16" if sample.dtype.name == "bfloat16" else str(sample.dtype)
    written = st.write_folder(state, folder, max_shard_bytes)
    (folder / "config.json").write_text(json.dumps(config_to_hf(cfg, dtype_name), indent=2)
                                        + "\n")
    gen = dict(model.generation_config) or {
        k: getattr(cfg, k) for k in ("bos_token_id", "eos_token_id", "pad_token_id")}
    (folder / "generation_config.json").write_text(json.dumps(gen, indent=2) + "\n")
    written += ["config.json", "generation_config.json"]
    source = getattr(model, "source_folder", None)
    if source and Path(source).resolve() != folder.resolve():
        for name in TOKENIZER_FILES:
            if (Path(source) / name).is_file():
                shutil.copyfile(Path(source) / name, folder / name)
                written.append(name)
    tok = getattr(model, "tokenizer", None)
    if tok is not None and getattr(tok, "_added_now", None):  # tokens added: write them
        written += [Path(f).name for f in tok.save_pretrained(folder)]
    return list(dict.fromkeys(written))


# ---- tokenizer and text data -----------------------------------------------------------------
def token_blocks(ids: np.ndarray, block_size: int):
    """``(x, y)`` blocks of ``block_size`` token ids (targets shifted by one), as an
    :class:`~skiff.kernels.train.data.ArrayDataset`."""
    from ..data import ArrayDataset

    ids = np.asarray(ids, dtype=np.int64)
    n = (len(ids) - 1) // block_size
    if n < 1:
        raise ValueError(f"the text is {len(ids)} tokens, shorter than block_size + 1 = "
                         f"{block_size + 1}")
    x = ids[:n * block_size].reshape(n, block_size)
    y = ids[1:n * block_size + 1].reshape(n, block_size)
    return ArrayDataset(x, y)


# what a training file may be, by its suffix (anything else: plain text if it reads as UTF-8)
ROW_FILES = (".jsonl", ".json")
TABLE_FILES = (".csv", ".tsv")
_BINARY = (".parquet", ".arrow", ".feather", ".xlsx", ".xls", ".npz", ".npy", ".pkl",
           ".pickle", ".pt", ".bin", ".safetensors", ".gz", ".zip", ".bz2", ".xz", ".zst",
           ".tar", ".pdf", ".docx", ".h5", ".hdf5", ".db", ".sqlite")
_FORMATS = ("a text file, a .jsonl (or .json list) of {\"messages\": [...]} (or ShareGPT's "
            "{\"conversations\": [{\"from\", \"value\"}]}), {\"text\": ...} "
            "or {\"prompt\": ..., \"completion\": ...} or Alpaca's {\"instruction\", \"input\", "
            "\"output\"} rows, or a .csv/.tsv with prompt and "
            "response (or completion) columns, or a text column")
_ANSWER_COLUMNS = ("response", "completion", "answer", "output")


def read_training_rows(data, template_from=None) -> tuple[str, list | str]:
    """What a training file for a checkpoint's model holds, read and checked without its
    tokenizer: ``("chat", rows)`` (conversations or prompt/completion pairs, one dict a row),
    ``("text", texts)`` (documents: ``{"text"}`` rows or a text column) or ``("plain",
    text)``. A file of another format (a data frame, an archive, a JSON of other keys) is one
    error naming what it has and what is read, never read as plain text; a path that does
    not exist is said so (not trained on as the text of its name). With ``template_from``
    (the checkpoint folder trained from, or its adapter folder) every conversation is also
    rendered by that checkpoint's chat template, as the job will: the rows it cannot render
    are one error naming each by its line (:func:`check_rows_render`)."""
    from ..data import CORPORA, _read_text

    spec = str(data)
    path = Path(spec).expanduser()
    suffix = path.suffix.lower()
    if spec in CORPORA and not path.exists():
        return "plain", _read_text(spec)[0]
    if not path.is_file():
        if path.is_dir():
            raise ValueError(f"{spec!r} is a folder; give a training file: {_FORMATS}")
        if suffix or os.sep in spec or "/" in spec:
            raise FileNotFoundError(f"no data file at {spec!r}")
        return "plain", _read_text(spec)[0]  # a corpus name or the text itself
    if suffix in _BINARY:
        raise ValueError(f"{path.name}: skiff does not read {suffix} files for training; "
                         f"give {_FORMATS}")
    if suffix in ROW_FILES:
        kind, rows = _classify_rows(_read_rows(path), path.name)
        check_rows_render(kind, rows, template_from, path.name)
        return kind, rows
    if suffix in TABLE_FILES:
        return _table_rows(path)
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is None or "\x00" in text:
        raise ValueError(f"{path.name} is not UTF-8 text; give {_FORMATS}")
    if not text.strip():
        raise ValueError(f"{path.name} is empty")
    return "plain", text


def _read_rows(path: Path) -> list:
    if path.suffix.lower() == ".jsonl":
        from .chat import read_jsonl

        rows = read_jsonl(path)
    else:
        try:
            rows = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ValueError(f"{path.name}: not valid JSON ({exc})") from None
        if isinstance(rows, dict) and isinstance(rows.get("data"), list):
            rows = rows["data"]
        if not isinstance(rows, list):
            raise ValueError(f"{path.name}: a .json training file is a list of rows, got a "
                             f"{type(rows).__name__}")
        from .chat import Rows

        rows = Rows(rows)
        rows.labels = [f"row {n}" for n in range(1, len(rows) + 1)]
    if not rows:
        raise ValueError(f"{path.name} has no rows")
    return rows


def _row_kind(row, where: str = "row") -> str | None:
    if not isinstance(row, dict):
        return None
    from .chat import as_chat_row

    row = as_chat_row(row, where)  # ShareGPT, TRL's conversational prompt/completion
    if "messages" in row:
        return "chat"
    if isinstance(row.get("prompt"), str) and isinstance(row.get("completion",
                                                                 row.get("response")), str):
        return "chat"
    if isinstance(row.get("text"), str):
        return "text"
    return None


def _classify_rows(rows: list, name: str) -> tuple[str, list]:
    """The kind of a file's rows, every row checked first: the rows a conversation file
    cannot train on (a ShareGPT speaker, a role chat templates do not render, no assistant
    turn, no messages) are one error naming each by its line, before any run folder
    (round 41: the first of them failed the job after its folder was made, a wrong role
    trained without the turn)."""
    from .chat import as_chat_row, chat_row_problem

    labels = getattr(rows, "labels", None) or [f"row {n}" for n in range(1, len(rows) + 1)]
    kinds, problems = [], []
    for where, row in zip(labels, rows):
        try:
            kind = _row_kind(row, f"{name}: {where}")
        except ValueError as exc:  # a ShareGPT turn of an unknown speaker
            problems.append(str(exc).removeprefix(f"{name}: "))
            kinds.append("chat")
            continue
        kinds.append(kind)
        if kind == "chat":
            problem = chat_row_problem(as_chat_row(row, f"{name}: {where}"))
            if problem:
                problems.append(f"{where}: {problem}")
    first = kinds[0]
    for where, row, kind in zip(labels, rows, kinds):
        if kind is None:
            what = (f"keys {', '.join(map(str, row))}" if isinstance(row, dict)
                    else f"a {type(row).__name__}")
            raise ValueError(f"{name}: {where} has {what or 'no keys'}; skiff trains on "
                             f"{_FORMATS}")
        if kind != first:
            raise ValueError(f"{name}: {labels[0]} is "
                             f"{'a conversation' if first == 'chat' else 'text'} but {where} "
                             f"is {'a conversation' if kind == 'chat' else 'text'}; one file "
                             "holds one kind of row")
    if problems:
        from .chat import _listed

        good = len(rows) - len(problems)
        head = problems[0] if len(problems) == 1 else \
            f"{len(problems)} conversations cannot be trained on: {_listed(problems)}"
        raise ValueError(f"{name}: {head} (the other {good} rows are fine: fix or delete "
                         f"{'it' if len(problems) == 1 else 'these'})")
    if first == "text":
        return "text", [r["text"] for r in rows]
    return "chat", rows


def _folder_template(folder):
    """The chat template the job's tokenizer will have: the folder's (an adapter folder's
    base's when the adapter has no ``config.json``), None when the folder holds no tokenizer
    (the job says so) or is not a folder here."""
    from .chat import ChatTemplate

    folder = Path(str(folder)).expanduser()
    if not folder.is_dir():
        return None
    if not (folder / "config.json").is_file() and (folder / "adapter_config.json").is_file():
        try:
            folder = adapter_base(folder)
        except (ValueError, FileNotFoundError):
            return None  # the job's own error names the missing base
    if not any((folder / f).is_file() for f in ("tokenizer.json", "tokenizer.model")):
        return None
    return ChatTemplate.from_folder(folder)


def check_rows_render(kind: str, rows, template_from, name: str = "data") -> None:
    """Every conversation of a chat file rendered by the chat template of ``template_from``
    (a checkpoint folder) as the job renders it, before any run folder (round 41: a row the
    template cannot render, content given as a list of parts, a template's
    ``raise_exception``, failed the job after its folder was made, and only the first such
    row was named): one error naming each row by its line."""
    if kind != "chat" or template_from is None:
        return
    template = _folder_template(template_from)
    if template is None:
        return
    from .chat import (
        _listed,
        _prompt_completion,
        _render_row,
        _row_messages,
        _row_template_kwargs,
        as_chat_row,
    )

    labels = getattr(rows, "labels", None) or [f"row {n}" for n in range(1, len(rows) + 1)]
    problems, parts = [], False
    for where, row in zip(labels, rows):
        row = as_chat_row(row, f"{name}: {where}")
        pair = _prompt_completion(row)
        messages = _row_messages(row, pair, name, where)
        try:
            _render_row(template, messages, _row_template_kwargs(row, f"{name}: {where}"),
                        where)
        except ValueError as exc:
            text = str(exc)
            parts = parts or "list of parts" in text
            problems.append(text.split("; its content is a list of parts")[0].replace(
                ": the checkpoint's chat template cannot render this conversation", ""))
    if not problems:
        return
    hint = ("; a message's content is a list of parts, and this checkpoint's template "
            "takes text: give each message's content as one string" if parts else "")
    good, many = len(rows) - len(problems), len(problems) > 1
    raise ValueError(f"{name}: the checkpoint's chat template cannot render "
                     f"{f'{len(problems)} conversations' if many else '1 conversation'}"
                     f": {_listed(problems)}{hint} (the other {good} rows render: fix or "
                     f"delete {'it' if len(problems) == 1 else 'these'})")


def check_val_split(kind: str, rows, val_split) -> None:
    """``--val-split F`` of a conversation file checked against its rows before any run
    folder (round 41: ``val_split=0.01 of 20 items leaves 20 to train on and 0 to
    validate`` failed the job after its folder, without the share that would do): the
    Trainer holds out ``round(n * F)`` conversations, at least one and not all."""
    if kind != "chat" or not val_split:
        return
    n = len(rows)
    held = int(round(n * float(val_split)))
    if 1 <= held < n:
        return
    if n < 2:
        raise ValueError(f"--val-split {val_split:g}: the file has {n} conversation; "
                         "validation needs at least 2 (one to train on, one held out)")
    raise ValueError(f"--val-split {val_split:g} of {n} conversations holds out {held}; "
                     f"give a share from {1 / n:.3g} (one conversation) to "
                     f"{(n - 1) / n:.3g} (all but one)")


def _table_rows(path: Path) -> tuple[str, list]:
    import csv

    delimiter = "\t" if path.suffix.lower() == ".tsv" else ","
    with open(path, encoding="utf-8", newline="") as fh:
        reader = csv.reader(fh, delimiter=delimiter)
        header = next(reader, None)
        if not header:
            raise ValueError(f"{path.name} is empty")
        cols = {c.strip().lower(): i for i, c in enumerate(header)}
        answer = next((c for c in _ANSWER_COLUMNS if c in cols), None)
        # Alpaca's instruction + input columns: one user turn, as the .jsonl rows
        # (chat.alpaca_prompt); were the input column alone
        prompt = next((c for c in ("prompt", "question", "instruction", "input") if c in cols),
                      None)
        extra = cols.get("input") if prompt == "instruction" else None
        if prompt and answer:
            from .chat import Rows, alpaca_prompt

            system = cols.get("system")
            out, labels = Rows(), []
            while True:  # each row named by the line it starts on (a quoted field may hold
                n = reader.line_num + 1  # newlines), as notes and errors say it
                rec = next(reader, None)
                if rec is None:
                    break
                if not any(x.strip() for x in rec):
                    continue
                if len(rec) != len(header):
                    raise ValueError(f"{path.name}: line {n} has {len(rec)} fields, the header "
                                     f"{len(header)}")
                text = rec[cols[prompt]] if extra is None else \
                    alpaca_prompt(rec[cols[prompt]], rec[extra])
                row = {"prompt": text, "completion": rec[cols[answer]]}
                if system is not None and rec[system].strip():
                    row["system"] = rec[system]
                out.append(row)
                labels.append(f"line {n}")
            if not out:
                raise ValueError(f"{path.name} has a header and no rows")
            out.labels = labels
            return "chat", out
        if "text" in cols:
            texts = [rec[cols["text"]] for rec in reader if len(rec) > cols["text"]
                     and rec[cols["text"]].strip()]
            if not texts:
                raise ValueError(f"{path.name} has a text column and no text in it")
            return "text", texts
    raise ValueError(f"{path.name}: columns {', '.join(header)}; a table to fine-tune on has "
                     f"prompt and response (or completion) columns, or a text column")


def text_dataset(model: ErnieForCausalLM, data: str, block_size: int):
    """Training data in the model's own tokens (:func:`read_training_rows` says what a file
    may be): conversations and prompt/completion pairs (a ``.jsonl``/``.json`` of rows or a
    ``.csv``/``.tsv`` with prompt and response columns; loss on the assistant's tokens,
    :class:`~.chat.ChatDataset`), or token blocks of text (a text file, ``{"text"}`` rows or
    a text column, each document followed by the eos token; a shipped corpus name)."""
    tok = getattr(model, "tokenizer", None)
    if tok is None:
        raise ValueError(f"the checkpoint {getattr(model, 'source_folder', '')!r} has no "
                         "tokenizer.json, so text cannot be turned into its tokens")
    if len(tok) > model.config.vocab_size:
        raise ValueError(f"the tokenizer has {len(tok)} tokens, more than the model's "
                         f"vocab_size {model.config.vocab_size} (tokens added: "
                         "model.resize_token_embeddings(len(tokenizer)))")
    kind, rows = read_training_rows(data)
    if kind == "chat":
        from .chat import ChatDataset

        config = model.config  # the balancing loss routes every token, as transformers'
        return ChatDataset(rows, tok, int(block_size), source=str(data), whole_rows=bool(
            getattr(config, "is_moe", False) and getattr(config, "output_router_logits", False)))
    if kind == "text":
        from .chat import _eos_id

        eos = _eos_id(tok)
        tail = np.asarray([] if eos is None else [eos], dtype=np.int64)
        ids = np.concatenate([np.concatenate([tok.encode(t), tail]) for t in rows])
        return token_blocks(ids, int(block_size))
    return token_blocks(tok.encode(rows), int(block_size))


def ernie_from_folder(path: str | None = None, **kwargs) -> ErnieForCausalLM:
    """The registry's factory for ``ernie``: the checkpoint at ``path`` (``--from DIR``)."""
    if path is None:
        raise ValueError("model 'ernie' is loaded from a checkpoint folder: give --from DIR "
                         "(a folder with config.json and *.safetensors)")
    return from_pretrained(path, **kwargs)


def _save_method(self, path: str | os.PathLike, *, is_main_process: bool = True,
                 state_dict=None, safe_serialization: bool = True, max_shard_size=None,
                 push_to_hub: bool = False, **kwargs):
    """``model.save_pretrained(DIR)``, transformers' method: :func:`save_pretrained`, with
    transformers' keywords: ``max_shard_size`` (bytes, or ``"500MB"`` / ``"2GiB"`` as
    transformers reads them), ``state_dict``, ``is_main_process`` (False: nothing is
    written), ``safe_serialization`` (True; skiff writes safetensors only),
    ``push_to_hub`` (refused: skiff writes a folder).

    A model with LoRA adapters writes the adapters alone, in peft's layout, as peft's
    ``PeftModel.save_pretrained`` (and transformers' own method after ``add_adapter``) does
    (:func:`~.lora.save_adapter`; ``PeftModel.from_pretrained(base, DIR)`` reads it); with
    several named adapters (``selected_adapters``: some of them) ``"default"`` in ``DIR``
    and each other one in ``DIR/name``, as peft; the
    merged weights: ``model.merge_and_unload().save_pretrained(DIR)``, or the function
    ``skiff.models.save_pretrained(model, DIR)``."""
    from .lora import has_lora, save_adapter

    if has_lora(self):  # peft's method: the adapter
        if push_to_hub or not safe_serialization:
            raise ValueError("push_to_hub / safe_serialization=False are not supported: "
                             "skiff writes the adapter's safetensors to a folder")
        if state_dict is not None or max_shard_size is not None:
            raise ValueError("a LoRA model's save_pretrained writes its adapter (as peft's): "
                             "state_dict / max_shard_size are for a whole model, call "
                             "model.merge_and_unload().save_pretrained(DIR, ...) for that")
        from .lora_named import each_adapter

        selected = kwargs.pop("selected_adapters", None)
        if selected is not None:
            self._adapter_names(list(selected))
        kwargs.pop("save_embedding_layers", None)  # "auto": save_adapter decides as peft
        if kwargs:
            raise TypeError(f"save_pretrained of a LoRA model does not take "
                            f"{', '.join(sorted(kwargs))}")
        if not is_main_process:
            return []
        written = []
        for name in each_adapter(self):  # peft's layout: "default" in DIR, others in DIR/name
            if selected is None or name in selected:
                where = path if name == "default" else Path(path) / name
                written += [f if name == "default" else f"{name}/{f}"
                            for f in save_adapter(self, where)]
        return written
    if push_to_hub:
        raise ValueError("push_to_hub is not supported: save to a folder and upload it "
                         "(huggingface_hub's upload_folder)")
    if not safe_serialization:
        raise ValueError("safe_serialization=False (pickled .bin weights) is not supported: "
                         "skiff writes safetensors, which transformers reads")
    if not is_main_process:
        return []
    if max_shard_size is not None:
        kwargs["max_shard_bytes"] = shard_bytes(max_shard_size)
    if state_dict is not None:
        kwargs["state"] = {k: _host_array(v) for k, v in state_dict.items()}
    return save_pretrained(self, path, **kwargs)


def _host_array(value) -> np.ndarray:
    """A state dict's value (a numpy array, a skiff or a torch tensor) as a host array."""
    if hasattr(value, "detach"):  # torch
        value = value.detach().cpu()
    return np.asarray(value.numpy() if hasattr(value, "numpy") else value)


_UNITS = (("gib", 2**30), ("mib", 2**20), ("kib", 2**10), ("gb", 10**9), ("mb", 10**6),
          ("kb", 10**3))


def shard_bytes(size) -> int:
    """transformers' ``max_shard_size``: an int (bytes) or an integer with a unit (KB, MB,
    GB: powers of 10; KiB, MiB, GiB: of 2; a lower-case ``b`` after K/M/G means bits, as
    transformers reads ``"5Gb"``)."""
    if isinstance(size, (int, np.integer)):
        return int(size)
    text = str(size)
    for unit, factor in _UNITS:
        if text.lower().endswith(unit) and text[:-len(unit)].isdigit():
            value = int(text[:-len(unit)]) * factor
            return value // 8 if factor % 1000 == 0 and text.endswith("b") else value
    raise ValueError(f"max_shard_size {size!r}: give bytes or a size like '500MB' or '2GiB' "
                     "(an integer and a unit)")


# the method lives here, beside the saving it calls (ernie.py imports nothing of this file)
ErnieForCausalLM.save_pretrained = _save_method
