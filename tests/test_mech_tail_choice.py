"""The tail choice (mechanisms/tail_choice.py): its public switch count, the exact law
of the choice, the exact privacy check of the whole release — (choice, scan index,
value) — over brute-force neighbour pairs, the release path against the choice's
law, adversarial inputs whose records differ only in the value and the stated
choice, and the default rule that builds it."""

from __future__ import annotations

import math

import numpy as np
import pytest

from instancedp.audit.profile import neighbour_pairs_from_brute
from instancedp.errors import ParameterError
from instancedp.mechanisms.quantile import ExponentialQuantile
from instancedp.mechanisms.stability import stability_threshold
from instancedp.mechanisms.tail_choice import (
    BOUNDED,
    BRACKET,
    TailChoiceQuantile,
    switch_count,
    tail_choice_applies,
)
from instancedp.queries.order import Quantile
from instancedp.random import simulation
from instancedp.recipes import build_mechanism

DOMAIN = (-2.0, 0.0, 3.0)
BOUNDS = (-2.0, 3.0)
# a coarse bound-free grid keeps the bracket's listed scan indices few (as in
# tests/test_unbounded_two_stage.py); share and level put the switch at n + Z ≤ 2, so
# that both branches carry mass on tables of 0–3 rows
SMALL = {"beta": 2.0, "scale": 1.0, "bracket": 2.0}


def mech(relation="add_remove", q=0.9, eps=1.0, **kw):
    opts = {"share": 0.3, "level": 0.43, "bracket": SMALL} | kw
    return TailChoiceQuantile(Quantile(q, *BOUNDS, neighbours=relation), eps, **opts)


def pairs(relation):
    out = []
    for n in (1, 2, 3):
        out += neighbour_pairs_from_brute(DOMAIN, n, relation)
    if relation == "add_remove":
        out += [((), (v,)) for v in DOMAIN]
    return out


# -- the public switch count --------------------------------------------------------------


def test_switch_count_by_hand():
    # q = 0.9, ε = 1, share 0.05, T = 12: ε₁ = 0.95, Δ = 0.9,
    # N_T = ⌊2·0.9·12/(0.1·0.95)⌋ = ⌊227.4⌋ = 227
    t0 = stability_threshold(0.05, 0.05)
    assert switch_count(0.9, 1.0, "add_remove") == 227 - t0
    assert 0.5 * math.exp(-0.05 * t0) <= 0.05 * (1 + math.exp(-0.05))  # P(Z ≥ t0) ≤ rate
    m = mech()
    assert m.switch_below == 2
    assert m.parameters()["switch_below"] == 2


def test_the_choice_runs_for_far_tails_under_add_remove_only():
    for eps in (0.05, 0.25, 1.0, 4.0, 50.0):
        for q in (0.5, 0.75, 0.25):  # a median's switch count is below 1; q = 0.75: no gain
            assert not tail_choice_applies(q, eps, "add_remove", 0.0, 100.0)
        assert not tail_choice_applies(0.9, eps, "substitution", 0.0, 100.0)
    for eps in (0.05, 0.25, 1.0, 4.0):
        # the tail on the side of the bound farther from 0, and its mirror
        assert tail_choice_applies(0.9, eps, "add_remove", 0.0, 100.0)
        assert tail_choice_applies(0.99, eps, "add_remove", -10.0, 100.0)
        assert tail_choice_applies(0.1, eps, "add_remove", -100.0, 0.0)
        assert not tail_choice_applies(0.1, eps, "add_remove", 0.0, 100.0)
        assert not tail_choice_applies(0.9, eps, "add_remove", -100.0, 10.0)
    # the default builds it exactly where it applies, and a named mechanism is kept
    assert isinstance(build_mechanism("quantile", 1.0, bounds=BOUNDS, quantile=0.9),
                      TailChoiceQuantile)
    assert type(build_mechanism("median", 1.0, bounds=BOUNDS)) is ExponentialQuantile
    assert type(build_mechanism("quantile", 1.0, bounds=BOUNDS, quantile=0.9,
                                mechanism="exponential")) is ExponentialQuantile
    assert type(build_mechanism("quantile", 1.0, bounds=BOUNDS, quantile=0.9,
                                neighbours="substitution")) is ExponentialQuantile
    named = build_mechanism("median", 1.0, bounds=BOUNDS, mechanism="tail-choice")
    assert isinstance(named, TailChoiceQuantile)


# -- the choice's exact law ----------------------------------------------------------------


def test_choice_probability_is_eps0_dp_in_the_count():
    m = TailChoiceQuantile(Quantile(0.9, *BOUNDS, neighbours="add_remove"), 0.5)
    bound = m.diagnostic_epsilon + 1e-9  # the cdf in floating point
    probs = [m.switch_probability(n) for n in range(0, m.switch_below + 400)]
    for a, b in zip(probs, probs[1:], strict=False):
        assert abs(math.log(a) - math.log(b)) <= bound
        assert abs(math.log1p(-a) - math.log1p(-b)) <= bound
    assert probs[0] > 0.99 and probs[-1] < 1e-3


def test_release_path_draws_the_stated_choice():
    """Choice frequencies at two counts on either side of the switch within 5 binomial
    standard errors of the exact law (false failure < 2·10⁻⁶)."""
    m = mech(resolution=0.5)
    for n in (2, 3):
        x = [0.0] * n
        p = m.switch_probability(n)
        assert 0.2 < p < 0.8  # both branches drawn often
        src = simulation(5 + n)
        draws = [m.release(x, src).parameters["released"]["choice"] for _ in range(1500)]
        freq = float(np.mean([c == BRACKET for c in draws]))
        assert abs(freq - p) <= 5 * math.sqrt(p * (1 - p) / 1500)


