"""Noise calibrated to global sensitivity: the Laplace and Gaussian baselines.

- Laplace (Dwork, McSherry, Nissim & Smith 2006): f(x) + Lap(GS/ε) is ε-DP.
- Gaussian, three calibrations of σ for (ε, δ)-DP with L2 sensitivity Δ:
  * ``"classic"``: σ = √(2 ln(1.25/δ))·Δ/ε (Dwork & Roth 2014, Thm. A.1; only
    proven for ε < 1, so refused otherwise);
  * ``"canard_olivier"``: Canard–Olivier Prop. 11 — density ∝ e^{−λy²} with
    √λ = (√(C² + ε) − C)/Δ, C = h^{−1}(2√π δ), h(y) = e^{−y²}/y, i.e.
    σ = 1/√(2λ).  ``remark13=True`` takes the simpler C = √ln(1/(2√π δ)) of
    Remark 13 (valid while that C ≥ 1, i.e. δ ≤ e^{−1}/(2√π));
  * ``"analytic"``: Balle & Wang 2018 (ICML, Thm. 8) — the smallest σ whose
    exact privacy profile δ(ε) = Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ) is ≤ δ.
"""

from __future__ import annotations

import math
import sys
from typing import Any

import numpy as np
from scipy.optimize import brentq
from scipy.special import log_ndtr

from .. import _validate
from ..errors import ParameterError
from ..privacy import ApproxDP, PureDP
from ..queries.base import Query
from ..random import RandomSource
from .base import Mechanism, OutputDistribution, _legacy_positional, add_noise

CALIBRATIONS = ("analytic", "classic", "canard_olivier")


def gaussian_delta(sigma: float, epsilon: float, sensitivity: float = 1.0) -> float:
    """Exact δ(ε) of N(0, σ²) noise at L2 sensitivity Δ (Balle & Wang 2018, Thm. 8).

    δ(ε) = Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ), evaluated in log space so
    that tiny δ keep their relative accuracy.
    """
    sigma = _validate.finite_positive(sigma, "sigma")
    epsilon = _validate.nonnegative(epsilon, "epsilon")
    sens = _validate.finite_positive(sensitivity, "sensitivity")
    u, v = sens / (2 * sigma), epsilon * sigma / sens
    log_a, log_b = float(log_ndtr(u - v)), float(log_ndtr(-u - v))
    # δ = Φ(a)·(1 − e^{ε + log Φ(b) − log Φ(a)}); the exponent is ≤ 0.
    x = min(epsilon + log_b - log_a, 0.0)
    return float(math.exp(log_a) * -math.expm1(x))


def classic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """σ = √(2 ln(1.25/δ))·Δ/ε (Dwork & Roth 2014, Thm. A.1), for 0 < ε < 1."""
    epsilon = _validate.in_open_interval(epsilon, "epsilon", 0.0, 1.0)
    delta = _validate.delta(delta, allow_zero=False)
    sens = _validate.finite_positive(sensitivity, "sensitivity")
    return math.sqrt(2 * math.log(1.25 / delta)) * sens / epsilon


def _h_inverse(target: float) -> float:
    """C > 0 with h(C) = e^{−C²}/C = target (h decreases from ∞ to 0 on (0, ∞))."""
    log_target = math.log(target)

    def g(y: float) -> float:
        return -y * y - math.log(y) - log_target

    lo, hi = 1e-300, 1.0
    while g(hi) > 0:
        hi *= 2
    return brentq(g, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=500)


def canard_olivier_gaussian_sigma(
    epsilon: float,
    delta: float,
    sensitivity: float = 1.0,
    *,
    remark13: bool = False,
    two_sided: bool = False,
) -> float:
    """σ of Canard & Olivier's Gaussian (Canard–Olivier Prop. 11; Remark 13 if ``remark13``).

    √λ = (√(C² + ε) − C)/Δ and σ = 1/√(2λ) = Δ / (√2 (√(C² + ε) − C)).

    The paper's C = h^{−1}(2√π δ) bounds one tail of Z by δ, but its set E_x
    excludes both tails, so P(A(x) ∉ E_x) = erfc(C) ≈ 2δ (1.9e−5 at ε = 1,
    δ = 1e−5).  The mechanism is still (ε, δ)-DP — its exact δ(ε) is far below
    δ — but (ε, δ)-DP *in distribution* needs C = h^{−1}(√π δ):
    ``two_sided=True`` uses that constant.
    """
    epsilon = _validate.epsilon(epsilon)
    delta = _validate.delta(delta, allow_zero=False)
    sens = _validate.finite_positive(sensitivity, "sensitivity")
    target = (1.0 if two_sided else 2.0) * math.sqrt(math.pi) * delta
    if remark13:
        if target >= math.exp(-1):
            raise ParameterError(
                "delta must be <= exp(-1)/(2 sqrt(pi)) ~ 0.1038 (half that with two_sided) "
                f"for the Remark 13 estimate, got {delta!r}"
            )
        c = math.sqrt(math.log(1 / target))
    else:
        c = _h_inverse(target)
    # √(C² + ε) − C = ε / (√(C² + ε) + C), without cancellation for large C.
    sqrt_lam = epsilon / (math.sqrt(c * c + epsilon) + c) / sens
    return 1.0 / (math.sqrt(2.0) * sqrt_lam)


