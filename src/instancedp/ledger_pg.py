"""The ledger on a PostgreSQL server (psycopg 3), for a team sharing one budget.

Same semantics and the same schema version as the SQLite ledger: a charge
checks the dataset's running total and the principal's allowance and appends
a hash-chained row (which carries the totals after it) in one transaction,
serialised on the head row (``SELECT … FOR UPDATE``); the head records the
count and the last hash under a MAC.  Every hash is computed on the server by
``instancedp_mac``: SHA-256, or HMAC-SHA256 (RFC 2104, built on the server's
``sha256``) under the owner's key when one is configured at ``ledger init``;
the key sits in a table only the owner can read, so an analyst's role can
neither read it nor forge a consistent history.

Charges go through the ``SECURITY DEFINER`` function ``instancedp_charge``;
the principal is ``session_user``, never a name the client sends.  Opening
runs ``instancedp_check()`` (constant in the number of charges: the version,
the head against the last row, each running total against its last row, the
budgets' signatures); ``verify`` runs ``instancedp_verify()``, which walks the
whole chain.  Roles: docs/ledger.md.  Credentials come from the URL, the
environment or a service file, as libpq reads them; no message repeats the URL.
"""

from __future__ import annotations

import json
import threading
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from typing import Any

from .errors import BudgetExceeded, LedgerError, ParameterError
from .ledger import (
    _EXACT,
    RELATIONS,
    SCHEMA_VERSION,
    Amount,
    Charge,
    VerifyReport,
    _load_key,
    amount_of,
    charge_amount,
    history_row,
    summary_row,
)
from .privacy import Guarantee

_LOCK_ID = 4242424242  # advisory lock held while the schema is created or migrated

