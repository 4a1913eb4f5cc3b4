"""A persistent privacy-budget ledger in SQLite.

Every release is *charged before noise is drawn*: the charge is committed in a
``BEGIN IMMEDIATE`` transaction (which takes SQLite's write lock before it
reads the running total), so two processes can never both see room for one
last release, and a release interrupted after its charge can only
over-count.  The database runs in WAL mode with ``synchronous=FULL`` so a
committed charge survives a crash of the process or the machine.

Budget arithmetic is exact and rounds against the analyst: each guarantee's
parameters enter as the exact rational value of the float the mechanism used
(``Decimal(0.1)`` is 0.1000000000000000055511151231257827…, never the shorter
decimal 0.1 that lies below it), and sums and comparisons are exact decimal
arithmetic (an inexact step raises instead of rounding).  So ten releases of
ε = 0.1 cost slightly more than 1: a budget of 1.0 holds nine of them and a
tenth only if the budget is the float sum; dyadic ε (0.125, 2⁻²⁰) add up
without any excess.

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
  pure ε-DP release counts as ρ = ε²/2 (ibid. Prop. 1.4), a μ-GDP release as
  ρ = μ²/2.  An (ε, δ > 0) release is refused: it implies no zCDP bound.
- **μ Gaussian-DP budget** — μ-GDP releases add μ² (Dong, Roth & Su 2022
  Cor. 3.3; a valid filter by Smith & Thakurta 2022); a pure ε-DP release
  counts as μ = −2Φ⁻¹(1/(1+e^ε)).  For Gaussian releases this is the exact
  composition, so the total's (ε, δ) is the privacy-loss-distribution figure
  (:func:`instancedp.privacy.compose_parts` gives the cross-check).  Pick the
  μ budget of an (ε, δ) target with :func:`instancedp.privacy.gdp_mu_for`.

The conversions live in :mod:`instancedp.privacy`; this module only adds up
exact decimals and stores them.  See docs/ledger.md for the storage format,
the integrity checks and what each mode detects.

Because each charge is fixed before its release runs, these sums are valid
*privacy filters* even when later parameters depend on earlier outputs:
basic composition is a valid filter (Rogers, Roth, Ullman & Vadhan 2016), and
so is the sum of ρ for zCDP (Feldman & Zrnic 2021, Rényi filter, at every
order α).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import getpass
import hashlib
import hmac
import json
import math
import os
import secrets
import sqlite3
import threading
import time as _time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from decimal import (
    ROUND_CEILING,
    ROUND_FLOOR,
    ROUND_HALF_EVEN,
    Context,
    Decimal,
    DivisionByZero,
    Inexact,
    InvalidOperation,
    Overflow,
    localcontext,
)
from pathlib import Path
from typing import Any

from . import _validate
from .errors import BudgetExceeded, CompositionError, LedgerError, ParameterError
from .privacy import (
    ZCDP,
    ApproxDP,
    GaussianDP,
    Guarantee,
    PureDP,
    gdp_to_epsilon,
    pure_to_gdp_mu,
    zcdp_to_epsilon,
)

__all__ = [
    "Amount",
    "BudgetExceeded",
    "CompositionError",
    "Ledger",
    "LedgerError",
    "RELATIONS",
    "VerifyReport",
    "amount_of",
    "charge_amount",
]

SCHEMA_VERSION = 2
_APP = "instancedp-ledger"
# Enough digits for every exact sum or square of doubles (a double spans < 1,400
# decimal digits, its square < 2,800); an inexact step raises instead of rounding.
_PREC = 6000


_EXACT = Context(
    prec=_PREC,
    Emax=999_999,
    Emin=-999_999,
    traps=[Inexact, InvalidOperation, DivisionByZero, Overflow],
)


def _exact() -> Any:
    """A decimal context in which every step is exact (``Inexact`` is trapped)."""
    return localcontext(_EXACT)


def _dec(x: Any) -> Decimal:
    """The exact value of what the mechanism used: a float's exact binary rational
    (0.1 → 0.1000000000000000055511151231257827…), never its shorter repr, which can
    lie below it by up to half an ulp; decimals and strings (the stored form) as given."""
    if isinstance(x, Decimal):
        return x
    if isinstance(x, str):
        return Decimal(x)
    f = float(x)
    if not math.isfinite(f):
        raise ParameterError(f"a privacy parameter must be finite, got {x!r}", parameter="epsilon")
    return Decimal(f)


@dataclass(frozen=True)
class Amount:
    """A budget or a charge in one currency.

    ``kind`` is ``"pure"`` (ε), ``"approx"`` (ε, δ), ``"zcdp"`` (ρ) or
    ``"gdp"`` (μ², kept squared because squares add); unused fields are zero.
    All fields are exact decimals.
    """

    kind: str
    epsilon: Decimal = Decimal(0)
    delta: Decimal = Decimal(0)
    rho: Decimal = Decimal(0)
    mu2: Decimal = Decimal(0)

    def texts(self) -> list[str]:
        """ε, δ, ρ, μ² as the exact decimal texts the ledger stores and signs."""
        return [str(self.epsilon), str(self.delta), str(self.rho), str(self.mu2)]

    def __add__(self, other: Amount) -> Amount:
        if other.kind != self.kind:
            raise CompositionError(f"cannot add a {other.kind} amount to a {self.kind} amount")
        with _exact():
            return Amount(
                self.kind,
                self.epsilon + other.epsilon,
                self.delta + other.delta,
                self.rho + other.rho,
                self.mu2 + other.mu2,
            )

    def __sub__(self, other: Amount) -> Amount:
        if other.kind != self.kind:
            raise CompositionError(f"cannot subtract a {other.kind} amount from a {self.kind}")
        with _exact():
            return Amount(
                self.kind,
                self.epsilon - other.epsilon,
                self.delta - other.delta,
                self.rho - other.rho,
                self.mu2 - other.mu2,
            )

    def fits_in(self, total: Amount) -> bool:
        """Every coordinate ≤ the total's."""
        return (
            self.epsilon <= total.epsilon
            and self.delta <= total.delta
            and self.rho <= total.rho
            and self.mu2 <= total.mu2
        )

    def clipped(self) -> Amount:
        """Negative coordinates (an over-spent ledger cannot occur, but be safe) → 0."""
        z = Decimal(0)
        return Amount(
            self.kind, max(self.epsilon, z), max(self.delta, z), max(self.rho, z), max(self.mu2, z)
        )

    @property
    def mu(self) -> Decimal:
        """μ of a Gaussian-DP amount (√μ², 40 digits)."""
        with localcontext() as ctx:
            ctx.prec = 40
            return self.mu2.sqrt()

    def describe(self, rounding: str = ROUND_HALF_EVEN) -> str:
        """Short words for messages: a coordinate that is exactly a float prints as the
        float's repr (0.1, not its 55 exact digits); any other to 17 significant digits,
        rounded by ``rounding`` (``ROUND_CEILING`` for a cost, ``ROUND_FLOOR`` for what
        remains, so that a message never promises more room than there is)."""
        if self.kind == "pure":
            return f"epsilon={_show(self.epsilon, rounding)}"
        if self.kind == "approx":
            return f"epsilon={_show(self.epsilon, rounding)}, delta={_show(self.delta, rounding)}"
        if self.kind == "gdp":
            mu = Context(prec=10, rounding=rounding).sqrt(self.mu2)
            return f"mu={_fmt(mu)}"
        return f"rho={_show(self.rho, rounding)}"

    def as_dict(self, rounding: str = ROUND_HALF_EVEN) -> dict[str, Any]:
        """Plain floats for JSON, exact decimal strings under ``exact``, and short text
        for people under ``shown`` (rounded by ``rounding``, see :meth:`describe`)."""
        d: dict[str, Any] = {"type": self.kind}
        fields = _FIELDS[self.kind]
        for f in fields:
            d[f] = float(getattr(self, f))
        if self.kind == "gdp":
            d["mu"] = float(self.mu)
        d["exact"] = {f: _fmt(getattr(self, f)) for f in fields}
        d["shown"] = {f: _show(getattr(self, f), rounding) for f in fields}
        return d

    def to_guarantee(self) -> Guarantee:
        if self.kind == "pure":
            return PureDP(float(self.epsilon))
        if self.kind == "approx":
            return ApproxDP(float(self.epsilon), float(self.delta))
        if self.kind == "gdp":
            return GaussianDP(float(self.mu))
        return ZCDP(float(self.rho))


