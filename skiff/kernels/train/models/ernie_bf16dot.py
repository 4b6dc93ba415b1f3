"""A bfloat16 GEMM on the CPU's AVX512-BF16 dot instruction (``vdpbf16ps``), for prompts.

``x @ w.T`` with float32 rows x (M, K) whose values are bfloat16's and bfloat16 weights w
(N, K): what a bfloat16 model's projections compute on a prompt (transformers' bf16 linear
multiplies the same bf16 values; oneDNN runs it on this instruction). Each ``vdpbf16ps``
multiplies 16 pairs of bf16 numbers exactly and adds them to 16 float32 sums, twice the
rate of float32 FMAs on the widened weights (the path before: 20 ms for 128 rows x 6144 x
1024 against 8.4 ms in torch; this one 8 ms).

The kernel is LLVM IR compiled by llvmlite (numba's own compiler, already a dependency) for
the host CPU: 12 rows of w (read where they are: each bf16 pair broadcast) against 32 rows
of x (packed as (K/2, 32) pairs by a numba loop, ~512 KiB of them per pass so they stay in
L2 while w streams past once), 24 running sums of 16 lanes in registers. Packing w instead
(a first version) cost 2.7 ms of the 11 ms of a 128 x 6144 x 1024 product. For 8..16
rows (a batch's decode step) a second kernel runs 24 rows of w against 16 rows of x. Only on
a CPU with ``avx512_bf16`` (:func:`available`); callers keep their float32 path otherwise,
and whenever x holds a value that is not a bfloat16 (:func:`matmul` returns None).
"""

from __future__ import annotations

import ctypes
import functools

import numpy as np

__all__ = ["available", "matmul"]

# (rows of w per block, 16-lane vectors of x per panel) by rows of x per panel, the two
# kernels (accumulators + x vectors + 1 broadcast <= 32 registers): 32-row panels for prompts,
# 16-row panels with 24 rows of w for 8..16 rows (a batch's decode step; fewer rows stay
# on the widening kernel, as fast where the weights' bytes bound it)
SHAPES = {32: (12, 2), 16: (24, 1)}
DECLARE = ("declare <16 x float> @llvm.x86.avx512bf16.dpbf16ps.512(<16 x float>, "
           "<32 x bfloat>, <32 x bfloat>)")
CACHE_BYTES = 1 << 19  # packed rows of x per pass: ~512 KiB, in L2 while w streams past


