"""The SQLite budget ledger: exact arithmetic, composition rules, persistence, errors."""

from __future__ import annotations

import math
import sqlite3
from decimal import Decimal
from fractions import Fraction

import pytest

from instancedp.errors import ParameterError
from instancedp.ledger import (
    BudgetExceeded,
    CompositionError,
    Ledger,
    LedgerError,
    charge_amount,
)
from instancedp.privacy import ZCDP, ApproxDP, PureDP, zcdp_to_epsilon


def test_dyadic_charges_fill_the_budget_exactly_and_the_next_is_refused(tmp_path):
    # 2⁻⁴ is exact in binary: 32 of them are exactly 2 (no float drift, no excess).
    path = tmp_path / "l.db"
    with Ledger(path) as led:
        led.ensure_budget("d", PureDP(2.0))
        for _ in range(32):
            led.charge("d", PureDP(0.0625))
        with pytest.raises(BudgetExceeded) as err:
            led.charge("d", PureDP(0.0625))
        assert err.value.remaining.epsilon == Decimal(0)
        assert "remains" in str(err.value) and "epsilon=0 " in str(err.value)
        assert led.count("d") == 32
        assert led.spent("d").epsilon == Decimal("2")


def test_forty_releases_of_005_do_not_fit_two_the_float_is_above_005(tmp_path):
    # The float 0.05 is 0.05000000000000000277…: forty of the mechanism's ε add up to
    # more than 2 (by 1.1e-16), so the 40th is refused — rounding against the analyst.
    assert Fraction(0.05) > Fraction(1, 20)
    with Ledger(tmp_path / "l.db") as led:
        led.ensure_budget("d", PureDP(2.0))
        for _ in range(39):
            led.charge("d", PureDP(0.05))
        with pytest.raises(BudgetExceeded) as err:
            led.charge("d", PureDP(0.05))
        # The remaining room is printed rounded down, the cost rounded up.
        assert "needs epsilon=0.05 but only epsilon=0.04999999999999989 remains" in str(err.value)
        assert Fraction(led.spent("d").epsilon) == 39 * Fraction(0.05)


def test_refusal_names_what_remains_and_records_nothing(tmp_path):
    with Ledger(tmp_path / "l.db") as led:
        led.ensure_budget("d", ApproxDP(1.0, 1e-6))
        led.charge("d", ApproxDP(0.75, 2.0**-22))
        with pytest.raises(BudgetExceeded) as err:
            led.charge("d", PureDP(0.5))
        msg = str(err.value)
        # 1 − 0.75 = 0.25 exactly; δ: 1e-6 − 2⁻²² in exact arithmetic.
        assert "epsilon=0.25" in msg and "delta=0.00000076158142" in msg
        assert led.remaining("d").delta == Fraction(1e-6) - Fraction(2**-22)
        assert led.count("d") == 1
        # δ runs out independently of ε.
        with pytest.raises(BudgetExceeded):
            led.charge("d", ApproxDP(0.125, 1e-6))
        rest = float(led.remaining("d").delta)
        if Fraction(rest) > led.remaining("d").delta:  # the nearest float may lie above
            rest = math.nextafter(rest, 0.0)
        led.charge("d", ApproxDP(0.25, rest))  # fills ε exactly, δ to within an ulp
        assert led.remaining("d").epsilon == 0
        assert 0 <= led.remaining("d").delta <= Fraction(2.0**-1074) * 2**50


