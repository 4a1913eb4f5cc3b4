"""Error bars for a single bound-free median or quantile (``bounds=None``).

The interval (``intervals.bound_free_interval``) runs the single quantile's two
AboveThreshold scans on a public range R around the released value
(``intervals.bound_free_range``), on the rows clamped to R, and opens the ends
that reach R; it covers the rows' own x_m, m = max(1, ⌈q·n⌉).

Coverage tests draw T = 30 releases per cell through the release path (seeded)
and count the misses.  With a true miss rate ≤ α = 0.1 the count is
stochastically below Binomial(30, 0.1); a cell fails when it exceeds that
Binomial's 1 − 10⁻⁴ quantile, so each cell's false-failure rate is ≤ 10⁻⁴
(≤ 3·10⁻³ over the 30 coverage checks here).  ``test_margins_are_needed`` shows the
check can fail.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binom

from instancedp import Session
from instancedp import intervals as iv
from instancedp.privacy import PureDP
from instancedp.random import simulation
from instancedp.recipes import build_mechanism

FALSE_FAILURE = 1e-4
LEVEL = 0.9
TRIALS = 30
RNG = np.random.default_rng(31)
CELLS = {
    "normal": RNG.normal(50, 10, 400),
    "wide_around_zero": RNG.normal(0, 1000, 400),  # a released value near 0, rows far off
    "huge": RNG.normal(1e300, 1e298, 200),
    "ties": RNG.poisson(3, 300).astype(float),
    "all_equal": np.full(40, -7.0),
    "two_rows": np.array([-1.0, 1e6]),
    "one_row": np.array([42.0]),
}


def build(q: float, neighbours: str = "add_remove", epsilon: float = 2.0, level=LEVEL):
    stat, opts = ("median", {}) if q == 0.5 else ("quantile", {"quantile": q})
    return iv.with_interval(
        lambda e: build_mechanism(stat, e, None, neighbours=neighbours, **opts), epsilon, level)


def truth(x: np.ndarray, q: float) -> float:
    """x_m, m = max(1, ⌈q·n⌉), of the rows (what the interval states it covers)."""
    return float(np.sort(x)[max(1, math.ceil(q * x.size)) - 1])


def misses(mech, x: np.ndarray, q: float, seed: int, trials: int = TRIALS) -> int:
    out = mech.sample_intervals(x, trials, rng=simulation(seed))
    assert out.shape == (trials, 3) and np.all(out[:, 1] <= out[:, 2])
    assert np.all(np.isfinite(out[:, 0]))  # the value itself is always a number
    v = truth(x, q)
    return int(np.sum((out[:, 1] > v) | (out[:, 2] < v)))


LIMIT = int(binom.ppf(1.0 - FALSE_FAILURE, TRIALS, 1.0 - LEVEL))


@pytest.mark.parametrize("cell", list(CELLS))
@pytest.mark.parametrize("q", [0.5, 0.1, 0.9])
def test_coverage_add_remove(cell, q):
    mech = build(q)
    assert mech.inner.name == "unbounded_quantile"  # the default at every level
    assert misses(mech, CELLS[cell], q, seed=len(cell)) <= LIMIT


@pytest.mark.parametrize("cell", ["normal", "ties", "one_row"])
def test_coverage_of_the_one_step_median_by_name(cell):
    """The log-log one-step median (no longer the default, still offered) keeps its
    interval's coverage."""
    from instancedp.mechanisms.loglog import LogLogQuantile

    mech = iv.with_interval(lambda e: LogLogQuantile(0.5, e), 2.0, LEVEL)
    assert mech.inner.name == "loglog_quantile"
    assert misses(mech, CELLS[cell], 0.5, seed=len(cell)) <= LIMIT


@pytest.mark.parametrize("cell", ["normal", "ties", "two_rows", "all_equal"])
@pytest.mark.parametrize("q", [0.5, 0.9])
def test_coverage_substitution(cell, q):
    assert misses(build(q, "substitution"), CELLS[cell], q, seed=3) <= LIMIT


def test_informative_on_a_large_table():
    """n = 20,000 normal rows (sd 10): the median's interval is finite and narrow
    (median width below 2, a fifth of the data's standard deviation), and covers."""
    x = np.random.default_rng(4).normal(50, 10, 20000)
    out = build(0.5, epsilon=1.0).sample_intervals(x, 40, rng=simulation(8))
    assert np.all(np.isfinite(out[:, 1:])) and np.median(out[:, 2] - out[:, 1]) < 2.0
    v = truth(x, 0.5)
    assert np.sum((out[:, 1] > v) | (out[:, 2] < v)) <= int(binom.ppf(1 - 1e-4, 40, 0.1))


