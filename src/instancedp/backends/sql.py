"""The primitives in SQL, written once for every engine that speaks it.

An :class:`SQLEngine` holds a dialect (how to write a double literal, test
NaN, truncate to an integer and sum exactly), a function that runs one
statement and returns its (small) result rows, and the relation to read.
Each primitive is one aggregate statement (or a few, for the rank window);
only aggregates come back, never the column:

- count / exact sum: one scan, ``COUNT(*)`` and an exact integer sum of the
  fixed-point terms k_i (see ``numpy.py`` for the rule);
- histogram: each row gets a monotone integer label from a piecewise-linear
  map fixed by the public edges (:func:`label_map`: at most one edge per
  label), its cell is the number of edges with a smaller label plus one
  comparison with the edge sharing its label (so cells agree bit for bit with
  ``numpy.searchsorted``), then ``GROUP BY`` cell — one scan, one hash probe
  per row.  Where no such map exists (bounds whose range overflows) an
  unrolled binary search over the edges (⌈log2 m⌉ comparisons) is used;
- rank window: refinement by counting — group the rows in the current value
  range into B monotone labels ⌊(x − a)·B/(b − a)⌋, keep the labels that hold
  the wanted ranks, and repeat on their value range until it holds at most
  ``fetch_cap`` rows (then those rows are fetched sorted) or a single value;
  each round is one scan returning ≤ B + 1 rows;
- top counts: ``GROUP BY`` value ``ORDER BY`` count, value ``LIMIT k``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import ParameterError, SchemaError
from . import numpy as ref

__all__ = ["Dialect", "LabelMap", "SQLEngine", "by_name", "decimal_resolution", "label_map",
           "scale_resolution"]

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
    # the ungrouped sums split even where SUM(sum_cast) is exact, because two 64-bit sums
    # are faster (Spark: DECIMAL(38,0) arithmetic per row); above 2^37 rows they re-sum
    split_sums: bool = False
    int_div: str = "{a} / {b}"  # integer division truncating toward zero (for "split")
    # Test |y| < 2^−s before scaling: only for engines that raise on underflow (PostgreSQL);
    # elsewhere trunc(y·2^s) of such a y is 0 anyway.
    underflow_guard: bool = False
    sum_cast: str = "{k}"
    # count_and_sum as rows inside the bounds plus counts below/above (no per-row clamp)
    sum_by_parts: bool = False
    ln: str = "ln({x})"  # natural logarithm of a double (log_bins' labels only)
    ceil: str = "ceil({x})"

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


def scale_resolution(scale: int | None) -> float | None:
    """10^−s, the resolution a decimal type of scale s ≥ 0 declares (as
    :func:`instancedp.io.declared_resolution` states it for Arrow); None for no scale
    or a negative one."""
    return None if scale is None or scale < 0 else float(10.0 ** -scale)


_DECIMAL = re.compile(r"\s*(?:DECIMAL|NUMERIC)\s*\(\s*\d+\s*(?:,\s*(\d+)\s*)?\)\s*", re.I)


def decimal_resolution(declared: str) -> float | None:
    """The resolution of a type named ``DECIMAL(p, s)`` or ``NUMERIC(p, s)`` (``(p)``
    alone: s = 0, as in SQL), else None (a bare ``NUMERIC`` has no declared scale)."""
    m = _DECIMAL.fullmatch(declared)
    return None if m is None else scale_resolution(int(m.group(1) or 0))


def by_name(pairs: Iterable[tuple[str, float | None]]) -> dict[str, float | None]:
    """Column name → declared resolution; a name the result repeats with different
    resolutions declares none (a primitive could read either column)."""
    out: dict[str, float | None] = {}
    for name, res in pairs:
        out[name] = res if out.get(name, res) == res else None
    return out


_MAX_PIECES = 64
_SPLIT_ROWS = 1 << 37  # the two 64-bit partial sums of a "split" exact sum are exact below
_MAX_LABELS_PER_EDGE = 16


@dataclass
class LabelMap:
    """A monotone integer label for values in [e0, em], fixed by the public edges.

    Piece j covers [a_j, a_{j+1}) (the last one [a_J, em]); a value x in it has
    label off_j + ⌊(x − a_j)·c_j⌋.  Each step — a subtraction of a constant
    from x ≥ a_j, a multiplication by a positive constant, truncation of a
    non-negative double — is a correctly rounded IEEE operation and so
    non-decreasing in x, and off_{j+1} = off_j + ⌊(a_{j+1} − a_j)·c_j⌋ + 1
    exceeds every label of piece j: the label is non-decreasing on [e0, em].
    The engines evaluate the same operations, so a row's label is the same in
    every engine and in :meth:`label` here.
    """

    starts: list[float]  # a_j, increasing; a_0 = e0
    scales: list[float]  # c_j > 0
    offsets: list[int]  # off_j
    labels: int  # labels 0 … labels − 1 occur
    edge_labels: np.ndarray  # the interior edges' labels, strictly increasing

    def label(self, x: float) -> int:
        j = int(np.searchsorted(self.starts, x, side="right")) - 1
        return self.offsets[j] + math.floor((x - self.starts[j]) * self.scales[j])

    def sql(self, d: Dialect, x: str, params: list) -> str:
        """The label of ``x`` as one SQL expression (a CASE over the pieces)."""
        def piece(j: int) -> str:
            body = d.int_cast.format(
                e=f"(({x} - {d.lit(self.starts[j], params)}) * {d.lit(self.scales[j], params)})")
            return f"{self.offsets[j]} + {body}"

        if len(self.starts) == 1:
            return piece(0)
        whens = " ".join(f"WHEN {x} < {d.lit(self.starts[j + 1], params)} THEN {piece(j)}"
                         for j in range(len(self.starts) - 1))
        return f"CASE {whens} ELSE {piece(len(self.starts) - 1)} END"


def label_map(e0: float, em: float, interior: np.ndarray) -> LabelMap | None:
    """A :class:`LabelMap` with at most one interior edge per label, or None.

    Pieces start at e0, at the first and the last interior edge, and at the
    first edge of each run of consecutive edge gaps whose largest is at most
    4× its smallest (one run for an evenly spaced grid, about log4 of the gap
    ratio for a log-chart grid).  A piece holding two or more edges gets the
    scale 2 / (its smallest gap), so each edge has its own label and the run
    has at most ~8 labels per gap; a piece holding at most one edge gets
    1 / (its length).  None when a piece's range overflows a double, two edges
    share a label, or there would be more than 16 labels per edge (the caller
    then uses a binary search).
    """
    e = np.asarray(interior, dtype=np.float64)
    k = e.size
    starts = [float(e0)]
    if k:
        starts.append(float(e[0]))
        with np.errstate(over="ignore"):  # an infinite gap is caught below (span check)
            gaps = np.diff(e).tolist()
        lo_gap = hi_gap = math.nan
        for i, g in enumerate(gaps):
            if lo_gap == lo_gap and max(hi_gap, g) > 4 * min(lo_gap, g):
                starts.append(float(e[i]))  # a new run starts at the left end of gap i
                lo_gap = hi_gap = g
            elif lo_gap == lo_gap:
                lo_gap, hi_gap = min(lo_gap, g), max(hi_gap, g)
            else:
                lo_gap = hi_gap = g
        starts.append(float(e[-1]))
        starts = sorted(set(starts))
    if len(starts) > _MAX_PIECES:
        return None
    ends = starts[1:] + [float(em)]
    scales, offsets, off = [], [], 0
    for a, b in zip(starts, ends, strict=True):
        span = b - a
        inside = e[(e >= a) & (e < b)]
        if inside.size >= 2:
            with np.errstate(over="ignore"):  # an infinite gap gives c = 0: refused below
                c = 2.0 / float(np.min(np.diff(inside)))
        else:
            c = 1.0 / span if span > 0 else 1.0
        if not (math.isfinite(span) and math.isfinite(c) and c > 0 and math.isfinite(span * c)):
            return None
        top = math.floor(span * c)
        if top > _MAX_LABELS_PER_EDGE * (k + 1):
            return None
        scales.append(c)
        offsets.append(off)
        off += top + 1
    lm = LabelMap(starts, scales, offsets, off, np.empty(0, dtype=np.int64))
    labs = np.array([lm.label(float(v)) for v in e], dtype=np.int64)
    if np.any(np.diff(labs) <= 0) or off > _MAX_LABELS_PER_EDGE * (k + 1) + 4 * len(starts):
        return None
    lm.edge_labels = labs
    return lm


def search_cells(d: Dialect, src: str, interior: np.ndarray, params: list,
                 carry: str = "") -> str:
    """Subquery over ``src`` (columns x and ``carry``) adding b = the number of interior
    edges ≤ x: an unrolled binary search over the public edges (⌈log2 m⌉ comparisons,
    no arithmetic on the values, so cells agree bit for bit with ``numpy.searchsorted``).
    ``carry``: columns kept beside x, written with a trailing comma (e.g. ``"k, "``)."""
    depth = max(1, math.ceil(math.log2(interior.size + 1)))
    padded = [d.lit(v, params) for v in interior] + [d.inf] * (2**depth - 1 - interior.size)
    arr = d.array.format(items=", ".join(padded))
    layer = f"(SELECT {carry}x, 0 AS b FROM {src}) AS l0"
    for t in range(depth):
        h = 2 ** (depth - 1 - t)
        probe = d.element.format(arr=arr, i=f"b + {h}")
        layer = (f"(SELECT {carry}x, b + CASE WHEN {probe} <= x THEN {h} ELSE 0 END AS b "
                 f"FROM {layer}) AS l{t + 1}")
    return layer


@dataclass
class SQLEngine:
    """The primitives over ``relation`` (a table name or a parenthesised SELECT with alias)."""

    dialect: Dialect
    execute: Execute
    relation: str
    columns: list[str] = field(default_factory=list)
    bucket_sql: Callable[[str, np.ndarray, list], str] | None = None
    # Registers a small constant relation (columns name → int64/float64 arrays) and returns
    # its name; engines without one inline the edges as VALUES.
    lookup_table: Callable[[dict[str, np.ndarray]], str] | None = None
    # Runs a one-column query and returns its values as float64 (e.g. DuckDB's columnar
    # fetch: no Python tuple per row); engines without one build the array from rows.
    fetch_doubles: Callable[[str, list], np.ndarray] | None = None
    # The resolution each column's *declared* type states (1.0 for an integer type,
    # 10^−s for a decimal of scale s), read from the schema or catalog when the engine
    # is opened; a column absent here declares none (the engine's ``connect`` fills it).
    resolutions: dict[str, float | None] = field(default_factory=dict)

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
        if missing in ("drop", "finite"):
            cond = "v IS NOT NULL" + (f" AND NOT {d.isnan.format(x='v')}" if d.isnan else "")
            if missing == "finite":
                cond += f" AND v > {d.lit(-math.inf, params)} AND v < {d.lit(math.inf, params)}"
            return f"(SELECT v FROM {base} WHERE {cond}) AS m"
        fill = d.lit(missing, params)
        return f"(SELECT CASE WHEN v IS NULL{nan} THEN {fill} ELSE v END AS v FROM {base}) AS m"

    def _clamped(self, column, lo, hi, missing, params) -> str:
        """Subquery with one column x = clamp(v, lo, hi) + 0.0."""
        d = self.dialect
        src = self._values(column, missing, params)
        # CASE rather than least/greatest: the same value for every non-NaN v, and about
        # twice as fast in DuckDB (NaN never reaches here: the missing policy removed it).
        expr = (f"CASE WHEN v < {d.lit(lo, params)} THEN {d.lit(lo, params)} "
                f"WHEN v > {d.lit(hi, params)} THEN {d.lit(hi, params)} ELSE v END")
        return f"(SELECT {expr} + {d.lit(0.0, params)} AS x FROM {src}) AS c"

    def declared_resolution(self, column: str | None = None) -> float | None:
        """The resolution the column's declared type states (:attr:`resolutions`: public
        schema, never a row), else None; the column is resolved as every primitive
        resolves it (the same :class:`SchemaError` for an unknown one)."""
        self._col(column)
        return self.resolutions.get(self.columns[0] if column is None else column)

    def _one(self, sql: str, params: list) -> tuple:
        rows = self.execute(sql, params)
        return tuple(rows[0])

    # -- primitives ------------------------------------------------------
    def count(self, column: str | None = None, missing: ref.Missing = "drop") -> int:
        params: list = []
        sql = f"SELECT COUNT(*) FROM {self._values(column, missing, params)}"
        return int(self._one(sql, params)[0])

    def _units(self, y: str, s: int, p: list) -> str:
        """SQL for k = trunc(y·2^s) as an integer (the fixed-point rule of ``numpy.py``)."""
        d = self.dialect
        scaled, rest = y, s
        if s > 1000:  # 2^s overflows a double; two exact steps
            scaled, rest = f"({scaled} * {d.lit(math.ldexp(1.0, 1000), p)})", s - 1000
        k = d.int_cast.format(e=f"({scaled} * {d.lit(math.ldexp(1.0, rest), p)})")
        if d.underflow_guard:
            k = f"CASE WHEN abs({y}) < {d.lit(math.ldexp(1.0, -s), p)} THEN 0 ELSE {k} END"
        return k

    def _splits(self) -> bool:
        return self.dialect.exact_sum == "split" or self.dialect.split_sums

    def _sum_terms(self, k: str, split: bool = True) -> tuple[str, Callable[[Sequence], int]]:
        """Select-list text summing k exactly, and the function that reads its columns."""
        if split and self._splits():
            q = 1 << 26
            high = self.dialect.int_div.format(a=k, b=q)
            return (f"SUM({high}), SUM({k} % {q})",
                    lambda r: (int(r[0] or 0) << 26) + int(r[1] or 0))
        return f"SUM({self.dialect.sum_cast.format(k=k)})", lambda r: int(r[0] or 0)

    def count_and_sum(
        self, column: str | None, lo: float, hi: float, shift: bool = False,
        missing: ref.Missing = "drop",
    ) -> tuple[int, int]:
        lo, hi = ref.check_bounds(lo, hi)
        s = ref.fixed_point_exponent(lo, hi, shift)
        if self.dialect.sum_by_parts:
            return self._count_and_sum_by_parts(column, lo, hi, shift, missing, s)
        p: list = []
        src = self._clamped(column, lo, hi, missing, p)
        y = f"x - {self.dialect.lit(lo, p)}" if shift else "x"
        k = self._units("y", s, p)
        split = True
        while True:
            terms, read = self._sum_terms("k", split)
            sql = (f"SELECT COUNT(*), {terms} FROM (SELECT {k} AS k FROM "
                   f"(SELECT {y} AS y FROM {src}) AS z) AS t")
            row = self._one(sql, p)
            if not (split and self._splits() and int(row[0]) >= _SPLIT_ROWS):
                return int(row[0]), read(row[1:])
            split = False  # the 64-bit parts could wrap: sum once more in sum_cast

    def _count_and_sum_by_parts(
        self, column: str | None, lo: float, hi: float, shift: bool, missing: ref.Missing,
        s: int,
    ) -> tuple[int, int]:
        """(n, S) without a per-row clamp: S = Σ_{lo ≤ x ≤ hi} k(x) + b·k(lo) + a·k(hi)
        (+ m·k(clamp(fill)) under a fill policy), b and a the rows below and above.

        The rows inside the bounds are exactly those the clamp leaves unchanged
        (fl(x − lo) is the same subtraction the clamped path makes), so the
        parts add up to the clamped sum bit for bit.  Two filtered aggregates
        in one statement: the comparisons run inside the engine's scan, where
        DuckDB skips Parquet row groups by their min/max (data inside the
        bounds cost no second pass).  NaN rows are excluded by the dialect's ``isnan``
        test, not by the comparisons: DuckDB 2.0 compares a Parquet column's NaN as
        inside [lo, hi] (SQLite stores NaN as NULL).
        """
        d = self.dialect
        missing = ref.check_missing(missing)
        p: list = []
        v = f"CAST({self._col(column)} AS {d.double})"
        lo_, hi_, inf = d.lit(lo, p), d.lit(hi, p), d.lit(math.inf, p)
        num = f" AND NOT {d.isnan.format(x=v)}" if d.isnan else ""
        # fl(v − 0.0) = v for every non-NaN v (−0.0 and 0.0 both give k = 0)
        y = f"({v} - {lo_})" if shift and lo != 0.0 else v
        terms, read = self._sum_terms(self._units(y, s, p))
        inside = (f"SELECT COUNT(*), {terms} FROM {self.relation} "
                  f"WHERE {v} >= {lo_} AND {v} <= {hi_}{num}")
        if missing == "drop":
            where = f"({v} < {lo_} OR ({v} > {hi_} AND {v} <= {inf})){num}"
        elif missing == "finite":  # ±inf dropped as well
            ninf = d.lit(-math.inf, p)
            where = f"(({v} < {lo_} AND {v} > {ninf}) OR ({v} > {hi_} AND {v} < {inf})){num}"
        else:  # NULL and NaN rows too
            nan = f" OR {d.isnan.format(x=v)}" if d.isnan else ""
            where = f"{v} < {lo_} OR {v} > {hi_} OR {v} IS NULL{nan}"
        outside = (f"SELECT COUNT(*) AS o, SUM(CASE WHEN {v} < {lo_}{num} THEN 1 ELSE 0 END) AS b, "
                   f"SUM(CASE WHEN {v} > {hi_} AND {v} <= {inf}{num} THEN 1 ELSE 0 END) AS a "
                   f"FROM {self.relation} WHERE {where}")
        row = self._one(f"SELECT * FROM ({inside}) AS i CROSS JOIN ({outside}) AS o", p)
        n_in, total = int(row[0]), read(row[1:-3])
        n_out, below, above = (int(c or 0) for c in row[-3:])
        fill = n_out - below - above  # rows under the fill policy (0 when dropped)

        def k(t: float) -> int:  # one row's term, by the reference's own rule
            return ref.count_and_sum(np.array([t]), lo, hi, shift)[1]

        total += below * k(lo) + above * k(hi) + (fill * k(missing) if fill else 0)
        return n_in + n_out, total

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
            layer = search_cells(d, src, interior, p)
            sql = f"SELECT b, COUNT(*) FROM {layer} GROUP BY b"
        out = np.zeros(m, dtype=np.int64)
        for b, c in self.execute(sql, p):
            out[int(b)] += int(c)
        return out

    def _histogram_by_labels(
        self, src: str, p: list, e0: float, em: float, interior: np.ndarray
    ) -> np.ndarray | None:
        """Cells from one monotone label per row and at most one edge comparison.

        With the :func:`label_map` labels (non-decreasing in x, at most one
        interior edge per label): an edge with a smaller label is ≤ x, one with
        a larger label is > x, so cell(x) = #(edges with label < label(x)) +
        [x ≥ the edge with label(x)].  None (use the binary search) when no
        map exists.
        """
        d = self.dialect
        lm = label_map(e0, em, interior)
        if lm is None:
            return None
        label = lm.sql(d, "x", p)
        out = np.zeros(interior.size + 1, dtype=np.int64)
        if self.lookup_table is not None:
            # Dense (label → cells below, edge) relation: one hash probe per row, and the
            # engine groups by cell (≤ m result rows).
            table = self._label_table(lm, interior)
            sql = (f"SELECT t.below + CASE WHEN g.x >= t.edge THEN 1 ELSE 0 END AS b, COUNT(*) "
                   f"FROM (SELECT x, {label} AS lab FROM {src}) AS g "
                   f"JOIN {table} AS t ON g.lab = t.lab GROUP BY 1")
            for b, c in self.execute(sql, p):
                out[int(b)] += int(c)
            return out
        # The edges as a small (label, edge) relation joined to each row's label.
        pairs = ", ".join(f"({lab}, {d.lit(float(v), p)})"
                          for lab, v in zip(lm.edge_labels.tolist(), interior, strict=True))
        sql = (f"SELECT g.lab, COUNT(*), SUM(CASE WHEN x >= edge THEN 1 ELSE 0 END) FROM "
               f"(SELECT x, {label} AS lab FROM {src}) AS g "
               f"LEFT JOIN (VALUES {pairs}) AS e(elab, edge) ON g.lab = e.elab GROUP BY g.lab")
        for lab, cnt, above in self.execute(sql, p):
            base = int(np.searchsorted(lm.edge_labels, int(lab), side="left"))  # edges below
            out[base] += int(cnt) - int(above)
            if int(above):
                out[base + 1] += int(above)
        return out

    def _label_table(self, lm: Any, interior: np.ndarray) -> str:
        """The dense (label → cells below, edge) relation of a label map: one hash probe
        per row finds its cell (the edge inside a label, if any, by one comparison)."""
        edge = np.full(lm.labels, np.inf)
        edge[lm.edge_labels] = interior
        below = np.searchsorted(lm.edge_labels, np.arange(lm.labels), side="left")
        return self.lookup_table({"lab": np.arange(lm.labels, dtype=np.int64),
                                  "below": below.astype(np.int64), "edge": edge})

    def histogram_stats(
        self, column: str | None, edges: Sequence[float], missing: ref.Missing = "drop"
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int | None]:
        """The reference's (counts, minima, maxima, S) in one scan: the cells as
        :meth:`histogram` assigns them (labels and one edge comparison, or the binary
        search), each with COUNT, MIN, MAX and the exact sum of its fixed-point terms."""
        d = self.dialect
        e = ref.check_edges(edges)
        m = e.size - 1
        e0, em = float(e[0]), float(e[-1])
        p: list = []
        src = self._clamped(column, e0, em, missing, p)
        try:
            s = ref.fixed_point_exponent(e0, em, True)
        except ParameterError:
            s = None
        k = "0" if s is None else self._units(f"(x - {d.lit(e0, p)})", s, p)
        terms, read = self._sum_terms("k")
        body = f"(SELECT x, {k} AS k FROM {src}) AS kk"
        interior = e[1:-1]
        lm = (label_map(e0, em, interior)
              if interior.size and self.lookup_table is not None else None)
        if interior.size == 0:
            sql = f"SELECT 0, COUNT(*), MIN(x), MAX(x), {terms} FROM {body}"
        elif self.bucket_sql is not None:
            cell = self.bucket_sql("x", interior, p)
            sql = (f"SELECT b, COUNT(*), MIN(x), MAX(x), {terms} FROM "
                   f"(SELECT x, k, {cell} AS b FROM {body}) AS h GROUP BY b")
        elif lm is not None:
            table = self._label_table(lm, interior)
            sql = (f"SELECT t.below + CASE WHEN g.x >= t.edge THEN 1 ELSE 0 END AS b, "
                   f"COUNT(*), MIN(g.x), MAX(g.x), {terms} "
                   f"FROM (SELECT x, k, {lm.sql(d, 'x', p)} AS lab FROM {body}) AS g "
                   f"JOIN {table} AS t ON g.lab = t.lab GROUP BY 1")
        else:
            layer = search_cells(d, body, interior, p, carry="k, ")
            sql = f"SELECT b, COUNT(*), MIN(x), MAX(x), {terms} FROM {layer} GROUP BY b"
        counts = np.zeros(m, dtype=np.int64)
        mins, maxs = np.full(m, np.nan), np.full(m, np.nan)
        total = 0
        for row in self.execute(sql, p):
            b, c = int(row[0]), int(row[1])
            if c:
                counts[b], mins[b], maxs[b] = c, float(row[2]), float(row[3])
                total += read(row[4:])
        return counts, mins, maxs, (None if s is None else total)

    def log_bins(
        self, column: str | None, beta: float, scale: float, missing: ref.Missing = "drop"
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``numpy.log_bins`` in one ``GROUP BY`` of the label ``numpy.log_labels`` (the
        same operations; the division stays in range, for engines that raise on
        underflow or overflow): one scan whatever the grid's length."""
        d = self.dialect
        c = ref.label_constants(beta, scale)
        p: list = []
        src = self._clamped(column, -ref._MAX, ref._MAX, missing, p)
        held = d.least.format(a=d.greatest.format(a="abs(x)", b=d.lit(c["tiny"], p)),
                              b=d.lit(c["big"], p))
        ln = d.ln.format(x=f"{d.lit(1.0, p)} + {held} / {d.lit(c['scale'], p)}")
        m = d.ceil.format(x=f"({ln} * {d.lit(c['per_step'], p)})")
        label = f"(CASE WHEN x > 0 THEN 1 WHEN x < 0 THEN -1 ELSE 0 END) * {m}"
        sql = (f"SELECT COUNT(*), MIN(x), MAX(x) FROM (SELECT x, {label} AS lab FROM {src}) "
               f"AS g GROUP BY lab")
        rows = self.execute(sql, p)
        counts = np.array([int(r[0]) for r in rows], dtype=np.int64)
        mins = np.array([float(r[1]) for r in rows], dtype=np.float64)
        maxs = np.array([float(r[2]) for r in rows], dtype=np.float64)
        return ref.bin_cells(counts, mins, maxs)

    def range_values(
        self, column: str | None, lo: float, hi: float, ranges: Sequence[tuple[float, float]],
        missing: ref.Missing = "drop",
    ) -> np.ndarray:
        d = self.dialect
        lo, hi = ref.check_bounds(lo, hi)
        if not ranges:
            return np.empty(0)
        p: list = []
        src = self._clamped(column, lo, hi, missing, p)
        where = " OR ".join(f"(x >= {d.lit(a, p)} AND x <= {d.lit(b, p)})" for a, b in ranges)
        sql = f"SELECT x FROM {src} WHERE {where} ORDER BY x"
        if self.fetch_doubles is not None:
            return self.fetch_doubles(sql, p)
        return np.array([r[0] for r in self.execute(sql, p)], dtype=np.float64)

    def _label_groups(self, column, lo, hi, missing, a: float, b: float) -> list | None:
        """(label, count, min, max) of the rows in [a, b], labels ⌊(x − a)·B/(b − a)⌋, sorted."""
        d = self.dialect
        c = d.labels / (b - a)
        if not (math.isfinite(c) and math.isfinite(b - a)):  # b − a overflows: c = 0, (x − a)·c NaN
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

    def range_sum(
        self, column: str | None, lo: float, hi: float, a: float, b: float,
        shift: bool = False, missing: ref.Missing = "drop",
    ) -> tuple[int, int, int]:
        """(#{x ≤ a}, #{x < b}, Σ_{a < x < b} k(x)) in one scan (``numpy.range_sum``)."""
        lo, hi = ref.check_bounds(lo, hi)
        p: list = []
        return self.range_sum_of(self._clamped(column, lo, hi, missing, p), p, lo, hi, a, b,
                                 shift)

    def range_sum_of(
        self, src: str, p: list, lo: float, hi: float, a: float, b: float, shift: bool,
    ) -> tuple[int, int, int]:
        """:meth:`range_sum` over ``src``, a subquery of clamped values x (with its
        parameters ``p``): a grouped backend passes one group's rows."""
        d = self.dialect
        a, b = ref.check_range(a, b)
        s = ref.fixed_point_exponent(lo, hi, shift)
        a_, b_ = d.lit(a, p), d.lit(b, p)
        y = f"x - {d.lit(lo, p)}" if shift else "x"
        k = f"CASE WHEN x > {a_} AND x < {b_} THEN {self._units('y', s, p)} ELSE 0 END"
        split = True
        while True:
            terms, read = self._sum_terms("k", split)
            sql = (f"SELECT SUM(CASE WHEN x <= {a_} THEN 1 ELSE 0 END), "
                   f"SUM(CASE WHEN x < {b_} THEN 1 ELSE 0 END), {terms} "
                   f"FROM (SELECT x, {k} AS k FROM (SELECT x, {y} AS y FROM {src}) AS z) AS t")
            row = self._one(sql, p)
            if not (split and self._splits() and int(row[1] or 0) >= _SPLIT_ROWS):
                return int(row[0] or 0), int(row[1] or 0), read(row[2:])
            split = False  # the 64-bit parts could wrap: sum once more in sum_cast

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
