"""A quantile release that chooses, privately, between the exponential mechanism and
smooth sensitivity: the choice is paid for by a charged diagnostic of ties.

Why.  Without a declared resolution the exponential quantile (log base,
:class:`~instancedp.mechanisms.quantile.ExponentialQuantile`) cannot put mass
on a tie: its density lives on the gaps between distinct rows, so on a column
whose target rank sits inside a long run of equal values it lands half a gap
away on average, however large n·ε is.  Smooth sensitivity (NRS 2007) is
exact up to e^{−γD}-small noise there, and 2–10× worse than the exponential
mechanism on continuous data.  Neither is best everywhere; the diagnostic
below tells them apart at a small, stated price.

The diagnostic.  With x_(1) ≤ … ≤ x_(n) the sorted clamped rows and
m = m(n) = max(1, ⌈q·n⌉) the target rank, the tie half-width is

    D(x) = max{k ≥ 0 : x_(m−k) = x_(m+k), 1 ≤ m − k, m + k ≤ n}     (D = 0 for n = 0):

the rows of ranks m − k … m + k are all equal.  Under substitution D is
exactly the distance to the datasets whose local sensitivity is positive
(A^(k) = 0 iff x_(m−k−1) = x_(m+k+1), docs/formulas.md), so D = min{k :
A^(k)(x) > 0}; under add/remove it is a lower bound of that distance.

Lemma.  |D(x) − D(x′)| ≤ 1 for neighbours under both relations.
Proof.  Substitution: replacing one row moves every order statistic by at
most one rank, x_(i−1) ≤ x′_(i) ≤ x_(i+1).  If D(x) ≥ k + 1 then
x_(m−k−1) = x_(m+k+1) = v, so v ≤ x′_(m−k) ≤ x′_(m+k) ≤ v and D(x′) ≥ k;
by symmetry |D(x) − D(x′)| ≤ 1.  Add/remove: let x′ be x plus one row
(n + 1 rows).  The order statistics interleave, x′_(i) ≤ x_(i) ≤ x′_(i+1),
and m′ = m(n + 1) ∈ {m, m + 1} (0 < q ≤ 1).  If D(x) ≥ k + 1 (x_(m−k−1) =
x_(m+k+1) = v): for m′ = m, v = x_(m−k−1) ≤ x′_(m−k) ≤ x′_(m+k) ≤ x_(m+k) = v;
for m′ = m + 1, v = x_(m−k) ≤ x′_(m+1−k) ≤ x′_(m+1+k) ≤ x_(m+1+k) = v; so
D(x′) ≥ k.  If D(x′) ≥ k + 1 (x′_(m′−k−1) = x′_(m′+k+1) = v): for m′ = m,
v ≤ x′_(m−k) ≤ x_(m−k) ≤ x_(m+k) ≤ x′_(m+k+1) = v; for m′ = m + 1,
v = x′_(m−k) ≤ x_(m−k) ≤ x_(m+k) ≤ x′_(m+k+1) ≤ v; the ranks stay in 1 … n
in each case, so D(x) ≥ k.  The empty table and a one-row table both have
D = 0.  ∎  (Checked against brute-force neighbour enumeration in
tests/test_mech_tie_adaptive.py.)

The mechanism.  ε₀ = ``share``·ε, ε₁ = ε − ε₀.  Draw Z from the discrete
Laplace law of scale 1/ε₀ (exact sampler, CKS 2020); D + Z is ε₀-DP.  If
D + Z ≥ T, release by smooth sensitivity at ε₁
(:class:`~instancedp.mechanisms.smooth.SmoothSensitivityMechanism`, PolyPlace
noise, its public default γ), else by the exponential quantile with the log
base at ε₁.  The threshold is public:

    T = max(``min_ties`` + t₀, t₁),

t₀ and t₁ the least integers with P(Z ≥ t₀) ≤ ``switch_rate`` and
P(Z ≥ t₁) ≤ ``false_switch_rate``: below ``min_ties`` (where smooth
sensitivity stops winning, docs/results/tie_choice.md) the switch happens
with probability at most ``switch_rate``, and on data without a tie at the
target rank (D = 0, where smooth sensitivity is several times worse) at most
``false_switch_rate``.  The whole is ε-DP by sequential composition of the ε₀-DP
choice and an ε₁-DP release chosen by it (adaptive composition of pure DP):
for every choice c and output y,

    P(c | x)·p_c(y | x) ≤ e^{ε₀}·P(c | x′) · e^{ε₁}·p_c(y | x′).

The release's record states the choice (``parameters["released"]``: a DP
output, like the value), ε₀, ε₁ and T; the noisy D is not released.
n is used inside D (its change is covered by the lemma) and, under
substitution only, by the smooth branch's default γ (n is public there).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from .. import _validate
from ..errors import ParameterError
from ..noise.discrete import DiscreteLaplace, sample_discrete_laplace
from ..privacy import PureDP
from ..queries.order import quantile_index
from ..random import RandomSource, resolve
from .base import Mechanism, Release, split_epsilon
from .quantile import ExponentialQuantile, sorted_rows
from .smooth import SmoothSensitivityMechanism
from .stability import stability_threshold

__all__ = ["TieAdaptiveQuantile", "BranchedDistribution", "tie_half_width"]

#: the default share of ε spent on the diagnostic
DIAGNOSTIC_SHARE = 0.1
#: P(switch to smooth sensitivity) at D ≤ MIN_TIES is at most this
SWITCH_RATE = 0.05
#: the tie half-width from which smooth sensitivity beats the exponential mechanism
#: (synthetic Poisson columns, ε ∈ [0.25, 1]: docs/results/tie_choice.md)
MIN_TIES = 25
#: P(switch) on data without a tie at the target rank (D = 0) is at most this: there
#: smooth sensitivity is 2–10× worse (docs/results/tie_choice.md), so a false switch
#: must be rare enough to cost ≲ 5 % of the default's error on average
FALSE_SWITCH_RATE = 0.005

EXPONENTIAL, SMOOTH = "exponential_quantile", "smooth_sensitivity"


def tie_half_width(sorted_x: np.ndarray, q: float) -> int:
    """D(x): the largest k with x_(m−k) = x_(m+k) (ranks inside 1 … n), m = max(1, ⌈q·n⌉);
    0 for an empty table.  O(log n) on sorted rows."""
    n = int(sorted_x.size)
    if n == 0:
        return 0
    m = quantile_index(q, n)
    v = sorted_x[m - 1]
    first = int(np.searchsorted(sorted_x, v, side="left")) + 1  # 1-based run [first, last]
    last = int(np.searchsorted(sorted_x, v, side="right"))
    return min(m - first, last - m)


@dataclass(frozen=True)
class BranchedDistribution:
    """The exact law of a release whose record states a private choice: for each
    choice c its probability P(c) and the law of the value given c.  The privacy
    loss of an output (c, y) is that of P(c)·p_c(y) (audit.profile checks it)."""

    branches: Mapping[str, tuple[float, Any]]


class TieAdaptiveQuantile(Mechanism):
    """ε-DP q-quantile: a charged tie diagnostic picks smooth sensitivity or the
    exponential mechanism (module docstring: the lemma, the threshold, the proof).

    ``TieAdaptiveQuantile(query, epsilon, *, share=0.1, switch_rate=0.05,
    min_ties=25, false_switch_rate=0.005)`` with ``query`` a
    :class:`~instancedp.queries.order.Quantile` or ``Median`` (bounds, q and
    relation).  Guarantee ``PureDP(epsilon)``.
    """

    name = "tie_adaptive_quantile"
    # the smooth branch projects onto [lower, upper]; the record says so on every release
    projects_to_range = True

    def __init__(
        self,
        query: Any,
        epsilon: float,
        *,
        share: float = DIAGNOSTIC_SHARE,
        switch_rate: float = SWITCH_RATE,
        min_ties: int = MIN_TIES,
        false_switch_rate: float = FALSE_SWITCH_RATE,
    ) -> None:
        if not (hasattr(query, "q") and hasattr(query, "lower")):
            raise ParameterError(
                "query must be a Quantile or Median with public bounds", parameter="query"
            )
        self.query = query
        self.q = float(query.q)
        self.epsilon = _validate.epsilon(epsilon)
        try:
            self.share = _validate.in_open_interval(share, "share", 0, 1)
            self.switch_rate = _validate.in_open_interval(switch_rate, "switch_rate", 0, 1)
            self.false_switch_rate = _validate.in_open_interval(
                false_switch_rate, "false_switch_rate", 0, 1
            )
        except ValueError as exc:
            name = next(k for k in ("false_switch_rate", "switch_rate", "share") if k in str(exc))
            raise ParameterError(str(exc), parameter=name, allowed="(0, 1)") from None
        if isinstance(min_ties, bool) or not isinstance(min_ties, int) or min_ties < 0:
            raise ParameterError(
                f"min_ties must be an integer >= 0, got {min_ties!r}",
                parameter="min_ties",
                allowed=">= 0",
            )
        self.min_ties = min_ties
        self.diagnostic_epsilon, eps1 = split_epsilon(self.epsilon, self.share)
        self.release_epsilon = eps1
        self.threshold = max(
            self.min_ties + stability_threshold(self.diagnostic_epsilon, self.switch_rate),
            stability_threshold(self.diagnostic_epsilon, self.false_switch_rate),
        )
        self._branches: dict[str, Mechanism] = {
            EXPONENTIAL: ExponentialQuantile(query, eps1, base="log"),
            SMOOTH: SmoothSensitivityMechanism(query, eps1, noise="polyplace"),
        }

    @property
    def guarantee(self) -> PureDP:
        return PureDP(self.epsilon)

    def mechanism_parameters(self) -> dict[str, Any]:
        return {
            "diagnostic": "tie half-width at the target rank + discrete Laplace",
            "diagnostic_epsilon": self.diagnostic_epsilon,
            "release_epsilon": self.release_epsilon,
            "threshold": self.threshold,
            "choices": [SMOOTH + " if the noisy diagnostic >= threshold", EXPONENTIAL + " (log)"],
        }

    # -- the law's parts ----------------------------------------------------------------

    def diagnostic(self, data: Any) -> int:
        """D(x) (private: an analysis helper, never part of a record)."""
        return tie_half_width(sorted_rows(data, self.query.lower, self.query.upper), self.q)

    def switch_probability(self, data: Any) -> float:
        """P(D + Z ≥ T), Z ~ DLap(1/ε₀): the exact chance of the smooth branch."""
        return float(DiscreteLaplace(1 / Fraction(self.diagnostic_epsilon)).sf(
            self.threshold - self.diagnostic(data) - 1
        ))

    def _choose(self, d: int, source: RandomSource) -> str:
        z = int(sample_discrete_laplace(1 / Fraction(self.diagnostic_epsilon), source))
        return SMOOTH if d + z >= self.threshold else EXPONENTIAL

    def _branch_draw(self, choice: str, data: Any, source: RandomSource) -> float:
        mech = self._branches[choice]
        if choice == EXPONENTIAL:
            return mech._draw(mech._weights(data), source)  # type: ignore[attr-defined]
        return mech._draw(mech._state(data), source, None)

    # -- release, sample, law -----------------------------------------------------------

    def release(self, data: Any, rng: Any = None) -> Release:
        source = resolve(rng)
        choice = self._choose(self.diagnostic(data), source)
        value = self._branch_draw(choice, data, source)
        params = self.parameters()
        params["released"] = {"choice": choice}
        return Release(value, self.guarantee, self.name, params, source.secure)

    def sample(self, data: Any, size: int, rng: Any = None) -> np.ndarray:
        """``size`` independent releases' values on one input (the release path;
        each branch's state is computed once)."""
        source = resolve(rng)
        d = self.diagnostic(data)
        states: dict[str, Any] = {}
        out = np.empty(int(size))
        for i in range(int(size)):
            choice = self._choose(d, source)
            mech = self._branches[choice]
            if choice not in states:
                states[choice] = (
                    mech._weights(data) if choice == EXPONENTIAL else mech._state(data)  # type: ignore[attr-defined]
                )
            st = states[choice]
            if choice == EXPONENTIAL:
                out[i] = mech._draw(st, source)
            else:
                out[i] = mech._draw(st, source, None)
        return out

    def sample_choices(self, data: Any, size: int, rng: Any = None) -> list[str]:
        """``size`` draws of the private choice alone (tests of its law)."""
        source = resolve(rng)
        d = self.diagnostic(data)
        return [self._choose(d, source) for _ in range(int(size))]

    def output_distribution(self, data: Any) -> BranchedDistribution:
        """Exact law of (choice, value).

        Theorem (sequential composition of pure DP, Dwork & Roth 2014 Thm. 3.16,
        adaptive form): P(c | x) = P(D(x) + Z ≥ T) or its complement is
        ε₀-DP because D has global sensitivity 1 (lemma above) and Z is discrete
        Laplace of scale 1/ε₀; given c, the value has the exact law of the ε₁-DP
        branch (ExponentialQuantile / SmoothSensitivityMechanism
        ``output_distribution``).  The joint density is their product."""
        p = self.switch_probability(data)
        return BranchedDistribution({
            SMOOTH: (p, self._branches[SMOOTH].output_distribution(data)),
            EXPONENTIAL: (1.0 - p, self._branches[EXPONENTIAL].output_distribution(data)),
        })