def test_margins_are_needed(monkeypatch):
    """With the scans' noise margins removed the same check fails: it can fail."""
    monkeypatch.setattr(iv, "_discrete_tail", lambda scale, beta: 0)
    x = np.random.default_rng(4).normal(50, 10, 3000)
    assert misses(build(0.5, epsilon=1.0), x, 0.5, seed=2, trials=60) > int(
        binom.ppf(1 - 1e-4, 60, 0.1))


def test_a_release_far_from_the_rows_still_covers():
    """R is placed by the released value alone: when the rows lie beyond it, the end
    that reaches R opens to +∞ and the interval still holds x_m (here every trial);
    R always holds 0 and a factor 1000 beyond t, so a t far above the rows still
    places them inside R."""
    x = np.sort(np.random.default_rng(5).normal(1e7, 10, 500))
    for t in (0.0, -3.0, 1e12):
        for seed in range(5):
            lo, hi, r = iv.bound_free_interval(x, t, q=0.5, neighbours="add_remove",
                                               epsilon=1.0, level=LEVEL,
                                               source=simulation(seed))
            assert r[0] < t < r[1] and lo <= truth(x, 0.5) <= hi
            assert hi == math.inf if t < 1e7 else math.isfinite(lo) and hi == t


def test_the_empty_table_and_a_single_row():
    """No rows: nothing fires on the scans' event, both ends reach R and open — the
    interval says nothing (any value is the quantile of no rows)."""
    out = build(0.5).sample_intervals(np.empty(0), 20, rng=simulation(1))
    assert np.mean((out[:, 1] == -math.inf) & (out[:, 2] == math.inf)) >= 0.8
    lo, hi, _ = iv.bound_free_interval(np.array([5.0]), 5.0, q=0.5, neighbours="add_remove",
                                       epsilon=1.0, level=LEVEL, source=simulation(0))
    assert lo <= 5.0 <= hi


def test_range_rule():
    """One value: v ± 1000·(|v| + 1), clipped to the doubles; spread values: the
    several-quantile rule."""
    assert iv.bound_free_range([0.0]) == (-1000.0, 1000.0)
    assert iv.bound_free_range([-2.0]) == (-3002.0, 2998.0)
    big = float(np.finfo(np.float64).max)
    assert iv.bound_free_range([1e306]) == (1e306 - big, big)  # W overflows: clipped
    lo, hi = iv.bound_free_range([5e-324])
    assert lo < 0.0 < hi
    assert iv.bound_free_range([1.0, 3.0]) == iv.released_range([1.0, 3.0]) == (0.0, 4.0)
    assert iv.bound_free_range([2.0, 2.0]) == iv.bound_free_range([2.0])


def test_privacy_exact_over_neighbours_given_the_release():
    """Given the released t (public), the interval is the bounded scans on the rows
    clamped to R(t), a row-by-row map: the scans' exact output law over every neighbour
    pair of a small domain (rows in {-2000, 0, 1, 3, 5000}, up to 2 rows, some outside
    R) has privacy loss ≤ ε/2 per scan."""
    from itertools import combinations_with_replacement

    from test_intervals import _scan_law

    eps, t = 8.0, 1.0
    lo, hi = iv.bound_free_range([t])
    domain = [-2000.0, 0.0, 1.0, 3.0, 5000.0]
    tables = [np.array(c) for k in range(3) for c in combinations_with_replacement(domain, k)]
    laws = []
    for x in tables:
        sides = iv.scan_inputs(np.clip(x, lo, hi), t, q=0.5, lower=lo, upper=hi,
                               neighbours="add_remove", epsilon=eps, level=LEVEL,
                               chart_scale=iv.chart_scale_for(lo, hi))
        laws.append([_scan_law(s["f"], s["plan"]) for s in sides])
    worst, pairs = 0.0, 0
    for i, a in enumerate(tables):
        for j, b in enumerate(tables):
            if b.size == a.size + 1 and any(np.array_equal(np.delete(b, k), a)
                                            for k in range(b.size)):
                pairs += 1
                for la, lb in zip(laws[i], laws[j], strict=True):
                    keep = (la > 1e-12) | (lb > 1e-12)
                    worst = max(worst, float(np.max(np.abs(np.log(la[keep])
                                                           - np.log(lb[keep])))))
    assert pairs >= 15 and worst <= eps / 2 + 1e-9


