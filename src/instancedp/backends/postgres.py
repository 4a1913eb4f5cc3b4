"""PostgreSQL through psycopg 3: counts, exact sums, histograms and rank windows in SQL.

Every statement runs in a read-only transaction with a statement timeout.
Literals are ``'…'::double precision`` from Python's shortest round-trip
``repr`` (PostgreSQL ≥ 12 parses it exactly); ``SUM(bigint)`` is an exact
``numeric``; a cell is ``width_bucket(x, thresholds)``, PostgreSQL's own
binary search over the interior edges (the count of thresholds ≤ x).
PostgreSQL raises on float underflow, which is why the fixed-point rule tests
|x| < 2^−s before scaling.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import ParameterError, SchemaError
from .sql import Dialect, SQLEngine, by_name, scale_resolution

__all__ = ["DIALECT", "connect"]

DIALECT = Dialect(
    name="postgresql",
    double="DOUBLE PRECISION",
    isnan="({x} = 'NaN'::double precision)",
    inf="'Infinity'::double precision",
    array="ARRAY[{items}]",
    element="({arr})[{i}]",
    underflow_guard=True,
)


#: built-in PostgreSQL types (pg_type OIDs) whose CAST to double precision fails or means
#: nothing: text, dates and times, identifiers, documents, bytes
_NON_NUMERIC_OIDS = {
    18: "char", 19: "name", 25: "text", 1042: "character", 1043: "character varying",
    1082: "date", 1083: "time", 1114: "timestamp", 1184: "timestamp with time zone",
    1186: "interval", 1266: "time with time zone", 2950: "uuid", 114: "json", 3802: "jsonb",
    17: "bytea", 142: "xml",
}


def connect(
    url: str, *, table: str | None = None, sql: str | None = None, timeout_s: float = 600.0
) -> SQLEngine:
    """An engine over one table (``schema.table`` allowed) or one SELECT of a PostgreSQL db."""
    import psycopg

    if (table is None) == (sql is None):
        raise ParameterError("pass exactly one of table= or sql=", parameter="table")
    try:
        con = psycopg.connect(url, autocommit=False)
    except psycopg.Error as exc:
        raise ParameterError(f"cannot connect to PostgreSQL: {exc}", parameter="data") from exc
    con.read_only = True
    with con.cursor() as cur:
        cur.execute(f"SET statement_timeout = {int(timeout_s * 1000)}")
    if table is not None:
        relation = ".".join(DIALECT.quote(part) for part in table.split("."))
    else:
        relation = f"({sql}) AS q"

    def execute(query: str, params: list) -> list[tuple]:
        try:
            with con.cursor() as cur:
                cur.execute(query, params or None)
                return cur.fetchall()
        finally:
            con.rollback()

    try:
        with con.cursor() as cur:
            cur.execute(f"SELECT * FROM {relation} LIMIT 0")
            cols = [c.name for c in cur.description]
            # the result's declared types (public: the schema and the query text)
            non_numeric = {c.name: _NON_NUMERIC_OIDS[c.type_code] for c in cur.description
                           if c.type_code in _NON_NUMERIC_OIDS}
            resolutions = by_name((c.name, _resolution(c)) for c in cur.description)
        con.rollback()
    except psycopg.Error as exc:
        con.rollback()
        raise SchemaError(f"PostgreSQL cannot read {table or 'the query'}: {exc}") from exc

    def bucket_sql(x: str, interior: np.ndarray, params: list) -> str:
        items = ", ".join(DIALECT.lit(v, params) for v in interior)
        return f"width_bucket({x}, ARRAY[{items}])"

    engine = SQLEngine(DIALECT, execute, relation, cols, bucket_sql=bucket_sql)
    engine.connection = con  # type: ignore[attr-defined]
    engine.non_numeric = non_numeric  # type: ignore[attr-defined]
    engine.resolutions = resolutions
    return engine


#: pg_type OIDs of int2, int4, int8 (each declares resolution 1) and numeric
_INTEGER_OIDS = {21, 23, 20}
_NUMERIC_OID = 1700


def _resolution(column: Any) -> float | None:
    """The resolution a result column's type declares (from the ``LIMIT 0`` result's
    description: the catalog and the query's static typing, no row): 1.0 for
    int2/int4/int8, 10^−s for ``numeric(p,s)``, None for a ``numeric`` without a
    declared scale, float4/float8 and every other type."""
    if column.type_code in _INTEGER_OIDS:
        return 1.0
    if column.type_code == _NUMERIC_OID:
        return scale_resolution(column.scale)
    return None


