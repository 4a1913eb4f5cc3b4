"""Spark (local[1], driver result limit 1 MB) against the in-memory reference, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from backend_cases import CASES, as_array, probe_light, rows

from instancedp.backends import numpy as ref
from instancedp.backends import open_source
from instancedp.errors import ParameterError, SchemaError

pytestmark = pytest.mark.xdist_group("spark")

# Each Spark statement is a job (a second or more on a shared machine): the adversarial
# cases are probed as one column (missing, ±inf, −0.0, subnormal, huge, ties) plus the empty
# table, rather than case by case.
MIXED = ["missing", "infinite", "signed_zero", "subnormal", "huge", "ties", "random"]


@pytest.mark.parametrize("names", [["empty"], MIXED], ids=["empty", "mixed"])
def test_spark_equals_the_reference(spark, names):
    assert all(name in CASES for name in names)
    values = [v for name in names for v in rows(name)]
    src = open_source(spark.createDataFrame([(v,) for v in values], "v double"))
    assert src.backend == "spark"
    x = np.concatenate([as_array(name) for name in names])
    assert probe_light(src, "v") == probe_light(open_source(x), None)


def test_spark_nan_and_null_are_both_missing(spark):
    df = spark.createDataFrame([(float("nan"),), (None,), (1.0,)], "v double")
    assert open_source(df).count("v") == 1
    assert open_source(df).count("v", missing=0.0) == 3


def test_spark_table_name_and_sql(spark):
    x = as_array("random")
    spark.createDataFrame([(float(v), i % 3) for i, v in enumerate(x)], "v double, g int") \
        .createOrReplaceTempView("people")
    by_name = open_source("people", spark=spark)
    assert by_name.count_and_sum("v", -2, 2) == ref.count_and_sum(x, -2, 2)
    sel = open_source(spark.table("people"), sql="SELECT v FROM data WHERE g = 0")
    keep = x[np.arange(x.size) % 3 == 0]
    assert sel.order_window("v", -2, 2, 10, 20).tobytes() == \
        ref.order_window(keep, -2, 2, 10, 20).tobytes()
    with pytest.raises(SchemaError):
        open_source("no_such_table", spark=spark)
    with pytest.raises(ParameterError):
        open_source(spark.table("people"), table="people")


def test_a_million_rows_with_a_one_megabyte_driver_limit(spark):
    """Nothing pulled whole: releases pass under spark.driver.maxResultSize=1m.

    The median is its default, the exponential mechanism drawn in stages from a
    window of order statistics, and the mean reads the exact fixed-point sum;
    both records equal the in-memory release's bytes."""
    import json

    from instancedp.random import simulation
    from instancedp.sources import out_of_core_mechanism, release_from_source

    assert spark.conf.get("spark.driver.maxResultSize") == "1m"
    n = 10**6
    df = spark.range(n).selectExpr("CAST((id * 7919) % 1000003 AS DOUBLE) / 1000003.0 AS v")
    x = (np.arange(n, dtype=np.int64) * 7919 % 1000003).astype(np.float64) / 1000003.0
    src = open_source(df)
    for stat in ("median", "mean"):
        mech = out_of_core_mechanism(stat, 1.0, bounds=(0.0, 1.0))
        got = release_from_source(mech, src, "v", simulation(5)).to_dict()
        want = mech.release(x, rng=simulation(5)).to_dict()
        assert json.dumps(got, sort_keys=True) == json.dumps(want, sort_keys=True)
    m = n // 2
    assert src.order_window("v", 0.0, 1.0, m - 50, m + 50).tobytes() == \
        ref.order_window(x, 0.0, 1.0, m - 50, m + 50).tobytes()
