"""PostgreSQL (a real server from the ``postgres_url`` fixture) against the reference."""

from __future__ import annotations

import math

import numpy as np
import pytest
from backend_cases import CASES, as_array, probe, rows

from instancedp.backends import numpy as ref
from instancedp.backends import open_source
from instancedp.errors import ParameterError, SchemaError

PG_CASES = sorted(CASES)


@pytest.fixture(scope="module")
def pg_tables(postgres_url):
    import psycopg

    with psycopg.connect(postgres_url, autocommit=True) as con:
        con.execute("CREATE SCHEMA IF NOT EXISTS idp")
        for name in PG_CASES:
            con.execute(f'DROP TABLE IF EXISTS idp."{name}"')
            con.execute(f'CREATE TABLE idp."{name}" (v double precision, g int)')
            with con.cursor() as cur:
                cur.executemany(f'INSERT INTO idp."{name}" VALUES (%s, %s)',
                                [(v, i % 2) for i, v in enumerate(rows(name))])
    return postgres_url


@pytest.mark.parametrize("name", PG_CASES)
def test_postgres_equals_the_reference(pg_tables, name):
    with open_source(pg_tables, table=f"idp.{name}") as src:
        assert src.backend == "postgresql"
        assert probe(src, "v") == probe(open_source(as_array(name)), None)


def test_postgres_sql_selection_and_nan(pg_tables):
    x = as_array("random")
    keep = x[np.arange(x.size) % 2 == 1]
    src = open_source(pg_tables, sql='SELECT v FROM idp."random" WHERE g = 1')
    assert src.count_and_sum("v", -2, 2, shift=True) == ref.count_and_sum(keep, -2, 2, True)
    nan = open_source(pg_tables, sql="SELECT 'NaN'::float8 AS v UNION ALL SELECT NULL "
                                     "UNION ALL SELECT 2.5")
    assert nan.count("v") == 1 and nan.count("v", missing=0.0) == 3
    assert nan.order_window("v", 0, 2, 0, 1).tolist() == [2.0]


def test_postgres_session_is_read_only(pg_tables):
    src = open_source(pg_tables, table="idp.one")
    with pytest.raises(Exception, match="(?i)read-only"):
        src.engine.execute('CREATE TABLE idp.evil (a int)', [])
    assert not math.isnan(src.count("v"))


def test_postgres_errors(pg_tables):
    with pytest.raises(SchemaError):
        open_source(pg_tables, table="idp.no_such_table")
    with pytest.raises(SchemaError, match="unknown column"):
        open_source(pg_tables, table="idp.one").count("w")
    with pytest.raises(ParameterError) as err:
        open_source(pg_tables)
    assert err.value.parameter == "table"
