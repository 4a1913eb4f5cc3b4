"""Error bars for every level of a several-quantile release: one noisy
hierarchical histogram (``intervals.quantiles_intervals``).

Coverage tests draw T releases per synthetic cell through the release path
(seeded) and count, per level, the intervals that miss the level's empirical
quantile.  With a true miss rate ≤ α the count is stochastically below
Binomial(T, α); a cell fails when it exceeds the Binomial's 1 − 10⁻⁴
quantile (false-failure rate ≤ 10⁻⁴ per cell and level; about 10⁻² over the
~100 (cell, level) pairs here, and much less in fact: the margins are
conservative, see test_margins_are_needed for a version that does fail).
"""

from __future__ import annotations

import json
import math
from itertools import combinations_with_replacement

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binom

from instancedp import Session
from instancedp import intervals as iv
from instancedp.noise.discrete import DiscreteLaplace
from instancedp.privacy import PureDP
from instancedp.random import simulation
from instancedp.recipes import build_quantiles_mechanism

FALSE_FAILURE = 1e-4
QS = (0.1, 0.5, 0.9)
BOUNDS = (0.0, 100.0)
RNG = np.random.default_rng(21)
CELLS = {
    "normal": np.clip(RNG.normal(50, 10, 400), *BOUNDS),
    "ties": RNG.poisson(3, 400).astype(float),
    "all_equal": np.full(60, 7.0),
    "at_bounds": np.array([0.0] * 30 + [100.0] * 30),
    "two_rows": np.array([1.0, 99.0]),
    "one_row": np.array([42.0]),
    "empty": np.empty(0),
}


def truth(x: np.ndarray, q: float, lower: float | None = BOUNDS[0]) -> float:
    """x_(⌈qn⌉) of the sorted rows (the lower bound when ⌈qn⌉ = 0): what COVERS says."""
    k = math.ceil(q * x.size)
    return (lower if lower is not None else math.nan) if k == 0 else float(np.sort(x)[k - 1])


def build(mechanism, neighbours, epsilon=2.0, level=0.9, qs=QS, bounds=BOUNDS):
    return iv.with_interval(
        lambda e: build_quantiles_mechanism(qs, e, mechanism=mechanism, bounds=bounds,
                                            neighbours=neighbours), epsilon, level)


def check_coverage(mech, x, trials, seed, qs=QS, lower=BOUNDS[0], level=0.9):
    out = mech.sample_intervals(x, trials, rng=simulation(seed))
    assert out.shape == (trials, 3, len(qs))
    assert np.all(out[:, 1] <= out[:, 2])
    limit = int(binom.ppf(1.0 - FALSE_FAILURE, trials, 1.0 - level))
    for j, q in enumerate(qs):
        if x.size == 0:  # the value of an empty table: the lower bound (bounded case)
            if lower is None:
                continue  # bound-free: any value is "the quantile" of no rows
            v = lower
        else:
            v = truth(x, q, lower)
        miss = int(np.sum((out[:, 1, j] > v) | (out[:, 2, j] < v)))
        assert miss <= limit, (q, miss, limit)
    return out


# -- coverage ----------------------------------------------------------------------


# the bounded intervals do not read the values' law, only their position (the tested
# edges): every mechanism on the main cells, the cheap ones on every cell
ADD_REMOVE = [(m, c) for m in ("recursive", "independent") for c in CELLS] + [
    ("joint", c) for c in ("normal", "ties", "two_rows", "one_row", "empty")]


@pytest.mark.parametrize("mechanism,cell", ADD_REMOVE)
def test_coverage_bounded_add_remove(cell, mechanism):
    check_coverage(build(mechanism, "add_remove"), CELLS[cell], 40, seed=len(cell))


@pytest.mark.parametrize("cell", ["normal", "ties", "at_bounds", "two_rows"])
@pytest.mark.parametrize("mechanism", ["joint", "recursive", "independent"])
def test_coverage_bounded_substitution(cell, mechanism):
    check_coverage(build(mechanism, "substitution"), CELLS[cell], 40, seed=3)


@pytest.mark.parametrize("cell", ["normal", "ties", "all_equal", "two_rows", "empty"])
@pytest.mark.parametrize("neighbours", ["add_remove", "substitution"])
def test_coverage_bound_free(cell, neighbours):
    """Bound-free: the intervals cover the rows' own quantiles (ends opened to ±∞
    where they reach the released range)."""
    x = CELLS[cell]
    mech = build("unbounded", neighbours, bounds=None)
    out = check_coverage(mech, x, 30, seed=5, lower=None)
    assert np.all(np.isfinite(out[:, 0]))