def analytic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """Smallest σ with exact δ(ε) ≤ δ (Balle & Wang 2018, Alg. 1 by root finding).

    δ(ε; σ) decreases in σ; the root is bracketed and then nudged up so that
    gaussian_delta(σ) ≤ δ holds in floating point (relative gap ≲ 1e-12).
    """
    epsilon = _validate.epsilon(epsilon)
    delta = _validate.delta(delta, allow_zero=False)
    sens = _validate.finite_positive(sensitivity, "sensitivity")
    log_delta = math.log(delta)

    def g(log_s: float) -> float:
        d = gaussian_delta(math.exp(log_s), epsilon)
        return (math.log(d) if d > 0 else -math.inf) - log_delta

    lo, hi = math.log(1e-3 / (1 + epsilon)), math.log(10.0)
    while g(lo) < 0:
        lo -= 2.0
    while g(hi) > 0:
        hi += 2.0
    root = brentq(g, lo, hi, xtol=1e-14, rtol=4 * np.finfo(float).eps, maxiter=500)
    sigma = math.exp(root)
    while gaussian_delta(sigma, epsilon) > delta:
        sigma = math.nextafter(sigma, math.inf)
    return sigma * sens


def gaussian_sigma(
    epsilon: float, delta: float, sensitivity: float = 1.0, calibration: str = "analytic"
) -> float:
    """σ for one of ``CALIBRATIONS``."""
    if calibration == "analytic":
        return analytic_gaussian_sigma(epsilon, delta, sensitivity)
    if calibration == "classic":
        return classic_gaussian_sigma(epsilon, delta, sensitivity)
    if calibration == "canard_olivier":
        return canard_olivier_gaussian_sigma(epsilon, delta, sensitivity)
    raise ParameterError(f"calibration must be one of {CALIBRATIONS}, got {calibration!r}")


def _global_sensitivity(query: Query, attr: str = "global_sensitivity") -> float:
    if not hasattr(query, "value"):
        raise ParameterError(
            "query must be an instancedp Query (with value and global_sensitivity)"
        )
    gs = getattr(query, attr, None)
    if gs is None and attr != "global_sensitivity":
        gs = getattr(query, "global_sensitivity", None)
    try:
        gs = float(gs)
    except (TypeError, ValueError):
        gs = math.nan
    if gs == math.inf and hasattr(query, "lower") and hasattr(query, "upper"):
        # finite bounds whose sensitivity overflows (a sum's rounding slack covers 2^32 rows)
        rows = getattr(query, "MAX_ROWS", None)
        most = f": |lower| and |upper| at most {sys.float_info.max / rows:.3g}" if rows else ""
        raise ParameterError(
            f"bounds ({query.lower!r}, {query.upper!r}) are too large: the query's global "
            f"sensitivity overflows{most}",
            parameter="bounds",
            allowed=f"|lower|, |upper| <= {sys.float_info.max / rows:.3g}" if rows else None,
        )
    if not (math.isfinite(gs) and gs > 0):
        raise ParameterError(
            f"query global sensitivity must be finite and > 0 for a global-noise mechanism, "
            f"got {gs!r}; for unbounded queries use an instance-adaptive mechanism "
            "(smooth sensitivity, PTR, levels) or give the query public bounds"
        )
    return gs


def _unit(family: str):
    if family == "laplace":
        from ..noise.laplace import Laplace

        return Laplace(1.0)
    from ..noise.gaussian import Gaussian

    return Gaussian(1.0)


