"""The PostgreSQL ledger against a throwaway server: exact budgets, principals from
``session_user``, an analyst role that can charge but not rewrite, the keyed chain,
schema versions, the open-time cross-checks, ``ledger verify`` on a URL, and no
password in any message.  (Concurrency, allowances under concurrency and kill -9
run on both backends in tests/test_ledger_concurrency.py.)

Each test names its attacker: accidental damage (an edit by the owner's role, a
changed version), an analyst's role (no UPDATE/DELETE, no key), a writer who can
change the tables but cannot read the key (keyed mode)."""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

import pytest

from instancedp.ledger import BudgetExceeded, Ledger, LedgerError
from instancedp.privacy import PureDP

psycopg = pytest.importorskip("psycopg")

ROLES = ("alice", "bob")


def pg_role_url(url, role):
    """``url`` logged in as ``role`` (the test server trusts loopback logins)."""
    return url.replace("postgres@", f"{role}@", 1)


def _roles(url, *roles):
    with psycopg.connect(url, autocommit=True) as con:
        for role in roles:
            con.execute(
                f"DO $$ BEGIN CREATE ROLE {role} LOGIN; EXCEPTION WHEN duplicate_object "
                "THEN NULL; END $$"
            )


@pytest.fixture(scope="module")
def pg(new_pg_db):
    from instancedp.ledger_pg import PostgresLedger

    url = new_pg_db("ledger_main")
    _roles(url, *ROLES)
    with PostgresLedger(url, init=True) as led:
        for role in ROLES:
            led.grant_analyst(role)
        led.ensure_budget("d", PureDP(1.0))
        led.set_allowance("d", "alice", PureDP(0.25))
    return url


def test_charges_exact_principal_and_allowance(pg):
    from instancedp.ledger_pg import PostgresLedger

    with PostgresLedger(pg_role_url(pg, "alice")) as led:
        for _ in range(4):
            led.charge("d", PureDP(0.0625))
        with pytest.raises(BudgetExceeded, match="allowance"):
            led.charge("d", PureDP(0.0625))
        assert led.spent("d", "alice").epsilon == Decimal("0.25")
        with pytest.raises(LedgerError, match="session user"):
            led.charge("d", PureDP(0.05), principal="bob")
        for stmt in (
            "UPDATE instancedp_totals SET epsilon = 0",
            "DELETE FROM instancedp_charges",
            "UPDATE instancedp_head SET n = 0",
            "SELECT key FROM instancedp_key",
            "SELECT instancedp_mac('x')",
            "SELECT instancedp_append('d', 'alice', 'pure', 0, 0, 0, 0, '', '', '', now())",
        ):
            with pytest.raises(LedgerError, match="permission denied"):
                led._q(stmt)
    with PostgresLedger(pg) as owner:
        assert owner.verify().ok
        assert owner.relation("d") == "add_remove"


def test_charges_round_against_the_analyst(pg):
    # The float 0.1 is above 1/10: the server stores its exact value, never 0.1.
    from instancedp.ledger_pg import PostgresLedger

    with PostgresLedger(pg) as owner:
        owner.ensure_budget("r", PureDP(0.3))
    with PostgresLedger(pg_role_url(pg, "bob")) as led:
        led.charge("r", PureDP(0.1))
        led.charge("r", PureDP(0.1))
        assert Fraction(led.spent("r").epsilon) == 2 * Fraction(0.1)
        # 3 · fl(0.1) > fl(0.3): the third does not fit.
        assert 3 * Fraction(0.1) > Fraction(0.3)
        with pytest.raises(BudgetExceeded):
            led.charge("r", PureDP(0.1))


@pytest.mark.parametrize("x", [1 / 3, 5e-324, 1e-300, 1e300])
def test_adversarial_floats_are_stored_exactly_on_the_server(pg, x):
    from instancedp.ledger_pg import PostgresLedger

    ds = f"adv{x!r}"
    with PostgresLedger(pg) as owner:
        owner.ensure_budget(ds, PureDP(float(3 * Fraction(x))))
    with PostgresLedger(pg_role_url(pg, "bob")) as led:
        fits = 0
        while True:
            try:
                led.charge(ds, PureDP(x))
            except BudgetExceeded:
                break
            fits += 1
        assert fits == int(Fraction(float(3 * Fraction(x))) / Fraction(x))
        assert Fraction(led.spent(ds).epsilon) == fits * Fraction(x)


