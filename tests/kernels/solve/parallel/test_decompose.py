"""The split of a grid over ranks, the launch plan, and the one-rank distributed solver
(no MPI: :class:`SelfComm`) against the serial solver."""

from __future__ import annotations

import math

import numpy as np
import pytest

from skiff.kernels.solve.estimate import needed_bytes
from skiff.kernels.solve.parallel import Decomposition, DistributedSolver, check_distributed
from skiff.kernels.solve.parallel import plan as split_plan
from skiff.kernels.solve.parallel.decompose import split_axis
from skiff.kernels.solve.problems import diffusion, poisson
from skiff.kernels.solve.solver import Solver


@pytest.mark.parametrize("shape3, size", [((1, 64, 64), 2), ((1, 64, 64), 4), ((1, 50, 38), 3),
                                          ((32, 24, 16), 8), ((1, 7, 5), 6), ((9, 9, 9), 5)])
def test_blocks_cover_the_grid_once_and_neighbours_agree(shape3, size):
    dec = Decomposition(shape3, size)
    assert math.prod(dec.dims) == size
    cover = np.zeros(shape3, dtype=int)
    for r in range(size):
        blk = dec.block(r)
        cover[tuple(slice(lo, hi) for lo, hi in blk)] += 1
        for ax, (_below, above) in enumerate(dec.neighbours(r)):
            if above is not None:   # my upper face is my neighbour's lower face
                assert dec.block(above)[ax][0] == blk[ax][1]
                assert dec.neighbours(above)[ax][0] == r
    assert (cover == 1).all()
    assert [s["cells"] for s in dec.subdomains()] == [
        math.prod(hi - lo for lo, hi in dec.block(r)) for r in range(size)]


def test_the_process_grid_has_the_least_halo_and_never_splits_a_2d_grid_in_depth():
    assert Decomposition((1, 64, 64), 4).dims == (1, 2, 2)
    assert Decomposition((1, 256, 16), 4).dims == (1, 4, 1)     # thin faces, not squares
    assert Decomposition((64, 64, 64), 8).dims == (2, 2, 2)
    assert Decomposition((1, 64, 64), 2).dims == (1, 2, 1)      # the slow axis first


def test_block_boundaries_halve_with_the_levels():
    assert split_axis(464, 2) == [0, 232, 464]
    assert split_axis(1024, 3) == [0, 344, 680, 1024]   # multiples of 8, within 1/32
    dec = Decomposition((1, 128, 128), 4)
    coarse = dec.coarsen((1, 2, 2))
    assert coarse.block(3) == ((0, 1), (32, 64), (32, 64))
    assert split_axis(50, 2) == [0, 24, 50]          # one cell off the even share: halves
    assert Decomposition((1, 50, 38), 2).coarsen((1, 2, 2)).block(1) == ((0, 1), (12, 25),
                                                                          (0, 19))
    odd = Decomposition((1, 50, 38), 2, bounds=[[0, 1], [0, 25, 50], [0, 38]])
    assert odd.coarsen((1, 2, 2)) is None            # 25 does not halve


def test_the_launch_plan_of_1e8_cells_on_8_gpus_uses_the_memory_model():
    got = split_plan((464, 464, 464), 8, method="cg", precond="auto")
    assert got["dims"] == [2, 2, 2] and len(got["subdomains"]) == 8
    assert {tuple(map(tuple, s["index"])) for s in got["subdomains"]} >= {
        ((0, 232), (0, 232), (0, 232)), ((232, 464), (232, 464), (232, 464))}
    block = needed_bytes((234, 234, 234), method="cg", precond="auto")   # one ghost layer
    assert block <= got["bytes_per_rank"] < 1.05 * block
    assert got["halo_bytes_per_exchange"] == 8 * 3 * 234 * 234
    assert "8 ranks as 2x2x2 blocks of 232x232x232 cells" in got["text"]
    assert got["host_bytes_per_rank"] == 8 * 464**3 * 3          # the whole problem
    block = split_plan((464, 464, 464), 8, whole=False)          # built per block
    assert block["host_bytes_per_rank"] == 8 * 234**3 * 2 and "build its block" in block["text"]


@pytest.mark.parametrize("kw, needle", [
    ({"method": "fmg"}, "method 'fmg' does not run distributed yet: with --np use cg or "
                        "pipecg or bicgstab or gmres or mg"),
    ({"precond": "amg"}, "precond 'amg' does not run distributed yet"),
    ({"smoother": "chebyshev"}, "smoother 'chebyshev' does not run distributed yet"),
    ({"convection": True}, "convection does not run distributed yet"),
    ({"problem": "cylinder"}, "runs on one rank"),
])
def test_what_does_not_run_distributed_is_named(kw, needle):
    with pytest.raises(ValueError, match=needle):
        check_distributed(**kw)


