"""Fault injection on the SQLite ledger: each test names its attacker.

- accidental damage: a cut tail (every cut length in the header page and the
  last two pages, seeded samples elsewhere), an empty file, a foreign file, a
  schema version changed, SQLite errors (full disk, read-only, locked);
- an analyst who can write the file but lacks the owner's key (keyed mode);
- an older copy of the whole file is *not* caught here (docs/ledger.md says how
  to anchor the head elsewhere).
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing as mp
import os
import sqlite3
import threading
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest

from instancedp.ledger import BudgetExceeded, Ledger, LedgerError
from instancedp.privacy import ApproxDP, GaussianDP, PureDP


def _ledger(path, n=9, eps=0.1, **kw):
    with Ledger(path, **kw) as led:
        led.ensure_budget("d", PureDP(1.0))
        for _ in range(n):
            led.charge("d", PureDP(eps), mechanism="m", parameters={"epsilon": eps})
    return path.read_bytes()


def _refused(path, match=None):
    before = path.read_bytes() if path.exists() else None
    with pytest.raises(LedgerError, match=match):
        Ledger(path, create=False)
    # Never modified, never a -wal switch.
    assert (path.read_bytes() if path.exists() else None) == before


def test_every_cut_tail_is_refused_never_treated_as_new(tmp_path):
    src = tmp_path / "src.db"
    data = _ledger(src)
    page = int.from_bytes(data[16:18], "big")
    size = len(data)
    assert size % page == 0 and size >= 3 * page
    rng = np.random.default_rng(19)
    keeps = set(range(0, page + 1)) | set(range(size - 2 * page, size))
    keeps |= {int(k) for k in rng.integers(page, size - 2 * page, 64)}
    cut = tmp_path / "cut.db"
    cut.write_bytes(data)
    old = os.stat(src).st_mtime - 60  # an old file: no re-reads for a write in progress
    for keep in sorted(keeps, reverse=True):  # truncate one copy step by step
        os.truncate(cut, keep)
        os.utime(cut, (old, old))
        with pytest.raises(LedgerError):
            Ledger(cut, create=False)
        if keep % 97 == 0:  # not even when creation is allowed
            with pytest.raises(LedgerError):
                Ledger(cut)
        assert os.path.getsize(cut) == keep and os.stat(cut).st_mtime == old
        assert not os.path.exists(str(cut) + "-wal")
    assert len(keeps) > 3 * page


def test_a_large_ledger_cut_by_one_page_is_refused(tmp_path):
    src = tmp_path / "big.db"
    with Ledger(src) as led:
        led.ensure_budget("d", PureDP(1.0))
        for _ in range(150):
            led.charge("d", PureDP(1e-3), parameters={"note": "x" * 3000})
    data = src.read_bytes()
    assert len(data) > 100 * 4096
    page = int.from_bytes(data[16:18], "big")
    for k in (1, page - 1, page, 2 * page + 7):
        src.write_bytes(data[:-k])
        _refused(src, "truncated")


def test_empty_and_foreign_files_are_refused_untouched(tmp_path):
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    _refused(empty, "empty file")
    with pytest.raises(LedgerError, match="empty file"):
        Ledger(empty)  # create=True does not make an existing empty file a ledger
    assert empty.read_bytes() == b""
    other = tmp_path / "other.db"
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE t (x)")
    con.execute("INSERT INTO t VALUES (1)")
    con.commit()
    con.close()
    _refused(other, "not an instancedp ledger")
    con = sqlite3.connect(other)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "delete"  # no WAL switch
    con.close()
    text = tmp_path / "text.db"
    text.write_bytes(b"not a database" * 500)
    _refused(text, "not a readable instancedp ledger")


def _sql(path, *stmts):
    con = sqlite3.connect(path)
    for s in stmts:
        con.execute(s)
    con.commit()
    con.close()


def test_schema_version_changes_are_refused(tmp_path):
    p = tmp_path / "l.db"
    data = _ledger(p)
    _sql(p, "PRAGMA user_version=3")
    _refused(p, "schema version 3, newer than version 2")
    p.write_bytes(data)
    _sql(p, "PRAGMA user_version=1")
    _refused(p, "damaged: schema version 1")
    p.write_bytes(data)
    _sql(p, "UPDATE meta SET value='3' WHERE key='schema'")
    _refused(p, "integrity check")


def test_deleted_or_edited_rows_that_lower_the_spend_are_refused_on_open(tmp_path):
    p = tmp_path / "l.db"
    data = _ledger(p)
    for stmt in (
        "DELETE FROM charges WHERE id = (SELECT max(id) FROM charges)",
        "DELETE FROM charges",
        "UPDATE totals SET epsilon='0.1'",
        "DELETE FROM totals",
        "UPDATE totals SET last_id = 8, epsilon = '0.8' WHERE principal = ''",
        "UPDATE budgets SET epsilon='5'",
        "UPDATE charges SET epsilon='0' WHERE id = 9",
        "UPDATE head SET n = 8",
        "DELETE FROM head",
    ):
        p.write_bytes(data)
        for sfx in ("-wal", "-shm"):
            if os.path.exists(str(p) + sfx):
                os.unlink(str(p) + sfx)
        _sql(p, stmt)
        _refused(p, "integrity check")


def test_verify_walks_the_chain(tmp_path):
    p = tmp_path / "l.db"
    data = _ledger(p)
    with Ledger(p, create=False) as led:
        r = led.verify()
        assert r.ok and r.charges == 9 and r.mode == "sha256"
    for stmt, words in (
        ("DELETE FROM charges WHERE id = 4", "missing"),
        ("UPDATE charges SET mechanism='x' WHERE id = 2", "edited"),
        ("UPDATE charges SET epsilon='0.01' WHERE id = 3", "edited"),
    ):
        p.write_bytes(data)
        _sql(p, stmt)
        with Ledger(p, create=False) as led:  # the spend is intact, so it opens
            assert led.spent("d").epsilon == 9 * Fraction(0.1)
            r = led.verify()
        assert not r.ok and any(words in x for x in r.problems), r.problems


def _rewrite_without_key(p):
    """The analyst's forgery: lower the spend and recompute every hash with SHA-256."""
    con = sqlite3.connect(p)
    con.execute("DELETE FROM charges WHERE id > 1")
    row = con.execute("SELECT * FROM charges WHERE id = 1").fetchone()
    tot = json.dumps(
        {"dataset": [row[5], "0", "0", "0"], "principal": [row[5], "0", "0", "0"]}, sort_keys=True
    )
    fields = [*row[:12], tot, row[13]]
    h = hashlib.sha256(json.dumps(["charge", *fields], separators=(",", ":")).encode()).hexdigest()
    con.execute("UPDATE charges SET totals=?, hash=? WHERE id=1", (tot, h))
    con.execute("UPDATE totals SET epsilon=?, n=1, last_id=1", (row[5],))
    mac = hashlib.sha256(json.dumps(["head", 2, 1, h], separators=(",", ":")).encode()).hexdigest()
    con.execute("UPDATE head SET n=1, last_hash=?, mac=?", (h, mac))
    con.commit()
    con.close()


