"""Releasing stable values by distance to instability (lecture notes PTR notes §15.1.4;
Thakurta & Smith 2013; Vadhan 2017 §3.3).

d(x) = min{ d(x, x″) : f(x″) ≠ f(x) } − 1 has global sensitivity 1.  The
mechanism draws d̂ = d(x) + Z with Z discrete Laplace of scale 1/ε (d is an
integer, so this is ε-DP and exactly samplable, CKS 2020) and outputs f(x)
if d̂ ≥ T, ⊥ otherwise.  T is the smallest integer with
P(Z ≥ T) = e^{−εT}/(1 + e^{−ε}) ≤ δ, so on an unstable input (d = 0) the
value escapes with probability ≤ δ; the notes' threshold ln(1/δ)/ε (with
continuous Laplace) is never smaller.  The result is (ε, δ)-DP: when
f(x) = f(x′) the output is post-processing of the ε-DP d̂, and when
f(x) ≠ f(x′) both d(x) = d(x′) = 0 and each side releases its value with
probability ≤ δ.

Exact distances are given here for the mode (argmax of category counts):

* add/remove neighbours — one step changes one count by 1, so a rival j
  overtakes the leader i* (count c*) after c* − c_j + 1 steps, or c* − c_j if j
  wins ties;
* substitution neighbours — one step moves a record from i* to j and closes
  the gap by 2: ⌊(c* − c_j)/2⌋ + 1 steps, or ⌈(c* − c_j)/2⌉ if j wins ties.

Ties are broken toward the category listed first, which is public.  Any query
object with a ``distance_to_instability(data)`` method works as well.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from .. import _validate
from ..errors import ParameterError
from ..noise.discrete import DiscreteLaplace, sample_discrete_laplace
from ..privacy import ApproxDP
from ..random import RandomSource
from .base import Mechanism, OutputDistribution, _legacy_positional


def mode_index(counts: Sequence[int]) -> int:
    """The leading category: largest count, ties toward the lowest index."""
    return int(np.argmax(np.asarray(counts)))


def mode_distance_to_instability(counts: Sequence[int], neighbours: str = "substitution") -> int:
    """Exact d(x) = (number of record changes needed to change the mode) − 1.

    ``counts`` are the category counts in the public category order; ``n`` is
    their sum.  With a single category the mode can never change (returns a
    very large number; the release then always succeeds, which is correct).
    """
    c = np.asarray(counts, dtype=np.int64)
    if c.ndim != 1 or c.size == 0 or (c < 0).any():
        raise ParameterError("counts must be a non-empty 1-D array of non-negative integers")
    if neighbours not in ("substitution", "add_remove"):
        raise ParameterError(
            f"neighbours must be 'substitution' or 'add_remove', got {neighbours!r}"
        )
    if c.size == 1:
        return np.iinfo(np.int64).max // 4
    lead = mode_index(c)
    gaps = c[lead] - c
    wins_ties = np.arange(c.size) < lead  # a rival listed before the leader wins a tie
    if neighbours == "add_remove":
        steps = np.where(wins_ties, gaps, gaps + 1)
    else:
        steps = np.where(wins_ties, (gaps + 1) // 2, gaps // 2 + 1)
    steps[lead] = np.iinfo(np.int64).max
    return int(steps.min()) - 1


class Mode:
    """The most frequent category among public ``categories`` (ties → listed first).

    ``value`` returns the category; ``distance_to_instability`` is exact for the
    chosen neighbour relation.  Under substitution the categories must include
    every possible label (a record can be changed into any of them).
    """

    name = "mode"

    def __init__(self, categories: Sequence[Hashable], neighbours: str = "substitution") -> None:
        cats = list(categories)
        if len(cats) < 1 or len(set(cats)) != len(cats):
            raise ParameterError("categories must be a non-empty list of distinct labels")
        if neighbours not in ("substitution", "add_remove"):
            raise ParameterError(
                f"neighbours must be 'substitution' or 'add_remove', got {neighbours!r}"
            )
        self.categories = cats
        self.neighbours = neighbours
        self._index = {c: i for i, c in enumerate(cats)}

    def counts(self, data: Any) -> np.ndarray:
        c = np.zeros(len(self.categories), dtype=np.int64)
        for item in np.asarray(data, dtype=object).ravel().tolist():
            try:
                c[self._index[item]] += 1
            except KeyError:
                raise ParameterError(
                    f"data contains a label not among the public categories: {item!r}"
                ) from None
        return c

    def value(self, data: Any) -> Hashable:
        return self.categories[mode_index(self.counts(data))]

    def distance_to_instability(self, data: Any) -> int:
        return mode_distance_to_instability(self.counts(data), self.neighbours)

    def parameters(self) -> dict[str, Any]:
        return {"categories": list(self.categories), "neighbours": self.neighbours}


def stability_threshold(epsilon: float, delta: float) -> int:
    """Smallest integer T with P(Z ≥ T) = e^{−εT}/(1 + e^{−ε}) ≤ δ, Z ~ DLap(1/ε)."""
    t = math.ceil((math.log(1.0 / delta) - math.log1p(math.exp(-epsilon))) / epsilon)
    # Guard the ceiling against rounding: step until the exact inequality holds.
    while math.exp(-epsilon * t) / (1 + math.exp(-epsilon)) > delta:
        t += 1
    while t > 0 and math.exp(-epsilon * (t - 1)) / (1 + math.exp(-epsilon)) <= delta:
        t -= 1
    return max(t, 0)


def pass_probability(distance: float, epsilon: float, delta: float) -> float:
    """P(d + Z ≥ T) for Z ~ DLap(1/ε): the exact chance a test with this distance passes."""
    if math.isinf(distance):
        return 1.0
    t = stability_threshold(epsilon, delta)
    # P(Z ≥ T − d) = P(Z > T − d − 1)
    return float(DiscreteLaplace(1.0 / epsilon).sf(t - int(distance) - 1))


def noisy_distance_passes(
    distance: float, epsilon: float, delta: float, source: RandomSource, size: int | None = None
) -> Any:
    """The test d + DLap(1/ε) ≥ T: one bool, or a bool array of ``size`` draws
    (always passes for d = ∞)."""
    if math.isinf(distance):
        return True if size is None else np.ones(size, dtype=bool)
    # the exact real 1/ε: the float 1.0/ε can round below it (e.g. ε = 0.7)
    z = sample_discrete_laplace(1 / Fraction(epsilon), source, size)
    passed = int(distance) + np.asarray(z, dtype=np.int64) >= stability_threshold(epsilon, delta)
    return bool(passed) if size is None else passed


class StableRelease(Mechanism):
    """Release f(x) exactly when it is stable: (ε, δ)-DP (PTR notes §15.1.4).

    ``StableRelease(query, epsilon, *, delta)``.  ``query`` needs
    ``value(data)`` and ``distance_to_instability(data)`` (for example
    :class:`Mode`).  A refusal is a release whose value is ``None``.
    """

    name = "stable_release"

    def __init__(
        self, query: Any, epsilon: float, *legacy: Any, delta: float | None = None
    ) -> None:
        delta = _legacy_positional(legacy, ("delta",), delta)
        if not callable(getattr(query, "distance_to_instability", None)):
            raise ParameterError(
                "query must supply distance_to_instability(data); use Mode(categories) for "
                "the argmax of counts",
                parameter="query",
            )
        if delta is None:
            raise ParameterError(
                "stable release is (epsilon, delta)-DP: pass delta in (0, 1)",
                parameter="delta",
                allowed="(0, 1)",
            )
        self.query = query
        self.epsilon = _validate.epsilon(epsilon)
        self.delta = _validate.delta(delta, allow_zero=False)

    @property
    def guarantee(self) -> ApproxDP:
        return ApproxDP(self.epsilon, self.delta)

    def mechanism_parameters(self) -> dict[str, Any]:
        return {"threshold": stability_threshold(self.epsilon, self.delta)}

    def _state(self, data: Any) -> tuple[int, Any]:
        return self.query.distance_to_instability(data), self.query.value(data)

    def _draw(self, state: tuple[int, Any], source: RandomSource, size: int | None) -> Any:
        distance, value = state
        passed = noisy_distance_passes(distance, self.epsilon, self.delta, source, size)
        if size is None:
            return value if passed else None
        return [value if p else None for p in passed.tolist()]

    def output_distribution(self, data: Any) -> OutputDistribution:
        """Two atoms: f(x) with the exact pass probability, ⊥ (``None``) otherwise.

        Theorem (Thakurta & Smith 2013; Vadhan 2017 Prop. 3.3): the distance to
        instability has global sensitivity 1, so the noisy test is ε-DP; if
        f(x) ≠ f(x′) both distances are 0 and each side escapes with
        probability ≤ δ by the choice of T."""
        p = pass_probability(self.query.distance_to_instability(data), self.epsilon, self.delta)
        value = self.query.value(data)
        zero = lambda y: np.zeros_like(np.asarray(y, dtype=float))  # noqa: E731
        return OutputDistribution(pdf=zero, cdf=zero, atoms={value: p, None: 1.0 - p})
