"""Privacy guarantees: pure DP, approximate DP and zero-concentrated DP.

Guarantees are immutable values.  ``+`` is basic composition within a type
(pure + approximate promotes to approximate); zCDP composes by adding ρ
(Bun & Steinke 2016, Lemma 2.3).  Converting zCDP to (ε, δ) uses the tight
conversion of Canonne, Kamath & Steinke 2020 (Prop. 12, via Rényi DP of every
order α = ρ·α), never worse than the classic ρ + 2√(ρ ln 1/δ).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from . import _validate
from .errors import ParameterError


@dataclass(frozen=True)
class PureDP:
    """ε-differential privacy."""

    epsilon: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", _validate.epsilon(self.epsilon))

    def to_approx(self) -> ApproxDP:
        return ApproxDP(self.epsilon, 0.0)

    def to_zcdp(self) -> ZCDP:
        """ε-DP implies (ε²/2)-zCDP (Bun & Steinke 2016, Prop. 1.4)."""
        return ZCDP(self.epsilon**2 / 2)

    def __add__(self, other: Guarantee) -> Guarantee:
        if isinstance(other, PureDP):
            return PureDP(self.epsilon + other.epsilon)
        if isinstance(other, ApproxDP):
            return self.to_approx() + other
        return NotImplemented

    def describe(self) -> str:
        return f"{self.epsilon:g}-DP (pure)"

    def as_dict(self) -> dict:
        return {"type": "pure", "epsilon": self.epsilon}


@dataclass(frozen=True)
class ApproxDP:
    """(ε, δ)-differential privacy."""

    epsilon: float
    delta: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", _validate.epsilon(self.epsilon))
        object.__setattr__(self, "delta", _validate.delta(self.delta))

    def to_approx(self) -> ApproxDP:
        return self

    def __add__(self, other: Guarantee) -> Guarantee:
        if isinstance(other, PureDP):
            other = other.to_approx()
        if isinstance(other, ApproxDP):
            return ApproxDP(self.epsilon + other.epsilon, self.delta + other.delta)
        return NotImplemented

    def __radd__(self, other: Guarantee) -> Guarantee:
        return self.__add__(other)

    def describe(self) -> str:
        return f"({self.epsilon:g}, {self.delta:g})-DP"

    def as_dict(self) -> dict:
        return {"type": "approx", "epsilon": self.epsilon, "delta": self.delta}


@dataclass(frozen=True)
class ZCDP:
    """ρ-zero-concentrated DP (Bun & Steinke 2016).  ½ε²-CDP is ``ZCDP(rho=ε²/2)``."""

    rho: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "rho", _validate.finite_positive(self.rho, "rho"))

    @classmethod
    def from_cdp_epsilon(cls, epsilon: float) -> ZCDP:
        """The ½ε²-CDP of Bun & Steinke 2019 (lecture notes PTR notes Prop. 15.1)."""
        return cls(_validate.epsilon(epsilon) ** 2 / 2)

    def __add__(self, other: Guarantee) -> Guarantee:
        if isinstance(other, ZCDP):
            return ZCDP(self.rho + other.rho)
        if isinstance(other, PureDP):
            return self + other.to_zcdp()
        return NotImplemented

    def __radd__(self, other: Guarantee) -> Guarantee:
        return self.__add__(other)

    def to_approx(self, delta: float) -> ApproxDP:
        """Tight (ε, δ) for this ρ: ``ApproxDP(zcdp_to_epsilon(ρ, δ), δ)``."""
        d = _validate.delta(delta, allow_zero=False)
        return ApproxDP(zcdp_to_epsilon(self.rho, d), d)

    def describe(self) -> str:
        return f"{self.rho:g}-zCDP"

    def as_dict(self) -> dict:
        return {"type": "zcdp", "rho": self.rho}


@dataclass(frozen=True)
class GaussianDP:
    """μ-Gaussian differential privacy (Dong, Roth & Su 2022, Def. 2.6).

    The Gaussian mechanism with sensitivity Δ and noise σ is exactly (Δ/σ)-GDP
    (ibid. Thm. 2.7); k adaptively chosen μᵢ-GDP releases compose to
    √(Σμᵢ²)-GDP (ibid. Cor. 3.3), and the sum of μᵢ² is a valid privacy
    filter when each μᵢ is chosen adaptively (Smith & Thakurta 2022, Thm. 3).
    """

    mu: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "mu", _validate.finite_positive(self.mu, "mu"))

    def to_zcdp(self) -> ZCDP:
        """μ-GDP ⇒ (μ²/2)-zCDP: the Rényi divergences of N(0,1) and N(μ,1)
        bound those of any μ-GDP pair (Dong, Roth & Su 2022, Prop. B.7)."""
        return ZCDP(self.mu**2 / 2)

    def to_approx(self, delta: float) -> ApproxDP:
        """The exact (ε, δ) of μ-GDP at δ (Dong, Roth & Su 2022, Cor. 2.13)."""
        d = _validate.delta(delta, allow_zero=False)
        return ApproxDP(gdp_to_epsilon(self.mu, d), d)

    def describe(self) -> str:
        return f"{self.mu:g}-GDP"

    def as_dict(self) -> dict:
        return {"type": "gdp", "mu": self.mu}


Guarantee = PureDP | ApproxDP | ZCDP | GaussianDP


def gdp_delta(mu: float, epsilon: float) -> float:
    """δ(ε) of μ-GDP: Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) (Dong, Roth & Su 2022, Cor. 2.13)."""
    from scipy.special import log_ndtr

    a = log_ndtr(-epsilon / mu + mu / 2)
    b = epsilon + log_ndtr(-epsilon / mu - mu / 2)
    return float(math.exp(a) * -math.expm1(b - a)) if b < a else 0.0


def gdp_to_epsilon(mu: float, delta: float) -> float:
    """Smallest ε ≥ 0 with μ-GDP ⇒ (ε, δ)-DP, rounded up (bisection on the exact δ(ε))."""
    mu = _validate.finite_positive(mu, "mu")
    delta = _validate.delta(delta, allow_zero=False)
    if gdp_delta(mu, 0.0) <= delta:
        return 0.0
    lo, hi = 0.0, 1.0
    while gdp_delta(mu, hi) > delta:
        lo, hi = hi, 2 * hi
    for _ in range(200):  # δ(ε) decreases in ε: keep hi feasible
        mid = (lo + hi) / 2
        if mid in (lo, hi):
            break
        if gdp_delta(mu, mid) > delta:
            lo = mid
        else:
            hi = mid
    return hi


def gdp_mu_for(epsilon: float, delta: float) -> float:
    """Largest μ with μ-GDP ⇒ (ε, δ)-DP, rounded down: the μ budget of an (ε, δ) target."""
    epsilon = _validate.epsilon(epsilon)
    delta = _validate.delta(delta, allow_zero=False)
    lo, hi = 0.0, 1.0
    while gdp_delta(hi, epsilon) <= delta:
        lo, hi = hi, 2 * hi
    for _ in range(200):  # δ(ε) increases in μ: keep lo feasible
        mid = (lo + hi) / 2
        if mid in (lo, hi):
            break
        if gdp_delta(mid, epsilon) <= delta:
            lo = mid
        else:
            hi = mid
    return lo


def pure_to_gdp_mu(epsilon: float) -> float:
    """ε-DP ⇒ μ-GDP with μ = −2Φ⁻¹(1/(1+e^ε)) (Dong, Roth & Su 2022, Prop. 2.5 with
    the convexity of G_μ: G_μ meets the ε-DP trade-off curve at its symmetric
    point and lies below the chord on each side)."""
    from scipy.special import ndtri

    epsilon = _validate.epsilon(epsilon)
    return float(-2 * ndtri(1 / (1 + math.exp(epsilon))))


def _pld_event(g: Guarantee, value_discretization: float) -> object:
    import dp_accounting as dpa

    pld = dpa.pld.privacy_loss_distribution
    if isinstance(g, GaussianDP):
        return pld.from_gaussian_mechanism(
            1.0 / g.mu, sensitivity=1.0, value_discretization_interval=value_discretization
        )
    if isinstance(g, PureDP | ApproxDP):
        a = g.to_approx()
        # The (ε, δ) pair's own PLD (randomised response): dominates every (ε, δ)-DP
        # mechanism, so it is valid whatever mechanism made the part.
        return pld.from_privacy_parameters(
            dpa.pld.common.DifferentialPrivacyParameters(a.epsilon, a.delta),
            value_discretization_interval=value_discretization,
        )
    raise TypeError(f"a {g.describe()} part has no privacy-loss distribution here")


def compose_parts(
    parts: list[Guarantee], delta: float, *, value_discretization: float = 1e-4
) -> ApproxDP:
    """(ε, δ) of the parts of ONE release declared up front, composed by privacy-loss
    distribution (Koskela et al. 2020; Doroshenko et al. 2022) with Google's
    ``dp-accounting``; its discretisation is pessimistic, so the ε is an upper bound.

    Only for parts fixed before any is released (a PLD total over adaptively
    chosen releases is not a privacy filter).  Pure and (ε, δ) parts use the
    PLD of their privacy parameters (the randomised-response pair, which
    dominates every mechanism with that guarantee); GaussianDP parts their
    exact Gaussian PLD.  zCDP parts are refused (no PLD from ρ alone).
    """
    if not parts:
        raise ParameterError("parts must be a non-empty list", parameter="parts")
    d = _validate.delta(delta, allow_zero=False)
    from collections import Counter

    total = None
    for g, k in Counter(parts).items():  # identical parts compose by self-composition (FFT)
        e = _pld_event(g, value_discretization)
        e = e.self_compose(k) if k > 1 else e
        total = e if total is None else total.compose(e)
    return ApproxDP(float(total.get_epsilon_for_delta(d)), d)


def _rdp_to_epsilon(alpha: float, rho: float, delta: float) -> float:
    """ε from (α, αρ)-RDP at δ (Canonne–Kamath–Steinke 2020, Prop. 12):
    ε = αρ + ln(1 − 1/α) − (ln δ + ln α)/(α − 1)."""
    return alpha * rho + math.log1p(-1 / alpha) - (math.log(delta) + math.log(alpha)) / (alpha - 1)


def zcdp_to_epsilon(rho: float, delta: float) -> float:
    """Smallest ε with ρ-zCDP ⇒ (ε, δ)-DP by the CKS 2020 conversion.

    Minimises over the Rényi order α > 1 and never returns more than the
    classic ρ + 2√(ρ ln 1/δ) (both are valid; the minimum is too).
    """
    rho = _validate.finite_positive(rho, "rho")
    delta = _validate.delta(delta, allow_zero=False)
    from scipy.optimize import minimize_scalar  # lazy: keeps CLI start-up fast

    classic = rho + 2 * math.sqrt(rho * math.log(1 / delta))
    # The optimum α is near 1 + sqrt(ln(1/δ)/ρ); search in log(α − 1).
    res = minimize_scalar(
        lambda t: _rdp_to_epsilon(1 + math.exp(t), rho, delta),
        bounds=(-20.0, 20.0),
        method="bounded",
        options={"xatol": 1e-10},
    )
    tight = float(res.fun) if res.success else math.inf
    return max(0.0, min(classic, tight))


def advanced_composition(guarantee: PureDP | ApproxDP, k: int, delta_prime: float) -> ApproxDP:
    """k-fold adaptive composition (Dwork, Rothblum & Vadhan 2010):
    (ε√(2k ln(1/δ′)) + kε(e^ε − 1), kδ + δ′)-DP.  Returns the better of this
    and basic composition (kε, kδ + δ′ is never needed: basic is kε, kδ)."""
    if not isinstance(k, int) or k < 1:
        raise ParameterError(f"k must be an integer >= 1, got {k!r}")
    dp = _validate.delta(delta_prime, "delta_prime", allow_zero=False)
    g = guarantee.to_approx()
    eps, dl = g.epsilon, g.delta
    adv_eps = eps * math.sqrt(2 * k * math.log(1 / dp)) + k * eps * math.expm1(eps)
    if adv_eps < k * eps and k * dl + dp < 1:
        return ApproxDP(adv_eps, k * dl + dp)
    return ApproxDP(k * eps, k * dl) if dl > 0 else ApproxDP(k * eps, 0.0)


def compose(guarantees: list[Guarantee]) -> Guarantee:
    """Basic composition of a list (zCDP-aware: all zCDP or pure → zCDP if any zCDP)."""
    if not guarantees:
        raise ParameterError("guarantees must be a non-empty list")
    total = guarantees[0]
    for g in guarantees[1:]:
        total = total + g
    return total
