"""A budgeted session over one dataset.

``Session(data, budget, ledger=path)`` holds the data owner's data and a
budget recorded in a persistent :class:`~instancedp.ledger.Ledger`.  Each
``release`` follows one order, so that an interruption can only over-count:

1. the data are read and checked (own-input checks: column, numeric, missing
   values, emptiness) — a bad input raises before the ledger is touched;
2. the mechanism's guarantee (known before it sees data) is charged to the
   ledger in one ``BEGIN IMMEDIATE`` transaction — a release that does not fit
   raises :class:`~instancedp.ledger.BudgetExceeded`, naming what remains;
3. only then does the mechanism draw noise.

The returned :class:`~instancedp.mechanisms.base.Release` carries the noisy
value, the guarantee, the mechanism's name and public parameters, and whether
the randomness was secure — nothing computed from the data.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from . import io as _io
from .ledger import Amount, BudgetExceeded, CompositionError, Ledger, LedgerError
from .privacy import Guarantee

__all__ = ["BudgetExceeded", "CompositionError", "LedgerError", "Session"]


def _is_graph_mechanism(mechanism: Any) -> bool:
    query = getattr(mechanism, "query", None)
    return getattr(query, "neighbours", None) == "edge"


class Session:
    """Private releases from ``data`` against a budget kept in ``ledger``.

    Parameters
    ----------
    data:
        Anything :func:`instancedp.io.read_column` reads (a file path, array,
        pandas/polars/Arrow table) or, for graph statistics, anything
        :func:`instancedp.io.graph_input` takes (edge-list file, m×2 array,
        scipy.sparse matrix, networkx graph).
    budget:
        The total budget (``PureDP``, ``ApproxDP`` or ``ZCDP``).  Recorded on
        first use of the dataset id; a different total later is refused.  May
        be None when the ledger already holds one.
    ledger:
        Path of the SQLite ledger file (created if missing); None keeps an
        in-memory ledger that ends with the session.
    dataset_id:
        The key of this dataset's budget in the ledger.  Default
        ``"default"``.  Choose one id per protected population and never
        derive it from the data's contents: a neighbouring dataset must share
        its budget.
    drop_missing:
        Drop NULL/NaN values instead of refusing them.
    """

    def __init__(
        self,
        data: Any,
        budget: Guarantee | None = None,
        ledger: str | Path | None = None,
        dataset_id: str | None = None,
        *,
        drop_missing: bool = False,
    ) -> None:
        self._data = data
        self.dataset_id = "default" if dataset_id is None else dataset_id
        self.drop_missing = bool(drop_missing)
        self.ledger = ledger if isinstance(ledger, Ledger) else Ledger(ledger or ":memory:")
        self._budget = self.ledger.ensure_budget(self.dataset_id, budget)
        self._cache: dict[Any, Any] = {}

    # -- budget ---------------------------------------------------------------
    @property
    def budget(self) -> Amount:
        """The total budget (exact amount)."""
        return self._budget

    @property
    def spent(self) -> Amount:
        return self.ledger.spent(self.dataset_id)

    @property
    def remaining(self) -> Amount:
        """What is left, read from the ledger (other processes may have spent too)."""
        return self.ledger.remaining(self.dataset_id)

    def history(self) -> list[dict[str, Any]]:
        """The charges recorded for this dataset (public parameters only)."""
        return self.ledger.history(self.dataset_id)

    # -- data -------------------------------------------------------------------
    def column(self, column: str | None = None, *, sql: str | None = None) -> np.ndarray:
        """The checked float64 column (read once, then cached)."""
        key = ("column", column, sql)
        if key not in self._cache:
            self._cache[key] = _io.read_column(
                self._data, column, sql=sql, drop_missing=self.drop_missing
            )
        return self._cache[key]

    def graph(self) -> Any:
        key = ("graph",)
        if key not in self._cache:
            self._cache[key] = _io.graph_input(self._data)
        return self._cache[key]

    def _input_for(self, mechanism: Any, column: str | None, sql: str | None) -> Any:
        if _is_graph_mechanism(mechanism):
            return self.graph()
        return self.column(column, sql=sql)

    # -- releasing --------------------------------------------------------------
    def release(
        self,
        mechanism: Any,
        column: str | None = None,
        *,
        sql: str | None = None,
        rng: Any = None,
        convert_delta: float | None = None,
    ) -> Any:
        """Charge ``mechanism.guarantee``, then run ``mechanism.release``.

        ``column``/``sql`` pick the input from the session's data.  ``rng``
        is None (secure randomness) or ``instancedp.random.simulation(seed)``
        (the release is then marked ``secure=False``).  ``convert_delta``:
        the δ at which a zCDP release is charged to an (ε, δ) budget.

        Raises ``ValueError`` (bad data or parameters; nothing charged),
        :class:`CompositionError` (guarantee type the budget cannot take;
        nothing charged) or :class:`BudgetExceeded` (nothing charged).
        """
        from .random import resolve

        source = resolve(rng)  # a bad rng is refused before anything is charged
        guarantee = mechanism.guarantee
        data = self._input_for(mechanism, column, sql)
        self.ledger.price(self.dataset_id, guarantee, convert_delta)  # CompositionError early
        params = mechanism.parameters() if callable(getattr(mechanism, "parameters", None)) else {}
        charge = self.ledger.charge(
            self.dataset_id,
            guarantee,
            mechanism=getattr(mechanism, "name", type(mechanism).__name__),
            parameters=params,
            convert_delta=convert_delta,
        )
        # The charge is committed: from here on, any failure leaves it in place
        # (an interrupted release can only over-count).
        try:
            release = mechanism.release(data, rng=source)
        except BaseException:
            self._mark(charge.id, "failed")
            raise
        self._mark(charge.id, "refused" if getattr(release, "refused", False) else "released")
        return release

    def _mark(self, charge_id: int, status: str) -> None:
        try:
            self.ledger.mark(charge_id, status)
        except Exception:  # bookkeeping only; the charge itself is already durable
            pass

    def close(self) -> None:
        self.ledger.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"Session(dataset_id={self.dataset_id!r}, ledger={self.ledger.path!r}, "
            f"budget={self._budget.describe()})"
        )
