"""Several quantiles through the Session, the recipes and the CLI: one charge,
one record, a sorted vector, under both relations; mechanism names; public
defaults; adversarial neighbours in analyst mode.  (The mechanisms' laws and
privacy checks are in tests/test_mech_quantiles.py.)"""

from __future__ import annotations

import json

import numpy as np
import pytest
from cli_support import assert_bad, cli

from instancedp import Session
from instancedp.errors import ParameterError
from instancedp.mechanisms.joint_quantiles import JointQuantiles
from instancedp.mechanisms.recursive_quantiles import RecursiveQuantiles
from instancedp.mechanisms.unbounded_quantiles import UnboundedQuantiles
from instancedp.privacy import PureDP
from instancedp.random import simulation
from instancedp.recipes import (
    JOINT_MAX_LEVELS,
    build_mechanism,
    build_quantiles_mechanism,
    default_quantiles_mechanism,
)

X = np.random.default_rng(0).normal(5.0, 1.0, 300)
LEVELS = [0.25, 0.5, 0.75]
KEYS = {"joint": "joint_quantiles", "recursive": "recursive_quantiles",
        "independent": "independent_quantiles"}  # fmt: skip


@pytest.mark.parametrize("relation", ["add_remove", "substitution"])
@pytest.mark.parametrize("mechanism", [None, "joint", "recursive", "independent",
                                       "recursive_quantiles"])
def test_one_charge_one_sorted_record(relation, mechanism):
    s = Session(X, PureDP(10.0), neighbours=relation)
    r = s.release_statistic("quantiles", quantiles=LEVELS, epsilon=1.5, bounds=(0, 10),
                            mechanism=mechanism, rng=simulation(1))
    out = np.asarray(r.value)
    assert out.shape == (3,) and np.all(np.diff(out) >= 0) and np.all((out >= 0) & (out <= 10))
    name = (mechanism or "joint").removesuffix("_quantiles")
    assert r.mechanism == KEYS[name]
    assert r.parameters["neighbours"] == relation and r.parameters["qs"] == LEVELS
    assert r.guarantee == PureDP(1.5)
    hist = s.history()
    assert len(hist) == 1 and hist[0]["mechanism"] == KEYS[name]
    assert float(s.spent.epsilon) == pytest.approx(1.5)
    assert np.max(np.abs(out - np.quantile(X, LEVELS))) < 1.0  # seeded; n·ε = 450


@pytest.mark.parametrize("relation", ["add_remove", "substitution"])
def test_bound_free_default_and_record(relation):
    s = Session(X, PureDP(10.0), neighbours=relation)
    r = s.release_statistic("quantiles", quantiles=LEVELS, epsilon=3.0, rng=simulation(2))
    assert r.mechanism == "unbounded_quantiles" and r.parameters["bounds"] is None
    assert r.parameters["split"]["per_quantile"] == pytest.approx(1.0)
    assert r.parameters["neighbours"] == relation
    assert np.all(np.diff(r.value) >= 0) and len(s.history()) == 1


def test_default_uses_public_parameters_only():
    assert default_quantiles_mechanism(3, bounded=True) == "joint"
    assert default_quantiles_mechanism(JOINT_MAX_LEVELS, bounded=True) == "joint"
    assert default_quantiles_mechanism(JOINT_MAX_LEVELS + 1, bounded=True) == "recursive"
    assert default_quantiles_mechanism(3, bounded=False) == "unbounded"
    qs = np.linspace(0.01, 0.99, JOINT_MAX_LEVELS + 1)
    assert isinstance(build_quantiles_mechanism(qs, 1.0, bounds=(0, 1)), RecursiveQuantiles)
    assert isinstance(build_quantiles_mechanism([0.5], 1.0, bounds=(0, 1)), JointQuantiles)
    assert isinstance(build_quantiles_mechanism([0.5], 1.0), UnboundedQuantiles)
    # the same mechanism whatever the data (nothing but the request is read)
    assert isinstance(build_mechanism("quantiles", 1.0, quantiles=[0.1, 0.9], bounds=(0, 1)),
                      JointQuantiles)


@pytest.mark.parametrize(
    "kwargs, parameter",
    [
        ({}, "quantiles"),
        ({"quantiles": [0.5, 0.2]}, "quantiles"),
        ({"quantiles": [0.5, 1.5]}, "quantiles"),
        ({"quantiles": [0.5], "mechanism": "smooth"}, "mechanism"),
        ({"quantiles": [0.5], "mechanism": "joint"}, "bounds"),
        ({"quantiles": [0.5], "mechanism": "unbounded", "bounds": (0, 1)}, "bounds"),
        ({"quantiles": [0.0, 0.5]}, "quantiles"),  # bound-free: levels in (0, 1)
        ({"quantiles": [0.5], "bounds": (1, 0)}, "bounds"),
        ({"quantiles": [0.5], "quantile": 0.5}, "quantile"),
    ],
)
def test_bad_public_parameters_name_the_keyword_and_charge_nothing(kwargs, parameter):
    s = Session(X, PureDP(10.0))
    with pytest.raises(ParameterError) as exc:
        s.release_statistic("quantiles", epsilon=1.0, **kwargs)
    assert exc.value.parameter == parameter
    assert s.history() == []


def test_quantiles_option_on_other_statistics_and_delta_are_refused():
    with pytest.raises(ParameterError) as exc:
        build_mechanism("median", 1.0, quantiles=[0.5], bounds=(0, 1))
    assert exc.value.parameter == "quantiles"
    with pytest.raises(ParameterError) as exc:
        build_mechanism("quantiles", 1.0, 1e-6, quantiles=[0.5], bounds=(0, 1))
    assert exc.value.parameter == "delta"


