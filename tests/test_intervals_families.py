"""Private error bars for propose-test-release, bounded local sensitivity,
instance-based noise and the private ratio (``instancedp.intervals``, the
families with a public or released noise scale), and the refusals.

Coverage: T intervals per synthetic cell through the release path (seeded
``sample_intervals``); a cell fails when its misses exceed the Binomial(T, α)
1 − 10⁻⁴ quantile, so each check's false-failure rate is ≤ 10⁻⁴ (≤ 4·10⁻³ over
the ~40 checks here).  The "exact" checks also bound the misses from below
(the 10⁻⁴ quantile): an interval far wider than stated fails them too.
"""

from __future__ import annotations

import json
import math

import networkx as nx
import numpy as np
import pytest
from interval_support import assert_same_but_moving, structure
from scipy.stats import binom

from instancedp import intervals as iv
from instancedp.errors import ParameterError
from instancedp.random import simulation
from instancedp.recipes import build_mechanism

FALSE_FAILURE = 1e-4
LEVEL = 0.9
ALPHA = 1.0 - LEVEL


def max_misses(trials: int, alpha: float = ALPHA) -> int:
    return int(binom.ppf(1.0 - FALSE_FAILURE, trials, alpha))


def min_misses(trials: int, alpha: float = ALPHA) -> int:
    return int(binom.ppf(FALSE_FAILURE, trials, alpha))


def build(statistic, epsilon=1.0, delta=None, **options):
    options.setdefault("neighbours", "add_remove" if statistic not in GRAPHS else "edge")
    return iv.with_interval(
        lambda e: build_mechanism(statistic, e, delta, **options), epsilon, LEVEL)


def count_misses(mech, data, value, trials, seed):
    rows = mech.sample_intervals(data, trials, rng=simulation(seed))
    assert np.all(rows[:, 1] <= rows[:, 2])
    return int(np.sum((rows[:, 1] > value) | (rows[:, 2] < value)))


GRAPHS = ("triangles", "kstars", "two-triangles")
RNG = np.random.default_rng(2027)
NORMAL = RNG.normal(50, 10, 200)
CELLS = {
    "normal": NORMAL,
    "at_bounds": np.array([0.0] * 10 + [100.0] * 10),
    "all_equal": np.full(30, 7.0),
    "one_row": np.array([42.0]),
    "two_rows": np.array([1.0, 99.0]),
}
FLAGS = {
    "p0.3": (RNG.random(400) < 0.3).astype(float),
    "all_zero": np.zeros(40),
    "all_one": np.ones(40),
    "one_row": np.array([1.0]),
    "two_rows": np.array([0.0, 1.0]),
}


def truth(statistic, data, trim=0.1):
    x = np.clip(np.asarray(data, dtype=float), 0, 100)
    if statistic == "mean":
        return float(x.mean())
    if statistic == "min":
        return float(x.min())
    if statistic == "max":
        return float(x.max())
    k = int(math.floor(trim * x.size))
    return float(np.sort(x)[k:x.size - k].mean())


# -- the families and the dispatch ----------------------------------------------------


def test_every_numeric_statistic_has_an_interval_for_ptr_and_bounded_ls():
    for stat in ("mean", "trimmed-mean", "min", "max"):
        extra = {"trim": 0.1} if stat == "trimmed-mean" else {}
        for mech, opt in (("ptr", {"ptr_bound": 2.0}), ("bounded-ls", {})):
            m = build(stat, delta=1e-6, bounds=(0, 100), mechanism=mech, **opt, **extra)
            assert m.method == iv.RELEASED_SCALE and m.interval_epsilon == 0.0
            assert m.inner.epsilon == 1.0  # post-processing: the whole ε for the value
    for method in ("ksw", "naive"):
        assert build("ratio", mechanism=method).method == iv.SHARE
    assert build("ratio", mechanism="bounded-ls", delta=1e-6).method == iv.SHARE


def test_registry_refusals_name_why():
    """Over every registered mechanism's catalogue example: the refused ones are the
    categorical and generic releases (and bound-free single quantiles, whose
    interval is another family's), each refusal says why, before any draw."""
    from instancedp.registry import examples

    refused = set()
    for _name, entry, builder in examples():
        mech = builder(0.5, 1e-3).mechanism
        if iv.interval_method(mech) is None:
            refused.add(entry.key)
            with pytest.raises(ParameterError) as err:
                iv.with_interval(lambda e, m=mech: m, 1.0, LEVEL)
            assert err.value.parameter == "ci"
            if entry.key in iv.NO_INTERVAL:
                assert iv.NO_INTERVAL[entry.key] in str(err.value)
    assert {"stable_release", "exponential", "smalldb"} <= refused
    assert refused <= {*iv.NO_INTERVAL, "loglog_quantile", "unbounded_quantile"}


