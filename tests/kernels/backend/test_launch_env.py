"""One reader of the launchers' variables: MPICH Hydra/PMI, PMIx, Open MPI and Slurm."""

from __future__ import annotations

import pytest

from skiff.kernels.backend.launch_env import LaunchEnv, launch_env, launched_by_mpi
from skiff.kernels.backend.units import byte_size


@pytest.mark.parametrize("env,want", [
    ({}, LaunchEnv(0, 1, 0, 1, "none")),
    ({"PMI_RANK": "1", "PMI_SIZE": "4", "MPI_LOCALRANKID": "1", "MPI_LOCALNRANKS": "2"},
     LaunchEnv(1, 4, 1, 2, "pmi")),
    ({"OMPI_COMM_WORLD_RANK": "3", "OMPI_COMM_WORLD_SIZE": "8",
      "OMPI_COMM_WORLD_LOCAL_RANK": "1", "OMPI_COMM_WORLD_LOCAL_SIZE": "4"},
     LaunchEnv(3, 8, 1, 4, "ompi")),
    ({"PMIX_RANK": "2", "PMIX_SIZE": "3", "PMIX_LOCAL_RANK": "0", "PMIX_LOCAL_SIZE": "1"},
     LaunchEnv(2, 3, 0, 1, "pmix")),
    ({"SLURM_PROCID": "5", "SLURM_NTASKS": "6", "SLURM_LOCALID": "2",
      "SLURM_NTASKS_PER_NODE": "3(x2)"}, LaunchEnv(5, 6, 2, 3, "slurm")),
])
def test_launch_env_reads_each_launcher(env, want):
    assert launch_env(env) == want


def test_pmi_wins_over_slurm_when_both_are_set():
    # srun --mpi=pmi2 sets both families; PMI's numbering is the MPI world's
    got = launch_env({"PMI_RANK": "1", "PMI_SIZE": "2", "SLURM_PROCID": "7", "SLURM_NTASKS": "9"})
    assert (got.rank, got.size, got.launcher) == (1, 2, "pmi")


def test_srun_alone_is_no_mpi_world():
    assert not launched_by_mpi({"SLURM_PROCID": "0", "SLURM_NTASKS": "2"})
    assert launched_by_mpi({"PMI_RANK": "0"})


@pytest.mark.parametrize("text,want", [("80GB", 80 * 10**9), ("16GiB", 16 * 2**30),
                                       ("512mb", 512 * 10**6), ("1e9", 10**9), (4096, 4096)])
def test_byte_size(text, want):
    assert byte_size(text) == want


@pytest.mark.parametrize("text", ["eighty", "80XB", "", -1])
def test_byte_size_refuses_with_the_value(text):
    with pytest.raises(ValueError, match=repr(text)):
        byte_size(text)


def test_a_world_smaller_than_the_launch_stops_with_the_cause():
    from skiff.kernels.backend.launch_env import LaunchMismatch, check_launch

    slurm = {"SLURM_PROCID": "1", "SLURM_NTASKS": "2"}
    with pytest.raises(LaunchMismatch, match=r"rank 1 of 2 by Slurm \(SLURM_PROCID/SLURM_NTASKS"
                                             r"\), but MPI sees a world of 1: .*srun --mpi=pmi2"):
        check_launch(1, slurm)
    assert check_launch(2, slurm).size == 2
    with pytest.raises(LaunchMismatch, match="world of 4: the launcher and the MPI library"):
        check_launch(4, {"PMI_RANK": "0", "PMI_SIZE": "2"})
    assert check_launch(None, {}).size == 1  # one process: MPI is not even asked
