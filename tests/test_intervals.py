"""Private confidence intervals (``instancedp.intervals``): coverage, privacy, records.

Coverage tests draw T intervals per synthetic cell through the release path
(seeded) and count the misses.  With a true miss rate ≤ α the number of
misses is stochastically below Binomial(T, α); a cell fails when it exceeds
``max_misses(T, α)``, the Binomial's 1 − 10⁻⁴ quantile, so each cell's
false-failure rate is ≤ 10⁻⁴ (about 2·10⁻³ over the ~20 cells here).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from interval_support import assert_same_but_moving, structure
from scipy.stats import binom

from instancedp import intervals as iv
from instancedp.errors import ParameterError
from instancedp.mechanisms.base import Release
from instancedp.noise.discrete import DiscreteLaplace
from instancedp.privacy import PureDP
from instancedp.random import simulation
from instancedp.recipes import build_mechanism

FALSE_FAILURE = 1e-4


def max_misses(trials: int, alpha: float) -> int:
    return int(binom.ppf(1.0 - FALSE_FAILURE, trials, alpha))


def build(statistic, epsilon=1.0, level=0.9, delta=None, **options):
    options.setdefault("neighbours", "add_remove")
    return iv.with_interval(
        lambda e: build_mechanism(statistic, e, delta, **options), epsilon, level
    )


def truth(statistic, data, bounds=None, q=None):
    x = np.asarray(data, dtype=float)
    if bounds is not None:
        x = np.clip(x, *bounds)
    if statistic == "count":
        return float(x.size)
    if statistic == "sum":
        return float(x.sum())
    if statistic == "mean":
        return float(x.mean())
    q = 0.5 if statistic == "median" else q
    m = max(1, math.ceil(q * x.size))  # x_m (the query's definition, stated in COVERS)
    return float(np.sort(x)[m - 1])


def misses(mech, data, value, trials, seed):
    rows = mech.sample_intervals(data, trials, rng=simulation(seed))
    assert np.all(rows[:, 1] <= rows[:, 2])
    return int(np.sum((rows[:, 1] > value) | (rows[:, 2] < value)))


RNG = np.random.default_rng(2026)
NORMAL = RNG.normal(50, 10, 300)
TIES = np.round(RNG.poisson(3, 300).astype(float))
CELLS_ORDER = {
    "normal": NORMAL,
    "ties": TIES,
    "all_equal": np.full(50, 7.0),
    "at_bounds": np.array([0.0] * 20 + [100.0] * 20),
    "one_row": np.array([42.0]),
    "two_rows": np.array([1.0, 99.0]),
}


# -- coverage ----------------------------------------------------------------------


@pytest.mark.parametrize("statistic", ["count", "sum"])
@pytest.mark.parametrize("mechanism", ["laplace", "gaussian"])
def test_data_independent_noise_is_exact(statistic, mechanism):
    """Exact intervals: the miss rate is α, so it is tested from both sides."""
    opts = {"bounds": (0, 100)} if statistic == "sum" else {}
    delta = 1e-6 if mechanism == "gaussian" else None
    mech = build(statistic, level=0.8, delta=delta, mechanism=mechanism, **opts)
    assert mech.interval_epsilon == 0.0 and mech.guarantee == mech.inner.guarantee
    value = truth(statistic, NORMAL, (0, 100))
    trials = 400
    k = misses(mech, NORMAL, value, trials, 1)
    lo = int(binom.ppf(FALSE_FAILURE, trials, 0.2))
    assert lo <= k <= max_misses(trials, 0.2)


@pytest.mark.parametrize("data", [NORMAL, np.array([]), np.array([100.0]), np.full(30, 0.0)],
                         ids=["normal", "empty", "one_at_upper", "all_at_lower"])
def test_sum_over_count_coverage(data):
    mech = build("mean", bounds=(0, 100), mechanism="sum-count")
    assert mech.interval_epsilon == 0.0
    trials = 200
    rows = mech.sample_intervals(data, trials, rng=simulation(2))
    if data.size == 0:  # the empty table: the interval is inside the bounds
        assert np.all((rows[:, 1] >= 0) & (rows[:, 2] <= 100))
        return
    value = truth("mean", data, (0, 100))
    k = int(np.sum((rows[:, 1] > value) | (rows[:, 2] < value)))
    assert k <= max_misses(trials, 0.1)


@pytest.mark.parametrize("cell", sorted(CELLS_ORDER))
@pytest.mark.parametrize("mechanism", ["exponential", "smooth"])
def test_median_coverage(cell, mechanism):
    data = CELLS_ORDER[cell]
    mech = build("median", bounds=(0, 100), mechanism=mechanism)
    assert mech.method == iv.QUANTILE
    trials = 60
    assert misses(mech, data, truth("median", data, (0, 100)), trials, 3) <= max_misses(
        trials, 0.1
    )


@pytest.mark.parametrize("q", [0.1, 0.9])
def test_quantile_coverage_tails(q):
    data = np.concatenate([NORMAL, TIES])
    mech = build("quantile", bounds=(0, 100), quantile=q, epsilon=4.0)
    trials = 60
    value = truth("quantile", data, (0, 100), q)
    assert misses(mech, data, value, trials, 4) <= max_misses(trials, 0.1)


def test_quantile_interval_is_informative_when_it_can_be():
    """Not only valid: at n = 3000, ε = 1 the 90 % interval of the median is narrow."""
    data = np.random.default_rng(5).normal(50, 10, 3000)
    rel = build("median", bounds=(0, 1000)).release(data, rng=simulation(6))
    assert rel.ci.lower <= 50.5 and rel.ci.upper >= 49.5
    assert rel.ci.upper - rel.ci.lower < 10


def test_quantile_interval_under_substitution():
    data = NORMAL
    mech = build("median", bounds=(0, 100), neighbours="substitution")
    assert misses(mech, data, truth("median", data), 60, 7) <= max_misses(60, 0.1)


def test_smooth_sensitivity_coverage_trimmed_mean():
    data = np.concatenate([NORMAL, [0.0, 100.0]])
    mech = build("mean", bounds=(0, 100), mechanism="smooth", neighbours="substitution",
                 n=data.size)
    assert mech.method == iv.SMOOTH
    trials = 100
    assert misses(mech, data, truth("mean", data, (0, 100)), trials, 8) <= max_misses(
        trials, 0.1
    )


# -- the scan's privacy: exact law over brute-force neighbour pairs --------------


def _scan_law(f: np.ndarray, plan: iv.ScanPlan) -> np.ndarray:
    """Exact P(first crossing = i), i = 0 … m−1, and P(none) (last entry).

    ν_T is summed over ±40 t_T (the rest has mass < 2e^{−40}); ν_i ≥ k has
    probability e^{−k/t}/(1 + e^{−1/t}) for k ≥ 1 (discrete Laplace)."""
    tt, tq = float(plan.threshold_scale), float(plan.query_scale)
    width = int(40 * tt) + 1
    v = np.arange(-width, width + 1)
    p_t = DiscreteLaplace(tt).pmf(v)
    law_q = DiscreteLaplace(tq)
    need = plan.threshold + v[:, None] - np.asarray(f)[None, :]  # fire iff ν ≥ need
    fire = law_q.sf(need - 1)
    stay = 1.0 - fire
    before = np.cumprod(np.concatenate([np.ones((v.size, 1)), stay[:, :-1]], axis=1), axis=1)
    first = (p_t[:, None] * before * fire).sum(axis=0)
    none = float((p_t * np.prod(stay, axis=1)).sum())
    return np.append(first, none)


@pytest.mark.parametrize("neighbours,q,t", [("add_remove", 0.5, 1.5),
                                             ("substitution", 0.5, 2.5)])
def test_scan_privacy_exact_over_neighbours(neighbours, q, t):
    """Each scan is ε/2-DP: its exact output law (the code's own queries and
    plan) over every neighbour pair of a small domain (values {0, 1, 2, 3}, up
    to 2 rows), at ε = 8 for the interval; outcomes of probability < 1e-12 on
    both sides (beyond the truncation's accuracy) are not compared."""
    from itertools import combinations_with_replacement

    eps = 8.0  # large enough that crossings have probabilities the check can compare
    domain = [0.0, 1.0, 2.0, 3.0]
    tables = [np.array(c) for k in range(3) for c in combinations_with_replacement(domain, k)]
    laws = []
    for x in tables:
        sides = iv.scan_inputs(x, t, q=q, lower=0.0, upper=3.0, neighbours=neighbours,
                               epsilon=eps, level=0.9, chart_scale=3e-4)
        laws.append([_scan_law(side["f"], side["plan"]) for side in sides])
    worst, pairs = 0.0, 0
    for i, a in enumerate(tables):
        for j, b in enumerate(tables):
            if neighbours == "add_remove":
                ok = b.size == a.size + 1 and any(
                    np.array_equal(np.delete(b, k), a) for k in range(b.size))
            else:
                ok = a.size == b.size > 0 and np.abs(
                    np.bincount(np.searchsorted(domain, a), minlength=4)
                    - np.bincount(np.searchsorted(domain, b), minlength=4)).sum() == 2
            if not ok:
                continue
            pairs += 1
            for la, lb in zip(laws[i], laws[j], strict=True):
                assert abs(la.sum() - 1) < 1e-9 and abs(lb.sum() - 1) < 1e-9
                keep = (la > 1e-12) | (lb > 1e-12)
                worst = max(worst, float(np.max(np.abs(np.log(la[keep]) - np.log(lb[keep])))))
    assert pairs >= 10
    assert worst <= eps / 2 + 1e-9, worst


@pytest.mark.parametrize("neighbours", ["add_remove", "substitution"])
@pytest.mark.parametrize("q", [0.1, 0.5, 0.75, 0.9])
def test_rank_query_sensitivity_brute_force(neighbours, q):
    """|G(x) − G(x′)| ≤ Δ at every candidate for every neighbour pair of a small domain
    (the rows on and between the candidates, up to 3 rows; both bracketing rationals)."""
    from itertools import combinations_with_replacement

    domain = [0.0, 0.5, 1.0, 1.5, 2.0]
    cand = np.array([0.0, 0.25, 0.5, 1.0, 1.75, 2.0])
    tables = [np.array(c) for k in range(4) for c in combinations_with_replacement(domain, k)]
    for r in iv._bracket_q(q):
        delta = iv.rank_sensitivity(r, neighbours)
        g = {i: iv.rank_query(x, cand, r) for i, x in enumerate(tables)}
        worst = 0
        for i, a in enumerate(tables):
            for j, b in enumerate(tables):
                if neighbours == "add_remove":
                    ok = b.size == a.size + 1 and any(
                        np.array_equal(np.delete(b, k), a) for k in range(b.size))
                else:
                    ok = a.size == b.size and np.abs(
                        np.bincount(np.searchsorted(domain, a), minlength=5)
                        - np.bincount(np.searchsorted(domain, b), minlength=5)).sum() == 2
                if ok:
                    worst = max(worst, int(np.max(np.abs(g[i] - g[j]))))
        assert worst == delta  # attained: Δ is not loose


def test_above_threshold_law_adversarial_queries():
    """The scan's plan at ε_s = 1 on adversarial query vectors (length 3, near the
    threshold, every coordinate moving by ≤ Δ = 1 in either direction): the exact
    law's privacy loss is ≤ ε_s.  (Halving the query noise breaks this: 1.30.)"""
    from itertools import product

    plan = iv.scan_plan(1, 1.0, 0.05, iv.SCAN_CANDIDATES)
    a0 = plan.threshold
    vecs = list(product(range(a0 - 3, a0 + 2), repeat=3))
    laws = {v: _scan_law(np.array(v), plan) for v in vecs}
    worst = 0.0
    for a in vecs:
        for d in product((-1, 0, 1), repeat=3):
            b = tuple(x + y for x, y in zip(a, d, strict=True))
            if b in laws:
                worst = max(worst, float(np.max(np.abs(np.log(laws[a]) - np.log(laws[b])))))
    assert 0.5 < worst <= 1.0 + 1e-9


def test_combined_guarantee_is_the_requested_epsilon():
    for eps in (0.1, 0.3, 1.0, 2.7):
        mech = build("median", epsilon=eps, bounds=(0, 10))
        assert mech.inner.epsilon + mech.interval_epsilon == eps
        assert mech.guarantee == PureDP(eps)
        assert mech.interval_epsilon == pytest.approx(eps * iv.DEFAULT_FRACTION)


def test_session_charges_once_and_records_the_interval(tmp_path):
    from instancedp.session import Session

    data = {"x": NORMAL}
    with Session(data, PureDP(5.0), ledger=tmp_path / "l.db", dataset_id="d") as s:
        rel = s.release_statistic("median", "x", epsilon=1.0, bounds=(0, 100), ci=0.9,
                                  rng=simulation(9))
        assert s.spent.epsilon == pytest.approx(1.0)
        hist = s.history()
    assert rel.ci is not None and rel.guarantee == PureDP(1.0)
    assert rel.parameters["interval"]["epsilon"] == pytest.approx(0.25)
    assert rel.parameters["epsilon"] == pytest.approx(0.75)
    assert "interval" in json.dumps(hist[-1], default=str)


def test_unsupported_mechanism_is_refused_before_any_charge(tmp_path, monkeypatch):
    from instancedp.session import Session

    # every statistic the session offers has an interval: a mechanism without one
    # is simulated by a dispatch that knows none
    monkeypatch.setattr(iv, "interval_method", lambda mechanism: None)
    with Session({"x": NORMAL}, PureDP(5.0), ledger=tmp_path / "l.db", dataset_id="d") as s:
        with pytest.raises(ParameterError) as err:
            s.release_statistic("mean", "x", epsilon=1.0, bounds=(0, 100), ci=0.9,
                                mechanism="bounded-ls", delta=1e-6)
        assert err.value.parameter == "ci"
        assert s.spent.epsilon == 0.0
        for bad in (0, 1, 1.5, -0.1, "x", True):
            with pytest.raises(ParameterError, match="ci must be"):
                s.release_statistic("median", "x", epsilon=1.0, bounds=(0, 100), ci=bad)
        assert s.spent.epsilon == 0.0


# -- records -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "statistic,options",
    [("count", {}), ("mean", {"bounds": (0, 100)}), ("median", {"bounds": (0, 100)}),
     ("mean", {"bounds": (0, 100), "mechanism": "smooth", "neighbours": "substitution"})],
)
def test_neighbouring_records_differ_only_in_values(statistic, options):
    """A row added (or, under substitution, replaced): same keys, same types, same
    public constants; only value and the interval's endpoints (and its noisy scale) move."""
    a = NORMAL[:50]
    b = np.append(a, 99.0) if options.get("neighbours") != "substitution" else np.append(
        a[:-1], 99.0)
    if options.get("mechanism") == "smooth":
        options = {**options, "n": a.size}
    mech = build(statistic, **options)
    ra = mech.release(a, rng=simulation(10)).to_dict()
    rb = mech.release(b, rng=simulation(10)).to_dict()
    assert structure(ra) == structure(rb)
    assert_same_but_moving(ra, rb, {"lower", "upper", "noisy_log_scale"})