class LaplaceMechanism(Mechanism):
    """f(x) + Lap(GS/ε): ε-DP for the query's neighbour relation (Dwork et al. 2006)."""

    name = "laplace"
    projects_to_range = True

    def __init__(self, query: Query, epsilon: float, *, delta: float | None = None) -> None:
        if delta is not None:
            raise ParameterError(
                "the Laplace mechanism is pure epsilon-DP: leave delta unset",
                parameter="delta",
                allowed="None",
            )
        self.epsilon = _validate.epsilon(epsilon)
        self.sensitivity = _global_sensitivity(query)
        self.query = query
        self.scale = self.sensitivity / self.epsilon

    @property
    def guarantee(self) -> PureDP:
        return PureDP(self.epsilon)

    def mechanism_parameters(self) -> dict[str, Any]:
        return {"global_sensitivity": self.sensitivity, "scale": self.scale}

    def _state(self, data: Any) -> float:
        return float(self.query.value(data))

    def _draw(self, state: float, source: RandomSource, size: int | None) -> Any:
        return self._project(add_noise(state, self.scale, _unit("laplace"), source, size))

    def output_distribution(self, data: Any) -> OutputDistribution:
        """Exact law: Lap(f(x), GS/ε).

        Theorem (Dwork, McSherry, Nissim & Smith 2006, Prop. 1): for neighbours
        |f(x) − f(x′)| ≤ GS, so the two Laplace densities differ by at most
        exp(ε·|f(x) − f(x′)|/GS) ≤ e^ε pointwise.  The secure path returns the
        correctly rounded real sum, so the rounding is post-processing of the
        exact law (Mironov 2012's attack does not apply); so is the projection
        onto the public range (the law returned is the clamped one)."""
        return self._project_law(
            OutputDistribution.additive(self._state(data), self.scale, _unit("laplace")))


class GaussianMechanism(Mechanism):
    """f(x) + N(0, σ²) with σ from one of three calibrations; (ε, δ)-DP.

    Uses the query's L2 global sensitivity (``l2_sensitivity`` if the query
    has one, else ``global_sensitivity``, which equals it for scalar queries).
    The old positional form ``GaussianMechanism(query, epsilon, delta)`` still works.
    """

    name = "gaussian"
    projects_to_range = True

    def __init__(
        self,
        query: Query,
        epsilon: float,
        *legacy: Any,
        delta: float | None = None,
        calibration: str = "analytic",
    ) -> None:
        delta, calibration = _legacy_positional(
            legacy, ("delta", "calibration"), delta, calibration
        )
        if calibration not in CALIBRATIONS:
            raise ParameterError(
                f"calibration must be one of {CALIBRATIONS}, got {calibration!r}",
                parameter="calibration",
                allowed=", ".join(CALIBRATIONS),
            )
        if delta is None:
            raise ParameterError(
                "the Gaussian mechanism is (epsilon, delta)-DP: pass delta in (0, 1)",
                parameter="delta",
                allowed="(0, 1)",
            )
        self.epsilon = _validate.epsilon(epsilon)
        self.delta = _validate.delta(delta, allow_zero=False)
        self.sensitivity = _global_sensitivity(query, "l2_sensitivity")
        self.calibration = calibration
        self.query = query
        self.sigma = gaussian_sigma(self.epsilon, self.delta, self.sensitivity, calibration)

    @property
    def guarantee(self) -> ApproxDP:
        return ApproxDP(self.epsilon, self.delta)

    def mechanism_parameters(self) -> dict[str, Any]:
        return {
            "calibration": self.calibration,
            "l2_sensitivity": self.sensitivity,
            "sigma": self.sigma,
        }

    def _state(self, data: Any) -> float:
        return float(self.query.value(data))

    def _draw(self, state: float, source: RandomSource, size: int | None) -> Any:
        return self._project(add_noise(state, self.sigma, _unit("gaussian"), source, size))

    def output_distribution(self, data: Any) -> OutputDistribution:
        """Exact law: N(f(x), σ²).

        Theorem (Balle & Wang 2018, Thm. 8, for ``analytic``; Dwork & Roth 2014,
        Thm. A.1, for ``classic``; Canard & Olivier, Prop. 11): the privacy
        profile of two Gaussians whose means differ by ≤ Δ₂ is below δ at ε for
        the σ chosen; the secure path rounds the exact real sum and projects it onto
        the public range (post-processing; the law returned is the clamped one)."""
        return self._project_law(
            OutputDistribution.additive(self._state(data), self.sigma, _unit("gaussian")))
