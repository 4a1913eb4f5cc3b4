"""Smooth-sensitivity mechanisms: M(x) = q(x) + SS_γ(x)·Z.

Nissim, Raskhodnikova & Smith 2007 (NRS, Def. 2.2 and Lemma 2.5/2.6) with the
noise families and calibrations of ``instancedp.noise.calibrate``:

* ``"polyplace"`` — Hladík & Tětek 2024, Thm. 8:
  q(x) + PolyPlace(SS_γ(x)/γ, ε/γ) is ε-DP for 0 < γ < ε;
* ``"student_t"``, ``"cauchy"`` — Bun & Steinke 2019; NRS (Hladík–Tětek Claims 16, 17): ε-DP;
* ``"laplace"`` — NRS Lemma 2.5 (Hladík–Tětek Claim 18): (ε, δ)-DP, needs ``delta``;
* ``"laplace_log_normal"``, ``"uniform_log_normal"``, ``"arsinh_normal"`` —
  Bun & Steinke 2019 (PTR notes Prop. 15.1): ½ε²-CDP, reported as ``ZCDP``.

In every case the smoothness parameter of the sensitivity (β in NRS, t in
Bun–Steinke) is γ: the release computes ``query.smooth_sensitivity(data, beta=γ)``
and ``calibrate`` returns the unit noise Z for that γ.

Default γ (``gamma=None``): :func:`default_gamma`, a rule that depends only on
public parameters (query kind, family, ε, δ and — under substitution
neighbours, where it is public — n), chosen by the synthetic-data study in
``benchmarks/gamma.py`` (``docs/results/gamma.md``; ``docs/mechanisms.md``).
Under add/remove neighbours n is not public and the rule ignores it unless the
caller passes a public size ``n=``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import _validate
from ..errors import ParameterError
from ..noise.base import FAMILIES, RegistryView, family_class
from ..privacy import Guarantee
from ..random import RandomSource
from .base import Mechanism, OutputDistribution, _legacy_positional, add_noise

# Families whose smooth calibration gives (ε, δ)-DP (a live view of the registry).
APPROX_FAMILIES = RegistryView(
    lambda c: c.has_smooth_calibration() and c.requires_delta, lambda c: c.family
)
# Floating-point-safe smooth scales.  A computed SS(x) is the real one up to a
# relative error κ·2^−53 (κ ≲ 10³ for the closed forms the queries use: max_k of
# e^{−kβ}·LS_k with kβ ≲ 745 above the floor), *provided it is a normal double*:
# in the subnormal range one unit of 2^−1074 is the whole value, and ln SS jumps by
# ln 2 between neighbours whatever β is.  So (i) SS is floored at a public constant
# far inside the normal range — a max of a γ-smooth bound and a constant is still a
# γ-smooth bound — and (ii) SS is computed at β = γ − margin and rounded up by the
# relative error bound, so that the rounded scale S satisfies S ≥ LS and
# S(x)/S(x′) ≤ e^{β}(1 + 2^−40)²/(1 − 2^−40)·(1 + 2^−52)⁴ ≤ e^{γ} (also after the
# 16-ulp raise of the release path, a further factor ≤ 1 + 2^−47).
_SS_REL_ERR = 2.0**-40  # bound on the relative error of a computed (normal) SS
_FLOOR_MIN = 2.0**-1000  # 22 binades above the subnormals
_FLOOR_REL = 2.0**-40  # floor = max(2^−40 × global sensitivity, 2^−1000)
_MARGIN_MIN = 2.0**-36  # ≥ 2^4 × the ratio error above, in log space


def public_floor(query: Any) -> float:
    """The public floor of the smooth scale: max(2^−40·GS, 2^−1000), GS the query's global
    sensitivity (a public constant; 2^−1000 when it is not finite or not defined)."""
    try:
        gs = float(query.global_sensitivity())
    except Exception:  # noqa: BLE001 - no global sensitivity: the constant floor
        gs = math.nan
    if not (math.isfinite(gs) and gs > 0):
        return _FLOOR_MIN
    return max(gs * _FLOOR_REL, _FLOOR_MIN)


def inner_smoothness(gamma: float) -> float:
    """β < γ at which SS is computed so that the rounded scale is still γ-smooth.

    margin = min(γ/2, max(γ·2^−20, 2^−36)): ≥ 2^−36 (enough for the rounding
    errors, see above) whenever γ ≥ 2^−35; below that γ/2.
    """
    return gamma - min(gamma / 2.0, max(gamma * 2.0**-20, _MARGIN_MIN))


def smooth_scale(query: Any, data: Any, gamma: float) -> float:
    """A γ-smooth upper bound on LS that stays γ-smooth after floating-point rounding:
    max(SS_β(x), public floor)·(1 + 2^−40), β = :func:`inner_smoothness` (γ).
    Raises ParameterError when SS is unbounded (no finite bounds)."""
    ss = float(query.smooth_sensitivity(data, beta=inner_smoothness(gamma)))
    if not math.isfinite(ss):
        from ..errors import ParameterError

        raise ParameterError(
            "the smooth sensitivity is unbounded for this query; give it finite bounds",
            parameter="query",
        )
    return max(ss, public_floor(query)) * (1.0 + _SS_REL_ERR)


# γ = c_family · min(ε, γ_max(family, ε, δ)): each family class's
# ``default_gamma_fraction`` c_family minimised the median's mean absolute error
# in the study of docs/results/gamma.md (benchmarks/gamma.py; N(0,5) and
# U(−5,5), n = 100 … 10⁴, ε = 0.1 … 2, bounds [−100, 100]); the optimum was flat
# around these values (within ~10 % of the best MAE wherever the median was
# estimable).  For order statistics with a public n the e^{−kγ}(upper − lower)
# terms of SS at k ≈ n/2 decay only if γ ≳ 2 ln(n)/n; the rule raises γ to that
# floor, but never above ``default_gamma_ceiling``·γ_cap (the largest fraction
# the study found useful; for Student t, Cauchy and arsinh-normal it equals the
# fraction: larger γ only hurt).  It matters only where n·ε is small.
_ORDER_KINDS = ("median", "quantile", "min", "max")


def _max_gamma(family: str, epsilon: float, delta: float | None) -> float:
    from ..noise import max_gamma

    return float(max_gamma(family, epsilon, delta))


def _query_kind(query: Any) -> str:
    if isinstance(query, str):
        return query.lower()
    return str(getattr(query, "name", type(query).__name__)).lower()


def default_gamma(
    query: Any,
    family: str,
    epsilon: float,
    delta: float | None = None,
    n: int | None = None,
) -> float:
    """The public default γ for ``query`` (a query object or its kind, e.g. ``"median"``).

    γ = c_family · γ_cap with γ_cap = min(ε, γ_max(family, ε, δ)) and c_family
    from the study in docs/results/gamma.md.  For order statistics (median,
    quantiles) with a public ``n``, γ is raised to min(2 ln(n)/n, ceiling_family·γ_cap) when
    that is larger, so that the boundary terms e^{−γn/2}(upper − lower) of SS die out.
    """
    family = _family(family)
    epsilon = _validate.epsilon(epsilon)
    if family in APPROX_FAMILIES and delta is None:
        raise ParameterError(f"noise={family!r} gives (epsilon, delta)-DP: pass delta in (0, 1)")
    cap = min(epsilon, _max_gamma(family, epsilon, delta))
    cls = family_class(family)
    gamma = cls.default_gamma_fraction * cap
    if n is not None and int(n) > 1 and _query_kind(query) in _ORDER_KINDS:
        gamma = max(gamma, min(2 * math.log(int(n)) / int(n), cls.default_gamma_ceiling * cap))
    return float(gamma)


def _family(noise: str) -> str:
    if not isinstance(noise, str) or noise.lower() not in FAMILIES:
        raise ParameterError(f"noise must be one of {', '.join(FAMILIES)}; got {noise!r}")
    return noise.lower()


class SmoothSensitivityMechanism(Mechanism):
    """q(x) + SS_γ(x)·Z with Z calibrated for the family (NRS 2007; Hladík–Tětek Thm. 8).

    Parameters
    ----------
    query : a query with ``value`` and ``smooth_sensitivity(data, beta)``.
    epsilon : privacy parameter (for the zCDP families the guarantee is ½ε²-zCDP).
    gamma : smoothness γ in the family's admissible range; ``None`` = :func:`default_gamma`.
    noise : the noise family (see module docstring).
    delta : required for ``"laplace"`` (NRS (ε, δ)-DP).
    n : a public dataset size for the default-γ rule under add/remove neighbours
        (under substitution n is public and taken from the data).
    **shape : fixed family shape (``df`` for Student t, ``power`` for Cauchy,
        ``sigma`` for the log-normal families; PolyPlace's shape is ε/γ);
        omitted = the shape ``calibrate`` picks as best for (ε, γ).
    """

    name = "smooth_sensitivity"
    projects_to_range = True

    def __init__(
        self,
        query: Any,
        epsilon: float,
        *legacy: Any,
        delta: float | None = None,
        gamma: float | None = None,
        noise: str = "polyplace",
        n: int | None = None,
        **shape: Any,
    ) -> None:
        # old positional form (query, epsilon, gamma, noise, delta)
        gamma, noise, delta = _legacy_positional(
            legacy, ("gamma", "noise", "delta"), gamma, noise, delta
        )
        self.query = query
        self.family = _family(noise)
        self.epsilon = _validate.epsilon(epsilon)
        if delta is not None:
            delta = _validate.delta(delta, allow_zero=False)
        if self.family in APPROX_FAMILIES and delta is None:
            raise ParameterError(
                f"noise={self.family!r} gives (epsilon, delta)-DP: pass delta in (0, 1), "
                "or choose a pure-DP family such as noise='polyplace'"
            )
        self.delta = delta
        self.shape = dict(shape)
        self.n = None if n is None else int(_validate.finite_positive(n, "n"))
        self._gmax = _max_gamma(self.family, self.epsilon, self.delta)
        if gamma is not None:
            g = _validate.finite_positive(gamma, "gamma")
            if not g < self._gmax:
                raise ParameterError(
                    f"gamma must be in (0, {self._gmax:.6g}) for noise={self.family!r} at "
                    f"epsilon={self.epsilon:g}; got {gamma!r}. Pass a smaller gamma or "
                    "gamma=None for the default rule",
                    parameter="gamma", allowed=f"(0, {self._gmax:.6g})",
                )
            gamma = g
        self.gamma = gamma
        self._cache: dict[float, Any] = {}
        # The guarantee depends on (family, ε, δ) only, never on γ; fix it now.
        probe = gamma if gamma is not None else self._gamma_for(self.n)
        self._guarantee: Guarantee = self._calibration(probe).guarantee

    # -- calibration -------------------------------------------------------
    def _calibration(self, gamma: float) -> Any:
        cal = self._cache.get(gamma)
        if cal is None:
            from ..noise import calibrate

            cal = calibrate(self.family, self.epsilon, gamma, delta=self.delta, **self.shape)
            self._cache[gamma] = cal
        return cal

    def _public_n(self, data: Any) -> int | None:
        if getattr(self.query, "neighbours", "substitution") == "substitution":
            try:
                return int(len(data))
            except TypeError:
                return self.n
        return self.n

    def _gamma_for(self, n: int | None) -> float:
        if self.gamma is not None:
            return self.gamma
        return default_gamma(self.query, self.family, self.epsilon, self.delta, n=n)

    # -- public face -------------------------------------------------------
    @property
    def guarantee(self) -> Guarantee:
        return self._guarantee

    def mechanism_parameters(self, gamma: float | None = None) -> dict[str, Any]:
        params: dict[str, Any] = {
            "noise": self.family,
            "gamma": gamma if gamma is not None else self.gamma,
            "gamma_rule": "user" if self.gamma is not None else "default_gamma",
        }
        if self.shape:
            params["shape"] = dict(self.shape)
        return params

    def parameters(self, gamma: float | None = None) -> dict[str, Any]:
        params = super().parameters()
        params.update(self.mechanism_parameters(gamma))
        return params

    def _state_parameters(self, state: tuple) -> dict[str, Any]:
        return self.parameters(gamma=state[3])

    def _center_and_scale(self, data: Any) -> tuple[float, float, Any, float]:
        gamma = self._gamma_for(self._public_n(data))
        cal = self._calibration(gamma)
        if cal.guarantee != self._guarantee:  # pragma: no cover - calibrate contract
            raise RuntimeError("calibration guarantee changed with gamma")
        # Validate, clamp and sort once; value and SS share the prepared data.
        prepared = self.query.prepare(data) if hasattr(self.query, "prepare") else data
        value = float(self.query.value(prepared))
        # Public floor and outward rounding (see smooth_scale): SS can underflow to
        # 0.0 or to a few subnormal units where neighbours differ by a factor 2.
        ss = smooth_scale(self.query, prepared, gamma)
        return value, ss, cal, gamma

    def _state(self, data: Any) -> tuple[float, float, Any, float]:
        return self._center_and_scale(data)

    def _draw(self, state: tuple, source: RandomSource, size: int | None) -> Any:
        value, ss, cal, _ = state
        if ss == 0:
            return value if size is None else np.full(size, value)
        return self._project(add_noise(value, ss, cal.noise, source, size))

    def output_distribution(self, data: Any) -> OutputDistribution:
        """Exact law: q(x) + SS_γ(x)·Z (a point mass when SS = 0).

        Theorem (NRS 2007 Lemma 2.6 with the calibration of the family — e.g.
        Hladík & Tětek 2024 Thm. 8 for PolyPlace, Bun & Steinke 2019 Prop. 15
        for the zCDP families): if ln SS_γ moves by at most γ between
        neighbours and |q(x) − q(x′)| ≤ SS_γ(x), the unit noise Z is (α, γ)
        "sliding and dilation" admissible, which gives the stated guarantee.
        Sketch: shift by ≤ 1 unit and dilate by ≤ e^γ; the family's
        calibration bounds the density ratio of each step.  The release is
        projected onto the public range (post-processing): the law returned is
        the clamped one."""
        value, ss, cal, _ = self._center_and_scale(data)
        if ss == 0:
            zero = lambda y: np.zeros_like(np.asarray(y, dtype=float))  # noqa: E731
            return OutputDistribution(pdf=zero, cdf=zero, atoms={value: 1.0})
        return self._project_law(OutputDistribution.additive(value, ss, cal.noise))
