"""The query protocol.

A query holds only public parameters (bounds, quantile level, trimming) and
knows how much it can move under its neighbour relation:

- ``value(data)`` — the statistic;
- ``neighbours`` — the relation, chosen with the constructor keyword
  ``neighbours=``: ``"add_remove"`` (one record added or removed; the default
  for tabular queries), ``"substitution"`` (n fixed and public, one record
  replaced) or ``"edge"`` (one edge of a graph added or removed, the vertex
  set public); ``supported_relations`` lists those a query knows;
- ``global_sensitivity`` — worst case over all neighbours (``math.inf`` if none);
- ``local_sensitivity(data, distance=k)`` — A^(k)(x) = max over y with
  d(x, y) ≤ k of LS(y) (NRS 2007 Def. 3.1; docs/formulas.md);
- ``smooth_sensitivity(data, beta)`` — SS_β(x) = max_k e^{−kβ} A^(k)(x).

Data are clamped to the query's public bounds where it has them.

``prepare(data)`` validates and normalises the data once (for order
statistics: clamp and sort) and returns a :class:`Prepared` that every method
of the same query — and of any query with the same ``prepare_key`` (e.g. all
order statistics with the same bounds) — accepts without redoing the work.  A
mechanism that needs both ``value`` and ``smooth_sensitivity`` should call
``prepare`` first.  A ``Prepared`` holds private data: it is an analysis
object, never part of a release.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from .. import _validate
from ..errors import ParameterError

Relation = Literal["substitution", "add_remove", "edge"]
RELATIONS: tuple[str, ...] = ("substitution", "add_remove", "edge")


def relation(neighbours: Any, supported: tuple[str, ...]) -> str:
    """``neighbours`` checked against a query's supported relations (ParameterError)."""
    if neighbours not in supported:
        raise ParameterError(
            f"neighbours must be one of {', '.join(map(repr, supported))} for this query, "
            f"got {neighbours!r}",
            parameter="neighbours",
            allowed=", ".join(supported),
        )
    return str(neighbours)


@dataclass(frozen=True, eq=False)
class Prepared:
    """Data already validated and normalised for queries with ``key`` as ``prepare_key``."""

    key: tuple
    data: Any

    def __len__(self) -> int:
        """Number of records, for prepared 1-D arrays (n is public under substitution)."""
        if hasattr(self.data, "ndim") and self.data.ndim == 1:
            return int(self.data.size)
        raise TypeError("this prepared data has no record count")


def finite_range(lower: float, upper: float) -> float:
    """upper − lower, refused (ParameterError) when it overflows to inf.

    Sensitivities, interval lengths and shifted values all use this
    difference; bounds such as (−1e308, 1e308) would make them overflow in a
    data-dependent way, so they are refused up front from the public bounds.
    """
    d = upper - lower
    if not math.isfinite(d):
        raise ParameterError(
            f"bounds ({lower!r}, {upper!r}) are too wide: upper − lower overflows; "
            "give bounds whose difference is at most 1.7e308",
            parameter="bounds",
            allowed="finite lower < upper with upper − lower finite",
        )
    return d


class Query(ABC):
    """Base class: subclasses implement ``value`` and ``local_sensitivity``."""

    name: ClassVar[str] = ""
    neighbours: Relation
    #: the relations whose sensitivities this query knows (``neighbours=`` picks one)
    supported_relations: ClassVar[tuple[str, ...]] = ("substitution",)

    def prepare_key(self) -> tuple:
        """Which preparations this query shares (default: its class and parameters)."""
        return (type(self).__name__, tuple(sorted(self.parameters().items())))

    def _prepare(self, data: Any) -> Any:
        """Validate and normalise raw data (subclasses override)."""
        return data

    def prepare(self, data: Any) -> Prepared:
        """Validate/normalise once; the result is accepted by every method."""
        if isinstance(data, Prepared):
            return Prepared(self.prepare_key(), self._load(data))
        return Prepared(self.prepare_key(), self._prepare(data))

    def _load(self, data: Any) -> Any:
        """The normalised data, from raw input or from a matching ``Prepared``."""
        if isinstance(data, Prepared):
            if data.key != self.prepare_key():
                raise ParameterError(
                    "data was prepared for a different query (other bounds or type); "
                    "call prepare() on this query"
                )
            return data.data
        return self._prepare(data)

    @property
    @abstractmethod
    def global_sensitivity(self) -> float: ...

    @abstractmethod
    def value(self, data: Any) -> float: ...

    @abstractmethod
    def local_sensitivity(self, data: Any, distance: int = 0) -> float: ...

    def max_distance(self, data: Any) -> float:
        """Largest k worth scanning in SS (default: unbounded)."""
        return math.inf

    def smooth_sensitivity(self, data: Any, beta: float) -> float:
        """max_k e^{−kβ} A^(k)(x), scanning k upward with early termination:
        once e^{−kβ}·GS ≤ best, no larger k can win.  Subclasses override with
        exact fast algorithms."""
        beta = _validate.nonnegative(beta, "beta")
        if type(self)._prepare is not Query._prepare:
            data = self.prepare(data)  # normalise once for the many A^(k) calls
        gs = self.global_sensitivity
        best = self.local_sensitivity(data, 0)
        k = 1
        kmax = self.max_distance(data)
        while k <= kmax:
            decay = math.exp(-k * beta)
            if math.isfinite(gs) and decay * gs <= best:
                break
            if beta == 0 and not math.isfinite(kmax) and not math.isfinite(gs):
                raise ParameterError(
                    "beta must be > 0 for a query without finite global sensitivity"
                )
            best = max(best, decay * self.local_sensitivity(data, k))
            k += 1
        return best

    def parameters(self) -> dict[str, Any]:
        """Public parameters only (never anything computed from data)."""
        return {}