_FIELDS = {"pure": ("epsilon",), "approx": ("epsilon", "delta"), "zcdp": ("rho",), "gdp": ("mu2",)}


def _fmt(d: Decimal) -> str:
    """Plain positional notation without trailing zeros (2.00 → 2, 1E-5 → 0.00001), exact."""
    with _exact():
        return format(d.normalize(), "f")


def _show(d: Decimal, rounding: str = ROUND_HALF_EVEN) -> str:
    """``d`` for people: the shortest repr of a double next to ``d`` — the nearest one,
    or the one at or above ``d`` (``ROUND_CEILING``, for costs) or at or below it
    (``ROUND_FLOOR``, for what remains) — in positional notation.  A value that is
    exactly a double prints as that double (the float 0.1 as 0.1)."""
    f = float(d)
    if math.isfinite(f):
        exact = Decimal(f)
        if rounding == ROUND_CEILING and exact < d:
            f = math.nextafter(f, math.inf)
        elif rounding == ROUND_FLOOR and exact > d:
            f = math.nextafter(f, -math.inf)
        shown = Decimal(repr(f))
        exact = Decimal(f)
        if exact == d and rounding in (ROUND_CEILING, ROUND_FLOOR):
            # d is a double: any decimal up to the next double on the promised side will do
            exact = Decimal(math.nextafter(f, math.inf if rounding == ROUND_CEILING
                                           else -math.inf))
        if exact != d:
            # or a shorter decimal between d and that double: still on the promised side
            # of d, and a spend of 28 × 0.1 (just under 2.8) reads 2.8, not 2.8000000000000003;
            # a release at ε = 0.1 (the double just below 0.1) costs 0.1, not 0.09999999999999999
            lo, hi = min(d, exact), max(d, exact)
            toward = ROUND_CEILING if exact > d else ROUND_FLOOR
            for digits in range(1, len(shown.as_tuple().digits)):
                c = Context(prec=digits, rounding=toward).plus(d)
                if lo <= c <= hi:
                    return _fmt(c)
        return _fmt(shown)
    return _fmt(Context(prec=17, rounding=rounding).plus(d))


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
    if isinstance(budget, GaussianDP):
        return Amount("gdp", mu2=_sq(_dec(budget.mu)))
    raise TypeError(
        "budget must be PureDP, ApproxDP, ZCDP or GaussianDP from instancedp.privacy, "
        f"got {budget!r}"
    )


def _sq(x: Decimal) -> Decimal:
    with _exact():
        return x * x


