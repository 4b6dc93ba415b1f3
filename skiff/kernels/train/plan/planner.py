"""``strategy="auto"``: search every layout that fits and explain the choice.

:func:`plan` enumerates dp x tp x pp x ep x ZeRO stage x micro-batch x recomputation for a
model on a cluster, keeps the candidates whose memory fits, and picks the fastest by the cost
model of :mod:`.cost`. :func:`resolve` is what the Trainer calls: ``"auto"`` plans; an explicit
strategy (``"dp"``, ``"zero2"``, ``"dp=2,tp=2,pp=1"``) is kept exactly as given, or rejected
with a message that says what does not fit.
"""

from __future__ import annotations

import functools
import html
import math
import time
from dataclasses import asdict, dataclass, field, replace

from .cost import GB, Choice, ClusterSpec, Estimate, ModelSpec, estimate, model_spec

__all__ = ["Plan", "plan", "resolve", "parse_strategy", "cluster_for", "measure_flops",
           "step_note", "STEP_SHORT",
           "NAMED_STRATEGIES"]

NAMED_STRATEGIES = ("auto", "single", "dp", "zero1", "zero2", "tp", "pp", "ep")
# PyTorch's names for what skiff has; and what it has not, said with what comes closest
STRATEGY_ALIASES = {"ddp": "dp"}
NOT_HERE = {
    "fsdp": "FSDP shards the parameters too (ZeRO-3), which skiff does not: 'zero2' shards "
            "gradients and optimizer states, 'zero1' optimizer states, and 'auto' adds tp/pp "
            "when a model does not fit",
    "zero3": "ZeRO-3 (parameters sharded too) is not in skiff: 'zero2' shards gradients and "
             "optimizer states, 'zero1' optimizer states, and 'auto' adds tp/pp when a model "
             "does not fit",
}


def strategy_name(spec: str) -> str:
    """``spec`` with PyTorch's name for a skiff strategy made skiff's (``ddp`` -> ``dp``);
    a strategy skiff does not have (``fsdp``, ``zero3``) raises ValueError saying what
    comes closest."""
    s = str(spec).strip().lower()
    if s in NOT_HERE:
        raise ValueError(f"strategy {spec!r}: {NOT_HERE[s]}")
    return STRATEGY_ALIASES.get(s, spec)
# seconds a collective's message costs whatever its size: NCCL's small-message all-reduce
# step within a node is ~10 us; between 2 CPU ranks skiff's all-reduce of 16 floats (2
# messages) took 6-22 us (min-median of 5 x 200, load 11.8 on 2 cores; mpich, mpi4py)
GPU_LATENCY = 1e-5
CPU_LATENCY = 1e-5
_KEYS = ("dp", "tp", "pp", "ep", "zero", "micro", "recompute")


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _gb(x: float) -> str:
    """Bytes for a person: bytes under 1 KiB, KiB in three figures under 1 MiB, MiB under
    0.1 GB, GB under 1000 GB, then TB, PB and EB (decimal, as ``--device-memory 80GB``
    reads), and bytes as a power of ten past 1000 EB (the activations of a 10^8-token
    sequence printed "200000844.8 GB": now "200 PB"). Under 10 GB
    three significant digits: a small model's plan said "needs 0.2 GB per device ..., but a
    device has 0.2 GB usable" and "ZeRO-2 ...: 0.2 GB -> 0.2 GB" (round 40, h6)."""
    if x < 2**10:  # round 48 (h4): a toy budget's plan read "0.0 MiB", "0.4 MiB ... 0.4 MiB"
        return f"{x:.0f} bytes"
    if x < 2**20:  # under a MiB, KiB in three figures ("needs 531 KiB ..., 410 KiB usable")
        k = x / 2**10
        digits = 2 if k < 9.995 else 1 if k < 99.95 else 0
        return "1.0 MiB" if k >= 999.5 else f"{k:.{digits}f} KiB"
    if x < 0.1 * GB:
        return f"{x / 2**20:.1f} MiB"
    if x < 9.995 * GB:
        return f"{x / GB:#.3g} GB"
    if x < 999.95 * GB:
        return f"{x / GB:.1f} GB"
    for power, unit in ((4, "TB"), (5, "PB"), (6, "EB")):
        if x < 999.5 * 1000 ** power or unit == "EB" and x < 1e21:
            return f"{x / 1000 ** power:.3g} {unit}"
    return f"{x:.3g} bytes"


def _sec(x: float) -> str:
    """Seconds for a person: ms under 1 ms... s under 2 minutes, then minutes, hours, days,
    years (a step of 8.55e+07 s is "2.71 years")."""
    if x < 1e-3:
        return f"{x * 1e3:.3g} ms"
    for limit, div, unit in ((120, 1, "s"), (2 * 3600, 60, "min"), (2 * 86400, 3600, "h"),
                             (2 * 365 * 86400, 86400, "days")):
        if x < limit:
            return f"{x / div:.3g} {unit}"
    return f"{x / (365.25 * 86400):.3g} years"


def _count(n: float) -> str:
    """Parameters for a person: "69 B", "0.875 M" (gpt-mini was "0.000875 B")."""
    return f"{n / 1e9:.3g} B" if n >= 1e8 else f"{n / 1e6:.3g} M"


# what the cost model's step time counts, and what it leaves out (said wherever it is shown:
# a dry run printed "0.061 s a step predicted" for gpt-mini, whose steps took ~0.7 s here)
STEP_COUNTS = "matmuls and messages only"
STEP_LEFT_OUT = {
    "cpu": "the fixed costs of a step, Python per op, the optimizer's loop and small matmuls "
           "under the peak rate, are left out, so on a CPU a measured step is typically "
           "5-10x this for gpt-mini and ~30x for a small MLP (its first step, which loads "
           "kernels, ~1000x)",
    "gpu": "the fixed costs of a step, kernel launches and Python per op, are left out, so "
           "a small model's measured step is several times this",
}


# the summary's words for it (a dry run's plan line, which adds :func:`step_note` below)
STEP_SHORT = "by the cost model, fixed costs left out"


