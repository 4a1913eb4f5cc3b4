"""Spark: a ``pyspark.sql.DataFrame`` or a table name in the active SparkSession.

Every primitive is one Spark SQL aggregate over a temporary view; the driver
collects only aggregates (≤ ``labels`` + 1 rows per refinement round, at most
``fetch_cap`` values for a rank window), so a release passes with
``spark.driver.maxResultSize=1m`` whatever the table's size.  Exact sums of
the fixed-point terms k are two BIGINT sums, of k DIV 2^26 and k % 2^26 (exact
below 2^37 rows; above, one ``DECIMAL(38,0)`` sum, exact up to 10^38, as the
grouped sums always are); ``CAST(double AS BIGINT)`` truncates toward zero as
the fixed-point rule needs.
"""

from __future__ import annotations

import itertools
from typing import Any

from ..errors import ParameterError, SchemaError
from .sql import Dialect, SQLEngine, by_name, scale_resolution

__all__ = ["DIALECT", "connect"]

DIALECT = Dialect(
    name="spark",
    quote_char="`",
    int_cast="CAST({e} AS BIGINT)",
    array="array({items})",
    element="element_at({arr}, {i})",
    inf="CAST('Infinity' AS DOUBLE)",
    labels=1 << 10,
    fetch_cap=20_000,
    sum_cast="CAST({k} AS DECIMAL(38,0))",
    int_div="{a} DIV {b}",  # integer division, for a split exact sum
    split_sums=True,  # ungrouped: two BIGINT sums, cheaper than DECIMAL arithmetic per row
)

_views = itertools.count()


def is_spark_dataframe(data: Any) -> bool:
    mod = type(data).__module__
    return mod.startswith("pyspark.") and type(data).__name__ == "DataFrame"


def connect(data: Any, *, spark: Any = None, sql: str | None = None) -> SQLEngine:
    """An engine over a Spark DataFrame, or over ``data`` as a table name in ``spark``.

    ``sql`` (optional) is a SELECT over the view ``data``.
    """
    if is_spark_dataframe(data):
        session = data.sparkSession
        view = f"instancedp_data_{next(_views)}"
        data.createOrReplaceTempView(view)
        relation = DIALECT.quote(view)
    elif isinstance(data, str):
        from pyspark.sql import SparkSession

        session = spark or SparkSession.getActiveSession()
        if session is None:
            raise ParameterError(
                "a Spark table name needs an active SparkSession", parameter="spark"
            )
        relation = ".".join(DIALECT.quote(p) for p in data.split("."))
    else:
        raise ParameterError("Spark input must be a DataFrame or a table name", parameter="data")
    if sql is not None:
        view = f"instancedp_data_{next(_views)}"
        session.sql(f"SELECT * FROM {relation}").createOrReplaceTempView("data")
        session.sql(sql).createOrReplaceTempView(view)
        relation = DIALECT.quote(view)
    try:
        cols = list(session.sql(f"SELECT * FROM {relation} LIMIT 0").columns)
    except Exception as exc:  # AnalysisException: the table or a column does not exist
        raise SchemaError(f"Spark cannot read the source: {exc}") from exc

    def execute(query: str, params: list) -> list[tuple]:
        return [tuple(r) for r in session.sql(query).collect()]

    def lookup_table(columns: dict[str, Any]) -> str:
        # A small DataFrame from the driver (public constants only), broadcast to the join,
        # so the histogram groups by cell on the executors and collects ≤ m rows.
        names = list(columns)
        rows = list(zip(*(columns[n].tolist() for n in names), strict=True))
        types = ", ".join(f"{n} {'DOUBLE' if columns[n].dtype.kind == 'f' else 'BIGINT'}"
                          for n in names)
        view = f"instancedp_lookup_{next(_views)}"
        session.createDataFrame(rows, types).createOrReplaceTempView(view)
        return DIALECT.quote(view)

    engine = SQLEngine(DIALECT, execute, relation, cols, lookup_table=lookup_table)
    engine.connection = session  # type: ignore[attr-defined]
    # the result's schema (the DataFrame's, or the query's static types): analysis, no job
    schema = session.sql(f"SELECT * FROM {relation} LIMIT 0").schema
    engine.resolutions = by_name((f.name, _resolution(f.dataType)) for f in schema.fields)
    return engine


def _resolution(data_type: Any) -> float | None:
    """The resolution a Spark type declares: 1.0 for ByteType, ShortType, IntegerType
    and LongType, 10^−s for DecimalType(p, s), None for every other type."""
    from pyspark.sql import types as T

    if isinstance(data_type, T.ByteType | T.ShortType | T.IntegerType | T.LongType):
        return 1.0
    if isinstance(data_type, T.DecimalType):
        return scale_resolution(data_type.scale)
    return None