def test_large_table_many_trials_and_informative():
    """n = 20,000 normal rows (sd 10), 100 trials at the nominal 0.9: every level
    covered (limit 21 misses of 100), and the intervals are informative (median
    width below 3 % of the range, a third of the data's standard deviation)."""
    x = np.clip(np.random.default_rng(7).normal(50, 10, 20000), *BOUNDS)
    out = check_coverage(build("recursive", "add_remove", epsilon=1.0), x, 100, seed=11)
    assert np.median(out[:, 2] - out[:, 1]) < 3.0


def test_margins_are_needed(monkeypatch):
    """Without the Chernoff margins the same check fails: the tests can fail."""
    zero = lambda max_j, *a: np.zeros((max_j + 1, max_j + 1), dtype=np.int64)  # noqa: E731
    monkeypatch.setattr(iv, "_margin_table", zero)
    x = np.clip(np.random.default_rng(7).normal(50, 10, 2000), *BOUNDS)
    with pytest.raises(AssertionError):
        check_coverage(build("recursive", "add_remove", epsilon=0.5), x, 60, seed=1)


def test_cost_does_not_grow_with_m():
    """The tree is shared: the median's interval is the same with 1 or 19 levels."""
    x = np.clip(np.random.default_rng(3).normal(50, 10, 3000), *BOUNDS)
    one, _ = iv.quantiles_intervals(x, [0.5], lower=0, upper=100, neighbours="add_remove",
                                    epsilon=0.5, level=0.9, chart_scale=0.01,
                                    source=simulation(4))
    many, _ = iv.quantiles_intervals(x, [j / 20 for j in range(1, 20)], lower=0, upper=100,
                                     neighbours="add_remove", epsilon=0.5, level=0.9,
                                     chart_scale=0.01, source=simulation(4))
    assert one[0] == many[9]


# -- the tree: decomposition, sensitivity, margins ------------------------------------


def small_plan(neighbours="add_remove", branching=2, depth=3, eps=1.0):
    return iv.tree_plan(0.0, 8.0, neighbours=neighbours, epsilon=eps, chart_scale=1e9,
                        branching=branching, depth=depth)


@pytest.mark.parametrize("branching,depth", [(2, 3), (3, 2), (16, 3)])
def test_prefix_and_suffix_decomposition(branching, depth):
    """Noise-free nodes give #{x < c_k} and #{x ≥ c_k} exactly; the node counts used
    are the digit sums (all-ones nodes count them)."""
    plan = iv.tree_plan(0.0, 8.0, neighbours="add_remove", epsilon=1.0, chart_scale=1e9,
                        branching=branching, depth=depth)
    x = np.sort(np.random.default_rng(1).uniform(0, 8, 300))
    k, below, above, j_b, j_a = iv.tree_ranks(iv.tree_nodes(x, plan), plan)
    assert np.array_equal(below, np.searchsorted(x, plan.edges[k], side="left"))
    assert np.array_equal(above, x.size - below)
    ones = [np.ones_like(lv) for lv in iv.tree_nodes(x, plan)]
    _, nb, na, _, _ = iv.tree_ranks(ones, plan)
    assert np.array_equal(nb, j_b) and np.array_equal(na, j_a)


@pytest.mark.parametrize("neighbours", ["add_remove", "substitution"])
def test_node_sensitivity_brute_force(neighbours):
    """L1 change of the released node vector over every neighbour pair of a small
    domain (rows on, between and at the ends of the cells; up to 3 rows) equals
    the plan's Δ (attained), so the noise scale Δ/ε gives ε-DP."""
    plan = small_plan(neighbours)
    domain = [0.0, 0.5, 1.0, 3.0, 4.0, 7.9, 8.0]
    tables = [np.array(c) for k in range(4) for c in combinations_with_replacement(domain, k)]
    nodes = np.array([np.concatenate(iv.tree_nodes(t, plan)) for t in tables])
    hist = np.array([[np.sum(t == d) for d in domain] for t in tables])
    size = hist.sum(axis=1)
    moved = np.abs(hist[:, None, :] - hist[None, :, :]).sum(axis=2)  # rows that differ
    if neighbours == "add_remove":  # b = a plus one row
        pairs = (size[None, :] == size[:, None] + 1) & (moved == 1)
    else:  # one row replaced by another value
        pairs = (size[None, :] == size[:, None]) & (moved == 2)
    assert pairs.sum() >= 50
    worst = int(np.abs(nodes[:, None, :] - nodes[None, :, :]).sum(axis=2)[pairs].max())
    assert worst == plan.sensitivity == plan.depth * (2 if neighbours == "substitution" else 1)
    assert plan.scale == plan.sensitivity / 1