# -- coverage -------------------------------------------------------------------------


@pytest.mark.parametrize("cell", list(CELLS))
@pytest.mark.parametrize("statistic", ["mean", "trimmed-mean", "min", "max"])
def test_ptr_coverage(statistic, cell):
    data = CELLS[cell]
    extra = {"trim": 0.1} if statistic == "trimmed-mean" else {}
    mech = build(statistic, delta=1e-6, bounds=(0, 100), mechanism="ptr", ptr_bound=1.0,
                 **extra)
    trials = 100
    assert count_misses(mech, data, truth(statistic, data), trials, 1) <= max_misses(trials)


@pytest.mark.parametrize("cell", list(CELLS))
@pytest.mark.parametrize("statistic", ["mean", "trimmed-mean", "min", "max"])
def test_bounded_ls_coverage(statistic, cell):
    data = CELLS[cell]
    extra = {"trim": 0.1} if statistic == "trimmed-mean" else {}
    mech = build(statistic, delta=1e-6, bounds=(0, 100), mechanism="bounded-ls", **extra)
    trials = 100
    assert count_misses(mech, data, truth(statistic, data), trials, 2) <= max_misses(trials)


def test_exact_coverage_away_from_the_bounds():
    """Conditionally on the released scale the Laplace interval is exact: with the
    value far inside the bounds (no projection), the miss rate is α, not less."""
    data = NORMAL
    trials = 2000
    for mech, seed in ((build("mean", delta=1e-6, bounds=(0, 100), mechanism="bounded-ls"), 3),
                       (build("mean", epsilon=2.0, delta=1e-6, bounds=(0, 100),
                              mechanism="ptr", ptr_bound=0.5), 4)):
        rows = mech.sample_intervals(data, trials, rng=simulation(seed))
        assert not np.isnan(rows[:, 0]).any()  # every PTR test passed here
        value = truth("mean", data)
        k = int(np.sum((rows[:, 1] > value) | (rows[:, 2] < value)))
        assert min_misses(trials) <= k <= max_misses(trials)


def test_ptr_refusal_gets_the_public_range():
    """A dataset whose local sensitivity exceeds the proposal: ⊥ (value None) with the
    whole public range as its interval; the record keeps its shape."""
    mech = build("mean", delta=1e-6, bounds=(0, 100), mechanism="ptr", ptr_bound=1e-3)
    rows = mech.sample_intervals(CELLS["two_rows"], 50, rng=simulation(5))
    assert np.isnan(rows[:, 0]).all()
    assert (rows[:, 1] == 0).all() and (rows[:, 2] == 100).all()
    rel = mech.release(CELLS["two_rows"], rng=simulation(5))
    assert rel.value is None and (rel.ci.lower, rel.ci.upper) == (0.0, 100.0)


@pytest.mark.parametrize("method,cell", [
    *((m, c) for m in ("ksw", "naive") for c in FLAGS),
    # bounded-ls refuses b = 0 and bails out to the naive draw below its interval width
    # (that path: test_bounded_ls_bail_out_uses_the_naive_counts)
    *(("bounded-ls", c) for c in ("p0.3", "all_zero", "all_one")),
])
def test_ratio_coverage(method, cell):
    flags = FLAGS[cell]
    delta = 1e-6 if method == "bounded-ls" else None
    mech = build("ratio", mechanism=method, delta=delta)
    trials = 150
    value = float(flags.mean())
    assert count_misses(mech, flags, value, trials, 6) <= max_misses(trials)


def test_share_interval_holds_on_its_event_by_enumeration():
    """On the event |ô − a| ≤ m, |ẑ − z| ≤ m the KSW interval holds a/(a + z): every
    integer (a, z ≥ 0, a + z ≥ 1) in the box, for noisy counts near 0, negative and
    far from it."""
    level = 0.8
    m = iv.laplace_margin(1.0 * (1 + 2.0**-40), (1 - level) / 2)
    for o, z_ in ((0.3, 5.2), (-2.0, 1.0), (7.7, -0.4), (40.0, 60.0), (-1.5, -1.0)):
        lo, hi = iv.share_interval(o, z_, 1.0, level)
        points = 0
        for a in range(max(0, math.ceil(o - m)), math.floor(o + m) + 1):
            for z in range(max(0, math.ceil(z_ - m)), math.floor(z_ + m) + 1):
                if a + z >= 1:
                    points += 1
                    assert lo - 1e-12 <= a / (a + z) <= hi + 1e-12
        assert points > 0