def test_keyed_chain_stops_a_forger_without_the_key(tmp_path, monkeypatch):
    plain = tmp_path / "plain.db"
    _ledger(plain)
    _rewrite_without_key(plain)
    with Ledger(plain, create=False) as led:  # unkeyed: a consistent rewrite passes
        assert led.spent("d").epsilon == Decimal(0.1) and led.verify().ok
    keyed = tmp_path / "keyed.db"
    monkeypatch.setenv("INSTANCEDP_LEDGER_KEY", "owner secret")
    _ledger(keyed)
    with Ledger(keyed, create=False) as led:
        assert led.verify().ok and led.verify().mode == "hmac-sha256"
    _rewrite_without_key(keyed)
    _refused(keyed, "integrity check")
    monkeypatch.delenv("INSTANCEDP_LEDGER_KEY")
    _refused(keyed, "is keyed")  # and without the key nobody can use it
    monkeypatch.setenv("INSTANCEDP_LEDGER_KEY", "owner secret")
    _refused(plain, "made without a key")  # a keyed deployment refuses unkeyed files


def test_key_file_must_be_private(tmp_path):
    kf = tmp_path / "key"
    kf.write_text("k")
    kf.chmod(0o644)
    with pytest.raises(LedgerError, match="chmod 600"):
        Ledger(tmp_path / "l.db", key_file=kf)
    kf.chmod(0o600)
    with Ledger(tmp_path / "l.db", key_file=kf) as led:
        assert led.mode == "hmac-sha256"


def test_files_are_private_to_their_owner(tmp_path):
    p = tmp_path / "l.db"
    _ledger(p)
    assert os.stat(p).st_mode & 0o777 == 0o600


