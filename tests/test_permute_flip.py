"""Permute-and-flip on finite candidate sets (McKenna & Sheldon 2020).

The exact law against a brute-force enumeration of permutations; the exact
sampler (float shortcut and ball path) against the law by chi-square; the
exponential mechanism's draws FAIL that chi-square (the test can fail); the exact
privacy check over brute-force neighbour pairs under both relations; accuracy at
least the exponential mechanism's on the same candidates; the record names the
sampler; adversarial sizes and grids.
"""

from __future__ import annotations

import itertools
import math
import time

import numpy as np
import pytest
from flint import arb
from scipy import stats

from instancedp.audit.profile import check_mechanism, neighbour_pairs_from_brute
from instancedp.errors import ParameterError
from instancedp.mechanisms.quantile import (
    ExponentialQuantile,
    grid_quantile_from_counts,
    grid_quantile_probabilities,
    permute_and_flip_probabilities,
)
from instancedp.noise import exact
from instancedp.queries.order import Quantile
from instancedp.random import simulation

# chi-square tests below reject at level 1e-4 each: a false failure rate < 1e-3 overall
LEVEL = 1e-4


def brute_pf(u):
    """P&F by definition: every order equally likely; walk it, accept r w.p. exp(u_r − max u)."""
    p = np.exp(np.asarray(u, float) - max(u))
    out = np.zeros(p.size)
    perms = list(itertools.permutations(range(p.size)))
    for perm in perms:
        reach = 1.0
        for r in perm:
            out[r] += reach * p[r]
            reach *= 1.0 - p[r]
    return out / len(perms)


def quantile(q, lo, hi, relation):
    return Quantile(q, lo, hi, neighbours=relation)


def chi2_pvalue(counts, probs):
    counts, probs = np.asarray(counts, float), np.asarray(probs, float)
    expected = probs * counts.sum()
    keep = expected > 0
    assert counts[~keep].sum() == 0  # nothing outside the law's support
    return stats.chisquare(counts[keep], expected[keep]).pvalue


@pytest.mark.parametrize("u", [[0.0, -1.0, -1.0, 0.0, -2.0], [-3.0, 0.0, -0.5, -7.0], [0.0]])
def test_law_matches_brute_force_permutations(u):
    assert permute_and_flip_probabilities(u) == pytest.approx(brute_pf(u), abs=1e-12)


def test_law_is_opendp_report_noisy_max():
    # OpenDP 0.16 make_private_quantile, candidates 0..4, D = [.5, .5, 2.5, 2.5], q = .5,
    # eps = 1 (add/remove): 100,000 draws gave [.041 .438 .436 .043 .042] (s.e. <= .0016)
    p = permute_and_flip_probabilities(-np.array([2.0, 0.0, 0.0, 2.0, 2.0]))
    assert p == pytest.approx([0.041, 0.438, 0.436, 0.043, 0.042], abs=0.006)


def _blocks():
    """Three blocks, with thinning ratios inside the middle one."""
    log_rate = np.array([0.0, -0.3, -1.5])
    sizes = np.array([1, 3, 2])
    rho = {(1, 0): 1.0, (1, 1): 0.5, (1, 2): 0.8}

    def ratio(b, j):
        return arb(rho.get((b, j), 1.0))

    u = [0.0, -0.3, -0.3 + math.log(0.5), -0.3 + math.log(0.8), -1.5, -1.5]
    return log_rate, sizes, ratio, np.array(u)


@pytest.mark.parametrize("fast", [True, False])
@pytest.mark.parametrize("thinning", [False, True])
def test_sampler_matches_law(fast, thinning):
    log_rate, sizes, ratio, u = _blocks()
    if not thinning:
        ratio, u = None, np.repeat(log_rate, sizes)
    law = permute_and_flip_probabilities(u)
    flat = np.concatenate(([0], np.cumsum(sizes)))
    src = simulation(11)
    counts = np.zeros(u.size)
    old = exact._PF_FAST[0]
    exact._PF_FAST[0] = fast
    try:
        for _ in range(3000):
            b, j = exact.sample_permute_and_flip(
                log_rate, lambda b: arb(float(log_rate[b])), sizes, None, ratio, src
            )
            counts[flat[b] + j] += 1
    finally:
        exact._PF_FAST[0] = old
    assert chi2_pvalue(counts, law) > LEVEL