def test_ratio_interval_is_informative():
    flags = FLAGS["p0.3"]
    for method in ("ksw", "naive", "bounded-ls"):
        rows = build("ratio", mechanism=method, delta=1e-6, epsilon=2.0).sample_intervals(
            flags, 20, rng=simulation(7))
        assert np.median(rows[:, 2] - rows[:, 1]) < 0.15, method


def test_bounded_ls_bail_out_uses_the_naive_counts():
    """Where the bound bails out (b_l ≤ 1) the ratio falls back on the naive draw at
    ε2; its interval comes from those two noisy counts and still covers."""
    flags = np.array([1.0] * 3 + [0.0] * 5)
    mech = build("ratio", mechanism="bounded-ls", delta=1e-3)
    rel = mech.release(flags, rng=simulation(8))
    assert rel.ci.parameters["bound"] is None and rel.ci.parameters["noisy_b"] is not None
    trials = 200
    assert count_misses(mech, flags, 3 / 8, trials, 9) <= max_misses(trials)
    # the exact noise path (as a secure source draws) with bail-outs among the draws
    from instancedp.audit.catalogue import exact_simulation

    rows = mech.sample_intervals(flags, 20, rng=exact_simulation(9))
    assert np.all((rows[:, 1] <= rows[:, 2]) & (rows[:, 1] >= 0) & (rows[:, 2] <= 1))


def _edge_data(n=12, p=0.5, seed=0):
    return nx.gnp_random_graph(n, p, seed=seed)


@pytest.mark.parametrize("statistic", GRAPHS)
def test_bounded_ls_graph_coverage(statistic):
    g = _edge_data()
    extra = {"k": 2} if statistic == "kstars" else {}
    mech = build(statistic, delta=1e-6, mechanism="bounded-ls", vertices=12, **extra)
    assert mech.method == iv.RELEASED_SCALE
    value = float(mech.inner.query.value(g))
    trials = 100
    rows = mech.sample_intervals(g, trials, rng=simulation(10))
    assert (rows[:, 1] >= 0).all()  # the public range of a count: [0, ∞)
    k = int(np.sum((rows[:, 1] > value) | (rows[:, 2] < value)))
    assert k <= max_misses(trials)


def _levels_mechanism(epsilon=1.0, delta=1e-3, graph=True):
    """Instance-based noise on a bounded add/remove mean, one public level per table
    size up to 199 rows (level k: n = 199 − k rows, LS = range/max(n, 1); n ≥ 199:
    level 0), layered (a neighbour moves the size by one).  ``graph=False``: the same
    rates given directly, without the level graph."""
    from instancedp.mechanisms import InstanceBasedNoise
    from instancedp.queries import Mean

    query = Mean(0.0, 100.0)
    levels = [100.0 / max(199 - k, 1) for k in range(200)]
    level_of = lambda d: max(0, 199 - np.asarray(d).size)  # noqa: E731
    mech = InstanceBasedNoise.from_levels(level_of, levels, "layered", query, epsilon, delta,
                                          method="envelope")
    if graph:
        return mech
    return InstanceBasedNoise(query, epsilon, delta=delta, level_of=level_of, rates=mech.rates)


@pytest.mark.parametrize("graph", [True, False])
@pytest.mark.parametrize("cell", ["normal", "at_bounds", "one_row"])
def test_instance_based_noise_coverage(cell, graph):
    mech = iv.with_interval(lambda e: _levels_mechanism(e, graph=graph), 1.0, LEVEL)
    if graph:  # the level graph is stated: a charged noisy ln λ (a quarter of ε)
        assert mech.method == iv.NOISY_RATE and mech.interval_epsilon == 0.25
        assert mech.inner.epsilon + mech.interval_epsilon == 1.0
    else:  # only the rates: the largest public scale, free
        assert mech.method == iv.LARGEST_SCALE and mech.interval_epsilon == 0.0
    data = CELLS[cell]
    trials = 100
    assert count_misses(mech, data, truth("mean", data), trials, 11) <= max_misses(trials)


