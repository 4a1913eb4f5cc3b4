"""The release-path harness, generated from the mechanism registry.

For every registered mechanism × every statistic it serves, :func:`harness_cases`
builds the mechanism (``Entry.make``) on a small query with public bounds and a
list of neighbouring inputs chosen adversarially — sizes 0, 1 and 2, values at
the bounds, all equal, subnormal and huge magnitudes, a row entering or
leaving — under the query's own neighbour relation.  :func:`run_case` then

1. releases on both inputs of every pair with the same seeded source and
   asserts that the **public record** (``Release.to_dict()`` without
   ``value`` and ``refused``; or the error class when a release raises) is
   identical: nothing the caller sees may depend on the rows except the value;
2. where the mechanism has an exact law (``output_distribution``), runs the
   exact check (:func:`~.profile.check_distributions`) on the pairs whose
   releases succeeded (at most ``exact_pairs`` distinct ones per case).

:func:`coverage_gaps` lists registered mechanisms with neither a harness case
nor an exact law nor a reviewed exemption (``Entry.exemption``); the test suite
requires it to be empty, so a new mechanism cannot skip the harness silently.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import ParameterError
from .profile import check_distributions

#: Public bounds of the numeric harness queries, and a huge-magnitude pair.
BOUNDS = (0.0, 1.0)
HUGE_BOUNDS = (-1e300, 1e300)
TINY = 5e-324  # the smallest subnormal double


def _rel(cls: Any, relation: str) -> dict[str, str]:
    """``neighbours=`` for query classes that take it (the others have one relation)."""
    import inspect

    return {"neighbours": relation} if "neighbours" in inspect.signature(cls).parameters else {}


def _numeric_queries() -> dict[str, Callable[[tuple[float, float]], Any]]:
    from ..queries import Count, Max, Mean, Median, Min, Quantile, Sum, TrimmedMean

    # Each builder takes (bounds, relation); the harness runs every relation a query offers.
    return {
        "median": lambda b, r: Median(*b, neighbours=r),
        "quantile": lambda b, r: Quantile(0.25, *b, neighbours=r),
        "min": lambda b, r: Min(*b, neighbours=r),
        "max": lambda b, r: Max(*b, neighbours=r),
        "mean": lambda b, r: Mean(*b, neighbours=r),
        "trimmed-mean": lambda b, r: TrimmedMean(0.1, *b, **_rel(TrimmedMean, r)),
        "count": lambda b, r: Count(neighbours=r),
        "sum": lambda b, r: Sum(*b, neighbours=r),
    }


def _numeric_inputs(bounds: tuple[float, float]) -> tuple[list[tuple], list[float]]:
    lo, hi = bounds
    mid = lo / 2 + hi / 2
    datasets = [(), (lo,), (hi,), (lo, hi), (mid, mid), (hi, hi, hi)]
    values = [lo, hi, mid]
    if bounds == BOUNDS:
        datasets += [(TINY,), (TINY, 0.0)]
        values.append(TINY)
    return datasets, values


def _graph_inputs() -> tuple[list[Any], list[tuple[int, int]]]:
    from ..queries.graphs import Graph

    edge_sets = [
        [],
        [(0, 1)],
        [(0, 1), (1, 2), (2, 0)],
        [(i, j) for i in range(4) for j in range(i)],
    ]
    graphs = [Graph.from_edges(list(e) if e else [], n_vertices=4) for e in edge_sets]
    return graphs, [(0, 1), (2, 3), (0, 3)]


def _toggle(g: Any, edge: tuple[int, int]) -> Any:
    from ..queries.graphs import Graph

    es = {tuple(sorted(e)) for e in g.edge_set()}
    es ^= {tuple(sorted(edge))}
    return Graph.from_edges(sorted(es), n_vertices=g.n_vertices)


def neighbour_pairs(relation: str, datasets: Sequence[Any], values: Sequence[Any]) -> list:
    """Adversarial neighbours of each dataset under ``relation``."""
    pairs: list[tuple[Any, Any]] = []
    for x in datasets:
        if relation == "edge":
            pairs += [(x, _toggle(x, e)) for e in values]
        elif relation == "add_remove":
            pairs += [(x, (*x, v)) for v in values]
        elif relation == "substitution":
            if len(x):
                pairs += [(x, (v, *x[1:])) for v in values if v != x[0]]
        else:
            raise ParameterError(f"unknown neighbour relation {relation!r}")
    return pairs


def statistic_inputs(statistic: str) -> list[tuple[str, Any, list[tuple[Any, Any]]]]:
    """(label, query, neighbour pairs) for a statistic — one per bounds setting."""
    out = []
    numeric = _numeric_queries()
    if statistic in numeric:
        relations = type(numeric[statistic](BOUNDS, "substitution"
                                            if statistic != "count" else "add_remove"))
        relations = relations.supported_relations
        for label, bounds in (("bounds [0, 1]", BOUNDS), ("bounds ±1e300", HUGE_BOUNDS)):
            for rel in relations:
                q = numeric[statistic](bounds, rel)
                ds, vals = _numeric_inputs(bounds)
                out.append((f"{label}, {rel}", q, neighbour_pairs(rel, ds, vals)))
    elif statistic == "ratio":
        from ..queries import Ratio

        q = Ratio()
        ds = [(), (1.0,), (0.0,), (0.0, 1.0), (1.0, 1.0)]
        out.append(("0/1 flags", q, neighbour_pairs(q.neighbours, ds, [0.0, 1.0])))
    elif statistic == "mode":
        from ..mechanisms import Mode

        q = Mode(["a", "b", "c"])
        ds = [(), ("a",), ("a", "b"), ("a", "a"), ("c", "c", "b")]
        out.append(("labels a, b, c", q, neighbour_pairs(q.neighbours, ds, ["a", "b", "c"])))
    elif statistic in ("triangles", "kstars", "two-triangles"):
        from ..queries import KStarCount, TriangleCount, TwoTriangleCount

        q = {
            "triangles": lambda: TriangleCount(n_vertices=4),
            "kstars": lambda: KStarCount(2, n_vertices=4),
            "two-triangles": lambda: TwoTriangleCount(n_vertices=4),
        }[statistic]()
        graphs, edges = _graph_inputs()
        out.append(("graphs on 4 vertices", q, neighbour_pairs("edge", graphs, edges)))
    return out


@dataclass
class HarnessCase:
    """One registered mechanism on one statistic's query with its neighbour pairs."""

    key: str
    statistic: str
    label: str
    mechanism: Any
    pairs: list[tuple[Any, Any]]

    @property
    def name(self) -> str:
        return f"{self.key}:{self.statistic}:{self.label}"


