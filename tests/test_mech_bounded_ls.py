"""BoundedLocalSensitivity (004 Thm. 1): the default bound fails with probability
≤ δ (exact Laplace tail), is ε1-DP (ln SS_β moves by ≤ β), and the joint release
(g, q + Lap(g/ε2)) has δ(ε1 + ε2) ≤ δ on every neighbour pair — computed with the
closed-form hockey-stick divergence of two Laplace laws, integrated over g."""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_mech_support import BruteQuery, hockey_stick, lower_median

from instancedp.mechanisms.bounded_ls import BoundedLocalSensitivity, SmoothSensitivityBound
from instancedp.privacy import ApproxDP
from instancedp.random import simulation

MEDIAN = BruteQuery(lower_median, range(5), 5, name="median")


def laplace_hs(r: float, t: np.ndarray) -> np.ndarray:
    """H(t) = ∫(P − e^t Q)₊ for P = Lap(0, s), Q = Lap(Δ, s), r = Δ/s (derived by hand:
    the ratio P/Q exceeds e^t left of y* = (Δ − ts)/2)."""
    t = np.asarray(t, float)
    mid = 1 - np.exp((t - r) / 2)
    return np.where(t >= r, 0.0, np.where(t <= -r, -np.expm1(t), mid))


def pair_key(x, y, beta):
    """What the joint law of a pair depends on: both SS_β and the value gap."""
    return (
        MEDIAN.smooth_sensitivity(x, beta),
        MEDIAN.smooth_sensitivity(y, beta),
        abs(MEDIAN.value(x) - MEDIAN.value(y)),
    )


def joint_delta(key, eps1, eps2, delta, bound, noise_factor: float = 1.0) -> float:
    c, m = bound.shift(eps1, delta)
    ssx, ssy, gap = key
    lx, ly = math.log(ssx) + m, math.log(ssy) + m
    h = np.linspace(min(lx, ly) - 40 * c, max(lx, ly) + 40 * c, 40001)
    out = 0.0
    for a, b in ((lx, ly), (ly, lx)):
        pa = np.exp(-np.abs(h - a) / c) / (2 * c)
        log_ratio = (np.abs(h - a) - np.abs(h - b)) / c  # ln p_b(h) − ln p_a(h)
        r = gap * eps2 / (noise_factor * np.exp(h))
        out = max(out, float(np.trapezoid(pa * laplace_hs(r, eps1 + eps2 + log_ratio), h)))
    return out


def test_bound_failure_probability_and_smoothness():
    eps1, delta = 0.5, 1e-3
    bound = SmoothSensitivityBound()
    beta = bound.beta_for(eps1, delta)
    c, m = bound.shift(eps1, delta)
    for x in MEDIAN.all:
        ss, ls = MEDIAN.smooth_sensitivity(x, beta), MEDIAN.local_sensitivity(x)
        # P(g < LS) = P(L < (ln(LS/SS) − m)/c), L ~ Lap(1)
        if ls > 0:
            z = (math.log(ls / ss) - m) / c
            fail = 0.5 * math.exp(z) if z < 0 else 1 - 0.5 * math.exp(-z)
            assert fail <= delta * (1 + 1e-12)
    # ln SS_β moves by at most β between neighbours: the bound is ε1-DP.
    worst = max(
        abs(
            math.log(MEDIAN.smooth_sensitivity(x, beta))
            - math.log(MEDIAN.smooth_sensitivity(y, beta))
        )
        for x, y in MEDIAN.pairs()
    )
    assert worst <= beta + 1e-12


def test_joint_privacy_profile_on_all_pairs():
    eps1, eps2, delta = 0.5, 1.0, 1e-3
    bound = SmoothSensitivityBound()
    beta = bound.beta_for(eps1, delta)
    keys = {pair_key(x, y, beta) for x, y in MEDIAN.pairs()}
    worst = max(joint_delta(k, eps1, eps2, delta, bound) for k in keys)
    assert worst <= delta
    # The same computation flags a release step with half the noise (claimed ε kept).
    bad = max(joint_delta(k, eps1, eps2, delta, bound, noise_factor=0.5) for k in keys)
    assert bad > delta


