"""Algorithm 1 rates (000 §5), Theorem 14's checker and InstanceBasedNoise.

The privacy claim is checked exactly: for every level edge the worst neighbour
pair (|f(x) − f(x′)| = min(LS_k, LS_l), rates λ_k, λ_l) has a closed-form
privacy profile δ(ε) = ∫(p − e^ε q)₊ for two Laplace densities, which must be
≤ δ in both directions.  The closed form is checked against quadrature.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate

from instancedp.mechanisms.levels import (
    InstanceBasedNoise,
    check_instance_noise,
    layered_adjacency,
    layered_level_rates,
    level_rates,
)
from instancedp.random import simulation

# ---------------------------------------------------------------------------
# Independent reference: the exact hockey-stick divergence of two Laplace laws.


def _lap_mass(a: float, b: float, c: float, s: float) -> float:
    """P(a < c + Lap(s) < b), computed on the side of c where it is accurate."""
    if b <= a:
        return 0.0

    def cdf(y: float) -> float:
        return 0.5 * math.exp((y - c) / s) if y < c else 1.0 - 0.5 * math.exp(-(y - c) / s)

    def sf(y: float) -> float:
        return 1.0 - 0.5 * math.exp((y - c) / s) if y < c else 0.5 * math.exp(-(y - c) / s)

    if b <= c:
        return cdf(b) - (cdf(a) if a > -math.inf else 0.0)
    if a >= c:
        return sf(a) - (sf(b) if b < math.inf else 0.0)
    return 1.0 - (cdf(a) if a > -math.inf else 0.0) - (sf(b) if b < math.inf else 0.0)


def laplace_hockey_stick(c1: float, s1: float, c2: float, s2: float, eps: float) -> float:
    """∫ (p − e^ε q)₊ for p = Lap(c1, s1), q = Lap(c2, s2), exactly: on each of the
    three pieces between the centres ln p − ln q is linear, so the set where it
    exceeds ε is an interval whose masses are Laplace cdf differences."""
    cuts = [-math.inf, min(c1, c2), max(c1, c2), math.inf]
    total = 0.0
    for u, v in zip(cuts[:-1], cuts[1:], strict=True):
        if v <= u:
            continue
        mid = (
            (u + v) / 2
            if math.isfinite(u) and math.isfinite(v)
            else (v - 1 if u == -math.inf else u + 1)
        )
        g1 = 1.0 if mid > c1 else -1.0
        g2 = 1.0 if mid > c2 else -1.0
        # ln p − ln q − ε = alpha + beta·y on (u, v)
        beta = -g1 / s1 + g2 / s2
        alpha = g1 * c1 / s1 - g2 * c2 / s2 - math.log(s1 / s2) - eps
        if beta == 0:
            lo, hi = (u, v) if alpha > 0 else (u, u)
        else:
            y0 = -alpha / beta
            lo, hi = (max(u, y0), v) if beta > 0 else (u, min(v, y0))
        if hi > lo:
            total += _lap_mass(lo, hi, c1, s1) - math.exp(eps) * _lap_mass(lo, hi, c2, s2)
    return max(total, 0.0)


def _quad_hockey_stick(c1, s1, c2, s2, eps):
    def f(y):
        p = math.exp(-abs(y - c1) / s1) / (2 * s1)
        q = math.exp(-abs(y - c2) / s2) / (2 * s2)
        return max(p - math.exp(eps) * q, 0.0)

    width = 80 * max(s1, s2)
    pts = sorted({c1, c2})
    edges = [pts[0] - width, *pts, pts[-1] + width]
    return sum(
        integrate.quad(f, a, b, limit=400, epsabs=1e-15, epsrel=1e-11)[0]
        for a, b in zip(edges[:-1], edges[1:], strict=True)
    )


@pytest.mark.parametrize(
    "c1,s1,c2,s2,eps",
    [(0, 1, 1, 1, 0.5), (0, 1, 0.3, 1.4, 0.2), (0, 2, -1, 0.7, 1.0), (0, 1, 2, 1.1, 0.01)],
)
def test_closed_form_profile_matches_quadrature(c1, s1, c2, s2, eps):
    assert laplace_hockey_stick(c1, s1, c2, s2, eps) == pytest.approx(
        _quad_hockey_stick(c1, s1, c2, s2, eps), rel=1e-7, abs=1e-13
    )


def test_closed_form_profile_pure_laplace():
    # Same scale b, shift Δ: δ(ε) = 1 − e^{(ε − Δ/b)/2} for ε ≤ Δ/b (Balle et al. 2018).
    for eps in (0.1, 0.5, 0.9):
        assert laplace_hockey_stick(0, 1, 1, 1, eps) == pytest.approx(
            1 - math.exp((eps - 1) / 2), rel=1e-12
        )
    assert laplace_hockey_stick(0, 1, 1, 1, 1.0) == 0.0


# ---------------------------------------------------------------------------
# Random level graphs


@st.composite
def level_graphs(draw):
    r = draw(st.integers(2, 10))
    steps = draw(
        st.lists(
            st.one_of(st.just(0.0), st.floats(0.001, 0.05), st.floats(0.05, 1.5)),
            min_size=r - 1,
            max_size=r - 1,
        )
    )
    start = draw(st.one_of(st.just(0.0), st.floats(0.1, 10.0)))
    levels = [start]
    for s in steps:
        base = levels[-1] if levels[-1] > 0 else 0.5
        levels.append(levels[-1] + base * s)
    if levels[-1] <= 0:
        levels[-1] = 1.0
    # A random spanning tree plus random extra edges: connected and symmetric.
    adj = {k: set() for k in range(r)}
    for k in range(1, r):
        j = draw(st.integers(0, k - 1))
        adj[k].add(j)
        adj[j].add(k)
    extra = draw(st.lists(st.tuples(st.integers(0, r - 1), st.integers(0, r - 1)), max_size=8))
    for a, b in extra:
        if a != b:
            adj[a].add(b)
            adj[b].add(a)
    eps = draw(st.floats(0.05, 5.0))
    delta = draw(st.sampled_from([1e-9, 1e-6, 1e-3, 0.05, 0.3]))
    return np.array(levels), {k: sorted(v) for k, v in adj.items()}, eps, delta


def _edges(adj):
    return [(k, j) for k, js in adj.items() for j in js if j > k]


@settings(max_examples=150)
@given(level_graphs())
def test_rates_satisfy_theorem14(graph):
    levels, adj, eps, delta = graph
    t = eps / math.log(1 / delta)
    for method in ("algorithm1", "envelope"):
        lam = level_rates(levels, adj, eps, delta, method=method)
        assert np.all(lam > 0) and np.all(np.isfinite(lam))
        # Condition (1) with α = ½, directly.
        assert np.all(lam * levels <= eps / 2 * (1 + 1e-12))
        # Claim 19's two-sided condition on every level edge, directly.
        for k, j in _edges(adj):
            ratio = lam[k] / lam[j]
            assert 1 / (1 + t / 2) * (1 - 1e-12) <= ratio <= (1 + t / 2) * (1 + 1e-12)
        assert check_instance_noise(lam, levels, _edges(adj), eps, delta).ok
        assert check_instance_noise(lam, levels, _edges(adj), eps, delta, alphas=0.5).ok


@settings(max_examples=150)
@given(level_graphs())
def test_envelope_is_largest_and_tight(graph):
    levels, adj, eps, delta = graph
    grow = 1 + eps / math.log(1 / delta) / 2
    alg = level_rates(levels, adj, eps, delta)
    env = level_rates(levels, adj, eps, delta, method="envelope")
    assert np.all(alg <= env * (1 + 1e-12))
    caps = np.where(levels > 0, eps / (2 * np.where(levels > 0, levels, 1)), np.inf)
    for k in range(levels.size):
        tight_cap = math.isclose(env[k], caps[k], rel_tol=1e-12)
        tight_edge = any(math.isclose(env[k], env[j] * grow, rel_tol=1e-12) for j in adj[k])
        assert tight_cap or tight_edge  # no single rate can be raised


@settings(max_examples=60)
@given(level_graphs())
def test_exact_privacy_profile_on_neighbour_pairs(graph):
    """Worst neighbour pair per level edge (and inside a level): δ(ε) ≤ δ."""
    levels, adj, eps, delta = graph
    for method in ("algorithm1", "envelope"):
        lam = level_rates(levels, adj, eps, delta, method=method)
        pairs = _edges(adj) + [(k, k) for k in range(levels.size)]
        for k, j in pairs:
            shift = min(levels[k], levels[j])
            if shift == 0:
                continue
            s_k, s_j = 1 / lam[k], 1 / lam[j]
            for d in (
                laplace_hockey_stick(0.0, s_k, shift, s_j, eps),
                laplace_hockey_stick(shift, s_j, 0.0, s_k, eps),
            ):
                assert d <= delta * (1 + 1e-9) + 1e-15


def _literal_reading(levels, adj, eps, delta):
    """FORMULAS.md §3 reading: in the else-branch only the levels adjacent to k."""
    grow = 1 + eps / math.log(1 / delta) / 2
    r = len(levels)
    lam = np.empty(r)
    lam[-1] = eps / (2 * levels[-1])
    for k in range(r - 2, -1, -1):
        if levels[k + 1] / levels[k] < grow:
            lam[k] = lam[k + 1]
        else:
            ups = [lam[j] for j in adj[k] if j > k]
            lam[k] = min(eps / (2 * levels[k]), min(ups) * grow)
    return lam


def test_literal_adjacency_reading_breaks_theorem14_but_algorithm1_does_not():
    # Levels 0 ~ 3 and 1 ~ 2 ~ 3; LS_1/LS_0 close (copy branch), others far apart.
    levels = np.array([1.0, 1.01, 5.0, 20.0])
    adj = {0: [3], 1: [2], 2: [1, 3], 3: [0, 2]}
    eps, delta = 1.0, 1e-3
    literal = _literal_reading(levels, adj, eps, delta)
    report = check_instance_noise(literal, levels, _edges(adj), eps, delta)
    assert not report.ok
    assert (0, 3) in report.condition2 or (3, 0) in report.condition2
    assert check_instance_noise(
        level_rates(levels, adj, eps, delta), levels, _edges(adj), eps, delta
    )


def test_layered_matches_example22_closed_form():
    eps, delta, r = 1.0, 1e-4, 50
    t = eps / math.log(1 / delta)
    levels = np.cumprod(np.full(r, 1 + t / 2 + 0.01))
    lam = layered_level_rates(levels, eps, delta)
    expected = eps / (2 * levels[-1]) * (1 + t / 2) ** np.arange(r - 1, -1, -1)
    np.testing.assert_allclose(lam, expected, rtol=1e-12)
    total = (2 * levels[-1] / eps) * (1 + 2 / t) * (1 - (1 + t / 2) ** -r)
    assert np.sum(1 / lam) == pytest.approx(total, rel=1e-12)
    assert layered_adjacency(3) == {0: [1], 1: [0, 2], 2: [1]}


def test_layered_close_levels_copy_rate():
    eps, delta = 1.0, 1e-3
    lam = layered_level_rates([1.0, 1.001, 1.002, 10.0], eps, delta)
    assert lam[0] == lam[1] == lam[2]
    assert lam[2] == pytest.approx(min(eps / 2 / 1.002, lam[3] * (1 + eps / math.log(1e3) / 2)))


def test_zero_sensitivity_levels():
    lam = layered_level_rates([0.0, 0.0, 2.0], 1.0, 1e-6)
    assert np.all(np.isfinite(lam)) and lam[0] == lam[1] >= lam[2]


def test_checker_reports_violations():
    ls = np.array([1.0, 2.0, 2.0])
    eps, delta = 1.0, 1e-5
    t = eps / math.log(1 / delta)
    rates = np.array([eps / 2, eps / 4, eps / 4 * (1 + 0.9 * t)])
    rep = check_instance_noise(rates, ls, [(0, 1), (1, 2)], eps, delta, alphas=0.5)
    assert not rep.ok
    assert (1, 2) in rep.condition2 and (2, 1) in rep.condition2
    assert 2 in rep.condition1 and 0 not in rep.condition1
    # Condition (1) alone: rate ε/LS needs α = 1, which then forbids any neighbour jump.
    rep = check_instance_noise([1.0, 1.0], [1.0, 1.0], [(0, 1)], 1.0, 1e-5)
    assert rep.ok
    rep = check_instance_noise([1.1, 1.0], [1.0, 1.0], [(0, 1)], 1.0, 1e-5)
    assert rep.condition1 == (0,)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(levels=[2.0, 1.0]), "non-decreasing"),
        (dict(levels=[-1.0, 1.0]), ">= 0"),
        (dict(levels=[0.0, 0.0]), "LS_r must be > 0"),
        (dict(levels=[]), "non-empty"),
        (dict(adjacency={0: [1], 1: []}), "symmetric"),
        (dict(adjacency={0: [], 1: []}), "connect"),
        (dict(adjacency={0: [5], 5: [0]}), "adjacency"),
        (dict(epsilon=0.0), "epsilon"),
        (dict(delta=0.0), "delta"),
        (dict(delta=1.0), "delta"),
        (dict(method="fast"), "method"),
    ],
)
def test_level_rates_bad_input(kwargs, match):
    args = dict(levels=[1.0, 2.0], adjacency={0: [1], 1: [0]}, epsilon=1.0, delta=1e-5)
    args.update(kwargs)
    method = args.pop("method", "algorithm1")
    with pytest.raises(ValueError, match=match):
        level_rates(
            args["levels"], args["adjacency"], args["epsilon"], args["delta"], method=method
        )


class _Sum:
    name = "sum"
    neighbours = "substitution"
    global_sensitivity = 10.0

    def value(self, data):
        return float(np.sum(data))


def _level_of(data):
    return 0 if max(data) < 2 else 1


def test_instance_based_noise_release_and_law():
    # two levels: the only level graph is 0 ~ 1, i.e. layered (stated explicitly)
    mech = InstanceBasedNoise.from_levels(_level_of, [1.0, 10.0], "layered", _Sum(), 1.0, 1e-5)
    lam = mech.rates
    rel = mech.release([0.5, 1.0], rng=simulation(1))
    assert rel.guarantee.epsilon == 1.0 and rel.guarantee.delta == 1e-5
    assert not rel.secure
    # Nothing data-dependent in the public record.
    assert set(rel.parameters) == {
        "epsilon", "delta", "n_levels", "rates", "query", "neighbours"
    }
    assert rel.parameters["rates"] == lam.tolist()  # public: from the public levels
    law = mech.output_distribution([0.5, 1.0])
    y = np.array([-3.0, 1.5, 7.0])
    np.testing.assert_allclose(
        law.pdf(y), lam[0] / 2 * np.exp(-lam[0] * np.abs(y - 1.5)), rtol=1e-12
    )
    # Mean absolute error over 40 000 seeded draws ≈ 1/λ_1: the mean of |Lap(b)|
    # has sd b/√n = 0.5% of b, so a 3% band is a > 5-sigma event (p < 1e-6).
    rng = simulation(2024)
    errs = [abs(mech.release([3.0], rng=rng).value - 3.0) for _ in range(40_000)]
    assert np.mean(errs) == pytest.approx(1 / lam[1], rel=0.03)


def test_instance_based_noise_bad_input():
    with pytest.raises(ValueError, match="rates"):
        InstanceBasedNoise(_level_of, [1.0, -1.0], _Sum(), 1.0, 1e-5)
    with pytest.raises(ValueError, match="level_of"):
        InstanceBasedNoise(None, [1.0], _Sum(), 1.0, 1e-5)
    with pytest.raises(ValueError, match="delta"):
        InstanceBasedNoise(_level_of, [1.0], _Sum(), 1.0, 0.0)
    mech = InstanceBasedNoise(lambda d: 7, [1.0], _Sum(), 1.0, 1e-5)
    with pytest.raises(ValueError, match="level index"):
        mech.release([1.0], rng=simulation(0))
