"""Session: charge before noise, refusal before charge, exact budget, nothing private leaks."""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pandas as pd
import pytest

from instancedp import Session
from instancedp.ledger import BudgetExceeded, CompositionError, Ledger, LedgerError
from instancedp.mechanisms.base import Mechanism
from instancedp.privacy import ZCDP, ApproxDP, PureDP
from instancedp.random import simulation


class FakeMean(Mechanism):
    """Tiny local mechanism: records what the ledger held when noise was drawn."""

    name = "fake_mean"

    def __init__(self, guarantee, ledger_path=None, fail=False):
        self._g = guarantee
        self.ledger_path = ledger_path
        self.fail = fail
        self.seen_counts = []
        self.seen_data = []

    @property
    def guarantee(self):
        return self._g

    def parameters(self):
        return {"bounds": [0, 1]}

    def release(self, data, rng=None):
        if self.ledger_path is not None:
            with Ledger(self.ledger_path, create=False) as led:
                self.seen_counts.append(led.count())
        self.seen_data.append(np.array(data))
        if self.fail:
            raise RuntimeError("boom")
        return self._record(float(np.mean(data)) + rng.uniform(), rng)


def test_charge_is_committed_before_the_release_runs(tmp_path):
    path = tmp_path / "l.db"
    s = Session([0.1, 0.2, 0.3], PureDP(1.0), ledger=path)
    mech = FakeMean(PureDP(0.25), ledger_path=path)
    for i in range(3):
        s.release(mech, rng=simulation(i))
    # Another connection already saw the charge when the mechanism ran.
    assert mech.seen_counts == [1, 2, 3]
    assert [h["status"] for h in s.history()] == ["released"] * 3


def test_thirty_two_at_0625_fit_two_and_the_33rd_is_refused():
    # 2⁻⁴ is exact in binary (a decimal like 0.05 is not: the ledger charges the float's
    # exact value, so forty of 0.05 exceed 2 — see docs/ledger.md).
    s = Session(np.arange(5.0), PureDP(2.0))
    mech = FakeMean(PureDP(0.0625))
    for i in range(32):
        s.release(mech, rng=simulation(i))
    with pytest.raises(BudgetExceeded) as err:
        s.release(mech, rng=simulation(99))
    assert "epsilon=0 remains" in str(err.value)
    assert len(mech.seen_data) == 32  # the refused release never reached the mechanism
    assert s.remaining.epsilon == Decimal(0)


def test_failed_release_keeps_its_charge(tmp_path):
    s = Session([1.0, 2.0], PureDP(1.0), ledger=tmp_path / "l.db")
    with pytest.raises(RuntimeError):
        s.release(FakeMean(PureDP(0.5), fail=True), rng=simulation(0))
    assert s.spent.epsilon == Decimal("0.5")
    assert s.history()[0]["status"] == "failed"


def test_bad_input_touches_nothing(tmp_path):
    path = tmp_path / "l.db"
    s = Session(pd.DataFrame({"x": [1.0, None, 3.0], "s": ["a", "b", "c"]}), PureDP(1.0), path)
    mech = FakeMean(PureDP(0.5))
    for column, match in [("x", "missing"), ("s", "not numeric"), ("nope", "unknown column")]:
        with pytest.raises(ValueError, match=match):
            s.release(mech, column)
    with pytest.raises(TypeError, match="simulation"):
        s.release(mech, "x", rng=np.random.default_rng(0))
    assert s.ledger.count() == 0 and mech.seen_data == []
    # Dropping missing values is the caller's explicit choice.
    s2 = Session(pd.DataFrame({"x": [1.0, None, 3.0]}), ledger=path, drop_missing=True)
    s2.release(mech, "x", rng=simulation(0))
    np.testing.assert_array_equal(mech.seen_data[0], [1.0, 3.0])


def test_composition_is_checked_before_charging():
    s = Session([1.0], PureDP(1.0))
    with pytest.raises(CompositionError, match="pure"):
        s.release(FakeMean(ApproxDP(0.1, 1e-6)), rng=simulation(0))
    with pytest.raises(CompositionError):
        s.release(FakeMean(ZCDP(0.01)), rng=simulation(0))
    assert s.ledger.count() == 0
    z = Session([1.0], ZCDP(0.01953125))
    z.release(FakeMean(PureDP(0.125)), rng=simulation(0))  # ρ = 0.125²/2 = 0.0078125
    z.release(FakeMean(ZCDP(0.01171875)), rng=simulation(0))
    assert z.remaining.rho == 0
    a = Session([1.0], ApproxDP(5.0, 1e-5))
    a.release(FakeMean(ZCDP(0.1)), rng=simulation(0), convert_delta=1e-6)
    # Exact values of the floats 1e-5 and 1e-6 (the ledger never rounds them).
    from fractions import Fraction

    assert Fraction(a.remaining.delta) == Fraction(1e-5) - Fraction(1e-6)


