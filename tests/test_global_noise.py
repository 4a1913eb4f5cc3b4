"""Laplace and Gaussian baselines; the three Gaussian calibrations.

References are independent of the code: FORMULAS.md §3's σ table (checked
there by separate root finding), and δ(ε) = ∫(p − e^ε q)₊ by mpmath quadrature
at 50 digits for two Gaussians (30 in the calibration sweep: the same doubles there).
"""

from __future__ import annotations

import functools
import math

import mpmath as mp
import numpy as np
import pytest

from instancedp.mechanisms.global_noise import (
    GaussianMechanism,
    LaplaceMechanism,
    analytic_gaussian_sigma,
    canard_olivier_gaussian_sigma,
    classic_gaussian_sigma,
    gaussian_delta,
)
from instancedp.random import simulation

# FORMULAS.md §3 (δ = 1e−5): ε → (Canard–Olivier, classic, analytic).
TABLE = {
    0.1: (42.874, 48.448, 30.750),
    0.5: (8.667, 9.690, 7.032),
    1.0: (4.390, 4.845, 3.731),
    2.0: (2.249, 2.422, 1.994),
}


def _classic_any_eps(eps, delta):
    return math.sqrt(2 * math.log(1.25 / delta)) / eps


def mp_gaussian_delta(sigma, eps, sens=1.0, dps=50):
    """∫ (p − e^ε q)₊ for p = N(0, σ²), q = N(Δ, σ²), by quadrature (``dps`` digits).

    p > e^ε q exactly where y < Δ/2 − εσ²/Δ (the log-ratio is linear)."""
    mp.mp.dps = dps
    s, d, e = mp.mpf(sigma), mp.mpf(sens), mp.mpf(eps)
    y0 = d / 2 - e * s**2 / d

    def f(y):
        p = mp.exp(-(y**2) / (2 * s**2))
        q = mp.exp(-((y - d) ** 2) / (2 * s**2))
        return (p - mp.exp(e) * q) / (s * mp.sqrt(2 * mp.pi))

    return float(mp.quad(f, [-mp.inf, y0 - 10 * s, y0 - s, y0]))


@pytest.mark.parametrize("eps", sorted(TABLE))
def test_sigma_table_reproduced(eps):
    co, cl, an = TABLE[eps]
    assert round(canard_olivier_gaussian_sigma(eps, 1e-5), 3) == co
    assert round(_classic_any_eps(eps, 1e-5), 3) == cl
    assert round(analytic_gaussian_sigma(eps, 1e-5), 3) == an
    if eps < 1:
        assert classic_gaussian_sigma(eps, 1e-5) == pytest.approx(cl, abs=5e-4)


def test_gaussian_delta_against_quadrature():
    for sigma, eps, sens in [(1.0, 0.5, 1.0), (3.731, 1.0, 1.0), (8.0, 0.1, 2.0), (2.0, 3.0, 0.5)]:
        assert gaussian_delta(sigma, eps, sens) == pytest.approx(
            mp_gaussian_delta(sigma, eps, sens), rel=1e-9
        )


@pytest.mark.parametrize("eps", [0.1, 0.5, 1.0, 2.0, 5.0])
@pytest.mark.parametrize("delta", [1e-3, 1e-5, 1e-8, 1e-12])
def test_every_calibration_meets_delta(eps, delta):
    # 30 digits: on every σ below the quadrature gives the same double as at 50 (checked
    # once), in half the time; δ(ε) here is ≥ 1e−12, far from 30 digits' cancellation.
    mp_delta = functools.partial(mp_gaussian_delta, dps=30)
    an = analytic_gaussian_sigma(eps, delta)
    # The analytic one is tight: δ(ε) ≤ δ and within 1e-6 relative of it.
    d_an = mp_delta(an, eps)
    assert d_an <= delta * (1 + 1e-9)
    assert abs(d_an - delta) <= 1e-6 * delta
    assert gaussian_delta(an, eps) <= delta
    for sigma in (canard_olivier_gaussian_sigma(eps, delta), _classic_any_eps(eps, delta)):
        assert mp_delta(sigma, eps) <= delta
        assert sigma > an
    if delta < 0.1:
        assert (
            mp_delta(canard_olivier_gaussian_sigma(eps, delta, remark13=True), eps)
            <= delta
        )