def _owner_sql(url, *stmts):
    with psycopg.connect(url, autocommit=True) as con:
        for s in stmts:
            con.execute(s)


@pytest.fixture(scope="module")
def template(new_pg_db):
    """A small ledger (9 charges by two principals) to copy, edit and reopen."""
    from instancedp.ledger_pg import PostgresLedger

    url = new_pg_db("ledger_tmpl")
    _roles(url, *ROLES)
    with PostgresLedger(url, init=True) as led:
        for role in ROLES:
            led.grant_analyst(role)
        led.ensure_budget("d", PureDP(1.0))
    for i in range(9):
        with PostgresLedger(pg_role_url(url, ROLES[i % 2])) as led:
            led.charge("d", PureDP(0.0625), mechanism="m", parameters={"i": i})
    return "ledger_tmpl"


@pytest.mark.parametrize(
    "stmt",
    [
        "DELETE FROM instancedp_charges WHERE id = 9",  # a cut tail
        "DELETE FROM instancedp_charges",
        "UPDATE instancedp_totals SET epsilon = 0.0625",
        "DELETE FROM instancedp_totals",
        "UPDATE instancedp_totals SET last_id = 8 WHERE principal = ''",
        "UPDATE instancedp_budgets SET epsilon = 5",
        "UPDATE instancedp_charges SET epsilon = 0 WHERE id = 9",
        "UPDATE instancedp_head SET n = 8",
        "DELETE FROM instancedp_head",
    ],
)
def test_edits_that_lower_the_spend_are_refused_on_open(new_pg_db, template, stmt):
    # Attacker: accidental damage or a careless owner (the owner's role can write).
    url = new_pg_db("ledger_edit", template=template)
    _owner_sql(url, stmt)
    with pytest.raises(LedgerError, match="integrity check"):
        Ledger(url, create=False)


def _exit_code(main, argv):
    try:
        main(argv)
    except SystemExit as e:
        return e.code or 0
    return 0


def test_verify_on_a_url_through_the_cli(new_pg_db, template, capsys):
    from instancedp.cli import main

    url = new_pg_db("ledger_verify", template=template)
    secret = url.replace("postgres@", "postgres:hunter2@")  # trust auth ignores the password
    assert _exit_code(main, ["ledger", "verify", secret]) == 0
    out = capsys.readouterr()
    assert "ok (9 charges" in out.out and "hunter2" not in out.out + out.err
    # An edit in the middle leaves the head and totals intact: only the walk finds it.
    _owner_sql(url, "UPDATE instancedp_charges SET mechanism = 'x' WHERE id = 3")
    assert _exit_code(main, ["ledger", "verify", secret]) == 2
    out = capsys.readouterr()
    assert "charge #3 was edited" in out.err and "hunter2" not in out.out + out.err


def test_schema_versions(new_pg_db, template):
    from instancedp.ledger_pg import PostgresLedger

    url = new_pg_db("ledger_version", template=template)
    _owner_sql(url, "UPDATE instancedp_meta SET value = '3' WHERE key = 'schema'")
    with pytest.raises(LedgerError, match="schema version 3, newer than version 2"):
        PostgresLedger(url)
    _owner_sql(url, "UPDATE instancedp_meta SET value = '1' WHERE key = 'schema'")
    with pytest.raises(LedgerError, match="integrity check.*schema version 1"):
        PostgresLedger(url)
    _owner_sql(url, "DELETE FROM instancedp_meta WHERE key = 'app'")
    with pytest.raises(LedgerError, match="integrity check"):
        PostgresLedger(url)


