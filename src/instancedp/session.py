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

from . import _validate
from . import io as _io
from .errors import DataError, ParameterError, SchemaError
from .ledger import Amount, BudgetExceeded, CompositionError, Ledger, LedgerError
from .privacy import Guarantee
from .recipes import (  # noqa: F401 - re-exported: the recipes' old home
    GRAPH_STATISTICS,
    MECHANISMS,
    STATISTICS,
    USES_PUBLIC_N,
    build_mechanism,
    build_query,
    check_input,
    default_mechanism,
    relation_for,
)

__all__ = ["BudgetExceeded", "CompositionError", "LedgerError", "Session"]


# Edge privacy (neighbours differ in one edge) keeps the vertex set fixed and
# public.  Taking it from an edge list (max id + 1, or the names seen) would
# make it a function of the private edges: adding edge (2, 9) to a triangle
# then moves the triangle count's smooth sensitivity from 1.0 to 4.18.
VERTICES_REQUIRED = (
    "the number of vertices must be public under edge privacy: pass vertices=N, "
    "a count known without looking at the edges (an edge list "
    "does not show isolated vertices)"
)


def _is_edge_list(data: Any) -> bool:
    """An edge-list file or an m×2 array/list (no vertex set of its own)."""
    if isinstance(data, (str, Path)):
        return True
    try:
        arr = np.asarray(data)
    except Exception:  # noqa: BLE001 - objects numpy cannot convert are not edge lists
        return False
    return arr.ndim == 2 and arr.shape[1:] == (2,) and arr.dtype != object


def _mechanism_name(mechanism: Any) -> str:
    return getattr(mechanism, "name", type(mechanism).__name__)


def _is_graph_mechanism(mechanism: Any) -> bool:
    query = getattr(mechanism, "query", None)
    return getattr(query, "neighbours", None) == "edge"


# -- analyst mode: the public input policy -------------------------------------
#: What analyst mode does with rows a mechanism cannot take.  Every step is a
#: row-by-row map or the addition of one fixed public row, so neighbouring
#: inputs stay neighbours and the mechanism's guarantee carries over exactly:
#: - missing: NULL, NaN, text that is not a number, and rows whose
#:   expression fails are dropped;
#: - out_of_range: values (±inf included) are clamped to the query's public
#:   bounds; without bounds ±inf rows are dropped, except for a count, which
#:   counts them as rows (as every engine's COUNT does);
#: - flags: for 0/1-flag statistics (ratio) other values are dropped;
#: - empty: a mechanism that has no answer on an empty input (decided from the
#:   mechanism alone, before the charge) always gets one extra public row (the
#:   midpoint of its bounds, or 0): it then never sees an empty input.
ANALYST_POLICY = "drop missing, clamp to bounds, one public row for order statistics"
ANALYST_FAILURE = (
    "the release failed after its charge (analyst mode shows the same message whatever "
    "the data; the budget stays spent): ask the data owner to check the data"
)


def analyst_policy(mechanism: Any) -> dict[str, Any]:
    """The public input policy for ``mechanism`` (a function of the mechanism only)."""
    from .mechanisms.ratio import PrivateRatio
    from .random import simulation

    query = getattr(mechanism, "query", None)
    lo, hi = getattr(query, "lower", None), getattr(query, "upper", None)
    if lo is None and hasattr(mechanism, "lower"):  # the exponential quantile
        lo, hi = getattr(mechanism, "lower", None), getattr(mechanism, "upper", None)
    bounds = None if lo is None or hi is None else [float(lo), float(hi)]
    flags = isinstance(mechanism, PrivateRatio)
    try:  # does the mechanism answer on the empty input?  (public: no row involved)
        mechanism.release(np.empty(0), rng=simulation(0))
        pad = None
    except Exception:  # noqa: BLE001 - any refusal means "no answer on empty input"
        pad = 0.0 if flags or bounds is None else bounds[0] + (bounds[1] - bounds[0]) / 2
    from .queries.counts import Count

    if bounds is not None:
        infinite = "clamp"
    else:
        infinite = "count" if isinstance(query, Count) else "drop"
    return {
        "missing": "drop",
        "out_of_range": "clamp" if bounds is not None else "none",
        "infinite": infinite,
        "flags": "drop values other than 0 and 1" if flags else "none",
        "bounds": bounds,
        "added_public_row": pad,
    }


def apply_policy(values: np.ndarray, policy: dict[str, Any]) -> np.ndarray:
    """Apply :func:`analyst_policy`'s steps to the finite values read from the rows."""
    values = np.asarray(values, dtype=np.float64)
    values = values[~np.isnan(values)]
    if policy.get("flags", "none") != "none":
        values = values[(values == 0.0) | (values == 1.0)]
    bounds = policy.get("bounds")
    infinite = policy.get("infinite", "drop")
    if bounds is not None and policy.get("out_of_range") == "clamp":
        values = np.clip(values, bounds[0], bounds[1])
    elif infinite == "count":  # a count reads a row's presence only
        values = np.where(np.isfinite(values), values, 0.0)
    else:
        values = values[np.isfinite(values)]
    if policy.get("added_public_row") is not None:
        values = np.append(values, float(policy["added_public_row"]))
    return values


