"""Seed 002's comparison of Laplace and SmallDB for k normalised counting queries.

Bounds (with probability 1 − β): Laplace α = (k/(εn))·ln(k/β); SmallDB
α = ((16·lg|X|·lg k + 4·ln(1/β))/(εn))^{1/3}.  The seed does not state |X|;
|X| = 3 reproduces its n = 1000, k = 120 crossing (2.0866, quoted as 2.08),
while n = 10, k = 1 (ε = ln 20 / 20 = 0.1498) does not depend on |X|.

Measured errors on a small universe: SmallDB is run at α = its own bound
(capped at 0.95) and its error law is computed exactly by enumerating every
synthetic database; Laplace(k/(εn)) per query is sampled (seeded) and its
exact quantile −b·ln(1 − (1 − β)^{1/k}) and mean b·H_k are given too.
Queries are random non-trivial subsets of X (with |X| = 3 only 6 exist, so for k > 6
queries repeat: that changes nothing for SmallDB's error but is what the
bound's k means for Laplace's budget split).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..mechanisms.smalldb import (
    SmallDB,
    crossing_epsilon,
    laplace_accuracy,
    smalldb_accuracy,
)

NS = (10, 1000)
KS = (1, 25, 120)
BETA = 0.05
UNIVERSE_SIZE = 3


def bound_curves(
    ns: tuple[int, ...] = NS,
    ks: tuple[int, ...] = KS,
    beta: float = BETA,
    universe_size: int = UNIVERSE_SIZE,
    epsilons: Any = None,
) -> list[dict[str, Any]]:
    eps_grid = np.logspace(-2, 1, 61) if epsilons is None else np.asarray(epsilons, dtype=float)
    return [
        {
            "n": n,
            "k": k,
            "epsilon": float(e),
            "laplace_bound": laplace_accuracy(n, k, float(e), beta),
            "smalldb_bound": smalldb_accuracy(n, k, float(e), beta, universe_size),
        }
        for n in ns
        for k in ks
        for e in eps_grid
    ]


def crossings(
    ns: tuple[int, ...] = NS,
    ks: tuple[int, ...] = KS,
    beta: float = BETA,
    universe_sizes: tuple[int, ...] = (2, 3, 10),
) -> list[dict[str, Any]]:
    return [
        {"n": n, "k": k, "universe_size": x, "crossing_epsilon": crossing_epsilon(n, k, beta, x)}
        for n in ns
        for k in ks
        for x in universe_sizes
    ]


def _quantile(values: np.ndarray, probs: np.ndarray, q: float) -> float:
    order = np.argsort(values)
    cum = np.cumsum(probs[order])
    return float(values[order][min(np.searchsorted(cum, q - 1e-12), values.size - 1)])


def measured(
    ns: tuple[int, ...] = NS,
    ks: tuple[int, ...] = KS,
    epsilons: tuple[float, ...] = (0.03, 0.1, 0.3, 1.0, 3.0, 10.0),
    beta: float = BETA,
    universe_size: int = UNIVERSE_SIZE,
    reps: int = 4000,
    seed: int = 2,
    quick: bool = False,
) -> list[dict[str, Any]]:
    """Measured max-over-queries errors of both mechanisms, next to the bounds."""
    if quick:
        epsilons, reps = tuple(epsilons[::2]), min(reps, 500)
    gen = np.random.default_rng(seed)
    universe = list(range(universe_size))
    rows = []
    for n in ns:
        data = list(gen.integers(0, universe_size, size=n))
        for k in ks:
            # Non-constant predicates only: a query true (or false) on all of X has no error.
            subsets = np.array(
                [
                    [(s >> i) & 1 for i in range(universe_size)]
                    for s in range(1, 2**universe_size - 1)
                ]
            )
            queries = subsets[gen.integers(0, len(subsets), size=k)]
            for eps in epsilons:
                s_bound = smalldb_accuracy(n, k, eps, beta, universe_size)
                l_bound = laplace_accuracy(n, k, eps, beta)
                db = SmallDB(universe, queries, min(s_bound, 0.95), eps)
                p = db.output_probabilities(data)
                err = db.errors(data)
                b = k / (eps * n)
                lap = np.abs(gen.laplace(scale=b, size=(reps, k))).max(axis=1)
                rows.append(
                    {
                        "n": n,
                        "k": k,
                        "epsilon": eps,
                        "smalldb_size_m": db.size,
                        "smalldb_candidates": len(p),
                        "smalldb_mean_error": float(p @ err),
                        "smalldb_quantile_error": _quantile(err, p, 1 - beta),
                        "smalldb_bound": s_bound,
                        "laplace_mean_error_sampled": float(lap.mean()),
                        "laplace_mean_error_exact": b * sum(1 / i for i in range(1, k + 1)),
                        "laplace_quantile_error_exact": -b * math.log1p(-((1 - beta) ** (1 / k))),
                        "laplace_bound": l_bound,
                    }
                )
    return rows
