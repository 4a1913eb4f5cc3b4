"""Propose-test-release (Dwork & Lei 2009; lecture notes PTR notes §15.2, Prop. 15.5).

Propose a bound b on the local sensitivity.  Test it privately with the
distance from x to the set of datasets whose local sensitivity exceeds b,

    d(x) = min{ d(x, x′) : LS(x′) > b } = min{ k : A^(k)(x) > b },

which has global sensitivity 1 (A^(k) is non-decreasing in k, so the minimum
is found by doubling and bisection; for the median and quantiles A^(k) is the
closed form of docs/formulas.md).  Draw d̂ = d(x) + Z, Z discrete Laplace of
scale 1/ε′ (exact, d is an integer).  If d̂ ≥ T release q(x) + Lap(b/ε′),
otherwise ⊥.  T is the smallest integer with P(Z ≥ T) ≤ δ, so on a dataset with
LS(x) > b (d = 0) the test passes with probability ≤ δ.  Prop. 15.5: the whole
is (2ε′, δ)-DP.

Here ``epsilon`` is the total: ε′ = ε/2 for the test and ε/2 for the release,
so ``guarantee`` is ``ApproxDP(epsilon, delta)``.
"""

from __future__ import annotations

import math
from typing import Any

from .. import _validate
from ..errors import ParameterError
from ..privacy import ApproxDP
from ..random import RandomSource
from .base import Mechanism, OutputDistribution, add_noise
from .stability import noisy_distance_passes, pass_probability, stability_threshold


def _unit_laplace() -> Any:
    from ..noise import Laplace

    return Laplace(1.0)


def distance_to_high_sensitivity(query: Any, data: Any, bound: float) -> float:
    """Exact min{k ≥ 0 : A^(k)(x) > bound}; ``math.inf`` when no dataset exceeds it.

    Doubling then bisection on the non-decreasing k ↦ A^(k)(x): O(log d) calls
    to ``query.local_sensitivity(data, distance=k)``.
    """
    if query.local_sensitivity(data, 0) > bound:
        return 0
    gs = query.global_sensitivity
    if math.isfinite(gs) and gs <= bound:
        return math.inf
    kmax = query.max_distance(data)
    lo, hi = 0, 1  # invariant: A^(lo) <= bound
    while True:
        if hi >= kmax:
            hi = kmax
            if not math.isfinite(hi):
                raise ParameterError(
                    "cannot bound the distance to high sensitivity for this query; "
                    "give it finite bounds"
                )
            hi = int(hi)
            if query.local_sensitivity(data, hi) <= bound:
                return math.inf
            break
        if query.local_sensitivity(data, hi) > bound:
            break
        lo, hi = hi, 2 * hi
        if hi > 2**62:
            return math.inf
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if query.local_sensitivity(data, mid) > bound:
            hi = mid
        else:
            lo = mid
    return hi


class ProposeTestRelease(Mechanism):
    """PTR with a proposed local-sensitivity bound (PTR notes Prop. 15.5).

    ``ProposeTestRelease(query, epsilon, *, delta, bound)``

    Parameters
    ----------
    query : a query with ``value``, ``local_sensitivity(data, distance=k)``,
        ``global_sensitivity`` and ``max_distance``.
    epsilon : the total ε (ε/2 tests the bound, ε/2 scales the Laplace noise b/(ε/2)).
    delta : probability that a dataset with LS > b gets through the test.
    bound : the proposed bound b > 0 on LS (public).

    The old positional form ``ProposeTestRelease(query, bound, epsilon, delta)``
    is still accepted.
    """

    name = "propose_test_release"
    projects_to_range = True

    def __init__(
        self,
        query: Any,
        epsilon: float,
        *legacy: Any,
        delta: float | None = None,
        bound: float | None = None,
    ) -> None:
        if len(legacy) == 2 and bound is None and delta is None:
            # old form (query, bound, epsilon, delta)
            bound, epsilon, delta = epsilon, legacy[0], legacy[1]
        elif legacy:
            raise ParameterError(
                "pass ProposeTestRelease(query, epsilon, delta=..., bound=...)",
                parameter="bound",
            )
        if bound is None:
            raise ParameterError(
                "propose-test-release needs a proposed sensitivity bound chosen without "
                "looking at the data",
                parameter="bound",
                allowed="a finite number > 0",
            )
        if delta is None:
            raise ParameterError(
                "propose-test-release is (epsilon, delta)-DP: pass delta in (0, 1)",
                parameter="delta",
                allowed="(0, 1)",
            )
        self.query = query
        self.bound = _validate.finite_positive(bound, "bound")
        self.epsilon = _validate.epsilon(epsilon)
        self.delta = _validate.delta(delta, allow_zero=False)
        self._eps_step = self.epsilon / 2

    @property
    def guarantee(self) -> ApproxDP:
        return ApproxDP(self.epsilon, self.delta)

    @property
    def threshold(self) -> int:
        """The integer T the noisy distance must reach (public)."""
        return stability_threshold(self._eps_step, self.delta)

    @property
    def noise_scale(self) -> float:
        """The Laplace scale b/ε′ of a passed release (public: the proposal and ε)."""
        return self.bound / self._eps_step

    def mechanism_parameters(self) -> dict[str, Any]:
        return {
            "bound": self.bound,
            "epsilon_test": self._eps_step,
            "epsilon_release": self._eps_step,
            "threshold": self.threshold,
        }

    def distance(self, data: Any) -> float:
        """The exact distance d(x) (private: never part of a release)."""
        return distance_to_high_sensitivity(self.query, data, self.bound)

    def _state(self, data: Any) -> tuple[float, float]:
        return self.distance(data), float(self.query.value(data))

    def _draw(self, state: tuple[float, float], source: RandomSource, size: int | None) -> Any:
        d, value = state
        scale = self.noise_scale
        passed = noisy_distance_passes(d, self._eps_step, self.delta, source, size)
        if size is None:
            return self._project(add_noise(value, scale, _unit_laplace(), source)) if passed \
                else None
        noisy = self._project(add_noise(value, scale, _unit_laplace(), source, size))
        return [float(v) if p else None for v, p in zip(noisy, passed.tolist(), strict=True)]

    def pass_probability(self, data: Any) -> float:
        """Exact P(test passes) on ``data`` (analysis only)."""
        return pass_probability(self.distance(data), self._eps_step, self.delta)

    def output_distribution(self, data: Any) -> OutputDistribution:
        """Laplace(q(x), b/ε′) weighted by the pass probability p(x), plus the atom {⊥: 1 − p(x)}.

        Theorem (Vadhan 2017 / lecture notes PTR notes Prop. 15.5): d(x) has global
        sensitivity 1, so the test d(x) + DLap(1/ε′) ≥ T is ε′-DP; where
        LS(x) ≤ b the Laplace step is ε′-DP for every neighbour x′ with
        |q(x) − q(x′)| ≤ b, and where LS(x) > b (d = 0) the test passes with
        probability ≤ δ by the choice of T.  Composition: (2ε′, δ) = (ε, δ).  The
        value is projected onto the public range (post-processing): the law
        returned is the clamped one."""
        p = self.pass_probability(data)
        value = float(self.query.value(data))
        return self._project_law(OutputDistribution.additive(
            value, self.noise_scale, _unit_laplace(), atoms={None: 1.0 - p}
        ))