# The schema of version 2.  {V} is the schema version.  Functions are created
# by the owner; only the SECURITY DEFINER entry points are granted to analysts.
SCHEMA = r"""
CREATE TABLE instancedp_meta (key text PRIMARY KEY, value text NOT NULL);
CREATE TABLE instancedp_key (one int PRIMARY KEY CHECK (one = 1), key bytea NOT NULL);
REVOKE ALL ON instancedp_key FROM PUBLIC;
CREATE TABLE instancedp_budgets (
  dataset_id text PRIMARY KEY, kind text NOT NULL, epsilon numeric NOT NULL,
  delta numeric NOT NULL, rho numeric NOT NULL, mu2 numeric NOT NULL,
  relation text NOT NULL, created_at timestamptz NOT NULL DEFAULT now(), sig text NOT NULL);
CREATE TABLE instancedp_allowances (
  dataset_id text NOT NULL, principal text NOT NULL, epsilon numeric NOT NULL,
  delta numeric NOT NULL, rho numeric NOT NULL, mu2 numeric NOT NULL, sig text NOT NULL,
  PRIMARY KEY (dataset_id, principal));
CREATE TABLE instancedp_totals (
  dataset_id text NOT NULL, principal text NOT NULL, epsilon numeric NOT NULL,
  delta numeric NOT NULL, rho numeric NOT NULL, mu2 numeric NOT NULL, n bigint NOT NULL,
  last_id bigint NOT NULL, PRIMARY KEY (dataset_id, principal));
CREATE TABLE instancedp_charges (
  id bigint PRIMARY KEY, dataset_id text NOT NULL, principal text NOT NULL,
  created_at timestamptz NOT NULL, kind text NOT NULL, epsilon numeric NOT NULL,
  delta numeric NOT NULL, rho numeric NOT NULL, mu2 numeric NOT NULL,
  guarantee text NOT NULL, mechanism text NOT NULL, parameters text NOT NULL,
  totals text NOT NULL, prev_hash text NOT NULL, hash text NOT NULL);
CREATE INDEX instancedp_charges_principal ON instancedp_charges (dataset_id, principal, id);
CREATE TABLE instancedp_outcomes (charge_id bigint PRIMARY KEY, status text NOT NULL);
CREATE TABLE instancedp_head (
  one int PRIMARY KEY CHECK (one = 1), n bigint NOT NULL, last_hash text NOT NULL,
  mac text NOT NULL);
ALTER TABLE instancedp_totals ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON instancedp_totals FOR SELECT USING (principal IN ('', session_user));
ALTER TABLE instancedp_charges ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON instancedp_charges FOR SELECT USING (principal = session_user);

CREATE FUNCTION instancedp_hmac(k bytea, m bytea) RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT AS $$
DECLARE ik bytea; ok bytea;
BEGIN  -- HMAC-SHA256 (RFC 2104): H((K xor opad) || H((K xor ipad) || m))
  IF length(k) > 64 THEN k := sha256(k); END IF;
  k := k || decode(repeat('00', 64 - length(k)), 'hex');
  ik := k; ok := k;
  FOR i IN 0..63 LOOP
    ik := set_byte(ik, i, get_byte(k, i) # 54);
    ok := set_byte(ok, i, get_byte(k, i) # 92);
  END LOOP;
  RETURN encode(sha256(ok || sha256(ik || m)), 'hex');
END $$;

CREATE FUNCTION instancedp_mac(m text) RETURNS text
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, public AS $$
DECLARE k bytea;
BEGIN
  SELECT key INTO k FROM instancedp_key WHERE one = 1;
  IF k IS NULL THEN RETURN encode(sha256(convert_to(m, 'UTF8')), 'hex'); END IF;
  RETURN instancedp_hmac(k, convert_to(m, 'UTF8'));
END $$;

CREATE FUNCTION instancedp_row_text(c instancedp_charges) RETURNS text
LANGUAGE sql STABLE AS $$
  SELECT concat_ws('|', 'charge', c.id, c.dataset_id, c.principal, c.kind, c.epsilon::text,
    c.delta::text, c.rho::text, c.mu2::text, c.guarantee, c.mechanism, c.parameters, c.totals,
    c.prev_hash) $$;

CREATE FUNCTION instancedp_amount_text(tag text, ds text, who text, kind text, e numeric,
  d numeric, r numeric, m numeric, extra text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
  SELECT concat_ws('|', tag, ds, who, kind, e::text, d::text, r::text, m::text, extra) $$;

CREATE FUNCTION instancedp_head_mac(n bigint, last_hash text) RETURNS text
LANGUAGE sql STABLE AS $$ SELECT instancedp_mac(concat_ws('|', 'head', {V}, n, last_hash)) $$;

-- Append one charge row (no budget check: callers check first), update both totals
-- and the head.  Internal: used by instancedp_charge and by the migration.
CREATE FUNCTION instancedp_append(p_dataset text, who text, p_kind text, p_eps numeric,
  p_delta numeric, p_rho numeric, p_mu2 numeric, p_guarantee text, p_mechanism text,
  p_parameters text, at timestamptz) RETURNS bigint
LANGUAGE plpgsql SET search_path = pg_catalog, public AS $$
DECLARE
  h instancedp_head; t instancedp_totals; pt instancedp_totals; c instancedp_charges;
BEGIN
  SELECT * INTO h FROM instancedp_head WHERE one = 1 FOR UPDATE;
  SELECT * INTO t FROM instancedp_totals WHERE dataset_id = p_dataset AND principal = '';
  IF NOT FOUND THEN t := ROW(p_dataset, '', 0, 0, 0, 0, 0, 0); END IF;
  SELECT * INTO pt FROM instancedp_totals WHERE dataset_id = p_dataset AND principal = who;
  IF NOT FOUND THEN pt := ROW(p_dataset, who, 0, 0, 0, 0, 0, 0); END IF;
  t.epsilon := t.epsilon + p_eps; t.delta := t.delta + p_delta; t.rho := t.rho + p_rho;
  t.mu2 := t.mu2 + p_mu2;
  pt.epsilon := pt.epsilon + p_eps; pt.delta := pt.delta + p_delta; pt.rho := pt.rho + p_rho;
  pt.mu2 := pt.mu2 + p_mu2;
  c := ROW(h.n + 1, p_dataset, who, at, p_kind, p_eps, p_delta, p_rho, p_mu2, p_guarantee,
    p_mechanism, p_parameters,
    concat_ws(';', concat_ws(',', t.epsilon, t.delta, t.rho, t.mu2),
                   concat_ws(',', pt.epsilon, pt.delta, pt.rho, pt.mu2)),
    h.last_hash, '');
  c.hash := instancedp_mac(instancedp_row_text(c));
  INSERT INTO instancedp_charges VALUES (c.*);
  INSERT INTO instancedp_totals VALUES
    (p_dataset, '', t.epsilon, t.delta, t.rho, t.mu2, 1, c.id),
    (p_dataset, who, pt.epsilon, pt.delta, pt.rho, pt.mu2, 1, c.id)
  ON CONFLICT (dataset_id, principal) DO UPDATE SET epsilon = excluded.epsilon,
    delta = excluded.delta, rho = excluded.rho, mu2 = excluded.mu2,
    n = instancedp_totals.n + 1, last_id = excluded.last_id;
  UPDATE instancedp_head SET n = c.id, last_hash = c.hash,
    mac = instancedp_head_mac(c.id, c.hash) WHERE one = 1;
  RETURN c.id;
END $$;

CREATE FUNCTION instancedp_charge(
  p_dataset text, p_kind text, p_eps numeric, p_delta numeric, p_rho numeric,
  p_mu2 numeric, p_guarantee text, p_mechanism text, p_parameters text)
RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
DECLARE
  b instancedp_budgets; t instancedp_totals; pt instancedp_totals; a instancedp_allowances;
  who text := session_user;
BEGIN
  IF p_eps < 0 OR p_delta < 0 OR p_rho < 0 OR p_mu2 < 0 THEN
    RAISE EXCEPTION 'instancedp: a charge cannot be negative';
  END IF;
  PERFORM 1 FROM instancedp_head WHERE one = 1 FOR UPDATE;  -- serialises charges
  SELECT * INTO b FROM instancedp_budgets WHERE dataset_id = p_dataset;
  IF NOT FOUND THEN RAISE EXCEPTION 'instancedp: no budget for dataset %', p_dataset; END IF;
  IF b.kind <> p_kind THEN RAISE EXCEPTION 'instancedp: wrong budget type'; END IF;
  IF b.sig <> instancedp_mac(instancedp_amount_text('budget', b.dataset_id, '', b.kind,
       b.epsilon, b.delta, b.rho, b.mu2, b.relation)) THEN
    RAISE EXCEPTION 'instancedp: the budget of % was edited', p_dataset;
  END IF;
  SELECT * INTO t FROM instancedp_totals WHERE dataset_id = p_dataset AND principal = '';
  IF NOT FOUND THEN t := ROW(p_dataset, '', 0, 0, 0, 0, 0, 0); END IF;
  IF t.epsilon + p_eps > b.epsilon OR t.delta + p_delta > b.delta OR t.rho + p_rho > b.rho
     OR t.mu2 + p_mu2 > b.mu2 THEN
    RETURN -1;
  END IF;
  SELECT * INTO a FROM instancedp_allowances WHERE dataset_id = p_dataset AND principal = who;
  IF FOUND THEN
    IF a.sig <> instancedp_mac(instancedp_amount_text('allowance', a.dataset_id, a.principal,
         b.kind, a.epsilon, a.delta, a.rho, a.mu2, '')) THEN
      RAISE EXCEPTION 'instancedp: the allowance of % was edited', who;
    END IF;
    SELECT * INTO pt FROM instancedp_totals WHERE dataset_id = p_dataset AND principal = who;
    IF NOT FOUND THEN pt := ROW(p_dataset, who, 0, 0, 0, 0, 0, 0); END IF;
    IF pt.epsilon + p_eps > a.epsilon OR pt.delta + p_delta > a.delta
       OR pt.rho + p_rho > a.rho OR pt.mu2 + p_mu2 > a.mu2 THEN
      RETURN -2;
    END IF;
  END IF;
  RETURN instancedp_append(p_dataset, who, p_kind, p_eps, p_delta, p_rho, p_mu2, p_guarantee,
    p_mechanism, p_parameters, now());
END $$;

CREATE FUNCTION instancedp_mark(p_id bigint, p_status text) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
BEGIN  -- a principal marks how its own charged release ended (bookkeeping beside the chain)
  IF EXISTS (SELECT 1 FROM instancedp_charges WHERE id = p_id AND principal = session_user) THEN
    INSERT INTO instancedp_outcomes VALUES (p_id, p_status)
      ON CONFLICT (charge_id) DO UPDATE SET status = excluded.status;
  END IF;
END $$;

-- Constant-time checks on open (cost independent of the number of charges).
CREATE FUNCTION instancedp_check() RETURNS text
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, public AS $$
DECLARE h instancedp_head; c instancedp_charges; t instancedp_totals; b instancedp_budgets;
  newest bigint;
BEGIN
  SELECT * INTO h FROM instancedp_head WHERE one = 1;
  IF NOT FOUND THEN RETURN 'the head record is missing'; END IF;
  IF h.mac <> instancedp_head_mac(h.n, h.last_hash) THEN
    RETURN 'the head record''s MAC does not match';
  END IF;
  SELECT * INTO c FROM instancedp_charges ORDER BY id DESC LIMIT 1;
  IF NOT FOUND THEN
    IF h.n <> 0 THEN RETURN format('the head records %s charges but none is left', h.n); END IF;
  ELSIF c.id <> h.n THEN
    RETURN format('the head records %s charges, the last row is #%s', h.n, c.id);
  ELSIF c.hash <> h.last_hash OR c.hash <> instancedp_mac(instancedp_row_text(c)) THEN
    RETURN format('charge #%s does not match the head''s hash', c.id);
  END IF;
  FOR t IN SELECT * FROM instancedp_totals LOOP
    SELECT * INTO c FROM instancedp_charges WHERE id = t.last_id;
    IF NOT FOUND OR c.dataset_id <> t.dataset_id
       OR (t.principal <> '' AND c.principal <> t.principal) THEN
      RETURN format('the running total of ''%s'' points to a missing charge', t.dataset_id);
    END IF;
    IF t.principal = '' THEN
      SELECT max(id) INTO newest FROM instancedp_charges WHERE dataset_id = t.dataset_id;
    ELSE
      SELECT max(id) INTO newest FROM instancedp_charges
        WHERE dataset_id = t.dataset_id AND principal = t.principal;
    END IF;
    IF newest <> t.last_id THEN
      RETURN format('the running total of ''%s'' is older than its last charge', t.dataset_id);
    END IF;
    IF c.hash <> instancedp_mac(instancedp_row_text(c)) THEN
      RETURN format('charge #%s was edited', c.id);
    END IF;
    IF split_part(c.totals, ';', CASE WHEN t.principal = '' THEN 1 ELSE 2 END)
       <> concat_ws(',', t.epsilon, t.delta, t.rho, t.mu2) THEN
      RETURN format('the running total of ''%s'' disagrees with charge #%s', t.dataset_id, c.id);
    END IF;
  END LOOP;
  FOR b IN SELECT * FROM instancedp_budgets LOOP
    IF b.sig <> instancedp_mac(instancedp_amount_text('budget', b.dataset_id, '', b.kind,
         b.epsilon, b.delta, b.rho, b.mu2, b.relation)) THEN
      RETURN format('the budget of ''%s'' was edited', b.dataset_id);
    END IF;
    IF NOT EXISTS (SELECT 1 FROM instancedp_totals WHERE dataset_id = b.dataset_id
                   AND principal = '')
       AND EXISTS (SELECT 1 FROM instancedp_charges WHERE dataset_id = b.dataset_id) THEN
      RETURN format('dataset ''%s'' has charges but no running total', b.dataset_id);
    END IF;
  END LOOP;
  RETURN NULL;
END $$;

-- The whole walk: sequence, links, hashes, recorded totals, head, budgets, allowances.
CREATE FUNCTION instancedp_verify(OUT charges bigint, OUT problems text[])
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, public AS $$
DECLARE c instancedp_charges; h instancedp_head; prev text := repeat('0', 64);
  expect bigint := 1; sums jsonb := '{}'; k text; s numeric[]; rec text[]; i int;
  b instancedp_budgets; a record;
BEGIN
  charges := 0; problems := '{}';
  FOR c IN SELECT * FROM instancedp_charges ORDER BY id LOOP
    charges := charges + 1;
    IF c.id <> expect THEN
      problems := problems || format('charges #%s..#%s are missing', expect, c.id - 1);
    END IF;
    expect := c.id + 1;
    IF c.prev_hash <> prev THEN
      problems := problems || format('charge #%s does not link to the one before it', c.id);
    END IF;
    IF c.hash <> instancedp_mac(instancedp_row_text(c)) THEN
      problems := problems || format('charge #%s was edited (its hash does not match)', c.id);
    END IF;
    prev := c.hash;
    FOR i IN 1..2 LOOP
      k := CASE WHEN i = 1 THEN c.dataset_id || '|' ELSE c.dataset_id || '|' || c.principal END;
      s := COALESCE(ARRAY(SELECT jsonb_array_elements_text(sums -> k))::numeric[],
                    ARRAY[0, 0, 0, 0]::numeric[]);
      IF cardinality(s) = 0 THEN s := ARRAY[0, 0, 0, 0]::numeric[]; END IF;
      s := ARRAY[s[1] + c.epsilon, s[2] + c.delta, s[3] + c.rho, s[4] + c.mu2];
      sums := sums || jsonb_build_object(k, to_jsonb(ARRAY[s[1]::text, s[2]::text,
                                                            s[3]::text, s[4]::text]));
      IF split_part(c.totals, ';', i) <> array_to_string(s, ',') THEN
        problems := problems || format('charge #%s records a wrong %s total', c.id,
                                       CASE WHEN i = 1 THEN 'dataset' ELSE 'principal' END);
      END IF;
    END LOOP;
  END LOOP;
  SELECT * INTO h FROM instancedp_head WHERE one = 1;
  IF NOT FOUND THEN
    problems := problems || 'the head record is missing'::text;
  ELSE
    IF h.mac <> instancedp_head_mac(h.n, h.last_hash) THEN
      problems := problems || 'the head record''s MAC does not match'::text;
    END IF;
    IF h.n <> charges OR h.last_hash <> prev THEN
      problems := problems || format('the head records %s charges, the chain has %s (a cut '
                                     'tail or deleted rows)', h.n, charges);
    END IF;
  END IF;
  FOR a IN SELECT * FROM instancedp_totals LOOP
    k := a.dataset_id || '|' || CASE WHEN a.principal = '' THEN '' ELSE a.principal END;
    IF NOT sums ? k OR (sums -> k) <> to_jsonb(ARRAY[a.epsilon::text, a.delta::text,
                                                      a.rho::text, a.mu2::text]) THEN
      problems := problems || format('the running total of ''%s'' / ''%s'' disagrees',
                                     a.dataset_id, a.principal);
    END IF;
  END LOOP;
  FOR b IN SELECT * FROM instancedp_budgets LOOP
    IF b.sig <> instancedp_mac(instancedp_amount_text('budget', b.dataset_id, '', b.kind,
         b.epsilon, b.delta, b.rho, b.mu2, b.relation)) THEN
      problems := problems || format('the budget of ''%s'' was edited', b.dataset_id);
    END IF;
  END LOOP;
  FOR a IN SELECT al.*, bu.kind FROM instancedp_allowances al JOIN instancedp_budgets bu
           USING (dataset_id) LOOP
    IF a.sig <> instancedp_mac(instancedp_amount_text('allowance', a.dataset_id, a.principal,
         a.kind, a.epsilon, a.delta, a.rho, a.mu2, '')) THEN
      problems := problems || format('the allowance of ''%s'' on ''%s'' was edited',
                                     a.principal, a.dataset_id);
    END IF;
  END LOOP;
END $$;

REVOKE ALL ON FUNCTION instancedp_hmac(bytea, bytea), instancedp_mac(text),
  instancedp_row_text(instancedp_charges), instancedp_head_mac(bigint, text),
  instancedp_append(text, text, text, numeric, numeric, numeric, numeric, text, text, text,
  timestamptz), instancedp_charge(text, text, numeric, numeric, numeric, numeric, text, text,
  text), instancedp_mark(bigint, text), instancedp_check(), instancedp_verify()
  FROM PUBLIC;
"""

