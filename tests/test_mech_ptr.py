"""ProposeTestRelease and StableRelease: exact distances (against breadth-first
search), exact failure probabilities from the discrete Laplace tail, the privacy
profile of every neighbour pair including the refusal atom, and public-only records."""

from __future__ import annotations

import itertools
import math
from collections import deque

import pytest
from test_mech_support import BruteQuery, hockey_stick, lower_median

from instancedp.mechanisms.base import OutputDistribution
from instancedp.mechanisms.ptr import ProposeTestRelease, distance_to_high_sensitivity
from instancedp.mechanisms.stability import (
    Mode,
    StableRelease,
    mode_distance_to_instability,
    pass_probability,
    stability_threshold,
)
from instancedp.privacy import ApproxDP
from instancedp.random import simulation

MEDIAN = BruteQuery(lower_median, range(6), 5, name="median")


def bfs_distance(query: BruteQuery, x, target) -> float:
    """Distance from x to the nearest dataset satisfying ``target`` (plain BFS)."""
    x = query.key(x)
    seen, todo = {x}, deque([(x, 0)])
    while todo:
        y, d = todo.popleft()
        if target(y):
            return d
        for z in query.neighbours_of(y):
            if z not in seen:
                seen.add(z)
                todo.append((z, d + 1))
    return math.inf


@pytest.mark.parametrize("bound", [0.5, 1.0, 2.0, 3.0, 5.0])
def test_distance_matches_bfs(bound):
    for x in MEDIAN.all[::3]:
        want = bfs_distance(MEDIAN, x, lambda y: MEDIAN._ls[y] > bound)
        assert distance_to_high_sensitivity(MEDIAN, x, bound) == want


def test_threshold_and_failure_probability_exact():
    """P(pass | d = 0) = P(Z ≥ T) = e^{−εT}/(1 + e^{−ε}) ≤ δ, Z ~ DLap(1/ε), summed
    directly from the pmf (not from the code's tail formula)."""
    for eps, delta in [(0.1, 1e-6), (0.5, 1e-3), (1.0, 0.05), (2.0, 1e-9)]:
        t = stability_threshold(eps, delta)
        r = math.exp(-eps)
        norm = (1 - r) / (1 + r)
        p_pass = sum(norm * r**z for z in range(t, t + 4000))
        assert p_pass <= delta
        assert pass_probability(0, eps, delta) == pytest.approx(p_pass, rel=1e-9)
        # T is the smallest such integer.
        p_prev = sum(norm * r**z for z in range(t - 1, t + 4000))
        assert p_prev > delta
        # Never above the notes' threshold ln(1/δ)/ε.
        assert t <= math.ceil(math.log(1 / delta) / eps)


def test_ptr_privacy_profile_on_all_pairs():
    eps, delta, bound = 6.0, 0.05, 1.0
    mech = ProposeTestRelease(MEDIAN, bound, eps, delta)
    assert mech.guarantee == ApproxDP(eps, delta)
    laws = {x: mech.output_distribution(x) for x in MEDIAN.all}
    passes = [1 - law.atoms[None] for law in laws.values()]
    assert max(passes) > 0.5 and min(passes) < delta  # both regimes occur
    worst = max(hockey_stick(laws[x], laws[y], eps, points=20001) for x, y in MEDIAN.pairs())
    assert worst <= delta
    # On datasets with LS > bound, the value escapes with probability ≤ δ.
    for x in MEDIAN.all:
        if MEDIAN._ls[x] > bound:
            assert 1 - laws[x].atoms[None] <= delta


def test_ptr_check_fails_when_release_noise_is_too_small():
    eps, delta, bound = 6.0, 0.05, 1.0
    mech = ProposeTestRelease(MEDIAN, bound, eps, delta)

    def broken(x):
        p = mech.pass_probability(x)
        law = mech.output_distribution(x)
        return (
            OutputDistribution.additive(
                MEDIAN.value(x), bound / eps / 4, _lap(), atoms=dict(law.atoms)
            )
            if p > 0
            else law
        )

    laws = {x: broken(x) for x in MEDIAN.all}  # once per dataset, not once per pair
    worst = max(hockey_stick(laws[x], laws[y], eps, points=20001) for x, y in MEDIAN.pairs())
    assert worst > delta


def _lap():
    from instancedp.noise import Laplace

    return Laplace(1.0)


