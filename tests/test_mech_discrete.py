"""Exact discrete Laplace sampler (CKS 2020 Alg. 2) against its pmf."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from instancedp.noise.discrete import DiscreteLaplace, _exact_one, bernoulli_exp
from instancedp.random import simulation


def pmf(z, t):
    return math.tanh(1 / (2 * t)) * math.exp(-abs(z) / t)


@pytest.mark.parametrize("scale", [0.4, 1.7, 5.0])
def test_exact_sampler_chi_square(scale):
    """The integer algorithm, driven by a seeded byte source, against the pmf.
    Fixed seed; the chi-square test at level 1e-4 has a 1e-4 false-failure rate."""
    src = simulation(11)
    draws = np.array([_exact_one(Fraction(scale), src) for _ in range(6000)])
    edge = int(3 * scale) + 1
    cells = list(range(-edge, edge + 1))
    obs = [(draws < -edge).sum()] + [(draws == c).sum() for c in cells] + [(draws > edge).sum()]
    tail = sum(pmf(z, scale) for z in range(edge + 1, edge + 2000))
    exp_p = [tail] + [pmf(c, scale) for c in cells] + [tail]
    expected = np.array(exp_p) * draws.size
    assert stats.chisquare(obs, expected).pvalue > 1e-4


def test_bernoulli_exp_exact_frequency():
    src = simulation(5)
    for gamma in (Fraction(1, 3), Fraction(5, 2)):
        k = sum(bernoulli_exp(gamma, src) for _ in range(20000))
        p = math.exp(-float(gamma))
        # 4.5 standard deviations: false-failure rate < 1e-5
        assert abs(k / 20000 - p) < 4.5 * math.sqrt(p * (1 - p) / 20000)


def test_distribution_functions():
    d = DiscreteLaplace(2.5)
    z = np.arange(-400, 401)
    assert d.pmf(z).sum() == pytest.approx(1.0, abs=1e-12)
    for k in (-3, 0, 2, 7):
        assert float(d.sf(k)) == pytest.approx(d.pmf(z[z > k]).sum(), rel=1e-12)
    assert d.tail(4) == pytest.approx(d.pmf(z[np.abs(z) > 4]).sum(), rel=1e-12)
    assert d.var() == pytest.approx((z**2 * d.pmf(z)).sum(), rel=1e-10)
    fast = d.sample(200000, rng=simulation(2))
    # var of the sample variance ≈ (μ4 − σ⁴)/n; 5 sd tolerance
    mu4 = (z**4 * d.pmf(z)).sum()
    assert abs(fast.var() - d.var()) < 5 * math.sqrt((mu4 - d.var() ** 2) / fast.size)


def test_bad_scale():
    with pytest.raises(ValueError, match="scale"):
        DiscreteLaplace(0)
