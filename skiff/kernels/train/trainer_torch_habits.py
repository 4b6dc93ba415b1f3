"""What a torch user hands the Trainer out of habit: a torch loss module, a factory of a torch
optimizer, a ``torch.utils.data.DataLoader``. The first two fail inside torch with messages
that do not say what to do ("argument 'input' must be Tensor, not Tensor", "optimizer can only
optimize Tensors"): they are refused naming skiff's class of the same name. A torch
DataLoader of a plain dataset is read as its dataset and batch size (it was iterated as
items: "setting an array element with a sequence")."""

from __future__ import annotations

__all__ = ["check_loss_module", "torch_optimizer_error", "from_torch_loader", "OTHER_NAMES",
           "other_name_hint", "check_one_optimizer", "class_needs"]


def _is_torch(obj) -> bool:
    return type(obj).__module__.split(".")[0] == "torch"


def class_needs(cls) -> list[str]:
    """The arguments a class's constructor requires beyond its first (an optimizer, a
    scheduler's): ``StepLR`` -> ``["step_size"]``; [] where none or not known."""
    import inspect

    try:
        params = list(inspect.signature(cls).parameters.values())
    except (TypeError, ValueError):
        return []
    return [p.name for p in params[1:] if p.default is inspect.Parameter.empty
            and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]


def check_loss_module(loss) -> None:
    """Refuse a torch loss module (``torch.nn.CrossEntropyLoss()``) naming skiff's; a loss
    class instead of an instance (``loss=nn.CrossEntropyLoss``: "__init__() takes from 1 to
    2 positional arguments but 3 were given") and a function of torch's
    (``torch.nn.functional.cross_entropy``: "argument 'input' must be Tensor, not Tensor"),
    round 48 h3."""
    import functools
    import inspect

    from .core import nn

    if inspect.isclass(loss):
        name = loss.__name__
        whose = "torch's " if loss.__module__.split(".")[0] == "torch" else ""
        fix = f"skiff.nn.{name}()" if hasattr(nn, name) else f"{name}()"
        raise TypeError(f"loss is {whose}class {name}, not a loss: pass an instance, "
                        f"loss={fix} (its arguments inside the parentheses)")
    inner = loss.func if isinstance(loss, functools.partial) else loss  # partial(F.mse_loss)
    if inspect.isfunction(inner) or inspect.isbuiltin(inner):
        module = getattr(inner, "__module__", None) or ""
        if module.split(".")[0] == "torch":
            name = getattr(inner, "__name__", "?")
            fix = (f"skiff.nn.functional.{name}" if hasattr(nn.functional, name) else
                   "a function loss(output, target) of skiff Tensors")
            raise TypeError(f"loss is torch's {module}.{name}, which computes on torch "
                            f"tensors; the Trainer's model gives skiff Tensors: use {fix}")
    if not _is_torch(loss) or not callable(loss):
        return

    name = type(loss).__name__
    fix = (f"skiff.nn.{name}(...) with the same arguments" if hasattr(nn, name) else
           "a loss built from skiff.nn (or a function loss(output, target) of skiff Tensors)")
    raise TypeError(f"loss is torch's {name}, which computes on torch tensors; the Trainer's "
                    f"model gives skiff Tensors: use {fix}")


def check_one_optimizer(spec) -> None:
    """Refuse several optimizers (Lightning's ``configure_optimizers`` returning a list or a
    dict, a GAN's generator and discriminator), saying what the Trainer's step is and the
    two ways to train such a model; it was "optimizer must be an Optimizer, a factory or a
    name, got [...]" at ``train()``."""
    if not isinstance(spec, (list, tuple, dict)):
        return
    raise TypeError(
        f"optimizer is {len(spec)} optimizers ({type(spec).__name__}); the Trainer makes one "
        f"optimizer step of one loss: a GAN's alternating generator and discriminator steps "
        f"(Lightning's manual optimization) are a loop of your own (loss_d.backward(); "
        f"opt_d.step(); then loss_g ...), and one optimizer with a learning rate per part is "
        f"parameter groups: optimizer=lambda params: skiff.optim.AdamW([{{'params': "
        f"model.a.parameters(), 'lr': 1e-3}}, {{'params': model.b.parameters(), 'lr': "
        f"1e-4}}])")


def torch_optimizer_error(exc: BaseException) -> TypeError | None:
    """A clear error for a factory that built a torch optimizer on skiff parameters (torch's
    "optimizer can only optimize Tensors"), or None when ``exc`` is something else."""
    tb, name = exc.__traceback__, None
    while tb is not None:
        owner = tb.tb_frame.f_locals.get("self")
        if owner is not None and type(owner).__module__.startswith("torch.optim"):
            name = type(owner).__name__
        tb = tb.tb_next
    if name is None:
        return None
    from .core import optim

    fix = (f"skiff.optim.{name} (the same arguments), e.g. optimizer=lambda params: "
           f"skiff.optim.{name}(params, lr=...)" if hasattr(optim, name) else
           "an optimizer from skiff.optim, or a name: 'adamw', 'adam', 'sgd'")
    return TypeError(f"optimizer=... built torch.optim.{name}, which steps torch tensors only "
                     f"({exc}); the model's parameters are skiff's: use {fix}")