def _draw_counts(mech, x, size, seed):
    law = mech.output_probabilities(x)
    keys = sorted(law)
    draws = mech.sample(x, size, simulation(seed))
    return [np.sum(draws == k) for k in keys], [law[k] for k in keys]


@pytest.mark.parametrize(("base", "x", "upper"),
                         [("grid", [3] * 5, 6), ("log-grid", [3, 3, 3, 4, 10], 12)])
def test_mechanism_draws_match_its_law_and_the_exponential_mechanism_fails(base, x, upper):
    q = quantile(0.5, 0, upper, "add_remove")
    pf = ExponentialQuantile(q, 1.0, base=base, resolution=1)
    assert pf.sampler == "permute-and-flip"
    counts, law = _draw_counts(pf, x, 2000, 5)
    assert chi2_pvalue(counts, law) > LEVEL
    # the same test rejects the exponential mechanism's draws: on these tables the two
    # laws are far apart (noncentrality 2000·Σ(p_em − p_pf)²/p_pf > 150, so a false
    # pass has probability < 1e-6)
    em = ExponentialQuantile(q, 1.0, base=base, resolution=1, sampler="exponential")
    em_counts = np.histogram(em.sample(x, 2000, simulation(5)),
                             bins=np.arange(-0.5, upper + 1))[0]
    assert chi2_pvalue(em_counts, law) < LEVEL


def test_counts_entry_point_matches_the_mechanism_law():
    x = [0, 1, 1, 2, 4]
    cand = np.arange(6.0)
    counts = np.array([np.sum(np.asarray(x) == c) for c in cand])
    mech = ExponentialQuantile(quantile(0.5, 0, 5, "add_remove"), 0.8, base="grid", resolution=1)
    law = mech.output_probabilities(x)
    assert grid_quantile_probabilities(counts, 0.5, 0.8) == pytest.approx(
        [law[c] for c in cand], abs=1e-12
    )
    src = simulation(9)
    draws = np.array([grid_quantile_from_counts(cand, counts, 0.5, 0.8, rng=src)
                      for _ in range(3000)])
    assert chi2_pvalue([np.sum(draws == c) for c in cand], [law[c] for c in cand]) > LEVEL


DOMAIN = (0.0, 1.0, 3.0)


def _pairs(relation):
    out = []
    for n in (1, 2, 3):
        out += neighbour_pairs_from_brute(DOMAIN, n, relation)
    if relation == "add_remove":
        out += [((), (v,)) for v in DOMAIN]
    return out


@pytest.mark.parametrize("relation", ["add_remove", "substitution"])
@pytest.mark.parametrize("base", ["grid", "log-grid"])
@pytest.mark.parametrize("q", [0.5, 0.9])
def test_exactly_eps_dp_on_brute_force_neighbours(relation, base, q):
    eps = 0.9
    mech = ExponentialQuantile(
        quantile(q, -1.0, 4.0, relation), eps, base=base, resolution=1.0, log_scale=0.5
    )
    check = check_mechanism(mech, _pairs(relation), samples=0)  # draws: tests above
    assert check.passed, check
    assert check.measured >= 0.3 * eps  # not vacuous: these pairs spend a real share


@pytest.mark.parametrize("relation", ["add_remove", "substitution"])
def test_counts_law_is_eps_dp_on_brute_force_count_vectors(relation):
    # counts on 4 candidates, n <= 3: add/remove moves one count by one, substitution
    # moves one row between two candidates
    eps, q = 0.8, 0.25
    vecs = [np.array(c) for c in itertools.product(range(4), repeat=4) if sum(c) <= 3]
    worst = 0.0
    for c in vecs:
        p = grid_quantile_probabilities(c, q, eps, relation)
        for i in range(4):
            moves = [(i, None)] if relation == "add_remove" else [(i, j) for j in range(4)]
            for a, b in moves:
                d = c.copy()
                d[a] += 1
                if b is not None:
                    if d[b] == 0 or b == a:
                        continue
                    d[b] -= 1
                if d.sum() > 3 + (relation == "add_remove"):
                    continue
                pd = grid_quantile_probabilities(d, q, eps, relation)
                worst = max(worst, float(np.max(np.abs(np.log(p / pd)))))
    assert worst <= eps + 1e-9
    assert worst >= 0.3 * eps