def step_note(cluster) -> str:
    """What a planned step time counts and leaves out, and its typical error, for a
    cluster's kind of device (a :class:`ClusterSpec`, or its kind: "cpu", "gpu"): the
    figure is a floor, never a promise."""
    kind = getattr(cluster, "kind", cluster)
    return (f"a floor: {STEP_COUNTS}; "
            + STEP_LEFT_OUT.get(kind, STEP_LEFT_OUT["gpu"])
            + "; a run on 2+ ranks measures them in its plan check")


@dataclass
class Plan:
    """How a model is trained on a cluster, and why.

    ``choice`` is the layout (dp, tp, pp, ep, zero, micro_batch, recompute); ``estimate`` its
    predicted memory per device and step time; ``reasons`` the argument in sentences;
    ``table`` the best candidates (:class:`Estimate`), best first. ``explicit`` is True when
    the user named the strategy (the planner then only checked it).
    """

    model: ModelSpec
    cluster: ClusterSpec
    choice: Choice
    estimate: Estimate
    reasons: list[str] = field(default_factory=list)
    table: list[Estimate] = field(default_factory=list)
    explicit: bool = False
    spec: str = "auto"
    searched: int = 0
    fitting: int = 0
    global_batch: int = 1
    weight_bytes: int = 2
    grad_bytes: int | None = None
    runnable: bool = False  # planned for a live model: the Trainer's layouts only

    @property
    def strategy(self) -> str:
        """The strategy's kind: single, dp, zero1, zero2, tp, pp, ep or hybrid."""
        c = self.choice
        parts = [n for n in ("tp", "pp", "ep") if getattr(c, n) > 1]
        if c.dp > 1 and c.ep == 1:
            parts.insert(0, f"zero{c.zero}" if c.zero else "dp")
        if not parts:
            return "single"
        return parts[0] if len(parts) == 1 else "hybrid"

    @property
    def layout(self):
        from skiff.kernels.train.parallel.groups import Layout

        c = self.choice
        return Layout(dp=c.dp, tp=c.tp, pp=c.pp, ep=c.ep)

    @property
    def summary(self) -> str:
        """The choice and its main reason in one line (a dry run's, a log's first line)."""
        c, e = self.choice, self.estimate
        usable = self.cluster.memory * self.cluster.usable
        how = [f"ZeRO-{c.zero}"] if c.zero else []
        how += [f"{n}={getattr(c, n)}" for n in ("tp", "pp", "ep") if getattr(c, n) > 1]
        how += ["recomputation"] if c.recompute else []
        head = (f"{self.strategy} ({c.label()}) on {self.cluster.devices} device"
                f"{'s' if self.cluster.devices > 1 else ''}")
        mem = f"{_gb(e.peak_memory)} per device"
        n = self.cluster.devices
        if self.explicit:
            why = f"as given; {mem}"
        else:
            # plain data parallel as it would run here (a live model's rows all at once;
            # recomputation when the choice has it, so only the split is argued for)
            # (round 48, h4: under a pp choice a live model's plain dp was costed one row at
            # a time, a layout the Trainer never runs: its summary said 0.5 MiB where its
            # reasons' "plain data parallel does not fit" said 0.6 MiB)
            rows = -(-self.global_batch // n)
            whole = self.runnable or (c.micro_batch == -(-self.global_batch // c.dp)
                                      and c.pp == 1)
            plain = estimate(self.model, self.cluster,
                             Choice(dp=n, micro_batch=rows if whole else 1,
                                    recompute=c.recompute),
                             global_batch=self.global_batch, weight_bytes=self.weight_bytes,
                             grad_bytes=self.grad_bytes) if self.global_batch >= n else None
            if plain is not None and plain.peak_memory > usable:
                why = (f"plain data parallel needs {_gb(plain.peak_memory)} a device, "
                       f"{_gb(usable)} usable; " + (" + ".join(how) or "this layout")
                       + f" brings it to {_gb(e.peak_memory)}")
            elif how:
                why = f"fastest layout that fits, by the cost model ({' + '.join(how)}); {mem}"
            else:
                why = (f"the model fits every device whole, so data parallel; {mem}" if n > 1
                       else f"the model fits one device whole; {mem}")
        per_rank = -(-self.global_batch // c.dp)
        if c.pp == 1 and c.micro_batch < per_rank:
            # outside a pipeline, micro-batches are the Trainer's gradient accumulation
            why += (f"; {per_rank} sequences a rank in micro-batches of {c.micro_batch}: "
                    f"Trainer(batch_size={c.dp * c.micro_batch}, "
                    f"grad_accum={-(-per_rank // c.micro_batch)})")
        return f"{head}: {why}, {_sec(e.step_time)} a step {STEP_SHORT}"

    def to_json(self) -> dict:
        return {"spec": self.spec, "explicit": self.explicit, "strategy": self.strategy,
                "summary": self.summary,
                "step_time_note": step_note(self.cluster),
                "choice": asdict(self.choice), "label": self.choice.label(),
                "estimate": self.estimate.to_json(), "reasons": list(self.reasons),
                "model": self.model.to_json(), "cluster": self.cluster.to_json(),
                "global_batch": self.global_batch, "searched": self.searched,
                "fitting": self.fitting, "table": [e.to_json() for e in self.table]}

    def rows(self) -> list[list[str]]:
        usable = self.cluster.memory * self.cluster.usable
        out = []
        for i, e in enumerate(self.table or [self.estimate]):
            c = e.choice
            out.append([str(i + 1), str(c.dp), str(c.tp), str(c.pp), str(c.ep), str(c.zero),
                        str(c.micro_batch), "yes" if c.recompute else "no",
                        _gb(e.peak_memory), _sec(e.step_time),
                        _sec(e.time["dp_exposed"] + e.time["tp_comm"] + e.time["pp_comm"]
                             + e.time["ep_comm"]),
                        "yes" if e.peak_memory <= usable else "NO"])
        return out

    HEADER = ["#", "dp", "tp", "pp", "ep", "zero", "micro", "recomp", "mem/device",
              "step", "comm", "fits"]

    def __repr__(self) -> str:
        m = self.model
        lines = [f"Plan for {m.name} ({_count(m.n_params)} params"
                 + (f", {_count(m.active_params)} active" if m.n_experts else "")
                 + f") on {self.cluster.devices} x {_gb(self.cluster.memory)}"
                 + (f" in {self.cluster.nodes} nodes" if self.cluster.nodes > 1 else "")
                 + f": {self.choice.label()}  [{self.strategy}]"]
        lines += [f"  - {r}" for r in self.reasons]
        rows = [self.HEADER, *self.rows()]
        widths = [max(len(r[i]) for r in rows) for i in range(len(self.HEADER))]
        for r in rows:
            lines.append("  " + "  ".join(v.rjust(w) for v, w in zip(r, widths)))
        lines.append(f"  step: {step_note(self.cluster)}")
        return "\n".join(lines)

    def _repr_pretty_(self, p, cycle):
        p.text(repr(self))

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{h}</th>" for h in self.HEADER)
        body = "".join(
            "<tr" + (' style="font-weight:bold"' if i == 0 else "") + ">"
            + "".join(f"<td>{html.escape(v)}</td>" for v in r) + "</tr>"
            for i, r in enumerate(self.rows()))
        reasons = "".join(f"<li>{html.escape(r)}</li>" for r in self.reasons)
        title = html.escape(repr(self).splitlines()[0])
        return (f"<div class='skiff-plan'><b>{title}</b><ul>{reasons}</ul>"
                f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
                f"<p>step: {html.escape(step_note(self.cluster))}</p></div>")


# --- the cluster ------------------------------------------------------------------------------
@functools.lru_cache(maxsize=2)
def measure_flops(n: int = 384, repeats: int = 3, *, threads: int | None = None) -> float:
    """Sustained float32 matmul flop/s of this process (numpy), best of ``repeats``, with
    numpy's BLAS on ``threads`` threads (None: as it is now), the count put back after.

    A plan measures at the threads each of its ranks will run on (:func:`cluster_for`):
    the shell that plans a ``--np 2`` job may give BLAS every core, where each rank gets
    its share; on a loaded 2-core host 2 threads read 6-11 GFLOP/s and one ~105."""
    import numpy as np

    from .. import blas_threads

    a = np.random.default_rng(0).standard_normal((n, n)).astype(np.float32)
    best = math.inf
    with blas_threads.limited(threads):
        a @ a
        for _ in range(repeats):
            t0 = time.perf_counter()
            a @ a
            best = min(best, time.perf_counter() - t0)
    return 2 * n**3 / max(best, 1e-9)


def rank_threads(world_size: int) -> int | None:
    """The BLAS threads each of ``world_size`` ranks on this host runs on: the launcher
    gives each its share of the cores (``skiff.jobs.process.rank_env``,
    ``parallel.limit_threads``). None for one rank: a one-process run trains in the process
    that plans it, at the threads it has."""
    if int(world_size) <= 1:
        return None
    from skiff.kernels.backend import cpu_count

    return max(1, cpu_count() // int(world_size))


def cluster_for(devices=None, *, world_size: int = 1, memory: int | None = None,
                nodes: int = 1, bandwidth: float | None = None,
                intra_bandwidth: float | None = None, flops: float | None = None,
                latency: float | None = None) -> ClusterSpec:
    """A :class:`ClusterSpec` for real devices (a list of skiff Devices, one per rank, or
    None: this host's CPU shared by ``world_size`` ranks) or for a hypothetical count
    (``devices`` an int with ``memory`` bytes each). ``latency``: seconds per message
    (default :data:`GPU_LATENCY`, :data:`CPU_LATENCY` for CPU ranks)."""
    if isinstance(devices, ClusterSpec):
        return devices
    if isinstance(devices, int):
        if memory is None:
            raise ValueError(f"a hypothetical cluster of {devices} devices needs device memory")
        return ClusterSpec(devices=devices, memory=int(memory), nodes=nodes,
                           flops=flops or ClusterSpec.flops,
                           inter_bw=bandwidth or ClusterSpec.inter_bw,
                           intra_bw=intra_bandwidth or ClusterSpec.intra_bw,
                           latency=GPU_LATENCY if latency is None else latency)
    from skiff.kernels.backend import resolve_device

    if devices is None:
        devs = [resolve_device("cpu")]
    elif isinstance(devices, (list, tuple)):
        devs = [resolve_device(d) for d in devices] or [resolve_device("cpu")]
    else:
        devs = [resolve_device(devices)]
    dev = devs[0]
    if dev.is_gpu:
        mem = memory or dev.total_memory
        return ClusterSpec(devices=world_size, memory=int(mem), nodes=nodes,
                           flops=flops or ClusterSpec.flops,
                           inter_bw=bandwidth or ClusterSpec.inter_bw,
                           intra_bw=intra_bandwidth or ClusterSpec.intra_bw,
                           latency=GPU_LATENCY if latency is None else latency)
    # ranks on one host share its memory and its cores
    mem = memory or max(1, dev.total_memory // max(1, world_size))
    return ClusterSpec(devices=world_size, memory=int(mem), nodes=nodes,
                       flops=flops or measure_flops(threads=rank_threads(world_size)),
                       intra_bw=intra_bandwidth or 2e9,
                       inter_bw=bandwidth or 1e9, mem_bw=10e9, kind="cpu",
                       latency=CPU_LATENCY if latency is None else latency)


# what a plan of a preset (an LLM's size, planned for GPUs) assumes on a machine without a
# GPU when no device memory is given: an 80 GB GPU (A100/H100), as the command line does
PRESET_MEMORY = 80 * 10**9


def _device_bytes(device_memory):
    """``device_memory`` in bytes: a string is read as a size ("80GB"); a plain number in a
    string under a MiB is refused, as ``%plan --device-memory 80`` refuses it ("80" meant
    80GB: it planned for 80-byte devices and said that nothing fits)."""
    if not isinstance(device_memory, str):
        return device_memory
    from skiff.kernels.backend.units import byte_size

    text, size = device_memory.strip(), byte_size(device_memory)
    if text.replace(".", "", 1).isdigit() and size < 2**20:
        raise ValueError(f"device_memory={text!r} would be {size} bytes: give the unit, like "
                         f"'{text}GB' or '{text}GiB'")
    return size


def _a_preset(model) -> bool:
    """Whether ``model`` names a preset or is a spec (a size planned for GPUs), not a model
    here (a live one, or %train's mlp / cnn, which train on this machine)."""
    from .cost import LIVE_BUILTINS

    if isinstance(model, str):
        return model.lower() not in LIVE_BUILTINS
    return isinstance(model, ModelSpec)


def _this_host(world: int, preset: bool = False):
    """``(devices, device_memory, note)`` for a plan of ``world`` devices given no memory:
    as many of this machine's GPU (its memory each); on a machine without one, a live model
    on ``world`` CPU ranks sharing its memory and cores, as ``%train --np N`` runs them, and
    a preset on 80 GB GPUs; the note says which, for the plan's reasons."""
    from skiff.kernels.backend import resolve_device

    dev = resolve_device("auto")
    if dev.is_gpu:
        return world, int(dev.total_memory), (
            f"device memory not given: {world} x this machine's {dev.model} "
            f"({_gb(dev.total_memory)} each); give device_memory= for another cluster")
    if preset:
        return world, PRESET_MEMORY, (
            f"device memory not given: {_gb(PRESET_MEMORY)} per device assumed (an "
            "A100's or H100's; this machine has no GPU); give device_memory= for another")
    each = max(1, dev.total_memory // max(1, world))
    return None, None, (
        f"device memory not given: {world} CPU rank{'s' if world > 1 else ''} on this "
        f"machine, its {_gb(dev.total_memory)} shared ({_gb(each)} each) and its cores at "
        "the flop/s measured here; give device_memory= (and flops=) to plan for GPUs")


# --- strategies by name ---------------------------------------------------------------------
def parse_strategy(spec: str, world_size: int) -> Choice | None:
    """The :class:`Choice` an explicit strategy names (None for ``"auto"``).

    ``single``; ``dp``/``zero1``/``zero2`` (every rank data-parallel); ``tp``, ``pp``, ``ep``
    (every rank in that dimension; ``ep`` also data-parallel); or ``key=value`` pairs among
    dp, tp, pp, ep, zero, micro, recompute (dp defaults to what is left of the world).
    """
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"strategy must be a name or 'dp=..,tp=..,pp=..', got {spec!r}")
    s = strategy_name(spec.strip()).lower()
    w = int(world_size)
    named = {"single": Choice(), "dp": Choice(dp=w), "zero1": Choice(dp=w, zero=1),
             "zero2": Choice(dp=w, zero=2), "tp": Choice(tp=w), "pp": Choice(pp=w),
             "ep": Choice(dp=w, ep=w)}
    if s == "auto":
        return None
    if s in named:
        if s == "single" and w != 1:
            raise ValueError(f"strategy 'single' runs on one rank, the job has {w}")
        return named[s]
    if "=" not in s:
        raise ValueError(f"unknown strategy {spec!r}: choose from {', '.join(NAMED_STRATEGIES)}"
                         " or give 'dp=2,tp=2,pp=1'")
    vals: dict = {}
    for part in s.split(","):
        key, _, value = part.strip().partition("=")
        key = key.strip()
        if key not in _KEYS:
            raise ValueError(f"unknown strategy key {key!r} in {spec!r}: choose from "
                             f"{', '.join(_KEYS)}")
        if key == "recompute":
            vals[key] = value.strip() in ("1", "true", "yes", "on")
            continue
        try:
            vals[key] = int(value)
        except ValueError:
            raise ValueError(f"strategy {spec!r}: {key} must be an integer, got "
                             f"{value!r}") from None
        if vals[key] < (0 if key == "zero" else 1):
            raise ValueError(f"strategy {spec!r}: {key} must be positive, got {value!r}")
    tp, pp = vals.get("tp", 1), vals.get("pp", 1)
    dp = vals.get("dp", max(1, w // (tp * pp)))
    if vals.get("zero", 0) > 2:
        raise ValueError(f"strategy {spec!r}: zero must be 0, 1 or 2, got {vals['zero']}")
    return Choice(dp=dp, tp=tp, pp=pp, ep=vals.get("ep", 1), zero=vals.get("zero", 0),
                  micro_batch=vals.get("micro", 1), recompute=vals.get("recompute", False))


def _structural_problems(spec: ModelSpec, c: Choice, world: int, global_batch: int) -> list:
    problems = []
    if c.world != world:
        problems.append(f"dp={c.dp} x tp={c.tp} x pp={c.pp} = {c.world} ranks, the job has "
                        f"{world}")
    if spec.n_heads % c.tp:
        problems.append(f"tp={c.tp} does not divide the {spec.n_heads} attention heads (use "
                        "a tp that does, or dp, zero1, zero2 or pp)")
    kv = spec.n_kv_heads or spec.n_heads
    if c.tp > 1 and kv % c.tp and c.tp % kv:
        problems.append(f"tp={c.tp} neither divides nor is a multiple of the {kv} key/value "
                        "heads (use a tp that is, or dp, zero1, zero2 or pp)")
    if c.pp > spec.n_layers:
        problems.append(f"pp={c.pp} is more stages than the {spec.n_layers} layers")
    if c.dp % c.ep:
        problems.append(f"ep={c.ep} does not divide dp={c.dp}")
    if c.ep > 1 and not spec.n_experts:
        problems.append(f"ep={c.ep} needs a mixture-of-experts model; {spec.name} has none: "
                        "use dp, zero1, zero2, tp or pp")
    if spec.n_experts and spec.n_experts % c.ep:
        problems.append(f"ep={c.ep} does not divide the {spec.n_experts} experts")
    # a batch dp does not divide is split as evenly as it goes (the Trainer weights each
    # rank's loss by its rows): the busiest rank's ceil(batch / dp) rows are what cost
    per_dp = -(-global_batch // c.dp)
    if global_batch < c.dp:
        problems.append(f"the global batch of {global_batch} leaves ranks of dp={c.dp} "
                        "without data (use a batch of at least dp sequences)")
    elif per_dp % c.micro_batch:
        problems.append(f"micro-batch {c.micro_batch} does not divide the "
                        f"{per_dp} sequences per data-parallel rank")
    if c.zero and c.dp == 1:
        problems.append(f"zero={c.zero} shards over data-parallel ranks, but dp=1")
    return problems


def _does_not_fit(e: Estimate, cluster: ClusterSpec) -> str:
    usable = cluster.memory * cluster.usable
    parts = ", ".join(f"{k} {_gb(v)}" for k, v in e.memory.items())
    return (f"needs {_gb(e.peak_memory)} per device ({parts}), but a device has "
            f"{_gb(usable)} usable ({cluster.usable:.0%} of {_gb(cluster.memory)})")


# --- the search -------------------------------------------------------------------------------
def plan(model, *, devices=8, device_memory=None, nodes: int = 1, bandwidth: float | None = None,
         intra_bandwidth: float | None = None, flops: float | None = None,
         global_batch: int | None = None, seq_len: int | None = None, weight_bytes: int = 2,
         optimizer: str = "adamw", top: int = 8, overlap: bool = True,
         dims: tuple[str, ...] = ("tp", "pp", "ep"), grad_bytes: int | None = None,
         runnable: bool = False, latency: float | None = None, _grow: bool = True) -> Plan:
    """The fastest layout of ``model`` that fits ``devices``, with the table and reasons.

    Parameters
    ----------
    model : str, ModelSpec or Module
        A preset name (``7b``, ``70b``, ``gpt-moe``, ``gpt-mini``, ...), a spec or a model.
    devices : int, ClusterSpec or list of devices
        How many devices (with ``device_memory`` bytes each) or the real ones.
    device_memory : int or str
        Bytes per device (``"80GB"`` accepted).
    nodes, bandwidth, intra_bandwidth, flops, latency
        Cluster shape: node count, inter-node and intra-node bytes/s, device flop/s, seconds
        per message of a collective (default 10 us, on devices and between CPU ranks).
    global_batch : int
        Sequences per optimizer step (default: about a million tokens; 32, the Trainer's
        default batch, for a model of single samples such as an MLP or a CNN).
    weight_bytes : int
        2 for 16-bit training with fp32 master weights, 4 for fp32.
    grad_bytes : int or None
        Bytes of a gradient as held and reduced (default ``weight_bytes``; skiff's Trainer
        gives 4 in mixed precision: its masters' gradients and its reductions are float32).
    dims : tuple of str
        Which of ``tp``, ``pp``, ``ep`` may exceed 1 (data parallelism and ZeRO always may;
        ``ep=dp``: experts only split over all data-parallel ranks); a live model that is not
        built from parallel layers can only be split by dp.

    runnable : bool
        Only layouts skiff's strategies run (:func:`runs_in_skiff`): a live model's plan.

    Raises
    ------
    ValueError
        When no layout fits; the message gives the smallest memory any layout needs.

    Examples
    --------
    >>> p = plan("7b", devices=8, device_memory="80GB")
    >>> p.choice.world
    8
    """
    spec = model_spec(model, seq_len=seq_len)
    device_memory = _device_bytes(device_memory)
    world = devices.devices if isinstance(devices, ClusterSpec) else (
        devices if isinstance(devices, int) else len(devices))
    host_note = None
    if isinstance(devices, int) and device_memory is None:
        # no memory given for a count of devices: this machine's (it was "a hypothetical
        # cluster of 2 devices needs device memory", where the CLI assumes 80 GB)
        devices, device_memory, host_note = _this_host(world, _a_preset(model))
    cluster = cluster_for(devices, world_size=world, memory=device_memory, nodes=nodes,
                          bandwidth=bandwidth, intra_bandwidth=intra_bandwidth, flops=flops,
                          latency=latency)
    # a sequence model: about a million tokens a step; a model of single samples (seq_len 1:
    # an MLP, a CNN) the Trainer's default batch of 32 (a million was grad_accum=16384)
    gb = global_batch or max(world, 32 if spec.seq_len == 1 else 2**20 // spec.seq_len)
    kw = {"global_batch": gb, "weight_bytes": weight_bytes, "optimizer": optimizer,
          "overlap": overlap, "grad_bytes": grad_bytes}
    usable = cluster.memory * cluster.usable
    all_est: list[Estimate] = []
    for tp in (_divisors(world) if "tp" in dims else [1]):
        for pp in (_divisors(world // tp) if "pp" in dims else [1]):
            dp = world // (tp * pp)
            eps = [1]
            if spec.n_experts and "ep" in dims:
                eps = _divisors(dp)
            elif spec.n_experts and "ep=dp" in dims:
                eps = sorted({1, dp})
            for ep in eps:
                # skiff's expert-parallel strategy does not shard with ZeRO as well
                zeros = (0,) if dp == 1 or (ep > 1 and "ep=dp" in dims) else (0, 1, 2)
                for zero in zeros:
                    per_dp = -(-gb // dp) if gb >= dp else 0
                    micros = [m for m in (1, 2, 4, 8, 16, 32) if per_dp and per_dp % m == 0]
                    if runnable and pp == 1 and per_dp:
                        # skiff's Trainer cuts a rank's batch into micro-batches only in a
                        # pipeline: anywhere else all its rows are in flight at once (a
                        # micro=1 plan costed a 4-row rank's activations at 1 row)
                        micros = [per_dp]
                    for mb in micros:
                        for rc in (False, True):
                            c = Choice(dp, tp, pp, ep, zero, mb, rc)
                            if _structural_problems(spec, c, world, gb):
                                continue
                            if runnable and not runs_in_skiff(c):
                                continue
                            all_est.append(estimate(spec, cluster, c, **kw))
    if not all_est:
        raise ValueError(f"no layout of {world} devices suits {spec.name} "
                         f"(global batch {gb}, {spec.n_heads} heads, {spec.n_layers} layers)")
    fits = [e for e in all_est if e.peak_memory <= usable]
    if not fits:
        least = min(all_est, key=lambda e: e.peak_memory)
        more = ""
        if _grow and isinstance(devices, int):
            # how many such devices would hold it (a user asks next; round 40, h6)
            more = _fewest_devices(model, world, cluster, nodes, global_batch=gb,
                                   seq_len=seq_len, weight_bytes=weight_bytes,
                                   optimizer=optimizer, dims=dims, grad_bytes=grad_bytes,
                                   runnable=runnable, bandwidth=bandwidth,
                                   intra_bandwidth=intra_bandwidth, latency=latency,
                                   overlap=overlap)
        raise ValueError(
            f"{spec.name} ({_count(spec.n_params)} params) does not fit on {world} x "
            f"{_gb(cluster.memory)}: the leanest layout ({least.choice.label()}) "
            + _does_not_fit(least, cluster) + more
            + (f" ({host_note})" if host_note else ""))
    # equal times (outside a pipeline the micro-batch changes no cost the model prices):
    # the fewest micro-batches, not the least memory (gpt2-124m on 8 x 80 GB was micro=1,
    # 8 accumulation steps of one sequence on a device 2 GB full)
    fits.sort(key=lambda e: (e.step_time, e.n_micro if e.choice.pp == 1 else 0,
                             e.peak_memory))
    best = fits[0]
    reasons = [f"searched {len(all_est)} layouts of {world} devices; {len(fits)} fit in "
               f"{_gb(usable)} usable per device",
               f"fastest that fits: {best.choice.label()}, predicted {_sec(best.step_time)} "
               f"per step of {gb} sequences x {spec.seq_len} tokens, {_gb(best.peak_memory)} "
               "per device"]
    plain = [e for e in all_est if e.choice.tp == e.choice.pp == 1 and e.choice.zero == 0
             and e.choice.ep == 1]
    if world > 1 and plain:
        lean = min(plain, key=lambda e: e.peak_memory)
        if lean.peak_memory > usable:
            # the leanest may recompute where the summary's plain dp does not (as the choice)
            reasons.append("plain data parallel does not fit"
                           + (", even recomputing activations" if lean.choice.recompute else "")
                           + ": " + _does_not_fit(lean, cluster))
    c = best.choice
    if gb % c.dp:
        reasons.append(f"the global batch of {gb} splits unevenly over dp={c.dp} "
                       f"({-(-gb // c.dp)} or {gb // c.dp} sequences per rank, each rank's "
                       "loss weighted by its rows); the fullest rank is costed")
    if c.zero:
        unsharded = estimate(spec, cluster, replace(c, zero=0), **kw)
        reasons.append(f"ZeRO-{c.zero} shards optimizer state"
                       + (" and gradients" if c.zero == 2 else "")
                       + f" over dp={c.dp}: {_gb(unsharded.peak_memory)} -> "
                       f"{_gb(best.peak_memory)} per device, {_sec(unsharded.step_time)} "
                       f"-> {_sec(best.step_time)} a step (the same layout without ZeRO "
                       "first: each rank updates only its shard of the weights)")
    if c.recompute:
        kept = estimate(spec, cluster, replace(c, recompute=False), **kw)
        reasons.append(f"recomputing activations saves {_gb(kept.memory['activations'])}"
                       f" -> {_gb(best.memory['activations'])} for ~1/3 more compute")
    if c.tp * c.pp > 1:
        reasons.append(_why_split(best, all_est, usable, cluster))
    if c.tp > 1:
        where = "within a node" if c.tp <= cluster.per_node else "across nodes"
        reasons.append(f"tp={c.tp} splits every layer {where} "
                       f"(tensor-parallel traffic {_sec(best.time['tp_comm'])} per step)")
    if c.pp > 1:
        reasons.append(f"pp={c.pp} stages with {best.n_micro} micro-batches: pipeline bubble "
                       f"{(best.time['bubble'] - 1):.0%}")
    if c.ep > 1:
        reasons.append(f"ep={c.ep}: each rank holds {spec.n_experts // c.ep} of "
                       f"{spec.n_experts} experts")
    split = [e for e in all_est if e.choice.ep > 1]
    if c.ep == 1 and split:  # a model of experts left whole on every rank: why
        e = min(split, key=lambda e: (e.peak_memory > usable, e.step_time))
        reasons.append(f"experts not split over ranks: the fastest layout that splits them, "
                       f"{e.choice.label()}, "
                       + (f"needs {_gb(e.peak_memory)} per device, more than fits"
                          if e.peak_memory > usable else
                          f"is predicted {_sec(e.step_time)} a step (its tokens' all-to-all "
                          f"{_sec(e.time['ep_comm'])})"))
    if best.time["dp_comm"] > 0:
        reasons.append(f"gradient all-reduce {_sec(best.time['dp_comm'])}, "
                       f"{_sec(best.time['dp_exposed'])} not hidden behind backward")
    if host_note:
        reasons.insert(0, host_note)
    return Plan(spec, cluster, c, best, reasons, fits[:top], explicit=False, spec="auto",
                searched=len(all_est), fitting=len(fits), global_batch=gb,
                weight_bytes=weight_bytes, grad_bytes=grad_bytes, runnable=runnable)


def _fewest_devices(model, world: int, cluster, nodes: int, *, most: int = 4096,
                    **kw) -> str:
    """``; N x <memory> fit it (<layout>)``: the fewest devices of this memory, doubling the
    count, that some layout fits (memory is all that decides it; the nodes grow with the
    count, as many devices each), or that even ``most`` do not."""
    n = world * 2
    while n <= most:
        try:
            p = plan(model, devices=n, device_memory=cluster.memory, _grow=False,
                     flops=cluster.flops, nodes=max(1, nodes * n // world), **kw)
        except ValueError:
            n *= 2
            continue
        return (f"; {n} x {_gb(cluster.memory)} fit it ({p.choice.label()}, "
                f"{_gb(p.estimate.peak_memory)} per device)")
    return f"; not even {most} x {_gb(cluster.memory)} fit it"


def _why_split(best: Estimate, all_est: list, usable: float, cluster) -> str:
    """Why a plan cuts the model's layers over devices (tp, pp) rather than keeping it whole
    on each (data parallel, ZeRO-1/2; experts split by ep are said apart): the layouts of a
    whole model do not fit (the leanest said, with its memory), or the fastest of them is
    slower. A 70b on 32 x 80 GB planned to dp=4,tp=2,pp=4 said plain dp did not fit, not
    that ZeRO-2 over 32 ranks would not either (its 16-bit weights alone, 138 GB, are more
    than a device) (round 40, h6)."""
    c = best.choice
    whole = [e for e in all_est if e.choice.tp == e.choice.pp == e.choice.ep == 1]
    cut = f"tp={c.tp} x pp={c.pp}" if c.tp > 1 and c.pp > 1 else (
        f"tp={c.tp}" if c.tp > 1 else f"pp={c.pp}")
    if not whole:
        return f"the model is cut over {cut}: no layout keeping it whole was searched"
    fitting = [e for e in whole if e.peak_memory <= usable]
    if fitting:
        e = min(fitting, key=lambda e: e.step_time)
        return (f"the model is cut over {cut}: the fastest layout keeping it whole on each "
                f"device, {e.choice.label()}, fits ({_gb(e.peak_memory)}) but is predicted "
                f"{_sec(e.step_time)} a step to this layout's {_sec(best.step_time)}")
    e = min(whole, key=lambda e: e.peak_memory)
    return (f"the model is cut over {cut}: no layout keeping it whole on each device fits "
            f"(ZeRO-2 shards only gradients and optimizer state); the leanest, "
            f"{e.choice.label()}, " + _does_not_fit(e, cluster))


def runs_in_skiff(c: Choice) -> bool:
    """Whether :func:`skiff.kernels.train.parallel.strategy_from_plan` runs layout ``c``:
    dp with ZeRO 0/1/2, dp x tp, dp x pp, or ep = dp (no ZeRO with a split model)."""
    if c.tp == c.pp == c.ep == 1:
        return True
    if c.zero:
        return False
    return ((c.pp == c.ep == 1) or (c.tp == c.ep == 1)
            or (c.ep == c.dp and c.tp == c.pp == 1))


def _split_dims(model) -> tuple:
    """How skiff's strategies can split a live model: its ``parallel_dims``, or for an
    ERNIE-4.5 model (a Hugging Face config with attention heads) tp and pp, and ep when it
    has experts (:mod:`skiff.kernels.train.parallel.ernie`)."""
    if hasattr(model, "parallel_dims"):
        return tuple(model.parallel_dims)
    cfg = getattr(model, "config", None)
    if hasattr(cfg, "num_attention_heads") and hasattr(cfg, "num_hidden_layers"):
        moe = bool(getattr(cfg, "moe_num_experts", 0))
        # pipeline stages do not add the MoE balancing loss: no pp when the model trains it
        pp = () if moe and getattr(cfg, "output_router_logits", False) else ("pp",)
        return ("tp",) + pp + (("ep",) if moe else ())
    return ()


def _split_when_too_big(model, dims: tuple) -> tuple:
    """The splits ``auto`` also searches for skiff's own GPT when no data-parallel layout
    fits (tp and pp run it, but a live GPT has no ``parallel_dims``, so ``auto`` refused
    "does not fit" where ``strategy="tp"`` or ``"pp"`` fitted); () for other models."""
    if hasattr(model, "parallel_dims") or not (hasattr(model, "h") and hasattr(model, "wte")):
        return ()
    return tuple(d for d in ("tp", "pp") if d not in dims)


def moe_pp_refusal(cfg, pp: int, strategy_spec) -> str | None:
    """Why pp > 1 cannot run an ERNIE-4.5 MoE whose config trains its load-balancing loss
    (``output_router_logits``: pipeline stages do not add it), or None. ``cfg``: the model's
    config (an object or config.json's dict); the train kind asks before a run folder."""
    get = cfg.get if isinstance(cfg, dict) else (lambda k, d=None: getattr(cfg, k, d))
    if pp <= 1 or not get("moe_num_experts", 0) or not get("output_router_logits", False):
        return None
    return (f"strategy {strategy_spec!r} cuts the model into pp={pp} pipeline stages, which "
            "do not add this ERNIE-4.5 MoE's load-balancing loss (its config's "
            "output_router_logits is true): use 'tp', 'ep', 'dp', 'zero1', 'zero2' or "
            "'auto', or set output_router_logits to false in the checkpoint's config.json")


def _check_splittable(model, c: Choice, strategy_spec) -> None:
    """An explicit tp or pp for a live model that skiff's strategies cannot cut (a user's
    own model: they cut skiff's GPT and ERNIE-4.5 models) fails naming what runs instead.
    Such a model was measured as one layer of one attention head, so the refusal read "tp=2
    does not divide the 1 attention heads (use ... pp)" and pp's "more stages than the 1
    layers" for a model of 4 blocks."""
    can = set(_split_dims(model))
    if hasattr(model, "h") and hasattr(model, "wte"):  # skiff's GPT (also its MoE form)
        can |= {"tp", "pp"}
        _check_moe_gpt(model, c, strategy_spec)
    if c.ep > 1 and "ep" not in can:  # what this model runs, not tp/pp it cannot take
        ways = ", ".join(f"'{d}'" for d in ("dp", "zero1", "zero2", *sorted(can)))
        raise ValueError(f"strategy {strategy_spec!r} splits experts over ep={c.ep} ranks, "
                         f"but {type(model).__name__} has no mixture-of-experts layers: "
                         f"use {ways} or 'auto'")
    wanted = [f"{d}={getattr(c, d)}" for d in ("tp", "pp") if getattr(c, d) > 1
              and d not in can]
    if wanted == [f"pp={c.pp}"]:  # an ERNIE-4.5 MoE that trains its balancing loss (round
        # 44 h18: the refusal said it was "neither" a GPT nor an ERNIE-4.5 model)
        why = moe_pp_refusal(getattr(model, "config", None), c.pp, strategy_spec)
        if why:
            raise ValueError(why)
    if wanted:
        raise ValueError(f"strategy {strategy_spec!r} cuts the model over ranks "
                         f"({', '.join(wanted)}), which skiff does for its GPT "
                         f"(skiff.kernels.train.models.gpt) and ERNIE-4.5 models only; "
                         f"{type(model).__name__} is neither: use 'dp', 'zero1' or 'zero2' "
                         "(every rank holds the whole model; zero2 also shards its gradients "
                         "and optimizer state over the ranks) or 'auto'")


def _check_moe_gpt(model, c: Choice, strategy_spec) -> None:
    """tp or pp for skiff's GPT of experts (``gpt-moe``) fails naming what runs it: tp cut
    its blocks' feed-forward as a dense one ("'_MoEMLP' object has no attribute 'c_fc'");
    pp's stages route each micro-batch's tokens alone (an expert's capacity, so the tokens
    it drops, are a micro-batch's) and leave out the experts' load-balancing loss: 20
    steps' losses 0.8% off the one-process run's, silently (1.1% with ``aux_coef=0``)."""
    if not getattr(model, "moe_layers", None):
        return
    use = ("use 'ep' (each rank holds some of the experts), 'dp', 'zero1', 'zero2' or "
           "'auto'")
    if c.tp > 1:
        raise ValueError(f"strategy {strategy_spec!r} cuts every layer over tp={c.tp} "
                         f"ranks, which skiff does not do for a GPT of experts: {use}")
    if c.pp > 1:
        raise ValueError(f"strategy {strategy_spec!r} runs the model in pp={c.pp} pipeline "
                         "stages, which would route each micro-batch's tokens to the "
                         "experts apart (their capacity a micro-batch's) and leave out the "
                         f"experts' load-balancing loss: {use}")


def _parameter_bytes(model) -> int:
    """The widest parameter's bytes per element of a live model (0 for a preset or spec)."""
    params = getattr(model, "parameters", None)
    if not callable(params) or isinstance(model, (str, ModelSpec)):
        return 0
    return max((int(getattr(getattr(p, "dtype", None), "itemsize", 0) or 0)
                for p in params()), default=0)


def resolve(strategy_spec="auto", model_or_spec=None, *, world_size: int = 1, devices=None,
            device_memory=None, global_batch: int | None = None, seq_len: int | None = None,
            weight_bytes: int = 4, optimizer: str = "adamw", check_memory: bool = True,
            grad_bytes: int | None = None, **cluster_kw) -> Plan:
    """The plan for a run: ``"auto"`` searches; an explicit strategy is kept as given.

    An explicit strategy is checked, never changed: a layout that does not match the world,
    the model's heads or layers, or whose memory does not fit, raises ValueError saying what
    does not fit. ``devices``: None (this host's CPU shared by the ranks), a list of skiff
    devices, or a :class:`ClusterSpec`. Real runs default to fp32 (``weight_bytes=4``).
    """
    if isinstance(strategy_spec, Plan):
        return strategy_spec
    if model_or_spec is None:
        raise ValueError("resolve needs the model (or a ModelSpec / preset name) to plan for")
    spec = model_spec(model_or_spec, seq_len=seq_len)
    world = int(world_size)
    device_memory = _device_bytes(device_memory)
    cluster = cluster_for(devices, world_size=world, memory=device_memory, **cluster_kw)
    gb = global_batch or world
    wide = _parameter_bytes(model_or_spec)
    if weight_bytes >= 4 and wide > weight_bytes:
        # a float64 model trains in float64 ("32" is the Trainer's fp32 or wider): its
        # weights, gradients and moments were costed at 4 bytes, half what they hold
        # (round 48 h4: a 2-rank plan said "params 588 bytes" for 147 float64 parameters)
        weight_bytes = wide
        grad_bytes = None if grad_bytes is None else max(grad_bytes, wide)
    choice = parse_strategy(strategy_spec, world)
    if choice is None:
        if isinstance(model_or_spec, (str, ModelSpec)):
            dims = ("tp", "pp", "ep")
        else:  # a live model splits by tp/pp/ep only as skiff's strategies can split it
            dims = tuple("ep=dp" if d == "ep" else d for d in _split_dims(model_or_spec))
        search = dict(devices=cluster, global_batch=gb, weight_bytes=weight_bytes,
                      optimizer=optimizer, grad_bytes=grad_bytes,
                      runnable=not isinstance(model_or_spec, (str, ModelSpec)))
        wider = () if isinstance(model_or_spec, (str, ModelSpec)) else \
            _split_when_too_big(model_or_spec, dims)
        try:
            return plan(spec, dims=dims, **search)
        except ValueError as e:
            if not wider and "does not fit" in str(e) and not isinstance(
                    model_or_spec, (str, ModelSpec)) and not ({"tp", "pp"} & set(dims)):
                # a user's own model: why no tp or pp layout was searched (round 44 h11:
                # "does not fit" named only the leanest dp layout)
                name = type(model_or_spec).__name__
                raise ValueError(f"{e}; tp and pp, which would cut it over the ranks, split "
                                 "skiff's GPT (skiff.kernels.train.models.gpt) and ERNIE-4.5 "
                                 f"models only, and {name} is neither: more devices (or "
                                 "more memory each), bf16-mixed, or a smaller batch") from None
            if not wider or "does not fit" not in str(e):
                raise
            found = plan(spec, dims=dims + wider, **search)
            found.reasons.insert(0, f"no data-parallel layout fits ({e}); searched "
                                    f"{' and '.join(wider)} too, which skiff runs for its GPT")
            return found
    if not isinstance(model_or_spec, (str, ModelSpec)):
        _check_splittable(model_or_spec, choice, strategy_spec)
        if choice.pp == 1 and gb >= choice.dp:  # the Trainer runs a rank's rows at once
            choice = replace(choice, micro_batch=-(-gb // choice.dp))
    problems = _structural_problems(spec, choice, world, gb)
    if problems:
        raise ValueError(f"strategy {strategy_spec!r} is impossible: " + "; ".join(problems))
    est = estimate(spec, cluster, choice, global_batch=gb, weight_bytes=weight_bytes,
                   optimizer=optimizer, grad_bytes=grad_bytes)
    if check_memory and est.peak_memory > cluster.memory * cluster.usable:
        raise ValueError(f"strategy {strategy_spec!r} does not fit: " + _does_not_fit(est,
                                                                                     cluster))
    reasons = [f"explicit strategy {strategy_spec!r} kept as given",
               f"predicted {_gb(est.peak_memory)} per device, {_sec(est.step_time)} per step"]
    return Plan(spec, cluster, choice, est, reasons, [est], explicit=True,
                spec=str(strategy_spec), searched=1, fitting=1, global_batch=gb,
                weight_bytes=weight_bytes, grad_bytes=grad_bytes)
