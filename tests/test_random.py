"""instancedp.random: secure by default, simulation only when asked, unbiased helpers.

Statistical checks use fixed seeds and significance 1e-3 (the false-failure
rate for a fresh seed); expected laws are written from their definitions.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special, stats

from instancedp.mechanisms.base import Mechanism
from instancedp.privacy import PureDP
from instancedp.random import (
    RandomSource,
    SecureRandom,
    SimulationRandom,
    as_generator,
    resolve,
    sample_index_from_log_weights,
    simulation,
)

ALPHA = 1e-3


def test_resolve_defaults_to_the_os_csprng():
    src = resolve(None)
    assert isinstance(src, SecureRandom) and src.secure
    assert len(src.random_bytes(32)) == 32
    assert src.random_bytes(16) != src.random_bytes(16)  # 2^-128 chance of a false failure


def test_resolve_accepts_sources_and_refuses_seeded_generators():
    sim = simulation(3)
    assert resolve(sim) is sim and not sim.secure
    for bad in (np.random.default_rng(0), 42, "seed"):
        with pytest.raises(TypeError, match="simulation"):
            resolve(bad)


def test_simulation_is_reproducible():
    a, b = simulation(7), simulation(7)
    assert a.random_bytes(24) == b.random_bytes(24)
    assert np.array_equal(a.uniform(5), b.uniform(5))
    assert simulation(7).random_bytes(8) != simulation(8).random_bytes(8)
    g = np.random.default_rng(1)
    assert SimulationRandom(g).generator is g


def test_uniform_is_open_and_on_the_odd_grid():
    u = simulation(1).uniform(20_000)
    assert u.shape == (20_000,)
    assert np.all((u > 0) & (u < 1))
    k = u * 2.0**53  # odd integers
    assert np.array_equal(k, np.round(k)) and np.all(k % 2 == 1)
    assert stats.kstest(u, "uniform").pvalue > ALPHA
    assert isinstance(simulation(1).uniform(), float)
    assert simulation(1).uniform((2, 3)).shape == (2, 3)


def test_integers_is_unbiased():
    src = simulation(2)
    for high in (1, 6, 300):
        draws = np.array([src.integers(high) for _ in range(60 * high if high > 1 else 10)])
        assert draws.min() >= 0 and draws.max() < high
        if high > 1:
            counts = np.bincount(draws, minlength=high)
            assert stats.chisquare(counts).pvalue > ALPHA
    with pytest.raises(ValueError, match="high"):
        src.integers(0)


def test_sample_index_matches_softmax():
    lw = np.array([0.0, 1.0, -2.0, 0.5, -np.inf])
    p = np.exp(lw - special.logsumexp(lw))
    src = simulation(4)
    n = 20_000
    counts = np.bincount([sample_index_from_log_weights(lw, src) for _ in range(n)], minlength=5)
    assert counts[4] == 0
    assert stats.chisquare(counts[:4], p[:4] * n).pvalue > ALPHA


def test_sample_index_is_stable_for_huge_log_weights():
    lw = np.array([1e6, 1e6 - math.log(3.0), -1e6])  # P = 3/4, 1/4, ~0
    src = simulation(5)
    counts = np.bincount([sample_index_from_log_weights(lw, src) for _ in range(8000)], minlength=3)
    assert counts[2] == 0
    assert stats.binomtest(int(counts[0]), 8000, 0.75).pvalue > ALPHA


class _AlmostOne(RandomSource):
    """A source whose uniforms are the largest value below 1 (the rounding edge case)."""

    def random_bytes(self, n: int) -> bytes:
        return b"\xff" * n

    @property
    def generator(self) -> np.random.Generator:  # pragma: no cover
        raise NotImplementedError


def test_uniform_extremes_stay_inside():
    assert _AlmostOne().uniform() == 1.0 - 2.0**-53

    class Zero(_AlmostOne):
        def random_bytes(self, n: int) -> bytes:
            return bytes(n)

    assert Zero().uniform() == 2.0**-53


class _OnesThenZeros(RandomSource):
    """Bits 1 for the first 32 bytes, then 0: the uniform 1 − 2^−256, just below 1.

    (An endless run of 1 bits is the real number 1, a probability-zero input on
    which the exact sampler, which reads bits until the index is certain, would
    never stop.)"""

    def __init__(self) -> None:
        self.left = 32

    def random_bytes(self, n: int) -> bytes:
        ones = min(n, self.left)
        self.left -= ones
        return b"\xff" * ones + bytes(n - ones)

    @property
    def generator(self) -> np.random.Generator:  # pragma: no cover
        raise NotImplementedError


def test_sample_index_never_returns_a_trailing_zero_weight():
    lw = np.array([0.0, -1.0, 0.3, -np.inf, -np.inf])
    assert sample_index_from_log_weights(lw, _OnesThenZeros()) == 2


@pytest.mark.parametrize(
    "bad", [np.array([]), np.array([-np.inf, -np.inf]), np.zeros((2, 2))], ids=str
)
def test_sample_index_rejects_bad_weights(bad):
    with pytest.raises(ValueError, match="log_weights"):
        sample_index_from_log_weights(bad, simulation(0))


def test_as_generator_accepts_the_simulation_inputs():
    g = np.random.default_rng(0)
    assert as_generator(g) is g
    sim = simulation(1)
    assert as_generator(sim) is sim.generator
    assert isinstance(as_generator(None), np.random.Generator)
    assert as_generator(5).integers(1 << 30) == np.random.default_rng(5).integers(1 << 30)
    assert isinstance(SecureRandom().generator, np.random.Generator)


class _Constant(Mechanism):
    name = "constant"

    @property
    def guarantee(self):
        return PureDP(1.0)

    def parameters(self):
        return {}

    def release(self, data, rng=None):
        source = resolve(rng)
        return self._record(0.0, source)


def test_releases_say_whether_their_randomness_was_secure():
    assert _Constant().release(None).secure is True
    rel = _Constant().release(None, rng=simulation(1))
    assert rel.secure is False and rel.to_dict()["secure"] is False