def test_sensitivity_scales_sigma():
    assert analytic_gaussian_sigma(1.0, 1e-5, 3.0) == pytest.approx(
        3 * analytic_gaussian_sigma(1.0, 1e-5), rel=1e-12
    )
    assert canard_olivier_gaussian_sigma(0.5, 1e-6, 2.0) == pytest.approx(
        2 * canard_olivier_gaussian_sigma(0.5, 1e-6), rel=1e-12
    )


class _Count:
    name = "count"
    neighbours = "add_remove"
    global_sensitivity = 1.0

    def value(self, data):
        return float(len(data))


class _Unbounded(_Count):
    global_sensitivity = math.inf


def test_laplace_mechanism():
    mech = LaplaceMechanism(_Count(), 0.5)
    assert mech.guarantee.epsilon == 0.5 and mech.scale == 2.0
    rel = mech.release([1, 2, 3], rng=simulation(3))
    assert not rel.secure and rel.mechanism == "laplace"
    law = mech.output_distribution([1, 2, 3])
    assert law.pdf(np.array([3.0]))[0] == pytest.approx(1 / 4)
    assert law.cdf(np.array([3.0]))[0] == pytest.approx(0.5)
    # Pure ε: the log density ratio of neighbours (count 3 vs 4) never exceeds ε.
    other = mech.output_distribution([1, 2, 3, 4])
    y = np.linspace(-20, 30, 2001)
    assert np.max(np.abs(law.logpdf(y) - other.logpdf(y))) <= 0.5 + 1e-12
    # Seeded mean absolute error over 20 000 draws ≈ scale 2 (sd of the mean 0.7%;
    # a 4% band is a > 5-sigma event).
    rng = simulation(11)
    errs = [abs(mech.release([1, 2, 3], rng=rng).value - 3) for _ in range(20_000)]
    assert np.mean(errs) == pytest.approx(2.0, rel=0.04)


def test_gaussian_mechanism():
    for cal, sigma in [("analytic", 3.731), ("canard_olivier", 4.390)]:
        mech = GaussianMechanism(_Count(), 1.0, 1e-5, calibration=cal)
        assert round(mech.sigma, 3) == sigma
        assert mech.guarantee.delta == 1e-5
        law = mech.output_distribution([0, 0])
        assert law.pdf(np.array([2.0]))[0] == pytest.approx(
            1 / (mech.sigma * math.sqrt(2 * math.pi))
        )
        rel = mech.release([0, 0], rng=simulation(5))
        assert rel.parameters["calibration"] == cal
    rng = simulation(9)
    mech = GaussianMechanism(_Count(), 0.5, 1e-6, calibration="classic")
    draws = np.array([mech.release([], rng=rng).value for _ in range(20_000)])
    # sd of the sample sd ≈ σ/√(2n) = 0.5%; 3% is a 6-sigma band.
    assert draws.std() == pytest.approx(mech.sigma, rel=0.03)


@pytest.mark.parametrize(
    "factory,match",
    [
        (lambda: LaplaceMechanism(_Unbounded(), 1.0), "global sensitivity"),
        (lambda: LaplaceMechanism(_Count(), 0.0), "epsilon"),
        (lambda: LaplaceMechanism(_Count(), math.nan), "epsilon"),
        (lambda: GaussianMechanism(_Unbounded(), 1.0, 1e-5), "global sensitivity"),
        (lambda: GaussianMechanism(_Count(), 1.0, 0.0), "delta"),
        (lambda: GaussianMechanism(_Count(), 1.0, 1e-5, calibration="x"), "calibration"),
        (lambda: GaussianMechanism(_Count(), 1.0, 1e-5, calibration="classic"), "epsilon"),
        (lambda: classic_gaussian_sigma(2.0, 1e-5), r"epsilon must be in \(0, 1\)"),
        (lambda: canard_olivier_gaussian_sigma(1.0, 0.2, remark13=True), "delta"),
        (lambda: gaussian_delta(-1.0, 1.0), "sigma"),
    ],
)
def test_bad_input(factory, match):
    with pytest.raises(ValueError, match=match):
        factory()
