"""Privacy calibrations of the smooth-sensitivity noise families.

``calibrate(family, epsilon, gamma, delta=None, **shape)`` returns the
unit-sensitivity noise Z: the mechanism releases q(x) + SS_γ(x)·Z where SS_γ
is a γ-smooth upper bound on the local sensitivity.  Per family (ε, γ):

polyplace (Hladík–Tětek 2025, Thm. 8)
    Z = PolyPlace(1/γ, ε/γ); pure ε-DP for 0 < γ < ε (finite std for γ < ε/2).
student_t (Bun–Steinke 2019; Hladík–Tětek Claim 17), shape ``df`` = d > 0
    loss ≤ |λ_r|(d+1) + |λ_s|(d+1)/(2√d)  ⇒  Z = StudentT(d, (d+1)/(2√d(ε − γ(d+1)))),
    pure ε-DP for γ < ε/(d+1) (finite std for d > 2).
cauchy (NRS 2007 Lemma 2.7; Hladík–Tětek Claim 16), shape ``power`` = c > 1
    loss ≤ (|λ_r| + |λ_s|)(c+1)  ⇒  Z = GeneralizedCauchy(c, (c+1)/(ε − γ(c+1))),
    pure ε-DP for γ < ε/(c+1) (finite std for c > 3).
laplace (NRS 2007 Lemma 2.5; Hladík–Tětek Claim 18), needs δ
    Claim 18 reads Z = Lap(1/(ε − γ ln(2/δ))) for γ < ε/ln(2/δ); that constant
    fails the exact hockey-stick check at large δ (see :func:`laplace_shift_budget`),
    so instancedp uses the provably safe Z = Lap(1/r),
    r = min(ε, (ε−γ)e^γ, ε + γ − (e^γ−1)ln(1/δ)), (ε, δ)-DP wherever r > 0.
laplace_log_normal (Bun–Steinke 2019; seed 003 Prop. 15.1), shape ``sigma``
    ε = γ/σ + e^{3σ²/2}·s  ⇒  Z = LLN(σ, e^{3σ²/2}/(ε − γ/σ)), ½ε²-CDP for σ > γ/ε.
uniform_log_normal (Bun–Steinke 2019), shape ``sigma`` ≥ √2
    ε = γ/σ + e^{3σ²/2}·√(2/(πσ²))·s  ⇒  Z = ULN(σ, e^{3σ²/2}√(2/(πσ²))/(ε − γ/σ)).
arsinh_normal (Bun–Steinke 2019), shape ``sigma``
    ε = (2/(3σ) + σ/2)·s + √(γ(γ/σ² + 1/σ + 2))  ⇒  Z = sinh(σY)/σ scaled by
    (2/(3σ) + σ/2)/(ε − √(γ(γ/σ² + 1/σ + 2))).  These constants were read from a
    public reimplementation (the paper text was not available to check); the
    Rényi checks pass with room to spare, see docs/noise.md.

Here λ_r = ln(SS(x′)/SS(x)) (|λ_r| ≤ γ) and λ_s = (q(x′) − q(x))/SS(x) (|λ_s| ≤ 1);
for the zCDP families "½ε²-CDP" is ``ZCDP(rho=ε²/2)`` and, for the unit noise Z,
D_α(Z ‖ e^t Z + s) ≤ αε²/2 for |t| ≤ γ, |s| ≤ 1 and every α > 1.  Every
calibration is checked numerically in ``tests/test_noise_privacy.py``
(log-density ratios for pure DP, the hockey-stick divergence for Laplace,
Rényi divergences by quadrature for the zCDP families).

When the caller fixes no shape, the shape minimising ``std`` is chosen (a
log-spaced grid, then a bounded Brent search around the best grid point).
When every admissible shape gives an infinite std (e.g. Student t with
γ ≥ ε/3), the shape minimising the interquartile range is chosen instead and
``std`` is ``inf``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.optimize import brentq, minimize_scalar

from .. import _validate
from ..privacy import ZCDP, ApproxDP, Guarantee, PureDP
from .base import NoiseDistribution
from .cauchy import GeneralizedCauchy
from .laplace import Laplace
from .lognormal import ArsinhNormal, LaplaceLogNormal, UniformLogNormal
from .polyplace import PolyPlace
from .student_t import StudentT

FAMILIES: tuple[str, ...] = (
    "polyplace",
    "student_t",
    "cauchy",
    "laplace",
    "laplace_log_normal",
    "uniform_log_normal",
    "arsinh_normal",
)

# The one shape parameter of each family (None: no free shape).
_SHAPE_NAME: dict[str, str | None] = {
    "polyplace": None,
    "student_t": "df",
    "cauchy": "power",
    "laplace": None,
    "laplace_log_normal": "sigma",
    "uniform_log_normal": "sigma",
    "arsinh_normal": "sigma",
}
_ALIASES = {"d": "df", "c": "power"}
_SQRT2 = math.sqrt(2.0)


@dataclass(frozen=True)
class Calibration:
    """Unit-sensitivity noise Z for (family, ε, γ[, δ]): release q(x) + SS_γ(x)·Z."""

    family: str
    epsilon: float
    gamma: float
    delta: float | None
    shape: Mapping[str, float]
    noise: NoiseDistribution
    guarantee: Guarantee
    std: float = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", dict(self.shape))
        object.__setattr__(self, "std", self.noise.std())

    def parameters(self) -> dict[str, Any]:
        """Public parameters (for Release records): family, ε, γ, δ and shape."""
        out: dict[str, Any] = {"family": self.family, "epsilon": self.epsilon, "gamma": self.gamma}
        if self.delta is not None:
            out["delta"] = self.delta
        out.update(self.shape)
        return out


# ---------------------------------------------------------------- per family
def laplace_shift_budget(epsilon: float, gamma: float, delta: float) -> float:
    """r = 1/scale of the unit Laplace noise with smooth sensitivity, (ε, δ)-DP.

    r = min(ε, (ε−γ)e^γ, ε + γ − (e^γ − 1)·ln(1/δ)), provably safe: with
    w ~ Lap(1), dilation λ = ln(SS′/SS) and shift s (|s| ≤ r·min(1, e^λ)) the
    privacy loss is L(w) = −|w| + e^{−λ}|w − s| + λ ≤ (e^{−λ} − 1)|w| + λ + e^{−λ}|s|.
    For λ ≥ 0 that is ≤ max(r, γ + re^{−γ}) ≤ ε everywhere; for λ = −μ < 0 it
    exceeds ε only when |w| > (ε − r + μ)/(e^μ − 1), an event of probability
    ≤ δ at μ = γ (the worst μ), and the hockey-stick divergence is at most that
    probability.  This replaces Claim 18's r = ε − γ ln(2/δ), which the exact
    hockey-stick check finds violated (δ_actual = 0.109 > δ = 0.1 at ε = 4,
    γ = 0.99·ε/ln(2/δ)); for small δ the safe r is also the larger one at
    small γ.  Non-positive r: γ not admissible.
    """
    g = gamma
    tail = epsilon + g - math.expm1(g) * math.log(1.0 / delta)
    return min(epsilon, (epsilon - g) * math.exp(g), tail)


def claim18_laplace_std(epsilon: float, gamma: float, delta: float) -> float:
    """Hladík–Tětek Claim 18's std √2/(ε − γ ln(2/δ)) (published; for comparison only).

    ``nan`` where Claim 18 does not apply (γ ≥ ε/ln(2/δ)).
    """
    rest = epsilon - gamma * math.log(2.0 / delta)
    return math.sqrt(2.0) / rest if rest > 0 else math.nan


def _laplace_max_gamma(epsilon: float, delta: float) -> float:
    """Root γ of ε + γ = (e^γ − 1)ln(1/δ), capped at ε (where r reaches 0)."""
    ell = math.log(1.0 / delta)

    def g(x: float) -> float:
        return epsilon + x - math.expm1(x) * ell

    hi = 1.0
    while g(hi) > 0:
        hi *= 2.0
    return min(epsilon, brentq(g, 0.0, hi, xtol=1e-15, rtol=1e-15))


def _arsinh_dilation_cost(gamma: float, sigma: float) -> float:
    """The γ-part of the arsinh-normal ε: √(γ(γ/σ² + 1/σ + 2))."""
    return math.sqrt(gamma * (gamma / sigma**2 + 1.0 / sigma + 2.0))


def _unit_scale(family: str, eps: float, gamma: float, delta: float | None, k: float) -> float:
    """Scale of the unit-SS noise at shape k (inf when not admissible or not representable)."""
    try:
        return _unit_scale_raw(family, eps, gamma, delta, k)
    except OverflowError:
        return math.inf


def _unit_scale_raw(family: str, eps: float, gamma: float, delta: float | None, k: float) -> float:
    if family == "polyplace":
        return 1.0 / gamma if gamma < eps else math.inf
    if family == "student_t":
        rest = eps - gamma * (k + 1.0)
        return (k + 1.0) / (2.0 * math.sqrt(k) * rest) if rest > 0 else math.inf
    if family == "cauchy":
        rest = eps - gamma * (k + 1.0)
        return (k + 1.0) / rest if rest > 0 else math.inf
    if family == "laplace":
        rest = laplace_shift_budget(eps, gamma, delta)
        return 1.0 / rest if rest > 0 else math.inf
    if family == "laplace_log_normal":
        rest = eps - gamma / k
        return math.exp(1.5 * k * k) / rest if rest > 0 else math.inf
    if family == "uniform_log_normal":
        rest = eps - gamma / k
        coef = math.exp(1.5 * k * k) * math.sqrt(2.0 / (math.pi * k * k))
        return coef / rest if rest > 0 else math.inf
    if family == "arsinh_normal":
        rest = eps - _arsinh_dilation_cost(gamma, k)
        return (2.0 / (3.0 * k) + k / 2.0) / rest if rest > 0 else math.inf
    raise AssertionError(family)


def _build(family: str, eps: float, gamma: float, delta: float | None, k: float | None):
    scale = _unit_scale(family, eps, gamma, delta, k if k is not None else 0.0)
    if not math.isfinite(scale):
        return None
    if family == "polyplace":
        return PolyPlace(1.0 / gamma, eps / gamma)
    if family == "student_t":
        return StudentT(k, scale)
    if family == "cauchy":
        return GeneralizedCauchy(k, scale)
    if family == "laplace":
        return Laplace(scale)
    if family == "laplace_log_normal":
        return LaplaceLogNormal(k, scale)
    if family == "uniform_log_normal":
        return UniformLogNormal(k, scale)
    return ArsinhNormal(k, scale)


def _log_std(family: str, eps: float, gamma: float, delta: float | None, k: float) -> float:
    """log std of the unit noise at shape k, in closed form (inf where infinite)."""
    scale = _unit_scale(family, eps, gamma, delta, k)
    if not math.isfinite(scale) or scale <= 0:
        return math.inf
    if family == "student_t":
        return math.log(scale) + 0.5 * math.log(k / (k - 2.0)) if k > 2 else math.inf
    if family == "cauchy":
        if k <= 3:
            return math.inf
        return math.log(scale) + 0.5 * math.log(math.sin(math.pi / k) / math.sin(3 * math.pi / k))
    if family == "laplace_log_normal":
        return math.log(scale) + 0.5 * math.log(2.0) + k * k
    if family == "uniform_log_normal":
        return math.log(scale) + k * k - 0.5 * math.log(3.0)
    if family == "arsinh_normal":
        x = 2 * k * k  # log((e^x − 1)/x) without overflow
        log_var = x + math.log(-math.expm1(-x)) - math.log(x)
        return math.log(scale) + 0.5 * log_var
    raise AssertionError(family)


def _shape_interval(
    family: str, eps: float, gamma: float, delta: float | None, finite_std: bool
) -> tuple[float, float]:
    """Open interval of privacy-admissible shapes (restricted to finite std if asked)."""
    if family == "student_t":
        return (2.0 if finite_std else 0.0), eps / gamma - 1.0
    if family == "cauchy":
        return (3.0 if finite_std else 1.0), eps / gamma - 1.0
    if family == "laplace_log_normal":
        return gamma / eps, gamma / eps + 6.0
    if family == "uniform_log_normal":
        return max(_SQRT2, gamma / eps), max(_SQRT2, gamma / eps) + 6.0
    if family == "arsinh_normal":
        lo = _arsinh_sigma_min(eps, gamma)
        return lo, lo + 8.0
    raise AssertionError(family)


def _arsinh_sigma_min(eps: float, gamma: float) -> float:
    """Infimum of the σ with √(γ(γ/σ² + 1/σ + 2)) < ε (inf when none: 2γ ≥ ε²)."""
    if 2.0 * gamma >= eps * eps:
        return math.inf
    # γ/σ² + 1/σ + 2 − ε²/γ = 0 is a quadratic in 1/σ: take its positive root.
    c = 2.0 - eps * eps / gamma
    inv = (-1.0 + math.sqrt(1.0 - 4.0 * gamma * c)) / (2.0 * gamma)
    return 1.0 / inv if inv > 0 else math.inf


def _minimise(f: Callable[[float], float], lo: float, hi: float, closed_lo: bool = False) -> float:
    """argmin of f on (lo, hi) ([lo, hi) if ``closed_lo``): log grid, then bounded Brent."""
    if lo > 0:
        grid = np.exp(np.linspace(math.log(lo), math.log(hi), 402)[1:-1])
    else:
        grid = np.linspace(lo, hi, 402)[1:-1]
    if closed_lo:
        grid = np.concatenate([[lo], grid])
    vals = np.array([f(float(g)) for g in grid])
    i = int(np.argmin(vals))
    if not math.isfinite(vals[i]):
        return math.nan
    a = float(grid[max(i - 1, 0)]) if i > 0 else lo + 0.5 * (grid[0] - lo)
    b = float(grid[min(i + 1, grid.size - 1)]) if i < grid.size - 1 else hi - 0.5 * (hi - grid[-1])
    res = minimize_scalar(f, bounds=(a, b), method="bounded", options={"xatol": 1e-10})
    return float(res.x) if res.fun < vals[i] else float(grid[i])


def _iqr_log(family: str, eps: float, gamma: float, delta: float | None, k: float) -> float:
    noise = _build(family, eps, gamma, delta, k)
    if noise is None:
        return math.inf
    return math.log(float(noise.ppf(0.75)))


# ---------------------------------------------------------------- public API
def _family(family: Any) -> str:
    if family not in FAMILIES:
        raise ValueError(f"family must be one of {', '.join(FAMILIES)}; got {family!r}")
    return family


def _shape_arg(family: str, shape: dict[str, Any]) -> float | None:
    name = _SHAPE_NAME[family]
    given = {_ALIASES.get(k, k): v for k, v in shape.items()}
    allowed = {name} if name else set()
    extra = set(given) - allowed
    if extra:
        what = f"the shape parameter {name!r}" if name else "no shape parameter"
        raise ValueError(f"family {family!r} takes {what}; got {sorted(extra)}")
    if name is None or name not in given:
        return None
    k = given[name]
    if family == "student_t":
        return _validate.finite_positive(k, "df")
    if family == "cauchy":
        return _validate.in_open_interval(k, "power", 1.0, math.inf)
    if family == "uniform_log_normal":
        v = _validate.finite_positive(k, "sigma")
        if v < _SQRT2:
            raise ValueError(f"sigma must be >= sqrt(2) for uniform_log_normal, got {k!r}")
        return v
    return _validate.finite_positive(k, "sigma")


def _delta_arg(family: str, delta: Any) -> float | None:
    if family == "laplace":
        if delta is None:
            raise ValueError(
                "family 'laplace' with smooth sensitivity gives (epsilon, delta)-DP: "
                "pass delta in (0, 1)"
            )
        return _validate.delta(delta, allow_zero=False)
    if delta is not None:
        _validate.delta(delta)  # still reject garbage, but the family does not use it
    return None


def max_gamma(
    family: str, epsilon: float, delta: float | None = None, *, finite_std: bool = False, **shape
) -> float:
    """Supremum of the admissible smoothness γ for (family, ε[, δ][, shape]).

    Privacy-admissible (default): the calibration exists for every
    0 < γ < max_gamma — PolyPlace ε; Student t ε/(d+1) (ε with d free, d → 0);
    Cauchy ε/(c+1) (ε/2 with c free, c → 1); Laplace the root of
    ε + γ = (e^γ − 1)ln(1/δ) (capped at ε);
    LLN ε·σ (∞ with σ free); ULN ε·σ (∞ with σ free); arsinh-normal the
    root of √(γ(γ/σ² + 1/σ + 2)) = ε (ε²/2 with σ free).
    ``finite_std=True``: the bound below which the best std is finite —
    PolyPlace ε/2, Student t ε/3, Cauchy ε/4 (or ε/(d+1), ε/(c+1) for a
    fixed shape with finite variance, 0 when the shape's variance is infinite);
    the other families have finite std wherever they are admissible.
    """
    family = _family(family)
    eps = _validate.epsilon(epsilon)
    delta_v = _delta_arg(family, delta)
    k = _shape_arg(family, dict(shape))
    if family == "polyplace":
        return eps / 2.0 if finite_std else eps
    if family == "laplace":
        return _laplace_max_gamma(eps, delta_v)
    if family in ("student_t", "cauchy"):
        var_min = 2.0 if family == "student_t" else 3.0
        if k is None:
            return (
                eps / (var_min + 1.0)
                if finite_std
                else eps / (1.0 if family == "student_t" else 2.0)
            )
        if finite_std and k <= var_min:
            return 0.0
        return eps / (k + 1.0)
    if family in ("laplace_log_normal", "uniform_log_normal"):
        return math.inf if k is None else eps * k
    # arsinh_normal: γ(γ/σ² + 1/σ + 2) = ε² is a quadratic in γ.
    if k is None:
        return eps * eps / 2.0
    a, b = 1.0 / k**2, 1.0 / k + 2.0
    return (-b + math.sqrt(b * b + 4.0 * a * eps * eps)) / (2.0 * a)


def calibrate(
    family: str, epsilon: float, gamma: float, delta: float | None = None, **shape: float
) -> Calibration:
    """Unit-sensitivity noise and guarantee for ``family`` at (ε, γ[, δ]).

    ``shape``: ``df`` (student_t), ``power`` (cauchy) or ``sigma`` (the
    log-normal and arsinh families); when omitted the std-minimising shape is
    chosen.  Raises ValueError when γ is outside (0, max_gamma).
    """
    family = _family(family)
    eps = _validate.epsilon(epsilon)
    delta_v = _delta_arg(family, delta)
    k = _shape_arg(family, dict(shape))
    g = _validate.finite_positive(gamma, "gamma")
    bound = max_gamma(family, eps, delta_v, **({_SHAPE_NAME[family]: k} if k is not None else {}))
    if not g < bound:
        raise ValueError(
            f"gamma must be in (0, {bound:g}) for family {family!r} at epsilon={eps:g}"
            + (f", delta={delta_v:g}" if delta_v is not None else "")
            + (f", {_SHAPE_NAME[family]}={k:g}" if k is not None else "")
            + f"; got {gamma!r}"
        )
    name = _SHAPE_NAME[family]
    if name is not None and k is None:
        k = _best_shape(family, eps, g, delta_v)
    noise = _build(family, eps, g, delta_v, k)
    if noise is None or not math.isfinite(noise.scale):
        raise ValueError(
            f"gamma={g:g} is admissible for {family!r} at epsilon={eps:g} only with a noise "
            "scale beyond floating point; choose a smaller gamma"
        )
    guarantee: Guarantee
    if family in ("laplace_log_normal", "uniform_log_normal", "arsinh_normal"):
        guarantee = ZCDP(eps * eps / 2.0)
    elif family == "laplace":
        guarantee = ApproxDP(eps, delta_v)
    else:
        guarantee = PureDP(eps)
    return Calibration(
        family=family,
        epsilon=eps,
        gamma=g,
        delta=delta_v,
        shape={name: k} if name is not None else {},
        noise=noise,
        guarantee=guarantee,
    )


def _best_shape(family: str, eps: float, gamma: float, delta: float | None) -> float:
    lo, hi = _shape_interval(family, eps, gamma, delta, finite_std=True)
    if lo < hi:
        # ULN's σ ≥ √2 is a closed constraint (and its std increases with σ there).
        closed = family == "uniform_log_normal" and lo == _SQRT2 and gamma / eps < _SQRT2
        k = _minimise(lambda v: _log_std(family, eps, gamma, delta, v), lo, hi, closed)
        if math.isfinite(k):
            return k
    # No shape with finite std: minimise the interquartile range instead.
    lo, hi = _shape_interval(family, eps, gamma, delta, finite_std=False)
    return _minimise(lambda v: _iqr_log(family, eps, gamma, delta, v), lo, hi)