# -- analyst mode: adversarial neighbours see the same record except the value ---------
PAIRS = [([], "10"), (["5"], "5"), (["0", "10"], "1e308"), (["3", "3"], "5e-324"),
         ([], "NA"), (["7"], "abc")]  # fmt: skip


def _record(tmp_path, rows, tag, **options):
    f = tmp_path / f"{tag}.csv"
    f.write_text("v\n" + "".join(f"{r}\n" for r in rows))
    led = tmp_path / f"{tag}.db"
    Session(None, PureDP(100.0), ledger=led).close()
    with Session(f, ledger=led, analyst=True) as s:
        r = s.release_statistic("quantiles", "v", quantiles=[0.1, 0.5, 0.9], epsilon=1.0,
                                rng=simulation(3), **options)
    d = r.to_dict()
    value = d.pop("value")
    assert len(value) == 3 and value == sorted(value)
    return d


@pytest.mark.parametrize("options", [{"bounds": (0, 10)}, {}, {"mechanism": "recursive",
                                                                 "bounds": (0, 10)}])
def test_neighbours_give_the_same_record_except_the_value(tmp_path, options):
    for i, (rows, added) in enumerate(PAIRS):
        a = _record(tmp_path, rows, f"a{i}", **options)
        b = _record(tmp_path, rows + [added], f"b{i}", **options)
        assert a == b, (rows, added, a, b)
        assert "n" not in a["parameters"]


# -- CLI ---------------------------------------------------------------------------------
def test_cli_space_and_comma_separated_levels(tmp_path):
    f = tmp_path / "x.csv"
    f.write_text("x\n" + "\n".join(str(v) for v in X) + "\n")
    for levels in (["0.25", "0.5", "0.75"], ["0.25,0.5,0.75"]):
        r = cli("release", f, "--owner", "--statistic", "quantiles", "--quantiles", *levels,
                "--epsilon", "1", "--bounds", "0", "10", "--seed", "1", "--json")
        assert r.returncode == 0, r.stderr
        rec = json.loads(r.stdout)
        assert rec["mechanism"] == "joint_quantiles" and rec["parameters"]["qs"] == LEVELS
        assert len(rec["value"]) == 3 and rec["value"] == sorted(rec["value"])
    r = cli("release", f, "--owner", "--statistic", "quantiles", "--quantiles", "0.1", "0.9",
            "--epsilon", "1", "--seed", "1")
    assert r.returncode == 0 and "unbounded_quantiles" in r.stdout
    assert "at levels 0.1, 0.9" in r.stdout


def test_cli_bad_levels_one_line(tmp_path):
    f = tmp_path / "x.csv"
    f.write_text("x\n1\n2\n")
    r = cli("release", f, "--owner", "--statistic", "quantiles", "--quantiles", "0.5", "0.2",
            "--epsilon", "1")
    assert_bad(r, "--quantiles", "increasing")
    r = cli("release", f, "--owner", "--statistic", "quantiles", "--epsilon", "1")
    assert_bad(r, "--quantiles")


# -- the mechanisms the recipes run: exact check (joint) and composition (bound-free) -----
@pytest.mark.parametrize("relation", ["add_remove", "substitution"])
def test_recipe_joint_passes_the_exact_check_over_brute_force_pairs(relation):
    """The default bounded mechanism as the Session builds it: every output cell's
    log-density ratio ≤ ε over all neighbour pairs on {0,1,2,3}^{≤2}, with the
    normaliser from independent enumeration (tests/test_mech_quantiles.py)."""
    import itertools

    from test_mech_quantiles import _neighbours, brute_paths, log_total

    eps, qs = 1.0, (0.3, 0.7)
    mech = build_quantiles_mechanism(qs, eps, bounds=(0.0, 4.0), neighbours=relation)
    assert isinstance(mech, JointQuantiles) and mech.query.neighbours == relation
    outputs = np.array(list(itertools.combinations_with_replacement([0.5, 1.5, 2.5, 3.5], 2)))
    domain = (0.0, 1.0, 2.0, 3.0)
    cache: dict = {}

    def law(d):  # exact log-density at the cell midpoints, enumerated normaliser
        key = tuple(sorted(d))
        if key not in cache:
            cache[key] = (mech.log_density(list(key), outputs)
                          + mech.output_distribution(list(key)).log_z
                          - float(log_total(brute_paths(list(key), qs, 0.0, 4.0, eps))))
        return cache[key]

    worst = 0.0
    for x in [()] + [d for k in (1, 2) for d in itertools.combinations_with_replacement(domain, k)]:
        for a, b in _neighbours(x, domain, relation):
            worst = max(worst, float(np.abs(law(a) - law(b)).max()))
    assert 0.4 * eps < worst <= eps + 1e-9


def test_unbounded_quantiles_compose_m_parts_at_epsilon_over_m(monkeypatch):
    import instancedp.mechanisms.unbounded_quantiles as uq

    seen = []
    real = uq.UnboundedQuantile

    def spy(q, eps, **kw):
        seen.append((q, eps, kw["neighbours"]))
        return real(q, eps, **kw)

    monkeypatch.setattr(uq, "UnboundedQuantile", spy)
    mech = UnboundedQuantiles([0.1, 0.5, 0.9], 1.5, neighbours="substitution")
    assert seen == [(0.1, 0.5, "substitution"), (0.5, 0.5, "substitution"),
                    (0.9, 0.5, "substitution")]
    assert mech.guarantee == PureDP(1.5)
    out = mech.release([], rng=simulation(0)).value  # size 0 is data
    assert len(out) == 3 and np.all(np.diff(out) >= 0)