def test_ptr_refusal_and_release_records():
    mech = ProposeTestRelease(MEDIAN, 1.0, 6.0, 0.05)
    stable, unstable = (2, 2, 2, 2, 2), (0, 0, 2, 5, 5)
    assert mech.pass_probability(stable) > 0.9 and mech.pass_probability(unstable) < 0.05
    r1 = mech.release(stable, rng=simulation(0))
    r2 = mech.release(unstable, rng=simulation(0))
    assert r2.refused and r2.value is None and r2.to_dict()["refused"] is True
    assert not r1.refused
    d1, d2 = r1.to_dict(), r2.to_dict()
    for d in (d1, d2):
        d.pop("value"), d.pop("refused")
    assert d1 == d2  # everything else is public and identical


def test_ptr_bad_input():
    with pytest.raises(ValueError, match="bound"):
        ProposeTestRelease(MEDIAN, 0, 1.0, 1e-6)
    with pytest.raises(ValueError, match="delta"):
        ProposeTestRelease(MEDIAN, 1.0, 1.0, 0)
    with pytest.raises(ValueError, match="epsilon"):
        ProposeTestRelease(MEDIAN, 1.0, -1.0, 1e-6)


# ---------------------------------------------------------------- stability
def _bfs_mode_distance(counts, relation):
    """d(x) by BFS over count vectors (n fixed under substitution)."""
    start = tuple(counts)
    k = len(start)

    def lead(c):
        return max(range(k), key=lambda i: (c[i], -i))

    seen, todo = {start}, deque([(start, 0)])
    while todo:
        c, d = todo.popleft()
        if lead(c) != lead(start):
            return d - 1
        steps = []
        if relation == "substitution":
            for i, j in itertools.permutations(range(k), 2):
                if c[i] > 0:
                    steps.append(tuple(v - (t == i) + (t == j) for t, v in enumerate(c)))
        else:
            for i in range(k):
                steps.append(tuple(v + (t == i) for t, v in enumerate(c)))
                if c[i] > 0:
                    steps.append(tuple(v - (t == i) for t, v in enumerate(c)))
        for s in steps:
            if s not in seen:
                seen.add(s)
                todo.append((s, d + 1))
    return math.inf


@pytest.mark.parametrize("relation", ["substitution", "add_remove"])
def test_mode_distance_matches_bfs(relation):
    for counts in itertools.product(range(6), repeat=3):
        if sum(counts) == 0:
            continue
        assert mode_distance_to_instability(counts, relation) == _bfs_mode_distance(
            counts, relation
        ), counts


def test_stable_release_profile_on_all_pairs():
    eps, delta = 1.0, 0.05
    q = Mode(["a", "b", "c"])
    mech = StableRelease(q, eps, delta)
    data = [list(x) for x in itertools.combinations_with_replacement("abc", 6)]
    laws = {tuple(x): mech.output_distribution(x) for x in data}
    worst = 0.0
    for x in data:
        for i in range(len(x)):
            for v in "abc":
                if v != x[i]:
                    y = tuple(sorted(x[:i] + [v] + x[i + 1 :]))
                    worst = max(worst, hockey_stick(laws[tuple(x)], laws[y], eps))
    assert worst <= delta
    unstable = ["a", "a", "a", "b", "b", "b"]
    assert pass_probability(q.distance_to_instability(unstable), eps, delta) <= delta
    assert mech.release(["a"] * 6, rng=simulation(0)).value == "a"


def test_stable_release_validation():
    with pytest.raises(ValueError, match="distance_to_instability"):
        StableRelease(MEDIAN, 1.0, 1e-6)
    with pytest.raises(ValueError, match="categories"):
        Mode(["a"]).counts(["a", "z"])


def test_distance_with_library_median_matches_bfs():
    """The library's Median (closed-form A^(k)) gives PTR the same distances as BFS."""
    from instancedp.queries.order import Median

    real = Median(0, 5, neighbours="substitution")
    for bound in (0.5, 1.0, 2.0, 4.0, 5.0):
        for x in MEDIAN.all[::2]:
            assert real.value(x) == MEDIAN.value(x)
            want = bfs_distance(MEDIAN, x, lambda y, b=bound: MEDIAN._ls[y] > b)
            assert distance_to_high_sensitivity(real, x, bound) == want, (x, bound)