@pytest.mark.parametrize("problem", [poisson((32, 32)), poisson((16, 16, 16)),
                                     diffusion((32, 32), lambda x, y: 1 + 100 * (x > 0.5))],
                         ids=["poisson-2d", "poisson-3d", "diffusion"])
@pytest.mark.parametrize("method", ["cg", "mg"])
def test_one_rank_equals_the_serial_solver(problem, method):
    dist = DistributedSolver(problem, method=method).solve(rtol=1e-9)
    serial = Solver(problem, method=method).solve(rtol=1e-9)
    assert dist.iterations == serial.iterations
    np.testing.assert_allclose(dist.field, serial.field, rtol=0, atol=1e-12)
    assert dist.info["ranks"] == 1 and dist.info["halo_bytes"] == 0
    assert dist.info["subdomains"][0]["index"] == [[0, n] for n in problem.shape]


@pytest.mark.parametrize("shape, p0", [((1, 9, 12), 0), ((6, 7, 8), 1)])
@pytest.mark.parametrize("par, colour", [(0, 0), (1, 0), (0, 1)])
def test_the_block_smoother_twins_equal_their_reference(shape, p0, par, colour):
    from skiff.kernels.backend.testing import check_op
    from skiff.kernels.solve.parallel.operator import block_colour_const, block_colour_var

    rng = np.random.default_rng(3)
    padded = (shape[0] + 2 * p0, shape[1] + 2, shape[2] + 2)
    u, f = rng.standard_normal(padded), rng.standard_normal(shape)
    invdiag = 1.0 / (4.0 + rng.random(shape))
    faces = [rng.random(tuple(n + (a == b) for b, n in enumerate(padded))) for a in range(3)]
    check_op(block_colour_const, u, f, np.array([0.3, 1.0, 2.0]), invdiag, p0, par, colour,
             rtol=1e-12, atol=1e-12)
    check_op(block_colour_var, u, f, *faces, invdiag, p0, par, colour, rtol=1e-12, atol=1e-12)


@pytest.mark.gpu
@pytest.mark.parametrize("problem", [poisson((64, 64)),
                                     diffusion((32, 32), lambda x, y: 1 + 100 * (x > 0.5))],
                         ids=["poisson", "diffusion"])
def test_one_rank_on_the_gpu_equals_the_cpu(problem):
    cpu = DistributedSolver(problem, device="cpu").solve(rtol=1e-9)
    gpu = DistributedSolver(problem, device="cuda:0").solve(rtol=1e-9)
    assert gpu.iterations == cpu.iterations and gpu.device.startswith("cuda")
    np.testing.assert_allclose(gpu.field, cpu.field, rtol=0, atol=1e-10)


@pytest.mark.parametrize("shape", [(24, 16), (12, 8, 10)])
@pytest.mark.parametrize("bc", ["dirichlet", "neumann"])
def test_poisson_built_per_block_is_the_built_in_poisson(shape, bc):
    """The per-block Poisson (what each rank of a distributed poisson job builds) equals the
    whole problem: stencil, ghost signs, right-hand side and exact solution on every block."""
    from skiff.kernels.solve.entry import build_problem
    from skiff.kernels.solve.parallel.problems import PoissonBlocks

    whole = build_problem({"problem": "poisson", "grid": list(shape), "bc": bc})
    blocks = PoissonBlocks(shape, bc=bc)
    assert blocks.stencil == whole.stencil and blocks.singular == whole.singular
    np.testing.assert_array_equal(blocks.signs, whole.signs)
    dec = Decomposition(whole.shape3, 4)
    for r in range(4):
        blk = dec.block(r)
        sl = tuple(slice(lo, hi) for lo, hi in blk)
        np.testing.assert_array_equal(blocks.rhs_block(blk), whole.rhs[sl])
        if bc == "dirichlet":
            np.testing.assert_array_equal(blocks.exact_block(blk),
                                          whole.exact.reshape(whole.shape3)[sl])
    sol = DistributedSolver(blocks).solve(rtol=1e-9)
    ref = Solver(whole).solve(rtol=1e-9)
    assert sol.iterations == ref.iterations
    np.testing.assert_allclose(sol.field, ref.field, rtol=0, atol=1e-12)
    assert (sol.error is None) == (ref.error is None)
    if ref.error is not None:
        assert sol.error == pytest.approx(ref.error, rel=1e-9)
