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


# Edge privacy (neighbours differ in one edge) keeps the vertex set fixed and
# public.  Taking it from an edge list (max id + 1, or the names seen) would
# make it a function of the private edges: adding edge (2, 9) to a triangle
# then moves the triangle count's smooth sensitivity from 1.0 to 4.18.
VERTICES_REQUIRED = (
    "the number of vertices must be public under edge privacy: pass --vertices N "
    "(Python: vertices=N), a count known without looking at the edges (an edge list "
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


def _is_graph_mechanism(mechanism: Any) -> bool:
    query = getattr(mechanism, "query", None)
    return getattr(query, "neighbours", None) == "edge"


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
        Drop NULL/NaN values instead of refusing them.
    principal:
        Who charges (recorded with each charge, checked against an allowance
        the ledger holds for it); default the OS user.
    relation:
        The neighbour relation the dataset's budget is spent under, recorded
        when the dataset is created; None uses the recorded one.
    """

    def __init__(
        self,
        data: Any,
        budget: Guarantee | None = None,
        ledger: str | Path | None = None,
        dataset_id: str | None = None,
        *,
        drop_missing: bool = False,
        principal: str | None = None,
        relation: str | None = None,
    ) -> None:
        self._data = data
        self.dataset_id = "default" if dataset_id is None else dataset_id
        self.drop_missing = bool(drop_missing)
        self.principal = principal
        if isinstance(ledger, Ledger):
            self.ledger = ledger
        else:
            # Without a budget there is nothing to create: a missing ledger is an error.
            self.ledger = Ledger(
                ledger or ":memory:", create=budget is not None, principal=principal
            )
        self._budget = self.ledger.ensure_budget(self.dataset_id, budget, relation=relation)
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
        key = ("graph", n_vertices)
        if key not in self._cache:
            from .queries import as_graph

            if n_vertices is None and _is_edge_list(self._data):
                raise ValueError(VERTICES_REQUIRED)
            self._cache[key] = as_graph(_io.graph_input(self._data), n_vertices)
        return self._cache[key]

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
        ``drop_missing`` (default: the session's) drops NULL/NaN instead of
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
        guarantee = mechanism.guarantee
        data = self._input_for(mechanism, column, sql, drop_missing)
        _precheck(mechanism, data)
        self.ledger.price(self.dataset_id, guarantee, convert_delta)  # CompositionError early
        params = mechanism.parameters() if callable(getattr(mechanism, "parameters", None)) else {}
        charge = self.ledger.charge(
            self.dataset_id,
            guarantee,
            mechanism=getattr(mechanism, "name", type(mechanism).__name__),
            parameters=params,
            convert_delta=convert_delta,
            principal=self.principal,
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
        **options: Any,
    ) -> Any:
        """Build the mechanism by name (as ``instancedp release`` does) and release.

        ``options`` are :func:`build_mechanism`'s: ``mechanism``, ``bounds``,
        ``quantile``, ``trim``, ``k``, ``noise``, ``gamma``, ``ptr_bound``.
        ``drop_missing`` (default: the session's) drops NULL/NaN instead of
        refusing them.  Everything is validated before the ledger is touched.
        """
        mech = build_mechanism(statistic, epsilon, delta, **options)
        stat = str(statistic).lower().replace("_", "-")
        if stat in GRAPH_STATISTICS:
            return self.release(mech, rng=rng, convert_delta=convert_delta)
        data = self.column(column, sql=sql, drop_missing=drop_missing)
        check_input(stat, data)
        if stat in USES_PUBLIC_N:  # n is public under substitution neighbours
            mech = build_mechanism(statistic, epsilon, delta, n=int(data.size), **options)
        return self.release(
            mech, column, sql=sql, rng=rng, convert_delta=convert_delta, drop_missing=drop_missing
        )

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


# -- recipes: statistic + mechanism names → a mechanism (used by the CLI) ------
STATISTICS: tuple[str, ...] = (
    "median",
    "quantile",
    "mean",
    "trimmed-mean",
    "count",
    "sum",
    "ratio",
    "min",
    "max",
)
GRAPH_STATISTICS: tuple[str, ...] = ("triangles", "kstars", "two-triangles")
MECHANISMS: tuple[str, ...] = (
    "smooth",
    "ptr",
    "exponential",
    "laplace",
    "gaussian",
    "bounded-ls",
    "ksw",
    "naive",
)
#: statistics whose global sensitivity improves with the public n (substitution)
# Statistics whose mechanism uses the public n (substitution neighbours): the
# means for their sensitivity, medians/quantiles for the default-mechanism rule.
USES_PUBLIC_N = ("mean", "trimmed-mean", "median", "quantile")
_NEEDS_BOUNDS = {"median", "quantile", "mean", "trimmed-mean", "sum", "min", "max"}
_DEFAULT_MECHANISM = {
    "median": "smooth",
    "quantile": "smooth",
    "trimmed-mean": "smooth",
    "min": "smooth",
    "max": "smooth",
    "mean": "laplace",
    "sum": "laplace",
    "count": "laplace",
    "ratio": "ksw",
    "triangles": "smooth",
    "kstars": "smooth",
    "two-triangles": "smooth",
}


# Medians and quantiles: smooth sensitivity when ε·n ≥ SMOOTH_QUANTILE_MIN_EPSILON_N,
# else the exponential mechanism (public: ε and the public n of substitution
# neighbours; without n, n = 1000 is assumed, i.e. smooth iff ε ≥ 2).  From
# docs/results/median.md and median_ties.md (40 cells, MAE ÷ best peer): the
# smooth median's error grows like 1/ε² (1.6–3× the peers at ε ∈ [0.5, 1] on
# continuous data), but on tie-heavy data it wins once ε·n is large (≈ 0 error
# at n = 10⁴, ε ≥ 0.5) where the exponential mechanism is stuck at half a unit
# (7–70×).  2000 is the per-cell minimax choice: worst ratio 10.4 over the
# 40 cells, against 70 for always-exponential and 21 for always-smooth.
SMOOTH_QUANTILE_MIN_EPSILON_N = 2000.0


def default_mechanism(statistic: str, epsilon: float | None = None, n: int | None = None) -> str:
    """The mechanism used when none is named (documented in the README).

    Depends only on public parameters: the statistic and, for medians and
    quantiles, ε and the public n (see :data:`SMOOTH_QUANTILE_MIN_EPSILON_N`).
    """
    if statistic in ("median", "quantile") and epsilon is not None:
        if epsilon * (1000 if n is None else n) < SMOOTH_QUANTILE_MIN_EPSILON_N:
            return "exponential"
    return _DEFAULT_MECHANISM[statistic]


def build_query(
    statistic: str,
    *,
    bounds: tuple[float, float] | None = None,
    quantile: float | None = None,
    trim: float | None = None,
    k: int | None = None,
    n: int | None = None,
    vertices: int | None = None,
) -> Any:
    """The query object for a statistic name (validated: bounds, q, trim, k).

    ``n`` is the public dataset size for the mean and trimmed mean under
    substitution neighbours (where n is public): their global sensitivity is
    then (upper − lower)/n-ish instead of the n = 1 worst case.  ``vertices``
    is the public number of vertices for the graph statistics (edge privacy
    keeps the vertex set fixed; see :data:`VERTICES_REQUIRED`).
    """
    from . import _validate
    from . import queries as Q

    statistic = _choice(statistic, STATISTICS + GRAPH_STATISTICS, "statistic")
    if statistic in _NEEDS_BOUNDS:
        if bounds is None:
            raise ValueError(
                f"statistic {statistic!r} needs public bounds on the data: pass --bounds LO HI "
                "(Python: bounds=(lo, hi)), chosen without looking at the data"
            )
        lo, hi = _validate.bounds(*bounds)
    if quantile is not None and statistic != "quantile":
        raise ValueError(f"--quantile applies to statistic 'quantile' only, not {statistic!r}")
    if statistic == "median":
        return Q.Median(lo, hi)
    if statistic == "quantile":
        if quantile is None:
            raise ValueError("statistic 'quantile' needs --quantile Q with Q in (0, 1)")
        return Q.Quantile(_validate.in_open_interval(quantile, "quantile", 0, 1), lo, hi)
    if trim is not None and statistic != "trimmed-mean":
        raise ValueError(f"--trim applies to statistic 'trimmed-mean' only, not {statistic!r}")
    if statistic == "mean":
        return Q.Mean(lo, hi, n=n)
    if statistic == "trimmed-mean":
        return Q.TrimmedMean(0.1 if trim is None else trim, lo, hi, n=n)
    if statistic == "count":
        return Q.Count()
    if statistic == "sum":
        return Q.Sum(lo, hi)
    if statistic == "ratio":
        return None  # the ratio mechanisms take 0/1 flags directly
    if statistic == "min":
        return Q.Min(lo, hi)
    if statistic == "max":
        return Q.Max(lo, hi)
    if statistic not in GRAPH_STATISTICS:
        if vertices is not None:
            raise ValueError(f"--vertices applies to graph statistics only, not {statistic!r}")
    if statistic == "triangles":
        return Q.TriangleCount(n_vertices=vertices)
    if statistic == "kstars":
        kk = 2 if k is None else k
        if not isinstance(kk, int) or kk < 1:
            raise ValueError(f"k must be an integer >= 1 for kstars, got {k!r}")
        return Q.KStarCount(kk, n_vertices=vertices)
    return Q.TwoTriangleCount(n_vertices=vertices)


def _needs_delta(name: str) -> str:
    return f"mechanism {name!r} is (epsilon, delta)-DP: pass --delta D with 0 < D < 1"


def _choice(value: Any, allowed: tuple[str, ...], name: str) -> str:
    v = str(value).lower().replace("_", "-")
    if v not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(allowed)}; got {value!r}")
    return v


def build_mechanism(
    statistic: str,
    epsilon: float,
    delta: float | None = None,
    *,
    mechanism: str | None = None,
    bounds: tuple[float, float] | None = None,
    quantile: float | None = None,
    trim: float | None = None,
    k: int | None = None,
    noise: str | None = None,
    gamma: float | None = None,
    ptr_bound: float | None = None,
    calibration: str = "analytic",
    n: int | None = None,
    vertices: int | None = None,
) -> Any:
    """A validated mechanism from names, as the CLI's ``release`` builds it.

    Every parameter is checked here (raising ``ValueError`` that names it and
    its range) so that nothing touches the ledger on bad input.  Mechanisms
    with two stages split ε in half (PTR: ε/2 for the test, ε/2 for the
    noise, inside the mechanism; bounded-ls: ε/2 for the bound, ε/2 for the
    release).  ``n``: the public dataset size (substitution; see
    :func:`build_query`) — the CLI passes the size of the data it read.
    """
    from . import _validate
    from . import mechanisms as M

    statistic = _choice(statistic, STATISTICS + GRAPH_STATISTICS, "statistic")
    eps = _validate.epsilon(epsilon)
    d = None if delta is None else _validate.delta(delta)
    if d == 0:
        d = None
    if mechanism is None and (noise is not None or gamma is not None):
        mechanism = "smooth"  # options that only the smooth mechanism takes imply it
    elif mechanism is None and ptr_bound is not None:
        mechanism = "ptr"
    name = _choice(mechanism or default_mechanism(statistic, eps, n), MECHANISMS, "mechanism")
    if noise is not None and name != "smooth":
        raise ValueError(f"--noise applies to --mechanism smooth only, not {name!r}")
    if gamma is not None and name != "smooth":
        raise ValueError(f"--gamma applies to --mechanism smooth only, not {name!r}")
    if ptr_bound is not None and name != "ptr":
        raise ValueError(f"--ptr-bound applies to --mechanism ptr only, not {name!r}")

    if statistic == "ratio":
        from .mechanisms.ratio import PrivateRatio

        methods = {"ksw": "ksw", "naive": "naive", "bounded-ls": "bounded_ls"}
        if name not in methods:
            raise ValueError(
                f"mechanism for statistic 'ratio' must be one of {', '.join(methods)}; got {name!r}"
            )
        if name == "bounded-ls" and d is None:
            raise ValueError(_needs_delta("bounded-ls"))
        return PrivateRatio(eps, method=methods[name], delta=d if name == "bounded-ls" else None)
    if name in ("ksw", "naive"):
        raise ValueError(f"mechanism {name!r} applies to statistic 'ratio' only")

    query = build_query(
        statistic, bounds=bounds, quantile=quantile, trim=trim, k=k, n=n, vertices=vertices
    )
    if name == "smooth":
        family = (noise or "polyplace").lower().replace("-", "_")
        return M.SmoothSensitivityMechanism(query, eps, gamma=gamma, noise=family, delta=d)
    if name == "laplace":
        return M.LaplaceMechanism(query, eps)
    if name == "gaussian":
        if d is None:
            raise ValueError(_needs_delta("gaussian"))
        return M.GaussianMechanism(query, eps, d, calibration=calibration)
    if name == "ptr":
        if d is None:
            raise ValueError(_needs_delta("ptr"))
        if ptr_bound is None:
            raise ValueError(
                "mechanism 'ptr' needs a proposed sensitivity bound: pass --ptr-bound B "
                "(a finite number > 0, chosen without looking at the data)"
            )
        b = _validate.finite_positive(ptr_bound, "ptr-bound")
        # ProposeTestRelease splits ε itself: ε/2 for the test, ε/2 for the noise.
        return M.ProposeTestRelease(query, b, eps, d)
    if name == "exponential":
        if statistic not in ("median", "quantile"):
            raise ValueError(
                "mechanism 'exponential' applies to statistics 'median' and 'quantile' only"
            )
        q = 0.5 if statistic == "median" else quantile
        lo, hi = _validate.bounds(*bounds)  # type: ignore[misc]
        return M.ExponentialQuantile(float(q), lo, hi, eps)
    # bounded-ls
    if d is None:
        raise ValueError(_needs_delta("bounded-ls"))
    return M.BoundedLocalSensitivity(query, None, eps / 2, eps / 2, d)


def check_input(statistic: str, data: np.ndarray) -> None:
    """Own-input checks a statistic needs beyond numeric/non-empty (before any charge)."""
    if statistic == "ratio" and not np.isin(data, (0.0, 1.0)).all():
        raise ValueError(
            "statistic 'ratio' needs a column of 0/1 flags (1 = counted in the numerator, "
            "every row in the denominator): select or compute one with --sql"
        )