# What an analyst's role is granted (docs/ledger.md lists the same statements).
GRANTS = (
    "GRANT SELECT ON instancedp_meta, instancedp_head, instancedp_budgets, "
    "instancedp_allowances, instancedp_totals, instancedp_charges, instancedp_outcomes TO {r}",
    "GRANT EXECUTE ON FUNCTION instancedp_charge(text, text, numeric, numeric, numeric, "
    "numeric, text, text, text), instancedp_mark(bigint, text), instancedp_check(), "
    "instancedp_verify() TO {r}",
)


def _v1_layout(con: Any) -> bool:
    return con.execute("SELECT to_regclass('instancedp_head') IS NOT NULL").fetchone()[0]


def _create_schema(con: Any, key: bytes | None, migrated_from: int | None = None) -> None:
    """The current schema with its meta rows, the owner's key and an empty head (creation
    and the version-1 migration alike)."""
    con.execute(SCHEMA.replace("{V}", str(SCHEMA_VERSION)))
    meta = [("app", "instancedp-ledger"), ("schema", str(SCHEMA_VERSION)),
            ("mac", "hmac-sha256" if key else "sha256")]
    if migrated_from is not None:
        meta.append(("migrated_from", str(migrated_from)))
    for name, value in meta:
        con.execute("INSERT INTO instancedp_meta VALUES (%s, %s)", (name, value))
    if key:
        con.execute("INSERT INTO instancedp_key VALUES (1, %s)", (key,))
    con.execute(
        "INSERT INTO instancedp_head VALUES (1, 0, repeat('0', 64), "
        "instancedp_head_mac(0, repeat('0', 64)))"
    )


