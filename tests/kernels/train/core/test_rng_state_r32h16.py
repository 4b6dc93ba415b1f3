"""Round 32 (h16): ``skiff.get_rng_state()`` / ``skiff.random.get_rng_state()`` return a
uint8 tensor, as torch 2.13's (they returned a dict), which ``set_rng_state`` takes back with
the same draws after (exact), as torch's round trip; ``fork_rng`` still restores; torch's
own byte state is still refused with a TypeError."""

import numpy as np
import pytest

import skiff

torch = pytest.importorskip("torch")


def test_rng_state_is_a_uint8_tensor_as_torch():
    ours, theirs = skiff.get_rng_state(), torch.get_rng_state()
    assert isinstance(ours, skiff.Tensor) and isinstance(theirs, torch.Tensor)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1] == "uint8"
    assert ours.ndim == theirs.ndim == 1
    assert str(skiff.random.get_rng_state().dtype).split(".")[-1] == "uint8"


@pytest.mark.parametrize("draws", [1, 7])
def test_round_trip_is_exact_as_torch(draws):
    skiff.manual_seed(11)
    torch.manual_seed(11)
    skiff.rand(draws)  # move the generator on (a half-used 32-bit word too: rand's float32)
    torch.rand(draws)
    ours, theirs = skiff.get_rng_state(), torch.get_rng_state()
    a, ta = skiff.randn(5).numpy(), torch.randn(5).numpy()
    skiff.randint(0, 9, (3,))
    skiff.set_rng_state(ours)
    torch.set_rng_state(theirs)
    np.testing.assert_array_equal(skiff.randn(5).numpy(), a)
    np.testing.assert_array_equal(torch.randn(5).numpy(), ta)
    skiff.random.set_rng_state(skiff.random.get_rng_state())  # the same through skiff.random
    with skiff.random.fork_rng():
        skiff.randn(3)
    after = skiff.randn(2).numpy()
    skiff.set_rng_state(ours)
    skiff.randn(5)
    np.testing.assert_array_equal(skiff.randn(2).numpy(), after)


def test_foreign_or_damaged_states_are_refused():
    with pytest.raises(TypeError, match="get_rng_state"):
        skiff.set_rng_state(torch.get_rng_state())
    with pytest.raises(TypeError, match="get_rng_state"):
        skiff.set_rng_state(skiff.tensor(torch.get_rng_state().numpy()))
    with pytest.raises(TypeError, match="uint8"):
        skiff.set_rng_state(skiff.zeros(4))
    good = skiff.get_rng_state().numpy()
    with pytest.raises(ValueError, match="damaged"):
        skiff.set_rng_state(skiff.tensor(good[:-3]))
