"""SmallDB (BLR 2008) and seed 002's accuracy bounds.

The exact law is recomputed here by brute force (every length-m tuple of the
universe, deduplicated as sorted multisets) and the ε bound is checked over all
substitution neighbours of all datasets of a tiny universe.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from instancedp.mechanisms.smalldb import (
    SmallDB,
    crossing_epsilon,
    laplace_accuracy,
    n_multisets,
    smalldb_accuracy,
    synthetic_size,
    universe_size_for_crossing,
)
from instancedp.random import simulation

UNIVERSE = ["a", "b", "c"]
PREDICATES = [lambda x: x in ("a", "b"), lambda x: x == "c"]


def _brute_law(data, size, eps):
    """{sorted multiset: probability}, from the definition."""
    n = len(data)
    truth = [sum(q(x) for x in data) / n for q in PREDICATES]
    cands = sorted({tuple(sorted(t)) for t in itertools.product(UNIVERSE, repeat=size)})
    errs = [
        max(abs(sum(q(x) for x in y) / size - t) for q, t in zip(PREDICATES, truth, strict=True))
        for y in cands
    ]
    w = np.exp(-eps * n * np.array(errs) / 2)  # exp(ε·score/(2·(1/n)))
    return dict(zip(cands, w / w.sum(), strict=True))


def test_synthetic_size():
    assert synthetic_size(4, 0.5) == 8  # ⌈log2 4 / 0.25⌉
    assert synthetic_size(120, 0.6) == math.ceil(math.log2(120) / 0.36)
    assert synthetic_size(1, 0.5) == math.ceil(math.log(2) / 0.5)  # Hoeffding for |Q| = 1
    assert n_multisets(3, 2) == 6 and n_multisets(4, 3) == 20


@pytest.mark.parametrize("eps", [0.3, 2.0])
def test_law_and_pairwise_epsilon(eps):
    db = SmallDB(UNIVERSE, PREDICATES, 0.5, eps, size=2)
    assert sorted(db.candidates) == sorted(_brute_law(list("abc"), 2, eps))
    worst = 0.0
    datasets = list(itertools.product(UNIVERSE, repeat=3))
    for data in datasets:
        lp = db.log_probabilities(list(data))
        law = _brute_law(list(data), 2, eps)
        np.testing.assert_allclose(np.exp(lp), [law[c] for c in db.candidates], rtol=1e-12)
        for i, v in itertools.product(range(3), UNIVERSE):
            nb = list(data)
            nb[i] = v
            worst = max(worst, float(np.max(np.abs(lp - db.log_probabilities(nb)))))
    assert worst <= eps * (1 + 1e-12)
    assert worst >= 0.3 * eps  # non-vacuous


def test_release_and_answers():
    db = SmallDB(UNIVERSE, PREDICATES, 0.5, 1.0)
    rel = db.release(list("aabccc"), rng=simulation(0))
    assert len(rel.value) == db.size and set(rel.value) <= set(UNIVERSE)
    assert set(rel.parameters) == {"epsilon", "alpha", "size", "n_queries", "universe_size"}
    ans = db.answers(rel.value)
    assert ans.shape == (2,) and np.all((ans >= 0) & (ans <= 1))
    # Matrix form of the same queries gives the same law.
    mat = np.array([[1, 1, 0], [0, 0, 1]])
    db2 = SmallDB(UNIVERSE, mat, 0.5, 1.0)
    np.testing.assert_allclose(
        db2.output_probabilities(list("abcc")), db.output_probabilities(list("abcc"))
    )


def test_crossing_point_of_seed_002():
    # n = 10, k = 1, β = 0.05: ln(20)/(10ε) = (4 ln(20)/(10ε))^{1/3} ⇔ ε = ln(20)/20.
    eps = crossing_epsilon(10, 1, 0.05, 2)
    assert eps == pytest.approx(math.log(20) / 20, rel=1e-12)
    assert round(eps, 4) == 0.1498  # FORMULAS.md §6; the text says 0.15
    assert laplace_accuracy(10, 1, eps, 0.05) == pytest.approx(
        smalldb_accuracy(10, 1, eps, 0.05, 2), rel=1e-12
    )
    # n = 1000, k = 120: depends on |X| (FORMULAS.md §6: |X| = 2 → 2.58, 10 → 1.47).
    assert round(crossing_epsilon(1000, 120, 0.05, 2), 2) == 2.58
    assert round(crossing_epsilon(1000, 120, 0.05, 10), 2) == 1.47
    # The text's 2.08 corresponds to |X| ≈ 3.
    assert universe_size_for_crossing(1000, 120, 0.05, 2.08) == pytest.approx(3.0, abs=0.05)
    assert 2.08 <= crossing_epsilon(1000, 120, 0.05, 3) < 2.09  # 2.0866, truncated in the text
    # Below the crossing SmallDB's bound is smaller, above it Laplace's.
    assert smalldb_accuracy(10, 1, 0.1, 0.05, 2) < laplace_accuracy(10, 1, 0.1, 0.05)
    assert smalldb_accuracy(10, 1, 0.2, 0.05, 2) > laplace_accuracy(10, 1, 0.2, 0.05)


def test_measured_error_within_bound():
    """Exact P(max error > bound) ≤ β for SmallDB run at α = its own bound."""
    universe = list(range(4))
    rng = np.random.default_rng(7)
    queries = rng.integers(0, 2, size=(3, 4))
    n, eps, beta = 1000, 1.0, 0.05
    bound = smalldb_accuracy(n, 3, eps, beta, 4)
    db = SmallDB(universe, queries, bound, eps)
    data = list(rng.integers(0, 4, size=n))
    p = db.output_probabilities(data)
    assert p[db.errors(data) > bound].sum() <= beta
    # Laplace(k/(εn)) per query: P(max_q |Z_q| > α) = 1 − (1 − e^{−α/b})^k ≤ β.
    b = 3 / (eps * n)
    alpha = laplace_accuracy(n, 3, eps, beta)
    assert 1 - (1 - math.exp(-alpha / b)) ** 3 <= beta


@pytest.mark.parametrize(
    "factory,match",
    [
        (lambda: SmallDB(UNIVERSE, PREDICATES, 1.5, 1.0), "alpha"),
        (lambda: SmallDB(UNIVERSE, PREDICATES, 0.5, 0.0), "epsilon"),
        (lambda: SmallDB([], PREDICATES, 0.5, 1.0), "universe"),
        (lambda: SmallDB(["a", "a"], [[1, 0]], 0.5, 1.0), "distinct"),
        (lambda: SmallDB(UNIVERSE, [[1, 0]], 0.5, 1.0), "queries"),
        (lambda: SmallDB(UNIVERSE, [[1, 2, 0]], 0.5, 1.0), "0 and 1"),
        (lambda: SmallDB(list(range(30)), [[1] * 30] * 8, 0.05, 1.0), "max_candidates"),
        (lambda: SmallDB(UNIVERSE, PREDICATES, 0.5, 1.0).release(["z"]), "outside the universe"),
        (lambda: SmallDB(UNIVERSE, PREDICATES, 0.5, 1.0).release([]), "empty"),
        (lambda: laplace_accuracy(0, 1, 1.0, 0.05), "n must"),
        (lambda: smalldb_accuracy(10, 1, 1.0, 1.5, 2), "beta"),
        (lambda: universe_size_for_crossing(10, 1, 0.05, 0.15), "k must"),
    ],
)
def test_bad_input(factory, match):
    with pytest.raises(ValueError, match=match):
        factory()
