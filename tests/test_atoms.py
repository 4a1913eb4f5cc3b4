"""The log base with public atoms (``mechanisms/atoms.py``): the chart, the exact
privacy check over brute-force neighbour pairs
under both relations, the release path against the exact law, ties released exactly,
the staged (out-of-core) draw against its exact law and across engines, and records
on adversarial neighbours."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from instancedp import PureDP, Session
from instancedp.audit.profile import check_mechanism, neighbour_pairs_from_brute
from instancedp.errors import ParameterError
from instancedp.mechanisms import quantile as qmod
from instancedp.mechanisms.atoms import AtomChart, atom_points, atom_rank
from instancedp.mechanisms.quantile import ExponentialQuantile
from instancedp.queries.order import Quantile
from instancedp.random import simulation

#: 1.0 and 2.5 are atoms of the (−1, 4) bounds' levels 1 and 0.1; 0.123456789 is not
DOMAIN = (0.0, 1.0, 2.5, 0.123456789)


def mech(q, relation, eps=0.7, levels=2, lo=-1.0, hi=4.0, **kw):
    return ExponentialQuantile(Quantile(q, lo, hi, neighbours=relation), eps,
                               base="log-atoms", log_scale=0.3, atom_levels=levels, **kw)


# -- the chart ---------------------------------------------------------------------------


def test_chart_orders_values_and_gives_atoms_their_defined_mass():
    c = AtomChart(-100.0, 5000.0, 0.51)
    assert c.levels == (3, 2, 1, 0, -1, -2, -3)
    rng = np.random.default_rng(1)
    t = np.unique(np.concatenate([rng.uniform(-100, 5000, 3000),
                                  np.round(rng.uniform(-100, 5000, 3000), 2), [0.0, 5000.0]]))
    lo, hi = c.left(t), c.right(t)
    assert np.all(lo <= hi) and np.all(hi[:-1] <= lo[1:])
    # the atom mass from the definition: w/J · Σ_levels holding t of φ((k ± ½)·10^j)
    phi = lambda v: math.copysign(math.log1p(abs(v) / 0.51), v)  # noqa: E731
    for v in (0.0, 20.0, 20.1, 0.3, 19.99, 1234.567, 5000.0):
        want = 0.05 / 7 * sum(phi((k + 0.5) * 10.0**j) - phi((k - 0.5) * 10.0**j)
                              for j in c.levels
                              for k in [round(Fraction(v) / Fraction(10) ** j)]
                              if float(Fraction(k) * Fraction(10) ** j) == v)
        got = float(c.right(v) - c.left(v))
        assert got == pytest.approx(want, rel=1e-9, abs=1e-15)
        assert want > 0
    # off the atoms: no mass; the double nearest 0.3 is an atom, 0.1 + 0.2 is not
    assert not c.is_atom(0.1 + 0.2) and c.is_atom(0.3) and not c.is_atom(0.0001)
    assert float(c.right(0.1 + 0.2) - c.left(0.1 + 0.2)) == 0.0


def test_map_back_hits_atoms_and_lands_within_ulps_elsewhere():
    c = AtomChart(-100.0, 5000.0, 0.51)
    for v in (0.0, 20.0, 0.3, 4999.9, -100.0, 5000.0):
        assert c.value(float((c.left(v) + c.right(v)) / 2)) == v
    for v in (0.1 + 0.2, 17.123456789, -3.14159265, 4321.0000001):
        got = c.value(float(c.left(v)))
        assert abs(got - v) <= 1e-12 * (abs(v) + 1)


def test_levels_are_public_and_exact():
    assert AtomChart(0.0, 8.0, 1e-3, levels=2).levels == (0, -1)
    # steps past 10^22 are not exact doubles, indices past 2^52 not exact: no such level
    assert AtomChart(-1e300, 1e300, 1e296).levels == ()
    assert AtomChart(0.0, 1e18, 1e14).levels == (18, 17, 16, 15, 14, 13, 12)
    assert AtomChart(1e15, 1e15 + 1.0, 1e-4).levels == (0,)


def test_atom_rank_is_the_nearest_rank_in_the_run():
    for q in (0.1, 0.25, 0.5, 0.9, 1 / 3):
        for n in range(0, 12):
            for below in range(0, n + 1):
                for k in range(0, n - below + 1):
                    qn = Fraction(q) * n
                    best = min(range(below, below + k + 1), key=lambda i: (abs(i - qn), -i))
                    assert atom_rank(q, n, below, k) == best


# -- exact privacy and the exact law ---------------------------------------------------------


def pairs(relation):
    out = []
    for n in (1, 2, 3):
        out += neighbour_pairs_from_brute(DOMAIN, n, relation)
    if relation == "add_remove":
        out += [((), (v,)) for v in DOMAIN]  # the empty table neighbours every 1-row table
    return out


@pytest.mark.parametrize(("relation", "q"), [("add_remove", 0.5), ("add_remove", 0.9),
                                             ("substitution", 0.25)])
def test_exactly_eps_dp_over_brute_force_pairs(relation, q):
    m = mech(q, relation)
    # the release path is sampled against the law in one cell (one code path); the exact
    # privacy check runs in every cell
    check = check_mechanism(m, pairs(relation), samples=2000 if q == 0.9 else 0)
    assert check.passed, check
    assert check.measured >= 0.35 * m.epsilon  # not loose


def test_law_is_a_distribution_with_interval_scores_on_tied_atoms():
    x = [1.0, 1.0, 1.0, 2.5, 3.0]
    m = mech(0.5, "add_remove")
    law = m.output_distribution(x)
    assert sum(law.atoms.values()) + float(law.cdf(4.0)[0]) == pytest.approx(1.0, abs=1e-12)
    # the atom 1.0 holds ranks 0 … 3 and q·n = 2.5: score ½; the gap (1, 2.5) scores ½ too
    # (3 rows below); its mass per unit of the chart is the same: ratio = mass ratio
    c = m._atoms
    atom_mass = float(c.right(1.0) - c.left(1.0))
    gap = float(c.left(2.5) - c.right(1.0))
    cont = float(law.cdf(2.5)[0] - law.cdf(1.0)[0]) + sum(
        p for v, p in law.atoms.items() if 1.0 < v < 2.5)
    assert law.atoms[1.0] / cont == pytest.approx(atom_mass / gap, rel=1e-9)


def test_release_path_matches_exact_law():
    """Atom frequencies within 4.5 binomial standard errors of the law (false-failure
    < 7·10⁻⁶ per atom, < 5·10⁻⁵ over the 7 checked) and the continuous part's KS distance
    below 0.035 (its level-0.001 critical value at 3,000 draws is 0.0356)."""
    x = [1.0, 1.0, 2.5, 0.123456789, 3.0, 3.0, 3.0]
    m = mech(0.5, "add_remove")
    law = m.output_distribution(x)
    draws = m.sample(x, 3000, simulation(11))
    top = sorted(law.atoms, key=law.atoms.get, reverse=True)[:7]
    for v in top:
        p = law.atoms[v]
        assert abs(np.mean(draws == v) - p) <= 4.5 * math.sqrt(p * (1 - p) / draws.size)
    cont = np.sort(draws[~np.isin(draws, list(law.atoms))])
    ref = law.cdf(cont) / law.continuous_mass
    ks = np.max(np.abs(ref - np.arange(1, cont.size + 1) / cont.size))
    assert ks < 0.036 * math.sqrt(3000 / cont.size)


def test_ties_on_a_round_number_release_exactly(monkeypatch):
    """30 % zeros and q = 0.1 (q·n inside the run of zeros: score 0 there, 60 ranks to the
    gap below and 120 above at n = 600): the exact law puts mass > 1 − 10⁻⁹ on 0 (the
    window made whole so that the law is computed); the log base alone never releases 0."""
    monkeypatch.setattr(qmod, "WINDOW_EXPONENT", 1e9)
    rng = np.random.default_rng(3)
    x = np.concatenate([np.zeros(180), rng.normal(100, 20, 420)])
    m = mech(0.1, "add_remove", eps=1.0, levels=3, lo=-200.0, hi=2000.0)
    assert m.output_distribution(x).atoms[0.0] > 1 - 1e-9
    log = ExponentialQuantile(Quantile(0.1, -200.0, 2000.0, neighbours="add_remove"), 1.0,
                              base="log")
    assert not np.any(log.sample(x, 200, simulation(2)) == 0.0)


# -- the staged draw: lazy windows, runs beyond them, engines ------------------------------


def tied_column(n, rng):
    """Ties on atoms across the target rank and at the window's edges, and continuous rows."""
    x = np.round(rng.lognormal(3, 1, n), 1)
    x[: n // 5] = 0.0
    return x


def test_staged_draw_follows_the_exact_law(monkeypatch):
    """A tiny window (ε = 40: 2 pieces either side) forces the lazy path, the runs at
    the window's ends and the re-placement around the tied target; the exact law is the
    full window's.  Frequencies of the likeliest outputs within 4.5 standard errors
    (false-failure < 5·10⁻⁵ over the 7 checked)."""
    rng = np.random.default_rng(5)
    x = np.sort(np.concatenate([np.full(12, 20.0), np.full(9, 20.1), [19.9, 19.9, 20.2],
                                rng.uniform(18, 22, 6)]))
    m = mech(0.5, "add_remove", eps=40.0, levels=3, lo=0.0, hi=100.0)
    assert not m._memory_pieces(x).full
    draws = m.sample(x, 2000, simulation(8))
    monkeypatch.setattr(qmod, "WINDOW_EXPONENT", 1e9)
    law = m.output_distribution(x)
    top = sorted(law.atoms, key=law.atoms.get, reverse=True)[:7]
    assert sum(law.atoms[v] for v in top) > 0.99
    for v in top:
        p = law.atoms[v]
        assert abs(np.mean(draws == v) - p) <= 4.5 * math.sqrt(p * (1 - p) / draws.size) + 1e-12


def test_every_engine_gives_the_same_record(tmp_path):
    import duckdb

    rng = np.random.default_rng(7)
    x = tied_column(20_000, rng)
    path = tmp_path / "t.parquet"
    con = duckdb.connect()
    con.register("df", __import__("pandas").DataFrame({"v": x}))
    con.execute(f"COPY df TO '{path}' (FORMAT parquet)")
    for q in (0.1, 0.5):
        recs = []
        for src in (x, str(path)):
            s = Session(src, PureDP(10))
            r = s.release_statistic("quantile", "v" if src is not x else None, quantile=q,
                                    epsilon=0.5, bounds=(-10.0, 1000.0), rng=simulation(4))
            recs.append((r.value, r.parameters))
        assert recs[0] == recs[1]
        assert recs[0][1]["base"] == "log-atoms"


# -- records on adversarial neighbours, and bad parameters ---------------------------------


@pytest.mark.parametrize("relation", ["add_remove", "substitution"])
def test_neighbouring_records_differ_in_value_only(relation):
    cases = [(), (0.0,), (0.0, 4.0), (1.0, 1.0, 1.0), (-1.0, 4.0, 4.0), (5e-324, 2.5),
             (1e-300, -1e-300, 0.0)]
    for x in cases:
        for y in [x + (2.5,), x + (4.0,)] + ([x[1:]] if x else []):
            recs = [mech(0.5, relation).release(d, simulation(1)) for d in (x, y)]
            assert all(-1.0 <= r.value <= 4.0 for r in recs)
            assert recs[0].parameters == recs[1].parameters
            assert recs[0].mechanism == recs[1].mechanism


def test_huge_bounds_have_no_levels_and_still_release():
    m = ExponentialQuantile(Quantile(0.5, -1e300, 1e300, neighbours="add_remove"), 1.0,
                            base="log-atoms")
    assert m.parameters()["atom_steps"] == []
    v = m.release([1.0, 2.0, 3.0], simulation(0)).value
    assert -1e300 <= v <= 1e300


def test_bad_atom_levels_name_themselves():
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ParameterError) as e:
            mech(0.5, "add_remove", levels=bad)
        assert e.value.parameter == "atom_levels"
    with pytest.raises(ParameterError) as e:
        ExponentialQuantile(Quantile(0.5, 0, 1), 1.0, base="log", atom_levels=2)
    assert e.value.parameter == "atom_levels"


def test_points_listed_by_the_exact_law_are_the_atoms():
    c = AtomChart(-1.0, 4.0, 0.3, levels=2)
    pts = atom_points(c)
    assert pts.size == 51 and np.all(c.is_atom(pts)) and pts[0] == -1.0 and pts[-1] == 4.0
