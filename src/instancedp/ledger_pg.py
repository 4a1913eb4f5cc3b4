"""The ledger on a PostgreSQL server (psycopg 3), for a team sharing one budget.

Same semantics as the SQLite ledger: a charge checks the dataset's running
total and the principal's allowance and appends a hash-chained row in one
transaction, serialised on the head row (``SELECT … FOR UPDATE``).  Charges go
through the ``SECURITY DEFINER`` function ``instancedp_charge``; the principal
is ``session_user``, never a name the client sends.  Roles: docs/ledger.md.
Credentials come from the URL, the environment or a service file, as libpq
reads them; no message repeats the URL.
"""

from __future__ import annotations

import hashlib
import json
import threading
from decimal import Decimal
from typing import Any

from .errors import BudgetExceeded, LedgerError
from .ledger import (
    RELATIONS,
    Amount,
    Charge,
    VerifyReport,
    amount_of,
    charge_amount,
    history_row,
    summary_row,
)
from .privacy import Guarantee

SCHEMA = r"""
CREATE TABLE IF NOT EXISTS instancedp_budgets (
  dataset_id text PRIMARY KEY, kind text NOT NULL, epsilon numeric NOT NULL,
  delta numeric NOT NULL, rho numeric NOT NULL, mu2 numeric NOT NULL,
  relation text NOT NULL, created_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE IF NOT EXISTS instancedp_allowances (
  dataset_id text NOT NULL, principal text NOT NULL, epsilon numeric NOT NULL,
  delta numeric NOT NULL, rho numeric NOT NULL, mu2 numeric NOT NULL,
  PRIMARY KEY (dataset_id, principal));
CREATE TABLE IF NOT EXISTS instancedp_totals (
  dataset_id text NOT NULL, principal text NOT NULL, epsilon numeric NOT NULL,
  delta numeric NOT NULL, rho numeric NOT NULL, mu2 numeric NOT NULL, n bigint NOT NULL,
  PRIMARY KEY (dataset_id, principal));
CREATE TABLE IF NOT EXISTS instancedp_charges (
  id bigint PRIMARY KEY, dataset_id text NOT NULL, principal text NOT NULL,
  created_at timestamptz NOT NULL, kind text NOT NULL, epsilon numeric NOT NULL,
  delta numeric NOT NULL, rho numeric NOT NULL, mu2 numeric NOT NULL,
  guarantee text NOT NULL, mechanism text NOT NULL, parameters text NOT NULL,
  prev_hash text NOT NULL, hash text NOT NULL);
CREATE TABLE IF NOT EXISTS instancedp_head (
  one int PRIMARY KEY CHECK (one = 1), n bigint NOT NULL, last_hash text NOT NULL);
INSERT INTO instancedp_head VALUES (1, 0, repeat('0', 64)) ON CONFLICT DO NOTHING;

CREATE OR REPLACE FUNCTION instancedp_charge(
  p_dataset text, p_kind text, p_eps numeric, p_delta numeric, p_rho numeric,
  p_mu2 numeric, p_guarantee text, p_mechanism text, p_parameters text)
RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
DECLARE
  b instancedp_budgets; t instancedp_totals; pt instancedp_totals; a instancedp_allowances;
  h instancedp_head; who text := session_user; cid bigint; hs text; at timestamptz := now();
BEGIN
  IF p_eps < 0 OR p_delta < 0 OR p_rho < 0 OR p_mu2 < 0 THEN
    RAISE EXCEPTION 'instancedp: a charge cannot be negative';
  END IF;
  SELECT * INTO h FROM instancedp_head WHERE one = 1 FOR UPDATE;  -- serialises charges
  SELECT * INTO b FROM instancedp_budgets WHERE dataset_id = p_dataset;
  IF NOT FOUND THEN RAISE EXCEPTION 'instancedp: no budget for dataset %', p_dataset; END IF;
  IF b.kind <> p_kind THEN RAISE EXCEPTION 'instancedp: wrong budget type'; END IF;
  SELECT * INTO t FROM instancedp_totals WHERE dataset_id = p_dataset AND principal = '';
  IF NOT FOUND THEN t := ROW(p_dataset, '', 0, 0, 0, 0, 0); END IF;
  IF t.epsilon + p_eps > b.epsilon OR t.delta + p_delta > b.delta OR t.rho + p_rho > b.rho
     OR t.mu2 + p_mu2 > b.mu2 THEN
    RETURN -1;
  END IF;
  SELECT * INTO pt FROM instancedp_totals WHERE dataset_id = p_dataset AND principal = who;
  IF NOT FOUND THEN pt := ROW(p_dataset, who, 0, 0, 0, 0, 0); END IF;
  SELECT * INTO a FROM instancedp_allowances WHERE dataset_id = p_dataset AND principal = who;
  IF FOUND AND (pt.epsilon + p_eps > a.epsilon OR pt.delta + p_delta > a.delta
                OR pt.rho + p_rho > a.rho OR pt.mu2 + p_mu2 > a.mu2) THEN
    RETURN -2;
  END IF;
  cid := h.n + 1;
  hs := encode(sha256(convert_to(concat_ws('|', cid, p_dataset, who, p_kind, p_eps, p_delta,
        p_rho, p_mu2, p_guarantee, p_mechanism, p_parameters, h.last_hash), 'UTF8')), 'hex');
  INSERT INTO instancedp_charges VALUES (cid, p_dataset, who, at, p_kind, p_eps, p_delta, p_rho,
    p_mu2, p_guarantee, p_mechanism, p_parameters, h.last_hash, hs);
  INSERT INTO instancedp_totals VALUES (p_dataset, '', p_eps, p_delta, p_rho, p_mu2, 1),
                                       (p_dataset, who, p_eps, p_delta, p_rho, p_mu2, 1)
    ON CONFLICT (dataset_id, principal) DO UPDATE SET
      epsilon = instancedp_totals.epsilon + excluded.epsilon,
      delta = instancedp_totals.delta + excluded.delta, rho = instancedp_totals.rho + excluded.rho,
      mu2 = instancedp_totals.mu2 + excluded.mu2, n = instancedp_totals.n + 1;
  UPDATE instancedp_head SET n = cid, last_hash = hs WHERE one = 1;
  RETURN cid;
END $$;
REVOKE ALL ON FUNCTION instancedp_charge(text, text, numeric, numeric, numeric, numeric, text,
  text, text) FROM PUBLIC;
"""