@dataclass
class HarnessResult:
    case: str
    record_mismatches: list[dict[str, Any]] = field(default_factory=list)
    exact: dict[str, Any] | None = None
    released_pairs: int = 0
    empty_refusals: int = 0  # pairs with a refused empty table (see run_case)

    @property
    def passed(self) -> bool:
        return not self.record_mismatches and (
            self.exact is None or self.exact["passed"] is not False
        )


def harness_cases(epsilon: float = 1.0, delta: float = 1e-6) -> Iterator[HarnessCase]:
    """Every registered mechanism × statistic it serves × input family."""
    from ..registry import entries

    for entry in entries():
        for statistic in entry.statistics:
            for label, query, pairs in statistic_inputs(statistic):
                try:
                    mech = entry.make(query, epsilon, delta if entry.needs_delta else None)
                except ValueError:
                    # refused from public parameters alone (e.g. a global-noise mean under
                    # add/remove has no finite sensitivity): no release path to check
                    continue
                yield HarnessCase(entry.key, statistic, label, mech, pairs)


def _empty(data: Any) -> bool:
    return isinstance(data, tuple) and len(data) == 0


def public_outcome(mechanism: Any, data: Any, seed: int = 0) -> tuple[str, Any]:
    """What the caller sees of a release, minus its value: the record or the error class."""
    from ..random import simulation

    try:
        rec = mechanism.release(data, rng=simulation(seed)).to_dict()
    except Exception as exc:  # noqa: BLE001 - the class of any failure is what is observed
        return "error", type(exc).__name__
    rec.pop("value", None)
    rec.pop("refused", None)
    # a private choice the mechanism releases (charged, DP like the value)
    rec.get("parameters", {}).pop("released", None)
    return "record", rec


def run_case(case: HarnessCase, seed: int = 0, exact_pairs: int = 6) -> HarnessResult:
    res = HarnessResult(case.name)
    ok_pairs = []
    for x, xp in case.pairs:
        a, b = public_outcome(case.mechanism, x, seed), public_outcome(case.mechanism, xp, seed)
        if _empty(x) and a[0] == "error" or _empty(xp) and b[0] == "error":
            # A mechanism may refuse the empty table (owner mode's diagnostic).  Analyst
            # mode never shows that: its public input policy adds one fixed public row
            # to every input of such a mechanism (session.analyst_policy), which keeps
            # neighbours neighbours; tests/test_analyst.py checks that path on size 0.
            res.empty_refusals += 1
            continue
        if a != b:
            res.record_mismatches.append(
                {"x": repr(x), "x_prime": repr(xp), "x_sees": a, "x_prime_sees": b}
            )
        elif a[0] == "record":
            ok_pairs.append((x, xp))
    res.released_pairs = len(ok_pairs)
    law = getattr(case.mechanism, "output_distribution", None)
    if callable(law) and ok_pairs and exact_pairs > 0:
        chosen = ok_pairs[:: max(1, len(ok_pairs) // exact_pairs)][:exact_pairs]
        try:
            laws = [(law(x), law(xp)) for x, xp in chosen]
            chk = check_distributions(laws, case.mechanism.guarantee)
        except (ValueError, OverflowError, FloatingPointError) as exc:
            # the checker's own numerical range (e.g. scales near 1e300), not a verdict
            res.exact = {"passed": None, "error": f"{type(exc).__name__}: {exc}"}
        else:
            res.exact = {
                "passed": chk.passed,
                "measured": chk.measured,
                "claimed": chk.claimed,
                "pairs": len(chosen),
            }
    return res


def coverage_gaps() -> list[str]:
    """Registered mechanisms with no harness case, no exact law and no exemption."""
    from ..registry import entries

    gaps = []
    for e in entries():
        has_case = any(statistic_inputs(s) for s in e.statistics)
        if not has_case and not e.has_exact_law and not e.exemption:
            gaps.append(e.key)
    return gaps