def from_torch_loader(data):
    """``(dataset, batch_size)`` of a ``torch.utils.data.DataLoader`` that batches (and
    maybe shuffles) a dataset, with its ``collate_fn`` when it has its own (:class:`Collated`:
    padding variable-length items, say); ``(data, None)`` for anything else. A loader with a
    sampler of its own is refused: the Trainer orders and shards the items by itself (a
    ``DistributedSampler``'s order is followed, its batch size times its replicas the
    Trainer's: round 46 h7)."""
    if type(data).__name__ != "DataLoader" or not type(data).__module__.startswith(
            "torch.utils.data"):
        return data, None
    import torch.utils.data as tud

    from .data_collate import Collated, Drawn, Sampled, TorchDraw, torch_draw, weighted_sampling

    own = []
    collate = data.collate_fn is not tud.default_collate
    if isinstance(data.dataset, tud.IterableDataset):
        # a stream, read in order at the loader's batch size (round 38: it was refused),
        # its batches through the loader's own collate_fn as torch makes them: consecutive
        # samples, batch_size at a time (round 45 h5: refused); read by data.as_dataset
        if not collate:
            return data.dataset, _size(data.batch_size)
        return Collated(data.dataset, data.collate_fn), _size(data.batch_size)
    sampling = weighted_sampling(data.sampler)  # followed: the Trainer's loader draws so
    subset = isinstance(data.sampler, tud.SubsetRandomSampler)  # followed (round 45 h5)
    # a DDP script's (round 46 h7: refused, "pass loader.dataset and batch_size= ... x
    # ranks"): followed, its replicas' batches together the Trainer's global batch
    dist = isinstance(data.sampler, tud.DistributedSampler)
    if sampling is None and not subset and not dist and not isinstance(
            data.sampler, (tud.SequentialSampler, tud.RandomSampler)) and not own:
        own.append("sampler")
    if own:
        raise TypeError(f"the data is a torch DataLoader with its own {' and '.join(own)}, "
                        "which the Trainer cannot follow (it orders, batches and shards "
                        "the data itself): pass the loader's dataset (loader.dataset) and "
                        "batch_size= to the Trainer (a WeightedRandomSampler and a "
                        "SubsetRandomSampler are followed)")
    dataset = data.dataset
    if isinstance(dataset, tud.TensorDataset) and not collate:  # its tensors as arrays
        from .data import ArrayDataset

        dataset = ArrayDataset(*[t.detach().cpu().numpy() for t in dataset.tensors])
    draw = torch_draw(data)  # a generator of the user's: torch's own order (round 43 h10)
    size = _size(data.batch_size)
    if dist:  # the sampler's draw of every replica, interleaved: batches of b x replicas
        from .data_collate import DistributedDraw

        draw = DistributedDraw(data.sampler)
        size = None if size is None else size * draw.replicas
    if subset:  # torch's train/validation idiom, SubsetRandomSampler(train_idx) (round 45
        # h5): refused naming loader.dataset, which trained on the validation rows too;
        # now its rows, in torch's order from its generator (the Trainer's seed without one)
        import copy

        from .data import Subset

        sub = copy.copy(data.sampler)
        sub.indices = range(len(data.sampler.indices))  # randperm over positions, as torch
        dataset = Subset(dataset, list(data.sampler.indices))
        draw = TorchDraw(sub, data.sampler.generator is not None and
                         data.generator is data.sampler.generator)
    if draw is not None:
        dataset = Drawn(dataset, draw)
    elif sampling is not None:
        dataset = Sampled(dataset, sampling)
    if collate:  # the loader's own batching (padding, say): the Trainer's batches use it
        return Collated(dataset, data.collate_fn), size
    return dataset, size


def loader_order(data) -> dict | None:
    """``{"shuffle": ..., "drop_last": ...}`` of a DataLoader handed to ``train`` in place of
    the data (torch's, ``skiff.utils.data``'s: a ``RandomSampler`` shuffles, a
    ``SequentialSampler`` does not, a ``WeightedRandomSampler`` draws its own order; skiff's
    own: its ``shuffle``), or None for other data. The Trainer follows them for that call,
    as it follows the loader's batch size (round 37: a loader made with ``shuffle=False``, a
    time series', was shuffled, and ``drop_last=True`` trained the short last batch)."""
    from .data import DataLoader, _is_torch_style_loader

    torch_style = type(data).__name__ == "DataLoader" and type(data).__module__.startswith(
        "torch.utils.data") or _is_torch_style_loader(data)
    if not (torch_style or isinstance(data, DataLoader)):
        return None
    order = {"drop_last": bool(getattr(data, "drop_last", False))}
    sampler = type(getattr(data, "sampler", None)).__name__
    if not torch_style:
        order["shuffle"] = bool(data.shuffle)
    elif sampler in ("RandomSampler", "SequentialSampler", "SubsetRandomSampler"):
        order["shuffle"] = sampler != "SequentialSampler"
    elif sampler == "DistributedSampler":  # its own draw (shuffled or not), padded (round 46)
        order["shuffle"] = True
    elif sampler == "_InfiniteConstantSampler":  # over an IterableDataset: in its order
        order["shuffle"] = False
    return order


