"""SmallDB (Blum, Ligett & Roth 2008; Dwork & Roth 2014, Alg. 5) and Wang et al. bounds.

SmallDB answers k normalised counting queries q(D) = (1/n)·#{x ∈ D : q(x)} by
releasing a small synthetic database: the exponential mechanism over all
multisets y of size m from the universe X, with score −max_q |q(D) − q(y)|
(sensitivity 1/n under substitution of one record, n public).  ε-DP.

m = ⌈log₂|Q| / α²⌉ (Dwork & Roth Thm. 4.2: some database of that size answers
every query within α); for |Q| = 1 that is 0, and Hoeffding's
m = ⌈ln(2|Q|)/(2α²)⌉ — the quantity the existence proof needs — is used
instead (it is the smaller of the two whenever |Q| ≥ 2).

Accuracy with probability 1 − β (Wang et al., Section Three; Dwork & Roth Thm. 4.5
for SmallDB, union bound for Laplace with budget ε/k per query):
  Laplace:  α = (k/(εn))·ln(k/β)
  SmallDB:  α = ((16·lg|X|·lg k + 4·ln(1/β))/(εn))^{1/3}.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.optimize import brentq
from scipy.special import comb

from .. import _validate
from ..errors import ParameterError
from ..privacy import PureDP
from ..random import RandomSource, sample_index_from_log_weights
from .base import Mechanism, OutputDistribution, atoms_law, repeat_draw
from .exponential import exponential_log_probabilities

DEFAULT_MAX_CANDIDATES = 1_000_000


def synthetic_size(n_queries: int, alpha: float) -> int:
    """m = ⌈log₂|Q|/α²⌉ (Hoeffding's ⌈ln 2/(2α²)⌉ when |Q| = 1)."""
    if not isinstance(n_queries, int | np.integer) or n_queries < 1:
        raise ParameterError(f"n_queries must be an integer >= 1, got {n_queries!r}")
    alpha = _validate.in_open_interval(alpha, "alpha", 0.0, 1.0)
    book = math.ceil(math.log2(n_queries) / alpha**2)
    hoeffding = math.ceil(math.log(2 * n_queries) / (2 * alpha**2))
    return max(1, book if n_queries >= 2 else hoeffding)


def n_multisets(universe_size: int, m: int) -> int:
    """C(|X| + m − 1, m): databases of size m over a universe of size |X|."""
    return int(comb(universe_size + m - 1, m, exact=True))


def laplace_accuracy(n: int, k: int, epsilon: float, beta: float) -> float:
    """α = (k/(εn))·ln(k/β): Laplace(k/(εn)) on each of k queries, union bound (002)."""
    n, k = _count(n, "n"), _count(k, "k")
    epsilon = _validate.epsilon(epsilon)
    beta = _validate.in_open_interval(beta, "beta", 0.0, 1.0)
    return k / (epsilon * n) * math.log(k / beta)


def smalldb_accuracy(n: int, k: int, epsilon: float, beta: float, universe_size: int) -> float:
    """α = ((16·lg|X|·lg k + 4·ln(1/β))/(εn))^{1/3} (002; Dwork & Roth Thm. 4.5)."""
    n, k = _count(n, "n"), _count(k, "k")
    x = _count(universe_size, "universe_size")
    epsilon = _validate.epsilon(epsilon)
    beta = _validate.in_open_interval(beta, "beta", 0.0, 1.0)
    num = 16 * math.log2(x) * math.log2(k) + 4 * math.log(1 / beta)
    return (num / (epsilon * n)) ** (1 / 3)


def crossing_epsilon(n: int, k: int, beta: float, universe_size: int) -> float:
    """ε where the two accuracy bounds are equal (Laplace is better above it).

    Laplace's α ∝ 1/ε and SmallDB's ∝ ε^{−1/3}, so there is exactly one
    crossing: ε* = ((k ln(k/β))³ / (n² · (16 lg|X| lg k + 4 ln(1/β))))^{1/2}.
    """
    n, k = _count(n, "n"), _count(k, "k")
    x = _count(universe_size, "universe_size")
    beta = _validate.in_open_interval(beta, "beta", 0.0, 1.0)
    a = k * math.log(k / beta) / n
    b = (16 * math.log2(x) * math.log2(k) + 4 * math.log(1 / beta)) / n
    # a/ε = (b/ε)^{1/3}  ⇔  a³/ε³ = b/ε  ⇔  ε² = a³/b.
    return math.sqrt(a**3 / b)


def universe_size_for_crossing(n: int, k: int, beta: float, epsilon: float) -> float:
    """The real |X| at which the crossing falls at ``epsilon`` (002 leaves |X| unstated).

    The crossing decreases as |X| grows; k = 1 makes it independent of |X|.
    """
    n, k = _count(n, "n"), _count(k, "k")
    beta = _validate.in_open_interval(beta, "beta", 0.0, 1.0)
    epsilon = _validate.epsilon(epsilon)
    if k == 1:
        raise ParameterError("k must be >= 2: with one query the crossing does not depend on |X|")

    def gap(lg_x: float) -> float:
        return _cross_lg(n, k, beta, lg_x) - epsilon

    if gap(0.0) < 0 or gap(1e4) > 0:
        raise ParameterError(f"epsilon={epsilon!r} is not a crossing point for any |X| >= 1")
    return 2 ** brentq(gap, 0.0, 1e4, xtol=1e-12)


def _cross_lg(n: int, k: int, beta: float, lg_x: float) -> float:
    a = k * math.log(k / beta) / n
    b = (16 * lg_x * math.log2(k) + 4 * math.log(1 / beta)) / n
    return math.sqrt(a**3 / b)


def _count(value: Any, name: str) -> int:
    if not isinstance(value, int | np.integer) or value < 1:
        raise ParameterError(f"{name} must be an integer >= 1, got {value!r}")
    return int(value)


def _query_matrix(universe: Sequence[Any], queries: Any) -> np.ndarray:
    """k × |X| 0/1 matrix: given directly, or from predicates q(element) -> bool."""
    if isinstance(queries, np.ndarray):
        mat = np.asarray(queries, dtype=np.float64)
    else:
        try:
            qs = list(queries)
        except TypeError:
            raise ParameterError(
                "queries must be a list of predicates or a k x |X| 0/1 matrix"
            ) from None
        if qs and all(callable(q) for q in qs):
            mat = np.array([[1.0 if q(x) else 0.0 for x in universe] for q in qs])
        else:
            mat = np.asarray(qs, dtype=np.float64)
    if mat.ndim != 2 or mat.shape[0] == 0 or mat.shape[1] != len(universe):
        raise ParameterError(
            f"queries must be k >= 1 predicates or a k x |X| = k x {len(universe)} 0/1 matrix"
        )
    if not np.all((mat == 0) | (mat == 1)):
        raise ParameterError("queries matrix must hold only 0 and 1 (counting queries)")
    return mat


class SmallDB(Mechanism):
    """Exponential mechanism over size-m synthetic databases (BLR 2008). ε-DP.

    ``universe``: the public data universe X (a sequence of hashable elements);
    ``queries``: k predicates on X (or a k × |X| 0/1 matrix); ``alpha`` in (0, 1)
    sets m = :func:`synthetic_size` (or pass ``size`` directly).  All
    C(|X| + m − 1, m) multisets are enumerated exactly; above
    ``max_candidates`` a ValueError says so.  Data: a sequence of universe
    elements (its length n is public: substitution neighbours).
    The release value is the synthetic database, a tuple of m elements.
    """

    name = "smalldb"

    def __init__(
        self,
        universe: Sequence[Any],
        queries: Any,
        alpha: float,
        epsilon: float,
        *,
        size: int | None = None,
        max_candidates: int = DEFAULT_MAX_CANDIDATES,
    ) -> None:
        try:
            universe = list(universe)
        except TypeError:
            raise ParameterError("universe must be a sequence of elements") from None
        if not universe:
            raise ParameterError("universe must be non-empty")
        self.universe = universe
        self._index = {x: i for i, x in enumerate(universe)}
        if len(self._index) != len(universe):
            raise ParameterError("universe elements must be distinct")
        self.query_matrix = _query_matrix(universe, queries)
        self.alpha = _validate.in_open_interval(alpha, "alpha", 0.0, 1.0)
        self.epsilon = _validate.epsilon(epsilon)
        k = self.query_matrix.shape[0]
        self.size = synthetic_size(k, self.alpha) if size is None else _count(size, "size")
        count = n_multisets(len(universe), self.size)
        if count > max_candidates:
            raise ParameterError(
                f"SmallDB would enumerate C(|X|+m-1, m) = {count} databases "
                f"(|X| = {len(universe)}, m = {self.size}), above max_candidates = "
                f"{max_candidates}: use a smaller universe, a larger alpha or pass size"
            )
        combos = np.array(
            list(itertools.combinations_with_replacement(range(len(universe)), self.size)),
            dtype=np.int64,
        ).reshape(count, self.size)
        self._combos = combos
        hist = np.zeros((count, len(universe)))
        np.add.at(hist, (np.repeat(np.arange(count), self.size), combos.ravel()), 1.0)
        # Answers of every candidate to every query: (count, k).
        self._candidate_answers = hist @ self.query_matrix.T / self.size

    @property
    def guarantee(self) -> PureDP:
        return PureDP(self.epsilon)

    def mechanism_parameters(self) -> dict[str, Any]:
        return {
            "alpha": self.alpha,
            "size": self.size,
            "n_queries": int(self.query_matrix.shape[0]),
            "universe_size": len(self.universe),
        }

    @property
    def candidates(self) -> list[tuple[Any, ...]]:
        """All synthetic databases, in the order of :meth:`output_probabilities`."""
        return [tuple(self.universe[i] for i in row) for row in self._combos]

    def _histogram(self, data: Any) -> np.ndarray:
        try:
            items = list(data)
        except TypeError:
            raise ParameterError("data must be a sequence of universe elements") from None
        if not items:
            raise ParameterError("data is empty: at least one record is required")
        hist = np.zeros(len(self.universe))
        for x in items:
            i = self._index.get(x)
            if i is None:
                raise ParameterError("data holds an element outside the universe")
            hist[i] += 1
        return hist

    def true_answers(self, data: Any) -> np.ndarray:
        """q(D) for every query (the private answers; analysis only)."""
        hist = self._histogram(data)
        return self.query_matrix @ hist / hist.sum()

    def answers(self, synthetic: Sequence[Any]) -> np.ndarray:
        """q(y) for a released synthetic database y (post-processing)."""
        return self.true_answers(synthetic)

    def errors(self, data: Any) -> np.ndarray:
        """max_q |q(D) − q(y)| for every candidate y (analysis only)."""
        true = self.true_answers(data)
        return np.abs(self._candidate_answers - true).max(axis=1)

    def log_probabilities(self, data: Any) -> np.ndarray:
        n = len(list(data))
        return exponential_log_probabilities(-self.errors(data), 1.0 / n, self.epsilon)

    def output_probabilities(self, data: Any) -> np.ndarray:
        """Exact output probabilities over :attr:`candidates` (analysis only)."""
        return np.exp(self.log_probabilities(data))

    def _state(self, data: Any) -> np.ndarray:
        return self.log_probabilities(data)

    def _draw(self, state: np.ndarray, source: RandomSource, size: int | None) -> Any:
        def one() -> tuple[Any, ...]:
            row = self._combos[sample_index_from_log_weights(state, source)]
            return tuple(self.universe[i] for i in row)

        return repeat_draw(one, size)

    def output_distribution(self, data: Any) -> OutputDistribution:
        """Exact law over :attr:`candidates`: the exponential mechanism with score
        −max_q |q(D) − q(y)| of sensitivity 1/n (Blum, Ligett & Roth 2008, Thm. 4.1;
        McSherry & Talwar 2007, Thm. 6)."""
        return atoms_law(self.candidates, self.output_probabilities(data))