def test_budget_persists_across_connections_and_refuses_a_different_total(tmp_path):
    path = tmp_path / "l.db"
    with Ledger(path) as led:
        led.ensure_budget("d", PureDP(1.0))
        led.charge("d", PureDP(0.25), mechanism="m", parameters={"epsilon": 0.25})
    with Ledger(path, create=False) as led:
        assert led.ensure_budget("d", None).epsilon == Decimal("1.0")
        assert led.ensure_budget("d", PureDP(1.0)).epsilon == Decimal("1.0")
        with pytest.raises(LedgerError, match="already holds a total budget"):
            led.ensure_budget("d", PureDP(2.0))
        with pytest.raises(LedgerError, match="already holds"):
            led.ensure_budget("d", ApproxDP(1.0, 1e-5))
        assert led.remaining("d").epsilon == Decimal("0.75")
        hist = led.history("d")
        assert hist[0]["mechanism"] == "m" and hist[0]["parameters"] == {"epsilon": 0.25}
        # Datasets are independent budgets.
        led.ensure_budget("other", PureDP(0.5))
        assert led.remaining("other").epsilon == Decimal("0.5")
        assert [r["dataset_id"] for r in led.summary()] == ["d", "other"]


def test_wal_mode_and_integrity(tmp_path):
    path = tmp_path / "l.db"
    with Ledger(path) as led:
        led.ensure_budget("d", PureDP(1.0))
        assert led.integrity_check() == "ok"
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    con.close()


def test_pure_budget_composition_rules():
    assert charge_amount("pure", PureDP(0.5)).epsilon == Decimal("0.5")
    assert charge_amount("pure", ApproxDP(0.5, 0.0)).epsilon == Decimal("0.5")
    with pytest.raises(CompositionError, match="pure"):
        charge_amount("pure", ApproxDP(0.5, 1e-6))
    with pytest.raises(CompositionError, match="pure"):
        charge_amount("pure", ZCDP(0.1))


def test_zcdp_budget_converts_pure_to_half_epsilon_squared():
    # Bun & Steinke 2016 Prop. 1.4: ε-DP ⇒ (ε²/2)-zCDP, exactly (of the float ε).
    assert charge_amount("zcdp", PureDP(0.1)).rho == Fraction(0.1) ** 2 / 2
    assert charge_amount("zcdp", PureDP(0.1)).rho > Decimal("0.005")
    assert charge_amount("zcdp", PureDP(0.25)).rho == Decimal("0.03125")
    assert charge_amount("zcdp", ZCDP(0.02)).rho == Fraction(0.02)
    with pytest.raises(CompositionError, match="zCDP budget"):
        charge_amount("zcdp", ApproxDP(1.0, 1e-6))


def test_zcdp_budget_ledger_sums_rho(tmp_path):
    with Ledger(tmp_path / "l.db") as led:
        led.ensure_budget("d", ZCDP(0.5))
        for _ in range(10):
            led.charge("d", PureDP(0.3))  # 10 · 0.045 = 0.45
        led.charge("d", ZCDP(0.05))  # exactly 0.5
        with pytest.raises(BudgetExceeded, match="rho=0"):
            led.charge("d", ZCDP(1e-9))


def test_zcdp_release_in_approx_budget_needs_a_conversion_delta():
    with pytest.raises(CompositionError, match="convert_delta"):
        charge_amount("approx", ZCDP(0.1))
    a = charge_amount("approx", ZCDP(0.1), convert_delta=1e-6)
    # Never below the CKS 2020 conversion (independently the classic bound is above it).
    eps = zcdp_to_epsilon(0.1, 1e-6)
    assert float(a.epsilon) >= eps
    assert float(a.epsilon) <= eps * (1 + 1e-9)
    assert float(a.epsilon) <= 0.1 + 2 * (0.1 * 13.815510557964274) ** 0.5
    assert a.delta == Fraction(1e-6)
    with pytest.raises(ValueError, match="convert_delta"):
        charge_amount("approx", ZCDP(0.1), convert_delta=0)


def test_unreadable_ledgers(tmp_path):
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"this is not sqlite at all, just some text" * 100)
    with pytest.raises(LedgerError, match="not a readable instancedp ledger"):
        Ledger(bad)
    other = tmp_path / "other.db"
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE t (x)")
    con.commit()
    con.close()
    with pytest.raises(LedgerError, match="not an instancedp ledger"):
        Ledger(other)
    with pytest.raises(LedgerError, match="does not exist"):
        Ledger(tmp_path / "missing.db", create=False)
    assert not (tmp_path / "missing.db").exists()
    with pytest.raises(LedgerError, match="directory"):
        Ledger(tmp_path)
    with pytest.raises(LedgerError, match="no budget"):
        Ledger(tmp_path / "new.db").charge("d", PureDP(1.0))


