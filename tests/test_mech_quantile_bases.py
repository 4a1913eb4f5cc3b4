"""ExponentialQuantile in the query shape: the score's sensitivity per relation
(brute force), the exact privacy check over brute-force neighbour pairs for
the uniform, log and grid base measures under add/remove and substitution,
grid_quantile_from_counts, the release path against the exact law."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

from instancedp.audit.profile import check_mechanism, neighbour_pairs_from_brute
from instancedp.errors import ParameterError
from instancedp.mechanisms.quantile import (
    GRID_SHRINK,
    ExponentialQuantile,
    grid_quantile_from_counts,
    grid_scores,
    grid_segments,
    score_sensitivity,
)
from instancedp.queries import brute
from instancedp.queries.order import Median, Quantile
from instancedp.random import simulation

DOMAIN = (0.0, 1.0, 3.0)


def quantile(q, lo, hi, relation):
    query = Median(lo, hi) if q == 0.5 else Quantile(q, lo, hi)
    query.neighbours = relation  # the relation a query declares (order.py gains the keyword)
    return query


def pairs(relation, sizes=(1, 2, 3)):
    out = []
    for n in sizes:
        out += neighbour_pairs_from_brute(DOMAIN, n, relation)
    if relation == "add_remove":
        out += [((), (v,)) for v in DOMAIN]  # the empty table neighbours every 1-row table
    return out


def score(x, t, q):
    """dist(q·n, {#{x < t}, …, #{x ≤ t}}), from the definition (|#{x < t} − q·n| off
    the rows; the distance to a tied run's ranks on it)."""
    x = np.asarray(x, float)
    a, b = int(np.sum(x < t)), int(np.sum(x <= t))
    qn = Fraction(q) * x.size
    return float(min(abs(i - qn) for i in range(a, b + 1)))


def grid_score(x, t, q, lam=GRID_SHRINK):
    """The grid bases' score from its definition: dist(q·n, [L + a·E, L + E − a·E]),
    L = #{x < t}, E = #{x = t}, a = λ·min(q, 1 − q), in exact rationals."""
    x = np.asarray(x, float)
    low, e = int(np.sum(x < t)), int(np.sum(x == t))
    a = Fraction(lam) * min(Fraction(q), 1 - Fraction(q))
    qn = Fraction(q) * x.size
    return float(max(low + a * e - qn, qn - (low + e - a * e), 0))


def _worst_change(score_of, relation, max_rows):
    """The largest change of score_of(x, t) over brute-force neighbour pairs of DOMAIN
    (tables of up to ``max_rows`` rows; the empty table too under add/remove)."""
    ts = (-0.5, 0.0, 0.5, 1.0, 2.0, 3.0, 3.5)
    inputs = [((), [(v,) for v in DOMAIN])] if relation == "add_remove" else []
    for n in range(1, max_rows + 1):
        inputs += [(x, brute.neighbours(x, relation, DOMAIN)) for x in brute.datasets(DOMAIN, n)]
    return max(abs(score_of(x, t) - score_of(y, t))
               for x, nbrs in inputs for y in nbrs for t in ts)


@pytest.mark.parametrize("relation", ["add_remove", "substitution"])
@pytest.mark.parametrize("q", [0.5, 0.25, 0.9])
def test_score_sensitivity_is_tight_against_brute_force(relation, q):
    worst = _worst_change(lambda x, t: score(x, t, q), relation, 3)
    assert worst == pytest.approx(score_sensitivity(q, relation))


@pytest.mark.parametrize("relation", ["add_remove", "substitution"])
@pytest.mark.parametrize("q", [0.5, 0.25, 0.9])
@pytest.mark.parametrize("lam", [GRID_SHRINK, 1.0])
def test_grid_score_sensitivity_is_tight_against_brute_force(relation, q, lam):
    # the shrunk interval keeps Δ for every share a ≤ ½ (docs/formulas.md, the grid score)
    worst = _worst_change(lambda x, t: grid_score(x, t, q, lam), relation, 4)
    assert worst == pytest.approx(score_sensitivity(q, relation))


def test_grid_scores_match_the_definition():
    rng = np.random.default_rng(4)
    for _ in range(200):
        n = int(rng.integers(0, 9))
        x = rng.integers(0, 5, n).astype(float)
        q = float(rng.choice([0.1, 0.25, 0.5, 0.75, 0.9]))
        lam = float(rng.choice([0.0, GRID_SHRINK, 0.5, 1.0]))
        t = np.arange(-1.0, 6.0)
        below = np.array([np.sum(x < v) for v in t])
        above = np.array([np.sum(x > v) for v in t])
        got = grid_scores(below, above, q, n, shrink=lam)
        want = [grid_score(x, v, q, lam) for v in t]
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    # the run holding the target rank keeps score 0 here; its neighbours are charged a
    # share of their own runs on top of the target rank's distance to the shared edge
    x = [1.0] * 4 + [2.0] * 10 + [3.0] * 6  # n = 20, q·n = 10: ranks 4 … 14 at 2
    assert grid_score(x, 2.0, 0.5, 0.0) == grid_score(x, 2.0, 0.5, GRID_SHRINK) == 0.0
    assert grid_score(x, 1.0, 0.5, 0.0) == 6.0
    assert grid_score(x, 1.0, 0.5, GRID_SHRINK) == 6.0 + 0.5 * GRID_SHRINK * 4


def _samples(relation: str, q: float) -> int:
    """Draws for check_mechanism's release-path check (its false failure ≤ 1e−6 per
    input): the release path of a base is one code path whatever the relation and q
    (they change only the weights), so one cell per base samples it — add/remove at
    q ≠ ½, whose pairs include the empty table — and the others check the exact law
    only.  The release path's law is also checked below (test_release_path_matches_
    exact_law, test_grid_release_lands_on_the_grid_with_exact_frequencies)."""
    return 2000 if relation == "add_remove" and q != 0.5 else 0


@pytest.mark.parametrize("relation", ["add_remove", "substitution"])
@pytest.mark.parametrize("base", ["uniform", "log", "log-log"])
@pytest.mark.parametrize("q", [0.5, 0.9])
def test_continuous_bases_are_exactly_eps_dp(relation, base, q):
    eps = 0.7
    mech = ExponentialQuantile(quantile(q, -1.0, 4.0, relation), eps, base=base, log_scale=0.3)
    check = check_mechanism(mech, pairs(relation), samples=_samples(relation, q))
    assert check.passed, check
    # not loose: some pair of these small tables spends most of a one-rank move
    assert check.measured >= 0.35 * eps


@pytest.mark.parametrize("relation", ["add_remove", "substitution"])
@pytest.mark.parametrize("q", [0.5, 0.25])
@pytest.mark.parametrize("base", ["grid", "log-grid"])
def test_grid_base_is_exactly_eps_dp(relation, q, base):
    eps = 0.9
    mech = ExponentialQuantile(quantile(q, -1.0, 4.0, relation), eps, base=base, resolution=0.5)
    check = check_mechanism(mech, pairs(relation), samples=_samples(relation, q))
    assert check.passed, check
    assert check.measured >= 0.35 * eps


def test_add_remove_median_exponent_is_twice_substitution():
    # the same data: under add/remove the median's exponent is ε·|rank distance|
    x = [0.0, 1.0, 1.0, 3.0]
    ar = ExponentialQuantile(quantile(0.5, -1, 4, "add_remove"), 1.0).output_distribution(x)
    sub = ExponentialQuantile(quantile(0.5, -1, 4, "substitution"), 1.0).output_distribution(x)
    # segment (−1, 0) has rank 0, segment (0, 1) rank 1: one rank apart, qn = 2
    assert float(ar.logpdf(0.5) - ar.logpdf(-0.5)) == pytest.approx(1.0)
    assert float(sub.logpdf(0.5) - sub.logpdf(-0.5)) == pytest.approx(0.5)


def test_log_base_density_against_definition():
    x = [2.0, 5.0, 40.0]
    mech = ExponentialQuantile(quantile(0.5, 0.0, 1000.0, "add_remove"), 1.0, base="log")
    s = mech.log_scale
    law = mech.output_distribution(x)
    ts = np.array([1.0, 3.0, 10.0, 100.0, 900.0])
    ref = np.array([np.exp(-score(x, t, 0.5) / (2 * 0.5)) / (s + t) for t in ts])
    got = law.pdf(ts)
    assert got / got[0] == pytest.approx(ref / ref[0], rel=1e-9)
    assert float(law.cdf(1000.0)) == pytest.approx(1.0)


@pytest.mark.parametrize("base", ["uniform", "log", "log-log"])
def test_release_path_matches_exact_law(base):
    x = [1.0, 2.0, 2.0, 7.0, 9.0]
    mech = ExponentialQuantile(quantile(0.5, 0.0, 100.0, "add_remove"), 1.0, base=base)
    draws = np.sort(mech.sample(x, 3000, simulation(5)))
    law = mech.output_distribution(x)
    ks = np.max(np.abs(law.cdf(draws) - np.arange(1, draws.size + 1) / draws.size))
    assert ks < 0.035  # KS critical value at level 0.001 for n = 3000 is 0.0356


def test_grid_release_lands_on_the_grid_with_exact_frequencies():
    x = [3, 3, 3, 4, 10]
    mech = ExponentialQuantile(quantile(0.5, 0, 20, "add_remove"), 1.0, base="grid", resolution=1)
    law = mech.output_probabilities(x)
    assert sum(law.values()) == pytest.approx(1.0)
    assert max(law, key=law.get) == 3.0  # the tie is the median and gets the most mass
    draws = mech.sample(x, 4000, simulation(2))
    assert set(np.unique(draws)) <= set(law)
    for v in (3.0, 4.0):
        # 5-sigma band: false failure < 1e-6
        p = law[v]
        assert abs(np.mean(draws == v) - p) < 5 * np.sqrt(p * (1 - p) / 4000)


def test_log_grid_masses_against_definition():
    # P(k) ∝ exp(−ε·s(c_k)/(2Δ)) · (φ(c_k + r/2) − φ(c_k − r/2)), s the grid score,
    # φ(t) = sign(t)·log1p(|t|/s)
    x = [3.0, 3.0, 5.0, 12.0]
    mech = ExponentialQuantile(
        quantile(0.5, 0, 20, "add_remove"), 1.0, base="log-grid", resolution=1, log_scale=2.0,
        sampler="exponential",
    )
    law = mech.output_probabilities(x)

    def phi(t):
        return np.sign(t) * np.log1p(abs(t) / 2.0)

    ref = {
        float(k): np.exp(-grid_score(x, k, 0.5) / (2 * 0.5)) * (phi(k + 0.5) - phi(k - 0.5))
        for k in range(21)
    }
    z = sum(ref.values())
    assert set(law) == set(ref)
    for k, v in ref.items():
        assert law[k] == pytest.approx(v / z, rel=1e-9)


def test_log_grid_release_path_matches_exact_law():
    x = [3, 3, 3, 4, 10]
    mech = ExponentialQuantile(
        quantile(0.9, 0, 200, "add_remove"), 0.5, base="log-grid", resolution=1
    )
    law = mech.output_probabilities(x)
    draws = mech.sample(x, 4000, simulation(3))
    assert set(np.unique(draws)) <= set(law)
    for v in (3.0, 4.0, 10.0, 11.0, 150.0):
        # 5-sigma band: false failure < 1e-6 per value
        p = law[v]
        assert abs(np.mean(draws == v) - p) < 5 * np.sqrt(p * (1 - p) / 4000) + 1e-12


def test_grid_values_are_the_law_s_points():
    mech = ExponentialQuantile(quantile(0.5, -1, 2.5, "add_remove"), 1.0, base="log-grid",
                               resolution=1)
    # lower + k·resolution up to the upper bound
    assert mech.grid_values().tolist() == sorted(mech.output_probabilities([1, 2])) == [
        -1.0, 0.0, 1.0, 2.0]


def test_grid_segments_compress_a_huge_grid():
    starts, lengths, below, above = grid_segments(10**12, np.array([5, 5, 7]))
    assert lengths.sum() == 10**12
    assert list(zip(starts, lengths, below, above, strict=True))[:4] == [
        (0, 5, 0, 3),
        (5, 1, 0, 1),
        (6, 1, 2, 1),
        (7, 1, 2, 0),
    ]


def test_grid_from_counts_matches_mechanism():
    # the counts-only entry point gives the same law as the mechanism on rows
    x = [0, 1, 1, 2, 4]
    cand = np.arange(0, 6, dtype=float)
    counts = np.array([np.sum(np.asarray(x) == c) for c in cand])
    mech = ExponentialQuantile(quantile(0.5, 0, 5, "add_remove"), 0.8, base="grid", resolution=1)
    law = mech.output_probabilities(x)
    src = simulation(9)
    draws = np.array(
        [grid_quantile_from_counts(cand, counts, 0.5, 0.8, "add_remove", src) for _ in range(3000)]
    )
    for v, p in law.items():
        assert abs(np.mean(draws == v) - p) < 5 * np.sqrt(p * (1 - p) / 3000) + 1e-12


def test_empty_and_single_row_are_total():
    for rel in ("add_remove", "substitution"):
        for base, kw in (
            ("uniform", {}),
            ("log", {}),
            ("grid", {"resolution": 1.0}),
            ("log-grid", {"resolution": 1.0}),
        ):
            mech = ExponentialQuantile(quantile(0.5, 0, 10, rel), 1.0, base=base, **kw)
            for x in ([], [10.0], [1e300], [-1e-320]):
                v = mech.release(x, simulation(1)).value
                assert 0.0 <= v <= 10.0


def test_record_states_relation_and_base():
    mech = ExponentialQuantile(quantile(0.9, 0, 10, "add_remove"), 1.0, base="grid", resolution=1)
    rec = mech.release([1, 2, 3], simulation(0))
    assert rec.parameters["neighbours"] == "add_remove"
    assert rec.parameters["base"] == "grid" and rec.parameters["resolution"] == 1.0
    assert rec.secure is False


def test_bad_parameters_name_themselves():
    q = quantile(0.5, 0, 10, "add_remove")
    with pytest.raises(ParameterError) as e:
        ExponentialQuantile(q, 1.0, base="cauchy")
    assert e.value.parameter == "base"
    with pytest.raises(ParameterError) as e:
        ExponentialQuantile(q, 1.0, base="grid")
    assert e.value.parameter == "resolution"
    with pytest.raises(ParameterError) as e:
        grid_quantile_from_counts([0, 1], [1, -1], 0.5, 1.0)
    assert e.value.parameter == "counts"
    with pytest.raises(ParameterError):
        ExponentialQuantile(quantile(0.5, 0, 10, "edge"), 1.0)


def test_all_equal_rows_and_ties_on_grid():
    mech = ExponentialQuantile(quantile(0.5, 0, 100, "add_remove"), 2.0, base="grid", resolution=1)
    law = mech.output_probabilities([42] * 50)
    assert law[42.0] > 0.999
    assert list(itertools.islice(sorted(law), 1)) == [0.0]


def test_default_rule_reads_public_information_only():
    from instancedp.mechanisms.unbounded import UnboundedQuantile
    from instancedp.recipes import build_mechanism

    m = build_mechanism("median", 1.0, bounds=None)
    assert isinstance(m, UnboundedQuantile) and m.neighbours == "add_remove"
    m = build_mechanism("quantile", 1.0, bounds=None, quantile=0.9, neighbours="substitution")
    assert isinstance(m, UnboundedQuantile) and m.neighbours == "substitution"
    m = build_mechanism("median", 1.0, bounds=(0, 100))
    assert m.base == "log-atoms" and m.parameters()["neighbours"] == "add_remove"
    # a tail quantile under add/remove: the tail choice (q and ε are public)
    m = build_mechanism("quantile", 1.0, bounds=(0, 100), quantile=0.9)
    assert m.bounded.base == "log-atoms" and m.parameters()["neighbours"] == "add_remove"
    # under substitution below the smooth rule's ε·n (n public)
    m = build_mechanism("quantile", 1.0, bounds=(0, 100), quantile=0.9, n=100,
                        neighbours="substitution")
    assert m.base == "log-atoms" and m.neighbours == "substitution"


def test_declared_resolution_picks_the_log_grid_under_both_relations():
    from instancedp.privacy import PureDP
    from instancedp.recipes import build_mechanism, default_mechanism
    from instancedp.session import Session

    for rel, n in (("add_remove", None), ("substitution", 10**6)):
        # a declared resolution replaces smooth sensitivity even at large public ε·n
        assert default_mechanism("median", 4.0, n, rel, resolution=1.0) == "exponential"
        m = build_mechanism(
            "quantile", 1.0, bounds=(0, 100), quantile=0.9, n=n, neighbours=rel, resolution=1
        )
        if rel == "add_remove":  # the tail choice, its bounded branch on the grid
            m = m.bounded
        assert m.base == "log-grid" and m.resolution == 1.0 and m.neighbours == rel
    for kw, param in (
        ({"statistic": "mean", "bounds": (0, 1)}, "resolution"),
        ({"statistic": "median", "bounds": None}, "resolution"),
        ({"statistic": "median", "bounds": (0, 1), "mechanism": "smooth"}, "resolution"),
        ({"statistic": "median", "bounds": (0, 1), "resolution": -1.0}, "resolution"),
    ):
        kw = {"resolution": 1.0, **kw}
        with pytest.raises(ParameterError) as e:
            build_mechanism(kw.pop("statistic"), 1.0, **kw)
        assert e.value.parameter == param
    s = Session(np.array([3.0, 3.0, 4.0, 9.0]), PureDP(1.0))
    rec = s.release_statistic(
        "median", epsilon=0.5, bounds=(0, 50), resolution=1, rng=simulation(0)
    )
    assert rec.parameters["base"] == "log-grid" and float(rec.value).is_integer()
