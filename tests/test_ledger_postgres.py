"""The PostgreSQL ledger against a throwaway server: exact budgets, principals from
``session_user``, an analyst role that can charge but not rewrite, concurrency."""

from __future__ import annotations

import multiprocessing as mp
from decimal import Decimal

import pytest

from instancedp.ledger import BudgetExceeded, LedgerError
from instancedp.privacy import PureDP

psycopg = pytest.importorskip("psycopg")



@pytest.fixture(scope="module")
def pg(postgres_url):
    from instancedp.ledger_pg import PostgresLedger

    with PostgresLedger(postgres_url, init=True) as led:
        con = led._con
        for role in ("alice", "bob"):
            con.execute(f"DROP ROLE IF EXISTS {role}")
            con.execute(f"CREATE ROLE {role} LOGIN")
            con.execute(f"GRANT SELECT ON instancedp_head, instancedp_budgets TO {role}")
            con.execute(
                f"GRANT EXECUTE ON FUNCTION instancedp_charge(text, text, numeric, "
                f"numeric, numeric, numeric, text, text, text) TO {role}"
            )
        con.execute("ALTER TABLE instancedp_totals ENABLE ROW LEVEL SECURITY")
        con.execute(
            "CREATE POLICY own ON instancedp_totals FOR SELECT USING "
            "(principal IN ('', session_user))"
        )
        con.execute("GRANT SELECT ON instancedp_totals TO alice, bob")
        con.execute("ALTER TABLE instancedp_charges ENABLE ROW LEVEL SECURITY")
        con.execute(
            "CREATE POLICY own ON instancedp_charges FOR SELECT USING (principal = session_user)"
        )
        con.execute("GRANT SELECT ON instancedp_charges TO alice, bob")
        led.ensure_budget("d", PureDP(1.0))
        led.set_allowance("d", "alice", PureDP(0.25))
    return postgres_url


def _as(url, role):
    return url.replace("postgres@", f"{role}@")


def test_charges_exact_principal_and_allowance(pg):
    from instancedp.ledger_pg import PostgresLedger

    with PostgresLedger(_as(pg, "alice")) as led:
        for _ in range(5):
            led.charge("d", PureDP(0.05))
        with pytest.raises(BudgetExceeded, match="allowance"):
            led.charge("d", PureDP(0.05))
        assert led.spent("d", "alice").epsilon == Decimal("0.25")
        with pytest.raises(LedgerError, match="session user"):
            led.charge("d", PureDP(0.05), principal="bob")
        with pytest.raises(LedgerError, match="permission denied"):
            led._q("UPDATE instancedp_totals SET epsilon = 0")
        with pytest.raises(LedgerError, match="permission denied"):
            led._q("DELETE FROM instancedp_charges")
    with PostgresLedger(pg) as owner:
        assert owner.verify().ok
        assert owner.relation("d") == "add_remove"


def test_concurrent_processes_spend_the_budget_exactly(pg):
    from instancedp.ledger_pg import PostgresLedger

    with PostgresLedger(pg) as led:
        led.ensure_budget("c", PureDP(1.0))
    # reuse dataset "c" through the same function as bob
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    url = _as(pg, "bob")
    procs = [ctx.Process(target=_bob_c, args=(url, q)) for _ in range(4)]
    for p in procs:
        p.start()
    total = sum(q.get(timeout=60) for _ in procs)
    for p in procs:
        p.join(60)
    assert total == 16
    with PostgresLedger(pg) as led:
        assert led.spent("c").epsilon == Decimal("1") and led.verify().ok


def _bob_c(url, q):
    from instancedp.ledger_pg import PostgresLedger

    ok = 0
    with PostgresLedger(url) as led:
        for _ in range(10):
            try:
                led.charge("c", PureDP(0.0625))
                ok += 1
            except BudgetExceeded:
                pass
    q.put(ok)


def test_no_password_in_messages(postgres_url):
    from instancedp.ledger_pg import PostgresLedger

    bad = postgres_url.replace("postgres@", "nobody:hunter2@")
    with pytest.raises(LedgerError) as err:
        PostgresLedger(bad)
    assert "hunter2" not in str(err.value)


def test_session_and_cli_through_a_url(pg, capsys):
    from instancedp.cli import main
    from instancedp.ledger import Ledger
    from instancedp.ledger_pg import PostgresLedger

    url = _as(pg, "alice")
    led = Ledger(url)
    assert isinstance(led, PostgresLedger)
    assert led.ensure_budget("d", None).epsilon == Decimal("1")
    try:  # alice needs spend of her own to show (unless an earlier test used her allowance)
        led.charge("d", PureDP(0.01))
    except BudgetExceeded:
        pass
    led.close()
    try:
        main(["ledger", "show", pg])
    except SystemExit as e:
        assert not e.code
    out = capsys.readouterr().out
    assert "by alice" in out and "postgres@" not in out


def test_cli_init_and_labels_hide_the_password(postgres_url, capsys):
    from instancedp.cli import _ledger_label, main

    assert _ledger_label("postgresql://u:pw@h:5/db?sslmode=x") == "postgresql://u@h:5/db"
    try:
        main(["ledger", "init", postgres_url, "--epsilon", "2", "--dataset-id", "cli"])
    except SystemExit as e:
        assert not e.code
    out = capsys.readouterr().out
    assert "dataset 'cli' budget epsilon=2" in out


def test_session_releases_against_a_postgresql_url(pg):
    from instancedp.mechanisms import LaplaceMechanism
    from instancedp.queries.counts import Sum
    from instancedp.random import simulation
    from instancedp.session import Session

    url = _as(pg, "bob")
    with Session([1.0, 2.0], None, ledger=url, dataset_id="d") as s:
        before = s.spent.epsilon
        s.release(LaplaceMechanism(Sum(0, 10), 0.125), rng=simulation(0))
        assert s.spent.epsilon == before + Decimal("0.125")
        assert s.history()[-1]["principal"] == "bob"
        assert "hunter" not in repr(s) and "postgres@" not in repr(s)
