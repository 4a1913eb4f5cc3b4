"""Releases lie inside the statistic's public range (a projection: post-processing).

Every registry mechanism that serves a scalar statistic is sampled through its
release path on adversarial data (n = 0, 1, 2, values at the bounds, all equal)
and every draw must lie in the range the statistic's true value always takes:
[lower, upper] for means, trimmed means and order statistics, [0, ∞) for counts
and for a sum whose lower bound is ≥ 0.  The record states the range whatever
the draw; the exact law is the clamped one (atoms at the ends) and still passes
the exact privacy check; error bars are intersected with the same range.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from instancedp import PureDP, Session, registry
from instancedp.audit.conformance import check_sampling
from instancedp.audit.profile import max_privacy_loss, privacy_profile
from instancedp.mechanisms import LaplaceMechanism, SmoothSensitivityMechanism
from instancedp.mechanisms.base import OutputDistribution, public_range
from instancedp.noise.laplace import Laplace
from instancedp.queries import Count, Max, Mean, Median, Min, Sum
from instancedp.random import simulation
from instancedp.recipes import build_query

LO, HI = 0.0, 10.0
DATA = {
    "empty": [],
    "one_low": [LO],
    "one_high": [HI],
    "two_ends": [LO, HI],
    "two_low": [LO, LO],
    "outside": [-1e300, 1e300, 5e-324],
}
#: statistic → the range its value lies in with bounds [LO, HI] (stated here, by hand)
RANGE = {"median": (LO, HI), "quantile": (LO, HI), "mean": (LO, HI), "trimmed-mean": (LO, HI),
         "min": (LO, HI), "max": (LO, HI), "count": (0.0, math.inf), "sum": (0.0, math.inf)}
DELTA = 1e-6


def _mechanism(key: str, stat: str, rel: str, n: int | None):
    kw = {"bounds": (LO, HI)} if stat != "count" else {}
    if stat == "quantile":
        kw["quantile"] = 0.9
    if stat == "trimmed-mean":
        kw["trim"] = 0.1
    if rel == "substitution" and stat in ("mean", "trimmed-mean") and n:
        kw["n"] = n
    try:
        query = build_query(stat, neighbours=rel, **kw)
        entry = registry.get(key)
        return entry.make(query, 1.0, DELTA if entry.needs_delta else None)
    except (ValueError, TypeError):  # a relation or statistic this mechanism does not take
        return None


def _cases():
    for entry in registry.entries():
        for stat in entry.statistics:
            if stat not in RANGE:
                continue
            for rel in ("add_remove", "substitution"):
                if _mechanism(entry.key, stat, rel, 2) is not None:  # it serves stat under rel
                    yield pytest.param(entry.key, stat, rel, id=f"{entry.key}-{stat}-{rel}")


@pytest.mark.parametrize(("key", "stat", "rel"), list(_cases()))
def test_every_release_lies_in_the_public_range(key, stat, rel):
    lo, hi = RANGE[stat]
    if key in ("unbounded_quantile", "loglog_quantile"):  # no bounds: the real line
        lo, hi = -math.inf, math.inf
    records = set()
    sampled = 0
    for name, rows in DATA.items():
        mech = _mechanism(key, stat, rel, len(rows))
        if mech is None:
            continue
        try:
            draws = mech.sample(np.array(rows, dtype=float), 60, simulation(3))
        except ValueError:  # no answer on this input (the empty table under substitution)
            continue
        sampled += 1
        values = np.array([v for v in draws if v is not None], dtype=float)
        assert np.all((values >= lo) & (values <= hi)), (name, values.min(), values.max())
        if getattr(mech, "projects_to_range", False):
            ends = [v if math.isfinite(v) else None for v in (lo, hi)]
            assert mech.parameters()["post_processing"]["clamp_to"] == ends
            records.add(repr(mech.release(np.array(rows, dtype=float), simulation(4))
                             .parameters.get("post_processing")))
    assert sampled >= 4  # n = 1, 2 and the adversarial rows at least
    assert len(records) <= 1  # the statement never depends on the rows


def test_public_range_is_only_what_is_public():
    assert public_range(Mean(LO, HI)) == (LO, HI)
    assert public_range(Median(-3.0, 4.0, neighbours="substitution")) == (-3.0, 4.0)
    assert public_range(Count()) == (0.0, math.inf)
    assert public_range(Sum(0.5, 2.0)) == (0.0, math.inf)
    assert public_range(Sum(-2.0, -0.5)) == (-math.inf, 0.0)
    assert public_range(Sum(-1.0, 1.0)) is None  # either sign: nothing to project on
    assert public_range(object()) is None  # an unknown query is left alone


def test_the_clamped_law_has_atoms_at_the_ends():
    law = OutputDistribution.additive(1.0, 2.0, Laplace(1.0)).clamped(0.0, 10.0)
    assert law.atoms[0.0] == pytest.approx(0.5 * math.exp(-0.5), rel=1e-15)
    assert law.atoms[10.0] == pytest.approx(0.5 * math.exp(-4.5), rel=1e-12)
    inside = 1.0 - law.atoms[0.0] - law.atoms[10.0]
    assert float(law.cdf(np.array([10.0]))[0]) == pytest.approx(inside, rel=1e-14)
    assert float(law.pdf(np.array([-1.0]))[0]) == 0.0 and float(law.pdf(np.array([11.0]))[0]) == 0
    assert float(law.pdf(np.array([1.0]))[0]) == pytest.approx(0.25)
    # a far tail comes from the survival function, not 1 − cdf (no cancellation)
    far = OutputDistribution.additive(0.0, 1.0, Laplace(1.0)).clamped(-1.0, 50.0)
    assert far.atoms[50.0] == pytest.approx(0.5 * math.exp(-50.0), rel=1e-12)
    # a refusal stays a refusal; a point mass outside moves to the nearer end
    zero = lambda y: np.zeros_like(np.asarray(y, dtype=float))  # noqa: E731
    point = OutputDistribution(pdf=zero, cdf=zero, atoms={12.0: 0.5, None: 0.5})
    assert point.clamped(0.0, 10.0).atoms == {10.0: 0.5, None: 0.5}


def test_release_path_samples_the_clamped_law_at_a_bound():
    # n = 1 at the lower bound: about half the Laplace mass is below it, an atom at 0
    mech = LaplaceMechanism(Mean(LO, HI, neighbours="substitution", n=1), 1.0)
    check = check_sampling(mech, np.array([LO]), samples=2000, seed=5)
    assert check.passed, check
    assert mech.output_distribution(np.array([LO])).atoms[LO] == pytest.approx(0.5)


def test_the_clamped_laws_keep_the_guarantee():
    # neighbours under substitution, n = 1: [0] and [10] (the extreme pair)
    mech = LaplaceMechanism(Mean(LO, HI, neighbours="substitution", n=1), 1.0)
    a, b = (mech.output_distribution(np.array([v])) for v in (LO, HI))
    assert max_privacy_loss(a, b).epsilon <= 1.0 + 1e-9
    smooth = SmoothSensitivityMechanism(Min(LO, HI, neighbours="substitution"), 1.0,
                                        delta=DELTA)
    x, y = np.array([LO, 1.0]), np.array([HI, 1.0])
    prof = privacy_profile(smooth.output_distribution(x), smooth.output_distribution(y),
                           smooth.guarantee.epsilon)
    assert prof.delta <= DELTA * (1 + 1e-6) + prof.error_bound


def test_error_bars_are_intersected_with_the_range():
    with Session({"v": np.array([HI, HI])}, PureDP(10), neighbours="substitution") as s:
        for stat in ("max", "mean"):
            r = s.release_statistic(stat, "v", epsilon=0.5, bounds=(LO, HI), ci=0.9,
                                    rng=simulation(2), mechanism="laplace")
            assert LO <= r.ci.lower <= r.value <= r.ci.upper <= HI, r
            assert r.parameters["post_processing"]["clamp_to"] == [LO, HI]
    with Session({"v": np.array([1.0])}, PureDP(10)) as s:
        r = s.release_statistic("count", "v", epsilon=0.1, ci=0.9, rng=simulation(2))
        assert r.value >= 0.0 and r.ci.lower >= 0.0
        assert r.parameters["post_processing"]["clamp_to"] == [0.0, None]


def test_the_charge_states_the_range_too():
    with Session({"v": np.array([HI])}, PureDP(10), neighbours="substitution") as s:
        s.release(SmoothSensitivityMechanism(Max(LO, HI, neighbours="substitution"), 1.0,
                                             delta=DELTA), "v", rng=simulation(1))
        assert s.history()[-1]["parameters"]["post_processing"]["clamp_to"] == [LO, HI]
