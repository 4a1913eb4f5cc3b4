"""A bound-free quantile in one step: the exponential mechanism on the whole line
with a proper base measure.

The exponential mechanism needs a base measure μ fixed before the data are
seen, and a finite one when the output space is the whole line (McSherry &
Talwar 2007, Thm. 6, holds for any finite μ).  Lebesgue measure on public
bounds is the usual choice (Smith 2011); Khodak, Amin, Dick &
Vassilvitskii (ICML 2023) replace it by heavy-tailed priors.  Here μ is the
log-log measure of :mod:`~instancedp.mechanisms.quantile` (base ``"log-log"``):

    dμ/dt = 1 / ((s + |t|)·(1 + log1p(|t|/s))^(1+α)),   s = 1, α = ``LOGLOG_ALPHA``,

whose total mass 2/α is finite over the reals: uniform in the chart
ψ(t) = sign(t)·(1 − (1 + log1p(|t|/s))^−α)/α, which maps every double into
(−1/α, 1/α).  So no bound is needed and none is made up (no data minimum or
maximum): the release is :class:`~instancedp.mechanisms.quantile.ExponentialQuantile`
with this base over the doubles (the rows are finite: the chart's ends are
ψ(∓ the largest double)), density ∝ μ(t)·exp(−ε·s(t)/(2Δ)).

Guarantee: ε-DP under the query's relation, the exponential mechanism's own
proof (the module docstring of :mod:`~instancedp.mechanisms.quantile`: the
score moves by at most Δ, μ is public and cancels).  Sampling is exact in the
chart (a piece ∝ its score weight × its exact ψ-length, then a uniform point
in it), then ψ⁻¹, public post-processing; out of core the same staged draw
(:meth:`~instancedp.mechanisms.quantile.ExponentialQuantile.pieces`) reads one
order window around the target rank.

When it is the better bound-free release (``docs/results/accuracy.md``):
the score of every value outside the data is at least min(q, 1 − q)·n, so the
mass μ gives the empty line (about 2/α against the data's few hundredths) is
discounted by exp(−ε·min(q, 1 − q)·n/(2Δ)).  For the median that margin is n/2
and the one step beats the scan-then-bracket release (no ε spent on finding the
scale, no scan stopping early on the long stretch of grid before data far from
0); for a tail quantile at small n·ε the margin q·n is too small and the scan,
which looks for a level beyond the median, wins.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from .. import _validate
from ..errors import ParameterError
from .quantile import LOGLOG_ALPHA, ExponentialQuantile

#: the largest double: the chart's ends are ψ(∓_MAX)
_MAX = float(np.finfo(np.float64).max)
#: the base's scale s, in the data's units (the bound-free grid's scale too)
LOGLOG_SCALE = 1.0


class _WholeLine:
    """The query view :class:`ExponentialQuantile` reads: q, the relation, and the
    doubles as the support (not bounds: nothing is clamped but ±inf)."""

    def __init__(self, q: float, neighbours: str) -> None:
        self.q, self.neighbours = q, neighbours
        self.lower, self.upper = -_MAX, _MAX


class LogLogQuantile(ExponentialQuantile):
    """ε-DP q-quantile without bounds: the exponential mechanism on the whole line with
    the log-log base (module docstring).

    ``LogLogQuantile(q, epsilon, *, neighbours="add_remove")``, or a quantile
    query as the first argument (its q and relation only; its bounds are not
    read).  Guarantee: ``PureDP(epsilon)``.
    """

    name = "loglog_quantile"
    #: no public bounds (the interval families over bounds do not apply)
    bounds_free = True

    def __init__(self, query: Any, epsilon: float, *, neighbours: str | None = None) -> None:
        if hasattr(query, "q"):
            q = float(query.q)
            relation = getattr(query, "neighbours", "substitution")
            if neighbours is not None and neighbours != relation:
                raise ParameterError(
                    f"neighbours={neighbours!r} contradicts the query's relation {relation!r}",
                    parameter="neighbours",
                )
        else:
            q = _validate.in_open_interval(query, "q", 0.0, 1.0)
            relation = neighbours if neighbours is not None else "add_remove"
        super().__init__(_WholeLine(q, relation), epsilon, base="log-log",
                         log_scale=LOGLOG_SCALE)
        self.query = None

    def parameters(self) -> dict[str, Any]:
        return {"q": self.q, "epsilon": self.epsilon, "neighbours": self.neighbours,
                "bounds": None, "base": "log-log", "log_scale": self.log_scale,
                "alpha": LOGLOG_ALPHA, "support": "the whole line"}

    def output_distribution(self, data: Any) -> Any:
        """The exact law (a density on the doubles, :meth:`ExponentialQuantile.
        output_distribution`); its kinks are the rows, not the support's ends (they are
        no data, and a range built from them would span every double)."""
        law = super().output_distribution(data)
        return dataclasses.replace(law, kinks=tuple(k for k in law.kinks if abs(k) < _MAX))

    def chart_distribution(self, data: Any) -> Any:
        """The exact law of ψ(T), T the release: piecewise constant on (ψ(−max), ψ(max)).
        ψ is a public bijection, so T and ψ(T) have the same privacy loss between any two
        tables; on the chart the exact check needs no search over the doubles."""
        from .quantile import piecewise_constant_law

        _, coords, logw = self._continuous(data)
        lengths = np.diff(coords)
        with np.errstate(divide="ignore"):
            return piecewise_constant_law(coords, logw - np.log(lengths))