def _size(size) -> int | None:
    return int(size) if isinstance(size, int) and size > 0 else None


# the same setting under the names of transformers' TrainingArguments / Trainer.train,
# Lightning's Trainer / fit and Keras' fit: skiff's name, and whether it goes to train()
OTHER_NAMES = {
    "learning_rate": ("lr", False), "max_steps": ("steps", True),
    "max_epochs": ("epochs", True), "num_train_epochs": ("epochs", True),
    "accumulate_grad_batches": ("grad_accum", False),
    "gradient_accumulation_steps": ("grad_accum", False),
    "gradient_clip_val": ("clip", False), "max_grad_norm": ("clip", False),
    "gradient_clip_algorithm": ("clip_by", False), "clipnorm": ("clip", False),
    "clipvalue": ("clip_by='value'", False), "clip_value": ("clip_by='value'", False),
    "per_device_train_batch_size": ("batch_size", False),
    "train_batch_size": ("batch_size", False), "lr_scheduler_type": ("schedule", False),
    "warmup": ("warmup_steps", False), "output_dir": ("checkpoint_dir", False),
    "default_root_dir": ("checkpoint_dir", False), "save_steps": ("checkpoint_every", False),
    "save_total_limit": ("keep_checkpoints", False),
    "resume_from_checkpoint": ("resume", False), "ckpt_path": ("resume", False),
    "eval_dataset": ("val_dataset", True), "validation_data": ("val_dataset", True),
    "val_dataloaders": ("val_dataset", True), "train_dataloaders": ("dataset", True),
    "validation_split": ("val_split", True), "eval_steps": ("eval_every", False),
    "logging_steps": ("log_every", False), "gradient_checkpointing": ("recompute", False),
    "fp16": ("precision='fp16-mixed'", False), "bf16": ("precision='bf16-mixed'", False),
    "patience": ("early_stopping", False), "metric_for_best_model": ("monitor", False),
    "greater_is_better": ("mode='max'", False),
    "load_best_model_at_end": ("early_stopping", False),
    # round 38: label smoothing, Keras' sample weights, a scheduler by another name
    "label_smoothing_factor": ("loss=skiff.nn.CrossEntropyLoss(label_smoothing=...)", False),
    "label_smoothing": ("loss=skiff.nn.CrossEntropyLoss(label_smoothing=...)", False),
    "sample_weight": ("loss=fn(output, target, weight) on (x, y, weight) items", False),
    "lr_scheduler": ("schedule", False), "scheduler": ("schedule", False),
    "optimizers": ("optimizer", False),
}


def other_name_hint(name: str, where: str) -> str | None:
    """`` (transformers' / Lightning's / Keras' name: ...)`` for a keyword that is another
    library's name of a Trainer setting (``where``: "Trainer" or "train"), or None."""
    found = OTHER_NAMES.get(name)
    if found is None:
        return None
    ours, in_train = found
    key = ours.split("=")[0]
    call = (f"trainer.train(data, {key}=...)" if in_train else
            f"Trainer(model, {ours if '=' in ours else key + '=...'})")
    move = "" if in_train == (where == "train") else (
        ": it is given to train()" if in_train else ": it is a setting of the Trainer, given "
        "when it is made")
    return f" (did you mean {key!r}? another library's name{move}: {call})"


# other libraries' Trainer methods (Lightning's Trainer, Keras' Model, transformers' Trainer)
# and skiff's call for each (round 37: trainer.fit(...) was a bare AttributeError)
OTHER_METHODS = {
    "fit": ("Lightning's and Keras'", "trainer.train(data, epochs=..., val_dataset=...)"),
    "validate": ("Lightning's", "trainer.evaluate(data)"),
    "test": ("Lightning's", "trainer.evaluate(data)"),
    "predict_on_batch": ("Keras'", "trainer.predict(X)"),
    "train_on_batch": ("Keras'", "trainer.train((X, y), steps=1)"),
    "save_model": ("transformers'", "trainer.model.save('weights.npz')"),
    "save_checkpoint": ("Lightning's", "Trainer(model, checkpoint_dir=DIR): checkpoints "
                        "are written as it trains"),
    "tune": ("Lightning's", "trainer.lr_find(data)"),
}


def other_method_error(owner: str, name: str) -> AttributeError:
    """The AttributeError of a Trainer's missing attribute ``name``, naming skiff's call for
    another library's method."""
    found = OTHER_METHODS.get(name)
    text = f"{owner!r} object has no attribute {name!r}"
    if found is not None:
        lib, ours = found
        text += f" ({lib} {name}; skiff's: {ours})"
    return AttributeError(text)