def _ir(wrows: int, xv: int = 2, name: str = "bf16dot") -> str:
    """The kernel, out[m, n] = sum over K/2 pairs of x[m] . w[n] (pointers as integers):
    for each block of ``wrows`` rows of w (read in place, each pair broadcast), for each
    panel of 32 rows of x (packed as (K/2, 32) pairs, two vectors), 24 running sums; each
    sum's 16 lanes are 16 rows of out (stored one by one: 384 stores per 12 x 32 x K/2
    products)."""
    lines = [
        f"define void @{name}(i64 %out, i64 %ldo, i64 %xp, i64 %kp, i64 %w, i64 %ldw,"
        " i64 %nblocks, i64 %mpanels) {",
        "entry:",
        "  %outp = inttoptr i64 %out to ptr",
        "  %xq = inttoptr i64 %xp to ptr",
        "  %wq = inttoptr i64 %w to ptr",
        f"  %pstride = mul i64 %kp, {16 * xv}",
        "  br label %nloop",
        "nloop:",
        "  %nb = phi i64 [0, %entry], [%nb1, %ndone]",
        f"  %n0 = mul i64 %nb, {wrows}",
        "  br label %mloop",
        "mloop:",
        "  %mp = phi i64 [0, %nloop], [%mp1, %store]",
        "  %xofs = mul i64 %mp, %pstride",
        "  %xpan = getelementptr i32, ptr %xq, i64 %xofs",
        "  br label %kloop",
        "kloop:",
        "  %kk = phi i64 [0, %mloop], [%kk1, %kloop]",
    ]
    add = lines.append
    for r in range(wrows):
        for v in range(xv):
            add(f"  %acc{r}_{v} = phi <16 x float> [zeroinitializer, %mloop], "
                f"[%n{r}_{v}, %kloop]")
    add(f"  %xoff = mul i64 %kk, {16 * xv}")
    add("  %xq0 = getelementptr i32, ptr %xpan, i64 %xoff")
    add("  %x0 = load <32 x bfloat>, ptr %xq0, align 4")
    if xv == 2:
        add("  %xq1 = getelementptr i32, ptr %xq0, i64 16")
        add("  %x1 = load <32 x bfloat>, ptr %xq1, align 4")
    for r in range(wrows):
        add(f"  %wr{r} = add i64 %n0, {r}")
        add(f"  %wo{r} = mul i64 %wr{r}, %ldw")
        add(f"  %wi{r} = add i64 %wo{r}, %kk")
        add(f"  %wa{r} = getelementptr i32, ptr %wq, i64 %wi{r}")
        add(f"  %s{r} = load i32, ptr %wa{r}, align 4")
        add(f"  %v{r} = insertelement <16 x i32> poison, i32 %s{r}, i64 0")
        add(f"  %sp{r} = shufflevector <16 x i32> %v{r}, <16 x i32> poison, "
            f"<16 x i32> zeroinitializer")
        add(f"  %bf{r} = bitcast <16 x i32> %sp{r} to <32 x bfloat>")
        for v in range(xv):
            add(f"  %n{r}_{v} = call <16 x float> @llvm.x86.avx512bf16.dpbf16ps.512("
                f"<16 x float> %acc{r}_{v}, <32 x bfloat> %x{v}, <32 x bfloat> %bf{r})")
    add("  %kk1 = add i64 %kk, 1")
    add("  %kc = icmp ult i64 %kk1, %kp")
    add("  br i1 %kc, label %kloop, label %store")
    add("store:")
    add(f"  %m0 = mul i64 %mp, {16 * xv}")
    for v in range(xv):
        for lane in range(16):
            t = f"{v}_{lane}"
            add(f"  %mr{t} = add i64 %m0, {v * 16 + lane}")
            add(f"  %mo{t} = mul i64 %mr{t}, %ldo")
            add(f"  %mn{t} = add i64 %mo{t}, %n0")
            add(f"  %mq{t} = getelementptr float, ptr %outp, i64 %mn{t}")
            for r in range(wrows):
                add(f"  %e{r}_{t} = extractelement <16 x float> %n{r}_{v}, i64 {lane}")
                add(f"  %eq{r}_{t} = getelementptr float, ptr %mq{t}, i64 {r}")
                add(f"  store float %e{r}_{t}, ptr %eq{r}_{t}, align 4")
    add("  %mp1 = add i64 %mp, 1")
    add("  %mc = icmp ult i64 %mp1, %mpanels")
    add("  br i1 %mc, label %mloop, label %ndone")
    add("ndone:")
    add("  %nb1 = add i64 %nb, 1")
    add("  %nc = icmp ult i64 %nb1, %nblocks")
    add("  br i1 %nc, label %nloop, label %exit")
    add("exit:")
    add("  ret void")
    add("}")
    return "\n".join(lines)


@functools.lru_cache(maxsize=1)
def _kernel():
    """The compiled kernel as a ctypes function, or None where it cannot run here."""
    try:
        import llvmlite.binding as ll

        features = ll.get_host_cpu_features()
        if not features.get("avx512bf16") or not features.get("avx512f"):
            return None
        try:  # older llvmlite wants it; newer ones initialise themselves
            ll.initialize_native_target()
            ll.initialize_native_asmprinter()
        except RuntimeError:
            pass
        module = ll.parse_assembly("\n".join(
            [DECLARE] + [_ir(wr, xv, f"bf16dot{16 * xv}") for wr, xv in SHAPES.values()]))
        module.verify()
        machine = ll.Target.from_default_triple().create_target_machine(
            cpu=ll.get_host_cpu_name(), features=features.flatten(), opt=3)
        engine = ll.create_mcjit_compiler(module, machine)
        engine.finalize_object()
        kind = ctypes.CFUNCTYPE(None, *[ctypes.c_int64] * 8)
        fns = {width: kind(engine.get_function_address(f"bf16dot{width}"))
               for width in SHAPES}
        fns["engine"] = engine  # keep the code alive with the functions
        return fns
    except Exception:  # noqa: BLE001 - no llvmlite, an LLVM without the intrinsic: not here
        return None