# The layout of version 1 (no meta table, no MACs, no totals in the rows).
_V1 = """
CREATE TABLE instancedp_budgets (dataset_id text PRIMARY KEY, kind text NOT NULL,
  epsilon numeric NOT NULL, delta numeric NOT NULL, rho numeric NOT NULL, mu2 numeric NOT NULL,
  relation text NOT NULL, created_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE instancedp_allowances (dataset_id text NOT NULL, principal text NOT NULL,
  epsilon numeric NOT NULL, delta numeric NOT NULL, rho numeric NOT NULL, mu2 numeric NOT NULL,
  PRIMARY KEY (dataset_id, principal));
CREATE TABLE instancedp_totals (dataset_id text NOT NULL, principal text NOT NULL,
  epsilon numeric NOT NULL, delta numeric NOT NULL, rho numeric NOT NULL, mu2 numeric NOT NULL,
  n bigint NOT NULL, PRIMARY KEY (dataset_id, principal));
CREATE TABLE instancedp_charges (id bigint PRIMARY KEY, dataset_id text NOT NULL,
  principal text NOT NULL, created_at timestamptz NOT NULL, kind text NOT NULL,
  epsilon numeric NOT NULL, delta numeric NOT NULL, rho numeric NOT NULL, mu2 numeric NOT NULL,
  guarantee text NOT NULL, mechanism text NOT NULL, parameters text NOT NULL,
  prev_hash text NOT NULL, hash text NOT NULL);
CREATE TABLE instancedp_head (one int PRIMARY KEY CHECK (one = 1), n bigint NOT NULL,
  last_hash text NOT NULL);
INSERT INTO instancedp_budgets VALUES ('d', 'pure', 1.0, 0, 0, 0, 'add_remove', now());
INSERT INTO instancedp_allowances VALUES ('d', 'alice', 0.5, 0, 0, 0);
INSERT INTO instancedp_charges VALUES
  (1, 'd', 'alice', now(), 'pure', 0.25, 0, 0, 0, '{}', 'm', '{}', repeat('0', 64), 'h1'),
  (2, 'd', 'bob', now(), 'pure', 0.125, 0, 0, 0, '{}', 'm', '{}', 'h1', 'h2');
INSERT INTO instancedp_totals VALUES ('d', '', 0.375, 0, 0, 0, 2), ('d', 'alice', 0.25, 0, 0, 0, 1),
  ('d', 'bob', 0.125, 0, 0, 0, 1);
INSERT INTO instancedp_head VALUES (1, 2, 'h2');
"""


def test_version_1_is_migrated_by_the_owner_in_one_transaction(new_pg_db):
    from instancedp.ledger_pg import PostgresLedger

    url = new_pg_db("ledger_v1")
    _roles(url, *ROLES)
    _owner_sql(url, _V1, "GRANT SELECT ON ALL TABLES IN SCHEMA public TO alice")
    # An analyst's role cannot migrate: refused, naming both versions, nothing changed.
    with pytest.raises(LedgerError, match="schema version 1; this instancedp reads version 2"):
        PostgresLedger(pg_role_url(url, "alice"))
    with PostgresLedger(url) as led:  # the owner
        assert led.spent("d").epsilon == Decimal("0.375")
        assert led.spent("d", "alice").epsilon == Decimal("0.25")
        assert led.count("d") == 2 and led.verify().ok
        assert [h["principal"] for h in led.history("d")] == ["alice", "bob"]
        led.grant_analyst("alice")
        assert led._q("SELECT count(*) FROM instancedp_charges_v1")[0][0] == 2  # the backup
    with PostgresLedger(pg_role_url(url, "alice")) as led:
        led.charge("d", PureDP(0.25))
        with pytest.raises(BudgetExceeded, match="allowance"):
            led.charge("d", PureDP(0.125))


def _forge_cut_tail(url):
    """A writer with UPDATE/DELETE on the tables (not the key): drop the last charge and
    recompute the head's SHA-256 MAC and the totals so that everything looks consistent."""
    _owner_sql(
        url,
        "DELETE FROM instancedp_charges WHERE id = 9",
        "UPDATE instancedp_head SET n = 8, last_hash = (SELECT hash FROM instancedp_charges "
        "WHERE id = 8), mac = encode(sha256(convert_to(concat_ws('|', 'head', 2, 8, (SELECT "
        "hash FROM instancedp_charges WHERE id = 8)), 'UTF8')), 'hex')",
        "UPDATE instancedp_totals t SET epsilon = split_part(split_part(c.totals, ';', 1), ',', 1)"
        "::numeric, last_id = 8, n = n - 1 FROM instancedp_charges c WHERE c.id = 8 AND "
        "t.principal = ''",
        "UPDATE instancedp_totals t SET epsilon = split_part(split_part(c.totals, ';', 2), ',', 1)"
        "::numeric, last_id = 7, n = n - 1 FROM instancedp_charges c WHERE c.id = 7 AND "
        "t.principal = 'alice'",
    )