@pytest.mark.parametrize("base", ["grid", "log-grid"])
def test_never_less_accurate_than_the_exponential_mechanism(base):
    # McKenna & Sheldon 2020, Thm. 2: E[utility] of P&F >= the exponential mechanism's
    rng = np.random.default_rng(0)
    for _ in range(6):
        x = rng.integers(0, 15, size=int(rng.integers(0, 8)))
        kw = dict(base=base, resolution=1, log_scale=1.0)
        q = quantile(0.5, 0, 15, "add_remove")
        pf = ExponentialQuantile(q, 1.0, **kw).output_probabilities(x)
        em = ExponentialQuantile(q, 1.0, sampler="exponential", **kw).output_probabilities(x)
        s = {t: abs(0.5 * np.sum(x < t) - 0.5 * np.sum(x > t)) for t in pf}
        if base == "grid":
            assert sum(pf[t] * s[t] for t in pf) <= sum(em[t] * s[t] for t in em) + 1e-12
        # the declared weights of log-grid are part of the utility: compare on it
        else:
            mech = ExponentialQuantile(q, 1.0, **kw)
            mu = dict(zip(sorted(pf), mech._log_cell_measure(np.arange(16)), strict=True))
            util = {t: -s[t] + mu[t] for t in pf}
            assert sum(pf[t] * util[t] for t in pf) >= sum(em[t] * util[t] for t in em) - 1e-12


def test_record_names_the_sampler_and_bad_values_are_refused():
    q = quantile(0.5, 0, 10, "add_remove")
    rec = ExponentialQuantile(q, 1.0, base="grid", resolution=1).release([1, 2], simulation(0))
    assert rec.parameters["sampler"] == "permute-and-flip"
    em = ExponentialQuantile(q, 1.0, base="log-grid", resolution=1, sampler="exponential")
    assert em.release([1, 2], simulation(0)).parameters["sampler"] == "exponential"
    assert "sampler" not in ExponentialQuantile(q, 1.0, base="log").parameters()
    with pytest.raises(ParameterError) as e:
        ExponentialQuantile(q, 1.0, base="log", sampler="permute-and-flip")
    assert e.value.parameter == "sampler"
    with pytest.raises(ParameterError) as e:
        ExponentialQuantile(q, 1.0, base="grid", resolution=1, sampler="gumbel")
    assert e.value.parameter == "sampler"
    with pytest.raises(ParameterError):
        grid_quantile_from_counts([0, 1], [1, 1], 0.5, 1.0, sampler="gumbel")


@pytest.mark.parametrize("relation", ["add_remove", "substitution"])
@pytest.mark.parametrize("base", ["grid", "log-grid"])
def test_adversarial_tables_release(relation, base):
    q = quantile(0.5, -5.0, 5.0, relation)
    mech = ExponentialQuantile(q, 1.0, base=base, resolution=0.5)
    for x in ([], [5.0], [-5.0, 5.0], [2.0] * 7, [1e-310, -1e-310], [1e300, -1e300]):
        v = mech.release(x, simulation(1)).value
        assert -5.0 <= v <= 5.0 and (v * 2).is_integer()


@pytest.mark.parametrize("base", ["grid", "log-grid"])
def test_huge_grid_stays_fast(base):
    # 2^40 grid points: the draw works on the blocks, not the points
    q = quantile(0.5, 0.0, 2.0**40, "add_remove")
    mech = ExponentialQuantile(q, 0.5, base=base, resolution=1.0)
    x = np.arange(0.0, 2.0**40, 2.0**33)
    t = time.process_time()
    v = mech.sample(x, 20, simulation(2))
    assert time.process_time() - t < 2.0
    assert np.all((v >= 0) & (v <= 2.0**40))
    # a grid point far from the data is reachable (the empty cells keep their mass)
    assert np.all(v == np.round(v))
