"""ExponentialQuantile: exact law against an independent rank-counting density,
pure ε-DP on every neighbour pair of a small domain, sampling, validation."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from test_mech_support import max_log_ratio

from instancedp.mechanisms.quantile import ExponentialQuantile, exponential_quantile_sample
from instancedp.privacy import PureDP
from instancedp.random import simulation


def reference_density(data, q, lo, hi, eps, y):
    """exp(−ε|#{x_i < y} − qn|/2), normalised numerically (independent of the code)."""
    x = np.clip(np.asarray(data, float), lo, hi)
    n = x.size
    grid = np.linspace(lo, hi, 200001)
    ranks = (x[None, :] < grid[:, None]).sum(axis=1)
    dens = np.exp(-eps * np.abs(ranks - q * n) / 2)
    z = np.trapezoid(dens, grid)
    r = (x[None, :] < np.asarray(y)[:, None]).sum(axis=1)
    return np.exp(-eps * np.abs(r - q * n) / 2) / z


@pytest.mark.parametrize("q", [0.5, 0.25, 0.9])
def test_density_matches_reference(q):
    data = [1.0, 2.5, 2.5, 4.0, 7.0, -3.0]
    mech = ExponentialQuantile(q, -2.0, 6.0, 1.3)
    law = mech.output_distribution(data)
    y = np.array([-1.9, -0.5, 1.2, 2.0, 3.0, 4.5, 5.9])
    assert law.pdf(y) == pytest.approx(reference_density(data, q, -2.0, 6.0, 1.3, y), rel=1e-4)
    assert float(law.cdf(6.0)) == pytest.approx(1.0)
    assert float(law.pdf(np.array([6.5]))[0]) == 0.0
    # cdf is the integral of the pdf
    g = np.linspace(-2, 6, 100001)
    assert float(law.cdf(3.3)) == pytest.approx(
        np.trapezoid(law.pdf(g[g <= 3.3]), g[g <= 3.3]), abs=1e-4
    )


@pytest.mark.parametrize("q", [0.5, 0.3])
def test_pure_dp_on_all_pairs(q):
    eps, domain, n = 0.8, (0.0, 1.0, 2.0, 3.0), 4
    mech = ExponentialQuantile(q, -1.0, 4.0, eps)
    assert mech.guarantee == PureDP(eps)
    datasets = list(itertools.combinations_with_replacement(domain, n))
    laws = {x: mech.output_distribution(x) for x in datasets}
    worst = 0.0
    for x in datasets:
        for i, v in itertools.product(range(n), domain):
            y = tuple(sorted(x[:i] + (v,) + x[i + 1 :]))
            worst = max(worst, max_log_ratio(laws[x], laws[y], points=2001))
    assert worst <= eps + 1e-9
    assert worst >= 0.5 * eps - 1e-9  # a one-rank move costs exactly ε/2 somewhere


def test_samples_follow_law():
    data = np.random.default_rng(0).normal(0, 5, 101)
    mech = ExponentialQuantile(0.5, -100, 100, 0.5)
    law = mech.output_distribution(data)
    fast = np.sort(exponential_quantile_sample(data, 0.5, -100, 100, 0.5, 20000, simulation(1)))
    rel = np.sort([mech.release(data, rng=simulation(s)).value for s in range(2000)])
    # KS critical values at 1e-3 false-failure rate: 1.95/sqrt(m)
    for draws in (fast, rel):
        ks = np.max(np.abs(law.cdf(draws) - np.arange(1, draws.size + 1) / draws.size))
        assert ks < 1.95 / math.sqrt(draws.size)


def test_record_is_public():
    mech = ExponentialQuantile(0.5, 0, 10, 1.0)
    a = mech.release([1, 2, 3], rng=simulation(0)).to_dict()
    b = mech.release([7, 8, 9, 9], rng=simulation(0)).to_dict()
    a.pop("value"), b.pop("value")
    assert a == b


@pytest.mark.parametrize(
    ("args", "msg"),
    [((1.5, 0, 1, 1.0), "q must be"), ((0.5, 1, 0, 1.0), "bounds"), ((0.5, 0, 1, 0), "epsilon")],
)
def test_bad_input(args, msg):
    with pytest.raises(ValueError, match=msg):
        ExponentialQuantile(*args)


def test_secure_release_uses_the_exactly_rounded_uniform(monkeypatch):
    """The secure path draws the point inside the chosen interval with
    exact.uniform (Mironov-safe), never with lo + u·(hi − lo) in floats."""
    import instancedp.noise.exact as exact

    calls = []
    real = exact.uniform

    def spy(lo, hi, rng=None):
        calls.append((lo, hi))
        return real(lo, hi, rng)

    monkeypatch.setattr(exact, "uniform", spy)
    mech = ExponentialQuantile(0.5, 0.0, 10.0, epsilon=1.0)
    rel = mech.release([1.0, 2.0, 3.0, 4.0])
    assert rel.secure and len(calls) == 1
    lo, hi = calls[0]
    assert lo <= rel.value <= hi
