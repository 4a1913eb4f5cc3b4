"""A tail quantile that chooses, privately, between the bounded exponential
mechanism and the bound-free bracket: the choice is paid for by a charged
noisy row count.

Why.  The bounded exponential quantile (:class:`~instancedp.mechanisms.quantile.
ExponentialQuantile`, the default with public bounds) gives the empty stretch
between the data and a loose public bound the weight μ(stretch)·e^{−σ}, where

    σ = min(q, 1 − q)·n·ε₁ / (2Δ)       (Δ = the score's sensitivity)

is the score there: the rows beyond the q-quantile, in units of the score's
step.  For a tail quantile on a small table σ is a few units, and the stretch
beyond the data — every value up to the public bound — holds most of the
mass; the error is then a fraction of the public range, not of the data's.
The bound-free bracket (:class:`~instancedp.mechanisms.unbounded.UnboundedQuantile`:
an above-threshold scan, then the exponential mechanism inside a bracket a
fixed factor around the scan's value) never spreads over the public bounds,
and is the more accurate there; at large σ its split of ε and its bracket cost
more than the bounded release loses.  The crossover was measured on synthetic
columns (``benchmarks/tail_choice.py``, docs/results/tail_choice.md), which
chose the level ``SWITCH_LEVEL`` of σ below which the bracket wins.

The diagnostic.  The row count n changes by at most 1 between add/remove
neighbours (by 0 under substitution).  ε₀ = ``share``·ε, ε₁ = ε − ε₀; draw
Z from the discrete Laplace law of scale 1/ε₀ (exact sampler, CKS 2020); the
bracket runs iff n + Z ≤ N_s, with

    N_T = ⌊2Δ·T / (min(q, 1 − q)·ε₁)⌋   (the n at which σ reaches T),
    N_s = N_T − t₀,  t₀ the least integer with P(Z ≥ t₀) ≤ ``false_switch_rate``,

so on tables with σ ≥ T the bracket runs with probability at most
``false_switch_rate``.  N_s reads only public parameters (q, ε, the relation,
T, the share and the rate).

Where the default runs it (:func:`tail_choice_applies`, public inputs only):
under add/remove, for q ≥ 0.9 when the upper bound is the one farther from 0
(q ≤ 0.1 when the lower one is), and where N_s ≥ 1.  Elsewhere the default is
the bounded release at the whole ε and nothing is spent on a count: a median's
or a central quantile's N_s is below 1 (the bracket could only run by a false
switch), and on the synthetic columns the choice gained nothing at q = 0.75
or on the side of the nearer bound (there the log base's chart compresses the
stretch between the data and 0, and its distance is at most the data's own
magnitude).

The branches (each at ε₁): the bounded exponential quantile on the rows
clamped to the bounds (the log base with atoms, or the log measure on a
declared grid), or the bound-free quantile (its default rule,
:func:`~instancedp.mechanisms.unbounded.bound_free_quantile`) on the rows,
its value projected onto [lower, upper] and, with a declared resolution,
onto the nearest grid point lower + k·resolution — post-processing by public
maps, stated in the record.

Theorem (ε-DP).  The choice is ε₀-DP (a count of sensitivity 1 plus discrete
Laplace noise of scale 1/ε₀, compared with a public threshold:
post-processing of the noisy count); given the choice, the value is the
chosen ε₁-DP branch's, post-processed.  By adaptive sequential composition
(Dwork & Roth 2014, Thm. 3.16) the pair (choice, value) is (ε₀ + ε₁)-DP,
ε₀ + ε₁ ≤ ε: for every choice c and output set S,
P(c | x)·P_c(S | x) ≤ e^{ε₀}P(c | x′)·e^{ε₁}P_c(S | x′).  The record states
the choice (``parameters["released"]``), ε₀, ε₁ and N_s; the noisy count is
not released.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from .. import _validate
from ..errors import ParameterError
from ..noise.discrete import DiscreteLaplace, sample_discrete_laplace
from ..privacy import PureDP
from ..random import RandomSource, resolve
from .base import Mechanism, Release, clip_to, range_record, split_epsilon
from .quantile import ExponentialQuantile, score_sensitivity
from .stability import stability_threshold
from .unbounded import UnboundedQuantile, bound_free_quantile

__all__ = ["TailChoiceQuantile", "tail_choice_applies", "switch_count"]

#: the share of ε spent on the noisy count
DIAGNOSTIC_SHARE = 0.05
#: T: the level of σ (the bounded score beyond the data) below which the bracket runs
#: (chosen on synthetic columns: benchmarks/tail_choice.py, docs/results/tail_choice.md)
SWITCH_LEVEL = 12.0
#: the default runs the choice for q ≥ TAIL (q ≤ 1 − TAIL) on the side of the bound
#: farther from 0 only: where the synthetic columns measured a gain (q = 0.9 upward; at
#: q = 0.75 and on the side of the nearer bound it was none or a loss)
TAIL = 0.9
#: P(bracket) on tables with σ ≥ T is at most this
FALSE_SWITCH_RATE = 0.05

BOUNDED, BRACKET = "bounded_exponential", "bound_free_bracket"


def switch_count(q: float, epsilon: float, neighbours: str, *, share: float = DIAGNOSTIC_SHARE,
                 level: float = SWITCH_LEVEL,
                 false_switch_rate: float = FALSE_SWITCH_RATE) -> int:
    """N_s: the bracket runs iff n + Z ≤ N_s (module docstring; public inputs only)."""
    eps0 = epsilon * share
    eps1 = epsilon - eps0
    delta = score_sensitivity(q, neighbours)
    ratio = 2.0 * delta * level / (min(q, 1.0 - q) * eps1)
    n_t = math.floor(ratio) if math.isfinite(ratio) and ratio < 2**62 else 2**62
    return n_t - stability_threshold(eps0, false_switch_rate)


def tail_choice_applies(q: float, epsilon: float, neighbours: str, lower: float,
                        upper: float) -> bool:
    """Whether the default quantile with bounds spends a count on the choice (public
    inputs only): under add/remove, for a tail quantile on the side of the bound farther
    from 0 (q ≥ ``TAIL`` with |upper| ≥ |lower|, or q ≤ 1 − ``TAIL`` with |lower| >
    |upper|: there the empty stretch beyond the data can reach far, while towards 0 the
    log base's chart compresses it), and where the bracket can run other than by a false
    switch (N_s ≥ 1)."""
    far_side = abs(upper) >= abs(lower) if q > 0.5 else abs(lower) > abs(upper)
    far_side = far_side and max(q, 1.0 - q) >= TAIL
    return (neighbours == "add_remove" and far_side
            and switch_count(q, epsilon, neighbours) >= 1)


def _branch(mech: Mechanism) -> dict[str, Any]:
    """A branch's record: its parameters less those the whole release states once."""
    return {k: v for k, v in mech.parameters().items()
            if k not in ("q", "lower", "upper", "neighbours", "query", "query_parameters")}


class TailChoiceQuantile(Mechanism):
    """ε-DP q-quantile with public bounds: a charged noisy count picks the bounded
    exponential mechanism or the bound-free bracket (module docstring: the rule, the
    proof).

    ``TailChoiceQuantile(query, epsilon, *, resolution=None, share=0.05, level=12,
    false_switch_rate=0.05, bracket=None)`` with ``query`` a
    :class:`~instancedp.queries.order.Quantile` or ``Median`` (bounds, q and relation);
    ``resolution`` the column's declared resolution (the bounded branch then releases on
    the grid, and the bracket's value is rounded to it); ``bracket``: keywords of the
    bound-free branch's :class:`~instancedp.mechanisms.unbounded.UnboundedQuantile`
    (default: its default rule, :func:`~instancedp.mechanisms.unbounded.
    bound_free_quantile`).  Guarantee ``PureDP(epsilon)``.
    """

    name = "tail_choice_quantile"

    def __init__(
        self,
        query: Any,
        epsilon: float,
        *,
        resolution: float | None = None,
        share: float = DIAGNOSTIC_SHARE,
        level: float = SWITCH_LEVEL,
        false_switch_rate: float = FALSE_SWITCH_RATE,
        bracket: dict[str, Any] | None = None,
    ) -> None:
        if not (hasattr(query, "q") and hasattr(query, "lower")):
            raise ParameterError(
                "query must be a Quantile or Median with public bounds", parameter="query"
            )
        self.query = query
        self.q = float(query.q)
        self.neighbours = getattr(query, "neighbours", "substitution")
        self.epsilon = _validate.epsilon(epsilon)
        try:
            self.share = _validate.in_open_interval(share, "share", 0, 1)
            self.false_switch_rate = _validate.in_open_interval(
                false_switch_rate, "false_switch_rate", 0, 1)
            self.level = _validate.finite_positive(level, "level")
        except (TypeError, ValueError) as exc:
            name = next((k for k in ("false_switch_rate", "share", "level") if k in str(exc)),
                        "share")
            raise ParameterError(str(exc), parameter=name,
                                 allowed="> 0" if name == "level" else "(0, 1)") from None
        self.diagnostic_epsilon, eps1 = split_epsilon(self.epsilon, self.share)
        self.release_epsilon = eps1
        self.switch_below = switch_count(self.q, self.epsilon, self.neighbours, share=self.share,
                                         level=self.level,
                                         false_switch_rate=self.false_switch_rate)
        self.bounded = (
            ExponentialQuantile(query, eps1, base="log-grid", resolution=resolution)
            if resolution is not None else ExponentialQuantile(query, eps1, base="log-atoms"))
        self.resolution = self.bounded.resolution
        # the bound-free default rule, or UnboundedQuantile with the keywords ``bracket``
        # (a coarser grid keeps the exact checks' laws small)
        self.bracket: UnboundedQuantile = (
            bound_free_quantile(self.q, eps1, neighbours=self.neighbours) if bracket is None
            else UnboundedQuantile(self.q, eps1, neighbours=self.neighbours, **bracket))

    @property
    def guarantee(self) -> PureDP:
        return PureDP(self.epsilon)

    @property
    def lower(self) -> float:
        return float(self.query.lower)

    @property
    def upper(self) -> float:
        return float(self.query.upper)

    def mechanism_parameters(self) -> dict[str, Any]:
        post = range_record((self.lower, self.upper))
        if self.resolution is not None:
            post["round_to"] = {"grid": "lower + k*resolution", "resolution": self.resolution}
        return {
            "diagnostic": "row count + discrete Laplace",
            "diagnostic_epsilon": self.diagnostic_epsilon,
            "release_epsilon": self.release_epsilon,
            "switch_below": self.switch_below,
            "choices": [BRACKET + " if the noisy count <= switch_below", BOUNDED],
            BOUNDED: _branch(self.bounded),
            BRACKET: {**_branch(self.bracket), "post_processing": post},
        }

    # -- the parts --------------------------------------------------------------------

    def switch_probability(self, n: int) -> float:
        """P(n + Z ≤ N_s), Z ~ DLap(1/ε₀): the exact chance of the bracket."""
        law = DiscreteLaplace(1 / Fraction(self.diagnostic_epsilon))
        return float(law.cdf(self.switch_below - int(n)))

    def choose(self, n: int, source: RandomSource) -> str:
        z = int(sample_discrete_laplace(1 / Fraction(self.diagnostic_epsilon), source))
        return BRACKET if int(n) + z <= self.switch_below else BOUNDED

    def project(self, value: float) -> float:
        """The bracket's value onto [lower, upper] and, with a resolution, the nearest
        grid point (public maps)."""
        v = clip_to(float(value), (self.lower, self.upper))
        if self.resolution is None:
            return v
        return self.bounded._grid_value(int(self.bounded._grid_index(np.array([v]))[0]))

    def record(self, value: float, choice: str, source: RandomSource) -> Release:
        params = self.parameters()
        params["released"] = {"choice": choice}
        return Release(value, self.guarantee, self.name, params, source.secure)

    # -- release, sample ----------------------------------------------------------------

    def release(self, data: Any, rng: Any = None) -> Release:
        source = resolve(rng)
        (choice, value), = self._draws(data, 1, source)
        return self.record(value, choice, source)

    def sample(self, data: Any, size: int, rng: Any = None) -> np.ndarray:
        """``size`` independent releases' values on one input (the release path)."""
        return np.array([v for _, v in self._draws(data, int(size), resolve(rng))])

    def _draws(self, data: Any, size: int, source: RandomSource) -> list[tuple[str, float]]:
        """``size`` (choice, value) draws on one input: the rows validated and sorted
        once (the bracket reads them as they are, the bounded branch clamps them; n is
        their number), the bounded branch's weights computed once."""
        rows = self.bracket._rows(data)
        weights = None
        out = []
        for _ in range(size):
            choice = self.choose(rows.size, source)
            if choice == BOUNDED:
                if weights is None:
                    weights = self.bounded._weights(rows)
                out.append((choice, self.bounded._draw(weights, source)))
            else:
                out.append((choice, self.project(self.bracket._draw(rows, source))))
        return out