class PostgresLedger:
    """The ledger at a ``postgresql://`` URL.

    ``init=True`` (the owner, once) creates the schema; with ``key`` /
    ``key_file`` (or the ``INSTANCEDP_LEDGER_KEY`` / ``INSTANCEDP_LEDGER_KEY_FILE``
    environment variables) the chain is HMAC-keyed, the key stored where only
    the owner's role can read it.  Opening reads the schema version (a newer
    one is refused, version 1 is migrated forward in one transaction, keeping
    the old tables as ``instancedp_*_v1``) and runs the constant-time checks.
    One object may be shared by threads (a lock serialises its calls).
    """

    def __init__(
        self,
        url: str,
        *,
        init: bool = False,
        create: bool = False,
        timeout: float = 60.0,
        principal: str | None = None,
        key: Any = None,
        key_file: Any = None,
        durability: str = "full",
    ) -> None:
        # ``create`` and ``durability`` are accepted for the common signature; only ``init``
        # (the owner) makes the schema, never an analyst's release; the server's own
        # settings (synchronous_commit) decide durability.
        if principal is not None:
            raise LedgerError(
                "the PostgreSQL ledger takes the principal from the database session user: "
                "connect as that user instead of passing principal"
            )
        self.principal = None
        try:
            import psycopg
        except ImportError:  # pragma: no cover - psycopg is a dependency
            raise LedgerError("a PostgreSQL ledger needs psycopg 3 (pip install psycopg)") from None
        self.path = "postgresql ledger"  # never the URL: it may hold a password
        self.timeout = float(timeout)
        self._lock = threading.RLock()
        self._con = None
        owner_key = _load_key(key, key_file)
        try:
            self._con = psycopg.connect(url, autocommit=True, connect_timeout=int(timeout))
            self._con.execute(f"SET lock_timeout = {int(timeout * 1000)}")
            self.mode = self._open(init, owner_key)
            problem = self._con.execute("SELECT instancedp_check()").fetchone()[0]
        except psycopg.Error as exc:
            self.close()
            raise LedgerError(f"the PostgreSQL ledger cannot be used: {_cause(exc)}") from None
        except BaseException:
            self.close()
            raise
        if problem is not None:
            self.close()
            raise _damaged(problem)

    # -- opening ------------------------------------------------------------------
    def _open(self, init: bool, key: bytes | None) -> str:
        con = self._con
        with con.transaction():
            con.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_ID,))
            has_meta = con.execute("SELECT to_regclass('instancedp_meta') IS NOT NULL").fetchone()[
                0
            ]
            if not has_meta:
                if _v1_layout(con):
                    import psycopg

                    try:
                        with con.transaction():
                            self._migrate_v1(key)
                    except psycopg.Error as exc:
                        raise LedgerError(
                            "the PostgreSQL ledger has schema version 1; this instancedp reads "
                            f"version {SCHEMA_VERSION} and migrates it (in one transaction, "
                            "keeping the old tables) when the owner's role opens it: "
                            f"{_cause(exc)}"
                        ) from None
                elif init:
                    _create_schema(con, key)
                else:
                    raise LedgerError(
                        "the PostgreSQL ledger has no instancedp schema in this database: the "
                        "owner creates it with `instancedp ledger init postgresql://… --epsilon E`"
                    )
            meta = dict(con.execute("SELECT key, value FROM instancedp_meta").fetchall())
        if meta.get("app") != "instancedp-ledger":
            raise _damaged("the ledger marker in its meta table is missing")
        try:
            version = int(meta.get("schema", ""))
        except ValueError:
            raise _damaged(
                f"its meta table records schema version {meta.get('schema')!r}"
            ) from None
        if version > SCHEMA_VERSION:
            raise LedgerError(
                f"the PostgreSQL ledger has schema version {version}, newer than version "
                f"{SCHEMA_VERSION} that this instancedp reads: upgrade instancedp"
            )
        if version != SCHEMA_VERSION:
            raise _damaged(f"its meta table records schema version {version}")
        mode = meta.get("mac", "")
        if key is not None:
            if mode != "hmac-sha256":
                raise LedgerError(
                    "the PostgreSQL ledger was made without a key but a key is configured: a "
                    "keyed deployment refuses an unkeyed ledger; unset the key only if you "
                    "trust this database"
                )
            if con.execute("SELECT has_table_privilege('instancedp_key', 'SELECT')").fetchone()[0]:
                stored = con.execute("SELECT key FROM instancedp_key").fetchone()
                if stored is None or bytes(stored[0]) != key:
                    raise LedgerError(
                        "the PostgreSQL ledger is keyed with another key than the one configured "
                        "(INSTANCEDP_LEDGER_KEY or the key file)"
                    )
        return mode

    def _migrate_v1(self, key: bytes | None) -> None:
        """Version 1 (no meta, no MACs, no totals in the rows) → 2, inside the caller's
        transaction; the old tables stay as ``instancedp_*_v1``."""
        con = self._con
        for t in ("budgets", "allowances", "totals", "charges", "head"):
            con.execute(f"ALTER TABLE instancedp_{t} RENAME TO instancedp_{t}_v1")
        con.execute(
            "DROP FUNCTION IF EXISTS instancedp_charge(text, text, numeric, numeric, "
            "numeric, numeric, text, text, text)"
        )
        for t in ("budgets", "allowances", "totals", "charges", "head"):
            con.execute(f"REVOKE ALL ON instancedp_{t}_v1 FROM PUBLIC")
        _create_schema(con, key, migrated_from=1)
        con.execute(
            "INSERT INTO instancedp_budgets SELECT dataset_id, kind, epsilon, delta, rho, mu2, "
            "relation, created_at, instancedp_mac(instancedp_amount_text('budget', dataset_id, "
            "'', kind, epsilon, delta, rho, mu2, relation)) FROM instancedp_budgets_v1"
        )
        con.execute(
            "INSERT INTO instancedp_allowances SELECT a.dataset_id, a.principal, a.epsilon, "
            "a.delta, a.rho, a.mu2, instancedp_mac(instancedp_amount_text('allowance', "
            "a.dataset_id, a.principal, b.kind, a.epsilon, a.delta, a.rho, a.mu2, '')) "
            "FROM instancedp_allowances_v1 a JOIN instancedp_budgets_v1 b USING (dataset_id)"
        )
        con.execute(
            "DO $$ DECLARE r record; BEGIN FOR r IN SELECT * FROM instancedp_charges_v1 "
            "ORDER BY id LOOP PERFORM instancedp_append(r.dataset_id, r.principal, r.kind, "
            "r.epsilon, r.delta, r.rho, r.mu2, r.guarantee, r.mechanism, r.parameters, "
            "r.created_at); END LOOP; END $$"
        )

    def grant_analyst(self, role: str) -> None:
        """Let database role ``role`` charge through the library (owner only): EXECUTE on
        the entry points, SELECT on the tables (its own charges and totals only)."""
        from psycopg import sql

        with self._lock:
            for stmt in GRANTS:
                self._con.execute(sql.SQL(stmt).format(r=sql.Identifier(role)))

    def close(self) -> None:
        if self._con is not None:
            self._con.close()
            self._con = None

    def __enter__(self) -> PostgresLedger:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _q(self, sql: str, args: tuple = ()) -> list[tuple]:
        import psycopg

        with self._lock:
            if self._con is None:
                raise LedgerError("the PostgreSQL ledger is closed")
            try:
                return self._con.execute(sql, args).fetchall()
            except psycopg.Error as exc:
                raise LedgerError(f"the PostgreSQL ledger failed: {_cause(exc)}") from None

    def _budget(self, ds: str) -> tuple[Amount, str] | None:
        rows = self._q(
            "SELECT kind, epsilon, delta, rho, mu2, relation FROM instancedp_budgets "
            "WHERE dataset_id=%s",
            (ds,),
        )
        if not rows:
            return None
        k, e, d, r, m, rel = rows[0]
        return Amount(k, Decimal(e), Decimal(d), Decimal(r), Decimal(m)), rel

    def ensure_budget(
        self, dataset_id: str, budget: Guarantee | None, *, relation: str | None = None
    ) -> Amount:
        if relation is not None and relation not in RELATIONS:
            raise ParameterError(
                f"relation must be one of {', '.join(RELATIONS)}, got {relation!r}",
                parameter="relation",
                allowed=", ".join(RELATIONS),
            )
        if budget is not None and self._budget(dataset_id) is None:  # only the owner inserts
            a = amount_of(budget)
            self._q(
                "INSERT INTO instancedp_budgets (dataset_id, kind, epsilon, delta, rho, mu2, "
                "relation, sig) VALUES (%s, %s, %s, %s, %s, %s, %s, instancedp_mac("
                "instancedp_amount_text('budget', %s, '', %s, %s, %s, %s, %s, %s))) "
                "ON CONFLICT DO NOTHING RETURNING 1",
                (
                    dataset_id,
                    a.kind,
                    a.epsilon,
                    a.delta,
                    a.rho,
                    a.mu2,
                    relation or "add_remove",
                    dataset_id,
                    a.kind,
                    a.epsilon,
                    a.delta,
                    a.rho,
                    a.mu2,
                    relation or "add_remove",
                ),
            )
        have = self._budget(dataset_id)
        if have is None:
            raise LedgerError(f"the PostgreSQL ledger has no budget for dataset '{dataset_id}'")
        amount, rel = have
        if budget is not None and _norm(amount) != _norm(amount_of(budget)):
            raise LedgerError(
                f"the PostgreSQL ledger already holds a total budget of {amount.describe()} "
                f"for dataset '{dataset_id}', not {amount_of(budget).describe()}: pass the "
                "same total, or use another dataset id"
            )
        if relation is not None and relation != rel:
            raise LedgerError(
                f"the PostgreSQL ledger records dataset '{dataset_id}' under the '{rel}' "
                f"neighbour relation, not '{relation}'"
            )
        return _norm(amount)

    def relation(self, dataset_id: str = "default") -> str:
        have = self._budget(dataset_id)
        if have is None:
            raise LedgerError(f"the PostgreSQL ledger has no budget for dataset '{dataset_id}'")
        return have[1]

    def set_allowance(self, dataset_id: str, principal: str, allowance: Guarantee) -> Amount:
        b = self.ensure_budget(dataset_id, None)
        a = amount_of(allowance)
        self._q(
            "INSERT INTO instancedp_allowances VALUES (%s, %s, %s, %s, %s, %s, instancedp_mac("
            "instancedp_amount_text('allowance', %s, %s, %s, %s, %s, %s, %s, ''))) "
            "ON CONFLICT DO NOTHING RETURNING 1",
            (
                dataset_id,
                principal,
                a.epsilon,
                a.delta,
                a.rho,
                a.mu2,
                dataset_id,
                principal,
                b.kind,
                a.epsilon,
                a.delta,
                a.rho,
                a.mu2,
            ),
        )
        return a

    def spent(self, dataset_id: str = "default", principal: str | None = None) -> Amount:
        have = self._budget(dataset_id)
        if have is None:
            raise LedgerError(f"the PostgreSQL ledger has no budget for dataset '{dataset_id}'")
        rows = self._q(
            "SELECT epsilon, delta, rho, mu2 FROM instancedp_totals WHERE dataset_id=%s "
            "AND principal=%s",
            (dataset_id, principal or ""),
        )
        if not rows:
            return Amount(have[0].kind)
        return _norm(Amount(have[0].kind, *(Decimal(x) for x in rows[0])))

    def remaining(self, dataset_id: str = "default") -> Amount:
        b = self.ensure_budget(dataset_id, None)
        return (b - self.spent(dataset_id)).clipped()

    def price(self, dataset_id: str, guarantee: Guarantee, convert_delta: Any = None) -> Amount:
        return charge_amount(self.ensure_budget(dataset_id, None).kind, guarantee, convert_delta)

    def charge(
        self,
        dataset_id: str,
        guarantee: Guarantee,
        *,
        mechanism: str = "",
        parameters: dict[str, Any] | None = None,
        convert_delta: Any = None,
        principal: str | None = None,
    ) -> Charge:
        """Charge through ``instancedp_charge`` (the principal is the session user)."""
        if principal is not None:
            raise LedgerError(
                "the PostgreSQL ledger takes the principal from the database session user, "
                "not from the caller: connect as that user"
            )
        cost = self.price(dataset_id, guarantee, convert_delta)
        params = json.dumps(dict(parameters or {}), sort_keys=True, default=str)
        g = json.dumps(guarantee.as_dict(), sort_keys=True)
        cid = self._q(
            "SELECT instancedp_charge(%s, %s, %s, %s, %s, %s, %s, %s, %s)",
            (
                dataset_id,
                cost.kind,
                cost.epsilon,
                cost.delta,
                cost.rho,
                cost.mu2,
                g,
                mechanism,
                params,
            ),
        )[0][0]
        if cid < 0:
            remaining = self.remaining(dataset_id)
            who = "allowance of this principal" if cid == -2 else f"dataset '{dataset_id}'"
            raise BudgetExceeded(
                f"budget exhausted for {who}: this release needs {cost.describe(ROUND_CEILING)} "
                f"(dataset remaining {remaining.describe(ROUND_FLOOR)})",
                remaining,
                cost,
            )
        return Charge(int(cid), cost, self.remaining(dataset_id))

    def mark(self, charge_id: int, status: str) -> None:
        """Record how a charged release ended (only for the caller's own charges)."""
        self._q("SELECT instancedp_mark(%s, %s)", (charge_id, status))

    def count(self, dataset_id: str | None = None) -> int:
        if dataset_id is None:
            return int(self._q("SELECT n FROM instancedp_head")[0][0])
        rows = self._q(
            "SELECT n FROM instancedp_totals WHERE dataset_id=%s AND principal=''", (dataset_id,)
        )
        return int(rows[0][0]) if rows else 0

    def datasets(self) -> list[str]:
        return [r[0] for r in self._q("SELECT dataset_id FROM instancedp_budgets ORDER BY 1")]

    def budget(self, dataset_id: str = "default") -> Amount | None:
        have = self._budget(dataset_id)
        return _norm(have[0]) if have else None

    def history(self, dataset_id: str | None = None) -> list[dict[str, Any]]:
        sql = (
            "SELECT c.id, c.dataset_id, c.principal, c.created_at::text, c.guarantee, "
            "c.mechanism, c.parameters, COALESCE(o.status, 'charged') FROM instancedp_charges c "
            "LEFT JOIN instancedp_outcomes o ON o.charge_id = c.id"
        )
        rows = (
            self._q(sql + " WHERE c.dataset_id=%s ORDER BY c.id", (dataset_id,))
            if dataset_id is not None
            else self._q(sql + " ORDER BY c.id")
        )
        return [history_row(r) for r in rows]

    def principals(self, dataset_id: str) -> list[dict[str, Any]]:
        kind = self.ensure_budget(dataset_id, None).kind
        rows = self._q(
            "SELECT t.principal, t.epsilon, t.delta, t.rho, t.mu2, t.n, a.epsilon, a.delta, "
            "a.rho, a.mu2 FROM instancedp_totals t LEFT JOIN instancedp_allowances a ON "
            "a.dataset_id = t.dataset_id AND a.principal = t.principal WHERE "
            "t.dataset_id=%s AND t.principal <> '' ORDER BY 1",
            (dataset_id,),
        )
        return [
            {
                "principal": r[0],
                "spent": _norm(Amount(kind, *(Decimal(x) for x in r[1:5]))).as_dict(ROUND_CEILING),
                "releases": r[5],
                "allowance": _norm(Amount(kind, *(Decimal(x) for x in r[6:10]))).as_dict()
                if r[6] is not None
                else None,
            }
            for r in rows
        ]

    def summary(self) -> list[dict[str, Any]]:
        out = []
        for ds in self.datasets():
            b = self.ensure_budget(ds, None)
            s = self.spent(ds)
            out.append(summary_row(self, ds, b, s))
        return out

    def verify(self) -> VerifyReport:
        """Walk the whole chain on the server (``instancedp_verify``)."""
        n, problems = self._q("SELECT * FROM instancedp_verify()")[0]
        return VerifyReport(self.path, int(n), self.mode, tuple(problems or ()))

    def integrity_check(self) -> str:
        return "ok" if not self.verify().problems else "damaged"


def _damaged(why: str) -> LedgerError:
    return LedgerError(
        f"the PostgreSQL ledger failed its integrity check: {why} — it was damaged or edited "
        "(refused, never treated as new); run `instancedp ledger verify` on its URL and restore "
        "it from a backup"
    )


def _norm(a: Amount) -> Amount:
    """Drop the trailing zeros numeric adds, so amounts compare and print as given."""
    return Amount(
        a.kind,
        *(
            Decimal(x).normalize(_EXACT) if x else Decimal(0)
            for x in (a.epsilon, a.delta, a.rho, a.mu2)
        ),
    )


def _cause(exc: BaseException) -> str:
    """The server's message, first line, without connection details."""
    msg = str(getattr(exc, "diag", None) and exc.diag.message_primary or exc)
    return msg.splitlines()[0] if msg else type(exc).__name__