def test_release_without_ci_keeps_its_record():
    rel = Release(1.0, PureDP(1.0), "laplace", {})
    assert "ci" not in rel.to_dict() and rel.ci is None


def test_secure_release_path():
    """The default (secure) source: exact discrete Laplace in the scans, exact noise."""
    rel = build("median", bounds=(0, 100)).release(NORMAL)
    assert rel.secure and rel.ci.lower <= rel.ci.upper
    assert 0 <= rel.ci.lower and rel.ci.upper <= 100


# -- the command line -----------------------------------------------------------------


def test_cli_ci(tmp_path, capsys):
    from instancedp.cli import main

    path = tmp_path / "d.csv"
    np.savetxt(path, NORMAL, header="income", comments="")
    base = ["release", str(path), "--owner", "--column", "income", "--statistic", "median",
            "--bounds", "0", "100", "--epsilon", "1", "--seed", "1"]
    main([*base, "--ci", "0.9", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert out["ci"]["level"] == 0.9 and out["ci"]["lower"] <= out["ci"]["upper"]
    assert out["parameters"]["interval"]["method"] == iv.QUANTILE
    main([*base, "--ci", "0.9"])
    assert "interval" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exc:
        main([*base, "--ci", "2"])
    assert exc.value.code != 0
    assert "--ci" in capsys.readouterr().err


def test_trimmed_mean_smooth_coverage_and_clipping():
    data = np.concatenate([NORMAL, [0.0, 100.0]])
    mech = build("trimmed-mean", bounds=(0, 100), trim=0.1, mechanism="smooth",
                 neighbours="substitution", n=data.size)
    assert mech.method == iv.SMOOTH
    rows = mech.sample_intervals(data, 100, rng=simulation(11))
    assert np.all((rows[:, 1] >= 0) & (rows[:, 2] <= 100))  # clipped to the bounds
    x = np.sort(data)
    k = int(np.floor(0.1 * x.size))
    value = mech.inner.query.value(data)
    assert abs(value - x[k:x.size - k].mean()) < 5  # the query's own trimmed mean
    misses_ = int(np.sum((rows[:, 1] > value) | (rows[:, 2] < value)))
    assert misses_ <= max_misses(100, 0.1)


def test_analyst_mode_and_parquet_file(tmp_path):
    """Analyst mode (public input policy) on a CSV, and a Parquet file (read in
    memory when ci= is given): one charge of ε each, the interval in the record."""
    import pandas as pd

    from instancedp.session import Session

    ledger = tmp_path / "l.db"
    Session(None, PureDP(5.0), ledger=ledger).close()
    csv = tmp_path / "d.csv"
    pd.DataFrame({"x": np.append(NORMAL, [np.nan, 1e9])}).to_csv(csv, index=False)
    with Session(str(csv), ledger=ledger, analyst=True) as s:
        rel = s.release_statistic("median", "x", epsilon=1.0, bounds=(0, 100), ci=0.9)
        assert rel.ci is not None and rel.guarantee == PureDP(1.0)
        assert rel.parameters["input_policy"]["missing"] == "drop"
        assert s.spent.epsilon == pytest.approx(1.0)
    path = tmp_path / "d.parquet"
    pd.DataFrame({"x": NORMAL}).to_parquet(path)
    with Session(str(path), PureDP(5.0), ledger=tmp_path / "p.db", dataset_id="d") as s:
        rel = s.release_statistic("median", "x", epsilon=1.0, bounds=(0, 100), ci=0.9)
        assert rel.ci is not None and rel.guarantee == PureDP(1.0)
        assert s.spent.epsilon == pytest.approx(1.0)
