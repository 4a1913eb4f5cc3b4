"""Instance-based Laplace noise on levels of local sensitivity (Canard & Olivier, Canard–Olivier).

The mechanism releases f(x) + Lap(1/λ_x) with a rate λ_x that depends on the
instance.  Theorem 14 (Canard–Olivier §4.1): it is (ε, δ)-DP (in distribution, Def. 8) if
for every x and every neighbour x′ ~ x, for some 0 < α_x < 1,

    (1) λ_x ≤ α_x · ε / LS(x)        and
    (2) |1 − λ_x′/λ_x| ≤ (1 − α_x) · ε / ln(1/δ).

Algorithm 1 (Canard–Olivier §5.1, Claim 19, Prop. 20) chooses one rate per *level* of
local sensitivity LS_1 ≤ … ≤ LS_r with α = ½ and t = ε/ln(1/δ): λ_r = ε/(2 LS_r)
and, descending, λ_k = λ_{k+1} when LS_{k+1}/LS_k < 1 + t/2, otherwise
λ_k = min(ε/(2 LS_k), λ_{l_k}·(1 + t/2)), where l_k is the highest level whose
lowest neighbouring level r_l is ≤ k.  This "interval" reading of l_k (the
paper's pseudo-code: r_l = min{j ~ l}, l_k = max{l : r_l ≤ k}) matters: using
only the levels literally adjacent to k in the copy branch can break condition
(2) (see ``docs/levels.md``).

``method="envelope"`` returns the pointwise largest rates that satisfy Claim 19's
two-sided condition λ_l/(1 + t/2) ≤ λ_k ≤ λ_l·(1 + t/2) on every level edge and
λ_k ≤ ε/(2 LS_k): λ_k = min_l ε/(2 LS_l)·(1 + t/2)^{d(k, l)} with d the
level-graph distance (a ln(1 + t/2)-smooth bound on LS, computed by Dijkstra).
Any rates valid in that α = ½ sense — Algorithm 1's included — are ≤ these.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _validate
from ..errors import ParameterError
from ..privacy import ApproxDP
from ..queries.base import Query
from ..random import RandomSource
from .base import Mechanism, OutputDistribution, add_noise

METHODS = ("algorithm1", "envelope")
# Relative slack for the float comparisons in the checker: Algorithm 1 meets
# condition (2) with equality (λ_k = λ_l·(1 + t/2)), which rounding can tip.
_RTOL = 1e-9


def _t(epsilon: float, delta: float) -> float:
    """t = ε / ln(1/δ) (Canard–Olivier Algorithm 1, line 1)."""
    return epsilon / math.log(1.0 / delta)


def _levels_array(levels: Any) -> np.ndarray:
    try:
        ls = np.asarray(levels, dtype=np.float64)
    except (TypeError, ValueError):
        raise ParameterError("levels must be a 1-D array of numbers >= 0") from None
    if ls.ndim != 1 or ls.size == 0:
        raise ParameterError(f"levels must be a non-empty 1-D array, got shape {ls.shape}")
    if not np.all(np.isfinite(ls)) or np.any(ls < 0):
        raise ParameterError("levels must be finite numbers >= 0 (local sensitivities)")
    if np.any(np.diff(ls) < 0):
        raise ParameterError("levels must be sorted in non-decreasing order (LS_1 <= ... <= LS_r)")
    if ls[-1] <= 0:
        raise ParameterError(
            "levels: the largest level LS_r must be > 0 (else the query is constant)"
        )
    return ls


def _adjacency_sets(adjacency: Mapping[int, Iterable[int]], r: int) -> list[set[int]]:
    """Validated symmetric level adjacency as a list of neighbour sets (self-loops dropped)."""
    if not isinstance(adjacency, Mapping):
        raise ParameterError("adjacency must be a mapping {level index: iterable of level indices}")
    adj: list[set[int]] = [set() for _ in range(r)]
    for k, nbrs in adjacency.items():
        if not (isinstance(k, int | np.integer) and 0 <= k < r):
            raise ParameterError(f"adjacency keys must be level indices in [0, {r - 1}], got {k!r}")
        for j in nbrs:
            if not (isinstance(j, int | np.integer) and 0 <= j < r):
                raise ParameterError(
                    f"adjacency[{k}] must hold level indices in [0, {r - 1}], got {j!r}"
                )
            if j != k:
                adj[int(k)].add(int(j))
    for k in range(r):
        for j in adj[k]:
            if k not in adj[j]:
                raise ParameterError(
                    f"adjacency must be symmetric: {j} in adjacency[{k}] but not back"
                )
    # The paper assumes the instance space is connected (Canard–Olivier §5.1, after Prop. 20).
    seen, stack = {r - 1}, [r - 1]
    while stack:
        for j in adj[stack.pop()]:
            if j not in seen:
                seen.add(j)
                stack.append(j)
    if len(seen) != r:
        missing = sorted(set(range(r)) - seen)[:5]
        raise ParameterError(
            f"adjacency must connect all {r} levels (Algorithm 1 assumes a connected "
            f"instance graph); not reachable from the top level: {missing}..."
        )
    return adj


def _caps(ls: np.ndarray, epsilon: float) -> np.ndarray:
    """ε / (2 LS_k): condition (1) with α = ½ (inf for a level with LS = 0)."""
    with np.errstate(divide="ignore"):
        return np.where(ls > 0, epsilon / (2.0 * ls), np.inf)


def _algorithm1(ls: np.ndarray, adj: list[set[int]], epsilon: float, delta: float) -> np.ndarray:
    """Canard–Olivier Algorithm 1, 0-based, with r_l = lowest level adjacent to l (or l itself)."""
    r = ls.size
    grow = 1.0 + _t(epsilon, delta) / 2.0
    caps = _caps(ls, epsilon)
    lowest = np.array([min(adj[k] | {k}) for k in range(r)])
    lam = np.empty(r)
    lam[r - 1] = caps[r - 1]
    # l_k = max{l : r_l <= k} is non-decreasing in k; scan it downward with a pointer.
    top = r - 1
    for k in range(r - 2, -1, -1):
        while top > k and lowest[top] > k:
            top -= 1
        close = ls[k + 1] == ls[k] or ls[k + 1] < grow * ls[k]
        if close:
            lam[k] = lam[k + 1]
        else:
            if top <= k:  # unreachable for a connected level graph
                raise ParameterError(f"adjacency: level {k} has no neighbour above it")
            lam[k] = min(caps[k], lam[top] * grow)
    return lam


def _envelope(ls: np.ndarray, adj: list[set[int]], epsilon: float, delta: float) -> np.ndarray:
    """Largest rates with λ_k ≤ ε/(2LS_k) and |ln λ_k − ln λ_l| ≤ ln(1 + t/2) on edges.

    In log space this is the lower envelope min_l (ln cap_l + s·d(k, l)),
    a multi-source shortest-path problem (Dijkstra with sources' start values).
    """
    r = ls.size
    s = math.log1p(_t(epsilon, delta) / 2.0)
    mu = np.log(_caps(ls, epsilon))
    heap = [(float(m), k) for k, m in enumerate(mu) if math.isfinite(m)]
    heapq.heapify(heap)
    done = np.zeros(r, dtype=bool)
    while heap:
        m, k = heapq.heappop(heap)
        if done[k]:
            continue
        done[k] = True
        for j in adj[k]:
            if m + s < mu[j]:
                mu[j] = m + s
                heapq.heappush(heap, (mu[j], j))
    return np.exp(mu)


def level_rates(
    levels: Any,
    adjacency: Mapping[int, Iterable[int]],
    epsilon: float,
    delta: float,
    *,
    method: str = "algorithm1",
) -> np.ndarray:
    """Laplace rates λ_k, one per sensitivity level (Canard–Olivier Algorithm 1; Claim 19).

    ``levels``: LS_1 ≤ … ≤ LS_r (exact local sensitivities or upper bounds,
    Canard–Olivier Remark 21), 0-based.  ``adjacency``: {k: levels l with some neighbour
    pair straddling D_k and D_l}, symmetric and connected.  δ must be in (0, 1).
    Returns λ with λ_k ≤ ε/(2 LS_k) and λ_l/(1 + t/2) ≤ λ_k ≤ λ_l(1 + t/2) on
    every level edge, hence Theorem 14's conditions with α = ½; releasing
    f(y) + Lap(1/λ_k) for y in level k is then (ε, δ)-DP.
    ``method``: "algorithm1" (the paper) or "envelope" (the largest such rates).
    """
    epsilon = _validate.epsilon(epsilon)
    delta = _validate.delta(delta, allow_zero=False)
    if method not in METHODS:
        raise ParameterError(f"method must be one of {METHODS}, got {method!r}")
    ls = _levels_array(levels)
    adj = _adjacency_sets(adjacency, ls.size)
    rates = (_algorithm1 if method == "algorithm1" else _envelope)(ls, adj, epsilon, delta)
    # Cheap self-check of the guarantee's premise; a failure is a bug, not bad input.
    pairs = [(k, j) for k in range(ls.size) for j in adj[k] if j > k]
    report = check_instance_noise(rates, ls, pairs, epsilon, delta, alphas=0.5)
    if not report.ok:  # pragma: no cover - guarded by the tests
        raise RuntimeError(f"level_rates produced rates violating Theorem 14: {report}")
    return rates


def layered_adjacency(r: int) -> dict[int, list[int]]:
    """Adjacency of layered levels: k ~ k − 1 and k ~ k + 1 (Canard–Olivier Example 22/23)."""
    if not isinstance(r, int | np.integer) or r < 1:
        raise ParameterError(f"r (number of levels) must be an integer >= 1, got {r!r}")
    return {k: [j for j in (k - 1, k + 1) if 0 <= j < r] for k in range(int(r))}


def layered_level_rates(
    levels: Any, epsilon: float, delta: float, *, method: str = "algorithm1"
) -> np.ndarray:
    """Algorithm 1 for layers: each level's lower neighbour is k − 1 (Canard–Olivier Example 23).

    Then r_k = k − 1 and l_k = k + 1, so λ_k = λ_{k+1} if LS_{k+1}/LS_k < 1 + t/2,
    else min(ε/(2LS_k), λ_{k+1}(1 + t/2)).
    """
    ls = _levels_array(levels)
    return level_rates(ls, layered_adjacency(ls.size), epsilon, delta, method=method)


@dataclass(frozen=True)
class InstanceNoiseCheck:
    """Result of :func:`check_instance_noise`.

    ``condition1``: instances x with λ_x·LS(x) > α_x·ε (or no admissible α_x);
    ``condition2``: ordered pairs (x, x′) with |1 − λ_x′/λ_x| > (1 − α_x)·ε/ln(1/δ);
    ``alphas``: the α_x used.
    """

    ok: bool
    condition1: tuple[int, ...]
    condition2: tuple[tuple[int, int], ...]
    alphas: np.ndarray

    def __bool__(self) -> bool:
        return self.ok


def check_instance_noise(
    rates: Any,
    local_sensitivities: Any,
    neighbour_pairs: Iterable[tuple[int, int]],
    epsilon: float,
    delta: float,
    alphas: Any = None,
) -> InstanceNoiseCheck:
    """Check Theorem 14 (Canard–Olivier §4.1) on a finite instance graph.

    ``rates[i]`` = λ of instance i, ``local_sensitivities[i]`` = LS(i) (or an
    upper bound), ``neighbour_pairs`` = the edges (i, j) of the neighbour
    relation (each unordered pair once or twice; both directions are checked).
    ``alphas``: α_x per instance or one number; None picks the best α_x =
    λ_x·LS(x)/ε, the smallest meeting (1), which leaves the most room in (2).
    α_x is allowed in [0, 1]: the proof also covers α = 0 (LS = 0) and α = 1
    (then (2) forces equal neighbour rates: plain Laplace).  Comparisons allow a
    relative rounding slack of 1e-9.
    """
    epsilon = _validate.epsilon(epsilon)
    delta = _validate.delta(delta, allow_zero=False)
    lam = np.asarray(rates, dtype=np.float64)
    ls = np.asarray(local_sensitivities, dtype=np.float64)
    if lam.ndim != 1 or lam.size == 0 or not np.all(np.isfinite(lam)) or np.any(lam <= 0):
        raise ParameterError("rates must be a non-empty 1-D array of finite numbers > 0")
    if ls.shape != lam.shape or not np.all(np.isfinite(ls)) or np.any(ls < 0):
        raise ParameterError("local_sensitivities must be finite numbers >= 0, one per rate")
    n = lam.size
    if alphas is None:
        alpha = np.minimum(lam * ls / epsilon, 1.0)
    else:
        alpha = np.broadcast_to(np.asarray(alphas, dtype=np.float64), lam.shape).copy()
        if not np.all((alpha >= 0) & (alpha <= 1)):
            raise ParameterError("alphas must be numbers in [0, 1]")
    bad1 = np.nonzero(lam * ls > alpha * epsilon * (1 + _RTOL))[0]
    t = _t(epsilon, delta)
    bad2: list[tuple[int, int]] = []
    seen: set[tuple[int, int]] = set()
    for i, j in neighbour_pairs:
        i, j = int(i), int(j)
        if not (0 <= i < n and 0 <= j < n):
            raise ParameterError(f"neighbour_pairs must hold instance indices in [0, {n - 1}]")
        for x, xp in ((i, j), (j, i)):
            if (x, xp) in seen:
                continue
            seen.add((x, xp))
            if abs(1.0 - lam[xp] / lam[x]) > (1.0 - alpha[x]) * t * (1 + _RTOL) + 1e-15:
                bad2.append((x, xp))
    return InstanceNoiseCheck(
        ok=bad1.size == 0 and not bad2,
        condition1=tuple(int(i) for i in bad1),
        condition2=tuple(bad2),
        alphas=alpha,
    )


def _unit_laplace():
    from ..noise.laplace import Laplace

    return Laplace(1.0)


class InstanceBasedNoise(Mechanism):
    """f(y) + Lap(1/λ_k) for y in level k (000 Theorem 14, Algorithm 1, Prop. 20).

    ``InstanceBasedNoise(query, epsilon, *, delta, level_of, rates)``.
    ``level_of(data)`` returns the 0-based level of the input (private: it is
    used only to pick the rate and never appears in the release); ``rates`` are
    public, computed from the public level structure (e.g. :func:`level_rates`).
    The guarantee (ε, δ) holds when the rates satisfy Theorem 14 for the
    query's neighbour relation — build with :meth:`from_levels` to have them
    computed by Algorithm 1 and checked on the level graph.  The old positional
    form ``(level_of, rates, query, epsilon, delta)`` is still accepted.
    """

    name = "instance_based_noise"
    projects_to_range = True

    def __init__(
        self,
        query: Any,
        epsilon: Any,
        *legacy: Any,
        delta: float | None = None,
        level_of: Callable[[Any], int] | None = None,
        rates: Any = None,
    ) -> None:
        if len(legacy) == 3 and level_of is None and rates is None and delta is None:
            # old form (level_of, rates, query, epsilon, delta)
            level_of, rates, query, epsilon, delta = query, epsilon, *legacy
        elif legacy:
            raise ParameterError(
                "pass InstanceBasedNoise(query, epsilon, delta=..., level_of=..., rates=...)",
                parameter="level_of",
            )
        if not callable(level_of):
            raise ParameterError(
                "level_of must be a callable mapping data to a level index",
                parameter="level_of",
            )
        lam = np.asarray(rates if rates is not None else [], dtype=np.float64)
        if lam.ndim != 1 or lam.size == 0 or not np.all(np.isfinite(lam)) or np.any(lam <= 0):
            raise ParameterError(
                "rates must be a non-empty 1-D array of finite numbers > 0",
                parameter="rates",
                allowed="finite numbers > 0",
            )
        if not hasattr(query, "value"):
            raise ParameterError(
                "query must be an instancedp Query (with a value(data) method)",
                parameter="query",
            )
        if delta is None:
            raise ParameterError(
                "instance-based noise is (epsilon, delta)-DP: pass delta in (0, 1)",
                parameter="delta",
                allowed="(0, 1)",
            )
        self._level_of = level_of
        #: the public level graph (set by :meth:`from_levels`; None: not stated)
        self.adjacency: list[set[int]] | None = None
        self._rates = lam.copy()
        self._rates.setflags(write=False)
        self.query = query
        self.epsilon = _validate.epsilon(epsilon)
        self.delta = _validate.delta(delta, allow_zero=False)

    @classmethod
    def from_levels(
        cls,
        level_of: Callable[[Any], int],
        levels: Any,
        adjacency: Mapping[int, Iterable[int]] | str | None,
        query: Query,
        epsilon: float,
        delta: float,
        *,
        method: str = "algorithm1",
    ) -> InstanceBasedNoise:
        """Rates from :func:`level_rates`, checked against Theorem 14 on ``adjacency``.

        ``adjacency`` is the level graph of the query's neighbour relation
        (levels k ~ l when some neighbour pair straddles them) — required: the
        guarantee rests on it.  ``adjacency="layered"`` states that neighbours
        only ever sit in the same or consecutive levels (Canard–Olivier Example 22/23); it is
        the caller's public claim, not a default."""
        if adjacency is None:
            raise ParameterError(
                "adjacency is required: the rates are private only for the level graph of "
                "the query's neighbour relation (pass it, or 'layered' if neighbours only "
                "ever sit in consecutive levels)",
                parameter="adjacency",
                allowed="a mapping level -> neighbouring levels, or 'layered'",
            )
        if isinstance(adjacency, str):
            if adjacency != "layered":
                raise ParameterError(
                    f"adjacency must be a mapping or 'layered'; got {adjacency!r}",
                    parameter="adjacency",
                    allowed="a mapping level -> neighbouring levels, or 'layered'",
                )
            adjacency = layered_adjacency(_levels_array(levels).size)
        # level_rates checks Theorem 14 on exactly this graph before returning.
        rates = level_rates(levels, adjacency, epsilon, delta, method=method)
        mech = cls(query, epsilon, delta=delta, level_of=level_of, rates=rates)
        mech.adjacency = _adjacency_sets(adjacency, mech.rates.size)
        return mech

    @property
    def rates(self) -> np.ndarray:
        return self._rates

    @property
    def guarantee(self) -> ApproxDP:
        return ApproxDP(self.epsilon, self.delta)

    def log_rate_sensitivity(self) -> float | None:
        """max |ln λ_k − ln λ_l| over the level graph's edges: how far ln λ_x moves
        between neighbours (they sit in one level or in adjacent ones); None when the
        level graph was not stated (the interval hook: a noisy ln λ_x is then private)."""
        if self.adjacency is None:
            return None
        log = np.log(self._rates)
        return max((abs(float(log[k] - log[j])) for k, nb in enumerate(self.adjacency)
                    for j in nb), default=0.0)

    def mechanism_parameters(self) -> dict[str, Any]:
        return {"n_levels": int(self._rates.size), "rates": self._rates.tolist()}

    def _rate(self, data: Any) -> float:
        k = self._level_of(data)
        if not isinstance(k, int | np.integer) or not 0 <= k < self._rates.size:
            raise ParameterError(
                f"level_of(data) must return a level index in [0, {self._rates.size - 1}]"
            )
        return float(self._rates[int(k)])

    def _state(self, data: Any) -> tuple[float, float]:
        return float(self.query.value(data)), self._rate(data)

    def _draw(self, state: tuple[float, float], source: RandomSource, size: int | None) -> Any:
        value, rate = state
        return self._project(add_noise(value, 1.0 / rate, _unit_laplace(), source, size))

    def output_distribution(self, data: Any) -> OutputDistribution:
        """Exact law f(y) + Lap(1/λ_k) on this input (analysis only, never released).

        Theorem (Canard & Olivier, Canard–Olivier Thm. 14): if λ_x ≤ α_x·ε/LS(x) and
        |1 − λ_x′/λ_x| ≤ (1 − α_x)·ε/ln(1/δ) for all neighbours, the release
        is (ε, δ)-DP: the shift costs α_x·ε, the change of scale the rest
        except on a tail of mass ≤ δ.  The release is projected onto the public
        range (post-processing): the law returned is the clamped one."""
        value, rate = self._state(data)
        return self._project_law(OutputDistribution.additive(value, 1.0 / rate, _unit_laplace()))