def _v1(path):
    """A ledger in the version-1 layout (schema of the first release)."""
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
    con.execute(
        "CREATE TABLE budgets (dataset_id TEXT PRIMARY KEY, kind TEXT NOT NULL, "
        "epsilon TEXT NOT NULL, delta TEXT NOT NULL, rho TEXT NOT NULL, "
        "created_at TEXT NOT NULL)"
    )
    con.execute(
        "CREATE TABLE charges (id INTEGER PRIMARY KEY AUTOINCREMENT, dataset_id TEXT "
        "NOT NULL, created_at TEXT NOT NULL, kind TEXT NOT NULL, epsilon TEXT NOT NULL, "
        "delta TEXT NOT NULL, rho TEXT NOT NULL, guarantee TEXT NOT NULL, mechanism TEXT "
        "NOT NULL, parameters TEXT NOT NULL, status TEXT NOT NULL DEFAULT 'charged')"
    )
    con.execute("INSERT INTO meta VALUES ('app', 'instancedp-ledger'), ('schema', '1')")
    con.execute("INSERT INTO budgets VALUES ('d', 'approx', '1.0', '1E-6', '0', 't0')")
    g = json.dumps({"type": "approx", "epsilon": 0.3, "delta": 1e-7})
    for i in range(3):
        con.execute(
            "INSERT INTO charges (dataset_id, created_at, kind, epsilon, delta, rho, "
            "guarantee, mechanism, parameters, status) VALUES ('d', ?, 'approx', '0.3', "
            "'1E-7', '0', ?, 'm', '{}', 'released')",
            (f"t{i}", g),
        )
    con.close()


def test_version_1_is_migrated_once_with_a_backup(tmp_path):
    p = tmp_path / "old.db"
    _v1(p)
    with Ledger(p, create=False) as led:
        assert led.spent("d").epsilon == Decimal("0.9")
        assert led.spent("d").delta == Decimal("3E-7")
        assert led.relation("d") == "substitution"
        assert led.count("d") == 3 and led.verify().ok
        assert [h["status"] for h in led.history("d")] == ["released"] * 3
        with pytest.raises(BudgetExceeded):
            led.charge("d", ApproxDP(0.2, 0.0))
    backups = list(tmp_path.glob("old.db.v1-backup-*"))
    assert len(backups) == 1
    con = sqlite3.connect(backups[0])
    assert con.execute("SELECT count(*) FROM charges").fetchone()[0] == 3
    con.close()
    with Ledger(p, create=False) as led:  # a second open does not migrate again
        assert led.count("d") == 3
    assert len(list(tmp_path.glob("old.db.v1-backup-*"))) == 1


