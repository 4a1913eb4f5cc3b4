"""The histogram's monotone label map, checked against ``numpy.searchsorted`` on edge values.

Every engine computes a row's cell as #(edges with a smaller label) + [x ≥ the edge
sharing its label]; this is exact only if the label is non-decreasing in x and no two
edges share a label.  The values probed are every edge, its neighbouring doubles, the
bounds and −0.0 — the places where a rounding slip would move a row by one cell.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from instancedp.backends import numpy as ref
from instancedp.backends import open_source
from instancedp.backends.sql import label_map
from instancedp.sources import out_of_core_mechanism

GRID = "candidate_quantile"  # the histogram-fed grid mechanism (the default draws in stages)


def _grids() -> dict[str, np.ndarray]:
    med = out_of_core_mechanism("median", 1.0, bounds=(0.0, 1000.0), mechanism=GRID)
    wide = out_of_core_mechanism("median", 1.0, bounds=(-1e6, 1e3), mechanism=GRID)
    res = out_of_core_mechanism("quantile", 1.0, bounds=(-10.0, 100.0), quantile=0.9,
                                resolution=0.5, mechanism=GRID)
    # the exponential quantile on a resolution (the default's bounded branch): the grid
    # points' exact cells (bisected doubles)
    cells = out_of_core_mechanism("quantile", 1.0, bounds=(-10.3, 100.0), quantile=0.9,
                                  resolution=0.1, mechanism="exponential")
    return {"log_chart": med.edges, "log_chart_signed": wide.edges, "resolution": res.edges,
            "grid_cells": cells.grid_edges(),
            "uneven": np.array([-3.0, -2.9999, -1.0, 0.0, 1e-9, 2e-9, 5.0, 1e4]),
            "two_cells": np.array([0.0, 0.5, 1.0])}


def _probe_values(e: np.ndarray) -> np.ndarray:
    inner = e[1:-1]
    v = np.concatenate([e, np.nextafter(inner, -np.inf), np.nextafter(inner, np.inf),
                        [-0.0, e[0] - 1.0, e[-1] + 1.0, (e[0] + e[-1]) / 2]])
    return v


@pytest.mark.parametrize("name", list(_grids()))
def test_labels_are_monotone_and_separate_the_edges(name):
    e = _grids()[name]
    lm = label_map(float(e[0]), float(e[-1]), e[1:-1])
    assert lm is not None
    assert np.all(np.diff(lm.edge_labels) > 0)  # one edge per label
    x = np.sort(ref.clamp(_probe_values(e), float(e[0]), float(e[-1])))
    labs = np.array([lm.label(float(v)) for v in x])
    assert np.all(np.diff(labs) >= 0) and labs.min() >= 0 and labs.max() < lm.labels
    # the cell rule from labels equals searchsorted (what numpy's histogram uses)
    below = np.searchsorted(lm.edge_labels, labs, side="left")
    at = np.searchsorted(lm.edge_labels, labs, side="left")
    shares = (at < lm.edge_labels.size) & (lm.edge_labels[np.minimum(at, lm.edge_labels.size - 1)]
                                           == labs)
    edge_at = np.where(shares, e[1:-1][np.minimum(at, e.size - 3)], np.inf)
    cells = below + (x >= edge_at)
    assert cells.tolist() == np.searchsorted(e[1:-1], x, side="right").tolist()


def test_labels_refuse_ranges_that_overflow():
    assert label_map(-1.7e308, 1.7e308, np.array([-1e308, 1e308])) is None


@pytest.mark.parametrize("name", ["log_chart", "log_chart_signed", "uneven"])
def test_duckdb_histogram_on_edge_values_equals_numpy(name):
    e = _grids()[name]
    x = _probe_values(e)
    src = open_source(pd.DataFrame({"v": x}), sql="SELECT v FROM data")
    assert src.backend == "duckdb"
    assert src.histogram("v", e).tolist() == ref.histogram(x, e).tolist()


# -- graph primitives in DuckDB against the in-memory definitions ------------------------


def _graphs() -> dict[str, tuple[np.ndarray, int]]:
    rng = np.random.default_rng(5)
    out = {"empty": (np.zeros((0, 2), dtype=np.int64), 4),
           "one_edge": (np.array([[0, 1]]), 3),
           "k5": (np.array([[i, j] for i in range(5) for j in range(i + 1, 5)]), 6),
           "star": (np.array([[0, j] for j in range(1, 8)]), 8)}
    for p in (0.1, 0.3, 0.6):
        n = 25
        pairs = np.array([[i, j] for i in range(n) for j in range(i + 1, n)])
        keep = rng.random(len(pairs)) < p
        out[f"gnp_{p}"] = (pairs[keep][:, ::-1] if p == 0.3 else pairs[keep], n)  # j, i order too
    return out


@pytest.mark.parametrize("name", list(_graphs()))
def test_duckdb_graph_primitives_equal_the_in_memory_ones(name):
    from instancedp.backends import graph as gsql
    from instancedp.queries.graphs import as_graph, triangle_count, triangle_pair_frontier

    edges, n = _graphs()[name]
    src = open_source(pd.DataFrame({"a": edges[:, 0], "b": edges[:, 1]}),
                      sql="SELECT a, b FROM data")
    g = gsql.edge_tables(src.engine, n)
    mem = as_graph(edges, n)
    assert gsql.degrees(g).tolist() == mem.degrees.tolist()
    assert gsql.triangle_count(g) == triangle_count(mem)
    got, want = gsql.triangle_pair_frontier(g), triangle_pair_frontier(mem)
    assert (got[0].tolist(), got[1].tolist()) == (want[0].tolist(), want[1].tolist())


def test_duckdb_graph_input_follows_the_in_memory_rules():
    from instancedp.backends import graph as gsql
    from instancedp.errors import DataError

    def tables(pairs, n, **kw):
        e = np.array(pairs)
        src = open_source(pd.DataFrame({"a": e[:, 0], "b": e[:, 1]}), sql="SELECT a, b FROM data")
        return gsql.edge_tables(src.engine, n, **kw)

    with pytest.raises(DataError):
        tables([[0, 1], [1, 0]], 3)  # a repeated edge
    with pytest.raises(DataError):
        tables([[0, 0], [1, 2]], 3)  # a self-loop
    with pytest.raises(DataError):
        tables([[0, 5]], 3)  # outside the public vertex set
    assert gsql.triangle_count(tables([[0, 1], [1, 0], [1, 2], [2, 0], [2, 2]], 3,
                                      normalise=True)) == 1
