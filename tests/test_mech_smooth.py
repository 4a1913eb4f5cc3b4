"""SmoothSensitivityMechanism: exact privacy on every neighbour pair of a brute-force
domain, validation, and that releases carry no data-dependent quantity."""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_mech_support import BruteQuery, hockey_stick, lower_median, max_log_ratio

from instancedp.mechanisms.smooth import SmoothSensitivityMechanism, default_gamma
from instancedp.privacy import ZCDP, ApproxDP, PureDP
from instancedp.random import simulation

MEDIAN = BruteQuery(lower_median, range(5), 5, name="median")
PAIRS = MEDIAN.pairs()


@pytest.mark.parametrize(
    ("family", "gamma"),
    [("polyplace", None), ("polyplace", 0.6), ("student_t", None), ("cauchy", 0.1)],
)
def test_pure_families_log_ratio_at_most_epsilon(family, gamma):
    eps = 1.0
    mech = SmoothSensitivityMechanism(MEDIAN, eps, gamma=gamma, noise=family)
    assert mech.guarantee == PureDP(eps)
    laws = {x: mech.output_distribution(x) for x in MEDIAN.all}
    worst = max(max_log_ratio(laws[x], laws[y]) for x, y in PAIRS)
    assert worst <= eps + 1e-9
    # The mechanism is not trivially private: the loss gets close to ε on this domain.
    assert worst > 0.3 * eps


def test_check_detects_noise_that_is_too_small():
    """The same check fails if the scale is halved (so the check can fail)."""
    mech = SmoothSensitivityMechanism(MEDIAN, 1.0, gamma=0.25, noise="polyplace")

    def halved(x):
        v, ss, cal, _ = mech._center_and_scale(x)
        from instancedp.mechanisms.base import OutputDistribution

        return OutputDistribution.additive(v, ss / 2, cal.noise)

    laws = {x: halved(x) for x in MEDIAN.all}  # once per dataset, not once per pair
    worst = max(max_log_ratio(laws[x], laws[y]) for x, y in PAIRS)
    assert worst > 1.0


@pytest.mark.parametrize("fraction", [None, 0.95])
def test_laplace_family_hockey_stick_at_most_delta(fraction):
    """NRS / Claim 18 calibration, at the default γ and close to its limit ε/ln(2/δ)."""
    eps, delta = 1.0, 1e-3
    gamma = None if fraction is None else fraction * eps / math.log(2 / delta)
    mech = SmoothSensitivityMechanism(MEDIAN, eps, gamma=gamma, noise="laplace", delta=delta)
    assert mech.guarantee == ApproxDP(eps, delta)
    laws = {x: mech.output_distribution(x) for x in MEDIAN.all}
    # Pairs with the largest change of value and SS are the hardest; check them all.
    worst = max(hockey_stick(laws[x], laws[y], eps, points=40001) for x, y in PAIRS)
    assert worst <= delta


def test_zcdp_family_guarantee_type():
    mech = SmoothSensitivityMechanism(MEDIAN, 1.0, noise="laplace_log_normal")
    assert isinstance(mech.guarantee, ZCDP)
    assert mech.guarantee.rho == pytest.approx(0.5)


def test_release_and_dict_hold_no_data_dependent_quantity():
    mech = SmoothSensitivityMechanism(MEDIAN, 1.0, noise="polyplace")
    x1, x2 = (0, 0, 0, 0, 4), (0, 2, 2, 2, 4)
    assert MEDIAN.smooth_sensitivity(x1, 0.25) != MEDIAN.smooth_sensitivity(x2, 0.25)
    r1 = mech.release(x1, rng=simulation(1))
    r2 = mech.release(x2, rng=simulation(1))
    d1, d2 = r1.to_dict(), r2.to_dict()
    d1.pop("value"), d2.pop("value")
    assert d1 == d2
    assert r1.parameters == r2.parameters
    assert r1.secure is False


