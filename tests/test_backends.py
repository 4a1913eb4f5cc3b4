"""The in-memory reference primitives against their definitions, and DuckDB/SQLite against it.

Spark and PostgreSQL are checked against the same reference in
``test_spark_backend.py`` and ``test_postgres_input.py``.
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from backend_cases import CASES, as_array, parquet_file, probe, sqlite_file

from instancedp.backends import numpy as ref
from instancedp.backends import open_source
from instancedp.errors import ParameterError, SchemaError


# ---- the reference against the definitions ---------------------------------------------
@pytest.mark.parametrize(
    "lo, hi, shift",
    [(-2, 2, False), (0, 1, False), (0, 1.5, False), (-3, 0.1, True), (1e-310, 2e-310, False),
     (-1e308, 1e308, False), (5e-324, 5e-324, False), (0, 0, False), (-8, 8, True)],
)
def test_fixed_point_exponent_is_the_smallest_power(lo, hi, shift):
    m = Fraction(hi) - Fraction(lo) if shift else max(abs(Fraction(lo)), abs(Fraction(hi)))
    if shift:
        m = Fraction(float(hi) - float(lo))  # the range is fl(hi − lo)
    s = ref.fixed_point_exponent(lo, hi, shift)
    if m == 0:
        assert s == 52
        return
    e = 52 - s
    assert Fraction(2) ** e >= m > Fraction(2) ** (e - 1)


def test_fixed_point_refuses_overflowing_range():
    with pytest.raises(ParameterError) as err:
        ref.fixed_point_exponent(-1e308, 1e308, shift=True)
    assert err.value.parameter == "bounds"


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("lo, hi", [(-2.0, 2.0), (-1e300, 1e300), (0.1, 0.3), (-1e-310, 1e-310)])
def test_exact_sum_matches_rational_arithmetic(name, lo, hi):
    x = [v for v in as_array(name) if not math.isnan(v)]
    for shift in (False, True):
        s = ref.fixed_point_exponent(lo, hi, shift)
        want = 0
        for v in x:
            c = min(max(v, lo), hi)
            y = (c - lo) if shift else c  # one IEEE subtraction, as the rule says
            want += math.trunc(Fraction(y) * Fraction(2) ** s)
        assert ref.count_and_sum(as_array(name), lo, hi, shift) == (len(x), want)
        # every term lies in the bounds (the sensitivity argument)
        if x:
            scale = Fraction(2) ** -s
            terms = [math.trunc(Fraction((min(max(v, lo), hi) - lo) if shift
                                         else min(max(v, lo), hi)) * 2**s) for v in x]
            flo, fhi = Fraction(lo), Fraction(hi)
            top = fhi - flo if shift else max(abs(flo), abs(fhi))
            assert all(abs(t) <= 2**52 and abs(t * scale) <= top for t in terms)


def test_exact_sum_has_no_overflow_at_many_maximal_terms():
    x = np.full(1 << 13, 2.0)  # 2^13 terms of 2^52: an int64 sum of k_i would overflow
    assert ref.count_and_sum(x, -2.0, 2.0) == (1 << 13, (1 << 13) << 52)
    assert ref.count_and_sum(-x, -2.0, 2.0)[1] == -((1 << 13) << 52)


@pytest.mark.parametrize("name", sorted(CASES))
def test_histogram_and_window_match_definitions(name):
    x = [v for v in as_array(name) if not math.isnan(v)]
    edges = [-1.0, -0.5, 0.0, 0.1, 1.0, 2.0]
    want = [0] * 5
    for v in x:
        c = min(max(v, -1.0), 2.0)
        j = max(i for i in range(5) if edges[i] <= c)  # last cell closed: c = 2.0 → cell 4
        want[j] += 1
    assert ref.histogram(as_array(name), edges).tolist() == want
    srt = sorted(min(max(v, -1.0), 1.0) + 0.0 for v in x)
    for start, stop in [(-3, 2), (0, len(srt)), (len(srt) - 1, len(srt) + 2), (4, 4)]:
        got = ref.order_window(as_array(name), -1.0, 1.0, start, stop).tolist()
        exp = [-1.0 if r < 0 else 1.0 if r >= len(srt) else srt[r] for r in range(start, stop)]
        assert got == exp


def test_top_counts_orders_by_count_then_value():
    x = [3.0, 1.0, 3.0, 1.0, 2.0, np.nan, -0.0, 0.0]
    assert ref.top_counts(x, 3) == [(0.0, 2), (1.0, 2), (3.0, 2)]
    assert ref.top_counts([], 2) == []


@pytest.mark.parametrize(
    "call, parameter",
    [
        (lambda: ref.count([1.0], missing="zero"), "missing"),
        (lambda: ref.count([1.0], missing=math.inf), "missing"),
        (lambda: ref.histogram([1.0], [0.0]), "edges"),
        (lambda: ref.histogram([1.0], [0.0, 0.0]), "edges"),
        (lambda: ref.histogram([1.0], [0.0, math.inf]), "edges"),
        (lambda: ref.order_window([1.0], 0, 1, 3, 2), "stop"),
        (lambda: ref.order_window([1.0], 1, 0, 0, 1), "bounds"),
        (lambda: ref.top_counts([1.0], 0), "k"),
    ],
)
def test_bad_public_parameters_name_themselves(call, parameter):
    with pytest.raises(ParameterError) as err:
        call()
    assert err.value.parameter == parameter


# ---- DuckDB and SQLite against the reference -------------------------------------------
@pytest.mark.parametrize("name", sorted(CASES))
def test_duckdb_and_sqlite_equal_the_reference_bit_for_bit(tmp_path, name):
    want = probe(open_source(as_array(name)), None)
    with open_source(parquet_file(tmp_path, name)) as duck:
        assert duck.backend == "duckdb"
        assert probe(duck, "v") == want
    with open_source(sqlite_file(tmp_path, name), table="t") as lite:
        assert lite.backend == "sqlite"
        assert probe(lite, "v") == want


def test_clamped_sum_by_parts_and_by_clamp_agree(tmp_path, monkeypatch):
    """Both SQL forms of the exact clamped sum (a per-row clamp, or the rows inside the
    bounds plus the counts below and above) give the reference's (n, S) on DuckDB and
    SQLite, under both missing-value policies."""
    from backend_cases import SUM_BOUNDS

    name = "mixed"
    parts = ["missing", "infinite", "huge", "subnormal", "signed_zero", "at_bounds", "random"]
    monkeypatch.setitem(CASES, name, [v for p in parts for v in CASES[p]])
    x = as_array(name)
    sources = [open_source(parquet_file(tmp_path, name)),
               open_source(sqlite_file(tmp_path, name), table="t")]
    for src in sources:
        for by_parts in (True, False):
            src.engine.dialect = dataclasses.replace(src.engine.dialect, sum_by_parts=by_parts)
            for (lo, hi), shift, missing in [(b, sh, m) for b in SUM_BOUNDS
                                             for sh in (False, True) for m in ("drop", 0.75)]:
                if shift and not math.isfinite(hi - lo):
                    continue
                got = src.count_and_sum("v", lo, hi, shift=shift, missing=missing)
                assert got == ref.count_and_sum(x, lo, hi, shift, missing), (
                    src.backend, by_parts, lo, hi, shift, missing)
        src.close()


def test_split_sum_falls_back_to_one_sum_when_its_parts_could_wrap(tmp_path, monkeypatch):
    """From 2^37 rows the two 64-bit parts of a split exact sum could wrap: the engine sums
    once more in its wide type (forced here by lowering the threshold)."""
    from instancedp.backends import sql

    x = as_array("random")
    with open_source(sqlite_file(tmp_path, "random"), table="t") as lite:
        monkeypatch.setattr(sql, "_SPLIT_ROWS", 1)
        statements = []
        run = lite.engine.execute
        lite.engine.execute = lambda q, p: statements.append(q) or run(q, p)
        assert lite.count_and_sum("v", -2.0, 2.0) == ref.count_and_sum(x, -2.0, 2.0)
        assert len(statements) == 2 and "%" not in statements[1]


@pytest.mark.parametrize("labels, cap", [(2, 1), (4, 3), (16, 8)])
def test_rank_window_refinement_rounds_agree(tmp_path, labels, cap):
    """Force several counting rounds (and the engine-sort fallback) on a small table."""
    x = np.concatenate([np.random.default_rng(3).normal(size=500), np.full(50, 0.25)])
    path = tmp_path / "w.parquet"
    pd.DataFrame({"v": x}).to_parquet(path)
    src = open_source(str(path))
    src.engine.dialect = dataclasses.replace(src.engine.dialect, labels=labels, fetch_cap=cap)
    for lo, hi, start, stop in [(-3, 3, 0, 5), (-3, 3, 270, 290), (-1, 1, 540, 560),
                                (-3, 3, -4, 600), (0.25, 0.25, 10, 20)]:
        assert src.order_window("v", lo, hi, start, stop).tobytes() == \
            ref.order_window(x, lo, hi, start, stop).tobytes()


def test_duckdb_sql_and_frames(tmp_path):
    x = as_array("random")
    path = tmp_path / "r.parquet"
    pd.DataFrame({"v": x, "g": np.arange(x.size) % 2}).to_parquet(path)
    sel = x[np.arange(x.size) % 2 == 1]
    src = open_source(str(path), sql="SELECT v FROM data WHERE g = 1", memory_limit="256MB",
                      threads=1)
    assert src.columns == ["v"]
    assert probe(src, "v") == probe(open_source(sel), None)
    frame = pd.DataFrame({"v": x})
    assert open_source(frame).backend == "numpy"
    assert probe(open_source(frame, sql="SELECT v FROM data"), "v") == probe(open_source(x), None)


def test_duckdb_is_sandboxed_after_registering(tmp_path):
    path = parquet_file(tmp_path, "two")
    other = tmp_path / "secret.csv"
    other.write_text("a\n1\n")
    with pytest.raises(SchemaError):
        open_source(path, sql=f"SELECT * FROM read_csv('{other}')")
    src = open_source(path)
    con = src.engine.connection
    with pytest.raises(Exception, match="(?i)permission|disabled|lock"):
        con.execute(f"SELECT * FROM read_csv('{other}')").fetchall()
    with pytest.raises(Exception, match="(?i)lock"):
        con.execute("SET memory_limit = '100GB'")


def test_schema_and_parameter_errors(tmp_path):
    path = parquet_file(tmp_path, "two")
    with pytest.raises(SchemaError, match="unknown column 'x'"):
        open_source(path).count("x")
    with pytest.raises(ParameterError) as err:
        open_source(str(tmp_path / "nope.parquet"))
    assert err.value.parameter == "data"
    with pytest.raises(ParameterError) as err:
        open_source(sqlite_file(tmp_path, "two"))
    assert err.value.parameter == "table"
    with pytest.raises(ParameterError):
        open_source([1.0], table="t")
    with pytest.raises(SchemaError, match="unknown column"):
        open_source(pd.DataFrame({"a": [1.0]})).count("b")
    with pytest.raises(SchemaError):
        open_source(sqlite_file(tmp_path, "one"), table="missing_table")


def test_a_row_entering_the_selection_moves_only_the_aggregates(tmp_path):
    """Add/remove: one more selected row changes count by 1 and S by that row's term only."""
    base = as_array("random")
    path = tmp_path / "sel.parquet"
    pd.DataFrame({"v": np.append(base, 1.75), "keep": [1] * base.size + [0]}).to_parquet(path)
    out = open_source(str(path), sql="SELECT v FROM data WHERE keep = 1")
    inn = open_source(str(path), sql="SELECT v FROM data")
    s = ref.fixed_point_exponent(-2, 2)
    (n0, s0), (n1, s1) = out.count_and_sum("v", -2, 2), inn.count_and_sum("v", -2, 2)
    assert (n1 - n0, s1 - s0) == (1, math.trunc(1.75 * 2**s))
    assert abs(Fraction(s1 - s0, 2**s)) <= 2  # the add/remove sensitivity max(|lo|, |hi|)


def _record(src, column) -> bytes:
    """A seeded release record built only from the primitives (a stand-in mechanism)."""
    import json

    from instancedp import random as idp_random

    rng = idp_random.simulation(11).generator
    n, total = src.count_and_sum(column, -2.0, 2.0, shift=True)
    s = ref.fixed_point_exponent(-2.0, 2.0, shift=True)
    counts = src.histogram(column, np.linspace(-2, 2, 33))
    window = src.order_window(column, -2.0, 2.0, n // 2 - 3, n // 2 + 3)
    value = -2.0 + (total * 2.0**-s + rng.laplace(0, 4.0)) / max(1.0, n + rng.laplace(0, 2.0))
    return json.dumps({"value": value, "counts": counts.tolist(),
                       "window": window.tolist()}).encode()


@pytest.mark.parametrize("name", ["random", "missing", "signed_zero", "empty"])
def test_seeded_records_are_the_same_bytes(tmp_path, name):
    want = _record(open_source(as_array(name)), None)
    assert _record(open_source(parquet_file(tmp_path, name)), "v") == want
    assert _record(open_source(sqlite_file(tmp_path, name), table="t"), "v") == want
