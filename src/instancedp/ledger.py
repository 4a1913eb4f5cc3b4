"""A persistent privacy-budget ledger in SQLite.

Every release is *charged before noise is drawn*: the charge is committed in a
``BEGIN IMMEDIATE`` transaction (which takes SQLite's write lock before it
reads the running total), so two processes can never both see room for one
last release, and a release interrupted after its charge can only
over-count.  The database runs in WAL mode with ``synchronous=FULL`` so a
committed charge survives a crash of the process or the machine.

Budget arithmetic is exact: each guarantee's parameters enter as
``decimal.Decimal`` built from the float's shortest ``repr`` (so ε = 0.05 is
the decimal 0.05, and forty of them are exactly 2.0), and sums are decimal.

Composition (what a budget of each type accepts):

- **pure ε budget** — pure ε-DP releases (and (ε, 0)-DP); ε adds up (basic
  composition, Dwork & Roth 2014 Thm. 3.16).  An (ε, δ > 0) or zCDP release is
  refused: it does not imply pure DP.
- **(ε, δ) budget** — pure and (ε, δ) releases; ε and δ add up separately
  (basic composition, Dwork & Roth 2014 Thm. 3.16).  A ρ-zCDP release is
  charged as the (ε′, δ′)-DP it implies for a δ′ the caller states
  (``convert_delta``; Canonne, Kamath & Steinke 2020 Prop. 12 via
  :func:`instancedp.privacy.zcdp_to_epsilon`, rounded up); without one it is
  refused.
- **ρ zCDP budget** — zCDP releases add ρ (Bun & Steinke 2016 Lemma 2.3); a
  pure ε-DP release counts as ρ = ε²/2 (ibid. Prop. 1.4).  An (ε, δ > 0)
  release is refused: it implies no zCDP bound.

Because each charge is fixed before its release runs, these sums are valid
*privacy filters* even when later parameters depend on earlier outputs:
basic composition is a valid filter (Rogers, Roth, Ullman & Vadhan 2016), and
so is the sum of ρ for zCDP (Feldman & Zrnic 2021, Rényi filter, at every
order α).
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal, localcontext
from pathlib import Path
from typing import Any

from .errors import BudgetExceeded, CompositionError, LedgerError
from .privacy import ZCDP, ApproxDP, Guarantee, PureDP, zcdp_to_epsilon

__all__ = [
    "Amount",
    "BudgetExceeded",
    "CompositionError",
    "Ledger",
    "LedgerError",
    "amount_of",
    "charge_amount",
]

SCHEMA_VERSION = "1"
_APP = "instancedp-ledger"
_PREC = 60  # decimal digits: ε² of a 17-digit repr is exact at 34


def _dec(x: Any) -> Decimal:
    """The decimal a float *means*: built from its shortest repr (0.05 → 0.05)."""
    if isinstance(x, Decimal):
        return x
    if isinstance(x, str):
        return Decimal(x)
    return Decimal(repr(float(x)))


@dataclass(frozen=True)
class Amount:
    """A budget or a charge in one currency.

    ``kind`` is ``"pure"`` (ε), ``"approx"`` (ε, δ) or ``"zcdp"`` (ρ); unused
    fields are zero.  All fields are exact decimals.
    """

    kind: str
    epsilon: Decimal = Decimal(0)
    delta: Decimal = Decimal(0)
    rho: Decimal = Decimal(0)

    def __add__(self, other: Amount) -> Amount:
        if other.kind != self.kind:
            raise CompositionError(f"cannot add a {other.kind} amount to a {self.kind} amount")
        with localcontext() as ctx:
            ctx.prec = _PREC
            return Amount(
                self.kind,
                self.epsilon + other.epsilon,
                self.delta + other.delta,
                self.rho + other.rho,
            )

    def __sub__(self, other: Amount) -> Amount:
        if other.kind != self.kind:
            raise CompositionError(f"cannot subtract a {other.kind} amount from a {self.kind}")
        with localcontext() as ctx:
            ctx.prec = _PREC
            return Amount(
                self.kind,
                self.epsilon - other.epsilon,
                self.delta - other.delta,
                self.rho - other.rho,
            )

    def fits_in(self, total: Amount) -> bool:
        """Every coordinate ≤ the total's."""
        return self.epsilon <= total.epsilon and self.delta <= total.delta and self.rho <= total.rho

    def clipped(self) -> Amount:
        """Negative coordinates (an over-spent ledger cannot occur, but be safe) → 0."""
        z = Decimal(0)
        return Amount(self.kind, max(self.epsilon, z), max(self.delta, z), max(self.rho, z))

    def describe(self) -> str:
        if self.kind == "pure":
            return f"epsilon={_fmt(self.epsilon)}"
        if self.kind == "approx":
            return f"epsilon={_fmt(self.epsilon)}, delta={_fmt(self.delta)}"
        return f"rho={_fmt(self.rho)}"

    def as_dict(self) -> dict[str, Any]:
        """Plain floats for JSON (exact strings under ``exact``)."""
        d: dict[str, Any] = {"type": self.kind}
        fields = {"pure": ("epsilon",), "approx": ("epsilon", "delta"), "zcdp": ("rho",)}
        for f in fields[self.kind]:
            d[f] = float(getattr(self, f))
        d["exact"] = {f: _fmt(getattr(self, f)) for f in fields[self.kind]}
        return d

    def to_guarantee(self) -> Guarantee:
        if self.kind == "pure":
            return PureDP(float(self.epsilon))
        if self.kind == "approx":
            return ApproxDP(float(self.epsilon), float(self.delta))
        return ZCDP(float(self.rho))