def test_sqlite_failures_become_ledger_errors_in_words(tmp_path):
    p = tmp_path / "l.db"
    with Ledger(p) as led:
        led.ensure_budget("d", PureDP(1e6))
        led._con.execute(
            "PRAGMA max_page_count = " + str(led._con.execute("PRAGMA page_count").fetchone()[0])
        )
        with pytest.raises(LedgerError, match="disk is full") as err:
            for _ in range(10_000):
                led.charge("d", PureDP(1.0), parameters={"pad": "x" * 2000})
        assert "nothing was charged" in str(err.value)
        n = led.count("d")
        led._con.execute("PRAGMA max_page_count = 1000000")
        led._con.execute("PRAGMA query_only = 1")
        with pytest.raises(LedgerError, match="read-only"):
            led.charge("d", PureDP(1.0))
        assert led.count("d") == n
    blocker = sqlite3.connect(p, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        with Ledger(p, create=False, timeout=0.05) as led:
            with pytest.raises(LedgerError, match="locked by another process"):
                led.charge("d", PureDP(1.0))
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    with Ledger(p, create=False) as led:
        assert led.verify().ok


def test_relation_is_recorded_once(tmp_path):
    with Ledger(tmp_path / "l.db") as led:
        led.ensure_budget("a", PureDP(1.0))
        assert led.relation("a") == "add_remove"
        led.ensure_budget("b", PureDP(1.0), relation="edge")
        assert led.relation("b") == "edge"
        led.ensure_budget("b", None, relation="edge")
        with pytest.raises(LedgerError, match="'edge' neighbour relation, not 'substitution'"):
            led.ensure_budget("b", PureDP(1.0), relation="substitution")
        with pytest.raises(ValueError, match="relation must be one of"):
            led.ensure_budget("c", PureDP(1.0), relation="rows")


def test_principals_and_allowances(tmp_path):
    with Ledger(tmp_path / "l.db", principal="alice") as led:
        led.ensure_budget("d", PureDP(1.0))
        led.set_allowance("d", "alice", PureDP(0.25))
        for _ in range(4):
            led.charge("d", PureDP(0.0625))
        with pytest.raises(BudgetExceeded, match="allowance exhausted for principal 'alice'"):
            led.charge("d", PureDP(0.0625))
        led.charge("d", PureDP(0.5), principal="bob")  # no allowance: the dataset total rules
        by = {r["principal"]: r for r in led.principals("d")}
        assert by["alice"]["spent"]["exact"]["epsilon"] == "0.25"
        assert by["alice"]["allowance"]["exact"]["epsilon"] == "0.25"
        assert by["bob"]["spent"]["exact"]["epsilon"] == "0.5" and by["bob"]["releases"] == 1
        assert led.spent("d").epsilon == Decimal("0.75")
        assert led.history("d")[-1]["principal"] == "bob"
        assert led.verify().ok


def test_one_ledger_shared_by_threads(tmp_path):
    led = Ledger(tmp_path / "l.db")
    led.ensure_budget("d", PureDP(1.0))
    ok = []

    def work():
        for _ in range(10):
            try:
                led.charge("d", PureDP(0.015625))  # 2⁻⁶: exactly 64 fit
                ok.append(1)
            except BudgetExceeded:
                pass

    ts = [threading.Thread(target=work) for _ in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert len(ok) == 64 and led.count("d") == 64 and led.verify().ok
    led.close()


def _create(path, q):
    try:
        with Ledger(path) as led:
            led.ensure_budget("d", PureDP(1.0))
        q.put("ok")
    except Exception as exc:  # reported to the parent
        q.put(repr(exc))


def test_32_concurrent_creators_never_fail(tmp_path):
    path = str(tmp_path / "new.db")
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    procs = [ctx.Process(target=_create, args=(path, q)) for _ in range(32)]
    for p in procs:
        p.start()
    results = [q.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(60)
    assert results == ["ok"] * 32
    assert [f for f in os.listdir(tmp_path) if f.endswith(".new")] == []
    with Ledger(path, create=False) as led:
        assert led.verify().ok and led.datasets() == ["d"]


def test_gaussian_budget_sums_mu_squared_and_matches_the_pld(tmp_path):
    from instancedp.privacy import compose_parts, gdp_to_epsilon

    mu = 0.125  # exact in binary: 100 · μ² = 1.5625 = 1.25² exactly
    with Ledger(tmp_path / "l.db") as led:
        led.ensure_budget("d", GaussianDP(1.25))
        for _ in range(100):
            led.charge("d", GaussianDP(mu))
        assert led.spent("d").mu2 == Decimal("1.5625")
        with pytest.raises(BudgetExceeded):
            led.charge("d", GaussianDP(1e-3))
        total = led.spent("d").to_guarantee()
    eps = gdp_to_epsilon(total.mu, 1e-6)
    pld = compose_parts([GaussianDP(mu)] * 100, 1e-6).epsilon
    # dp-accounting's discretised PLD is an upper bound on the exact composition.
    assert eps <= pld <= eps * (1 + 1e-3)


def test_session_records_principal_and_relation(tmp_path):
    from instancedp.mechanisms import LaplaceMechanism
    from instancedp.queries.counts import Sum
    from instancedp.random import simulation
    from instancedp.session import Session

    path = tmp_path / "l.db"
    with Session(
        [1.0, 2.0], PureDP(1.0), ledger=path, principal="carol", neighbours="substitution"
    ) as s:
        s.release(LaplaceMechanism(Sum(0, 10, neighbours="substitution"), 0.25), rng=simulation(0))
        assert s.ledger.relation("default") == "substitution"
        assert s.history()[0]["principal"] == "carol"
    with pytest.raises(LedgerError, match="neighbour relation"):
        Session([1.0], None, ledger=path, neighbours="add_remove")


def _main(argv):
    from instancedp.cli import main

    try:
        main(argv)
    except SystemExit as e:
        return e.code or 0
    return 0


def test_cli_verify_and_damaged_ledger_exit_2(tmp_path, capsys):
    p = tmp_path / "l.db"
    data = _ledger(p)
    assert _main(["ledger", "verify", str(p)]) == 0
    assert "ok (9 charges" in capsys.readouterr().out
    assert _main(["ledger", "show", str(p)]) == 0
    out = capsys.readouterr().out
    assert "(pure budget, add_remove neighbours)" in out and "(9 releases)" in out
    _sql(p, "DELETE FROM charges WHERE id = 5")
    assert _main(["ledger", "verify", str(p)]) == 2
    assert "charges #5..#5 are missing" in capsys.readouterr().err
    p.write_bytes(data[:-1])
    for argv in (["ledger", "show", str(p)], ["ledger", "verify", str(p)]):
        assert _main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and "truncated" in err


def test_every_ledger_failure_is_one_line_and_exit_2_through_the_cli(tmp_path, capsys, monkeypatch):
    # Each failure the issue lists, through `ledger show` and `release --ledger`: one line
    # on stderr naming the cause, exit 2, the file unchanged and nothing charged.
    good = tmp_path / "good.db"
    data = _ledger(good)
    csv = tmp_path / "x.csv"
    csv.write_text("v\n1\n2\n3\n")
    cases = {}
    cases["cut tail"] = (data[:-5], "truncated")
    cases["empty file"] = (b"", "empty file")
    cases["text file"] = (b"hello" * 100, "not a readable instancedp ledger")
    foreign = tmp_path / "foreign.db"
    _sql(foreign, "CREATE TABLE t (x)")
    cases["foreign SQLite"] = (foreign.read_bytes(), "not an instancedp ledger")
    newer = tmp_path / "newer.db"
    newer.write_bytes(data)
    _sql(newer, "PRAGMA user_version=3")
    cases["newer version"] = (newer.read_bytes(), "newer than version 2")
    edited = tmp_path / "edited.db"
    edited.write_bytes(data)
    _sql(edited, "UPDATE totals SET epsilon='0'")
    cases["edited total"] = (edited.read_bytes(), "integrity check")
    monkeypatch.setenv("INSTANCEDP_LEDGER_KEY", "k")
    keyed = tmp_path / "keyed.db"
    _ledger(keyed)
    monkeypatch.delenv("INSTANCEDP_LEDGER_KEY")
    cases["keyed, no key"] = (keyed.read_bytes(), "is keyed")
    for name, (content, words) in cases.items():
        p = tmp_path / "case.db"
        for sfx in ("", "-wal", "-shm"):
            if os.path.exists(str(p) + sfx):
                os.unlink(str(p) + sfx)
        p.write_bytes(content)
        old = os.stat(p).st_mtime - 60  # an old file: no re-reads for a write in progress
        os.utime(p, (old, old))
        for argv in (
            ["ledger", "show", str(p)],
            [
                "release",
                str(csv),
                "--column",
                "v",
                "--statistic",
                "mean",
                "--bounds",
                "0",
                "10",
                "--epsilon",
                "0.125",
                "--ledger",
                str(p),
                "--dataset-id",
                "d",
            ],
        ):
            assert _main(argv) == 2, (name, argv[0])
            cap = capsys.readouterr()
            err = cap.err.strip()
            assert err.count("\n") == 0 and words in err, (name, err)
            assert "Traceback" not in err and cap.out == "", name
        assert p.read_bytes() == content, name
    # Locked: another process holds the write lock longer than the timeout.
    blocker = sqlite3.connect(good, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        with Ledger(good, create=False, timeout=0.05) as led:
            with pytest.raises(LedgerError, match="locked by another process") as err:
                led.charge("d", PureDP(0.125))
            assert "\n" not in str(err.value) and "nothing was charged" in str(err.value)
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()


def test_a_charge_is_constant_time_no_statement_scans_the_charges(tmp_path):
    # Charge cost flat in the number of rows: every statement a charge runs reaches the
    # charges table through its primary key or an index, never a scan (SQLite's plan).
    led = Ledger(tmp_path / "l.db")
    led.ensure_budget("d", PureDP(1.0))
    led.set_allowance("d", led.principal, PureDP(0.5))
    led.charge("d", PureDP(2.0**-10))
    stmts = []
    led._con.set_trace_callback(stmts.append)
    led.charge("d", PureDP(2.0**-10), mechanism="m", parameters={"a": 1})
    led._con.set_trace_callback(None)
    plans = []
    for s in stmts:
        if s.split()[0].upper() in ("SELECT", "INSERT", "UPDATE"):
            plans += [r[-1] for r in led._con.execute("EXPLAIN QUERY PLAN " + s).fetchall()]
    assert plans and not [p for p in plans if p.startswith("SCAN")], plans
    # The open's checks are constant too (index searches only).
    stmts.clear()
    led._con.set_trace_callback(stmts.append)
    led._quick_check()
    led._con.set_trace_callback(None)
    plans = [
        r[-1]
        for s in stmts
        if s.split()[0].upper() == "SELECT" and "integrity_check" not in s
        for r in led._con.execute("EXPLAIN QUERY PLAN " + s).fetchall()
    ]
    scans = [p for p in plans if p.startswith("SCAN") and "charges" in p]
    assert not scans, scans
    led.close()
