"""The noise-family registry: a family is one class plus one ``register_family`` line.

The toy family below is defined and registered from inside this test and no
other module is touched; calibration (``noise.calibrate``), the exact sampler
(``noise.exact.add_noise``) and ``SmoothSensitivityMechanism`` then use it
through the registry alone.  The toy is the standard Cauchy law written from
scratch (density 1/(π(1 + x²)), CDF ½ + arctan(x)/π), i.e. the generalized
Cauchy family at power c = 2, with NRS 2007 Lemma 2.7's calibration at c = 2:
scale (c + 1)/(ε − γ(c + 1)) = 3/(ε − 3γ), pure ε-DP for γ < ε/3.  So every
answer it gives has an independent reference: the built-in family at
``power=2``, and the exact privacy-loss check on a brute-force domain.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from flint import arb
from test_mech_support import BruteQuery, lower_median, max_log_ratio

from instancedp import noise
from instancedp.mechanisms.smooth import SmoothSensitivityMechanism, default_gamma
from instancedp.noise import GeneralizedCauchy, calibrate, max_gamma
from instancedp.noise.base import NoiseDistribution
from instancedp.noise.exact import SUPPORTED_FAMILIES, add_noise
from instancedp.privacy import PureDP
from instancedp.random import simulation


class ToyCauchy(NoiseDistribution):
    """Standard Cauchy noise times ``scale`` (a test-only family)."""

    family = "toy_cauchy"
    default_gamma_fraction = 0.2
    default_gamma_ceiling = 0.2
    exact_route = "cdf"

    def __init__(self, scale: float = 1.0) -> None:
        self.scale = float(scale)

    def logpdf(self, x: Any) -> np.ndarray:
        t = np.asarray(x, dtype=np.float64) / self.scale
        return -np.log(math.pi * self.scale * (1.0 + t * t))

    def cdf(self, x: Any) -> np.ndarray:
        return 0.5 + np.arctan(np.asarray(x, dtype=np.float64) / self.scale) / math.pi

    def ppf(self, q: Any) -> np.ndarray:
        return self.scale * np.tan(math.pi * (np.asarray(q, dtype=np.float64) - 0.5))

    def var(self) -> float:
        return math.inf

    def parameters(self) -> dict[str, float]:
        return {"scale": self.scale}

    def with_scale(self, scale: float) -> ToyCauchy:
        return ToyCauchy(scale)

    @classmethod
    def smooth_unit_scale(cls, epsilon, gamma, delta, shape):
        rest = epsilon - 3.0 * gamma
        return 3.0 / rest if rest > 0 else math.inf

    @classmethod
    def smooth_max_gamma(cls, epsilon, delta, shape, finite_std):
        return 0.0 if finite_std else epsilon / 3.0

    @classmethod
    def exact_sf(cls, t, params):
        return (1 / t).atan() / arb.pi()  # P(Z > t) = arctan(1/t)/π for t > 0

    @classmethod
    def exact_ppf_guess(cls, params, p, c):
        return abs(math.tan(math.pi * c))


@pytest.fixture
def toy():
    noise.register_family(ToyCauchy)
    try:
        yield ToyCauchy
    finally:
        noise.unregister_family("toy_cauchy")


MEDIAN = BruteQuery(lower_median, range(5), 5, name="median")


def exact_source(seed: int) -> Any:
    """A seeded source that takes the release path's exact sampler (as the audits do)."""
    src = simulation(seed)
    src.exact = True  # type: ignore[attr-defined]
    return src


def test_registered_family_is_listed_then_gone(toy):
    assert "toy_cauchy" in noise.FAMILIES
    assert noise.FAMILIES[-1] == "toy_cauchy"
    assert ToyCauchy in SUPPORTED_FAMILIES
    assert noise.family_class("toy_cauchy") is ToyCauchy
    noise.unregister_family("toy_cauchy")
    assert "toy_cauchy" not in noise.FAMILIES and ToyCauchy not in SUPPORTED_FAMILIES
    with pytest.raises(ValueError, match="family must be one of"):
        calibrate("toy_cauchy", 1.0, 0.1)
    with pytest.raises(ValueError, match="noise must be an instance of one of"):
        add_noise(0.0, 1.0, ToyCauchy(), size=None, rng=simulation(0))