def _fmt(d: Decimal) -> str:
    """Plain positional notation without trailing zeros (2.00 → 2, 1E-5 → 0.00001)."""
    return format(d.normalize(), "f")


def amount_of(budget: Guarantee) -> Amount:
    """A budget guarantee as an exact amount."""
    if isinstance(budget, PureDP):
        return Amount("pure", epsilon=_dec(budget.epsilon))
    if isinstance(budget, ApproxDP):
        if budget.delta == 0:
            return Amount("pure", epsilon=_dec(budget.epsilon))
        return Amount("approx", epsilon=_dec(budget.epsilon), delta=_dec(budget.delta))
    if isinstance(budget, ZCDP):
        return Amount("zcdp", rho=_dec(budget.rho))
    raise TypeError(
        f"budget must be PureDP, ApproxDP or ZCDP from instancedp.privacy, got {budget!r}"
    )


def charge_amount(budget_kind: str, guarantee: Guarantee, convert_delta: Any = None) -> Amount:
    """What a release with ``guarantee`` costs in a budget of ``budget_kind``.

    Raises :class:`CompositionError` for combinations that cannot be composed
    honestly (see the module docstring).
    """
    is_pure = isinstance(guarantee, PureDP) or (
        isinstance(guarantee, ApproxDP) and guarantee.delta == 0
    )
    if budget_kind == "pure":
        if is_pure:
            return Amount("pure", epsilon=_dec(guarantee.epsilon))
        raise CompositionError(
            f"a {guarantee.describe()} release cannot be charged to a pure epsilon-DP budget "
            "(it does not imply pure DP): use a pure mechanism, or a ledger with a delta "
            "(--budget-delta) or a zCDP budget (--budget-rho)"
        )
    if budget_kind == "approx":
        if is_pure:
            return Amount("approx", epsilon=_dec(guarantee.epsilon))
        if isinstance(guarantee, ApproxDP):
            return Amount("approx", epsilon=_dec(guarantee.epsilon), delta=_dec(guarantee.delta))
        if isinstance(guarantee, ZCDP):
            if convert_delta is None:
                raise CompositionError(
                    f"a {guarantee.describe()} release needs a conversion delta to be charged to "
                    "an (epsilon, delta) budget: pass convert_delta (CLI: --zcdp-delta D, a "
                    "number in (0, 1)), or use a zCDP budget (--budget-rho)"
                )
            from . import _validate

            d = _validate.delta(convert_delta, "convert_delta", allow_zero=False)
            eps = zcdp_to_epsilon(guarantee.rho, d)
            # Round up a few ulps so float error in the conversion never under-charges.
            eps = math.nextafter(eps * (1 + 1e-12), math.inf)
            return Amount("approx", epsilon=_dec(eps), delta=_dec(d))
    if budget_kind == "zcdp":
        if isinstance(guarantee, ZCDP):
            return Amount("zcdp", rho=_dec(guarantee.rho))
        if is_pure:
            with localcontext() as ctx:
                ctx.prec = _PREC
                e = _dec(guarantee.epsilon)
                return Amount("zcdp", rho=e * e / 2)
        raise CompositionError(
            f"a {guarantee.describe()} release cannot be charged to a zCDP budget "
            "((epsilon, delta)-DP implies no zCDP bound): use a pure or zCDP mechanism, or a "
            "ledger with an (epsilon, delta) budget"
        )
    raise LedgerError(f"unknown budget type {budget_kind!r} in the ledger")