#: the keyword options :meth:`Session.release_statistic` takes beyond its own
RELEASE_OPTIONS = (
    "mechanism", "bounds", "quantile", "trim", "k", "noise", "gamma", "ptr_bound",
    "calibration", "vertices", "resolution", "quantiles",
)


def _check_options(options: dict[str, Any]) -> None:
    """A misspelt keyword names the public options, not an internal function."""
    from .errors import did_you_mean

    for key in options:
        if key not in RELEASE_OPTIONS:
            raise ParameterError(
                f"unknown option {key}=: the options are {', '.join(RELEASE_OPTIONS)}"
                + did_you_mean(key, RELEASE_OPTIONS),
                parameter=key,
            )


def _precheck(mechanism: Any, data: Any) -> None:
    """Input checks a mechanism would otherwise make only after the charge."""
    from .mechanisms.ratio import PrivateRatio

    if isinstance(mechanism, PrivateRatio):
        mechanism.counts(data)  # 0/1 flags, or ValueError


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
        Drop NULL, NaN and ±inf values instead of refusing them (owner mode,
        the same on every engine: docs/threat-model.md, "Owner mode's read
        policy"; analyst mode always drops NULL/NaN and clamps ±inf).
    analyst:
        The caller may not be the data owner (see docs/threat-model.md).
        Nothing the caller sees then depends on the rows except through
        charged releases: the ledger must already hold this dataset's budget
        (nothing is created); SQL is limited to row-local ``SELECT <expr>
        FROM data [WHERE <cond>]`` checked from its text; the budget is
        charged before any row is read; and each release is a total function
        of the rows under the public input policy of :data:`ANALYST_POLICY`.
    neighbours:
        The neighbour relation of every release, recorded in the ledger with
        the dataset's budget: ``"add_remove"`` (the default for a new dataset;
        one row added or removed, the relation of OpenDP, Tumult and Google's
        libraries; nothing uses the row count) or ``"substitution"`` (one row
        replaced; the table's size is public).  A selection (``sql``,
        ``drop_missing``, and analyst mode's public input policy, which drops
        missing values) makes the selected rows' count private, so under
        substitution such a release is refused (use ``"add_remove"``).  Graph
        statistics always use edge privacy.  None uses the relation the ledger
        records for the dataset (a ledger migrated from version 1 records
        ``"substitution"``) and says so in :attr:`relation_source`; a relation
        other than the recorded one is refused.
    principal:
        Who charges (recorded with each charge, checked against an allowance
        the ledger holds for it); default the OS user.
    table, sql, spark:
        Where the data live (see docs/backends.md): ``table=`` names a table
        of a SQLite file (``.sqlite``/``.sqlite3``/``.db`` or ``sqlite:///``)
        or of a PostgreSQL URL (``postgresql://…``); ``sql=`` a query over
        such a database instead; ``spark=`` a ``SparkSession`` in which
        ``data`` is a table name (a ``pyspark.sql.DataFrame`` needs none).
        On these inputs, and on Parquet/CSV/JSON files (through DuckDB),
        count, sum, mean, median and quantile are released from the
        engine's aggregates without reading the column
        (:mod:`instancedp.sources`); the choice depends on the kind of input
        and the statistic only.
    """

    def __init__(
        self,
        data: Any,
        budget: Guarantee | None = None,
        ledger: str | Path | None = None,
        dataset_id: str | None = None,
        *,
        drop_missing: bool = False,
        analyst: bool = False,
        neighbours: str | None = None,
        principal: str | None = None,
        table: str | None = None,
        sql: str | None = None,
        spark: Any = None,
    ) -> None:
        from .sources import input_kind

        self._data = data
        #: the kind of input (public): memory, file, sqlite, postgresql, spark or source
        self.input_kind = input_kind(data, table=table, spark=spark)
        if table is not None and self.input_kind not in ("sqlite", "postgresql"):
            raise ParameterError(
                "table= names a table of a SQLite file or a PostgreSQL URL",
                parameter="table",
            )
        if sql is not None and self.input_kind not in ("sqlite", "postgresql", "spark"):
            raise ParameterError(
                "sql= at the session applies to databases and Spark (pass sql= to each "
                "release for files and arrays)",
                parameter="sql",
            )
        if sql is not None and analyst:
            # a query over the whole database could select rows by an aggregate
            raise ParameterError(
                "analyst mode releases from a named table: pass table= instead of sql=",
                parameter="sql",
            )
        self._where = {"table": table, "sql": sql, "spark": spark}
        self.dataset_id = "default" if dataset_id is None else dataset_id
        self.drop_missing = bool(drop_missing)
        self.analyst = bool(analyst)
        self.neighbours = None if neighbours is None else relation_for(neighbours)
        if self.neighbours == "edge":
            raise ParameterError(
                "neighbours must be 'add_remove' or 'substitution' (graph statistics use "
                "edge privacy on their own)",
                parameter="neighbours",
                allowed="add_remove, substitution",
            )
        if self.analyst:
            # An analyst spends a budget the data owner set: never create one.
            if budget is not None:
                raise ParameterError(
                    "in analyst mode the budget is the data owner's: leave budget=None and "
                    "name a ledger that already holds it",
                    parameter="budget",
                )
            if ledger is None or (not isinstance(ledger, Ledger) and str(ledger) == ":memory:"):
                raise ParameterError(
                    "analyst mode needs the data owner's existing ledger: pass ledger=PATH",
                    parameter="ledger",
                )
        self.principal = principal
        if isinstance(ledger, Ledger):
            self.ledger = ledger
        else:
            # Without a budget there is nothing to create: a missing ledger is an error.
            self.ledger = Ledger(
                ledger or ":memory:",
                create=budget is not None and not self.analyst,
                principal=principal,
            )
        self._budget = self.ledger.ensure_budget(self.dataset_id, budget, relation=self.neighbours)
        #: where the relation came from: "session" (passed) or "ledger" (recorded)
        self.relation_source = "session" if self.neighbours is not None else "ledger"
        if self.neighbours is None:
            self.neighbours = self.ledger.relation(self.dataset_id)
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
    def column(
        self,
        column: str | None = None,
        *,
        sql: str | None = None,
        drop_missing: bool | None = None,
    ) -> np.ndarray:
        """The checked float64 column (read once, then cached).

        ``drop_missing`` overrides the session's setting for this column."""
        self._owner_only("column")
        drop = self.drop_missing if drop_missing is None else bool(drop_missing)
        key = ("column", column, sql, drop)
        if key not in self._cache:
            self._cache[key] = _io.read_column(self._data, column, sql=sql, drop_missing=drop)
        return self._cache[key]

    def graph(self, n_vertices: int | None = None) -> Any:
        """The graph on the public vertex set, validated (before any charge).

        An edge list (file or array) does not show isolated vertices, so the
        vertex count must be given (``n_vertices``, public); networkx graphs
        and scipy.sparse matrices carry their vertex set.
        """
        self._owner_only("graph")
        key = ("graph", n_vertices)
        if key not in self._cache:
            from .queries import as_graph

            if n_vertices is None and _is_edge_list(self._data):
                raise ParameterError(VERTICES_REQUIRED, parameter="vertices")
            self._cache[key] = as_graph(_io.graph_input(self._data), n_vertices)
        return self._cache[key]

    def _owner_only(self, what: str) -> None:
        if self.analyst:
            raise ParameterError(
                f"{what}() returns the rows themselves: analyst mode only releases "
                "(use release or release_statistic)",
                parameter="analyst",
            )

    def _input_for(
        self, mechanism: Any, column: str | None, sql: str | None, drop_missing: bool | None
    ) -> Any:
        if _is_graph_mechanism(mechanism):
            return self.graph(getattr(mechanism.query, "n_vertices", None))
        return self.column(column, sql=sql, drop_missing=drop_missing)

    # -- releasing --------------------------------------------------------------
    def release(
        self,
        mechanism: Any,
        column: str | None = None,
        *,
        sql: str | None = None,
        rng: Any = None,
        convert_delta: float | None = None,
        drop_missing: bool | None = None,
    ) -> Any:
        """Charge ``mechanism.guarantee``, then run ``mechanism.release``.

        ``column``/``sql`` pick the input from the session's data;
        ``drop_missing`` (default: the session's) drops NULL/NaN/±inf instead of
        refusing them.  ``rng``
        is None (secure randomness) or ``instancedp.random.simulation(seed)``
        (the release is then marked ``secure=False``).  ``convert_delta``:
        the δ at which a zCDP release is charged to an (ε, δ) budget.

        Raises ``ValueError`` (bad data or parameters; nothing charged),
        :class:`CompositionError` (guarantee type the budget cannot take;
        nothing charged) or :class:`BudgetExceeded` (nothing charged).
        """
        from .random import resolve

        source = resolve(rng)  # a bad rng is refused before anything is charged
        self._check_relation(mechanism, sql=sql, drop_missing=drop_missing)
        if self._out_of_core(mechanism, sql):
            return self._release_from_source(
                mechanism, column, sql, source, convert_delta, drop_missing
            )
        if self.analyst:
            return self._release_analyst(mechanism, column, sql, source, convert_delta)
        guarantee = mechanism.guarantee
        data = self._input_for(mechanism, column, sql, drop_missing)
        _precheck(mechanism, data)
        self.ledger.price(self.dataset_id, guarantee, convert_delta)  # CompositionError early
        params = mechanism.parameters() if callable(getattr(mechanism, "parameters", None)) else {}
        charge = self._charge(guarantee, _mechanism_name(mechanism), params, convert_delta)
        # The charge is committed: from here on, any failure leaves it in place
        # (an interrupted release can only over-count).
        try:
            release = mechanism.release(data, rng=source)
        except BaseException:
            self._mark(charge.id, "failed")
            raise
        self._mark(charge.id, "refused" if getattr(release, "refused", False) else "released")
        return release

    def _release_analyst(
        self, mechanism: Any, column: str | None, sql: str | None, source: Any,
        convert_delta: float | None,
    ) -> Any:
        """The analyst-mode release: public checks, charge, then the rows (totally)."""
        guarantee = mechanism.guarantee
        graph = _is_graph_mechanism(mechanism)
        if graph and getattr(mechanism.query, "n_vertices", None) is None:
            raise ParameterError(VERTICES_REQUIRED, parameter="vertices")
        # 1. Public checks only: the query's text and the schema, never a row.
        query = None if graph else _io.AnalystQuery(self._data, column, sql)
        policy = analyst_policy(mechanism)
        self.ledger.price(self.dataset_id, guarantee, convert_delta)  # CompositionError early
        params = mechanism.parameters() if callable(getattr(mechanism, "parameters", None)) else {}
        params = {**params, "input_policy": policy}
        # 2. The charge (BudgetExceeded here is the same for every dataset).
        charge = self._charge(guarantee, _mechanism_name(mechanism), params, convert_delta)
        # 3. The rows, through the public policy; any failure from here on gives
        # one fixed message (its occurrence is the only thing it can reveal).
        try:
            if graph:
                from .queries import as_graph

                n = mechanism.query.n_vertices
                edges = (
                    _io.read_edge_list_public(self._data, n)
                    if isinstance(self._data, (str, Path))
                    else _io.graph_input(self._data)
                )
                data = as_graph(edges, n, normalise=True)
            else:
                data = apply_policy(query.read(), policy)
            release = mechanism.release(data, rng=source)
        except Exception:  # noqa: BLE001 - the cause may depend on the rows
            self._mark(charge.id, "failed")
            raise DataError(ANALYST_FAILURE) from None
        self._mark(charge.id, "refused" if getattr(release, "refused", False) else "released")
        import dataclasses

        return dataclasses.replace(
            release, parameters={**dict(release.parameters), "input_policy": policy}
        )

    def release_statistic(
        self,
        statistic: str,
        column: str | None = None,
        *,
        epsilon: float,
        delta: float | None = None,
        sql: str | None = None,
        rng: Any = None,
        convert_delta: float | None = None,
        drop_missing: bool | None = None,
        by: str | None = None,
        keys: Any = None,
        split: Any = None,
        id_column: str | None = None,
        max_groups: int = 1,
        ci: float | None = None,
        **options: Any,
    ) -> Any:
        """Build the mechanism by name (as ``instancedp release`` does) and release.

        ``ci=0.95``: the release carries a private confidence interval
        (``Release.ci``; :mod:`instancedp.intervals`), its charge inside the
        same ε (instance-adaptive mechanisms spend a stated share on it).

        ``by=COLUMN`` releases per group (see :mod:`instancedp.groupby`):
        ``statistic`` may then list several (``"median,p90,count"``),
        ``keys`` are the public keys (None: private partition selection,
        which needs δ > 0), ``split`` the fractions of ε per statistic (then
        the selection; default equal), ``id_column``/``max_groups`` bound each
        person's contributions.  Returns a
        :class:`~instancedp.groupby.GroupRelease` charged once.

        ``options`` are :func:`build_mechanism`'s: ``mechanism``, ``bounds``,
        ``quantile``, ``trim``, ``k``, ``noise``, ``gamma``, ``ptr_bound``;
        ``statistic="quantiles"`` takes ``quantiles=[q1, …, qm]`` and releases
        the sorted vector in one record, charged once
        (:func:`~instancedp.recipes.build_quantiles_mechanism`).
        ``drop_missing`` (default: the session's) drops NULL/NaN/±inf instead of
        refusing them.  Everything is validated before the ledger is touched.
        """
        _check_options(options)
        # calibrate at the double not above the decimal given, so that charges add up
        # the way the decimals do (ten of 0.1 fill 1.0) while the charge is the ε used
        epsilon, delta = _validate.at_most_decimal(epsilon), _validate.at_most_decimal(delta)
        if by is not None:
            return self._release_groups(
                statistic, column, by=by, keys=keys, split=split, epsilon=epsilon,
                delta=delta, sql=sql, rng=rng, convert_delta=convert_delta,
                drop_missing=drop_missing, id_column=id_column, max_groups=max_groups,
                ci=ci, **options,
            )
        if keys is not None or split is not None or id_column is not None:
            raise ParameterError("keys, split and id_column apply to group-by releases: "
                                 "pass by=COLUMN", parameter="by")
        stat = str(statistic).lower().replace("_", "-")

        def build(eps: float, **extra: Any) -> Any:
            if ci is None:
                return build_mechanism(statistic, eps, delta, **extra, **options)
            from .intervals import with_interval

            return with_interval(
                lambda e: build_mechanism(statistic, e, delta, **extra, **options), eps, ci
            )

        if ci is not None and self.input_kind in ("sqlite", "postgresql", "spark", "source"):
            raise ParameterError(
                "confidence intervals are computed in memory: ci= is not available for "
                "releases from a database or Spark", parameter="ci")
        if stat in GRAPH_STATISTICS:
            return self.release(build(epsilon), rng=rng, convert_delta=convert_delta)
        rel = self.relation_for_release(sql=sql, drop_missing=drop_missing)
        if ci is None and self._statistic_out_of_core(stat, sql=sql, rel=rel, options=options):
            from .sources import SORTED_STATISTICS, out_of_core_mechanism

            if rel == "substitution" and stat in (*SORTED_STATISTICS, *USES_PUBLIC_N):
                # as in memory: n is public under substitution (owner mode, no selection
                # here), refused when 0 or when a row is missing (the owner's read policy),
                # given to the trimmed mean's sensitivity and the quantiles' default rule
                from .sources import owner_missing_policy

                owner_missing_policy(self.source(sql), column, drop_missing=False)
                n = self.source(sql).count(column)
                if stat in USES_PUBLIC_N:
                    options = {**options, "n": n}
            if stat in ("median", "quantile"):
                res = self._declared_resolution(column, options, sql=sql, out_of_core=True)
                options = options if res is None else {**options, "resolution": res}
            mech = out_of_core_mechanism(statistic, epsilon, delta, neighbours=rel, **options)
            return self.release(
                mech, column, sql=sql, rng=rng, convert_delta=convert_delta,
                drop_missing=drop_missing,
            )
        if stat in ("median", "quantile") and sql is None:
            res = self._declared_resolution(column, options)
            options = options if res is None else {**options, "resolution": res}
        mech = build(epsilon, neighbours=rel)
        if self.analyst:  # n is never read from the rows here: it may be private
            return self.release(mech, column, sql=sql, rng=rng, convert_delta=convert_delta)
        data = self.column(column, sql=sql, drop_missing=drop_missing)
        check_input(stat, data)
        if rel == "substitution" and stat in USES_PUBLIC_N:
            # n is public under substitution when the whole table is released
            mech = build(epsilon, n=int(data.size), neighbours=rel)
        return self.release(
            mech, column, sql=sql, rng=rng, convert_delta=convert_delta, drop_missing=drop_missing
        )

    def _declared_resolution(self, column: str | None, options: dict[str, Any], *,
                             sql: str | None = None, out_of_core: bool = False) -> float | None:
        """The resolution the column's declared type states for a default median or
        quantile with bounds: an integer column then releases on its grid (ties exactly,
        docs/mechanisms.md), alone or per group.  In memory the container's type
        (:func:`instancedp.io.declared_resolution`, the table's, not a query's); out of
        core the engine's schema (``Source.declared_resolution``: a Parquet schema, SQL
        DDL, a query's static result type, a Spark schema — never a CSV's inferred
        type), on a grid of at most ``sources.MAX_CANDIDATES`` points (its draw reads one
        histogram).  Public: the declared type and the bounds only; a grid past the
        limit keeps the continuous base (None)."""
        if (options.get("resolution") is not None or options.get("mechanism") is not None
                or options.get("bounds") is None
                or (self.input_kind != "memory") != out_of_core):
            return None
        from .mechanisms.quantile import grid_count
        from .sources import grid_not_served

        try:
            if out_of_core:
                res = self.source(sql).declared_resolution(column)
            else:
                res = _io.declared_resolution(self._data, column)
            if res is None:
                return None
            lo, hi = (float(b) for b in options["bounds"])
            grid_count(lo, hi, res)
            if out_of_core and grid_not_served(lo, hi, res) is not None:
                return None
        except (ParameterError, TypeError, ValueError, OverflowError):
            return None  # bounds refused by the recipe, or a grid too fine to index
        return res

    def describe(
        self,
        epsilon: float,
        *,
        columns: Any = None,
        bounds: dict[str, tuple[float, float]] | None = None,
        rng: Any = None,
        ci: float | None = 0.95,
    ) -> Any:
        """A private summary of every numeric column, charged once (ε in total).

        Per column: count, mean, the quartiles and the 5th and 95th
        percentiles; columns from declared types only; ``bounds`` maps a
        column to public (lo, hi), bound-free quantiles elsewhere.  The split
        of ε is stated in the result (see :mod:`instancedp.describe`).
        ``ci``: every statistic's error bar at this level, inside the same ε
        (None: none).  Returns a :class:`~instancedp.describe.DescribeResult`
        (``to_frame()``: a pandas DataFrame; ``to_dict()``: the record).
        """
        from .describe import describe

        # the decimal rule of release_statistic: charges add up as the decimals do
        return describe(self, _validate.at_most_decimal(epsilon), columns=columns,
                        bounds=bounds, rng=rng, ci=ci)

    def _release_groups(
        self, statistic: Any, column: str | None, *, by: str, keys: Any, split: Any,
        epsilon: float, delta: float | None, sql: str | None, rng: Any,
        convert_delta: float | None, drop_missing: bool | None, id_column: str | None,
        max_groups: int, ci: float | None = None, **options: Any,
    ) -> Any:
        """The group-by branch of :meth:`release_statistic` (charged once)."""
        from .groupby import group_release

        if sql is not None:
            raise ParameterError("by= reads the table itself: sql is not supported with it",
                                 parameter="sql")
        unknown = set(options) - {"bounds", "mechanism"}
        if unknown:
            raise ParameterError(
                f"option {sorted(unknown)[0]}= does not apply to group-by releases "
                "(per group: bounds, mechanism)", parameter=sorted(unknown)[0])
        if keys is None and self._budget.kind == "pure":
            raise ParameterError(
                "unknown keys need private partition selection, which is (ε, δ)-DP, but this "
                "dataset's budget is pure ε: pass the public keys (keys=[...])",
                parameter="keys", allowed="a list of public keys under a pure-ε budget",
            )
        if self._is_parquet or self.input_kind in ("sqlite", "postgresql"):
            # declared types: refused before the charge, as one release
            self._check_declared_numeric(self.source(), column)
        drop = self.drop_missing if drop_missing is None else bool(drop_missing)
        drop = drop or self.analyst

        def charge(guarantee: Any, mechanism: str, parameters: dict[str, Any]) -> Any:
            self.ledger.price(self.dataset_id, guarantee, convert_delta)
            record = self._charge(guarantee, mechanism, parameters, convert_delta)
            return lambda status: self._mark(record.id, status)

        try:
            return group_release(
                self._data, by, column, statistic, epsilon=epsilon, delta=delta, keys=keys,
                split=split, neighbours=self.neighbours, id_column=id_column,
                max_groups=max_groups, drop_missing=drop, rng=rng, charge=charge,
                where=self._where, ci=ci, analyst=self.analyst,
                resolution=self._declared_resolution(column, options), **options,
            )
        except (ParameterError, BudgetExceeded, CompositionError, LedgerError):
            raise
        except Exception:
            if self.analyst:  # after the charge the cause may depend on the rows
                raise DataError(ANALYST_FAILURE) from None
            raise

    # -- data where it lives (instancedp.sources) ---------------------------------
    def _statistic_out_of_core(
        self, stat: str, *, sql: str | None, rel: str, options: dict[str, Any]
    ) -> bool:
        """Public rule (the request and the kind of input, never the rows).

        Databases and Spark: always (other requests are refused there).  A
        Parquet file: through DuckDB when the request is one the aggregates
        serve (count, sum, mean under add/remove, median, quantile, ratio,
        min, max, trimmed mean; no SQL; no mechanism or option beyond the
        defaults (and the bound-free quantiles by name), bounds, quantile and
        resolution, and trim, noise and gamma for the last three); any other
        request, and CSV/JSON files, read the column into memory."""
        from .sources import OUT_OF_CORE

        if self.input_kind in ("sqlite", "postgresql", "spark", "source"):
            return True
        if not self._is_parquet:
            return False
        from .registry import bound_free_key
        from .sources import SORTED_STATISTICS

        sorted_options = ("trim", "noise", "gamma") if stat in SORTED_STATISTICS else ()
        extra = {k for k, v in options.items()
                 if v is not None
                 and k not in ("bounds", "quantile", "resolution", *sorted_options)}
        default = {"median": "exponential", "quantile": "exponential",
                   "mean": "sum-count" if rel == "add_remove" else "laplace",
                   "ratio": "ksw", **{s: "smooth" for s in SORTED_STATISTICS}}
        named = options.get("mechanism")
        if named in (None, default.get(stat, "laplace")) or (
                stat in ("median", "quantile") and bound_free_key(named, stat) is not None):
            extra.discard("mechanism")  # the defaults, and the bound-free quantiles by name
        return stat in OUT_OF_CORE and sql is None and not extra

    @property
    def _is_parquet(self) -> bool:
        """A Parquet file (its schema declares the types: DuckDB reads it out of core)."""
        return self.input_kind == "file" and Path(str(self._data)).suffix.lower() in (
            ".parquet", ".pq")

    def _out_of_core(self, mechanism: Any, sql: str | None = None) -> bool:
        from .backends import _is_frame
        from .sources import CandidateQuantile, serves_out_of_core

        if self.input_kind in ("sqlite", "postgresql", "spark", "source"):
            return True
        if _is_graph_mechanism(mechanism):  # edge files and frames: DuckDB
            return self.input_kind == "file" or _is_frame(self._data)
        if self._is_parquet and sql is None:  # DuckDB for what its aggregates serve
            return serves_out_of_core(mechanism)
        return self.input_kind == "file" and isinstance(mechanism, CandidateQuantile)

    def source(self, sql: str | None = None) -> Any:
        """The :class:`~instancedp.backends.Source` over the data (opened once per ``sql``).

        Opening reads the schema only (public), never a row."""
        from .backends import Source, open_source

        if isinstance(self._data, Source):
            if sql is not None:
                raise ParameterError(
                    "sql= does not apply to an opened Source", parameter="sql"
                )
            return self._data
        where = dict(self._where)
        if sql is not None:
            if where["table"] is not None or where["sql"] is not None:
                raise ParameterError(
                    "give the database's table= or sql= once, at the session or the release",
                    parameter="sql",
                )
            where["sql"] = sql
        key = ("source", where["sql"])
        if key not in self._cache:
            self._cache[key] = open_source(self._data, **where)
        return self._cache[key]

    def _release_from_source(
        self, mechanism: Any, column: str | None, sql: str | None, rng: Any,
        convert_delta: float | None, drop_missing: bool | None,
    ) -> Any:
        """Charge, then release from the engine's aggregates (:mod:`instancedp.sources`)."""
        from .sources import owner_missing_policy, release_from_source

        if _is_graph_mechanism(mechanism):
            return self._release_graph_from_source(mechanism, sql, rng, convert_delta)
        if self.analyst and sql is not None:
            raise ParameterError(
                "analyst mode on a database, Spark or a data file releases from a whole "
                "table: name it (table=) instead of passing sql=",
                parameter="sql",
            )
        src = self.source(sql)  # the schema only
        if column is not None and column not in src.columns:
            from .errors import did_you_mean

            raise SchemaError(
                f"unknown column {column!r}: the columns are {', '.join(src.columns)}"
                + did_you_mean(column, src.columns)
            )
        self._check_declared_numeric(src, column)
        if self.analyst:
            # the public input policy: the engines drop NULL/NaN, clamp to the bounds and
            # count ±inf rows, as apply_policy does in memory (neighbours stay neighbours)
            missing = "drop"
        else:  # owner mode: the in-memory reader's policy, on every engine, before the charge
            drop = self.drop_missing if drop_missing is None else bool(drop_missing)
            missing = owner_missing_policy(src, column, drop)
        return self._charged_run(
            mechanism, convert_delta,
            lambda policy: release_from_source(mechanism, src, column, rng, missing=missing,
                                               policy=policy),
        )

    def _check_declared_numeric(self, src: Any, column: str | None) -> None:
        """A Parquet file, a SQLite table's DDL and a PostgreSQL result declare their
        columns' types (public): a column that is not a number (text, a date) is refused
        before the charge, in both modes — the engine's cast would otherwise fail after it
        (DuckDB, PostgreSQL) or turn text into 0.0 (SQLite)."""
        from .backends.duckdb import is_numeric_type

        declared = getattr(src.engine, "declared", None)
        if self._is_parquet and declared and column in declared:
            kind = None if is_numeric_type(declared[column], boolean=True) else declared[column]
        else:
            kind = getattr(src.engine, "non_numeric", {}).get(column)
        if kind is not None:
            raise SchemaError(
                f"column {column!r} is declared {kind}, not a number: choose a "
                "numeric (or boolean) column"
            )

    def _graph_tables(self, n: int, sql: str | None, normalise: bool) -> Any:
        """The edge tables in DuckDB (:mod:`instancedp.backends.graph`) under the public
        policy: strict for the owner (errors name the problem), row-by-row drop for the
        analyst.  Text files (CSV, TSV) are read line by line, as edge-list text."""
        from .backends import Source
        from .backends import graph as gsql
        from .backends.duckdb import connect

        if isinstance(self._data, Source):
            engine, lines = self._data.engine, False
        else:
            suffix = Path(str(self._data)).suffix.lower() if self.input_kind == "file" else ""
            lines = suffix in (".csv", ".tsv")
            engine = connect(self._data, sql=sql, lines=lines)
        policy = "drop" if self.analyst else "strict"
        return gsql.edge_tables(engine, n, normalise=normalise, policy=policy, lines=lines)

    def _release_graph_from_source(
        self, mechanism: Any, sql: str | None, rng: Any, convert_delta: float | None
    ) -> Any:
        """A graph statistic from an edge file or frame: the sufficient statistics are
        DuckDB aggregates (:func:`instancedp.backends.graph.summary`), and the mechanism
        releases from them exactly what it releases from the edges in memory."""
        from .backends import Source
        from .backends import graph as gsql

        backend = self._data.backend if isinstance(self._data, Source) else self.input_kind
        if backend in ("sqlite", "postgresql", "spark", "numpy"):
            raise ParameterError(
                "graph statistics run in memory or in DuckDB (edge files and frames), "
                f"not on {backend}",
                parameter="data",
            )
        if self._where["sql"] is not None or (self.analyst and sql is not None):
            raise ParameterError(
                "graph statistics read the whole edge file: drop sql=", parameter="sql"
            )
        n = getattr(mechanism.query, "n_vertices", None)
        if n is None:
            raise ParameterError(VERTICES_REQUIRED, parameter="vertices")
        suffix = Path(str(self._data)).suffix.lower() if self.input_kind == "file" else None
        if suffix is not None and suffix not in (".parquet", ".pq", ".csv", ".tsv"):
            # JSON's columns are inferred from the rows, and compressed text is not read
            # line by line: a public refusal, from the file's name
            raise ParameterError(
                "edge files are Parquet (declared types), CSV or TSV (read line by line), "
                f"not {suffix}",
                parameter="data",
                allowed=".parquet, .pq, .csv, .tsv",
            )
        tables = None
        if not self.analyst:  # the owner's data problems are errors, before the charge
            tables = self._graph_tables(n, sql, bool(getattr(mechanism.query, "normalise", False)))

        def run(policy: Any) -> Any:
            summary_tables = tables if tables is not None else self._graph_tables(n, None, True)
            return mechanism.release(gsql.summary(summary_tables), rng=rng)

        return self._charged_run(mechanism, convert_delta, run)

    def _charged_run(self, mechanism: Any, convert_delta: bool, run: Any) -> Any:
        """Price, charge, then ``run(policy)`` where the data live; the charge is marked
        released, refused or failed.  In analyst mode the public input policy
        (:func:`analyst_policy`) is stated in the charge and the record, and a failure
        reads the same whatever its cause (it may depend on the rows)."""
        guarantee = mechanism.guarantee
        self.ledger.price(self.dataset_id, guarantee, convert_delta)  # CompositionError early
        params = mechanism.parameters()
        policy = analyst_policy(mechanism) if self.analyst else None
        if policy is not None:
            params = {**params, "input_policy": policy}
        charge = self._charge(guarantee, _mechanism_name(mechanism), params, convert_delta)
        try:
            release = run(policy)
        except Exception:
            self._mark(charge.id, "failed")
            if self.analyst:
                raise DataError(ANALYST_FAILURE) from None
            raise
        self._mark(charge.id, "refused" if getattr(release, "refused", False) else "released")
        if policy is None:
            return release
        import dataclasses

        return dataclasses.replace(
            release, parameters={**dict(release.parameters), "input_policy": policy}
        )

    def _check_relation(
        self, mechanism: Any, *, sql: str | None, drop_missing: bool | None
    ) -> None:
        """A mechanism's relation must be the session's (graphs: edge), from public facts.

        Its ε under substitution says nothing under add/remove, and its ε
        under add/remove is only 2ε under substitution (group privacy), so a
        mismatch would charge the ledger the wrong amount.
        """
        query = getattr(mechanism, "query", None)
        rel = getattr(mechanism, "neighbours", None) or getattr(query, "neighbours", None)
        if rel is None or rel == "edge":
            return
        if rel != self.neighbours:
            raise ParameterError(
                f"the mechanism is calibrated for {rel} neighbours but this session's "
                f"relation is {self.neighbours}: build its query with neighbours="
                f"{self.neighbours!r}",
                parameter="neighbours",
                allowed=self.neighbours,
            )
        self.relation_for_release(sql=sql, drop_missing=drop_missing)

    def relation_for_release(
        self, *, sql: str | None = None, drop_missing: bool | None = None
    ) -> str:
        """The relation a tabular release uses: the session's, checked against selections.

        A selection (an SQL query, dropping missing values) makes the number
        of selected rows private: one row changing its region enters or leaves
        the selection.  Under substitution (n public) such a release is
        refused, from public facts only (whether there is a selection), with
        the reason; under add/remove nothing uses the count, so selections are
        fine.
        """
        drop = self.drop_missing if drop_missing is None else bool(drop_missing)
        drop = drop or self.analyst  # analyst mode's input policy drops missing values
        if self.neighbours == "substitution" and (sql is not None or drop):
            what = "an SQL selection" if sql is not None else "dropping missing values"
            raise ParameterError(
                f"neighbours='substitution' makes the table's size public, but {what} "
                "selects rows: their number is private (one row changing a selected column "
                "enters or leaves the selection).  Use neighbours='add_remove' for releases "
                "on a selection",
                parameter="neighbours",
                allowed="add_remove with sql or drop_missing",
            )
        return self.neighbours

    def _charge(
        self, guarantee: Any, mechanism: str, params: dict[str, Any], convert_delta: Any
    ) -> Any:
        """The one charge every release path makes (committed before any noise is drawn)."""
        return self.ledger.charge(
            self.dataset_id,
            guarantee,
            mechanism=mechanism,
            parameters=params,
            convert_delta=convert_delta,
            principal=self.principal,
        )

    def _mark(self, charge_id: int, status: str) -> None:
        try:
            self.ledger.mark(charge_id, status)
        except Exception:  # bookkeeping only; the charge itself is already durable
            pass

    def close(self) -> None:
        from .backends import Source

        for key, value in list(self._cache.items()):
            if isinstance(key, tuple) and key[0] == "source" and not isinstance(self._data, Source):
                value.close()
                del self._cache[key]
        self.ledger.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        mode = "analyst" if self.analyst else "owner"
        return (
            f"Session(dataset_id={self.dataset_id!r}, ledger={str(self.ledger.path)!r}, "
            f"mode={mode!r}, neighbours={self.neighbours!r}, budget={self._budget.describe()}, "
            f"remaining={self.remaining.describe()})"
        )

    def _repr_html_(self) -> str:
        import html

        rows = [
            ("dataset", self.dataset_id),
            ("ledger", str(self.ledger.path)),
            ("mode", "analyst" if self.analyst else "owner"),
            ("neighbours", self.neighbours),
            ("budget", self._budget.describe()),
            ("spent", self.spent.describe()),
            ("remaining", self.remaining.describe()),
        ]
        body = "".join(
            f"<tr><th style='text-align:left'>{html.escape(k)}</th><td>{html.escape(str(v))}"
            "</td></tr>"
            for k, v in rows
        )
        return f"<table><caption>instancedp Session</caption>{body}</table>"

