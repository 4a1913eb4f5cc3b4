"""Private ratios: LS against brute-force neighbours, the LS bound against a brute
maximum over its box, the exact failure probability of the bounded-LS variant by
summing the discrete Laplace pmf, the sensitivities naive/KSW rely on, records."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from instancedp.mechanisms.ratio import (
    PrivateRatio,
    interval_halfwidth,
    local_sensitivity,
    sensitivity_bound,
    simulate,
)
from instancedp.privacy import ApproxDP, PureDP
from instancedp.random import simulation


def neighbours(a, b):
    """Add/remove one user: (0, ±1) or (±1, ±1), staying with 0 ≤ a ≤ b."""
    out = [(a + 1, b + 1), (a, b + 1)]
    if a >= 1:
        out.append((a - 1, b - 1))
    if b - 1 >= a:
        out.append((a, b - 1))
    return [(x, y) for x, y in out if y >= 1]


def brute_ls(a, b):
    return max(abs(a / b - x / y) for x, y in neighbours(a, b))


def test_local_sensitivity_formula():
    for b in range(2, 40):
        for a in range(0, b + 1):
            formula = float(local_sensitivity(a, b))
            assert brute_ls(a, b) <= formula + 1e-15
            if 0 < a < b:
                assert brute_ls(a, b) == pytest.approx(formula, rel=1e-12)


@given(
    st.integers(0, 60),
    st.integers(2, 80),
    st.integers(0, 6),
    st.integers(-20, 20),
    st.integers(-20, 20),
)
def test_bound_covers_every_ls_in_its_box(a, b, t, da, db):
    """g(â, b̂) ≥ LS(a′, b′) for every integer 0 ≤ a′ ≤ b′ in the box [â ± t] × [b̂ ± t]."""
    a_hat, b_hat = a + da, b + db
    g = float(sensitivity_bound(a_hat, b_hat, t))
    if b_hat - t <= 1:
        assert math.isnan(g)
        return
    want = 0.0
    for bb in range(b_hat - t, b_hat + t + 1):
        for aa in range(max(0, a_hat - t), min(a_hat + t, bb) + 1):
            want = max(want, float(local_sensitivity(aa, bb)))
    assert g >= want - 1e-15
    # and never above the a-free bound 1/(b_l − 1) (seed 004, note 3)
    assert g <= 1.0 / (b_hat - t - 1) + 1e-15


def dlap_pmf(z, scale):
    r = math.exp(-1 / scale)
    return (1 - r) / (1 + r) * r ** np.abs(z)


@pytest.mark.parametrize(("a", "b"), [(0, 6), (3, 6), (6, 6), (5, 30), (29, 30)])
@pytest.mark.parametrize(("eps", "delta", "frac"), [(20.0, 0.05, 0.2), (8.0, 0.01, 0.5)])
def test_bound_failure_probability_exact(a, b, eps, delta, frac):
    eps1 = eps * frac
    scale = 2 / eps1
    t = interval_halfwidth(scale, delta)
    m = 200
    z = np.arange(-m, m + 1)
    za, zb = np.meshgrid(z, z, indexing="ij")
    g = sensitivity_bound(a + za, b + zb, t)
    ls = float(local_sensitivity(a, b)) if b > 1 else math.inf
    fail = np.where(np.isnan(g), False, g < ls)
    p = dlap_pmf(za, scale) * dlap_pmf(zb, scale)
    outside = 2 * (2 * dlap_pmf(m + 1, scale) / (1 - math.exp(-1 / scale)))
    assert float((p * fail).sum()) + outside <= delta


def test_halfwidth_is_smallest_with_tail_below_half_delta():
    for scale, delta in [(1.0, 0.1), (20.0, 1e-6), (200.0, 1e-9)]:
        t = interval_halfwidth(scale, delta)
        r = math.exp(-1 / scale)
        assert 2 * r ** (t + 1) / (1 + r) <= delta / 2 < 2 * r**t / (1 + r)


def test_ksw_and_naive_sensitivities():
    """(a, b − a) moves by exactly 1 in L1; a and b each by at most 1."""
    for a in range(0, 8):
        for b in range(max(a, 1), 10):
            for x, y in neighbours(a, b):
                assert abs(x - a) + abs((y - x) - (b - a)) == 1
                assert abs(x - a) <= 1 and abs(y - b) <= 1


def test_simulate_centres_on_ratio():
    for method in ("naive", "ksw", "bounded_ls"):
        out = simulate(method, 3000, 10000, 1.0, 20000, rng=1, delta=1e-6)
        # std of each method at these counts is < 1e-3; 20000 draws: the median error < 1e-4
        assert abs(np.median(out) - 0.3) < 5e-4, method


def test_mechanism_records_and_guarantees():
    flags = np.array([1, 0, 1, 1, 0] * 200)
    for method, g in [("ksw", PureDP(1.0)), ("naive", PureDP(1.0))]:
        r = PrivateRatio(1.0, method).release(flags, rng=simulation(0))
        assert r.guarantee == g and 0 <= r.value <= 1
    mech = PrivateRatio(1.0, "bounded_ls", delta=1e-6)
    assert mech.guarantee == ApproxDP(1.0, 1e-6)
    a = mech.release(flags, rng=simulation(0)).to_dict()
    b = mech.release(np.zeros(17), rng=simulation(0)).to_dict()
    a.pop("value"), b.pop("value")
    assert a == b


@pytest.mark.parametrize(
    ("kwargs", "msg"),
    [
        ({"method": "bounded_ls"}, "pass delta"),
        ({"method": "bounded_ls", "delta": 1e-6, "bound_fraction": 1.0}, "bound_fraction"),
        ({"method": "other"}, "method must be"),
        ({"epsilon": 0.0}, "epsilon"),
    ],
)
def test_bad_input(kwargs, msg):
    args = {"epsilon": 1.0, **kwargs}
    with pytest.raises(ValueError, match=msg):
        PrivateRatio(**args)


def test_data_must_be_flags():
    with pytest.raises(ValueError, match="0/1"):
        PrivateRatio(1.0).release([0, 2], rng=simulation(0))