def test_registry_rejects_a_second_class_under_a_taken_name(toy):
    clash = type("Clash", (ToyCauchy,), {})
    with pytest.raises(ValueError, match="already registered"):
        noise.register_family(clash)
    with pytest.raises(TypeError):
        noise.register_family(int)  # type: ignore[arg-type]
    noise.register_family(ToyCauchy)  # registering the same class again is a no-op
    assert list(noise.FAMILIES).count("toy_cauchy") == 1


def test_builtin_families_have_no_gap_in_their_hooks():
    """Every registered smooth family answers every calibration hook it needs."""
    for name in noise.FAMILIES:
        cls = noise.family_class(name)
        assert 0 < cls.default_gamma_fraction <= cls.default_gamma_ceiling < 1, name
        assert cls.exact_route in ("cdf", "product"), name
        delta = 1e-6 if cls.requires_delta else None
        assert max_gamma(name, 1.0, delta) > 0, name


def test_calibration_matches_builtin_cauchy_at_power_two(toy):
    for eps, frac in [(1.0, 0.1), (0.3, 0.9), (4.0, 0.5)]:
        gamma = frac * eps / 3.0
        got = calibrate("toy_cauchy", eps, gamma)
        ref = calibrate("cauchy", eps, gamma, power=2.0)
        assert got.noise.scale == ref.noise.scale
        assert got.guarantee == ref.guarantee == PureDP(eps)
        assert got.shape == {}
    assert max_gamma("toy_cauchy", 1.0) == max_gamma("cauchy", 1.0, power=2.0) == 1.0 / 3.0
    with pytest.raises(ValueError, match="gamma must be in"):
        calibrate("toy_cauchy", 1.0, 0.34)
    with pytest.raises(ValueError, match="no shape parameter"):
        calibrate("toy_cauchy", 1.0, 0.1, power=2.0)
    # The default-γ constants come from the class.
    assert default_gamma("mean", "toy_cauchy", 1.0) == pytest.approx(0.2 / 3.0, rel=1e-15)


def test_exact_sampler_draws_the_same_outputs_as_builtin_cauchy(toy):
    """Same law, same lazy uniform: the exact sampler must return the very same double."""
    for seed in range(30):
        for value, scale in [(0.1, 1.7), (-3.0, 1e-6), (1e9, 2.5e3)]:
            a = add_noise(value, scale, ToyCauchy(0.75), size=None, rng=simulation(seed))
            b = add_noise(
                value, scale, GeneralizedCauchy(2.0, 0.75), size=None, rng=simulation(seed)
            )
            assert a == b, (seed, value, scale)


def test_smooth_mechanism_releases_with_the_toy_family(toy):
    eps, gamma = 1.0, 0.2
    mech = SmoothSensitivityMechanism(MEDIAN, eps, gamma=gamma, noise="toy_cauchy")
    ref = SmoothSensitivityMechanism(MEDIAN, eps, gamma=gamma, noise="cauchy", power=2.0)
    assert mech.guarantee == PureDP(eps)
    x = (0, 1, 2, 2, 4)
    for seed in range(5):
        got = mech.release(x, rng=exact_source(seed))
        assert got.value == ref.release(x, rng=exact_source(seed)).value
        assert got.parameters["noise"] == "toy_cauchy"
    assert math.isfinite(mech.release(x).value)  # the secure (CSPRNG) default path
    # The exact privacy-loss check on every neighbour pair of the brute-force domain.
    laws = {x: mech.output_distribution(x) for x in MEDIAN.all}
    worst = max(max_log_ratio(laws[x], laws[y]) for x, y in MEDIAN.pairs())
    assert 0.15 * eps < worst <= eps + 1e-9  # measured 0.233 at γ = 0.2 on this domain
