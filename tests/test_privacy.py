import math

import numpy as np
import pytest
from scipy.stats import norm

from instancedp.privacy import (
    ZCDP,
    ApproxDP,
    PureDP,
    advanced_composition,
    compose,
    zcdp_to_epsilon,
)


def test_guarantees_are_immutable_and_validated():
    g = PureDP(1.0)
    with pytest.raises(AttributeError):
        g.epsilon = 2.0  # type: ignore[misc]
    for bad in (0, -1, math.nan, math.inf, "x"):
        with pytest.raises(ValueError, match="epsilon"):
            PureDP(bad)
    for bad in (-0.1, 1.0, 2, math.nan):
        with pytest.raises(ValueError, match=r"delta.*\[0, 1\)"):
            ApproxDP(1.0, bad)
    with pytest.raises(ValueError, match="rho"):
        ZCDP(0)


def test_basic_composition_within_types():
    assert PureDP(0.5) + PureDP(0.25) == PureDP(0.75)
    assert ApproxDP(1, 1e-6) + ApproxDP(0.5, 1e-6) == ApproxDP(1.5, 2e-6)
    assert PureDP(1) + ApproxDP(1, 1e-5) == ApproxDP(2, 1e-5)
    assert ZCDP(0.1) + ZCDP(0.2) == ZCDP(0.1 + 0.2)
    assert PureDP(1) + ZCDP(0.5) == ZCDP(1.0)
    with pytest.raises(TypeError):
        ApproxDP(1, 1e-5) + ZCDP(0.5)
    assert compose([PureDP(0.1)] * 3).epsilon == pytest.approx(0.3)


def test_pure_to_zcdp():
    assert PureDP(2.0).to_zcdp() == ZCDP(2.0)
    assert ZCDP.from_cdp_epsilon(1.0) == ZCDP(0.5)


def _gaussian_delta(eps, sigma):
    # Exact δ(ε) of the Gaussian mechanism with sensitivity 1 (Balle & Wang 2018, Thm. 8).
    a, b = 1 / (2 * sigma), eps * sigma
    return norm.cdf(a - b) - math.exp(eps) * norm.cdf(-a - b)


@pytest.mark.parametrize("rho", [0.01, 0.1, 0.5, 2.0])
@pytest.mark.parametrize("delta", [1e-3, 1e-6, 1e-10])
def test_zcdp_conversion_is_valid_and_tighter_than_classic(rho, delta):
    eps = zcdp_to_epsilon(rho, delta)
    classic = rho + 2 * math.sqrt(rho * math.log(1 / delta))
    assert eps < classic
    # Valid: the Gaussian mechanism is exactly rho-zCDP for sigma = 1/sqrt(2 rho);
    # its true delta at the converted epsilon must not exceed the target.
    sigma = 1 / math.sqrt(2 * rho)
    assert _gaussian_delta(eps, sigma) <= delta
    # Tight-ish: the true epsilon for this delta is not far below.
    assert _gaussian_delta(eps * 0.8, sigma) > delta


def test_zcdp_conversion_known_value():
    # CKS 2020 conversion at rho = 0.5, delta = 1e-5 minimised by brute grid over alpha.
    rho, delta = 0.5, 1e-5
    alphas = 1 + np.logspace(-3, 3, 200001)
    grid = alphas * rho + np.log1p(-1 / alphas) - (math.log(delta) + np.log(alphas)) / (alphas - 1)
    assert zcdp_to_epsilon(rho, delta) == pytest.approx(grid.min(), rel=1e-7)
    assert ZCDP(rho).to_approx(delta).epsilon == pytest.approx(grid.min(), rel=1e-7)


def test_advanced_composition():
    g = advanced_composition(PureDP(0.01), k=1000, delta_prime=1e-6)
    expected = 0.01 * math.sqrt(2000 * math.log(1e6)) + 1000 * 0.01 * math.expm1(0.01)
    assert g.epsilon == pytest.approx(expected)
    assert g.delta == pytest.approx(1e-6)
    # When advanced is worse than basic, basic is returned.
    g2 = advanced_composition(PureDP(1.0), k=2, delta_prime=1e-6)
    assert g2.epsilon == pytest.approx(2.0)
    with pytest.raises(ValueError, match="k"):
        advanced_composition(PureDP(1.0), k=0, delta_prime=1e-6)