def test_default_gamma_uses_only_public_parameters():
    mech = SmoothSensitivityMechanism(MEDIAN, 1.0)
    g = default_gamma(MEDIAN, "polyplace", 1.0, n=5)
    assert 0 < g < 1.0
    assert mech._gamma_for(5) == g
    assert default_gamma("median", "polyplace", 1.0, n=5) == g


def test_sample_matches_release_law():
    mech = SmoothSensitivityMechanism(MEDIAN, 1.0, gamma=0.3)
    x = (0, 1, 2, 3, 4)
    draws = mech.sample(x, 20000, rng=simulation(3))
    law = mech.output_distribution(x)
    # KS distance of 20000 draws: P(D > 0.0136) < 0.05 under the null; use 0.02 (p ~ 4e-4).
    ys = np.sort(draws)
    ks = np.max(np.abs(law.cdf(ys) - np.arange(1, ys.size + 1) / ys.size))
    assert ks < 0.02


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"noise": "laplace"}, "pass delta"),
        ({"gamma": 1.5}, "gamma must be in"),
        ({"gamma": 0.5, "noise": "cauchy"}, "gamma must be in"),
        ({"gamma": -1}, "gamma"),
        ({"noise": "gaussian"}, "noise must be one of"),
        ({"epsilon": 0}, "epsilon"),
    ],
)
def test_bad_input(kwargs, message):
    args = {"epsilon": 1.0, **kwargs}
    with pytest.raises(ValueError, match=message):
        SmoothSensitivityMechanism(MEDIAN, **args)


def test_ss_zero_returns_value_and_infinite_ss_errors():
    class Const:
        name = "const"
        neighbours = "substitution"

        def value(self, data):
            return 3.0

        def smooth_sensitivity(self, data, beta):
            return self.ss

    q = Const()
    q.ss = 0.0
    mech = SmoothSensitivityMechanism(q, 1.0, gamma=0.2)
    assert mech.release([1, 2], rng=simulation(0)).value == 3.0
    q.ss = math.inf
    with pytest.raises(ValueError, match="unbounded"):
        mech.release([1, 2], rng=simulation(0))


def test_zcdp_family_renyi_on_pairs():
    """½ε²-zCDP of Laplace-log-normal noise on neighbour pairs: max over orders of
    D_α/α ≤ ρ by quadrature (instancedp.audit, independent of the mechanism code)."""
    from instancedp.audit.profile import check_mechanism

    mech = SmoothSensitivityMechanism(MEDIAN, 1.0, noise="laplace_log_normal")
    result = check_mechanism(mech, PAIRS[::25])
    assert result.passed is True
    assert result.measured <= mech.guarantee.rho


def test_subnormal_smooth_sensitivity_keeps_pure_dp():
    # 141,723 zeros versus one changed to 1, median on [−1, 1], default PolyPlace at
    # ε = 0.03: SS rounded to 1 or 2 units of 2^−1074 and the 16-ulp raise made the
    # scales 17 and 18 units, a privacy loss of ln(18/17) = 0.057 > ε.  The exact
    # log-density ratio of the laws the release draws from (center, scale raised by
    # 16 ulps as mechanisms.base.add_noise does, calibrated noise) must stay within ε.
    from instancedp.mechanisms.base import OutputDistribution
    from instancedp.noise.exact import scale_upper_bound
    from instancedp.queries import Median

    x = np.zeros(141_723)
    xp = x.copy()
    xp[0] = 1.0
    mech = SmoothSensitivityMechanism(Median(-1, 1), 0.03)
    laws = []
    for data in (x, xp):
        value, ss, cal, _ = mech._center_and_scale(data)
        laws.append(OutputDistribution.additive(value, scale_upper_bound(ss), cal.noise))
        assert not mech.output_distribution(data).atoms
    assert max_log_ratio(laws[0], laws[1]) <= 0.03 * (1 + 1e-9)