def _guarantee_json(g: Guarantee) -> str:
    return json.dumps(g.as_dict(), sort_keys=True)


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="microseconds")


@dataclass(frozen=True)
class Charge:
    """A committed charge: its row id, cost, and what remains after it."""

    id: int
    amount: Amount
    remaining: Amount


class Ledger:
    """The SQLite ledger at ``path`` (``":memory:"`` for an in-process one).

    ``create=False`` refuses to make a new file (for ``ledger show``).
    Connections wait up to ``timeout`` seconds for the write lock.
    """

    def __init__(self, path: str | Path, *, create: bool = True, timeout: float = 60.0) -> None:
        self.path = str(path)
        memory = self.path == ":memory:"
        if not memory:
            p = Path(self.path)
            if p.is_dir():
                raise LedgerError(f"ledger path {self.path} is a directory: pass a file path")
            if not p.exists() and not create:
                raise LedgerError(
                    f"ledger {self.path} does not exist: create it with "
                    f"`instancedp ledger init {self.path} --epsilon E`"
                )
            if not p.parent.exists():
                raise LedgerError(
                    f"ledger directory {p.parent} does not exist: create it or pass another path"
                )
        try:
            self._con = sqlite3.connect(self.path, timeout=timeout, isolation_level=None)
            if not memory:
                self._con.execute("PRAGMA journal_mode=WAL")
            self._con.execute("PRAGMA synchronous=FULL")
            self._setup()
        except sqlite3.DatabaseError as exc:
            self._close_quietly()
            raise LedgerError(
                f"ledger {self.path} is not a readable instancedp ledger ({exc}): pass a ledger "
                "made by `instancedp ledger init`, or a new path"
            ) from None

    # -- set-up -----------------------------------------------------------
    def _setup(self) -> None:
        con = self._con
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if not tables:
            con.execute("BEGIN IMMEDIATE")
            try:
                con.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
                con.execute(
                    "CREATE TABLE IF NOT EXISTS budgets (dataset_id TEXT PRIMARY KEY, "
                    "kind TEXT NOT NULL, epsilon TEXT NOT NULL, delta TEXT NOT NULL, "
                    "rho TEXT NOT NULL, created_at TEXT NOT NULL)"
                )
                con.execute(
                    "CREATE TABLE IF NOT EXISTS charges (id INTEGER PRIMARY KEY AUTOINCREMENT, "
                    "dataset_id TEXT NOT NULL REFERENCES budgets(dataset_id), "
                    "created_at TEXT NOT NULL, kind TEXT NOT NULL, epsilon TEXT NOT NULL, "
                    "delta TEXT NOT NULL, rho TEXT NOT NULL, guarantee TEXT NOT NULL, "
                    "mechanism TEXT NOT NULL, parameters TEXT NOT NULL, "
                    "status TEXT NOT NULL DEFAULT 'charged')"
                )
                con.execute("CREATE INDEX IF NOT EXISTS charges_ds ON charges(dataset_id)")
                con.execute("INSERT OR IGNORE INTO meta VALUES ('app', ?)", (_APP,))
                con.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
                con.execute("COMMIT")
            except BaseException:
                con.execute("ROLLBACK")
                raise
            tables = {"meta", "budgets", "charges"}
        app = None
        if "meta" in tables:
            row = con.execute("SELECT value FROM meta WHERE key='app'").fetchone()
            app = row[0] if row else None
        if app != _APP or not {"budgets", "charges"} <= tables:
            raise LedgerError(
                f"ledger {self.path} is an SQLite database but not an instancedp ledger: "
                "pass a ledger made by `instancedp ledger init`, or a new path"
            )

    def _close_quietly(self) -> None:
        try:
            self._con.close()
        except Exception:
            pass

    def close(self) -> None:
        self._con.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- budgets ------------------------------------------------------------
    def _budget_row(self, dataset_id: str) -> Amount | None:
        row = self._con.execute(
            "SELECT kind, epsilon, delta, rho FROM budgets WHERE dataset_id=?", (dataset_id,)
        ).fetchone()
        if row is None:
            return None
        return Amount(row[0], Decimal(row[1]), Decimal(row[2]), Decimal(row[3]))

    def budget(self, dataset_id: str = "default") -> Amount | None:
        """The total budget on record for ``dataset_id`` (None if there is none)."""
        return self._budget_row(dataset_id)

    def datasets(self) -> list[str]:
        return [r[0] for r in self._con.execute("SELECT dataset_id FROM budgets ORDER BY 1")]

    def ensure_budget(self, dataset_id: str, budget: Guarantee | None) -> Amount:
        """Record ``budget`` for ``dataset_id`` on first use; later, refuse a different one.

        ``budget=None`` uses the budget on record (an error if there is none).
        """
        _check_id(dataset_id)
        want = amount_of(budget) if budget is not None else None
        con = self._con
        con.execute("BEGIN IMMEDIATE")
        try:
            have = self._budget_row(dataset_id)
            if have is None:
                if want is None:
                    raise LedgerError(
                        f"ledger {self.path} has no budget for dataset '{dataset_id}': pass a "
                        "budget (CLI: --budget-epsilon E [--budget-delta D]) or run "
                        "`instancedp ledger init`"
                    )
                con.execute(
                    "INSERT INTO budgets VALUES (?, ?, ?, ?, ?, ?)",
                    (
                        dataset_id,
                        want.kind,
                        str(want.epsilon),
                        str(want.delta),
                        str(want.rho),
                        _now(),
                    ),
                )
                have = want
            elif want is not None and want != have:
                raise LedgerError(
                    f"ledger {self.path} already holds a total budget of {have.describe()} "
                    f"({have.kind}) for dataset '{dataset_id}', not {want.describe()}: "
                    "pass the same total, or use another ledger or dataset id"
                )
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
        return have

    # -- spending -------------------------------------------------------------
    def _spent(self, dataset_id: str, kind: str) -> Amount:
        total = Amount(kind)
        for e, d, r in self._con.execute(
            "SELECT epsilon, delta, rho FROM charges WHERE dataset_id=?", (dataset_id,)
        ):
            total = total + Amount(kind, Decimal(e), Decimal(d), Decimal(r))
        return total

    def spent(self, dataset_id: str = "default") -> Amount:
        b = self._require_budget(dataset_id)
        return self._spent(dataset_id, b.kind)

    def remaining(self, dataset_id: str = "default") -> Amount:
        b = self._require_budget(dataset_id)
        return (b - self._spent(dataset_id, b.kind)).clipped()

    def _require_budget(self, dataset_id: str) -> Amount:
        b = self._budget_row(dataset_id)
        if b is None:
            raise LedgerError(
                f"ledger {self.path} has no budget for dataset '{dataset_id}': create it with "
                "`instancedp ledger init` or pass a budget"
            )
        return b

    def price(self, dataset_id: str, guarantee: Guarantee, convert_delta: Any = None) -> Amount:
        """What ``guarantee`` would cost here (no charge; raises CompositionError)."""
        return charge_amount(self._require_budget(dataset_id).kind, guarantee, convert_delta)

    def charge(
        self,
        dataset_id: str,
        guarantee: Guarantee,
        *,
        mechanism: str = "",
        parameters: Mapping[str, Any] | None = None,
        convert_delta: Any = None,
    ) -> Charge:
        """Atomically check the budget and record the charge (before any noise).

        Raises :class:`BudgetExceeded` (nothing recorded) if it does not fit.
        """
        params = json.dumps(dict(parameters or {}), sort_keys=True, default=str)
        con = self._con
        con.execute("BEGIN IMMEDIATE")
        try:
            budget = self._require_budget(dataset_id)
            cost = charge_amount(budget.kind, guarantee, convert_delta)
            spent = self._spent(dataset_id, budget.kind)
            after = spent + cost
            if not after.fits_in(budget):
                remaining = (budget - spent).clipped()
                raise BudgetExceeded(
                    f"budget exhausted for dataset '{dataset_id}': this release needs "
                    f"{cost.describe()} but only {remaining.describe()} remains "
                    f"(total {budget.describe()})",
                    remaining,
                    cost,
                )
            cur = con.execute(
                "INSERT INTO charges (dataset_id, created_at, kind, epsilon, delta, rho, "
                "guarantee, mechanism, parameters) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    dataset_id,
                    _now(),
                    cost.kind,
                    str(cost.epsilon),
                    str(cost.delta),
                    str(cost.rho),
                    _guarantee_json(guarantee),
                    mechanism,
                    params,
                ),
            )
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
        return Charge(int(cur.lastrowid), cost, (budget - after).clipped())

    def mark(self, charge_id: int, status: str) -> None:
        """Record how a charged release ended ('released', 'refused', 'failed')."""
        self._con.execute("UPDATE charges SET status=? WHERE id=?", (status, charge_id))

    # -- inspection -------------------------------------------------------------
    def history(self, dataset_id: str | None = None) -> list[dict[str, Any]]:
        sql = (
            "SELECT id, dataset_id, created_at, guarantee, mechanism, parameters, status "
            "FROM charges"
        )
        args: tuple = ()
        if dataset_id is not None:
            sql += " WHERE dataset_id=?"
            args = (dataset_id,)
        out = []
        for row in self._con.execute(sql + " ORDER BY id", args):
            out.append(
                {
                    "id": row[0],
                    "dataset_id": row[1],
                    "created_at": row[2],
                    "guarantee": json.loads(row[3]),
                    "mechanism": row[4],
                    "parameters": json.loads(row[5]),
                    "status": row[6],
                }
            )
        return out

    def count(self, dataset_id: str | None = None) -> int:
        if dataset_id is None:
            return int(self._con.execute("SELECT COUNT(*) FROM charges").fetchone()[0])
        return int(
            self._con.execute(
                "SELECT COUNT(*) FROM charges WHERE dataset_id=?", (dataset_id,)
            ).fetchone()[0]
        )

    def summary(self) -> list[dict[str, Any]]:
        """One row per dataset: total, spent, remaining, number of releases."""
        rows = []
        for ds in self.datasets():
            b = self._require_budget(ds)
            s = self._spent(ds, b.kind)
            rows.append(
                {
                    "dataset_id": ds,
                    "budget": b.as_dict(),
                    "spent": s.as_dict(),
                    "remaining": (b - s).clipped().as_dict(),
                    "releases": self.count(ds),
                }
            )
        return rows

    def integrity_check(self) -> str:
        return str(self._con.execute("PRAGMA integrity_check").fetchone()[0])


def _check_id(dataset_id: Any) -> None:
    if not isinstance(dataset_id, str) or not dataset_id:
        raise ValueError(f"dataset_id must be a non-empty string, got {dataset_id!r}")
