"""Laplace noise scaled to a privately bounded local sensitivity.

Seed 004 ("Privately bounding local sensitivity"), Theorem 1; lecture notes
PTR notes Lemma 15.6.  If g(x) is ε1-DP and P[g(x) < LS(x)] ≤ δ on every x, then
releasing (g, q(x) + Lap(g/ε2)) is (ε1 + ε2, δ)-DP: on the event g ≥ LS(x) the
two Laplace densities at x and at any neighbour x′ (|q(x) − q(x′)| ≤ LS(x) ≤ g)
are within e^{ε2}, and the event fails with probability ≤ δ.  The value alone
is released here (post-processing).

Default bound mechanism (:class:`SmoothSensitivityBound`): the β-smooth
sensitivity is a β-smooth upper bound on LS (NRS 2007, Def. 2.1), so ln SS_β
has global sensitivity β, and

    g = SS_β(x) · exp((β/ε1)·(L + ln(1/(2δ)))),   L ~ Lap(1),

is ε1-DP with P[g < LS(x)] ≤ P[g < SS_β(x)] = P[L < −ln(1/(2δ))] = δ.
β defaults to ε1/(2 ln(1/(2δ))), so the overshoot factor g/SS is about e^{1/2}.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import _validate
from ..errors import ParameterError
from ..privacy import ApproxDP
from ..random import RandomSource
from .base import Mechanism, OutputDistribution, add_noise, repeat_draw
from .smooth import smooth_scale

# ln SS must have global sensitivity β after rounding: SS comes from smooth_scale
# (public floor far inside the normal range, computed at β − margin, rounded up);
# max(g, _TINY) is post-processing of g, so q(x) is never released exactly.
_TINY = math.ulp(0.0)


def _unit_laplace() -> Any:
    from ..noise import Laplace

    return Laplace(1.0)


class SmoothSensitivityBound:
    """ε1-DP upper bound on LS from the noisy logarithm of SS_β (see module docstring)."""

    name = "noisy_log_smooth_sensitivity"

    def __init__(self, beta: float | None = None) -> None:
        self.beta = None if beta is None else _validate.finite_positive(beta, "beta")

    def beta_for(self, epsilon: float, delta: float) -> float:
        if self.beta is not None:
            return self.beta
        return epsilon / (2 * math.log(1 / (2 * delta)))

    def shift(self, epsilon: float, delta: float) -> tuple[float, float]:
        """(c, m): g = SS·exp(c·L + m) with c = β/ε1 and m = c·ln(1/(2δ))."""
        c = self.beta_for(epsilon, delta) / epsilon
        return c, c * math.log(1 / (2 * delta))

    def bound(self, query: Any, data: Any, epsilon: float, delta: float, source: RandomSource):
        return self.draw(self.prepare(query, data, epsilon, delta), epsilon, delta, source)

    def prepare(self, query: Any, data: Any, epsilon: float, delta: float) -> float:
        """The data-dependent part of :meth:`bound`: the smooth scale (private).

        ``smooth_scale``: SS at β minus a margin, floored far inside the normal
        range and rounded up, so that ln SS keeps global sensitivity β after
        rounding (docs/formulas.md, floating-point-safe scales)."""
        return smooth_scale(query, data, self.beta_for(epsilon, delta))

    def draw(
        self, ss: float, epsilon: float, delta: float, source: RandomSource, size: int | None = None
    ) -> Any:
        """g from a prepared SS (one bound, or an array of ``size`` independent bounds)."""
        c, m = self.shift(epsilon, delta)
        # ln of a normal double errs by ≤ ½ ulp of |ln SS| ≤ 2^−43: inside the margin.
        log_g = add_noise(math.log(ss), c, _unit_laplace(), source, size) + m
        return np.maximum(np.exp(log_g), _TINY) if size is not None else max(math.exp(log_g), _TINY)

    def quadrature(
        self, query: Any, data: Any, epsilon: float, delta: float, points: int = 4001
    ) -> tuple[np.ndarray, np.ndarray]:
        """(bounds g_i, weights w_i): a quadrature rule for the law of g (analysis only)."""
        ss = smooth_scale(query, data, self.beta_for(epsilon, delta))
        c, m = self.shift(epsilon, delta)
        # L ~ Lap(1) on [−60, 60] (mass outside < 1e−26); midpoint rule on a fine grid.
        edges = np.linspace(-60.0, 60.0, points + 1)
        mids = 0.5 * (edges[1:] + edges[:-1])
        cdf = np.where(
            edges < 0, 0.5 * np.exp(np.minimum(edges, 0)), 1 - 0.5 * np.exp(-np.abs(edges))
        )
        w = np.diff(cdf)
        return np.maximum(ss * np.exp(c * mids + m), _TINY), w / w.sum()

    def parameters(self) -> dict[str, Any]:
        return {"bound_mechanism": self.name, "beta": self.beta}


class BoundedLocalSensitivity(Mechanism):
    """q(x) + Lap(g/ε2) with g an ε1-DP, δ-failing upper bound on LS (LS-bound note Thm. 1).

    ``BoundedLocalSensitivity(query, epsilon, *, delta, bound_fraction=0.5,
    bound_mechanism=None)``: ε1 = bound_fraction·ε bounds LS, ε2 = ε − ε1
    scales the noise.  ``bound_mechanism`` needs
    ``bound(query, data, epsilon, delta, source) -> float`` (``None`` =
    :class:`SmoothSensitivityBound`); ``quadrature(...)`` enables
    :meth:`output_distribution`.  Guarantee: ``ApproxDP(ε, δ)``.  The old
    positional form ``(query, bound_mechanism, epsilon_bound, epsilon_release,
    delta)`` is still accepted.
    """

    name = "bounded_local_sensitivity"
    projects_to_range = True

    def __init__(
        self,
        query: Any,
        epsilon: Any,
        *legacy: Any,
        delta: float | None = None,
        bound_fraction: float = 0.5,
        bound_mechanism: Any = None,
    ) -> None:
        if len(legacy) == 3:
            # old form (query, bound_mechanism, epsilon_bound, epsilon_release, delta)
            bound_mechanism = epsilon
            eps1 = _validate.epsilon(legacy[0], "epsilon_bound")
            eps2 = _validate.epsilon(legacy[1], "epsilon_release")
            delta = legacy[2]
        elif legacy:
            raise ParameterError(
                "pass BoundedLocalSensitivity(query, epsilon, delta=..., bound_fraction=...)",
                parameter="delta",
            )
        else:
            total = _validate.epsilon(epsilon)
            fraction = _validate.in_open_interval(bound_fraction, "bound_fraction", 0.0, 1.0)
            eps1, eps2 = total * fraction, total * (1 - fraction)
        if delta is None:
            raise ParameterError(
                "bounded local sensitivity is (epsilon, delta)-DP: pass delta in (0, 1)",
                parameter="delta",
                allowed="(0, 1)",
            )
        self.query = query
        self.bound_mechanism = (
            SmoothSensitivityBound() if bound_mechanism is None else bound_mechanism
        )
        if not callable(getattr(self.bound_mechanism, "bound", None)):
            raise ParameterError(
                "bound_mechanism must have bound(query, data, epsilon, delta, source); "
                "pass None for the default SmoothSensitivityBound()",
                parameter="bound_mechanism",
            )
        self.epsilon_bound = eps1
        self.epsilon_release = eps2
        self.epsilon = eps1 + eps2
        self.delta = _validate.delta(delta, allow_zero=False)

    @property
    def guarantee(self) -> ApproxDP:
        return ApproxDP(self.epsilon, self.delta)

    def mechanism_parameters(self) -> dict[str, Any]:
        params: dict[str, Any] = {
            "epsilon_bound": self.epsilon_bound,
            "epsilon_release": self.epsilon_release,
        }
        bp = getattr(self.bound_mechanism, "parameters", None)
        if callable(bp):
            params.update(bp())
        return params

    def _state(self, data: Any) -> tuple[Any, float]:
        bm = self.bound_mechanism
        if callable(getattr(bm, "prepare", None)) and callable(getattr(bm, "draw", None)):
            prepared = ("prepared", bm.prepare(self.query, data, self.epsilon_bound, self.delta))
        else:
            prepared = ("data", data)
        return prepared, float(self.query.value(data))

    def _draw(self, state: tuple[Any, float], source: RandomSource, size: int | None) -> Any:
        return self._draw_parts(state, source, size)[0]

    def _draw_parts(self, state: tuple[Any, float], source: RandomSource, size: int | None
                    ) -> tuple[Any, Any]:
        """(projected value(s), bound(s) g): the interval hook.  Theorem 1 covers
        releasing g with the value, so an interval from g is post-processing."""
        value, g = self._noisy(state, source, size)
        return self._project(value), g

    def _noisy(self, state: tuple[Any, float], source: RandomSource, size: int | None
               ) -> tuple[Any, Any]:
        (kind, x), value = state
        bm = self.bound_mechanism
        if kind == "prepared":
            g = np.maximum(bm.draw(x, self.epsilon_bound, self.delta, source, size), _TINY)
            scale = g / self.epsilon_release
            if size is None:
                return add_noise(value, float(scale), _unit_laplace(), source), float(g)
            if source.secure or getattr(source, "exact", False):
                lap = _unit_laplace()
                return np.array([add_noise(value, float(s), lap, source) for s in scale]), g
            return add_noise(value, scale, _unit_laplace(), source, size), g

        def one() -> tuple[float, float]:
            g = max(float(bm.bound(self.query, x, self.epsilon_bound, self.delta, source)), _TINY)
            return add_noise(value, g / self.epsilon_release, _unit_laplace(), source), g

        if size is None:
            return one()
        pairs = repeat_draw(one, size)
        return [v for v, _ in pairs], np.array([g for _, g in pairs], dtype=np.float64)

    def output_distribution(self, data: Any, points: int = 4001) -> OutputDistribution:
        """The law of the value: a Laplace mixture over the noisy bound (numerical quadrature).

        Theorem (LS-bound note Thm. 1; lecture notes PTR notes Lemma 15.6): g is ε1-DP and
        P[g < LS(x)] ≤ δ, so on the event g ≥ LS(x) the Laplace step with scale
        g/ε2 is ε2-DP for every neighbour, and the event fails with
        probability ≤ δ: (ε1 + ε2, δ)-DP overall.  The law is exact up to the
        quadrature of the bound's law (``points`` nodes).  The release is projected
        onto the public range (post-processing): the law returned is the clamped
        one."""
        quad = getattr(self.bound_mechanism, "quadrature", None)
        if not callable(quad):
            raise TypeError(
                "output_distribution needs a bound mechanism with a quadrature() of its law; "
                f"{type(self.bound_mechanism).__name__} has none"
            )
        g, w = quad(self.query, data, self.epsilon_bound, self.delta, points)
        value = float(self.query.value(data))
        if g.size == 1 and g[0] == 0.0:
            zero = lambda y: np.zeros_like(np.asarray(y, dtype=float))  # noqa: E731
            return OutputDistribution(pdf=zero, cdf=zero, atoms={value: 1.0})
        scales = g / self.epsilon_release
        with np.errstate(divide="ignore"):
            logw = np.log(w)

        def logpdf(y: Any) -> np.ndarray:
            y = np.asarray(y, dtype=np.float64)
            r = np.abs(y[..., None] - value)
            terms = logw - np.log(2 * scales) - r / scales
            top = terms.max(axis=-1, keepdims=True)
            return (top + np.log(np.exp(terms - top).sum(axis=-1, keepdims=True)))[..., 0]

        def cdf(y: Any) -> np.ndarray:
            y = np.asarray(y, dtype=np.float64)
            z = (y[..., None] - value) / scales
            part = np.where(z < 0, 0.5 * np.exp(np.minimum(z, 0)), 1 - 0.5 * np.exp(-np.abs(z)))
            return (part * w).sum(axis=-1)

        def sf(y: Any) -> np.ndarray:  # the mixture is symmetric about the value
            return cdf(2 * value - np.asarray(y, dtype=np.float64))

        return self._project_law(OutputDistribution(
            pdf=lambda y: np.exp(logpdf(y)), cdf=cdf, kinks=(value,), logpdf=logpdf, sf=sf
        ))