def test_release_carries_only_public_fields_and_secure_flag():
    s = Session([0.5, 0.6], PureDP(1.0))
    r = s.release(FakeMean(PureDP(0.1)), rng=simulation(3))
    assert r.secure is False
    assert set(r.to_dict()) == {
        "value",
        "refused",
        "guarantee",
        "mechanism",
        "parameters",
        "secure",
    }
    r2 = s.release(FakeMean(PureDP(0.1)))
    assert r2.secure is True


def test_budget_recorded_once_per_dataset_id(tmp_path):
    path = tmp_path / "l.db"
    Session([1.0], PureDP(1.0), ledger=path, dataset_id="a")
    with pytest.raises(LedgerError, match="already holds"):
        Session([1.0], PureDP(3.0), ledger=path, dataset_id="a")
    with pytest.raises(LedgerError, match="no budget"):
        Session([1.0], None, ledger=path, dataset_id="b")
    with pytest.raises(LedgerError, match="does not exist"):
        Session([1.0], None, ledger=tmp_path / "missing.db")
    assert not (tmp_path / "missing.db").exists()
    b = Session([1.0], ApproxDP(1.0, 1e-6), ledger=path, dataset_id="b")
    assert b.budget.kind == "approx"
    assert Session([1.0], ledger=path, dataset_id="a").budget.epsilon == Decimal("1.0")


def test_sql_and_columns_through_the_session(tmp_path):
    f = tmp_path / "t.csv"
    f.write_text("region,price\nEU,1\nUS,100\nEU,3\n")
    s = Session(f, PureDP(1.0))
    mech = FakeMean(PureDP(0.1))
    s.release(mech, sql="SELECT price FROM data WHERE region = 'EU'", rng=simulation(0))
    s.release(mech, "price", rng=simulation(0))
    np.testing.assert_array_equal(mech.seen_data[0], [1.0, 3.0])
    np.testing.assert_array_equal(mech.seen_data[1], [1.0, 100.0, 3.0])


def test_graph_input_is_validated_before_the_charge(tmp_path):
    import networkx as nx

    from instancedp.mechanisms import SmoothSensitivityMechanism
    from instancedp.queries import TriangleCount

    mech = SmoothSensitivityMechanism(TriangleCount(n_vertices=34), 1.0)
    s = Session(np.array([[0, 1], [1, 1]]), PureDP(2.0), ledger=tmp_path / "g.db")
    with pytest.raises(ValueError, match="self-loop"):
        s.release(mech, rng=simulation(0))
    assert s.ledger.count() == 0
    # networkx, scipy.sparse and edge-list files are all accepted (34 public vertices).
    g = nx.karate_club_graph()
    f = tmp_path / "k.edges"
    f.write_text("".join(f"{u} {v}\n" for u, v in g.edges()))
    for src in (g, nx.to_scipy_sparse_array(g, weight=None), f):
        r = Session(src, PureDP(1.0)).release(mech, rng=simulation(1))
        assert r.guarantee == PureDP(1.0) and np.isfinite(r.value)


def test_ratio_flags_checked_before_the_charge():
    from instancedp.mechanisms.ratio import PrivateRatio

    s = Session([0, 1, 2], PureDP(1.0))
    with pytest.raises(ValueError, match="0/1 flags"):
        s.release(PrivateRatio(0.5), rng=simulation(0))
    assert s.ledger.count() == 0
    r = Session([0, 1, 1, 1], PureDP(1.0)).release(PrivateRatio(0.5), rng=simulation(0))
    assert 0.0 <= r.value <= 1.0 and r.guarantee == PureDP(0.5)


def test_release_statistic_by_name(tmp_path):
    f = tmp_path / "t.csv"
    f.write_text("x\n" + "".join(f"{v}\n" for v in range(100)))
    s = Session(f, PureDP(1.0), neighbours="substitution")
    r = s.release_statistic("mean", "x", epsilon=0.5, bounds=(0, 100), rng=simulation(2))
    # n = 100 is public (substitution): GS = (100 − 0)/100 = 1, Laplace scale 1/0.5 = 2;
    # P(|error| > 30) = e^-15 (and the seed is fixed).
    # (plus the rounding slack ulp(100) of the exact mean)
    assert r.mechanism == "laplace"
    assert r.parameters["global_sensitivity"] == pytest.approx(1.0, abs=1e-13)
    assert abs(r.value - 49.5) < 30
    with pytest.raises(ValueError, match="needs public bounds"):  # medians need none
        s.release_statistic("mean", "x", epsilon=0.5)
    r = s.release_statistic("median", "x", epsilon=0.5, bounds=(0, 100), rng=simulation(2))
    assert r.guarantee == PureDP(0.5) and s.remaining.epsilon == 0