def test_keyed_chain_stops_a_writer_without_the_key(new_pg_db, template, monkeypatch):
    from instancedp.ledger_pg import PostgresLedger

    # Unkeyed: the forged cut tail is consistent and opens (what the key adds).
    plain = new_pg_db("ledger_plain", template=template)
    _forge_cut_tail(plain)
    with PostgresLedger(plain) as led:
        assert led.count("d") == 8 and led.verify().ok
    # Keyed: the same forgery is refused; the key is never readable by an analyst.
    keyed = new_pg_db("ledger_keyed")
    _roles(keyed, *ROLES)
    monkeypatch.setenv("INSTANCEDP_LEDGER_KEY", "owner secret")
    with PostgresLedger(keyed, init=True) as led:
        assert led.mode == "hmac-sha256"
        for role in ROLES:
            led.grant_analyst(role)
        led.ensure_budget("d", PureDP(1.0))
    monkeypatch.delenv("INSTANCEDP_LEDGER_KEY")
    for i in range(9):
        with PostgresLedger(pg_role_url(keyed, ROLES[i % 2])) as led:
            led.charge("d", PureDP(0.0625))
    with PostgresLedger(keyed) as led:
        assert led.verify().ok and led.verify().mode == "hmac-sha256"
    # The server's HMAC is RFC 2104's: the Python hmac module gives the same head MAC.
    import hashlib
    import hmac

    with psycopg.connect(keyed) as con:
        n, last, mac = con.execute("SELECT n, last_hash, mac FROM instancedp_head").fetchone()
    want = hmac.new(b"owner secret", f"head|2|{n}|{last}".encode(), hashlib.sha256).hexdigest()
    assert mac == want
    _forge_cut_tail(keyed)
    with pytest.raises(LedgerError, match="integrity check"):
        PostgresLedger(keyed)
    # A key configured for an unkeyed ledger, or a different key, is refused.
    monkeypatch.setenv("INSTANCEDP_LEDGER_KEY", "another")
    with pytest.raises(LedgerError, match="another key"):
        PostgresLedger(new_pg_db("ledger_keyed2", template="ledger_keyed"))
    with pytest.raises(LedgerError, match="without a key"):
        PostgresLedger(new_pg_db("ledger_plain2", template=template))


def test_no_password_in_messages(postgres_url):
    from instancedp.ledger_pg import PostgresLedger

    bad = postgres_url.replace("postgres@", "nobody:hunter2@")
    with pytest.raises(LedgerError) as err:
        PostgresLedger(bad)
    assert "hunter2" not in str(err.value)
    missing = postgres_url.replace("postgres@", "postgres:hunter2@").rsplit("/", 1)[0] + "/nodb"
    with pytest.raises(LedgerError) as err:
        PostgresLedger(missing)
    assert "hunter2" not in str(err.value)


def test_an_empty_database_is_never_taken_as_a_ledger(new_pg_db):
    url = new_pg_db("ledger_empty")
    with pytest.raises(LedgerError, match="ledger init"):
        Ledger(url)  # create=True does not make a schema: only the owner's init does
    with psycopg.connect(url) as con:
        assert con.execute("SELECT to_regclass('instancedp_meta')").fetchone()[0] is None


def test_session_and_cli_through_a_url(pg, capsys):
    from instancedp.cli import main
    from instancedp.ledger_pg import PostgresLedger

    url = pg_role_url(pg, "alice")
    led = Ledger(url)
    assert isinstance(led, PostgresLedger)
    assert led.ensure_budget("d", None).epsilon == Decimal("1")
    try:  # alice needs spend of her own to show (unless an earlier test used her allowance)
        led.charge("d", PureDP(2.0**-10))
    except BudgetExceeded:
        pass
    led.close()
    assert _exit_code(main, ["ledger", "show", pg]) == 0
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

    url = pg_role_url(pg, "bob")
    # An analyst passing the budget on record is fine; another total is refused.
    with pytest.raises(LedgerError, match="already holds a total budget"):
        Session([1.0, 2.0], PureDP(2.0), ledger=url, dataset_id="d")
    with Session([1.0, 2.0], PureDP(1.0), ledger=url, dataset_id="d") as s:
        before = s.spent.epsilon
        s.release(LaplaceMechanism(Sum(0, 10), 0.125), rng=simulation(0))
        assert s.spent.epsilon == before + Decimal("0.125")
        assert s.history()[-1]["principal"] == "bob"
        assert s.history()[-1]["status"] == "released"
        assert "hunter" not in repr(s) and "postgres@" not in repr(s)
