"""Privacy calibrations of the smooth-sensitivity noise families.

``calibrate(family, epsilon, gamma, delta=None, **shape)`` returns the
unit-sensitivity noise Z: the mechanism releases q(x) + SS_γ(x)·Z where SS_γ
is a γ-smooth upper bound on the local sensitivity.  The mathematics of each
family lives in its class (the ``smooth_*`` hooks of
:class:`~instancedp.noise.base.NoiseDistribution`); this module only validates,
looks the family up in the registry and searches the best shape.  The
calibrations of the built-in families, per (ε, γ):

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
laplace_log_normal (Bun–Steinke 2019; PTR notes Prop. 15.1), shape ``sigma``
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
from scipy.optimize import minimize_scalar

from .. import _validate
from ..errors import ParameterError
from ..privacy import Guarantee
from .base import FAMILIES, NoiseDistribution, family_class, registered_families
from .laplace import claim18_laplace_std, laplace_shift_budget

__all__ = [
    "FAMILIES",
    "Calibration",
    "calibrate",
    "claim18_laplace_std",
    "laplace_shift_budget",
    "max_gamma",
]


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


# ---------------------------------------------------------------- generic search
def _unit_scale(cls: type, eps: float, gamma: float, delta: float | None, k: Any) -> float:
    """Scale of the unit-SS noise at shape k (inf when not admissible or not representable)."""
    try:
        return cls.smooth_unit_scale(eps, gamma, delta, k)
    except OverflowError:
        return math.inf


def _build(cls: type, eps: float, gamma: float, delta: float | None, k: Any):
    scale = _unit_scale(cls, eps, gamma, delta, k)
    if not math.isfinite(scale):
        return None
    return cls.smooth_noise(eps, gamma, delta, k, scale)


def _log_std(cls: type, eps: float, gamma: float, delta: float | None, k: float) -> float:
    """log std of the unit noise at shape k (inf where infinite or not admissible)."""
    scale = _unit_scale(cls, eps, gamma, delta, k)
    if not math.isfinite(scale) or scale <= 0:
        return math.inf
    return cls.smooth_log_std(scale, k)


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


def _iqr_log(cls: type, eps: float, gamma: float, delta: float | None, k: float) -> float:
    noise = _build(cls, eps, gamma, delta, k)
    if noise is None:
        return math.inf
    return math.log(float(noise.ppf(0.75)))


def _best_shape(cls: type, eps: float, gamma: float, delta: float | None) -> float:
    lo, hi = cls.smooth_shape_interval(eps, gamma, delta, True)
    if lo < hi:
        closed = cls.smooth_shape_closed_below(eps, gamma, lo)
        k = _minimise(lambda v: _log_std(cls, eps, gamma, delta, v), lo, hi, closed)
        if math.isfinite(k):
            return k
    # No shape with finite std: minimise the interquartile range instead.
    lo, hi = cls.smooth_shape_interval(eps, gamma, delta, False)
    return _minimise(lambda v: _iqr_log(cls, eps, gamma, delta, v), lo, hi)


# ---------------------------------------------------------------- public API
def _family(family: Any) -> type[NoiseDistribution]:
    """The registered class of a family with a smooth calibration (ValueError otherwise)."""
    if not isinstance(family, str) or family not in FAMILIES:
        raise ParameterError(f"family must be one of {', '.join(FAMILIES)}; got {family!r}")
    return family_class(family)


def _shape_arg(cls: type, shape: dict[str, Any]) -> float | None:
    name = cls.shape_name
    aliases: dict[str, str] = {}
    for other in registered_families():
        aliases.update(other.shape_aliases)
    given = {aliases.get(k, k): v for k, v in shape.items()}
    allowed = {name} if name else set()
    extra = set(given) - allowed
    if extra:
        what = f"the shape parameter {name!r}" if name else "no shape parameter"
        raise ParameterError(f"family {cls.family!r} takes {what}; got {sorted(extra)}")
    if name is None or name not in given:
        return None
    return cls.validate_shape(given[name])


def _delta_arg(cls: type, delta: Any) -> float | None:
    if cls.requires_delta:
        if delta is None:
            raise ParameterError(
                f"family {cls.family!r} with smooth sensitivity gives (epsilon, delta)-DP: "
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
    Each family's class computes its own bound (``smooth_max_gamma``).
    """
    cls = _family(family)
    eps = _validate.epsilon(epsilon)
    delta_v = _delta_arg(cls, delta)
    k = _shape_arg(cls, dict(shape))
    return cls.smooth_max_gamma(eps, delta_v, k, finite_std)


def calibrate(
    family: str, epsilon: float, gamma: float, delta: float | None = None, **shape: float
) -> Calibration:
    """Unit-sensitivity noise and guarantee for ``family`` at (ε, γ[, δ]).

    ``shape``: ``df`` (student_t), ``power`` (cauchy) or ``sigma`` (the
    log-normal and arsinh families); when omitted the std-minimising shape is
    chosen.  Raises ValueError when γ is outside (0, max_gamma).
    """
    cls = _family(family)
    eps = _validate.epsilon(epsilon)
    delta_v = _delta_arg(cls, delta)
    k = _shape_arg(cls, dict(shape))
    g = _validate.finite_positive(gamma, "gamma")
    name = cls.shape_name
    bound = cls.smooth_max_gamma(eps, delta_v, k, False)
    if not g < bound:
        raise ParameterError(
            f"gamma must be in (0, {bound:g}) for family {family!r} at epsilon={eps:g}"
            + (f", delta={delta_v:g}" if delta_v is not None else "")
            + (f", {name}={k:g}" if k is not None else "")
            + f"; got {gamma!r}"
        )
    if name is not None and k is None:
        k = _best_shape(cls, eps, g, delta_v)
    noise = _build(cls, eps, g, delta_v, k)
    if noise is None or not math.isfinite(noise.scale):
        raise ParameterError(
            f"gamma={g:g} is admissible for {family!r} at epsilon={eps:g} only with a noise "
            "scale beyond floating point; choose a smaller gamma"
        )
    return Calibration(
        family=family,
        epsilon=eps,
        gamma=g,
        delta=delta_v,
        shape={name: k} if name is not None else {},
        noise=noise,
        guarantee=cls.smooth_guarantee(eps, delta_v),
    )