def test_noisy_tree_privacy_loss_exact():
    """The exact law of the noisy node vector (product of discrete Laplace laws) on a
    neighbour pair: the largest log-ratio over a window of outputs is Δ/t = ε."""
    plan = small_plan("add_remove", branching=2, depth=2, eps=1.5)
    a, b = np.array([1.0, 5.0]), np.array([1.0, 5.0, 6.5])
    ca, cb = (np.concatenate(iv.tree_nodes(x, plan)) for x in (a, b))
    law = DiscreteLaplace(float(plan.scale))
    window = np.arange(-12, 13)
    worst = sum(float(np.max(np.abs(law.logpmf(window - u) - law.logpmf(window - v))))
                for u, v in zip(ca, cb, strict=True))  # a product law: the loss adds
    assert worst == pytest.approx(1.5)


@pytest.mark.parametrize("w_b,w_a,j_b,j_a", [(1, 1, 3, 2), (3, 1, 4, 1), (1, 0, 2, 0)])
def test_chernoff_margin_is_a_valid_tail_bound(w_b, w_a, j_b, j_a):
    """P(w_b·S_B − w_a·S_A ≥ e) ≤ β from the exact law (convolution of the discrete
    Laplace pmfs), and the bound is not loose by more than a factor 3 in e."""
    from fractions import Fraction

    t, beta = Fraction(3), 1e-4
    e = int(iv.chernoff_margin(np.array([j_b]), np.array([j_a]), w_b, w_a, t, beta)[0])
    support = np.arange(-200, 201)
    pmf = DiscreteLaplace(3.0).pmf(support)

    def scaled(w):
        out = np.zeros(w * 400 + 1)
        out[::w] = pmf
        return out

    dist, origin = np.array([1.0]), 0
    for w, j in ((w_b, j_b), (w_a, j_a)):
        for _ in range(j):
            dist = np.convolve(dist, scaled(w))
            origin += w * 200
    values = np.arange(dist.size) - origin
    tail = float(dist[values >= e].sum())
    assert tail <= beta
    assert float(dist[values >= e // 3].sum()) > beta


def test_open_ends():
    assert iv.open_ends([(0.0, 5.0), (1.0, 10.0), (2.0, 3.0)], 0.0, 10.0) == [
        (-math.inf, 5.0), (1.0, math.inf), (2.0, 3.0)]
    assert iv.released_range([1.0, 3.0]) == (0.0, 4.0)
    lo, hi = iv.released_range([2.0, 2.0])
    assert lo < 2.0 < hi


# -- records, charges, neighbours ----------------------------------------------------


def test_session_record_one_charge_and_what_each_covers(tmp_path):
    df = pd.DataFrame({"v": np.random.default_rng(0).normal(50, 10, 2000)})
    s = Session(df, PureDP(5.0), ledger=tmp_path / "l.db")
    r = s.release_statistic("quantiles", "v", epsilon=1.0, quantiles=[0.25, 0.5, 0.75],
                            bounds=(0, 100), ci=0.9, rng=simulation(2))
    assert isinstance(r.ci, list) and len(r.ci) == 3
    assert r.guarantee.epsilon == 1.0 and float(s.spent.epsilon) == 1.0
    assert len(s.history()) == 1
    p = r.parameters
    assert p["epsilon"] == 0.75 and p["interval"]["epsilon"] == 0.25
    for q, ci, v in zip((0.25, 0.5, 0.75), r.ci, r.value, strict=True):
        assert f"{q:g}-quantile" in ci.covers and "clamped" in ci.covers
        assert ci.lower <= ci.upper and ci.method == iv.CDF and ci.level == 0.9
        assert abs(v - (ci.lower + ci.upper) / 2) < 5
    rec = r.to_dict()
    assert [c["lower"] for c in rec["ci"]] == [c.lower for c in r.ci]
    json.dumps(rec)
    assert s.history()[0]["parameters"]["interval"]["method"] == iv.CDF


def _structure(obj):
    if isinstance(obj, dict):
        return {k: _structure(v) for k, v in obj.items()
                if k not in ("value", "lower", "upper", "range")}
    if isinstance(obj, list):
        return [_structure(v) for v in obj]
    return obj


@pytest.mark.parametrize("bounds", [(0, 100), None])
def test_neighbouring_records_differ_only_in_values(tmp_path, bounds):
    """Adding one row (at a bound, huge, or a duplicate) changes only the values and
    the interval ends (and, bound-free, the released range R they are drawn on)."""
    base = [3.0, 50.0, 50.0, 99.0]
    seen = []
    for extra in ([], [100.0], [1e300], [50.0]):
        s = Session(pd.DataFrame({"v": base + extra}), PureDP(5.0))
        opts = {"bounds": bounds} if bounds else {}
        r = s.release_statistic("quantiles", "v", epsilon=1.0, quantiles=[0.25, 0.75],
                                ci=0.9, rng=simulation(1), **opts)
        seen.append((_structure(r.to_dict()), s.history()[0]["guarantee"]))
    assert all(x == seen[0] for x in seen)


def test_refusals_before_any_charge():
    s = Session(pd.DataFrame({"v": [1.0, 2.0]}), PureDP(5.0))
    with pytest.raises(Exception) as exc:
        s.release_statistic("quantiles", "v", epsilon=1.0, quantiles=[0.5], bounds=(0, 10),
                            ci=1.5)
    assert getattr(exc.value, "parameter", None) == "ci"
    assert s.history() == []


def test_cli_ci_for_quantiles(tmp_path, capsys):
    from instancedp.cli import main

    f = tmp_path / "v.csv"
    pd.DataFrame({"v": np.random.default_rng(0).normal(50, 10, 500)}).to_csv(f, index=False)
    argv = ["release", str(f), "--column", "v", "--statistic", "quantiles", "--quantiles",
            "0.25", "0.5", "0.75", "--bounds", "0", "100", "--epsilon", "1", "--ci", "0.9",
            "--owner", "--seed", "1"]
    assert main(argv) in (0, None)
    out = capsys.readouterr().out
    assert "intervals" in out and "90% confidence each" in out
    assert main([*argv, "--json"]) in (0, None)
    rec = json.loads(capsys.readouterr().out)
    assert len(rec["ci"]) == 3 and rec["parameters"]["interval"]["method"] == iv.CDF


def test_tested_edges_and_a_bad_centre():
    """The edges tested around a released value: dense near it, reaching both ends;
    a centre far from the truth (a bad release) keeps the coverage (the edges are a
    function of the release, independent of the tree's noise) and only widens."""
    plan = iv.tree_plan(0.0, 100.0, neighbours="add_remove", epsilon=1.0, chart_scale=0.01)
    k = iv.tested_edges(plan, 50.0)
    k0 = int(np.searchsorted(plan.edges, 50.0))
    assert set(range(k0 - iv.DENSE_EDGES, k0 + iv.DENSE_EDGES + 1)) <= set(k.tolist())
    assert k.min() == 1 and k.max() == plan.cells - 1 and k.size < 200
    x = np.sort(np.clip(np.random.default_rng(9).normal(50, 10, 3000), *BOUNDS))
    t = truth(x, 0.5)
    misses, widths = 0, []
    for seed in range(40):
        [(lo, hi)], _ = iv.quantiles_intervals(
            x, [0.5], lower=0, upper=100, neighbours="add_remove", epsilon=0.5, level=0.9,
            chart_scale=0.01, source=simulation(seed), centres=[99.0])
        misses += not lo <= t <= hi
        widths.append(hi - lo)
    assert misses <= int(binom.ppf(1 - FALSE_FAILURE, 40, 0.1))
    assert np.median(widths) < 20


@pytest.mark.parametrize("bounds", [(0, 100), None])
def test_analyst_mode_csv(tmp_path, bounds):
    """Analyst mode on a CSV with a missing and a huge cell: one charge, m intervals."""
    ledger = tmp_path / "l.db"
    Session(None, PureDP(5.0), ledger=ledger).close()
    csv = tmp_path / "d.csv"
    pd.DataFrame({"x": np.append(CELLS["normal"], [np.nan, 1e9])}).to_csv(csv, index=False)
    with Session(str(csv), ledger=ledger, analyst=True) as s:
        opts = {"bounds": bounds} if bounds else {}
        r = s.release_statistic("quantiles", "x", epsilon=1.0, quantiles=[0.25, 0.75],
                                ci=0.9, rng=simulation(1), **opts)
        assert len(r.ci) == 2 and r.guarantee == PureDP(1.0)
        assert s.spent.epsilon == pytest.approx(1.0) and len(s.history()) == 1


def test_huge_values_and_bounds():
    """Bounds and released values near the float range: finite charts, valid ends."""
    x = np.sort(np.array([-1e308, 0.0, 1.0, 1e308]))
    for lo, hi in ((-1e308, 1e308), iv.released_range([-1e308, 1e308])):
        assert math.isfinite(iv.chart_scale_for(lo, hi))
        [(a, b)], plan = iv.quantiles_intervals(
            x, [0.5], lower=lo, upper=hi, neighbours="add_remove", epsilon=1.0, level=0.9,
            chart_scale=iv.chart_scale_for(lo, hi), source=simulation(1), centres=[0.0])
        assert lo <= a <= b <= hi and np.all(np.isfinite(plan.edges))