# -- the exact privacy check ---------------------------------------------------------------


def _branch_loss(m, x, y, choice):
    """max over values of |ln P(c | x) p_c(value | x) − ln P(c | y) p_c(value | y)|, the
    bracket's value taken jointly with its scan index (post-processing can only lower
    the loss)."""
    px, py = m.switch_probability(len(x)), m.switch_probability(len(y))
    if choice == BOUNDED:
        px, py = 1 - px, 1 - py
    shift = math.log(px) - math.log(py)
    worst = 0.0
    if choice == BOUNDED:  # the grid's point masses (permute-and-flip, exact)
        la, lb = m.bounded.output_distribution(x), m.bounded.output_distribution(y)
        assert set(la) == set(lb)
        return max(abs(shift + math.log(la[v]) - math.log(lb[v])) for v in la)
    sa, sb = m.bracket.stage_laws(x, 16), m.bracket.stage_laws(y, 16)
    for (ja, pa, da), (jb, pb, db) in zip(sa, sb, strict=True):
        assert ja == jb
        if pa < 1e-12 and pb < 1e-12:
            continue
        base = shift + math.log(pa) - math.log(pb)
        if da is None:  # a scan tail: masses only
            worst = max(worst, abs(base))
            continue
        lo, hi = m.bracket.bracket_for(ja)
        kinks = np.array(sorted(set(da.kinks) | set(db.kinks)))
        probe = np.concatenate([np.linspace(lo, hi, 401)[1:-1], kinks - 1e-9, kinks + 1e-9])
        probe = probe[(probe > lo) & (probe < hi)]
        worst = max(worst, float(np.max(np.abs(base + da.logpdf(probe) - db.logpdf(probe)))))
    return worst


@pytest.mark.parametrize("relation", ["add_remove", "substitution"])
def test_whole_release_is_eps_dp_over_brute_force_pairs(relation):
    # the bounded branch on a declared grid, whose law is a table of masses (the
    # continuous branch is ExponentialQuantile's log-atoms release, checked exactly in
    # tests/test_atoms.py; this class only routes to it)
    m = mech(relation, resolution=0.5)
    measured = {c: max(_branch_loss(m, x, y, c) for x, y in pairs(relation))
                for c in (BOUNDED, BRACKET)}
    # the scan's law is by quadrature (error below 1e-4 in log probability)
    assert max(measured.values()) <= m.epsilon + 1e-3, measured
    # not loose: each branch's loss is of the order of its share
    assert measured[BOUNDED] >= 0.5 * m.release_epsilon, measured
    assert measured[BRACKET] >= 0.3 * m.release_epsilon, measured


def test_parts_never_add_above_epsilon():
    for eps in (0.1, 1 / 3, 0.7, 1.0, 2.0 / 3.0):
        m = TailChoiceQuantile(Quantile(0.9, 0.0, 1.0, neighbours="add_remove"), eps)
        assert m.diagnostic_epsilon + m.release_epsilon <= eps
        assert m.bounded.epsilon == m.bracket.epsilon == m.release_epsilon


# -- the release: projection, records, adversarial inputs -----------------------------------


def test_bracket_values_are_projected_onto_the_bounds_and_the_grid():
    m = TailChoiceQuantile(Quantile(0.99, 10.0, 20.0, neighbours="add_remove"), 1.0,
                           resolution=0.5)
    assert m.project(-1e300) == 10.0 and m.project(1e300) == 20.0
    assert m.project(12.26) == 12.5 and m.project(12.24) == 12.0
    x = np.random.default_rng(0).uniform(11, 19, 40)
    out = m.sample(x, 200, simulation(1))
    assert np.all((out >= 10.0) & (out <= 20.0))
    assert np.all(np.abs((out - 10.0) / 0.5 - np.rint((out - 10.0) / 0.5)) < 1e-9)
    rec = m.release(x, simulation(2)).parameters
    assert rec["released"] == {"choice": BRACKET}  # 40 rows, far below the switch count
    post = rec[BRACKET]["post_processing"]
    assert post["clamp_to"] == [10.0, 20.0] and post["round_to"]["resolution"] == 0.5


ADVERSARIAL = [(), (0.0,), (0.0, 3.0), (3.0, 3.0, 3.0), (5e-324,), (1e300, -1e300),
               (-2.0, -2.0), (0.0, 0.0, 0.0, 1.0)]


@pytest.mark.parametrize("relation", ["add_remove", "substitution"])
def test_records_differ_only_in_the_value_and_the_stated_choice(relation):
    m = mech(relation)
    keys = None
    for x in ADVERSARIAL:
        for seed in range(4):
            r = m.release(list(x), simulation(seed)).to_dict()
            assert math.isfinite(r["value"]) and BOUNDS[0] <= r["value"] <= BOUNDS[1]
            params = dict(r["parameters"])
            assert params.pop("released")["choice"] in (BOUNDED, BRACKET)
            public = {k: v for k, v in r.items() if k not in ("value", "parameters")}
            if keys is None:
                keys = (public, params)
            assert (public, params) == keys


def test_bad_parameters_name_themselves():
    q = Quantile(0.9, 0.0, 1.0, neighbours="add_remove")
    for kw, name in (({"share": 1.5}, "share"), ({"false_switch_rate": 0.0},
                                                  "false_switch_rate"), ({"level": -1}, "level")):
        with pytest.raises(ParameterError) as err:
            TailChoiceQuantile(q, 1.0, **kw)
        assert err.value.parameter == name
