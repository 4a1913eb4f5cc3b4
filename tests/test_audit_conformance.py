"""The auditors check the code that releases, and catch three ways to fool them.

1. A mechanism that samples Lap(0.25) while declaring Lap(1): the exact check
   of the declared law passes; the sampling check of ``check_mechanism``
   (``mechanism.sample`` against ``output_distribution``) fails it.
2. Textbook float Laplace (Mironov 2012): ``x + Lap`` in doubles makes some
   low-bit patterns impossible on one input (probability ≈ 0.075 versus 0 on
   x = 0 versus x′ = 1); the empirical audit's low-bit events catch it, and the
   release path's exact noise is not flagged.
3. A rare exact leak (the true value with probability 2e−5): an atom that the
   continuous law lacks; caught by the sampling check (repeated values) and by
   the empirical audit's atom events.

Fixed seeds throughout; each statistical assertion states the probability that
a correct implementation fails it at random seeds.
"""

from __future__ import annotations

import numpy as np

from instancedp.audit import check_mechanism, empirical_audit
from instancedp.audit.catalogue import exact_simulation, mechanism_sampler
from instancedp.audit.conformance import check_sampling
from instancedp.mechanisms import LaplaceMechanism
from instancedp.mechanisms.base import add_noise
from instancedp.queries import Count

PAIRS = [([1.0], [1.0, 1.0]), ([1.0, 1.0], [1.0, 1.0, 1.0])]


class QuarterScaleLaplace(LaplaceMechanism):
    """Declares Lap(GS/ε) (inherited output_distribution), samples a quarter of it."""

    def _draw(self, state, source, size):
        from instancedp.noise import Laplace

        return add_noise(state, self.scale / 4, Laplace(1.0), source, size)


class RareExactLeak(LaplaceMechanism):
    """Lap(GS/ε) around the count, except the exact count with probability ``p``."""

    p = 2e-5

    def _draw(self, state, source, size):
        out = super()._draw(state, source, size)
        if size is None:
            return state if source.uniform() < self.p else out
        leak = np.asarray(source.uniform(size)) < self.p
        return np.where(leak, state, out)


def test_declared_law_alone_is_fooled_but_sampling_check_is_not():
    mech = QuarterScaleLaplace(Count(), 1.0)
    # The declared law is that of a correct Laplace mechanism: it passes alone.
    assert check_mechanism(mech, PAIRS, samples=0).passed is True
    res = check_mechanism(mech, PAIRS, samples=2000, seed=1)
    assert res.passed is False
    assert any(not s["passed"] for s in res.details["sampling"])
    # The honest mechanism passes both (false failure ≤ 3e−6 at random seeds).
    ok = check_mechanism(LaplaceMechanism(Count(), 1.0), PAIRS, samples=2000, seed=1)
    assert ok.passed is True and all(s["passed"] for s in ok.details["sampling"])


def test_float_laplace_low_bits_are_caught():
    def textbook(x):
        return lambda m, rng: x + rng.laplace(0.0, 1.0, m)

    # Distribution-level events alone miss it ...
    blind = empirical_audit(
        textbook(0.0), textbook(1.0), 1.0, samples=20_000, seed=3, representation=False
    )
    assert not blind.violated
    # ... the low-bit events find an event of probability ~0.075 vs 0.
    r = empirical_audit(textbook(0.0), textbook(1.0), 1.0, samples=20_000, seed=3)
    assert r.violated and "low 4 bits" in r.event
    assert r.details["count_x_prime"] <= 3 < 200 <= r.details["count_x"] or (
        r.details["count_x"] <= 3 < 200 <= r.details["count_x_prime"]
    )


def test_release_rounding_is_not_flagged_by_low_bit_events():
    # The release path with exact noise, x = count 1 vs 2 (false alarm ≤ 1e−3).
    mech = LaplaceMechanism(Count(), 1.0)
    sampler = mechanism_sampler(mech, exact=True)
    r = empirical_audit(sampler([1.0]), sampler([1.0, 1.0]), 1.0, samples=6000, seed=4)
    assert not r.violated, r


def test_rare_exact_leak_is_caught_by_the_sampling_check():
    leaky = RareExactLeak(Count(), 1.0)
    bad = check_sampling(leaky, [1.0, 1.0], samples=1_000_000, seed=5)
    assert not bad.passed and "undeclared atom" in bad.test
    # Correct mechanism, same draws: no repeats (bound on a false failure: the
    # reported repeat_bound, about 1e−4, plus the KS level 1e−6).
    good = check_sampling(LaplaceMechanism(Count(), 1.0), [1.0, 1.0], samples=1_000_000, seed=5)
    assert good.passed, good
    assert good.details["undeclared_repeats"] == 0 and good.details["repeat_bound"] < 1e-3


def test_rare_exact_leak_is_caught_by_atom_events():
    # Black box, the atom events need about 30/p samples per input: at p = 2e−5
    # that is 10⁷ (measured: ε lower bound 2.09 > 1, 36 s), too slow for the
    # suite; the sampling check above catches p = 2e−5 with 10⁶ draws.  Here
    # p = 2e−4 with 10⁶ (the fast float path, so low-bit events are off).
    leaky = RareExactLeak(Count(), 1.0)
    leaky.p = 2e-4
    s = mechanism_sampler(leaky)
    blind = empirical_audit(
        s([1.0]), s([1.0, 1.0]), 1.0, samples=1_000_000, seed=6, low_bits=False, atoms=False
    )
    assert not blind.violated
    r = empirical_audit(s([1.0]), s([1.0, 1.0]), 1.0, samples=1_000_000, seed=6, low_bits=False)
    assert r.violated and "repeated value" in r.event


def test_exact_simulation_takes_the_exact_path():
    mech = LaplaceMechanism(Count(), 1.0)
    rel = mech.release([1.0], rng=exact_simulation(7))
    assert rel.secure is False  # seeded: never a secure release
    a = mech.sample([1.0], 5, exact_simulation(8))
    b = mech.sample([1.0], 5, exact_simulation(8))
    np.testing.assert_array_equal(a, b)  # reproducible
