"""UnboundedQuantile: the exact privacy check over brute-force neighbour pairs
(both relations, one- and two-sided grids), moving the largest row changes only
the value's law, the record names the mechanism and its grid, no bound."""

from __future__ import annotations

import numpy as np
import pytest

from instancedp.audit.profile import check_mechanism, neighbour_pairs_from_brute
from instancedp.errors import ParameterError
from instancedp.mechanisms.unbounded import UnboundedQuantile
from instancedp.queries.order import Median
from instancedp.random import simulation

DOMAIN = (-2.0, 0.0, 3.0)


def pairs(relation, sizes=(1, 2, 3)):
    out = []
    for n in sizes:
        out += neighbour_pairs_from_brute(DOMAIN, n, relation)
    if relation == "add_remove":
        out += [((), (v,)) for v in DOMAIN]
    return out


@pytest.mark.parametrize("relation", ["add_remove", "substitution"])
@pytest.mark.parametrize("origin", [None, -2.0])
def test_exactly_eps_dp_over_brute_force_pairs(relation, origin):
    eps = 1.0
    mech = UnboundedQuantile(0.5, eps, neighbours=relation, origin=origin, beta=2.0, scale=1.0,
                             scan_fraction=1.0)  # the scan alone (Durfee 2023)
    # quadrature error of the law is below 1e-4 in log probability; the law is a dict of
    # grid masses truncated to the reachable part, so the release path's agreement with it
    # is checked by test_law_sums_to_one_and_matches_the_release_path, not by sampling here
    check = check_mechanism(mech, pairs(relation), tolerance=1e-3, samples=0)
    assert check.passed, check
    assert check.measured >= 0.2 * eps


def test_law_sums_to_one_and_matches_the_release_path():
    x = [0.5, 1.0, 2.0, 6.0, 7.0]
    mech = UnboundedQuantile(0.5, 2.0, origin=0.0, beta=1.5, scale=0.5, scan_fraction=1.0)
    law = mech.output_probabilities(x)
    assert sum(law.values()) == pytest.approx(1.0, abs=1e-6)
    draws = mech.sample(x, 3000, simulation(3))
    for v, p in law.items():
        if v == "tail":
            continue
        # 5-sigma band per outcome: false failure < 1e-4 over the outcomes
        assert abs(np.mean(draws == v) - p) < 5 * np.sqrt(p * (1 - p) / 3000) + 1e-9


def test_moving_the_largest_row_changes_only_the_value():
    x = np.array([3.0, 4.0, 5.0, 6.0, 7.0])
    y = x.copy()
    y[-1] = 1e300  # the largest row moved very far: no bound reads it
    mech = UnboundedQuantile(Median(0, 1), 1.0)  # bounds of the query are not used
    a = mech.release(x, simulation(1)).to_dict()
    b = mech.release(y, simulation(1)).to_dict()
    a.pop("value"), b.pop("value")
    assert a == b
    assert a["parameters"]["bounds"] is None
    assert a["parameters"]["grid"]["kind"] == "geometric"
    assert a["mechanism"] == "unbounded_quantile"
    # the median's law does not depend on how far the largest row went
    la = UnboundedQuantile(0.5, 1.0, beta=2.0, scan_fraction=1.0).output_probabilities(x)
    lb = UnboundedQuantile(0.5, 1.0, beta=2.0, scan_fraction=1.0).output_probabilities(y)
    common = [k for k in la if k in lb and k != "tail" and k != ("tail", "below")]
    assert any(la[k] > 0.01 for k in common)
    for k in common:
        if isinstance(k, float) and k <= 7.0:
            assert la[k] == pytest.approx(lb[k], rel=1e-6, abs=1e-12)


def test_accuracy_far_from_zero_without_bounds():
    rng = np.random.default_rng(0)
    x = rng.lognormal(10, 0.5, 1001)  # around 2·10^4, no bounds given
    mech = UnboundedQuantile(0.5, 1.0)
    v = mech.sample(x, 20, simulation(2))
    # relative error of the geometric grid (β = 1.001) plus rank noise
    assert np.median(np.abs(v / np.median(x) - 1)) < 0.05


def test_negative_and_empty_data_are_total():
    mech = UnboundedQuantile(0.5, 1.0)
    x = -np.random.default_rng(1).uniform(900, 1100, 301)
    v = mech.sample(x, 20, simulation(4))
    assert np.median(np.abs(v / np.median(x) - 1)) < 0.1
    assert np.isfinite(mech.release([], simulation(5)).value)


def test_bad_parameters_name_themselves():
    for kw, name in (
        ({"beta": 1.0}, "beta"),
        ({"scale": 0}, "scale"),
        ({"origin": np.inf}, "origin"),
    ):
        with pytest.raises(ParameterError) as e:
            UnboundedQuantile(0.5, 1.0, **kw)
        assert e.value.parameter == name
    with pytest.raises(ParameterError):
        UnboundedQuantile(0.5, 1.0, neighbours="edge")