def _up(x: float) -> float:
    """One ulp up, for a float conversion whose error must not under-charge."""
    return math.nextafter(x * (1 + 1e-12), math.inf)


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
        if isinstance(guarantee, ZCDP | GaussianDP):
            if convert_delta is None:
                raise CompositionError(
                    f"a {guarantee.describe()} release needs a conversion delta to be charged to "
                    "an (epsilon, delta) budget: pass convert_delta (CLI: --zcdp-delta D, a "
                    "number in (0, 1)), or use a zCDP budget (--budget-rho)"
                )
            from . import _validate

            d = _validate.delta(convert_delta, "convert_delta", allow_zero=False)
            if isinstance(guarantee, GaussianDP):
                eps = gdp_to_epsilon(guarantee.mu, d)
            else:
                eps = zcdp_to_epsilon(guarantee.rho, d)
            # Round up a few ulps so float error in the conversion never under-charges.
            return Amount("approx", epsilon=_dec(_up(eps)), delta=_dec(d))
    if budget_kind == "zcdp":
        if isinstance(guarantee, ZCDP):
            return Amount("zcdp", rho=_dec(guarantee.rho))
        if isinstance(guarantee, GaussianDP):
            with _exact():
                return Amount("zcdp", rho=_sq(_dec(guarantee.mu)) / 2)
        if is_pure:
            with _exact():
                e = _dec(guarantee.epsilon)
                return Amount("zcdp", rho=e * e / 2)
        raise CompositionError(
            f"a {guarantee.describe()} release cannot be charged to a zCDP budget "
            "((epsilon, delta)-DP implies no zCDP bound): use a pure or zCDP mechanism, or a "
            "ledger with an (epsilon, delta) budget"
        )
    if budget_kind == "gdp":
        if isinstance(guarantee, GaussianDP):
            return Amount("gdp", mu2=_sq(_dec(guarantee.mu)))
        if is_pure:
            return Amount("gdp", mu2=_sq(_dec(_up(pure_to_gdp_mu(guarantee.epsilon)))))
        raise CompositionError(
            f"a {guarantee.describe()} release cannot be charged to a Gaussian-DP budget "
            "(it implies no mu-GDP bound): use a pure or Gaussian mechanism, or a ledger "
            "with an (epsilon, delta) or zCDP budget"
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


# Durability of a committed charge (SQLite's synchronous setting under WAL):
# "full" — fsync at every commit: survives a killed process, an OS crash and power loss
#          (the default: a charge lost after its value was seen is a privacy failure);
# "process" — fsync only at checkpoints: survives a killed process (the WAL is in the OS
#          page cache), but an OS crash or power loss may drop the last charges.
_SYNC = {"full": "FULL", "process": "NORMAL"}
_APP_ID = 0x69445044  # "iDPD": SQLite header application_id of an instancedp ledger
_SQLITE_MAGIC = b"SQLite format 3\x00"
RELATIONS: tuple[str, ...] = ("add_remove", "substitution", "edge", "person")
KEY_ENV = "INSTANCEDP_LEDGER_KEY"
KEY_FILE_ENV = "INSTANCEDP_LEDGER_KEY_FILE"
_ZERO_HASH = "0" * 64

_SCHEMA = (
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE budgets (dataset_id TEXT PRIMARY KEY, kind TEXT NOT NULL, "
    "epsilon TEXT NOT NULL, delta TEXT NOT NULL, rho TEXT NOT NULL, mu2 TEXT NOT NULL, "
    "relation TEXT NOT NULL, created_at TEXT NOT NULL, sig TEXT NOT NULL)",
    "CREATE TABLE allowances (dataset_id TEXT NOT NULL, principal TEXT NOT NULL, "
    "epsilon TEXT NOT NULL, delta TEXT NOT NULL, rho TEXT NOT NULL, mu2 TEXT NOT NULL, "
    "sig TEXT NOT NULL, PRIMARY KEY (dataset_id, principal))",
    # Running totals: principal '' is the dataset's total.  Each charge row carries
    # the totals after it, so the chain covers them and an open can check them.
    "CREATE TABLE totals (dataset_id TEXT NOT NULL, principal TEXT NOT NULL, "
    "epsilon TEXT NOT NULL, delta TEXT NOT NULL, rho TEXT NOT NULL, mu2 TEXT NOT NULL, "
    "n INTEGER NOT NULL, last_id INTEGER NOT NULL, PRIMARY KEY (dataset_id, principal))",
    "CREATE TABLE charges (id INTEGER PRIMARY KEY, dataset_id TEXT NOT NULL, "
    "principal TEXT NOT NULL, created_at TEXT NOT NULL, kind TEXT NOT NULL, "
    "epsilon TEXT NOT NULL, delta TEXT NOT NULL, rho TEXT NOT NULL, mu2 TEXT NOT NULL, "
    "guarantee TEXT NOT NULL, mechanism TEXT NOT NULL, parameters TEXT NOT NULL, "
    "totals TEXT NOT NULL, prev_hash TEXT NOT NULL, hash TEXT NOT NULL)",
    "CREATE INDEX charges_ds ON charges(dataset_id, id)",
    "CREATE INDEX charges_principal ON charges(dataset_id, principal, id)",
    # How a charged release ended: bookkeeping beside the chain (the charge is what counts).
    "CREATE TABLE outcomes (charge_id INTEGER PRIMARY KEY, status TEXT NOT NULL)",
    "CREATE TABLE head (one INTEGER PRIMARY KEY CHECK (one = 1), n INTEGER NOT NULL, "
    "last_hash TEXT NOT NULL, mac TEXT NOT NULL)",
)


def _load_key(key: bytes | str | None, key_file: str | Path | None) -> bytes | None:
    """The owner's MAC key: argument, key file, then the two environment variables."""
    if key is not None:
        return key.encode() if isinstance(key, str) else bytes(key)
    kf = key_file if key_file is not None else os.environ.get(KEY_FILE_ENV)
    if kf:
        p = Path(kf)
        try:
            st = p.stat()
            data = p.read_bytes().strip()
        except OSError as exc:
            raise LedgerError(f"ledger key file {p} cannot be read ({exc.strerror})") from None
        if st.st_mode & 0o077:
            raise LedgerError(
                f"ledger key file {p} is readable by other users: make it readable by its "
                f"owner only (chmod 600 {p})"
            )
        if not data:
            raise LedgerError(f"ledger key file {p} is empty")
        return data
    env = os.environ.get(KEY_ENV)
    return env.encode() if env else None


def _canon(parts: list[Any]) -> bytes:
    return json.dumps(parts, separators=(",", ":"), ensure_ascii=True).encode()


def _default_principal() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no login name (containers): the numeric uid
        return f"uid:{os.getuid()}" if hasattr(os, "getuid") else "unknown"


def _sql_cause(exc: BaseException, timeout: float) -> str:
    m = str(exc).lower()
    if "full" in m:
        return "the disk is full"
    if "readonly" in m or "read-only" in m:
        return (
            "it is read-only (the ledger needs write access to the file and to its "
            "directory, for the -wal and -shm files beside it)"
        )
    if "locked" in m or "busy" in m:
        return f"it is locked by another process for more than {timeout:g} s"
    if "malformed" in m or "not a database" in m or "corrupt" in m:
        return "the file is corrupt"
    if "unable to open" in m:
        return "it cannot be opened (check the permissions of the file and its directory)"
    if "disk i/o" in m:
        return "a disk I/O error occurred"
    return str(exc)


def _read_header(path: str) -> tuple[int, int]:
    """Constant-time file checks before SQLite touches the file: size, magic, and the
    page count in the header against the file size.  Returns (application_id, user_version)."""
    for attempt in range(20):
        st = os.stat(path)
        size = st.st_size
        if size == 0:
            raise LedgerError(
                f"ledger {path} is an empty file, not a ledger (an existing file is never taken "
                "as a new ledger): restore it from a backup, or remove it and run "
                "`instancedp ledger init`"
            )
        with open(path, "rb") as f:
            hdr = f.read(100)
        if len(hdr) < 100 or hdr[:16] != _SQLITE_MAGIC:
            raise LedgerError(
                f"ledger {path} is not a readable instancedp ledger (not an SQLite database, or "
                "its header is damaged): pass a ledger made by `instancedp ledger init`, or a "
                "new path"
            )
        page = int.from_bytes(hdr[16:18], "big")
        page = 65536 if page == 1 else page
        npages = int.from_bytes(hdr[28:32], "big")
        try:  # another process closing the last connection may delete the WAL right now
            live_wal = os.path.getsize(path + "-wal") > 0
        except FileNotFoundError:
            live_wal = False
        if live_wal:
            break  # a live WAL may hold pages the main file has not received yet
        header_valid = hdr[24:28] == hdr[92:96] and npages > 0
        if not ((header_valid and size != npages * page) or size % page):
            break
        # A process closing its connection may be copying its WAL into the file right now
        # (size and header read mid-way): a file written in the last seconds gets a few
        # re-reads; a damaged file stays damaged.
        if attempt == 19 or _time.time() - st.st_mtime > 5:
            raise LedgerError(
                f"ledger {path} is truncated or damaged: its header records "
                f"{npages * page} bytes but the file has {size} (it is refused, never "
                "treated as new): restore it from a backup"
            )
        _time.sleep(0.01)
    return int.from_bytes(hdr[68:72], "big"), int.from_bytes(hdr[60:64], "big")


@dataclass(frozen=True)
class VerifyReport:
    """What :meth:`Ledger.verify` found: ``problems`` is empty when the ledger is sound."""

    path: str
    charges: int
    mode: str
    problems: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.problems


def history_row(r: Any) -> dict[str, Any]:
    """One charge as ``history`` lists it, from (id, dataset, principal, time,
    guarantee JSON, mechanism, parameters JSON[, status]) — shared by both backends."""
    return {
        "id": r[0],
        "dataset_id": r[1],
        "principal": r[2],
        "created_at": r[3],
        "guarantee": json.loads(r[4]),
        "mechanism": r[5],
        "parameters": json.loads(r[6]),
        "status": r[7] if len(r) > 7 else "charged",
    }


def summary_row(led: Any, ds: str, budget: Amount, spent: Amount) -> dict[str, Any]:
    """One dataset as ``summary`` lists it — shared by both backends."""
    return {
        "dataset_id": ds,
        "relation": led.relation(ds),
        "budget": budget.as_dict(),
        "spent": spent.as_dict(ROUND_CEILING),
        "remaining": (budget - spent).clipped().as_dict(ROUND_FLOOR),
        "releases": led.count(ds),
        "composition": _COMPOSITION[budget.kind],
        "principals": led.principals(ds),
    }


class Ledger:
    """The privacy-budget ledger at ``path`` (``":memory:"`` for an in-process one).

    A missing file is created (``create=True``), never an existing one: an
    empty, foreign, damaged or newer file is refused and left untouched; a
    version-1 ledger is migrated in one transaction after a backup copy.
    ``principal`` names who charges (default: the OS user).  ``key`` /
    ``key_file`` (or the ``INSTANCEDP_LEDGER_KEY`` /
    ``INSTANCEDP_LEDGER_KEY_FILE`` environment variables) switch the chain
    and head from SHA-256 to HMAC-SHA256.  Connections wait up to
    ``timeout`` seconds for the write lock.  ``durability="full"`` (default)
    syncs every charge to disk before the release runs; ``"process"`` trades
    power-loss durability for throughput (docs/ledger.md).  One Ledger may be
    shared by threads: its calls are serialised by a lock (one connection,
    one transaction at a time).
    """

    def __new__(cls, path: str | Path, **kwargs: Any) -> Any:
        # A postgresql:// URL is the shared server ledger (same API, same semantics).
        if isinstance(path, str) and path.startswith(("postgresql://", "postgres://")):
            from .ledger_pg import PostgresLedger

            return PostgresLedger(path, **kwargs)
        return super().__new__(cls)

    def __init__(
        self,
        path: str | Path,
        *,
        create: bool = True,
        timeout: float = 60.0,
        principal: str | None = None,
        key: bytes | str | None = None,
        key_file: str | Path | None = None,
        durability: str = "full",
    ) -> None:
        self.durability = _validate.one_of(durability, _SYNC, "durability")
        self.path = str(path)
        self.timeout = float(timeout)
        self.principal = _default_principal() if principal is None else _check_principal(principal)
        self._key = _load_key(key, key_file)
        self._lock = threading.RLock()
        self._con: sqlite3.Connection | None = None
        self._verified: dict[tuple, Amount] = {}  # signed rows already checked (exact text)
        memory = self.path == ":memory:"
        try:
            if memory:
                self._con = self._connect(self.path)
                self._create_schema(self._con)
            else:
                self._open_file(create)
            self._quick_check()
        except sqlite3.Error as exc:
            self._close_quietly()
            raise LedgerError(
                f"ledger {self.path} cannot be used: {_sql_cause(exc, self.timeout)}"
            ) from None
        except BaseException:
            self._close_quietly()
            raise

    @property
    def mode(self) -> str:
        return "hmac-sha256" if self._key else "sha256"

    # -- opening ----------------------------------------------------------------
    def _connect(self, target: str) -> sqlite3.Connection:
        con = sqlite3.connect(
            target, timeout=self.timeout, isolation_level=None, check_same_thread=False
        )
        con.execute(f"PRAGMA busy_timeout={int(self.timeout * 1000)}")
        con.execute(f"PRAGMA synchronous={_SYNC[self.durability]}")
        return con

    def _open_file(self, create: bool) -> None:
        p = Path(self.path)
        if p.is_dir():
            raise LedgerError(f"ledger path {self.path} is a directory: pass a file path")
        if not p.exists():
            if not create:
                raise LedgerError(
                    f"ledger {self.path} does not exist: create it with "
                    f"`instancedp ledger init {self.path} --epsilon E`"
                )
            if not p.parent.exists():
                raise LedgerError(
                    f"ledger directory {p.parent} does not exist: create it or pass another path"
                )
            self._create_file()
        app_id, version = _read_header(self.path)
        if app_id == 0 and version == 0:
            self._migrate_v1()
        elif app_id != _APP_ID:
            raise LedgerError(
                f"ledger {self.path} is an SQLite database but not an instancedp ledger (left "
                "untouched): pass a ledger made by `instancedp ledger init`, or a new path"
            )
        elif version > SCHEMA_VERSION:
            raise LedgerError(
                f"ledger {self.path} has schema version {version}, newer than version "
                f"{SCHEMA_VERSION} that this instancedp reads: upgrade instancedp"
            )
        elif version != SCHEMA_VERSION:
            raise LedgerError(
                f"ledger {self.path} is damaged: schema version {version} with the layout "
                f"marker of version {SCHEMA_VERSION} (refused, never treated as new)"
            )
        self._con = self._connect(self.path)

    def _create_file(self) -> None:
        """Build the whole ledger in a private temporary file, then link it into place:
        concurrent creators race on one atomic link, and losers open the winner's file."""
        tmp = f"{self.path}.{os.getpid()}.{threading.get_ident()}.{secrets.token_hex(4)}.new"
        fd = os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        os.close(fd)
        try:
            con = sqlite3.connect(tmp, isolation_level=None)
            try:
                con.execute("PRAGMA journal_mode=WAL")  # persistent: openers never switch
                self._create_schema(con)
            finally:
                con.close()
            os.chmod(tmp, 0o600)
            try:
                os.link(tmp, self.path)
            except FileExistsError:
                pass  # another process created it first: open theirs
        finally:
            for suffix in ("", "-wal", "-shm"):
                try:
                    os.unlink(tmp + suffix)
                except FileNotFoundError:
                    pass

    def _write_empty_schema(self, con: sqlite3.Connection, migrated_from: str | None = None):
        """The current tables, their meta rows and an empty head (inside the caller's
        transaction): shared by creation and by the migration from version 1."""
        for stmt in _SCHEMA:
            con.execute(stmt)
        meta = [("app", _APP), ("schema", str(SCHEMA_VERSION)), ("mac", self.mode)]
        meta.append(("created_at", _now()))
        if migrated_from is not None:
            meta.append(("migrated_from", migrated_from))
        con.executemany("INSERT INTO meta VALUES (?, ?)", meta)
        con.execute(
            "INSERT INTO head VALUES (1, 0, ?, ?)", (_ZERO_HASH, self._head_mac(0, _ZERO_HASH))
        )

    def _create_schema(self, con: sqlite3.Connection) -> None:
        con.execute("BEGIN IMMEDIATE")
        try:
            self._write_empty_schema(con)
            con.execute(f"PRAGMA application_id={_APP_ID}")
            con.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            con.execute("COMMIT")
        except BaseException:
            _rollback(con)
            raise

    def _migrate_v1(self) -> None:
        """Version 1 (no chain, no totals) → 2 in one transaction, after a backup copy.
        Existing datasets get relation 'substitution' (what version 1 assumed)."""
        ro = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=self.timeout)
        try:
            tables = {r[0] for r in ro.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            app = schema = None
            if "meta" in tables:
                meta = dict(ro.execute("SELECT key, value FROM meta").fetchall())
                app, schema = meta.get("app"), meta.get("schema")
        finally:
            ro.close()
        if app != _APP or not {"budgets", "charges"} <= tables:
            raise LedgerError(
                f"ledger {self.path} is an SQLite database but not an instancedp ledger (left "
                "untouched): pass a ledger made by `instancedp ledger init`, or a new path"
            )
        if schema != "1":
            raise LedgerError(
                f"ledger {self.path} has schema version {schema} without its layout marker: "
                f"this instancedp reads version {SCHEMA_VERSION} (refused, left untouched)"
            )
        backup = f"{self.path}.v1-backup-{_dt.datetime.now(_dt.UTC):%Y%m%dT%H%M%S%f}"
        fd = os.open(backup, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        os.close(fd)
        src = sqlite3.connect(self.path, timeout=self.timeout)
        bcon = sqlite3.connect(backup)
        try:
            src.backup(bcon)  # a consistent copy, taken before the migration's transaction
        finally:
            bcon.close()
            src.close()
        con = self._connect(self.path)
        try:
            con.execute("BEGIN IMMEDIATE")
            try:
                if con.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION:
                    con.execute("ROLLBACK")  # another process migrated it meanwhile
                    os.unlink(backup)
                    return
                old_b = con.execute(
                    "SELECT dataset_id, kind, epsilon, delta, rho, created_at FROM budgets"
                ).fetchall()
                old_c = con.execute(
                    "SELECT id, dataset_id, created_at, kind, epsilon, delta, rho, guarantee, "
                    "mechanism, parameters, status FROM charges ORDER BY id"
                ).fetchall()
                for t in ("charges", "budgets", "meta"):
                    con.execute(f"DROP TABLE {t}")
                self._write_empty_schema(con, migrated_from="1")
                for ds, kind, e, d, r, at in old_b:
                    self._insert_budget(
                        con,
                        ds,
                        Amount(kind, Decimal(e), Decimal(d), Decimal(r)),
                        "substitution",
                        at,
                    )
                for _cid, ds, at, kind, e, d, r, g, mech, params, status in old_c:
                    cost = Amount(kind, Decimal(e), Decimal(d), Decimal(r))
                    new_id = self._append(con, ds, "(before principals)", cost, g, mech, params, at)
                    if status != "charged":
                        con.execute("INSERT INTO outcomes VALUES (?, ?)", (new_id, status))
                con.execute(f"PRAGMA application_id={_APP_ID}")
                con.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
                con.execute("COMMIT")
            except BaseException:
                _rollback(con)
                raise
        finally:
            con.close()

    # -- integrity ---------------------------------------------------------------
    def _mac(self, parts: list[Any]) -> str:
        data = _canon(parts)
        if self._key:
            return hmac.new(self._key, data, hashlib.sha256).hexdigest()
        return hashlib.sha256(data).hexdigest()

    def _head_mac(self, n: int, last_hash: str) -> str:
        return self._mac(["head", SCHEMA_VERSION, n, last_hash])

    def _row_hash(self, row: tuple) -> str:
        # row: id, dataset_id, principal, created_at, kind, e, d, r, mu2, guarantee,
        #      mechanism, parameters, totals, prev_hash
        return self._mac(["charge", *row])

    def _budget_sig(self, ds: str, a: Amount, relation: str, at: str) -> str:
        return self._mac(
            [
                "budget",
                ds,
                a.kind,
                *a.texts(),
                relation,
                at,
            ]
        )

    def _allowance_sig(self, ds: str, principal: str, a: Amount) -> str:
        return self._mac(
            [
                "allowance",
                ds,
                principal,
                a.kind,
                *a.texts(),
            ]
        )

    def _damaged(self, why: str) -> LedgerError:
        return LedgerError(
            f"ledger {self.path} failed its integrity check: {why} — it was damaged or edited "
            f"(refused, never treated as new); run `instancedp ledger verify {self.path}` and "
            "restore it from a backup"
        )

    def _quick_check(self) -> None:
        """Checks whose cost does not grow with the number of charges: the version, the
        head against the last charge row, each running total against its last row."""
        con = self._con
        assert con is not None
        with self._lock:
            con.execute("BEGIN")
            try:
                meta = dict(con.execute("SELECT key, value FROM meta").fetchall())
                if meta.get("app") != _APP:
                    raise self._damaged("the ledger marker in its meta table is missing")
                if meta.get("schema") != str(SCHEMA_VERSION):
                    raise self._damaged(
                        f"meta records schema version {meta.get('schema')!r}, the file header "
                        f"{SCHEMA_VERSION}"
                    )
                if meta.get("mac") != self.mode:
                    if meta.get("mac") == "hmac-sha256":
                        raise LedgerError(
                            f"ledger {self.path} is keyed (HMAC-SHA256): set {KEY_ENV} or "
                            f"{KEY_FILE_ENV} to the owner's key to use it"
                        )
                    raise LedgerError(
                        f"ledger {self.path} was made without a key but a key is configured: "
                        "a keyed deployment refuses an unkeyed ledger (anyone could have "
                        "rewritten it); unset the key only if you trust this file"
                    )
                self._check_head(con)
                totals = {
                    (ds, pr): last_id
                    for ds, pr, last_id in con.execute(
                        "SELECT dataset_id, principal, last_id FROM totals"
                    ).fetchall()
                }
                for (ds, pr), last_id in totals.items():
                    self._check_total_row(con, ds, pr, last_id)
                for (ds,) in con.execute("SELECT dataset_id FROM budgets").fetchall():
                    if (ds, "") not in totals and con.execute(
                        "SELECT 1 FROM charges WHERE dataset_id=? LIMIT 1", (ds,)
                    ).fetchone():
                        raise self._damaged(f"dataset '{ds}' has charges but no running total")
                for row in con.execute(
                    "SELECT dataset_id, kind, epsilon, delta, rho, mu2, relation, created_at, sig "
                    "FROM budgets"
                ).fetchall():
                    self._check_budget_sig(row)
            finally:
                _rollback(con)

    def _check_head(self, con: sqlite3.Connection) -> tuple[int, str]:
        h = con.execute("SELECT n, last_hash, mac FROM head WHERE one = 1").fetchone()
        if h is None:
            raise self._damaged("the head record is missing")
        n, last_hash, mac = h
        if not hmac.compare_digest(mac, self._head_mac(n, last_hash)):
            raise self._damaged("the head record's MAC does not match")
        # Row #n and nothing after it, by primary key (a search, not a scan).
        rows = con.execute(
            f"SELECT {_CHARGE_COLS} FROM charges WHERE id >= ? ORDER BY id LIMIT 2", (max(n, 1),)
        ).fetchall()
        if n == 0:
            if rows:
                raise self._damaged(f"the head records no charges but charge #{rows[0][0]} exists")
            return n, last_hash
        if not rows or rows[0][0] != n:
            raise self._damaged(f"the head records {n} charges but charge #{n} is missing")
        if len(rows) > 1:
            raise self._damaged(f"the head records {n} charges, a row #{rows[1][0]} follows")
        last = rows[0]
        if last[-1] != last_hash or self._row_hash(last[:-1]) != last[-1]:
            raise self._damaged(f"charge #{n} does not match the head's hash")
        return n, last_hash

    def _check_total_row(self, con: sqlite3.Connection, ds: str, pr: str, last_id: int) -> None:
        t = con.execute(
            "SELECT epsilon, delta, rho, mu2 FROM totals WHERE dataset_id=? AND principal=?",
            (ds, pr),
        ).fetchone()
        row = con.execute(f"SELECT {_CHARGE_COLS} FROM charges WHERE id=?", (last_id,)).fetchone()
        if row is None or row[1] != ds or (pr and row[2] != pr):
            raise self._damaged(f"the running total of '{ds}' points to a missing charge")
        # The total must come from the dataset's (principal's) latest charge, not an older one.
        if pr:
            newest = con.execute(
                "SELECT max(id) FROM charges WHERE dataset_id=? AND principal=?", (ds, pr)
            ).fetchone()[0]
        else:
            newest = con.execute(
                "SELECT max(id) FROM charges WHERE dataset_id=?", (ds,)
            ).fetchone()[0]
        if newest != last_id:
            raise self._damaged(f"the running total of '{ds}' is older than its last charge")
        if self._row_hash(row[:-1]) != row[-1]:
            raise self._damaged(f"charge #{last_id} was edited")
        recorded = json.loads(row[12])["principal" if pr else "dataset"]
        if list(t) != recorded:
            raise self._damaged(f"the running total of '{ds}' disagrees with charge #{last_id}")

    def _check_budget_sig(self, row: tuple) -> None:
        ds, kind, e, d, r, m, rel, at, sig = row
        a = Amount(kind, Decimal(e), Decimal(d), Decimal(r), Decimal(m))
        if not hmac.compare_digest(sig, self._budget_sig(ds, a, rel, at)):
            raise self._damaged(f"the budget of '{ds}' was edited")

    def verify(self) -> VerifyReport:
        """Walk the whole chain: sequence, links, hashes, running totals, head, budgets,
        allowances and SQLite's own ``integrity_check``.  Never raises for damage."""
        problems: list[str] = []
        con = self._con
        assert con is not None
        n = 0
        with self._lock, self._errors("verify"):
            con.execute("BEGIN")
            try:
                ic = [r[0] for r in con.execute("PRAGMA integrity_check").fetchall()]
                if ic != ["ok"]:
                    problems.append("SQLite integrity check: " + "; ".join(ic[:3]))
                prev = _ZERO_HASH
                sums: dict[tuple[str, str], Amount] = {}
                kinds = {r[0]: r[1] for r in con.execute("SELECT dataset_id, kind FROM budgets")}
                expect = 1
                for row in con.execute(f"SELECT {_CHARGE_COLS} FROM charges ORDER BY id"):
                    n += 1
                    cid = row[0]
                    if cid != expect:
                        problems.append(f"charges #{expect}..#{cid - 1} are missing")
                    expect = cid + 1
                    if row[13] != prev:
                        problems.append(f"charge #{cid} does not link to the one before it")
                    if self._row_hash(row[:-1]) != row[-1]:
                        problems.append(f"charge #{cid} was edited (its hash does not match)")
                    prev = row[-1]
                    kind = kinds.get(row[1], row[4])
                    cost = Amount(kind, *(Decimal(x) for x in row[5:9]))
                    for key in ((row[1], ""), (row[1], row[2])):
                        sums[key] = sums.get(key, Amount(kind)) + cost
                    rec = json.loads(row[12])
                    for key, name in (((row[1], ""), "dataset"), ((row[1], row[2]), "principal")):
                        s = sums[key]
                        if rec.get(name) != s.texts():
                            problems.append(f"charge #{cid} records a wrong {name} total")
                h = con.execute("SELECT n, last_hash, mac FROM head").fetchone()
                if h is None:
                    problems.append("the head record is missing")
                else:
                    if not hmac.compare_digest(h[2], self._head_mac(h[0], h[1])):
                        problems.append("the head record's MAC does not match")
                    if h[0] != n or h[1] != prev:
                        problems.append(
                            f"the head records {h[0]} charges, the chain has {n} (a cut tail "
                            "or deleted rows)"
                        )
                for ds, pr, e, d, r, m in con.execute(
                    "SELECT dataset_id, principal, epsilon, delta, rho, mu2 FROM totals"
                ):
                    s = sums.get((ds, pr))
                    if s is None or [e, d, r, m] != s.texts():
                        problems.append(f"the running total of '{ds}' / '{pr}' disagrees")
                for row in con.execute(
                    "SELECT dataset_id, kind, epsilon, delta, rho, mu2, relation, created_at, sig "
                    "FROM budgets"
                ).fetchall():
                    try:
                        self._check_budget_sig(row)
                    except LedgerError:
                        problems.append(f"the budget of '{row[0]}' was edited")
                for ds, pr, kind, e, d, r, m, sig in con.execute(
                    "SELECT a.dataset_id, a.principal, b.kind, a.epsilon, a.delta, a.rho, a.mu2, "
                    "a.sig FROM allowances a JOIN budgets b USING (dataset_id)"
                ).fetchall():
                    a = Amount(kind, Decimal(e), Decimal(d), Decimal(r), Decimal(m))
                    if not hmac.compare_digest(sig, self._allowance_sig(ds, pr, a)):
                        problems.append(f"the allowance of '{pr}' on '{ds}' was edited")
            finally:
                _rollback(con)
        return VerifyReport(self.path, n, self.mode, tuple(problems))

    # -- plumbing -----------------------------------------------------------------
    @contextlib.contextmanager
    def _errors(self, action: str) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as exc:
            raise LedgerError(
                f"ledger {self.path}: cannot {action}: {_sql_cause(exc, self.timeout)} "
                "(nothing was charged)"
            ) from None

    @contextlib.contextmanager
    def _tx(self, action: str) -> Iterator[sqlite3.Connection]:
        con = self._con
        if con is None:
            raise LedgerError(f"ledger {self.path} is closed")
        with self._lock, self._errors(action):
            con.execute("BEGIN IMMEDIATE")
            try:
                yield con
            except BaseException:
                _rollback(con)
                raise
            con.execute("COMMIT")

    def _close_quietly(self) -> None:
        try:
            if self._con is not None:
                self._con.close()
        except Exception:
            pass

    def close(self) -> None:
        with self._lock:
            if self._con is not None:
                self._con.close()
                self._con = None

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _read(self, sql: str, args: tuple = ()) -> list[tuple]:
        con = self._con
        if con is None:
            raise LedgerError(f"ledger {self.path} is closed")
        with self._lock, self._errors("read"):
            return con.execute(sql, args).fetchall()

    # -- budgets --------------------------------------------------------------
    def _budget_row(self, dataset_id: str, con: sqlite3.Connection | None = None) -> Amount | None:
        q = (
            "SELECT dataset_id, kind, epsilon, delta, rho, mu2, relation, created_at, sig "
            "FROM budgets WHERE dataset_id=?"
        )
        rows = con.execute(q, (dataset_id,)).fetchall() if con else self._read(q, (dataset_id,))
        if not rows:
            return None
        row = tuple(rows[0])
        have = self._verified.get(row)
        if have is None:  # a budget row never changes: check its signature once per row text
            self._check_budget_sig(row)
            _, kind, e, d, r, m, *_ = row
            have = self._verified[row] = Amount(
                kind, Decimal(e), Decimal(d), Decimal(r), Decimal(m)
            )
        return have

    def _insert_budget(
        self, con: sqlite3.Connection, ds: str, a: Amount, relation: str, at: str
    ) -> None:
        con.execute(
            "INSERT INTO budgets VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                ds,
                a.kind,
                *a.texts(),
                relation,
                at,
                self._budget_sig(ds, a, relation, at),
            ),
        )

    def budget(self, dataset_id: str = "default") -> Amount | None:
        """The total budget on record for ``dataset_id`` (None if there is none)."""
        return self._budget_row(dataset_id)

    def datasets(self) -> list[str]:
        return [r[0] for r in self._read("SELECT dataset_id FROM budgets ORDER BY 1")]

    def relation(self, dataset_id: str = "default") -> str:
        """The neighbour relation recorded for ``dataset_id`` when it was created."""
        self._require_budget(dataset_id)
        return self._read("SELECT relation FROM budgets WHERE dataset_id=?", (dataset_id,))[0][0]

    def ensure_budget(
        self, dataset_id: str, budget: Guarantee | None, *, relation: str | None = None
    ) -> Amount:
        """Record ``budget`` (and the neighbour ``relation``, default ``"add_remove"``) for
        ``dataset_id`` on first use; later, refuse a different budget or relation.

        ``budget=None`` uses the budget on record (an error if there is none).
        """
        _check_id(dataset_id)
        if relation is not None and relation not in RELATIONS:
            raise ParameterError(
                f"relation must be one of {', '.join(RELATIONS)}, got {relation!r}",
                parameter="relation",
                allowed=", ".join(RELATIONS),
            )
        want = amount_of(budget) if budget is not None else None
        with self._tx("record the budget") as con:
            have = self._budget_row(dataset_id, con)
            if have is None:
                if want is None:
                    raise LedgerError(
                        f"ledger {self.path} has no budget for dataset '{dataset_id}': pass a "
                        "budget, or create it with `instancedp ledger init`"
                    )
                if con.execute(
                    "SELECT 1 FROM charges WHERE dataset_id=? LIMIT 1", (dataset_id,)
                ).fetchone():
                    raise self._damaged(f"dataset '{dataset_id}' has charges but no budget")
                self._insert_budget(con, dataset_id, want, relation or "add_remove", _now())
                have = want
            else:
                if want is not None and want != have:
                    raise LedgerError(
                        f"ledger {self.path} already holds a total budget of {have.describe()} "
                        f"({have.kind}) for dataset '{dataset_id}', not {want.describe()}: "
                        "pass the same total, or use another ledger or dataset id"
                    )
                rec = con.execute(
                    "SELECT relation FROM budgets WHERE dataset_id=?", (dataset_id,)
                ).fetchone()[0]
                if relation is not None and relation != rec:
                    raise LedgerError(
                        f"ledger {self.path} records dataset '{dataset_id}' under the "
                        f"'{rec}' neighbour relation, not '{relation}': a budget spent under "
                        "one relation does not bound the loss under another; use the "
                        "recorded relation or another dataset id"
                    )
        return have

    def set_allowance(self, dataset_id: str, principal: str, allowance: Guarantee) -> Amount:
        """Cap what ``principal`` may spend of ``dataset_id`` (beside the dataset's total).
        An allowance may be set once; it is part of the signed record."""
        principal = _check_principal(principal)
        with self._tx("record the allowance") as con:
            b = self._budget_row(dataset_id, con)
            if b is None:
                raise LedgerError(f"ledger {self.path} has no budget for dataset '{dataset_id}'")
            a = amount_of(allowance)
            if a.kind != b.kind:
                raise CompositionError(
                    f"an allowance of {a.describe()} ({a.kind}) does not fit the {b.kind} "
                    f"budget of dataset '{dataset_id}': give it in the budget's currency"
                )
            have = con.execute(
                "SELECT epsilon, delta, rho, mu2 FROM allowances "
                "WHERE dataset_id=? AND principal=?",
                (dataset_id, principal),
            ).fetchone()
            if have is not None:
                old = Amount(b.kind, *(Decimal(x) for x in have))
                if old != a:
                    raise LedgerError(
                        f"principal '{principal}' already has an allowance of {old.describe()} "
                        f"on dataset '{dataset_id}'"
                    )
                return old
            con.execute(
                "INSERT INTO allowances VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    dataset_id,
                    principal,
                    *a.texts(),
                    self._allowance_sig(dataset_id, principal, a),
                ),
            )
        return a

    def _allowance(
        self, con: sqlite3.Connection, ds: str, principal: str, kind: str
    ) -> Amount | None:
        row = con.execute(
            "SELECT epsilon, delta, rho, mu2, sig FROM allowances "
            "WHERE dataset_id=? AND principal=?",
            (ds, principal),
        ).fetchone()
        if row is None:
            return None
        key = ("allowance", ds, principal, kind, *row)
        a = self._verified.get(key)
        if a is None:
            a = Amount(kind, *(Decimal(x) for x in row[:4]))
            if not hmac.compare_digest(row[4], self._allowance_sig(ds, principal, a)):
                raise self._damaged(f"the allowance of '{principal}' on '{ds}' was edited")
            self._verified[key] = a
        return a

    # -- spending -------------------------------------------------------------
    def _total(self, con: sqlite3.Connection | None, ds: str, principal: str, kind: str) -> Amount:
        q = "SELECT epsilon, delta, rho, mu2 FROM totals WHERE dataset_id=? AND principal=?"
        rows = con.execute(q, (ds, principal)).fetchall() if con else self._read(q, (ds, principal))
        if not rows:
            return Amount(kind)
        return Amount(kind, *(Decimal(x) for x in rows[0]))

    def _totals_pair(
        self, con: sqlite3.Connection, ds: str, principal: str, kind: str
    ) -> tuple[Amount, Amount]:
        """The dataset's running total and the principal's, in one read."""
        got = {
            r[0]: Amount(kind, *(Decimal(x) for x in r[1:]))
            for r in con.execute(
                "SELECT principal, epsilon, delta, rho, mu2 FROM totals "
                "WHERE dataset_id=? AND principal IN ('', ?)",
                (ds, principal),
            )
        }
        return got.get("", Amount(kind)), got.get(principal, Amount(kind))

    def spent(self, dataset_id: str = "default", principal: str | None = None) -> Amount:
        """What has been charged (by ``principal``, or by everyone): the running total."""
        b = self._require_budget(dataset_id)
        return self._total(None, dataset_id, principal or "", b.kind)

    def remaining(self, dataset_id: str = "default") -> Amount:
        b = self._require_budget(dataset_id)
        return (b - self._total(None, dataset_id, "", b.kind)).clipped()

    def _require_budget(self, dataset_id: str, con: sqlite3.Connection | None = None) -> Amount:
        b = self._budget_row(dataset_id, con)
        if b is None:
            raise LedgerError(
                f"ledger {self.path} has no budget for dataset '{dataset_id}': its owner "
                "creates one with `instancedp ledger init` (or an owner's Session given a "
                "budget)"
            )
        return b

    def price(self, dataset_id: str, guarantee: Guarantee, convert_delta: Any = None) -> Amount:
        """What ``guarantee`` would cost here (no charge; raises CompositionError)."""
        return charge_amount(self._require_budget(dataset_id).kind, guarantee, convert_delta)

    def _append(
        self,
        con: sqlite3.Connection,
        ds: str,
        principal: str,
        cost: Amount,
        guarantee: str,
        mechanism: str,
        params: str,
        at: str,
        before: tuple[Amount, Amount] | None = None,
        count: int = 1,
    ) -> int:
        """Append ``count`` equal charge rows (one for a charge; many to build a ledger in
        bulk), update both running totals and the head, in the caller's transaction.
        ``before``: the dataset's and the principal's totals, when the caller has read them.
        Returns the last row's id."""
        n, prev = con.execute("SELECT n, last_hash FROM head WHERE one = 1").fetchone()
        tot, ptot = (
            before if before is not None else self._totals_pair(con, ds, principal, cost.kind)
        )
        cost_text = tuple(cost.texts())
        insert = f"INSERT INTO charges ({_CHARGE_COLS}) VALUES ({','.join('?' * 15)})"
        cid, h, batch = n, prev, []
        t = [tot.epsilon, tot.delta, tot.rho, tot.mu2]
        p = [ptot.epsilon, ptot.delta, ptot.rho, ptot.mu2]
        c = [cost.epsilon, cost.delta, cost.rho, cost.mu2]
        with _exact():  # exact sums (Inexact trapped), one context for the whole batch
            for _ in range(count):
                t = [a + b for a, b in zip(t, c, strict=True)]
                p = [a + b for a, b in zip(p, c, strict=True)]
                totals = json.dumps(
                    {"dataset": [str(x) for x in t], "principal": [str(x) for x in p]},
                    sort_keys=True,
                )
                cid += 1
                row = (cid, ds, principal, at, cost.kind, *cost_text, guarantee, mechanism)
                row = (*row, params, totals, h)
                h = self._row_hash(row)
                batch.append((*row, h))
                if len(batch) >= 10_000:
                    con.executemany(insert, batch)
                    batch.clear()
        tot, ptot = Amount(cost.kind, *t), Amount(cost.kind, *p)
        if batch:
            con.executemany(insert, batch)
        for pr, t in (("", tot), (principal, ptot)):
            con.execute(
                "INSERT INTO totals VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT "
                "(dataset_id, principal) DO UPDATE SET epsilon=excluded.epsilon, "
                "delta=excluded.delta, rho=excluded.rho, mu2=excluded.mu2, n=n+excluded.n, "
                "last_id=excluded.last_id",
                (ds, pr, *t.texts(), count, cid),
            )
        con.execute(
            "UPDATE head SET n=?, last_hash=?, mac=? WHERE one = 1",
            (cid, h, self._head_mac(cid, h)),
        )
        return cid

    def charge(
        self,
        dataset_id: str,
        guarantee: Guarantee,
        *,
        mechanism: str = "",
        parameters: Mapping[str, Any] | None = None,
        convert_delta: Any = None,
        principal: str | None = None,
    ) -> Charge:
        """Atomically check the dataset's budget and the principal's allowance, and record
        the charge (before any noise).  Cost O(1) in the number of earlier charges.

        Raises :class:`BudgetExceeded` (nothing recorded) if it does not fit.
        """
        who = self.principal if principal is None else _check_principal(principal)
        params = json.dumps(dict(parameters or {}), sort_keys=True, default=str)
        with self._tx("charge") as con:
            budget = self._require_budget(dataset_id, con)
            cost = charge_amount(budget.kind, guarantee, convert_delta)
            spent, mine = self._totals_pair(con, dataset_id, who, budget.kind)
            after = spent + cost
            if not after.fits_in(budget):
                remaining = (budget - spent).clipped()
                raise BudgetExceeded(
                    f"budget exhausted for dataset '{dataset_id}': this release needs "
                    f"{cost.describe(ROUND_CEILING)} but only {remaining.describe(ROUND_FLOOR)} "
                    "remains "
                    f"(total {budget.describe()})",
                    remaining,
                    cost,
                )
            allow = self._allowance(con, dataset_id, who, budget.kind)
            if allow is not None:
                if not (mine + cost).fits_in(allow):
                    left = (allow - mine).clipped()
                    raise BudgetExceeded(
                        f"allowance exhausted for principal '{who}' on dataset '{dataset_id}': "
                        f"this release needs {cost.describe(ROUND_CEILING)} but only "
                        f"{left.describe(ROUND_FLOOR)} of "
                        f"the allowance {allow.describe()} remains",
                        left,
                        cost,
                    )
            cid = self._append(
                con,
                dataset_id,
                who,
                cost,
                _guarantee_json(guarantee),
                mechanism,
                params,
                _now(),
                (spent, mine),
            )
        return Charge(cid, cost, (budget - after).clipped())

    def mark(self, charge_id: int, status: str) -> None:
        """Record how a charged release ended ('released', 'refused', 'failed')."""
        with self._tx("record the outcome") as con:
            con.execute("INSERT OR REPLACE INTO outcomes VALUES (?, ?)", (charge_id, status))

    # -- inspection -------------------------------------------------------------
    def history(self, dataset_id: str | None = None) -> list[dict[str, Any]]:
        sql = (
            "SELECT c.id, c.dataset_id, c.principal, c.created_at, c.guarantee, c.mechanism, "
            "c.parameters, COALESCE(o.status, 'charged') FROM charges c "
            "LEFT JOIN outcomes o ON o.charge_id = c.id"
        )
        args: tuple = ()
        if dataset_id is not None:
            sql += " WHERE c.dataset_id=?"
            args = (dataset_id,)
        return [history_row(r) for r in self._read(sql + " ORDER BY c.id", args)]

    def count(self, dataset_id: str | None = None) -> int:
        if dataset_id is None:
            return int(self._read("SELECT n FROM head")[0][0])
        rows = self._read("SELECT n FROM totals WHERE dataset_id=? AND principal=''", (dataset_id,))
        return int(rows[0][0]) if rows else 0

    def principals(self, dataset_id: str) -> list[dict[str, Any]]:
        """Spend per principal on ``dataset_id`` (with each allowance, if set)."""
        b = self._require_budget(dataset_id)
        rows = self._read(
            "SELECT t.principal, t.epsilon, t.delta, t.rho, t.mu2, t.n, a.epsilon, a.delta, "
            "a.rho, a.mu2 FROM totals t LEFT JOIN allowances a ON a.dataset_id = t.dataset_id "
            "AND a.principal = t.principal WHERE t.dataset_id=? AND t.principal != '' "
            "ORDER BY t.principal",
            (dataset_id,),
        )
        out = []
        for r in rows:
            s = Amount(b.kind, *(Decimal(x) for x in r[1:5]))
            a = Amount(b.kind, *(Decimal(x) for x in r[6:10])) if r[6] is not None else None
            out.append(
                {
                    "principal": r[0],
                    "spent": s.as_dict(ROUND_CEILING),
                    "releases": r[5],
                    "allowance": a.as_dict() if a else None,
                }
            )
        return out

    def summary(self) -> list[dict[str, Any]]:
        """One row per dataset: total, spent, remaining, releases, relation, by principal."""
        rows = []
        for ds in self.datasets():
            b = self._require_budget(ds)
            s = self._total(None, ds, "", b.kind)
            rows.append(summary_row(self, ds, b, s))
        return rows

    def integrity_check(self) -> str:
        return str(self._read("PRAGMA integrity_check")[0][0])


_CHARGE_COLS = (
    "id, dataset_id, principal, created_at, kind, epsilon, delta, rho, mu2, guarantee, "
    "mechanism, parameters, totals, prev_hash, hash"
)

_COMPOSITION = {
    "pure": "exact sum of epsilon (basic composition; a valid privacy filter)",
    "approx": "exact sums of epsilon and delta (basic composition; a valid privacy filter)",
    "zcdp": "exact sum of rho (zCDP composition; a valid filter, Feldman & Zrnic 2021)",
    "gdp": "exact sum of mu^2 (Gaussian DP; a valid filter, Smith & Thakurta 2022)",
}


def _rollback(con: sqlite3.Connection) -> None:
    try:
        con.execute("ROLLBACK")
    except sqlite3.Error:
        pass  # no transaction left to roll back (SQLite already ended it)


def _check_principal(principal: Any) -> str:
    if not isinstance(principal, str) or not principal or len(principal) > 256:
        raise ParameterError(
            f"principal must be a non-empty string of at most 256 characters, got {principal!r}",
            parameter="principal",
        )
    return principal


def _check_id(dataset_id: Any) -> None:
    if not isinstance(dataset_id, str) or not dataset_id:
        raise ParameterError(
            f"dataset_id must be a non-empty string, got {dataset_id!r}", parameter="dataset_id"
        )
