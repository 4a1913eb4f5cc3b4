"""A column's declared integer or decimal type is its public resolution: the default
median and quantile release on that grid in memory (ties exactly), read from the type
and the bounds only, never from a row."""

import decimal

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

from instancedp import PureDP, Session
from instancedp.io import declared_resolution
from instancedp.mechanisms.quantile import GRID_SHRINK, ExponentialQuantile
from instancedp.queries.order import Median
from instancedp.random import simulation

INTS = np.array([40] * 50 + [38, 39, 41, 42] * 5)  # heavy ties at the median


@pytest.mark.parametrize(
    ("data", "column", "expected"),
    [
        (np.arange(3), None, 1.0),
        (np.arange(3, dtype=np.uint8), None, 1.0),
        (np.arange(3.0), None, None),
        (np.array([True, False]), None, None),
        (np.array([(1, 2.0)], dtype=[("a", "i8"), ("b", "f8")]), "a", 1.0),
        (np.array([(1, 2.0)], dtype=[("a", "i8"), ("b", "f8")]), "b", None),
        (pd.Series([1, 2]), None, 1.0),
        (pd.Series([1, None], dtype="Int64"), None, 1.0),  # nullable: declared, not inferred
        (pd.Series([1.0, 2.0]), None, None),
        (pd.Series([True]), None, None),
        (pd.Series([1, 2], dtype="int64[pyarrow]"), None, 1.0),
        (pd.DataFrame({"a": [1], "b": [1.5]}), "a", 1.0),
        (pd.DataFrame({"a": [1], "b": [1.5]}), "b", None),
        (pd.DataFrame({"a": [1], "b": [1]}), None, None),  # no column named: no guess
        (pa.array([1, 2]), None, 1.0),
        (pa.array([decimal.Decimal("1.25")]), None, 0.01),
        (pa.array([1.5]), None, None),
        (pa.table({"a": [1], "b": [1.5]}), "a", 1.0),
        (pl.Series([1, 2]), None, 1.0),
        (pl.Series([1.5]), None, None),
        (pl.DataFrame({"a": [1], "b": [1.5]}), "a", 1.0),
        ([1, 2, 3], None, None),  # a list's type is inferred from its items
        ("data.csv", None, None),  # files: the in-memory rule only
    ],
)
def test_declared_resolution_reads_the_type_only(data, column, expected):
    assert declared_resolution(data, column) == expected


def _release(data, column=None, **kw):
    s = Session(data, PureDP(100))
    kw.setdefault("bounds", (0, 100))
    return s.release_statistic("median", column, epsilon=1.0, rng=simulation(1), **kw)


def test_integer_column_releases_on_its_grid_float_column_on_the_log_base():
    r = _release(INTS)
    assert r.parameters["base"] == "log-grid"
    assert r.parameters["resolution"] == 1.0
    assert r.parameters["sampler"] == "permute-and-flip"
    assert r.parameters["grid_shrink"] == GRID_SHRINK  # the score's constant is stated
    assert _release(INTS.astype(float)).parameters["base"] == "log-atoms"
    df = pd.DataFrame({"h": INTS, "f": INTS.astype(float)})
    assert _release(df, "h").parameters["base"] == "log-grid"
    assert _release(df, "f").parameters["base"] == "log-atoms"


def test_named_mechanism_given_resolution_and_oversized_grid_are_kept():
    assert _release(INTS, mechanism="exponential").parameters["base"] == "log-atoms"
    assert _release(INTS, resolution=2.0).parameters["resolution"] == 2.0
    # 2^53 grid points or more cannot be indexed exactly: the continuous base stays
    assert _release(INTS, bounds=(0.0, 1e300)).parameters["base"] == "log-atoms"
    assert _release(INTS, bounds=None).mechanism == "unbounded_quantile"


@pytest.mark.parametrize(
    "neighbour",
    [INTS[1:], np.append(INTS, 100), np.append(INTS, -(2**62)), np.zeros(1, dtype=np.int64)],
)
def test_the_choice_does_not_depend_on_the_rows(neighbour):
    """A row removed, added at a bound or far outside them, or a one-row table: the
    record's mechanism and parameters are the same; only the value may differ."""
    a, b = _release(INTS).to_dict(), _release(neighbour).to_dict()
    for d in (a, b):
        d.pop("value")
    assert a == b


def test_ties_release_exactly_on_the_grid():
    """Every draw lands on the tied median 40.  Under add/remove (Δ = ½, ε = 1) every grid
    point k ≠ 40 has score s_k ≥ 27.5 (38, 39 lie below 60 rows, 41, 42 above 60), and
    its log cell weight is at most 315 times 40's (the cell at 0, log scale 0.01), so in
    permute-and-flip's report-noisy-max form k beats 40 only if E_k − E_40 ≥ 27.5 − ln 315
    > 21.7: probability < e^−21.7 < 4·10⁻¹⁰ per k, < 4·10⁻⁸ per draw over the 100 other
    points, < 2·10⁻⁶ for the 50 draws (the false-failure rate).  The log base alone puts
    no mass on a single point: its draws are never exactly 40."""
    s = Session(INTS, PureDP(1000))
    grid = [s.release_statistic("median", epsilon=1.0, bounds=(0, 100),
                                rng=simulation(i)).value for i in range(50)]
    assert grid == [40.0] * 50
    log = ExponentialQuantile(Median(0, 100, neighbours="add_remove"), 1.0, base="log")
    assert not any(v == 40.0 for v in log.sample(INTS, 50, simulation(1)))


def _groups(df, column, **kw):
    s = Session(df, PureDP(100))
    return s.release_statistic("median,p90,count", column, by="g", keys=["a", "b"],
                               epsilon=1.0, bounds=(0, 100), rng=simulation(2), **kw)


def test_group_by_medians_read_the_declared_type_too():
    """Per group, as a single release: the integer column's medians and quantiles on its
    grid (ties exactly), the float column's on the log base with atoms; the choice is the
    same for a neighbouring table (a row added to one group) and for a named mechanism."""
    df = pd.DataFrame({"g": ["a"] * 70 + ["b"] * 70,
                       "h": np.concatenate([INTS, INTS + 10]),
                       "f": np.concatenate([INTS, INTS + 10]).astype(float)})
    r = _groups(df, "h")
    for stat in ("median", "p90"):
        assert r.parameters["per_group"][stat]["base"] == "log-grid"
        assert r.parameters["per_group"][stat]["resolution"] == 1.0
    assert all(float(v).is_integer() for v in r.values["median"] + r.values["p90"])
    # the tied medians exactly: at ε/3 per statistic a draw off the tie has probability
    # below 1 % per group (the bound of the test above at a third of ε); the seed is fixed
    assert r.values["median"] == [40.0, 50.0]
    assert _groups(df, "f").parameters["per_group"]["median"]["base"] == "log-atoms"
    named = _groups(df, "h", mechanism="exponential").parameters["per_group"]["median"]
    assert named["base"] == "log-atoms"
    grown = pd.concat([df, pd.DataFrame({"g": ["a"], "h": [100], "f": [100.0]})])
    assert _groups(grown, "h").parameters == r.parameters
