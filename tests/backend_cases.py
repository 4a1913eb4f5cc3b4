"""Adversarial columns and one probe of every primitive, shared by the backend tests.

``probe(source, column)`` runs every primitive with fixed public parameters and
returns results as exact bytes/ints, so equality means bit-identical.
"""

from __future__ import annotations

import math

import numpy as np

TINY = 5e-324  # the smallest subnormal
CASES: dict[str, list] = {
    "empty": [],
    "one": [0.25],
    "two": [-1.0, 3.0],
    "all_equal": [0.5] * 7,
    "at_bounds": [-2.0, 2.0, -2.0, 2.0, 0.0],
    "missing": [None, math.nan, 1.0, None, -1.5],
    "all_missing": [None, math.nan],
    "infinite": [math.inf, -math.inf, 1.0, math.inf],
    "signed_zero": [-0.0, 0.0, -0.0, 1.0],
    "subnormal": [TINY, -TINY, 2.2250738585072014e-308, 1e-310, 0.0],
    "huge": [1e308, -1e308, 1.7976931348623157e308, 3.0, -3.0],
    "ties": [1.0, 1.0, 1.0, 2.0, 2.0, 0.1, 0.1, 0.1, 0.1, -0.7],
    "integers": [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5],
    "random": list(np.round(np.random.default_rng(7).normal(0, 1.5, 200), 3)),
}

SUM_BOUNDS = [(-2.0, 2.0), (0.0, 1.0), (-1e300, 1e300), (-1e-310, 1e-310), (0.1, 0.3),
              (-1.7976931348623157e308, 1.7976931348623157e308), (0.5, 0.5)]
EDGES = [[-2.0, -1.0, 0.0, 1.0, 2.0], list(np.linspace(-3, 3, 61)), [0.0, 1.0],
         [-1e308, -TINY, 0.0, TINY, 1e308]]
WINDOWS = [(-2.0, 2.0, 0, 3), (-2.0, 2.0, -2, 2), (-2.0, 2.0, 0, 0), (-1.0, 1.0, 3, 12),
           (-1e300, 1e300, 90, 110), (0.0, 1.0, 198, 203)]

# range_sum: (lo, hi, a, b, shift): an inner range, a value's rank (a = b), ends at the bounds
RANGES = [(-2.0, 2.0, -1.0, 1.0, True), (-2.0, 2.0, 0.1, 0.1, False),
          (-1e300, 1e300, -TINY, 1e300, False), (0.1, 0.3, 0.1, 0.3, True),
          (-2.0, 2.0, -2.0, 2.0, False)]


def rows(name: str) -> list:
    """The case's rows as Python floats/None (what a database stores)."""
    return [None if v is None else float(v) for v in CASES[name]]


def as_array(name: str) -> np.ndarray:
    return np.array([np.nan if v is None else v for v in rows(name)], dtype=np.float64)


def parquet_file(tmp_path, name: str) -> str:
    """The case's rows as a Parquet column ``v`` (nullable doubles: None stays NULL)."""
    import pandas as pd

    path = tmp_path / f"{name}.parquet"
    pd.DataFrame({"v": pd.array(rows(name), dtype="Float64")}).to_parquet(path)
    return str(path)


def sqlite_file(tmp_path, name: str) -> str:
    """The case's rows as SQLite table ``t`` (v REAL, and w INTEGER = 1 beside it)."""
    import sqlite3

    path = tmp_path / f"{name}.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE t (v REAL, w INTEGER)")
    con.executemany("INSERT INTO t VALUES (?, 1)", [(v,) for v in rows(name)])
    con.commit()
    con.close()
    return str(path)


def probe_light(source, column) -> dict:
    """Fewer statements (for engines where each costs a job): one of each kind of path."""
    out: dict = {"count": source.count(column)}
    for lo, hi, shift in [(-2.0, 2.0, False), (-1e300, 1e300, False), (0.1, 0.3, True),
                          (-1e-310, 1e-310, False)]:
        out[("sum", lo, hi, shift)] = source.count_and_sum(column, lo, hi, shift=shift)
    for i in (0, 3):
        out[("hist", i)] = source.histogram(column, EDGES[i]).tolist()
    for w in (WINDOWS[1], WINDOWS[4]):
        out[("window",) + w] = source.order_window(column, *w).tobytes()
    out["top"] = [(np.float64(v).tobytes(), c) for v, c in source.top_counts(column, 3)]
    out["range"] = source.range_sum(column, *RANGES[0][:4], shift=RANGES[0][4])
    out["stats"] = stats(source, column, EDGES[3])
    return out


def stats(source, column, edges) -> tuple:
    """histogram_stats as exact bytes (NaN minima and maxima of empty cells included)."""
    counts, mins, maxs, total = source.histogram_stats(column, edges)
    return counts.tolist(), mins.tobytes(), maxs.tobytes(), total


def probe(source, column) -> dict:
    out: dict = {}
    out["count"] = source.count(column)
    out["count_fill"] = source.count(column, missing=-0.5)
    for lo, hi in SUM_BOUNDS:
        for shift in (False, True):
            if shift and not math.isfinite(hi - lo):
                continue
            out[("sum", lo, hi, shift)] = source.count_and_sum(column, lo, hi, shift=shift)
    out["sum_fill"] = source.count_and_sum(column, -2.0, 2.0, missing=0.75)
    for i, e in enumerate(EDGES):
        out[("hist", i)] = source.histogram(column, e).tolist()
    for w in WINDOWS:
        out[("window",) + w] = source.order_window(column, *w).tobytes()
    out["top"] = [(np.float64(v).tobytes(), c) for v, c in source.top_counts(column, 3)]
    for r in RANGES:
        out[("range",) + r] = source.range_sum(column, *r[:4], shift=r[4])
    out["range_fill"] = source.range_sum(column, -2.0, 2.0, -1.0, 1.0, missing=0.75)
    for i, e in enumerate(EDGES):
        out[("stats", i)] = stats(source, column, e)
    for lo, hi, ranges in [(-2.0, 2.0, [(-2.0, -0.5), (0.0, 0.0), (1.0, 2.0)]),
                           (-1e300, 1e300, [(-1e300, 1e300)])]:
        out[("range", lo, hi)] = source.range_values(column, lo, hi, ranges).tobytes()
    return out