def test_bad_dataset_id_and_budget_type(tmp_path):
    with Ledger(":memory:") as led:
        with pytest.raises(ValueError, match="dataset_id"):
            led.ensure_budget("", PureDP(1.0))
        with pytest.raises(TypeError, match="budget must be"):
            led.ensure_budget("d", 1.0)


_ADVERSARIAL = [0.1, 1 / 3, 0.3, 5e-324, 2.5e-323, 2.2250738585072014e-308, 1e-300, 0.7, 1e300]


@pytest.mark.parametrize("x", _ADVERSARIAL)
def test_a_charge_is_never_below_the_float_the_mechanism_used(tmp_path, x):
    # Attacker: rounding. The shortest repr of 0.1 is below the float 0.1 by 5.6e-18;
    # a ledger that stores it lets many releases pass a budget they exceed.
    fx = Fraction(x)
    assert charge_amount("pure", PureDP(x)).epsilon == fx
    assert charge_amount("approx", ApproxDP(x, min(x, 0.5))).delta == Fraction(min(x, 0.5))
    assert charge_amount("zcdp", PureDP(x)).rho == fx * fx / 2
    assert charge_amount("zcdp", ZCDP(x)).rho == fx
    budget = float(3 * fx) if 3 * fx < 1e308 else x  # the float nearest to 3x
    with Ledger(tmp_path / "l.db") as led:
        led.ensure_budget("d", PureDP(budget))
        fits = 0
        while True:
            try:
                led.charge("d", PureDP(x))
            except BudgetExceeded:
                break
            fits += 1
        # Exactly as many as fit in exact rational arithmetic, no more and no fewer.
        assert fits == math.floor(Fraction(budget) / fx)
        assert led.spent("d").epsilon == fits * fx
    with Ledger(tmp_path / "l.db", create=False) as led:  # the stored text is exact too
        assert led.spent("d").epsilon == fits * fx
        assert Fraction(Decimal(led.summary()[0]["spent"]["exact"]["epsilon"])) == fits * fx


def test_gaussian_and_converted_charges_round_up():
    from instancedp.privacy import GaussianDP, gdp_to_epsilon

    for mu in (0.1, 1 / 3, 1e-300):
        assert charge_amount("gdp", GaussianDP(mu)).mu2 == Fraction(mu) ** 2
        assert charge_amount("zcdp", GaussianDP(mu)).rho == Fraction(mu) ** 2 / 2
        a = charge_amount("approx", GaussianDP(mu), convert_delta=1e-6)
        assert a.epsilon >= Fraction(gdp_to_epsilon(mu, 1e-6))
    # Pure ε in a μ budget: μ = −2Φ⁻¹(1/(1+e^ε)), computed in floats, then moved up.
    from instancedp.privacy import pure_to_gdp_mu

    m = charge_amount("gdp", PureDP(0.5)).mu2
    assert m > Fraction(pure_to_gdp_mu(0.5)) ** 2


def test_non_finite_parameters_are_refused():
    with pytest.raises((ValueError, ParameterError)):
        charge_amount("pure", PureDP(float("inf")))


def test_durability_option(tmp_path):
    # "full" (default) syncs every commit; "process" only at checkpoints (docs/ledger.md).
    with Ledger(tmp_path / "a.db") as led:
        assert led.durability == "full"
        assert led._con.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    with Ledger(tmp_path / "a.db", durability="process") as led:
        assert led._con.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
        led.ensure_budget("d", PureDP(1.0))
        led.charge("d", PureDP(0.5))
    with Ledger(tmp_path / "a.db", create=False) as led:
        assert led.spent("d").epsilon == Decimal("0.5") and led.verify().ok
    with pytest.raises(ParameterError, match="durability must be one of full, process"):
        Ledger(tmp_path / "b.db", durability="fast")
    assert not (tmp_path / "b.db").exists()