def test_default_median_mechanism_reads_the_relation_only():
    """Median/quantile default: the exponential mechanism under both relations, whatever
    ε and the public n (docs/results/accuracy_grid.md: smooth sensitivity no longer wins
    on ties once the log base has atoms); other statistics keep theirs."""
    from instancedp.session import build_mechanism, default_mechanism

    for eps, n in ((0.5, None), (2.0, None), (0.5, 10_000), (4.0, 10**6)):
        assert default_mechanism("median", eps, n, "substitution") == "exponential"
        assert default_mechanism("quantile", eps, n, "substitution") == "exponential"
        assert default_mechanism("median", eps) == "exponential"
    assert default_mechanism("trimmed-mean", 0.1, neighbours="substitution") == "smooth"
    big_n = build_mechanism("median", 2.0, bounds=(0, 10), n=5000, neighbours="substitution")
    assert big_n.name == "exponential_quantile" and big_n.guarantee.epsilon == 2.0
    named = build_mechanism("median", 2.0, bounds=(0, 10), n=5000, neighbours="substitution",
                            mechanism="smooth")
    assert named.name == "smooth_sensitivity"
    assert default_mechanism("mean") == "sum-count"
    with pytest.raises(ValueError, match="n .* public only under substitution"):
        build_mechanism("median", 0.5, bounds=(0, 10), n=5000)


def test_release_statistic_default_median_is_exponential_at_any_public_n(tmp_path):
    x = np.arange(3000, dtype=float) % 21  # tie-heavy, n = 3000: ties on integers (atoms)
    with Session(x, PureDP(2.0), ledger=tmp_path / "l.db", neighbours="substitution") as s:
        big = s.release_statistic("median", epsilon=1.0, bounds=(0, 20), rng=simulation(1))
        small = s.release_statistic("median", epsilon=0.5, bounds=(0, 20), rng=simulation(1))
    assert big.mechanism == small.mechanism == "exponential_quantile"
    assert big.parameters["base"] == "log-atoms"


def test_smooth_only_options_imply_the_smooth_mechanism():
    from instancedp.session import build_mechanism

    # the default is the exponential mechanism, but asking for a noise family or γ
    # means the smooth mechanism.
    assert build_mechanism("median", 0.5, bounds=(0, 10), noise="student_t").name == (
        "smooth_sensitivity"
    )
    assert build_mechanism("median", 0.5, bounds=(0, 10), gamma=0.1).name == "smooth_sensitivity"
    with pytest.raises(ValueError, match="noise applies to mechanism 'smooth' only"):
        build_mechanism("median", 0.5, bounds=(0, 10), noise="cauchy", mechanism="exponential")


def test_graph_releases_need_a_public_vertex_count(tmp_path):
    """Edge privacy: the vertex set is public.  An edge list does not carry it, so
    it must be given (never max id + 1 of the private edges); networkx graphs
    carry their own node set."""
    import networkx as nx

    from instancedp.session import VERTICES_REQUIRED

    tri = np.array([[0, 1], [1, 2], [0, 2]])
    led = tmp_path / "g.db"
    with Session(tri, PureDP(10.0), ledger=led) as s:
        before = s.remaining
        with pytest.raises(ValueError, match="number of vertices must be public"):
            s.release_statistic("triangles", epsilon=1.0)
        assert s.remaining == before  # nothing charged
        r = s.release_statistic("triangles", epsilon=1.0, vertices=10, rng=simulation(0))
        assert r.parameters["query_parameters"] == {"n_vertices": 10}
    with Session(nx.complete_graph(4), PureDP(100.0)) as s:
        r = s.release_statistic("triangles", epsilon=50.0, rng=simulation(0))
        assert abs(r.value - 4) < 1.0
    assert "vertices=N" in VERTICES_REQUIRED


def test_session_neighbours_must_match_the_query():
    from instancedp.errors import ParameterError
    from instancedp.session import build_mechanism

    mech = build_mechanism("count", 1.0)
    with pytest.raises(ParameterError, match="neighbours must be one of"):
        Session([1.0], PureDP(1), neighbours="swap")
    with pytest.raises(ParameterError, match="graph statistics use edge privacy"):
        Session([1.0], PureDP(1), neighbours="edge")
    s = Session([1.0, 2.0], PureDP(1), neighbours="substitution")
    with pytest.raises(ParameterError, match="calibrated for"):
        s.release(mech)
    assert s.spent.describe() == "epsilon=0"


@pytest.mark.parametrize("eps,count", [(0.1, 10), (0.001, 1000), (0.3, 3)])
def test_decimal_charges_fill_the_budget_and_never_undercharge(tmp_path, eps, count):
    """Releases calibrate at the double not above the decimal typed: the budget holds
    exactly as many as the decimals say, and each charge is the exact ε that ran."""
    from decimal import Decimal
    from fractions import Fraction

    from instancedp.errors import BudgetExceeded

    with Session([1.0, 2.0], PureDP(1.0) if eps != 0.3 else PureDP(0.9),
                 ledger=tmp_path / "l.db", dataset_id="d") as s:
        used = []
        for _ in range(count):
            used.append(s.release_statistic("count", epsilon=eps).guarantee.epsilon)
        with pytest.raises(BudgetExceeded):
            s.release_statistic("count", epsilon=eps)
        assert all(Decimal(u) <= Decimal(repr(eps)) for u in used)
        # charged exactly what ran (exact rational sums)
        assert sum(Fraction(u) for u in used) == Fraction(s.spent.epsilon)