def _fmt_num(d: Decimal) -> str:
    """numeric's text form as concat_ws prints it (PostgreSQL keeps the scale it was given)."""
    return str(d)


class PostgresLedger:
    """The ledger at a ``postgresql://`` URL.  ``init=True`` creates the schema (owner)."""

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
    ) -> None:
        # ``create`` is accepted for the common signature; only ``init`` (the owner) makes
        # the schema, never an analyst's release.
        if principal is not None:
            raise LedgerError(
                "the PostgreSQL ledger takes the principal from the database session user: "
                "connect as that user instead of passing principal"
            )
        if key is not None or key_file is not None:
            raise LedgerError(
                "the PostgreSQL ledger is guarded by database roles, not a MAC key: pass no key"
            )
        self.principal = None
        try:
            import psycopg
        except ImportError:  # pragma: no cover - psycopg is a dependency
            raise LedgerError("a PostgreSQL ledger needs psycopg 3 (pip install psycopg)") from None
        self.path = "postgresql ledger"  # never the URL: it may hold a password
        self._lock = threading.RLock()
        try:
            self._con = psycopg.connect(url, autocommit=True, connect_timeout=int(timeout))
            if init:
                with self._con.transaction():
                    self._con.execute("SELECT pg_advisory_xact_lock(4242424242)")
                    self._con.execute(SCHEMA)
            self._con.execute("SELECT n FROM instancedp_head").fetchone()
        except psycopg.Error as exc:
            raise LedgerError(f"the PostgreSQL ledger cannot be used: {_cause(exc)}") from None

    def close(self) -> None:
        self._con.close()

    def __enter__(self) -> PostgresLedger:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _q(self, sql: str, args: tuple = ()) -> list[tuple]:
        import psycopg

        with self._lock:
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
            raise LedgerError(f"relation must be one of {', '.join(RELATIONS)}")
        if budget is not None:
            a = amount_of(budget)
            self._q(
                "INSERT INTO instancedp_budgets (dataset_id, kind, epsilon, delta, rho, mu2, "
                "relation) VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING "
                "RETURNING 1",
                (dataset_id, a.kind, a.epsilon, a.delta, a.rho, a.mu2, relation or "add_remove"),
            )
        have = self._budget(dataset_id)
        if have is None:
            raise LedgerError(f"the PostgreSQL ledger has no budget for dataset '{dataset_id}'")
        amount, rel = have
        if budget is not None and _norm(amount) != _norm(amount_of(budget)):
            raise LedgerError(
                f"the PostgreSQL ledger already holds a total budget of {amount.describe()} "
                f"for dataset '{dataset_id}'"
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
        a = amount_of(allowance)
        self._q(
            "INSERT INTO instancedp_allowances VALUES (%s, %s, %s, %s, %s, %s) "
            "ON CONFLICT DO NOTHING RETURNING 1",
            (dataset_id, principal, a.epsilon, a.delta, a.rho, a.mu2),
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
                f"budget exhausted for {who}: this release needs {cost.describe()} "
                f"(dataset remaining {remaining.describe()})",
                remaining,
                cost,
            )
        return Charge(int(cid), cost, self.remaining(dataset_id))

    def mark(self, charge_id: int, status: str) -> None:
        """Outcomes are not recorded on the server (the charge is what counts)."""

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
            "SELECT id, dataset_id, principal, created_at::text, guarantee, mechanism, "
            "parameters FROM instancedp_charges"
        )
        rows = (
            self._q(sql + " WHERE dataset_id=%s ORDER BY id", (dataset_id,))
            if dataset_id is not None
            else self._q(sql + " ORDER BY id")
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
                "spent": _norm(Amount(kind, *(Decimal(x) for x in r[1:5]))).as_dict(),
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
        problems: list[str] = []
        prev = "0" * 64
        n = 0
        rows = self._q(
            "SELECT id, dataset_id, principal, kind, epsilon::text, delta::text, rho::text, "
            "mu2::text, guarantee, mechanism, parameters, prev_hash, hash "
            "FROM instancedp_charges ORDER BY id"
        )
        for r in rows:
            n += 1
            if r[0] != n:
                problems.append(f"charge #{n} is missing")
                n = r[0]
            text = "|".join(str(x) for x in (*r[:11], prev))
            if r[11] != prev or hashlib.sha256(text.encode()).hexdigest() != r[12]:
                problems.append(f"charge #{r[0]} was edited or does not link")
            prev = r[12]
        head = self._q("SELECT n, last_hash FROM instancedp_head")[0]
        if head[0] != n or head[1] != prev:
            problems.append("the head does not match the last charge")
        return VerifyReport(self.path, n, "sha256 (roles guard the rows)", tuple(problems))


def _norm(a: Amount) -> Amount:
    """Drop the trailing zeros numeric adds, so amounts compare and print as given."""
    return Amount(
        a.kind,
        *(Decimal(x).normalize() if x else Decimal(0) for x in (a.epsilon, a.delta, a.rho, a.mu2)),
    )


def _cause(exc: BaseException) -> str:
    """The server's message, first line, without connection details."""
    msg = str(getattr(exc, "diag", None) and exc.diag.message_primary or exc)
    return msg.splitlines()[0] if msg else type(exc).__name__
