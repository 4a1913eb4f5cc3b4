"""The SQLite budget ledger: exact arithmetic, composition rules, persistence, errors."""

from __future__ import annotations

import sqlite3
from decimal import Decimal

import pytest

from instancedp.ledger import (
    BudgetExceeded,
    CompositionError,
    Ledger,
    LedgerError,
    charge_amount,
)
from instancedp.privacy import ZCDP, ApproxDP, PureDP, zcdp_to_epsilon


def test_forty_releases_of_005_fit_two_and_the_41st_is_refused(tmp_path):
    # Float sums would give 0.05*40 = 2.0000000000000004 > 2.0; exact decimals give 2.
    assert sum([0.05] * 40) > 2.0
    path = tmp_path / "l.db"
    with Ledger(path) as led:
        led.ensure_budget("d", PureDP(2.0))
        for _ in range(40):
            led.charge("d", PureDP(0.05))
        with pytest.raises(BudgetExceeded) as err:
            led.charge("d", PureDP(0.05))
        assert err.value.remaining.epsilon == Decimal(0)
        assert "remains" in str(err.value) and "epsilon=0" in str(err.value)
        assert led.count("d") == 40
        assert led.spent("d").epsilon == Decimal("2")


def test_refusal_names_what_remains_and_records_nothing(tmp_path):
    with Ledger(tmp_path / "l.db") as led:
        led.ensure_budget("d", ApproxDP(1.0, 1e-6))
        led.charge("d", ApproxDP(0.7, 4e-7))
        with pytest.raises(BudgetExceeded) as err:
            led.charge("d", PureDP(0.5))
        msg = str(err.value)
        assert "epsilon=0.3" in msg and "delta=0.0000006" in msg
        assert led.count("d") == 1
        # δ runs out independently of ε.
        with pytest.raises(BudgetExceeded):
            led.charge("d", ApproxDP(0.1, 7e-7))
        led.charge("d", ApproxDP(0.3, 6e-7))  # exactly fills both
        assert led.remaining("d").epsilon == 0 and led.remaining("d").delta == 0


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
    # Bun & Steinke 2016 Prop. 1.4: ε-DP ⇒ (ε²/2)-zCDP, exactly in decimals.
    assert charge_amount("zcdp", PureDP(0.1)).rho == Decimal("0.005")
    assert charge_amount("zcdp", PureDP(0.3)).rho == Decimal("0.045")
    assert charge_amount("zcdp", ZCDP(0.02)).rho == Decimal("0.02")
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
    assert a.delta == Decimal("1e-06")
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
