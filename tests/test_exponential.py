"""Exponential mechanism: exact law, pairwise ε on tiny universes, no underflow."""

from __future__ import annotations

import itertools
import math

import mpmath as mp
import numpy as np
import pytest

from instancedp.mechanisms.exponential import ExponentialMechanism
from instancedp.random import simulation

CANDIDATES = list(range(7))


def _score(data, candidates):
    # Utility of r: −|sum(data) − r|; values in {0, 1, 2} so substitution moves it by ≤ 2.
    return -np.abs(np.sum(data) - np.asarray(candidates, dtype=float))


def test_law_matches_high_precision_softmax():
    mech = ExponentialMechanism(CANDIDATES, _score, 2.0, 0.7)
    data = [2, 0, 1]
    mp.mp.dps = 40
    w = [mp.exp(mp.mpf(0.7) * (-abs(3 - r)) / (2 * 2)) for r in CANDIDATES]
    expected = [float(x / mp.fsum(w)) for x in w]
    np.testing.assert_allclose(mech.output_probabilities(data), expected, rtol=1e-13)


@pytest.mark.parametrize("eps", [0.1, 1.0, 5.0])
@pytest.mark.parametrize("monotone", [False, True])
def test_pairwise_epsilon_on_tiny_universe(eps, monotone):
    if monotone:
        # #{i : D_i >= r}: one substitution moves every score the same way, by <= 1.
        def score(data, candidates):
            return np.array([float(np.sum(np.asarray(data) >= r)) for r in candidates])

        sens = 1.0
    else:
        score, sens = _score, 2.0
    mech = ExponentialMechanism(CANDIDATES, score, sens, eps, monotone=monotone)
    worst = 0.0
    for data in itertools.product([0, 1, 2], repeat=3):
        lp = mech.log_probabilities(list(data))
        for i in range(3):
            for v in (0, 1, 2):
                nb = list(data)
                nb[i] = v
                worst = max(worst, float(np.max(np.abs(lp - mech.log_probabilities(nb)))))
    assert worst <= eps * (1 + 1e-12)
    assert worst >= 0.25 * eps  # the check is not vacuous: the bound is nearly reached


def test_million_candidates_no_underflow():
    n = 1_000_000
    cands = np.arange(n)
    mech = ExponentialMechanism(cands, lambda d, c: -np.asarray(c, dtype=float), 1.0, 1.0)
    p = mech.output_probabilities(None)
    assert np.all(np.isfinite(p)) and math.isclose(p.sum(), 1.0, rel_tol=1e-9)
    # Geometric law: p_0 = (1 − e^{−1/2}) / (1 − e^{−n/2}).
    assert p[0] == pytest.approx(-math.expm1(-0.5), rel=1e-12)
    assert p[10] == pytest.approx(-math.expm1(-0.5) * math.exp(-5), rel=1e-10)
    assert mech.release(None, rng=simulation(1)).value < 100


def test_large_epsilon_and_scores_no_overflow():
    # ε = 50 with scores ~ 1e3: naive exp(ε·u/2) overflows; log space does not.
    cands = np.arange(5)
    mech = ExponentialMechanism(cands, lambda d, c: 1000.0 - np.asarray(c, dtype=float), 1.0, 50)
    p = mech.output_probabilities(None)
    assert np.all(np.isfinite(p))
    ratio = math.exp(-25)
    assert p[0] == pytest.approx((1 - ratio) / (1 - ratio**5), rel=1e-12)
    assert p[1] / p[0] == pytest.approx(ratio, rel=1e-9)
    assert mech.release(None, rng=simulation(2)).value == 0


def test_release_record_and_secure_default():
    mech = ExponentialMechanism(["a", "b"], lambda d, c, x=None: [0.0, 1.0], 1.0, 1.0)
    rel = mech.release(None)
    assert rel.secure and rel.value in ("a", "b")
    assert set(rel.parameters) == {"epsilon", "sensitivity", "n_candidates", "monotone"}
    per = ExponentialMechanism(
        ["a", "b"], lambda d, c: 1.0 if c == "b" else 0.0, 1.0, 1.0, vectorized=False
    )
    np.testing.assert_allclose(per.output_probabilities(None), mech.output_probabilities(None))
    # Seeded frequency of "b": p = 1/(1 + e^{−1/2}) ≈ 0.6225; n = 5 000 gives
    # sd 0.0069, and a 0.035 band is ~5 sd (false-failure rate < 1e-6).
    rng = simulation(3)
    hits = sum(mech.release(None, rng=rng).value == "b" for _ in range(5_000)) / 5_000
    assert hits == pytest.approx(1 / (1 + math.exp(-0.5)), abs=0.035)


@pytest.mark.parametrize(
    "factory,match",
    [
        (lambda: ExponentialMechanism([], _score, 1.0, 1.0), "candidates"),
        (lambda: ExponentialMechanism(5, _score, 1.0, 1.0), "candidates"),
        (lambda: ExponentialMechanism([1], None, 1.0, 1.0), "score"),
        (lambda: ExponentialMechanism([1], _score, 0.0, 1.0), "sensitivity"),
        (lambda: ExponentialMechanism([1], _score, 1.0, -1.0), "epsilon"),
        (
            lambda: ExponentialMechanism([1, 2], lambda d, c: [1.0], 1.0, 1.0).release(None),
            "one value per candidate",
        ),
        (
            lambda: ExponentialMechanism([1, 2], lambda d, c: [1.0, np.nan], 1.0, 1.0).release(
                None
            ),
            "finite",
        ),
    ],
)
def test_bad_input(factory, match):
    with pytest.raises(ValueError, match=match):
        factory()