def test_noisy_rate_is_narrower_where_the_level_is_low():
    """At n = 200 (the lowest level) the noisy-rate interval is far narrower than the
    one from the largest public scale."""
    data = NORMAL
    charged, free = (iv.with_interval(lambda e, g=g: _levels_mechanism(e, graph=g), 1.0, LEVEL)
                     for g in (True, False))
    w = [np.median(np.diff(m.sample_intervals(data, 50, rng=simulation(12))[:, 1:], axis=1))
         for m in (charged, free)]
    assert w[0] < w[1] / 5


def test_noisy_log_rate_is_epsilon_dp_over_neighbours():
    """The charged part: ln λ̃ = ln λ_x + Lap(b), b from the code.  Its exact privacy
    loss is |ln λ_x − ln λ_x′|/b; over add/remove pairs crossing every level boundary
    (the code's own λ_x) it is ≤ ε_I, and equal to it at a boundary (tight)."""
    mech = iv.with_interval(lambda e: _levels_mechanism(e), 1.0, LEVEL)
    inner, eps_i = mech.inner, mech.interval_epsilon
    b = iv.log_scale_noise(inner.log_rate_sensitivity(), eps_i)
    worst = 0.0
    for n in range(1, 220):
        lx, ly = inner._state(np.full(n, 5.0))[1], inner._state(np.full(n + 1, 5.0))[1]
        worst = max(worst, abs(math.log(lx) - math.log(ly)) / b)
    assert worst <= eps_i
    assert worst == pytest.approx(eps_i, rel=1e-6)


# -- refusals ------------------------------------------------------------------------


def test_categorical_and_generic_releases_are_refused_with_their_reason():
    from instancedp.audit import catalogue

    for key, builder in (("stable_release", catalogue.stable_mode_example),
                         ("exponential", catalogue.exponential_example),
                         ("smalldb", catalogue.smalldb_example)):
        mech = builder(1.0, 1e-3).mechanism
        with pytest.raises(ParameterError, match="offers no confidence interval") as err:
            iv.with_interval(lambda e, m=mech: m, 1.0, LEVEL)
        assert iv.NO_INTERVAL[key] in str(err.value) and err.value.parameter == "ci"


# -- records of neighbours -----------------------------------------------------------


MOVING = {"lower", "upper", "bound", "noisy_a", "noisy_b", "noisy_ones", "noisy_zeros",
          "noisy_log_rate"}


def _same_but_values(ra, rb):
    assert_same_but_moving(ra, rb, MOVING)


@pytest.mark.parametrize("statistic,options", [
    ("ratio", {"mechanism": "ksw"}), ("ratio", {"mechanism": "naive"}),
    ("ratio", {"mechanism": "bounded-ls", "delta": 1e-6}),
    ("mean", {"mechanism": "ptr", "ptr_bound": 1.0, "delta": 1e-6, "bounds": (0, 100)}),
    ("max", {"mechanism": "bounded-ls", "delta": 1e-6, "bounds": (0, 100)}),
])
def test_neighbouring_records_differ_only_in_values(statistic, options):
    """A row added: same keys, types and public constants; only the value, the
    interval's ends and the released parts (noisy counts, bound) move."""
    a = FLAGS["p0.3"][:100] if statistic == "ratio" else NORMAL[:60]
    b = np.append(a, 1.0 if statistic == "ratio" else 99.0)
    options = dict(options)
    mech = build(statistic, delta=options.pop("delta", None), **options)
    ra = mech.release(a, rng=simulation(13)).to_dict()
    rb = mech.release(b, rng=simulation(13)).to_dict()
    assert structure(ra) == structure(rb)
    _same_but_values(ra, rb)


def test_neighbouring_graphs_and_levels_records():
    g = _edge_data()
    h = g.copy()
    u, v = next((u, v) for u in h for v in h if u < v and not h.has_edge(u, v))
    h.add_edge(u, v)
    mech = build("triangles", delta=1e-6, mechanism="bounded-ls", vertices=12)
    ra, rb = (mech.release(x, rng=simulation(14)).to_dict() for x in (g, h))
    assert structure(ra) == structure(rb)
    _same_but_values(ra, rb)
    lv = iv.with_interval(lambda e: _levels_mechanism(e), 1.0, LEVEL)
    ra, rb = (lv.release(x, rng=simulation(15)).to_dict() for x in (NORMAL[:50], NORMAL[:49]))
    _same_but_values(ra, rb)