# -- the Session, the record, the CLI ---------------------------------------------------


def _structure(obj):
    """The record without the numbers a release may change (values, ends, R)."""
    if isinstance(obj, dict):
        return {k: _structure(v) for k, v in obj.items()
                if k not in ("value", "lower", "upper", "range", "chart_scale")}
    if isinstance(obj, list):
        return [_structure(v) for v in obj]
    return obj


def test_session_charges_once_and_states_the_interval(tmp_path):
    df = pd.DataFrame({"v": np.random.default_rng(0).normal(50, 10, 2000)})
    with Session(df, PureDP(5.0), ledger=tmp_path / "l.db", dataset_id="d") as s:
        for stat, opts in (("median", {}), ("quantile", {"quantile": 0.9})):
            r = s.release_statistic(stat, "v", epsilon=1.0, ci=0.95, rng=simulation(2),
                                    **opts)
            assert r.guarantee == PureDP(1.0) and r.parameters["bounds"] is None
            spec = r.parameters["interval"]
            assert spec["method"] == iv.QUANTILE and spec["epsilon"] == 0.25
            assert spec["fraction_of_epsilon"] == iv.DEFAULT_FRACTION
            assert r.parameters["epsilon"] == 0.75
            assert r.ci.covers == iv.COVERS_BOUND_FREE and "clamped" not in r.ci.covers
            assert r.ci.lower <= r.value <= r.ci.upper or not math.isfinite(r.ci.upper)
            assert r.ci.parameters["range_rule"] == iv.RANGE_RULE
            json.dumps(r.to_dict(), allow_nan=False)  # an open end is null: strict JSON
        assert float(s.spent.epsilon) == 2.0 and len(s.history()) == 2
        assert s.history()[0]["parameters"]["interval"]["method"] == iv.QUANTILE


def test_neighbouring_records_differ_only_in_values():
    """Adding one row (a duplicate, a huge one, one far below) changes only the value,
    the interval's ends and the range R drawn from the value."""
    base = [3.0, 50.0, 50.0, 99.0, 120.0]
    seen = []
    for extra in ([], [50.0], [1e300], [-1e12]):
        s = Session(pd.DataFrame({"v": base + extra}), PureDP(5.0))
        r = s.release_statistic("median", "v", epsilon=1.0, ci=0.9, rng=simulation(1))
        seen.append((_structure(r.to_dict()), s.history()[0]["guarantee"]))
    assert all(x == seen[0] for x in seen)


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_analyst_mode_on_files(tmp_path, suffix):
    f = tmp_path / f"v{suffix}"
    df = pd.DataFrame({"v": [1.0, 2.0, np.nan, np.inf, 5.0, 8.0] * 20})
    df.to_csv(f, index=False) if suffix == ".csv" else df.to_parquet(f)
    Session(None, PureDP(5.0), ledger=tmp_path / "l.db").close()
    with Session(str(f), ledger=tmp_path / "l.db", analyst=True) as s:
        r = s.release_statistic("median", "v", epsilon=1.0, ci=0.9, rng=simulation(3))
        assert r.ci is not None and r.ci.method == iv.QUANTILE
        assert float(s.spent.epsilon) == 1.0


def test_cli_median_ci_without_bounds(tmp_path, capsys):
    from instancedp.cli import main

    f = tmp_path / "v.csv"
    pd.DataFrame({"v": np.random.default_rng(0).normal(50, 10, 500)}).to_csv(f, index=False)
    argv = ["release", str(f), "--column", "v", "--statistic", "median", "--epsilon", "1",
            "--ci", "0.95", "--owner", "--seed", "1"]
    assert main(argv) in (0, None)
    out = capsys.readouterr().out
    assert "interval" in out and "95% confidence" in out
    assert main([*argv, "--json"]) in (0, None)
    rec = json.loads(capsys.readouterr().out)
    assert rec["mechanism"] == "unbounded_quantile" and rec["parameters"]["bounds"] is None
    assert rec["ci"]["method"] == iv.QUANTILE and rec["parameters"]["interval"]["epsilon"] == 0.25
    assert rec["ci"]["parameters"]["range"][0] < rec["value"] < rec["ci"]["parameters"]["range"][1]
