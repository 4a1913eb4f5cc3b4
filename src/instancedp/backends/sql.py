"""The primitives in SQL, written once for every engine that speaks it.

An :class:`SQLEngine` holds a dialect (how to write a double literal, test
NaN, truncate to an integer and sum exactly), a function that runs one
statement and returns its (small) result rows, and the relation to read.
Each primitive is one aggregate statement (or a few, for the rank window);
only aggregates come back, never the column:

- count / exact sum: one scan, ``COUNT(*)`` and an exact integer sum of the
  fixed-point terms k_i (see ``numpy.py`` for the rule);
- histogram: each row's cell by an unrolled binary search over the public
  edges (⌈log2 m⌉ comparisons, no arithmetic on the values, so cells agree
  bit for bit with ``numpy.searchsorted``), then ``GROUP BY`` cell;
- rank window: refinement by counting — group the rows in the current value
  range into B monotone labels ⌊(x − a)·B/(b − a)⌋, keep the labels that hold
  the wanted ranks, and repeat on their value range until it holds at most
  ``fetch_cap`` rows (then those rows are fetched sorted) or a single value;
  each round is one scan returning ≤ B + 1 rows;
- top counts: ``GROUP BY`` value ``ORDER BY`` count, value ``LIMIT k``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import SchemaError
from . import numpy as ref

__all__ = ["Dialect", "SQLEngine"]

Execute = Callable[[str, list], list[tuple]]


@dataclass
class Dialect:
    """How one engine writes the few expressions the primitives need."""

    name: str
    double: str = "DOUBLE"
    quote_char: str = '"'
    bind: bool = False  # literals as numbered bound parameters ('?N') instead of inline text
    int_cast: str = "CAST(trunc({e}) AS BIGINT)"
    isnan: str | None = "isnan({x})"
    least: str = "least({a}, {b})"
    greatest: str = "greatest({a}, {b})"
    array: str = "[{items}]"  # one-row array constant
    element: str = "list_extract({arr}, {i})"  # 1-based
    inf: str = "CAST('inf' AS DOUBLE)"
    labels: int = 1 << 14  # B: labels per refinement round
    fetch_cap: int = 1 << 17  # rows fetched sorted once a range holds at most this many
    exact_sum: str = "single"  # "single": SUM(k) is exact; "split": two 64-bit sums
    sum_cast: str = "{k}"

    def quote(self, name: str) -> str:
        q = self.quote_char
        return q + name.replace(q, q + q) + q

    def lit(self, v: float, params: list) -> str:
        v = float(v)
        if self.bind:
            params.append(v)
            return f"?{len(params)}"  # numbered: text order need not match call order
        if math.isinf(v):
            return self.inf if v > 0 else "-" + self.inf
        return f"CAST('{v!r}' AS {self.double})"


@dataclass
class SQLEngine:
    """The primitives over ``relation`` (a table name or a parenthesised SELECT with alias)."""

    dialect: Dialect
    execute: Execute
    relation: str
    columns: list[str] = field(default_factory=list)
    bucket_sql: Callable[[str, np.ndarray, list], str] | None = None

    # -- building blocks -------------------------------------------------
    def _col(self, column: str | None) -> str:
        if column is None:
            if len(self.columns) != 1:
                raise SchemaError(f"name a column: the source has columns {self.columns}")
            column = self.columns[0]
        if self.columns and column not in self.columns:
            raise SchemaError(f"unknown column {column!r}; the columns are {self.columns}")
        return self.dialect.quote(column)

    def _values(self, column: str | None, missing: ref.Missing, params: list) -> str:
        """Subquery with one double column v: the rows after the missing-value policy."""
        d = self.dialect
        missing = ref.check_missing(missing)
        raw = f"CAST({self._col(column)} AS {d.double})"
        nan = f" OR {d.isnan.format(x='v')}" if d.isnan else ""
        base = f"(SELECT {raw} AS v FROM {self.relation}) AS r"
        if missing == "drop":
            cond = "v IS NOT NULL" + (f" AND NOT {d.isnan.format(x='v')}" if d.isnan else "")
            return f"(SELECT v FROM {base} WHERE {cond}) AS m"
        fill = d.lit(missing, params)
        return f"(SELECT CASE WHEN v IS NULL{nan} THEN {fill} ELSE v END AS v FROM {base}) AS m"

    def _clamped(self, column, lo, hi, missing, params) -> str:
        """Subquery with one column x = clamp(v, lo, hi) + 0.0."""
        d = self.dialect
        src = self._values(column, missing, params)
        inner = d.greatest.format(a="v", b=d.lit(lo, params))
        expr = d.least.format(a=inner, b=d.lit(hi, params))
        return f"(SELECT {expr} + {d.lit(0.0, params)} AS x FROM {src}) AS c"

    def _one(self, sql: str, params: list) -> tuple:
        rows = self.execute(sql, params)
        return tuple(rows[0])

    # -- primitives ------------------------------------------------------
    def count(self, column: str | None = None, missing: ref.Missing = "drop") -> int:
        params: list = []
        sql = f"SELECT COUNT(*) FROM {self._values(column, missing, params)}"
        return int(self._one(sql, params)[0])

    def count_and_sum(
        self, column: str | None, lo: float, hi: float, shift: bool = False,
        missing: ref.Missing = "drop",
    ) -> tuple[int, int]:
        d = self.dialect
        lo, hi = ref.check_bounds(lo, hi)
        s = ref.fixed_point_exponent(lo, hi, shift)
        p: list = []
        src = self._clamped(column, lo, hi, missing, p)
        y = f"x - {d.lit(lo, p)}" if shift else "x"
        rows = f"(SELECT {y} AS y FROM {src}) AS z"
        scaled = "y"
        rest = s
        if s > 1000:  # 2^s overflows a double; two exact steps
            scaled = f"({scaled} * {d.lit(math.ldexp(1.0, 1000), p)})"
            rest = s - 1000
        scaled = f"({scaled} * {d.lit(math.ldexp(1.0, rest), p)})"
        tiny = d.lit(math.ldexp(1.0, -s), p)
        k = f"CASE WHEN abs(y) < {tiny} THEN 0 ELSE {d.int_cast.format(e=scaled)} END"
        src = rows
        if d.exact_sum == "split":
            q = 1 << 26
            sql = (f"SELECT COUNT(*), SUM(k / {q}), SUM(k % {q}) "
                   f"FROM (SELECT {k} AS k FROM {src}) AS t")
            n, high, low = self._one(sql, p)
            return int(n), (int(high or 0) << 26) + int(low or 0)
        total_k = d.sum_cast.format(k="k")
        sql = f"SELECT COUNT(*), SUM({total_k}) FROM (SELECT {k} AS k FROM {src}) AS t"
        n, total = self._one(sql, p)
        return int(n), int(total or 0)

    def exact_clamped_sum(self, column, lo, hi, shift=False, missing="drop") -> int:
        return self.count_and_sum(column, lo, hi, shift, missing)[1]

    def histogram(
        self, column: str | None, edges: Sequence[float], missing: ref.Missing = "drop"
    ) -> np.ndarray:
        d = self.dialect
        e = ref.check_edges(edges)
        m = e.size - 1
        p: list = []
        src = self._clamped(column, float(e[0]), float(e[-1]), missing, p)
        interior = e[1:-1]
        if interior.size == 0:
            sql = f"SELECT 0, COUNT(*) FROM {src}"
        elif self.bucket_sql is not None:
            cell = self.bucket_sql("x", interior, p)
            sql = f"SELECT b, COUNT(*) FROM (SELECT {cell} AS b FROM {src}) AS h GROUP BY b"
        else:
            fast = self._histogram_by_labels(src, p, float(e[0]), float(e[-1]), interior)
            if fast is not None:
                return fast
            depth = max(1, math.ceil(math.log2(interior.size + 1)))
            padded = [d.lit(v, p) for v in interior] + [d.inf] * (2**depth - 1 - interior.size)
            arr = d.array.format(items=", ".join(padded))
            layer = f"(SELECT x, 0 AS b FROM {src}) AS l0"
            for t in range(depth):
                h = 2 ** (depth - 1 - t)
                probe = d.element.format(arr=arr, i=f"b + {h}")
                layer = (f"(SELECT x, b + CASE WHEN {probe} <= x THEN {h} ELSE 0 END AS b "
                         f"FROM {layer}) AS l{t + 1}")
            sql = f"SELECT b, COUNT(*) FROM {layer} GROUP BY b"
        out = np.zeros(m, dtype=np.int64)
        for b, c in self.execute(sql, p):
            out[int(b)] += int(c)
        return out

    def _histogram_by_labels(
        self, src: str, p: list, e0: float, em: float, interior: np.ndarray
    ) -> np.ndarray | None:
        """Cells from one monotone label per row and at most one edge comparison.

        label(x) = ⌊(x − e0)·c⌋ is non-decreasing in x, computed here in Python
        with the same IEEE operations as in the engine.  With at most one
        interior edge per label: an edge with a smaller label is ≤ x, one with
        a larger label is > x, so cell(x) = #(edges with label < label(x)) +
        [x ≥ the edge with label(x)].  None (use the binary search) when two
        edges share a label.
        """
        d = self.dialect
        labels = 8 * (interior.size + 1)
        c = labels / (em - e0)
        if not math.isfinite(c):
            return None
        lab_e = [math.floor((float(v) - e0) * c) for v in interior]
        if len(set(lab_e)) != len(lab_e):
            return None
        # The edges as a small (label, edge) relation joined to each row's label: one hash
        # probe per row (cheaper than indexing a constant array in DuckDB).
        pairs = ", ".join(f"({lab}, {d.lit(float(v), p)})"
                          for lab, v in zip(lab_e, interior, strict=True))
        label = d.int_cast.format(e=f"((x - {d.lit(e0, p)}) * {d.lit(c, p)})")
        sql = (f"SELECT g.lab, COUNT(*), SUM(CASE WHEN x >= edge THEN 1 ELSE 0 END) FROM "
               f"(SELECT x, {label} AS lab FROM {src}) AS g "
               f"LEFT JOIN (VALUES {pairs}) AS e(elab, edge) ON g.lab = e.elab GROUP BY g.lab")
        out = np.zeros(interior.size + 1, dtype=np.int64)
        lab_sorted = np.array(lab_e, dtype=np.int64)  # increasing, as the edges are
        for lab, cnt, above in self.execute(sql, p):
            base = int(np.searchsorted(lab_sorted, int(lab), side="left"))  # edges below
            out[base] += int(cnt) - int(above)
            if int(above):
                out[base + 1] += int(above)
        return out

    def _label_groups(self, column, lo, hi, missing, a: float, b: float) -> list | None:
        """(label, count, min, max) of the rows in [a, b], labels ⌊(x − a)·B/(b − a)⌋, sorted."""
        d = self.dialect
        c = d.labels / (b - a)
        if not math.isfinite(c):
            return None
        p: list = []
        src = self._clamped(column, lo, hi, missing, p)
        where = f"x >= {d.lit(a, p)} AND x <= {d.lit(b, p)}"
        label = d.int_cast.format(e=f"((x - {d.lit(a, p)}) * {d.lit(c, p)})")
        sql = (f"SELECT lab, COUNT(*), MIN(x), MAX(x) FROM "
               f"(SELECT x, {label} AS lab FROM {src} WHERE {where}) AS g "
               f"GROUP BY lab ORDER BY lab")
        return [(int(lab), int(gc), float(gmin), float(gmax))
                for lab, gc, gmin, gmax in self.execute(sql, p)]

    def order_window(
        self, column: str | None, lo: float, hi: float, start: int, stop: int,
        missing: ref.Missing = "drop",
    ) -> np.ndarray:
        d = self.dialect
        lo, hi = ref.check_bounds(lo, hi)
        start, stop = ref.check_ranks(start, stop)
        # The first round's label counts over [lo, hi] also give n: no separate COUNT scan.
        groups = None if lo == hi else self._label_groups(column, lo, hi, missing, lo, hi)
        if groups is None:
            p0: list = []
            src0 = self._clamped(column, lo, hi, missing, p0)
            n = int(self._one(f"SELECT COUNT(*) FROM {src0}", p0)[0])
        else:
            n = sum(g[1] for g in groups)
        first, last = max(start, 0), min(stop, n)  # data ranks [first, last)
        if first >= last:
            return ref.pad_window(np.empty(0), start, stop, lo, hi, offset=0, n=n)
        a, b, below, cnt = lo, hi, 0, n
        for _round in range(8):
            if a == b:
                inside = np.full(last - first, a)
                return ref.pad_window(inside, start, stop, lo, hi, offset=first, n=n)
            if cnt <= d.fetch_cap:
                p: list = []
                src = self._clamped(column, lo, hi, missing, p)
                where = f"x >= {d.lit(a, p)} AND x <= {d.lit(b, p)}"
                rows = self.execute(f"SELECT x FROM {src} WHERE {where} ORDER BY x", p)
                vals = np.array([r[0] for r in rows], dtype=np.float64)
                inside = vals[first - below : last - below]
                return ref.pad_window(inside, start, stop, lo, hi, offset=first, n=n)
            if groups is None:
                groups = self._label_groups(column, lo, hi, missing, a, b)
                if groups is None:
                    break
            run = below
            new_a = new_b = None
            new_below = new_cnt = 0
            for _lab, gc, gmin, gmax in groups:
                lo_rank, hi_rank = run, run + gc  # ranks [lo_rank, hi_rank) in this label
                if hi_rank > first and lo_rank < last:
                    if new_a is None:
                        new_a, new_below = gmin, lo_rank
                    new_b = gmax
                    new_cnt += gc
                run = hi_rank
            groups = None
            if (new_a, new_b, new_cnt) == (a, b, cnt):
                break  # no progress: the window spans the whole range
            a, b, below, cnt = new_a, new_b, new_below, new_cnt
        # Fallback: let the engine sort the range (a top-N of at most `last − below` rows).
        p = []
        src = self._clamped(column, lo, hi, missing, p)
        where = f"x >= {d.lit(a, p)} AND x <= {d.lit(b, p)}"
        sql = (f"SELECT x FROM {src} WHERE {where} ORDER BY x "
               f"LIMIT {last - first} OFFSET {first - below}")
        inside = np.array([r[0] for r in self.execute(sql, p)], dtype=np.float64)
        return ref.pad_window(inside, start, stop, lo, hi, offset=first, n=n)

    def top_counts(
        self, column: str | None, k: int, missing: ref.Missing = "drop"
    ) -> list[tuple[Any, int]]:
        k = ref.check_k(k)
        p: list = []
        src = self._values(column, missing, p)
        zero = self.dialect.lit(0.0, p)
        sql = (f"SELECT x, COUNT(*) AS c FROM (SELECT v + {zero} AS x FROM {src}) AS t "
               f"GROUP BY x ORDER BY c DESC, x ASC LIMIT {k}")
        return [(float(x), int(c)) for x, c in self.execute(sql, p)]