def available() -> bool:
    """Whether this CPU and llvmlite run the kernel."""
    return _kernel() is not None


@functools.lru_cache(maxsize=1)
def _packer():
    import numba

    @numba.njit(cache=True)
    def pack_rows(x, m0, panels, out):  # pragma: no cover - compiled
        # rows m0.. of float32 x (M, K) -> bf16 pairs as uint32 (panels, K/2, width), zero
        # past M; False when a value is not a bfloat16 (its low 16 bits are not zero)
        bits = x.view(np.uint32)
        m, k = bits.shape
        width = out.shape[2]
        for p in range(panels):
            for kk in range(k // 2):
                for j in range(width):
                    i = m0 + p * width + j
                    if i < m:
                        lo = bits[i, 2 * kk]
                        hi = bits[i, 2 * kk + 1]
                        if (lo & np.uint32(0xFFFF)) or (hi & np.uint32(0xFFFF)):
                            return False
                        out[p, kk, j] = (lo >> np.uint32(16)) | (hi & np.uint32(0xFFFF0000))
                    else:
                        out[p, kk, j] = np.uint32(0)
        return True

    return pack_rows


@functools.lru_cache(maxsize=4)
def _pool(threads: int):
    from concurrent.futures import ThreadPoolExecutor

    return ThreadPoolExecutor(max_workers=threads, thread_name_prefix="skiff-bf16dot")


def matmul(x: np.ndarray, w: np.ndarray, threads: int = 1):
    """``x @ w.T`` (M, N) float32 for float32 x (M, K) and bfloat16 w (N, K), both
    C-contiguous; None when the kernel does not run here, K is odd, or x holds a value that
    is not a bfloat16 (the caller's float32 path then). ``threads`` (0: every core, as
    the float32 GEMMs' default) split w's rows between threads (the kernel runs without the
    GIL)."""
    import os

    fns = _kernel()
    M, K = x.shape
    N = w.shape[0]
    if fns is None or K % 2 or K == 0 or M == 0 or N == 0:
        return None
    width = 16 if M <= 16 else 32
    fn = fns[width]
    wrows = SHAPES[width][0]
    pack_rows = _packer()
    kp = K // 2
    panels = max(1, CACHE_BYTES // (kp * 4 * width))  # x panels per pass over w
    rows = -(-M // width) * width
    out = np.empty((rows, N), dtype=np.float32)
    w32 = w.view(np.uint16).view(np.uint32)
    full = N // wrows * wrows
    tail = None
    if full < N:  # the last N % wrows rows of w, padded with zero rows
        tail = np.zeros((wrows, kp), dtype=np.uint32)
        tail[:N - full] = w32[full:]
        tail_out = np.empty((rows, wrows), dtype=np.float32)
    blocks = full // wrows
    threads = int(threads) if threads and threads > 0 else (os.cpu_count() or 1)
    parts = max(1, min(threads, blocks // 16))  # each thread at least 16 blocks of w
    cuts = [blocks * i // parts for i in range(parts + 1)]
    step = wrows * 4  # bytes of a block's floats of out, of its rows of w: times kp
    buf = np.empty((panels, kp, width), dtype=np.uint32)
    for m0 in range(0, rows, panels * width):
        n = min(panels, (rows - m0) // width)
        if not pack_rows(x, m0, n, buf):
            return None
        base = out.ctypes.data + m0 * N * 4

        def run(i, base=base, n=n):
            fn(base + cuts[i] * step, N, buf.ctypes.data, kp,
               w32.ctypes.data + cuts[i] * step * kp, kp, cuts[i + 1] - cuts[i], n)

        if blocks and parts > 1:
            list(_pool(parts).map(run, range(parts)))
        elif blocks:
            run(0)
        if tail is not None:
            fn(tail_out.ctypes.data + m0 * wrows * 4, wrows, buf.ctypes.data, kp,
               tail.ctypes.data, kp, 1, n)
    if tail is not None:
        out[:, full:] = tail_out[:, :N - full]
    return out[:M]