def test_value_law_privacy_profile():
    eps1, eps2, delta = 0.5, 1.0, 1e-3
    mech = BoundedLocalSensitivity(MEDIAN, None, eps1, eps2, delta)
    assert mech.guarantee == ApproxDP(eps1 + eps2, delta)
    pairs = MEDIAN.pairs()[::100]
    worst = max(
        hockey_stick(
            mech.output_distribution(x, points=801),
            mech.output_distribution(y, points=801),
            1.5,
            points=4001,
        )
        for x, y in pairs
    )
    assert worst <= delta
    law = mech.output_distribution((0, 1, 2, 3, 4))
    assert float(law.cdf(1e9)) == pytest.approx(1.0, abs=1e-9)


def test_release_record_is_public():
    mech = BoundedLocalSensitivity(MEDIAN, None, 0.5, 0.5, 1e-6)
    a = mech.release((0, 0, 0, 0, 4), rng=simulation(0)).to_dict()
    b = mech.release((0, 2, 2, 2, 4), rng=simulation(0)).to_dict()
    a.pop("value"), b.pop("value")
    assert a == b


@pytest.mark.parametrize(
    ("args", "msg"),
    [
        ((None, 0.0, 1.0, 1e-6), "epsilon_bound"),
        ((None, 1.0, -1.0, 1e-6), "epsilon_release"),
        ((None, 1.0, 1.0, 0.0), "delta"),
        ((object(), 1.0, 1.0, 1e-6), "bound_mechanism"),
    ],
)
def test_bad_input(args, msg):
    with pytest.raises(ValueError, match=msg):
        BoundedLocalSensitivity(MEDIAN, *args)


def _value_delta(g_x, w_x, g_y, w_y, eps2: float, epsilon: float) -> float:
    """δ(ε) of the released value alone, q = 0 on both sides: each law is the mixture
    Σ w_i·Lap(0, g_i/ε2).  Integrated on a log grid of |y| in units of g_x's median
    (ratios only, so subnormal bounds are handled exactly as the release draws them)."""
    unit = float(np.median(g_x))
    u = np.linspace(-60.0, 60.0, 12001)
    y = np.exp(u)

    def dens(g, w):
        b = np.asarray(g, float)[:, None] / unit / eps2
        return (np.asarray(w)[:, None] * np.exp(-y / b) / (2 * b)).sum(axis=0)

    out = 0.0
    for a, b in ((dens(g_x, w_x), dens(g_y, w_y)), (dens(g_y, w_y), dens(g_x, w_x))):
        out = max(out, 2 * float(np.trapezoid(np.maximum(a - math.exp(epsilon) * b, 0) * y, u)))
    return out


def test_subnormal_smooth_sensitivity_keeps_delta():
    # 781,081 zeros versus one changed to 1: the median's SS_β lies at 1–2 units of
    # 2^−1074, ln SS jumped by ln 2 ≫ β and the value leaked δ ≈ 0.099 at ε = 0.1,
    # δ = 1e−6 (ε/2 for the bound, ε/2 for the value).  The public floor and the
    # outward-rounded scale keep ln g's neighbours within β.
    from instancedp.queries import Median

    x = np.zeros(781_081)
    xp = x.copy()
    xp[0] = 1.0
    q, bound = Median(-1, 1), SmoothSensitivityBound()
    g_x, w_x = bound.quadrature(q, x, 0.05, 1e-6, points=401)
    g_y, w_y = bound.quadrature(q, xp, 0.05, 1e-6, points=401)
    beta = bound.beta_for(0.05, 1e-6)
    assert _value_delta(g_x, w_x, g_y, w_y, 0.05, 0.1) <= 1e-6
    assert abs(math.log(g_x[200]) - math.log(g_y[200])) <= beta