# -- the released parts: exact privacy checks ------------------------------------------


@pytest.mark.parametrize("method", ["ksw", "naive"])
def test_ratio_released_counts_are_epsilon_dp(method):
    """The interval releases the ratio's two noisy counts.  Their joint law is a
    product of Laplace laws centred at the code's counts, so its exact privacy loss
    is Σ|Δcentre|/scale; over every add/remove pair of flag tables up to 4 rows it
    is ≤ ε (the scale taken from the draw's own parts)."""
    from itertools import product

    from instancedp.mechanisms.ratio import PrivateRatio

    eps = 0.7
    mech = PrivateRatio(None, eps, method=method)
    tables = [np.array(t, dtype=float) for n in range(1, 5) for t in product((0, 1), repeat=n)]

    def centres(x):
        a, b = mech.counts(x)
        return np.array([a, b - a] if method == "ksw" else [a, b], dtype=float)

    _, parts = mech._draw_parts(mech._state(tables[0]), simulation(0), None)
    worst = 0.0
    for x in tables:
        for y in (np.append(x, 0.0), np.append(x, 1.0)):
            worst = max(worst, float(np.abs(centres(x) - centres(y)).sum()) / parts["scale"])
    assert worst <= eps * (1 + 1e-12)
    assert worst == pytest.approx(eps)  # tight: the check can fail


def test_bounded_ls_bound_and_value_are_jointly_private():
    """The interval releases the bound g with the value.  The joint law of (ln g,
    value) — ln g = ln SS(x) + m + c·L, value = q(x) + Lap(g/ε2) — has hockey-stick
    divergence ≤ δ at ε on every substitution pair of a small domain, with SS, c, m
    and q from the released mechanism's own code on a mean (the closed-form
    integral of test_mech_bounded_ls, reused); with half the release noise the same
    check exceeds δ, so it can fail."""
    from test_mech_bounded_ls import joint_delta

    from instancedp.audit.profile import neighbour_pairs_from_brute
    from instancedp.mechanisms import BoundedLocalSensitivity
    from instancedp.queries import Mean

    delta = 1e-2
    mech = BoundedLocalSensitivity(Mean(0.0, 8.0, "substitution", n=3), 1.0, delta=delta)
    bm, e1, e2 = mech.bound_mechanism, mech.epsilon_bound, mech.epsilon_release
    keys = {(bm.prepare(mech.query, x, e1, delta), bm.prepare(mech.query, y, e1, delta),
             abs(float(mech.query.value(x)) - float(mech.query.value(y))))
            for x, y in neighbour_pairs_from_brute((0.0, 1.0, 8.0), 3, "substitution")}
    assert max(joint_delta(k, e1, e2, delta, bm) for k in keys) <= delta
    assert max(joint_delta(k, e1, e2, delta, bm, noise_factor=0.5) for k in keys) > delta


# -- the session and the command line --------------------------------------------------


def test_session_ratio_with_ci_charges_epsilon_once(tmp_path):
    from instancedp.privacy import PureDP
    from instancedp.session import Session

    with Session({"f": FLAGS["p0.3"]}, PureDP(5.0), ledger=tmp_path / "l.db",
                 dataset_id="d") as s:
        rel = s.release_statistic("ratio", "f", epsilon=1.0, ci=0.9, rng=simulation(16))
        assert s.spent.epsilon == pytest.approx(1.0)
    assert rel.guarantee == PureDP(1.0) and rel.ci.method == iv.SHARE
    assert rel.ci.lower <= rel.value <= rel.ci.upper
    assert rel.parameters["interval"]["epsilon"] == 0.0


def test_cli_ratio_ci(tmp_path, capsys):
    from instancedp.cli import main

    path = tmp_path / "f.csv"
    np.savetxt(path, FLAGS["p0.3"], header="flag", comments="", fmt="%d")
    main(["release", str(path), "--owner", "--column", "flag", "--statistic", "ratio",
          "--epsilon", "1", "--seed", "1", "--ci", "0.95", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert out["ci"]["level"] == 0.95 and out["ci"]["method"] == iv.SHARE
    assert 0.0 <= out["ci"]["lower"] <= out["ci"]["upper"] <= 1.0
    assert out["ci"]["covers"] == iv.COVERS[iv.SHARE]
