"""Recipes: a statistic's name and options → a query and a mechanism.

Used by :class:`~instancedp.session.Session` (and, through it, the CLI).
Everything here is a function of public parameters only: the statistic, ε,
δ, the bounds, the options and the neighbour relation (``"add_remove"`` by
default, ``"substitution"`` when the table's size is public).  Errors are
:class:`~instancedp.errors.ParameterError` naming the Python keyword.

Default mechanisms (:func:`default_mechanism`):

* add/remove — median and quantiles: the exponential quantile mechanism
  (score sensitivity ≤ 1 under both relations); the mean: noisy sum ÷ noisy
  count (:class:`~instancedp.mechanisms.sum_count.NoisySumOverCount`, ε split
  1/2–1/2, stated in the record); sum and count: Laplace; ratio: KSW; min,
  max and the trimmed mean: smooth sensitivity (add/remove A^(k), and for the
  trimmed mean its β-smooth upper bound; γ from the public default rule).
  Nothing uses n.
* substitution — the size n is public: the mean and trimmed mean use it in
  their sensitivity (and a named smooth median its γ); medians and quantiles
  are the exponential quantile mechanism, as under add/remove.

Statistics a relation cannot carry are refused up front: the count under
substitution (n is public: there is nothing to release); the ratio's
KSW/naive mechanisms are available under add/remove only
(``STATISTIC_RELATIONS``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import _validate
from .errors import ParameterError

__all__ = [
    "STATISTICS",
    "GRAPH_STATISTICS",
    "MECHANISMS",
    "USES_PUBLIC_N",
    "STATISTIC_RELATIONS",
    "default_mechanism",
    "build_query",
    "build_mechanism",
    "check_input",
    "relation_for",
    "QUANTILES_MECHANISMS",
    "default_quantiles_mechanism",
    "build_quantiles_mechanism",
]

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
    "quantiles",
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
    "sum-count",
    "tie-adaptive",
    "tail-choice",
)
#: mechanisms for several quantiles in one release (``statistic="quantiles"``);
#: the short names map to registry keys ``<name>_quantiles``
QUANTILES_MECHANISMS: tuple[str, ...] = ("joint", "recursive", "independent", "unbounded")
#: the joint mechanism's forward pass is O(m²·n) and it is measured up to m = 19
#: (docs/results/quantiles.md): above that the default is the recursive algorithm
JOINT_MAX_LEVELS = 19
# Statistics whose mechanism uses the public n (substitution neighbours only):
# the means for their sensitivity, medians/quantiles for the default rule.
USES_PUBLIC_N = ("mean", "trimmed-mean", "median", "quantile")
#: the relations each statistic is offered under
STATISTIC_RELATIONS: dict[str, tuple[str, ...]] = {
    **{s: ("add_remove", "substitution") for s in STATISTICS},
    "count": ("add_remove",),
    "ratio": ("add_remove",),
    **{s: ("edge",) for s in GRAPH_STATISTICS},
}
_NEEDS_BOUNDS = {"median", "quantile", "mean", "trimmed-mean", "sum", "min", "max"}
_DEFAULT_MECHANISM = {
    "median": "exponential",
    "quantile": "exponential",
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
_DEFAULT_ADD_REMOVE = {"mean": "sum-count"}

# Medians and quantiles under substitution: the exponential mechanism, as under
# add/remove.  Smooth sensitivity was the default at ε·n ≥ 2000 for its exactness on
# ties; the log base's atoms (mechanisms/atoms.py) release ties on round numbers
# exactly, and over the 768 cells of docs/results/accuracy_grid.md smooth sensitivity
# is then 10× the exponential mechanism's error on continuous data at ε = 0.1, 1.6× at
# ε = 1, and no better on tied columns (geometric means ≥ 0.96 at every ε).


def _choice(value: Any, allowed: tuple[str, ...], name: str) -> str:
    v = str(value).lower().replace("_", "-")
    if v not in allowed:
        raise ParameterError(
            f"{name} must be one of {', '.join(allowed)}; got {value!r}",
            parameter=name,
            allowed=", ".join(allowed),
        )
    return v


def relation_for(neighbours: Any, statistic: str | None = None) -> str:
    """The relation name checked (and, for a statistic, that it is offered under it)."""
    from .queries import RELATIONS

    rel = str(neighbours).lower().replace("-", "_")
    if rel not in RELATIONS:
        raise ParameterError(
            f"neighbours must be one of {', '.join(RELATIONS)}; got {neighbours!r}",
            parameter="neighbours",
            allowed=", ".join(RELATIONS),
        )
    if statistic is not None:
        st = _choice(statistic, STATISTICS + GRAPH_STATISTICS, "statistic")
        offered = STATISTIC_RELATIONS[st]
        if st in GRAPH_STATISTICS:
            return "edge"  # graph statistics: edge privacy, the vertex set public
        if rel not in offered:
            why = {
                "count": "under substitution the table's size is public: nothing to release",
                "ratio": "its mechanisms are calibrated for add/remove (users join or leave)",
            }.get(st, "")
            raise ParameterError(
                f"statistic {st!r} is offered under {', '.join(offered)} neighbours only"
                + (f" ({why})" if why else ""),
                parameter="neighbours",
                allowed=", ".join(offered),
            )
    return rel


def default_mechanism(
    statistic: str,
    epsilon: float | None = None,
    n: int | None = None,
    neighbours: str = "add_remove",
    resolution: float | None = None,
) -> str:
    """The mechanism used when none is named (documented in the README).

    Depends only on public parameters: the statistic and the relation (ε, n and
    ``resolution`` do not change the choice; they are kept for callers that pass
    them).  Medians and quantiles: the exponential mechanism under both relations
    (its base — the log base with atoms, or the declared grid — is chosen by
    :func:`build_mechanism`, which for a far-tail quantile under add/remove wraps it
    in the tail choice: q, ε and the bounds decide, all public).
    """
    statistic = _choice(statistic, STATISTICS + GRAPH_STATISTICS, "statistic")
    if statistic == "quantiles":  # with bounds and m ≤ JOINT_MAX_LEVELS
        return default_quantiles_mechanism(1, bounded=True)
    if neighbours == "add_remove" and statistic in _DEFAULT_ADD_REMOVE:
        return _DEFAULT_ADD_REMOVE[statistic]
    return _DEFAULT_MECHANISM[statistic]


def _public_n(n: Any, neighbours: str) -> int | None:
    if n is None:
        return None
    if neighbours != "substitution":
        raise ParameterError(
            "n (the table's size) is public only under substitution neighbours; under "
            f"{neighbours} it is private and may not choose or calibrate anything",
            parameter="n",
            allowed="None unless neighbours='substitution'",
        )
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        raise ParameterError(
            f"n must be an integer >= 1, got {n!r}", parameter="n", allowed="integer >= 1"
        )
    return int(n)


def public_bounds(bounds: Any, what: str, hint: str = "") -> tuple[float, float]:
    """Validated public bounds (lo, hi), or a ParameterError naming ``bounds``."""
    if bounds is None:
        raise ParameterError(
            f"{what} needs public bounds on the data: pass bounds=(lo, hi), chosen without "
            f"looking at the data{hint}",
            parameter="bounds",
            allowed="(lo, hi), finite, lo < hi",
        )
    try:
        lo, hi = bounds
    except (TypeError, ValueError):  # not a pair: "bounds() takes 2 positional arguments"
        raise ParameterError(
            f"bounds must be a pair (lo, hi), got {bounds!r}", parameter="bounds",
            allowed="(lo, hi)") from None
    try:
        return _validate.bounds(lo, hi)
    except (TypeError, ValueError) as exc:
        raise ParameterError(str(exc), parameter="bounds", allowed="(lo, hi)") from None


def build_query(
    statistic: str,
    *,
    bounds: tuple[float, float] | None = None,
    quantile: float | None = None,
    trim: float | None = None,
    k: int | None = None,
    n: int | None = None,
    vertices: int | None = None,
    neighbours: str = "add_remove",
) -> Any:
    """The query object for a statistic name (validated: bounds, q, trim, k).

    ``neighbours``: the relation its sensitivities are for (graph statistics
    always use edge privacy).  ``n`` is the public table size, accepted only
    under substitution (for the mean and trimmed mean's sensitivity).
    ``vertices`` is the public number of vertices for graph statistics.
    """
    from . import queries as Q

    statistic = _choice(statistic, STATISTICS + GRAPH_STATISTICS, "statistic")
    rel = relation_for(neighbours, statistic)
    n = _public_n(n, rel) if statistic not in GRAPH_STATISTICS else None
    if statistic in _NEEDS_BOUNDS:
        lo, hi = public_bounds(bounds, f"statistic {statistic!r}")
    if statistic == "quantiles":
        raise ParameterError(
            "statistic 'quantiles' has no single query: use build_quantiles_mechanism",
            parameter="statistic",
        )
    if quantile is not None and statistic != "quantile":
        raise ParameterError(
            f"quantile applies to statistic 'quantile' only, not {statistic!r}",
            parameter="quantile",
        )
    if trim is not None and statistic != "trimmed-mean":
        raise ParameterError(
            f"trim applies to statistic 'trimmed-mean' only, not {statistic!r}", parameter="trim"
        )
    if vertices is not None and statistic not in GRAPH_STATISTICS:
        raise ParameterError(
            f"vertices applies to graph statistics only, not {statistic!r}", parameter="vertices"
        )
    if statistic == "median":
        return Q.Median(lo, hi, neighbours=rel)
    if statistic == "quantile":
        if quantile is None:
            raise ParameterError(
                "statistic 'quantile' needs quantile=Q with Q in (0, 1)",
                parameter="quantile",
                allowed="(0, 1)",
            )
        try:
            q = _validate.in_open_interval(quantile, "quantile", 0, 1)
        except ValueError as exc:
            raise ParameterError(str(exc), parameter="quantile", allowed="(0, 1)") from None
        return Q.Quantile(q, lo, hi, neighbours=rel)
    if statistic == "mean":
        return Q.Mean(lo, hi, rel, n=n)
    if statistic == "trimmed-mean":
        return Q.TrimmedMean(0.1 if trim is None else trim, lo, hi, rel, n=n)
    if statistic == "count":
        return Q.Count()
    if statistic == "sum":
        return Q.Sum(lo, hi, neighbours=rel)
    if statistic == "ratio":
        return Q.Ratio()
    if statistic == "min":
        return Q.Min(lo, hi, neighbours=rel)
    if statistic == "max":
        return Q.Max(lo, hi, neighbours=rel)
    if statistic == "triangles":
        return Q.TriangleCount(n_vertices=vertices)
    if statistic == "kstars":
        kk = 2 if k is None else k
        if isinstance(kk, bool) or not isinstance(kk, int) or kk < 1:
            raise ParameterError(
                f"k must be an integer >= 1 for kstars, got {k!r}", parameter="k", allowed=">= 1"
            )
        return Q.KStarCount(kk, n_vertices=vertices)
    return Q.TwoTriangleCount(n_vertices=vertices)


def _needs_delta(name: str) -> ParameterError:
    return ParameterError(
        f"mechanism {name!r} is (epsilon, delta)-DP: pass delta with 0 < delta < 1",
        parameter="delta",
        allowed="(0, 1)",
    )


def _only_with(option: str, mechanism: str, name: str) -> None:
    if name != mechanism:
        raise ParameterError(
            f"{option} applies to mechanism {mechanism!r} only, not {name!r}", parameter=option
        )


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
    neighbours: str = "add_remove",
    quantiles: Any = None,
    resolution: float | None = None,
) -> Any:
    """A validated mechanism from names, under the relation ``neighbours``.

    Every parameter is checked here (ParameterError naming it) so nothing
    touches the ledger on bad input.  Two-stage mechanisms split ε in half
    (PTR: test and noise; bounded-ls: bound and release; sum-count: sum and
    count — each stated in the record).  ``n``: the public table size,
    substitution only.  ``resolution``: the column's declared resolution (an
    integer type, a decimal scale, a user-given value; never inferred from
    the rows), for medians and quantiles with public bounds: the exponential
    mechanism then releases on the grid lower + k·resolution.
    """
    from . import mechanisms as M

    statistic = _choice(statistic, STATISTICS + GRAPH_STATISTICS, "statistic")
    rel = relation_for(neighbours, statistic)
    try:
        eps = _validate.epsilon(epsilon)
    except ValueError as exc:
        raise ParameterError(str(exc), parameter="epsilon", allowed="finite > 0") from None
    try:
        d = None if delta is None else _validate.delta(delta)
    except ValueError as exc:
        raise ParameterError(str(exc), parameter="delta", allowed="[0, 1)") from None
    if d == 0:
        d = None
    n = _public_n(n, rel) if statistic not in GRAPH_STATISTICS else None
    if statistic == "quantiles" or quantiles is not None:
        if statistic != "quantiles":
            raise ParameterError(
                f"quantiles applies to statistic 'quantiles' only, not {statistic!r}",
                parameter="quantiles",
            )
        others = {"quantile": quantile, "trim": trim, "k": k, "noise": noise, "gamma": gamma,
                  "ptr_bound": ptr_bound, "vertices": vertices}
        for option, value in others.items():
            if value is not None:
                raise ParameterError(
                    f"{option} does not apply to statistic 'quantiles' (its options: "
                    "quantiles, bounds, mechanism, resolution)", parameter=option,
                )
        if d is not None:
            raise ParameterError(
                "the several-quantile mechanisms are pure ε-DP: leave delta unset",
                parameter="delta",
            )
        return build_quantiles_mechanism(
            quantiles, eps, mechanism=mechanism, bounds=bounds, neighbours=rel,
            resolution=resolution,
        )
    if mechanism is None and (noise is not None or gamma is not None):
        mechanism = "smooth"  # options that only the smooth mechanism takes imply it
    elif mechanism is None and ptr_bound is not None:
        mechanism = "ptr"
    from .registry import bound_free_key, bound_free_keys, short_name

    chosen = short_name(mechanism) if mechanism is not None else None
    # the bound-free names: one list (the registry's), here and out of core
    free = bound_free_keys("median")
    free_key = bound_free_key(mechanism)
    if free_key is not None and statistic not in ("median", "quantile"):
        raise ParameterError(
            f"mechanism {mechanism!r} applies to statistics 'median' and 'quantile' only",
            parameter="mechanism",
        )
    if statistic in ("median", "quantile") and (
            free_key is not None or (chosen is None and bounds is None and resolution is None)):
        return _bound_free(statistic, eps, rel, free_key, bounds=bounds,
                           resolution=resolution, quantile=quantile, trim=trim,
                           vertices=vertices, noise=noise, gamma=gamma, ptr_bound=ptr_bound)
    if resolution is not None:
        if statistic not in ("median", "quantile"):
            raise ParameterError(
                f"resolution applies to statistics 'median' and 'quantile' only, not {statistic!r}",
                parameter="resolution",
            )
        if bounds is None:
            raise ParameterError(
                "resolution needs public bounds (the grid is lower + k·resolution)",
                parameter="resolution",
                allowed="None when bounds is None",
            )
        try:
            resolution = _validate.finite_positive(resolution, "resolution")
        except (TypeError, ValueError) as exc:
            raise ParameterError(str(exc), parameter="resolution", allowed="finite > 0") from None
    name = _choice(
        chosen or default_mechanism(statistic, eps, n, rel, resolution=resolution),
        # for medians and quantiles the message lists the bound-free names too
        MECHANISMS + (tuple(short_name(k) for k in free)
                      if statistic in ("median", "quantile") else ()),
        "mechanism",
    )
    if resolution is not None and name not in ("exponential", "tail-choice"):
        raise ParameterError(
            f"resolution applies to mechanisms 'exponential' and 'tail-choice' only, not "
            f"{name!r}",
            parameter="resolution",
        )
    if noise is not None:
        _only_with("noise", "smooth", name)
    if gamma is not None:
        _only_with("gamma", "smooth", name)
    if ptr_bound is not None:
        _only_with("ptr_bound", "ptr", name)

    if statistic == "ratio":
        from .mechanisms.ratio import PrivateRatio

        methods = {"ksw": "ksw", "naive": "naive", "bounded-ls": "bounded_ls"}
        if name not in methods:
            raise ParameterError(
                f"mechanism for statistic 'ratio' must be one of {', '.join(methods)}; "
                f"got {name!r}",
                parameter="mechanism",
                allowed=", ".join(methods),
            )
        if name == "bounded-ls" and d is None:
            raise _needs_delta("bounded-ls")
        return PrivateRatio(eps, method=methods[name], delta=d if name == "bounded-ls" else None)
    if name in ("ksw", "naive"):
        raise ParameterError(
            f"mechanism {name!r} applies to statistic 'ratio' only", parameter="mechanism"
        )

    if statistic in ("median", "quantile") and bounds is None:
        # a bounded mechanism named without bounds: refused (no bound is made up), with
        # the names that release without them
        public_bounds(None, f"mechanism {name!r}",
                      f"; without bounds leave mechanism unset or name one of "
                      f"{', '.join(free)}")
    query = build_query(
        statistic,
        bounds=bounds,
        quantile=quantile,
        trim=trim,
        k=k,
        n=n,
        vertices=vertices,
        neighbours=rel,
    )
    if name == "sum-count":
        if statistic != "mean" or rel != "add_remove":
            raise ParameterError(
                "mechanism 'sum-count' releases the mean under add_remove neighbours only",
                parameter="mechanism",
            )
        from .mechanisms.sum_count import NoisySumOverCount

        return NoisySumOverCount(query.lower, query.upper, eps)
    if name == "smooth":
        family = (noise or "polyplace").lower().replace("-", "_")
        return M.SmoothSensitivityMechanism(query, eps, gamma=gamma, noise=family, delta=d)
    if name == "laplace":
        return M.LaplaceMechanism(query, eps)
    if name == "gaussian":
        if d is None:
            raise _needs_delta("gaussian")
        return M.GaussianMechanism(query, eps, d, calibration=calibration)
    if name == "ptr":
        if d is None:
            raise _needs_delta("ptr")
        if ptr_bound is None:
            raise ParameterError(
                "mechanism 'ptr' needs a proposed sensitivity bound: pass ptr_bound=B "
                "(a finite number > 0, chosen without looking at the data)",
                parameter="ptr_bound",
                allowed="finite > 0",
            )
        try:
            b = _validate.finite_positive(ptr_bound, "ptr_bound")
        except ValueError as exc:
            raise ParameterError(str(exc), parameter="ptr_bound", allowed="finite > 0") from None
        # ProposeTestRelease splits ε itself: ε/2 for the test, ε/2 for the noise.
        return M.ProposeTestRelease(query, b, eps, d)
    if name == "tie-adaptive":
        if statistic not in ("median", "quantile"):
            raise ParameterError(
                "mechanism 'tie-adaptive' applies to statistics 'median' and 'quantile' only",
                parameter="mechanism",
            )
        return M.TieAdaptiveQuantile(query, eps)
    from .mechanisms.tail_choice import tail_choice_applies

    if name == "tail-choice" or (chosen is None and name == "exponential" and bounds is not None
                                 and tail_choice_applies(getattr(query, "q", 0.5), eps, rel,
                                                         query.lower, query.upper)):
        if statistic not in ("median", "quantile"):
            raise ParameterError(
                "mechanism 'tail-choice' applies to statistics 'median' and 'quantile' only",
                parameter="mechanism",
            )
        # the default for a tail quantile under add/remove: a noisy row count (5 % of ε)
        # picks the bound-free bracket on tables with few rows beyond the quantile, where
        # the bounded release spreads over the empty stretch up to a loose bound
        # (mechanisms/tail_choice.py; docs/results/tail_choice.md)
        return M.TailChoiceQuantile(query, eps, resolution=resolution)
    if name == "exponential":
        if statistic not in ("median", "quantile"):
            raise ParameterError(
                "mechanism 'exponential' applies to statistics 'median' and 'quantile' only",
                parameter="mechanism",
            )
        # The score's sensitivity is 1 under substitution and max(q, 1 − q) under
        # add/remove (the query carries the relation).  The base measure is uniform
        # on a logarithmic scale over the public range: robust to bounds far wider
        # than the data, and the most accurate on the real columns of
        # docs/results/accuracy.md under both relations (a public choice: it reads
        # neither n nor the rows), with 5 % of it on public atoms at round numbers
        # (mechanisms/atoms.py: ties on them release exactly, continuous columns
        # lose < 1 %, docs/results/accuracy_grid.md).  With a declared resolution,
        # the same log measure restricted to the public grid ("log-grid"): ties
        # release exactly; its finite candidate set is released by permute-and-flip
        # (never less accurate than the exponential mechanism on the same
        # utilities, McKenna & Sheldon 2020).
        if resolution is not None:
            return M.ExponentialQuantile(query, eps, base="log-grid", resolution=resolution)
        return M.ExponentialQuantile(query, eps, base="log-atoms")
    # bounded-ls
    if d is None:
        raise _needs_delta("bounded-ls")
    return M.BoundedLocalSensitivity(query, None, eps / 2, eps / 2, d)


def _bound_free(
    statistic: str,
    eps: float,
    rel: str,
    key: str | None,
    *,
    bounds: Any,
    resolution: Any,
    quantile: Any,
    trim: Any,
    vertices: Any,
    noise: Any = None,
    gamma: Any = None,
    ptr_bound: Any = None,
) -> Any:
    """A median or quantile without public bounds: the mechanism named ``key`` (a
    registry key whose class is ``bounds_free``) or, with none named, the default rule
    (:func:`~instancedp.mechanisms.unbounded.bound_free_quantile`).  Charged and stated
    in the record; no bound is taken from the data or from the float range, and bounds
    given with a bound-free name are refused (public information the mechanism would
    ignore), as out of core."""
    from .mechanisms.unbounded import bound_free_quantile
    from .registry import get

    for option, value in (("bounds", bounds), ("resolution", resolution)):
        if value is not None:
            raise ParameterError(
                f"mechanism {key!r} releases without bounds: leave {option} unset, or "
                "name a bounded mechanism (exponential, smooth, ...)",
                parameter=option, allowed="None",
            )
    for option, value, owner in (("noise", noise, "smooth"), ("gamma", gamma, "smooth"),
                                 ("ptr_bound", ptr_bound, "ptr")):
        if value is not None:
            _only_with(option, owner, key or "unbounded_quantile")
    # the query's own checks of quantile, trim and vertices (placeholder bounds: only
    # its q is read)
    q = float(getattr(build_query(statistic, bounds=(0.0, 1.0), quantile=quantile, trim=trim,
                                  vertices=vertices, neighbours=rel), "q", 0.5))
    if key is None:
        return bound_free_quantile(q, eps, neighbours=rel)
    return get(key).cls(q, eps, neighbours=rel)


def default_quantiles_mechanism(m: int, *, bounded: bool, resolution: bool = False) -> str:
    """The several-quantile mechanism used when none is named (public inputs only).

    No bounds: ``unbounded`` (m bound-free quantiles at ε/m; the joint and
    recursive mechanisms need a finite range).  With bounds: the joint
    exponential mechanism (Gillenwater, Joseph & Kulesza 2021) for m ≤
    :data:`JOINT_MAX_LEVELS` — the most accurate in most cells of
    docs/results/quantiles.md under both relations, with the recursive
    algorithm (Kaplan, Schnapp & Stemmer 2022) close on large n — and the
    recursive algorithm above it, where the joint pass's O(m²·n) time grows.
    With a declared ``resolution`` the joint mechanism runs on its grid (more
    accurate than the continuous base on the synthetic integer column of
    docs/results/quantiles.md; ties release exactly); above
    :data:`JOINT_MAX_LEVELS` levels a resolution is refused (the recursive
    algorithm has no grid base).  Neither ε nor n enters the choice.
    """
    if not bounded:
        return "unbounded"
    if m <= JOINT_MAX_LEVELS:
        return "joint"
    if resolution:
        raise ParameterError(
            f"resolution applies to at most {JOINT_MAX_LEVELS} quantiles (the joint "
            "mechanism's grid base); leave resolution unset for more levels",
            parameter="resolution",
        )
    return "recursive"


def build_quantiles_mechanism(
    quantiles: Any,
    epsilon: float,
    *,
    mechanism: str | None = None,
    bounds: tuple[float, float] | None = None,
    neighbours: str = "add_remove",
    resolution: float | None = None,
) -> Any:
    """A validated several-quantile mechanism: one release, one charge, a sorted vector.

    ``quantiles``: the levels, strictly increasing in [0, 1] ((0, 1) without
    bounds); ``mechanism``: ``joint``, ``recursive``, ``independent``,
    ``unbounded`` (or their registry keys ``<name>_quantiles``); None = the
    public default (:func:`default_quantiles_mechanism`).  ``resolution``: the
    column's declared resolution (never inferred from the rows), with bounds:
    the joint mechanism then releases on the grid lower + k·resolution
    (``JointQuantiles(base="grid")``).
    """
    from .mechanisms.independent_quantiles import IndependentQuantiles
    from .mechanisms.joint_quantiles import JointQuantiles
    from .mechanisms.recursive_quantiles import RecursiveQuantiles
    from .mechanisms.unbounded_quantiles import UnboundedQuantiles
    from .queries.quantiles import Quantiles, _levels

    rel = relation_for(neighbours, "quantiles")
    try:
        eps = _validate.epsilon(epsilon)
    except ValueError as exc:
        raise ParameterError(str(exc), parameter="epsilon", allowed="finite > 0") from None
    if quantiles is None:
        raise ParameterError(
            "statistic 'quantiles' needs quantiles=[q1, ..., qm], strictly increasing in [0, 1]",
            parameter="quantiles",
            allowed="strictly increasing levels in [0, 1]",
        )
    try:
        levels = _levels(quantiles)
    except ParameterError as exc:
        raise ParameterError(
            str(exc).replace("qs must", "quantiles must"), parameter="quantiles",
            allowed="strictly increasing levels in [0, 1]",
        ) from None
    if resolution is not None:
        if bounds is None:
            raise ParameterError(
                "resolution needs public bounds (the grid is lower + k·resolution)",
                parameter="resolution", allowed="None when bounds is None",
            )
        try:
            resolution = _validate.finite_positive(resolution, "resolution")
        except (TypeError, ValueError) as exc:
            raise ParameterError(str(exc), parameter="resolution", allowed="finite > 0") from None
    if mechanism is None:
        name = default_quantiles_mechanism(len(levels), bounded=bounds is not None,
                                           resolution=resolution is not None)
    else:
        name = str(mechanism).lower().replace("-", "_").removesuffix("_quantiles")
        if name not in QUANTILES_MECHANISMS:
            raise ParameterError(
                f"mechanism for statistic 'quantiles' must be one of "
                f"{', '.join(QUANTILES_MECHANISMS)}; got {mechanism!r}",
                parameter="mechanism",
                allowed=", ".join(QUANTILES_MECHANISMS),
            )
    if name == "unbounded":
        if bounds is not None:
            raise ParameterError(
                "mechanism 'unbounded' takes no bounds (leave bounds unset, or choose "
                "joint, recursive or independent)",
                parameter="bounds",
            )
        return UnboundedQuantiles(levels, eps, neighbours=rel)
    lo, hi = public_bounds(bounds, f"mechanism {name!r}", " (or leave mechanism unset for "
                           "bound-free quantiles)")
    query = Quantiles(levels, lo, hi, neighbours=rel)
    if resolution is not None:
        if name != "joint":
            raise ParameterError(
                f"resolution applies to mechanism 'joint' only, not {name!r}",
                parameter="resolution",
            )
        return JointQuantiles(query, eps, base="grid", resolution=resolution)
    fine = default_joint_resolution(lo, hi) if mechanism is None and name == "joint" else None
    if fine is not None:
        return JointQuantiles(query, eps, base="grid", resolution=fine)
    cls = {"joint": JointQuantiles, "recursive": RecursiveQuantiles,
           "independent": IndependentQuantiles}[name]
    return cls(query, eps)


#: the default joint mechanism's public grid without a declared resolution: the bounds'
#: width × 2^−FINE_GRID_EXPONENT (benchmarks/joint_ties.py, synthetic cells: 2^−24 is
#: within 1.17× of the continuous base in every cell and releases heavy ties; 2^−16 won
#: more cells but rounds to 2^−17 of the bounds, coarse beside the error at large n·ε)
FINE_GRID_EXPONENT = 24


def default_joint_resolution(lower: float, upper: float) -> float | None:
    """The public resolution (upper − lower)·2^−24 of the default joint mechanism when the
    column declares none; None where the width overflows or the step underflows.

    The continuous base gives a tied value no mass (an interval of length 0), so on a
    column with heavy ties every placement of the m outputs scores badly and the law
    spreads over the bounds (on a column 60 % zeros the quartiles' mean error was 11–12,
    on the grid under 0.1).  On a grid every row's cell has the length of one grid step
    and is spread over ``spread`` chart rows
    (:class:`~instancedp.mechanisms.joint_quantiles.JointQuantiles`, base ``"grid"``),
    so a run of ties can hold outputs; elsewhere a step of 2^−24 of the
    bounds' width leaves the error within noise of the continuous base's
    (docs/results/joint_ties.md; the release is rounded to the step).  Public: the
    bounds only."""
    width = float(upper) - float(lower)
    step = width * 2.0**-FINE_GRID_EXPONENT
    return step if math.isfinite(width) and step > 0.0 else None


def check_input(statistic: str, data: np.ndarray) -> None:
    """Own-input checks a statistic needs beyond numeric/non-empty (before any charge)."""
    if statistic == "ratio" and not np.isin(data, (0.0, 1.0)).all():
        raise ParameterError(
            "statistic 'ratio' needs a column of 0/1 flags (1 = counted in the numerator, "
            "every row in the denominator): select or compute one with sql"
        )
